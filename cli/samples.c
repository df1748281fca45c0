/* The samples of kiln calibrate and kiln validate --per-layer (docs/int8.md): a folder of
 * .npy/.npz files taken in name order, or one such file. A .npy holds one sample (the
 * input's shape) or several along a first axis (the input's own batch axis when it is 1, or
 * a new one); a .npz (numpy.savez: a zip of .npy members, stored) holds each input under its
 * name (or, for a model of one input, as its only member), shaped the same ways. A model of
 * several inputs takes .npz files. Headers are checked when the set is opened; a sample is
 * read only when it is needed (memory does not grow with the set). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "npy.h"

#define NPY_MAX_RANK 32
#define ZIP_LOCAL_SIG 0x04034b50u

typedef struct Ctx {
    const char *cmd, *in_name;
    int in_rank;
    const int64_t *in_dims;
    IrDType dtype;
    bool sole; /* the model's only input: a .npy, or a .npz's only member, is it */
    CliSampleSet *set;
} Ctx;

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static void dims_text(char *buf, size_t cap, const int64_t *dims, int rank) {
    size_t len = 0;
    len += (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < rank && len + 24 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)dims[i]);
    snprintf(buf + len, cap - len, ")");
}

static bool push(Ctx *c, const char *path, int64_t offset, int64_t count) {
    CliSampleSet *s = c->set;
    char *p = dup_str(path);
    if (!p) return false;
    s->files = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *s->files);
    if (!s->files) return false;
    s->files[s->n_files++] = p;
    for (int64_t i = 0; i < count; i++) {
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 64;
            CliSample *v = realloc(s->v, (size_t)s->cap * sizeof *v);
            if (!v) return false;
            s->v = v;
        }
        s->v[s->n++] = (CliSample){.path = p, .offset = offset, .index = i, .count = count};
    }
    return true;
}

/* The .npy header at the file's current position: the input's element type, C order, a
 * shape of one sample or a batch of them. Sets *data (offset of the values) and *count. why: the reason when
 * not. */
static bool npy_header(Ctx *c, FILE *f, int64_t at, int64_t *data, int64_t *count, const char **why) {
    static char msg[512];
    unsigned char pre[12];
    char want_descr[16];
    snprintf(want_descr, sizeof want_descr, "'%s'", cli_npy_descr(c->dtype));
    *why = "not a .npy file";
    if (fseek(f, (long)at, SEEK_SET) != 0 || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        return false;
    size_t hlen = pre[8] | (size_t)pre[9] << 8, pre_len = 10;
    if (pre[6] >= 2) { /* version 2 and 3: a 4-byte length */
        if (fread(pre + 10, 1, 2, f) != 2) return false;
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        pre_len = 12;
    }
    char *header = hlen < (1u << 20) ? calloc(hlen + 1, 1) : NULL;
    bool ok = false;
    if (header && fread(header, 1, hlen, f) == hlen) {
        const char *descr = strstr(header, "'descr':"), *shape = strstr(header, "'shape':");
        const char *fo = strstr(header, "'fortran_order':");
        if (!descr || !shape || !fo) {
            *why = "a .npy header without descr, fortran_order or shape";
        } else if (!strstr(descr, want_descr)) {
            snprintf(msg, sizeof msg, "not %s (%s) data, the input's type", cli_npy_name(c->dtype),
                     want_descr);
            *why = msg;
        } else if (strncmp(fo + 16 + strspn(fo + 16, " "), "False", 5) != 0) {
            *why = "Fortran-ordered data";
        } else {
            const char *p = strchr(shape, '(');
            int64_t dims[NPY_MAX_RANK];
            int rank = 0;
            while (p && *p && *p != ')' && rank < NPY_MAX_RANK) {
                p++;
                p += strspn(p, " ");
                if (*p == ')') break;
                dims[rank++] = strtoll(p, (char **)&p, 10);
                p += strspn(p, " ");
            }
            bool one = rank == c->in_rank, along = rank == c->in_rank && c->in_dims[0] == 1,
                 extra = rank == c->in_rank + 1;
            for (int i = 0; i < c->in_rank; i++) {
                one &= dims[i] == c->in_dims[i];
                if (i > 0) along &= dims[i] == c->in_dims[i];
                if (extra) extra &= dims[i + 1] == c->in_dims[i];
            }
            if (one || along || extra) {
                *count = one ? 1 : dims[0];
                *data = at + (int64_t)pre_len + (int64_t)hlen;
                ok = *count >= 1;
                if (!ok) *why = "no sample in it (a first axis of 0)";
            } else {
                char got[120], want[120];
                dims_text(got, sizeof got, dims, rank);
                dims_text(want, sizeof want, c->in_dims, c->in_rank);
                snprintf(msg, sizeof msg, "shape %s, the input wants %s (or N of it along a first axis)",
                         got, want);
                *why = msg;
            }
        }
    }
    free(header);
    return ok;
}

static uint32_t le16(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* A .npz: the member NAME.npy for the input, else, for a model's only input, the only
 * member. */
static bool add_npz(Ctx *c, FILE *f, const char *path, const char **why) {
    static char msg[640];
    int64_t at = 0, pick = -1, n_members = 0, first = -1;
    char want[256];
    snprintf(want, sizeof want, "%s.npy", c->in_name);
    *why = "not a .npz file (numpy.savez)";
    for (;;) {
        unsigned char h[30];
        if (fseek(f, (long)at, SEEK_SET) != 0 || fread(h, 1, 30, f) != 30 || le32(h) != ZIP_LOCAL_SIG) break;
        uint32_t method = le16(h + 8), nlen = le16(h + 26), xlen = le16(h + 28);
        uint64_t csize = le32(h + 18);
        char name[256] = {0};
        unsigned char extra[256];
        if (nlen >= sizeof name || xlen > sizeof extra || fread(name, 1, nlen, f) != nlen ||
            fread(extra, 1, xlen, f) != xlen)
            return false;
        for (uint32_t x = 0; x + 4 <= xlen;) { /* zip64: the sizes in the extra field */
            uint32_t id = le16(extra + x), len = le16(extra + x + 2);
            if (id == 1 && len >= 16 && x + 4 + len <= xlen) csize = le64(extra + x + 12);
            x += 4 + len;
        }
        if (method != 0) {
            snprintf(msg, sizeof msg, "member '%s' is compressed (numpy.savez_compressed): Kiln "
                     "reads numpy.savez files", name);
            *why = msg;
            return false;
        }
        int64_t data = at + 30 + nlen + xlen;
        if (strcmp(name, want) == 0) pick = data;
        if (first < 0) first = data;
        n_members++;
        at = data + (int64_t)csize;
    }
    if (!n_members) return false;
    if (pick < 0 && n_members == 1 && c->sole) pick = first;
    if (pick < 0) {
        snprintf(msg, sizeof msg, "no member '%s' for input '%s' among its %lld", want, c->in_name,
                 (long long)n_members);
        *why = msg;
        return false;
    }
    int64_t offset, count;
    if (!npy_header(c, f, pick, &offset, &count, why)) return false;
    return push(c, path, offset, count);
}

static bool add_file(Ctx *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "kiln %s: error: %s: cannot read: %s\n", c->cmd, path, strerror(errno));
        return false;
    }
    const char *why = NULL;
    size_t n = strlen(path);
    bool ok;
    if (n > 4 && strcmp(path + n - 4, ".npz") == 0) {
        ok = add_npz(c, f, path, &why);
    } else if (!c->sole) {
        why = "a .npy holds one array: a model of several inputs takes .npz files (numpy.savez) "
              "with a member per input";
        ok = false;
    } else {
        int64_t offset, count;
        ok = npy_header(c, f, 0, &offset, &count, &why) && push(c, path, offset, count);
    }
    fclose(f);
    if (!ok) fprintf(stderr, "kiln %s: error: %s: input '%s': %s\n", c->cmd, path, c->in_name, why ? why : "out of memory");
    return ok;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_sample_file(const char *name) {
    size_t n = strlen(name);
    return n > 4 && (strcmp(name + n - 4, ".npy") == 0 || strcmp(name + n - 4, ".npz") == 0);
}

bool cli_samples_open(const char *cmd, const char *path, const IrValue *in, bool sole,
                      CliSampleSet *set) {
    Ctx c = {.cmd = cmd, .in_name = in->name, .in_rank = in->type.rank, .in_dims = in->type.dims,
             .dtype = (IrDType)in->type.dtype, .sole = sole, .set = set};
    memset(set, 0, sizeof *set);
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "kiln %s: error: %s: cannot read: %s\n", cmd, path, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (!is_sample_file(path)) {
            fprintf(stderr, "kiln %s: error: %s: not a folder, a .npy or a .npz file\n", cmd, path);
            return false;
        }
        return add_file(&c, path);
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "kiln %s: error: %s: cannot read the folder: %s\n", cmd, path, strerror(errno));
        return false;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    bool ok = true;
    while ((e = readdir(d)) != NULL && ok) {
        if (!is_sample_file(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) break;
            names = p;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) break;
        snprintf(names[n], len, "%s/%s", path, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && ok; i++) ok = add_file(&c, names[i]);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (ok && set->n == 0) {
        fprintf(stderr, "kiln %s: error: %s: no .npy or .npz samples in the folder\n", cmd, path);
        ok = false;
    }
    return ok;
}

bool cli_sample_read(const char *cmd, const CliSampleSet *set, int64_t k, const IrValue *in,
                     void *data) {
    const CliSample *s = &set->v[k];
    const char *in_name = in->name;
    int64_t in_numel = ir_type_numel(&in->type);
    size_t bytes = ir_dtype_size_bytes((IrDType)in->type.dtype, in_numel);
    FILE *f = fopen(s->path, "rb");
    char where[64] = "";
    if (s->count > 1) snprintf(where, sizeof where, " (sample %lld of %lld)", (long long)s->index, (long long)s->count);
    bool ok = f && fseek(f, (long)(s->offset + s->index * (int64_t)bytes), SEEK_SET) == 0 &&
              fread(data, 1, bytes, f) == bytes;
    if (f) fclose(f);
    if (!ok) {
        fprintf(stderr, "kiln %s: error: %s%s: input '%s': fewer values than its shape says\n", cmd,
                s->path, where, in_name);
        return false;
    }
    const float *x = (const float *)data;
    for (int64_t i = 0; in->type.dtype == IR_DTYPE_F32 && i < in_numel; i++)
        if (!isfinite(x[i])) {
            fprintf(stderr, "kiln %s: error: %s%s: input '%s': element %lld is %s\n", cmd, s->path,
                    where, in_name, (long long)i, isnan(x[i]) ? "NaN" : "infinite");
            return false;
        }
    return true;
}

void cli_samples_free(CliSampleSet *set) {
    for (int64_t i = 0; i < set->n_files; i++) free(set->files[i]);
    free(set->files);
    free(set->v);
    memset(set, 0, sizeof *set);
}

bool cli_feed_open(const char *cmd, const char *path, const IrGraph *g, const char *model,
                   CliFeed *f) {
    memset(f, 0, sizeof *f);
    f->n = g->n_inputs;
    if (!f->n) {
        fprintf(stderr, "kiln %s: error: %s: the model has no inputs to feed\n", cmd, model);
        return false;
    }
    for (uint32_t i = 0; i < f->n; i++) {
        const IrValue *in = &g->values[g->inputs[i]];
        if (!ir_type_is_static(&in->type) || in->type.rank > NPY_MAX_RANK ||
            !cli_npy_descr((IrDType)in->type.dtype)) {
            fprintf(stderr, "kiln %s: error: %s: input '%s' needs a static shape (--shape fixes "
                    "open dims) and an element type numpy has (it is %s)\n", cmd, model,
                    in->name ? in->name : "?", ir_dtype_name((IrDType)in->type.dtype));
            return false;
        }
    }
    f->in = calloc(f->n, sizeof *f->in);
    f->sets = path ? calloc(f->n, sizeof *f->sets) : NULL;
    f->buf = calloc(f->n, sizeof *f->buf);
    if (!f->in || (path && !f->sets) || !f->buf) return false;
    for (uint32_t i = 0; i < f->n; i++) {
        f->in[i] = g->values[g->inputs[i]]; /* a copy: passes may grow g->values */
        size_t bytes = ir_dtype_size_bytes((IrDType)f->in[i].type.dtype, ir_type_numel(&f->in[i].type));
        f->buf[i] = malloc(bytes ? bytes : 1);
        if (!f->buf[i]) return false;
        if (!path) continue;
        if (!cli_samples_open(cmd, path, &f->in[i], f->n == 1, &f->sets[i])) return false;
        if (i > 0 && f->sets[i].n != f->sets[0].n) {
            fprintf(stderr, "kiln %s: error: %s: %lld samples of input '%s' but %lld of input '%s'\n",
                    cmd, path, (long long)f->sets[i].n, f->in[i].name, (long long)f->sets[0].n,
                    f->in[0].name);
            return false;
        }
    }
    f->n_samples = path ? f->sets[0].n : 0;
    return true;
}

bool cli_feed_write(const char *cmd, CliFeed *f, int64_t k, const char *work) {
    for (uint32_t i = 0; i < f->n; i++) {
        if (f->sets && !cli_sample_read(cmd, &f->sets[i], k, &f->in[i], f->buf[i])) return false;
        char *path = cli_feed_arg(work, i);
        size_t bytes = ir_dtype_size_bytes((IrDType)f->in[i].type.dtype, ir_type_numel(&f->in[i].type));
        FILE *out = path ? fopen(path, "wb") : NULL;
        bool ok = out && fwrite(f->buf[i], 1, bytes, out) == bytes;
        if (out) ok &= fclose(out) == 0;
        if (!ok) fprintf(stderr, "kiln %s: error: %s: cannot write: %s\n", cmd, path ? path : work,
                         strerror(errno));
        free(path);
        if (!ok) return false;
    }
    return true;
}

char *cli_feed_arg(const char *work, uint32_t i) {
    char file[32];
    snprintf(file, sizeof file, "/in_%u.bin", i);
    return cli_cat3(work, file, "");
}

void cli_feed_free(CliFeed *f) {
    for (uint32_t i = 0; f->sets && i < f->n; i++) cli_samples_free(&f->sets[i]);
    for (uint32_t i = 0; f->buf && i < f->n; i++) free(f->buf[i]);
    free(f->sets), free(f->buf), free(f->in);
    memset(f, 0, sizeof *f);
}
