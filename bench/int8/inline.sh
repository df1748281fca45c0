#!/usr/bin/env bash
# Issue 13: MobileNetV2's int8 bundle ran ~10% slower at -O3 than at -O2 because GCC -O3
# (not -O2) left the AVX-512 requantization helpers (rt_qrqz_prep, rt_qrqz_wide) out of line
# in rt_qgemm_vnni_panels and the depthwise kernel's clones: their struct of constants then
# goes through memory at every row tile and panel. They are marked always_inline; this check builds the
# int8 bundle of a suite model at -O3 (and -O2) -march=native, as users build Release, and
# fails if the disassembly still calls one of them from anywhere but the short-panel path
# rt_qrqz_part. With BIN=PATH it checks that built bundle program instead.
# Usage: [BIN=bench] bench/int8/inline.sh [PATH/TO/kiln] [MODEL: mobilenet_v2|resnet50|...]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
NAME="${2:-mobilenet_v2}"
CC="${CC:-cc}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
. "$ROOT/bench/int8/lib.sh"

check() { # BINARY -> 0 when no out-of-line call to rt_qrqz_prep / rt_qrqz_wide / rt_qrqz
    local bad
    bad="$(objdump -d --no-show-raw-insn "$1" |
        awk '/^[0-9a-f]+ <.*>:$/ { f = $2 } /call.*<rt_qrqz(_prep|_wide)?(\.[a-z]+\.[0-9]+)?>/ && f != "<rt_qrqz_part>:" { print f, $NF }' |
        sort | uniq -c)"
    if [ -n "$bad" ]; then
        echo "FAIL $1: out-of-line requantization calls:"
        echo "$bad"
        return 1
    fi
    echo "ok $1: rt_qrqz_prep / rt_qrqz_wide inlined"
}

if [ -n "${BIN:-}" ]; then
    check "$BIN"
    exit
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
model="$(int8_model "$NAME")"
int8_samples "$WORK/cal"
"$KILN" calibrate "$model" --data "$WORK/cal" --method minmax -o "$WORK/q.qparams" --quiet
dir="$WORK/b"
"$KILN" compile "$model" -o "$dir" --name bm --quiet --int8 "$WORK/q.qparams" >&2
rc=0
for opt in -O3 -O2; do
    int8_bench_cc "$dir" "$dir/bench$opt" $opt -march=native
    check "$dir/bench$opt" || rc=1
done
grep -q avx512 /proc/cpuinfo || echo "note: no AVX-512 on this CPU, the rt_qrqz path is not built"
exit $rc
