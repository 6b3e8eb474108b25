/*
 * test_bench.c - the measurement engine of vyre-bench
 * (libcore/src/bench/engine.c, vyre__bench_measure) without a GPU: samples
 * come from a callback, clocks from the fake NVML (tests/fakes/fakenvml.c).
 *
 * Throttle flagging: the engine reads NVML after each sample and flags the
 * sample when a power or thermal clocks-event reason is set. The sample
 * callback sets FAKENVML_THROTTLE (which the fake reads at every call) to
 * the reasons "the GPU" reports for that sample, so every flag is known
 * before the point is measured and asserted exactly.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/gpu.h"

#ifndef FAKENVML_LIB
#error "tests/CMakeLists.txt must define FAKENVML_LIB"
#endif

static const char *const g_vars[] = {"VYRE_NVML_LIBRARY", "FAKENVML_GPUS", "FAKENVML_UNSUPPORTED",
                                     "FAKENVML_FAIL", "FAKENVML_THROTTLE"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
}

static void teardown(void)
{
    tu_env_restore(&g_env);
}

TestSuite(bench, .init = setup, .fini = teardown);

/* Every clocks-event reason alone, none, and mixes; what a sample under it
 * must be flagged as. Throttling: software power cap, hardware slowdown,
 * software and hardware thermal, power brake. Not throttling: idle,
 * application clocks, sync boost, display. */
static const struct {
    unsigned long long reasons;
    int throttled;
} k_schedule[] = {
    {0x000, 0}, {0x001, 0}, {0x002, 0}, {0x004, 1}, {0x008, 1}, {0x010, 0}, {0x020, 1},
    {0x040, 1}, {0x080, 1}, {0x100, 0}, {0x005, 1}, {0x113, 0}, {0x1ff, 1}, {0x000, 0},
};
#define NSCHED (sizeof k_schedule / sizeof k_schedule[0])

struct sampler {
    size_t calls;  /* sample() calls, warm-up included */
    size_t warmup; /* the first `warmup` calls are untimed */
    int set_reasons;
};

/* Sample k (after warm-up) takes 1000 + k ns and leaves the fake NVML
 * reporting k_schedule[k]'s reasons. */
static int sample(void *ctx, double *value, double *wall, vyre_error *err)
{
    (void)err;
    struct sampler *s = ctx;
    size_t k = s->calls++;
    size_t timed = k >= s->warmup ? k - s->warmup : 0;
    if (s->set_reasons) {
        char hex[32];
        snprintf(hex, sizeof hex, "%llx", k_schedule[timed % NSCHED].reasons);
        setenv("FAKENVML_THROTTLE", hex, 1);
    }
    *value = 1000.0 + (double)timed;
    *wall = 2000.0;
    return 0;
}

static vyre_gpu_monitor *open_monitor(void)
{
    vyre_gpu_monitor *m = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_gpu_monitor_open(&m, &e);
    cr_assert_eq(rc, 0, "fake NVML: %s: %s", vyre_err_name(rc), e.message);
    return m;
}

/* Measures exactly NSCHED samples after 3 warm-up calls. */
static vyre_bench_sample *measure(vyre_gpu_monitor *mon, int nvml_index, int set_reasons,
                                  vyre_bench_point *pt, size_t *n)
{
    struct sampler s = {0, 3, set_reasons};
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = sample;
    o.ctx = &s;
    o.warmup = s.warmup;
    o.rule.min_samples = NSCHED;
    o.rule.max_samples = NSCHED;
    o.rule.timeout_s = 60;
    o.mon = mon;
    o.nvml_index = nvml_index;
    memset(pt, 0, sizeof *pt);
    snprintf(pt->benchmark, sizeof pt->benchmark, "test.throttle");
    vyre_bench_sample *samples = NULL;
    int interrupted = -1;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__bench_measure(&o, pt, &samples, n, &interrupted, &e);
    cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert_eq(interrupted, 0);
    cr_assert_eq(*n, NSCHED);
    cr_assert_eq(s.calls, s.warmup + NSCHED);
    cr_assert_not_null(samples);
    for (size_t k = 0; k < *n; k++)
        cr_assert_eq(samples[k].value, 1000.0 + (double)k, "sample %zu out of order", k);
    return samples;
}

Test(bench, samples_under_power_or_thermal_reasons_are_flagged_throttled)
{
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_point pt;
    size_t n = 0;
    vyre_bench_sample *s = measure(mon, 0, 1, &pt, &n);
    size_t want = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, k_schedule[k].throttled, "sample %zu under reasons 0x%llx", k,
                     k_schedule[k].reasons);
        cr_assert_eq(s[k].sm_clock_mhz, 1500u, "sample %zu: the fake's SM clock of GPU 0", k);
        want += (size_t)k_schedule[k].throttled;
    }
    cr_assert_eq(pt.n_throttled, want);
    cr_assert_eq(pt.stats.n, NSCHED);
    cr_assert_eq(pt.wall_median, 2000.0);
    free(s);
    vyre_gpu_monitor_close(mon);
}

Test(bench, only_the_watched_gpu_counts)
{
    /* GPU 0 is held at a power cap; GPU 1 (watched) is idle. */
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_THROTTLE", "4", 1);
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_point pt;
    size_t n = 0;
    vyre_bench_sample *s = measure(mon, 1, 0, &pt, &n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, 0, "sample %zu", k);
        cr_assert_eq(s[k].sm_clock_mhz, 1501u, "sample %zu: GPU 1's SM clock", k);
    }
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* The same run watching GPU 0: every sample is throttled. */
    s = measure(mon, 0, 0, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(s[k].throttled, 1, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, NSCHED);
    free(s);
    vyre_gpu_monitor_close(mon);
}

Test(bench, unknown_reasons_or_no_monitor_flag_nothing)
{
    vyre_bench_point pt;
    size_t n = 0;

    /* NVML cannot say why the clocks are what they are: unknown is not
     * throttled, and the clock is still recorded. */
    setenv("FAKENVML_UNSUPPORTED", "throttle", 1);
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_sample *s = measure(mon, 0, 1, &pt, &n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, 0, "sample %zu", k);
        cr_assert_eq(s[k].sm_clock_mhz, 1500u);
    }
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* A GPU index the monitor does not have. */
    unsetenv("FAKENVML_UNSUPPORTED");
    s = measure(mon, 5, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* No index, then no monitor at all: no clocks read. */
    s = measure(mon, -1, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    free(s);
    vyre_gpu_monitor_close(mon);
    s = measure(NULL, 0, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, 0);
    free(s);
}

/* ---- rounds (issue 23): the whole run, R times in turn ------------------------------ */

static char g_rdir[512];
static char g_rdb[600];
/* The run's tmp_dir, where the cache suite's durable puts go: a memory
 * filesystem when there is one (tu_mkdtemp_mem); nothing there is inspected. */
static char g_rmem[512];

static void rounds_setup(void)
{
    tu_mkdtemp(g_rdir, sizeof g_rdir);
    tu_mkdtemp_mem(g_rmem, sizeof g_rmem);
    snprintf(g_rdb, sizeof g_rdb, "%s/results.sqlite3", g_rdir);
}

static void rounds_teardown(void)
{
    tu_rm_rf(g_rmem);
    tu_rm_rf(g_rdir);
}

TestSuite(bench_rounds, .init = rounds_setup, .fini = rounds_teardown, .timeout = 120);

#define LOG_MAX 256

/* What the engine did, in order: "P:name" as a point-round starts
 * (progress), "S:name" as a point is stored. */
struct order_log {
    char ev[LOG_MAX][400];
    size_t n;
    size_t stored_before_last_round; /* points stored while progress was below the last round */
    size_t per_round;
};

static void log_progress(size_t done, size_t total, const char *what, void *ctx)
{
    (void)done;
    (void)total;
    struct order_log *l = ctx;
    if (l->n < LOG_MAX)
        snprintf(l->ev[l->n++], sizeof l->ev[0], "P:%s", what);
}

static void log_point(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n, void *ctx)
{
    struct order_log *l = ctx;
    if (l->n < LOG_MAX)
        snprintf(l->ev[l->n++], sizeof l->ev[0], "S:%s %s", p->benchmark, p->axes);
    /* Every sample of a stored point carries its round, in round order,
     * and every round is there. */
    unsigned seen = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(i == 0 || s[i].round >= s[i - 1].round, "%s: rounds out of order", p->benchmark);
        seen |= 1u << s[i].round;
    }
    cr_assert_eq(seen, 0x7u, "%s: rounds seen %#x, want 0..2", p->benchmark, seen);
    cr_assert_eq(p->rounds, 3);
}

Test(bench_rounds, the_cache_suite_runs_three_times_interleaved_and_stores_once)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_rdb, &db, &e), 0, "%s", e.message);
    static const char *const suites[] = {"cache"};
    struct order_log log;
    memset(&log, 0, sizeof log);
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.suites = suites;
    o.nsuites = 1;
    o.rule.min_samples = 6; /* 2 a round */
    o.rule.max_samples = 6;
    o.rule.timeout_s = 30;
    o.rounds = 3;
    o.tmp_dir = g_rmem;
    o.command_line = "test";
    o.on_progress = log_progress;
    o.on_point = log_point;
    o.cb_ctx = &log;
    vyre_bench_run_result res;
    cr_assert_eq(vyre_bench_run_suites(&o, &res, &e), 0, "%s", e.message);
    cr_assert_eq(res.rounds, 3);
    /* 8 cache points and the 3 host references, each stored once. */
    cr_assert_eq(res.npoints, 11);

    /* Progress: the same sequence of 11 point-rounds three times over,
     * references first; nothing stored before the last round starts. */
    size_t np = 0, first_store = 0;
    const char *seq[40];
    for (size_t i = 0; i < log.n; i++) {
        if (log.ev[i][0] == 'S') {
            if (!first_store)
                first_store = i;
            continue;
        }
        cr_assert_lt(np, 40);
        seq[np++] = log.ev[i] + 2;
    }
    cr_assert_eq(np, 33, "point-rounds: %zu", np);
    cr_assert_str_eq(seq[0], "reference.cpu");
    cr_assert_str_eq(seq[1], "reference.cpus");
    cr_assert_str_eq(seq[2], "reference.fsync");
    cr_assert_str_eq(seq[3], "cache.store");
    for (size_t i = 11; i < 33; i++)
        cr_assert_str_eq(seq[i], seq[i % 11], "point-round %zu is %s, want %s", i, seq[i],
                         seq[i % 11]);
    /* Stores start inside the last round: after the 23rd progress event. */
    size_t progress_before = 0;
    for (size_t i = 0; i < first_store; i++)
        progress_before += log.ev[i][0] == 'P';
    cr_assert_geq(progress_before, 23, "a point was stored before the last round");

    /* The database keeps each sample's round: 2 samples in each of 3 rounds. */
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, res.run_id, &pts, &n, NULL), 0);
    cr_assert_eq(n, 11);
    for (size_t i = 0; i < n; i++) {
        vyre_bench_sample *s = NULL;
        size_t ns = 0;
        cr_assert_eq(vyre_bench_samples_get(db, pts[i].id, &s, &ns, NULL), 0);
        cr_assert_eq(pts[i].rounds, 3, "%s", pts[i].benchmark);
        size_t per[3] = {0, 0, 0};
        for (size_t k = 0; k < ns; k++) {
            cr_assert_lt(s[k].round, 3);
            per[s[k].round]++;
        }
        /* Every round is there. The cache points: 2 a round by the rule
         * (max 6 over 3 rounds), fewer when a slow sample (ASan, a loaded
         * machine) hits the round's share of the timeout, never none. The
         * references keep their own fixed budget. */
        cr_assert(per[0] >= 1 && per[1] >= 1 && per[2] >= 1, "%s: %zu %zu %zu", pts[i].benchmark,
                  per[0], per[1], per[2]);
        if (strncmp(pts[i].benchmark, "reference.", 10) != 0)
            cr_assert(per[0] <= 2 && per[1] <= 2 && per[2] <= 2, "%s: %zu %zu %zu",
                      pts[i].benchmark, per[0], per[1], per[2]);
        vyre_free(s);
    }
    vyre_free(pts);
    vyre_bench_run_result_release(&res);
    vyre_results_close(db);
}

/* ---- compare: references and clocks ---------------------------------------------- */

/* Deterministic spread in [-1, 1). */
static double jitter(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* Stores one point of run_id: 5 rounds of 20 samples, round k around
 * centers[k] (1%), each with SM clock `mhz` (0: none). */
static void store_point_rounds(vyre_results *db, int64_t run_id, int seq, const char *suite,
                               const char *bench, int gpu, const double centers[5], unsigned mhz,
                               uint64_t seed)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run_id;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "%s", suite);
    snprintf(p.benchmark, sizeof p.benchmark, "%s", bench);
    p.device = gpu ? 0 : -1;
    p.mode = gpu ? VYRE_BENCH_HOT : VYRE_BENCH_HOST;
    p.gpu_timer = gpu;
    p.items = 1;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    vyre_bench_sample s[100];
    double v[100];
    memset(s, 0, sizeof s);
    uint64_t st = seed;
    for (size_t i = 0; i < 100; i++) {
        s[i].value = v[i] = centers[i / 20] * (1.0 + 0.01 * jitter(&st));
        s[i].wall = s[i].value;
        s[i].round = (unsigned)(i / 20);
        s[i].sm_clock_mhz = mhz;
    }
    cr_assert_eq(vyre__stats_compute(v, 100, &p.stats, NULL), 0);
    p.rounds = 5;
    p.round_noise = NAN;
    snprintf(p.stop, sizeof p.stop, "test");
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, 100, &e), 0, "%s", e.message);
}

/* store_point_rounds with every round around center. */
static void store_point(vyre_results *db, int64_t run_id, int seq, const char *suite,
                        const char *bench, int gpu, double center, unsigned mhz, uint64_t seed)
{
    const double c[5] = {center, center, center, center, center};
    store_point_rounds(db, run_id, seq, suite, bench, gpu, c, mhz, seed);
}

/* A done run of the six points, each round of reference.cpu and
 * reference.fsync at cpu[k] and fsync[k] times their base, cache.store at
 * store times its base, cache.hit and the GPU point at work, reference.gpu
 * at gpu_ref; the GPU ones at clock mhz. */
static int64_t shaped_run(vyre_results *db, const double cpu[5], const double fsync[5],
                          double store, double work, double gpu_ref, unsigned mhz, uint64_t seed)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "cache");
    snprintf(r.command_line, sizeof r.command_line, "test");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    double c[5], f[5];
    for (int k = 0; k < 5; k++) {
        c[k] = 300000 * cpu[k];
        f[k] = 2000000 * fsync[k];
    }
    store_point_rounds(db, r.id, 0, "reference", "reference.cpu", 0, c, 0, seed + 1);
    store_point_rounds(db, r.id, 1, "reference", "reference.fsync", 0, f, 0, seed + 2);
    store_point(db, r.id, 2, "cache", "cache.store", 0, 250000 * store, 0, seed + 3);
    store_point(db, r.id, 3, "cache", "cache.hit", 0, 9000 * work, 0, seed + 4);
    store_point(db, r.id, 4, "sweep", "sweep.k", 1, 50000 * work, mhz, seed + 5);
    store_point(db, r.id, 5, "reference", "reference.gpu", 1, 4000 * gpu_ref, mhz, seed + 6);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    return r.id;
}

/* A done run: the host and GPU references scaled by ref, two cache
 * points and a GPU point scaled by work, the GPU ones at clock mhz. */
static int64_t scaled_run(vyre_results *db, double ref, double work, unsigned mhz, uint64_t seed)
{
    const double r[5] = {ref, ref, ref, ref, ref};
    return shaped_run(db, r, r, work, work, ref, mhz, seed);
}

/* A run on a busy host: reference.cpu's rounds at cpu[k] times its base,
 * reference.fsync's at fsync[k] (NULL: steady), cache.store at store, the
 * rest as in the baseline. */
static int64_t hog_run(vyre_results *db, const double cpu[5], const double *fsync, double store,
                       uint64_t seed)
{
    static const double steady[5] = {1, 1, 1, 1, 1};
    return shaped_run(db, cpu, fsync ? fsync : steady, store, 1, 1, 0, seed);
}

static vyre_bench_cmp_row *compare_ok(vyre_results *db, int64_t a, int64_t b, size_t *n)
{
    vyre_bench_cmp_row *rows = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_compare_runs(db, &a, 1, b, NULL, &rows, n, &e), 0, "%s", e.message);
    cr_assert_eq(*n, 6);
    return rows;
}

Test(bench_rounds, everything_and_the_reference_20_percent_slower_is_drift_not_slower)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    int64_t a = scaled_run(db, 1.0, 1.0, 0, 100);
    int64_t b = scaled_run(db, 1.2, 1.2, 0, 200); /* the machine got 20% slower */
    int64_t c = scaled_run(db, 1.0, 1.2, 0, 300); /* the code got 20% slower */
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        cr_assert(r->has_a && r->has_b);
        cr_assert_eq(r->cmp.rounds_a, 5);
        cr_assert_eq(r->cmp.hierarchical, 1);
        cr_assert_neq(r->cmp.verdict, VYRE_VERDICT_SLOWER, "%s: SLOWER [%g, %g] drift %g",
                      r->a.benchmark, r->cmp.ratio_lo, r->cmp.ratio_hi, r->cmp.drift);
        cr_assert_eq(r->is_reference, strncmp(r->a.benchmark, "reference.", 10) == 0);
        cr_assert_eq(r->cmp.verdict, VYRE_VERDICT_DRIFT, "%s: %s", r->a.benchmark,
                     vyre_stats_verdict_name(r->cmp.verdict));
        if (!r->is_reference) {
            cr_assert_eq(r->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
            cr_assert_float_eq(r->ref_ratio, 1.2, 0.01, "%s", r->a.benchmark);
            /* Each timer kind is widened by its own reference. */
            if (r->a.gpu_timer)
                cr_assert_str_eq(r->reference, "reference.gpu");
            else
                cr_assert(!strcmp(r->reference, "reference.cpu") ||
                              !strcmp(r->reference, "reference.fsync"),
                          "%s: %s", r->a.benchmark, r->reference);
        }
    }
    vyre_free(rows);
    /* The same change with a steady machine is a regression. */
    rows = compare_ok(db, a, c, &n);
    for (size_t i = 0; i < n; i++)
        if (!rows[i].is_reference)
            cr_assert_eq(rows[i].cmp.verdict, VYRE_VERDICT_SLOWER, "%s: %s", rows[i].a.benchmark,
                         vyre_stats_verdict_name(rows[i].cmp.verdict));
    vyre_free(rows);
    vyre_results_close(db);
}

/* A CPU hog on one of two cores between two runs (issue 23's CPU A/A): the
 * host reference reads 1.6x in three rounds of B and 1.0x in the two the
 * hog had not reached, so its interval reaches 1 while its median ratio is
 * 1.6; a cache point the hog slowed 1.4x in every round is the machine's
 * drift, not a regression. The band was widened only by an interval that
 * excluded 1, by its end nearest 1: SLOWER. A reference NOISY in both runs
 * whose interval holds 1 (the fsync, its rounds anywhere from 0.2x to 4x
 * in each) widens nothing. */
Test(bench_rounds, a_point_within_the_references_median_drift_is_drift_though_a_round_was_quiet)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    static const double steady[5] = {1, 1, 1, 1, 1};
    const double disk_a[5] = {2.0, 0.3, 1.0, 3.0, 0.5};
    int64_t a = hog_run(db, steady, disk_a, 1.0, 100);
    const double hog[5] = {1.6, 1.0, 1.6, 1.0, 1.6};
    const double disk[5] = {0.5, 3.0, 0.2, 2.0, 4.0};
    int64_t b = hog_run(db, hog, disk, 1.4, 200);
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    const vyre_bench_cmp_row *ref = &rows[0], *store = &rows[2];
    cr_assert_str_eq(ref->a.benchmark, "reference.cpu");
    cr_assert(ref->cmp.ratio_lo < 1.02 && ref->cmp.ratio > 1.55, "the reference: %g [%g, %g]",
              ref->cmp.ratio, ref->cmp.ratio_lo, ref->cmp.ratio_hi);
    cr_assert_str_eq(rows[1].a.benchmark, "reference.fsync");
    cr_assert_eq(rows[1].cmp.verdict_before_drift, VYRE_VERDICT_NOISY);
    cr_assert(rows[1].cmp.ratio_lo < 1.0 && rows[1].cmp.ratio_hi > 1.0, "fsync [%g, %g]",
              rows[1].cmp.ratio_lo, rows[1].cmp.ratio_hi);
    cr_assert_str_eq(store->a.benchmark, "cache.store");
    cr_assert_eq(store->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
    cr_assert_float_eq(store->cmp.drift, ref->cmp.ratio, 1e-9, "widened by the median ratio");
    cr_assert_eq(store->cmp.verdict, VYRE_VERDICT_DRIFT, "cache.store 1.4x [%g, %g], drift %g: %s",
                 store->cmp.ratio_lo, store->cmp.ratio_hi, store->cmp.drift,
                 vyre_stats_verdict_name(store->cmp.verdict));
    cr_assert_eq(rows[4].cmp.verdict, VYRE_VERDICT_SAME, "the GPU point keeps its own reference");
    vyre_free(rows);
    vyre_results_close(db);
}

/* A CPU hog on both cores: the host reference reads NOISY (its rounds
 * anywhere from 1.3x to 6x), yet every round is slower, so its interval
 * lies above 1 and its median is the machine's drift; a cache point 3x
 * slower is DRIFT, not SLOWER (two real cache-suite runs around a hog read
 * FAIL before: reference.cpus 4.98x [1.004, 5.75] NOISY, cache.hit
 * 2.96x). */
Test(bench_rounds, a_noisy_reference_that_moved_every_round_still_sets_the_drift)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    int64_t a = scaled_run(db, 1.0, 1.0, 0, 300);
    const double hog[5] = {5.0, 1.3, 6.0, 2.0, 5.5};
    int64_t b = hog_run(db, hog, NULL, 3.0, 300);
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    const vyre_bench_cmp_row *ref = &rows[0], *store = &rows[2];
    cr_assert_str_eq(ref->a.benchmark, "reference.cpu");
    cr_assert_eq(ref->cmp.verdict_before_drift, VYRE_VERDICT_NOISY);
    cr_assert_gt(ref->cmp.ratio_lo, 1.0, "every round slower: %g [%g, %g]", ref->cmp.ratio,
                 ref->cmp.ratio_lo, ref->cmp.ratio_hi);
    cr_assert_str_eq(store->a.benchmark, "cache.store");
    cr_assert_eq(store->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
    cr_assert_float_eq(store->cmp.drift, ref->cmp.ratio_hi, 1e-9,
                       "widened by the NOISY reference's far end");
    cr_assert_eq(store->cmp.verdict, VYRE_VERDICT_DRIFT, "cache.store 3x [%g, %g], drift %g: %s",
                 store->cmp.ratio_lo, store->cmp.ratio_hi, store->cmp.drift,
                 vyre_stats_verdict_name(store->cmp.verdict));
    vyre_free(rows);
    vyre_results_close(db);
}

/* The same hog, another run (CI, two real cache-suite runs): the host
 * reference read 1.94x [1.004, 8.34] NOISY, its rounds from barely slower
 * to 8x, while a cache point read 3.1x [2.33, 4.14] in every round. Widened
 * by the reference's median it stayed SLOWER, and the busy machine read
 * FAIL; the far end of the reference's interval is how much the machine
 * may have moved. */
Test(bench_rounds, a_point_slower_than_a_noisy_references_median_but_within_its_range_is_drift)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    int64_t a = scaled_run(db, 1.0, 1.0, 0, 300);
    const double hog[5] = {1.05, 1.9, 1.94, 8.0, 2.5};
    int64_t b = hog_run(db, hog, NULL, 3.1, 310);
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    const vyre_bench_cmp_row *ref = &rows[0], *store = &rows[2];
    cr_assert_eq(ref->cmp.verdict_before_drift, VYRE_VERDICT_NOISY);
    cr_assert(ref->cmp.ratio < 3.0 && ref->cmp.ratio_lo > 1.0 && ref->cmp.ratio_hi > 3.2,
              "the reference: %g [%g, %g]", ref->cmp.ratio, ref->cmp.ratio_lo, ref->cmp.ratio_hi);
    cr_assert_eq(store->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
    cr_assert_eq(store->cmp.verdict, VYRE_VERDICT_DRIFT, "cache.store 3.1x [%g, %g], drift %g: %s",
                 store->cmp.ratio_lo, store->cmp.ratio_hi, store->cmp.drift,
                 vyre_stats_verdict_name(store->cmp.verdict));
    /* A steady reference still widens by its median: the GPU point's own. */
    cr_assert_eq(rows[4].cmp.verdict, VYRE_VERDICT_SAME);
    vyre_free(rows);
    vyre_results_close(db);
}

/* A hog on both cores, a third CI run: reference.cpus read 1.33x [0.997,
 * 4.54], its noise 9% in A and 55% in B, so its interval held 1, while a
 * 1 MiB cache.hit read 5.1x [3.15, 5.61] in every round (a short CPU loop
 * fits in a time slice, a 1.7 ms hit is preempted). A reference quiet in
 * one run and NOISY in the other says the machine changed, by as much as
 * its interval's far end: DRIFT, not the FAIL it read with no drift. */
Test(bench_rounds, a_reference_quiet_in_one_run_and_noisy_in_the_other_bounds_the_drift)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    int64_t a = scaled_run(db, 1.0, 1.0, 0, 400);
    const double hog[5] = {1.0, 0.98, 1.33, 4.0, 5.0};
    int64_t b = hog_run(db, hog, NULL, 3.2, 410);
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    const vyre_bench_cmp_row *ref = &rows[0], *store = &rows[2];
    cr_assert_eq(ref->cmp.verdict_before_drift, VYRE_VERDICT_NOISY);
    cr_assert(ref->cmp.noise_a <= 0.10 && ref->cmp.noise_b > 0.10, "noise %g, %g", ref->cmp.noise_a,
              ref->cmp.noise_b);
    cr_assert(ref->cmp.ratio_lo < 1.0 && ref->cmp.ratio_hi > 3.3, "the reference: %g [%g, %g]",
              ref->cmp.ratio, ref->cmp.ratio_lo, ref->cmp.ratio_hi);
    cr_assert_eq(store->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
    cr_assert_float_eq(store->cmp.drift, ref->cmp.ratio_hi, 1e-9);
    cr_assert_eq(store->cmp.verdict, VYRE_VERDICT_DRIFT, "cache.store 3.2x [%g, %g], drift %g: %s",
                 store->cmp.ratio_lo, store->cmp.ratio_hi, store->cmp.drift,
                 vyre_stats_verdict_name(store->cmp.verdict));
    vyre_free(rows);
    vyre_results_close(db);
}

Test(bench_rounds, a_gpu_point_slower_only_by_its_clock_is_drift)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_rdb, &db, NULL), 0);
    /* B ran at 1500 MHz instead of 1980: 1.32x the time, the same cycles. */
    int64_t a = scaled_run(db, 1.0, 1.0, 1980, 100);
    int64_t b = scaled_run(db, 1.0, 1980.0 / 1500.0, 1500, 200);
    size_t n = 0;
    vyre_bench_cmp_row *rows = compare_ok(db, a, b, &n);
    const vyre_bench_cmp_row *g = &rows[4];
    cr_assert_str_eq(g->a.benchmark, "sweep.k");
    cr_assert_eq(g->cycles_compared, 1);
    cr_assert_float_eq(g->clock_a_mhz, 1980, 1e-9);
    cr_assert_float_eq(g->clock_b_mhz, 1500, 1e-9);
    cr_assert_eq(g->cmp.verdict_before_drift, VYRE_VERDICT_SLOWER);
    cr_assert_eq(g->cycles.verdict, VYRE_VERDICT_SAME);
    cr_assert_eq(g->cmp.verdict, VYRE_VERDICT_DRIFT);
    /* Without the clock check the same point is SLOWER (no reference drift). */
    cr_assert_float_eq(g->cmp.drift, 1.0, 0.01);
    /* Host points have no clock: compared in time only. */
    cr_assert_eq(rows[2].cycles_compared, 0);
    vyre_free(rows);
    vyre_results_close(db);
}

/* Ctrl-C as round 1 starts: what round 0 measured is stored, marked. */
struct stopper {
    volatile sig_atomic_t stop;
    size_t progress;
};

static void stop_in_round_1(size_t done, size_t total, const char *what, void *ctx)
{
    (void)total;
    (void)what;
    struct stopper *s = ctx;
    s->progress++;
    if (done >= 11) /* the 12th point-round: round 1's first */
        s->stop = 1;
}

Test(bench_rounds, an_interrupted_run_stores_the_rounds_it_measured)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_rdb, &db, &e), 0, "%s", e.message);
    static const char *const suites[] = {"cache"};
    struct stopper st = {0, 0};
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.suites = suites;
    o.nsuites = 1;
    o.rule.min_samples = 6;
    o.rule.max_samples = 6;
    o.rule.timeout_s = 30;
    o.rounds = 3;
    o.tmp_dir = g_rmem;
    o.command_line = "test";
    o.stop = &st.stop;
    o.on_progress = stop_in_round_1;
    o.cb_ctx = &st;
    vyre_bench_run_result res;
    cr_assert_eq(vyre_bench_run_suites(&o, &res, &e), 0, "%s", e.message);
    cr_assert_eq(res.interrupted, 1);
    cr_assert_eq(res.npoints, 11, "every point has its round 0");
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, res.run_id, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_INTERRUPTED);
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, res.run_id, &pts, &n, NULL), 0);
    cr_assert_eq(n, 11);
    for (size_t i = 0; i < n; i++) {
        cr_assert(strstr(pts[i].note, "interrupted: 1 of 3 rounds"), "%s: note '%s'",
                  pts[i].benchmark, pts[i].note);
        cr_assert_eq(pts[i].rounds, 1);
        cr_assert_eq(pts[i].seq, (int)i, "points keep the order of their first round");
    }
    vyre_free(pts);
    vyre_bench_run_result_release(&res);
    vyre_results_close(db);
}
