/*
 * summary.h - what `stats` of every kind prints (vyre's cache, Triton's,
 * TorchInductor's), written once: labelled lines and titled tables (row
 * models, tools/common/tool_rows.h). Compact by default: a line or a
 * table row that counts nothing is left out unless -v; a line marked
 * verbose shows only with -v. --json: the kind's document with each
 * table's rows under its key; --csv: the lines as field,value rows, then
 * each table after a blank line; --md: the same as markdown tables.
 */
#ifndef VYRE_CACHECTL_SUMMARY_H
#define VYRE_CACHECTL_SUMMARY_H

#include <jansson.h>
#include <stdint.h>

#include "tool_rows.h"

/* When a line is shown in the table format (CSV has every line). */
enum {
    CACHECTL_SHOW,    /* always */
    CACHECTL_NONZERO, /* when its count is not 0, or -v */
    CACHECTL_VERBOSE, /* with -v only */
};

typedef struct cachectl_summary cachectl_summary;

/* A summary whose labels are padded to label_width. Free with
 * cachectl_summary_free; aborts on out-of-memory. */
cachectl_summary *cachectl_summary_new(int label_width);
void cachectl_summary_free(cachectl_summary *s);

/* A line "LABEL VALUE" (label "Entries:", a value printf'ed; a label
 * ending in ':' with an empty format is a section's title). n: the count
 * CACHECTL_NONZERO looks at. */
void cachectl_summary_line(cachectl_summary *s, int when, uint64_t n, const char *label,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A table under title ("By kind:"; NULL: none), its JSON array under key
 * (NULL: not in the document). The caller adds its rows; the model is the
 * summary's. */
tool_rows *cachectl_summary_table(cachectl_summary *s, const char *title, const char *key,
                                  const tool_rows_col *cols, size_t ncols);

/* After a row is filled: compact leaves it out of the table when n is 0. */
void cachectl_summary_count(cachectl_summary *s, tool_rows *rows, uint64_t n);

/* Prints s in the format the global options chose; JSON: doc (consumed)
 * with the tables' arrays. 0, or the exit code of a usage error. */
int cachectl_summary_print(cachectl_summary *s, const char *sub, json_t *doc);

#endif /* VYRE_CACHECTL_SUMMARY_H */
