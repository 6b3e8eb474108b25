/*
 * view_grid.c - see view_int.h: the grid a frame is composed into and the
 * helpers every panel writes it with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_int.h"

/* ---- grid --------------------------------------------------------------- */

void top_grid_release(top_grid *g)
{
    free(g->ch);
    free(g->at);
    g->ch = NULL;
    g->at = NULL;
    g->rows = g->cols = 0;
}

int top_grid_init(top_grid *g, int rows, int cols)
{
    memset(g, 0, sizeof *g);
    if (rows < 0)
        rows = 0;
    if (cols < 0)
        cols = 0;
    size_t stride = (size_t)cols + 1;
    g->ch = malloc((size_t)rows * stride + 1);
    g->at = calloc((size_t)rows * stride + 1, 1);
    if (!g->ch || !g->at) {
        top_grid_release(g);
        return -1;
    }
    g->rows = rows;
    g->cols = cols;
    for (int y = 0; y < rows; y++) {
        memset(g->ch + (size_t)y * stride, ' ', (size_t)cols);
        g->ch[(size_t)y * stride + (size_t)cols] = '\0';
    }
    return 0;
}

const char *top_grid_row(const top_grid *g, int y)
{
    if (y < 0 || y >= g->rows)
        return "";
    return g->ch + (size_t)y * ((size_t)g->cols + 1);
}

/* Writes text at (y, x) for at most w cells (clipped to the grid), and
 * pads the rest of the w cells with spaces when pad is set. */
void top_grid_put(top_grid *g, int y, int x, int w, const char *text, int attr, int pad)
{
    if (y < 0 || y >= g->rows || x < 0 || x >= g->cols || w <= 0)
        return;
    if (x + w > g->cols)
        w = g->cols - x;
    size_t stride = (size_t)g->cols + 1;
    char *c = g->ch + (size_t)y * stride + (size_t)x;
    unsigned char *a = g->at + (size_t)y * stride + (size_t)x;
    int i = 0;
    for (; i < w && text[i]; i++) {
        c[i] = text[i];
        a[i] = (unsigned char)attr;
    }
    int full = i == w; /* text filled every cell: it may go on */
    for (; pad && i < w; i++) {
        c[i] = ' ';
        a[i] = (unsigned char)attr;
    }
    /* Text beyond the cells (trailing spaces aside) is cut: the last cell
     * says so (issue 37). */
    if (full && text[w] && text[w + strspn(text + w, " ")])
        c[w - 1] = TOP_ELLIPSIS;
}

/* One full-width row of a panel (row 0 is the title). */
void top_grid_line(top_grid *g, top_rect r, int row, const char *text, int attr)
{
    if (row < 0 || row >= r.h)
        return;
    top_grid_put(g, r.y + row, r.x, r.w, text, attr, 1);
}

/* ---- tables ------------------------------------------------------------- */

/* The column-title row of a table panel. */
void top_grid_colheads(top_grid *g, top_rect r, int line, const top_col *cols, const int *cw,
                       int nc, int w)
{
    const char *heads[TOP_MAX_COLS];
    char buf[LINE_MAX_W];
    for (int i = 0; i < nc && i < TOP_MAX_COLS; i++)
        heads[i] = cols[i].title;
    top_fmt_row(cols, cw, nc, heads, w, buf);
    top_grid_line(g, r, line, buf, TOP_A_COLHEAD);
}

int top_grid_table_rows(top_ui *ui, int panel, top_rect r, size_t n, int *colhead, int batch)
{
    int avail = r.h - 1;
    *colhead = avail >= 2 || (batch && avail >= 1);
    int vis = avail - (*colhead ? 1 : 0);
    if (vis < 0)
        vis = 0;
    ui->nrows[panel] = (int)n;
    ui->page[panel] = vis;
    int sel = ui->sel[panel];
    if (sel >= (int)n)
        sel = (int)n - 1;
    if (sel < 0)
        sel = 0;
    ui->sel[panel] = sel;
    int first = ui->first[panel];
    if (sel < first)
        first = sel;
    if (vis > 0 && sel >= first + vis)
        first = sel - vis + 1;
    if (first > (int)n - vis)
        first = (int)n - vis;
    if (first < 0)
        first = 0;
    ui->first[panel] = first;
    return vis;
}

int top_grid_row_attr(const top_ui *ui, int panel, int row, int batch)
{
    return !batch && ui->focus == panel && ui->sel[panel] == row ? TOP_A_SEL : TOP_A_NORMAL;
}

void top_grid_title(top_grid *g, const top_ui *ui, int panel, top_rect r, const char *text,
                    int batch)
{
    char buf[LINE_MAX_W];
    snprintf(buf, sizeof buf, "%s %s", !batch && ui->focus == panel ? ">" : " ", text);
    top_grid_line(g, r, 0, buf, !batch && ui->focus == panel ? TOP_A_TITLE_FOCUS : TOP_A_TITLE);
}

int top_grid_clampw(int w)
{
    return w < LINE_MAX_W - 1 ? w : LINE_MAX_W - 1;
}
