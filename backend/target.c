/* The table of targets the compile driver can write bundles for. */
#include <stdio.h>
#include <string.h>

#include "backend/target.h"

static const BackendTarget targets[] = {
    {"c", "%s.c", cgen_op_native, NULL, cgen_prepare, cgen_check, cgen_emit_bundle},
    {"cuda", "%s.cu", cuda_op_native, cuda_accepts, cuda_prepare, cuda_check, cuda_emit_bundle},
};
#define N_TARGETS (sizeof targets / sizeof targets[0])

const BackendTarget *backend_target(const char *name) {
    for (size_t i = 0; i < N_TARGETS; i++)
        if (strcmp(targets[i].name, name) == 0) return &targets[i];
    return NULL;
}

const char *backend_target_names(void) {
    static char names[64];
    if (!names[0])
        for (size_t i = 0; i < N_TARGETS; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", targets[i].name);
        }
    return names;
}
