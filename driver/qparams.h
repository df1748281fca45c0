/* qparams.h: the .qparams file of `kiln compile --int8` (docs/int8.md): the activation
 * quantization parameters of one model as text a build can cache, a review can diff and a
 * hand can edit. Format, version 1 (one item a line; '#' starts a comment):
 *     kiln-qparams 1
 *     model SHA256                       (optional: the model file's hash; checked)
 *     tensor NAME scale=S zero_point=Z   (uint8, per tensor; NAME as the model names it)
 * Weights are not listed: the quantize pass quantizes them per channel itself. */
#ifndef KILN_DRIVER_QPARAMS_H
#define KILN_DRIVER_QPARAMS_H

#include "ir/ir.h"

/* Reads the file at path and annotates g's values with its parameters (IrValue.quant).
 * model_sha256 (or NULL) is checked against the file's model line. False after one error
 * naming the file, its line and the tensor: an unreadable file, a wrong header or version,
 * another model's hash, a tensor the model lacks or that is not a float tensor, a scale
 * that is not a finite positive number, a zero point outside 0..255, a tensor twice. */
bool qparams_apply_file(IrGraph *g, const char *path, const char *model_sha256, Diag *d);

#endif
