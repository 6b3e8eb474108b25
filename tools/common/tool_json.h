/*
 * tool_json.h - the one JSON printer of the front ends (docs/JSON.md).
 *
 * Documents are built with jansson (json_t) and printed here, so every
 * --json of every tool writes numbers the same way: integers as integers,
 * and a real as the shortest of %.15g, %.16g and %.17g that strtod reads
 * back to the same double (0.1 prints "0.1", not 0.10000000000000001; 0.1 +
 * 0.2 prints 0.30000000000000004, not a 0.3 that reads back as another
 * number), always with a '.' or an exponent so it stays a real. Before,
 * vyre-bench printed 17 digits and vyre-top 15. Everything else is
 * jansson's own layout: keys in insertion order, two-space indent.
 */
#ifndef VYRE_TOOL_JSON_H
#define VYRE_TOOL_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

typedef enum tool_json_style {
    TOOL_JSON_PRETTY = 0,  /* one document, two-space indent (every --json) */
    TOOL_JSON_COMPACT = 1, /* one line (vyre-top's stream: a line per refresh) */
} tool_json_style;

/* Writes v and a newline to out. Returns 0, or -1 when out has an error
 * (ferror). v is not released. */
int tool_json_write(FILE *out, json_t *v, tool_json_style style);

/* tool_json_write(out, o, TOOL_JSON_PRETTY), then releases o (json_decref):
 * the last step of a command's --json. */
void tool_json_print(FILE *out, json_t *o);

/* A real as the printer writes it ("0.1", "2.0", "1e20"): the shortest
 * round-tripping text into out[size]. Returns out. */
const char *tool_json_format_real(char *out, size_t size, double v);

/* A JSON string of text vyre did not write (a path, a message, a file's
 * contents, a user's argument): as it is when it is valid UTF-8, else its
 * cleaned form (tool_clean), which jansson takes, so a stray byte never
 * loses the document. NULL is ""; no memory, JSON null. */
json_t *tool_json_text(const char *s);

#endif /* VYRE_TOOL_JSON_H */
