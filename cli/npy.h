/* Writing numpy's .npy format (version 1.0): what `kiln validate --outputs` writes the
 * bundle's outputs as. Only cli/ includes this. */
#ifndef KILN_CLI_NPY_H
#define KILN_CLI_NPY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"

/* numpy's descr of an element type ("<f4", "|b1"...); NULL for types numpy lacks (bfloat16,
 * float8, int4...). */
const char *cli_npy_descr(IrDType t);
/* numpy's name of the same types ("float32", "int64"...); NULL where descr is. */
const char *cli_npy_name(IrDType t);

/* Writes the .npy header of an array of type t and shape dims[0..rank) (rank <= 32) to f;
 * the caller writes the little-endian data after it. False when t has no descr or the
 * write fails. */
bool cli_npy_header(FILE *f, IrDType t, int rank, const int64_t *dims);

#endif
