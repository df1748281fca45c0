#!/usr/bin/env bash
# Runs every bundle test (tests/bundle/test_*.sh) with the given kiln binary, prints each
# script's last line (its own count), the output of failed scripts, and a final
# "N passed, N failed" over scripts. Exits non-zero when any script failed.
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
for s in "$DIR"/test_*.sh; do
    name="$(basename "$s" .sh)"
    if bash "$s" "$1" >"$LOG/$name.log" 2>&1 </dev/null; then
        passed=$((passed + 1))
        echo "ok   $(tail -n 1 "$LOG/$name.log")"
    else
        failed=$((failed + 1))
        echo "FAIL $name:"
        grep -v '^ok ' "$LOG/$name.log" | sed 's/^/    /'
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
