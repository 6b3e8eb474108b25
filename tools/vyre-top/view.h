/*
 * view.h - composes one vyre-top frame: a snapshot, the UI state and a
 * terminal size become a grid of cells (characters and attributes). Pure:
 * the ncurses step (draw.c) and --batch (batch.c) both print such a grid.
 */
#ifndef VYRE_TOP_VIEW_H
#define VYRE_TOP_VIEW_H

#include "collect.h"
#include "layout.h"
#include "ui.h"

/* Cell attributes (one per cell). */
enum top_attr {
    TOP_A_NORMAL = 0,
    TOP_A_HEADER,      /* the top line */
    TOP_A_TITLE,       /* a panel's title row */
    TOP_A_TITLE_FOCUS, /* the focused panel's title row */
    TOP_A_COLHEAD,     /* a table's column names */
    TOP_A_SEL,         /* the selected row of the focused panel */
    TOP_A_DIM,         /* explanations, empty states */
    TOP_A_WARN,        /* problems */
    TOP_A_SPARK,       /* history graph */
    TOP_A_BAR,         /* meters */
    TOP_A_FOOTER,
    TOP_A_HELP,
    TOP_A_COUNT
};

typedef struct top_grid {
    int rows, cols;
    char *ch;          /* rows * cols characters (spaces, text, spark bytes) */
    unsigned char *at; /* rows * cols enum top_attr */
    top_layout layout; /* the layout the frame was composed with */
} top_grid;

/* Compose flags. */
enum {
    TOP_VIEW_BATCH = 1u << 0, /* as tall as the content, one column, no
                                 footer, no selection: for --batch */
};

/* Composes a frame into *g (allocated here; top_grid_release frees it).
 * With TOP_VIEW_BATCH, rows is ignored. ui's row counts and selections are
 * updated (clamped) to the frame. Returns 0 or -1 when out of memory. */
int top_view_compose(const top_snapshot *s, top_ui *ui, int rows, int cols, unsigned flags,
                     top_grid *g);
void top_grid_release(top_grid *g);

/* Row y of the grid as text (cols bytes + NUL, spark bytes as given). */
const char *top_grid_row(const top_grid *g, int y);

/* 1 when the process matches the filter (case-insensitive substring of its
 * name, command line or pid); an empty filter matches everything. */
int top_proc_matches(const top_proc *p, const char *filter);

/* The filtered process indices of s, sorted by ui's process sort, into
 * idx (caller-allocated, s->nprocs entries); returns how many. */
size_t top_view_procs(const top_snapshot *s, const top_ui *ui, size_t *idx);

#endif /* VYRE_TOP_VIEW_H */
