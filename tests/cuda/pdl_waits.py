"""Every kernel of runtime/cuda (and of the generated bundle sources given) that is launched with
programmatic dependent launch (kc_launch_pdl, kc_qlaunch, kc_launch: the
last two where their knob, KC_QPDL or KC_PDL, is on) waits for the grid before it
(kc_pdl_wait, kc_pdl_enter or kc_pdl_sync) in its own body: such a kernel may start while the
kernel before it still writes its inputs, so one without the wait reads them early (a race that
a GPU shows only now and then). No GPU needed: the check reads the source.
usage: python3 tests/cuda/pdl_waits.py [PATH ...]   (a folder: its *.cuh and *.cu; default
runtime/cuda); ends with "N passed, N failed"."""
import pathlib
import re
import sys

LAUNCH = re.compile(r"\b(?:kc_launch_pdl|kc_qlaunch|kc_launch)\(\s*([A-Za-z_]\w*)")
KERNEL = re.compile(r"__global__\s+void\s+")
NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")
WAIT = re.compile(r"\b(?:kc_pdl_wait|kc_pdl_enter|kc_pdl_sync)\(\)")


def balanced(src, i, open_, close):
    """the index just past the bracket that closes the one at src[i]"""
    depth = 0
    while True:
        depth += 1 if src[i] == open_ else -1 if src[i] == close else 0
        i += 1
        if depth == 0:
            return i


def bodies(src):
    """{kernel name: its bodies' text} of every __global__ function in src"""
    src = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), src, flags=re.S)
    out = {}
    for m in KERNEL.finditer(src):
        i = m.end()
        if src.startswith("__launch_bounds__", i):
            i = balanced(src, src.index("(", i), "(", ")")
        name = NAME.match(src, i)
        if not name:
            continue
        params_end = balanced(src, name.end() - 1, "(", ")")
        if src[params_end:].lstrip().startswith(";"):
            continue  # a declaration
        body = src.index("{", params_end)
        out.setdefault(name.group(1), []).append(src[body:balanced(src, body, "{", "}")])
    return out


def check(paths):
    files = []
    for path in map(pathlib.Path, paths):
        files += sorted(path.glob("*.cuh")) + sorted(path.glob("*.cu")) if path.is_dir() else [path]
    src = "\n".join(p.read_text() for p in files)
    kernels = bodies(src)
    launched = sorted({m.group(1) for m in LAUNCH.finditer(src)} - {"void", "k"})
    passed = failed = 0
    for name in launched:
        if name not in kernels:
            print(f"FAIL {name}: launched with PDL, no __global__ definition found")
            failed += 1
        elif all(WAIT.search(b) for b in kernels[name]):
            print(f"ok   {name}: waits for the grid before it")
            passed += 1
        else:
            print(f"FAIL {name}: launched with PDL and never calls kc_pdl_wait / kc_pdl_enter")
            failed += 1
    return passed, failed


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parents[2]
    passed, failed = check(sys.argv[1:] or [root / "runtime" / "cuda"])
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)
