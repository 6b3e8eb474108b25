/*
 * test_bench_view.c - what people look at: `show` fitted to 80, 120 and 200
 * columns (--width; piped output stays markdown), and `plot` to SVG
 * (checked by xmllint), PNG (signature and IHDR size) and HTML, from runs
 * stored through libcore's results API; plot's errors (no gnuplot on
 * PATH, a bad extension, no -o, no such run) with their exact messages.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sqlite3.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_tmp[512];
static char g_db[600];
static char g_work[600];
static char g_env_home[700], g_env_data[700], g_env_tmp[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_work, sizeof g_work, "%s/work", g_tmp);
    cr_assert_eq(mkdir(g_work, 0700), 0);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    snprintf(g_env_tmp, sizeof g_env_tmp, "TMPDIR=%s", g_work);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_view, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void bench_env(tu_proc *p, const char *const *args, const char *path_env)
{
    const char *const env[] = {g_env_home, g_env_data, g_env_tmp, "VYRE_CUDA_LIBRARY=/nonexistent",
                               "COLUMNS",  path_env,   NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

static void bench(tu_proc *p, const char *const *args)
{
    bench_env(p, args, NULL);
}

/* ---- stored runs ------------------------------------------------------------ */

static void add_point(vyre_results *db, int64_t run, int seq, const char *suite,
                      const char *benchmark, const char *axes, double base, size_t n,
                      vyre_stats_stop_reason why, const char *note)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "%s", suite);
    snprintf(p.benchmark, sizeof p.benchmark, "%s", benchmark);
    snprintf(p.axes, sizeof p.axes, "%s", axes);
    p.device = 0;
    p.mode = VYRE_BENCH_HOT;
    p.gpu_timer = 1;
    p.items = 1;
    p.bytes = 8 * base;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    double *x = calloc(n, sizeof *x);
    vyre_bench_sample *s = calloc(n, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        /* A spread of a few percent around base, and a slow tail. */
        x[i] = base * (1.0 + 0.03 * sin((double)i * 1.7) + (i % 17 == 0 ? 0.4 : 0));
        s[i].value = x[i];
        s[i].wall = x[i] + 1000;
    }
    cr_assert_eq(vyre__stats_compute(x, n, &p.stats, &e), 0);
    snprintf(p.metric_name, sizeof p.metric_name, "GB/s");
    p.metric = p.bytes / p.stats.median;
    p.stop_reason = why;
    snprintf(p.stop, sizeof p.stop, "%s: a long sentence about why it stopped after %zu samples",
             vyre_stats_stop_reason_name(why), n);
    snprintf(p.note, sizeof p.note, "%s", note);
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, n, &e), 0, "%s", e.message);
    free(x);
    free(s);
}

static int64_t make_run_ex(double slow, size_t nlaunch, vyre_bench_run_status status);

/* A run: a geometric sweep of N (1K to 1M, x4) and one point with many
 * samples; `slow` scales every time. Returns the run id. */
static int64_t make_run(double slow)
{
    return make_run_ex(slow, 400, VYRE_RUN_DONE);
}

/* The same with nlaunch samples in launch.stream, finished as status. */
static int64_t make_run_ex(double slow, size_t nlaunch, vyre_bench_run_status status)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_db, &db, &e), 0, "%s", e.message);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "sweep:add.ptx:add_k");
    snprintf(r.gpu_name, sizeof r.gpu_name, "NVIDIA H100 80GB HBM3");
    snprintf(r.driver, sizeof r.driver, "13000 (580.65.06)");
    snprintf(r.git_rev, sizeof r.git_rev, "0123456789ab");
    snprintf(r.command_line, sizeof r.command_line, "vyre-bench run add.ptx --entry add_k");
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    int seq = 0;
    for (double n = 1024; n <= 1048576; n *= 4) {
        char axes[64];
        snprintf(axes, sizeof axes, "N=%.0f BLOCK=256", n);
        add_point(db, r.id, seq++, "sweep", "add_k", axes, slow * (2000 + n * 0.01), 40,
                  n > 100000 ? VYRE_STOP_TIMEOUT : VYRE_STOP_NOISE_OK, "");
    }
    add_point(db, r.id, seq++, "launch", "launch.stream", "", slow * 3900, nlaunch,
              VYRE_STOP_NOISE_OK, "clocks varied during the point");
    cr_assert_eq(vyre__bench_run_finish(db, r.id, status, NULL, &e), 0, "%s", e.message);
    vyre_results_close(db);
    return r.id;
}

/* ---- the table fitted to a width -------------------------------------------- */

/* Every line of the table (after the facts: from the first blank line)
 * fits in width. */
static void check_table_width(const char *out, int width)
{
    const char *t = strstr(out, "\n\n");
    cr_assert_not_null(t, "%s", out);
    for (const char *p = t + 2; *p;) {
        size_t len = strcspn(p, "\n");
        cr_assert_leq(len, (size_t)width, "a %zu-column line at width %d:\n%s", len, width, t);
        p += len + (p[len] == '\n');
    }
}

Test(bench_view, show_fits_80_120_200_columns)
{
    make_run(1);
    static const int widths[] = {80, 120, 200};
    for (size_t i = 0; i < 3; i++) {
        char w[8];
        snprintf(w, sizeof w, "%d", widths[i]);
        tu_proc p;
        bench(&p, ARGS("show", "--db", g_db, "--width", w, "1"));
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        check_table_width(p.out, widths[i]);
        /* The columns that matter are there, the times in one unit. */
        cr_assert(strstr(p.out, "\nbenchmark "), "%s", p.out);
        cr_assert(strstr(p.out, "  median us"), "%s", p.out);
        cr_assert(strstr(p.out, "  GB/s"), "%s", p.out);
        cr_assert(!strstr(p.out, "| "), "markdown at width %d:\n%s", widths[i], p.out);
        /* Stop reasons as codes and a legend of the codes shown. */
        cr_assert(strstr(p.out, "\nstop: ok noise reached the target; tmo timeout before the "
                                "noise target\n"),
                  "%s", p.out);
        cr_assert(!strstr(p.out, "a long sentence"), "%s", p.out);
        if (widths[i] == 80) {
            cr_assert(!strstr(p.out, "  outl"), "%s", p.out);
            cr_assert(!strstr(p.out, "clocks varied"), "%s", p.out);
        }
        if (widths[i] == 200) /* room for everything, the note too */
            cr_assert(strstr(p.out, "  outl  thr") && strstr(p.out, "clocks varied during the "
                                                                    "point"),
                      "%s", p.out);
        tu_proc_free(&p);
    }
}

Test(bench_view, show_numbers_line_up_in_one_unit)
{
    make_run(1);
    tu_proc p;
    bench(&p, ARGS("show", "--db", g_db, "--width", "200", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* 1024 to 1048576 elements: about 2 us to 12.5 us, all in us with the
     * same decimals, right-aligned under the header. */
    const char *hdr = strstr(p.out, "median us");
    cr_assert_not_null(hdr, "%s", p.out);
    /* Each add_k row's median ends at the same column as the header. */
    const char *line_start = hdr;
    while (line_start > p.out && line_start[-1] != '\n')
        line_start--;
    size_t end_col = (size_t)(hdr - line_start) + strlen("median us");
    size_t rows = 0, dot = 0;
    for (const char *r = strstr(p.out, "\nadd_k "); r; r = strstr(r + 1, "\nadd_k ")) {
        const char *ls = r + 1;
        size_t len = strcspn(ls, "\n");
        cr_assert_gt(len, end_col);
        size_t d = end_col;
        while (d > 0 && ls[d - 1] != '.' && ls[d - 1] != ' ')
            d--;
        cr_assert(ls[end_col] == ' ' && ls[d - 1] == '.' && ls[end_col - 1] >= '0' &&
                      ls[end_col - 1] <= '9',
                  "median not right-aligned under its header:\n%.*s", (int)len, ls);
        if (!rows)
            dot = d;
        cr_assert_eq(d, dot, "decimal points not in one column:\n%s", p.out);
        rows++;
    }
    cr_assert_eq(rows, 6, "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_view, piped_show_stays_markdown_and_wide_shows_everything)
{
    make_run(1);
    tu_proc p;
    bench(&p, ARGS("show", "--db", g_db, "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "\n| benchmark              | axes                   | dev  |"), "%s",
              p.out);
    cr_assert(strstr(p.out, "a long sentence about why it stopped"), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("show", "--db", g_db, "--width", "80", "--wide", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "  outl  thr"), "%s", p.out);
    cr_assert(strstr(p.out, "noise-ok: a long sentence about why it stopped after 40 samples"),
              "%s", p.out);
    cr_assert(!strstr(p.out, "\nstop:"), "%s", p.out);
    tu_proc_free(&p);
}

/* Every line of out fits in width. */
static void check_all_lines_fit(const char *what, const char *out, int width)
{
    for (const char *p = out; *p;) {
        size_t len = strcspn(p, "\n");
        cr_assert_leq(len, (size_t)width, "%s: a %zu-column line at width %d:\n%s", what, len,
                      width, out);
        p += len + (p[len] == '\n');
    }
}

/* compare and runs fit 80 and 200 columns through the shared table module
 * (issue 25: compare was about 170 columns; --width was unknown). */
Test(bench_view, compare_and_runs_fit_80_and_200_columns)
{
    make_run(1);
    make_run(1.2);
    static const int widths[] = {80, 200};
    for (size_t i = 0; i < 2; i++) {
        char w[8];
        snprintf(w, sizeof w, "%d", widths[i]);
        tu_proc p;
        bench(&p, ARGS("compare", "--db", g_db, "--width", w, "1", "2"));
        cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
        check_all_lines_fit("compare", p.out, widths[i]);
        cr_assert(!strstr(p.out, "| "), "markdown at width %d:\n%s", widths[i], p.out);
        cr_assert(strstr(p.out, "\nbenchmark "), "%s", p.out);
        cr_assert(strstr(p.out, "B/A") && strstr(p.out, "verdict"), "%s", p.out);
        cr_assert(strstr(p.out, "SLOWER"), "%s", p.out);
        if (widths[i] == 200) /* every column */
            cr_assert(strstr(p.out, "noise A") && strstr(p.out, "interval") &&
                          strstr(p.out, "  p  ") && strstr(p.out, "N=1048576 BLOCK=256"),
                      "%s", p.out);
        else
            cr_assert(!strstr(p.out, "noise A"), "%s", p.out);
        tu_proc_free(&p);

        bench(&p, ARGS("runs", "--db", g_db, "--width", w));
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        check_all_lines_fit("runs", p.out, widths[i]);
        cr_assert(strstr(p.out, "RUN") && strstr(p.out, "STATUS") && strstr(p.out, "SUITES"), "%s",
                  p.out);
        if (widths[i] == 200)
            cr_assert(strstr(p.out, "NVIDIA H100 80GB HBM3  sweep:add.ptx:add_k\n"), "%s", p.out);
        tu_proc_free(&p);
    }
    /* --wide: every compare column; piped without --width: markdown. */
    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "--width", "80", "--wide", "1", "2"));
    cr_assert(strstr(p.out, "noise A") && !strstr(p.out, "| "), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
    cr_assert(strstr(p.out, "| benchmark "), "%s", p.out);
    tu_proc_free(&p);
}

/* Records branch main for run id (the baseline selectors' branch=). */
static void set_main(int64_t id)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_db, &db, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_results_run_set_ref(db, id, "main", &e), 0, "%s", e.message);
    vyre_results_close(db);
}

/* compare --baseline '... last:K' (issue 27): the head names the pooled
 * runs, fewer matching is a note, a bad K and a pool where one run is
 * needed are one error each. */
Test(bench_view, compare_baseline_pools_the_last_k_matching_runs)
{
    for (int i = 0; i < 3; i++)
        set_main(make_run(1));
    make_run(1.3); /* run 4, the candidate: no branch */
    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "--baseline", "branch=main last:3", "4"));
    cr_assert_eq(p.exit_code, 1, "30%% slower: %s%s", p.out, p.err);
    cr_assert(strstr(p.out, "runs 3, 2, 1 (baseline: the rounds of these 3 runs pooled) vs run 4"),
              "%s", p.out);
    cr_assert(strstr(p.out, "SLOWER"), "%s", p.out);
    cr_assert_str_eq(p.err, "");
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--json", "--baseline", "branch=main last:9", "4"));
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    cr_assert(strstr(p.err, "vyre-bench: note: only 3 done runs match 'branch=main last:9': "
                            "pooling those of 9 asked"),
              "%s", p.err);
    const char *ids = strstr(p.out, "\"baseline_run_ids\": [");
    cr_assert_not_null(ids, "%s", p.out);
    char got[32] = "";
    for (const char *c = ids + 21; *c && *c != ']' && strlen(got) + 1 < sizeof got; c++)
        if (*c >= '0' && *c <= '9')
            strncat(got, c, 1);
    cr_assert_str_eq(got, "321", "runs 3, 2, 1 newest first: %s", p.out);
    tu_proc_free(&p);
    /* Run 4 matches gpu=H100 too, but is never pooled with itself. */
    bench(&p, ARGS("compare", "--db", g_db, "--baseline", "gpu=H100 last:5", "4"));
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    cr_assert(strstr(p.out, "runs 3, 2, 1 (baseline: the rounds of these 3 runs pooled) vs run 4"),
              "%s", p.out);
    cr_assert(strstr(p.err, "note: only 3 done runs match 'gpu=H100 last:5'"), "%s", p.err);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--baseline", "branch=main last:0", "4"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "vyre-bench: error: baseline 'last:0': K must be 1 to 64\n"), "%s",
              p.err);
    cr_assert(strstr(p.err, "hint: K counts the newest matching runs"), "%s", p.err);
    tu_proc_free(&p);
    bench(&p,
          ARGS("compare", "--db", g_db, "--baseline", "branch=main last", "branch=main last:2"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "'branch=main last:2' names 2 runs where one run is needed"), "%s",
              p.err);
    tu_proc_free(&p);
}

Test(bench_view, compare_csv_has_a_row_per_point)
{
    make_run(1);
    make_run(1.2);
    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "--csv", "1", "2"));
    cr_assert_eq(p.exit_code, 1, "the exit status of the table: %s", p.err);
    const char *hdr = "suite,benchmark,axes,device,mode,median_a_ns,median_b_ns,noise_a_ratio,"
                      "noise_b_ratio,median_ratio,ci_low_ratio,ci_high_ratio,threshold_ratio,"
                      "p_value,verdict\n";
    cr_assert(strncmp(p.out, hdr, strlen(hdr)) == 0, "%s", p.out);
    size_t lines = 0;
    for (const char *s = p.out; (s = strchr(s, '\n')); s++)
        lines++;
    cr_assert_eq(lines, 1 + 7, "%s", p.out);
    cr_assert(strstr(p.out, "\nsweep,add_k,N=1024 BLOCK=256,0,hot,"), "%s", p.out);
    cr_assert(strstr(p.out, ",slower\n"), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--csv", "--json", "1", "2"));
    cr_assert_eq(p.exit_code, 2);
    tu_proc_free(&p);
}

/* A GPU column of '-' only is as wide as its header (issue 25: 30 wide). */
Test(bench_view, runs_columns_are_as_wide_as_their_cells)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "cache");
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, NULL), 0);
    vyre_results_close(db);
    tu_proc p;
    bench(&p, ARGS("runs", "--db", g_db));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "  GPU  SUITES\n"), "%s", p.out);
    cr_assert(strstr(p.out, "  done   ") && strstr(p.out, "  -    cache\n"), "%s", p.out);
    tu_proc_free(&p);
}

/* show --kernels says so for a point without records (issue 25: it said
 * nothing, as if --kernels had not been given). */
Test(bench_view, show_kernels_names_points_without_records)
{
    make_run(1);
    tu_proc p;
    bench(&p, ARGS("show", "--db", g_db, "--kernels", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "\npoint 1 add_k N=1024 BLOCK=256: no kernel records (host point, "
                            "--no-kernels, or no launch seen)\n"),
              "%s", p.out);
    cr_assert(strstr(p.out, "\npoint 7 launch.stream: no kernel records"), "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_view, bad_width_is_a_usage_error)
{
    tu_proc p;
    bench(&p, ARGS("show", "--width", "12", "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value '12' for --width\n"
                            "hint: give the columns to fit, such as 80 (20 to 10000)\n"
                            "try 'vyre-bench show --help'\n");
    tu_proc_free(&p);
}

/* ---- hostile text in a results database ------------------------------------ */

/* Runs sql on the results database (results files travel as CI artifacts:
 * anything can be in them). */
static void db_exec(const char *sql)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open(g_db, &raw), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(raw, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql,
                 msg ? msg : "?");
    sqlite3_close(raw);
}

/* No raw control byte (ESC, BEL, DEL, C1 CSI) anywhere in text. */
static void assert_no_raw_controls(const char *what, const char *text)
{
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        cr_assert(!(*s == 0x1b || *s == 0x07 || *s == 0x7f || (s[0] == 0xc2 && s[1] == 0x9b)),
                  "%s printed a raw control byte 0x%02x at offset %zu:\n%s", what, *s,
                  (size_t)(s - (const unsigned char *)text), text);
}

/* Two runs whose GPU name, benchmark name, note and kernel names carry
 * terminal escapes (clear screen, set title, an 8-bit CSI, DEL). */
static void make_hostile_runs(void)
{
    make_run(1);
    make_run(1);
    db_exec("UPDATE runs SET gpu_name = char(27) || '[2J', message = 'm' || char(7);"
            "UPDATE points SET benchmark = 'add_k' || char(27) || ']0;pwned' || char(7)"
            " WHERE benchmark = 'add_k';"
            "UPDATE points SET note = 'n' || char(155) || '31m' || char(127);"
            "INSERT INTO timings (run_id, point_id, host, pid, session_ns, kind, name, start_ns,"
            " end_ns, duration_ns, created_ns) SELECT run_id, id, 'h', 1, 0, 'kernel',"
            " 'kern' || char(27) || '[5m', 0, 100, 100, 0 FROM points;");
}

Test(bench_view, hostile_text_is_shown_escaped)
{
    make_hostile_runs();
    static const char *const widths[] = {NULL, "200", "--wide"};
    for (size_t i = 0; i < 3; i++) {
        tu_proc p;
        if (!widths[i])
            bench(&p, ARGS("show", "--db", g_db, "--kernels", "1"));
        else if (strcmp(widths[i], "--wide") == 0)
            bench(&p, ARGS("show", "--db", g_db, "--kernels", "--wide", "1"));
        else
            bench(&p, ARGS("show", "--db", g_db, "--kernels", "--width", widths[i], "1"));
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        assert_no_raw_controls("show", p.out);
        assert_no_raw_controls("show (stderr)", p.err);
        tu_assert_line(p.out, "gpu:          \\x1b[2J");
        cr_assert(strstr(p.out, ", \\x1b[2J\n"), "the summary line:\n%s", p.out);
        tu_assert_line(p.out, "message:      m\\x07");
        cr_assert(strstr(p.out, "add_k\\x1b]0;pwned\\x07"), "%s", p.out);
        cr_assert(strstr(p.out, "kern\\x1b[5m"), "%s", p.out);
        if (!widths[i] || i == 2)
            cr_assert(strstr(p.out, "n\\u009b31m\\x7f"), "%s", p.out);
        tu_proc_free(&p);
    }
    tu_proc p;
    bench(&p, ARGS("runs", "--db", g_db));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_no_raw_controls("runs", p.out);
    cr_assert(strstr(p.out, "  \\x1b[2J  "), "%s", p.out);
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
    cr_assert_lt(p.exit_code, 2, "%s", p.err);
    assert_no_raw_controls("compare", p.out);
    cr_assert(strstr(p.out, "| add_k\\x1b]0;pwned\\x07 "), "%s", p.out);
    tu_proc_free(&p);
    /* A point only one run has is named on stderr. */
    db_exec("UPDATE points SET axes = 'X=' || char(27) WHERE run_id = 1 AND seq = 0");
    bench(&p, ARGS("compare", "--db", g_db, "1", "2"));
    cr_assert_eq(p.exit_code, 2, "%s", p.out);
    assert_no_raw_controls("compare (stderr)", p.err);
    cr_assert(strstr(p.err, "X=\\x1b"), "%s", p.err);
    tu_proc_free(&p);
    /* CSV is data: piped, the bytes as stored; on a terminal, cleaned. */
    bench(&p, ARGS("export", "--db", g_db, "--csv", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_not_null(strstr(p.out, "add_k\x1b]0;pwned\x07,"), "%s", p.out);
    tu_proc_free(&p);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s export --csv --db %s 1", VYRE_BENCH_BIN, g_db);
    char sh[] = "/usr/bin/script", q[] = "-qec", dev[] = "/dev/null";
    char *const argv[] = {sh, q, cmd, dev, NULL};
    const char *const env[] = {g_env_home, g_env_data, g_env_tmp, NULL};
    tu_run(&p, argv, env);
    cr_assert_eq(p.exit_code, 0, "script(1) (util-linux): %s %s", p.out, p.err);
    assert_no_raw_controls("export --csv on a terminal", p.out);
    cr_assert(strstr(p.out, "add_k\\x1b]0;pwned\\x07,"), "%s", p.out);
    tu_proc_free(&p);
    /* JSON is escaped by jansson (C0 controls as \u00XX; DEL and C1 it
     * leaves, as JSON allows) and keeps the data as it is. */
    bench(&p, ARGS("show", "--db", g_db, "--json", "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_null(strchr(p.out, 0x1b), "%s", p.out);
    cr_assert(strstr(p.out, "\"gpu_name\": \"\\u001B[2J\""), "%s", p.out);
    tu_proc_free(&p);
}

/* ---- plot ------------------------------------------------------------------- */

/* gnuplot on $PATH (the search vyre-bench's plot/ makes). */
static void need_gnuplot(void)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        char file[4096];
        snprintf(file, sizeof file, "%.*s/gnuplot", (int)n, p);
        if (n > 0 && access(file, X_OK) == 0)
            return;
        p += n + (p[n] == ':');
    }
    cr_assert_fail("these tests need gnuplot: apt-get install gnuplot-nox");
}

/* The temp directory plot made is gone: nothing is left in TMPDIR. */
static void check_work_empty(void)
{
    DIR *d = opendir(g_work);
    cr_assert_not_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        cr_assert(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0,
                  "left behind in TMPDIR: %s", de->d_name);
    closedir(d);
}

static void xmllint_ok(const char *file)
{
    char bin[] = "/usr/bin/xmllint", noout[] = "--noout";
    char *const full[] = {bin, noout, (char *)(uintptr_t)file, NULL};
    tu_proc p;
    tu_run(&p, full, NULL);
    cr_assert_eq(p.exit_code, 0, "xmllint --noout %s (apt-get install libxml2-utils): %s", file,
                 p.err);
    tu_proc_free(&p);
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void png_size(const char *file, uint32_t *w, uint32_t *h)
{
    size_t len = 0;
    unsigned char *b = (unsigned char *)tu_read_file(file, &len);
    cr_assert_not_null(b, "no %s", file);
    cr_assert_geq(len, 33);
    cr_assert_eq(memcmp(b, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG");
    cr_assert_eq(memcmp(b + 12, "IHDR", 4), 0, "no IHDR first");
    *w = be32(b + 16);
    *h = be32(b + 20);
    free(b);
}

/* A run (make_run) on another GPU model. */
static int64_t make_gpu_run(const char *gpu, double slow)
{
    int64_t id = make_run(slow);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE runs SET gpu_name = '%s' WHERE id = %lld", gpu,
             (long long)id);
    db_exec(sql);
    return id;
}

/* How many times needle occurs in hay. */
static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* plot --history (issue 27 point 4): the median over time, one line per
 * GPU model; per GPU model and axes when the benchmark has several. */
Test(bench_view, plot_history_draws_a_line_per_gpu_model)
{
    need_gnuplot();
    for (int i = 0; i < 3; i++)
        make_gpu_run("NVIDIA H100 80GB HBM3", 1 + 0.05 * i);
    make_gpu_run("NVIDIA H200", 0.8);
    make_gpu_run("NVIDIA H200", 0.82);
    make_gpu_run("", 0.9); /* a run that saw no GPU */
    char out[700], want[900];
    snprintf(out, sizeof out, "%s/history.svg", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "--history", "launch.stream"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(want, sizeof want,
             "%s: the history of launch.stream: 3 lines (GPU models), 6 points of 6 runs\n", out);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    check_work_empty();
    xmllint_ok(out);
    char *svg = tu_read_file(out, NULL);
    cr_assert(strstr(svg, "launch.stream: median over time, one line per GPU model"), "title");
    cr_assert(strstr(svg, ">NVIDIA H100 80GB HBM3<") && strstr(svg, ">NVIDIA H200<") &&
                  strstr(svg, ">no GPU<"),
              "a key entry per GPU model");
    cr_assert(strstr(svg, "median time (us)") && strstr(svg, "run started (UTC)"), "axes");
    free(svg);
    /* A sweep: a line per GPU model and axes, unless --axes picks one. */
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "--history", "add_k"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, ": 18 lines (GPU models), 36 points of 6 runs\n"), "%s", p.out);
    tu_proc_free(&p);
    svg = tu_read_file(out, NULL);
    cr_assert_eq(count_of(svg, "<title>NVIDIA H200 N=1024 BLOCK=256</title>"), 1, "a key entry");
    cr_assert_eq(count_of(svg, "<title>NVIDIA H"), 12, "2 GPU models x 6 axes");
    cr_assert_eq(count_of(svg, "<title>no GPU N="), 6, "and the run without one");
    free(svg);
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "--history", "add_k", "--axes",
                   "N=1024 BLOCK=256", "--filter", "gpu=H200"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, ": 1 line (GPU models), 2 points of 2 runs\n"), "%s", p.out);
    tu_proc_free(&p);
    svg = tu_read_file(out, NULL);
    cr_assert(strstr(svg, ">NVIDIA H200<") && !strstr(svg, "H100"), "only the H200");
    free(svg);
    check_work_empty();
}

Test(bench_view, plot_history_errors)
{
    make_run(1);
    char out[700], html[700];
    snprintf(out, sizeof out, "%s/h.svg", g_tmp);
    snprintf(html, sizeof html, "%s/h.html", g_tmp);
    const struct {
        const char *const *args;
        const char *err;
    } cases[] = {
        {ARGS("plot", "-o", "OUT", "--axes", "N=1", "1"),
         "vyre-bench: error: --axes is for a history plot\n"},
        {ARGS("plot", "-o", "OUT", "--history", "launch.stream", "1"),
         "vyre-bench: error: --history draws no run: '1' is one too many\n"},
        {ARGS("plot", "-o", "HTML", "--history", "launch.stream"),
         "a history is drawn as .svg or .png, not '"},
        {ARGS("plot", "-o", "OUT", "--history", "nope"),
         "vyre-bench: error: no done run has a point of 'nope'\n"},
        {ARGS("plot", "-o", "OUT", "--history", "launch.stream", "--filter", "colour=red"),
         "'colour=red'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[16];
        size_t k = 0;
        args[k++] = cases[i].args[0];
        args[k++] = "--db";
        args[k++] = g_db;
        for (size_t j = 1; cases[i].args[j]; j++)
            args[k++] = strcmp(cases[i].args[j], "OUT") == 0    ? out
                        : strcmp(cases[i].args[j], "HTML") == 0 ? html
                                                                : cases[i].args[j];
        args[k] = NULL;
        tu_proc p;
        bench(&p, args);
        cr_assert_eq(p.exit_code, 2, "case %zu: %s", i, p.err);
        cr_assert(strstr(p.err, cases[i].err), "case %zu: %s", i, p.err);
        cr_assert(strstr(p.err, "hint: ") || strstr(p.err, "try 'vyre-bench plot --help'"),
                  "case %zu: %s", i, p.err);
        cr_assert_str_eq(p.out, "");
        tu_proc_free(&p);
        cr_assert_neq(access(out, F_OK), 0, "case %zu wrote a file", i);
    }
}

Test(bench_view, plot_svg_is_valid_xml)
{
    need_gnuplot();
    make_run(1);
    char out[700];
    snprintf(out, sizeof out, "%s/run.svg", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* The sweep against N, against BLOCK nothing (one value), and the
     * launch point's samples. */
    char want[800];
    snprintf(want, sizeof want, "%s: 2 charts of run 1\n", out);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    xmllint_ok(out);
    char *svg = tu_read_file(out, NULL);
    cr_assert(strstr(svg, "add_k (device 0, hot): median against N, band p5-p95"), "title");
    cr_assert(strstr(svg, "launch.stream (device 0, hot): samples (400; median "), "title");
    cr_assert(strstr(svg, ">1M<") && strstr(svg, ">4K<"), "tics at the measured N");
    cr_assert(strstr(svg, "median time (us)") && strstr(svg, "sample time (us)"), "units");
    free(svg);
    check_work_empty();
}

Test(bench_view, plot_png_has_its_size)
{
    need_gnuplot();
    make_run(1);
    make_run(1.3);
    char out[700];
    snprintf(out, sizeof out, "%s/run.PNG", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    uint32_t w, h;
    png_size(out, &w, &h);
    cr_assert_eq(w, 2 * 760); /* two charts side by side */
    cr_assert_eq(h, 440);
    /* Two runs: the ratio chart, 150 + 26 a point high. */
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1", "2"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    png_size(out, &w, &h);
    cr_assert_eq(w, 900);
    cr_assert_eq(h, 150 + 26 * 7);
    check_work_empty();
}

Test(bench_view, plot_compare_svg_shows_the_slowdown)
{
    need_gnuplot();
    make_run(1);
    make_run(1.3);
    char out[700];
    snprintf(out, sizeof out, "%s/cmp.svg", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1", "last"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    xmllint_ok(out);
    char *svg = tu_read_file(out, NULL);
    cr_assert(strstr(svg, "run 2 against run 1 (baseline): median ratio with its 99% interval"));
    cr_assert(strstr(svg, ">SLOWER<"), "the legend names the verdict");
    cr_assert(!strstr(svg, ">FASTER<"));
    cr_assert(strstr(svg, ">add_k N=1048576 BLOCK=256<"), "a point's label");
    free(svg);
}

Test(bench_view, plot_html_is_one_page_with_facts_and_charts)
{
    need_gnuplot();
    make_run(1);
    char out[700];
    snprintf(out, sizeof out, "%s/report.html", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "last"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    char *html = tu_read_file(out, NULL);
    cr_assert(strncmp(html, "<!DOCTYPE html>\n", 16) == 0);
    cr_assert(strstr(html, "<tr><th>gpu</th><td>NVIDIA H100 80GB HBM3</td></tr>"), "%s", html);
    cr_assert(strstr(html, "<tr><th>driver</th><td>13000 (580.65.06)</td></tr>"));
    cr_assert(strstr(html, "<tr><th>git</th><td>0123456789ab</td></tr>"));
    cr_assert(strstr(html, "<tr><th>command</th><td>vyre-bench run add.ptx --entry add_k</td>"));
    cr_assert(strstr(html, "<tr><th>started</th><td>20"));
    size_t svgs = 0;
    for (const char *s = html; (s = strstr(s, "<svg")); s++)
        svgs++;
    cr_assert_eq(svgs, 2);
    /* Self-contained: nothing fetched, no XML prologue inside the page. */
    cr_assert(!strstr(html, "<script") && !strstr(html, " src=") && !strstr(html, "<?xml") &&
              !strstr(html, "<link"));
    free(html);
    check_work_empty();
}

Test(bench_view, plot_without_gnuplot_says_how_to_install_it)
{
    make_run(1);
    char out[700];
    snprintf(out, sizeof out, "%s/run.svg", g_tmp);
    tu_proc p;
    bench_env(&p, ARGS("plot", "--db", g_db, "-o", out, "1"), "PATH=/nonexistent");
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: plotting needs gnuplot, and there is none on "
                            "$PATH\nhint: install it: apt-get install gnuplot-nox\n");
    tu_proc_free(&p);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "nothing written");
}

Test(bench_view, plot_usage_errors)
{
    tu_proc p;
    bench(&p, ARGS("plot", "-o", "chart.pdf", "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err,
                     "vyre-bench: error: cannot tell the format of 'chart.pdf' from its extension\n"
                     "hint: name a file ending in .svg, .png or .html\n"
                     "try 'vyre-bench plot --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("plot", "1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: where to? give the output file with -o\n"
                            "hint: add -o FILE.svg, -o FILE.png or -o FILE.html\n"
                            "try 'vyre-bench plot --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("plot", "-o", "x.svg"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: which run? give run ids, 'last' or 'last-N'\n"
                            "try 'vyre-bench plot --help'\n");
    tu_proc_free(&p);
}

Test(bench_view, plot_no_such_run)
{
    need_gnuplot();
    make_run(1);
    char out[700];
    snprintf(out, sizeof out, "%s/run.svg", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "7"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strncmp(p.err, "vyre-bench: error: ", 19) == 0 && strstr(p.err, "7"), "%s", p.err);
    tu_proc_free(&p);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "nothing written");
    check_work_empty();
}

/* ---- plot with unknown medians ------------------------------------------------- */

/* Medians that are NULL (unknown) or infinite in the database: the points
 * are left out of the charts with a note, gnuplot never sees them and the
 * output is written; a run with no finite median is refused with one
 * clear message. */
Test(bench_view, plot_skips_null_and_infinite_medians_with_a_note)
{
    need_gnuplot();
    make_run(1);
    make_run(1.3);
    make_run(1);
    db_exec("UPDATE points SET median = NULL WHERE run_id = 1 AND seq IN (1, 3);"
            "UPDATE points SET median = 9e999 WHERE run_id = 1 AND seq = 2;"
            "UPDATE points SET median = -9e999, p5 = NULL WHERE run_id = 2 AND seq = 6;"
            "UPDATE points SET median = NULL WHERE run_id = 3");
    static const char *const outs[] = {"run.svg", "run.html", "cmp.svg"};
    static const char *const notes[] = {"3 points", "3 points", "4 points"};
    for (size_t i = 0; i < 3; i++) {
        char out[700], want[200];
        snprintf(out, sizeof out, "%s/%s", g_tmp, outs[i]);
        tu_proc p;
        if (i < 2)
            bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1"));
        else
            bench(&p, ARGS("plot", "--db", g_db, "-o", out, "1", "2"));
        cr_assert_eq(p.exit_code, 0, "%s: %s", outs[i], p.err);
        snprintf(want, sizeof want,
                 "vyre-bench: note: %s with no finite median (unknown or infinite in the results "
                 "database) left out of the charts\n",
                 notes[i]);
        cr_assert_str_eq(p.err, want, "%s", outs[i]);
        tu_proc_free(&p);
        struct stat st;
        cr_assert_eq(stat(out, &st), 0, "%s written", outs[i]);
        if (i != 1)
            xmllint_ok(out);
    }
    char out[700];
    snprintf(out, sizeof out, "%s/none.svg", g_tmp);
    tu_proc p;
    bench(&p, ARGS("plot", "--db", g_db, "-o", out, "3"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: run 3 has no point to plot: the median of each "
                            "of its 7 points is unknown or infinite\n"
                            "hint: its results are damaged: measure it again, or plot another "
                            "run\n");
    tu_proc_free(&p);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "nothing written");
    check_work_empty();
}

/* ---- a real terminal ---------------------------------------------------------- */

/* Runs `show 1` on a pseudo-terminal through script(1), the window set to
 * `cols` columns first when cols > 0, with COLUMNS=70; returns the longest
 * line of the table (after the facts) and checks it is the fitted one. */
static size_t show_on_a_terminal(int cols)
{
    char pre[32] = "", cmd[2048];
    if (cols > 0)
        snprintf(pre, sizeof pre, "stty cols %d && ", cols);
    snprintf(cmd, sizeof cmd, "%s%s show --db %s 1", pre, VYRE_BENCH_BIN, g_db);
    char bin[] = "/usr/bin/script", q[] = "-qec", dev[] = "/dev/null";
    char *const argv[] = {bin, q, cmd, dev, NULL};
    const char *const env[] = {g_env_home, g_env_data, g_env_tmp, "COLUMNS=70", NULL};
    tu_proc p;
    tu_run(&p, argv, env);
    cr_assert_eq(p.exit_code, 0, "script(1) (util-linux): %s %s", p.out, p.err);
    cr_assert(strstr(p.out, "median us"), "%s", p.out);
    cr_assert(!strstr(p.out, "| benchmark"), "%s", p.out);
    const char *t = strstr(p.out, "\r\n\r\n");
    cr_assert_not_null(t, "%s", p.out);
    size_t longest = 0;
    for (const char *s = t + 4; *s;) {
        size_t len = strcspn(s, "\r\n");
        longest = len > longest ? len : longest;
        s += len;
        while (*s == '\r' || *s == '\n')
            s++;
    }
    tu_proc_free(&p);
    return longest;
}

Test(bench_view, a_terminal_gets_the_table_fitted_to_its_window_or_columns)
{
    make_run(1);
    /* No window size on the pty: $COLUMNS. */
    size_t w = show_on_a_terminal(0);
    cr_assert_leq(w, 70);
    /* A 100-column window wins over $COLUMNS. */
    w = show_on_a_terminal(100);
    cr_assert(w > 70 && w <= 100, "longest line %zu", w);
}

Test(bench_view, run_prints_the_fitted_table_per_suite)
{
    tu_proc p;
    /* One round: the cache suite's 3 s cap whole, not a fifth of it a round
     * (a prune sample refills 64 blobs with an fsync each first). And the
     * suite's cache on a memory filesystem (tu_mkdtemp_mem): on a busy
     * disk a store took 25 ms, a refill 1.6 s, and the prune point
     * stopped at the cap ("tmo") before its third sample. */
    char mem[512], env_mem[600];
    tu_mkdtemp_mem(mem, sizeof mem);
    snprintf(env_mem, sizeof env_mem, "TMPDIR=%s", mem);
    bench_env(&p,
              ARGS("run", "--suite", "cache", "--db", g_db, "--min-samples", "3", "--min-time", "0",
                   "--max-noise", "100", "--timeout", "5", "--rounds", "1", "-q", "--width", "80"),
              env_mem);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strncmp(p.out, "benchmark ", 10) == 0, "%s", p.out);
    size_t n = 0;
    for (const char *s = p.out; (s = strstr(s, "\ncache.")); s++)
        n++;
    cr_assert_eq(n, 8, "%s", p.out);
    /* Every point stopped at the noise target (100 %): only that code. */
    cr_assert(strstr(p.out, "\nstop: ok noise reached the target\n"), "%s", p.out);
    for (const char *s = p.out; *s;) {
        size_t len = strcspn(s, "\n");
        if (strncmp(s, "run 1 done", 10) != 0)
            cr_assert_leq(len, 80, "%.*s", (int)len, s);
        s += len + (s[len] == '\n');
    }
    tu_proc_free(&p);
    tu_rm_rf(mem);
}

/* Runs plot with a gnuplot that appends each script it is given to a file
 * and then fails (real_too 0: nothing is written, exit 2) or runs the real
 * one; returns the scripts (the caller frees them). */
static char *plot_scripts_of(const char *const *args, int real_too)
{
    char bindir[700], fake[760], path_env[800], kept[760], text[2048];
    snprintf(bindir, sizeof bindir, "%s/bin", g_tmp);
    mkdir(bindir, 0700);
    snprintf(fake, sizeof fake, "%s/gnuplot", bindir);
    snprintf(kept, sizeof kept, "%s/kept.gp", g_tmp);
    unlink(kept);
    snprintf(text, sizeof text, "#!/bin/sh\ncat \"$1\" >> '%s'\n%s\n", kept,
             real_too ? "exec /usr/bin/gnuplot \"$@\"" : "exit 1");
    tu_write_file(fake, text, strlen(text));
    cr_assert_eq(chmod(fake, 0700), 0);
    snprintf(path_env, sizeof path_env, "PATH=%s:/usr/bin:/bin", bindir);
    tu_proc p;
    bench_env(&p, args, path_env);
    cr_assert_eq(p.exit_code, real_too ? 0 : 2, "%s", p.err);
    tu_proc_free(&p);
    char *s = tu_read_file(kept, NULL);
    cr_assert_not_null(s);
    return s;
}

/* Issue 25: the compare chart's ratio axis was linear; histograms of runs
 * with unequal sample counts were raw counts; an interrupted run had no
 * mark. */
Test(bench_view, plots_log_ratio_axis_normalised_histograms_interrupted_mark)
{
    make_run_ex(1, 400, VYRE_RUN_DONE);
    make_run_ex(1.1, 100, VYRE_RUN_INTERRUPTED);
    char out[700];
    snprintf(out, sizeof out, "%s/cmp.svg", g_tmp);
    char *gp = plot_scripts_of(ARGS("plot", "--db", g_db, "-o", out, "1", "2"), 0);
    cr_assert(strstr(gp, "set logscale x 2\n"), "%s", gp);
    cr_assert(strstr(gp, "median ratio B/A, log scale"), "%s", gp);
    cr_assert(strstr(gp, "set label 'run 2 interrupted: its unfinished points are missing'"), "%s",
              gp);
    free(gp);

    /* Every chart (the HTML report), drawn by the real gnuplot. */
    need_gnuplot();
    snprintf(out, sizeof out, "%s/report.html", g_tmp);
    gp = plot_scripts_of(ARGS("plot", "--db", g_db, "-o", out, "1", "2"), 1);
    /* launch.stream: 400 samples against 100, each bar its run's share. */
    cr_assert(strstr(gp, "set ylabel 'fraction of the run samples (normalised: unequal counts)'"),
              "%s", gp);
    cr_assert(strstr(gp, "'run 2 (interrupted) (100)'"), "%s", gp);
    cr_assert(strstr(gp, "'run 2 (interrupted) BLOCK=256'"), "%s", gp);
    free(gp);
}

Test(bench_view, a_failing_gnuplot_is_reported_and_nothing_is_written)
{
    make_run(1);
    /* A gnuplot that fails as a real one does on a bad script. */
    char bindir[700], fake[760], path_env[800], out[700];
    snprintf(bindir, sizeof bindir, "%s/bin", g_tmp);
    cr_assert_eq(mkdir(bindir, 0700), 0);
    snprintf(fake, sizeof fake, "%s/gnuplot", bindir);
    static const char script[] = "#!/bin/sh\n"
                                 "echo 'gnuplot: warning: a font' >&2\n"
                                 "echo '\"plot.gp\" line 9: unexpected or unrecognized token' "
                                 ">&2\nexit 1\n";
    tu_write_file(fake, script, sizeof script - 1);
    cr_assert_eq(chmod(fake, 0700), 0);
    snprintf(path_env, sizeof path_env, "PATH=%s:/usr/bin:/bin", bindir);
    snprintf(out, sizeof out, "%s/run.svg", g_tmp);
    tu_proc p;
    bench_env(&p, ARGS("plot", "--db", g_db, "-o", out, "1"), path_env);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: gnuplot failed (exit 1): \"plot.gp\" line 9: "
                            "unexpected or unrecognized token\n"
                            "hint: this is a bug in vyre's plot script; report it\n");
    tu_proc_free(&p);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "nothing written");
    check_work_empty();
}

/* ---- one rule for percentages (issue 34, point 2) ---------------------------- */

/* A/A over points whose robust noise is about 3 %: a 0.5 % limit makes
 * every point NOISY whether it is written 0.5 or 0.5% (compare once read
 * 0.5 as 50 % and called them SAME); 5 and 5% both let them through. */
Test(bench_view, compare_max_noise_bare_and_percent_mean_the_same)
{
    make_run(1.0);
    make_run(1.0);
    static const struct {
        const char *v, *summary;
        int exit_code; /* every point NOISY: INCONCLUSIVE (4) */
    } cases[] = {
        {"0.5", "0 faster, 0 slower, 0 same, 7 noisy, 0 drift, 0 unmatched\n", 4},
        {"0.5%", "0 faster, 0 slower, 0 same, 7 noisy, 0 drift, 0 unmatched\n", 4},
        {"5", "0 faster, 0 slower, 7 same, 0 noisy, 0 drift, 0 unmatched\n", 0},
        {"5%", "0 faster, 0 slower, 7 same, 0 noisy, 0 drift, 0 unmatched\n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_proc p;
        bench(&p, ARGS("compare", "--db", g_db, "--max-noise", cases[i].v, "1", "2"));
        cr_assert(p.exit_code == cases[i].exit_code, "--max-noise %s: %d %s", cases[i].v,
                  p.exit_code, p.err);
        cr_assert(strstr(p.out, cases[i].summary), "--max-noise %s:\n%s", cases[i].v, p.out);
        tu_proc_free(&p);
        bench(&p, ARGS("compare", "--db", g_db, "--json", "--max-noise", cases[i].v, "1", "2"));
        cr_assert(
            strstr(p.out, i < 2 ? "\"max_noise_ratio\": 0.005," : "\"max_noise_ratio\": 0.05,"),
            "--max-noise %s:\n%s", cases[i].v, p.out);
        tu_proc_free(&p);
    }
}

/* --min-effect and --alpha follow the same rule; the retired fraction
 * spelling of --alpha (0.01) is refused with a hint, not read as 0.01 %. */
Test(bench_view, compare_min_effect_and_alpha_are_percents)
{
    make_run(1.0);
    make_run(1.0);
    static const char *const same[][2] = {
        {"--min-effect", "3"}, {"--min-effect", "3%"}, {"--alpha", "5"}, {"--alpha", "5%"}};
    static const char *const want[] = {"\"min_effect_ratio\": 0.03,", "\"min_effect_ratio\": 0.03,",
                                       "\"alpha\": 0.05,", "\"alpha\": 0.05,"};
    for (size_t i = 0; i < 4; i++) {
        tu_proc p;
        bench(&p, ARGS("compare", "--db", g_db, "--json", same[i][0], same[i][1], "1", "2"));
        cr_assert_eq(p.exit_code, 0, "%s %s: %s", same[i][0], same[i][1], p.err);
        cr_assert(strstr(p.out, want[i]), "%s %s:\n%s", same[i][0], same[i][1], p.out);
        tu_proc_free(&p);
    }
    tu_proc p;
    bench(&p, ARGS("compare", "--db", g_db, "--alpha", "0.01", "1", "2"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value for --alpha: '0.01' is not from 0.1% to "
                            "50%\n"
                            "hint: --alpha is in percent, as --max-noise: 1 or 1% for a 99% "
                            "interval, 5 for 95%; from 0.1 to 50\n"
                            "try 'vyre-bench compare --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("compare", "--db", g_db, "--max-noise", "0.5x", "1", "2"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value for --max-noise: '0.5x' is not a "
                            "percentage\n"
                            "hint: write a percentage such as 0.5 or 0.5% (both are 0.5%: a bare "
                            "number is a percent, as nvbench's --max-noise)\n"
                            "try 'vyre-bench compare --help'\n");
    tu_proc_free(&p);
}

/* The stored stop text of run's sweep point. */
static void sweep_stop(int64_t run, char *buf, size_t size)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT stop FROM points WHERE run_id = ?1 AND benchmark = "
                                    "'sweep.add_one'",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, run);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "run %lld has no sweep point", (long long)run);
    snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* run --max-noise: 0.5 and 0.5% are the same 0.5 % target (the rule
 * compare follows too); the fake driver's exact times reach it at once. */
Test(bench_view, run_max_noise_bare_and_percent_mean_the_same)
{
    char cubin[700], drv[700];
    snprintf(cubin, sizeof cubin, "%s/k.cubin", g_tmp);
    static const char img[] = "\x7f"
                              "ELF fakecubin:add_one;ns=100000";
    tu_write_file(cubin, img, sizeof img); /* with its NUL, as the fake reads it */
    snprintf(drv, sizeof drv, "VYRE_CUDA_LIBRARY=%s", FAKECUDA_LIB);
    static const char *const v[] = {"0.5", "0.5%", "5", "5%"};
    static const char *const want[] = {"<= 0.50% after", "<= 0.50% after", "<= 5.00% after",
                                       "<= 5.00% after"};
    for (size_t i = 0; i < 4; i++) {
        const char *const env[] = {g_env_home,
                                   g_env_data,
                                   g_env_tmp,
                                   drv,
                                   "FAKECUDA_DEVICES=1",
                                   "VYRE_NVML_LIBRARY=/nonexistent",
                                   "COLUMNS",
                                   "FAKECUDA_WRITE_MAX=4096", /* no 256 MiB fills */
                                   NULL};
        const char *const args[] = {"run",
                                    cubin,
                                    "--entry",
                                    "add_one",
                                    "-a",
                                    "N=1K",
                                    "--db",
                                    g_db,
                                    "--rounds",
                                    "1",
                                    "--min-samples",
                                    "3",
                                    "--min-time",
                                    "0",
                                    "--timeout",
                                    "5",
                                    "--no-kernels",
                                    "-q",
                                    "--max-noise",
                                    v[i],
                                    NULL};
        tu_proc p;
        tu_run_bin(&p, VYRE_BENCH_BIN, args, env, NULL);
        cr_assert_eq(p.exit_code, 0, "--max-noise %s: %s%s", v[i], p.out, p.err);
        tu_proc_free(&p);
        char stop[256];
        sweep_stop((int64_t)i + 1, stop, sizeof stop);
        cr_assert(strstr(stop, want[i]), "--max-noise %s: stop '%s'", v[i], stop);
    }
    tu_proc p;
    bench(&p, ARGS("run", "--suite", "cache", "--max-noise", "-1"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: bad value for --max-noise: '-1' is not a "
                            "percentage\n"
                            "hint: write a percentage such as 0.5 or 0.5% (both are 0.5%: a bare "
                            "number is a percent, as nvbench's --max-noise)\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
}

/* ---- one noise figure, one name (issue 34, point 3) -------------------------- */

/* The cell of column `column` in the first row containing `row` of the
 * markdown table in out, trimmed, into buf. */
static void table_cell(const char *out, const char *column, const char *row, char *buf, size_t size)
{
    char head[64];
    snprintf(head, sizeof head, " %s |", column);
    const char *h = strstr(out, head);
    cr_assert_not_null(h, "no column '%s' in:\n%s", column, out);
    const char *line = h;
    while (line > out && line[-1] != '\n')
        line--;
    int col = 0;
    for (const char *p = line; p < h; p++)
        col += *p == '|';
    const char *r = strstr(h, row);
    cr_assert_not_null(r, "no row '%s' in:\n%s", row, out);
    while (r > out && r[-1] != '\n')
        r--;
    for (int k = 1; k < col; k++) { /* r: the row's first '|' */
        r = strchr(r + 1, '|');
        cr_assert_not_null(r);
    }
    r++;
    const char *end = strchr(r, '|');
    cr_assert_not_null(end);
    while (*r == ' ')
        r++;
    while (end > r && end[-1] == ' ')
        end--;
    snprintf(buf, size, "%.*s", (int)(end - r), r);
}

static void history_and_show_noise(const char *benchmark, char *hist, char *show, size_t size)
{
    tu_proc p;
    bench(&p, ARGS("history", "--db", g_db, benchmark));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    table_cell(p.out, "noise", "|   1 |", hist, size);
    tu_proc_free(&p);
    bench(&p, ARGS("show", "--db", g_db, "1"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char row[64];
    snprintf(row, sizeof row, "| %s ", benchmark);
    table_cell(p.out, "noise", row, show, size);
    tu_proc_free(&p);
}

/* history once read points.noise, stddev / mean (93% and 208% where run,
 * show and compare said 7.8% and 3.3%); now every `noise` is the robust
 * figure. The point's slow tail puts stddev / mean near 10%, its robust
 * noise at 3.25%. */
Test(bench_view, history_and_show_print_the_same_noise)
{
    make_run(1.0);
    char hist[32], show[32];
    history_and_show_noise("launch.stream", hist, show, sizeof hist);
    cr_assert_str_eq(hist, show, "history %s, show %s", hist, show);
    cr_assert_str_eq(show, "3.25%");
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE rel_stddev > 0.05 AND "
                                 "noise < 0.04 AND benchmark = 'launch.stream'"),
                 1, "stddev / mean is kept under its own name");
}

/* A database of schema v7 (points.noise was stddev / mean) migrates: the
 * old values move to rel_stddev and noise becomes the robust figure, the
 * rounds' where a point has rounds. */
Test(bench_view, v7_database_migrates_noise_to_the_robust_figure)
{
    make_run(1.0);
    db_exec("ALTER TABLE points DROP COLUMN noise;"
            "ALTER TABLE points RENAME COLUMN rel_stddev TO noise;"
            "UPDATE points SET rounds = 3, round_noise = 0.5 WHERE benchmark = 'add_k' AND "
            "axes = 'N=1024 BLOCK=256';"
            "PRAGMA user_version = 7;");
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE noise > 0.05 AND "
                                 "benchmark = 'launch.stream'"),
                 1, "v7: stddev / mean under the name noise");
    char hist[32], show[32];
    history_and_show_noise("launch.stream", hist, show, sizeof hist);
    cr_assert_str_eq(hist, "3.25%");
    cr_assert_str_eq(show, "3.25%");
    cr_assert_eq(tu_db_int(g_db, "PRAGMA user_version"), VYRE_RESULTS_SCHEMA_VERSION);
    cr_assert_eq(tu_db_int(g_db, "SELECT count(*) FROM points WHERE rel_stddev > 0.05 AND "
                                 "benchmark = 'launch.stream'"),
                 1);
    tu_proc p;
    bench(&p, ARGS("history", "--db", g_db, "--axes", "N=1024 BLOCK=256", "add_k"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    table_cell(p.out, "noise", "|   1 |", hist, sizeof hist);
    cr_assert_str_eq(hist, "50.00%", "the rounds' noise: %s", p.out);
    tu_proc_free(&p);
}
