#!/usr/bin/env bash
# The CMake package against an installed kiln: `cmake --install` of Kiln's build tree into a
# temporary prefix, then examples/cmake-app configured with only that prefix, built and run:
# - its predictions for the first 8 held-out digits are ONNX Runtime's;
# - kiln reruns when the model, the options (WEIGHTS embed -> bin) or kiln change, and not
#   on a build with nothing changed;
# - WEIGHTS bin hands the program the weights file's path;
# - INT8 builds the model on the int8 kernels (a .qparams from kiln calibrate);
# - the installed package is relocatable (the prefix moved, configured again).
# Usage: tests/edge/cmake_app.sh PATH/TO/BUILD/kiln (its build tree is installed)
set -u
KILN="$1"
BUILD="$(cd "$(dirname "$KILN")" && pwd)"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
N_IMAGES=8
fails=0
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
finish() {
    echo "$passed passed, $fails failed"
    exit $((fails > 0))
}

PREFIX="$TMP/prefix"
if ! cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1; then
    fail "cmake --install $BUILD: $(tail -n 5 "$TMP/install.log")"
    finish
fi
if [ -x "$PREFIX/bin/kiln" ] && [ -f "$PREFIX/lib/cmake/Kiln/KilnConfig.cmake" ]; then
    ok "cmake --install gives bin/kiln and lib/cmake/Kiln/KilnConfig.cmake"
else
    fail "the install lacks bin/kiln or the package config: $(find "$PREFIX" -type f)"
    finish
fi

cp "$ROOT/examples/digits/digits.onnx" "$TMP/digits.onnx"
APP="$TMP/app"
# configure [cmake -D options]: the example against the installed prefix, nothing else
configure() {
    cmake -S "$ROOT/examples/cmake-app" -B "$APP" -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DDIGITS_MODEL="$TMP/digits.onnx" -DCMAKE_BUILD_TYPE=Release "$@" >"$TMP/configure.log" 2>&1
}
# build: exit 0 when the build succeeds; sets ran_kiln to 1 when kiln ran
build() {
    ran_kiln=0
    cmake --build "$APP" >"$TMP/build.log" 2>&1 || return 1
    if grep -q "kiln compile" "$TMP/build.log"; then ran_kiln=1; fi
}

if configure && build && [ "$ran_kiln" = 1 ] && "$APP/cmake_app" >"$TMP/run.txt" 2>&1; then
    kiln_dir="$(grep '^Kiln_DIR:' "$APP/CMakeCache.txt" | cut -d= -f2)"
    case "$kiln_dir" in
    "$PREFIX"/*) ok "the example configures against the installed package ($kiln_dir), builds, runs" ;;
    *) fail "the example found Kiln at $kiln_dir, not in the installed prefix" ;;
    esac
    cat "$TMP/run.txt"
else
    fail "configure/build/run of examples/cmake-app: $(tail -n 15 "$TMP/configure.log" \
        "$TMP/build.log" "$TMP/run.txt" 2>/dev/null)"
    finish
fi

if "$PY" - "$TMP/digits.onnx" "$ROOT/examples/digits/digits_test.bin" "$TMP/run.txt" \
    "$N_IMAGES" <<'PYEOF'; then
import re
import struct
import sys
import numpy as np
import onnxruntime as ort
model, split, run, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = open(split, "rb").read()
n = struct.unpack("<I", data[4:8])[0]
images = np.frombuffer(data, "<f4", k * 64, 8).reshape(k, 1, 1, 8, 8)
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
want = [int(np.argmax(s.run(None, {"image": x})[0])) for x in images]
got = [int(m) for m in re.findall(r"predicted (\d+)", open(run).read())]
assert got == want, f"bundle {got}, ONNX Runtime {want}"
PYEOF
    ok "the $N_IMAGES predictions are ONNX Runtime's"
else
    fail "the example's predictions differ from ONNX Runtime's"
fi

if build && [ "$ran_kiln" = 0 ]; then
    ok "a build with nothing changed does not run kiln"
else
    fail "a build with nothing changed ran kiln (or failed)"
fi
touch "$TMP/digits.onnx"
if build && [ "$ran_kiln" = 1 ]; then
    ok "a newer model reruns kiln"
else
    fail "touching the model did not rerun kiln"
fi
if configure -DDIGITS_WEIGHTS=bin && build && [ "$ran_kiln" = 1 ] &&
    "$APP/cmake_app" >"$TMP/run_bin.txt" 2>&1 &&
    grep -q "weights: [0-9]* bytes from $APP/kiln/digits_model/digits_weights.bin" \
        "$TMP/run_bin.txt" &&
    diff <(grep predicted "$TMP/run.txt") <(grep predicted "$TMP/run_bin.txt") >/dev/null; then
    ok "WEIGHTS embed -> bin reruns kiln, and the program reads the weights file it is given"
else
    fail "WEIGHTS bin: $(cat "$TMP/run_bin.txt" 2>/dev/null | head -n 3)"
fi
touch "$PREFIX/bin/kiln"
if build && [ "$ran_kiln" = 1 ]; then
    ok "a newer kiln reruns kiln"
else
    fail "touching kiln did not rerun it"
fi

mkdir -p "$TMP/int8/cal"
"$PY" -c "import numpy as np; r = np.random.default_rng(0); [np.save('$TMP/int8/cal/%d.npy' % i, r.random((1, 1, 8, 8), dtype=np.float32)) for i in range(8)]"
"$KILN" calibrate "$TMP/digits.onnx" --data "$TMP/int8/cal" -o "$TMP/digits.qparams" --quiet
cat >"$TMP/int8/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(int8_check C)
find_package(Kiln REQUIRED)
kiln_add_model(digits8 MODEL "$TMP/digits.onnx" INT8 "$TMP/digits.qparams")
EOF
if cmake -S "$TMP/int8" -B "$TMP/int8/build" -DCMAKE_PREFIX_PATH="$PREFIX" >"$TMP/int8.log" 2>&1 &&
    cmake --build "$TMP/int8/build" >>"$TMP/int8.log" 2>&1 &&
    grep -q "rt_qconv2d" "$TMP/int8/build/kiln/digits8/"*.c; then
    ok "INT8 builds the model on the int8 kernels (kiln compile --int8)"
else
    fail "INT8 did not build the int8 model: $(tail -n 5 "$TMP/int8.log")"
fi

mv "$PREFIX" "$TMP/moved"
PREFIX="$TMP/moved"
rm -rf "$APP"
if configure && build && "$APP/cmake_app" >/dev/null 2>&1 &&
    grep -q "$TMP/moved/bin/kiln" "$TMP/build.log" "$APP/CMakeCache.txt" "$APP"/CMakeFiles/*.dir/build.make 2>/dev/null; then
    ok "the installed package is relocatable (prefix moved, configured and built again)"
else
    fail "the moved prefix does not work: $(tail -n 10 "$TMP/configure.log" "$TMP/build.log")"
fi
finish
