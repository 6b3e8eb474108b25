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
#include "tool_rows.h"
#include "tool_table.h"
#include "vyre/vyre.h"

/* The points' fields, in the order of export's CSV (and its header's
 * names); the table's columns have a title and a priority (0 kept always,
 * larger dropped first; equals: the rightmost first). Dropped first to
 * last: note, thr, outl, gpu, dev, n, mode, p5, kernel, batch, p95, stop,
 * metric, noise, axes. */
/* clang-format off */
enum {
    P_RUN, P_ID, P_SEQ, P_SUITE, P_BENCH, P_AXES, P_DEV, P_MODE, P_TIMER, P_N, P_MIN, P_MAX,
    P_MEAN, P_MEDIAN, P_STDDEV, P_RELSD, P_NOISE, P_P5, P_P95, P_MAD, P_OUTL, P_THR, P_WALL,
    P_BYTES, P_ITEMS, P_METRIC_NAME, P_METRIC, P_STOP_REASON, P_STOP, P_NOTE, P_GPU, P_BATCH,
    P_KERNEL, P_BLOCK_TMO, NPCOLS
};
/* clang-format on */
#define D TOOL_ROWS_DATA
static const tool_rows_col k_cols[NPCOLS] = {
    [P_RUN] = {"run_id", NULL, TOOL_ROWS_INT, D, 0, 0, NULL},
    [P_ID] = {"point_id", NULL, TOOL_ROWS_INT, D, 0, 0, NULL},
    [P_SEQ] = {"seq", NULL, TOOL_ROWS_INT, D, 0, 0, NULL},
    [P_SUITE] = {"suite", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [P_BENCH] = {"benchmark", "benchmark", TOOL_ROWS_TEXT, 0, 14, 0, NULL},
    [P_AXES] = {"axes", "axes", TOOL_ROWS_TEXT, 1, 10, 0, NULL},
    [P_DEV] = {"device", "dev", TOOL_ROWS_INT, 7, 0, 0, NULL, 1},
    [P_MODE] = {"mode", "mode", TOOL_ROWS_TEXT, 6, 0, 0, NULL},
    [P_TIMER] = {"timer", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [P_N] = {"n", "n", TOOL_ROWS_INT, 6, 0, 0, NULL},
    [P_MIN] = {"min_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_MAX] = {"max_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_MEAN] = {"mean_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_MEDIAN] = {"median_ns", "median", TOOL_ROWS_TIME, 0, 0, 0, NULL},
    [P_STDDEV] = {"stddev_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_RELSD] = {"rel_stddev", NULL, TOOL_ROWS_REAL, D, 0, 0, NULL},
    [P_NOISE] = {"noise", "noise", TOOL_ROWS_RATIO, 2, 0, 2, NULL},
    [P_P5] = {"p5_ns", "p5", TOOL_ROWS_TIME, 5, 0, 0, NULL},
    [P_P95] = {"p95_ns", "p95", TOOL_ROWS_TIME, 4, 0, 0, NULL},
    [P_MAD] = {"mad_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_OUTL] = {"outliers", "outl", TOOL_ROWS_INT, 8, 0, 0, NULL},
    [P_THR] = {"throttled", "thr", TOOL_ROWS_INT, 8, 0, 0, NULL},
    [P_WALL] = {"wall_median_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL},
    [P_BYTES] = {"bytes", NULL, TOOL_ROWS_REAL, D, 0, 0, NULL},
    [P_ITEMS] = {"items", NULL, TOOL_ROWS_REAL, D, 0, 0, NULL},
    [P_METRIC_NAME] = {"metric_name", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [P_METRIC] = {"metric", "metric", TOOL_ROWS_REAL, 2, 0, 0, NULL},
    [P_STOP_REASON] = {"stop_reason", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [P_STOP] = {"stop", "stop", TOOL_ROWS_TEXT, 3, 0, 0, NULL},
    [P_NOTE] = {"note", "note", TOOL_ROWS_TEXT, 9, 10, 0, NULL},
    /* gpu repeats median for GPU points: dropped early; batch and kernel
     * are views of their own (README, "Which time to quote"). */
    [P_GPU] = {"gpu_ns", "gpu", TOOL_ROWS_TIME, 7, 0, 0, NULL},
    [P_BATCH] = {"batch_ns", "batch", TOOL_ROWS_TIME, 4, 0, 0, NULL},
    [P_KERNEL] = {"kernel_ns", "kernel", TOOL_ROWS_TIME, 4, 0, 0, NULL},
    [P_BLOCK_TMO] = {"block_timeouts", NULL, TOOL_ROWS_INT, D, 0, 0, NULL},
};
#undef D

/* The table's columns, left to right. */
static const size_t k_table_order[] = {P_BENCH, P_AXES, P_DEV,    P_MODE,  P_N,      P_MEDIAN,
                                       P_P5,    P_P95,  P_GPU,    P_BATCH, P_KERNEL, P_NOISE,
                                       P_OUTL,  P_THR,  P_METRIC, P_STOP,  P_NOTE};

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

/* A time cell: the value, shown in the column's unit. */
static void put_time(tool_rows *t, size_t c, double ns, const time_unit *u)
{
    char buf[48];
    tool_rows_real(t, c, ns);
    fmt_time(ns, u, buf, sizeof buf);
    tool_rows_shown(t, c, buf);
}

static void add_point(tool_rows *t, const vyre_bench_point *p, const time_unit *tu,
                      int metric_units, size_t unit_w, int wide)
{
    const vyre_stats *s = &p->stats;
    char buf[TOOL_CLEAN_SIZE(sizeof p->benchmark) + 8];
    tool_rows_add(t);
    tool_rows_int(t, P_RUN, p->run_id);
    tool_rows_int(t, P_ID, p->id);
    tool_rows_int(t, P_SEQ, p->seq);
    tool_rows_text(t, P_SUITE, p->suite);
    tool_rows_text(t, P_BENCH, p->benchmark);
    tool_rows_shown(t, P_BENCH, bench_label(p, buf, sizeof buf));
    tool_rows_text(t, P_AXES, p->axes);
    if (p->device >= 0)
        tool_rows_int(t, P_DEV, p->device);
    else
        tool_rows_shown(t, P_DEV, "host");
    tool_rows_text(t, P_MODE, vyre_bench_mode_name(p->mode));
    tool_rows_text(t, P_TIMER, p->gpu_timer ? "gpu" : "wall");
    tool_rows_int(t, P_N, (int64_t)s->n);
    tool_rows_real(t, P_MIN, s->min);
    tool_rows_real(t, P_MAX, s->max);
    tool_rows_real(t, P_MEAN, s->mean);
    put_time(t, P_MEDIAN, s->median, tu);
    tool_rows_real(t, P_STDDEV, s->stddev);
    tool_rows_real(t, P_RELSD, s->rel_stddev);
    tool_rows_real(t, P_NOISE, s->robust_noise);
    put_time(t, P_P5, s->p5, tu);
    put_time(t, P_P95, s->p95, tu);
    tool_rows_real(t, P_MAD, s->mad);
    tool_rows_int(t, P_OUTL, (int64_t)s->n_outliers);
    tool_rows_int(t, P_THR, (int64_t)p->n_throttled);
    tool_rows_real(t, P_WALL, p->wall_median);
    tool_rows_real(t, P_BYTES, p->bytes > 0 ? p->bytes : NAN);
    tool_rows_real(t, P_ITEMS, p->items);
    tool_rows_text(t, P_METRIC_NAME, p->metric_name);
    tool_rows_real(t, P_METRIC, p->metric_name[0] ? p->metric : NAN);
    fmt_metric(p, metric_units, unit_w, buf, sizeof buf);
    tool_rows_shown(t, P_METRIC, buf);
    tool_rows_text(t, P_STOP_REASON, vyre_stats_stop_reason_name(p->stop_reason));
    tool_rows_text(t, P_STOP, p->stop);
    const stop_code *sc = stop_code_of(p->stop_reason);
    if (!wide)
        tool_rows_shown(t, P_STOP, sc ? sc->code : "-");
    tool_rows_text(t, P_NOTE, p->note);
    put_time(t, P_GPU, p->gpu_timer ? s->median : NAN, tu);
    put_time(t, P_BATCH, p->batch_ns > 0 ? p->batch_ns : NAN, tu);
    put_time(t, P_KERNEL, p->kernel_ns > 0 ? p->kernel_ns : NAN, tu);
    tool_rows_int(t, P_BLOCK_TMO, (int64_t)p->n_block_timeouts);
}

/* The points as a model: the values, and what the table shows (times in
 * one unit per column, stop reasons as codes unless wide). */
static tool_rows *points_rows(const vyre_bench_point *pts, size_t n, int wide)
{
    time_unit tu = choose_time_unit(pts, n);
    size_t unit_w = 0;
    const char *metric = common_metric(pts, n, &unit_w);
    tool_rows *t = tool_rows_new(k_cols, NPCOLS);
    tool_rows_order(t, k_table_order, sizeof k_table_order / sizeof k_table_order[0]);
    static const size_t timed[] = {P_MEDIAN, P_P5, P_P95, P_GPU, P_BATCH, P_KERNEL};
    for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
        char h[32];
        snprintf(h, sizeof h, "%s %s", k_cols[timed[i]].title, tu.name);
        tool_rows_title(t, timed[i], h);
    }
    char h_metric[TOOL_CLEAN_SIZE(sizeof pts->metric_name)];
    if (metric)
        tool_rows_title(t, P_METRIC, tool_clean(metric, h_metric, sizeof h_metric));
    int any_note = 0;
    for (size_t r = 0; r < n; r++) {
        add_point(t, &pts[r], &tu, metric == NULL, unit_w, wide);
        any_note |= pts[r].note[0] != '\0';
    }
    if (!any_note)
        tool_rows_hide(t, P_NOTE);
    return t;
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
    bench_points_print(out, pts, n, TOOL_FMT_TABLE, width);
}

void bench_points_print(FILE *out, const vyre_bench_point *pts, size_t n, tool_rows_fmt fmt,
                        int width)
{
    int wide = width <= 0 && fmt != TOOL_FMT_CSV;
    tool_rows *t = points_rows(pts, n, wide);
    tool_rows_print(out, t, fmt, wide ? 0 : width, NULL, "points");
    /* The legend of the codes, when the table shows them. */
    if (!wide && tool_rows_kept(t, P_STOP))
        print_legend(out, pts, n, width);
    tool_rows_free(t);
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
    tool_rows_out o = {0};
    if (tool_rows_opt(sub, TOOL_OPT_WIDTH, s, &o) < 0)
        return TOOL_EXIT_ERROR;
    *out = o.width;
    return 0;
}
