/* The JSON writer of json.h. Output is pretty-printed, two spaces per level, except for
 * containers opened as oneline (shapes, small records), which stay on one line. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ir.h"

#define JSON_INDENT 2 /* spaces per nesting level */

void cli_json_init(CliJson *j, FILE *out) {
    *j = (CliJson){0};
    j->out = out;
    j->first[0] = true;
}

static void newline_indent(CliJson *j, int depth) {
    fputc('\n', j->out);
    for (int i = 0; i < depth * JSON_INDENT; i++)
        fputc(' ', j->out);
}

/* Writes what goes before a value or a key: a comma and a line break as needed. */
static void element_begin(CliJson *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0) {
        IR_ASSERT(j->first[0]); /* one document per writer */
        j->first[0] = false;
        return;
    }
    bool first = j->first[j->depth];
    j->first[j->depth] = false;
    if (!first) fputc(',', j->out);
    if (j->oneline[j->depth]) {
        if (!first) fputc(' ', j->out);
    } else {
        newline_indent(j, j->depth);
    }
}

static void container_begin(CliJson *j, char open, bool oneline) {
    element_begin(j);
    IR_ASSERT(j->depth < CLI_JSON_MAX_DEPTH);
    bool parent_oneline = j->depth > 0 && j->oneline[j->depth];
    j->depth++;
    j->first[j->depth] = true;
    j->oneline[j->depth] = oneline || parent_oneline;
    fputc(open, j->out);
}

static void container_end(CliJson *j, char close) {
    IR_ASSERT(j->depth > 0 && !j->after_key);
    if (!j->oneline[j->depth] && !j->first[j->depth]) newline_indent(j, j->depth - 1);
    j->depth--;
    fputc(close, j->out);
}

void cli_json_object_begin(CliJson *j, bool oneline) { container_begin(j, '{', oneline); }
void cli_json_object_end(CliJson *j) { container_end(j, '}'); }
void cli_json_array_begin(CliJson *j, bool oneline) { container_begin(j, '[', oneline); }
void cli_json_array_end(CliJson *j) { container_end(j, ']'); }

/* Length of the valid UTF-8 sequence at s (at most len bytes), or 0 when it is not one:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_valid_len(const unsigned char *s, size_t len) {
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    if (c == 0xE0)
        lo = 0xA0; /* overlong */
    else if (c == 0xED)
        hi = 0x9F; /* surrogates */
    else if (c == 0xF0)
        lo = 0x90; /* overlong */
    else if (c == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    if (len < n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

static void write_string(FILE *out, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        switch (c) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (c < 0x20 || c == 0x7F) {
                fprintf(out, "\\u%04x", c);
            } else if (c < 0x80) {
                fputc(c, out);
            } else {
                size_t n = utf8_valid_len(s + i, len - i);
                if (n == 0) {
                    fputs("\\ufffd", out);
                } else {
                    fwrite(s + i, 1, n, out);
                    i += n;
                    continue;
                }
            }
        }
        i++;
    }
    fputc('"', out);
}

void cli_json_key(CliJson *j, const char *key) {
    IR_ASSERT(j->depth > 0 && !j->after_key);
    element_begin(j);
    write_string(j->out, key, strlen(key));
    fputs(": ", j->out);
    j->after_key = true;
}

void cli_json_string_n(CliJson *j, const char *s, size_t len) {
    element_begin(j);
    write_string(j->out, s ? s : "", s ? len : 0);
}

void cli_json_string(CliJson *j, const char *s) { cli_json_string_n(j, s, s ? strlen(s) : 0); }

void cli_json_int(CliJson *j, int64_t v) {
    element_begin(j);
    fprintf(j->out, "%" PRId64, v);
}

void cli_json_uint(CliJson *j, uint64_t v) {
    element_begin(j);
    fprintf(j->out, "%" PRIu64, v);
}

void cli_json_double(CliJson *j, double v) {
    if (!isfinite(v)) {
        cli_json_null(j); /* JSON has no NaN or infinity */
        return;
    }
    element_begin(j);
    fprintf(j->out, "%.9g", v);
}

void cli_json_bool(CliJson *j, bool v) {
    element_begin(j);
    fputs(v ? "true" : "false", j->out);
}

void cli_json_null(CliJson *j) {
    element_begin(j);
    fputs("null", j->out);
}

void cli_json_finish(CliJson *j) {
    IR_ASSERT(j->depth == 0 && !j->first[0]);
    fputc('\n', j->out);
}
