/* A small JSON writer for the command's --json outputs: nesting, commas and indentation
 * are tracked here; strings are escaped, and bytes that are not valid UTF-8 (names from a
 * model are untrusted) are written as U+FFFD, so the output always parses. */
#ifndef KILN_CLI_JSON_H
#define KILN_CLI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_JSON_MAX_DEPTH 32 /* the deepest document kiln writes is 4 levels */

typedef struct CliJson {
    FILE *out;
    int depth;
    bool after_key;
    bool first[CLI_JSON_MAX_DEPTH + 1];
    bool oneline[CLI_JSON_MAX_DEPTH + 1]; /* container written on one line */
} CliJson;

void cli_json_init(CliJson *j, FILE *out);
/* Containers; oneline puts the whole container (and what it holds) on one line. */
void cli_json_object_begin(CliJson *j, bool oneline);
void cli_json_object_end(CliJson *j);
void cli_json_array_begin(CliJson *j, bool oneline);
void cli_json_array_end(CliJson *j);
void cli_json_key(CliJson *j, const char *key);
void cli_json_string(CliJson *j, const char *s);
void cli_json_string_n(CliJson *j, const char *s, size_t len);
void cli_json_int(CliJson *j, int64_t v);
void cli_json_uint(CliJson *j, uint64_t v);
/* A number printed with %.9g; NaN and infinities as null. */
void cli_json_double(CliJson *j, double v);
void cli_json_bool(CliJson *j, bool v);
void cli_json_null(CliJson *j);
/* Ends the document with a newline; the writer must be back at depth 0. */
void cli_json_finish(CliJson *j);

#endif
