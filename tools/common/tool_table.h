/*
 * tool_table.h - fitting a table of text cells into a terminal's width: pure
 * functions (no terminal, no I/O but the FILE the caller names), shared by
 * the front ends and unit-tested at several widths.
 *
 * Each column has a priority (0: always kept; a larger number is dropped
 * earlier) and a minimum width it may be shrunk to (text cut with '~').
 * tool_table_fit decides the widths; tool_table_render prints header and
 * rows with them. The promise: no printed line is longer than the width
 * asked for, and the columns kept are always the most important ones.
 */
#ifndef VYRE_TOOL_TABLE_H
#define VYRE_TOOL_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef struct tool_table_col {
    const char *name; /* the header */
    int priority;     /* 0: never dropped; larger: dropped first */
    int min_width;    /* shrink down to this (0: never shrunk below its natural width) */
    int right;        /* 1: right-aligned (numbers) */
} tool_table_col;

/* The gap between two columns, in characters. */
#define TOOL_TABLE_GAP 2

/*
 * Chooses the width of each of the ncols columns so that the table fits in
 * `width` characters (width <= 0: no limit, every column at its natural
 * width). natural[i] is the widest cell of column i, header included; 0 leaves
 * the column out.
 * width_out[i] receives the width of column i, 0 for a dropped column.
 *
 * Rule: while the table is too wide, take the least important kept column
 * (largest priority > 0; the rightmost among equals): cut it toward its
 * min_width when that alone makes the table fit, else drop it, and try
 * again. A more important column is never cut to keep a less important
 * one. When only priority-0 columns are left and they still do not fit,
 * they are cut to their minimums (rightmost first) and the renderer cuts
 * the lines.
 * Returns the table's width with the chosen columns.
 */
int tool_table_fit(const tool_table_col *cols, size_t ncols, const int *natural, int width,
                   int *width_out);

/*
 * Prints the header, a rule of dashes, and nrows rows of cells (row-major:
 * cells[r * ncols + c], NULL for an empty cell) with the widths from
 * tool_table_fit. Cells longer than their column are cut, ending in '~'.
 * No line is longer than `width` (when width > 0), and lines carry no
 * trailing blanks.
 */
void tool_table_render(FILE *out, const tool_table_col *cols, size_t ncols, const int *widths,
                       const char *const *cells, size_t nrows, int width);

/* The natural width of each column (header and cells), into natural[]. */
void tool_table_natural(const tool_table_col *cols, size_t ncols, const char *const *cells,
                        size_t nrows, int *natural);

/* The width of the terminal on fd: TIOCGWINSZ, else $COLUMNS, else 80.
 * Returns 0 when fd is not a terminal (and $COLUMNS is not consulted). */
int tool_table_terminal_width(int fd);

#endif /* VYRE_TOOL_TABLE_H */
