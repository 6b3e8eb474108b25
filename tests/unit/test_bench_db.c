/*
 * test_bench_db.c - vyre-bench's runs, points and samples in the results
 * database (libcore/src/bench/runs_db.c, db/results_v2.sql): the v1 -> v2
 * migration, the run lifecycle (running, done, interrupted, failed), reading
 * back, and compare's verdicts on synthetic runs; the measurement engine on
 * a synthetic sample function.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/bench.h"

extern const char vyre__sql_results_v1[]; /* the v1 schema, embedded in libcore */

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

TestSuite(bench_db, .init = setup, .fini = teardown, .timeout = 120);

static vyre_results *open_ok(void)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_results_open(g_path, &db, &e);
    cr_assert_eq(rc, 0, "open: %s", e.message);
    return db;
}

static long long raw_int(const char *sql)
{
    return tu_db_int(g_path, sql);
}

static int64_t begin_run(vyre_results *db, const char *suites)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "%s", suites);
    snprintf(r.command_line, sizeof r.command_line, "vyre-bench run --suite %s", suites);
    snprintf(r.gpu_name, sizeof r.gpu_name, "NVIDIA H100 80GB HBM3");
    snprintf(r.git_rev, sizeof r.git_rev, "abc123");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    cr_assert_gt(r.id, 0);
    cr_assert_eq(r.status, VYRE_RUN_RUNNING);
    cr_assert_str_neq(r.host, "");
    return r.id;
}

/* Adds a finished point with samples x[0..n-1]. */
static int64_t add_point(vyre_results *db, int64_t run, int seq, const char *bench, const double *x,
                         size_t n)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "launch");
    snprintf(p.benchmark, sizeof p.benchmark, "%s", bench);
    snprintf(p.axes, sizeof p.axes, "N=%d", 1024);
    p.device = 0;
    p.mode = VYRE_BENCH_HOT;
    p.gpu_timer = 1;
    p.items = 1;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__stats_compute(x, n, &p.stats, &e), 0);
    snprintf(p.stop, sizeof p.stop, "noise-ok");
    p.stop_reason = VYRE_STOP_NOISE_OK;
    vyre_bench_sample *s = calloc(n, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        s[i].value = x[i];
        s[i].wall = x[i] + 100;
        s[i].sm_clock_mhz = 1980;
    }
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, n, &e), 0, "%s", e.message);
    free(s);
    return p.id;
}

/* ---- schema --------------------------------------------------------------------- */

Test(bench_db, v1_database_migrates_to_v2_keeping_rows)
{
    /* A v1 file as vyre 0.1 wrote it, with one timings row. */
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open(g_path, &raw), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(raw, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(raw, vyre__sql_results_v1, NULL, NULL, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(raw,
                              "PRAGMA user_version=1; PRAGMA application_id=1987670643; "
                              "INSERT INTO timings (host, pid, session_ns, kind, name, start_ns, "
                              "end_ns, duration_ns, created_ns) VALUES ('h', 1, 2, 'kernel', "
                              "'old_kernel', 10, 20, 10, 3); COMMIT",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(raw));
    sqlite3_close(raw);
    cr_assert_eq(raw_int("PRAGMA user_version"), 1);

    vyre_results *db = open_ok();
    vyre_results_close(db);
    cr_assert_eq(raw_int("PRAGMA user_version"), VYRE_RESULTS_SCHEMA_VERSION);
    cr_assert_eq(raw_int("SELECT count(*) FROM pragma_table_info('points') WHERE name IN "
                         "('batch_ns', 'kernel_ns', 'block_timeouts')"),
                 3, "v4 keeps the three views of a GPU time");
    cr_assert_eq(raw_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                         "('runs', 'points', 'samples')"),
                 3);
    cr_assert_eq(raw_int("SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                         "('pid_start', 'boot_id')"),
                 2, "v3 records the process start time and boot of a run");
    cr_assert_eq(raw_int("SELECT count(*) FROM timings WHERE name = 'old_kernel' AND "
                         "point_id IS NULL AND run_id IS NULL"),
                 1, "the v1 row survives with NULL run and point");
    /* Reopening a v2 file changes nothing. */
    db = open_ok();
    vyre_results_close(db);
    cr_assert_eq(raw_int("PRAGMA user_version"), VYRE_RESULTS_SCHEMA_VERSION);
    cr_assert_eq(raw_int("SELECT count(*) FROM timings"), 1);
}

Test(bench_db, new_database_is_v2_with_constraints)
{
    vyre_results *db = open_ok();
    vyre_results_close(db);
    cr_assert_eq(raw_int("PRAGMA user_version"), VYRE_RESULTS_SCHEMA_VERSION);
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open(g_path, &raw), SQLITE_OK);
    cr_assert_neq(sqlite3_exec(raw,
                               "INSERT INTO runs (started_ns, status, suites, host, pid, "
                               "command_line, vyre_version) VALUES (1, 'bogus', 's', 'h', 1, "
                               "'c', 'v')",
                               NULL, NULL, NULL),
                  SQLITE_OK, "status is constrained");
    sqlite3_close(raw);
}

/* ---- lifecycle -------------------------------------------------------------------- */

Test(bench_db, run_lifecycle_done)
{
    vyre_results *db = open_ok();
    int64_t run = begin_run(db, "launch");
    cr_assert_eq(raw_int("SELECT count(*) FROM runs WHERE status = 'running'"), 1,
                 "the row exists, running, from the start");
    double x[] = {10, 11, 12, 11, 10, 13, 11};
    int64_t p = add_point(db, run, 0, "launch.stream", x, 7);
    cr_assert_eq(raw_int("SELECT count(*) FROM samples"), 7, "samples are in as the point ends");
    vyre_bench_point unfinished;
    memset(&unfinished, 0, sizeof unfinished);
    unfinished.run_id = run;
    unfinished.seq = 1;
    snprintf(unfinished.suite, sizeof unfinished.suite, "launch");
    snprintf(unfinished.benchmark, sizeof unfinished.benchmark, "launch.graph");
    cr_assert_eq(vyre__bench_point_begin(db, &unfinished, NULL), 0);
    vyre_activity k;
    memset(&k, 0, sizeof k);
    k.kind = VYRE_ACTIVITY_KERNEL;
    snprintf(k.name, sizeof k.name, "empty_kernel");
    k.start_ns = 100;
    k.end_ns = 150;
    vyre_activity ks[3] = {k, k, k};
    ks[1].end_ns = 160;
    ks[2].end_ns = 170;
    cr_assert_eq(vyre__bench_point_records(db, run, p, ks, 3, NULL), 0);

    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(raw_int("SELECT count(*) FROM points"), 1, "the unfinished point is gone");

    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_DONE);
    cr_assert_gt(r.finished_ns, 0);
    cr_assert_eq(r.npoints, 1);
    cr_assert_str_eq(r.gpu_name, "NVIDIA H100 80GB HBM3");
    cr_assert_str_eq(r.git_rev, "abc123");

    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, run, &pts, &n, NULL), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(pts[0].id, p);
    cr_assert_str_eq(pts[0].benchmark, "launch.stream");
    cr_assert_str_eq(pts[0].axes, "N=1024");
    cr_assert_eq(pts[0].stats.n, 7);
    cr_assert_float_eq(pts[0].stats.median, 11.0, 1e-12);
    cr_assert_eq(pts[0].stop_reason, VYRE_STOP_NOISE_OK);
    vyre_free(pts);

    vyre_bench_sample *s = NULL;
    cr_assert_eq(vyre_bench_samples_get(db, p, &s, &n, NULL), 0);
    cr_assert_eq(n, 7);
    cr_assert_float_eq(s[5].value, 13.0, 1e-12);
    cr_assert_float_eq(s[5].wall, 113.0, 1e-12);
    cr_assert_eq(s[5].sm_clock_mhz, 1980);
    vyre_free(s);

    vyre_bench_kernel_row *kr = NULL;
    cr_assert_eq(vyre_bench_kernels_get(db, p, &kr, &n, NULL), 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(kr[0].name, "empty_kernel");
    cr_assert_eq(kr[0].count, 3);
    cr_assert_float_eq(kr[0].median_ns, 60.0, 1e-9);
    vyre_free(kr);
    vyre_results_close(db);
}

Test(bench_db, failed_run_keeps_only_its_row)
{
    vyre_results *db = open_ok();
    int64_t run = begin_run(db, "memcpy");
    double x[] = {1, 2, 3};
    int64_t p = add_point(db, run, 0, "memcpy.d2d", x, 3);
    vyre_activity k;
    memset(&k, 0, sizeof k);
    k.kind = VYRE_ACTIVITY_KERNEL;
    snprintf(k.name, sizeof k.name, "kern");
    cr_assert_eq(vyre__bench_point_records(db, run, p, &k, 1, NULL), 0);
    cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_FAILED, "out of memory", NULL), 0);
    cr_assert_eq(raw_int("SELECT count(*) FROM points"), 0);
    cr_assert_eq(raw_int("SELECT count(*) FROM samples"), 0);
    cr_assert_eq(raw_int("SELECT count(*) FROM timings"), 0);
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_FAILED);
    cr_assert_str_eq(r.message, "out of memory");
    vyre_results_close(db);
}

Test(bench_db, interrupted_run_keeps_finished_points)
{
    vyre_results *db = open_ok();
    int64_t run = begin_run(db, "cache");
    double x[] = {5, 6, 7};
    add_point(db, run, 0, "cache.hit", x, 3);
    cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_INTERRUPTED, NULL, NULL), 0);
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_INTERRUPTED);
    cr_assert_eq(r.npoints, 1);
    vyre_results_close(db);
}

/* Runs sql on the test database outside libcore. */
static void raw_exec(const char *sql)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open(g_path, &raw), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(raw, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(raw));
    sqlite3_close(raw);
}

static vyre_bench_run_status status_of(vyre_results *db, int64_t id)
{
    vyre_bench_run r;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_run_get(db, id, &r, &e), 0, "%s", e.message);
    return r.status;
}

Test(bench_db, live_run_of_this_process_stays_running)
{
    vyre_results *db = open_ok();
    int64_t run = begin_run(db, "cache");
    /* Field 22 of /proc/self/stat, counted here on its own. */
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    cr_assert(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *save = NULL, *tok = strtok_r(strrchr(buf, ')') + 1, " ", &save);
    for (int field = 3; field < 22 && tok; field++)
        tok = strtok_r(NULL, " ", &save);
    cr_assert(tok);
    cr_assert_eq(raw_int("SELECT pid_start FROM runs"), atoll(tok),
                 "the start time of this process is recorded");
    size_t n = 9;
    cr_assert_eq(vyre__bench_runs_reap(db, &n, NULL), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(status_of(db, run), VYRE_RUN_RUNNING);
    vyre_results_close(db);
}

Test(bench_db, reused_pid_marks_run_interrupted_keeping_points)
{
    vyre_results *db = open_ok();
    int64_t run = begin_run(db, "cache");
    double x[] = {5, 6, 7};
    add_point(db, run, 0, "cache.hit", x, 3);
    /* Our pid is alive, but the recorded start time says it was another
     * process: the pid was reused. */
    raw_exec("UPDATE runs SET pid_start = pid_start + 1");
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_INTERRUPTED);
    cr_assert_eq(r.npoints, 1, "finished points are kept");
    cr_assert(strstr(r.message, "ended without finishing"), "%s", r.message);
    vyre_results_close(db);
}

Test(bench_db, gone_pid_marks_run_interrupted_and_other_hosts_are_left)
{
    vyre_results *db = open_ok();
    int64_t dead = begin_run(db, "cache");
    int64_t other = begin_run(db, "cache");
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0)
        _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE runs SET pid = %d, pid_start = NULL WHERE id = %lld; "
             "UPDATE runs SET pid = %d, host = 'elsewhere' WHERE id = %lld",
             (int)child, (long long)dead, (int)child, (long long)other);
    raw_exec(sql);
    vyre_bench_run *list = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_runs_list(db, 0, &list, &n, NULL), 0);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(list[i].status, list[i].id == dead ? VYRE_RUN_INTERRUPTED : VYRE_RUN_RUNNING,
                     "run %lld", (long long)list[i].id);
    free(list);
    vyre_results_close(db);
}

Test(bench_db, resolve_run_references)
{
    vyre_results *db = open_ok();
    int64_t a = begin_run(db, "cache"), b = begin_run(db, "cache");
    cr_assert_eq(vyre__bench_run_finish(db, a, VYRE_RUN_DONE, NULL, NULL), 0);
    cr_assert_eq(vyre__bench_run_finish(db, b, VYRE_RUN_DONE, NULL, NULL), 0);
    /* Newer runs that are not done: last and last-N skip them (issue 25). */
    int64_t failed = begin_run(db, "launch");
    cr_assert_eq(vyre__bench_run_finish(db, failed, VYRE_RUN_FAILED, "no GPU", NULL), 0);
    int64_t running = begin_run(db, "cache");
    int64_t id = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_run_resolve(db, "last", &id, NULL), 0);
    cr_assert_eq(id, b);
    cr_assert_eq(vyre_bench_run_resolve(db, "last-1", &id, NULL), 0);
    cr_assert_eq(id, a);
    char ref[32];
    snprintf(ref, sizeof ref, "%lld", (long long)a);
    cr_assert_eq(vyre_bench_run_resolve(db, ref, &id, NULL), 0);
    cr_assert_eq(id, a);
    cr_assert_eq(vyre_bench_run_resolve(db, "last-2", &id, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no done run 'last-2'"), "%s", e.message);
    /* By id, a run that is not done is still reachable. */
    snprintf(ref, sizeof ref, "%lld", (long long)running);
    cr_assert_eq(vyre_bench_run_resolve(db, ref, &id, NULL), 0);
    cr_assert_eq(id, running);
    cr_assert_eq(vyre_bench_run_resolve(db, "999", &id, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no run 999"), "%s", e.message);
    cr_assert_eq(e.remedy, VYRE_REMEDY_BENCH_RUNS);
    cr_assert_str_eq(e.hint, "");
    cr_assert_eq(vyre_bench_run_resolve(db, "x1", &id, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "bad run 'x1'"), "%s", e.message);
    vyre_bench_run *runs = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_runs_list(db, 0, &runs, &n, NULL), 0);
    cr_assert_eq(n, 4);
    cr_assert_eq(runs[0].id, running, "newest first");
    cr_assert_eq(runs[2].id, b);
    vyre_free(runs);
    vyre_results_close(db);
}

/* ---- compare on synthetic runs -------------------------------------------------------- */

Test(bench_db, compare_verdicts)
{
    vyre_results *db = open_ok();
    enum { N = 40 };
    double base[N], slower[N], faster[N], same[N];
    for (int i = 0; i < N; i++) {
        double jitter = (double)((i * 37) % 11) * 0.1; /* deterministic, 0 .. 1 */
        base[i] = 100 + jitter;
        slower[i] = 110 + jitter; /* +10 % */
        faster[i] = 80 + jitter;  /* -20 % */
        same[i] = 100 + (double)((i * 53) % 11) * 0.1;
    }
    int64_t a = begin_run(db, "launch");
    add_point(db, a, 0, "p.slower", base, N);
    add_point(db, a, 1, "p.faster", base, N);
    add_point(db, a, 2, "p.same", base, N);
    add_point(db, a, 3, "p.only_a", base, N);
    vyre__bench_run_finish(db, a, VYRE_RUN_DONE, NULL, NULL);
    int64_t b = begin_run(db, "launch");
    add_point(db, b, 0, "p.slower", slower, N);
    add_point(db, b, 1, "p.faster", faster, N);
    add_point(db, b, 2, "p.same", same, N);
    add_point(db, b, 3, "p.only_b", base, N);
    vyre__bench_run_finish(db, b, VYRE_RUN_DONE, NULL, NULL);

    vyre_bench_cmp_row *rows = NULL;
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_compare_runs(db, &a, 1, b, NULL, &rows, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 5);
    cr_assert_str_eq(rows[0].a.benchmark, "p.slower");
    cr_assert(rows[0].has_a && rows[0].has_b);
    cr_assert_eq(rows[0].cmp.verdict, VYRE_VERDICT_SLOWER);
    cr_assert_float_eq(rows[0].cmp.ratio, 1.1, 0.01);
    cr_assert_eq(rows[1].cmp.verdict, VYRE_VERDICT_FASTER);
    cr_assert_eq(rows[2].cmp.verdict, VYRE_VERDICT_SAME);
    cr_assert(rows[3].has_a && !rows[3].has_b, "only in A");
    cr_assert(!rows[4].has_a && rows[4].has_b, "only in B");
    cr_assert_str_eq(rows[4].b.benchmark, "p.only_b");
    vyre_free(rows);
    vyre_results_close(db);
}

/* ---- the engine ------------------------------------------------------------------------- */

struct fake {
    int calls;
    volatile sig_atomic_t *stop;
    int stop_at;
};

static int fake_sample(void *ctx, double *value, double *wall, vyre_error *err)
{
    (void)err;
    struct fake *f = ctx;
    f->calls++;
    *value = f->calls == 7 ? 1000.0 : 100.0 + (double)(f->calls % 3); /* one outlier */
    *wall = *value + 5;
    if (f->stop && f->calls == f->stop_at)
        *f->stop = 1;
    return 0;
}

Test(bench_db, measure_stops_by_rule_and_flags_outliers)
{
    struct fake f = {0, NULL, 0};
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = fake_sample;
    o.ctx = &f;
    o.warmup = 2;
    o.rule = (vyre_stats_stop_rule){20, 0.0, 0.0, 0.0, 0};
    o.nvml_index = -1;
    vyre_bench_point pt;
    memset(&pt, 0, sizeof pt);
    vyre_bench_sample *s = NULL;
    size_t n = 0;
    int intr = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_measure(&o, &pt, &s, &n, &intr, &e), 0, "%s", e.message);
    cr_assert_eq(intr, 0);
    cr_assert_eq(n, 20, "min samples, noise criterion off");
    cr_assert_eq(f.calls, 22, "two warm-up calls");
    cr_assert_eq(pt.stop_reason, VYRE_STOP_MINIMUMS_MET);
    cr_assert_eq(pt.stats.n_outliers, 1);
    cr_assert_eq(s[4].outlier, 1, "the 7th call (5th sample) is the outlier");
    cr_assert_eq(s[3].outlier, 0);
    cr_assert_str_neq(pt.stop, "");
    vyre_free(s);

    /* Ctrl-C: stops, and the point is incomplete. */
    volatile sig_atomic_t stop = 0;
    struct fake g = {0, &stop, 5};
    o.ctx = &g;
    o.stop = &stop;
    cr_assert_eq(vyre__bench_measure(&o, &pt, &s, &n, &intr, NULL), 0);
    cr_assert_eq(intr, 1);
    cr_assert_null(s);
    cr_assert_eq(n, 0);
}

Test(bench_db, measure_stops_on_robust_noise_despite_an_outlier)
{
    /* 100..102 with one 1000: stddev / mean stays above 2 % for far more
     * than 1000 samples, 1.4826 * MAD / median is 1.47 % from the start. */
    struct fake f = {0, NULL, 0};
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = fake_sample;
    o.ctx = &f;
    o.rule = (vyre_stats_stop_rule){10, 0.0, 0.02, 0.0, 1000};
    o.nvml_index = -1;
    vyre_bench_point pt;
    memset(&pt, 0, sizeof pt);
    vyre_bench_sample *s = NULL;
    size_t n = 0;
    int intr = 0;
    cr_assert_eq(vyre__bench_measure(&o, &pt, &s, &n, &intr, NULL), 0);
    cr_assert_eq(pt.stop_reason, VYRE_STOP_NOISE_OK, "%s", pt.stop);
    cr_assert_eq(n, 10, "stops as soon as the minimum is met: %s", pt.stop);
    cr_assert_gt(pt.stats.rel_stddev, 0.02, "stddev / mean is kept as it is");
    cr_assert_lt(pt.stats.robust_noise, 0.02);
    vyre_free(s);
}

Test(bench_db, datasheet_peaks)
{
    const char *label = NULL;
    cr_assert_float_eq(vyre_bench_peak_bandwidth("NVIDIA H100 80GB HBM3", &label), 3.35e12, 1);
    cr_assert_str_eq(label, "H100 SXM (3.35 TB/s)");
    cr_assert_float_eq(vyre_bench_peak_bandwidth("NVIDIA H100 PCIe", &label), 2.0e12, 1);
    cr_assert_float_eq(vyre_bench_peak_bandwidth("NVIDIA H200", &label), 4.8e12, 1);
    cr_assert_float_eq(vyre_bench_peak_bandwidth("NVIDIA A100-SXM4-80GB", &label), 0, 1e-9);
    cr_assert_null(label);
}

/* ---- a whole run (vyre_bench_run_suites) without a driver ------------------------ */

typedef struct skip_seen {
    int calls;
    char suites[128];
    vyre_error why;
} skip_seen;

static void on_skip(const char *suites, const vyre_error *why, void *ctx)
{
    skip_seen *s = ctx;
    s->calls++;
    snprintf(s->suites, sizeof s->suites, "%s", suites);
    s->why = *why;
}

/* No driver for this test process (and its JIT cache under the test's
 * directory, not the user's). */
static void no_driver(void)
{
    char xdg[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", g_dir);
    cr_assert_eq(setenv("XDG_CACHE_HOME", xdg, 1), 0);
    cr_assert_eq(setenv("VYRE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1), 0);
    unsetenv("CUDA_CACHE_PATH");
    unsetenv("CUDA_CACHE_MAXSIZE");
}

Test(bench_db, run_suites_rejects_bad_options_before_creating_a_run)
{
    vyre_results *db = open_ok();
    static const char *const bad[] = {"launch", "nope"};
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.suites = bad;
    o.nsuites = 2;
    vyre_bench_run_result res;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_run_suites(&o, &res, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "unknown suite 'nope'");
    cr_assert_eq(res.run_id, 0);
    o.nsuites = 0;
    cr_assert_eq(vyre_bench_run_suites(&o, &res, NULL), VYRE_EINVAL, "nothing to run");
    cr_assert_eq(vyre_bench_run_suites(NULL, &res, NULL), VYRE_EINVAL);
    cr_assert_eq(raw_int("SELECT count(*) FROM runs"), 0);
    vyre_bench_run_result_release(&res);
    vyre_bench_run_result_release(NULL);
    vyre_results_close(db);
}

Test(bench_db, run_suites_skips_gpu_suites_it_was_not_asked_for_by_name)
{
    no_driver();
    vyre_results *db = open_ok();
    static const char *const suites[] = {"launch", "memcpy"};
    skip_seen seen;
    memset(&seen, 0, sizeof seen);
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.suites = suites;
    o.nsuites = 2;
    o.command_line = "vyre-bench run";
    o.git_rev = "abc123";
    o.on_skip = on_skip;
    o.cb_ctx = &seen;
    vyre_bench_run_result res;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_run_suites(&o, &res, &e), 0, "%s", e.message);
    cr_assert_gt(res.run_id, 0);
    cr_assert_eq(res.npoints, 0);
    cr_assert_eq(res.interrupted, 0);
    cr_assert_str_eq(res.skipped, "launch, memcpy");
    cr_assert_eq(res.skip_reason.code, VYRE_ENODRIVER);
    cr_assert_eq(seen.calls, 1);
    cr_assert_str_eq(seen.suites, "launch, memcpy");
    cr_assert_str_eq(seen.why.message, res.skip_reason.message);

    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, res.run_id, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_DONE);
    cr_assert_str_eq(r.suites, "launch,memcpy");
    cr_assert_str_eq(r.git_rev, "abc123");
    cr_assert_str_eq(r.command_line, "vyre-bench run");
    char want[700];
    snprintf(want, sizeof want, "skipped GPU suites launch, memcpy: %.300s",
             res.skip_reason.message);
    cr_assert_str_eq(r.message, want);
    vyre_bench_run_result_release(&res);
    vyre_results_close(db);
}

Test(bench_db, run_suites_fails_a_gpu_suite_named_by_the_user)
{
    no_driver();
    vyre_results *db = open_ok();
    static const char *const suites[] = {"cache", "bandwidth"};
    skip_seen seen;
    memset(&seen, 0, sizeof seen);
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = db;
    o.suites = suites;
    o.nsuites = 2;
    o.explicit_suites = 1;
    o.on_skip = on_skip;
    o.cb_ctx = &seen;
    vyre_bench_run_result res;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_run_suites(&o, &res, &e), VYRE_ENODRIVER, "%s", e.message);
    cr_assert_gt(res.run_id, 0);
    cr_assert_eq(res.npoints, 0, "nothing is measured, not even the cache suite");
    cr_assert_eq(res.finish_error.code, 0);
    cr_assert_eq(seen.calls, 0);
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, res.run_id, &r, NULL), 0);
    cr_assert_eq(r.status, VYRE_RUN_FAILED);
    cr_assert_str_eq(r.message, e.message);
    vyre_bench_run_result_release(&res);
    vyre_results_close(db);
}

/* A run reads back with the suites that have a point, in the order asked
 * (issue 25: without a GPU, 'launch,memcpy,cache' while only cache ran...
 * here launch ran and the rest did not); a run with no point keeps the
 * suites it asked for. */
Test(bench_db, runs_show_the_suites_that_ran)
{
    vyre_results *db = open_ok();
    int64_t a = begin_run(db, "memcpy,launch,sweep:k.ptx:add");
    const double x[3] = {10, 11, 12};
    add_point(db, a, 0, "launch.empty", x, 3);
    int64_t b = begin_run(db, "launch,cache");
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, a, &r, NULL), 0);
    cr_expect_str_eq(r.suites, "launch");
    cr_assert_eq(vyre_bench_run_get(db, b, &r, NULL), 0);
    cr_expect_str_eq(r.suites, "launch,cache");
    vyre_bench_run *list = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_runs_list(db, 0, &list, &n, NULL), 0);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(list[1].suites, "launch");
    vyre_free(list);
    vyre_results_close(db);
}

/* ---- a baseline pooled over the last K runs (issue 27) ------------------------------ */

/* A done run on gpu with one point "p.pool" of 3 rounds x 12 samples
 * around center (+-0.5%, the same pattern in each round). */
static int64_t pooled_run(vyre_results *db, const char *gpu, double center)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.gpu_name, sizeof r.gpu_name, "%s", gpu);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    enum { ROUNDS = 3, PER = 12, N = ROUNDS * PER };
    double x[N];
    vyre_bench_sample s[N];
    memset(s, 0, sizeof s);
    for (int i = 0; i < N; i++) {
        x[i] = center * (1.0 + 0.001 * (double)((i * 7) % 11 - 5));
        s[i].value = x[i];
        s[i].wall = x[i] + 100;
        s[i].round = (unsigned)(i / PER);
    }
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = r.id;
    snprintf(p.suite, sizeof p.suite, "launch");
    snprintf(p.benchmark, sizeof p.benchmark, "p.pool");
    p.device = 0;
    p.gpu_timer = 1;
    p.items = 1;
    p.rounds = ROUNDS;
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__stats_compute(x, N, &p.stats, &e), 0);
    snprintf(p.stop, sizeof p.stop, "noise-ok");
    p.stop_reason = VYRE_STOP_NOISE_OK;
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, N, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    return r.id;
}

/* The verdict of candidate b against the baseline selector sel. */
static vyre_stats_verdict pooled_verdict(vyre_results *db, const char *sel, int64_t b,
                                         size_t *pooled, size_t *rounds_a)
{
    int64_t ids[VYRE_RESULTS_POOL_MAX];
    size_t n = 0, asked = 0, nr = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_select_pool(db, sel, b, ids, &n, &asked, &e), 0, "%s", e.message);
    vyre_bench_cmp_row *rows = NULL;
    cr_assert_eq(vyre_bench_compare_runs(db, ids, n, b, NULL, &rows, &nr, &e), 0, "%s", e.message);
    cr_assert_eq(nr, 1);
    cr_assert(rows[0].has_a && rows[0].has_b);
    vyre_stats_verdict v = rows[0].cmp.verdict;
    *pooled = n;
    *rounds_a = rows[0].cmp.rounds_a;
    vyre_free(rows);
    return v;
}

Test(bench_db, a_baseline_pools_the_rounds_of_the_last_k_runs)
{
    vyre_results *db = open_ok();
    /* Five steady H200 runs drifting +-1%; five H100 runs of which the
     * newest is 25% slow (a bad machine day). */
    const double steady[5] = {99, 100.5, 101, 99.5, 100};
    const double one_slow[5] = {100, 100.5, 99.5, 100, 125};
    for (int i = 0; i < 5; i++) {
        pooled_run(db, "NVIDIA H200", steady[i]);
        pooled_run(db, "NVIDIA H100 80GB HBM3", one_slow[i]);
    }
    int64_t same = pooled_run(db, "NVIDIA B200", 100);
    int64_t slow = pooled_run(db, "NVIDIA B200", 120);
    size_t pooled = 0, rounds = 0;
    cr_assert_eq(pooled_verdict(db, "gpu=H200 last:5", same, &pooled, &rounds), VYRE_VERDICT_SAME);
    cr_assert_eq(pooled, 5);
    cr_assert_eq(rounds, 15, "each run's 3 rounds kept apart: %zu", rounds);
    cr_assert_eq(pooled_verdict(db, "gpu=H200 last:5", slow, &pooled, &rounds),
                 VYRE_VERDICT_SLOWER);
    /* Against the slow run alone the unchanged candidate looks faster;
     * pooled with the four before it, it is the same. */
    cr_assert_eq(pooled_verdict(db, "gpu=H100 last", same, &pooled, &rounds), VYRE_VERDICT_FASTER);
    cr_assert_eq(pooled, 1);
    cr_assert_eq(pooled_verdict(db, "gpu=H100 last:5", same, &pooled, &rounds), VYRE_VERDICT_SAME);
    /* The pooled median is the one shown as A's. */
    int64_t ids[VYRE_RESULTS_POOL_MAX];
    size_t n = 0, asked = 0, nr = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H100 last:5", same, ids, &n, &asked, &e), 0);
    vyre_bench_cmp_row *rows = NULL;
    cr_assert_eq(vyre_bench_compare_runs(db, ids, n, same, NULL, &rows, &nr, &e), 0);
    cr_assert_float_eq(rows[0].a.stats.median, 100, 0.6, "%g", rows[0].a.stats.median);
    vyre_free(rows);
    vyre_results_close(db);
}

Test(bench_db, pooled_baseline_selectors_refuse_a_bad_k_and_take_what_exists)
{
    vyre_results *db = open_ok();
    int64_t first = pooled_run(db, "NVIDIA H200", 100);
    int64_t second = pooled_run(db, "NVIDIA H200", 100);
    int64_t ids[VYRE_RESULTS_POOL_MAX], id = 0;
    size_t n = 0, asked = 0;
    vyre_error e;
    vyre_error_clear(&e);
    /* More asked than match: the two that exist, newest first. */
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last:5", 0, ids, &n, &asked, &e), 0, "%s",
                 e.message);
    cr_assert_eq(n, 2);
    cr_assert_eq(asked, 5);
    cr_assert_eq(ids[0], second);
    cr_assert_eq(ids[1], first);
    /* The candidate is never pooled with itself, nor the baseline 'last'
     * or 'last-N' names (issue 33): the matching run before it, or none. */
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last:5", second, ids, &n, &asked, &e), 0);
    cr_assert(n == 1 && ids[0] == first, "%zu runs, first %lld", n, (long long)ids[0]);
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last", second, ids, &n, &asked, &e), 0);
    cr_assert(n == 1 && ids[0] == first);
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last", first, ids, &n, &asked, &e), 0);
    cr_assert(n == 1 && ids[0] == second, "a newer baseline is not the candidate");
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last-1", first, ids, &n, &asked, &e),
                 VYRE_ENOENT);
    cr_assert_eq(n, 0);
    cr_assert(strstr(e.message, "baseline 'gpu=H200 last-1' is run 1, the run compared, and no "
                                "done run before it matches"),
              "%s", e.message);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last-1", 0, ids, &n, &asked, &e), 0);
    cr_assert(n == 1 && asked == 1 && ids[0] == first);
    const char *bad[] = {"gpu=H200 last:0", "gpu=H200 last:65", "gpu=H200 last:", "last:x",
                         "last:-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(vyre_results_select_pool(db, bad[i], 0, ids, &n, &asked, &e), VYRE_EINVAL,
                     "%s", bad[i]);
        cr_assert_str_neq(e.hint, "", "%s has a hint", bad[i]);
    }
    cr_assert_eq(vyre_results_select_pool(db, "gpu=H200 last:0", 0, ids, &n, &asked, &e),
                 VYRE_EINVAL);
    cr_assert(strstr(e.message, "'last:0': K must be 1 to 64"), "%s", e.message);
    cr_assert_eq(vyre_results_select_pool(db, "gpu=B200 last:3", 0, ids, &n, &asked, &e),
                 VYRE_ENOENT);
    /* One run is needed where a RUN is: last:K is refused there. */
    cr_assert_eq(vyre_results_select_run(db, "gpu=H200 last:2", &id, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "'gpu=H200 last:2' names 2 runs where one run is needed"), "%s",
              e.message);
    vyre_results_close(db);
}
