/*
 * cmd_show.c - `vyre-bench show RUN`: a run's facts and its points table,
 * with the kernels recorded per point.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "vyre/vyre.h"

const tool_opt bench_show_opts[] = {
    {'k', 0, "kernels", NULL, "also the CUPTI kernel records of each point", NULL},
    {'w', 0, "wide", NULL, "on a terminal, every column and the full stop text", NULL},
    {'W', 0, "width", "N", "fit the table to N columns, terminal or not", "80 120 160 200"},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(
         BENCH_JSON_SCHEMA_VERSION) "): the run and its points",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench show [--db PATH] [--kernels] [--json] [--wide] [--width N] RUN\n\n"
            "Show a run: where and how it ran, then its points: on a terminal a table\n"
            "fitted to its width (columns dropped by priority, stop reasons as codes with\n"
            "a legend), piped the full markdown table. RUN is a run id, 'last' or 'last-N'\n"
            "(the last done run, or the Nth done run before it: failed, interrupted and\n"
            "running runs are skipped; name them by id).\n\n");
    tool_cmd_options_help(out, bench_show_opts);
    fprintf(out, "\nexit status: 0 shown, 2 usage or operational error (no such run)\n");
}

/* One fact of the run; the value comes from the database: shown through
 * tool_clean. */
static void fact(const char *name, const char *value)
{
    char clean[TOOL_CLEAN_SIZE(1024)];
    printf("%-13s %s\n", name, tool_clean(value && *value ? value : "-", clean, sizeof clean));
}

/* The run document (as `export --json` without samples), each point with
 * its kernel records when `kernels`. Returns an exit code. */
static int print_json(vyre_results *db, const vyre_bench_run *r, const vyre_bench_point *pts,
                      size_t n, int kernels)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *pj = bench_json_point(&pts[i]);
        json_array_append_new(arr, pj);
        if (!kernels)
            continue;
        vyre_error err;
        vyre_error_clear(&err);
        vyre_bench_kernel_row *k = NULL;
        size_t nk = 0;
        if (vyre_bench_kernels_get(db, pts[i].id, &k, &nk, &err)) {
            tool_report(&err);
            json_decref(arr);
            return TOOL_EXIT_ERROR;
        }
        json_t *ka = json_array();
        for (size_t j = 0; j < nk; j++) {
            json_t *ko = json_object();
            json_object_set_new(ko, "name", json_string(k[j].name));
            json_object_set_new(ko, "launches", json_integer((json_int_t)k[j].count));
            json_object_set_new(ko, "median_ns", json_integer((json_int_t)llround(k[j].median_ns)));
            json_object_set_new(ko, "total_ns", json_integer((json_int_t)llround(k[j].total_ns)));
            json_array_append_new(ka, ko);
        }
        free(k);
        json_object_set_new(pj, "kernels", ka);
    }
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(BENCH_JSON_SCHEMA_VERSION));
    json_object_set_new(o, "run", bench_json_run_info(r));
    json_object_set_new(o, "points", arr);
    tool_json_print(stdout, o);
    return TOOL_EXIT_OK;
}

int cmd_show(int argc, char **argv)
{
    int kernels = 0, wide = 0, width = 0, c;
    int stop = 0;
    while ((c = tool_getopt_table("show", argc, argv, bench_show_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        switch (c) {
        case 'k':
            kernels = 1;
            break;
        case 'w':
            wide = 1;
            break;
        case 'W':
            if (bench_parse_width("show", optarg, &width))
                return TOOL_EXIT_ERROR;
            break;
        }
    }
    vyre_results *db = NULL;
    vyre_bench_run r;
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    int code = bench_open_run("show", argc, argv, optind, &db, &r, &pts, &n);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    if (g_tool.json) {
        code = print_json(db, &r, pts, n, kernels);
        free(pts);
        vyre_results_close(db);
        return code;
    }
    bench_run_summary(stdout, &r);
    fact("command:", r.command_line);
    fact("suites:", r.suites);
    fact("gpu:", r.gpu_name);
    fact("uuid:", r.gpu_uuid);
    fact("devices:", r.devices);
    fact("driver:", r.driver);
    fact("cuda:", r.cuda_version);
    fact("clocks:", r.clocks);
    fact("git:", r.git_rev);
    fact("vyre:", r.vyre_version);
    if (r.message[0])
        fact("message:", r.message);
    int tw = bench_table_width(wide, width);
    if (n && tw) {
        putchar('\n');
        bench_term_table(stdout, pts, n, tw);
    } else if (n) {
        putchar('\n');
        bench_table_header(stdout);
        for (size_t i = 0; i < n; i++)
            bench_table_row(stdout, &pts[i]);
    }
    for (size_t i = 0; kernels && i < n; i++) {
        vyre_bench_kernel_row *k = NULL;
        size_t nk = 0;
        if (vyre_bench_kernels_get(db, pts[i].id, &k, &nk, &err)) {
            tool_report(&err);
            code = TOOL_EXIT_ERROR;
            break;
        }
        char bench[TOOL_CLEAN_SIZE(sizeof pts->benchmark)], axes[TOOL_CLEAN_SIZE(sizeof pts->axes)];
        /* A point without records says so: CUPTI was off (--no-kernels, no
         * GPU, a host suite) or saw no launch; silence read as "none asked". */
        printf("\npoint %" PRId64 " %s%s%s: %s\n", pts[i].id,
               tool_clean(pts[i].benchmark, bench, sizeof bench), pts[i].axes[0] ? " " : "",
               tool_clean(pts[i].axes, axes, sizeof axes),
               nk ? "kernels" : "no kernel records (host point, --no-kernels, or no launch seen)");
        for (size_t j = 0; j < nk; j++) {
            char med[24], name[TOOL_CLEAN_SIZE(sizeof k->name)];
            bench_format_ns(k[j].median_ns, med, sizeof med);
            /* Cut to 40 columns after cleaning: an escape is never split. */
            printf("  %-40.40s %6llu launches, median %s\n", tool_clean(k[j].name, name, 41),
                   (unsigned long long)k[j].count, med);
        }
        vyre_free(k);
    }
    vyre_free(pts);
    vyre_results_close(db);
    return code;
}
