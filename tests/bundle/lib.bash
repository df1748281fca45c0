# Shared by the bundle tests (tests/bundle/test_*.sh); sourced, not run. Sets ROOT, PY, KILN,
# TMP (removed on exit) and MODELS (the models of make_models.py, written once per run), and
# gives `pass`/`fail` (counted), `check`, `bg_run`/`bg_check` (builds side by side), `finish`
# (prints the count line and exits), `compile_model` and `run_compare`.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
KILN="${1:-}"
if [ -z "$KILN" ] || [ ! -x "$KILN" ]; then
    echo "usage: $0 PATH/TO/kiln" >&2
    exit 2
fi
KILN="$(cd "$(dirname "$KILN")" && pwd)/$(basename "$KILN")"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
MODELS="$TMP/models"
TEST_NAME="$(basename "$0" .sh)"
n_pass=0
n_fail=0
# CFLAGS of the strict builds; the sanitizer builds add SAN_FLAGS.
STRICT="-std=c99 -Wall -Wextra -Werror -pedantic"
SAN_FLAGS="-O2 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# added to SAN_FLAGS where a bundle is built for the machine's own ISA (-march=native): UBSan's
# pointer-overflow check on the inlined AVX-512 GEMM tiles' address arithmetic took half of
# such a build (a 12-node bundle: 55 s with it, 29 s without); the accesses stay under ASan
SAN_ISA_FLAGS="-fno-sanitize=pointer-overflow"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"  # LeakSanitizer on: mains free all
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

pass() { echo "ok   $*"; n_pass=$((n_pass + 1)); }
fail() { echo "FAIL $*"; n_fail=$((n_fail + 1)); }
# check DESCRIPTION COMMAND...: runs the command quietly, pass/fail by its status; the
# command's output is shown only on failure.
check() {
    local what="$1" log="$TMP/check.log"
    shift
    if "$@" >"$log" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/    /' "$log" | tail -n 30; fi
}
# bg_run NAME COMMAND...: runs the command in the background, at most KILN_JOBS (default: all
# cores) at a time, its output into $TMP/bg/NAME.log and its exit status into NAME.rc;
# bg_check DESCRIPTION NAME (after `wait`) passes or fails by that status, as check does.
bg_run() {
    local name="$1"
    shift
    mkdir -p "$TMP/bg"
    while [ "$(jobs -rp | wc -l)" -ge "${KILN_JOBS:-$(nproc 2>/dev/null || echo 2)}" ]; do
        wait -n
    done
    { "$@" >"$TMP/bg/$name.log" 2>&1; echo $? >"$TMP/bg/$name.rc"; } &
}
bg_check() {
    local what="$1" name="$2"
    if [ "$(cat "$TMP/bg/$name.rc" 2>/dev/null)" = 0 ]; then
        pass "$what"
    else
        fail "$what"
        sed 's/^/    /' "$TMP/bg/$name.log" | tail -n 30
    fi
}
finish() {
    echo "$TEST_NAME: $n_pass passed, $n_fail failed"
    exit $((n_fail > 0))
}

"$PY" "$ROOT/tests/bundle/make_models.py" "$MODELS" || { echo "FAIL make_models.py"; exit 1; }

# compile_model MODEL OUT_DIR [kiln compile options...]: kiln compile with --test-main.
compile_model() {
    local model="$1" out="$2"
    shift 2
    "$KILN" compile "$MODELS/$model.onnx" -o "$out" --test-main "$@"
}

# run_compare EXE MODEL [WEIGHTS]: random inputs through EXE (a NAME_test_main program) and
# ONNX Runtime; outputs must match (see compare.py).
run_compare() {
    local exe="$1" model="$2"
    shift 2
    "$PY" "$ROOT/tests/bundle/compare.py" --work "$TMP/cmp" --exe "$exe" --model "$MODELS/$model.onnx" "$@"
}
