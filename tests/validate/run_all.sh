#!/usr/bin/env bash
# Runs every kiln validate test (tests/validate/test_*.sh) with the given kiln binary,
# prints each script's count line and the failures of failed scripts, and ends with
# "N passed, N failed" summed over the checks of all scripts (a script that dies without
# its count line counts as one failure). Exits non-zero when any script failed.
# Usage: run_all.sh PATH/TO/kiln
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/kiln" >&2
    exit 2
fi
DIR="$(cd "$(dirname "$0")" && pwd)"
LOG="$(mktemp -d)"
trap 'rm -rf "$LOG"' EXIT
passed=0
failed=0
bad_scripts=0
for s in "$DIR"/test_*.sh; do
    name="$(basename "$s" .sh)"
    rc=0
    bash "$s" "$1" >"$LOG/$name.log" 2>&1 </dev/null || rc=$?
    line="$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed$' "$LOG/$name.log" | tail -n 1)"
    if [ -n "$line" ]; then
        p="$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')"
        f="$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')"
        passed=$((passed + p))
        failed=$((failed + f))
    else
        failed=$((failed + 1))
    fi
    if [ "$rc" -eq 0 ]; then
        echo "ok   $line"
    else
        bad_scripts=$((bad_scripts + 1))
        echo "FAIL $name (exit $rc):"
        grep -v '^ok ' "$LOG/$name.log" | sed 's/^/    /' | tail -n 40
    fi
done
echo "$passed passed, $failed failed"
[ "$bad_scripts" -eq 0 ]
