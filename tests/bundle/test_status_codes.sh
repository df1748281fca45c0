#!/usr/bin/env bash
# NAME_run's argument checks: every NULL pointer (inputs, outputs, weights, arena, each input
# and output field) gives NAME_ERR_NULL, a misaligned arena or weights NAME_ERR_ALIGN, and in
# both cases no output byte is written; well-formed arguments give NAME_OK and write every
# output byte. Built with ASan/UBSan, with exactly sized buffers.
# Usage: test_status_codes.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

D="$TMP/st"
compile_model eltwise "$D" --name st >/dev/null || { fail "kiln compile"; finish; }
cat >"$TMP/status.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "st.h"

#define POISON 0xA5
#define N_OUT 3
static const size_t out_bytes[N_OUT] = {48 * 4, 48 * 4, 48 * 4}; /* out_f, out_i, m */
static int failures;

static void *block(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, ST_ALIGN, n ? n : 1) != 0) exit(2);
    return p;
}

static void poison(st_outputs *o) {
    memset(o->out_f, POISON, out_bytes[0]);
    memset(o->out_i, POISON, out_bytes[1]);
    memset(o->m, POISON, out_bytes[2]);
}

/* Bytes of the outputs that still hold the poison pattern. */
static size_t poisoned(const st_outputs *o) {
    const unsigned char *p[N_OUT];
    size_t n = 0, i, k;
    p[0] = (const void *)o->out_f;
    p[1] = (const void *)o->out_i;
    p[2] = (const void *)o->m;
    for (k = 0; k < N_OUT; k++)
        for (i = 0; i < out_bytes[k]; i++) n += p[k][i] == POISON;
    return n;
}

static void expect(const char *what, int got, int want, const st_outputs *o, int untouched) {
    size_t left = poisoned(o);
    int ok = got == want && (untouched ? left == out_bytes[0] * N_OUT : left < 8);
    printf("%s %s: status %d (want %d), %lu output bytes still poisoned\n", ok ? "ok  " : "FAIL",
           what, got, want, (unsigned long)left);
    failures += !ok;
}

int main(int argc, char **argv) {
    st_inputs in, in2;
    st_outputs out, out2;
    unsigned char *weights, *wmis, *arena, *amis;
    float *x, *y;
    FILE *f;
    size_t i;
    if (argc != 2) return 2;
    weights = block(ST_WEIGHTS_SIZE);
    f = fopen(argv[1], "rb");
    if (!f || fread(weights, 1, ST_WEIGHTS_SIZE, f) != ST_WEIGHTS_SIZE) return 2;
    fclose(f);
    wmis = (unsigned char *)block(ST_WEIGHTS_SIZE + ST_ALIGN) + 1;
    memcpy(wmis, weights, ST_WEIGHTS_SIZE);
    arena = block(ST_ARENA_SIZE);
    amis = (unsigned char *)block(ST_ARENA_SIZE + ST_ALIGN) + 8;
    x = block(48 * 4);
    y = block(24 * 4);
    srand((unsigned)(size_t)&in ^ 12345u);
    for (i = 0; i < 48; i++) x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    for (i = 0; i < 24; i++) y[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    in.x = x;
    in.y = y;
    out.out_f = block(out_bytes[0]);
    out.out_i = block(out_bytes[1]);
    out.m = block(out_bytes[2]);

    poison(&out);
    expect("NULL inputs struct", st_run(NULL, &out, weights, arena), ST_ERR_NULL, &out, 1);
    expect("NULL outputs struct", st_run(&in, NULL, weights, arena), ST_ERR_NULL, &out, 1);
    expect("NULL weights", st_run(&in, &out, NULL, arena), ST_ERR_NULL, &out, 1);
    expect("NULL arena", st_run(&in, &out, weights, NULL), ST_ERR_NULL, &out, 1);
    in2 = in; in2.x = NULL;
    expect("NULL input x", st_run(&in2, &out, weights, arena), ST_ERR_NULL, &out, 1);
    in2 = in; in2.y = NULL;
    expect("NULL input y", st_run(&in2, &out, weights, arena), ST_ERR_NULL, &out, 1);
    out2 = out; out2.out_f = NULL;
    expect("NULL output out_f", st_run(&in, &out2, weights, arena), ST_ERR_NULL, &out, 1);
    out2 = out; out2.out_i = NULL;
    expect("NULL output out_i", st_run(&in, &out2, weights, arena), ST_ERR_NULL, &out, 1);
    out2 = out; out2.m = NULL;
    expect("NULL output m", st_run(&in, &out2, weights, arena), ST_ERR_NULL, &out, 1);
    expect("arena off by 8 bytes", st_run(&in, &out, weights, amis), ST_ERR_ALIGN, &out, 1);
    expect("arena off by 1 byte", st_run(&in, &out, weights, amis - 7), ST_ERR_ALIGN, &out, 1);
    expect("weights off by 1 byte", st_run(&in, &out, wmis, arena), ST_ERR_ALIGN, &out, 1);
    expect("aligned arguments", st_run(&in, &out, weights, arena), ST_OK, &out, 0);
    printf("status codes: %d failed\n", failures);
    free(weights);
    free(wmis - 1);
    free(arena);
    free(amis - 8);
    free(x);
    free(y);
    free(out.out_f);
    free(out.out_i);
    free(out.m);
    return failures != 0;
}
CEOF
for cc in gcc clang; do
    exe="$TMP/status-$cc"
    check "$cc: status test program builds ($STRICT $SAN_FLAGS)" \
        $cc $STRICT -D_POSIX_C_SOURCE=200112L $SAN_FLAGS -I"$D" "$D/st.c" "$TMP/status.c" -o "$exe" -lm
    if [ -x "$exe" ]; then
        if "$exe" "$D/st_weights.bin" >"$TMP/status.log" 2>&1; then
            pass "$cc: $(grep -c '^ok' "$TMP/status.log") status checks (NULL x9, misaligned x3, OK)"
        else
            fail "$cc: status checks"
        fi
        sed 's/^/    /' "$TMP/status.log"
    fi
done
finish
