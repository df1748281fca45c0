/* The indenting writer: see cwriter.h. */
#include "backend/cwriter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cw_init(CWriter *w) { memset(w, 0, sizeof *w); }

void cw_free(CWriter *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

static void put(CWriter *w, const char *s, size_t n) {
    if (w->failed) return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (w->len + n + 1 > cap) cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b) {
            w->failed = true;
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

void cw_vraw(CWriter *w, const char *fmt, va_list ap) {
    char small[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        put(w, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        w->failed = true;
        return;
    }
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    put(w, big, (size_t)n);
    free(big);
}

void cw_raw(CWriter *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(w, fmt, ap);
    va_end(ap);
}

void cw_indent(CWriter *w) {
    static const char spaces[] = "                                                                ";
    int n = w->indent * CW_INDENT_SPACES;
    while (n > 0) {
        int k = n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1;
        put(w, spaces, (size_t)k);
        n -= k;
    }
}

void cw_line(CWriter *w, const char *fmt, ...) {
    cw_indent(w);
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(w, fmt, ap);
    va_end(ap);
    put(w, "\n", 1);
}

void cw_blank(CWriter *w) { put(w, "\n", 1); }

void cw_open(CWriter *w, const char *fmt, ...) {
    cw_indent(w);
    size_t before = w->len;
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(w, fmt, ap);
    va_end(ap);
    if (w->len == before) put(w, "{\n", 2); /* a bare block */
    else put(w, " {\n", 3);
    w->indent++;
}

void cw_close(CWriter *w, const char *suffix) {
    if (w->indent > 0) w->indent--;
    cw_indent(w);
    put(w, "}", 1);
    if (suffix) put(w, suffix, strlen(suffix));
    put(w, "\n", 1);
}

/* Writes s[0..n) inside a comment: kept closed and printable. */
static void put_comment_text(CWriter *w, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '*' && i + 1 < n && s[i + 1] == '/') c = '+';
        if (c == '/' && i + 1 < n && s[i + 1] == '*') c = '|'; /* -Wcomment */
        if (c == '?' && i > 0 && s[i - 1] == '?') c = ' ';     /* no trigraphs */
        if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) c = '?';
        put(w, &c, 1);
    }
}

void cw_comment(CWriter *w, const char *fmt, ...) {
    CWriter tmp;
    cw_init(&tmp);
    va_list ap;
    va_start(ap, fmt);
    cw_vraw(&tmp, fmt, ap);
    va_end(ap);
    const char *s = tmp.buf ? tmp.buf : "";
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        cw_indent(w);
        put(w, "/* ", 3);
        put_comment_text(w, s, n);
        put(w, " */\n", 4);
        s += n;
        if (*s == '\n') s++;
    }
    cw_free(&tmp);
}

void cw_comment_wrapped(CWriter *w, int width, const char *text) {
    int room = width - 4 * w->indent - 6; /* the opening and closing marks */
    if (room < 20) room = 20;
    const char *s = text;
    bool first = true;
    while (*s || first) {
        size_t len = strlen(s), n = len;
        if ((int)len > room) { /* break at the last space that fits */
            n = (size_t)room;
            while (n > 0 && s[n] != ' ') n--;
            if (n == 0) n = (size_t)room; /* one long word: cut it */
        }
        cw_indent(w);
        put(w, first ? "/* " : " *   ", first ? 3 : 5);
        put_comment_text(w, s, n);
        s += n;
        while (*s == ' ') s++;
        put(w, *s ? "\n" : " */\n", *s ? 1 : 4);
        first = false;
        room = width - 4 * w->indent - 8; /* the continuation and closing marks */
        if (room < 20) room = 20;
    }
}

char *cw_take(CWriter *w, size_t *len_out) {
    char *b = w->buf;
    if (!b) b = calloc(1, 1);
    if (len_out) *len_out = w->len;
    memset(w, 0, sizeof *w);
    return b;
}

static bool ident_char(char c) {
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether text uses identifier word outside comments (not as part of a longer identifier or
 * as a member). */
bool cw_uses_word(const char *text, const char *word) {
    size_t len = strlen(word);
    bool in_comment = false;
    for (const char *p = text; *p; p++) {
        if (in_comment) {
            if (p[0] == '*' && p[1] == '/') in_comment = false, p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            in_comment = true;
            p++;
            continue;
        }
        if (strncmp(p, word, len) != 0) continue;
        char before = p > text ? p[-1] : ' ';
        if (!ident_char(before) && before != '.' && before != '>' && !ident_char(p[len]))
            return true;
    }
    return false;
}
