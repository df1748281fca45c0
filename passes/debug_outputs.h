/* Debug outputs: a variant of a graph whose intermediate values are also graph outputs, so
 * that a bundle compiled from it exposes every node's result (kiln validate --per-node
 * compares them with ONNX Runtime's). Works on the IR before kiln_compile_graph. */
#ifndef KILN_PASSES_DEBUG_OUTPUTS_H
#define KILN_PASSES_DEBUG_OUTPUTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* Whether value v can be a bundle output: a tensor of a numeric element type with every
 * dimension known (what the C backend can hand back to its caller). */
bool pass_value_exposable(const IrGraph *g, uint32_t v);

/* Appends to g's outputs every output of a live node that is exposable and not an output
 * already, in graph order (node by node, result by result). Constant nodes are skipped:
 * their values are weights, not computations. Returns how many outputs were added. */
uint32_t pass_expose_intermediates(IrGraph *g);

#endif
