/*
 * cmd_runs.c - `vyre-bench runs`: the stored runs, newest first.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_rows.h"
#include "vyre/vyre.h"

const tool_opt bench_runs_opts[] = {
    {'l', 0, "limit", "N", "at most N runs (default 20, 0: all)", "10 20 50 0"},
    TOOL_ROWS_OPT_WIDE,
    TOOL_ROWS_OPT_WIDTH,
    TOOL_ROWS_OPT_CSV,
    TOOL_ROWS_OPT_MD,
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(
         BENCH_RUNS_JSON_SCHEMA_VERSION) ") instead of the table",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench runs [--db PATH] [--limit N] [--json | --csv | --md] [--wide]\n"
                 "                       [--width N]\n\n"
                 "List the stored runs, newest first: id, start, status, points, GPU, and the\n"
                 "suites that ran. On a terminal the table fits its width (columns dropped\n"
                 "or cut by priority). 'last' names the newest done run.\n\n");
    tool_cmd_options_help(out, bench_runs_opts);
    fprintf(out, "\nexit status: 0 listed, 2 usage or operational error\n");
}

/* The columns: the table's first (dropped or cut by priority, larger
 * first), then what only CSV and JSON carry (the runs document's fields). */
/* clang-format off */
enum {
    R_ID, R_STARTED, R_STATUS, R_POINTS, R_GPU, R_SUITES, R_FINISHED, R_HOST, R_PID, R_UUID,
    R_DEVICES, R_DRIVER, R_CUDA, R_CLOCKS, R_GIT, R_CMD, R_VERSION, R_MESSAGE, NRCOLS
};
/* clang-format on */
static const tool_rows_col k_run_cols[NRCOLS] = {
    [R_ID] = {"id", "RUN", TOOL_ROWS_INT, 0, 0, 0, NULL},
    [R_STARTED] = {"started_unix_ns", "STARTED", TOOL_ROWS_DATE, 3, 0, 0, NULL},
    [R_STATUS] = {"status", "STATUS", TOOL_ROWS_TEXT, 0, 0, 0, NULL},
    [R_POINTS] = {"point_count", "POINTS", TOOL_ROWS_INT, 2, 0, 0, NULL},
    [R_GPU] = {"gpu_name", "GPU", TOOL_ROWS_TEXT, 4, 10, 0, NULL},
    [R_SUITES] = {"suites", "SUITES", TOOL_ROWS_TEXT, 1, 10, 0, NULL},
    [R_FINISHED] = {"finished_unix_ns", NULL, TOOL_ROWS_DATE, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_HOST] = {"host", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_PID] = {"pid", NULL, TOOL_ROWS_INT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_UUID] = {"gpu_uuid", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_DEVICES] = {"devices", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_DRIVER] = {"driver", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_CUDA] = {"cuda_version", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_CLOCKS] = {"clocks", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_GIT] = {"git_rev", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_CMD] = {"command_line", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_VERSION] = {"vyre_version", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
    [R_MESSAGE] = {"message", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
};

/* Text that is null when empty (the document's "unknown"). */
static const char *or_null(const char *s)
{
    return s[0] ? s : NULL;
}

static void add_run(tool_rows *t, const vyre_bench_run *r)
{
    tool_rows_add(t);
    tool_rows_int(t, R_ID, r->id);
    tool_rows_int(t, R_STARTED, r->started_ns);
    tool_rows_text(t, R_STATUS, vyre_bench_run_status_name(r->status));
    tool_rows_int(t, R_POINTS, (int64_t)r->npoints);
    tool_rows_text(t, R_GPU, or_null(r->gpu_name));
    tool_rows_text(t, R_SUITES, r->suites);
    if (r->finished_ns)
        tool_rows_int(t, R_FINISHED, r->finished_ns);
    tool_rows_text(t, R_HOST, r->host);
    tool_rows_int(t, R_PID, r->pid);
    tool_rows_text(t, R_UUID, or_null(r->gpu_uuid));
    tool_rows_text(t, R_DEVICES, or_null(r->devices));
    tool_rows_text(t, R_DRIVER, or_null(r->driver));
    tool_rows_text(t, R_CUDA, or_null(r->cuda_version));
    tool_rows_text(t, R_CLOCKS, or_null(r->clocks));
    tool_rows_text(t, R_GIT, or_null(r->git_rev));
    tool_rows_text(t, R_CMD, r->command_line);
    tool_rows_text(t, R_VERSION, r->vyre_version);
    tool_rows_text(t, R_MESSAGE, or_null(r->message));
}

int cmd_runs(int argc, char **argv)
{
    long limit = 20;
    int c, stop = 0;
    tool_rows_out o = {0};
    while ((c = tool_getopt_table("runs", argc, argv, bench_runs_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (tool_rows_opt("runs", c, optarg, &o) < 0)
            return TOOL_EXIT_ERROR;
        if (c == 'l' && tool_parse_long(optarg, 0, LONG_MAX, &limit))
            return tool_usage_error("runs", NULL, "bad value '%s' for --limit: expected a count",
                                    optarg);
    }
    if (optind < argc)
        return tool_usage_error("runs", NULL, "unexpected argument '%s'", argv[optind]);
    if (tool_rows_out_resolve("runs", &o, TOOL_FMT_TABLE))
        return TOOL_EXIT_ERROR;
    vyre_results *db = NULL;
    int code = bench_open_db_existing(&db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_bench_run *runs = NULL;
    size_t n = 0;
    if (vyre_bench_runs_list(db, (size_t)limit, &runs, &n, &err)) {
        tool_report(&err);
        vyre_results_close(db);
        return TOOL_EXIT_ERROR;
    }
    tool_rows *t = tool_rows_new(k_run_cols, NRCOLS);
    for (size_t i = 0; i < n; i++)
        add_run(t, &runs[i]);
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(BENCH_RUNS_JSON_SCHEMA_VERSION));
    json_object_set_new(doc, "db", json_string(vyre_results_path(db)));
    tool_rows_print(stdout, t, o.fmt, o.width, doc, "runs");
    if (!n && (o.fmt == TOOL_FMT_TABLE || o.fmt == TOOL_FMT_MD))
        printf("(no runs in %s)\n", vyre_results_path(db));
    tool_rows_free(t);
    vyre_free(runs);
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
