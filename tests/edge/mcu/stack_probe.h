/* Stack measurement by painting, for the Cortex-M build of the edge tests (startup.c):
 * the free stack below the caller is filled with a pattern before a call, and afterwards
 * the deepest word that no longer holds it tells how deep the call went. */
#ifndef KILN_EDGE_STACK_PROBE_H
#define KILN_EDGE_STACK_PROBE_H

#include <stdint.h>

/* The stack pointer where this is expanded (an inline read, so the caller's own). */
static inline uintptr_t stack_probe_sp(void) {
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

/* Paints the stack below caller_sp (less what the painter itself needs) and remembers
 * caller_sp; the deepest use seen so far is kept for stack_probe_peak. */
void stack_probe_paint_below(uintptr_t caller_sp);
/* Bytes below the remembered caller_sp touched since the last paint. */
uint32_t stack_probe_used(void);
/* Bytes of stack touched since reset, from its top (the whole program, newlib included). */
uint32_t stack_probe_peak(void);

#define stack_probe_paint() stack_probe_paint_below(stack_probe_sp())

#endif
