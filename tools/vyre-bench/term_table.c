/*
 * term_table.c - the points table for a terminal: the columns of the
 * markdown table (output.c) with a priority each, fitted to the terminal's
 * width by tools/common/tool_table.c; one time unit for the median, p5 and p95
 * columns so the numbers line up; the stop reason as a short code with a
 * legend of the codes shown. Piped output keeps the markdown table.
 *
 * To add a column (GB/s, TFLOP/s, ...): a row in k_cols with its priority,
 * and its cell in fill_row.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_cli.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "tool_table.h"
#include "vyre/vyre.h"

enum {
    COL_BENCH,
    COL_AXES,
    COL_DEV,
    COL_MODE,
    COL_N,
    COL_MEDIAN,
    COL_P5,
    COL_P95,
    COL_GPU,
    COL_BATCH,
    COL_KERNEL,
    COL_NOISE,
    COL_OUTL,
    COL_THR,
    COL_METRIC,
    COL_STOP,
    COL_NOTE,
    NCOLS
};

/* name, priority (0 kept always, larger dropped first; equals: the rightmost
 * first), min width, right. Dropped first to last: note, thr, outl, gpu, dev,
 * n, mode, p5, kernel, batch, p95, stop, metric, noise, axes. */
static const tool_table_col k_cols[NCOLS] = {
    [COL_BENCH] = {"benchmark", 0, 14, 0},
    [COL_AXES] = {"axes", 1, 10, 0},
    [COL_DEV] = {"dev", 7, 0, 0},
    [COL_MODE] = {"mode", 6, 0, 0},
    [COL_N] = {"n", 6, 0, 1},
    [COL_MEDIAN] = {"median", 0, 0, 1},
    [COL_P5] = {"p5", 5, 0, 1},
    [COL_P95] = {"p95", 4, 0, 1},
    /* gpu repeats median for GPU points: dropped early; batch and kernel
     * are views of their own (README, "Which time to quote"). */
    [COL_GPU] = {"gpu", 7, 0, 1},
    [COL_BATCH] = {"batch", 4, 0, 1},
    [COL_KERNEL] = {"kernel", 4, 0, 1},
    [COL_NOISE] = {"noise", 2, 0, 1},
    [COL_OUTL] = {"outl", 8, 0, 1},
    [COL_THR] = {"thr", 8, 0, 1},
    [COL_METRIC] = {"metric", 2, 0, 1},
    [COL_STOP] = {"stop", 3, 0, 0},
    [COL_NOTE] = {"note", 9, 10, 0},
};

typedef struct stop_code {
    vyre_stats_stop_reason reason;
    const char *code;
    const char *legend;
} stop_code;

static const stop_code k_stop_codes[] = {
    {VYRE_STOP_NOISE_OK, "ok", "noise reached the target"},
    {VYRE_STOP_MINIMUMS_MET, "min", "minimums met, no noise target"},
    {VYRE_STOP_TIMEOUT, "tmo", "timeout before the noise target"},
    {VYRE_STOP_MAX_SAMPLES, "max", "sample cap reached first"},
};
#define NSTOP (sizeof k_stop_codes / sizeof k_stop_codes[0])

static const stop_code *stop_code_of(vyre_stats_stop_reason r)
{
    for (size_t i = 0; i < NSTOP; i++)
        if (k_stop_codes[i].reason == r)
            return &k_stop_codes[i];
    return NULL;
}

/* A unit for a column of times: the one in which the median of the
 * column's values reads between 1 and 1000, and the decimals that give
 * the smallest value three significant digits (1 to 4). */
typedef struct time_unit {
    const char *name;
    double scale; /* ns per unit */
    int decimals;
} time_unit;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static time_unit choose_time_unit(const vyre_bench_point *pts, size_t n)
{
    time_unit u = {"ns", 1, 1};
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t k = 0;
    double lo = INFINITY;
    for (size_t i = 0; v && i < n; i++) {
        const vyre_stats *s = &pts[i].stats;
        if (isfinite(s->median) && s->median > 0)
            v[k++] = s->median;
        const double all[3] = {s->median, s->p5, s->p95};
        for (size_t j = 0; j < 3; j++)
            if (isfinite(all[j]) && all[j] > 0 && all[j] < lo)
                lo = all[j];
    }
    if (k) {
        qsort(v, k, sizeof *v, cmp_double);
        double mid = v[k / 2];
        if (mid >= 1e9)
            u = (time_unit){"s", 1e9, 1};
        else if (mid >= 1e6)
            u = (time_unit){"ms", 1e6, 1};
        else if (mid >= 1e3)
            u = (time_unit){"us", 1e3, 1};
    }
    free(v);
    if (isfinite(lo)) {
        int d = (int)ceil(-log10(lo / u.scale)) + 2;
        u.decimals = d < 1 ? 1 : d > 4 ? 4 : d;
    }
    return u;
}

static void fmt_time(double ns, const time_unit *u, char *buf, size_t size)
{
    if (!isfinite(ns))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f", u->decimals, ns / u->scale);
}

/* The metric column: one unit in the header when every point has the
 * same metric, else the unit after each number, padded so the numbers
 * still line up. */
static const char *common_metric(const vyre_bench_point *pts, size_t n, size_t *unit_w)
{
    const char *name = NULL;
    int same = 1;
    *unit_w = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pts[i].metric_name[0])
            continue;
        size_t l = strlen(pts[i].metric_name);
        if (l > *unit_w)
            *unit_w = l;
        if (!name)
            name = pts[i].metric_name;
        else if (strcmp(name, pts[i].metric_name) != 0)
            same = 0;
    }
    return same ? name : NULL;
}

static void fmt_metric(const vyre_bench_point *p, int with_unit, size_t unit_w, char *buf,
                       size_t size)
{
    if (!p->metric_name[0] || !isfinite(p->metric)) {
        snprintf(buf, size, "-");
        return;
    }
    char num[32];
    if (fabs(p->metric) >= 100)
        snprintf(num, sizeof num, "%.0f", p->metric);
    else if (fabs(p->metric) >= 10)
        snprintf(num, sizeof num, "%.1f", p->metric);
    else
        snprintf(num, sizeof num, "%.2f", p->metric);
    char unit[TOOL_CLEAN_SIZE(sizeof p->metric_name)];
    tool_clean(p->metric_name, unit, sizeof unit);
    if (with_unit)
        snprintf(buf, size, "%s %-*s", num, (int)unit_w, unit);
    else
        snprintf(buf, size, "%s", num);
}

/* The longest field (axes, note: 256) and a little more. Text from the
 * database goes through tool_clean, which cuts what does not fit before a
 * whole escape: a name full of control bytes is shown shortened. */
#define CELL 272

static void fill_row(const vyre_bench_point *p, const time_unit *tu, int metric_units,
                     size_t unit_w, int wide, char (*cell)[CELL])
{
    const vyre_stats *s = &p->stats;
    bench_label(p, cell[COL_BENCH], CELL);
    tool_clean(p->axes[0] ? p->axes : "-", cell[COL_AXES], CELL);
    bench_format_device(p, cell[COL_DEV], CELL);
    snprintf(cell[COL_MODE], CELL, "%s", vyre_bench_mode_name(p->mode));
    snprintf(cell[COL_N], CELL, "%zu", s->n);
    fmt_time(s->median, tu, cell[COL_MEDIAN], CELL);
    fmt_time(s->p5, tu, cell[COL_P5], CELL);
    fmt_time(s->p95, tu, cell[COL_P95], CELL);
    fmt_time(p->gpu_timer ? s->median : NAN, tu, cell[COL_GPU], CELL);
    fmt_time(p->batch_ns > 0 ? p->batch_ns : NAN, tu, cell[COL_BATCH], CELL);
    fmt_time(p->kernel_ns > 0 ? p->kernel_ns : NAN, tu, cell[COL_KERNEL], CELL);
    if (isfinite(s->robust_noise))
        snprintf(cell[COL_NOISE], CELL, "%.2f%%", s->robust_noise * 100);
    else
        snprintf(cell[COL_NOISE], CELL, "-");
    snprintf(cell[COL_OUTL], CELL, "%zu", s->n_outliers);
    snprintf(cell[COL_THR], CELL, "%zu", p->n_throttled);
    fmt_metric(p, metric_units, unit_w, cell[COL_METRIC], CELL);
    const stop_code *sc = stop_code_of(p->stop_reason);
    if (wide)
        tool_clean(p->stop, cell[COL_STOP], CELL);
    else
        snprintf(cell[COL_STOP], CELL, "%s", sc ? sc->code : "-");
    tool_clean(p->note, cell[COL_NOTE], CELL);
}

/* "stop: ok noise reached the target; tmo timeout ..." for the codes the
 * kept rows show, broken into lines that fit the width. */
static void print_legend(FILE *out, const vyre_bench_point *pts, size_t n, int width)
{
    int seen[NSTOP] = {0};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < NSTOP; k++)
            if (pts[i].stop_reason == k_stop_codes[k].reason)
                seen[k] = 1;
    char line[512];
    size_t len = (size_t)snprintf(line, sizeof line, "stop:");
    int any = 0;
    for (size_t k = 0; k < NSTOP; k++) {
        if (!seen[k])
            continue;
        char item[128];
        int il = snprintf(item, sizeof item, "%s%s %s", any ? "; " : " ", k_stop_codes[k].code,
                          k_stop_codes[k].legend);
        if (width > 0 && any && len + (size_t)il > (size_t)width) {
            fprintf(out, "%.*s;\n", (int)len, line);
            len = (size_t)snprintf(line, sizeof line, "     ");
            il =
                snprintf(item, sizeof item, " %s %s", k_stop_codes[k].code, k_stop_codes[k].legend);
        }
        if (len + (size_t)il < sizeof line) {
            memcpy(line + len, item, (size_t)il + 1);
            len += (size_t)il;
        }
        any = 1;
    }
    if (any)
        fprintf(out, "%.*s\n", width > 0 && len > (size_t)width ? width : (int)len, line);
}

void bench_term_table(FILE *out, const vyre_bench_point *pts, size_t n, int width)
{
    int wide = width <= 0;
    time_unit tu = choose_time_unit(pts, n);
    size_t unit_w = 0;
    const char *metric = common_metric(pts, n, &unit_w);
    tool_table_col cols[NCOLS];
    memcpy(cols, k_cols, sizeof cols);
    char h_median[24], h_p5[24], h_p95[24], h_gpu[24], h_batch[24], h_kernel[24];
    snprintf(h_median, sizeof h_median, "median %s", tu.name);
    snprintf(h_p5, sizeof h_p5, "p5 %s", tu.name);
    snprintf(h_p95, sizeof h_p95, "p95 %s", tu.name);
    cols[COL_MEDIAN].name = h_median;
    cols[COL_P5].name = h_p5;
    cols[COL_P95].name = h_p95;
    char h_metric[TOOL_CLEAN_SIZE(sizeof pts->metric_name)];
    snprintf(h_gpu, sizeof h_gpu, "gpu %s", tu.name);
    snprintf(h_batch, sizeof h_batch, "batch %s", tu.name);
    snprintf(h_kernel, sizeof h_kernel, "kernel %s", tu.name);
    cols[COL_GPU].name = h_gpu;
    cols[COL_BATCH].name = h_batch;
    cols[COL_KERNEL].name = h_kernel;
    if (metric)
        cols[COL_METRIC].name = tool_clean(metric, h_metric, sizeof h_metric);

    char(*cells)[CELL] = calloc((n ? n : 1) * NCOLS, CELL);
    const char **ptrs = calloc((n ? n : 1) * NCOLS, sizeof *ptrs);
    if (!cells || !ptrs) {
        free(cells);
        free(ptrs);
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        return;
    }
    int any_note = 0;
    for (size_t r = 0; r < n; r++) {
        fill_row(&pts[r], &tu, metric == NULL, unit_w, wide, &cells[r * NCOLS]);
        any_note |= pts[r].note[0] != '\0';
        for (size_t c = 0; c < NCOLS; c++)
            ptrs[r * NCOLS + c] = cells[r * NCOLS + c];
    }
    int natural[NCOLS], widths[NCOLS];
    tool_table_natural(cols, NCOLS, ptrs, n, natural);
    if (!any_note)
        natural[COL_NOTE] = 0;
    tool_table_fit(cols, NCOLS, natural, wide ? 0 : width, widths);
    tool_table_render(out, cols, NCOLS, widths, ptrs, n, wide ? 0 : width);
    if (!wide && widths[COL_STOP] > 0)
        print_legend(out, pts, n, width);
    free(cells);
    free(ptrs);
}

int bench_table_width(int wide, int forced_width)
{
    int w = forced_width > 0 ? forced_width : tool_table_terminal_width(STDOUT_FILENO);
    if (w <= 0)
        return 0; /* not a terminal: the markdown table */
    return wide ? -1 : w;
}

int bench_parse_width(const char *sub, const char *s, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 20 || v > 10000)
        return tool_usage_error(sub, "give the columns to fit, such as 80 (20 to 10000)",
                                "bad value '%s' for --width", s);
    *out = (int)v;
    return 0;
}
