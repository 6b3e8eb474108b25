/*
 * test_top_layout.c - vyre-top's pure parts: the layout for every terminal
 * size from 20x5 to 300x100 (and the degenerate ones below), the format
 * functions' exact strings, composed frames at every size, the key handler
 * and the aggregation of ranges and kernels.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "format.h"
#include "layout.h"
#include "trace/counters_internal.h"
#include "ui.h"
#include "view.h"

/* ---- layout ---------------------------------------------------------------- */

static const int g_wants[][TOP_NPANELS] = {
    {1, 1, 1, 1, 1},       /* all empty states */
    {2, 3, 14, 6, 3},      /* one GPU, two processes */
    {16, 41, 14, 60, 3},   /* eight GPUs, forty processes, many kernels */
    {32, 300, 14, 200, 3}, /* sixteen GPUs, far more rows than any screen */
    {1, 2, 0, 0, 1},       /* panels with nothing at all are hidden */
    {2, 1, 1, 0, 0},       /* no kernels, no cache */
    {0, 0, 1, 1, 1},       /* degenerate: no GPU or process panel */
};
#define NWANTS (sizeof g_wants / sizeof g_wants[0])

static int in_bounds(top_rect r, int rows, int cols)
{
    if (r.h == 0 || r.w == 0)
        return 1;
    return r.h > 0 && r.w > 0 && r.y >= 0 && r.x >= 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

static void check_layout(int rows, int cols, const int *want, unsigned flags)
{
    top_layout l;
    top_layout_compute(rows, cols, want, flags, &l);
    top_rect all[TOP_NPANELS + 2];
    int n = 0;
    all[n++] = l.header;
    all[n++] = l.footer;
    for (int i = 0; i < TOP_NPANELS; i++)
        all[n++] = l.panel[i];
    for (int i = 0; i < n; i++) {
        cr_assert(in_bounds(all[i], rows, cols), "%dx%d: rect %d (%d,%d %dx%d) out of bounds", cols,
                  rows, i, all[i].y, all[i].x, all[i].w, all[i].h);
        for (int j = i + 1; j < n; j++)
            cr_assert(!top_rect_overlap(all[i], all[j]), "%dx%d: rects %d and %d overlap", cols,
                      rows, i, j);
    }
    int desired[TOP_NPANELS];
    for (int i = 0; i < TOP_NPANELS; i++) {
        top_rect r = l.panel[i];
        desired[i] = want[i] ? want[i] + 1 : 0;
        if (want[i] == 0)
            cr_assert_eq(r.h, 0, "%dx%d: panel %d has no content but is shown", cols, rows, i);
        if (r.h)
            cr_assert_geq(r.h, 2, "%dx%d: panel %d shown without a content row", cols, rows, i);
    }
    /* The GPU and process panels get space first. */
    int body = rows - (l.header.h ? 1 : 0) - (l.footer.h ? 1 : 0);
    for (int p = TOP_P_GPU; p <= TOP_P_PROC; p++) {
        if (!want[p])
            continue;
        if (rows >= 5 && cols >= 1 && body >= 2 * (1 + (p == TOP_P_PROC && want[TOP_P_GPU])))
            cr_assert_gt(l.panel[p].h, 0, "%dx%d: panel %d must be shown", cols, rows, p);
        for (int q = TOP_P_RANGE; q < TOP_NPANELS; q++) {
            int need = desired[p] < l.panel[q].h ? desired[p] : l.panel[q].h;
            cr_assert_geq(l.panel[p].h, need,
                          "%dx%d: panel %d (%d rows) got less than lower-priority panel %d "
                          "(%d rows)",
                          cols, rows, p, l.panel[p].h, q, l.panel[q].h);
        }
    }
    /* When everything fits, everything gets what it asked for. */
    int total = 0;
    for (int i = 0; i < TOP_NPANELS; i++)
        total += desired[i];
    if (total <= body && (cols < TOP_WIDE_COLS || (flags & TOP_LAYOUT_SINGLE_COLUMN)))
        for (int i = 0; i < TOP_NPANELS; i++)
            cr_assert_geq(l.panel[i].h, desired[i], "%dx%d: panel %d squeezed", cols, rows, i);
}

Test(top_layout, every_size_from_20x5_to_300x100_no_overlap_in_bounds)
{
    for (size_t k = 0; k < NWANTS; k++)
        for (int rows = 5; rows <= 100; rows++)
            for (int cols = 20; cols <= 300; cols++) {
                check_layout(rows, cols, g_wants[k], 0);
                check_layout(rows, cols, g_wants[k], TOP_LAYOUT_SINGLE_COLUMN);
            }
}

Test(top_layout, degenerate_sizes_do_not_break)
{
    for (size_t k = 0; k < NWANTS; k++)
        for (int rows = -1; rows < 5; rows++)
            for (int cols = -1; cols < 40; cols++)
                check_layout(rows, cols, g_wants[k], 0);
}

Test(top_layout, smallest_terminal_keeps_gpu_and_processes)
{
    top_layout l;
    top_layout_compute(5, 20, g_wants[2], 0, &l);
    cr_assert_eq(l.header.h, 0, "no room for the header at 5 rows");
    cr_assert_eq(l.footer.h, 1);
    cr_assert_eq(l.footer.y, 4);
    cr_assert_eq(l.panel[TOP_P_GPU].h, 2);
    cr_assert_eq(l.panel[TOP_P_PROC].h, 2);
    cr_assert_eq(l.panel[TOP_P_RANGE].h, 0);
    cr_assert_eq(l.panel[TOP_P_KERNEL].h, 0);
    cr_assert_eq(l.panel[TOP_P_CACHE].h, 0);
}

Test(top_layout, wide_terminal_puts_kernels_beside_ranges)
{
    top_layout l;
    /* Issue 37: where every panel fits the height stacked, they stack
     * (each row the full width, nothing cut); the spare rows go to the
     * panel with most to show. */
    top_layout_compute(60, 200, g_wants[1], 0, &l);
    cr_assert_eq(l.panel[TOP_P_KERNEL].x, 0);
    cr_assert_eq(l.panel[TOP_P_KERNEL].w, 200);
    cr_assert_eq(l.panel[TOP_P_RANGE].h, g_wants[1][TOP_P_RANGE] + 1 + 60 - 2 - 33,
                 "the ranges have the most to show");
    /* 30 rows: they do not fit stacked, so they sit side by side. */
    top_layout_compute(30, 200, g_wants[1], 0, &l);
    top_rect r = l.panel[TOP_P_RANGE], k = l.panel[TOP_P_KERNEL], c = l.panel[TOP_P_CACHE];
    cr_assert_eq(r.y, k.y, "side by side");
    cr_assert_eq(r.x, 0);
    cr_assert_gt(k.x, r.x + r.w - 1);
    cr_assert_eq(c.x, 0);
    cr_assert_eq(c.y, r.y + r.h, "cache below the ranges");
    cr_assert_eq(l.panel[TOP_P_GPU].w, 200);
    /* Everything fits: each panel has what it asked for, no more. */
    cr_assert_eq(l.panel[TOP_P_PROC].h, g_wants[1][TOP_P_PROC] + 1);
    cr_assert_eq(k.h, r.h + c.h, "the kernel column is as tall as ranges and cache");
}

/* ---- format ---------------------------------------------------------------- */

static char g_buf[256];

#define FMT(call) (call, g_buf)

Test(top_format, numbers_have_exact_text_and_unknown_is_dash)
{
    cr_assert_str_eq(FMT(top_fmt_rate(NAN, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_rate(0, g_buf, sizeof g_buf)), "0");
    cr_assert_str_eq(FMT(top_fmt_rate(7.46, g_buf, sizeof g_buf)), "7.5");
    cr_assert_str_eq(FMT(top_fmt_rate(12.2, g_buf, sizeof g_buf)), "12");
    cr_assert_str_eq(FMT(top_fmt_rate(9999, g_buf, sizeof g_buf)), "9999");
    cr_assert_str_eq(FMT(top_fmt_rate(12345, g_buf, sizeof g_buf)), "12.3k");
    cr_assert_str_eq(FMT(top_fmt_rate(456789, g_buf, sizeof g_buf)), "457k");
    cr_assert_str_eq(FMT(top_fmt_rate(3.4e6, g_buf, sizeof g_buf)), "3.4M");
    cr_assert_str_eq(FMT(top_fmt_mbs(NAN, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_mbs(0, g_buf, sizeof g_buf)), "0.0");
    cr_assert_str_eq(FMT(top_fmt_mbs(52.45, g_buf, sizeof g_buf)), "52.5");
    cr_assert_str_eq(FMT(top_fmt_mbs(53000.4, g_buf, sizeof g_buf)), "53000");
    cr_assert_str_eq(FMT(top_fmt_pct(NAN, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_pct(75, g_buf, sizeof g_buf)), "75.0%");
    cr_assert_str_eq(FMT(top_fmt_pct(100, g_buf, sizeof g_buf)), "100%");
    cr_assert_str_eq(FMT(top_fmt_ns(0, 0, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_ns(NAN, 1, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_ns(850, 1, g_buf, sizeof g_buf)), "850ns");
    cr_assert_str_eq(FMT(top_fmt_ns(12300, 1, g_buf, sizeof g_buf)), "12.3us");
    cr_assert_str_eq(FMT(top_fmt_ns(131072, 1, g_buf, sizeof g_buf)), "131us");
    cr_assert_str_eq(FMT(top_fmt_ns(1.234e6, 1, g_buf, sizeof g_buf)), "1.23ms");
    cr_assert_str_eq(FMT(top_fmt_ns(45.6e6, 1, g_buf, sizeof g_buf)), "45.6ms");
    cr_assert_str_eq(FMT(top_fmt_ns(2.5e9, 1, g_buf, sizeof g_buf)), "2.50s");
    cr_assert_str_eq(FMT(top_fmt_ns(185e9, 1, g_buf, sizeof g_buf)), "3m05s");
    cr_assert_str_eq(FMT(top_fmt_secs(NAN, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_secs(0, g_buf, sizeof g_buf)), "0s");
    cr_assert_str_eq(FMT(top_fmt_secs(0.3, g_buf, sizeof g_buf)), "0.3s");
    cr_assert_str_eq(FMT(top_fmt_secs(720, g_buf, sizeof g_buf)), "12m");
    cr_assert_str_eq(FMT(top_fmt_secs(12240, g_buf, sizeof g_buf)), "3.4h");
    cr_assert_str_eq(FMT(top_fmt_bytes(5, 0, g_buf, sizeof g_buf)), "-");
    cr_assert_str_eq(FMT(top_fmt_bytes(0, 1, g_buf, sizeof g_buf)), "0B");
    cr_assert_str_eq(FMT(top_fmt_bytes(1023, 1, g_buf, sizeof g_buf)), "1023B");
    cr_assert_str_eq(FMT(top_fmt_bytes(1536, 1, g_buf, sizeof g_buf)), "1.50K");
    cr_assert_str_eq(FMT(top_fmt_bytes(12u << 20, 1, g_buf, sizeof g_buf)), "12.0M");
    cr_assert_str_eq(FMT(top_fmt_bytes(85899345920ull, 1, g_buf, sizeof g_buf)), "80.0G");
    uint32_t g1[3] = {64, 2, 1}, b1[3] = {256, 1, 1}, g2[3] = {1, 1, 1}, b2[3] = {8, 8, 4};
    cr_assert_str_eq(FMT(top_fmt_dims(g1, b1, g_buf, sizeof g_buf)), "64x2/256");
    cr_assert_str_eq(FMT(top_fmt_dims(g2, b2, g_buf, sizeof g_buf)), "1/8x8x4");
    /* Tiny buffers are cut, always terminated. */
    char small[4];
    top_fmt_ns(1.234e6, 1, small, sizeof small);
    cr_assert_str_eq(small, "1.2");
}

Test(top_format, cells_bars_and_sparklines_have_exact_widths)
{
    char b[64];
    top_fmt_cell(b, 5, "ab", 0);
    cr_assert_str_eq(b, "ab   ");
    top_fmt_cell(b, 5, "ab", 1);
    cr_assert_str_eq(b, "   ab");
    top_fmt_cell(b, 3, "abcdef", 0);
    cr_assert_str_eq(b, "ab\x0e", "cut: an ellipsis in the last cell (issue 37)");
    top_fmt_cell(b, 0, "abc", 0);
    cr_assert_str_eq(b, "");
    top_fmt_bar(45, 12, b);
    cr_assert_str_eq(b, "[|||||  45%]", "4.5 of 10 cells rounds up");
    top_fmt_bar(44, 12, b);
    cr_assert_str_eq(b, "[||||   44%]");
    top_fmt_bar(NAN, 8, b);
    cr_assert_str_eq(b, "[     -]");
    top_fmt_bar(100, 6, b);
    cr_assert_str_eq(b, "[100%]");
    top_fmt_bar(50, 2, b);
    cr_assert_str_eq(b, "50");
    top_fmt_bar(50, 0, b);
    cr_assert_str_eq(b, "");
    uint8_t samples[] = {0, 50, 100, TOP_HIST_UNKNOWN};
    top_fmt_spark(samples, 4, 6, b);
    cr_assert_eq(strlen(b), 6);
    cr_assert_eq(b[0], ' ');
    cr_assert_eq(b[1], ' ');
    cr_assert_eq(b[2], TOP_SPARK_MIN);
    cr_assert_eq(b[3], TOP_SPARK_MIN + 4 - 0);
    cr_assert_eq(b[4], TOP_SPARK_MAX);
    cr_assert_eq(b[5], ' ', "unknown samples are blank");
    top_fmt_spark(samples, 4, 2, b);
    cr_assert_eq(b[0], TOP_SPARK_MAX, "the newest samples are kept");
    for (int w = 0; w < 40; w++) {
        top_fmt_bar(33.3, w, b);
        cr_assert_eq((int)strlen(b), w);
        top_fmt_spark(samples, 4, w, b);
        cr_assert_eq((int)strlen(b), w);
    }
}

Test(top_format, columns_fit_by_priority_and_never_overflow)
{
    static const top_col cols[] = {
        {"PID", 7, 1, 0, 0},
        {"NAME", 10, 0, 0, 0},
        {"RATE", 8, 1, 1, 0},
        {"CMD", 6, 0, 2, 1},
    };
    int w[4];
    cr_assert_eq(top_cols_fit(cols, 4, 18, w), 2);
    cr_assert_eq(w[0], 7);
    cr_assert_eq(w[1], 10);
    cr_assert_eq(w[2], 0);
    cr_assert_eq(w[3], 0);
    cr_assert_eq(top_cols_fit(cols, 4, 40, w), 4);
    cr_assert_eq(w[3], 40 - (7 + 10 + 8 + 3), "the flex column takes the rest");
    const char *cells[4] = {"123", "a_very_long_name", "1.5k", "cmd"};
    char row[128];
    top_cols_fit(cols, 4, 40, w);
    top_fmt_row(cols, w, 4, cells, 40, row);
    cr_assert_str_eq(row, "    123 a_very_lo\x0e     1.5k cmd         ", "cut with an ellipsis");
    for (int width = 0; width < 60; width++) {
        top_cols_fit(cols, 4, width, w);
        top_fmt_row(cols, w, 4, cells, width, row);
        cr_assert_eq((int)strlen(row), width, "row of width %d", width);
    }
}

/* ---- composed frames -------------------------------------------------------- */

static top_snapshot *fake_snapshot(int with_gpu, int nprocs)
{
    top_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->unix_s = 1.7e9;
    s->interval_s = 1.0;
    s->tel_ok = 1;
    snprintf(s->tel_dir, sizeof s->tel_dir, "/dev/shm/vyre-1000");
    if (with_gpu) {
        s->gpu_ok = 1;
        s->gpu.ngpus = s->gpu.ngpus_total = 2;
        snprintf(s->gpu.driver_version, sizeof s->gpu.driver_version, "580.65.06");
        for (int i = 0; i < 2; i++) {
            vyre_gpu_info *g = &s->gpu.gpus[i];
            g->index = i;
            g->valid = VYRE_GPU_F_NAME | VYRE_GPU_F_UTIL | VYRE_GPU_F_MEMORY |
                       VYRE_GPU_F_TEMPERATURE | VYRE_GPU_F_SM_CLOCK;
            snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
            g->util_gpu_pct = 40 + 10 * (unsigned)i;
            g->mem_used_bytes = 12ull << 30;
            g->mem_total_bytes = 80ull << 30;
            g->temperature_c = 45;
            g->sm_clock_mhz = 1980;
            for (int k = 0; k < 100; k++)
                top_gpu_hist_push(&s->gpu_hist[i], (uint8_t)(k % 101), TOP_HIST_UNKNOWN, 50);
        }
    } else {
        snprintf(s->gpu_msg, sizeof s->gpu_msg, "NVML not available");
    }
    s->nprocs = (size_t)nprocs;
    s->procs = calloc((size_t)(nprocs ? nprocs : 1), sizeof *s->procs);
    for (int i = 0; i < nprocs; i++) {
        top_proc *p = &s->procs[i];
        p->pid = 1000 + i;
        snprintf(p->name, sizeof p->name, "proc%d", i);
        snprintf(p->cmdline, sizeof p->cmdline, "proc%d --flag", i);
        p->device = i % 2;
        p->telemetry = 1;
        p->published = 1;
        p->launches_s = 100.0 * i;
        p->graphs_s = i ? 12 : NAN;
        p->d2d_mb_s = 2000;
        p->sm_util_pct = i ? 37 : NAN;
        p->cpu_pct = i ? 150 : NAN;
        if (i) { /* proc0: /proc unknown (another namespace), the rest known */
            p->host.uid_valid = p->host.rss_valid = 1;
            snprintf(p->host.user, sizeof p->host.user, "alice");
            p->host.rss_bytes = 3ull << 20;
        }
        p->dispatches_s = i ? 10.0 : NAN;
        p->h2d_mb_s = 1.5;
        p->d2h_mb_s = NAN;
        p->cache_hit_pct = 75;
        p->compile_saved_s = 3;
        p->has_delta = 1;
        cr_assert_eq(top_proc_ranges_alloc(p), 0);
        vyre_range_hist *h = &p->life[i % VYRE_RANGE_COUNT];
        h->count = 10;
        h->max_ns = 5000;
        h->buckets[vyre__hist_bucket_of(5000)] = 10; /* 4864..5119 ns */
        p->delta[i % VYRE_RANGE_COUNT] = *h;
        p->nkernels = 1;
        p->kernels = calloc(1, sizeof *p->kernels);
        snprintf(p->kernels[0].name, sizeof p->kernels[0].name, "kernel_%d", i % 3);
        p->kernels[0].calls = 4;
        p->kernels[0].total_ns = 4000;
        p->kernels[0].max_ns = 1500;
        p->kernels_new = p->kernels_seen = 4;
    }
    s->cache_state = TOP_CACHE_OK;
    s->cache.entries = 12;
    s->cache.bytes = 3u << 20;
    s->cache.hits = 30;
    s->cache.misses = 10;
    snprintf(s->cache_root, sizeof s->cache_root, "/home/u/.cache/vyre/ptx-cache");
    return s;
}

static void free_snapshot(top_snapshot *s)
{
    top_snapshot_release(s);
    free(s);
}

static void check_frame(const top_snapshot *s, int rows, int cols, top_ui *ui)
{
    top_grid g;
    cr_assert_eq(top_view_compose(s, ui, rows, cols, 0, &g), 0);
    cr_assert_eq(g.rows, rows);
    cr_assert_eq(g.cols, cols);
    for (int y = 0; y < rows; y++)
        cr_assert_eq((int)strlen(top_grid_row(&g, y)), cols, "%dx%d row %d", cols, rows, y);
    for (size_t i = 0; i < (size_t)rows * ((size_t)cols + 1); i++)
        cr_assert_lt(g.at[i], TOP_A_COUNT);
    /* The process panel is always there, with its title. */
    top_rect p = g.layout.panel[TOP_P_PROC];
    cr_assert_gt(p.h, 0);
    const char *title = top_grid_row(&g, p.y) + p.x;
    cr_assert(ui->help || strncmp(title, "> Processes", (size_t)(p.w < 11 ? p.w : 11)) == 0,
              "%dx%d: '%s'", cols, rows, title);
    cr_assert_geq(ui->sel[TOP_P_PROC], 0);
    cr_assert_lt(ui->sel[TOP_P_PROC], ui->nrows[TOP_P_PROC] > 0 ? ui->nrows[TOP_P_PROC] : 1);
    top_grid_release(&g);
}

/* Every height from 5 to 100 (every width from 20 to 300 at each 7th,
 * every 13th width otherwise), full and empty, one ui carried through as
 * a resized terminal carries it: about 11,000 frames, in four tests of a
 * quarter of the heights each so that the suite's jobs share them (one
 * test took 97 s of a busy machine). */
static void check_frames(top_ui *ui, int first_row, int last_row)
{
    top_snapshot *full = fake_snapshot(1, 40), *empty = fake_snapshot(0, 0);
    for (int rows = first_row; rows <= last_row; rows += 1)
        for (int cols = 20; cols <= 300; cols += (rows % 7 == 0 ? 1 : 13)) {
            check_frame(full, rows, cols, ui);
            check_frame(empty, rows, cols, ui);
        }
    free_snapshot(full);
    free_snapshot(empty);
}

static void frames_ui(top_ui *ui)
{
    top_ui_init(ui, 1.0);
    ui->sel[TOP_P_PROC] = 39;
}

Test(top_view, frames_fill_exactly_the_screen_at_every_size)
{
    top_ui ui;
    frames_ui(&ui);
    check_frames(&ui, 5, 28);
}

Test(top_view, frames_fill_exactly_the_screen_at_every_size_29_to_52_rows)
{
    top_ui ui;
    frames_ui(&ui);
    check_frames(&ui, 29, 52);
}

Test(top_view, frames_fill_exactly_the_screen_at_every_size_53_to_76_rows)
{
    top_ui ui;
    frames_ui(&ui);
    check_frames(&ui, 53, 76);
}

Test(top_view, frames_fill_exactly_the_screen_at_every_size_77_to_100_rows)
{
    top_ui ui;
    frames_ui(&ui);
    check_frames(&ui, 77, 100);
    /* The help screen, after the largest frames. */
    top_snapshot *full = fake_snapshot(1, 40);
    ui.help = 1;
    check_frame(full, 5, 20, &ui);
    check_frame(full, 24, 80, &ui);
    free_snapshot(full);
}

static const char *find_row(const top_grid *g, const char *needle)
{
    for (int y = 0; y < g->rows; y++)
        if (strstr(top_grid_row(g, y), needle))
            return top_grid_row(g, y);
    return NULL;
}

Test(top_view, rows_show_values_and_dashes_for_unknowns)
{
    top_snapshot *s = fake_snapshot(1, 2);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    /* proc0: dispatches/s and D2H unknown. Sorted by launches/s: proc1 first. */
    const char *r0 = find_row(&g, "   1000 -        proc0");
    const char *r1 = find_row(&g, "   1001 alice    proc1");
    cr_assert(r0 && r1 && r1 < r0);
    /* 100 columns: the host and GPU columns, launches and graphs, and the
     * command; proc0's /proc figures, SM% and GPU memory are unknown. */
    cr_assert_str_eq(r0, "   1000 -        proc0             0     -       -     -     -        0"
                         "       - proc0 --flag        ");
    top_grid_release(&g);
    /* 160 columns: every column. */
    cr_assert_eq(top_view_compose(s, &ui, 30, 160, 0, &g), 0);
    r1 = find_row(&g, "   1001 alice    proc1");
    cr_assert_not_null(r1);
    cr_assert_str_eq(r1, "   1001 alice    proc1             1 37.0%       -  150% 3.00M      100"
                         "      12       10      1.5        -     2000  75.0%   3.0s proc1 --flag"
                         "                  ");
    top_grid_release(&g);
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    const char *gpu = find_row(&g, "NVIDIA H100");
    cr_assert_not_null(gpu);
    cr_assert(strstr(gpu, "[||||   40%]"), "%s", gpu); /* 4 of 10 cells */
    cr_assert(strstr(gpu, "12.0G/80.0G"), "%s", gpu);
    cr_assert(strstr(gpu, " -/-W"), "unknown power: %s", gpu);
    cr_assert(strstr(gpu, "45C"), "%s", gpu);
    cr_assert_not_null(find_row(&g, "kernel_0"));
    cr_assert_not_null(find_row(&g, "vyre.cuda.codegen"));
    cr_assert_not_null(find_row(&g, "entries 12  size 3.00M  hit rate 75.0% (30 hits, 10 misses)"));
    top_grid_release(&g);

    /* Filter by pid: one process, and only its ranges and kernels. */
    snprintf(ui.filter, sizeof ui.filter, "1001");
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    cr_assert_null(find_row(&g, "proc0 "));
    cr_assert_not_null(find_row(&g, "proc1"));
    cr_assert_null(find_row(&g, "kernel_0"));
    cr_assert_not_null(find_row(&g, "kernel_1"));
    cr_assert_null(find_row(&g, "vyre.cuda.codegen"));
    cr_assert_not_null(find_row(&g, "Processes (1 of 2, filter '1001')"));
    top_grid_release(&g);

    /* A filter matching nothing says so in every panel it empties, not
     * "recorded yet" as if the processes had none. */
    snprintf(ui.filter, sizeof ui.filter, "nomatch");
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    cr_assert_not_null(find_row(&g, "no process matches 'nomatch' (/ to change, Esc to clear)"));
    cr_assert_not_null(find_row(&g, "no NVTX ranges in the processes matching 'nomatch'"));
    cr_assert_not_null(find_row(&g, "no kernel records in the processes matching 'nomatch'"));
    cr_assert_null(find_row(&g, "no NVTX ranges recorded yet"));
    top_grid_release(&g);
    free_snapshot(s);
}

Test(top_view, empty_states_say_what_to_do)
{
    top_snapshot *s = fake_snapshot(0, 0);
    s->cache_state = TOP_CACHE_MISSING;
    s->interval_s = NAN;
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 24, 100, 0, &g), 0);
    cr_assert_not_null(find_row(&g, "no NVIDIA GPU monitor: NVML not available"));
    cr_assert_not_null(
        find_row(&g, "no GPU process and no instrumented process: run vyre-bench, or link "
                     "libvyrecore"));
    cr_assert_not_null(
        find_row(&g, "or run any CUDA program with CUDA_INJECTION64_PATH=.../libvyre-inject.so"));
    cr_assert_not_null(find_row(&g, "no NVTX ranges recorded yet"));
    cr_assert_not_null(find_row(&g, "waiting for a second sample"));
    cr_assert_not_null(find_row(&g, "no pipeline cache at /home/u/.cache/vyre/ptx-cache yet"));
    top_grid_release(&g);
    free_snapshot(s);
}

Test(top_view, gpu_processes_show_when_telemetry_cannot_be_listed)
{
    /* NVML's processes still show; the title says why vyre's columns are
     * empty. */
    top_snapshot *s = fake_snapshot(1, 1);
    s->tel_ok = 0;
    snprintf(s->tel_msg, sizeof s->tel_msg, "telemetry directory 'x' is not a directory");
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 0, 160, TOP_VIEW_BATCH, &g), 0);
    cr_assert_not_null(find_row(&g, "   1000 -        proc0"));
    cr_assert_not_null(
        find_row(&g, "telemetry pages not listed: telemetry directory 'x' is not a directory"));
    top_grid_release(&g);
    free_snapshot(s);
}

Test(top_view, batch_frames_hold_every_row)
{
    top_snapshot *s = fake_snapshot(1, 40);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 0, 120, TOP_VIEW_BATCH, &g), 0);
    cr_assert_not_null(find_row(&g, "   1039 alice    proc39"));
    cr_assert_not_null(find_row(&g, "   1000 -        proc0"));
    cr_assert_null(find_row(&g, "> "), "no focus marker in batch output");
    top_grid_release(&g);
    free_snapshot(s);
}

/* ---- keys ----------------------------------------------------------------- */

Test(top_ui, keys_change_focus_sort_filter_pause_delay_and_help)
{
    top_ui ui;
    top_ui_init(&ui, 1.0);
    cr_assert_eq(ui.focus, TOP_P_PROC);
    cr_assert_eq(top_ui_key(&ui, 'q'), TOP_UI_QUIT);
    top_ui_key(&ui, TOP_KEY_TAB);
    cr_assert_eq(ui.focus, TOP_P_RANGE);
    top_ui_key(&ui, TOP_KEY_BTAB);
    top_ui_key(&ui, TOP_KEY_LEFT);
    cr_assert_eq(ui.focus, TOP_P_GPU);
    top_ui_key(&ui, TOP_KEY_RIGHT);
    top_ui_key(&ui, 's');
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "dispatches/s");
    top_ui_key(&ui, TOP_KEY_F6);
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "h2d");
    for (int i = 0; i < 6; i++)
        top_ui_key(&ui, 's');
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "sm%");
    top_ui_key(&ui, 's');
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "cpu%");
    top_ui_key(&ui, 's');
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "graphs/s");
    top_ui_key(&ui, 's');
    cr_assert_str_eq(top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]), "launches/s", "wraps");

    ui.nrows[TOP_P_PROC] = 5;
    ui.page[TOP_P_PROC] = 2;
    top_ui_key(&ui, TOP_KEY_DOWN);
    top_ui_key(&ui, TOP_KEY_PGDN);
    cr_assert_eq(ui.sel[TOP_P_PROC], 3);
    top_ui_key(&ui, TOP_KEY_END);
    cr_assert_eq(ui.sel[TOP_P_PROC], 4);
    top_ui_key(&ui, TOP_KEY_UP);
    top_ui_key(&ui, TOP_KEY_HOME);
    cr_assert_eq(ui.sel[TOP_P_PROC], 0);

    /* Filter: typed text applies on Enter, Esc cancels the edit. */
    top_ui_key(&ui, '/');
    cr_assert(ui.editing);
    top_ui_key(&ui, 'a');
    top_ui_key(&ui, 'q'); /* typed, not quit */
    top_ui_key(&ui, 'b');
    top_ui_key(&ui, TOP_KEY_BACKSPACE);
    cr_assert_str_eq(ui.filter, "");
    cr_assert(top_ui_key(&ui, TOP_KEY_ENTER) & TOP_UI_FILTER);
    cr_assert_str_eq(ui.filter, "aq");
    cr_assert(!ui.editing);
    top_ui_key(&ui, '/');
    top_ui_key(&ui, 'z');
    top_ui_key(&ui, TOP_KEY_ESC);
    cr_assert_str_eq(ui.filter, "aq", "Esc cancels the edit");
    top_ui_key(&ui, TOP_KEY_ESC);
    cr_assert_str_eq(ui.filter, "", "Esc outside the prompt clears");

    top_ui_key(&ui, 'p');
    cr_assert(ui.paused);
    top_ui_key(&ui, 'p');
    cr_assert(!ui.paused);
    cr_assert(top_ui_key(&ui, '+') & TOP_UI_DELAY);
    cr_assert_float_eq(ui.delay_s, 2.0, 1e-9);
    top_ui_key(&ui, '-');
    top_ui_key(&ui, '-');
    cr_assert_float_eq(ui.delay_s, 0.5, 1e-9);
    for (int i = 0; i < 10; i++)
        top_ui_key(&ui, '-');
    cr_assert_float_eq(ui.delay_s, TOP_DELAY_MIN, 1e-9);
    cr_assert_float_eq(top_delay_step(3600, 1), TOP_DELAY_MAX, 1e-9);

    top_ui_key(&ui, '?');
    cr_assert(ui.help);
    cr_assert_eq(top_ui_key(&ui, 'x'), TOP_UI_REDRAW);
    cr_assert(!ui.help);
    top_ui_key(&ui, 'h');
    cr_assert_eq(top_ui_key(&ui, 'q'), TOP_UI_QUIT, "q quits from the help too");
    cr_assert(top_ui_key(&ui, TOP_KEY_RESIZE) & TOP_UI_RESIZE);
}

Test(top_ui, no_color_turns_colour_off_when_set_and_not_empty)
{
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_ui_apply_env(&ui, NULL);
    cr_assert_not(ui.mono, "unset: colour");
    top_ui_apply_env(&ui, "");
    cr_assert_not(ui.mono, "empty: colour (no-color.org)");
    top_ui_apply_env(&ui, "1");
    cr_assert(ui.mono);
    top_ui_init(&ui, 1.0);
    top_ui_apply_env(&ui, "0");
    cr_assert(ui.mono, "any non-empty value, \"0\" included");
}

Test(top_ui, k_asks_then_sends_only_on_y)
{
    top_snapshot *s = fake_snapshot(1, 2);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    /* Nothing selected yet: k explains itself. */
    cr_assert_eq(top_ui_key(&ui, 'k'), TOP_UI_REDRAW);
    cr_assert_not(ui.confirm_kill);
    cr_assert(strstr(ui.msg, "select a process"), "%s", ui.msg);
    /* The view names the selected row: proc1 (most launches/s) first. */
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    top_grid_release(&g);
    cr_assert_eq(ui.sel_pid, 1001);
    cr_assert_str_eq(ui.sel_name, "proc1");
    cr_assert_eq(top_ui_key(&ui, 'k'), TOP_UI_REDRAW);
    cr_assert(ui.confirm_kill);
    cr_assert_eq(ui.kill_pid, 1001);
    cr_assert_eq(top_view_compose(s, &ui, 30, 100, 0, &g), 0);
    /* It asks which signal (issue 37). */
    cr_assert_not_null(find_row(&g, "Send which signal to 1001 (proc1)? t TERM  i INT  K KILL"));
    top_grid_release(&g);
    /* n (or anything but y) cancels; q does not quit from the question. */
    unsigned what = top_ui_key(&ui, 'n');
    cr_assert_not(what & TOP_UI_KILL);
    cr_assert_not(ui.confirm_kill);
    cr_assert(strstr(ui.msg, "not sent"), "%s", ui.msg);
    top_ui_key(&ui, 'k');
    cr_assert_not(top_ui_key(&ui, 'q') & (TOP_UI_QUIT | TOP_UI_KILL));
    top_ui_key(&ui, 'k');
    what = top_ui_key(&ui, 'y');
    cr_assert(what & TOP_UI_KILL);
    cr_assert_not(ui.confirm_kill);
    cr_assert_eq(ui.kill_pid, 1001);
    cr_assert_eq(ui.kill_sig, SIGTERM);
    static const struct {
        int key, sig;
    } answers[] = {{'t', SIGTERM}, {'i', SIGINT}, {'K', SIGKILL}, {'9', SIGKILL}};
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        top_ui_key(&ui, 'k');
        cr_assert(top_ui_key(&ui, answers[i].key) & TOP_UI_KILL);
        cr_assert_eq(ui.kill_sig, answers[i].sig, "key %c", answers[i].key);
    }
    top_ui_key(&ui, 'k');
    cr_assert_not(top_ui_key(&ui, 'h') & TOP_UI_KILL, "h is not a signal: none sent");
    /* Another panel's selection is not a process. */
    ui.msg[0] = '\0';
    top_ui_key(&ui, TOP_KEY_TAB);
    cr_assert_eq(top_ui_key(&ui, 'k'), TOP_UI_REDRAW);
    cr_assert_not(ui.confirm_kill);
    /* k no longer moves the selection up (it did, vi-style). */
    top_ui_key(&ui, TOP_KEY_BTAB);
    ui.nrows[TOP_P_PROC] = 2;
    ui.sel[TOP_P_PROC] = 1;
    top_ui_key(&ui, 'k');
    cr_assert_eq(ui.sel[TOP_P_PROC], 1);
    free_snapshot(s);
}

Test(top_view, gpu_history_shows_util_memory_and_power_in_80_columns)
{
    top_snapshot *s = fake_snapshot(1, 1);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    const char *h = find_row(&g, "    util ");
    cr_assert_not_null(h);
    const char *mem = strstr(h, "  mem "), *pw = strstr(h, "  power ");
    cr_assert(mem && pw && mem < pw, "%s", h);
    cr_assert_eq((int)strlen(h), 80);
    /* Power was 50% in every sample: a full run of the same level, the
     * newest at the right edge; memory was unknown: blank. */
    cr_assert(TOP_IS_SPARK(h[79]), "power sparkline at the right edge");
    for (const char *c = mem + 6; c < pw; c++)
        cr_assert_eq(*c, ' ', "unknown memory samples are blank: %s", h);
    cr_assert(TOP_IS_SPARK(mem[-1]), "utilisation ends where memory begins");
    top_grid_release(&g);
    free_snapshot(s);
}

/* ---- aggregation ---------------------------------------------------------- */

Test(top_collect, rates_ranges_and_kernels_aggregate_honestly)
{
    /* Rates are the telemetry tracker's (test_telemetry_tracker.c). */
    /* A ring that overflowed: each kept record stands for recorded/seen. */
    cr_assert_float_eq(vyre_telemetry_kernel_scale(4, 10), 2.5, 1e-12);
    cr_assert_float_eq(vyre_telemetry_kernel_scale(4, 4), 1.0, 1e-12, "no overflow: exact");
    cr_assert_float_eq(vyre_telemetry_kernel_scale(0, 10), 1.0, 1e-12,
                       "nothing kept: nothing to scale");
    cr_assert_float_eq(vyre_telemetry_kernel_scale(10, 4), 1.0, 1e-12, "never scaled down");

    top_snapshot *s = fake_snapshot(0, 3); /* kernel_0, kernel_1, kernel_2 */
    s->procs[2].kernels[0].total_ns = 12000;
    s->procs[2].kernels[0].max_ns = 9000;
    s->procs[2].kernels_new = 10; /* the ring lost 6 of 10 */
    top_kernel *k = NULL;
    int sampled = 0;
    size_t n = top_aggregate_kernels(s, NULL, &k, &sampled);
    cr_assert_eq(n, 3);
    cr_assert(sampled);
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += k[i].share_pct;
    cr_assert_float_eq(total, 100.0, 1e-9);
    /* kernel_0 and kernel_1 were all seen: exact. */
    for (size_t i = 0; i < 2; i++) {
        cr_assert_float_eq(k[i].calls_s, 4.0, 1e-9);
        cr_assert_not(k[i].estimated);
        cr_assert_float_eq(k[i].share_pct, 100.0 * 4000 / 38000, 1e-9);
    }
    /* kernel_2: 4 seen of 10 recorded in 1 s: 10 calls/s, an estimate, and
     * its time scaled alike (30000 of 38000 ns) for its share. */
    cr_assert_float_eq(k[2].calls_s, 10.0, 1e-9);
    cr_assert(k[2].estimated);
    cr_assert_float_eq(k[2].share_pct, 100.0 * 30000 / 38000, 1e-9);
    cr_assert_eq(k[2].calls, 4, "the raw count stays what was seen");
    cr_assert_float_eq(k[2].mean_ns, 3000.0, 1e-9, "the mean is of real records");
    cr_assert_eq(k[2].max_ns, 9000);
    free(k);
    /* The kernel table marks the estimate with '~'. */
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 0, 120, TOP_VIEW_BATCH, &g), 0);
    const char *r2 = find_row(&g, "kernel_2");
    const char *r0 = find_row(&g, "kernel_0");
    cr_assert(r2 && strstr(r2, " ~10 "), "%s", r2 ? r2 : "(none)");
    cr_assert(r0 && !strchr(r0, '~'), "%s", r0 ? r0 : "(none)");
    cr_assert_not_null(find_row(&g, "ring overflowed: ~ estimated"));
    top_grid_release(&g);

    unsigned char keep[3] = {1, 0, 0};
    n = top_aggregate_kernels(s, keep, &k, &sampled);
    cr_assert_eq(n, 1);
    cr_assert(!sampled);
    cr_assert_str_eq(k[0].name, "kernel_0");
    free(k);

    top_range r[VYRE_RANGE_COUNT];
    cr_assert_eq(top_aggregate_ranges(s, NULL, r), 3);
    cr_assert_eq(r[0].count, 10);
    cr_assert_float_eq(r[0].count_s, 10.0, 1e-9);
    cr_assert(r[0].window);
    cr_assert(r[0].p50_ns >= 4864 && r[0].p50_ns <= 5000,
              "inside the bucket, capped by the max: %llu", (unsigned long long)r[0].p50_ns);
    cr_assert_eq(r[0].max_ns, 5000);
    cr_assert_eq(top_aggregate_ranges(s, keep, r), 1);
    cr_assert_eq(r[1].count, 0);
    free_snapshot(s);

    top_gpu_hist h = {0};
    cr_assert_eq(top_gpu_hist_util(&h, 0), TOP_HIST_UNKNOWN);
    for (int i = 0; i < TOP_GPU_HIST + 5; i++)
        top_gpu_hist_push(&h, (uint8_t)(i % 100), 0, (uint8_t)(99 - i % 100));
    cr_assert_eq(h.len, TOP_GPU_HIST);
    cr_assert_eq(top_gpu_hist_util(&h, 0), 5, "the oldest five were overwritten");
    cr_assert_eq(top_gpu_hist_power(&h, 0), 94);
    cr_assert_eq(top_gpu_hist_mem(&h, 1), 0);
    cr_assert_eq(top_gpu_hist_power(&h, TOP_GPU_HIST - 1), 99 - (TOP_GPU_HIST + 4) % 100);
    cr_assert_eq(top_gpu_hist_power(&h, TOP_GPU_HIST), TOP_HIST_UNKNOWN);
    cr_assert_eq(top_gpu_hist_util(&h, TOP_GPU_HIST - 1), (TOP_GPU_HIST + 4) % 100);
}

/* ---- the caches' sizes in the cache panel -------------------------------- */

static void add_usage(top_snapshot *s, uint64_t rounds)
{
    static const char *const names[] = {"vyre", "cuda_jit", "triton", "inductor"};
    s->usage_on = 1;
    s->usage_every_s = 30;
    s->usage_age_s = 5;
    s->usage.rounds = rounds;
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        tool_usage_fig *f = &s->usage.c[i];
        f->where.name = names[i];
        f->where.located = 1;
        f->where.path_from = "HOME";
        snprintf(f->where.path, sizeof f->where.path, "/home/u/cache-%s", names[i]);
        f->u.exists = 1;
        f->u.bytes = 1000u * (unsigned)(i + 1);
        f->u.files = 3;
        f->u.fs_valid = 1;
        f->u.fs_size_bytes = 1000000;
        /* triton's filesystem (/tmp, say) is 95% full, the others 50% */
        f->u.fs_free_bytes = f->u.fs_avail_bytes = i == VYRE_USAGE_TRITON ? 50000 : 500000;
    }
}

/* The row holding needle, and its first cell's attribute. */
static int row_attr_of(const top_grid *g, const char *needle, int *attr)
{
    for (int y = 0; y < g->rows; y++) {
        const char *row = top_grid_row(g, y);
        const char *p = strstr(row, needle);
        if (p) {
            *attr = g->at[(size_t)y * ((size_t)g->cols + 1) + (size_t)(p - row)];
            return y;
        }
    }
    return -1;
}

Test(top_view, cache_sizes_rows_and_warning_colour)
{
    top_snapshot *s = fake_snapshot(1, 2);
    add_usage(s, 1);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 50, 160, 0, &g), 0);
    cr_assert_not_null(find_row(&g, "Pipeline cache; cache sizes every 30.0s, 5.0s ago"));
    int a = -1;
    int yt = row_attr_of(&g, "triton  ", &a);
    cr_assert_geq(yt, 0);
    cr_assert_eq(a, TOP_A_WARN, "a 95%% full filesystem: %s", top_grid_row(&g, yt));
    cr_assert(strstr(top_grid_row(&g, yt), "fs 95% full"), "%s", top_grid_row(&g, yt));
    int yv = row_attr_of(&g, "vyre    ", &a);
    cr_assert_geq(yv, 0);
    cr_assert_eq(a, TOP_A_NORMAL, "%s", top_grid_row(&g, yv));
    cr_assert_geq(row_attr_of(&g, "cuda_jit", &a), 0);
    cr_assert_geq(row_attr_of(&g, "inductor", &a), 0);
    /* The pipeline cache's own rows are still there, after the sizes. */
    int yq = row_attr_of(&g, "quarantined 0", &a);
    cr_assert_gt(yq, yt);
    cr_assert_not_null(find_row(&g, "root /home/u/.cache/vyre/ptx-cache"));
    top_grid_release(&g);

    /* No pipeline cache yet: the sizes still show (a full /tmp is no less
     * full for it). */
    s->cache_state = TOP_CACHE_MISSING;
    cr_assert_eq(top_view_compose(s, &ui, 50, 160, 0, &g), 0);
    cr_assert_not_null(find_row(&g, "no pipeline cache at"));
    cr_assert_geq(row_attr_of(&g, "triton  ", &a), 0);
    cr_assert_eq(a, TOP_A_WARN);
    top_grid_release(&g);

    /* Before the first round: one row says so. */
    s->usage.rounds = 0;
    s->usage_age_s = NAN;
    cr_assert_eq(top_view_compose(s, &ui, 50, 160, 0, &g), 0);
    cr_assert_not_null(find_row(&g, "cache sizes: measuring (vyre, cuda_jit, triton, inductor)"));
    cr_assert_not_null(find_row(&g, "Pipeline cache; cache sizes every 30.0s "));
    cr_assert_null(find_row(&g, "triton  "));
    top_grid_release(&g);

    /* --no-cache-usage: the panel as it was. */
    s->usage_on = 0;
    cr_assert_eq(top_view_compose(s, &ui, 50, 160, 0, &g), 0);
    cr_assert_null(find_row(&g, "cache sizes"));
    top_grid_release(&g);
    free_snapshot(s);
}

Test(top_view, frames_with_cache_sizes_fill_exactly_the_screen)
{
    top_snapshot *s = fake_snapshot(1, 10);
    add_usage(s, 3);
    top_ui ui;
    top_ui_init(&ui, 1.0);
    for (int rows = 5; rows <= 80; rows += 3)
        for (int cols = 20; cols <= 300; cols += 17)
            check_frame(s, rows, cols, &ui);
    /* Tall enough: the panel asks for its four rows and gets them. */
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 80, 120, 0, &g), 0);
    cr_assert_geq(g.layout.panel[TOP_P_CACHE].h, 1 + 3 + VYRE_USAGE_N_CACHES);
    top_grid_release(&g);
    free_snapshot(s);
}
