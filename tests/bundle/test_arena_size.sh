#!/usr/bin/env bash
# The arena that kiln compile reports equals NAME_ARENA_SIZE in the header and the README,
# is at least the reported lower bound and at most the naive sum; the source's comment says
# the same. The model runs in a heap block of exactly NAME_ARENA_SIZE bytes under ASan, so a
# plan that writes past the arena fails here.
# Usage: test_arena_size.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

for model in eltwise other conv minimal; do
    D="$TMP/$model"
    if ! compile_model "$model" "$D" >"$TMP/out.txt" 2>&1; then
        fail "$model: kiln compile"
        continue
    fi
    line="$(grep -E '^arena: [0-9]+ bytes \(lower bound [0-9]+, naive sum [0-9]+\)$' "$TMP/out.txt")"
    if [ -z "$line" ]; then
        fail "$model: kiln compile prints 'arena: N bytes (lower bound L, naive sum S)'"
        continue
    fi
    read -r arena lower naive <<<"$(echo "$line" | sed -E 's/[^0-9]+/ /g')"
    U="$(echo "$model" | tr a-z A-Z)"
    hdr="$(sed -nE "s/^#define ${U}_ARENA_SIZE ([0-9]+) .*/\1/p" "$D/$model.h")"
    check "$model: ${U}_ARENA_SIZE ($hdr) equals the reported arena ($arena)" test "$hdr" = "$arena"
    check "$model: arena $arena >= lower bound $lower" test "$arena" -ge "$lower"
    check "$model: arena $arena <= naive sum $naive" test "$arena" -le "$naive"
    check "$model: the README states the same three numbers" \
        grep -q "arena: $arena bytes (lower bound $lower, naive sum $naive)" "$D/README.md"
    check "$model: $model.c's comment states the same three numbers" \
        grep -q "arena $arena bytes (lower bound $lower, naive sum $naive)" "$D/$model.c"
    check "$model: arena $arena is a multiple of ${U}_ALIGN" test $((arena % 64)) -eq 0
done

# eltwise in an arena of exactly ELTWISE_ARENA_SIZE bytes, under ASan.
D="$TMP/eltwise"
cat >"$TMP/exact.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eltwise.h"

static void *exact(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, ELTWISE_ALIGN, n) != 0) exit(2);
    memset(p, 0xA5, n);
    return p;
}

int main(int argc, char **argv) {
    eltwise_inputs in;
    eltwise_outputs out;
    unsigned char *w = exact(ELTWISE_WEIGHTS_SIZE), *arena = exact(ELTWISE_ARENA_SIZE);
    float *x = exact(48 * 4), *y = exact(24 * 4);
    size_t i;
    FILE *f;
    int rc;
    if (argc != 2 || !(f = fopen(argv[1], "rb")) || fread(w, 1, ELTWISE_WEIGHTS_SIZE, f) !=
        ELTWISE_WEIGHTS_SIZE) return 2;
    fclose(f);
    srand(7u ^ (unsigned)(size_t)&in);
    for (i = 0; i < 48; i++) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (i = 0; i < 24; i++) y[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    in.x = x;
    in.y = y;
    out.out_f = exact(48 * 4);
    out.out_i = exact(48 * 4);
    out.m = exact(48 * 4);
    rc = eltwise_run(&in, &out, w, arena);
    printf("eltwise_run in an arena of exactly %d bytes: status %d\n", ELTWISE_ARENA_SIZE, rc);
    free(w);
    free(arena);
    free(x);
    free(y);
    free(out.out_f);
    free(out.out_i);
    free(out.m);
    return rc != ELTWISE_OK;
}
CEOF
check "eltwise runs in an arena of exactly ELTWISE_ARENA_SIZE bytes (gcc $SAN_FLAGS)" bash -c "
    gcc $STRICT -D_POSIX_C_SOURCE=200112L $SAN_FLAGS -I'$D' '$D/eltwise.c' '$TMP/exact.c' \
        -o '$TMP/exact' -lm && '$TMP/exact' '$D/eltwise_weights.bin'"
finish
