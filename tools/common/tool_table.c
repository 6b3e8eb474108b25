/*
 * tool_table.c - fitting a table into a terminal's width (tool_table.h): which
 * columns to keep, how wide each is, and printing them.
 *
 * Widths count bytes: every cell the tools print here is ASCII, so a byte
 * is a column.
 */
#include "tool_table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int total_width(const int *w, size_t n)
{
    int total = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] > 0) {
            total += w[i];
            kept++;
        }
    }
    return kept ? total + (kept - 1) * TOOL_TABLE_GAP : 0;
}

/* Takes `need` characters from the shrinkable columns, rightmost first. */
static void shrink(const tool_table_col *cols, int *w, size_t n, int need)
{
    for (size_t k = n; k-- > 0 && need > 0;) {
        if (w[k] <= 0 || cols[k].min_width <= 0 || w[k] <= cols[k].min_width)
            continue;
        int give = w[k] - cols[k].min_width;
        if (give > need)
            give = need;
        w[k] -= give;
        need -= give;
    }
}

int tool_table_fit(const tool_table_col *cols, size_t ncols, const int *natural, int width,
                   int *width_out)
{
    for (size_t i = 0; i < ncols; i++)
        width_out[i] = natural[i] > 0 ? natural[i] : 0;
    if (width <= 0)
        return total_width(width_out, ncols);
    for (;;) {
        int over = total_width(width_out, ncols) - width;
        if (over <= 0)
            break;
        size_t d = ncols; /* the least important column that may go */
        for (size_t i = 0; i < ncols; i++)
            if (width_out[i] > 0 && cols[i].priority > 0 &&
                (d == ncols || cols[i].priority >= cols[d].priority))
                d = i;
        if (d == ncols) { /* only the columns that must stay are left */
            shrink(cols, width_out, ncols, over);
            break;
        }
        /* It is cut to its minimum before it goes, but a more important
         * column is never cut to keep it. */
        if (cols[d].min_width > 0 && width_out[d] - cols[d].min_width >= over) {
            width_out[d] -= over;
            break;
        }
        width_out[d] = 0;
    }
    return total_width(width_out, ncols);
}

void tool_table_natural(const tool_table_col *cols, size_t ncols, const char *const *cells,
                        size_t nrows, int *natural)
{
    for (size_t c = 0; c < ncols; c++) {
        size_t w = strlen(cols[c].name);
        for (size_t r = 0; r < nrows; r++) {
            const char *s = cells[r * ncols + c];
            size_t len = s ? strlen(s) : 0;
            if (len > w)
                w = len;
        }
        natural[c] = w > 4096 ? 4096 : (int)w;
    }
}

/* Appends s into line (of capacity cap, length *len) in a field of w
 * characters, cut with '~' when longer. */
static void put_cell(char *line, size_t cap, size_t *len, const char *s, int w, int right)
{
    size_t sl = s ? strlen(s) : 0;
    size_t fw = (size_t)w;
    size_t shown = sl > fw ? fw : sl;
    size_t pad = fw - shown;
    if (*len + fw + 1 > cap)
        return;
    if (right) {
        memset(line + *len, ' ', pad);
        *len += pad;
    }
    if (shown)
        memcpy(line + *len, s, shown);
    if (sl > fw && fw > 0)
        line[*len + shown - 1] = '~';
    *len += shown;
    if (!right) {
        memset(line + *len, ' ', pad);
        *len += pad;
    }
}

static void emit(FILE *out, char *line, size_t len, int width)
{
    if (width > 0 && len > (size_t)width)
        len = (size_t)width;
    while (len > 0 && line[len - 1] == ' ')
        len--;
    fwrite(line, 1, len, out);
    fputc('\n', out);
}

static void render_row(FILE *out, const tool_table_col *cols, size_t ncols, const int *widths,
                       const char *const *row, int width, int rule)
{
    size_t cap = 1;
    for (size_t c = 0; c < ncols; c++)
        cap += (size_t)(widths[c] > 0 ? widths[c] : 0) + TOOL_TABLE_GAP;
    char *line = malloc(cap);
    if (!line)
        return;
    size_t len = 0;
    int first = 1;
    for (size_t c = 0; c < ncols; c++) {
        if (widths[c] <= 0)
            continue;
        if (!first) {
            memset(line + len, ' ', TOOL_TABLE_GAP);
            len += TOOL_TABLE_GAP;
        }
        first = 0;
        if (rule) {
            memset(line + len, '-', (size_t)widths[c]);
            len += (size_t)widths[c];
        } else {
            put_cell(line, cap, &len, row ? row[c] : cols[c].name, widths[c], cols[c].right);
        }
    }
    emit(out, line, len, width);
    free(line);
}

void tool_table_render(FILE *out, const tool_table_col *cols, size_t ncols, const int *widths,
                       const char *const *cells, size_t nrows, int width)
{
    render_row(out, cols, ncols, widths, NULL, width, 0);
    render_row(out, cols, ncols, widths, NULL, width, 1);
    for (size_t r = 0; r < nrows; r++)
        render_row(out, cols, ncols, widths, cells + r * ncols, width, 0);
}

int tool_table_terminal_width(int fd)
{
    if (!isatty(fd))
        return 0;
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    if (env && *env) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (!*end && v > 0 && v < 100000)
            return (int)v;
    }
    return 80;
}
