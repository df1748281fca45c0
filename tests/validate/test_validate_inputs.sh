#!/usr/bin/env bash
# kiln validate --inputs DIR: .npy files named after the inputs and input_K.pb TensorProtos
# are used as given; a file of the wrong shape or dtype, a missing one or a bad folder is a
# one-line error with exit 2; random integer inputs stay in [0, 4).
# Usage: test_validate_inputs.sh PATH/TO/kiln
source "$(dirname "$0")/lib.bash"

mkdir -p "$TMP/good" "$TMP/shape" "$TMP/dtype" "$TMP/empty" "$TMP/pbonly"
"$PY" - "$TMP" <<'PYEOF' || { echo "FAIL writing the input files"; exit 1; }
import sys
import numpy as np
from onnx import numpy_helper
t = sys.argv[1]
rng = np.random.default_rng(42)
x = rng.normal(size=(4, 256)).astype(np.float32)
y = rng.normal(size=(256,)).astype(np.float32)
np.save(t + "/good/x.npy", x)
open(t + "/good/input_1.pb", "wb").write(numpy_helper.from_array(y, "y").SerializeToString())
np.save(t + "/x_expected.npy", x)
np.save(t + "/y_expected.npy", y)
open(t + "/pbonly/input_0.pb", "wb").write(numpy_helper.from_array(x).SerializeToString())
open(t + "/pbonly/input_1.pb", "wb").write(numpy_helper.from_array(y).SerializeToString())
np.save(t + "/shape/x.npy", np.zeros((4, 255), np.float32) + 0.5)
np.save(t + "/shape/y.npy", y)
np.save(t + "/dtype/x.npy", x.astype(np.float64))
np.save(t + "/dtype/y.npy", y)
PYEOF

run good "$M/chain.onnx" --inputs "$TMP/good" --keep "$TMP/keep"
expect_rc good 0 "--inputs with x.npy and input_1.pb passes"
if "$PY" - "$TMP" <<'PYEOF'; then
import sys
import numpy as np
t = sys.argv[1]
x = np.fromfile(t + "/keep/in_0.bin", np.float32).reshape(4, 256)
y = np.fromfile(t + "/keep/in_1.bin", np.float32)
assert np.array_equal(x, np.load(t + "/x_expected.npy"))
assert np.array_equal(y, np.load(t + "/y_expected.npy"))
PYEOF
    pass "the bundle ran on exactly the given data"
else
    fail "the inputs given are not the inputs used"
fi
grep -q "^inputs: from $TMP/good" "$TMP/good.out" && pass "the report names the inputs folder" ||
    { fail "inputs line"; cat "$TMP/good.out"; }

run pb "$M/chain.onnx" --inputs "$TMP/pbonly"
expect_rc pb 0 "--inputs with input_0.pb and input_1.pb passes"

run shape "$M/chain.onnx" --inputs "$TMP/shape"
expect_rc shape 2 "an input of the wrong shape exits 2"
one_line_error shape "wrong shape"
grep -q "shape \[4, 255\].*\[4, 256\]" "$TMP/shape.err" && pass "the message gives both shapes" ||
    fail "shape message"

run dtype "$M/chain.onnx" --inputs "$TMP/dtype"
expect_rc dtype 2 "an input of the wrong dtype exits 2"
one_line_error dtype "wrong dtype"

run empty "$M/chain.onnx" --inputs "$TMP/empty"
expect_rc empty 2 "a missing input file exits 2"
one_line_error empty "missing input file"

run nodir "$M/chain.onnx" --inputs "$TMP/no-such-folder"
expect_rc nodir 2 "a missing inputs folder is a usage error"

# Random integers: indices 0..3 (a table of 8 rows), checked on the kept file.
run ints "$M/gather.onnx" --seed 4 --keep "$TMP/keepi"
expect_rc ints 0 "random integer inputs run (Gather)"
if "$PY" -c "
import numpy as np, sys
i = np.fromfile(sys.argv[1], np.int64)
assert i.shape == (6,) and i.min() >= 0 and i.max() < 4 and len(set(i)) > 1, i
" "$TMP/keepi/in_0.bin"; then pass "random integers lie in [0, 4)"; else fail "random integers"; fi
finish
