/* The .qparams reader (qparams.h). */
#include "driver/qparams.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QP_LINE_MAX 4096

static uint32_t find_value(const IrGraph *g, const char *name) {
    for (uint32_t v = 0; v < g->n_values; v++)
        if (g->values[v].name && strcmp(g->values[v].name, name) == 0) return v;
    return IR_NONE;
}

/* "key=VALUE" -> VALUE, or NULL */
static const char *keyed(const char *tok, const char *key) {
    size_t n = strlen(key);
    return tok && strncmp(tok, key, n) == 0 && tok[n] == '=' ? tok + n + 1 : NULL;
}

static bool apply_line(IrGraph *g, char *line, const char *where, const char *sha, bool *header,
                       bool *seen, Diag *d) {
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok || tok[0] == '#') return true;
    if (!*header) {
        char *ver = strtok_r(NULL, " \t\r\n", &save);
        if (strcmp(tok, "kiln-qparams") != 0 || !ver) {
            diag_error(d, "%s: not a .qparams file (its first line must be 'kiln-qparams 1')", where);
            return false;
        }
        if (strcmp(ver, "1") != 0) {
            diag_error(d, "%s: .qparams version %s; this kiln reads version 1", where, ver);
            return false;
        }
        *header = true;
        return true;
    }
    if (strcmp(tok, "model") == 0) {
        char *hash = strtok_r(NULL, " \t\r\n", &save);
        if (!hash) {
            diag_error(d, "%s: 'model' needs the model's SHA-256", where);
            return false;
        }
        if (sha && strcmp(hash, sha) != 0) {
            diag_error(d, "%s: made for another model (SHA-256 %.12s..., this one %.12s...)", where,
                       hash, sha);
            return false;
        }
        return true;
    }
    if (strcmp(tok, "tensor") != 0) {
        diag_error(d, "%s: unknown item '%s' (expected 'tensor' or 'model')", where, tok);
        return false;
    }
    char *name = strtok_r(NULL, " \t\r\n", &save);
    const char *s_txt = keyed(strtok_r(NULL, " \t\r\n", &save), "scale");
    const char *z_txt = keyed(strtok_r(NULL, " \t\r\n", &save), "zero_point");
    if (!name || !s_txt || !z_txt || strtok_r(NULL, " \t\r\n", &save)) {
        diag_error(d, "%s: expected 'tensor NAME scale=S zero_point=Z'", where);
        return false;
    }
    uint32_t v = find_value(g, name);
    if (v == IR_NONE) {
        diag_error(d, "%s: tensor '%s' is not in the model", where, name);
        return false;
    }
    IrValue *val = &g->values[v];
    if (val->kind == IR_VALUE_CONST || val->type.kind != IR_TYPE_TENSOR ||
        val->type.dtype != IR_DTYPE_F32) {
        diag_error(d, "%s: tensor '%s' is not a computed float32 tensor", where, name);
        return false;
    }
    char *end;
    errno = 0;
    double s = strtod(s_txt, &end);
    if (*end || errno || !isfinite(s) || !(s > 0.0) || !isfinite((float)s) || (float)s == 0.0f) {
        diag_error(d, "%s: tensor '%s': scale '%s' is not a finite positive number", where, name, s_txt);
        return false;
    }
    long z = strtol(z_txt, &end, 10);
    if (*end || !z_txt[0] || z < 0 || z > 255) {
        diag_error(d, "%s: tensor '%s': zero_point '%s' is not an integer in 0..255", where, name, z_txt);
        return false;
    }
    if (seen[v]) {
        diag_error(d, "%s: tensor '%s' given twice", where, name);
        return false;
    }
    seen[v] = true;
    IrQuant *q = ir_arena_alloc(g->arena, sizeof *q);
    q->axis = -1;
    q->n = 1;
    q->scales = ir_arena_alloc(g->arena, sizeof *q->scales);
    q->zero_points = ir_arena_alloc(g->arena, sizeof *q->zero_points);
    q->scales[0] = (float)s;
    q->zero_points[0] = (int32_t)z;
    val->quant = q;
    return true;
}

bool qparams_apply_file(IrGraph *g, const char *path, const char *model_sha256, Diag *d) {
    FILE *f = fopen(path, "r");
    if (!f) {
        diag_error(d, "%s: cannot read: %s", path, strerror(errno));
        return false;
    }
    bool *seen = calloc(g->n_values ? g->n_values : 1, 1);
    IR_ASSERT(seen);
    char line[QP_LINE_MAX], where[QP_LINE_MAX + 32];
    bool header = false, ok = true;
    unsigned lineno = 0, tensors = 0;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(where, sizeof where, "%s:%u", path, lineno);
        if (!strchr(line, '\n') && !feof(f)) {
            diag_error(d, "%s: line longer than %d bytes", where, QP_LINE_MAX - 2);
            ok = false;
            break;
        }
        ok = apply_line(g, line, where, model_sha256, &header, seen, d);
        if (ok && strncmp(line, "tensor", 6) == 0) tensors++;
    }
    fclose(f);
    free(seen);
    if (ok && !header) {
        diag_error(d, "%s: empty (its first line must be 'kiln-qparams 1')", path);
        ok = false;
    }
    if (ok && tensors == 0) {
        diag_error(d, "%s: names no tensor", path);
        ok = false;
    }
    if (!ok) /* no half-annotated graph */
        for (uint32_t v = 0; v < g->n_values; v++) g->values[v].quant = NULL;
    return ok;
}
