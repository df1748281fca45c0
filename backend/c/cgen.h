/* The C backend: turns a planned IR graph into a bundle of C99 source (see DESIGN.md,
 * "Backends and the bundle"). cgen.c drives the emission; one file per op family
 * (cgen_<family>.c) emits the nodes of its ops, usually as calls into the runtime kernels
 * of runtime/<family> with the shapes baked in as constants. */
#ifndef KILN_BACKEND_CGEN_H
#define KILN_BACKEND_CGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/bundle.h"
#include "backend/cwriter.h"
#include "ir/ir.h"
#include "runtime/rt_qattn.h" /* RtQAttn, for CgenQAttnPlan */

#define CGEN_MAX_RUNTIME 64     /* runtime files one bundle can use */
#define CGEN_MAX_NODE_LOCALS 64 /* named tensors of one node (FusedEltwise takes 17); more keep
                                   their raw placement */
#define CGEN_LOCAL_MAX_CHARS 48 /* of an ONNX name in a local's name (the tail is kept) */

/* The C dialect's context: the bundle (placement, options, scratch) and the body being
 * written. Control flow emits a subgraph with a copy whose b.g, b.field and
 * b.weight_offset are the subgraph's. */
typedef struct CgenCtx {
    BundleCtx b;
    CWriter *w;          /* the body of NAME_run */
    const char *runtime[CGEN_MAX_RUNTIME];
    uint32_t n_runtime;
    uint32_t node;       /* the node being emitted */
    uint32_t n_temps;    /* counter for unique local names */
    bool uses_rc;        /* a kernel returned a status: NAME_run declares rc */
    bool uses_w, uses_a; /* the body refers to the weights / the arena */
    bool uses_par;       /* a kernel shares its work through the hook: NAME_run declares par */
    int64_t par_scratch; /* bytes of scratch a worker needs (the most any kernel asks) */
    bool serial_only;    /* no RtPar in scope (the CUDA target's generic path): kernels run serially */
    /* Inside a subgraph (control flow, cgen_control.c): per value id a pointer expression
     * that overrides the placement (NULL at the root). */
    const char **expr;
    /* Named locals (the C target; NULL elsewhere): the tensors a node reads and writes in
     * the arena or the weights appear in its code as C locals named after their ONNX
     * values, declared at the top of the node's block; local[v] (per value id of b.g) is
     * the name while the node is emitted. names is shared by every scope of the bundle. */
    struct CgenNames *names;
    const char **local;
} CgenCtx;

/* An emitter writes the code of one node; false (after a diagnostic) if it cannot. */
typedef bool (*CgenEmitFn)(CgenCtx *cx, const IrNode *n);

/* The kernel column of the C backend: one entry per op id, NULL where no kernel exists.
 * Families fill it in cgen_register_<family>. */
extern CgenEmitFn cgen_emit_table[IR_OP_COUNT];
void cgen_tables_init(void);
bool cgen_op_supported(IrOp op);

/* Helpers for emitters. Strings returned live in cx->scratch until the bundle is done. */
const char *cgen_ptr(CgenCtx *cx, uint32_t v);  /* typed pointer expression to v's data */
/* The same, pointing to elements of C type ctype (CUDA's __half for float16 bits). */
const char *cgen_ptr_as(CgenCtx *cx, uint32_t v, const char *ctype);
/* Named locals for the C target (see CgenCtx.names): made once per bundle, freed after. */
struct CgenNames *cgen_names_new(void);
void cgen_names_free(struct CgenNames *names);
/* The runtime kernels' suffix of an element type ("f32", "i64", "u8" for bool...), or
 * NULL when no kernel family takes it; cgen_float_sfx: the float types' only. */
const char *cgen_sfx(IrDType t);
const char *cgen_float_sfx(IrDType t);
/* A C literal of v that reads back exactly in its type: float ("0.5f", %.9g) or double
 * (%.17g); NAN and INFINITY (also for a float out of float's range). */
const char *cgen_flit(CgenCtx *cx, double v, bool dbl);
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
/* The RtPar argument of a kernel that can share its work among workers (runtime/rt_par.h):
 * "par" when it does `macs` multiply-adds or more (CGEN_PAR_MIN_MACS), else "NULL" (serial:
 * a small node costs less than waking the workers). */
const char *cgen_par(CgenCtx *cx, double macs);
/* Asks for `bytes` of per-worker scratch (rt_par_scratch) in the arena. */
void cgen_par_scratch(CgenCtx *cx, int64_t bytes);
/* Records that the bundle needs runtime file `file` (e.g. "rt_conv.h"). */
void cgen_use_runtime(CgenCtx *cx, const char *file);
/* Writes "if ((rc = CALL) != 0) return rc;" for a kernel that returns a status. */
void cgen_call_checked(CgenCtx *cx, const char *fmt, ...) CW_PRINTF(2, 3);
/* A diagnostic naming the node; returns false. */
bool cgen_unsupported(CgenCtx *cx, const IrNode *n, const char *fmt, ...) CW_PRINTF(3, 4);

/* "f32[1,3,224,224]" (bundle_type_str) */
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
/* Lays out the weights of float LSTMs for runtime/rt_rnn.h's packed step (cgen_rnn.c). */
bool cgen_rnn_prepare(IrGraph *g, Diag *d);
void cgen_register_quant(CgenEmitFn *table);
void cgen_register_qint8(CgenEmitFn *table); /* the quantize pass's int8 kernels */
void cgen_register_misc(CgenEmitFn *table);
void cgen_register_flex(CgenEmitFn *table);
void cgen_register_fusedattn(CgenEmitFn *table);
/* FusedAttention node n's operand k (0 Q, 1 K, 2 V, 3 Y) as its kernels read it: logical
 * dims and element strides padded in front to rank 4, and the element offset of its first
 * element (q_window...); false when the attributes describe no readable operand. */
bool cgen_attn_operand(CgenCtx *cx, const IrNode *n, int k, int64_t dims[4], int64_t st[4],
                       int64_t *offset);
void cgen_register_qattn(CgenEmitFn *table);
/* How QAttention node n runs (cgen_qattn.c): runtime/rt_qattn.h's parameters, the element
 * offsets of Q, K, V (windows) and Y, the mask's presence and the scratch bytes of a head;
 * false (with the refusal reported) when the kernel cannot run it. Shared with CUDA. */
typedef struct CgenQAttnPlan {
    struct RtQAttn p;
    int64_t off[4];
    bool has_mask;
    int64_t scratch;
} CgenQAttnPlan;
bool cgen_qattn_plan(CgenCtx *cx, const IrNode *n, CgenQAttnPlan *pl);
/* How QMatMul node n runs (cgen_qattn.c): runtime/rt_qattn.h's parameters; false (with the
 * refusal reported) when the operands are no batched uint8 product. Shared with CUDA. */
bool cgen_qmatmul_plan(CgenCtx *cx, const IrNode *n, struct RtQMatMul *p);
void cgen_register_fusedelt(CgenEmitFn *table);
/* An elementwise node as data (cgen_eltwise.c): out = expr(ins...) under numpy
 * broadcasting over the merged loop L; expr names operand k $k (loaded in the compute type
 * of its element type). The C backend renders it as a loop nest, CUDA as one kernel. */
typedef struct CgenMap {
    uint32_t out;
    uint32_t ins[CGEN_BCAST_MAX_IN];
    int n_in;
    const char *expr;
    CgenBcastLoop L;
} CgenMap;
/* Whether op is elementwise in that sense (its C emitter renders a CgenMap). */
bool cgen_eltwise_op(IrOp op);
/* The map of node n (op: cgen_eltwise_op); false after a diagnostic (an element type or
 * shapes the family does not handle). */
bool cgen_eltwise_map(CgenCtx *cx, const IrNode *n, CgenMap *m);
/* The store of map m, "y[...] = ...;", over loop variables i0, i1... and operand pointers
 * x0, x1... and y. */
const char *cgen_map_store(CgenCtx *cx, const CgenMap *m);
/* The C expression of unary or binary elementwise node n (cgen_eltwise.c) in *expr, its
 * operands written $0 and $1, in the compute type of n's first input (float for f32 and
 * f16, double for f64); false after a diagnostic naming n. */
bool cgen_eltwise_expr(CgenCtx *cx, const IrNode *n, const char **expr);

#endif
