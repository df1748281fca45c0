/* kiln.h: Kiln as a library, the one header a program that embeds the compiler includes
 * (link kiln_core). kiln_compile_file reads top to bottom as the compiler works: load the
 * model (frontend/), run the optimizing passes (passes/), let the target prepare and check
 * the graph (backend/), plan memory, emit the bundle. The kiln command calls the same
 * functions. Every problem is reported through the Diag; nothing here prints or exits. */
#ifndef KILN_H
#define KILN_H

#include "backend/c/cgen.h"
#include "backend/cuda/cuda.h"
#include "frontend/onnx.h"
#include "passes/passes.h"

/* The targets kiln_compile_graph takes ("c, cuda"). */
const char *kiln_targets(void);
/* Whether target names a target. */
bool kiln_target_known(const char *target);

/* Compiles a loaded graph (shapes inferred) into a bundle in out_dir for target ("c" when
 * NULL): passes, target preparation and check, memory plan, emission. False after
 * diagnostics; g is changed either way (free it after). */
bool kiln_compile_graph(IrGraph *g, const char *target, const BundleOptions *o,
                        const char *out_dir, Diag *d);

/* kiln_compile_graph with a step between the optimizing passes and the target's
 * preparation: after(g, arg) may add graph outputs (kiln validate --per-layer exposes the
 * int8 tensors the quantize pass made). */
bool kiln_compile_graph_then(IrGraph *g, const char *target, const BundleOptions *o,
                             const char *out_dir, Diag *d, void (*after)(IrGraph *, void *),
                             void *arg);

/* Loads the model at path (with lo's dimension overrides; shape inference always on) and
 * compiles it as kiln_compile_graph does; o's model_path and model_sha256 are set from the
 * file when o leaves them NULL. */
bool kiln_compile_file(const char *path, const OnnxLoadOptions *lo, const char *target,
                       const BundleOptions *o, const char *out_dir, Diag *d);

/* The SHA-256 of the file at path as 64 hex digits (and a NUL) in hex; false when the file
 * cannot be read. A bundle names its model by file name and this hash. */
bool kiln_file_sha256(const char *path, char hex[65]);

#endif
