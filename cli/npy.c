/* The .npy header (numpy's format 1.0): the magic, a 2-byte header length, and a Python
 * dict literal with the dtype, the order and the shape, padded with spaces to a multiple of
 * 64 bytes and ended by a newline. The data follows in C order. */
#include "npy.h"

#include <string.h>

#define NPY_ALIGN 64 /* numpy pads the header so that the data starts aligned */

const char *cli_npy_descr(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return "<f4";
    case IR_DTYPE_F64: return "<f8";
    case IR_DTYPE_F16: return "<f2";
    case IR_DTYPE_I8: return "|i1";
    case IR_DTYPE_U8: return "|u1";
    case IR_DTYPE_I16: return "<i2";
    case IR_DTYPE_U16: return "<u2";
    case IR_DTYPE_I32: return "<i4";
    case IR_DTYPE_U32: return "<u4";
    case IR_DTYPE_I64: return "<i8";
    case IR_DTYPE_U64: return "<u8";
    case IR_DTYPE_BOOL: return "|b1";
    default: return NULL;
    }
}

const char *cli_npy_name(IrDType t) {
    switch (t) {
    case IR_DTYPE_F32: return "float32";
    case IR_DTYPE_F64: return "float64";
    case IR_DTYPE_F16: return "float16";
    case IR_DTYPE_I8: return "int8";
    case IR_DTYPE_U8: return "uint8";
    case IR_DTYPE_I16: return "int16";
    case IR_DTYPE_U16: return "uint16";
    case IR_DTYPE_I32: return "int32";
    case IR_DTYPE_U32: return "uint32";
    case IR_DTYPE_I64: return "int64";
    case IR_DTYPE_U64: return "uint64";
    case IR_DTYPE_BOOL: return "bool";
    default: return NULL;
    }
}

bool cli_npy_header(FILE *f, IrDType t, int rank, const int64_t *dims) {
    const char *descr = cli_npy_descr(t);
    if (!descr || rank < 0 || rank > 32) return false;
    char dict[1024];
    size_t k = (size_t)snprintf(dict, sizeof dict,
                                "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++)
        k += (size_t)snprintf(dict + k, sizeof dict - k, "%lld,%s", (long long)dims[i],
                              i + 1 < rank ? " " : "");
    k += (size_t)snprintf(dict + k, sizeof dict - k, "), }");
    size_t total = 10 + k + 1; /* magic, version, length, dict, newline */
    size_t pad = (NPY_ALIGN - total % NPY_ALIGN) % NPY_ALIGN;
    size_t hlen = k + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(dict, 1, k, f) == k;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    return ok && fputc('\n', f) != EOF;
}
