/* The passes: one file each, run in the order of passes/pipeline.c. Each returns whether it
 * changed the graph (the planner: whether it succeeded) and states its contract. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "ir/ir.h"

#define PASS_ARENA_ALIGN 64 /* a cache line; also what AVX-512 and NEON loads like */

/* Which optional passes run and where IR dumps go (the --no-pass, --passes and
 * --dump-after switches). */
typedef struct PassOptions {
    const char *const *disabled; /* names switched off */
    unsigned n_disabled;
    bool only_listed;            /* run only the optional passes in enabled */
    const char *const *enabled;
    unsigned n_enabled;
    const char *dump_after;      /* a pass name, or NULL */
    FILE *dump_to;
} PassOptions;

enum { PASS_STAGE_OPTIMIZE = 0, PASS_STAGE_PLAN = 1 };

/* Runs the passes of one stage in pipeline order; false when one reported an error. */
bool pass_pipeline_run(IrGraph *g, const PassOptions *o, int stage, Diag *d);
unsigned pass_count(void);
const char *pass_name(unsigned i, bool *optional, const char **summary);
bool pass_known(const char *name);

/* Constant nodes become constant values. */
bool pass_lower_constants(IrGraph *g, Diag *d);
/* Shape arithmetic folded through partial evaluation. */
bool pass_fold(IrGraph *g, Diag *d);
/* Identity and inference Dropout removed. */
bool pass_remove_identity(IrGraph *g, Diag *d);
/* Dead nodes removed. */
bool pass_dce(IrGraph *g, Diag *d);
/* pass_plan_memory in the pipeline's shape: always "changed". */
bool pass_plan_memory_changed(IrGraph *g, Diag *d);

/* Plans the arena: sets IrValue.mem_offset of every intermediate and the graph's arena
 * sizes (planned, lower bound, naive sum). False (with diagnostics) when a tensor that
 * needs space has no static shape. */
bool pass_plan_memory(IrGraph *g, Diag *d);
/* Whether the plan gives v space in the arena (an intermediate, not a graph output). */
bool pass_value_in_arena(const IrGraph *g, uint32_t v);

#endif
