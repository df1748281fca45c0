/* ONNX loader. (stub) */
#include "frontend/onnx.h"

IrGraph *onnx_load_file(const char *path, const OnnxLoadOptions *opts, Diag *d) {
    (void)opts;
    diag_error(d, "%s: loader not implemented", path);
    return NULL;
}

IrGraph *onnx_load_buffer(const uint8_t *buf, size_t len, const char *base_dir,
                          const OnnxLoadOptions *opts, Diag *d) {
    (void)buf;
    (void)len;
    (void)base_dir;
    (void)opts;
    diag_error(d, "loader not implemented");
    return NULL;
}
