/* Internal to the IR text form (text_print.c, text_parse.c): the lexical rules both sides
 * must agree on, so that whatever the printer writes bare the parser reads back as one token.
 * The grammar itself is described at the top of text_parse.c. */
#ifndef KILN_IR_TEXT_H
#define KILN_IR_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IR_TEXT_MAGIC "kiln-ir"
#define IR_TEXT_VERSION 1       /* bump when the grammar changes incompatibly */
#define IR_TEXT_MAX_NESTING 64  /* subgraphs within subgraphs, types within types: bounds the
                                   parser's recursion on hostile text */
#define IR_TEXT_NAN_BITS 0x7fc00000u /* the quiet NaN printed as plain `nan` */

/* Characters of bare names: [A-Za-z0-9_.:/-]. A bare name never ends with ':' (so that
 * `%x: f32` reads as a name and a colon). */
static inline bool ir_text_name_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}

/* Identifiers start with any name character but a digit or '-' (those start numbers) or ':'
 * (the type separator), so that PyTorch names such as /conv/Conv stay bare. */
static inline bool ir_text_ident_start(unsigned char c) {
    return ir_text_name_char(c) && !(c >= '0' && c <= '9') && c != '-' && c != ':';
}

/* Whether s can be printed as a bare identifier. */
static inline bool ir_text_is_ident(const char *s, size_t len) {
    if (len == 0 || !ir_text_ident_start((unsigned char)s[0]) || s[len - 1] == ':') return false;
    for (size_t i = 1; i < len; i++)
        if (!ir_text_name_char((unsigned char)s[i])) return false;
    return true;
}

/* Whether s can follow '%' bare (any name char first, so `%0` and `%onnx::Add_3` stay bare). */
static inline bool ir_text_is_bare_value(const char *s, size_t len) {
    if (len == 0 || s[len - 1] == ':') return false;
    for (size_t i = 0; i < len; i++)
        if (!ir_text_name_char((unsigned char)s[i])) return false;
    return true;
}

/* 32-bit FNV-1a, the checksum of elided tensor data. */
static inline uint32_t ir_text_fnv1a(uint32_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}
#define IR_TEXT_FNV_SEED 2166136261u

#endif
