#!/usr/bin/env bash
# Bundles on ARM Linux boards, emulated: the digits and MobileNetV2 bundles cross-compiled
# for AArch64 (gcc-aarch64-linux-gnu) and 32-bit ARM hard-float (gcc-arm-linux-gnueabihf),
# run under qemu-user (qemu-aarch64, qemu-arm, with the cross sysroot as -L), and their
# outputs compared with the same bundle built and run on this x86-64 machine, within the
# model suite's tolerance (rtol 1e-3, atol 1e-4):
# - digits: tests/edge/edge_digits.c over the 360 held-out images (weights embedded): the
#   logits of every image, and the accuracy, which must be x86's;
# - MobileNetV2: the bundle's test main (weights file) on the suite's seeded input, the
#   model from the suite's export cache (tests/models/run.py; exported if missing).
# Every build is -std=c99 -Wall -Wextra -Werror -pedantic, as the bundle promises.
# Prints one line per run; ends with "N passed, N failed".
# Usage: tests/edge/arm_linux.sh PATH/TO/kiln
set -u
KILN="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
CFLAGS=(-O2 -std=c99 -Wall -Wextra -Werror -pedantic)
ARCHES=(x86_64 aarch64 armhf)
fails=0
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
finish() {
    echo "$passed passed, $fails failed"
    exit $((fails > 0))
}

cc_of() {
    case "$1" in
    x86_64) echo "${CC:-cc}" ;;
    aarch64) echo aarch64-linux-gnu-gcc ;;
    armhf) echo arm-linux-gnueabihf-gcc ;;
    esac
}
# ELF e_machine of each (the binaries must really be ARM ones): EM_X86_64, EM_AARCH64, EM_ARM
machine_of() {
    case "$1" in
    x86_64) echo 003e ;;
    aarch64) echo 00b7 ;;
    armhf) echo 0028 ;;
    esac
}
elf_machine() { od -An -tx2 -j18 -N2 "$1" | tr -d ' '; }
# seconds since $1 (an $EPOCHREALTIME), two decimals
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
# run_on ARCH PROGRAM ARGS...: the program natively or under qemu-user with its sysroot
run_on() {
    local arch="$1"
    shift
    case "$arch" in
    x86_64) "$@" ;;
    aarch64) qemu-aarch64 -L /usr/aarch64-linux-gnu "$@" ;;
    armhf) qemu-arm -L /usr/arm-linux-gnueabihf "$@" ;;
    esac
}

missing=""
for tool in aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc qemu-aarch64 qemu-arm; do
    command -v "$tool" >/dev/null || missing+=" $tool"
done
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] || missing+=" libc6-dev-arm64-cross"
[ -f /usr/arm-linux-gnueabihf/include/stdio.h ] || missing+=" libc6-dev-armhf-cross"
if [ -n "$missing" ]; then
    fail "not installed:$missing (scripts/test installs them through scripts/setup)"
    finish
fi

# ---- digits: all 360 held-out images --------------------------------------------------
if ! "$KILN" compile "$ROOT/examples/digits/digits.onnx" -o "$TMP/digits" --name digits \
    --weights embed --quiet 2>"$TMP/kiln.err"; then
    fail "kiln compile digits: $(cat "$TMP/kiln.err")"
    finish
fi
for arch in "${ARCHES[@]}"; do
    exe="$TMP/digits_$arch"
    if ! "$(cc_of "$arch")" "${CFLAGS[@]}" -I "$TMP/digits" "$ROOT/tests/edge/edge_digits.c" \
        "$TMP/digits/digits.c" "$TMP/digits/digits_weights.c" -lm -o "$exe" \
        2>"$TMP/cc.log"; then
        fail "digits $arch: build: $(head -n 5 "$TMP/cc.log")"
        continue
    fi
    if [ "$(elf_machine "$exe")" != "$(machine_of "$arch")" ]; then
        fail "digits $arch: the program is not an $arch ELF (e_machine $(elf_machine "$exe"))"
        continue
    fi
    t0=$EPOCHREALTIME
    if ! run_on "$arch" "$exe" "$ROOT/examples/digits/digits_test.bin" \
        "$TMP/digits_$arch.logits" >"$TMP/digits_$arch.txt" 2>&1; then
        fail "digits $arch: run: $(cat "$TMP/digits_$arch.txt")"
        continue
    fi
    secs=$(since "$t0")
    acc="$(grep accuracy "$TMP/digits_$arch.txt")"
    if [ "$arch" = x86_64 ]; then
        echo "     digits x86_64 (native): $acc, $secs s"
        continue
    fi
    if cmp_out="$("$PY" "$ROOT/tests/edge/edge.py" compare "$TMP/digits_x86_64.logits" \
        "$TMP/digits_$arch.logits" 10)" &&
        [ "$acc" = "$(grep accuracy "$TMP/digits_x86_64.txt")" ]; then
        ok "digits $arch (qemu-user): $acc, as on x86_64; logits of 360 images: $cmp_out;" \
            "$secs s"
    else
        fail "digits $arch: $acc (x86_64: $(grep accuracy "$TMP/digits_x86_64.txt")); $cmp_out"
    fi
done

# ---- MobileNetV2: the suite's export and input ----------------------------------------
if ! model="$("$PY" "$ROOT/tests/edge/edge.py" suite-model mobilenet_v2 "$TMP/mnv2" \
    2>"$TMP/export.err")"; then
    fail "mobilenet_v2: no model: $(cat "$TMP/export.err") $model"
    finish
fi
if ! "$KILN" compile "$model" -o "$TMP/mnv2/b" --name mobilenet_v2 --test-main --quiet \
    2>"$TMP/kiln.err"; then
    fail "kiln compile mobilenet_v2: $(cat "$TMP/kiln.err")"
    finish
fi
for arch in "${ARCHES[@]}"; do
    exe="$TMP/mnv2_$arch"
    if ! "$(cc_of "$arch")" "${CFLAGS[@]}" -I "$TMP/mnv2/b" "$TMP/mnv2/b/mobilenet_v2.c" \
        "$TMP/mnv2/b/mobilenet_v2_test_main.c" -lm -o "$exe" 2>"$TMP/cc.log"; then
        fail "mobilenet_v2 $arch: build: $(head -n 5 "$TMP/cc.log")"
        continue
    fi
    if [ "$(elf_machine "$exe")" != "$(machine_of "$arch")" ]; then
        fail "mobilenet_v2 $arch: not an $arch ELF (e_machine $(elf_machine "$exe"))"
        continue
    fi
    t0=$EPOCHREALTIME
    if ! run_on "$arch" "$exe" "$TMP/mnv2/b/mobilenet_v2_weights.bin" "$TMP/mnv2/in_0.bin" \
        "$TMP/mnv2_$arch.out" >"$TMP/mnv2_$arch.txt" 2>&1; then
        fail "mobilenet_v2 $arch: run: $(cat "$TMP/mnv2_$arch.txt")"
        continue
    fi
    secs=$(since "$t0")
    if [ "$arch" = x86_64 ]; then
        echo "     mobilenet_v2 x86_64 (native): $secs s"
        continue
    fi
    if cmp_out="$("$PY" "$ROOT/tests/edge/edge.py" compare "$TMP/mnv2_x86_64.out" \
        "$TMP/mnv2_$arch.out" 1000)"; then
        ok "mobilenet_v2 $arch (qemu-user): 1000 logits against x86_64: $cmp_out;" \
            "$secs s"
    else
        fail "mobilenet_v2 $arch: $cmp_out"
    fi
done
finish
