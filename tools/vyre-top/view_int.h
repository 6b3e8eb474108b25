/*
 * view_int.h - what the files of vyre-top's view share (not for the rest of
 * the tool): the grid's writing helpers (view_grid.c), the model a frame is
 * composed from, and the panels kept in files of their own (view_procs.c,
 * view_help.c). All pure: cells in, cells out.
 */
#ifndef VYRE_TOP_VIEW_INT_H
#define VYRE_TOP_VIEW_INT_H

#include "format.h"
#include "view.h"

#define LINE_MAX_W   1024 /* longest row we format; wider screens are blank beyond */
#define TOP_MAX_COLS 20   /* columns a table panel may have (the processes panel has the most) */

/* One row of the processes panel: a process on one of its GPUs (slot into
 * its gpus[]), or on none (slot -1). */
typedef struct top_proc_line {
    size_t proc; /* index into the snapshot's procs */
    int slot;
    int anc;   /* tree view: index into the snapshot's ancestors (proc unused); -1: a process */
    int depth; /* tree view: its depth under its root */
} top_proc_line;

typedef struct top_model {
    size_t *procs; /* visible, sorted */
    size_t nprocs;
    top_proc_line *lines; /* the processes panel's rows: one per process and GPU */
    size_t nlines;
    unsigned char *keep;
    top_range ranges[VYRE_RANGE_COUNT];
    size_t nranges; /* used ones, first in ranges[] after sorting */
    top_kernel *kernels;
    size_t nkernels;
    int sampled;
    unsigned gpus[VYRE_GPU_MAX];
    unsigned ngpus;
} top_model;

/* Allocates a rows x cols grid of spaces; 0, or -1 out of memory. */
int top_grid_init(top_grid *g, int rows, int cols);
/* Writes text at (y, x) for at most w cells (clipped to the grid), padding
 * the rest with spaces when pad is set; text that goes on past the cells is
 * marked cut (TOP_ELLIPSIS). */
void top_grid_put(top_grid *g, int y, int x, int w, const char *text, int attr, int pad);
/* One full-width row of a panel (row 0 is the title). */
void top_grid_line(top_grid *g, top_rect r, int row, const char *text, int attr);
/* The column-title row of a table panel. */
void top_grid_colheads(top_grid *g, top_rect r, int line, const top_col *cols, const int *cw,
                       int nc, int w);
/* Rows of a table panel: how many data rows show, whether the column
 * header shows (*colhead); clamps and scrolls the panel's selection. */
int top_grid_table_rows(top_ui *ui, int panel, top_rect r, size_t n, int *colhead, int batch);
/* The attribute of a table row (the selection of the focused panel). */
int top_grid_row_attr(const top_ui *ui, int panel, int row, int batch);
/* A panel's title row, marked when focused. */
void top_grid_title(top_grid *g, const top_ui *ui, int panel, top_rect r, const char *text,
                    int batch);
/* w, at most the longest row formatted. */
int top_grid_clampw(int w);

/* The processes panel (view_procs.c): one row per process and GPU. */
void top_view_draw_procs(top_grid *g, const top_snapshot *s, top_ui *ui, const top_model *m,
                         top_rect r, int batch);
/* The help overlay (view_help.c), scrolled by ui->help_first where it does
 * not fit; sets ui->help_lines and ui->help_page. */
void top_view_draw_help(top_grid *g, top_ui *ui);
/* The tree view's rows (view_tree.c): the nprocs shown processes (procs,
 * in sort order) under their parents, ancestors included, depth first,
 * into out (cap rows at most); returns how many. */
size_t top_view_tree_lines(const top_snapshot *s, const size_t *procs, size_t nprocs,
                           top_proc_line *out, size_t cap);
/* The detail view of process ui->detail_pid (view_detail.c), over the
 * panels between the header and the footer. */
void top_view_draw_detail(top_grid *g, const top_snapshot *s, top_ui *ui);

#endif /* VYRE_TOP_VIEW_INT_H */
