/* A stand-in for the few Criterion macros the runtime kernel tests use (Test, cr_assert,
 * cr_log_info, cr_skip_test), for cross builds that run under QEMU where no Criterion
 * library for the target exists (tests/edge/pgemm_arm.sh). TestSuite(s, .init = f) is
 * accepted and its init ignored (the tests' inits skip paths a CPU lacks: a cross build
 * names none). Each Test registers itself
 * through a constructor; main runs them in order and prints the Criterion-like synthesis.
 * cr_assert(cond) or cr_assert(cond, fmt, ...). */
#ifndef KILN_CROSS_CRITERION_H
#define KILN_CROSS_CRITERION_H

#include <stdbool.h> /* Criterion brings it; the tests use bool */
#include <stdio.h>
#include <stdlib.h>

#define CROSS_MAX_TESTS 64

typedef struct CrossTest {
    const char *suite, *name;
    void (*fn)(void);
} CrossTest;

static CrossTest cross_tests[CROSS_MAX_TESTS];
static int cross_n_tests, cross_failed;

#define Test(s, n)                                                                            \
    static void s##_##n(void);                                                                \
    __attribute__((constructor)) static void cross_reg_##s##_##n(void) {                      \
        if (cross_n_tests < CROSS_MAX_TESTS)                                                  \
            cross_tests[cross_n_tests++] = (CrossTest){#s, #n, s##_##n};                      \
    }                                                                                         \
    static void s##_##n(void)

#define TestSuite(s, ...)                                                                     \
    __attribute__((unused)) static const struct { void (*init)(void); } cross_suite_##s = {   \
        __VA_ARGS__}

#define cr_assert(...) cross_assert(__VA_ARGS__, "assertion failed")
#define cross_assert(cond, ...)                                                               \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("[FAIL] %s:%d: ", __FILE__, __LINE__);                                     \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define cr_log_info(...) (printf("[----] "), printf(__VA_ARGS__), printf("\n"))
#define cr_skip_test(...)                                                                     \
    do {                                                                                      \
        printf("[SKIP] " __VA_ARGS__);                                                        \
        printf("\n");                                                                         \
        return;                                                                               \
    } while (0)

int main(void) {
    for (int i = 0; i < cross_n_tests; i++) {
        cross_tests[i].fn(); /* a failing assertion exits 1 */
        printf("[PASS] %s::%s\n", cross_tests[i].suite, cross_tests[i].name);
    }
    printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d\n", cross_n_tests,
           cross_n_tests - cross_failed, cross_failed);
    return 0;
}

#endif
