/* The C backend: turns a planned IR graph into a bundle of C99 source (see DESIGN.md,
 * "Backends and the bundle"). cgen.c drives the emission; one file per op family
 * (cgen_<family>.c) emits the nodes of its ops, usually as calls into the runtime kernels
 * of runtime/<family> with the shapes baked in as constants. */
#ifndef KILN_BACKEND_CGEN_H
#define KILN_BACKEND_CGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cwriter.h"
#include "ir/ir.h"

#define CGEN_ALIGN 64        /* arena and weights alignment, = PASS_ARENA_ALIGN */
#define CGEN_MAX_RUNTIME 64  /* runtime files one bundle can use */

typedef struct CgenOptions {
    const char *name;         /* bundle name: a C identifier, prefix of every symbol */
    bool embed_weights;       /* weights as a C array (NAME_weights.c) instead of a .bin */
    bool test_main;           /* also write NAME_test_main.c (reads inputs from files) */
    const char *model_path;   /* for comments and the README */
    const char *command_line; /* the kiln command that produced the bundle */
    const struct PassOptions *passes; /* which optional passes run; NULL: all */
} CgenOptions;

typedef struct CgenCtx {
    const IrGraph *g;
    const CgenOptions *opts;
    Diag *d;
    CWriter *w;          /* the body of NAME_run */
    IrArena scratch;     /* strings handed to emitters */
    const char *runtime[CGEN_MAX_RUNTIME];
    uint32_t n_runtime;
    int64_t *weight_offset; /* per value id: offset in the weights blob, -1 if none */
    int64_t weights_size;
    const char **field;  /* per value id: struct field name of graph inputs/outputs */
    uint32_t node;       /* the node being emitted */
    uint32_t n_temps;    /* counter for unique local names */
    bool uses_rc;        /* a kernel returned a status: NAME_run declares rc */
    bool uses_w, uses_a; /* the body refers to the weights / the arena */
    /* Subgraphs (control flow, cgen_control.c): every graph of the model, root first then
     * depth first, with the weight offsets of its constants; and, inside a subgraph, per
     * value id a pointer expression that overrides the placement (NULL at the root). */
    const IrGraph **graphs;
    int64_t **graph_weight_offset;
    uint32_t n_graphs;
    const char **expr;
    const char *upper;   /* the bundle's name in capitals, once cgen_upper_name made it */
} CgenCtx;

/* An emitter writes the code of one node; false (after a diagnostic) if it cannot. */
typedef bool (*CgenEmitFn)(CgenCtx *cx, const IrNode *n);

/* The kernel column of the C backend: one entry per op id, NULL where no kernel exists.
 * Families fill it in cgen_register_<family>. */
extern CgenEmitFn cgen_emit_table[IR_OP_COUNT];
void cgen_tables_init(void);
bool cgen_op_supported(IrOp op);

/* Helpers for emitters. Strings returned live in cx->scratch until the bundle is done. */
const char *cgen_ctype(IrDType t);              /* "float", "int64_t", "uint16_t" (f16)... */
const char *cgen_ptr(CgenCtx *cx, uint32_t v);  /* typed pointer expression to v's data */
/* The opening of a test main (C and CUDA): the C headers, NAME.h and POISON_BYTE. */
void cgen_test_main_includes(CWriter *w, const char *name);
/* The bundle's name in capitals, the prefix of its macros (made once, kept in cx). */
const char *cgen_upper_name(CgenCtx *cx);
/* Whether a and b are the same bytes (the planner let a view share its input's block). */
bool cgen_same_storage(CgenCtx *cx, uint32_t a, uint32_t b);
const IrType *cgen_type(const CgenCtx *cx, uint32_t v);
int64_t cgen_numel(const CgenCtx *cx, uint32_t v);
const char *cgen_fmt(CgenCtx *cx, const char *fmt, ...) CW_PRINTF(2, 3);
/* "{1, 3, 224, 224}" (or "{0}" for rank 0) */
const char *cgen_dims(CgenCtx *cx, const IrType *t);
const char *cgen_i64_list(CgenCtx *cx, const int64_t *v, uint32_t n);
/* A constant input's tensor (initializer or folded Constant), or NULL. */
const IrTensor *cgen_const(const CgenCtx *cx, uint32_t v);
/* Records that the bundle needs runtime file `file` (e.g. "rt_conv.h"). */
void cgen_use_runtime(CgenCtx *cx, const char *file);
/* Writes "if ((rc = CALL) != 0) return rc;" for a kernel that returns a status. */
void cgen_call_checked(CgenCtx *cx, const char *fmt, ...) CW_PRINTF(2, 3);
/* A diagnostic naming the node; returns false. */
bool cgen_unsupported(CgenCtx *cx, const IrNode *n, const char *fmt, ...) CW_PRINTF(3, 4);

/* "f32[1,3,224,224]" */
const char *cgen_type_str(CgenCtx *cx, const IrType *t);
/* Emits every live node of cx->g in order, each after a comment naming it. */
bool cgen_emit_nodes(CgenCtx *cx);

/* Broadcast loops (backend/cgen_eltwise.c): out = f(ins...) with numpy broadcasting, as a
 * loop nest whose dimensions are merged at compile time; stride[0] is the output's,
 * stride[1 + k] input k's (0 along broadcast dimensions). */
#define CGEN_BCAST_MAX_IN 16
typedef struct CgenBcastLoop {
    int rank;
    int64_t dims[IR_MAX_RANK];
    int64_t stride[CGEN_BCAST_MAX_IN + 1][IR_MAX_RANK];
} CgenBcastLoop;
bool cgen_bcast_loop(const CgenCtx *cx, uint32_t out, const uint32_t *ins, int n_in,
                     CgenBcastLoop *L);
/* The index expression of operand k (0: the output) in loop variables i0, i1... */
const char *cgen_bcast_index(CgenCtx *cx, const CgenBcastLoop *L, int k);

/* Writes the bundle for g (shapes static, memory planned) into out_dir. */
bool cgen_write_bundle(IrGraph *g, const CgenOptions *opts, const char *out_dir, Diag *d);

/* Op families (backend/cgen_<family>.c). */
void cgen_register_eltwise(CgenEmitFn *table);
void cgen_register_nn(CgenEmitFn *table);
void cgen_register_linalg(CgenEmitFn *table);
void cgen_register_data(CgenEmitFn *table);
void cgen_register_cast(CgenEmitFn *table);
void cgen_register_rnn(CgenEmitFn *table);
void cgen_register_signal(CgenEmitFn *table);
void cgen_register_control(CgenEmitFn *table);
/* Readies subgraphs for emission (cgen_control.c): constants lowered, identities bypassed
 * and dead nodes dropped inside them, loop bodies re-typed from the static types of their
 * initial values. */
bool cgen_control_prepare(IrGraph *g, Diag *d);
void cgen_register_quant(CgenEmitFn *table);
void cgen_register_misc(CgenEmitFn *table);
void cgen_register_flex(CgenEmitFn *table);
void cgen_register_fusedattn(CgenEmitFn *table);
void cgen_register_fusedelt(CgenEmitFn *table);
/* The C expression of unary or binary elementwise node n (cgen_eltwise.c) in *expr, its
 * operands written $0 and $1, in the compute type of n's first input (float for f32 and
 * f16, double for f64); false after a diagnostic naming n. */
bool cgen_eltwise_expr(CgenCtx *cx, const IrNode *n, const char **expr);

/* Bundle helpers exported from bundle.c for the CUDA bundle writer (backend/cuda.c). */
/* Field names of graph inputs/outputs (cx->field) and weight offsets (cx->weight_offset,
 * cx->graphs...). cx->scratch, cx->field and cx->weight_offset must be ready. */
void cgen_bundle_assign(CgenCtx *cx, IrGraph *g);
/* The NAME_outputs field of output slot i. */
const char **cgen_output_fields(CgenCtx *cx, IrGraph *g); /* per output slot, in order */
/* Writes dir/file from a writer (taking its text) or from bytes; false after a diagnostic. */
bool cgen_write_text(const char *dir, const char *file, CWriter *w, Diag *d);
bool cgen_write_raw(const char *dir, const char *file, const void *data, size_t len, Diag *d);
/* Writes NAME_weights.bin (or .c with opts->embed_weights) from cx's weight offsets. */
bool cgen_write_weights(CgenCtx *cx, const char *dir, Diag *d);

/* The runtime files, embedded at build time (gen/runtime_files.c). */
typedef struct CgenRuntimeFile {
    const char *name;
    const char *text;
} CgenRuntimeFile;
extern const CgenRuntimeFile cgen_runtime_files[];
extern const unsigned cgen_n_runtime_files;

#endif
