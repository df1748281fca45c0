/* Text form parser. (stub) */
#include "ir.h"

IrGraph *ir_parse(const char *text, size_t len, Diag *d) {
    (void)text;
    (void)len;
    diag_error(d, "text parser not implemented");
    return NULL;
}
