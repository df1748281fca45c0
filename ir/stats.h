/* Graph statistics for `kiln inspect` and for library users: the op histogram, parameter
 * counts, a MAC estimate from static shapes (symbolic dims kept as factors), and the list
 * of ops Kiln cannot handle. Works on any IrGraph, before or after passes; reads only. */
#ifndef KILN_IR_STATS_H
#define KILN_IR_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

#define IR_STATS_MAX_TERM_SYMS 8 /* symbolic factors in one MAC term; more is "unknown" */

/* One row of a histogram of ops: nodes with this (domain, op_type). */
typedef struct IrOpCount {
    const char *domain; /* "" for the default domain */
    const char *op_type;
    uint16_t op; /* IrOp; IR_OP_UNKNOWN for ops not in the table */
    uint32_t count;
    const char *reason; /* unsupported lists only: why (static string) */
} IrOpCount;

/* A term of a MAC count: coeff times the product of symbolic dims syms[] (ids as in
 * IrType.syms; repeated for powers, sorted ascending). */
typedef struct IrMacTerm {
    int64_t coeff;
    uint32_t syms[IR_STATS_MAX_TERM_SYMS];
    uint32_t n_syms;
} IrMacTerm;

/* A MAC count: the sum of terms (the static part is the term with n_syms 0), plus the
 * nodes whose count could not be estimated (unknown dims, overflow, inside subgraphs). */
typedef struct IrMacs {
    IrMacTerm *terms; /* malloc'd; most symbols first, the static term last */
    uint32_t n_terms;
    uint32_t n_unknown_nodes;
} IrMacs;

typedef struct IrStats {
    uint32_t n_nodes; /* live nodes, subgraphs included */
    IrOpCount *ops;   /* malloc'd; sorted by count (descending), then name */
    uint32_t n_ops;
    int64_t n_params;     /* elements of initializers and Constant node tensors */
    uint64_t param_bytes; /* their packed size (strings: their lengths) */
    uint32_t n_param_tensors;
    IrMacs macs;
    IrOpCount *unsupported; /* malloc'd; same order as ops */
    uint32_t n_unsupported;
} IrStats;

/* Why node n cannot be handled (a string that outlives the stats), or NULL when it can.
 * Backends chain the default below
 * (ir_node_unsupported_reason) with their own test, e.g. "no kernel in the C backend". */
typedef const char *(*IrUnsupportedFn)(const IrGraph *g, const IrNode *n, void *ctx);

/* The default test: ops that are not in the op table (IR_OP_UNKNOWN). */
const char *ir_node_unsupported_reason(const IrGraph *g, const IrNode *n, void *ctx);

/* Fills s (call ir_stats_free after). unsupported NULL means ir_node_unsupported_reason.
 * Returns false only when memory runs out. */
bool ir_stats_compute(const IrGraph *g, IrUnsupportedFn unsupported, void *ctx, IrStats *s);
void ir_stats_free(IrStats *s);

/* The unsupported ops of g and its subgraphs, grouped by (domain, op_type, reason) and
 * sorted like a histogram. *out is malloc'd. Returns false only when memory runs out. */
bool ir_stats_unsupported(const IrGraph *g, IrUnsupportedFn fn, void *ctx, IrOpCount **out,
                          uint32_t *n_out);

/* MACs of one node as a single term. Returns 1 when known (*term set), 0 when the op does
 * no multiply-accumulates worth counting, -1 when the node's shapes are not known enough.
 * Counted: Conv, ConvInteger, QLinearConv, ConvTranspose, Gemm, MatMul, MatMulInteger,
 * QLinearMatMul, Attention, LSTM, GRU, RNN. */
int ir_node_macs(const IrGraph *g, const IrNode *n, IrMacTerm *term);

/* The number of elements of t as a term (coeff times symbolic dims); false when a dim is
 * unknown, the rank is unknown or the product overflows. */
bool ir_type_numel_term(const IrType *t, IrMacTerm *term);

/* m as a formula, "23200*batch + 512" ("0" when empty; a symbol named by an expression is
 * bracketed, "64*(s0 + 1)"), whole: malloc'd, for the caller to free; NULL when out of
 * memory. The unknown part is not written. */
char *ir_macs_format(const IrGraph *g, const IrMacs *m);

#endif
