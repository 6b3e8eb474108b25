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
#include "view_int.h"
#include "vyre/version.h"

/* ---- top_model -------------------------------------------------------------- */

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
    int rev = *(const int *)((const void *const *)ctx)[2];
    const top_proc *p = &s->procs[*(const size_t *)a], *q = &s->procs[*(const size_t *)b];
    int c = 0;
    if (sort == 7) {
        c = strcmp(p->name, q->name);
    } else if (sort != 6) {
        double x = proc_key(p, sort), y = proc_key(q, sort);
        c = cmp_desc(x, y);
        if (isnan(x) || isnan(y))
            return c ? c : (p->pid > q->pid) - (p->pid < q->pid); /* unknown last either way */
    }
    if (c == 0) {
        c = (p->pid > q->pid) - (p->pid < q->pid);
        return sort == 6 && rev ? -c : c;
    }
    return rev ? -c : c;
}

size_t top_view_procs(const top_snapshot *s, const top_ui *ui, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (top_proc_matches(&s->procs[i], ui->filter))
            idx[n++] = i;
    int sort = ui->sort[TOP_P_PROC], rev = ui->reverse[TOP_P_PROC];
    const void *ctx[3] = {s, &sort, &rev};
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

static int model_build(const top_snapshot *s, const top_ui *ui, top_model *m)
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
    size_t nl = 0;
    for (size_t i = 0; i < m->nprocs; i++)
        nl += s->procs[m->procs[i]].ngpus ? s->procs[m->procs[i]].ngpus : 1;
    m->lines = malloc((nl + s->nanc + 1) * sizeof *m->lines);
    if (!m->lines)
        return -1;
    if (ui->tree)
        m->nlines = top_view_tree_lines(s, m->procs, m->nprocs, m->lines, nl + s->nanc);
    for (size_t i = 0; !ui->tree && i < m->nprocs; i++) {
        unsigned ng = s->procs[m->procs[i]].ngpus;
        for (unsigned k = 0; k < (ng ? ng : 1); k++)
            m->lines[m->nlines++] = (top_proc_line){m->procs[i], ng ? (int)k : -1, -1, 0};
    }

    top_range all[VYRE_RANGE_COUNT];
    top_aggregate_ranges(s, m->keep, all);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++)
        if (all[r].count > 0)
            m->ranges[m->nranges++] = all[r];
    int rs = ui->sort[TOP_P_RANGE];
    qsort_r(m->ranges, m->nranges, sizeof m->ranges[0], cmp_range, &rs);
    if (ui->reverse[TOP_P_RANGE])
        for (size_t i = 0, j = m->nranges; i + 1 < j; i++, j--) {
            top_range t = m->ranges[i];
            m->ranges[i] = m->ranges[j - 1];
            m->ranges[j - 1] = t;
        }

    m->nkernels = top_aggregate_kernels(s, m->keep, &m->kernels, &m->sampled);
    int ks = ui->sort[TOP_P_KERNEL];
    if (m->nkernels)
        qsort_r(m->kernels, m->nkernels, sizeof m->kernels[0], cmp_kernel, &ks);
    if (ui->reverse[TOP_P_KERNEL])
        for (size_t i = 0, j = m->nkernels; i + 1 < j; i++, j--) {
            top_kernel t = m->kernels[i];
            m->kernels[i] = m->kernels[j - 1];
            m->kernels[j - 1] = t;
        }

    if (s->gpu_ok) {
        for (unsigned i = 0; i < s->gpu.ngpus && i < VYRE_GPU_MAX; i++)
            m->gpus[m->ngpus++] = i;
        int gs = ui->sort[TOP_P_GPU];
        const void *ctx[2] = {s, &gs};
        qsort_r(m->gpus, m->ngpus, sizeof m->gpus[0], cmp_gpu, (void *)ctx);
        if (ui->reverse[TOP_P_GPU])
            for (unsigned i = 0, j = m->ngpus; i + 1 < j; i++, j--) {
                unsigned t = m->gpus[i];
                m->gpus[i] = m->gpus[j - 1];
                m->gpus[j - 1] = t;
            }
    }
    return 0;
}

static void model_release(top_model *m)
{
    free(m->procs);
    free(m->lines);
    free(m->keep);
    free(m->kernels);
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
        top_grid_put(g, y, x, lw, labels[i], TOP_A_DIM, 1);
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
        top_grid_put(g, y, x, this_w, sp, TOP_A_SPARK, 1);
        x += this_w;
        w -= this_w;
    }
}

/* What the GPU table's text columns ask (issue 37: names and throttle
 * reasons whole where there is room): their longest content. */
static void gpu_wants(const top_snapshot *s, const top_model *m, int *want)
{
    for (unsigned k = 0; k < m->ngpus; k++) {
        const vyre_gpu_info *gi = &s->gpu.gpus[m->gpus[k]];
        int nl = vyre_gpu_field_valid(gi, VYRE_GPU_F_NAME) ? (int)strlen(gi->name) : 1;
        int tl = vyre_gpu_field_valid(gi, VYRE_GPU_F_THROTTLE) ? (int)strlen(gi->throttle_text) : 1;
        if (nl > want[1])
            want[1] = nl;
        if (tl > want[8])
            want[8] = tl;
    }
}

static void draw_gpus(top_grid *g, const top_snapshot *s, top_ui *ui, const top_model *m,
                      top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[160];
    int w = top_grid_clampw(r.w);
    if (!s->gpu_ok || m->ngpus == 0) {
        top_grid_title(g, ui, TOP_P_GPU, r, "GPUs", batch);
        if (!s->gpu_ok)
            snprintf(buf, sizeof buf, "no NVIDIA GPU monitor: %s", s->gpu_msg);
        else
            snprintf(buf, sizeof buf, "NVML sees no GPU (driver %s)",
                     s->gpu.driver_version[0] ? s->gpu.driver_version : "-");
        top_grid_line(g, r, 1, buf, TOP_A_DIM);
        if (!s->gpu_ok && s->gpu_hint[0]) {
            snprintf(buf, sizeof buf, "hint: %s", s->gpu_hint);
            top_grid_line(g, r, 2, buf, TOP_A_DIM);
        }
        ui->nrows[TOP_P_GPU] = 0;
        return;
    }
    snprintf(t, sizeof t, "GPUs (%u%s)  driver %s%s%s", s->gpu.ngpus_total,
             s->gpu.gpus_truncated ? ", some not shown" : "",
             s->gpu.driver_version[0] ? s->gpu.driver_version : "-",
             ui->sort[TOP_P_GPU] ? "  sort: " : "",
             ui->sort[TOP_P_GPU] ? top_sort_name(TOP_P_GPU, ui->sort[TOP_P_GPU]) : "");
    top_grid_title(g, ui, TOP_P_GPU, r, t, batch);
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

    /* The bars (UTIL, MEM) share what the text columns leave. */
    static const top_col cols[] = {
        {"GPU", 3, 1, 0, 0},  {"NAME", 12, 0, 1, 0},  {"UTIL", 12, 0, 0, 1},
        {"MEM", 22, 0, 1, 1}, {"TEMP", 4, 1, 2, 0},   {"POWER", 10, 1, 2, 0},
        {"SM", 7, 1, 3, 0},   {"MEMCLK", 7, 1, 4, 0}, {"THROTTLE", 12, 0, 5, 0},
    };
    enum { NC = sizeof cols / sizeof cols[0] };
    _Static_assert(NC <= TOP_MAX_COLS, "raise TOP_MAX_COLS");
    int cw[NC], want[NC] = {0};
    gpu_wants(s, m, want);
    top_cols_fit_want(cols, NC, w, want, cw);
    int line = 1;
    for (int k = first; k < (int)m->ngpus && line < r.h; k++) {
        const vyre_gpu_info *gi = &s->gpu.gpus[m->gpus[k]];
        char c_idx[8], c_util[LINE_MAX_W], c_mem[LINE_MAX_W + 40], c_temp[16], c_pow[32], c_sm[16],
            c_mc[16], c_th[96];
        snprintf(c_idx, sizeof c_idx, "%d", gi->index);
        int bw = cw[2] > 0 ? cw[2] : 12;
        top_fmt_bar(gpu_util(gi), bw, c_util);
        char used[16], total[16], bar[LINE_MAX_W];
        int memv = vyre_gpu_field_valid(gi, VYRE_GPU_F_MEMORY);
        top_fmt_bytes(gi->mem_used_bytes, memv, used, sizeof used);
        top_fmt_bytes(gi->mem_total_bytes, memv, total, sizeof total);
        int mbw = cw[3] > 12 ? cw[3] - 12 : 6;
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
        top_grid_line(g, r, line++, buf, top_grid_row_attr(ui, TOP_P_GPU, k, batch));
        if (per == 2 && line < r.h) {
            draw_history(g, &s->gpu_hist[m->gpus[k]], r.y + line, r.x, w);
            line++;
        }
    }
}

static void draw_ranges(top_grid *g, const top_snapshot *s, top_ui *ui, const top_model *m,
                        top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[160];
    int w = top_grid_clampw(r.w);
    snprintf(t, sizeof t, "NVTX ranges  sort: %s",
             top_sort_name(TOP_P_RANGE, ui->sort[TOP_P_RANGE]));
    top_grid_title(g, ui, TOP_P_RANGE, r, t, batch);
    (void)s;
    if (m->nranges == 0) {
        ui->nrows[TOP_P_RANGE] = 0;
        /* With a filter, the ranges are those of the matching processes:
         * "recorded yet" would send the user looking at the program. */
        if (ui->filter[0])
            snprintf(buf, sizeof buf, "no NVTX ranges in the processes matching '%s'", ui->filter);
        else
            snprintf(buf, sizeof buf, "no NVTX ranges recorded yet");
        top_grid_line(g, r, 1, buf, TOP_A_DIM);
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
    int vis = top_grid_table_rows(ui, TOP_P_RANGE, r, m->nranges, &colhead, batch);
    int line = 1;
    if (colhead)
        top_grid_colheads(g, r, line++, cols, cw, NC, w);
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
        top_grid_line(g, r, line++, buf, top_grid_row_attr(ui, TOP_P_RANGE, k, batch));
    }
}

static void draw_kernels(top_grid *g, const top_snapshot *s, top_ui *ui, const top_model *m,
                         top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[160], iv[16];
    int w = top_grid_clampw(r.w);
    top_fmt_secs(s->interval_s, iv, sizeof iv);
    snprintf(t, sizeof t, "Kernels (last %s%s)  sort: %s", iv,
             m->sampled ? ", ring overflowed: ~ estimated" : "",
             top_sort_name(TOP_P_KERNEL, ui->sort[TOP_P_KERNEL]));
    top_grid_title(g, ui, TOP_P_KERNEL, r, t, batch);
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
        top_grid_line(g, r, 1, msg, TOP_A_DIM);
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
    int vis = top_grid_table_rows(ui, TOP_P_KERNEL, r, m->nkernels, &colhead, batch);
    int line = 1;
    if (colhead)
        top_grid_colheads(g, r, line++, cols, cw, NC, w);
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
        top_grid_line(g, r, line++, buf, top_grid_row_attr(ui, TOP_P_KERNEL, k, batch));
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
        top_grid_line(g, r, line, "cache sizes: measuring (vyre, cuda_jit, triton, inductor)",
                      TOP_A_DIM);
        return line + 1;
    }
    char buf[LINE_MAX_W];
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        int warn = top_fmt_usage(&s->usage.c[i], buf, sizeof buf);
        top_grid_line(g, r, line++, buf, warn ? TOP_A_WARN : TOP_A_NORMAL);
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
        top_grid_line(g, r, 1, buf, TOP_A_DIM);
        return 1;
    case TOP_CACHE_PENDING:
        top_grid_line(g, r, 1, "not read yet", TOP_A_DIM);
        return 1;
    default:
        snprintf(buf, sizeof buf, "cannot read the pipeline cache: %s", s->cache_msg);
        top_grid_line(g, r, 1, buf, TOP_A_WARN);
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
        top_grid_line(g, r, line++, buf, errors || st->rejected ? TOP_A_WARN : TOP_A_NORMAL);
    }
}

/* The pipeline cache's figures, then the four caches' sizes (where a full
 * filesystem shows), then quarantine, root and remote stores. */
static void draw_cache(top_grid *g, const top_snapshot *s, top_ui *ui, top_rect r, int batch)
{
    char buf[LINE_MAX_W], t[160];
    cache_title(s, t, sizeof t);
    top_grid_title(g, ui, TOP_P_CACHE, r, t, batch);
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
    top_grid_line(g, r, 1, buf, TOP_A_NORMAL);
    int line = draw_usage(g, s, r, 2);
    snprintf(buf, sizeof buf, "quarantined %llu (%s)  tmp %llu  debris %llu%s",
             (unsigned long long)c->quarantined, qb, (unsigned long long)c->tmp_files,
             (unsigned long long)c->debris,
             c->debris || c->quarantined ? "  (vyre-cachectl verify --repair)" : "");
    top_grid_line(g, r, line++, buf, c->debris || c->quarantined ? TOP_A_WARN : TOP_A_NORMAL);
    /* bounded: a screen line, cut to the panel's width */
    snprintf(buf, sizeof buf, "root %.900s", s->cache_root);
    top_grid_line(g, r, line++, buf, TOP_A_DIM);
    draw_remotes(g, s, r, line);
}

static void draw_header(top_grid *g, const top_snapshot *s, const top_ui *ui, const top_model *m,
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
    top_grid_put(g, r.y, r.x, r.w, buf, TOP_A_HEADER, 1);
}

/* The host row: CPU, memory and swap meters that grow with the width,
 * then the load averages. */
static void draw_host(top_grid *g, const top_snapshot *s, top_rect r)
{
    char buf[LINE_MAX_W], cpu[160], mem[160], swp[160], ld[64];
    char mu[16], mt[16], su[16], st[16];
    const vyre_host_info *h = &s->host;
    int bw = (r.w - 60) / 3; /* each meter's share of the width */
    if (bw < 6)
        bw = 6;
    if (bw > 150)
        bw = 150;
    top_fmt_bar(s->host_ok ? s->host_cpu_pct : NAN, bw, cpu);
    double mp =
        h->mem_valid && h->mem_total_bytes
            ? 100.0 * (double)(h->mem_total_bytes - h->mem_avail_bytes) / (double)h->mem_total_bytes
            : NAN;
    double sp = h->swap_valid && h->swap_total_bytes
                    ? 100.0 * (double)(h->swap_total_bytes - h->swap_free_bytes) /
                          (double)h->swap_total_bytes
                    : NAN;
    top_fmt_bar(mp, bw, mem);
    top_fmt_bar(sp, bw, swp);
    top_fmt_bytes(h->mem_total_bytes - h->mem_avail_bytes, h->mem_valid, mu, sizeof mu);
    top_fmt_bytes(h->mem_total_bytes, h->mem_valid, mt, sizeof mt);
    top_fmt_bytes(h->swap_total_bytes - h->swap_free_bytes, h->swap_valid, su, sizeof su);
    top_fmt_bytes(h->swap_total_bytes, h->swap_valid, st, sizeof st);
    if (h->load_valid)
        snprintf(ld, sizeof ld, "%.2f %.2f %.2f", h->load[0], h->load[1], h->load[2]);
    else
        snprintf(ld, sizeof ld, "-");
    snprintf(buf, sizeof buf, "CPU %s  Mem %s %s/%s  Swap %s %s/%s  Load %s", cpu, mem, mu, mt, swp,
             su, st, ld);
    top_grid_put(g, r.y, r.x, r.w, buf, TOP_A_NORMAL, 1);
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
        snprintf(buf, sizeof buf,
                 "Send which signal to %d (%s)? t TERM  i INT  K KILL  (any other key: none)",
                 (int)ui->kill_pid, ui->kill_name);
        attr = TOP_A_WARN;
    } else if (ui->msg[0]) {
        snprintf(buf, sizeof buf, "%s", ui->msg);
    } else {
        top_fmt_secs(ui->delay_s, iv, sizeof iv);
        snprintf(buf, sizeof buf,
                 "q quit  Tab panel  s/r sort  / filter  k kill  p %s  +/- %s  h help",
                 ui->paused ? "resume" : "pause", iv);
    }
    top_grid_put(g, r.y, r.x, r.w, buf, attr, 1);
}

/* The widths the side-by-side panels' longest rows ask (layout.h): the
 * cache's size rows and the kernels' names with their figures. */
static void want_widths(const top_snapshot *s, const top_model *m, int *want_w)
{
    for (int i = 0; i < TOP_NPANELS; i++)
        want_w[i] = 0;
    char buf[LINE_MAX_W];
    for (int i = 0; s->usage_on && s->usage.rounds && i < VYRE_USAGE_N_CACHES; i++) {
        top_fmt_usage(&s->usage.c[i], buf, sizeof buf);
        int n = (int)strlen(buf);
        want_w[TOP_P_CACHE] = n > want_w[TOP_P_CACHE] ? n : want_w[TOP_P_CACHE];
    }
    int kw = 16;
    for (size_t k = 0; k < m->nkernels; k++) {
        int n = (int)strlen(m->kernels[k].name);
        kw = n > kw ? n : kw;
    }
    want_w[TOP_P_KERNEL] = kw + 50; /* CALLS/s GPU% MEAN MAX GRID/BLOCK */
}

int top_view_compose(const top_snapshot *s, top_ui *ui, int rows, int cols, unsigned flags,
                     top_grid *g)
{
    int batch = (flags & TOP_VIEW_BATCH) != 0;
    ui->sel_pid = 0;
    ui->sel_foreign = 0;
    ui->sel_start = 0;
    ui->sel_name[0] = '\0';
    top_model m;
    if (model_build(s, ui, &m) != 0) {
        model_release(&m);
        memset(g, 0, sizeof *g);
        return -1;
    }
    int want[TOP_NPANELS];
    want[TOP_P_GPU] =
        s->gpu_ok && m.ngpus ? 2 * (int)m.ngpus : (!s->gpu_ok && s->gpu_hint[0] ? 2 : 1);
    want[TOP_P_PROC] = m.nlines ? 1 + (int)m.nlines : (s->tel_ok && !s->nprocs ? 2 : 1);
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
    if (top_grid_init(g, rows, cols) != 0) {
        model_release(&m);
        return -1;
    }
    int want_w[TOP_NPANELS];
    want_widths(s, &m, want_w);
    if (!batch && !ui->host_hidden)
        lflags |= TOP_LAYOUT_HOST;
    top_layout_compute_w(rows, cols, want, want_w, lflags, &g->layout);
    const top_layout *l = &g->layout;
    draw_header(g, s, ui, &m, l->header);
    if (l->host.h)
        draw_host(g, s, l->host);
    if (l->panel[TOP_P_GPU].h)
        draw_gpus(g, s, ui, &m, l->panel[TOP_P_GPU], batch);
    if (l->panel[TOP_P_PROC].h)
        top_view_draw_procs(g, s, ui, &m, l->panel[TOP_P_PROC], batch);
    if (l->panel[TOP_P_RANGE].h)
        draw_ranges(g, s, ui, &m, l->panel[TOP_P_RANGE], batch);
    if (l->panel[TOP_P_KERNEL].h)
        draw_kernels(g, s, ui, &m, l->panel[TOP_P_KERNEL], batch);
    if (l->panel[TOP_P_CACHE].h)
        draw_cache(g, s, ui, l->panel[TOP_P_CACHE], batch);
    if (!batch)
        draw_footer(g, ui, l->footer);
    if (!batch && ui->detail)
        top_view_draw_detail(g, s, ui);
    if (!batch && ui->help)
        top_view_draw_help(g, ui);
    model_release(&m);
    return 0;
}
