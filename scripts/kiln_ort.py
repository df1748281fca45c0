"""The ONNX Runtime side of `kiln validate`: makes or loads the model's inputs and runs
ONNX Runtime on them, writing raw little-endian files that the C side compares with what
the compiled bundle computes. The kiln binary carries this text and runs it with the
pinned venv's Python; it is not meant to be run by hand (docs/validate.md).

usage: kiln_ort.py MANIFEST.json
MANIFEST (written by cli/validate.c): model path, seed, distribution, the number of random
samples, the inputs path or null, and the bundle's inputs and outputs (name, ONNX dtype
number, static dims, the file to write). The inputs path is a folder of one sample's files,
a folder of sample folders (as ONNX's test_data_set_K), or one .npz/.npy whose arrays hold
the samples along a leading batch axis. Writes samples.txt (the number of samples, then one
label a line) and, for each sample, in the work folder (one sample) or in its sample_K/
folder (several), each input file and each reference output file; FILE.err (one line, in
the work folder) when ONNX Runtime has no such value or gives another type or shape; and
ort.txt (the version). Exit status: 0 ok, 1 ONNX Runtime missing or cannot run the model,
2 unusable inputs. Every failure is one line on stderr; no traceback reaches the user.
"""
import json
import os
import re
import sys

INT_RANDOM_HIGH = 4   # random integer inputs are drawn from [0, 4): valid as indices, counts
                      # and axes of most models; a real user passes real inputs (--inputs)
MSG_MAX = 300         # characters kept of an ONNX Runtime message (they can be pages long)

EXIT_MODEL = 1
EXIT_USAGE = 2


class Failure(Exception):
    def __init__(self, msg, code=EXIT_MODEL):
        super().__init__(msg)
        self.code = code


def one_line(e):
    """e's message on one line, shortened."""
    text = re.sub(r"\s+", " ", str(e)).strip()
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"/\S*\.(?:h|cc|cpp):\d+ [^(]*\([^)]*\)\s*", " ", text)  # C++ locations
    text = text.strip() or type(e).__name__
    return text[:MSG_MAX] + ("..." if len(text) > MSG_MAX else "")


def numpy_dtype(np, code):
    """The numpy dtype of ONNX element type `code`, or None where numpy has none."""
    table = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
             7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
             13: np.uint64}
    t = table.get(code)
    return np.dtype(t) if t is not None else None


def dtype_label(np, code):
    t = numpy_dtype(np, code)
    return str(t) if t is not None else "ONNX type %d" % code


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def load_user_input(np, numpy_helper, onnx, folder, k, spec):
    name = spec["name"]
    candidates = []
    for base in (name, safe_name(name), "input_%d" % k):
        for ext in (".npy", ".pb"):
            if base + ext not in candidates and "/" not in base:
                candidates.append(base + ext)
    for cand in candidates:
        path = os.path.join(folder, cand)
        if not os.path.isfile(path):
            continue
        try:
            if cand.endswith(".npy"):
                arr = np.load(path, allow_pickle=False)
            else:
                t = onnx.TensorProto()
                with open(path, "rb") as f:
                    t.ParseFromString(f.read())
                arr = numpy_helper.to_array(t)
        except Exception as e:  # a damaged file is the user's to fix
            raise Failure("input '%s': cannot read %s: %s" % (name, path, one_line(e)),
                          EXIT_USAGE)
        return arr, path
    raise Failure("input '%s': none of %s in %s" % (name, ", ".join(candidates), folder),
                  EXIT_USAGE)


def random_input(np, rng, spec, dist):
    t = numpy_dtype(np, spec["dtype"])
    shape = tuple(spec["dims"])
    if t is None:
        raise Failure("input '%s' has ONNX type %d: validate cannot make random data of it; "
                      "pass it with --inputs" % (spec["name"], spec["dtype"]), EXIT_USAGE)
    if t.kind == "f":
        if dist == "normal":
            return rng.standard_normal(size=shape).astype(t)
        return rng.uniform(-1.0, 1.0, size=shape).astype(t)
    if t.kind == "b":
        return rng.integers(0, 2, size=shape).astype(t)
    return rng.integers(0, INT_RANDOM_HIGH, size=shape).astype(t)


def check_input(np, spec, arr, where):
    want = numpy_dtype(np, spec["dtype"])
    shape = tuple(spec["dims"])
    if arr.dtype != want:
        raise Failure("input '%s': %s has dtype %s, the model takes %s" %
                      (spec["name"], where, arr.dtype, dtype_label(np, spec["dtype"])),
                      EXIT_USAGE)
    if tuple(arr.shape) != shape:
        raise Failure("input '%s': %s has shape %s, the model was compiled for %s" %
                      (spec["name"], where, list(arr.shape), list(shape)), EXIT_USAGE)


def split_batch(spec, arr, where):
    """The samples of input spec in arr: arr itself when it has the compiled shape, else the
    slices of a leading batch axis: [K] + shape (a new axis), or K * shape[0] rows along the
    first axis (a batch-1 model fed [K, 3, 224, 224])."""
    shape = tuple(spec["dims"])
    if tuple(arr.shape) == shape:
        return [arr]
    if arr.ndim == len(shape) + 1 and tuple(arr.shape[1:]) == shape and arr.shape[0] > 0:
        return [arr[i] for i in range(arr.shape[0])]
    if (arr.ndim == len(shape) and len(shape) > 0 and shape[0] > 0 and arr.shape[0] > 0 and
            tuple(arr.shape[1:]) == shape[1:] and arr.shape[0] % shape[0] == 0):
        n = shape[0]
        return [arr[i * n:(i + 1) * n] for i in range(arr.shape[0] // n)]
    raise Failure("input '%s': %s has shape %s, neither the compiled %s nor a batch of them "
                  "along a first axis" % (spec["name"], where, list(arr.shape), list(shape)),
                  EXIT_USAGE)


def array_of(arrays, k, spec, n_free):
    """Input spec's array among arrays (by name, sanitized name, input_K, or the only array
    when the model has one input to feed), or None."""
    for key in (spec["name"], safe_name(spec["name"]), "input_%d" % k):
        if key in arrays:
            return arrays[key]
    if n_free == 1 and len(arrays) == 1:
        return next(iter(arrays.values()))
    return None


def folder_has_inputs(folder, specs):
    names = set(os.listdir(folder))
    for k, spec in enumerate(specs):
        for base in (spec["name"], safe_name(spec["name"]), "input_%d" % k):
            if base + ".npy" in names or base + ".pb" in names:
                return True
    return False


def load_samples(np, numpy_helper, onnx, path, specs, inits):
    """[(label, {name: (array, where)})] from the --inputs path (see the usage above)."""
    free = [s for s in specs if s["name"] not in inits]
    if os.path.isdir(path):
        subs = sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
        if folder_has_inputs(path, specs) or not subs:
            folders = [(path, path)]
        else:
            folders = [(d, os.path.join(path, d)) for d in subs]
        samples = []
        for label, folder in folders:
            feed = {}
            for k, spec in enumerate(specs):
                try:
                    feed[spec["name"]] = load_user_input(np, numpy_helper, onnx, folder, k, spec)
                except Failure:
                    if spec["name"] not in inits:
                        raise
            samples.append((label, feed))
        return samples
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                arrays = {key: z[key] for key in z.files}
        else:
            arrays = {"": np.load(path, allow_pickle=False)}
    except Exception as e:
        raise Failure("cannot read %s: %s" % (path, one_line(e)), EXIT_USAGE)
    if not path.endswith(".npz") and len(free) != 1:
        raise Failure("%s: one .npy feeds a model with one input; this one takes %d (give an "
                      ".npz with an array per input)" % (path, len(free)), EXIT_USAGE)
    batches = {}
    for k, spec in enumerate(specs):
        arr = array_of(arrays, k, spec, len(free))
        if arr is None:
            if spec["name"] in inits:
                continue
            raise Failure("input '%s': %s has no array of that name (it has %s)" %
                          (spec["name"], path, ", ".join(sorted(arrays)) or "none"), EXIT_USAGE)
        batches[spec["name"]] = split_batch(spec, arr, path)
    counts = sorted({len(b) for b in batches.values()})
    if len(counts) > 1:
        raise Failure("%s: the inputs hold different numbers of samples (%s)" % (
            path, ", ".join("'%s' %d" % (n, len(b)) for n, b in batches.items())), EXIT_USAGE)
    n = counts[0] if counts else 1
    base = os.path.basename(path)
    return [("%s[%d]" % (base, i), {name: (b[i], "%s[%d]" % (path, i))
                                    for name, b in batches.items()}) for i in range(n)]


def sample_dir(work, i, n):
    """Where sample i of n keeps its files: the work folder for one, sample_I/ for several."""
    if n == 1:
        return work
    d = os.path.join(work, "sample_%d" % i)
    os.makedirs(d, exist_ok=True)
    return d


def write_raw(np, path, arr):
    with open(path, "wb") as f:
        f.write(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())


def add_outputs(onnx, model, extra):
    """Adds the values named in extra as graph outputs; returns the names ORT cannot give
    (not a node output of the main graph, e.g. values made by kiln's import)."""
    g = model.graph
    produced = {o for n in g.node for o in n.output if o}
    present = {o.name for o in g.output}
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            types[vi.name] = vi.type
    except Exception:
        pass  # fall back to the element types kiln inferred
    missing = set()
    for name, dtype in extra:
        if name in present:
            continue
        if name not in produced:
            missing.add(name)
            continue
        vi = onnx.helper.make_tensor_value_info(name, dtype, None)
        t = types.get(name)
        if t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type:
            vi.type.tensor_type.elem_type = t.tensor_type.elem_type
        g.output.append(vi)
        present.add(name)
    return missing


def run(manifest_path):
    with open(manifest_path) as f:
        man = json.load(f)
    work = man["work"]
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
        import onnxruntime as ort
    except ImportError as e:
        raise Failure("%s: %s (install the pinned packages with scripts/setup, or point "
                      "KILN_PYTHON at a Python that has onnx, onnxruntime and numpy)" %
                      (sys.executable, one_line(e)))
    with open(os.path.join(work, "ort.txt"), "w") as f:
        f.write("onnxruntime %s\n" % ort.__version__)

    try:
        model = onnx.load(man["model"])
    except Exception as e:
        raise Failure("onnx cannot load %s: %s" % (man["model"], one_line(e)))
    inits = {t.name: t for t in model.graph.initializer}

    specs = man["inputs"]
    if man["inputs_path"] is not None:
        samples = load_samples(np, numpy_helper, onnx, man["inputs_path"], specs, inits)
    else:
        rng = np.random.default_rng(man["seed"])
        samples = []
        for i in range(man["samples"]):
            feed = {s["name"]: (random_input(np, rng, s, man["dist"]), "random data")
                    for s in specs if s["name"] not in inits}  # weights keep their values
            samples.append(("seed %d, sample %d" % (man["seed"], i), feed))
    n = len(samples)
    feeds_all = []
    for i, (label, feed) in enumerate(samples):
        d = sample_dir(work, i, n)
        feeds = {}
        for spec in specs:
            if spec["name"] in feed:
                arr, where = feed[spec["name"]]
            else:
                arr, where = numpy_helper.to_array(inits[spec["name"]]), "its initializer"
            check_input(np, spec, arr, where)
            feeds[spec["name"]] = arr
            write_raw(np, os.path.join(d, spec["file"]), arr)
        feeds_all.append(feeds)
    with open(os.path.join(work, "samples.txt"), "w") as f:
        f.write("%d\n" % n)
        for label, _ in samples:
            f.write(re.sub(r"[\r\n]", " ", label) + "\n")

    extra = [(o["name"], o["dtype"]) for o in man["outputs"] if o["extra"]]
    missing = add_outputs(onnx, model, extra) if extra else set()
    opts = ort.SessionOptions()
    # The reference is the graph as written: no fusions or rewrites of ORT's own.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:
        source = model.SerializeToString() if extra else man["model"]
        sess = ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise Failure("ONNX Runtime cannot load %s: %s" % (man["model"], one_line(e)))
    ort_inputs = {i.name for i in sess.get_inputs()}
    have = {o.name for o in sess.get_outputs()}
    names = [o["name"] for o in man["outputs"] if o["name"] in have]
    errors = {}
    for i, feeds in enumerate(feeds_all):
        try:
            results = dict(zip(names, sess.run(names, {k: v for k, v in feeds.items()
                                                       if k in ort_inputs})))
        except Exception as e:
            raise Failure("ONNX Runtime cannot run %s%s: %s" % (
                man["model"], " on sample %d" % i if n > 1 else "", one_line(e)))
        d = sample_dir(work, i, n)
        for spec in man["outputs"]:
            name = spec["name"]
            err = None
            if name not in results:
                err = ("not a value of the ONNX graph" if name in missing
                       else "ONNX Runtime gives no such output")
            else:
                arr = np.asarray(results[name])
                want = numpy_dtype(np, spec["dtype"])
                if want is None:
                    err = "validate cannot compare %s" % dtype_label(np, spec["dtype"])
                elif arr.dtype != want:
                    err = "ONNX Runtime gives %s, kiln %s" % (arr.dtype, want)
                elif tuple(arr.shape) != tuple(spec["dims"]):
                    err = "ONNX Runtime gives shape %s, kiln %s" % (list(arr.shape),
                                                                   spec["dims"])
            if err is not None:
                errors.setdefault(spec["file"], err)
            else:
                write_raw(np, os.path.join(d, spec["file"]), arr)
    for file, err in errors.items():
        with open(os.path.join(work, file + ".err"), "w") as f:
            f.write(err + "\n")
    return 0


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: kiln_ort.py MANIFEST.json\n")
        return EXIT_USAGE
    try:
        return run(sys.argv[1])
    except Failure as e:
        sys.stderr.write("kiln validate: error: %s\n" % e)
        return e.code
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        sys.stderr.write("kiln validate: error: out of memory in the ONNX Runtime run\n")
        return EXIT_MODEL
    except Exception as e:  # anything unforeseen still ends in one line
        sys.stderr.write("kiln validate: error: %s: %s\n" % (type(e).__name__, one_line(e)))
        return EXIT_MODEL


if __name__ == "__main__":
    sys.exit(main())
