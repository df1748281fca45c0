/* The graph arena: bump allocation in growing blocks, freed all at once by ir_graph_free.
 * Every allocation of a graph (names, arrays, tensors, subgraphs) comes from here. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define IR_ARENA_BLOCK_BYTES (64u * 1024u) /* small graphs fit one block */
#define IR_ARENA_ALIGN 16                  /* enough for any scalar and SIMD loads */

struct IrArenaBlock {
    IrArenaBlock *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

void ir_assert_fail(const char *file, int line, const char *cond) {
    fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n", file, line, cond);
    abort();
}

void *ir_arena_alloc(IrArena *a, size_t size_bytes) {
    size_t need = (size_bytes + IR_ARENA_ALIGN - 1) & ~(size_t)(IR_ARENA_ALIGN - 1);
    if (need < size_bytes) return NULL; /* overflow */
    IrArenaBlock *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > IR_ARENA_BLOCK_BYTES ? need : IR_ARENA_BLOCK_BYTES;
        b = malloc(sizeof *b + cap);
        if (!b) {
            fprintf(stderr, "kiln: out of memory (%zu bytes)\n", cap);
            abort();
        }
        b->cap = cap;
        b->used = 0;
        if (a->head && need > IR_ARENA_BLOCK_BYTES) {
            /* a large block goes behind the current one so its free space stays in use */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used_bytes += need;
    memset(p, 0, need);
    return p;
}

char *ir_arena_strndup(IrArena *a, const char *s, size_t len) {
    char *p = ir_arena_alloc(a, len + 1);
    if (len) memcpy(p, s, len);
    p[len] = 0;
    return p;
}

char *ir_arena_strdup(IrArena *a, const char *s) { return ir_arena_strndup(a, s, strlen(s)); }

void *ir_arena_memdup(IrArena *a, const void *p, size_t size_bytes) {
    void *q = ir_arena_alloc(a, size_bytes ? size_bytes : 1);
    if (size_bytes) memcpy(q, p, size_bytes);
    return q;
}

void ir_arena_free(IrArena *a) {
    IrArenaBlock *b = a->head;
    while (b) {
        IrArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_bytes = 0;
}
