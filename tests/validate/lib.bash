# Shared by the validate tests (tests/validate/test_*.sh); sourced, not run. Sets ROOT, PY,
# KILN, TMP (removed on exit) and M (the models of make_models.py), and gives pass/fail
# (counted), expect_rc and finish (prints the count line and exits non-zero on a failure).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
KILN="${1:-}"
if [ -z "$KILN" ] || [ ! -x "$KILN" ]; then
    echo "usage: $0 PATH/TO/kiln" >&2
    exit 2
fi
KILN="$(cd "$(dirname "$KILN")" && pwd)/$(basename "$KILN")"
export KILN_PYTHON="${KILN_PYTHON:-$PY}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
M="$TMP/models"
mkdir -p "$M"
TEST_NAME="$(basename "$0" .sh)"
n_pass=0
n_fail=0

pass() { echo "ok   $*"; n_pass=$((n_pass + 1)); }
fail() { echo "FAIL $*"; n_fail=$((n_fail + 1)); }
# run NAME ARGS...: runs kiln validate ARGS with stdout in $TMP/NAME.out, stderr in
# $TMP/NAME.err and the exit status in $RC.
run() {
    local name="$1"
    shift
    RC=0
    "$KILN" validate "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
}
# expect_rc NAME WANT DESCRIPTION: checks the status of the last run.
expect_rc() {
    if [ "$RC" -eq "$2" ]; then
        pass "$3"
    else
        fail "$3 (exit $RC, wanted $2)"
        sed 's/^/    /' "$TMP/$1.out" "$TMP/$1.err" | tail -n 30
    fi
}
# one_line_error NAME DESCRIPTION: stderr of the last run is one line, no traceback.
one_line_error() {
    local lines
    lines="$(grep -c . "$TMP/$1.err" || true)"
    if [ "$lines" -eq 1 ] && ! grep -q Traceback "$TMP/$1.err"; then
        pass "$2: $(cat "$TMP/$1.err")"
    else
        fail "$2: stderr has $lines lines"
        sed 's/^/    /' "$TMP/$1.err" | head -n 20
    fi
}
finish() {
    echo "$TEST_NAME: $n_pass passed, $n_fail failed"
    exit $((n_fail > 0))
}

"$PY" "$ROOT/tests/validate/make_models.py" "$M" || { echo "FAIL make_models.py"; exit 1; }
