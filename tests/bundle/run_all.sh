#!/usr/bin/env bash
# Runs every bundle test (tests/bundle/test_*.sh) with the given kiln binary, KILN_JOBS
# (default: all cores) scripts side by side (each works in its own temporary folder), then
# prints, in the scripts' order, each one's last line (its own count) with its seconds, the
# output of failed scripts, and a final "N passed, N failed" over scripts. Exits non-zero
# when any script failed.
# Usage: run_all.sh PATH/TO/kiln
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 PATH/TO/kiln" >&2
    exit 2
fi
DIR="$(cd "$(dirname "$0")" && pwd)"
JOBS="${KILN_JOBS:-$(nproc 2>/dev/null || echo 2)}"
LOG="$(mktemp -d)"
trap 'rm -rf "$LOG"' EXIT

# one script: its output into NAME.log, its exit status and seconds into NAME.rc
run_one() {
    local s="$1" name t0 rc=0
    name="$(basename "$s" .sh)"
    t0=$SECONDS
    bash "$s" "$2" >"$LOG/$name.log" 2>&1 </dev/null || rc=$?
    echo "$rc $((SECONDS - t0))" >"$LOG/$name.rc"
}

scripts=("$DIR"/test_*.sh)
for s in "${scripts[@]}"; do
    [ "$(jobs -rp | wc -l)" -lt "$JOBS" ] || wait -n
    run_one "$s" "$1" &
done
wait

passed=0
failed=0
for s in "${scripts[@]}"; do
    name="$(basename "$s" .sh)"
    read -r rc secs <"$LOG/$name.rc" 2>/dev/null || { rc=1 secs=0; }
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $(tail -n 1 "$LOG/$name.log") ($secs s)"
    else
        failed=$((failed + 1))
        echo "FAIL $name ($secs s):"
        grep -v '^ok ' "$LOG/$name.log" | sed 's/^/    /'
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
