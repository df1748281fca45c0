/* Outputs whose size comes from the data (NonZero, Compress, Unique, NonMaxSuppression): the
 * compiled shape is an upper bound, the kernel computes a run-time count and fills what lies
 * past it. These helpers (cgen.c) hand the count on: to the caller through an `int64_t
 * *FIELD_count` output field when the value is a graph output (bundle.c declares it), and as
 * a check count == bound when nodes inside the graph read the value. See docs/bundle.md. */
#ifndef KILN_BACKEND_CGEN_COUNT_H
#define KILN_BACKEND_CGEN_COUNT_H

#include "backend/c/cgen.h"

/* Emits what follows a counting kernel whose count is the C expression `count` and whose
 * outputs vals[0..n) (IR_NONE entries skipped, each one bundle_has_count) were compiled with
 * `bound` rows: "if (count != bound) return RT_ERR_SHAPE;" when a node reads any of them
 * (downstream ops see the bound and cannot skip the fill), then, for each that is an output
 * of the root graph, "*out->F_count = count;". */
void cgen_emit_count(CgenCtx *cx, const uint32_t *vals, uint32_t n, const char *count,
                     int64_t bound);

#endif
