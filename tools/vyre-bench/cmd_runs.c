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
#include "tool_opt.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "tool_table.h"
#include "vyre/vyre.h"

const tool_opt bench_runs_opts[] = {
    {'l', 0, "limit", "N", "at most N runs (default 20, 0: all)", "10 20 50 0"},
    {'w', 0, "wide", NULL, "on a terminal, every column whole", NULL},
    {'W', 0, "width", "N", "fit the table to N columns, terminal or not", "80 120 160 200"},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(
         BENCH_RUNS_JSON_SCHEMA_VERSION) ") instead of the table",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench runs [--db PATH] [--limit N] [--json] [--wide] [--width N]\n\n"
                 "List the stored runs, newest first: id, start, status, points, GPU, and the\n"
                 "suites that ran. On a terminal the table fits its width (columns dropped\n"
                 "or cut by priority). 'last' names the newest done run.\n\n");
    tool_cmd_options_help(out, bench_runs_opts);
    fprintf(out, "\nexit status: 0 listed, 2 usage or operational error\n");
}

/* The columns (tools/common/tool_table: dropped or cut by priority,
 * larger first): each as wide as its widest cell, so a GPU column of '-'
 * is three wide, not 28. */
enum { R_ID, R_STARTED, R_STATUS, R_POINTS, R_GPU, R_SUITES, NRCOLS };
static const tool_table_col k_run_cols[NRCOLS] = {
    [R_ID] = {"RUN", 0, 0, 1},        [R_STARTED] = {"STARTED", 3, 0, 0},
    [R_STATUS] = {"STATUS", 0, 0, 0}, [R_POINTS] = {"POINTS", 2, 0, 1},
    [R_GPU] = {"GPU", 4, 10, 0},      [R_SUITES] = {"SUITES", 1, 10, 0},
};
#define RUN_CELL 272

/* The table; width 0 (piped) or -1 (--wide): every column whole. */
static void print_table(const vyre_bench_run *runs, size_t n, int width)
{
    char(*cells)[RUN_CELL] = calloc((n ? n : 1) * NRCOLS, RUN_CELL);
    const char **ptrs = calloc((n ? n : 1) * NRCOLS, sizeof *ptrs);
    if (!cells || !ptrs) {
        free(cells);
        free(ptrs);
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_run *r = &runs[i];
        char(*cell)[RUN_CELL] = &cells[i * NRCOLS];
        snprintf(cell[R_ID], RUN_CELL, "%" PRId64, r->id);
        snprintf(cell[R_STARTED], RUN_CELL, "-");
        time_t t = (time_t)(r->started_ns / 1000000000);
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(cell[R_STARTED], RUN_CELL, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(cell[R_STATUS], RUN_CELL, "%s", vyre_bench_run_status_name(r->status));
        snprintf(cell[R_POINTS], RUN_CELL, "%zu", r->npoints);
        /* Database text through tool_clean (the table cuts it after). */
        tool_clean(r->gpu_name[0] ? r->gpu_name : "-", cell[R_GPU], RUN_CELL);
        tool_clean(r->suites[0] ? r->suites : "-", cell[R_SUITES], RUN_CELL);
        for (size_t c = 0; c < NRCOLS; c++)
            ptrs[i * NRCOLS + c] = cell[c];
    }
    int natural[NRCOLS], widths[NRCOLS], w = width > 0 ? width : 0;
    tool_table_natural(k_run_cols, NRCOLS, ptrs, n, natural);
    tool_table_fit(k_run_cols, NRCOLS, natural, w, widths);
    tool_table_render(stdout, k_run_cols, NRCOLS, widths, ptrs, n, w);
    free(cells);
    free(ptrs);
}

int cmd_runs(int argc, char **argv)
{
    long limit = 20;
    int c, stop = 0, wide = 0, width = 0;
    while ((c = tool_getopt_table("runs", argc, argv, bench_runs_opts, usage, &stop)) != -1) {
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
        case 'w':
            wide = 1;
            break;
        case 'W':
            if (bench_parse_width("runs", optarg, &width))
                return TOOL_EXIT_ERROR;
            break;
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
    print_table(runs, n, bench_table_width(wide, width));
    if (!n)
        printf("(no runs in %s)\n", vyre_results_path(db));
    vyre_free(runs);
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
