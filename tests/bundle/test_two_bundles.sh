#!/usr/bin/env bash
# Several bundles link into one program: eltwise.onnx as net_a (bin weights) and as net_c
# (bin weights), other.onnx as net_b (embedded weights). One translation unit includes all
# three headers under -Werror; every global symbol an object defines carries its bundle's
# prefix, no two objects define the same symbol, and all three models run in one process
# and match ONNX Runtime.
# Usage: test_two_bundles.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

A="$TMP/net_a" B="$TMP/net_b" C="$TMP/net_c"
compile_model eltwise "$A" --name net_a >/dev/null &&
    compile_model other "$B" --name net_b --weights embed >/dev/null &&
    compile_model eltwise "$C" --name net_c >/dev/null ||
    { fail "kiln compile of the three bundles"; finish; }
pass "kiln compile --name net_a / net_b (embed) / net_c"

cat >"$TMP/main.c" <<'CEOF'
/* Runs three bundles in one program. Arguments, in compare.py's order: net_a weights, x, y,
 * out_f, out_i, m; net_b x, y; net_c weights, x, y, out_f, out_i, m. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_a.h"
#include "net_b.h"
#include "net_c.h"

#define ALIGN 64
#define POISON 0xA5

static void *block(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, n ? n : 1) != 0) exit(2);
    memset(p, POISON, n ? n : 1);
    return p;
}

static void *load(const char *path, size_t n) {
    void *p = block(n);
    FILE *f = fopen(path, "rb");
    if (!f || fread(p, 1, n, f) != n) { fprintf(stderr, "%s: short\n", path); exit(2); }
    fclose(f);
    return p;
}

static void save(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) exit(2);
}

#define ELT 48 /* elements of eltwise's tensors, 2x3x8 */

int main(int argc, char **argv) {
    net_a_inputs ia; net_a_outputs oa;
    net_b_inputs ib; net_b_outputs ob;
    net_c_inputs ic; net_c_outputs oc;
    const void *wa, *wc;
    int rc;
    if (argc != 15) { fprintf(stderr, "want 14 arguments\n"); return 2; }
    wa = load(argv[1], NET_A_WEIGHTS_SIZE);
    ia.x = load(argv[2], ELT * 4); ia.y = load(argv[3], 24 * 4);
    oa.out_f = block(ELT * 4); oa.out_i = block(ELT * 4); oa.m = block(ELT * 4);
    ib.x = load(argv[7], 20 * 4); ob.y = block(20 * 4);
    wc = load(argv[9], NET_C_WEIGHTS_SIZE);
    ic.x = load(argv[10], ELT * 4); ic.y = load(argv[11], 24 * 4);
    oc.out_f = block(ELT * 4); oc.out_i = block(ELT * 4); oc.m = block(ELT * 4);
    /* one shared arena would do as the runs do not overlap; separate ones here */
    if ((rc = net_a_run(&ia, &oa, wa, block(NET_A_ARENA_SIZE))) != NET_A_OK) return 10 + rc;
    if ((rc = net_b_run(&ib, &ob, net_b_weights, block(NET_B_ARENA_SIZE))) != NET_B_OK)
        return 20 + rc;
    if ((rc = net_c_run(&ic, &oc, wc, block(NET_C_ARENA_SIZE))) != NET_C_OK) return 30 + rc;
    save(argv[4], oa.out_f, ELT * 4); save(argv[5], oa.out_i, ELT * 4); save(argv[6], oa.m, ELT * 4);
    save(argv[8], ob.y, 20 * 4);
    save(argv[12], oc.out_f, ELT * 4); save(argv[13], oc.out_i, ELT * 4);
    save(argv[14], oc.m, ELT * 4);
    return 0;
}
CEOF

for cc in gcc clang; do
    O="$TMP/obj-$cc"
    mkdir -p "$O"
    check "$cc: each bundle compiles to an object ($STRICT)" bash -c "
        $cc $STRICT -c -I'$A' '$A/net_a.c' -o '$O/net_a.o' &&
        $cc $STRICT -c -I'$B' '$B/net_b.c' -o '$O/net_b.o' &&
        $cc $STRICT -c -I'$B' '$B/net_b_weights.c' -o '$O/net_b_weights.o' &&
        $cc $STRICT -c -I'$C' '$C/net_c.c' -o '$O/net_c.o'"
    check "$cc: one file includes all three headers ($STRICT -D_POSIX_C_SOURCE=200112L)" \
        $cc $STRICT -D_POSIX_C_SOURCE=200112L -c -I"$A" -I"$B" -I"$C" "$TMP/main.c" -o "$O/main.o"
    check "$cc: the three bundles link into one program" \
        $cc "$O/main.o" "$O/net_a.o" "$O/net_b.o" "$O/net_b_weights.o" "$O/net_c.o" \
        -o "$TMP/three-$cc" -lm
done

# Global symbols defined by each object: all prefixed, none shared.
O="$TMP/obj-gcc"
bad=""
for pair in net_a:net_a.o net_b:net_b.o net_b:net_b_weights.o net_c:net_c.o; do
    prefix="${pair%%:*}" obj="${pair#*:}"
    nm -g --defined-only "$O/$obj" | awk '{print $3}' >"$TMP/$obj.syms"
    while read -r s; do
        case "$s" in "${prefix}"_*) ;; *) bad+=" $obj:$s" ;; esac
    done <"$TMP/$obj.syms"
done
if [ -z "$bad" ] && [ -s "$O/net_a.o" ]; then
    pass "every global symbol is prefixed: $(cat "$TMP"/*.o.syms | tr '\n' ' ')"
else
    fail "global symbols without their bundle's prefix:$bad"
fi
dups="$(cat "$TMP"/*.o.syms | sort | uniq -d)"
if [ -z "$dups" ]; then pass "no two objects define the same global symbol"; else fail "clashing symbols: $dups"; fi

"$PY" "$ROOT/tests/bundle/compare.py" --work "$TMP/cmp" --exe "$TMP/three-gcc" \
    --model "$MODELS/eltwise.onnx" --weights "$A/net_a_weights.bin" \
    --model "$MODELS/other.onnx" --weights none \
    --model "$MODELS/eltwise.onnx" --weights "$C/net_c_weights.bin" >"$TMP/cmp.log" 2>&1 &&
    pass "all three models run in one program and match ONNX Runtime" ||
    { fail "three bundles in one program vs ONNX Runtime"; sed 's/^/    /' "$TMP/cmp.log"; }
finish
