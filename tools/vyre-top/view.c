/*
 * view.c - see view.h. Turns a snapshot into cells: filter and sort the
 * rows, ask the layout for rectangles, then write each panel's title,
 * column names and rows with the format functions. Nothing here does I/O.
 */
#include "view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "vyre/version.h"

#define LINE_MAX_W 1024 /* longest row we format; wider screens are blank beyond */

/* ---- grid --------------------------------------------------------------- */

void top_grid_release(top_grid *g)
{
    free(g->ch);
    free(g->at);
    g->ch = NULL;
    g->at = NULL;
    g->rows = g->cols = 0;
}

static int grid_init(top_grid *g, int rows, int cols)
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
static void put(top_grid *g, int y, int x, int w, const char *text, int attr, int pad)
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
    for (; pad && i < w; i++) {
        c[i] = ' ';
        a[i] = (unsigned char)attr;
    }
}

/* One full-width row of a panel (row 0 is the title). */
static void panel_line(top_grid *g, top_rect r, int row, const char *text, int attr)
{
    if (row < 0 || row >= r.h)
        return;
    put(g, r.y + row, r.x, r.w, text, attr, 1);
}

/* ---- model -------------------------------------------------------------- */

int top_proc_matches(const top_proc *p, const char *filter)
{
    if (!filter || !filter[0])
        return 1;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)p->pid);
    return strcasestr(p->name, filter) || strcasestr(p->cmdline, filter) || strstr(pid, filter);
}

/* Unknown (NAN) sorts last; larger first. */
static int cmp_desc(double a, double b)
{
    int na = isnan(a), nb = isnan(b);
    if (na || nb)
        return na - nb;
    return (a < b) - (a > b);
}

static double proc_key(const top_proc *p, int sort)
{
    switch (sort) {
    case 0:
        return p->launches_s;
    case 1:
        return p->dispatches_s;
    case 2:
        return p->h2d_mb_s;
    case 3:
        return p->d2h_mb_s;
    case 4:
        return p->gpu_mem_valid ? (double)p->gpu_mem_bytes : NAN;
    case 5:
        return p->cache_hit_pct;
    case 8:
        return p->sm_util_pct;
    case 9:
        return p->cpu_pct;
    case 10:
        return p->graphs_s;
    default:
        return NAN;
    }
}

static int cmp_proc(const void *a, const void *b, void *ctx)
{
    const top_snapshot *s = ((const void *const *)ctx)[0];
    int sort = *(const int *)((const void *const *)ctx)[1];
    const top_proc *p = &s->procs[*(const size_t *)a], *q = &s->procs[*(const size_t *)b];
    int c = 0;
    if (sort == 7)
        c = strcmp(p->name, q->name);
    else if (sort != 6)
        c = cmp_desc(proc_key(p, sort), proc_key(q, sort));
    if (c == 0)
        c = (p->pid > q->pid) - (p->pid < q->pid);
    return c;
}

size_t top_view_procs(const top_snapshot *s, const top_ui *ui, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (top_proc_matches(&s->procs[i], ui->filter))
            idx[n++] = i;
    int sort = ui->sort[TOP_P_PROC];
    const void *ctx[2] = {s, &sort};
    qsort_r(idx, n, sizeof *idx, cmp_proc, (void *)ctx);
    return n;
}

static int cmp_range(const void *a, const void *b, void *ctx)
{
    int sort = *(const int *)ctx;
    const top_range *p = a, *q = b;
    int c = 0;
    switch (sort) {
    case 0:
        c = cmp_desc(p->count_s, q->count_s);
        break;
    case 1:
        c = cmp_desc((double)p->p99_ns, (double)q->p99_ns);
        break;
    case 2:
        c = cmp_desc((double)p->p50_ns, (double)q->p50_ns);
        break;
    case 3:
        c = cmp_desc((double)p->max_ns, (double)q->max_ns);
        break;
    default:
        c = strcmp(p->name, q->name);
        break;
    }
    return c ? c : (p->id > q->id) - (p->id < q->id);
}

static int cmp_kernel(const void *a, const void *b, void *ctx)
{
    int sort = *(const int *)ctx;
    const top_kernel *p = a, *q = b;
    int c = 0;
    switch (sort) {
    case 0:
        c = cmp_desc(p->share_pct, q->share_pct);
        break;
    case 1:
        c = cmp_desc(p->calls_s, q->calls_s);
        break;
    case 2:
        c = cmp_desc(p->mean_ns, q->mean_ns);
        break;
    case 3:
        c = cmp_desc((double)p->max_ns, (double)q->max_ns);
        break;
    default:
        break;
    }
    return c ? c : strcmp(p->name, q->name);
}

static double gpu_util(const vyre_gpu_info *g)
{
    return vyre_gpu_field_valid(g, VYRE_GPU_F_UTIL) ? (double)g->util_gpu_pct : NAN;
}

static double gpu_mem_pct(const vyre_gpu_info *g)
{
    if (!vyre_gpu_field_valid(g, VYRE_GPU_F_MEMORY) || !g->mem_total_bytes)
        return NAN;
    return 100.0 * (double)g->mem_used_bytes / (double)g->mem_total_bytes;
}

static int cmp_gpu(const void *a, const void *b, void *ctx)
{
    const top_snapshot *s = ((const void *const *)ctx)[0];
    int sort = *(const int *)((const void *const *)ctx)[1];
    const vyre_gpu_info *p = &s->gpu.gpus[*(const unsigned *)a];
    const vyre_gpu_info *q = &s->gpu.gpus[*(const unsigned *)b];
    int c = 0;
    if (sort == 1)
        c = cmp_desc(gpu_util(p), gpu_util(q));
    else if (sort == 2)
        c = cmp_desc(gpu_mem_pct(p), gpu_mem_pct(q));
    return c ? c : (p->index > q->index) - (p->index < q->index);
}

typedef struct model {
    size_t *procs; /* visible, sorted */
    size_t nprocs;
    unsigned char *keep;
    top_range ranges[VYRE_RANGE_COUNT];
    size_t nranges; /* used ones, first in ranges[] after sorting */
    top_kernel *kernels;
    size_t nkernels;
    int sampled;
    unsigned gpus[VYRE_GPU_MAX];
    unsigned ngpus;
} model;

static int model_build(const top_snapshot *s, const top_ui *ui, model *m)
{
    memset(m, 0, sizeof *m);
    size_t n = s->nprocs ? s->nprocs : 1;
    m->procs = malloc(n * sizeof *m->procs);
    m->keep = calloc(n, 1);
    if (!m->procs || !m->keep)
        return -1;
    m->nprocs = top_view_procs(s, ui, m->procs);
    for (size_t i = 0; i < m->nprocs; i++)
        m->keep[m->procs[i]] = 1;

    top_range all[VYRE_RANGE_COUNT];
    top_aggregate_ranges(s, m->keep, all);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++)
        if (all[r].count > 0)
            m->ranges[m->nranges++] = all[r];
    int rs = ui->sort[TOP_P_RANGE];
    qsort_r(m->ranges, m->nranges, sizeof m->ranges[0], cmp_range, &rs);

    m->nkernels = top_aggregate_kernels(s, m->keep, &m->kernels, &m->sampled);
    int ks = ui->sort[TOP_P_KERNEL];
    if (m->nkernels)
        qsort_r(m->kernels, m->nkernels, sizeof m->kernels[0], cmp_kernel, &ks);

    if (s->gpu_ok) {
        for (unsigned i = 0; i < s->gpu.ngpus && i < VYRE_GPU_MAX; i++)
            m->gpus[m->ngpus++] = i;
        int gs = ui->sort[TOP_P_GPU];
        const void *ctx[2] = {s, &gs};
        qsort_r(m->gpus, m->ngpus, sizeof m->gpus[0], cmp_gpu, (void *)ctx);
    }
    return 0;
}

static void model_release(model *m)
{
    free(m->procs);
    free(m->keep);
    free(m->kernels);
}

/* ---- panels ------------------------------------------------------------- */

/* Rows of a table panel: how many data rows show, whether the column
 * header shows; clamps and scrolls the panel's selection. */
/* Columns a table panel may have (the processes panel has the most). */
#define TOP_MAX_COLS 20

/* The column-title row of a table panel. */
static void column_heads(top_grid *g, top_rect r, int line, const top_col *cols, const int *cw,
                         int nc, int w)
{
    const char *heads[TOP_MAX_COLS];
    char buf[LINE_MAX_W];
    for (int i = 0; i < nc && i < TOP_MAX_COLS; i++)
        heads[i] = cols[i].title;
    top_fmt_row(cols, cw, nc, heads, w, buf);
    panel_line(g, r, line, buf, TOP_A_COLHEAD);
}

static int table_rows(top_ui *ui, int panel, top_rect r, size_t n, int *colhead, int batch)
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

static int row_attr(const top_ui *ui, int panel, int row, int batch)
{
    return !batch && ui->focus == panel && ui->sel[panel] == row ? TOP_A_SEL : TOP_A_NORMAL;
}

static void title(top_grid *g, const top_ui *ui, int panel, top_rect r, const char *text, int batch)
{
    char buf[LINE_MAX_W];
    snprintf(buf, sizeof buf, "%s %s", !batch && ui->focus == panel ? ">" : " ", text);
    panel_line(g, r, 0, buf, !batch && ui->focus == panel ? TOP_A_TITLE_FOCUS : TOP_A_TITLE);
}

static int clampw(int w)
{
    return w < LINE_MAX_W - 1 ? w : LINE_MAX_W - 1;
}

/* One GPU's history row: utilisation, memory use and power draw (of the
 * power limit) over the last samples, newest right, as three sparklines
 * side by side; below 32 columns only utilisation. */
static void draw_history(top_grid *g, const top_gpu_hist *h, int y, int x, int w)
{
    static const char *const labels[] = {"    util ", "  mem ", "  power "};
    uint8_t (*const get[])(const top_gpu_hist *, unsigned) = {top_gpu_hist_util, top_gpu_hist_mem,
                                                              top_gpu_hist_power};
    int nparts = w >= 32 ? 3 : 1, lab = 0;
    for (int i = 0; i < nparts; i++)
        lab += (int)strlen(labels[i]);
    int sw = (w - lab) / nparts;
    if (sw < 1)
        sw = 1;
    for (int i = 0; i < nparts && x < g->cols; i++) {
        int lw = (int)strlen(labels[i]);
        if (lw > w)
            lw = w;
        put(g, y, x, lw, labels[i], TOP_A_DIM, 1);
        x += lw;
        w -= lw;
        if (w <= 0)
            break;
        uint8_t samples[TOP_GPU_HIST];
        for (unsigned k = 0; k < h->len; k++)
            samples[k] = get[i](h, k);
        char sp[LINE_MAX_W];
        int this_w = i == nparts - 1 ? w : (sw < w ? sw : w);
        top_fmt_spark(samples, h->len, this_w, sp);
        put(g, y, x, this_w, sp, TOP_A_SPARK, 1);
        x += this_w;
        w -= this_w;
    }
}

static void draw_gpus(top_grid *g, const top_snapshot *s, top_ui *ui, const model *m, top_rect r,
                      int batch)
{
    char buf[LINE_MAX_W], t[160];
    int w = clampw(r.w);
    if (!s->gpu_ok || m->ngpus == 0) {
        title(g, ui, TOP_P_GPU, r, "GPUs", batch);
        if (!s->gpu_ok)
            snprintf(buf, sizeof buf, "no NVIDIA GPU monitor: %s", s->gpu_msg);
        else
            snprintf(buf, sizeof buf, "NVML sees no GPU (driver %s)",
                     s->gpu.driver_version[0] ? s->gpu.driver_version : "-");
        panel_line(g, r, 1, buf, TOP_A_DIM);
        if (!s->gpu_ok && s->gpu_hint[0]) {
            snprintf(buf, sizeof buf, "hint: %s", s->gpu_hint);
            panel_line(g, r, 2, buf, TOP_A_DIM);
        }
        ui->nrows[TOP_P_GPU] = 0;
        return;
    }
    snprintf(t, sizeof t, "GPUs (%u%s)  driver %s%s%s", s->gpu.ngpus_total,
             s->gpu.gpus_truncated ? ", some not shown" : "",
             s->gpu.driver_version[0] ? s->gpu.driver_version : "-",
             ui->sort[TOP_P_GPU] ? "  sort: " : "",
             ui->sort[TOP_P_GPU] ? top_sort_name(TOP_P_GPU, ui->sort[TOP_P_GPU]) : "");
    title(g, ui, TOP_P_GPU, r, t, batch);
    int avail = r.h - 1;
    int per = avail >= 2 * (int)m->ngpus ? 2 : 1; /* stats line + history line */
    int vis = avail / per;
    ui->nrows[TOP_P_GPU] = (int)m->ngpus;
    ui->page[TOP_P_GPU] = vis;
    if (ui->sel[TOP_P_GPU] >= (int)m->ngpus)
        ui->sel[TOP_P_GPU] = (int)m->ngpus - 1;
    if (ui->sel[TOP_P_GPU] < 0)
        ui->sel[TOP_P_GPU] = 0;
    int first = ui->sel[TOP_P_GPU] >= vis ? ui->sel[TOP_P_GPU] - vis + 1 : 0;
    ui->first[TOP_P_GPU] = first;

    static const top_col cols[] = {
        {"GPU", 3, 1, 0, 0},  {"NAME", 12, 0, 1, 1},  {"UTIL", 12, 0, 0, 0},
        {"MEM", 22, 0, 1, 0}, {"TEMP", 4, 1, 2, 0},   {"POWER", 10, 1, 2, 0},
        {"SM", 7, 1, 3, 0},   {"MEMCLK", 7, 1, 4, 0}, {"THROTTLE", 12, 0, 5, 0},
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    _Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");
    int cw[NC];
    top_cols_fit(cols, NC, w, cw);
    int line = 1;
    for (int k = first; k < (int)m->ngpus && line < r.h; k++) {
        const vyre_gpu_info *gi = &s->gpu.gpus[m->gpus[k]];
        char c_idx[8], c_util[64], c_mem[96], c_temp[16], c_pow[32], c_sm[16], c_mc[16], c_th[96];
        snprintf(c_idx, sizeof c_idx, "%d", gi->index);
        int bw = cw[2] > 0 && cw[2] < 63 ? cw[2] : 12;
        top_fmt_bar(gpu_util(gi), bw, c_util);
        char used[16], total[16], bar[64];
        int memv = vyre_gpu_field_valid(gi, VYRE_GPU_F_MEMORY);
        top_fmt_bytes(gi->mem_used_bytes, memv, used, sizeof used);
        top_fmt_bytes(gi->mem_total_bytes, memv, total, sizeof total);
        int mbw = cw[3] > 12 ? cw[3] - 12 : 6;
        if (mbw > 60)
            mbw = 60;
        top_fmt_bar(gpu_mem_pct(gi), mbw, bar);
        snprintf(c_mem, sizeof c_mem, "%s %5s/%-5s", bar, used, total);
        if (vyre_gpu_field_valid(gi, VYRE_GPU_F_TEMPERATURE))
            snprintf(c_temp, sizeof c_temp, "%dC", gi->temperature_c);
        else
            snprintf(c_temp, sizeof c_temp, "-");
        char pw[12] = "-", pl[12] = "-";
        if (vyre_gpu_field_valid(gi, VYRE_GPU_F_POWER))
            snprintf(pw, sizeof pw, "%u", (gi->power_mw + 500) / 1000);
        if (vyre_gpu_field_valid(gi, VYRE_GPU_F_POWER_LIMIT))
            snprintf(pl, sizeof pl, "%u", (gi->power_limit_mw + 500) / 1000);
        snprintf(c_pow, sizeof c_pow, "%s/%sW", pw, pl);
        if (vyre_gpu_field_valid(gi, VYRE_GPU_F_SM_CLOCK))
            snprintf(c_sm, sizeof c_sm, "%uMHz", gi->sm_clock_mhz);
        else
            snprintf(c_sm, sizeof c_sm, "-");
        if (vyre_gpu_field_valid(gi, VYRE_GPU_F_MEM_CLOCK))
            snprintf(c_mc, sizeof c_mc, "%uMHz", gi->mem_clock_mhz);
        else
            snprintf(c_mc, sizeof c_mc, "-");
        snprintf(c_th, sizeof c_th, "%s",
                 vyre_gpu_field_valid(gi, VYRE_GPU_F_THROTTLE) ? gi->throttle_text : "-");
        const char *cells[NC] = {c_idx,  vyre_gpu_field_valid(gi, VYRE_GPU_F_NAME) ? gi->name : "-",
                                 c_util, c_mem,
                                 c_temp, c_pow,
                                 c_sm,   c_mc,
                                 c_th};
        top_fmt_row(cols, cw, NC, cells, w, buf);
        panel_line(g, r, line++, buf, row_attr(ui, TOP_P_GPU, k, batch));
        if (per == 2 && line < r.h) {
            draw_history(g, &s->gpu_hist[m->gpus[k]], r.y + line, r.x, w);
            line++;
        }
    }
}

/* The processes panel with no row to show: why. */
static void draw_no_procs(top_grid *g, const top_snapshot *s, const top_ui *ui, top_rect r)
{
    char buf[LINE_MAX_W];
    if (!s->tel_ok) {
        snprintf(buf, sizeof buf, "cannot list telemetry pages: %s", s->tel_msg);
        panel_line(g, r, 1, buf, TOP_A_WARN);
    } else if (s->nprocs) {
        snprintf(buf, sizeof buf, "no process matches '%s' (/ to change, Esc to clear)",
                 ui->filter);
        panel_line(g, r, 1, buf, TOP_A_DIM);
    } else {
        panel_line(g, r, 1,
                   "no GPU process and no instrumented process: run vyre-bench, or link "
                   "libvyrecore",
                   TOP_A_DIM);
        panel_line(g, r, 2,
                   "or run any CUDA program with CUDA_INJECTION64_PATH=.../libvyre-inject.so",
                   TOP_A_DIM);
        /* bounded: a screen line, cut to the panel's width */
        snprintf(buf, sizeof buf, "(telemetry pages are read from %.900s)", s->tel_dir);
        panel_line(g, r, 3, buf, TOP_A_DIM);
    }
}

/* One process's row of the processes panel into buf (the columns of
 * draw_procs, nc of them, at widths cw). */
static void proc_row(const top_proc *p, const top_col *cols, const int *cw, int nc, int w,
                     char *buf)
{
    char c_pid[16], c_dev[16], c_sm[16], c_gm[16], c_cpu[16], c_rss[16], c_l[16], c_gr[16], c_d[16],
        c_h[16], c_dh[16], c_dd[16], c_hit[16], c_sv[16];
    snprintf(c_pid, sizeof c_pid, "%d", (int)p->pid);
    if (p->device >= 0)
        snprintf(c_dev, sizeof c_dev, "%d", p->device);
    else
        snprintf(c_dev, sizeof c_dev, "-");
    top_fmt_pct(p->sm_util_pct, c_sm, sizeof c_sm);
    top_fmt_bytes(p->gpu_mem_bytes, p->gpu_mem_valid, c_gm, sizeof c_gm);
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
    char c_name[sizeof p->name + 16];
    if (p->layout_version && p->layout_version != VYRE_TELEMETRY_LAYOUT_VERSION)
        snprintf(c_name, sizeof c_name, "%s [v%u]", p->name, (unsigned)p->layout_version);
    else
        snprintf(c_name, sizeof c_name, "%s", p->name);
    /* A page written in another PID namespace: its pid is not one of
     * ours and /proc cannot tell its user, so the USER column, shown at
     * every width, says "foreign" instead. */
    const char *c_user = p->foreign ? "foreign" : p->host.uid_valid ? p->host.user : "-";
    const char *cells[] = {c_pid, c_user, c_name, c_dev, c_sm, c_gm,  c_cpu, c_rss,     c_l,
                           c_gr,  c_d,    c_h,    c_dh,  c_dd, c_hit, c_sv,  p->cmdline};
    top_fmt_row(cols, cw, nc, cells, w, buf);
}

static void draw_procs(top_grid *g, const top_snapshot *s, top_ui *ui, const model *m, top_rect r,
                       int batch)
{
    char buf[LINE_MAX_W], t[400];
    int w = clampw(r.w);
    char bad[160] = "";
    if (s->unreadable)
        snprintf(bad, sizeof bad, "  %zu page%s unreadable", s->unreadable,
                 s->unreadable == 1 ? "" : "s");
    else if (!s->tel_ok && s->nprocs)
        /* bounded: a screen line, cut to the panel's width */
        snprintf(bad, sizeof bad, "  telemetry pages not listed: %.120s", s->tel_msg);
    if (s->nprocs == m->nprocs)
        snprintf(t, sizeof t, "Processes (%zu)  sort: %s%s", s->nprocs,
                 top_sort_name(TOP_P_PROC, ui->sort[TOP_P_PROC]), bad);
    else
        snprintf(t, sizeof t, "Processes (%zu of %zu, filter '%s')  sort: %s%s", m->nprocs,
                 s->nprocs, ui->filter, top_sort_name(TOP_P_PROC, ui->sort[TOP_P_PROC]), bad);
    title(g, ui, TOP_P_PROC, r, t, batch);
    if (m->nprocs == 0) {
        ui->nrows[TOP_P_PROC] = 0;
        ui->sel[TOP_P_PROC] = ui->first[TOP_P_PROC] = 0;
        draw_no_procs(g, s, ui, r);
        return;
    }
    static const top_col cols[] = {
        /* 80 columns: PID to GRAPH/s and USER; 100: COMMAND and RSS too;
         * 120: H2D, D2H, HIT% too; 160: everything. */
        {"PID", 7, 1, 0, 0},      {"USER", 8, 0, 2, 0},     {"NAME", 15, 0, 0, 0},
        {"GPU", 3, 1, 1, 0},      {"SM%", 5, 1, 0, 0},      {"GPU MEM", 7, 1, 0, 0},
        {"CPU%", 5, 1, 1, 0},     {"RSS", 5, 1, 3, 0},      {"LAUNCH/s", 8, 1, 0, 0},
        {"GRAPH/s", 7, 1, 1, 0},  {"DISP/s", 8, 1, 4, 0},   {"H2D MB/s", 8, 1, 3, 0},
        {"D2H MB/s", 8, 1, 3, 0}, {"D2D MB/s", 8, 1, 4, 0}, {"HIT%", 6, 1, 3, 0},
        {"SAVED", 6, 1, 5, 0},    {"COMMAND", 12, 0, 2, 1},
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    _Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");
    int cw[NC], colhead;
    top_cols_fit(cols, NC, w, cw);
    int vis = table_rows(ui, TOP_P_PROC, r, m->nprocs, &colhead, batch);
    {
        /* The row `k` acts on. */
        const top_proc *sp = &s->procs[m->procs[ui->sel[TOP_P_PROC]]];
        ui->sel_pid = sp->pid;
        ui->sel_foreign = sp->foreign;
        ui->sel_start = sp->host.stat_valid ? sp->host.st.start_ticks : 0;
        snprintf(ui->sel_name, sizeof ui->sel_name, "%s", sp->name);
    }
    int line = 1;
    if (colhead)
        column_heads(g, r, line++, cols, cw, NC, w);
    for (int k = ui->first[TOP_P_PROC]; k < (int)m->nprocs && k < ui->first[TOP_P_PROC] + vis;
         k++) {
        proc_row(&s->procs[m->procs[k]], cols, cw, NC, w, buf);
        panel_line(g, r, line++, buf, row_attr(ui, TOP_P_PROC, k, batch));
    }
}

static void draw_ranges(top_grid *g, const top_snapshot *s, top_ui *ui, const model *m, top_rect r,
                        int batch)
{
    char buf[LINE_MAX_W], t[160];
    int w = clampw(r.w);
    snprintf(t, sizeof t, "NVTX ranges  sort: %s",
             top_sort_name(TOP_P_RANGE, ui->sort[TOP_P_RANGE]));
    title(g, ui, TOP_P_RANGE, r, t, batch);
    (void)s;
    if (m->nranges == 0) {
        ui->nrows[TOP_P_RANGE] = 0;
        /* With a filter, the ranges are those of the matching processes:
         * "recorded yet" would send the user looking at the program. */
        if (ui->filter[0])
            snprintf(buf, sizeof buf, "no NVTX ranges in the processes matching '%s'", ui->filter);
        else
            snprintf(buf, sizeof buf, "no NVTX ranges recorded yet");
        panel_line(g, r, 1, buf, TOP_A_DIM);
        return;
    }
    static const top_col cols[] = {
        {"RANGE", 20, 0, 0, 1}, {"COUNT/s", 8, 1, 0, 0}, {"P50", 8, 1, 1, 0},
        {"P99", 8, 1, 0, 0},    {"MAX", 8, 1, 2, 0},     {"TOTAL", 9, 1, 3, 0},
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    _Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");
    int cw[NC], colhead;
    top_cols_fit(cols, NC, w, cw);
    int vis = table_rows(ui, TOP_P_RANGE, r, m->nranges, &colhead, batch);
    int line = 1;
    if (colhead)
        column_heads(g, r, line++, cols, cw, NC, w);
    for (int k = ui->first[TOP_P_RANGE]; k < (int)m->nranges && k < ui->first[TOP_P_RANGE] + vis;
         k++) {
        const top_range *x = &m->ranges[k];
        char c_n[16], c_50[16], c_99[16], c_max[16], c_tot[24];
        top_fmt_rate(x->count_s, c_n, sizeof c_n);
        top_fmt_ns((double)x->p50_ns, x->count > 0, c_50, sizeof c_50);
        top_fmt_ns((double)x->p99_ns, x->count > 0, c_99, sizeof c_99);
        top_fmt_ns((double)x->max_ns, x->count > 0, c_max, sizeof c_max);
        snprintf(c_tot, sizeof c_tot, "%llu", (unsigned long long)x->count);
        const char *cells[NC] = {x->name, c_n, c_50, c_99, c_max, c_tot};
        top_fmt_row(cols, cw, NC, cells, w, buf);
        panel_line(g, r, line++, buf, row_attr(ui, TOP_P_RANGE, k, batch));
    }
}

static void draw_kernels(top_grid *g, const top_snapshot *s, top_ui *ui, const model *m, top_rect r,
                         int batch)
{
    char buf[LINE_MAX_W], t[160], iv[16];
    int w = clampw(r.w);
    top_fmt_secs(s->interval_s, iv, sizeof iv);
    snprintf(t, sizeof t, "Kernels (last %s%s)  sort: %s", iv,
             m->sampled ? ", ring overflowed: ~ estimated" : "",
             top_sort_name(TOP_P_KERNEL, ui->sort[TOP_P_KERNEL]));
    title(g, ui, TOP_P_KERNEL, r, t, batch);
    if (m->nkernels == 0) {
        ui->nrows[TOP_P_KERNEL] = 0;
        char msg[LINE_MAX_W];
        if (isnan(s->interval_s))
            snprintf(msg, sizeof msg, "waiting for a second sample");
        else if (ui->filter[0])
            snprintf(msg, sizeof msg, "no kernel records in the processes matching '%s'",
                     ui->filter);
        else
            snprintf(msg, sizeof msg, "no kernel records in the last interval");
        panel_line(g, r, 1, msg, TOP_A_DIM);
        return;
    }
    static const top_col cols[] = {
        {"KERNEL", 16, 0, 0, 1}, {"CALLS/s", 8, 1, 0, 0}, {"GPU%", 6, 1, 0, 0},
        {"MEAN", 8, 1, 1, 0},    {"MAX", 8, 1, 2, 0},     {"GRID/BLOCK", 14, 1, 3, 0},
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    _Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");
    int cw[NC], colhead;
    top_cols_fit(cols, NC, w, cw);
    int vis = table_rows(ui, TOP_P_KERNEL, r, m->nkernels, &colhead, batch);
    int line = 1;
    if (colhead)
        column_heads(g, r, line++, cols, cw, NC, w);
    for (int k = ui->first[TOP_P_KERNEL]; k < (int)m->nkernels && k < ui->first[TOP_P_KERNEL] + vis;
         k++) {
        const top_kernel *x = &m->kernels[k];
        char c_r[16], c_c[20], c_sh[16], c_mean[16], c_max[16], c_dim[64];
        top_fmt_rate(x->calls_s, c_r, sizeof c_r);
        /* Scaled up from what an overflowed ring kept: an estimate. */
        snprintf(c_c, sizeof c_c, "%s%s", x->estimated && !isnan(x->calls_s) ? "~" : "", c_r);
        top_fmt_pct(x->share_pct, c_sh, sizeof c_sh);
        top_fmt_ns(x->mean_ns, !isnan(x->mean_ns), c_mean, sizeof c_mean);
        top_fmt_ns((double)x->max_ns, x->calls > 0, c_max, sizeof c_max);
        top_fmt_dims(x->grid, x->block, c_dim, sizeof c_dim);
        const char *cells[NC] = {x->name[0] ? x->name : "?", c_c, c_sh, c_mean, c_max, c_dim};
        top_fmt_row(cols, cw, NC, cells, w, buf);
        panel_line(g, r, line++, buf, row_attr(ui, TOP_P_KERNEL, k, batch));
    }
}

/* The rows of the caches' sizes from row line (one per cache, the warning
 * colour on one over its limit or on a filesystem 90% full); returns the
 * next row. */
static int draw_usage(top_grid *g, const top_snapshot *s, top_rect r, int line)
{
    if (!s->usage_on)
        return line;
    if (!s->usage.rounds) {
        panel_line(g, r, line, "cache sizes: measuring (vyre, cuda_jit, triton, inductor)",
                   TOP_A_DIM);
        return line + 1;
    }
    char buf[LINE_MAX_W];
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        int warn = top_fmt_usage(&s->usage.c[i], buf, sizeof buf);
        panel_line(g, r, line++, buf, warn ? TOP_A_WARN : TOP_A_NORMAL);
    }
    return line;
}

/* Rows the cache sizes take (draw_usage). */
static int usage_rows(const top_snapshot *s)
{
    return !s->usage_on ? 0 : s->usage.rounds ? VYRE_USAGE_N_CACHES : 1;
}

static void cache_title(const top_snapshot *s, char *t, size_t size)
{
    if (!s->usage_on) {
        snprintf(t, size, "Pipeline cache");
        return;
    }
    char every[16], age[16];
    top_fmt_secs(s->usage_every_s, every, sizeof every);
    top_fmt_secs(s->usage_age_s, age, sizeof age);
    snprintf(t, size, "Pipeline cache; cache sizes every %s%s%s%s", every,
             isnan(s->usage_age_s) ? "" : ", ", isnan(s->usage_age_s) ? "" : age,
             isnan(s->usage_age_s) ? "" : " ago");
}

/* The pipeline cache's state when it is not readable: one row; 0 when OK. */
static int cache_state_row(top_grid *g, const top_snapshot *s, top_rect r)
{
    char buf[LINE_MAX_W];
    switch (s->cache_state) {
    case TOP_CACHE_OK:
        return 0;
    case TOP_CACHE_MISSING:
        /* bounded: a screen line, cut to the panel's width */
        snprintf(buf, sizeof buf, "no pipeline cache at %.900s yet", s->cache_root);
        panel_line(g, r, 1, buf, TOP_A_DIM);
        return 1;
    case TOP_CACHE_PENDING:
        panel_line(g, r, 1, "not read yet", TOP_A_DIM);
        return 1;
    default:
        snprintf(buf, sizeof buf, "cannot read the pipeline cache: %s", s->cache_msg);
        panel_line(g, r, 1, buf, TOP_A_WARN);
        return 1;
    }
}

static void draw_remotes(top_grid *g, const top_snapshot *s, top_rect r, int line)
{
    char buf[LINE_MAX_W];
    for (size_t i = 0; i < s->nremotes; i++) {
        const vyre_remote_stats *st = &s->remotes[i].st;
        char rd[16], wr[16];
        top_fmt_bytes(st->bytes_read, 1, rd, sizeof rd);
        top_fmt_bytes(st->bytes_written, 1, wr, sizeof wr);
        uint64_t errors = st->errors + st->put_errors;
        snprintf(buf, sizeof buf,
                 /* bounded: a screen line, cut to the panel's width */
                 "remote %.500s%s  hits %llu  misses %llu  errors %llu  rejected %llu  "
                 "read %s  written %s",
                 s->remotes[i].url, s->remotes[i].read_only ? " (ro)" : "",
                 (unsigned long long)st->hits, (unsigned long long)st->misses,
                 (unsigned long long)errors, (unsigned long long)st->rejected, rd, wr);
        panel_line(g, r, line++, buf, errors || st->rejected ? TOP_A_WARN : TOP_A_NORMAL);
    }
}

/* The pipeline cache's figures, then the four caches' sizes (where a full
 * filesystem shows), then quarantine, root and remote stores. */
static void draw_cache(top_grid *g, const top_snapshot *s, top_ui *ui, top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[160];
    cache_title(s, t, sizeof t);
    title(g, ui, TOP_P_CACHE, r, t, batch);
    ui->nrows[TOP_P_CACHE] = 0;
    if (cache_state_row(g, s, r)) {
        draw_usage(g, s, r, 2);
        return;
    }
    const vyre_cache_stats *c = &s->cache;
    char size[16], hit[16], saved[16], qb[16];
    top_fmt_bytes(c->bytes, 1, size, sizeof size);
    uint64_t lookups = c->hits + c->misses;
    top_fmt_pct(lookups ? 100.0 * (double)c->hits / (double)lookups : NAN, hit, sizeof hit);
    top_fmt_secs((double)c->compile_ns_saved / 1e9, saved, sizeof saved);
    top_fmt_bytes(c->quarantine_bytes, 1, qb, sizeof qb);
    snprintf(buf, sizeof buf,
             "entries %llu  size %s  hit rate %s (%llu hits, %llu misses)  "
             "compile saved %s",
             (unsigned long long)c->entries, size, hit, (unsigned long long)c->hits,
             (unsigned long long)c->misses, saved);
    panel_line(g, r, 1, buf, TOP_A_NORMAL);
    int line = draw_usage(g, s, r, 2);
    snprintf(buf, sizeof buf, "quarantined %llu (%s)  tmp %llu  debris %llu%s",
             (unsigned long long)c->quarantined, qb, (unsigned long long)c->tmp_files,
             (unsigned long long)c->debris,
             c->debris || c->quarantined ? "  (vyre-cachectl verify --repair)" : "");
    panel_line(g, r, line++, buf, c->debris || c->quarantined ? TOP_A_WARN : TOP_A_NORMAL);
    /* bounded: a screen line, cut to the panel's width */
    snprintf(buf, sizeof buf, "root %.900s", s->cache_root);
    panel_line(g, r, line++, buf, TOP_A_DIM);
    draw_remotes(g, s, r, line);
}

static void draw_header(top_grid *g, const top_snapshot *s, const top_ui *ui, const model *m,
                        top_rect r)
{
    if (r.h <= 0)
        return;
    char buf[LINE_MAX_W], clock[16] = "--:--:--", iv[16];
    time_t now = (time_t)s->unix_s;
    struct tm tm;
    if (s->unix_s > 0 && localtime_r(&now, &tm))
        strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    top_fmt_secs(ui->delay_s, iv, sizeof iv);
    snprintf(buf, sizeof buf, "vyre-top %s - %s  refresh %s  %zu process%s  %u GPU%s%s%s%s",
             vyre_version(), clock, iv, m->nprocs, m->nprocs == 1 ? "" : "es",
             s->gpu_ok ? s->gpu.ngpus : 0, s->gpu_ok && s->gpu.ngpus == 1 ? "" : "s",
             ui->paused ? "  [PAUSED]" : "", ui->filter[0] ? "  filter: " : "", ui->filter);
    put(g, r.y, r.x, r.w, buf, TOP_A_HEADER, 1);
}

static void draw_footer(top_grid *g, const top_ui *ui, top_rect r)
{
    if (r.h <= 0)
        return;
    char buf[LINE_MAX_W], iv[16];
    int attr = TOP_A_FOOTER;
    if (ui->editing) {
        snprintf(buf, sizeof buf, "Filter: %s_   (Enter apply, Esc cancel)", ui->edit);
    } else if (ui->confirm_kill) {
        snprintf(buf, sizeof buf, "Send SIGTERM to %d (%s)? y/N", (int)ui->kill_pid, ui->kill_name);
        attr = TOP_A_WARN;
    } else if (ui->msg[0]) {
        snprintf(buf, sizeof buf, "%s", ui->msg);
    } else {
        top_fmt_secs(ui->delay_s, iv, sizeof iv);
        snprintf(buf, sizeof buf,
                 "q quit  Tab panel  s sort  / filter  k kill  p %s  +/- %s  h help",
                 ui->paused ? "resume" : "pause", iv);
    }
    put(g, r.y, r.x, r.w, buf, attr, 1);
}

static const char *const g_help[] = {
    "vyre-top keys",
    "",
    "  q          quit",
    "  Tab, Left/Right  next / previous panel",
    "  Up/Down, PgUp/PgDn, Home/End  move in the panel",
    "  s, F6      next sort order of the panel",
    "  /          filter processes (name, command, pid);",
    "             Enter applies, Esc cancels",
    "  Esc        clear the filter",
    "  k          send SIGTERM to the selected process after",
    "             a y/N question; only your own processes",
    "             unless vyre-top runs as root",
    "  p, Space   pause / resume sampling",
    "  + / -      slower / faster refresh",
    "  C          colours on / off (NO_COLOR=1: off)",
    "  h, ?       this help (any key closes it)",
    "",
    "Rates are over the last interval ('-': not known yet).",
    "P50/P99 are of the last interval's ranges when there",
    "were any, else of the process's lifetime; MAX is lifetime.",
    "LAUNCH/s counts kernels, a graph replay's included;",
    "GRAPH/s counts graph launches. '~': estimated from",
    "a kernel ring that overflowed. '-' in vyre columns:",
    "the process publishes no vyre telemetry.",
    "USER 'foreign': the page was written in another PID",
    "namespace (a container): its PID is not one of ours.",
    "Cache rows (vyre, cuda_jit, triton, inductor): size,",
    "limit, filesystem fill; warning colour over the limit",
    "or at 90% full. '>': a scan stopped at its bound.",
    NULL,
};

static void draw_help(top_grid *g)
{
    int n = 0, w = 0;
    for (; g_help[n]; n++) {
        int l = (int)strlen(g_help[n]);
        if (l > w)
            w = l;
    }
    int bw = w + 4, bh = n + 2;
    if (bw > g->cols)
        bw = g->cols;
    if (bh > g->rows)
        bh = g->rows;
    int x0 = (g->cols - bw) / 2, y0 = (g->rows - bh) / 2;
    for (int y = 0; y < bh; y++) {
        char line[LINE_MAX_W];
        const char *txt = y >= 1 && y - 1 < n ? g_help[y - 1] : "";
        snprintf(line, sizeof line, "  %s", txt);
        put(g, y0 + y, x0, bw, line, TOP_A_HELP, 1);
    }
}

int top_view_compose(const top_snapshot *s, top_ui *ui, int rows, int cols, unsigned flags,
                     top_grid *g)
{
    int batch = (flags & TOP_VIEW_BATCH) != 0;
    ui->sel_pid = 0;
    ui->sel_foreign = 0;
    ui->sel_start = 0;
    ui->sel_name[0] = '\0';
    model m;
    if (model_build(s, ui, &m) != 0) {
        model_release(&m);
        memset(g, 0, sizeof *g);
        return -1;
    }
    int want[TOP_NPANELS];
    want[TOP_P_GPU] =
        s->gpu_ok && m.ngpus ? 2 * (int)m.ngpus : (!s->gpu_ok && s->gpu_hint[0] ? 2 : 1);
    want[TOP_P_PROC] = m.nprocs ? 1 + (int)m.nprocs : (s->tel_ok && !s->nprocs ? 2 : 1);
    want[TOP_P_RANGE] = m.nranges ? 1 + (int)m.nranges : 1;
    want[TOP_P_KERNEL] = m.nkernels ? 1 + (int)m.nkernels : 1;
    want[TOP_P_CACHE] = (s->cache_state == TOP_CACHE_OK ? 3 + (int)s->nremotes : 1) + usage_rows(s);
    unsigned lflags = 0;
    if (batch) {
        lflags = TOP_LAYOUT_SINGLE_COLUMN | TOP_LAYOUT_NO_FOOTER;
        rows = 1;
        for (int i = 0; i < TOP_NPANELS; i++)
            rows += want[i] + 1;
        if (rows < 8)
            rows = 8;
    }
    if (grid_init(g, rows, cols) != 0) {
        model_release(&m);
        return -1;
    }
    top_layout_compute(rows, cols, want, lflags, &g->layout);
    const top_layout *l = &g->layout;
    draw_header(g, s, ui, &m, l->header);
    if (l->panel[TOP_P_GPU].h)
        draw_gpus(g, s, ui, &m, l->panel[TOP_P_GPU], batch);
    if (l->panel[TOP_P_PROC].h)
        draw_procs(g, s, ui, &m, l->panel[TOP_P_PROC], batch);
    if (l->panel[TOP_P_RANGE].h)
        draw_ranges(g, s, ui, &m, l->panel[TOP_P_RANGE], batch);
    if (l->panel[TOP_P_KERNEL].h)
        draw_kernels(g, s, ui, &m, l->panel[TOP_P_KERNEL], batch);
    if (l->panel[TOP_P_CACHE].h)
        draw_cache(g, s, ui, l->panel[TOP_P_CACHE], batch);
    if (!batch)
        draw_footer(g, ui, l->footer);
    if (!batch && ui->help)
        draw_help(g);
    model_release(&m);
    return 0;
}
