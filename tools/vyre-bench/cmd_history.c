/*
 * cmd_history.c - `vyre-bench history BENCHMARK`: the benchmark's median
 * over time, across every done run and machine of the results database
 * (libcore's vyre_results_history), so that a slow creep shows. Names are
 * cleaned for the terminal (a shared store holds other machines' text).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_json.h"
#include "tool_rows.h"
#include "vyre/vyre.h"

const tool_opt bench_history_opts[] = {
    {'a', 0, "axes", "AXES",
     "only the points of these axes, as 'show' prints them\n"
     "(\"size=4096\"; \"\" for a benchmark without axes)",
     NULL},
    {'f', 0, "filter", "WORDS",
     "only the runs that match KEY=VALUE words, as compare\n"
     "--baseline takes them without 'last': 'gpu=H200 branch=main'",
     NULL},
    TOOL_ROWS_OPT_WIDE,
    TOOL_ROWS_OPT_WIDTH,
    TOOL_ROWS_OPT_CSV,
    TOOL_ROWS_OPT_MD,
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(BENCH_HISTORY_JSON_SCHEMA_VERSION) "): the rows",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench history [--db PATH] [--axes AXES] [--filter WORDS]\n"
            "                          [--json | --csv | --md] [--wide] [--width N] BENCHMARK\n\n"
            "The median of BENCHMARK (e.g. launch.stream) over time, oldest first: one\n"
            "row per point of every done run, with the run's host, GPU and git branch,\n"
            "so that a slow creep shows. In a shared store, every machine's runs. The\n"
            "noise is the point's noise as run, show and compare print it.\n\n");
    tool_cmd_options_help(out, bench_history_opts);
    fprintf(out,
            "\nexit status: 0 printed (no row: nothing matched), 2 usage or operational error\n");
}

/* The columns (dropped or cut by priority, larger first); piped, the
 * markdown table. */
enum { H_RUN, H_STARTED, H_HOST, H_GPU, H_REF, H_AXES, H_MEDIAN, H_NOISE, H_REV, NHCOLS };
static const tool_rows_col k_hist_cols[NHCOLS] = {
    [H_RUN] = {"run_id", "run", TOOL_ROWS_INT, 0, 0, 0, NULL},
    [H_STARTED] = {"started_unix_ns", "started", TOOL_ROWS_DATE, 3, 0, 0, NULL},
    [H_HOST] = {"host", "host", TOOL_ROWS_TEXT, 5, 8, 0, NULL},
    [H_GPU] = {"gpu_name", "gpu", TOOL_ROWS_TEXT, 4, 10, 0, NULL},
    [H_REF] = {"git_ref", "ref", TOOL_ROWS_TEXT, 6, 8, 0, NULL},
    [H_AXES] = {"axes_label", "axes", TOOL_ROWS_TEXT, 1, 10, 0, NULL},
    [H_MEDIAN] = {"median_ns", "median", TOOL_ROWS_TIME, 0, 0, 0, NULL},
    [H_NOISE] = {"noise_ratio", "noise", TOOL_ROWS_RATIO, 2, 0, 2, NULL},
    [H_REV] = {"git_rev", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
};

static const char *or_null(const char *s)
{
    return s[0] ? s : NULL;
}

static void print_rows(const char *benchmark, const vyre_results_history_row *r, size_t n,
                       const tool_rows_out *o, vyre_results *db)
{
    tool_rows *t = tool_rows_new(k_hist_cols, NHCOLS);
    for (size_t i = 0; i < n; i++) {
        tool_rows_add(t);
        tool_rows_int(t, H_RUN, r[i].run_id);
        tool_rows_int(t, H_STARTED, r[i].started_ns);
        tool_rows_text(t, H_HOST, r[i].host);
        tool_rows_text(t, H_GPU, or_null(r[i].gpu_name));
        tool_rows_text(t, H_REF, or_null(r[i].git_ref));
        tool_rows_text(t, H_AXES, r[i].axes);
        tool_rows_real(t, H_MEDIAN, r[i].median_ns);
        tool_rows_real(t, H_NOISE, r[i].noise);
        tool_rows_text(t, H_REV, or_null(r[i].git_rev));
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(BENCH_HISTORY_JSON_SCHEMA_VERSION));
    json_object_set_new(doc, "db", json_string(vyre_results_path(db)));
    json_object_set_new(doc, "benchmark", tool_json_text(benchmark));
    tool_rows_print(stdout, t, o->fmt, o->width, doc, "points");
    tool_rows_free(t);
}

int cmd_history(int argc, char **argv)
{
    const char *axes = NULL, *filter = NULL;
    int c, stop = 0;
    tool_rows_out o = {0};
    while ((c = tool_getopt_table("history", argc, argv, bench_history_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (tool_rows_opt("history", c, optarg, &o) < 0)
            return TOOL_EXIT_ERROR;
        if (c == 'a')
            axes = optarg;
        else if (c == 'f')
            filter = optarg;
    }
    if (argc - optind != 1)
        return tool_usage_error("history", "give one benchmark, e.g. launch.stream",
                                optind == argc ? "which benchmark?" : "one benchmark only");
    if (tool_rows_out_resolve("history", &o, TOOL_FMT_MD))
        return TOOL_EXIT_ERROR;
    vyre_results *db = NULL;
    int code = bench_open_db_existing(&db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_results_history_row *rows = NULL;
    size_t n = 0;
    if (vyre_results_history(db, argv[optind], axes, filter, &rows, &n, &err)) {
        tool_report(&err);
        vyre_results_close(db);
        return TOOL_EXIT_ERROR;
    }
    print_rows(argv[optind], rows, n, &o, db);
    if (!n)
        fprintf(stderr, "%s: note: no done run has a point of '%s'%s\n", tool_prog(), argv[optind],
                filter || axes ? " that matches" : "");
    vyre_free(rows);
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
