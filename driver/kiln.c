/* The compile driver: the whole pipeline in one place, in order (kiln.h). The target
 * decides which patterns the passes may form (PassOptions.op_native), readies the graph
 * for itself, checks it, and writes the bundle once memory is planned. */
#include "driver/kiln.h"

#include "backend/target.h"

const char *kiln_targets(void) { return backend_target_names(); }

bool kiln_target_known(const char *target) { return backend_target(target) != NULL; }

bool kiln_compile_graph(IrGraph *g, const char *target, const BundleOptions *o,
                        const char *out_dir, Diag *d) {
    return kiln_compile_graph_then(g, target, o, out_dir, d, NULL, NULL);
}

bool kiln_compile_graph_then(IrGraph *g, const char *target, const BundleOptions *o,
                             const char *out_dir, Diag *d, void (*after)(IrGraph *, void *),
                             void *arg) {
    const BackendTarget *t = backend_target(target ? target : "c");
    if (!t) {
        diag_error(d, "unknown target '%s' (supported: %s)", target, backend_target_names());
        return false;
    }
    if (t->accepts && !t->accepts(o, d)) return false;
    PassOptions po = {0};
    if (o->passes) po = *o->passes;
    po.op_native = t->op_native;
    if (!pass_pipeline_run(g, &po, PASS_STAGE_OPTIMIZE, d)) return false;
    if (after) after(g, arg);
    return t->prepare(g, o, d) &&
           t->check(g, d) && pass_pipeline_run(g, &po, PASS_STAGE_PLAN, d) &&
           t->emit(g, o, out_dir, d);
}

bool kiln_compile_file(const char *path, const OnnxLoadOptions *lo, const char *target,
                       const BundleOptions *o, const char *out_dir, Diag *d) {
    OnnxLoadOptions opts = {0};
    if (lo) opts = *lo;
    opts.infer_shapes = true;
    IrGraph *g = onnx_load_file(path, &opts, d);
    if (!g) return false;
    BundleOptions bo = *o;
    char sha[65];
    if (!bo.model_path) bo.model_path = path;
    if (!bo.model_sha256 && kiln_file_sha256(path, sha)) bo.model_sha256 = sha;
    bool ok = !diag_has_errors(d) && kiln_compile_graph(g, target, &bo, out_dir, d);
    ir_graph_free(g);
    return ok;
}
