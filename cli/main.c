/* kiln: the command. (stub) */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx.h"

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("kiln %s\n", KILN_VERSION);
        return 0;
    }
    fprintf(stderr, "usage: kiln COMMAND ...\n");
    return 2;
}
