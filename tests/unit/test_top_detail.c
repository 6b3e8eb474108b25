/*
 * test_top_detail.c - the detail view's data and layout (issue 37, point
 * 3): the per-process history ring and the set that keeps one per process
 * (bounded, dropped when the process goes), and the view at four
 * terminal sizes (start time, CUDA_VISIBLE_DEVICES, a memory and an SM%
 * sparkline per GPU that grow with the width).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collect.h"
#include "format.h"
#include "prochist.h"
#include "testutil.h"
#include "ui.h"
#include "view.h"

/* ---- the ring --------------------------------------------------------- */

Test(top_detail, ring_keeps_the_newest_samples_oldest_first)
{
    top_proc_hist h;
    memset(&h, 0, sizeof h);
    cr_assert_eq(top_proc_hist_mem(&h, 0), TOP_PROC_HIST_UNKNOWN, "empty");
    top_proc_hist_push(&h, 10, 20);
    top_proc_hist_push(&h, 11, TOP_PROC_HIST_UNKNOWN);
    cr_assert_eq(h.len, 2);
    cr_assert_eq(top_proc_hist_mem(&h, 0), 10);
    cr_assert_eq(top_proc_hist_sm(&h, 0), 20);
    cr_assert_eq(top_proc_hist_mem(&h, 1), 11);
    cr_assert_eq(top_proc_hist_sm(&h, 1), TOP_PROC_HIST_UNKNOWN);
    cr_assert_eq(top_proc_hist_mem(&h, 2), TOP_PROC_HIST_UNKNOWN, "past the end");
    /* Past its size it wraps: the oldest go, the length stays bounded. */
    for (unsigned i = 0; i < TOP_PROC_HIST + 5; i++)
        top_proc_hist_push(&h, (uint8_t)(i % 100), (uint8_t)((i + 1) % 100));
    cr_assert_eq(h.len, TOP_PROC_HIST);
    cr_assert_eq(top_proc_hist_mem(&h, 0), 5 % 100);
    cr_assert_eq(top_proc_hist_sm(&h, 0), 6 % 100);
    cr_assert_eq(top_proc_hist_mem(&h, TOP_PROC_HIST - 1), (TOP_PROC_HIST + 4) % 100);
    cr_assert_eq(top_proc_hist_mem(&h, TOP_PROC_HIST), TOP_PROC_HIST_UNKNOWN);
}

/* ---- the set ---------------------------------------------------------- */

/* Two GPUs of 1000 MiB and 2000 MiB (NVML indices 0 and 1). */
static void two_gpus(vyre_gpu_snapshot *g)
{
    memset(g, 0, sizeof *g);
    g->ngpus = g->ngpus_total = 2;
    for (int i = 0; i < 2; i++) {
        g->gpus[i].index = (unsigned)i;
        g->gpus[i].valid = VYRE_GPU_F_MEMORY;
        g->gpus[i].mem_total_bytes = (uint64_t)(i + 1) * 1000 * (1ull << 20);
    }
}

Test(top_detail, set_keeps_one_entry_per_live_process_and_drops_the_gone)
{
    vyre_gpu_snapshot *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    two_gpus(g);
    vyre_gpu_proc_dev a[2] = {{0, 1, 500ull << 20, 1, 30}, {1, 1, 500ull << 20, 0, 0}};
    vyre_gpu_proc_dev b[1] = {{1, 0, 0, 1, 150}};
    top_proc_sample smp[2] = {{100, 7, a, 2}, {200, 9, b, 1}};
    top_proc_keep_set set = {0};
    cr_assert_eq(top_proc_keep_update(&set, smp, 2, g), 0);
    cr_assert_eq(set.n, 2);
    top_proc_keep *e = top_proc_keep_find(&set, 100);
    cr_assert_not_null(e);
    cr_assert(e->fresh, "new: its environment is still to be read");
    cr_assert_eq(e->nhist, 2);
    cr_assert_eq(e->hist[0].device, 0);
    cr_assert_eq(top_proc_hist_mem(&e->hist[0], 0), 50, "500 of 1000 MiB");
    cr_assert_eq(top_proc_hist_sm(&e->hist[0], 0), 30);
    cr_assert_eq(top_proc_hist_mem(&e->hist[1], 0), 25, "500 of 2000 MiB");
    cr_assert_eq(top_proc_hist_sm(&e->hist[1], 0), TOP_PROC_HIST_UNKNOWN, "no SM sample");
    e = top_proc_keep_find(&set, 200);
    cr_assert_eq(top_proc_hist_mem(&e->hist[0], 0), TOP_PROC_HIST_UNKNOWN, "memory unknown");
    cr_assert_eq(top_proc_hist_sm(&e->hist[0], 0), 100, "clamped");
    e->env.state = VYRE_PROC_ENV_SET; /* what the collector does with a fresh one */
    /* Next collection: 100 left GPU 1 (an unknown sample there), 200 the same
     * process (same start): its entry and environment are kept. */
    smp[0].ngpus = 1;
    cr_assert_eq(top_proc_keep_update(&set, smp, 2, g), 0);
    e = top_proc_keep_find(&set, 100);
    cr_assert_not(e->fresh);
    cr_assert_eq(e->hist[0].len, 2);
    cr_assert_eq(e->hist[1].len, 2);
    cr_assert_eq(top_proc_hist_mem(&e->hist[1], 1), TOP_PROC_HIST_UNKNOWN);
    cr_assert_eq(top_proc_keep_find(&set, 200)->env.state, VYRE_PROC_ENV_SET);
    /* pid 200 reused by another process (another start): a new entry;
     * pid 100 gone: its entry is freed. */
    smp[1].start_ticks = 10;
    cr_assert_eq(top_proc_keep_update(&set, &smp[1], 1, g), 0);
    cr_assert_eq(set.n, 1);
    cr_assert_null(top_proc_keep_find(&set, 100));
    e = top_proc_keep_find(&set, 200);
    cr_assert(e->fresh);
    cr_assert_eq(e->env.state, VYRE_PROC_ENV_UNKNOWN);
    cr_assert_eq(e->hist[0].len, 1);
    /* No GPU snapshot: memory percent unknown, the rest still taken. */
    cr_assert_eq(top_proc_keep_update(&set, smp, 1, NULL), 0);
    e = top_proc_keep_find(&set, 100);
    cr_assert_eq(top_proc_hist_mem(&e->hist[0], 0), TOP_PROC_HIST_UNKNOWN);
    cr_assert_eq(top_proc_hist_sm(&e->hist[0], 0), 30);
    /* Nothing listed: nothing kept. */
    cr_assert_eq(top_proc_keep_update(&set, NULL, 0, g), 0);
    cr_assert_eq(set.n, 0);
    cr_assert_null(top_proc_keep_find(&set, 200));
    top_proc_keep_set_release(&set);
    free(g);
}

/* A process's parent and command line are read when it is new, then once
 * every TOP_PROC_REREAD updates, the processes' reads spread over them. */
Test(top_detail, parent_and_command_line_are_reread_every_few_updates)
{
    top_proc_sample smp[TOP_PROC_REREAD];
    for (int i = 0; i < TOP_PROC_REREAD; i++)
        smp[i] = (top_proc_sample){100 + i, 1, NULL, 0};
    top_proc_keep_set set = {0};
    int due[TOP_PROC_REREAD] = {0};
    for (int round = 0; round < 3 * TOP_PROC_REREAD; round++) {
        cr_assert_eq(top_proc_keep_update(&set, smp, TOP_PROC_REREAD, NULL), 0);
        int now = 0;
        for (int i = 0; i < TOP_PROC_REREAD; i++) {
            top_proc_keep *e = top_proc_keep_find(&set, 100 + i);
            if (round == 0)
                cr_assert(top_proc_keep_due(e), "a new process is read at once");
            else if (top_proc_keep_due(e)) {
                due[i]++;
                now++;
            }
            e->fresh = 0; /* as the collector does */
        }
        if (round > 0)
            cr_assert_eq(now, 1, "round %d: one of the %d read (spread), not all", round,
                         TOP_PROC_REREAD);
    }
    for (int i = 0; i < TOP_PROC_REREAD; i++)
        cr_assert_geq(due[i], 2, "each re-read every %d updates", TOP_PROC_REREAD);
    top_proc_keep_set_release(&set);
}

Test(top_detail, started_shows_the_time_and_how_long_ago)
{
    setenv("TZ", "UTC", 1);
    tzset();
    char b[96];
    top_fmt_started(1700000000, 1700000000 + 3 * 3600 + 125, b, sizeof b);
    cr_assert_str_eq(b, "2023-11-14 22:13:20 (3h 02m ago)");
    top_fmt_started(1700000000, 1700000042.9, b, sizeof b);
    cr_assert_str_eq(b, "2023-11-14 22:13:20 (42s ago)");
    top_fmt_started(1700000000, 1700000000 + 2 * 86400 + 7200, b, sizeof b);
    cr_assert_str_eq(b, "2023-11-14 22:13:20 (2d 02h ago)");
    top_fmt_started(1700000000, 1700000000 + 61, b, sizeof b);
    cr_assert_str_eq(b, "2023-11-14 22:13:20 (1m 01s ago)");
    top_fmt_started(1700000000, 1600000000, b, sizeof b);
    cr_assert_str_eq(b, "2023-11-14 22:13:20", "a clock that went back: no 'ago'");
    top_fmt_started(NAN, 1700000000, b, sizeof b);
    cr_assert_str_eq(b, "unknown");
    top_fmt_started(0, 1700000000, b, sizeof b);
    cr_assert_str_eq(b, "unknown");
}

/* ---- the view --------------------------------------------------------- */

#define ROW_MAX 1100

/* One process (pid 4242) on GPUs 0 and 1 with a history on each: memory
 * rising 0..99 on GPU 0, SM% falling; unknown throughout on GPU 1 but the
 * newest sample. */
static top_snapshot *snap(void)
{
    top_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->tel_ok = 1;
    s->interval_s = 1.0;
    s->unix_s = 1700000000 + 3725;
    s->nprocs = 1;
    s->procs = calloc(1, sizeof *s->procs);
    cr_assert_not_null(s->procs);
    top_proc *p = &s->procs[0];
    p->pid = 4242;
    snprintf(p->name, sizeof p->name, "two_gpu_proc");
    snprintf(p->cmdline, sizeof p->cmdline, "two_gpu_proc --train");
    p->host.uid_valid = 1;
    snprintf(p->host.user, sizeof p->host.user, "alice");
    p->cpu_pct = p->sm_util_pct = p->launches_s = p->graphs_s = p->dispatches_s = NAN;
    p->h2d_mb_s = p->d2h_mb_s = p->d2d_mb_s = p->cache_hit_pct = p->compile_saved_s = NAN;
    p->start_unix = 1700000000;
    p->cuda_visible.state = VYRE_PROC_ENV_SET;
    snprintf(p->cuda_visible.value, sizeof p->cuda_visible.value, "0,1");
    p->ngpus = 2;
    p->gpus[0] = (vyre_gpu_proc_dev){0, 1, 512ull << 20, 1, 20};
    p->gpus[1] = (vyre_gpu_proc_dev){1, 1, 1ull << 30, 1, 37};
    p->nhist = 2;
    p->hist = calloc(2, sizeof *p->hist);
    cr_assert_not_null(p->hist);
    p->hist[0].device = 0;
    p->hist[1].device = 1;
    for (unsigned i = 0; i < 100; i++) {
        top_proc_hist_push(&p->hist[0], (uint8_t)i, (uint8_t)(99 - i));
        top_proc_hist_push(&p->hist[1], TOP_PROC_HIST_UNKNOWN,
                           i == 99 ? 100 : TOP_PROC_HIST_UNKNOWN);
    }
    return s;
}

/* The row holding needle, or NULL. */
static const char *row_with(const top_grid *g, const char *needle)
{
    for (int y = 0; y < g->rows; y++)
        if (strstr(top_grid_row(g, y), needle))
            return top_grid_row(g, y);
    return NULL;
}

/* The history rows ("    memory " then sparklines), in order. */
static int history_rows(const top_grid *g, const char **out, int max)
{
    int n = 0;
    for (int y = 0; y < g->rows && n < max; y++)
        if (strncmp(top_grid_row(g, y), "    memory ", 11) == 0)
            out[n++] = top_grid_row(g, y);
    return n;
}

/* The cells of row r from x on that are spark levels or blank, up to the
 * next text (max at most): their levels into lv (0 blank); how many. */
static int spark_run(const char *r, int x, int *lv, int max)
{
    int n = 0;
    while (r[x + n] && n < max && (TOP_IS_SPARK(r[x + n]) || r[x + n] == ' ') &&
           strncmp(r + x + n, "  SM ", 5) != 0) {
        lv[n] = r[x + n] == ' ' ? 0 : r[x + n];
        n++;
    }
    return n;
}

Test(top_detail, view_shows_start_env_and_a_history_per_gpu_at_every_size)
{
    setenv("TZ", "UTC", 1);
    tzset();
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    ui.detail = 1;
    ui.detail_pid = 4242;
    static const int sizes[][2] = {{24, 80}, {40, 120}, {50, 200}, {80, 300}};
    int prev_w = 0;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int rows = sizes[z][0], cols = sizes[z][1];
        top_grid g;
        cr_assert_eq(top_view_compose(s, &ui, rows, cols, 0, &g), 0);
        cr_assert_not_null(row_with(&g, "  started  2023-11-14 22:13:20 (1h 02m ago)"), "%dx%d",
                           cols, rows);
        cr_assert_not_null(row_with(&g, "  CUDA_VISIBLE_DEVICES 0,1"));
        const char *h[4];
        cr_assert_eq(history_rows(&g, h, 4), 2, "%dx%d: one history row per GPU", cols, rows);
        /* Each under its GPU's line. */
        const char *g0 = row_with(&g, "GPU 0: memory 512M, SM 20.0%");
        const char *g1 = row_with(&g, "GPU 1: memory 1.00G, SM 37.0%");
        cr_assert(g0 && g1);
        cr_assert_eq(h[0], g0 + (size_t)g.cols + 1, "GPU 0's history right below it");
        cr_assert_eq(h[1], g1 + (size_t)g.cols + 1);
        /* Two sparklines of one width, as wide as the view allows (the
         * ring's length at most); newest right. */
        int lv[ROW_MAX], lv2[ROW_MAX];
        int w1 = spark_run(h[0], 11, lv, ROW_MAX);
        cr_assert_eq(strncmp(h[0] + 11 + w1, "  SM ", 5), 0, "%dx%d: '%s'", cols, rows, h[0]);
        int w2 = spark_run(h[0], 11 + w1 + 5, lv2, w1);
        cr_assert_eq(w1, w2);
        int want = (cols - 16) / 2 > TOP_PROC_HIST ? TOP_PROC_HIST : (cols - 16) / 2;
        cr_assert_eq(w1, want, "%dx%d: width %d", cols, rows, w1);
        cr_assert_geq(w1, prev_w, "grows with the width");
        prev_w = w1;
        cr_assert_leq(11 + w1 + 5 + w2, cols, "inside the row");
        /* Memory rises to the right (the newest is highest), SM% falls. */
        cr_assert_gt(lv[w1 - 1], lv[w1 > 100 ? w1 - 100 : 0]);
        cr_assert_lt(lv2[w2 - 1], lv2[w2 > 100 ? w2 - 100 : 0]);
        if (w1 > 100)
            cr_assert_eq(lv[w1 - 101], 0, "no sample: blank");
        /* GPU 1: memory unknown throughout (blank), SM% known once, newest. */
        w1 = spark_run(h[1], 11, lv, ROW_MAX);
        for (int i = 0; i < w1; i++)
            cr_assert_eq(lv[i], 0);
        w2 = spark_run(h[1], 11 + w1 + 5, lv2, w1);
        cr_assert_eq(w2, w1);
        cr_assert_eq(lv2[w2 - 1], TOP_SPARK_MAX);
        cr_assert_eq(lv2[w2 - 2], 0);
        top_grid_release(&g);
    }
    /* The other states of CUDA_VISIBLE_DEVICES, never guessed. */
    static const struct {
        int state;
        const char *text;
    } env[] = {
        {VYRE_PROC_ENV_UNSET, "  CUDA_VISIBLE_DEVICES not set (every GPU visible)"},
        {VYRE_PROC_ENV_UNREADABLE, "  CUDA_VISIBLE_DEVICES not readable (/proc/4242/environ)"},
        {VYRE_PROC_ENV_UNKNOWN, "  CUDA_VISIBLE_DEVICES unknown"}};
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        s->procs[0].cuda_visible.state = env[i].state;
        top_grid g;
        cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
        cr_assert_not_null(row_with(&g, env[i].text), "%s", env[i].text);
        top_grid_release(&g);
    }
    /* No history yet (a first frame): no history row, the rest as before;
     * an unknown start says so. */
    s->procs[0].nhist = 0;
    s->procs[0].start_unix = NAN;
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    const char *h[4];
    cr_assert_eq(history_rows(&g, h, 4), 0);
    cr_assert_not_null(row_with(&g, "  started  unknown"));
    cr_assert_not_null(row_with(&g, "GPU 1: memory 1.00G, SM 37.0%"));
    top_grid_release(&g);
    top_snapshot_release(s);
    free(s);
}
