/*
 * test_bench_formats.c - every vyre-bench listing (runs, show's points,
 * history, compare, export) prints every format from its one row model
 * (tools/common/tool_rows): --json a document, --csv a header and a line
 * per row, --md a markdown table, and --width 80 a table of which no line
 * is wider than 80 columns, on a results database whose names are long
 * (stored through libcore's results API: no GPU needed).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_tmp[512];
static char g_db[600];
static char g_env_home[700], g_env_data[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_formats, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void bench(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home, g_env_data, "VYRE_CUDA_LIBRARY=/nonexistent", "COLUMNS",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

/* s: n copies of word, cut to size - 1. */
static void fill(char *s, size_t size, const char *word)
{
    size_t len = 0, wl = strlen(word);
    while (len + wl < size) {
        memcpy(s + len, word, wl);
        len += wl;
    }
    s[len] = '\0';
}

static void add_point(vyre_results *db, int64_t run, int seq, const char *axes, double base)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "sweep");
    fill(p.benchmark, sizeof p.benchmark, "a_rather_long_kernel_name.");
    snprintf(p.axes, sizeof p.axes, "%s", axes);
    p.device = 0;
    p.mode = VYRE_BENCH_HOT;
    p.gpu_timer = 1;
    p.items = 1;
    p.bytes = 8 * base;
    size_t n = 40;
    double *x = calloc(n, sizeof *x);
    vyre_bench_sample *s = calloc(n, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        x[i] = base * (1.0 + 0.02 * sin((double)i * 1.7));
        s[i].value = x[i];
        s[i].wall = x[i] + 1000;
    }
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_begin(db, &p, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__stats_compute(x, n, &p.stats, &e), 0);
    fill(p.metric_name, sizeof p.metric_name, "GB/s");
    p.metric = p.bytes / p.stats.median;
    p.stop_reason = VYRE_STOP_TIMEOUT;
    fill(p.stop, sizeof p.stop, "timeout: a long sentence about why it stopped; ");
    fill(p.note, sizeof p.note, "a note that goes on and on; ");
    cr_assert_eq(vyre__bench_point_finish(db, &p, s, n, &e), 0, "%s", e.message);
    free(x);
    free(s);
}

/* A done run of three points, every name as long as its field allows. */
static void make_run(double slow)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(g_db, &db, &e), 0, "%s", e.message);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    fill(r.suites, sizeof r.suites, "sweep:a/long/path/to/kernels.ptx:a_long_entry,");
    fill(r.gpu_name, sizeof r.gpu_name, "NVIDIA H100 80GB HBM3 ");
    fill(r.host, sizeof r.host, "a-build-machine-with-a-long-name.");
    fill(r.driver, sizeof r.driver, "13000 (580.65.06) ");
    fill(r.command_line, sizeof r.command_line, "vyre-bench run kernels.ptx --entry a_long_entry ");
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    char axes[256];
    for (int k = 0; k < 3; k++) {
        fill(axes, sizeof axes, "SOME_LONG_AXIS_NAME=1048576 ");
        axes[200 + k] = '\0';
        add_point(db, r.id, k, axes, slow * (2000 + 1000 * k));
    }
    cr_assert_eq(vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    vyre_results_close(db);
}

static void check_width(const char *what, const char *out, size_t width)
{
    for (const char *p = out; *p;) {
        size_t len = strcspn(p, "\n");
        cr_assert_leq(len, width, "%s: a %zu-column line at --width %zu:\n%s", what, len, width,
                      out);
        p += len + (p[len] == '\n');
    }
}

/* The listings, each with the arguments that name what it lists. */
static const char *const *listing(size_t i, const char **name)
{
    static const char *const runs[] = {"runs", NULL};
    static const char *const show[] = {"show", "1", NULL};
    static const char *const hist[] = {"history",
                                       "a_rather_long_kernel_name.a_rather_long_kernel_"
                                       "name.a_rather_long_kernel_name.",
                                       NULL};
    static const char *const cmp[] = {"compare", "1", "2", NULL};
    static const char *const exp[] = {"export", "1", NULL};
    static const char *const *all[] = {runs, show, hist, cmp, exp};
    if (i >= sizeof all / sizeof all[0])
        return NULL;
    *name = all[i][0];
    return all[i];
}

/* Runs `vyre-bench CMD --db DB OPTS... OPERANDS...`. */
static void run_listing(tu_proc *p, const char *const *cmd, const char *o1, const char *o2)
{
    const char *args[12];
    size_t n = 0;
    args[n++] = cmd[0];
    args[n++] = "--db";
    args[n++] = g_db;
    if (o1)
        args[n++] = o1;
    if (o2)
        args[n++] = o2;
    for (size_t k = 1; cmd[k]; k++)
        args[n++] = cmd[k];
    args[n] = NULL;
    bench(p, args);
    int ok = p->exit_code == 0 ||
             (strcmp(cmd[0], "compare") == 0 && p->exit_code != 2 && p->exit_code != 3);
    cr_assert(ok, "%s %s %s: exit %d: %s", cmd[0], o1 ? o1 : "", o2 ? o2 : "", p->exit_code,
              p->err);
}

Test(bench_formats, every_listing_prints_json_csv_md_and_fits_80_columns)
{
    make_run(1);
    make_run(1.3);
    const char *name = NULL;
    for (size_t i = 0; listing(i, &name); i++) {
        const char *const *cmd = listing(i, &name);
        tu_proc p;
        run_listing(&p, cmd, "--json", NULL);
        json_error_t je;
        json_t *doc = json_loads(p.out, 0, &je);
        cr_assert_not_null(doc, "%s --json: %s\n%s", name, je.text, p.out);
        cr_assert(json_is_integer(json_object_get(doc, "schema_version")), "%s", name);
        json_decref(doc);
        tu_proc_free(&p);

        run_listing(&p, cmd, "--csv", NULL);
        size_t lines = (size_t)tu_count_lines(p.out);
        cr_assert_geq(lines, 3, "%s --csv: a header and the rows:\n%s", name, p.out);
        cr_assert(strchr(p.out, ',') && !strstr(p.out, "| "), "%s --csv:\n%s", name, p.out);
        tu_proc_free(&p);

        run_listing(&p, cmd, "--md", NULL);
        cr_assert(strstr(p.out, "\n|--") || strncmp(p.out, "| ", 2) == 0, "%s --md:\n%s", name,
                  p.out);
        cr_assert(strstr(p.out, "|-") && strstr(p.out, "-|"), "%s --md:\n%s", name, p.out);
        tu_proc_free(&p);

        run_listing(&p, cmd, "--md", "--width=80");
        check_width(name, p.out, 80);
        cr_assert(strstr(p.out, "|-"), "%s --md --width 80:\n%s", name, p.out);
        tu_proc_free(&p);

        if (strcmp(name, "export") == 0)
            continue; /* export has no table: a format is named */
        run_listing(&p, cmd, "--width", "80");
        check_width(name, p.out, 80);
        tu_proc w; /* -w is --width, as in every tool (issue 36) */
        run_listing(&w, cmd, "-w", "80");
        cr_assert_str_eq(w.out, p.out, "%s: -w 80 is not --width 80", name);
        tu_proc_free(&w);
        cr_assert(strstr(p.out, "\n---") || strncmp(p.out, "---", 3) == 0 || strstr(p.out, "  ---"),
                  "%s --width 80: a table:\n%s", name, p.out);
        cr_assert(!strstr(p.out, "| "), "%s --width 80 is no markdown:\n%s", name, p.out);
        tu_proc_free(&p);
    }
}

/* --csv is the same fields in show and export (one model), and two formats
 * at once are one usage error. */
Test(bench_formats, show_csv_is_export_csv_and_formats_exclude_each_other)
{
    make_run(1);
    tu_proc a, b;
    bench(&a, ARGS("show", "--db", g_db, "--csv", "1"));
    bench(&b, ARGS("export", "--db", g_db, "--csv", "1"));
    cr_assert_eq(a.exit_code, 0, "%s", a.err);
    cr_assert_eq(b.exit_code, 0, "%s", b.err);
    cr_assert_str_eq(a.out, b.out);
    cr_assert(strncmp(a.out, "run_id,point_id,seq,suite,benchmark,axes,", 41) == 0, "%s", a.out);
    tu_proc_free(&a);
    tu_proc_free(&b);
    bench(&a, ARGS("history", "--db", g_db, "--md", "--json", "x"));
    cr_assert_eq(a.exit_code, 2);
    cr_assert_str_eq(a.err, "vyre-bench: error: --json and --md cannot be combined\n"
                            "hint: give one of --csv, --json and --md\n"
                            "try 'vyre-bench history --help'\n");
    tu_proc_free(&a);
    bench(&a, ARGS("runs", "--db", g_db, "--width", "5"));
    cr_assert_eq(a.exit_code, 2);
    cr_assert(strstr(a.err, "bad value '5' for --width"), "%s", a.err);
    tu_proc_free(&a);
}

/* history --json: the rows, oldest first, typed (whole ns, ratios). */
Test(bench_formats, history_json_has_the_rows_typed)
{
    make_run(1);
    make_run(2);
    tu_proc p;
    bench(&p,
          ARGS("history", "--db", g_db, "--json",
               "a_rather_long_kernel_name.a_rather_long_kernel_name.a_rather_long_kernel_name."));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *doc = json_loads(p.out, 0, NULL);
    cr_assert_not_null(doc, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    json_t *pts = json_object_get(doc, "points");
    cr_assert_eq(json_array_size(pts), 6, "%s", p.out);
    json_t *first = json_array_get(pts, 0), *lastp = json_array_get(pts, 5);
    cr_assert_eq(json_integer_value(json_object_get(first, "run_id")), 1);
    cr_assert_eq(json_integer_value(json_object_get(lastp, "run_id")), 2);
    cr_assert(json_is_integer(json_object_get(first, "median_ns")), "%s", p.out);
    cr_assert(json_is_real(json_object_get(first, "noise_ratio")), "%s", p.out);
    cr_assert(json_is_null(json_object_get(first, "git_ref")), "%s", p.out);
    json_decref(doc);
    tu_proc_free(&p);
}
