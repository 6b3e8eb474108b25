/*
 * tool_rows.h - a listing declared once: typed columns with a priority each,
 * rows of typed cells, and one renderer that prints them as the fitted table
 * (tool_table), markdown, CSV or a JSON array. A listing command fills the
 * model and names the format; it writes no printer of its own, so every
 * listing has every format and fits --width.
 *
 * Text from outside (a database, a cache) reaches a terminal only cleaned
 * (tool_clean); JSON is escaped by jansson; CSV to a file or pipe keeps the
 * bytes as stored.
 */
#ifndef VYRE_TOOL_ROWS_H
#define VYRE_TOOL_ROWS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tool_opt.h"

/* What a column holds: how it is shown, written to CSV and to JSON. */
typedef enum tool_rows_type {
    TOOL_ROWS_TEXT,  /* a string: shown cleaned, JSON string */
    TOOL_ROWS_INT,   /* a whole number */
    TOOL_ROWS_REAL,  /* a number: shown with `decimals` (0: 3 significant digits) and `unit` */
    TOOL_ROWS_RATIO, /* 0..1: shown as a percent with `decimals` (0: 2) */
    TOOL_ROWS_TIME,  /* a duration in ns: shown "4.12 us"; JSON whole ns */
    TOOL_ROWS_DATE,  /* a Unix time in ns: shown local "2026-12-06 01:02:03"; JSON whole ns */
    TOOL_ROWS_BOOL,  /* set with tool_rows_int, 0 or not: shown "yes"/"no", JSON and CSV
                        true/false */
} tool_rows_type;

/* A priority for columns that only CSV and JSON carry (not the table, not markdown). */
#define TOOL_ROWS_DATA (-1)

typedef struct tool_rows_col {
    const char *key;   /* CSV header and JSON member ("median_ns") */
    const char *title; /* the table's and markdown's header ("median") */
    tool_rows_type type;
    int priority;     /* as tool_table_col (0 kept always, larger dropped first); TOOL_ROWS_DATA */
    int min_width;    /* cut down to this with '~' before being dropped (0: never cut) */
    int decimals;     /* REAL, RATIO: see tool_rows_type */
    const char *unit; /* REAL: shown after the number; NULL none */
    int left;         /* 1: left-aligned (numbers are right-aligned, text left) */
} tool_rows_col;

typedef enum tool_rows_fmt {
    TOOL_FMT_TABLE, /* aligned columns fitted to the width */
    TOOL_FMT_MD,    /* a markdown table (fitted too when a width is given) */
    TOOL_FMT_CSV,   /* a header of keys, one line per row, every column */
    TOOL_FMT_JSON,  /* an array of objects, every column */
} tool_rows_fmt;

typedef struct tool_rows tool_rows;

/* A model over ncols columns (cols must outlive it; a title may be changed
 * with tool_rows_title). Aborts on out-of-memory; free with tool_rows_free. */
tool_rows *tool_rows_new(const tool_rows_col *cols, size_t ncols);
void tool_rows_free(tool_rows *rows);

/* The table's header of column c in place of cols[c].title (copied). */
void tool_rows_title(tool_rows *rows, size_t c, const char *title);

/* Starts a row: every cell empty (null, shown "-") until set. */
void tool_rows_add(tool_rows *rows);
/* The cells of the last row. Text is copied; NULL is null ("" is an empty
 * string: shown "-", JSON ""). A real that is not finite is null. */
void tool_rows_text(tool_rows *rows, size_t c, const char *s);
void tool_rows_int(tool_rows *rows, size_t c, int64_t v);
void tool_rows_real(tool_rows *rows, size_t c, double v);
/* What the table and markdown show for the cell instead of its value's
 * text (a code for a long word, say); CSV and JSON keep the value. */
void tool_rows_shown(tool_rows *rows, size_t c, const char *shown);

/* A cell whose JSON is v (consumed: an array, an object; NULL is null),
 * for a member a document's schema nests. CSV writes it as compact JSON;
 * the table shows tool_rows_shown's text, else the compact JSON. */
void tool_rows_json_cell(tool_rows *rows, size_t c, json_t *v);

/* Leaves the last row out of the table and markdown (a zero row of a
 * compact summary, say); CSV and JSON keep it. */
void tool_rows_skip(tool_rows *rows);

size_t tool_rows_count(const tool_rows *rows);

/* The text of row r's cell c when it was set with tool_rows_text (not
 * its shown text), else NULL. Valid until the cell changes. */
const char *tool_rows_text_at(const tool_rows *rows, size_t r, size_t c);

/* The table and markdown show the columns in this order (n indices into
 * cols, copied; the others are left out of them); CSV and JSON keep the
 * declared order. Without it: the declared order. */
void tool_rows_order(tool_rows *rows, const size_t *order, size_t n);

/* Leaves column c out of the table and markdown (a column with nothing to
 * show this time); CSV and JSON keep it. */
void tool_rows_hide(tool_rows *rows, size_t c);

/* The rows as a JSON array of objects (a new reference). */
json_t *tool_rows_json(const tool_rows *rows);

/* Prints the rows in fmt. TABLE: fitted to width (<= 0: every column
 * whole); MD: the same columns (width <= 0: all); CSV: all. JSON: doc
 * (consumed; NULL: a new object) gets the array under `key` and is
 * printed by tool_json_print; for the other formats doc is released. */
void tool_rows_print(FILE *out, tool_rows *rows, tool_rows_fmt fmt, int width, json_t *doc,
                     const char *key);

/* 1 when the last tool_rows_print showed column c in its table or
 * markdown (it fitted), else 0. */
int tool_rows_kept(const tool_rows *rows, size_t c);

/* One CSV field, RFC 4180 quoted (whole: no length limit); on a terminal
 * (tty) through tool_clean. */
void tool_csv_text(FILE *out, const char *s, int tty);

/* "4.12 us" for a duration in ns ("-" when not finite). */
void tool_format_ns(double ns, char *buf, size_t size);

/* ---- the output options of a listing --------------------------------- */

/* --width is -w wherever a table prints (vyre-top's --batch too). */
enum { TOOL_OPT_MD = 0x1a0, TOOL_OPT_WIDE, TOOL_OPT_CSV = 0x1a3, TOOL_OPT_WIDTH = 'w' };

/* The rows of an option table, one macro each (help from one place). */
#define TOOL_ROWS_OPT_CSV                                                                          \
    {                                                                                              \
        TOOL_OPT_CSV, 0, "csv", NULL, "CSV: a header of field names, one line per row", NULL       \
    }
#define TOOL_ROWS_OPT_MD                                                                           \
    {                                                                                              \
        TOOL_OPT_MD, 0, "md", NULL, "a markdown table", NULL                                       \
    }
#define TOOL_ROWS_OPT_WIDE                                                                         \
    {                                                                                              \
        TOOL_OPT_WIDE, 0, "wide", NULL, "on a terminal, every column whole", NULL                  \
    }
#define TOOL_ROWS_OPT_WIDTH                                                                        \
    {                                                                                              \
        TOOL_OPT_WIDTH, 'w', "width", "N", "fit the table to N columns, terminal or not",          \
            "80 120 160 200"                                                                       \
    }

/* What the options chose. */
typedef struct tool_rows_out {
    tool_rows_fmt fmt; /* after tool_rows_out_resolve */
    int width;         /* --width N, then the table's width (0: no limit) */
    int wide;          /* --wide */
    int csv, md;       /* --csv, --md */
} tool_rows_out;

/* Takes option c (its argument arg) when it is one of the four above:
 * returns 1 (taken), 0 (not one of them) or -1 (a bad --width, reported:
 * exit 2). */
int tool_rows_opt(const char *sub, int c, const char *arg, tool_rows_out *o);

/* Chooses the format (--json: g_tool.json; --csv; --md; else the table,
 * or piped_fmt when stdout is no terminal and no --width was given) and
 * the width (--width, else the terminal's; --wide: none). Returns 0, or
 * exit code 2 after a usage error when two formats were asked for. */
int tool_rows_out_resolve(const char *sub, tool_rows_out *o, tool_rows_fmt piped_fmt);

#endif /* VYRE_TOOL_ROWS_H */
