#!/usr/bin/env bash
# The fp32 packed GEMM's unit test (tests/unit/test_rt_pgemm.c) on ARM, emulated: built with
# gcc-aarch64-linux-gnu (the NEON 6x16 path, and once more with RT_PGEMM_PORTABLE) and
# gcc-arm-linux-gnueabihf (32-bit ARM: the portable path), run under qemu-user; and the
# channels-last kernels' test (test_rt_conv_nhwc.c: the depthwise quads) on AArch64. No Criterion
# exists for those targets: tests/unit/cross/criterion/criterion.h stands in for the few
# macros the test uses. Each run must name the path it was built for and pass every test.
# Prints one line per run; ends with "N passed, N failed".
# Usage: tests/edge/pgemm_arm.sh [PATH/TO/kiln (unused: the test needs no bundle)]
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
finish() {
    echo "$passed passed, $fails failed"
    exit $((fails > 0))
}

missing=""
for tool in aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc qemu-aarch64 qemu-arm; do
    command -v "$tool" >/dev/null || missing+=" $tool"
done
if [ -n "$missing" ]; then
    fail "not installed:$missing (scripts/test installs them through scripts/setup)"
    finish
fi

# name, test, compiler, qemu, sysroot, extra flags, the gemm path the log must name (or none)
RUNS=("aarch64-neon|test_rt_pgemm|aarch64-linux-gnu-gcc|qemu-aarch64|/usr/aarch64-linux-gnu||neon"
      "aarch64-portable|test_rt_pgemm|aarch64-linux-gnu-gcc|qemu-aarch64|/usr/aarch64-linux-gnu|-DRT_PGEMM_PORTABLE|portable"
      "armhf|test_rt_pgemm|arm-linux-gnueabihf-gcc|qemu-arm|/usr/arm-linux-gnueabihf||portable"
      "aarch64-conv-nhwc|test_rt_conv_nhwc|aarch64-linux-gnu-gcc|qemu-aarch64|/usr/aarch64-linux-gnu||")
for run in "${RUNS[@]}"; do
    IFS='|' read -r name test cc qemu sysroot extra path <<<"$run"
    # -Wno-format-extra-args: the stand-in's cr_assert appends one argument
    # shellcheck disable=SC2086
    if ! "$cc" -O2 -std=c11 -Wall -Wextra -Werror -Wno-format-extra-args $extra \
        -I"$ROOT/tests/unit/cross" -I"$ROOT" -I"$ROOT/tests/unit" \
        "$ROOT/tests/unit/$test.c" -o "$TMP/$name" -lm 2>"$TMP/cc.log"; then
        fail "$name: build"
        sed 's/^/    /' "$TMP/cc.log"
        continue
    fi
    "$qemu" -L "$sysroot" "$TMP/$name" >"$TMP/run.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && { [ -z "$path" ] || grep -q "gemm path: $path," "$TMP/run.log"; } &&
        grep -q "Failing: 0" "$TMP/run.log"; then
        ok "$name: $test $(grep -o 'Tested: [0-9]*' "$TMP/run.log")${path:+ on the $path path}"
    else
        fail "$name (rc $rc)"
        sed 's/^/    /' "$TMP/run.log" | tail -n 5
    fi
done
finish
