/*
 * cmd_export.c - `vyre-bench export RUN --csv|--json`: a run's points (and,
 * in JSON, every sample) for other tools.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "vyre/vyre.h"

const tool_opt bench_export_opts[] = {
    {'c', 0, "csv", NULL, "one CSV row per point", NULL},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "the run, its points and every sample (schema_version " TOOL_STR(
         BENCH_JSON_SCHEMA_VERSION) ")",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench export [--db PATH] (--csv | --json) RUN\n\n"
                 "Write a run's points as CSV (one row per point), or as JSON (schema_version\n"
                 "5: the run, its points and every sample). RUN is an id, 'last' or 'last-N'\n"
                 "(done runs only: a failed or interrupted run is named by its id).\n\n");
    tool_cmd_options_help(out, bench_export_opts);
    fprintf(out, "\nexit status: 0 written, 2 usage or operational error\n");
}

int cmd_export(int argc, char **argv)
{
    int fmt = -1, c;
    int stop = 0;
    while ((c = tool_getopt_table("export", argc, argv, bench_export_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        switch (c) {
        case 'c':
            fmt = BENCH_CSV;
            break;
        }
    }
    if (g_tool.json && fmt == BENCH_CSV)
        return bench_csv_json_conflict("export");
    if (g_tool.json)
        fmt = BENCH_JSON;
    if (fmt < 0)
        return tool_usage_error("export", NULL, "choose a format: --csv or --json");
    vyre_results *db = NULL;
    vyre_bench_run r;
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    int code = bench_open_run("export", argc, argv, optind, &db, &r, &pts, &n);
    if (code)
        return code;
    if (fmt == BENCH_CSV) {
        bench_csv_header(stdout);
        for (size_t i = 0; i < n; i++)
            bench_csv_row(stdout, &pts[i]);
    } else {
        code = bench_json_run(stdout, db, &r, pts, n, 1);
    }
    vyre_free(pts);
    vyre_results_close(db);
    return code;
}
