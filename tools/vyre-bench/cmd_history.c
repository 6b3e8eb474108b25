/*
 * cmd_history.c - `vyre-bench history BENCHMARK`: the benchmark's median
 * over time, across every done run and machine of the results database
 * (libcore's vyre_results_history), so that a slow creep shows. Names are
 * cleaned for the terminal (a shared store holds other machines' text).
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_sanitize.h"
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
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench history [--db PATH] [--axes AXES] [--filter WORDS] BENCHMARK\n\n"
            "The median of BENCHMARK (e.g. launch.stream) over time, oldest first: one\n"
            "row per point of every done run, with the run's host, GPU and git branch,\n"
            "so that a slow creep shows. In a shared store, every machine's runs. The\n"
            "noise is the point's noise as run, show and compare print it.\n\n");
    tool_cmd_options_help(out, bench_history_opts);
    fprintf(out,
            "\nexit status: 0 printed (no row: nothing matched), 2 usage or operational error\n");
}

static void print_rows(const vyre_results_history_row *r, size_t n)
{
    printf(
        "| run | started             | host                 | gpu                      | ref     "
        "     | axes                 |      median |  noise |\n");
    printf("|----:|---------------------|----------------------|--------------------------|-------"
           "-------|----------------------|------------:|-------:|\n");
    for (size_t i = 0; i < n; i++) {
        char when[32] = "-";
        time_t t = (time_t)(r[i].started_ns / 1000000000);
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        char host[TOOL_CLEAN_SIZE(sizeof r->host)], gpu[TOOL_CLEAN_SIZE(sizeof r->gpu_name)];
        char ref[TOOL_CLEAN_SIZE(sizeof r->git_ref)], axes[TOOL_CLEAN_SIZE(sizeof r->axes)];
        char med[32], noise[16] = "-";
        bench_format_ns(r[i].median_ns, med, sizeof med);
        if (isfinite(r[i].noise))
            snprintf(noise, sizeof noise, "%.2f%%", 100 * r[i].noise);
        printf("| %3" PRId64 " | %-19s | %-20s | %-24s | %-12s | %-20s | %11s | %6s |\n",
               r[i].run_id, when, tool_clean(r[i].host, host, sizeof host),
               r[i].gpu_name[0] ? tool_clean(r[i].gpu_name, gpu, sizeof gpu) : "-",
               r[i].git_ref[0] ? tool_clean(r[i].git_ref, ref, sizeof ref) : "-",
               r[i].axes[0] ? tool_clean(r[i].axes, axes, sizeof axes) : "-", med, noise);
    }
}

int cmd_history(int argc, char **argv)
{
    const char *axes = NULL, *filter = NULL;
    int c, stop = 0;
    while ((c = tool_getopt_table("history", argc, argv, bench_history_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (c == 'a')
            axes = optarg;
        else if (c == 'f')
            filter = optarg;
    }
    if (argc - optind != 1)
        return tool_usage_error("history", "give one benchmark, e.g. launch.stream",
                                optind == argc ? "which benchmark?" : "one benchmark only");
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
    print_rows(rows, n);
    if (!n)
        fprintf(stderr, "%s: note: no done run has a point of '%s'%s\n", tool_prog(), argv[optind],
                filter || axes ? " that matches" : "");
    vyre_free(rows);
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
