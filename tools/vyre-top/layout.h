/*
 * layout.h - vyre-top's pure layout: given the terminal size and how many
 * content rows each panel would like, the rectangles of the header, footer
 * and panels.
 *
 * Guarantees (tests/unit/test_top_layout.c checks them for every size from
 * 1x1 to 300x100): no two rectangles overlap, none leaves the screen, a
 * shown panel has at least a title row and one content row, and when space
 * is short the GPU and process panels get it first. Rows and columns grow
 * with the terminal (issue 37): no rows stay blank below the panels.
 */
#ifndef VYRE_TOP_LAYOUT_H
#define VYRE_TOP_LAYOUT_H

enum top_panel_id {
    TOP_P_GPU = 0,
    TOP_P_PROC,
    TOP_P_RANGE,
    TOP_P_KERNEL,
    TOP_P_CACHE,
    TOP_NPANELS
};

/* A rectangle in cells; h == 0 or w == 0 means not shown. */
typedef struct top_rect {
    int y, x, h, w;
} top_rect;

typedef struct top_layout {
    int rows, cols;
    top_rect header; /* one row: title, time, refresh interval */
    top_rect host;   /* one row below it with TOP_LAYOUT_HOST: CPU, memory, swap, load */
    top_rect footer; /* one row: key hints, filter prompt */
    top_rect panel[TOP_NPANELS];
} top_layout;

/* Layout flags. */
enum {
    TOP_LAYOUT_SINGLE_COLUMN = 1u << 0, /* never side by side (batch output) */
    TOP_LAYOUT_NO_FOOTER = 1u << 1,
    TOP_LAYOUT_HOST = 1u << 2, /* a host row below the header (from 10 rows) */
};

/* Width from which the range/cache and kernel panels sit side by side. */
#define TOP_WIDE_COLS 160

/*
 * want[i]: content rows panel i would like below its title (0: hide the
 * panel). Any rows/cols (even 0 or negative) are accepted: what does not
 * fit is not shown.
 */
void top_layout_compute(int rows, int cols, const int want[TOP_NPANELS], unsigned flags,
                        top_layout *out);

/*
 * As top_layout_compute, with want_w[i] the width panel i's longest content
 * row asks for (NULL or 0: no preference). From TOP_WIDE_COLS columns, when
 * the stacked panels do not fit the height, ranges and cache sit beside the
 * kernels and the two columns share the width by these widths. Stacked,
 * rows left once every panel has what it asked for go to the panel with
 * the most content rows (none stay blank), except with
 * TOP_LAYOUT_SINGLE_COLUMN (batch output is as tall as its content).
 */
void top_layout_compute_w(int rows, int cols, const int want[TOP_NPANELS],
                          const int want_w[TOP_NPANELS], unsigned flags, top_layout *out);

/* 1 when the two rectangles share a cell (empty ones share none). */
int top_rect_overlap(top_rect a, top_rect b);

#endif /* VYRE_TOP_LAYOUT_H */
