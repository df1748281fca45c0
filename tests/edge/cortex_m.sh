#!/usr/bin/env bash
# The digits bundle on a microcontroller, emulated: built bare-metal with arm-none-eabi-gcc
# (hard float, newlib-nano, weights const in flash with kiln --weights embed; start-up and
# linker script in tests/edge/mcu/) for a Cortex-M4F (QEMU's mps2-an386) and a Cortex-M7
# (mps2-an500), run under qemu-system-arm, stdio through semihosting. tests/edge/edge_digits.c
# classifies the 360 held-out images on the board; the accuracy must be what the same
# program prints on x86-64, and the logits must agree with x86's within the suite's
# tolerance (rtol 1e-3, atol 1e-4). Also checked: the float calls use VFP registers (hard
# float), the weights array sits in flash, and the link fits 1 MiB of flash and 128 KiB of
# RAM (mps2.ld). Prints flash (text + rodata) and RAM (arena + stack, the stack measured by
# painting) of the float bundle; with --docs FILE it also writes them into FILE between the
# markers <!-- cortex-m:begin --> and <!-- cortex-m:end --> (docs/edge.md).
# Ends with "N passed, N failed".
# Usage: tests/edge/cortex_m.sh PATH/TO/kiln [--docs docs/edge.md]
set -u
KILN="$1"
DOCS=""
if [ "${2:-}" = --docs ]; then DOCS="$3"; fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
SPLIT="$ROOT/examples/digits/digits_test.bin"
QEMU_TIMEOUT_S=300 # the run takes about 1 s; a hang (a fault loop) must not stall CI
COMMON=(-mthumb -mfloat-abi=hard -O2 -std=c99 -Wall -Wextra -Werror -pedantic
        -ffunction-sections -fdata-sections)
# board  QEMU machine  CPU flags
BOARDS=("cortex-m4f mps2-an386 -mcpu=cortex-m4 -mfpu=fpv4-sp-d16"
        "cortex-m7 mps2-an500 -mcpu=cortex-m7 -mfpu=fpv5-d16")
fails=0
passed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
finish() {
    echo "$passed passed, $fails failed"
    exit $((fails > 0))
}

missing=""
for tool in arm-none-eabi-gcc arm-none-eabi-size arm-none-eabi-nm arm-none-eabi-readelf \
    qemu-system-arm; do
    command -v "$tool" >/dev/null || missing+=" $tool"
done
[ -f /usr/lib/arm-none-eabi/newlib/thumb/v7e-m+fp/hard/libc_nano.a ] ||
    missing+=" libnewlib-arm-none-eabi"
if [ -n "$missing" ]; then
    fail "not installed:$missing (scripts/test installs them through scripts/setup)"
    finish
fi

B="$TMP/bundle"
if ! "$KILN" compile "$ROOT/examples/digits/digits.onnx" -o "$B" --name digits \
    --weights embed --quiet 2>"$TMP/kiln.err"; then
    fail "kiln compile digits --weights embed: $(cat "$TMP/kiln.err")"
    finish
fi
arena="$(sed -n 's/^#define DIGITS_ARENA_SIZE \([0-9]*\).*/\1/p' "$B/digits.h")"

# the reference: the same program on this machine
if ! "${CC:-cc}" -O2 -std=c99 -I "$B" "$ROOT/tests/edge/edge_digits.c" "$B/digits.c" \
    "$B/digits_weights.c" -lm -o "$TMP/x86" 2>"$TMP/cc.log" ||
    ! "$TMP/x86" "$SPLIT" "$TMP/x86.logits" >"$TMP/x86.txt" 2>&1; then
    fail "the x86-64 reference run: $(cat "$TMP/cc.log" "$TMP/x86.txt")"
    finish
fi
x86_acc="$(grep accuracy "$TMP/x86.txt")"
echo "     x86_64 (native): $x86_acc"

table=""
for board in "${BOARDS[@]}"; do
    read -r name machine cpu fpu <<<"$board"
    elf="$TMP/$name.elf"
    flags=("$cpu" "$fpu" "${COMMON[@]}")
    if ! arm-none-eabi-gcc "${flags[@]}" -DEDGE_STACK_PROBE -I "$B" -I "$ROOT/tests/edge" \
        --specs=nano.specs --specs=rdimon.specs -nostartfiles -T "$ROOT/tests/edge/mcu/mps2.ld" \
        -Wl,--gc-sections "$ROOT/tests/edge/mcu/startup.c" "$ROOT/tests/edge/edge_digits.c" \
        "$B/digits.c" "$B/digits_weights.c" -lm -o "$elf" 2>"$TMP/cc.log"; then
        fail "$name: build or link: $(head -n 8 "$TMP/cc.log")"
        continue
    fi
    # the bundle alone, as a firmware would hold it
    arm-none-eabi-gcc "${flags[@]}" -I "$B" -c "$B/digits.c" -o "$TMP/$name-digits.o" &&
        arm-none-eabi-gcc "${flags[@]}" -I "$B" -c "$B/digits_weights.c" \
            -o "$TMP/$name-weights.o"
    sect() { # sect OBJECT PREFIX: bytes of the object's sections whose name starts so
        arm-none-eabi-size -A "$1" | awk -v p="$2" 'index($1, p) == 1 { s += $2 } END { print s + 0 }'
    }
    code=$(sect "$TMP/$name-digits.o" .text)
    consts=$(sect "$TMP/$name-digits.o" .rodata)
    weights=$(sect "$TMP/$name-weights.o" .rodata)
    read -r img_text img_data img_bss _ < <(arm-none-eabi-size "$elf" | tail -n 1)

    weights_at="$(arm-none-eabi-nm "$elf" | awk '$3 == "digits_weights" { print $1 }')"
    if arm-none-eabi-readelf -A "$elf" | grep -q "Tag_ABI_VFP_args: VFP registers" &&
        [ -n "$weights_at" ] && [ $((16#$weights_at)) -lt $((16#20000000)) ]; then
        ok "$name: hard float (VFP argument registers), digits_weights in flash at 0x$weights_at"
    else
        fail "$name: not hard float, or digits_weights not in flash (at 0x$weights_at)"
    fi

    out="$TMP/$name.txt"
    if ! (cd "$TMP" && timeout "$QEMU_TIMEOUT_S" qemu-system-arm -M "$machine" -nographic \
        -monitor none -serial none \
        -semihosting-config "enable=on,target=native,arg=$name,arg=$SPLIT,arg=$TMP/$name.logits" \
        -kernel "$elf") >"$out" 2>&1 </dev/null; then
        fail "$name on $machine: $(head -n 5 "$out")"
        continue
    fi
    acc="$(grep accuracy "$out")"
    stack="$(sed -n 's/^digits_run stack: \([0-9]*\).*/\1/p' "$out")"
    peak="$(sed -n 's/^program stack peak: \([0-9]*\).*/\1/p' "$out")"
    if cmp_out="$("$PY" "$ROOT/tests/edge/edge.py" compare "$TMP/x86.logits" \
        "$TMP/$name.logits" 10)" && [ "$acc" = "$x86_acc" ] && [ -n "$stack" ]; then
        ok "$name on qemu $machine: $acc, as on x86_64; logits: $cmp_out"
    else
        fail "$name on $machine: '$acc' (x86_64: '$x86_acc'); ${cmp_out:-no logits}"
        continue
    fi
    echo "     $name: bundle flash $((code + consts + weights)) B (code $code, constants" \
        "$consts, weights $weights); RAM $((arena + stack)) B (arena $arena, digits_run" \
        "stack $stack); whole image: text $img_text, data $img_data, bss $img_bss," \
        "stack peak $peak"
    table+="| $name ($machine) | $((code + consts + weights)) | $code | $consts | $weights |"
    table+=" $((arena + stack)) | $arena | $stack | $img_text + $img_data | $img_bss | $peak |"
    table+=" ${acc#accuracy: } |"$'\n'
done

if [ -n "$DOCS" ] && [ -n "$table" ]; then
    header="| board (QEMU machine) | bundle flash B | code | constants | weights | bundle RAM B | arena | digits_run stack | image flash B (text + data) | image bss B | image stack peak B | accuracy |"
    header+=$'\n'"|---|---|---|---|---|---|---|---|---|---|---|---|"
    gen="<!-- cortex-m:begin (written by tests/edge/cortex_m.sh --docs; do not edit) -->"
    "$PY" - "$DOCS" "$gen" "$header" "$table" <<'PYEOF'
import re
import sys
path, gen, header, table = sys.argv[1:]
text = open(path).read()
block = f"{gen}\n{header}\n{table.rstrip()}\n<!-- cortex-m:end -->"
new, n = re.subn(r"<!-- cortex-m:begin.*?<!-- cortex-m:end -->", lambda m: block, text,
                 flags=re.S)
if n != 1:
    sys.exit(f"{path}: no <!-- cortex-m:begin --> ... <!-- cortex-m:end --> block")
open(path, "w").write(new)
PYEOF
    echo "     wrote the sizes into $DOCS"
fi
finish
