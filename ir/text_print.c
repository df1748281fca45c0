/* Text form printer. (stub) */
#include <stdlib.h>

#include "ir.h"

void ir_print(FILE *out, const IrGraph *g, const IrPrintOpts *opts) {
    (void)opts;
    fprintf(out, "graph %s\n", g->name);
}

char *ir_print_to_string(const IrGraph *g, const IrPrintOpts *opts) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_print(f, g, opts);
    fclose(f);
    return buf;
}
