/* The compile report (report.h). Two halves:
 * - following the graph through the pipeline: before and after each pass, a snapshot of
 *   the live root nodes; each node of the new snapshot is matched to the nodes of the old
 *   one it continues (same name and op, else the same result value, else the same name),
 *   and a node that vanished is "fused" into the node that now computes what its result
 *   fed (its reader continues as a node of another op: Conv + Add + Relu -> FusedConv),
 *   else "removed" (folded, dead, merged by CSE, an Identity bypassed). Every node carries
 *   the model nodes it was made from; a node matched to nothing was inserted by the pass
 *   (layout's transposes).
 * - writing the page: summary, pass table, node table, memory timeline, layer errors, as
 *   HTML with inline CSS and SVG. Every string from the model is escaped (and bytes that
 *   are not UTF-8 replaced), so a hostile model name cannot add markup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/stats.h"
#include "passes/passes.h"
#include "progress.h"
#include "report.h"

#define REPORT_MAX_LISTED 200   /* removed nodes listed per pass; the rest are counted */
#define REPORT_TYPE_TEXT 256    /* longest type text; longer ones end in "..." */
#define TL_WIDTH 960            /* the timeline's plot area, px (fits a laptop screen) */
#define TL_HEIGHT 360
#define TL_LEFT 80              /* room for the byte labels */
#define TL_BOTTOM 40            /* room for the node labels */
#define TL_TICKS 8              /* axis ticks per axis, about */
#define ERR_BAR_HEIGHT 14       /* px per layer in the error plot */
#define ERR_WIDTH 600

/* ---- following the graph ---------------------------------------------------------- */

typedef struct RepNode {
    uint16_t op;
    const char *op_type; /* graph-arena strings: valid until the graph is freed */
    const char *name;
    uint32_t *inputs, n_inputs; /* value ids (copies) */
    uint32_t *outputs, n_outputs;
    uint32_t *origins, n_origins; /* indices of the model's nodes (CliReport.origin) */
    int32_t inserted_by;          /* the row that inserted the node, or -1 */
} RepNode;

typedef struct RepSnap {
    RepNode *nodes;
    uint32_t n;
} RepSnap;

typedef struct RepRemoved {
    const char *op_type, *name;
} RepRemoved;

/* A node of the model as loaded: what it was, and its MACs (known 1, none 0, unknown -1;
 * ir_node_macs), which the compiled nodes made from it add up (fused ops have no count of
 * their own in ir/stats.c). */
typedef struct RepOrigin {
    const char *op_type, *name;
    int macs_known;
    IrMacTerm macs;
} RepOrigin;

/* One row of the pass table: a pass of the pipeline, or a change between passes. */
typedef struct RepRow {
    int pass;          /* pipeline index, or -1 for a change outside the pipeline */
    const char *label; /* for pass -1 */
    uint32_t before, after, fused, removed, inserted;
    double ms;
    RepRemoved *listed;
    uint32_t n_listed;
} RepRow;

typedef struct RepLayerError {
    char *layer;
    double error;
} RepLayerError;

struct CliReport {
    RepOrigin *origin; /* the model's nodes as loaded */
    uint32_t n_origin;
    IrStats loaded; /* op histogram and parameters of the model as loaded */
    bool have_loaded;
    RepSnap cur;
    RepRow *rows;
    uint32_t n_rows, cap_rows;
    double t_before;
    bool oom;
    RepLayerError *errors;
    uint32_t n_errors, cap_errors;
};

static void *xcalloc(CliReport *r, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) r->oom = true;
    return p;
}

static const char *node_op(const IrNode *n) {
    return n->op != IR_OP_UNKNOWN ? ir_op_name((IrOp)n->op) : (n->op_type ? n->op_type : "?");
}

static uint32_t *copy_ids(CliReport *r, const uint32_t *ids, uint32_t n) {
    uint32_t *p = xcalloc(r, n, sizeof *p);
    if (p && n) memcpy(p, ids, n * sizeof *p);
    return p;
}

static void snap_free(RepSnap *s) {
    for (uint32_t i = 0; i < s->n; i++) {
        free(s->nodes[i].inputs);
        free(s->nodes[i].outputs);
        free(s->nodes[i].origins);
    }
    free(s->nodes);
    *s = (RepSnap){0};
}

/* The live nodes of the root graph g, in order, without origins. */
static RepSnap snap_take(CliReport *r, const IrGraph *g) {
    RepSnap s = {xcalloc(r, g->n_nodes, sizeof(RepNode)), 0};
    if (!s.nodes) return s;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead) continue;
        RepNode *m = &s.nodes[s.n++];
        m->op = n->op;
        m->op_type = node_op(n);
        m->name = n->name ? n->name : "";
        m->inputs = copy_ids(r, n->inputs, n->n_inputs);
        m->n_inputs = n->n_inputs;
        m->outputs = copy_ids(r, n->outputs, n->n_outputs);
        m->n_outputs = n->n_outputs;
        m->inserted_by = -1;
    }
    return s;
}

/* FNV-1a, for the name index. */
static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Open-addressing index of the nodes' names (the first node of a name wins). */
typedef struct NameIndex {
    uint32_t *slots; /* node index + 1; 0 empty */
    uint32_t mask;
} NameIndex;

static bool names_build(CliReport *r, NameIndex *ix, const RepSnap *s) {
    uint32_t cap = 16;
    while (cap < 2 * s->n + 1) cap *= 2;
    ix->slots = xcalloc(r, cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    if (!ix->slots) return false;
    for (uint32_t k = 0; k < s->n; k++) {
        const char *name = s->nodes[k].name;
        if (!name[0]) continue;
        for (uint32_t h = hash_str(name) & ix->mask;; h = (h + 1) & ix->mask) {
            if (!ix->slots[h]) {
                ix->slots[h] = k + 1;
                break;
            }
            if (strcmp(s->nodes[ix->slots[h] - 1].name, name) == 0) break;
        }
    }
    return true;
}

static uint32_t names_find(const NameIndex *ix, const RepSnap *s, const char *name) {
    if (!name[0]) return IR_NONE;
    for (uint32_t h = hash_str(name) & ix->mask; ix->slots[h]; h = (h + 1) & ix->mask)
        if (strcmp(s->nodes[ix->slots[h] - 1].name, name) == 0) return ix->slots[h] - 1;
    return IR_NONE;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static RepRow *row_add(CliReport *r, int pass, const char *label) {
    if (r->n_rows == r->cap_rows) {
        uint32_t cap = r->cap_rows ? 2 * r->cap_rows : 32;
        RepRow *p = realloc(r->rows, cap * sizeof *p);
        if (!p) {
            r->oom = true;
            return NULL;
        }
        r->rows = p;
        r->cap_rows = cap;
    }
    RepRow *row = &r->rows[r->n_rows++];
    *row = (RepRow){.pass = pass, .label = label};
    return row;
}

/* Compressed rows: for each key, the items listed under it (items[start[k]..start[k+1])). */
typedef struct Rows {
    uint32_t *start, *items;
} Rows;

static void rows_free(Rows *x) {
    free(x->start);
    free(x->items);
}

/* The old nodes that read each value (keys: value ids). */
static bool readers_build(CliReport *r, const RepSnap *old, uint32_t n_values, Rows *x) {
    x->start = xcalloc(r, n_values + 1, sizeof *x->start);
    if (!x->start) return false;
    for (uint32_t j = 0; j < old->n; j++)
        for (uint32_t i = 0; i < old->nodes[j].n_inputs; i++)
            if (old->nodes[j].inputs[i] < n_values) x->start[old->nodes[j].inputs[i] + 1]++;
    for (uint32_t v = 0; v < n_values; v++) x->start[v + 1] += x->start[v];
    x->items = xcalloc(r, x->start[n_values], sizeof *x->items);
    uint32_t *fill = xcalloc(r, n_values, sizeof *fill);
    if (!x->items || !fill) {
        free(fill);
        return false;
    }
    for (uint32_t j = 0; j < old->n; j++)
        for (uint32_t i = 0; i < old->nodes[j].n_inputs; i++) {
            uint32_t v = old->nodes[j].inputs[i];
            if (v < n_values) x->items[x->start[v] + fill[v]++] = j;
        }
    free(fill);
    return true;
}

/* The old nodes each new node continues (keys: new nodes), from to[] (IR_NONE: none). */
static bool continued_build(CliReport *r, const uint32_t *to, uint32_t n_old, uint32_t n_new,
                            Rows *x) {
    x->start = xcalloc(r, n_new + 1, sizeof *x->start);
    x->items = xcalloc(r, n_old, sizeof *x->items);
    uint32_t *fill = xcalloc(r, n_new, sizeof *fill);
    if (!x->start || !x->items || !fill) {
        free(fill);
        return false;
    }
    for (uint32_t j = 0; j < n_old; j++)
        if (to[j] != IR_NONE) x->start[to[j] + 1]++;
    for (uint32_t k = 0; k < n_new; k++) x->start[k + 1] += x->start[k];
    for (uint32_t j = 0; j < n_old; j++)
        if (to[j] != IR_NONE) x->items[x->start[to[j]] + fill[to[j]]++] = j;
    free(fill);
    return true;
}

/* to[j]: the new node that old node j continues, or IR_NONE (removed); absorbed[j]: j
 * vanished into to[j] (fused). A node continues as the node of its name and op (the layout
 * pass's channels-last MaxPool, whose old result a new Transpose now makes), else as the
 * node now producing one of its results (BatchNormalization folded into its Conv, Relu into
 * a FusedConv), else as the node of its name (Conv -> FusedConv); a vanished node whose
 * reader continues as a node of another op (or was itself absorbed) went into that node. */
static bool match_nodes(CliReport *r, const RepSnap *old, const RepSnap *nw, uint32_t n_values,
                        uint32_t *to, bool *absorbed) {
    uint32_t *prod = xcalloc(r, n_values, sizeof *prod);
    NameIndex ix = {0};
    Rows readers = {0};
    bool ok = prod && names_build(r, &ix, nw) && readers_build(r, old, n_values, &readers);
    if (ok) {
        for (uint32_t v = 0; v < n_values; v++) prod[v] = IR_NONE;
        for (uint32_t k = 0; k < nw->n; k++)
            for (uint32_t o = 0; o < nw->nodes[k].n_outputs; o++)
                if (nw->nodes[k].outputs[o] < n_values) prod[nw->nodes[k].outputs[o]] = k;
        for (uint32_t j = 0; j < old->n; j++) {
            const RepNode *m = &old->nodes[j];
            uint32_t named = names_find(&ix, nw, m->name);
            to[j] = named != IR_NONE && nw->nodes[named].op == m->op ? named : IR_NONE;
            for (uint32_t o = 0; o < m->n_outputs && to[j] == IR_NONE; o++)
                if (m->outputs[o] < n_values) to[j] = prod[m->outputs[o]];
            if (to[j] == IR_NONE) to[j] = named;
        }
        /* readers come later in the order: walk backwards */
        for (uint32_t j = old->n; j-- > 0;) {
            const RepNode *m = &old->nodes[j];
            for (uint32_t o = 0; o < m->n_outputs && to[j] == IR_NONE; o++) {
                uint32_t v = m->outputs[o];
                if (v >= n_values) continue;
                for (uint32_t q = readers.start[v]; q < readers.start[v + 1]; q++) {
                    uint32_t k = readers.items[q];
                    if (to[k] != IR_NONE &&
                        (absorbed[k] || old->nodes[k].op != nw->nodes[to[k]].op)) {
                        to[j] = to[k];
                        absorbed[j] = true;
                        break;
                    }
                }
            }
        }
    }
    free(prod);
    free(ix.slots);
    rows_free(&readers);
    return ok;
}

/* New node m's origins: the union of those of the old nodes it continues (their indices in
 * from[0..n)); inserted by row_index when it continues none. */
static bool inherit_origins(CliReport *r, const RepSnap *old, const uint32_t *from, uint32_t n,
                            RepNode *m, int32_t row_index) {
    uint32_t total = 0;
    int32_t inserted = -1;
    for (uint32_t q = 0; q < n; q++) {
        total += old->nodes[from[q]].n_origins;
        if (old->nodes[from[q]].inserted_by >= 0) inserted = old->nodes[from[q]].inserted_by;
    }
    m->origins = xcalloc(r, total, sizeof *m->origins);
    if (!m->origins) return false;
    for (uint32_t q = 0; q < n; q++)
        for (uint32_t i = 0; i < old->nodes[from[q]].n_origins; i++)
            m->origins[m->n_origins++] = old->nodes[from[q]].origins[i];
    qsort(m->origins, m->n_origins, sizeof *m->origins, cmp_u32);
    uint32_t u = 0;
    for (uint32_t q = 0; q < m->n_origins; q++)
        if (!u || m->origins[u - 1] != m->origins[q]) m->origins[u++] = m->origins[q];
    m->n_origins = u;
    if (n == 0) m->inserted_by = row_index;
    else if (!u) m->inserted_by = inserted;
    return true;
}

/* Counts of row: nodes before and after, fused, removed (listed), inserted. */
static void count_row(CliReport *r, RepRow *row, const RepSnap *old, const RepSnap *nw,
                      const uint32_t *to, const bool *absorbed, const Rows *cont) {
    row->before = old->n;
    row->after = nw->n;
    for (uint32_t k = 0; k < nw->n; k++) {
        uint32_t n = cont->start[k + 1] - cont->start[k];
        if (n == 0) row->inserted++;
        else row->fused += n - 1;
    }
    for (uint32_t j = 0; j < old->n; j++) {
        if (to[j] != IR_NONE || absorbed[j]) continue;
        row->removed++;
        if (row->n_listed == REPORT_MAX_LISTED) continue;
        if (!row->listed) row->listed = xcalloc(r, REPORT_MAX_LISTED, sizeof *row->listed);
        if (row->listed)
            row->listed[row->n_listed++] = (RepRemoved){old->nodes[j].op_type, old->nodes[j].name};
    }
}

/* Matches r->cur to the graph's present nodes, which become the current snapshot; the
 * counts go to row (NULL: none), inserted nodes are marked with row_index. Returns whether
 * anything changed (a node removed, fused, inserted or of another op). */
static bool advance(CliReport *r, const IrGraph *g, RepRow *row, int32_t row_index) {
    RepSnap old = r->cur, nw = snap_take(r, g);
    uint32_t *to = xcalloc(r, old.n, sizeof *to);
    bool *absorbed = xcalloc(r, old.n, sizeof *absorbed);
    Rows cont = {0};
    bool changed = old.n != nw.n;
    if (!r->oom && match_nodes(r, &old, &nw, g->n_values, to, absorbed) &&
        continued_build(r, to, old.n, nw.n, &cont)) {
        for (uint32_t k = 0; k < nw.n; k++) {
            uint32_t n = cont.start[k + 1] - cont.start[k];
            if (!inherit_origins(r, &old, cont.items + cont.start[k], n, &nw.nodes[k], row_index))
                break;
            if (n != 1 || nw.nodes[k].op != old.nodes[cont.items[cont.start[k]]].op)
                changed = true;
        }
        if (row) count_row(r, row, &old, &nw, to, absorbed, &cont);
    }
    free(to);
    free(absorbed);
    rows_free(&cont);
    snap_free(&old);
    r->cur = nw;
    return changed;
}

CliReport *cli_report_new(const IrGraph *g) {
    CliReport *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->cur = snap_take(r, g);
    r->origin = xcalloc(r, r->cur.n, sizeof *r->origin);
    if (r->oom) {
        cli_report_free(r);
        return NULL;
    }
    for (uint32_t i = 0, k = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        RepNode *m = &r->cur.nodes[k];
        r->origin[k].op_type = m->op_type;
        r->origin[k].name = m->name;
        r->origin[k].macs_known = ir_node_macs(g, &g->nodes[i], &r->origin[k].macs);
        m->origins = xcalloc(r, 1, sizeof *m->origins);
        if (!m->origins) break;
        m->origins[0] = k;
        m->n_origins = 1;
        k++;
    }
    r->n_origin = r->cur.n;
    r->have_loaded = ir_stats_compute(g, NULL, NULL, &r->loaded);
    if (r->oom) {
        cli_report_free(r);
        return NULL;
    }
    return r;
}

void cli_report_free(CliReport *r) {
    if (!r) return;
    snap_free(&r->cur);
    for (uint32_t i = 0; i < r->n_rows; i++) free(r->rows[i].listed);
    free(r->rows);
    for (uint32_t i = 0; i < r->n_errors; i++) free(r->errors[i].layer);
    free(r->errors);
    free(r->origin);
    if (r->have_loaded) ir_stats_free(&r->loaded);
    free(r);
}

void cli_report_observe(void *arg, const IrGraph *g, unsigned pass, bool after) {
    CliReport *r = arg;
    if (r->oom) return;
    if (!after) {
        /* a change since the last pass: the inputs' binding before the first pass, the
         * target's preparation before the planner */
        RepRow probe = {.pass = -1};
        bool first = r->n_rows == 0;
        if (advance(r, g, &probe, (int32_t)r->n_rows)) {
            RepRow *row = row_add(r, -1, first ? "binding of sequence inputs"
                                               : "target preparation (outside the pipeline)");
            if (row) {
                probe.label = row->label;
                *row = probe;
            } else {
                free(probe.listed);
            }
        } else {
            free(probe.listed);
        }
        r->t_before = cli_seconds();
        return;
    }
    double ms = (cli_seconds() - r->t_before) * 1e3;
    RepRow *row = row_add(r, (int)pass, NULL);
    if (!row) return;
    advance(r, g, row, (int32_t)(r->n_rows - 1));
    row->ms = ms;
}

bool cli_report_layer_error(CliReport *r, const char *layer, double rel_rms_error) {
    if (r->n_errors == r->cap_errors) {
        uint32_t cap = r->cap_errors ? 2 * r->cap_errors : 64;
        RepLayerError *p = realloc(r->errors, cap * sizeof *p);
        if (!p) return false;
        r->errors = p;
        r->cap_errors = cap;
    }
    char *copy = malloc(strlen(layer) + 1);
    if (!copy) return false;
    strcpy(copy, layer);
    r->errors[r->n_errors++] = (RepLayerError){copy, rel_rms_error};
    return true;
}

/* ---- writing HTML ------------------------------------------------------------------ */

/* The length of the UTF-8 sequence at s (1-4), or 0 when it is not valid UTF-8. */
static int utf8_len(const unsigned char *s) {
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* Text content or attribute value: markup characters escaped, control characters and
 * bytes that are not UTF-8 shown as U+FFFD. */
static void put(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = utf8_len(p);
        if (n == 0 || (*p < 0x20 && *p != '\t') || *p == 0x7F) {
            fputs("\xEF\xBF\xBD", f);
            p++;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fwrite(p, 1, (size_t)n, f);
        }
        p += n;
    }
}

/* m as ir_macs_format writes it, escaped ("?" when out of memory). */
static void put_macs(FILE *f, const IrGraph *g, const IrMacs *m) {
    char *text = ir_macs_format(g, m);
    put(f, text ? text : "?");
    free(text);
}

static const char *type_text(const IrGraph *g, const IrType *t, char *buf, size_t size) {
    if (t->kind != IR_TYPE_TENSOR || t->rank < 0)
        return t->kind == IR_TYPE_TENSOR ? "tensor of unknown rank" : "not a tensor";
    size_t n = (size_t)snprintf(buf, size, "%s[", t->dtype ? ir_dtype_name((IrDType)t->dtype) : "?");
    for (int i = 0; i < t->rank && n < size; i++) {
        const char *sep = i ? "," : "";
        if (t->dims[i] >= 0)
            n += (size_t)snprintf(buf + n, size - n, "%s%lld", sep, (long long)t->dims[i]);
        else if (t->syms[i])
            n += (size_t)snprintf(buf + n, size - n, "%s%s", sep, ir_graph_sym_name(g, t->syms[i]));
        else
            n += (size_t)snprintf(buf + n, size - n, "%s?", sep);
    }
    if (n < size)
        snprintf(buf + n, size - n, "]%s", t->layout == IR_LAYOUT_NHWC ? " NHWC" : "");
    if (n >= size && size >= 4) memcpy(buf + size - 4, "...", 4);
    return buf;
}

/* "1,234,567" */
static const char *grouped(int64_t v, char *buf, size_t size) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t k = 0;
    if (v < 0 && k + 1 < size) buf[k++] = '-';
    for (int i = 0; i < len && k + 2 < size; i++) {
        if (i && (len - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;"
    "border-bottom:1px solid #d8dde6;padding-bottom:4px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #d8dde6;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#eef1f6}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.skip td{color:#8a93a3}code,.mono{font-family:ui-monospace,monospace;font-size:12px}"
    ".dim{color:#8a93a3}.sum td:first-child{font-weight:600;width:160px}"
    "details{margin:2px 0}svg text{font:11px system-ui,sans-serif;fill:#1d2430}"
    ".bar{stroke:#fff;stroke-width:.5}.view{fill-opacity:.35;stroke:#1d2430;"
    "stroke-dasharray:2 2}";

/* ---- sections ---- */

static void section_summary(FILE *f, const CliReport *r, const IrGraph *g,
                            const CliReportInfo *info, const IrStats *s) {
    char num[32], num2[32], type[REPORT_TYPE_TEXT];
    fputs("<h2>Model</h2><table class=\"sum\">\n<tr><td>model</td><td class=\"mono\">", f);
    put(f, info->model);
    fputs("</td></tr>\n<tr><td>producer</td><td>", f);
    put(f, g->producer_name && g->producer_name[0] ? g->producer_name : "(none)");
    fputc(' ', f);
    put(f, g->producer_version);
    fprintf(f, " (IR version %lld)</td></tr>\n<tr><td>opsets</td><td>", (long long)g->ir_version);
    for (uint32_t i = 0; i < g->n_opsets; i++) {
        if (i) fputs(", ", f);
        put(f, g->opsets[i].domain && g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx");
        fprintf(f, " %lld", (long long)g->opsets[i].version);
    }
    for (int io = 0; io < 2; io++) {
        const uint32_t *ids = io ? g->outputs : g->inputs;
        uint32_t n = io ? g->n_outputs : g->n_inputs;
        fprintf(f, "</td></tr>\n<tr><td>%s</td><td class=\"mono\">", io ? "outputs" : "inputs");
        for (uint32_t i = 0; i < n; i++) {
            const IrValue *v = &g->values[ids[i]];
            if (!io && v->kind == IR_VALUE_CONST) continue;
            put(f, v->name);
            fputs(": ", f);
            put(f, type_text(g, &v->type, type, sizeof type));
            fputs("<br>", f);
        }
    }
    fprintf(f, "</td></tr>\n<tr><td>nodes</td><td>%u as loaded, %u compiled</td></tr>\n",
            r->n_origin, r->cur.n);
    fprintf(f, "<tr><td>parameters</td><td>%s in %u tensors, %s bytes</td></tr>\n",
            grouped(s->n_params, num, sizeof num), s->n_param_tensors,
            grouped((int64_t)s->param_bytes, num2, sizeof num2));
    /* the model's count: fused ops have none of their own (ir/stats.c) */
    const IrMacs *mc = r->have_loaded ? &r->loaded.macs : &s->macs;
    fputs("<tr><td>MACs</td><td>", f);
    put_macs(f, g, mc);
    if (mc->n_unknown_nodes) fprintf(f, " + unknown for %u nodes", mc->n_unknown_nodes);
    fprintf(f, "</td></tr>\n<tr><td>arena</td><td>%s bytes (lower bound %s",
            grouped(g->arena_size_bytes, num, sizeof num),
            grouped(g->arena_lower_bound_bytes, num2, sizeof num2));
    fprintf(f, ", naive sum %s)</td></tr>\n", grouped(g->arena_naive_bytes, num, sizeof num));
    fputs("<tr><td>bundle</td><td class=\"mono\">", f);
    put(f, info->out_dir);
    fputc('/', f);
    put(f, info->name);
    fputs(" (target ", f);
    put(f, info->target);
    fputs(")</td></tr>\n", f);
    if (info->argc > 0) {
        fputs("<tr><td>command</td><td class=\"mono\">kiln", f);
        for (int i = 0; i < info->argc; i++) {
            fputc(' ', f);
            put(f, info->argv[i]);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("<tr><td>ops</td><td>", f);
    if (r->have_loaded)
        for (uint32_t i = 0; i < r->loaded.n_ops; i++) {
            fputs(i ? ", " : "", f);
            put(f, r->loaded.ops[i].op_type);
            fprintf(f, " %u", r->loaded.ops[i].count);
        }
    fputs(" <span class=\"dim\">&rarr;</span> ", f);
    for (uint32_t i = 0; i < s->n_ops; i++) {
        fputs(i ? ", " : "", f);
        put(f, s->ops[i].op_type);
        fprintf(f, " %u", s->ops[i].count);
    }
    fputs("</td></tr>\n</table>\n", f);
}

static void section_passes(FILE *f, const CliReport *r) {
    fputs("<h2>Passes</h2>\n<p>In pipeline order (<code>kiln compile --list-passes</code>). "
          "<i>fused</i>: nodes merged into another node; <i>removed</i>: folded, dead, merged "
          "by CSE or bypassed; <i>inserted</i>: nodes the pass made from nothing of the "
          "model.</p>\n<table>\n<tr><th>pass</th><th>nodes before</th><th>after</th>"
          "<th>fused</th><th>removed</th><th>inserted</th><th>ms</th><th>what it does"
          "</th></tr>\n", f);
    uint32_t row = 0;
    for (unsigned i = 0; i < pass_count(); i++) {
        /* changes outside the pipeline that came before this pass */
        while (row < r->n_rows && r->rows[row].pass < 0) {
            const RepRow *x = &r->rows[row++];
            fputs("<tr><td><i>", f);
            put(f, x->label);
            fprintf(f, "</i></td><td class=\"n\">%u</td><td class=\"n\">%u</td><td class=\"n\">"
                       "%u</td><td class=\"n\">%u</td><td class=\"n\">%u</td><td></td><td>"
                       "</td></tr>\n", x->before, x->after, x->fused, x->removed, x->inserted);
        }
        bool optional;
        const char *summary;
        const char *name = pass_name(i, &optional, &summary);
        const RepRow *x = row < r->n_rows && r->rows[row].pass == (int)i ? &r->rows[row++] : NULL;
        if (!x) {
            fputs("<tr class=\"skip\"><td>", f);
            put(f, name);
            fputs("</td><td colspan=\"6\">not run (switched off, or the target lacks what it "
                  "makes)</td><td>", f);
            put(f, summary);
            fputs("</td></tr>\n", f);
            continue;
        }
        fputs("<tr><td>", f);
        put(f, name);
        fprintf(f, "</td><td class=\"n\">%u</td><td class=\"n\">%u</td><td class=\"n\">%u</td>"
                   "<td class=\"n\">%u</td><td class=\"n\">%u</td><td class=\"n\">%.1f</td><td>",
                x->before, x->after, x->fused, x->removed, x->inserted, x->ms);
        put(f, summary);
        if (x->n_listed) {
            fprintf(f, "<details><summary>%u removed</summary><span class=\"mono\">",
                    x->removed);
            for (uint32_t k = 0; k < x->n_listed; k++) {
                put(f, x->listed[k].op_type);
                fputs(" &#39;", f);
                put(f, x->listed[k].name);
                fputs("&#39;<br>", f);
            }
            if (x->removed > x->n_listed)
                fprintf(f, "and %u more", x->removed - x->n_listed);
            fputs("</span></details>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static bool is_graph_output(const IrGraph *g, uint32_t v) {
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

static int64_t value_bytes(const IrValue *v) {
    int64_t n = ir_type_numel(&v->type);
    return n < 0 ? -1 : (int64_t)ir_dtype_size_bytes((IrDType)v->type.dtype, n);
}

/* The MACs of the model nodes m was made from (ir_node_macs's convention), when they are
 * all static or there is one. */
static int origins_macs(const CliReport *r, const RepNode *m, IrMacTerm *term) {
    int known = 0;
    *term = (IrMacTerm){0};
    for (uint32_t q = 0; q < m->n_origins; q++) {
        const RepOrigin *o = &r->origin[m->origins[q]];
        if (o->macs_known < 0) return -1;
        if (o->macs_known == 0) continue;
        if (known && (term->n_syms || o->macs.n_syms)) return -1;
        if (known) term->coeff += o->macs.coeff;
        else *term = o->macs;
        known = 1;
    }
    return known;
}

static void section_nodes(FILE *f, const CliReport *r, const IrGraph *g) {
    char type[REPORT_TYPE_TEXT], num[32];
    fputs("<h2>Nodes</h2>\n<p>The compiled graph in execution order. <i>arena</i>: the byte "
          "offset of each result in the arena and its size; <i>output</i>: written straight "
          "into the caller's buffer. <i>made from</i>: the model's nodes this node computes.</p>"
          "\n<table>\n<tr><th>#</th><th>op</th><th>name</th><th>inputs</th><th>outputs</th>"
          "<th>MACs</th><th>arena</th><th>made from</th></tr>\n", f);
    uint32_t slot = 0; /* the graph's node of row k (the snapshot holds the live ones) */
    for (uint32_t k = 0; k < r->cur.n; k++) {
        const RepNode *m = &r->cur.nodes[k];
        fprintf(f, "<tr><td class=\"n\">%u</td><td>", k);
        put(f, m->op_type);
        fputs("</td><td class=\"mono\">", f);
        put(f, m->name);
        fputs("</td><td class=\"mono\">", f);
        for (uint32_t i = 0; i < m->n_inputs; i++) {
            uint32_t v = m->inputs[i];
            if (v >= g->n_values) continue;
            const IrValue *val = &g->values[v];
            if (val->kind == IR_VALUE_CONST) fputs("<span class=\"dim\">w ", f);
            put(f, type_text(g, &val->type, type, sizeof type));
            fputs(val->kind == IR_VALUE_CONST ? "</span><br>" : "<br>", f);
        }
        fputs("</td><td class=\"mono\">", f);
        for (uint32_t o = 0; o < m->n_outputs; o++)
            if (m->outputs[o] < g->n_values) {
                put(f, type_text(g, &g->values[m->outputs[o]].type, type, sizeof type));
                fputs("<br>", f);
            }
        fputs("</td><td class=\"n\">", f);
        /* counted on the model's nodes it was made from: ir_node_macs knows neither fused
         * ops nor channels-last weights */
        IrMacTerm term;
        while (slot < g->n_nodes && g->nodes[slot].dead) slot++;
        int known = m->n_origins ? origins_macs(r, m, &term)
                    : slot < g->n_nodes ? ir_node_macs(g, &g->nodes[slot], &term) : -1;
        slot++;
        if (known > 0 && term.n_syms == 0) {
            fputs(grouped(term.coeff, num, sizeof num), f);
        } else if (known > 0) {
            IrMacs one = {&term, 1, 0};
            put_macs(f, g, &one);
        } else if (known < 0) {
            fputs("?", f);
        }
        fputs("</td><td class=\"mono\">", f);
        for (uint32_t o = 0; o < m->n_outputs; o++) {
            uint32_t v = m->outputs[o];
            if (v >= g->n_values) continue;
            if (is_graph_output(g, v)) fputs("output", f);
            else if (g->values[v].mem_offset >= 0)
                fprintf(f, "%s +%lld", grouped(g->values[v].mem_offset, num, sizeof num),
                        (long long)value_bytes(&g->values[v]));
            else fputs("-", f);
            fputs("<br>", f);
        }
        fputs("</td><td>", f);
        if (m->n_origins == 1 && strcmp(r->origin[m->origins[0]].name, m->name) == 0 &&
            strcmp(r->origin[m->origins[0]].op_type, m->op_type) == 0) {
            fputs("<span class=\"dim\">as in the model</span>", f);
        } else {
            for (uint32_t q = 0; q < m->n_origins; q++) {
                const RepOrigin *o = &r->origin[m->origins[q]];
                if (q) fputs(" + ", f);
                put(f, o->op_type);
                fputs(" <span class=\"mono\">&#39;", f);
                put(f, o->name);
                fputs("&#39;</span>", f);
            }
            if (m->inserted_by >= 0 && (uint32_t)m->inserted_by < r->n_rows) {
                const RepRow *x = &r->rows[m->inserted_by];
                fputs(m->n_origins ? "; " : "", f);
                fputs("<span class=\"dim\">inserted by ", f);
                put(f, x->pass >= 0 ? pass_name((unsigned)x->pass, NULL, NULL) : x->label);
                fputs("</span>", f);
            }
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Tick step for an axis from 0 to max: 1, 2 or 5 times a power of ten, about TL_TICKS. */
static int64_t tick_step(int64_t max) {
    int64_t step = 1;
    while (max / step > TL_TICKS) {
        if (max / (step * 2) <= TL_TICKS) return step * 2;
        if (max / (step * 5) <= TL_TICKS) return step * 5;
        step *= 10;
    }
    return step;
}

/* A fill colour per producing op: hues spread by the golden angle. */
static void op_colour(FILE *f, uint16_t op) {
    unsigned hue = (unsigned)(op * 137u) % 360u;
    fprintf(f, "hsl(%u,55%%,58%%)", hue);
}

/* Position in execution order of the live node that reads v last (through subgraphs too:
 * a node owning a subgraph that reads v from outside reads it). */
static void mark_outer(const IrGraph *root, const IrGraph *sub, uint32_t at, uint32_t *last) {
    for (uint32_t v = 0; v < sub->n_values; v++) {
        const IrGraph *h = sub;
        uint32_t id = v;
        while (h && h != root && h->values[id].kind == IR_VALUE_OUTER) {
            id = h->values[id].producer;
            h = h->parent;
        }
        if (h == root && h != sub && id < root->n_values && (last[id] == IR_NONE || last[id] < at))
            last[id] = at;
    }
    for (uint32_t s = 0; s < sub->n_subgraphs; s++) mark_outer(root, sub->subgraphs[s], at, last);
}

static void section_timeline(FILE *f, const CliReport *r, const IrGraph *g) {
    char num[32], type[REPORT_TYPE_TEXT];
    uint32_t n = r->cur.n;
    uint32_t *first = malloc((g->n_values + 1) * sizeof *first);
    uint32_t *last = malloc((g->n_values + 1) * sizeof *last);
    uint16_t *op = malloc((g->n_values + 1) * sizeof *op);
    int64_t *live = calloc(n + 1, sizeof *live);
    fputs("<h2>Memory plan</h2>\n", f);
    if (!first || !last || !op || !live) {
        fputs("<p>(out of memory)</p>\n", f);
        goto out;
    }
    for (uint32_t v = 0; v < g->n_values; v++) first[v] = last[v] = IR_NONE;
    for (uint32_t i = 0, k = 0; i < g->n_nodes; i++) {
        const IrNode *nd = &g->nodes[i];
        if (nd->dead) continue;
        for (uint32_t q = 0; q < nd->n_inputs; q++) {
            uint32_t v = nd->inputs[q];
            if (v < g->n_values && (last[v] == IR_NONE || last[v] < k)) last[v] = k;
        }
        for (uint32_t a = 0; a < nd->n_attrs; a++)
            for (uint32_t q = 0; q < nd->attrs[a].n && nd->attrs[a].graphs; q++)
                if (nd->attrs[a].kind == IR_ATTR_KIND_GRAPH ||
                    nd->attrs[a].kind == IR_ATTR_KIND_GRAPHS)
                    if (nd->attrs[a].graphs[q] < g->n_subgraphs)
                        mark_outer(g, g->subgraphs[nd->attrs[a].graphs[q]], k, last);
        for (uint32_t o = 0; o < nd->n_outputs; o++) {
            uint32_t v = nd->outputs[o];
            if (v < g->n_values) {
                first[v] = k;
                op[v] = nd->op;
            }
        }
        k++;
    }
    int64_t arena = g->arena_size_bytes;
    uint32_t n_bars = 0;
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (first[v] == IR_NONE || !pass_value_in_arena(g, v) || g->values[v].mem_offset < 0)
            continue;
        int64_t bytes = value_bytes(&g->values[v]);
        if (bytes <= 0) continue;
        if (last[v] == IR_NONE || last[v] < first[v]) last[v] = first[v];
        for (uint32_t k = first[v]; k <= last[v] && k < n; k++) live[k] += bytes;
        n_bars++;
    }
    fprintf(f, "<p>Each bar is one tensor of the arena: from the node that writes it to the "
               "last node that reads it (x, execution order), at its offset (y, bytes). "
               "Dashed bars are views that share their input's bytes. The line is the bytes "
               "live at each node; the arena is %s bytes, its lower bound (the most bytes "
               "live at once) ",
            grouped(arena, num, sizeof num));
    fprintf(f, "%s. Subgraphs' tensors are planned inside their node's block and not drawn."
               "</p>\n", grouped(g->arena_lower_bound_bytes, num, sizeof num));
    if (!n_bars || arena <= 0 || !n) {
        fputs("<p>No tensor lives in the arena.</p>\n", f);
        goto out;
    }
    int64_t ymax = arena > g->arena_lower_bound_bytes ? arena : g->arena_lower_bound_bytes;
    double sx = (double)TL_WIDTH / n, sy = (double)TL_HEIGHT / (double)ymax;
    fprintf(f, "<svg width=\"%d\" height=\"%d\" "
               "role=\"img\" aria-label=\"memory timeline\">\n",
            TL_LEFT + TL_WIDTH + 20, TL_HEIGHT + TL_BOTTOM + 10);
    fprintf(f, "<g transform=\"translate(%d,10)\">\n", TL_LEFT);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#f6f8fb\" stroke=\"#c5ccd8\"/>\n",
            TL_WIDTH, TL_HEIGHT);
    int64_t ystep = tick_step(ymax);
    for (int64_t y = 0; y <= ymax; y += ystep) {
        double py = TL_HEIGHT - (double)y * sy;
        fprintf(f, "<line x1=\"-4\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#dde2ea\"/>"
                   "<text x=\"-8\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                TL_WIDTH, py, py, py + 4, grouped(y, num, sizeof num));
    }
    int64_t xstep = tick_step(n);
    for (int64_t x = 0; x < (int64_t)n; x += xstep)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%lld</text>\n",
                ((double)x + 0.5) * sx, TL_HEIGHT + 16, (long long)x);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">node (execution order)</text>\n",
            TL_WIDTH / 2, TL_HEIGHT + 34);
    for (uint32_t v = 0; v < g->n_values; v++) {
        if (first[v] == IR_NONE || !pass_value_in_arena(g, v) || g->values[v].mem_offset < 0)
            continue;
        const IrValue *val = &g->values[v];
        int64_t bytes = value_bytes(val);
        if (bytes <= 0) continue;
        bool view = false;
        if (val->producer < g->n_nodes) {
            const IrNode *p = &g->nodes[val->producer];
            view = p->n_inputs > 0 && p->inputs[0] < g->n_values &&
                   g->values[p->inputs[0]].mem_offset == val->mem_offset &&
                   pass_value_in_arena(g, p->inputs[0]);
        }
        double x = first[v] * sx, w = (last[v] - first[v] + 1) * sx;
        double h = (double)bytes * sy, y = TL_HEIGHT - (double)(val->mem_offset + bytes) * sy;
        if (h < 1) h = 1;
        fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                   "fill=\"", view ? "bar view" : "bar", x, y, w, h);
        op_colour(f, op[v]);
        fputs("\"><title>", f);
        put(f, val->name);
        fprintf(f, " %s: %lld bytes at offset %lld, nodes %u-%u</title></rect>\n",
                type_text(g, &val->type, type, sizeof type), (long long)bytes,
                (long long)val->mem_offset, first[v], last[v]);
    }
    fputs("<polyline fill=\"none\" stroke=\"#1d2430\" stroke-width=\"1.5\" points=\"", f);
    for (uint32_t k = 0; k < n; k++)
        fprintf(f, "%.2f,%.2f %.2f,%.2f ", k * sx, TL_HEIGHT - (double)live[k] * sy,
                (k + 1) * sx, TL_HEIGHT - (double)live[k] * sy);
    fputs("\"><title>bytes live at each node</title></polyline>\n", f);
    double ya = TL_HEIGHT - (double)arena * sy;
    fprintf(f, "<line x1=\"0\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
               "stroke-dasharray=\"6 3\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
               "fill=\"#c0392b\">arena %s bytes</text>\n",
            TL_WIDTH, ya, ya, TL_WIDTH - 4, ya + 14, grouped(arena, num, sizeof num));
    fputs("</g></svg>\n", f);
out:
    free(first);
    free(last);
    free(op);
    free(live);
}

static void section_layer_errors(FILE *f, const CliReport *r) {
    fputs("<h2>Per-layer error</h2>\n", f);
    if (!r->n_errors) {
        fputs("<p>This build is not quantized: there is no per-layer error to show. (For int8 "
              "builds, calibration reports each layer's relative RMS error against the float "
              "model here, through <code>cli_report_layer_error</code>.)</p>\n", f);
        return;
    }
    double max = 0;
    for (uint32_t i = 0; i < r->n_errors; i++)
        if (r->errors[i].error > max) max = r->errors[i].error;
    if (max <= 0) max = 1;
    int height = (int)r->n_errors * ERR_BAR_HEIGHT + 30;
    fprintf(f, "<p>Relative RMS error of each quantized layer's output against the float "
               "model (largest %.3g).</p>\n<svg "
               "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"per-layer error\">\n",
            max, ERR_WIDTH + 260, height);
    for (uint32_t i = 0; i < r->n_errors; i++) {
        double w = r->errors[i].error > 0 ? r->errors[i].error / max * ERR_WIDTH : 0;
        int y = (int)i * ERR_BAR_HEIGHT + 4;
        fprintf(f, "<text x=\"250\" y=\"%d\" text-anchor=\"end\">", y + 10);
        put(f, r->errors[i].layer);
        fprintf(f, "</text><rect x=\"256\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                   "fill=\"#3b7dd8\"><title>%.4g</title></rect>\n",
                y, w, ERR_BAR_HEIGHT - 3, r->errors[i].error);
    }
    fputs("</svg>\n", f);
}

bool cli_report_write(CliReport *r, const IrGraph *g, const CliReportInfo *info,
                      const char *path) {
    if (r->oom) {
        fprintf(stderr, "%s: error: out of memory while recording the compile\n", path);
        return false;
    }
    RepRow tail = {.pass = -1};
    if (advance(r, g, &tail, (int32_t)r->n_rows)) { /* the emitter changed nodes: follow */
        RepRow *row = row_add(r, -1, "bundle emission");
        if (row) {
            tail.label = row->label;
            *row = tail;
        } else {
            free(tail.listed);
        }
    } else {
        free(tail.listed);
    }
    IrStats s;
    if (r->oom || !ir_stats_compute(g, NULL, NULL, &s)) {
        fprintf(stderr, "%s: error: out of memory\n", path);
        return false;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        ir_stats_free(&s);
        return false;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\">\n<title>kiln report: ", f);
    put(f, info->name);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>kiln compile report: ", css);
    put(f, info->name);
    fprintf(f, "</h1>\n<div class=\"dim\">kiln %s</div>\n", KILN_VERSION);
    section_summary(f, r, g, info, &s);
    section_passes(f, r);
    section_timeline(f, r, g);
    section_nodes(f, r, g);
    section_layer_errors(f, r);
    fputs("</body></html>\n", f);
    ir_stats_free(&s);
    bool ok = !ferror(f);
    if (fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "%s: error writing the report\n", path);
    return ok;
}
