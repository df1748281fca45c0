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

#define BUNDLE_ALIGN 64 /* arena and weights alignment, = PASS_ARENA_ALIGN */

typedef struct BundleOptions {
    const char *name;         /* bundle name: a C identifier, prefix of every symbol */
    bool embed_weights;       /* weights as a C array (NAME_weights.c) instead of a .bin */
    bool test_main;           /* also write NAME_test_main.c (reads inputs from files) */
    const char *model_path;   /* for comments and the README */
    const char *command_line; /* the kiln command that produced the bundle */
    const struct PassOptions *passes; /* which optional passes run; NULL: all */
    const struct CudaOptions *cuda;   /* --target cuda: precision, convolutions (NULL: defaults) */
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
} BundleCtx;

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
/* The runtime files names[0..n) as they are. */
bool bundle_write_runtime(const char *dir, const char *const *names, uint32_t n, Diag *d);
/* NAME_weights.bin (or NAME_weights.c with opts->embed_weights) from b's weight offsets. */
bool bundle_write_weights(BundleCtx *b, const char *dir, Diag *d);
/* Creates dir when missing. */
bool bundle_make_dir(const char *dir, Diag *d);

#endif
