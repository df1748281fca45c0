/* Private interface between the parts of `kiln validate`: cli/validate.c (the command: its
 * options, the bundle, the runs) and cli/validate_figures.c (the comparison of each value
 * over every sample, the report, the JSON, the per-node error growth). Only these include
 * this header. */
#ifndef KILN_CLI_VALIDATE_H
#define KILN_CLI_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

#define VALIDATE_TOP_K 5     /* the second agreement figure: top-5 class sets */
#define VALIDATE_MSG_MAX 400 /* a reason for not comparing a value (one line) */
#define VALIDATE_WORST 5     /* out-of-tolerance elements listed per value, the worst first */

typedef struct ValidateOpts {
    const char *model, *inputs_path, *json_path, *keep_dir, *cc, *dist, *outputs_dir;
    int64_t seed, samples; /* random inputs: seed, and how many samples */
    double rtol, atol;
    bool per_node;
    bool quiet;      /* --quiet: no progress line on a terminal */
    CliDims dims;
} ValidateOpts;

/* One element out of tolerance: where (sample, flat index), both values, the error and
 * how many times the allowed error it is (infinite when the tolerance is 0). */
typedef struct ValidateFailing {
    int64_t sample, index;
    double kiln, ort, err, ratio;
} ValidateFailing;

/* The comparison of one value over every sample: kiln's bundle against ONNX Runtime. */
typedef struct ValidateFigures {
    char error[VALIDATE_MSG_MAX]; /* set when there is nothing to compare: why */
    int64_t n, n_bad;             /* elements over all samples; out of tolerance */
    int64_t samples, samples_bad; /* samples compared; with an element out of tolerance */
    double max_abs, max_rel, min_cosine;
    int64_t max_sample, max_index; /* the element with the largest |kiln - ort| */
    double max_kiln, max_ort;
    ValidateFailing worst[VALIDATE_WORST]; /* the worst failing elements, worst first */
    int n_worst;
    double ref_min, ref_max, ref_abs_max, kiln_abs_max; /* for the vacuity warnings */
    double scale_err; /* max over samples of max|kiln - ort| / max|ort|: per-node growth */
    bool classifier;  /* looks like class scores: top-k figures below */
    int64_t rows, top1, topk; /* rows over all samples */
    bool has_topk;            /* more than VALIDATE_TOP_K classes */
    bool pass;
} ValidateFigures;

void validate_figures_init(ValidateFigures *f);
/* Adds sample s of a value of type `type`: kiln's data ra against the reference rb; scores:
 * the top-k figures when the shape looks like class scores (graph outputs only). */
void validate_compare(const IrType *type, const unsigned char *ra, const unsigned char *rb,
                      int64_t s, const ValidateOpts *o, bool scores, ValidateFigures *f);
/* "every element is 0 on both sides..." when the comparison proves little, else NULL. */
const char *validate_vacuous(const ValidateFigures *f, const ValidateOpts *o, char *buf,
                             size_t cap);

/* A node as it was before the bundle writer folded and compacted the graph. */
typedef struct ValidateNode {
    const char *name, *op_type, *domain;
    int32_t opset;
    uint32_t *inputs, n_inputs;
    uint32_t *outputs, n_outputs;
    double err_in, err_out, growth; /* filled by validate_rank_nodes */
} ValidateNode;

/* The compared values: graph outputs of the (possibly widened) bundle, n_orig of them the
 * model's own outputs, the rest intermediates (--per-node). */
typedef struct ValidateRun {
    const ValidateOpts *o;
    const IrGraph *g;
    const char *reference;   /* "onnxruntime 1.31.1" */
    uint32_t n_cmp, n_orig;  /* compared values; of them the model's outputs */
    const uint32_t *values;  /* the value id of each compared value */
    ValidateFigures *fig;    /* per compared value */
    ValidateNode *nodes;     /* --per-node: the nodes in graph order */
    uint32_t n_nodes;
    int64_t n_samples;
    int first, likely;       /* first diverging node, likely cause, or -1 */
} ValidateRun;

/* Fills the nodes' error growth, the first divergence and the likely cause. */
void validate_rank_nodes(ValidateRun *r);
/* The report of the outputs (and the nodes with --per-node); returns the failed outputs. */
uint32_t validate_report(FILE *out, const ValidateRun *r);
bool validate_write_json(const ValidateRun *r, bool pass);

#endif
