/* C backend emitters of the recurrent family: LSTM, GRU and RNN, each one call into
 * runtime/rt_rnn.h with its geometry, directions and activation functions baked into a
 * static const RtRnn. The kernel's scratch (RT_RNN_SCRATCH(G, hidden, chunk) elements: a
 * few hidden states and the gate values of `chunk` time steps, whose input projection is one
 * matrix product) is a local array of the node's block, bounded by RNN_MAX_STACK_BYTES,
 * because the memory plan has no per-node workspace yet: chunk is as many steps as fit, up
 * to RNN_MAX_CHUNK. float32 and float64. Constant float W (and an LSTM's R) are laid out for
 * the kernel's packed paths at compile time (cgen_rnn_prepare, before emission). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backend/c/cgen.h"
#include "runtime/rt_rnn.h"

/* Scratch on the stack: 256 KiB holds an LSTM of hidden size 8192 at one step per chunk (8
 * rows of floats), far above the hidden sizes of exported sequence models, and far below the
 * default thread stacks of hosted systems. */
#define RNN_MAX_STACK_BYTES (256 * 1024)
#define RNN_SCRATCH_STATES 4 /* rows of hidden size besides the gates: RT_RNN_SCRATCH */
#define RNN_MAX_CHUNK 32     /* time steps projected at once: W is read S / 32 times */
#define RNN_MAX_DIRS 2
#define RNN_MAX_ACTS 3

/* Input and output positions of the ONNX ops. */
enum { RNN_IN_X, RNN_IN_W, RNN_IN_R, RNN_IN_B, RNN_IN_SEQ_LENS, RNN_IN_H0, RNN_IN_C0, RNN_IN_P };
enum { RNN_OUT_Y, RNN_OUT_Y_H, RNN_OUT_Y_C };

/* Attribute ids of one of the three ops; input_forget/linear_before_reset are IR_ATTR_COUNT
 * where the op has none. */
typedef struct RnnIds {
    IrAttrId alpha, beta, acts, clip, direction, hidden, layout, input_forget, lbr;
    int kind;   /* 0 RNN, 1 GRU, 2 LSTM (= RT_RNN_*) */
    int gates;  /* G: rows of W per direction are G * hidden */
    int n_acts; /* activation functions per direction */
} RnnIds;

static bool rnn_ids(IrOp op, RnnIds *ids) {
#define IDS(OP)                                                                                    \
    ids->alpha = IR_ATTR_##OP##_ACTIVATION_ALPHA, ids->beta = IR_ATTR_##OP##_ACTIVATION_BETA,      \
    ids->acts = IR_ATTR_##OP##_ACTIVATIONS, ids->clip = IR_ATTR_##OP##_CLIP,                       \
    ids->direction = IR_ATTR_##OP##_DIRECTION, ids->hidden = IR_ATTR_##OP##_HIDDEN_SIZE,           \
    ids->layout = IR_ATTR_##OP##_LAYOUT, ids->input_forget = IR_ATTR_COUNT,                        \
    ids->lbr = IR_ATTR_COUNT
    switch (op) {
    case IR_OP_RNN:
        IDS(RNN);
        ids->kind = 0, ids->gates = 1, ids->n_acts = 1;
        return true;
    case IR_OP_GRU:
        IDS(GRU);
        ids->lbr = IR_ATTR_GRU_LINEAR_BEFORE_RESET;
        ids->kind = 1, ids->gates = 3, ids->n_acts = 2;
        return true;
    case IR_OP_LSTM:
        IDS(LSTM);
        ids->input_forget = IR_ATTR_LSTM_INPUT_FORGET;
        ids->kind = 2, ids->gates = 4, ids->n_acts = 3;
        return true;
    default:
        return false;
    }
#undef IDS
}

/* An activation function of the activations attribute: its RT_RNN_* code, whether it reads
 * alpha and beta, and the defaults of the ONNX op of the same name. */
typedef struct RnnActInfo {
    const char *name;
    const char *code; /* the RT_RNN_* macro */
    bool alpha, beta;
    float def_alpha, def_beta;
} RnnActInfo;

static const RnnActInfo rnn_acts[] = {
    {"sigmoid", "RT_RNN_SIGMOID", false, false, 0.0f, 0.0f},
    {"tanh", "RT_RNN_TANH", false, false, 0.0f, 0.0f},
    {"relu", "RT_RNN_RELU", false, false, 0.0f, 0.0f},
    {"affine", "RT_RNN_AFFINE", true, true, 1.0f, 0.0f},
    {"leakyrelu", "RT_RNN_LEAKY_RELU", true, false, 0.01f, 0.0f},
    {"thresholdedrelu", "RT_RNN_THRESHOLDED_RELU", true, false, 1.0f, 0.0f},
    {"scaledtanh", "RT_RNN_SCALED_TANH", true, true, 1.0f, 1.0f},
    {"hardsigmoid", "RT_RNN_HARD_SIGMOID", true, true, 0.2f, 0.5f},
    {"elu", "RT_RNN_ELU", true, false, 1.0f, 0.0f},
    {"softsign", "RT_RNN_SOFTSIGN", false, false, 0.0f, 0.0f},
    {"softplus", "RT_RNN_SOFTPLUS", false, false, 0.0f, 0.0f},
};

static const RnnActInfo *rnn_act_find(const IrStr *s) {
    char low[32];
    if (s->len >= sizeof low) return NULL;
    for (size_t i = 0; i < s->len; i++)
        low[i] = (char)tolower((unsigned char)s->data[i]);
    low[s->len] = '\0';
    for (size_t i = 0; i < sizeof rnn_acts / sizeof rnn_acts[0]; i++)
        if (strcmp(rnn_acts[i].name, low) == 0) return &rnn_acts[i];
    return NULL;
}

static bool rnn_has_out(const IrNode *n, uint32_t i) {
    return i < n->n_outputs && n->outputs[i] != IR_NONE;
}

/* Checks that optional value v (IR_NONE: absent) is static with dtype t and the given dims. */
static bool rnn_check(CgenCtx *cx, const IrNode *n, uint32_t v, IrDType t, int rank,
                      const int64_t *dims, const char *what) {
    if (v == IR_NONE) return true;
    const IrType *ty = cgen_type(cx, v);
    bool ok = ty->kind == IR_TYPE_TENSOR && ty->dtype == t && ty->rank == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = ty->dims[i] == dims[i];
    if (!ok) return cgen_unsupported(cx, n, "a %s of another type or shape than expected", what);
    return true;
}

/* Fills the per-direction activation functions; false after a diagnostic. */
static bool rnn_activations(CgenCtx *cx, const IrNode *n, const RnnIds *ids, int n_dir,
                            const RnnActInfo *act[RNN_MAX_DIRS][RNN_MAX_ACTS],
                            float alpha[RNN_MAX_DIRS][RNN_MAX_ACTS],
                            float beta[RNN_MAX_DIRS][RNN_MAX_ACTS]) {
    static const int defaults[3][RNN_MAX_ACTS] = {{1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    const IrAttr *a_acts = ir_node_attr(n, ids->acts);
    const IrAttr *a_alpha = ir_node_attr(n, ids->alpha), *a_beta = ir_node_attr(n, ids->beta);
    uint32_t given = a_acts->present ? a_acts->n : 0;
    uint32_t n_alpha = a_alpha->present ? a_alpha->n : 0, n_beta = a_beta->present ? a_beta->n : 0;
    uint32_t next_alpha = 0, next_beta = 0;
    if (given != 0 && given != (uint32_t)ids->n_acts && given != (uint32_t)(ids->n_acts * n_dir))
        return cgen_unsupported(cx, n, "%u activation functions for %d direction(s)", given, n_dir);
    for (int d = 0; d < n_dir; d++)
        for (int k = 0; k < ids->n_acts; k++) {
            const RnnActInfo *ai;
            if (given == 0) {
                ai = &rnn_acts[defaults[ids->kind][k]];
            } else {
                /* one list for both directions reuses it (what ONNX Runtime accepts) */
                uint32_t at =
                    (uint32_t)((given == (uint32_t)ids->n_acts ? 0 : d) * ids->n_acts + k);
                ai = rnn_act_find(&a_acts->strings[at]);
                if (!ai)
                    return cgen_unsupported(cx, n, "the activation function '%s'",
                                            a_acts->strings[at].data);
            }
            act[d][k] = ai;
            /* alphas and betas are consumed in order by the functions that read them */
            alpha[d][k] =
                ai->alpha && next_alpha < n_alpha ? a_alpha->floats[next_alpha++] : ai->def_alpha;
            beta[d][k] =
                ai->beta && next_beta < n_beta ? a_beta->floats[next_beta++] : ai->def_beta;
        }
    return true;
}

/* ---- float weights in the kernel's layout ---- */

/* Adds pt to g as a constant named as w with `suffix`; returns its value. */
static uint32_t rnn_add_packed(IrGraph *g, uint32_t w, const char *suffix, IrTensor *pt) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", g->values[w].name ? g->values[w].name : "w", suffix);
    pt->name = ir_arena_strdup(g->arena, name);
    IrType ty = ir_type_tensor(IR_DTYPE_F32, pt->rank, pt->dims);
    uint32_t v = ir_value_add(g, pt->name, &ty, IR_VALUE_CONST);
    g->values[v].tensor = pt;
    g->values[v].producer = IR_NONE;
    return v;
}

/* Whether v is a float constant of the given dims whose data the compiler holds. */
static bool rnn_const_f32(const IrGraph *g, uint32_t v, const int64_t dims[3]) {
    const IrValue *val = &g->values[v];
    if (val->kind != IR_VALUE_CONST || !val->tensor || val->tensor->dtype != IR_DTYPE_F32 ||
        !val->tensor->data || val->type.rank != 3)
        return false;
    for (int i = 0; i < 3; i++)
        if (val->type.dims[i] != dims[i]) return false;
    return true;
}

/* Whether n rows padded to a multiple of `unit` grow by at most an eighth: the panels' zero
 * rows cost weight bytes (flash on a microcontroller) that small layers do not win back. */
static bool rnn_pad_ok(int64_t n, int64_t unit) {
    return (n + unit - 1) / unit * unit * 8 <= n * 9;
}

/* Every float LSTM, GRU and RNN whose W is a constant gets it as the input projection's
 * panels (runtime/rt_rnn.h): W (D, G*H, I) as (D, G*H/64 rounded up, I, 64)
 * (RT_RNN_W_PACKED): the projection no longer transposes W at run time. An LSTM whose R is a
 * constant too gets R (D, 4H, H) as (D, H/16 rounded up, H, 64) (RT_RNN_LSTM_PACKED): its
 * step streams R in one pass. Each where its padding is small (rnn_pad_ok). emit_rnn knows
 * both by rank 4 and sets RtRnn.packed. */
bool cgen_rnn_prepare(IrGraph *g, Diag *d) {
    (void)d;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        IrNode *n = &g->nodes[i];
        RnnIds ids;
        if (n->dead || !rnn_ids((IrOp)n->op, &ids) || n->n_inputs < 3) continue;
        const IrType *tx = &g->values[n->inputs[RNN_IN_X]].type;
        const IrType *tw = &g->values[n->inputs[RNN_IN_W]].type;
        int64_t G = ids.gates;
        if (tx->dtype != IR_DTYPE_F32 || tx->rank != 3 || tw->rank != 3 || tw->dims[1] % G ||
            tw->dims[0] < 1 || tw->dims[1] < G || tw->dims[2] < 1)
            continue;
        int64_t D = tw->dims[0], H = tw->dims[1] / G, I = tw->dims[2];
        if (ir_attr_present(n, ids.hidden) && ir_attr_i(n, ids.hidden) != H) continue;
        int64_t dw[3] = {D, G * H, I}, dr[3] = {D, G * H, H};
        if (!rnn_const_f32(g, n->inputs[RNN_IN_W], dw) || !rnn_pad_ok(G * H, RT_RNN_PANEL))
            continue;
        bool pack_r = ids.kind == RT_RNN_LSTM && rnn_const_f32(g, n->inputs[RNN_IN_R], dr) &&
                      rnn_pad_ok(H, RT_RNN_LSTM_UNITS);
        int64_t pw[4] = {D, (G * H + RT_RNN_PANEL - 1) / RT_RNN_PANEL, I, RT_RNN_PANEL};
        IrTensor *tpw = ir_tensor_new(g->arena, IR_DTYPE_F32, 4, pw);
        rt_rnn_pack_w_f32(g->values[n->inputs[RNN_IN_W]].tensor->data, G * H, I, D, tpw->data);
        n->inputs[RNN_IN_W] = rnn_add_packed(g, n->inputs[RNN_IN_W], ".panels", tpw);
        if (pack_r) {
            int64_t pr[4] = {D, RT_RNN_LSTM_BLOCKS(H), H, RT_RNN_LSTM_COLS};
            IrTensor *tpr = ir_tensor_new(g->arena, IR_DTYPE_F32, 4, pr);
            rt_rnn_lstm_pack_f32(g->values[n->inputs[RNN_IN_R]].tensor->data, H, D, tpr->data);
            n->inputs[RNN_IN_R] = rnn_add_packed(g, n->inputs[RNN_IN_R], ".panels", tpr);
        }
    }
    return true;
}

static bool emit_rnn(CgenCtx *cx, const IrNode *n) {
    RnnIds ids;
    if (!rnn_ids((IrOp)n->op, &ids)) return cgen_unsupported(cx, n, "this op as a recurrence");
    uint32_t x = n->inputs[RNN_IN_X], wv = n->inputs[RNN_IN_W], rv = n->inputs[RNN_IN_R];
    const IrType *tx = cgen_type(cx, x), *tw = cgen_type(cx, wv);
    IrDType t = (IrDType)tx->dtype;
    if (t != IR_DTYPE_F32 && t != IR_DTYPE_F64)
        return cgen_unsupported(cx, n, "element type %s", ir_dtype_name(t));
    int64_t layout = ir_attr_i(n, ids.layout);
    if (layout != 0 && layout != 1)
        return cgen_unsupported(cx, n, "layout %lld", (long long)layout);
    /* rank 4: cgen_rnn_prepare's panels (float W of every kind, float R of an LSTM) */
    bool packed_w = t == IR_DTYPE_F32 && tw->rank == 4;
    bool packed_r = packed_w && ids.kind == RT_RNN_LSTM && cgen_type(cx, rv)->rank == 4;
    if (tx->rank != 3 || tw->rank != (packed_w ? 4 : 3))
        return cgen_unsupported(cx, n, "X or W of rank other than 3");
    const char *dir = ir_attr_s(n, ids.direction);
    int n_dir = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    bool reverse = strcmp(dir, "reverse") == 0;
    if (n_dir == 1 && !reverse && strcmp(dir, "forward") != 0)
        return cgen_unsupported(cx, n, "direction '%s'", dir);
    int64_t S = tx->dims[layout ? 1 : 0], B = tx->dims[layout ? 0 : 1], I = tx->dims[2];
    /* H from W's rows, or where W is packed from R's dim 2 (in both of R's layouts) */
    const IrType *tr = cgen_type(cx, rv);
    int64_t G = ids.gates, H = !packed_w ? tw->dims[1] / G : tr->rank >= 3 ? tr->dims[2] : 0;
    if (ir_attr_present(n, ids.hidden)) H = ir_attr_i(n, ids.hidden);
    if (S < 0 || B < 0 || I < 0 || H <= 0)
        return cgen_unsupported(cx, n, "non-static or empty dimensions");
    int64_t dw[3] = {n_dir, G * H, I}, dr[3] = {n_dir, G * H, H}, db[2] = {n_dir, 2 * G * H};
    int64_t dsl[1] = {B}, dh[3] = {n_dir, B, H}, dp[2] = {n_dir, 3 * H};
    int64_t dy[4] = {S, n_dir, B, H};
    if (layout) {
        dh[0] = B, dh[1] = n_dir;
        dy[0] = B, dy[1] = S, dy[2] = n_dir;
    }
    uint32_t in[8], out[3];
    for (uint32_t i = 0; i < 8; i++)
        in[i] = ir_has_input(n, i) ? n->inputs[i] : IR_NONE;
    for (uint32_t i = 0; i < 3; i++)
        out[i] = rnn_has_out(n, i) ? n->outputs[i] : IR_NONE;
    if (ids.kind != 2) in[RNN_IN_C0] = in[RNN_IN_P] = out[RNN_OUT_Y_C] = IR_NONE;
    int64_t dwp[4] = {n_dir, (G * H + RT_RNN_PANEL - 1) / RT_RNN_PANEL, I, RT_RNN_PANEL};
    int64_t drp[4] = {n_dir, RT_RNN_LSTM_BLOCKS(H), H, RT_RNN_LSTM_COLS};
    if (!rnn_check(cx, n, in[RNN_IN_W], t, packed_w ? 4 : 3, packed_w ? dwp : dw, "W") ||
        !rnn_check(cx, n, in[RNN_IN_R], t, packed_r ? 4 : 3, packed_r ? drp : dr, "R") ||
        !rnn_check(cx, n, in[RNN_IN_B], t, 2, db, "B") ||
        !rnn_check(cx, n, in[RNN_IN_SEQ_LENS], IR_DTYPE_I32, 1, dsl, "sequence_lens") ||
        !rnn_check(cx, n, in[RNN_IN_H0], t, 3, dh, "initial_h") ||
        !rnn_check(cx, n, in[RNN_IN_C0], t, 3, dh, "initial_c") ||
        !rnn_check(cx, n, in[RNN_IN_P], t, 2, dp, "P") ||
        !rnn_check(cx, n, out[RNN_OUT_Y], t, 4, dy, "Y") ||
        !rnn_check(cx, n, out[RNN_OUT_Y_H], t, 3, dh, "Y_h") ||
        !rnn_check(cx, n, out[RNN_OUT_Y_C], t, 3, dh, "Y_c"))
        return false;
    int64_t elem = t == IR_DTYPE_F64 ? 8 : 4;
    int64_t chunk = S < RNN_MAX_CHUNK ? S : RNN_MAX_CHUNK; /* RT_RNN_SCRATCH's rows must fit */
    while (chunk > 1 && (RNN_SCRATCH_STATES + G * chunk) * H * elem > RNN_MAX_STACK_BYTES)
        chunk--;
    if (chunk < 1) chunk = 1;
    if ((RNN_SCRATCH_STATES + G * chunk) * H * elem > RNN_MAX_STACK_BYTES)
        return cgen_unsupported(cx, n, "hidden_size %lld (scratch above %d bytes)", (long long)H,
                                RNN_MAX_STACK_BYTES);
    const RnnActInfo *act[RNN_MAX_DIRS][RNN_MAX_ACTS];
    float alpha[RNN_MAX_DIRS][RNN_MAX_ACTS], beta[RNN_MAX_DIRS][RNN_MAX_ACTS];
    memset(act, 0, sizeof act);
    memset(alpha, 0, sizeof alpha);
    memset(beta, 0, sizeof beta);
    if (!rnn_activations(cx, n, &ids, n_dir, act, alpha, beta)) return false;
    bool has_clip = ir_attr_present(n, ids.clip);
    double clip = has_clip ? ir_attr_f(n, ids.clip) : 0.0;
    int64_t input_forget = ids.input_forget != IR_ATTR_COUNT ? ir_attr_i(n, ids.input_forget) : 0;
    int64_t lbr = ids.lbr != IR_ATTR_COUNT ? ir_attr_i(n, ids.lbr) : 0;

    const char *ct = bundle_ctype(t), *sfx = t == IR_DTYPE_F64 ? "f64" : "f32";
    cgen_use_runtime(cx, "rt_rnn.h");
    CWriter *w = cx->w;
    cw_line(w, "{");
    w->indent++;
    static const char *const kinds[] = {"RT_RNN_SIMPLE", "RT_RNN_GRU", "RT_RNN_LSTM"};
    cw_line(w, "static const RtRnn p = {");
    w->indent++;
    cw_line(w, ".kind = %s, .seq = %lld, .batch = %lld, .input = %lld, .hidden = %lld,",
            kinds[ids.kind], (long long)S, (long long)B, (long long)I, (long long)H);
    cw_line(w, ".num_dir = %d, .reverse = %d, .layout = %d,", n_dir, reverse ? 1 : 0, (int)layout);
    cw_line(w, ".act = {");
    w->indent++;
    for (int d = 0; d < n_dir; d++) {
        cw_indent(w);
        cw_raw(w, "{");
        for (int k = 0; k < ids.n_acts; k++)
            cw_raw(w, "%s{%s, %s, %s}", k ? ", " : "", act[d][k]->code, cgen_flit(cx, alpha[d][k], false),
                   cgen_flit(cx, beta[d][k], false));
        cw_raw(w, "}%s\n", d + 1 < n_dir ? "," : "");
    }
    w->indent--;
    cw_line(w, "},");
    cw_line(w, ".has_clip = %d, .clip = %s, .input_forget = %d, .linear_before_reset = %d,",
            has_clip ? 1 : 0, cgen_flit(cx, clip, false), input_forget != 0, lbr != 0);
    if (packed_w || packed_r)
        cw_line(w, ".chunk = %lld, .packed = %s", (long long)chunk,
                packed_r ? "RT_RNN_PACKED_W | RT_RNN_PACKED_R" : "RT_RNN_PACKED_W");
    else
        cw_line(w, ".chunk = %lld", (long long)chunk);
    w->indent--;
    cw_line(w, "};");
    cw_line(w, "%s ws[%lld]; /* RT_RNN_SCRATCH(%lld, %lld, %lld) */", ct,
            (long long)((RNN_SCRATCH_STATES + G * chunk) * H), (long long)G, (long long)H,
            (long long)chunk);
#define OPT_IN(i) (in[i] != IR_NONE ? cgen_ptr(cx, in[i]) : cgen_fmt(cx, "(const %s *)NULL", ct))
#define OPT_OUT(i) (out[i] != IR_NONE ? cgen_ptr(cx, out[i]) : cgen_fmt(cx, "(%s *)NULL", ct))
    /* the recurrent product of a step (G*H units x H) is the smallest piece that splits */
    const char *par = cgen_par(cx, (double)G * (double)H * (double)H);
    bool split = strcmp(par, "NULL") != 0;
    /* float packs panels of W^T for the input projection in the workers' scratch, unless
     * the compiler did (packed_w) */
    if (split && t == IR_DTYPE_F32 && !packed_w) cgen_par_scratch(cx, RT_RNN_PROJ_SCRATCH(I));
    const char *call =
        cgen_fmt(cx, "rt_rnn%s_%s(&p, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, ws%s%s)",
                 split ? "_par" : "", sfx,
                 cgen_ptr(cx, x), cgen_ptr(cx, wv), cgen_ptr(cx, rv), OPT_IN(RNN_IN_B),
                 in[RNN_IN_SEQ_LENS] != IR_NONE ? cgen_ptr(cx, in[RNN_IN_SEQ_LENS])
                                                : "(const int32_t *)NULL",
                 OPT_IN(RNN_IN_H0), OPT_IN(RNN_IN_C0), OPT_IN(RNN_IN_P), OPT_OUT(RNN_OUT_Y),
                 OPT_OUT(RNN_OUT_Y_H), OPT_OUT(RNN_OUT_Y_C), split ? ", " : "", split ? par : "");
#undef OPT_IN
#undef OPT_OUT
    /* only lengths read from the data can break the contract */
    if (in[RNN_IN_SEQ_LENS] != IR_NONE)
        cgen_call_checked(cx, "%s", call);
    else
        cw_line(w, "(void)%s;", call);
    w->indent--;
    cw_line(w, "}");
    return true;
}

void cgen_register_rnn(CgenEmitFn *table) {
    table[IR_OP_LSTM] = emit_rnn;
    table[IR_OP_GRU] = emit_rnn;
    table[IR_OP_RNN] = emit_rnn;
}
