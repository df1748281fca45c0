/* The passes: one file each, run in the order of passes/pipeline.c. Each returns whether it
 * changed the graph (the planner: whether it succeeded) and states its contract. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "ir/ir.h"

#define PASS_ARENA_ALIGN 64 /* a cache line; also what AVX-512 and NEON loads like */

/* Plans the arena: sets IrValue.mem_offset of every intermediate and the graph's arena
 * sizes (planned, lower bound, naive sum). False (with diagnostics) when a tensor that
 * needs space has no static shape. */
bool pass_plan_memory(IrGraph *g, Diag *d);
/* Whether the plan gives v space in the arena (an intermediate, not a graph output). */
bool pass_value_in_arena(const IrGraph *g, uint32_t v);

#endif
