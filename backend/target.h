/* The backends as targets of the compile driver (driver/kiln.c). A target says which ops it
 * runs natively (the passes ask it before forming a pattern), readies the optimized graph
 * for itself, checks that it can compile every node and value (reporting all problems at
 * once), and writes the bundle of the planned graph. The driver calls them in that order,
 * between the optimizing passes and the memory planner. */
#ifndef KILN_BACKEND_TARGET_H
#define KILN_BACKEND_TARGET_H

#include "backend/c/cgen.h"

typedef struct BackendTarget {
    const char *name;           /* as --target names it: "c", "cuda" */
    const char *bundle_source;  /* the file that holds NAME_run: "%s.c", "%s.cu" */
    bool (*op_native)(IrOp op); /* a kernel of its own for op (not a fallback) */
    bool (*op_compiles)(IrOp op); /* a kernel of its own or a fallback (CUDA's generic path) */
    /* a fallback that runs on one thread per output element (NULL: none does) */
    bool (*op_parallel)(IrOp op);
    /* before anything runs: whether the options suit the target (NULL: all do) */
    bool (*accepts)(const BundleOptions *o, Diag *d);
    /* after stage OPTIMIZE: target rewrites (CUDA's float16 storage) and subgraph set-up */
    bool (*prepare)(IrGraph *g, const BundleOptions *o, Diag *d);
    /* every node has a kernel, every stored value a static numeric type */
    bool (*check)(const IrGraph *g, Diag *d);
    /* after stage PLAN: the bundle's files in out_dir */
    bool (*emit)(IrGraph *g, const BundleOptions *o, const char *out_dir, Diag *d);
} BackendTarget;

/* The target called name, or NULL. */
const BackendTarget *backend_target(const char *name);
/* The targets' names, comma-separated ("c, cuda"), for messages. */
const char *backend_target_names(void);
/* Which ops each target runs, as a Markdown document (docs/ops.md is this text: a golden
 * test, tests/unit/test_backend_support.c, compares them): one row per op of ir/ops.def, one
 * column per target saying "native" (a kernel of its own), "fallback" (compiled by another
 * path: CUDA's one-thread generic kernel) or "-". malloc'd; NULL when out of memory. */
char *backend_support_table(void);

/* The C target (backend/bundle.c, backend/c/). */
bool cgen_op_native(IrOp op);
bool cgen_op_supported(IrOp op);
bool cgen_prepare(IrGraph *g, const BundleOptions *o, Diag *d);
bool cgen_check(const IrGraph *g, Diag *d);
bool cgen_emit_bundle(IrGraph *g, const BundleOptions *o, const char *out_dir, Diag *d);
/* The CUDA target (backend/cuda/cuda.c). */
bool cuda_op_native(IrOp op);
bool cuda_op_supported(IrOp op);
/* Whether op's C kernels loop over their output elements with RT_FOR_EACH and write nothing
 * else: the generic path then launches one device thread per output element. */
bool cuda_element_parallel(IrOp op);
bool cuda_accepts(const BundleOptions *o, Diag *d);
bool cuda_prepare(IrGraph *g, const BundleOptions *o, Diag *d);
bool cuda_check(const IrGraph *g, Diag *d);
bool cuda_emit_bundle(IrGraph *g, const BundleOptions *o, const char *out_dir, Diag *d);

#endif
