#!/usr/bin/env bash
# The edge checks, one after the other: the CMake package against an installed kiln
# (cmake_app.sh), ARM Linux under qemu-user (arm_linux.sh), a Cortex-M4F and M7 under
# qemu-system-arm (cortex_m.sh) and the compile report in headless Chromium
# (report_chromium.sh). Each prints its checks and "N passed, N failed"; this prints the
# sum last. The tools they need come from scripts/setup (kiln_setup_edge), which
# scripts/test calls first.
# Usage: tests/edge/run_all.sh PATH/TO/BUILD/kiln (a build tree's kiln: cmake_app installs it)
set -u
KILN="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
passed=0
failed=0
rc=0
for s in cmake_app arm_linux pgemm_arm cortex_m report_chromium; do
    echo "---- $s"
    t0=$EPOCHREALTIME
    log="$(mktemp)"
    bash "$HERE/$s.sh" "$KILN" 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    line="$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)"
    rm -f "$log"
    if [ -n "$line" ]; then
        passed=$((passed + ${line%% *}))
        f="${line#*, }"
        failed=$((failed + ${f%% *}))
    else
        failed=$((failed + 1))
        rc=1
    fi
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v s="$s" 'BEGIN { printf "     %s: %.1f s\n", s, b - a }'
done
echo "$passed passed, $failed failed"
exit "$rc"
