/*
 * cmd_export.c - `vyre-bench export RUN --csv|--json`: a run's points (and,
 * in JSON, every sample) for other tools.
 */
#include <getopt.h>
#include <stdio.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_rows.h"
#include "vyre/vyre.h"

const tool_opt bench_export_opts[] = {
    {TOOL_OPT_CSV, 0, "csv", NULL, "one CSV row per point, every field", NULL},
    {TOOL_OPT_MD, 0, "md", NULL, "the points as a markdown table", NULL},
    TOOL_ROWS_OPT_WIDTH,
    {TOOL_OPT_JSON, 0, "json", NULL,
     "the run, its points and every sample (schema_version " TOOL_STR(
         BENCH_JSON_SCHEMA_VERSION) ")",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench export [--db PATH] (--csv | --json | --md) [--width N] RUN\n\n"
                 "Write a run's points as CSV (one row per point), as a markdown table (the\n"
                 "columns of show's table; --width N: those that fit), or as JSON (schema_version\n"
                 "5: the run, its points and every sample). RUN is an id, 'last' or 'last-N'\n"
                 "(done runs only: a failed or interrupted run is named by its id).\n\n");
    tool_cmd_options_help(out, bench_export_opts);
    fprintf(out, "\nexit status: 0 written, 2 usage or operational error\n");
}

int cmd_export(int argc, char **argv)
{
    int c, stop = 0;
    tool_rows_out o = {0};
    while ((c = tool_getopt_table("export", argc, argv, bench_export_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (tool_rows_opt("export", c, optarg, &o) < 0)
            return TOOL_EXIT_ERROR;
    }
    if (tool_rows_out_resolve("export", &o, TOOL_FMT_TABLE))
        return TOOL_EXIT_ERROR;
    if (o.fmt == TOOL_FMT_TABLE)
        return tool_usage_error("export", NULL, "choose a format: --csv, --json or --md");
    vyre_results *db = NULL;
    vyre_bench_run r;
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    int code = bench_open_run("export", argc, argv, optind, &db, &r, &pts, &n);
    if (code)
        return code;
    if (o.fmt == TOOL_FMT_JSON)
        code = bench_json_run(stdout, db, &r, pts, n, 1);
    else /* markdown without --width: every column, the full stop text */
        bench_points_print(stdout, pts, n, o.fmt, o.fmt == TOOL_FMT_MD && o.width ? o.width : 0);
    vyre_free(pts);
    vyre_results_close(db);
    return code;
}
