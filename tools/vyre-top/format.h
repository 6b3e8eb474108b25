/*
 * format.h - vyre-top's pure formatting: numbers with units, fixed-width
 * cells, table columns that fit a width. No I/O, no ncurses: the screen,
 * --batch and the unit tests use the same functions.
 *
 * Conventions: an unknown value (NAN, or a validity flag off) is "-"; every
 * output is NUL-terminated and never longer than its buffer allows; cells
 * are padded or cut to exactly their width.
 */
#ifndef VYRE_TOP_FORMAT_H
#define VYRE_TOP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "tool_usagesnap.h"

/* Sparkline levels are stored in formatted text as bytes 0x01..0x08 (1/8
 * to 8/8 of a cell); the drawing step turns them into block characters or
 * ASCII. Telemetry strings never hold control bytes (the reader replaces
 * them) and table cells go through tool_clean (top_fmt_cell), so these
 * cannot be confused with content. */
#define TOP_SPARK_MIN   0x01
#define TOP_SPARK_MAX   0x08
#define TOP_IS_SPARK(c) ((unsigned char)(c) >= TOP_SPARK_MIN && (unsigned char)(c) <= TOP_SPARK_MAX)

/* The last cell of a cut text, stored as this byte: the drawing step shows
 * an ellipsis ("\u2026" in a UTF-8 terminal, '~' otherwise; '~' in
 * --batch). Never content, for the reason above. */
#define TOP_ELLIPSIS 0x0E

/* Writes s into dst as exactly w cells (dst holds w + 1 bytes): s through
 * tool_clean (control characters and bad UTF-8 shown escaped), padded with
 * spaces on the right (align 0) or left (align 1); a text longer than w is
 * cut to w with TOP_ELLIPSIS as its last cell. w <= 0 gives "". */
void top_fmt_cell(char *dst, int w, const char *s, int right);

/* A count per second: "-", "0", "7.5", "12", "1.2k", "45k", "3.4M". */
void top_fmt_rate(double v, char *buf, size_t size);

/* MB/s (10^6 bytes): "-", "0.0", "12.3", "1234". */
void top_fmt_mbs(double v, char *buf, size_t size);

/* A percentage with one decimal: "-", "0.0%", "97.5%", "100%". */
void top_fmt_pct(double v, char *buf, size_t size);

/* A duration: "-" when !valid, "850ns", "12.3us", "1.23ms", "2.50s", "3m05s". */
void top_fmt_ns(double ns, int valid, char *buf, size_t size);

/* Seconds of compile time: "-", "0s", "1.2s", "12m", "3.4h". */
void top_fmt_secs(double s, char *buf, size_t size);

/* When a process started, in local time, and how long ago:
 * "2026-12-06 02:55:46 (1h 02m ago)"; "unknown" when start_unix is NAN or 0;
 * without the "ago" part when now_unix is NAN or before the start. */
void top_fmt_started(double start_unix, double now_unix, char *buf, size_t size);

/* Bytes: "-" when !valid, else "0B", "812K", "12.5M", "1.5G", "2.0T"
 * (powers of 1024, at most 5 characters). */
void top_fmt_bytes(uint64_t b, int valid, char *buf, size_t size);

/*
 * One row of the cache sizes panel for cache f, into buf:
 *   "triton   1.20G   84.0k files  no limit         fs 91% full, 12.0G free  PATH (FROM)"
 * with ">" before a size that is a lower bound (the scan stopped at its
 * bound), "limit 5.00G (24%)" or "OVER its 5.00G limit" where a limit is
 * known, "(inodes)" when the filesystem's inodes are fuller than its bytes,
 * "not created yet" for a missing directory and "cannot measure: why" for
 * a cache that could not be located or read. Returns 1 when the row is a
 * warning: over its limit, its filesystem at least TOOL_USAGE_FS_WARN_PCT
 * full, or not measurable.
 */
int top_fmt_usage(const tool_usage_fig *f, char *buf, size_t size);

/* Grid/block: "64x2/256" (trailing dimensions of 1 dropped). */
void top_fmt_dims(const uint32_t grid[3], const uint32_t block[3], char *buf, size_t size);

/* An htop meter of exactly w cells: "[|||||     45%]"; pct NAN: "[  -  ]".
 * w < 3 gives the percentage (or "-") cut to w. */
void top_fmt_bar(double pct, int w, char *dst);

/* A sparkline of exactly w cells from samples (0..100, 255 unknown; oldest
 * first): the newest n that fit, right-aligned; unknown samples and
 * missing history are spaces, 0 is the lowest level. */
void top_fmt_spark(const uint8_t *samples, unsigned n, int w, char *dst);

/* ---- tables ------------------------------------------------------------- */

typedef struct top_col {
    const char *title;
    int width; /* minimum width; the flex column grows */
    int right; /* right-aligned */
    int prio;  /* lower is kept first when the width is tight */
    int flex;  /* takes the remaining width (one per table) */
} top_col;

/* Chooses the columns that fit in `width` (one space between columns):
 * columns in prio order until the next does not fit; the flex column then
 * takes what is left. w_out[i] is the width of column i, 0 when hidden.
 * Returns the number of columns shown. */
int top_cols_fit(const top_col *cols, int n, int width, int *w_out);

/* Columns in a table at most (top_cols_fit_want). */
#define TOP_COLS_MAX 24

/* As top_cols_fit, then the width grows with the terminal: each shown
 * column up to want[i] cells (its longest content; want NULL or want[i] 0:
 * its minimum), in priority order, then what is left is shared by the
 * shown flex columns (several allowed: bars, command lines). Returns the
 * number of columns shown. */
int top_cols_fit_want(const top_col *cols, int n, int width, const int *want, int *w_out);

/* Joins cells (cells[i] for shown columns) into dst of exactly `width`
 * cells (dst holds width + 1 bytes). */
void top_fmt_row(const top_col *cols, const int *w, int n, const char *const *cells, int width,
                 char *dst);

#endif /* VYRE_TOP_FORMAT_H */
