/*
 * cmd_runs.c - `vyre-bench runs`: the stored runs, newest first.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "vyre/vyre.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench runs [--db PATH] [--limit N] [--json]\n\n"
            "List the stored runs, newest first: id, start, status, points, GPU, suites.\n\n"
            "  --db PATH   results database (default $XDG_DATA_HOME/vyre/results.sqlite3)\n"
            "  --limit N   at most N runs (default 20, 0: all)\n"
            "  --json      one JSON document (schema_version %d) instead of the table\n\n"
            "exit status: 0 listed, 2 usage or operational error\n",
            BENCH_RUNS_JSON_SCHEMA_VERSION);
}

int cmd_runs(int argc, char **argv)
{
    static const struct option opts[] = {
        {"limit", required_argument, NULL, 'l'},
        {NULL, 0, NULL, 0},
    };
    long limit = 20;
    int c, stop = 0;
    while ((c = tool_getopt("runs", argc, argv, "", opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        switch (c) {
        case 'l': {
            char *end = NULL;
            limit = strtol(optarg, &end, 10);
            if (!*optarg || *end || limit < 0)
                return tool_usage_error("runs", NULL,
                                        "bad value '%s' for --limit: expected a count", optarg);
            break;
        }
        }
    }
    if (optind < argc)
        return tool_usage_error("runs", NULL, "unexpected argument '%s'", argv[optind]);
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
    if (g_tool.json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, bench_json_run_info(&runs[i]));
        json_t *o = json_object();
        json_object_set_new(o, "schema_version", json_integer(BENCH_RUNS_JSON_SCHEMA_VERSION));
        json_object_set_new(o, "db", json_string(vyre_results_path(db)));
        json_object_set_new(o, "runs", arr);
        tool_json_print(stdout, o);
        free(runs);
        vyre_results_close(db);
        return TOOL_EXIT_OK;
    }
    printf("%6s  %-19s  %-11s  %6s  %-28s  %s\n", "RUN", "STARTED", "STATUS", "POINTS", "GPU",
           "SUITES");
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_run *r = &runs[i];
        char when[32] = "-";
        time_t t = (time_t)(r->started_ns / 1000000000);
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        /* Database text through tool_clean; the GPU cut to 28 columns
         * after cleaning, so an escape is never split. */
        char gpu[29], suites[TOOL_CLEAN_SIZE(sizeof r->suites)];
        printf("%6" PRId64 "  %-19s  %-11s  %6zu  %-28s  %s\n", r->id, when,
               vyre_bench_run_status_name(r->status), r->npoints,
               tool_clean(r->gpu_name[0] ? r->gpu_name : "-", gpu, sizeof gpu),
               tool_clean(r->suites, suites, sizeof suites));
    }
    if (!n)
        printf("(no runs in %s)\n", vyre_results_path(db));
    vyre_bench_run_list_free(runs);
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
