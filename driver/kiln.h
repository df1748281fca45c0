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

/* Loads the model at path (with lo's dimension overrides; shape inference always on) and
 * compiles it as kiln_compile_graph does. */
bool kiln_compile_file(const char *path, const OnnxLoadOptions *lo, const char *target,
                       const BundleOptions *o, const char *out_dir, Diag *d);

#endif
