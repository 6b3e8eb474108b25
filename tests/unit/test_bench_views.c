/*
 * test_bench_views.c - the three views of a GPU point's time (issue 23):
 * the batch view's shape (vyre__bench_batch_plan), the rule that makes a
 * point say its event and CUPTI times disagree, and the storage of the
 * views in the results database (db/results_v4.sql): batch and blocking-
 * kernel timeouts written with the point, the kernel view computed from
 * the kernel pass's records.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/bench.h"

/* ---- the batch view's shape ------------------------------------------------------ */

Test(bench_views, batch_fills_the_target_with_capped_launches_per_pair)
{
    unsigned l = 0, p = 0;
    /* 2.4 us kernels, 100 ms: 41667 launches, 256 a pair, at most 64 pairs. */
    vyre__bench_batch_plan(2400, 100e6, &l, &p);
    cr_assert_eq(l, VYRE__BENCH_BATCH_LAUNCHES_MAX);
    cr_assert_eq(p, VYRE__BENCH_BATCH_PAIRS_MAX);
    /* 50 us, 10 ms: 200 launches in one pair. */
    vyre__bench_batch_plan(50e3, 10e6, &l, &p);
    cr_assert_eq(l, 200);
    cr_assert_eq(p, 1);
    /* 20 us, 10 ms: 500 launches: two pairs of 256 cover it. */
    vyre__bench_batch_plan(20e3, 10e6, &l, &p);
    cr_assert_eq(l, 256);
    cr_assert_eq(p, 2);
    /* A launch longer than the target: one launch, one pair. */
    vyre__bench_batch_plan(200e6, 10e6, &l, &p);
    cr_assert_eq(l, 1);
    cr_assert_eq(p, 1);
}

Test(bench_views, batch_of_nonsense_times_is_one_launch)
{
    unsigned l = 9, p = 9;
    vyre__bench_batch_plan(0, 10e6, &l, &p);
    cr_assert(l == 1 && p == 1);
    l = p = 9;
    vyre__bench_batch_plan(NAN, 10e6, &l, &p);
    cr_assert(l == 1 && p == 1);
    l = p = 9;
    vyre__bench_batch_plan(1000, 0, &l, &p);
    cr_assert(l == 1 && p == 1);
    l = p = 9;
    vyre__bench_batch_plan(1e-300, INFINITY, &l, &p);
    cr_assert(l == VYRE__BENCH_BATCH_LAUNCHES_MAX && p == 1, "%u x %u", l, p);
}

/* ---- when the event and CUPTI times disagree -------------------------------------- */

Test(bench_views, disagreement_is_beyond_five_percent_plus_a_microsecond)
{
    cr_assert(vyre__bench_views_disagree(8640, 2360), "the launch gap of issue 23");
    cr_assert(!vyre__bench_views_disagree(3300, 2360), "within 5%% + 1 us of 2.36 us");
    cr_assert(!vyre__bench_views_disagree(100000 * 1.05 + 999, 100000));
    cr_assert(vyre__bench_views_disagree(100000 * 1.05 + 1001, 100000));
    cr_assert(vyre__bench_views_disagree(100000 * 0.95 - 1001, 100000), "too short as well");
    cr_assert(!vyre__bench_views_disagree(0, 100000));
    cr_assert(!vyre__bench_views_disagree(5000, 0));
    cr_assert(!vyre__bench_views_disagree(NAN, 100000));
}

/* The CUPTI pass's own traced time against the batch view (issue 34): H200,
 * 24 M axpy, a held graph read 114.35 us a launch with CUPTI's kernel
 * tracing on and 106.91 us without. */
Test(bench_views, the_traced_note_says_how_much_cupti_slowed_the_launches)
{
    char buf[160] = "";
    cr_assert(vyre__bench_traced_note(114350, 106910, buf, sizeof buf));
    cr_assert_str_eq(buf, "kernel is a traced time: CUPTI's tracing slowed the launches 7.0% "
                          "(114.35 us vs batch 106.91 us)");
    cr_assert(!vyre__bench_traced_note(106910 * 1.019, 106910, buf, sizeof buf), "within 2%%");
    cr_assert(!vyre__bench_traced_note(100000, 106910, buf, sizeof buf), "faster: nothing to say");
    cr_assert(!vyre__bench_traced_note(0, 106910, buf, sizeof buf));
    cr_assert(!vyre__bench_traced_note(114350, 0, buf, sizeof buf), "no batch view (cold)");
    cr_assert(!vyre__bench_traced_note(NAN, 106910, buf, sizeof buf));
}

/* ---- storage --------------------------------------------------------------------- */

static char g_dir[512];
static char g_path[600];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_path, sizeof g_path, "%s/results.sqlite3", g_dir);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(bench_views_db, .init = setup, .fini = teardown, .timeout = 120);

/* A finished hot GPU point whose samples all read gpu_ns. */
static int64_t gpu_point(vyre_results *db, int64_t run, int seq, double gpu_ns, double batch_ns,
                         size_t timeouts, const char *note)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "sweep");
    snprintf(p.benchmark, sizeof p.benchmark, "sweep.add");
    snprintf(p.axes, sizeof p.axes, "N=%d", seq);
    p.device = 0;
    p.mode = VYRE_BENCH_HOT;
    p.gpu_timer = 1;
    p.items = 1;
    p.batch_ns = batch_ns;
    p.n_block_timeouts = timeouts;
    snprintf(p.note, sizeof p.note, "%s", note);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    double x[3] = {gpu_ns, gpu_ns, gpu_ns};
    cr_assert_eq(vyre__stats_compute(x, 3, &p.stats, &e), 0);
    vyre_bench_sample s[3];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 3; i++)
        s[i].value = gpu_ns;
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, 3, &e), 0, "%s", e.message);
    return p.id;
}

/* n kernel records of `name`, durations dur[i]. */
static void records(vyre_results *db, int64_t run, int64_t point, const char *name,
                    const uint64_t *dur, size_t n)
{
    vyre_activity k[8];
    memset(k, 0, sizeof k);
    for (size_t i = 0; i < n; i++) {
        k[i].kind = VYRE_ACTIVITY_KERNEL;
        snprintf(k[i].name, sizeof k[i].name, "%s", name);
        k[i].start_ns = 1000 * (i + 1);
        k[i].end_ns = k[i].start_ns + dur[i];
    }
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_records(db, run, point, k, n, &e), 0, "%s", e.message);
}

Test(bench_views_db, views_round_trip_and_kernel_view_comes_from_the_records)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_path, &db, &e), 0, "%s", e.message);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "sweep");
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);

    /* The launch gap: 8.64 us of event time, 2.4 us in CUPTI. */
    int64_t gap = gpu_point(db, r.id, 0, 8640, 2500, 2, "");
    /* Agreeing views: 50 us and 49.6 us. */
    int64_t fine = gpu_point(db, r.id, 1, 50000, 49700, 0, "1.2 GB/s");
    /* No kernel pass: kernel stays unknown. */
    int64_t none = gpu_point(db, r.id, 2, 3000, 0, 0, "");
    const uint64_t d_gap[3] = {2400, 2350, 2500};
    records(db, r.id, gap, "add_kernel", d_gap, 3);
    const uint64_t d_other[1] = {900}; /* a shorter kernel of the same pass */
    records(db, r.id, gap, "memset_kernel", d_other, 1);
    const uint64_t d_fine[3] = {49600, 49500, 49700};
    records(db, r.id, fine, "add_kernel", d_fine, 3);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);

    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, r.id, &pts, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 3);
    cr_assert_eq(pts[0].id, gap);
    cr_assert_float_eq(pts[0].batch_ns, 2500, 1e-9);
    cr_assert_eq(pts[0].n_block_timeouts, 2);
    cr_assert_float_eq(pts[0].kernel_ns, 2400, 1e-9, "the median of the longest kernel's launches");
    cr_assert(strstr(pts[0].note, "8.64 us") && strstr(pts[0].note, "2.40 us"),
              "the point says its views disagree: '%s'", pts[0].note);

    cr_assert_float_eq(pts[1].batch_ns, 49700, 1e-9);
    cr_assert_float_eq(pts[1].kernel_ns, 49600, 1e-9);
    cr_assert_str_eq(pts[1].note, "1.2 GB/s", "agreeing views add nothing to the note");
    cr_assert_eq(pts[1].n_block_timeouts, 0);

    cr_assert_eq(pts[2].id, none);
    cr_assert_eq(pts[2].batch_ns, 0, "not measured reads back as 0");
    cr_assert_eq(pts[2].kernel_ns, 0);
    vyre_free(pts);
    vyre_results_close(db);

    cr_assert_eq(tu_db_int(g_path, "SELECT count(*) FROM points WHERE batch_ns IS NULL"), 1,
                 "not measured is NULL in the file");
}

/* The traced time goes to the point's note, once, after the kernel view's
 * own words; a point without a batch view (cold) gets nothing. */
Test(bench_views_db, the_traced_time_is_noted_once_beside_the_batch_view)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_path, &db, &e), 0, "%s", e.message);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "sweep");
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    int64_t hot = gpu_point(db, r.id, 0, 107000, 106910, 0, "12.0 GB/s");
    int64_t cold = gpu_point(db, r.id, 1, 112000, 0, 0, "");
    cr_assert_eq(vyre__bench_point_traced(db, hot, 114350, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__bench_point_traced(db, hot, 114350, &e), 0, "a second pass: %s", e.message);
    cr_assert_eq(vyre__bench_point_traced(db, cold, 114350, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, r.id, &pts, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(pts[0].note,
                     "12.0 GB/s; kernel is a traced time: CUPTI's tracing slowed the launches "
                     "7.0% (114.35 us vs batch 106.91 us)");
    cr_assert_str_eq(pts[1].note, "", "no batch view, nothing to compare with");
    vyre_free(pts);
    vyre_results_close(db);
}

/* ---- the event pair's own cost (vyre__bench_event_overhead) ---------------------- */

Test(bench_views, the_event_overhead_is_held_less_graph_per_launch_by_medians)
{
    /* An H100's figures (README): one held 1.5 us launch read 3.68 us, a
     * graph of 100 launches 149 us; one stall each side must not move it. */
    double held[5] = {3680, 3650, 90000, 3690, 3670};
    double replays[5] = {149000, 150000, 148000, 1, 149500};
    cr_assert_float_eq(vyre__bench_event_overhead(held, 5, replays, 5, 100), 3680 - 1490, 1e-6);
}

Test(bench_views, no_event_overhead_when_it_would_not_be_positive_or_a_number)
{
    double held[3] = {1000, 1000, 1000}, replays[3] = {200000, 200000, 200000};
    cr_assert_eq(vyre__bench_event_overhead(held, 3, replays, 3, 100), 0, "graph slower: 0");
    double nan_held[1] = {NAN}, one[1] = {1};
    cr_assert_eq(vyre__bench_event_overhead(nan_held, 1, one, 1, 1), 0);
    cr_assert_eq(vyre__bench_event_overhead(held, 0, replays, 3, 100), 0);
    cr_assert_eq(vyre__bench_event_overhead(held, 3, replays, 3, 0), 0);
}
