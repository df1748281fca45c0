/* support_table: prints which ops each target runs (backend_support_table), the text of
 * docs/ops.md: `build/tests/support_table > docs/ops.md` regenerates it. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/target.h"

int main(void) {
    char *table = backend_support_table();
    if (!table) {
        fprintf(stderr, "support_table: out of memory\n");
        return 1;
    }
    fputs(table, stdout);
    free(table);
    return 0;
}
