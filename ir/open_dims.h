/* Open dims: the dims of a graph's inputs that have no value, a symbol (a dim_param) or an
 * axis the model left without value or name (the loader names it "INPUT[AXIS]"). A bundle
 * needs a value for each; backends report them all in one error with the flag that fixes
 * each, and `kiln validate` chooses defaults for them. Reads only. */
#ifndef KILN_IR_OPEN_DIMS_H
#define KILN_IR_OPEN_DIMS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* How the loader names an open input axis without a name: the input's name and the axis. */
#define IR_OPEN_AXIS_FMT "%s[%d]"

typedef struct IrOpenDim {
    uint32_t input; /* index in g->inputs */
    int axis;
    uint32_t sym;   /* as in IrType.syms */
    bool named;     /* a dim_param of the model; false: an axis named IR_OPEN_AXIS_FMT */
} IrOpenDim;

/* The open dims of g's inputs, in input then axis order; *out is malloc'd (NULL when there
 * is none). Returns their number. */
uint32_t ir_open_dims(const IrGraph *g, IrOpenDim **out);

/* One error that lists every open dim of g's inputs and the flag that gives it a value
 * (`--dim NAME=N`, or `--shape INPUT=...` for an axis without a name). Returns the number of
 * open dims; 0: nothing reported. */
uint32_t ir_report_open_dims(const IrGraph *g, Diag *d);

#endif
