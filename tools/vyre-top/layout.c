/*
 * layout.c - see layout.h. Panels are stacked top to bottom in priority
 * order (GPU, processes, ranges, kernels, cache). Every shown panel first
 * gets its minimum (title + one row) in that order, so a short terminal
 * keeps the first panels; the remaining rows are then dealt out in rounds,
 * GPU and processes taking two rows a round and the others one, until each
 * has what it asked for; rows still left go to the panel with the most
 * content rows (issue 37: no blank rows below the panels; the footer keeps
 * the last row). From TOP_WIDE_COLS columns, when the stacked panels do not
 * all fit the height, ranges and cache sit left of the kernels, the two
 * columns sharing the width by the widths their content asks for.
 */
#include "layout.h"

#include <string.h>

#define MIN_H 2 /* title + one row */

int top_rect_overlap(top_rect a, top_rect b)
{
    if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0)
        return 0;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/* Heights for n stacked items wanting desired[i] rows (title included, 0:
 * hidden) in `space` rows; fill (or -1) takes what is left at the end. */
static void deal(int n, const int *desired, const int *weight, int space, int fill, int *h)
{
    for (int i = 0; i < n; i++) {
        h[i] = 0;
        if (desired[i] > 0 && space >= MIN_H) {
            h[i] = MIN_H;
            space -= MIN_H;
        }
    }
    while (space > 0) {
        int progress = 0;
        for (int i = 0; i < n && space > 0; i++) {
            if (h[i] == 0 || h[i] >= desired[i])
                continue;
            int add = weight[i];
            if (add > desired[i] - h[i])
                add = desired[i] - h[i];
            if (add > space)
                add = space;
            h[i] += add;
            space -= add;
            progress = 1;
        }
        if (!progress)
            break;
    }
    if (space > 0 && fill >= 0 && fill < n && h[fill] > 0)
        h[fill] += space;
}

/* The shown panel with the most content rows (the first of equals), or -1. */
static int most_content(int n, const int *desired, const int *h)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (h[i] > 0 && (best < 0 || desired[i] > desired[best]))
            best = i;
    return best;
}

static void place_stack(int y, int x, int w, int space, const int *ids, int n, const int *desired,
                        const int *weight, int fill, top_layout *out)
{
    int h[TOP_NPANELS];
    if (fill == -2) { /* spare rows to the panel with the most to show */
        deal(n, desired, weight, space, -1, h);
        int used = 0;
        for (int i = 0; i < n; i++)
            used += h[i];
        int best = most_content(n, desired, h);
        if (best >= 0 && used < space)
            h[best] += space - used;
    } else {
        deal(n, desired, weight, space, fill, h);
    }
    for (int i = 0; i < n; i++) {
        top_rect *r = &out->panel[ids[i]];
        if (h[i] <= 0 || w <= 0) {
            memset(r, 0, sizeof *r);
            continue;
        }
        r->y = y;
        r->x = x;
        r->h = h[i];
        r->w = w;
        y += h[i];
    }
}

static int desired_of(int want)
{
    return want > 0 ? want + 1 : 0;
}

/* The left column's width beside the kernels: each side its content's
 * width where both fit (the spare shared evenly), else the width shared in
 * proportion to what each asks, neither below a third. */
static int left_width(int cols, const int *want_w)
{
    int lw = cols / 2;
    if (!want_w)
        return lw;
    int l = want_w[TOP_P_RANGE] > want_w[TOP_P_CACHE] ? want_w[TOP_P_RANGE] : want_w[TOP_P_CACHE];
    int k = want_w[TOP_P_KERNEL];
    if (l <= 0 || k <= 0)
        return lw;
    if (l + 1 + k <= cols)
        lw = l + (cols - 1 - l - k) / 2;
    else
        lw = (int)((long)(cols - 1) * l / (l + k));
    if (lw < cols / 3)
        lw = cols / 3;
    if (lw > cols - 1 - cols / 3)
        lw = cols - 1 - cols / 3;
    return lw;
}

void top_layout_compute(int rows, int cols, const int want[TOP_NPANELS], unsigned flags,
                        top_layout *out)
{
    top_layout_compute_w(rows, cols, want, NULL, flags, out);
}

void top_layout_compute_w(int rows, int cols, const int want[TOP_NPANELS],
                          const int want_w[TOP_NPANELS], unsigned flags, top_layout *out)
{
    memset(out, 0, sizeof *out);
    out->rows = rows;
    out->cols = cols;
    if (rows <= 0 || cols <= 0)
        return;
    int top = 0, bottom = rows;
    if (rows >= 8) {
        out->header = (top_rect){0, 0, 1, cols};
        top = 1;
    }
    if (rows >= 10 && (flags & TOP_LAYOUT_HOST)) {
        out->host = (top_rect){1, 0, 1, cols};
        top = 2;
    }
    if (rows >= 3 && !(flags & TOP_LAYOUT_NO_FOOTER)) {
        out->footer = (top_rect){rows - 1, 0, 1, cols};
        bottom = rows - 1;
    }
    int space = bottom - top;
    int d[TOP_NPANELS];
    for (int i = 0; i < TOP_NPANELS; i++)
        d[i] = desired_of(want[i]);

    int total = 0;
    for (int i = 0; i < TOP_NPANELS; i++)
        total += d[i];
    int wide = cols >= TOP_WIDE_COLS && !(flags & TOP_LAYOUT_SINGLE_COLUMN) && total > space;
    int left_d = d[TOP_P_RANGE] + d[TOP_P_CACHE];
    if (wide && left_d > 0 && d[TOP_P_KERNEL] > 0) {
        /* GPU, processes, then a band holding both columns. */
        int ids[3] = {TOP_P_GPU, TOP_P_PROC, -1};
        int band = left_d > d[TOP_P_KERNEL] ? left_d : d[TOP_P_KERNEL];
        int desired[3] = {d[TOP_P_GPU], d[TOP_P_PROC], band};
        int weight[3] = {2, 2, 1};
        int h[3];
        deal(3, desired, weight, space, 2, h); /* spare rows: the band's */
        int y = top;
        for (int i = 0; i < 2; i++) {
            if (h[i] > 0)
                out->panel[ids[i]] = (top_rect){y, 0, h[i], cols};
            y += h[i];
        }
        if (h[2] > 0) {
            int lw = left_width(cols, want_w);
            int lids[2] = {TOP_P_RANGE, TOP_P_CACHE};
            int ld[2] = {d[TOP_P_RANGE], d[TOP_P_CACHE]};
            int lwt[2] = {1, 1};
            place_stack(y, 0, lw, h[2], lids, 2, ld, lwt, 0, out);
            int rids[1] = {TOP_P_KERNEL};
            int rd[1] = {d[TOP_P_KERNEL]};
            int rwt[1] = {1};
            /* The kernel column starts after a one-cell gutter. */
            place_stack(y, lw + 1, cols - lw - 1, h[2], rids, 1, rd, rwt, 0, out);
        }
        return;
    }
    int ids[TOP_NPANELS] = {TOP_P_GPU, TOP_P_PROC, TOP_P_RANGE, TOP_P_KERNEL, TOP_P_CACHE};
    int weight[TOP_NPANELS] = {2, 2, 1, 1, 1};
    place_stack(top, 0, cols, space, ids, TOP_NPANELS, d, weight,
                (flags & TOP_LAYOUT_SINGLE_COLUMN) ? -1 : -2, out);
}
