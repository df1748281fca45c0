/* The shared backend core: what every target's bundle has in common, whatever the dialect
 * of its code. The options of a bundle; where each value lives (the field of a graph input
 * or output, the offset of a constant in the weights blob, the planner's arena offset);
 * the runtime files embedded in kiln; and the writing of files into the bundle's folder.
 * The dialects (backend/c/, backend/cuda/) build their contexts on a BundleCtx. */
#ifndef KILN_BACKEND_BUNDLE_H
#define KILN_BACKEND_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cwriter.h"
#include "ir/ir.h"

#define BUNDLE_ALIGN 64       /* arena and weights alignment, = PASS_ARENA_ALIGN */
#define BUNDLE_LINE_WIDTH 100 /* comments in generated code wrap before this column */

typedef struct BundleOptions {
    const char *name;         /* bundle name: a C identifier, prefix of every symbol */
    bool embed_weights;       /* weights as a C array (NAME_weights.c) instead of a .bin */
    bool test_main;           /* also write NAME_test_main.c (reads inputs from files) */
    int workers;              /* C target: workers of NAME_run_parallel's hook (0: 1) */
    const char *model_path;   /* for comments and the README */
    const char *command_line; /* the kiln command that produced the bundle */
    const char *model_sha256; /* hex SHA-256 of the model file, or NULL */
    const struct PassOptions *passes; /* which optional passes run; NULL: all */
    const struct CudaOptions *cuda;   /* --target cuda: precision, convolutions (NULL: defaults) */
    bool no_winograd;         /* C target: 3x3 convolutions on the packed GEMM only */
} BundleOptions;

/* A bundle being written: the graph (the root; a dialect emitting a subgraph points g at
 * it) and where its values live. Strings handed out live in scratch until the end. */
typedef struct BundleCtx {
    const IrGraph *g;
    const BundleOptions *opts;
    Diag *d;
    IrArena scratch;
    const char **field;     /* per value id: struct field name of graph inputs/outputs */
    const char **out_field; /* per output slot of the root: its NAME_outputs field */
    int64_t *weight_offset; /* per value id: offset in the weights blob, -1 if none */
    int64_t weights_size;
    /* Every graph of the model, root first then depth first, with the weight offsets of its
     * constants (control flow reads its subgraphs' constants from the same blob). */
    const IrGraph **graphs;
    int64_t **graph_weight_offset;
    uint32_t n_graphs;
    const char *upper; /* the bundle's name in capitals, once bundle_upper_name made it */
    int64_t par_scratch; /* C target: bytes of arena scratch per worker (after the plan) */
} BundleCtx;

/* The workers a bundle is compiled for (opts->workers, at least 1). */
int bundle_workers(const BundleCtx *b);
/* Where the per-worker scratch starts in the arena: the planned intermediates' size rounded
 * up to BUNDLE_ALIGN. */
int64_t bundle_scratch_offset(const BundleCtx *b);
/* NAME_ARENA_SIZE: the planned intermediates, then (when kernels ask for it) the scratch of
 * every worker. */
int64_t bundle_arena_size(const BundleCtx *b);

/* Readies b for g: allocates the per-value tables (placement not yet made). */
void bundle_ctx_init(BundleCtx *b, const IrGraph *g, const BundleOptions *opts, Diag *d);
void bundle_ctx_free(BundleCtx *b);
/* Names the struct fields of graph inputs and outputs (b->field, b->out_field: outputs have
 * a namespace of their own) and lays every graph's constants into the weights blob
 * (b->weight_offset, b->graphs...). */
void bundle_place(BundleCtx *b, const IrGraph *g);
/* True when value v of g carries a run-time count (its size comes from the data): output 0
 * of NonZero, Compress and NonMaxSuppression, outputs 0, 1 and 3 of Unique. Its output
 * field FIELD comes with a field int64_t *FIELD_count (docs/bundle.md). */
bool bundle_has_count(const IrGraph *g, uint32_t v);
/* The bundle's name in capitals, the prefix of its macros (made once, kept in b). */
const char *bundle_upper_name(BundleCtx *b);
/* A formatted string in b->scratch. */
const char *bundle_fmt(BundleCtx *b, const char *fmt, ...) CW_PRINTF(2, 3);
/* "f32[1,3,224,224]" (" NHWC" after a channels-last type) */
const char *bundle_type_str(BundleCtx *b, const IrType *t);

/* The runtime files, embedded at build time (gen/runtime_files.c). */
typedef struct BundleRuntimeFile {
    const char *name;
    const char *text;
} BundleRuntimeFile;
extern const BundleRuntimeFile bundle_runtime_files[];
extern const unsigned bundle_n_runtime_files;
/* The runtime file called name, or NULL. */
const BundleRuntimeFile *bundle_runtime_file(const char *name);

/* Writing into the bundle's folder dir; false after a diagnostic. */
bool bundle_write_text(const char *dir, const char *file, CWriter *w, Diag *d); /* takes w's text */
bool bundle_write_raw(const char *dir, const char *file, const void *data, size_t len, Diag *d);
/* The runtime files names[0..n): as they are (texts NULL), or texts[i] for file i. */
bool bundle_write_runtime(const char *dir, const char *const *names, uint32_t n,
                          char *const *texts, Diag *d);
/* The parts of the runtime files names[0..n) that the bundle's own text (roots[0..n_roots),
 * NULL entries skipped) reaches: per file its kept top-level items in order
 * (backend/runtime_select.c). malloc'd texts in a malloc'd array; free each and the array. */
char **bundle_runtime_select(const char *const *names, uint32_t n, const char *const *roots,
                             uint32_t n_roots);
/* How many items runtime text cuts into, 0 when it does not read as the cut expects or the
 * items do not tile it exactly (for tests: every runtime file must cut cleanly). */
uint32_t bundle_runtime_items(const char *text);
/* NAME_weights.bin (or NAME_weights.c with opts->embed_weights) from b's weight offsets. */
bool bundle_write_weights(BundleCtx *b, const char *dir, Diag *d);
/* Creates dir when missing. */
bool bundle_make_dir(const char *dir, Diag *d);
/* The C type of an element type in the API and the C-like code: "float", "int64_t",
 * "uint16_t" (float16 and bfloat16 bits), "uint8_t" (bool, float8, packed 4-bit)... */
const char *bundle_ctype(IrDType t);

/* ---- The frame (backend/frame.c): NAME.h, README.md, CMakeLists.txt and the test main,
 * written once for every target; a BundleDialect says where a target differs. ---- */

enum {
    BUNDLE_STATUS_ALIGN = 1u << 0, /* NAME_ERR_ALIGN: the caller hands in arena and weights */
    BUNDLE_STATUS_CUDA = 1u << 1,  /* NAME_ERR_CUDA, _CUBLAS, _NOMEM */
};

typedef struct BundleDialect {
    const char *label;          /* the target in titles: "" (C, the default) or "CUDA" */
    const char *guard;          /* between NAME and _H in the include guard: "" or "_CUDA" */
    const char *const *includes; /* more header includes ("<cuda_runtime_api.h>"), NULL-ended */
    unsigned status;            /* BUNDLE_STATUS_* codes beyond the common ones */
    bool count_optional;        /* a NULL FIELD_count pointer means "not wanted" */
    const char *source;         /* "%s.c": the file holding the model's code (NAME) */
    const char *test_main;      /* "%s_test_main.c" */
    /* the usage comment of NAME.h (lines " * ..."), size macros after ARENA and WEIGHTS
     * (or NULL), and the declarations after the I/O structs */
    void (*usage)(BundleCtx *b, CWriter *h);
    void (*sizes)(BundleCtx *b, CWriter *h);
    void (*api)(BundleCtx *b, CWriter *h);
    /* README: bullets after arena and weights (or NULL); ", or ..." after the CMake build */
    void (*readme_facts)(BundleCtx *b, CWriter *m);
    const char *build_by_hand;  /* with one %s for NAME */
    /* CMakeLists.txt: the minimum version, lines before project() (or NULL), the languages,
     * lines after the build type (or NULL), lines after add_library (NAME twice; or NULL) */
    const char *cmake_version, *cmake_before_project, *cmake_languages, *cmake_after_project;
    const char *cmake_library;
    /* The test main: " on the GPU..." after "runs the model" (%s: NAME); its locals, the set-up
     * before the first run (may `goto done` with status 1), one run of sample j (status 1
     * and `goto done` on failure) and the teardown before the blocks are freed */
    const char *test_run_note;
    void (*test_locals)(BundleCtx *b, CWriter *c);
    void (*test_setup)(BundleCtx *b, CWriter *c);
    void (*test_run)(BundleCtx *b, CWriter *c);
    void (*test_teardown)(BundleCtx *b, CWriter *c);
} BundleDialect;

void bundle_emit_header(BundleCtx *b, const BundleDialect *dl, CWriter *h);
void bundle_emit_readme(BundleCtx *b, const BundleDialect *dl, CWriter *m);
void bundle_emit_cmake(BundleCtx *b, const BundleDialect *dl, CWriter *m);
void bundle_emit_test_main(BundleCtx *b, const BundleDialect *dl, CWriter *c);
/* The usage lines on counted outputs, for a dialect's usage (nothing without one). */
void bundle_emit_count_usage(BundleCtx *b, CWriter *h);
/* The axis counted output v's count runs along, and the fill past it ("-1", "0"). */
int bundle_count_axis(const IrGraph *g, uint32_t v, const char **fill);
/* The comment before a node's code, in every target: "Op 'name': inputs -> outputs
 * with their types", wrapped at BUNDLE_LINE_WIDTH. */
void bundle_node_comment(BundleCtx *b, CWriter *w, const IrNode *n);
/* The model's file name without its folders ("a model" when unknown). */
const char *bundle_model_name(const BundleOptions *o);
/* "digits.onnx (sha256 0123456789abcdef)": the file name and the start of its hash, for the
 * first line of the bundle's files. */
const char *bundle_provenance(BundleCtx *b);

#endif
