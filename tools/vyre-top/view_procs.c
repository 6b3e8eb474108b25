/*
 * view_procs.c - see view_int.h: the processes panel. A process on several
 * GPUs is a row per GPU, as nvitop and nvidia-smi show it (issue 37): each
 * row with that GPU's memory and SM%, the process's own columns (user,
 * CPU%, RSS, rates, command) on its first row only.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tool_util.h"
#include "view_int.h"

/* The processes panel with no row to show: why. */
static void draw_no_procs(top_grid *g, const top_snapshot *s, const top_ui *ui, top_rect r)
{
    char buf[LINE_MAX_W];
    if (!s->tel_ok) {
        snprintf(buf, sizeof buf, "cannot list telemetry pages: %s", s->tel_msg);
        top_grid_line(g, r, 1, buf, TOP_A_WARN);
    } else if (s->nprocs) {
        snprintf(buf, sizeof buf, "no process matches '%s' (/ to change, Esc to clear)",
                 ui->filter);
        top_grid_line(g, r, 1, buf, TOP_A_DIM);
    } else {
        top_grid_line(g, r, 1,
                      "no GPU process and no instrumented process: run vyre-bench, or link "
                      "libvyrecore",
                      TOP_A_DIM);
        top_grid_line(g, r, 2,
                      "or run any CUDA program with CUDA_INJECTION64_PATH=.../libvyre-inject.so",
                      TOP_A_DIM);
        /* bounded: a screen line, cut to the panel's width */
        snprintf(buf, sizeof buf, "(telemetry pages are read from %.900s)", s->tel_dir);
        top_grid_line(g, r, 3, buf, TOP_A_DIM);
    }
}

/* The GPU, SM% and GPU MEM cells of one process on GPU slot (its
 * gpus[slot]; -1: the process's own figures, for one on no GPU). */
static void proc_gpu_cells(const top_proc *p, int slot, char *dev, char *sm, char *gm)
{
    int d = p->device;
    double u = p->sm_util_pct;
    int mv = p->gpu_mem_valid;
    uint64_t mb = p->gpu_mem_bytes;
    if (slot >= 0) {
        const vyre_gpu_proc_dev *x = &p->gpus[slot];
        d = x->device;
        u = x->util_valid ? (double)x->sm_util_pct : NAN;
        mv = x->mem_valid;
        mb = x->mem_bytes;
    }
    if (d >= 0)
        snprintf(dev, 16, "%d", d);
    else
        snprintf(dev, 16, "-");
    top_fmt_pct(u, sm, 16);
    top_fmt_bytes(mb, mv, gm, 16);
}

/* Row `slot` of a process (see top_proc_line) of the processes panel into buf
 * (the columns of draw_procs, nc of them, at widths cw). The process's own
 * columns (user, CPU%, RSS, rates, command) are on its first row only: a
 * later row is its share of another GPU. */
static void proc_row(const top_proc *p, const char *name, int slot, const top_col *cols,
                     const int *cw, int nc, int w, char *buf)
{
    char c_pid[16], c_dev[16], c_sm[16], c_gm[16], c_cpu[16], c_rss[16], c_l[16], c_gr[16], c_d[16],
        c_h[16], c_dh[16], c_dd[16], c_hit[16], c_sv[16];
    snprintf(c_pid, sizeof c_pid, "%d", (int)p->pid);
    proc_gpu_cells(p, slot, c_dev, c_sm, c_gm);
    if (slot > 0) {
        const char *cells[] = {c_pid, "", name, c_dev, c_sm, c_gm, "", "", "",
                               "",    "", "",   "",    "",   "",   "", ""};
        top_fmt_row(cols, cw, nc, cells, w, buf);
        return;
    }
    top_fmt_pct(p->cpu_pct, c_cpu, sizeof c_cpu);
    top_fmt_bytes(p->host.rss_bytes, p->host.rss_valid, c_rss, sizeof c_rss);
    top_fmt_rate(p->launches_s, c_l, sizeof c_l);
    top_fmt_rate(p->graphs_s, c_gr, sizeof c_gr);
    top_fmt_rate(p->dispatches_s, c_d, sizeof c_d);
    top_fmt_mbs(p->h2d_mb_s, c_h, sizeof c_h);
    top_fmt_mbs(p->d2h_mb_s, c_dh, sizeof c_dh);
    top_fmt_mbs(p->d2d_mb_s, c_dd, sizeof c_dd);
    top_fmt_pct(p->cache_hit_pct, c_hit, sizeof c_hit);
    top_fmt_secs(p->compile_saved_s, c_sv, sizeof c_sv);
    /* A page of an older layout (an older libvyrecore) may have coarse
     * quantiles: its name says which layout was read. */
    char c_name[LINE_MAX_W];
    if (p->layout_version && p->layout_version != VYRE_TELEMETRY_LAYOUT_VERSION)
        snprintf(c_name, sizeof c_name, "%s [v%u]", name, (unsigned)p->layout_version);
    else
        snprintf(c_name, sizeof c_name, "%s", name);
    /* A page written in another PID namespace: its pid is not one of
     * ours and /proc cannot tell its user, so the USER column, shown at
     * every width, says "foreign" instead. */
    const char *c_user = p->foreign ? "foreign" : p->host.uid_valid ? p->host.user : "-";
    const char *cells[] = {c_pid, c_user, c_name, c_dev, c_sm, c_gm,  c_cpu, c_rss,     c_l,
                           c_gr,  c_d,    c_h,    c_dh,  c_dd, c_hit, c_sv,  p->cmdline};
    top_fmt_row(cols, cw, nc, cells, w, buf);
}

/* The processes table: 80 columns show PID to GRAPH/s and USER; 100:
 * COMMAND and RSS too; 120: H2D, D2H, HIT% too; 160: everything. */
static const top_col g_cols[] = {
    {"PID", 7, 1, 0, 0},      {"USER", 8, 0, 2, 0},     {"NAME", 15, 0, 0, 0},
    {"GPU", 3, 1, 1, 0},      {"SM%", 5, 1, 0, 0},      {"GPU MEM", 7, 1, 0, 0},
    {"CPU%", 5, 1, 1, 0},     {"RSS", 5, 1, 3, 0},      {"LAUNCH/s", 8, 1, 0, 0},
    {"GRAPH/s", 7, 1, 1, 0},  {"DISP/s", 8, 1, 4, 0},   {"H2D MB/s", 8, 1, 3, 0},
    {"D2H MB/s", 8, 1, 3, 0}, {"D2D MB/s", 8, 1, 4, 0}, {"HIT%", 6, 1, 3, 0},
    {"SAVED", 6, 1, 5, 0},    {"COMMAND", 12, 0, 2, 1},
};
enum { NC = sizeof g_cols / sizeof g_cols[0] };
_Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");

/* The column of each process sort order (input.c's names: launches/s,
 * dispatches/s, h2d, d2h, gpu mem, hit%, pid, name, sm%, cpu%, graphs/s). */
static const int g_sort_col[] = {8, 10, 11, 12, 5, 14, 0, 2, 4, 6, 9};
#define NSORT ((int)(sizeof g_sort_col / sizeof g_sort_col[0]))

/* Widths: names and users whole where there is room; the command line
 * takes the rest. Sets which sort orders' columns show (ui->sort_shown). */
static void fit(const top_snapshot *s, const top_model *m, top_ui *ui, int w, int *cw)
{
    int want[NC] = {0};
    for (size_t i = 0; i < m->nlines; i++) {
        const top_proc_line *l = &m->lines[i];
        if (l->anc >= 0) { /* the tree view's ancestors: indented names */
            int al = (int)strlen(s->anc[l->anc].name) + 2 * l->depth;
            want[2] = al > want[2] ? al : want[2];
            continue;
        }
        const top_proc *p = &s->procs[l->proc];
        int nl = (int)strlen(p->name) + 2 * l->depth +
                 (p->layout_version && p->layout_version != VYRE_TELEMETRY_LAYOUT_VERSION ? 6 : 0);
        int ul = p->host.uid_valid ? (int)strlen(p->host.user) : 7;
        want[2] = nl > want[2] ? nl : want[2];
        want[1] = ul > want[1] ? ul : want[1];
    }
    top_cols_fit_want(g_cols, NC, w, want, cw);
    ui->sort_shown[TOP_P_PROC] = 0;
    for (int k = 0; k < NSORT; k++)
        if (cw[g_sort_col[k]] > 0)
            ui->sort_shown[TOP_P_PROC] |= 1u << k;
}

/* "launches/s", "launches/s reversed", "d2h (column hidden)". */
static void sort_text(const top_ui *ui, const int *cw, char *buf, size_t size)
{
    int k = ui->sort[TOP_P_PROC];
    int hidden = k >= 0 && k < NSORT && cw[g_sort_col[k]] == 0;
    snprintf(buf, size, "%s%s%s", top_sort_name(TOP_P_PROC, k),
             ui->reverse[TOP_P_PROC] ? " reversed" : "", hidden ? " (column hidden)" : "");
}

/* One row of the panel: a process's (see proc_row) or, in the tree view,
 * an ancestor's (its pid and name only); names indented by their depth. */
static void tree_row(const top_snapshot *s, const top_proc_line *l, const int *cw, int w, char *buf)
{
    char indent[2 * 32 + 8];
    int d = l->depth < 32 ? l->depth : 32;
    for (int i = 0; i < d; i++)
        memcpy(indent + 2 * i, i + 1 == d ? "`-" : "  ", 2);
    indent[2 * d] = '\0';
    if (l->anc >= 0) {
        const top_ancestor *a = &s->anc[l->anc];
        char c_pid[16], name[VYRE_PROC_COMM_MAX + sizeof indent];
        snprintf(c_pid, sizeof c_pid, "%d", (int)a->pid);
        snprintf(name, sizeof name, "%s%s", indent, a->name);
        const char *cells[] = {c_pid, "", name, "", "", "", "", "", "",
                               "",    "", "",   "", "", "", "", ""};
        top_fmt_row(g_cols, cw, NC, cells, w, buf);
        return;
    }
    /* The process itself, never a copy: a top_proc holds its range
     * histograms (over 100 KB), and a copy a row was most of a frame's
     * CPU time with 200 processes (perf_top_gpus). */
    const top_proc *p = &s->procs[l->proc];
    char name[sizeof p->name + sizeof indent];
    snprintf(name, sizeof name, "%s%s", indent, p->name);
    proc_row(p, name, l->slot, g_cols, cw, NC, w, buf);
}

void top_view_draw_procs(top_grid *g, const top_snapshot *s, top_ui *ui, const top_model *m,
                         top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[400], so[64];
    int w = top_grid_clampw(r.w);
    int cw[NC], colhead;
    fit(s, m, ui, w, cw);
    sort_text(ui, cw, so, sizeof so);
    char bad[160] = "";
    if (s->unreadable)
        snprintf(bad, sizeof bad, "  %zu page%s unreadable", s->unreadable,
                 s->unreadable == 1 ? "" : "s");
    else if (!s->tel_ok && s->nprocs)
        /* bounded: a screen line, cut to the panel's width */
        snprintf(bad, sizeof bad, "  telemetry pages not listed: %.120s", s->tel_msg);
    if (s->nprocs == m->nprocs)
        snprintf(t, sizeof t, "Processes (%zu)  sort: %s%s", s->nprocs, so, bad);
    else
        snprintf(t, sizeof t, "Processes (%zu of %zu, filter '%s')  sort: %s%s", m->nprocs,
                 s->nprocs, ui->filter, so, bad);
    top_grid_title(g, ui, TOP_P_PROC, r, t, batch);
    if (m->nprocs == 0) {
        ui->nrows[TOP_P_PROC] = 0;
        ui->sel[TOP_P_PROC] = ui->first[TOP_P_PROC] = 0;
        draw_no_procs(g, s, ui, r);
        return;
    }
    int vis = top_grid_table_rows(ui, TOP_P_PROC, r, m->nlines, &colhead, batch);
    {
        /* The row `k` acts on. */
        const top_proc_line *sl = &m->lines[ui->sel[TOP_P_PROC]];
        const top_proc *sp = &s->procs[sl->proc];
        ui->sel_pid = sl->anc >= 0 ? s->anc[sl->anc].pid : sp->pid;
        ui->sel_foreign = sl->anc < 0 && sp->foreign;
        ui->sel_start = sl->anc < 0 && sp->host.stat_valid ? sp->host.st.start_ticks : 0;
        snprintf(ui->sel_name, sizeof ui->sel_name, "%s",
                 sl->anc >= 0 ? s->anc[sl->anc].name : sp->name);
    }
    int line = 1;
    if (colhead)
        top_grid_colheads(g, r, line++, g_cols, cw, NC, w);
    for (int k = ui->first[TOP_P_PROC]; k < (int)m->nlines && k < ui->first[TOP_P_PROC] + vis;
         k++) {
        tree_row(s, &m->lines[k], cw, w, buf);
        top_grid_line(g, r, line++, buf, top_grid_row_attr(ui, TOP_P_PROC, k, batch));
    }
}
