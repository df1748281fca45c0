/* The op and attribute tables, expanded from ops.def and attrs.def, and element-type facts. */
#include <string.h>

#include "ir.h"

static const IrAttrInfo attr_table[IR_ATTR_COUNT + 1] = {
#define ATTR(op, id, name, kind, has_def, idef, fdef, sdef)                               \
    {IR_OP_##op, IR_ATTR_KIND_##kind, has_def, name, idef, (float)(fdef), sdef},
#include "attrs.def"
#undef ATTR
    {0, 0, false, NULL, 0, 0, NULL}};

static IrOpInfo op_table[IR_OP_COUNT] = {
    {"", "<unknown>", 0, 0, IR_ARITY_VARIADIC, 0, 0, IR_ARITY_VARIADIC, 0, 0, 0},
#define OP(id, domain, name, since, in_min, in_max, in_req, out_min, out_max, flags)      \
    {domain, name, since, in_min, in_max, in_req, out_min, out_max, flags, 0, 0},
#include "ops.def"
#undef OP
};

static bool tables_ready;

static void tables_init(void) {
    if (tables_ready) return;
    uint32_t a = 0;
    for (uint32_t op = 0; op < IR_OP_COUNT; op++) {
        op_table[op].attr_base = a;
        while (a < IR_ATTR_COUNT && attr_table[a].op == op) a++;
        op_table[op].n_attrs = a - op_table[op].attr_base;
    }
    IR_ASSERT(a == IR_ATTR_COUNT); /* attrs.def rows follow ops.def order */
    tables_ready = true;
}

const IrOpInfo *ir_op_info(IrOp op) {
    tables_init();
    IR_ASSERT((unsigned)op < IR_OP_COUNT);
    return &op_table[op];
}

const IrAttrInfo *ir_attr_info(IrAttrId id) {
    IR_ASSERT((unsigned)id < IR_ATTR_COUNT);
    return &attr_table[id];
}

const char *ir_op_name(IrOp op) { return ir_op_info(op)->name; }

bool ir_op_has(IrOp op, uint32_t flags) { return (ir_op_info(op)->flags & flags) == flags; }

IrOp ir_op_lookup(const char *domain, const char *op_type) {
    tables_init();
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (uint32_t op = 1; op < IR_OP_COUNT; op++)
        if (strcmp(op_table[op].name, op_type) == 0 && strcmp(op_table[op].domain, domain) == 0)
            return (IrOp)op;
    return IR_OP_UNKNOWN;
}

uint32_t ir_attr_lookup(IrOp op, const char *name) {
    const IrOpInfo *info = ir_op_info(op);
    for (uint32_t i = 0; i < info->n_attrs; i++)
        if (strcmp(attr_table[info->attr_base + i].name, name) == 0) return info->attr_base + i;
    return IR_NONE;
}

/* ---- element types ---- */

static const struct {
    const char *name;
    uint32_t bits;
} dtype_table[IR_DTYPE_COUNT] = {
    [IR_DTYPE_UNDEF] = {"undef", 0},     [IR_DTYPE_F32] = {"f32", 32},
    [IR_DTYPE_U8] = {"u8", 8},           [IR_DTYPE_I8] = {"i8", 8},
    [IR_DTYPE_U16] = {"u16", 16},        [IR_DTYPE_I16] = {"i16", 16},
    [IR_DTYPE_I32] = {"i32", 32},        [IR_DTYPE_I64] = {"i64", 64},
    [IR_DTYPE_STRING] = {"string", 0},   [IR_DTYPE_BOOL] = {"bool", 8},
    [IR_DTYPE_F16] = {"f16", 16},        [IR_DTYPE_F64] = {"f64", 64},
    [IR_DTYPE_U32] = {"u32", 32},        [IR_DTYPE_U64] = {"u64", 64},
    [IR_DTYPE_C64] = {"c64", 64},        [IR_DTYPE_C128] = {"c128", 128},
    [IR_DTYPE_BF16] = {"bf16", 16},      [IR_DTYPE_F8E4M3FN] = {"f8e4m3fn", 8},
    [IR_DTYPE_F8E4M3FNUZ] = {"f8e4m3fnuz", 8}, [IR_DTYPE_F8E5M2] = {"f8e5m2", 8},
    [IR_DTYPE_F8E5M2FNUZ] = {"f8e5m2fnuz", 8}, [IR_DTYPE_U4] = {"u4", 4},
    [IR_DTYPE_I4] = {"i4", 4},           [IR_DTYPE_F4E2M1] = {"f4e2m1", 4},
    [IR_DTYPE_F8E8M0] = {"f8e8m0", 8},   [IR_DTYPE_U2] = {"u2", 2},
    [IR_DTYPE_I2] = {"i2", 2},
};

const char *ir_dtype_name(IrDType t) {
    return (unsigned)t < IR_DTYPE_COUNT ? dtype_table[t].name : "invalid";
}

bool ir_dtype_from_name(const char *name, IrDType *out) {
    for (int t = 0; t < IR_DTYPE_COUNT; t++)
        if (strcmp(dtype_table[t].name, name) == 0) {
            *out = (IrDType)t;
            return true;
        }
    return false;
}

uint32_t ir_dtype_bits(IrDType t) {
    return (unsigned)t < IR_DTYPE_COUNT ? dtype_table[t].bits : 0;
}

size_t ir_dtype_size_bytes(IrDType t, int64_t n_elems) {
    if (n_elems <= 0) return 0;
    uint64_t bits = (uint64_t)ir_dtype_bits(t) * (uint64_t)n_elems;
    return (size_t)((bits + 7) / 8);
}
