/* Bare-metal start-up for the Cortex-M digits test (QEMU mps2-an386 / mps2-an500, linked
 * with mps2.ld, newlib-nano and librdimon, whose system calls are ARM semihosting): the
 * vector table, the reset handler (FPU on, .data copied from flash, .bss zeroed, the stack
 * painted, C library initialised, argv from the host), the stack probe (stack_probe.h) and
 * a fault handler that reports through semihosting instead of hanging.
 * Semihosting: a BKPT 0xAB with the operation in r0 and its argument block in r1; QEMU
 * performs it on the host (-semihosting-config enable=on,target=native). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "stack_probe.h"

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u) /* coprocessor access control */
#define CPACR_CP10_CP11_FULL (0xFu << 20)              /* the FPU: privileged and user */
#define STACK_PAINT 0xC0FFEE11u /* an unlikely word: the stack's unused part holds it */
#define STACK_PAINT_MARGIN 64   /* bytes below the painter's SP left alone (its frame) */
#define SEMI_WRITE0 0x04        /* semihosting: print a NUL-terminated string */
#define SEMI_GET_CMDLINE 0x15   /* the command line, into a buffer */
#define SEMI_EXIT 0x18
#define SEMI_EXIT_ERROR 0x20023 /* ADP_Stopped_RunTimeErrorUnknown: QEMU exits with 1 */
#define CMDLINE_MAX 1024
#define ARGV_MAX 8
#define VECTORS 16 /* the architectural exceptions; the test needs no interrupt */

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, __stack_limit, __stack_top;
int main(int argc, char **argv);
void initialise_monitor_handles(void); /* librdimon: stdin/stdout/stderr on the host */
void __libc_init_array(void);
void Reset_Handler(void);
void Fault_Handler(void);

static int semihost(int op, void *arg) {
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* ---- the stack probe ---- */

static uintptr_t probe_caller_sp;
static uintptr_t probe_low = UINTPTR_MAX; /* the deepest address seen in use */

/* The lowest painted-over address: the first word from the bottom that lost the paint. */
static uintptr_t lowest_used(void) {
    const uint32_t *p = &__stack_limit;
    while (p < &__stack_top && *p == STACK_PAINT) p++;
    return (uintptr_t)p;
}

static void paint_below(uintptr_t sp) {
    for (uint32_t *p = &__stack_limit; (uintptr_t)(p + 1) <= sp - STACK_PAINT_MARGIN; p++)
        *p = STACK_PAINT;
}

void stack_probe_paint_below(uintptr_t caller_sp) {
    uintptr_t low = lowest_used();
    if (low < probe_low) probe_low = low;
    probe_caller_sp = caller_sp;
    paint_below(stack_probe_sp());
}

uint32_t stack_probe_used(void) {
    uintptr_t low = lowest_used();
    if (low < probe_low) probe_low = low;
    return low < probe_caller_sp ? (uint32_t)(probe_caller_sp - low) : 0;
}

uint32_t stack_probe_peak(void) {
    uintptr_t low = lowest_used();
    if (low < probe_low) probe_low = low;
    return (uint32_t)((uintptr_t)&__stack_top - probe_low);
}

/* ---- start-up ---- */

/* argv from the host's command line (-semihosting-config arg=...), split at spaces. */
static int host_args(char **argv) {
    static char line[CMDLINE_MAX];
    struct {
        char *buf;
        int len;
    } block = {line, CMDLINE_MAX};
    int argc = 0;
    if (semihost(SEMI_GET_CMDLINE, &block) != 0) return 0;
    for (char *p = line; *p && argc < ARGV_MAX - 1;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        argv[argc++] = p;
        while (*p && *p != ' ') p++;
    }
    argv[argc] = NULL;
    return argc;
}

/* __libc_init_array calls these (crti.o's, which -nostartfiles leaves out): nothing to do. */
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}

void Reset_Handler(void) {
    static char *argv[ARGV_MAX];
    SCB_CPACR |= CPACR_CP10_CP11_FULL; /* before any float instruction */
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    const uint32_t *src = &_sidata;
    for (uint32_t *dst = &_sdata; dst < &_edata;) *dst++ = *src++;
    for (uint32_t *dst = &_sbss; dst < &_ebss;) *dst++ = 0;
    paint_below(stack_probe_sp());
    __libc_init_array();
    initialise_monitor_handles();
    int argc = host_args(argv);
    int rc = main(argc, argv);
    printf("program stack peak: %lu bytes of %lu (painted at reset; newlib's stdio "
           "included)\n", (unsigned long)stack_probe_peak(),
           (unsigned long)((uintptr_t)&__stack_top - (uintptr_t)&__stack_limit));
    exit(rc);
}

void Fault_Handler(void) {
    semihost(SEMI_WRITE0, "fault: the program took a hard fault or an unexpected exception\n");
    semihost(SEMI_EXIT, (void *)(uintptr_t)SEMI_EXIT_ERROR);
    for (;;) {
    }
}

/* Initial SP, reset, then every other exception to the fault handler. */
__attribute__((section(".isr_vector"), used)) static const uintptr_t vectors[VECTORS] = {
    (uintptr_t)&__stack_top, (uintptr_t)Reset_Handler,
    (uintptr_t)Fault_Handler, (uintptr_t)Fault_Handler, (uintptr_t)Fault_Handler,
    (uintptr_t)Fault_Handler, (uintptr_t)Fault_Handler, 0, 0, 0, 0,
    (uintptr_t)Fault_Handler, (uintptr_t)Fault_Handler, 0,
    (uintptr_t)Fault_Handler, (uintptr_t)Fault_Handler,
};
