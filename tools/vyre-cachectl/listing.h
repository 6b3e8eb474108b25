/*
 * listing.h - one listing code path for vyre-cachectl's `ls` of every kind
 * (vyre's blobs, Triton's groups, TorchInductor's entries) and the tables
 * of `stats` and `remote check`: a kind describes its columns and how to
 * read one of its entries into a row; cachectl_list fills the row model
 * (tools/common/tool_rows.h) and prints it in the format the global
 * options chose (--json, --csv, --md, the table fitted to --width/--wide).
 */
#ifndef VYRE_CACHECTL_LISTING_H
#define VYRE_CACHECTL_LISTING_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tool_rows.h"

/* A kind of entry as a listing shows it. */
typedef struct cachectl_listing {
    const char *sub;           /* the command in usage errors: "ls", "triton ls" */
    const tool_rows_col *cols; /* its columns; CSV and JSON keys are the schema's members */
    size_t ncols;
    const size_t *order; /* the table's columns in order, norder of them; NULL: declared */
    size_t norder;
    uint64_t verbose_cols; /* bit c: column c is in the table only with -v */
    size_t quiet_col;      /* -q prints this column's text, one a line */
    const char *array_key; /* the JSON document's array: "entries", "groups" */
    /* Sets the cells of entry i of entries (the row is added). */
    void (*fill)(tool_rows *rows, const void *entries, size_t i, const void *ctx);
} cachectl_listing;

/* The output format and width from the global options (g_tool.json,
 * g_cachectl.rows); piped, the table is still a table (every
 * column whole). 0, or the exit code of a usage error (two formats). */
int cachectl_rows_out(const char *sub, tool_rows_out *o);

/* Lists entries[0..n) of kind k on stdout: -q the quiet column, else the
 * rows in the chosen format; JSON puts them under k->array_key in doc
 * (consumed; its head: schema_version and where the cache is). ctx is
 * handed to k->fill. Returns 0, or the exit code of a usage error. */
int cachectl_list(const cachectl_listing *k, const void *entries, size_t n, const void *ctx,
                  json_t *doc);

/* Cell c of the last row: bytes, shown as a size ("4.0 KiB"). */
void cachectl_rows_size(tool_rows *rows, size_t c, uint64_t bytes);

/* Cell c of the last row: value (a time, a duration), shown as the age
 * age_ns ("3h"). */
void cachectl_rows_age(tool_rows *rows, size_t c, int64_t value, int64_t age_ns);

/* Prints a filled model the same way (the stats' and remote's tables):
 * 0, or the exit code of a usage error; doc and key as tool_rows_print. */
int cachectl_rows_print(const char *sub, tool_rows *rows, json_t *doc, const char *key);

#endif /* VYRE_CACHECTL_LISTING_H */
