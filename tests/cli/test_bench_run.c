/*
 * test_bench_run.c - `vyre-bench run / runs / show / compare / export`
 * through the real binary, without a GPU: the cache suite end to end, the
 * main job skipping the GPU suites with a reason, output formats and their
 * round trip through the database, compare's exit codes, and every bad
 * input with its exact message (exit 2, nothing stored beyond a failed run
 * row).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/bench.h"

static char g_tmp[512];
/* vyre-bench's TMPDIR, where the cache suite's durable puts go: a memory
 * filesystem when there is one (tu_mkdtemp_mem); nothing there is inspected. */
static char g_mem[512];
static char g_db[600];
static char g_env_home[700], g_env_xdg[700], g_env_data[700], g_env_tmp[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    tu_mkdtemp_mem(g_mem, sizeof g_mem);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    snprintf(g_env_tmp, sizeof g_env_tmp, "TMPDIR=%s", g_mem);
}

static void teardown(void)
{
    tu_rm_rf(g_mem);
    tu_rm_rf(g_tmp);
}

TestSuite(bench_run, .init = setup, .fini = teardown, .timeout = 120);

#define NODRIVER  "VYRE_CUDA_LIBRARY=/nonexistent"
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Fast stopping rule: the cache suite in a second or two. */
#define FAST "--min-samples", "3", "--min-time", "0", "--max-noise", "100", "--timeout", "5"

static void bench(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_tmp,
                               NODRIVER,
                               "CUDA_CACHE_PATH",
                               "NVTX_INJECTION64_PATH",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

static long long db_int(const char *sql)
{
    return tu_db_int(g_db, sql);
}

static size_t count_lines_with(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static const char g_header[] =
    "| benchmark              | axes                   | dev  | mode |      n |      median |"
    "          p5 |         p95 |         gpu |       batch |      kernel |  noise | outl | thr "
    "| metric           | stop |\n";

/* ---- the cache suite end to end --------------------------------------------------- */

Test(bench_run, cache_suite_end_to_end)
{
    tu_proc p;
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "-q"));
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.err, "");
    cr_assert_eq(strncmp(p.out, g_header, strlen(g_header)), 0, "stdout: %s", p.out);
    cr_assert_eq(count_lines_with(p.out, "| cache.store "), 3);
    cr_assert_eq(count_lines_with(p.out, "| cache.hit "), 3);
    cr_assert_eq(count_lines_with(p.out, "| cache.verify "), 1);
    cr_assert_eq(count_lines_with(p.out, "| cache.prune "), 1);
    cr_assert(strstr(p.out, "| size=4096 "), "%s", p.out);
    cr_assert(strstr(p.out, " MB/s "), "%s", p.out);
    cr_assert(strstr(p.out, " blobs/s "), "%s", p.out);
    char last[800];
    /* 8 cache points and the 3 host references of every round. */
    snprintf(last, sizeof last, "\nrun 1 done, 11 points stored in %s\n", g_db);
    cr_assert(strstr(p.out, last), "%s", p.out);
    tu_proc_free(&p);

    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'done' AND suites = 'cache'"), 1);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE run_id = 1 AND n >= 3"), 11);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE run_id = 1 AND suite = 'reference'"), 3);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE device IS NOT NULL"), 0);
    /* --min-samples 3 over 5 rounds: 2 a round at least, so 3 or more. */
    cr_assert_geq(db_int("SELECT min(c) FROM (SELECT count(*) AS c FROM samples GROUP BY "
                         "point_id)"),
                  3);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE command_line LIKE 'vyre-bench run "
                        "--suite cache%'"),
                 1);

    /* runs and show. */
    bench(&p, ARGS("runs", "--db", g_db));
    cr_assert_eq(p.exit_code, 0);
    /* Each column as wide as its cells (tools/common/tool_table). */
    cr_assert(strncmp(p.out, "RUN  STARTED              STATUS  POINTS  GPU  SUITES\n", 52) == 0,
              "%s", p.out);
    cr_assert(strstr(p.out, "  done        11  -    cache\n"), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("show", "--db", g_db, "last"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strncmp(p.out, "run 1 done, 11 points, started ", 31) == 0, "%s", p.out);
    cr_assert(strstr(p.out, "command:      vyre-bench run --suite cache --db "), "%s", p.out);
    cr_assert(strstr(p.out, g_header), "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_run, main_job_without_gpu_runs_cache_and_says_what_it_skipped)
{
    tu_proc p;
    bench(&p, ARGS("run", "--db", g_db, FAST, "-q"));
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert_str_eq(
        p.err, "vyre-bench: note: skipped the GPU suites launch, memcpy, bandwidth, compile: "
               "no NVIDIA driver found: cannot load '/nonexistent': /nonexistent: cannot open "
               "shared object file: No such file or directory\n"
               "hint: install the NVIDIA driver (it provides libcuda.so.1), or set "
               "VYRE_CUDA_LIBRARY to its path\n");
    cr_assert(strstr(p.out, "\nskipped: launch, memcpy, bandwidth, compile (no NVIDIA driver "
                            "found: "),
              "%s", p.out);
    cr_assert_eq(count_lines_with(p.out, "| cache."), 8);
    tu_proc_free(&p);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'done' AND message LIKE "
                        "'skipped GPU suites launch, memcpy, bandwidth, compile: no NVIDIA%'"),
                 1);
    /* runs lists the suite that ran, not the five asked for (issue 25). */
    bench(&p, ARGS("runs", "--db", g_db, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "\"suites\": \"cache\""), "%s", p.out);
    tu_proc_free(&p);
    /* The stored stop text has no noise figure of its own beside the noise
     * column (issue 25: 11.31% there, "noise 11.26%" in the stop text). */
    bench(&p, ARGS("show", "--db", g_db, "last"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    const char *table = strstr(p.out, "\n\n"); /* past the facts (the command line) */
    cr_assert_not_null(table, "%s", p.out);
    for (const char *s = strstr(table, "noise "); s; s = strstr(s + 1, "noise "))
        cr_assert(!(s[6] >= '0' && s[6] <= '9'), "a second noise figure: %.60s", s);
    tu_proc_free(&p);
}

Test(bench_run, a_named_gpu_suite_without_gpu_fails_the_run)
{
    tu_proc p;
    bench(&p, ARGS("run", "--suite", "launch,cache", "--db", g_db, FAST));
    cr_assert_eq(p.exit_code, 3);
    cr_assert_str_eq(p.out, "");
    cr_assert(strncmp(p.err, "vyre-bench: error: no NVIDIA driver found: ", 43) == 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'failed'"), 1);
    cr_assert_eq(db_int("SELECT count(*) FROM points"), 0);
    /* Stored as failed, it never becomes 'last' (issue 25: compare last-1
     * last then said "candidate run 3 is 'failed'"). */
    bench(&p, ARGS("show", "--db", g_db, "last"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "no done run 'last'"), "%s", p.err);
    tu_proc_free(&p);
}

/* ---- formats and round trips --------------------------------------------------------- */

/* Every number of a CSV is the shortest text that reads back as the same
 * double (issue 25: %.17g wrote 2709244.7250000001). */
static void assert_csv_numbers_shortest(const char *csv)
{
    char field[256];
    for (const char *s = csv; *s;) {
        size_t len = strcspn(s, ",\n");
        if (s[0] != '"' && len > 0 && len < sizeof field) {
            memcpy(field, s, len);
            field[len] = '\0';
            char *end = NULL;
            double v = strtod(field, &end);
            if (*end == '\0' && isfinite(v) && v != 0) {
                /* Significant digits: the mantissa's, without leading or
                 * trailing zeros. */
                char digits[256];
                size_t nd = 0;
                for (const char *c = field; *c && *c != 'e' && *c != 'E'; c++)
                    if (*c >= '0' && *c <= '9' && (nd || *c != '0'))
                        digits[nd++] = *c;
                while (nd && digits[nd - 1] == '0')
                    nd--;
                for (size_t prec = 1; prec < nd; prec++) {
                    char shorter[64];
                    snprintf(shorter, sizeof shorter, "%.*g", (int)prec, v);
                    cr_assert_neq(strtod(shorter, NULL), v, "'%s' is also '%s'", field, shorter);
                }
            }
        }
        s += len;
        if (*s)
            s++;
    }
}

Test(bench_run, json_csv_and_export_round_trip)
{
    tu_proc p;
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "--csv"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char *run_csv = strdup(p.out);
    tu_proc_free(&p);
    cr_assert(
        strncmp(
            run_csv,
            "run_id,point_id,seq,suite,benchmark,axes,device,mode,timer,n,min_ns,max_ns,"
            "mean_ns,median_ns,stddev_ns,rel_stddev,noise,p5_ns,p95_ns,mad_ns,outliers,throttled,"
            "wall_median_ns,bytes,items,metric_name,metric,stop_reason,stop,note\n",
            200) == 0,
        "%s", run_csv);
    cr_assert_eq(count_lines_with(run_csv, "\n"), 12); /* 8 cache points, 3 references */
    assert_csv_numbers_shortest(run_csv);

    /* export --csv prints what run --csv printed: the database holds the
     * same doubles. */
    bench(&p, ARGS("export", "--db", g_db, "--csv", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, run_csv);
    tu_proc_free(&p);
    free(run_csv);

    /* export --json: every point with its samples; the stored statistics
     * recomputed from the exported samples. */
    bench(&p, ARGS("export", "--db", g_db, "--json", "last"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s: %s", je.text, p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 5);
    json_t *run = json_object_get(o, "run");
    cr_assert_eq(json_integer_value(json_object_get(run, "point_count")), 11);
    cr_assert(json_integer_value(json_object_get(run, "finished_unix_ns")) >=
              json_integer_value(json_object_get(run, "started_unix_ns")));
    cr_assert_str_eq(json_string_value(json_object_get(run, "status")), "done");
    cr_assert_str_eq(json_string_value(json_object_get(run, "suites")), "cache");
    json_t *pts = json_object_get(o, "points");
    cr_assert_eq(json_array_size(pts), 11); /* the 3 references, then the 8 cache points */
    for (size_t i = 0; i < 11; i++) {
        json_t *pt = json_array_get(pts, i);
        json_t *smp = json_object_get(pt, "samples");
        size_t n = json_array_size(smp);
        cr_assert_eq((json_int_t)n, json_integer_value(json_object_get(pt, "n")));
        double *x = calloc(n, sizeof *x);
        for (size_t k = 0; k < n; k++) {
            json_t *v = json_object_get(json_array_get(smp, k), "value_ns");
            cr_assert(json_is_integer(v), "durations are whole ns");
            x[k] = (double)json_integer_value(v);
        }
        /* Whole ns in JSON: the minimum is a sample, so it rounds alike;
         * a median of an even count may differ by the rounding of two. */
        vyre_stats st;
        cr_assert_eq(vyre__stats_compute(x, n, &st, NULL), 0);
        json_t *med = json_object_get(pt, "median_ns");
        cr_assert(json_is_integer(med));
        cr_assert_leq(fabs(st.median - (double)json_integer_value(med)), 1.0, "point %zu", i);
        cr_assert_eq(st.min, (double)json_integer_value(json_object_get(pt, "min_ns")));
        free(x);
    }
    /* Axes are objects with numbers as numbers: "size=4096" is {"size": 4096}. */
    json_t *axes = json_object_get(json_array_get(pts, 3), "axes");
    cr_assert(json_is_object(axes));
    cr_assert_eq(json_object_size(axes), 1);
    cr_assert(json_is_integer(json_object_get(axes, "size")), "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(axes, "size")), 4096);
    /* One noise figure (issue 25): noise_ratio is the tables' robust one
     * (1.4826 MAD / median, or the rounds' when larger), stddev / mean has
     * its own name (schema_version 5). Whole-ns fields: 2 ns of slack. */
    json_t *p3 = json_array_get(pts, 3);
    double noise = json_number_value(json_object_get(p3, "noise_ratio"));
    double rel = json_number_value(json_object_get(p3, "rel_stddev_ratio"));
    double mean = json_number_value(json_object_get(p3, "mean_ns"));
    double median = json_number_value(json_object_get(p3, "median_ns"));
    double sd = json_number_value(json_object_get(p3, "stddev_ns"));
    double mad = json_number_value(json_object_get(p3, "mad_ns"));
    cr_assert(mean > 0 && median > 0, "%s", p.out);
    cr_assert(fabs(rel - sd / mean) <= 2 / mean, "rel_stddev_ratio %g, stddev/mean %g", rel,
              sd / mean);
    cr_assert(noise >= 1.4826 * mad / median - 2 / median, "noise_ratio %g, robust %g", noise,
              1.4826 * mad / median);
    cr_assert_null(json_object_get(p3, "robust_noise_ratio"), "one noise figure");
    /* Host points have none of the GPU views. */
    cr_assert(json_is_null(json_object_get(json_array_get(pts, 0), "gpu_ns")));
    cr_assert(json_is_null(json_object_get(json_array_get(pts, 0), "batch_ns")));
    cr_assert(json_is_null(json_object_get(json_array_get(pts, 0), "kernel_ns")));
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(pts, 0), "block_timeouts")), 0);
    json_decref(o);
    tu_proc_free(&p);

    /* run --json: one document. */
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 5);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "run"), "id")), 2);
    cr_assert_eq(json_array_size(json_object_get(o, "points")), 11);
    cr_assert_null(json_object_get(json_array_get(json_object_get(o, "points"), 0), "samples"));
    json_decref(o);
    tu_proc_free(&p);

    /* show --json: the same run document; its points are export's without
     * the samples. */
    bench(&p, ARGS("export", "--db", g_db, "--json", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *ex = json_loads(p.out, 0, &je);
    cr_assert_not_null(ex);
    tu_proc_free(&p);
    bench(&p, ARGS("show", "--db", g_db, "--json", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 5);
    cr_assert(json_equal(json_object_get(o, "run"), json_object_get(ex, "run")));
    json_t *spts = json_object_get(o, "points"), *epts = json_object_get(ex, "points");
    cr_assert_eq(json_array_size(spts), 11);
    for (size_t i = 0; i < 11; i++) {
        json_t *e = json_deep_copy(json_array_get(epts, i));
        json_object_del(e, "samples");
        cr_assert(json_equal(json_array_get(spts, i), e), "point %zu", i);
        json_decref(e);
    }
    json_decref(o);
    json_decref(ex);
    tu_proc_free(&p);

    /* runs --json: newest first, with their point counts. */
    bench(&p, ARGS("runs", "--db", g_db, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(o, "db")), g_db);
    json_t *runs = json_object_get(o, "runs");
    cr_assert_eq(json_array_size(runs), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *r = json_array_get(runs, i);
        cr_assert_eq(json_integer_value(json_object_get(r, "id")), (json_int_t)(2 - i));
        cr_assert_eq(json_integer_value(json_object_get(r, "point_count")), 11);
        cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "done");
    }
    json_decref(o);
    tu_proc_free(&p);

    /* --csv with --json is a usage error, whichever comes first. */
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, "--csv", "--json"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: --csv and --json cannot be combined\n"
                            "hint: give one of them: --csv for rows, --json for one document\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("export", "--db", g_db, "--json", "--csv", "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: --csv and --json cannot be combined\n"
                            "hint: give one of them: --csv for rows, --json for one document\n"
                            "try 'vyre-bench export --help'\n");
    tu_proc_free(&p);
    cr_assert_eq(db_int("SELECT count(*) FROM runs"), 2, "a usage error starts no run");
}

/* ---- compare ------------------------------------------------------------------------------ */

/* A run of `points` host points ("launch.stream", then "launch.p1"...),
 * each with n samples 1000 * shift * (1 + spread * u), u uniform in
 * [-1, 1) from a seeded generator, finished with `status` (RUNNING leaves
 * it unfinished). */
static int64_t synthetic_run_ex(vyre_results *db, double shift, double spread, int points,
                                vyre_bench_run_status status, uint64_t seed)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.command_line, sizeof r.command_line, "synthetic");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    enum { N = 400 };
    for (int k = 0; k < points; k++) {
        vyre_bench_point p;
        memset(&p, 0, sizeof p);
        p.run_id = r.id;
        p.seq = k;
        snprintf(p.suite, sizeof p.suite, "launch");
        if (k == 0)
            snprintf(p.benchmark, sizeof p.benchmark, "launch.stream");
        else
            snprintf(p.benchmark, sizeof p.benchmark, "launch.p%d", k);
        p.items = 1;
        p.device = -1;
        p.mode = VYRE_BENCH_HOST;
        cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
        static double x[N];
        static vyre_bench_sample s[N];
        memset(s, 0, sizeof s);
        uint64_t st = seed * 1000 + (uint64_t)k;
        for (int i = 0; i < N; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double)(st >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            s[i].value = x[i] = 1000 * shift * (1.0 + spread * u);
        }
        cr_assert_eq(vyre__stats_compute(x, N, &p.stats, NULL), 0);
        cr_assert_eq(vyre__bench_point_finish(db, &p, s, N, NULL), 0);
    }
    if (status != VYRE_RUN_RUNNING)
        cr_assert_eq(vyre__bench_run_finish(db, r.id, status, NULL, NULL), 0);
    return r.id;
}

static int64_t synthetic_run(vyre_results *db, double shift)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.command_line, sizeof r.command_line, "synthetic");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    enum { N = 30 };
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = r.id;
    snprintf(p.suite, sizeof p.suite, "launch");
    snprintf(p.benchmark, sizeof p.benchmark, "launch.stream");
    p.items = 1;
    p.device = -1;
    p.mode = VYRE_BENCH_HOST;
    cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
    double x[N];
    vyre_bench_sample s[N];
    memset(s, 0, sizeof s);
    for (int i = 0; i < N; i++)
        s[i].value = x[i] = 1000 * shift + (i % 7);
    cr_assert_eq(vyre__stats_compute(x, N, &p.stats, NULL), 0);
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, N, NULL), 0);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, NULL), 0);
    return r.id;
}

/* Uniform +-w has robust noise 1.4826 w / 2: the w for a given noise. */
#define SPREAD(noise) ((noise)*2.0 / 1.4826)

Test(bench_run, compare_verdicts_respect_noise)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    synthetic_run_ex(db, 1.0, SPREAD(0.05), 3, VYRE_RUN_DONE, 1); /* 1: A */
    synthetic_run_ex(db, 1.0, SPREAD(0.05), 3, VYRE_RUN_DONE, 2); /* 2: A again */
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 3, VYRE_RUN_DONE, 3); /* 3: 1 % noise */
    synthetic_run_ex(db, 1.1, SPREAD(0.01), 3, VYRE_RUN_DONE, 4); /* 4: +10 % at 1 % */
    synthetic_run_ex(db, 1.0, SPREAD(0.30), 3, VYRE_RUN_DONE, 5); /* 5: 30 % noise */
    synthetic_run_ex(db, 1.1, SPREAD(0.30), 3, VYRE_RUN_DONE, 6); /* 6: +10 % at 30 % */
    vyre_results_close(db);

    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
    cr_assert_eq(p.exit_code, 0, "A/A: %s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\n0 faster, 0 slower, 3 same, 0 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", g_db, "3", "4"));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\n0 faster, 3 slower, 0 same, 0 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "4", "3"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\n3 faster, 0 slower, 0 same, 0 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);

    /* Every point NOISY: nothing judged, INCONCLUSIVE (exit 4, issue 34). */
    bench(&p, ARGS("compare", "--db", g_db, "5", "6"));
    cr_assert_eq(p.exit_code, 4, "NOISY everywhere is inconclusive: %s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\n0 faster, 0 slower, 0 same, 3 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    cr_assert(strstr(p.out, "| NOISY   |\n"), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--strict", "5", "6"));
    cr_assert_eq(p.exit_code, 4, "NOISY is inconclusive with --strict: %s%s", p.out, p.err);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--strict", "--json", "5", "6"));
    cr_assert_eq(p.exit_code, 4, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\"verdict\": \"noisy\""), "%s", p.out);
    tu_proc_free(&p);
    /* Raising the noise limit turns NOISY into SAME: the interval does not
     * clear 1 +- 30 %. */
    bench(&p, ARGS("compare", "--db", g_db, "--max-noise", "50", "5", "6"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "\n0 faster, 0 slower, 3 same, 0 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", g_db, "--max-noise", "0", "5", "6"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value '0' for --max-noise\n"
                            "hint: give a percentage above 0, such as 10%\n"
                            "try 'vyre-bench compare --help'\n");
    tu_proc_free(&p);
}

Test(bench_run, compare_gate_cannot_pass_by_accident)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 3, VYRE_RUN_DONE, 1);        /* 1 */
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 3, VYRE_RUN_FAILED, 2);      /* 2 */
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 3, VYRE_RUN_INTERRUPTED, 3); /* 3 */
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 2, VYRE_RUN_RUNNING, 4);     /* 4 */
    synthetic_run_ex(db, 1.0, SPREAD(0.01), 2, VYRE_RUN_DONE, 5);        /* 5: one point fewer */
    synthetic_run_ex(db, 1.1, SPREAD(0.01), 2, VYRE_RUN_DONE, 6);        /* 6: slower, one fewer */
    vyre_results_close(db);

    static const struct {
        const char *b, *status;
    } bad[] = {{"2", "failed"}, {"3", "interrupted"}, {"4", "running"}};
    tu_proc p;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[400];
        bench(&p, ARGS("compare", "--db", g_db, "1", bad[i].b));
        cr_assert_eq(p.exit_code, 2, "run %s: %s%s", bad[i].b, p.out, p.err);
        cr_assert_str_eq(p.out, "");
        snprintf(want, sizeof want,
                 "vyre-bench: error: cannot compare: candidate run %s is '%s', not 'done'\n",
                 bad[i].b, bad[i].status);
        cr_assert(!strncmp(p.err, want, strlen(want)), "%s", p.err);
        cr_assert(strstr(p.err, "\nhint: "), "%s", p.err);
        tu_proc_free(&p);
        bench(&p, ARGS("compare", "--db", g_db, "--json", "--allow-missing", bad[i].b, "1"));
        cr_assert_eq(p.exit_code, 2, "baseline %s: %s%s", bad[i].b, p.out, p.err);
        cr_assert_str_eq(p.out, "");
        snprintf(want, sizeof want,
                 "vyre-bench: error: cannot compare: baseline run %s is '%s', not 'done'\n",
                 bad[i].b, bad[i].status);
        cr_assert(!strncmp(p.err, want, strlen(want)), "%s", p.err);
        tu_proc_free(&p);
    }

    bench(&p, ARGS("compare", "--db", g_db, "1", "5"));
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: cannot compare: 1 point only one run has, first "
                            "'launch.p2' only in run 1\n"
                            "hint: compare runs of the same suites and axes, or pass "
                            "--allow-missing to compare the points both have\n");
    tu_proc_free(&p);
    /* One point of three only in one run: more than a quarter unjudged. */
    bench(&p, ARGS("compare", "--db", g_db, "--allow-missing", "1", "5"));
    cr_assert_eq(p.exit_code, 4, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "| only A  |\n"), "%s", p.out);
    cr_assert(strstr(p.out, "\n0 faster, 0 slower, 2 same, 0 noisy, 0 drift, 1 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);
    /* --allow-missing does not hide a regression in the points both have. */
    bench(&p, ARGS("compare", "--db", g_db, "--allow-missing", "1", "6"));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_proc_free(&p);
}

Test(bench_run, compare_exit_codes_gate_on_slower)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    synthetic_run(db, 1.0); /* 1 */
    synthetic_run(db, 1.1); /* 2: 10 % slower */
    synthetic_run(db, 0.9); /* 3: 10 % faster */
    vyre_results_close(db);

    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    /* The markdown table of the row model: columns as wide as their cells. */
    cr_assert(strstr(p.out,
                     "| launch.stream | -    | host |  1.00 us |    0.3% |  1.10 us |    0.3% "
                     "| 1.100x | [1.097, 1.102] | 2.7e-11 | SLOWER  |\n"),
              "%s", p.out);
    cr_assert(strstr(p.out, "\n0 faster, 1 slower, 0 same, 0 noisy, 0 drift, 0 unmatched\n"), "%s",
              p.out);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", g_db, "1", "3"));
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strstr(p.out, "| FASTER  |\n"), "%s", p.out);
    tu_proc_free(&p);

    /* --json keeps the exit status: 1 on a SLOWER point, 0 otherwise. */
    bench(&p, ARGS("compare", "--db", g_db, "--json", "1", "2"));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), 4);
    cr_assert_eq(json_integer_value(json_object_get(o, "baseline_run_id")), 1);
    cr_assert_eq(json_integer_value(json_object_get(o, "run_id")), 2);
    cr_assert_float_eq(json_real_value(json_object_get(o, "min_effect_ratio")), 0.02, 1e-12);
    json_t *pt = json_array_get(json_object_get(o, "points"), 0);
    cr_assert_eq(json_array_size(json_object_get(o, "points")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(pt, "verdict")), "slower");
    cr_assert_str_eq(json_string_value(json_object_get(pt, "benchmark")), "launch.stream");
    cr_assert_eq(json_object_size(json_object_get(pt, "axes")), 0);
    cr_assert(json_is_null(json_object_get(pt, "device")));
    cr_assert_eq(json_integer_value(json_object_get(pt, "median_a_ns")), 1003);
    cr_assert_eq(json_integer_value(json_object_get(pt, "median_b_ns")), 1103);
    cr_assert_float_eq(json_real_value(json_object_get(pt, "median_ratio")), 1103.0 / 1003.0,
                       1e-12);
    cr_assert_lt(json_real_value(json_object_get(pt, "p_value")), 0.01);
    cr_assert_gt(json_real_value(json_object_get(pt, "ci_low_ratio")), 1.02);
    cr_assert_lt(json_real_value(json_object_get(pt, "ci_high_ratio")), 1.2);
    cr_assert_lt(json_real_value(json_object_get(pt, "noise_a_ratio")), 0.01);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(o, "summary"), "slower")), 1);
    json_decref(o);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--json", "1", "3"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    o = json_loads(p.out, 0, &je);
    cr_assert_not_null(o, "%s", p.out);
    pt = json_array_get(json_object_get(o, "points"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pt, "verdict")), "faster");
    json_decref(o);
    tu_proc_free(&p);

    /* 20 and 20% both say 20% (issue 25: '5%' was a bad value; issue 34:
     * a bare number is a percent, so 0.2 is 0.2%, no longer 20%). */
    static const char *const twenty[] = {"20", "20%"};
    for (size_t i = 0; i < 2; i++) {
        bench(&p, ARGS("compare", "--db", g_db, "--min-effect", twenty[i], "1", "2"));
        cr_assert_eq(p.exit_code, 0, "%s: a 10%% change is below a 20%% minimum effect: %s",
                     twenty[i], p.err);
        cr_assert(strstr(p.out, "| SAME    |\n"), "%s", p.out);
        cr_assert(strstr(p.out, "min effect 20%"), "%s", p.out);
        tu_proc_free(&p);
    }
    bench(&p, ARGS("compare", "--db", g_db, "--min-effect", "5%%", "1", "2"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value for --min-effect: '5%%' is not a "
                            "percentage\n"
                            "hint: write a percentage such as 0.5 or 0.5% (both are 0.5%: a bare "
                            "number is a percent, as nvbench's --max-noise)\n"
                            "try 'vyre-bench compare --help'\n");
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", g_db, "1", "9"));
    cr_assert_eq(p.exit_code, 2);
    char want[800];
    snprintf(want, sizeof want,
             "vyre-bench: error: no run 9 in '%s'\nhint: list the runs with 'vyre-bench runs'\n",
             g_db);
    cr_assert_str_eq(p.err, want);
    tu_proc_free(&p);

    bench(&p, ARGS("compare", "--db", g_db, "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: give two runs: RUN_A (baseline) RUN_B\n"
                            "hint: one run alone is compared with the done run before it only as "
                            "'last', 'last-N' or a selector: 'compare last' is 'compare last-1 "
                            "last'\n"
                            "try 'vyre-bench compare --help'\n");
    tu_proc_free(&p);
}

Test(bench_run, json_axes_are_objects_with_typed_values)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "sweep");
    snprintf(r.command_line, sizeof r.command_line, "synthetic");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = r.id;
    snprintf(p.suite, sizeof p.suite, "sweep");
    snprintf(p.benchmark, sizeof p.benchmark, "sweep.saxpy");
    snprintf(p.axes, sizeof p.axes, "kernel=sgemm N=1048576 ALPHA=0.5 tag=0x10");
    p.items = 1;
    p.device = 0;
    p.mode = VYRE_BENCH_HOT;
    cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
    double x[3] = {1000.25, 1000.75, 1001.5};
    vyre_bench_sample s[3];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 3; i++)
        s[i].value = x[i];
    cr_assert_eq(vyre__stats_compute(x, 3, &p.stats, NULL), 0);
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, 3, NULL), 0);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, NULL), 0);
    vyre_results_close(db);

    tu_proc pr;
    bench(&pr, ARGS("show", "--db", g_db, "--json", "last"));
    cr_assert_eq(pr.exit_code, 0, "%s", pr.err);
    json_error_t je;
    json_t *o = json_loads(pr.out, 0, &je);
    cr_assert_not_null(o, "%s", pr.out);
    json_t *pt = json_array_get(json_object_get(o, "points"), 0);
    json_t *axes = json_object_get(pt, "axes");
    cr_assert_eq(json_object_size(axes), 4, "%s", pr.out);
    cr_assert_str_eq(json_string_value(json_object_get(axes, "kernel")), "sgemm");
    cr_assert(json_is_integer(json_object_get(axes, "N")));
    cr_assert_eq(json_integer_value(json_object_get(axes, "N")), 1048576);
    cr_assert(json_is_real(json_object_get(axes, "ALPHA")));
    cr_assert_float_eq(json_real_value(json_object_get(axes, "ALPHA")), 0.5, 1e-15);
    cr_assert_str_eq(json_string_value(json_object_get(axes, "tag")), "0x10");
    /* Durations in whole ns, rounded: min 1000.25, median 1000.75, max 1001.5. */
    cr_assert_eq(json_integer_value(json_object_get(pt, "min_ns")), 1000);
    cr_assert_eq(json_integer_value(json_object_get(pt, "median_ns")), 1001);
    cr_assert_eq(json_integer_value(json_object_get(pt, "max_ns")), 1002);
    cr_assert_eq(json_integer_value(json_object_get(pt, "device")), 0);
    json_decref(o);
    tu_proc_free(&pr);
}

/* A GPU point's three views (issue 23): gpu (the event-timed median),
 * batch and kernel, in show's table, CSV and JSON; "-" / null where one
 * was not measured; the note of views that disagree. */
Test(bench_run, show_prints_the_three_views_of_a_gpu_point)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "sweep");
    snprintf(r.command_line, sizeof r.command_line, "synthetic");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    for (int i = 0; i < 2; i++) {
        vyre_bench_point p;
        memset(&p, 0, sizeof p);
        p.run_id = r.id;
        p.seq = i;
        snprintf(p.suite, sizeof p.suite, "sweep");
        snprintf(p.benchmark, sizeof p.benchmark, "sweep.add");
        snprintf(p.axes, sizeof p.axes, "N=%d", i ? 1 << 24 : 4096);
        p.items = 1;
        p.device = 0;
        p.gpu_timer = 1;
        p.mode = i ? VYRE_BENCH_COLD : VYRE_BENCH_HOT;
        p.batch_ns = i ? 0 : 2390.4;
        p.n_block_timeouts = i ? 0 : 1;
        cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
        double x[3] = {i ? 50000 : 2900, i ? 50100 : 2950, i ? 50200 : 3000};
        vyre_bench_sample s[3];
        memset(s, 0, sizeof s);
        for (int k = 0; k < 3; k++)
            s[k].value = x[k];
        cr_assert_eq(vyre__stats_compute(x, 3, &p.stats, NULL), 0);
        cr_assert_eq(vyre__bench_point_finish(db, &p, s, 3, NULL), 0);
        if (!i) {
            vyre_activity k[3];
            memset(k, 0, sizeof k);
            for (int j = 0; j < 3; j++) {
                k[j].kind = VYRE_ACTIVITY_KERNEL;
                snprintf(k[j].name, sizeof k[j].name, "add_kernel");
                k[j].start_ns = 1000;
                k[j].end_ns = 1000 + 2360 + (uint64_t)j * 10;
            }
            cr_assert_eq(vyre__bench_point_records(db, r.id, p.id, k, 3, NULL), 0);
        }
    }
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, NULL), 0);
    vyre_results_close(db);

    tu_proc pr;
    bench(&pr, ARGS("show", "--db", g_db, "last"));
    cr_assert_eq(pr.exit_code, 0, "%s", pr.err);
    cr_assert(strstr(pr.out, "|         gpu |       batch |      kernel |"), "%s", pr.out);
    cr_assert(strstr(pr.out, "|     2.95 us |     2.39 us |     2.37 us |"), "%s", pr.out);
    cr_assert(strstr(pr.out, "|    50.10 us |           - |           - |"), "%s", pr.out);
    /* 2.95 us against 2.37 us: within 5% + 1 us, no note; the discarded
     * sample is counted in the database. */
    cr_assert(!strstr(pr.out, "(CUPTI)"), "%s", pr.out);
    tu_proc_free(&pr);

    bench(&pr, ARGS("show", "--db", g_db, "--json", "last"));
    cr_assert_eq(pr.exit_code, 0, "%s", pr.err);
    json_error_t je;
    json_t *o = json_loads(pr.out, 0, &je);
    cr_assert_not_null(o, "%s", pr.out);
    json_t *hot = json_array_get(json_object_get(o, "points"), 0);
    json_t *cold = json_array_get(json_object_get(o, "points"), 1);
    cr_assert_eq(json_integer_value(json_object_get(hot, "gpu_ns")), 2950);
    cr_assert_eq(json_integer_value(json_object_get(hot, "batch_ns")), 2390);
    cr_assert_eq(json_integer_value(json_object_get(hot, "kernel_ns")), 2370);
    cr_assert_eq(json_integer_value(json_object_get(hot, "block_timeouts")), 1);
    cr_assert_eq(json_integer_value(json_object_get(cold, "gpu_ns")), 50100);
    cr_assert(json_is_null(json_object_get(cold, "batch_ns")));
    cr_assert(json_is_null(json_object_get(cold, "kernel_ns")));
    json_decref(o);
    tu_proc_free(&pr);

    bench(&pr, ARGS("export", "--db", g_db, "--csv", "last"));
    cr_assert_eq(pr.exit_code, 0, "%s", pr.err);
    cr_assert(strstr(pr.out, ",note,gpu_ns,batch_ns,kernel_ns,block_timeouts\n"), "%s", pr.out);
    cr_assert(strstr(pr.out, ",2950,2390.4,2370,1\n"), "%s", pr.out); /* shortest round-trip */
    tu_proc_free(&pr);
}

/* --disable-blocking-kernel is an option of run, said in its help. */
Test(bench_run, help_names_the_blocking_kernel_switch)
{
    tu_proc p;
    bench(&p, ARGS("run", "--help"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "      --disable-blocking-kernel\n"
                            "                        time GPU samples without first holding"),
              "%s", p.out);
    cr_assert(strstr(p.out, "(schema_version 5)"), "%s", p.out);
    tu_proc_free(&p);
}

/* ---- bad input ------------------------------------------------------------------------------ */

static void write_text(const char *name, const char *text, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", g_tmp, name);
    tu_write_file(path, text, strlen(text));
}

/* Runs `vyre-bench run --db DB args...`, expects exit 2 and exactly want
 * on stderr, nothing on stdout; then `failed_rows` failed runs and no
 * points in the database. */
static void expect_bad(const char *const *args, const char *want, int failed_rows)
{
    const char *full[40] = {"run", "--db", g_db};
    size_t n = 3;
    for (size_t i = 0; args[i]; i++)
        full[n++] = args[i];
    full[n] = NULL;
    tu_proc p;
    bench(&p, full);
    cr_assert_eq(p.exit_code, 2, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, want);
    tu_proc_free(&p);
    if (failed_rows) {
        cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'failed'"), failed_rows);
        cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status != 'failed'"), 0);
        cr_assert_eq(db_int("SELECT count(*) FROM points"), 0);
        cr_assert_eq(db_int("SELECT count(*) FROM samples"), 0);
    }
}

Test(bench_run, bad_axes_are_usage_errors)
{
    char k[700];
    write_text("k.cu", "extern \"C\" __global__ void f(float *o, const float *i, int N) {}\n", k,
               sizeof k);
    expect_bad(ARGS(k, "--entry", "f", "-a", "N="),
               "vyre-bench: error: axis 'N' has no values\n"
               "hint: write an axis such as N=1024:67108864:x4 (geometric), N=0:100:+25 "
               "(arithmetic), BLOCK=128,256,512 (list) or N=4096; integers may use size suffixes "
               "(1K:64M:x4, K/M/G are powers of 1024)\n"
               "try 'vyre-bench run --help'\n",
               0);
    expect_bad(ARGS(k, "--entry", "f", "-a", "N=100:10"),
               "vyre-bench: error: range '100:10' of axis 'N' is empty: start '100' is above stop "
               "'10'\n"
               "hint: write the smaller value first; ranges only count up\n"
               "try 'vyre-bench run --help'\n",
               0);
    expect_bad(ARGS(k, "-a", "N=4"),
               "vyre-bench: error: a kernel needs --entry NAME\n"
               "hint: name the kernel's extern \"C\" function\n"
               "try 'vyre-bench run --help'\n",
               0);
    expect_bad(ARGS("--suite", "lanch"),
               "vyre-bench: error: unknown suite 'lanch'\n"
               "hint: did you mean 'launch'?\n"
               "try 'vyre-bench run --help'\n",
               0);
    expect_bad(ARGS("--min-samples", "x"),
               "vyre-bench: error: bad value 'x' for --min-samples: expected a number >= 1\n"
               "try 'vyre-bench run --help'\n",
               0);
    expect_bad(ARGS("--devices", "0,0"),
               "vyre-bench: error: device 0 is listed twice in '0,0'\n"
               "try 'vyre-bench run --help'\n",
               0);
}

Test(bench_run, bad_sweeps_fail_the_run_with_one_message)
{
    char k[700], bad[700], spec[700];
    write_text("k.cu", "extern \"C\" __global__ void f(float *o, const float *i, int N) {}\n", k,
               sizeof k);
    write_text("bad.ptx",
               ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry f() { bogus; }\n",
               bad, sizeof bad);
    write_text("spec.json",
               "{\"kernel\": \"missing.cu\", \"entry\": \"f\", \"axes\": {\"N\": \"1K\"}}", spec,
               sizeof spec);
    expect_bad(ARGS(k, "--entry", "f", "-a", "N=1024", "-a", "FOO=1"),
               "vyre-bench: error: unknown parameter 'FOO'\n"
               "hint: the default binding takes N and BLOCK; bind other parameters through a "
               "spec's \"args\" (--spec)\n",
               1);
    expect_bad(ARGS(k, "--entry", "f", "-a", "BLOCK=32"),
               "vyre-bench: error: the sweep has no axis N: the default binding (float *out, "
               "const float *in, int N) needs it\n"
               "hint: add -a N=VALUES (elements), e.g. -a N=1M:64M:x4\n",
               2);
    char want[2048];
    snprintf(want, sizeof want,
             "vyre-bench: error: cannot read kernel '%s/missing.cu': No such file or directory\n"
             "hint: fix \"kernel\" in the spec (relative paths start at the spec's directory)\n",
             g_tmp);
    expect_bad(ARGS("--spec", spec), want, 3);
    expect_bad(ARGS(bad, "--entry", "f", "-a", "N=1024"),
               "vyre-bench: error: nvJitLink cannot link 'kernel.ptx' for 'sm_90': ptxas "
               "application ptx input, line 4; error   : Not a name of any known instruction: "
               "'bogus'\n"
               "hint: fix the PTX at the line quoted; the whole link log is in the output\n"
               "compiler log:\n"
               "ptxas application ptx input, line 4; error   : Not a name of any known "
               "instruction: 'bogus'\n"
               "ptxas fatal   : Ptx assembly aborted due to errors\n"
               "ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (kernel.ptx)\n",
               4);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE message LIKE 'unknown parameter%'"), 1);
}

Test(bench_run, history_usage_errors)
{
    tu_proc p;
    bench(&p, ARGS("show", "--db", g_db));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: which run? give a run id, 'last' or 'last-N'\n"
                            "try 'vyre-bench show --help'\n");
    tu_proc_free(&p);
    /* A database that does not exist is an error naming it for every
     * command that reads, and no empty file is left behind (issue 25). */
    const char *const readers[] = {"runs", "show", "compare", "export", "rm"};
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        if (strcmp(readers[i], "runs") == 0)
            bench(&p, ARGS("runs", "--db", g_db));
        else if (strcmp(readers[i], "compare") == 0)
            bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
        else if (strcmp(readers[i], "export") == 0)
            bench(&p, ARGS("export", "--db", g_db, "--csv", "1"));
        else
            bench(&p, ARGS(readers[i], "--db", g_db, "1"));
        cr_expect_eq(p.exit_code, 2, "%s", readers[i]);
        char nodb[800];
        snprintf(nodb, sizeof nodb,
                 "vyre-bench: error: no results database '%s'\nhint: check the path given to "
                 "--db; 'vyre-bench run --db PATH' creates one\n",
                 g_db);
        cr_expect_str_eq(p.err, nodb, "%s", readers[i]);
        tu_proc_free(&p);
        cr_assert_eq(access(g_db, F_OK), -1, "%s created '%s'", readers[i], g_db);
    }
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    vyre_results_close(db);
    bench(&p, ARGS("show", "--db", g_db, "last"));
    cr_assert_eq(p.exit_code, 2);
    char want[800];
    snprintf(want, sizeof want,
             "vyre-bench: error: no done run 'last' in '%s'\nhint: list the runs with 'vyre-bench "
             "runs'\n",
             g_db);
    cr_assert_str_eq(p.err, want);
    tu_proc_free(&p);
    bench(&p, ARGS("export", "--db", g_db, "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: choose a format: --csv, --json or --md\n"
                            "try 'vyre-bench export --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("runs", "--db", g_db));
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strstr(p.out, "(no runs in "), "%s", p.out);
    tu_proc_free(&p);
}

/* ---- runs always end in a true state ------------------------------------------ */

/* Starts `vyre-bench run --suite cache` on g_db in the background (stdout
 * and stderr into files in g_tmp) with a rule slow enough that the run is
 * still going after its first point; returns the pid. */
static pid_t start_slow_run(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char path[700];
        snprintf(path, sizeof path, "%s/bg.out", g_tmp);
        if (!freopen(path, "w", stdout))
            _exit(99);
        snprintf(path, sizeof path, "%s/bg.err", g_tmp);
        if (!freopen(path, "w", stderr))
            _exit(99);
        putenv(g_env_home);
        putenv(g_env_xdg);
        putenv(g_env_data);
        putenv(g_env_tmp);
        setenv("VYRE_CUDA_LIBRARY", "/nonexistent", 1);
        setenv("VYRE_NVML_LIBRARY", "/nonexistent", 1);
        unsetenv("CUDA_CACHE_PATH");
        unsetenv("NVTX_INJECTION64_PATH");
        /* Each point measures for at least 0.3 s: eight of them outlast the
         * wait for the first. */
        execl(VYRE_BENCH_BIN, VYRE_BENCH_BIN, "run", "--suite", "cache", "--db", g_db,
              "--min-samples", "3", "--min-time", "0.3", "--max-noise", "0", "--timeout", "1", "-q",
              (char *)NULL);
        _exit(98);
    }
    return pid;
}

/* Value of sql on g_db, -1 while the file or its tables are not there yet. */
static long long db_int_or(const char *sql)
{
    sqlite3 *raw = NULL;
    long long v = -1;
    if (sqlite3_open_v2(g_db, &raw, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(raw, 1000);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(raw, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(raw);
    return v;
}

/* Waits (60 s at most: a bound, not a measurement) until the background run
 * has finished a point. */
static void wait_first_point(pid_t pid)
{
    for (int i = 0; i < 6000; i++) {
        if (db_int_or("SELECT count(*) FROM points WHERE n > 0") > 0)
            return;
        int st;
        cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the run ended before its first point");
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert_fail("no point finished within 60 s");
}

static char *read_tmp(const char *name)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void signal_ends_run_interrupted(int sig, const char *name)
{
    pid_t pid = start_slow_run();
    wait_first_point(pid);
    cr_assert_eq(kill(pid, sig), 0);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "%s killed the process instead of ending the run", name);
    cr_assert_eq(WEXITSTATUS(st), 130, "%s", read_tmp("bg.err"));
    char want[128];
    snprintf(want, sizeof want, "vyre-bench: interrupted (%s): run 1 keeps the ", name);
    cr_assert(strstr(read_tmp("bg.err"), want), "%s", read_tmp("bg.err"));
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    cr_assert_geq(db_int("SELECT count(*) FROM points WHERE run_id = 1 AND n > 0"), 1,
                  "finished points are kept");
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE n = 0"), 0);
}

Test(bench_run, sighup_ends_the_run_interrupted)
{
    signal_ends_run_interrupted(SIGHUP, "SIGHUP");
}

Test(bench_run, sigterm_ends_the_run_interrupted)
{
    signal_ends_run_interrupted(SIGTERM, "SIGTERM");
}

Test(bench_run, sigkilled_run_is_interrupted_by_the_next_reader)
{
    pid_t pid = start_slow_run();
    wait_first_point(pid);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'running'"), 1,
                 "nothing could mark it: it was killed");
    long long kept = db_int("SELECT count(*) FROM points WHERE n > 0");

    tu_proc p;
    bench(&p, ARGS("runs", "--db", g_db));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "interrupted"), "%s", p.out);
    cr_assert_null(strstr(p.out, "running"), "%s", p.out);
    tu_proc_free(&p);
    cr_assert_eq(db_int("SELECT count(*) FROM runs WHERE status = 'interrupted' AND message LIKE "
                        "'%ended without finishing%'"),
                 1);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE n > 0"), kept, "its points are kept");
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE n = 0"), 0,
                 "the point it was measuring goes");

    bench(&p, ARGS("show", "1", "--db", g_db));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
}

/* ---- honest stopping ---------------------------------------------------------- */

Test(bench_run, quick_keeps_the_sample_minimum)
{
    tu_proc p;
    /* Noise criterion off: a point stops when the minimums are met. */
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, "--quick", "--max-noise", "0", "-q"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_gt(db_int("SELECT count(*) FROM points WHERE stop_reason = 'minimums-met'"), 0);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE stop_reason = 'minimums-met' AND n < "
                        "10"),
                 0, "--quick honours the default minimum of 10 samples");

    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, "--quick", "--max-noise", "0",
                   "--min-samples", "12", "-q"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(db_int("SELECT count(*) FROM points WHERE run_id = 2 AND stop_reason = "
                        "'minimums-met' AND n < 12"),
                 0, "--min-samples holds in --quick");
}

Test(bench_run, most_points_timing_out_ends_with_one_warning)
{
    tu_proc p;
    /* A minimum time no point can reach: every point stops at the timeout. */
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, "--min-samples", "3", "--min-time",
                   "1000", "--timeout", "0.001", "-q"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.err,
                     "vyre-bench: warning: 8 of 11 points stopped at the 0.001 s timeout before "
                     "their noise fell to 0.50%; their medians are less settled than usual\n"
                     "hint: an idle machine, a longer --min-time or --timeout, or pinned GPU "
                     "clocks (nvidia-smi --lock-gpu-clocks) help\n");
    tu_proc_free(&p);
}

/* The git state, now read by libcore (vyre_bench_git_state): a run made in
 * a checkout records its revision, "-dirty" when a tracked file changed,
 * and its branch; git's own complaints never reach the tool's stderr.
 * (One round per run: the git state is the run's, whatever it measured.) */
static void sql_text(const char *sql, char *out, size_t size)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, size, "%s", t ? (const char *)t : "(null)");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

Test(bench_run, records_the_git_revision_and_branch)
{
    if (system("git --version >/dev/null 2>&1") != 0)
        cr_skip_test("git is not installed: the git state a run records is not tested");
    char repo[700], cmd[2400];
    snprintf(repo, sizeof repo, "%s/repo", g_tmp);
    snprintf(cmd, sizeof cmd,
             "set -e; mkdir '%s'; cd '%s'; git init -q; git symbolic-ref HEAD refs/heads/trunk; "
             "echo one > f; git add f; git -c user.name=t -c user.email=t@invalid "
             "-c commit.gpgsign=false commit -q -m one",
             repo, repo);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    char head[64] = "";
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --short=12 HEAD", repo);
    FILE *f = popen(cmd, "r");
    cr_assert(f && fgets(head, sizeof head, f));
    pclose(f);
    head[strcspn(head, "\n")] = '\0';
    cr_assert_eq(chdir(repo), 0);
    unsetenv("GITHUB_REF_NAME");
    unsetenv("CI_COMMIT_REF_NAME");

    tu_proc p;
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "--rounds", "1", "-q"));
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    char got[300];
    sql_text("SELECT git_rev FROM runs ORDER BY id DESC LIMIT 1", got, sizeof got);
    cr_assert_str_eq(got, head);
    sql_text("SELECT git_ref FROM runs ORDER BY id DESC LIMIT 1", got, sizeof got);
    cr_assert_str_eq(got, "trunk");
    tu_proc_free(&p);

    tu_write_file("f", "two\n", 4);
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "--rounds", "1", "-q"));
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    sql_text("SELECT git_rev FROM runs ORDER BY id DESC LIMIT 1", got, sizeof got);
    char want[100];
    snprintf(want, sizeof want, "%s-dirty", head);
    cr_assert_str_eq(got, want);
    tu_proc_free(&p);

    /* Not a checkout: nothing recorded, nothing said. */
    cr_assert_eq(chdir(g_tmp), 0);
    bench(&p, ARGS("run", "--suite", "cache", "--db", g_db, FAST, "--rounds", "1", "-q"));
    cr_assert_eq(p.exit_code, 0, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.err, "");
    sql_text("SELECT git_rev FROM runs ORDER BY id DESC LIMIT 1", got, sizeof got);
    cr_assert_str_eq(got, "(null)");
    tu_proc_free(&p);
}
