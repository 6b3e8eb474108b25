/*
 * cmd_plot.c - `vyre-bench plot RUN [RUN...] -o FILE.svg|.png|.html`:
 * charts of stored runs, drawn by gnuplot (plot/plot.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "tool_sanitize.h"
#include "cmds.h"
#include "plot/plot.h"
#include "vyre/vyre.h"

#define MAX_RUNS 8

const tool_opt bench_plot_opts[] = {
    {'o', 'o', "output", "FILE", "the file to write (its extension names the format)",
     TOOL_OPT_FILE},
    {'H', 0, "history", "BENCHMARK", "draw BENCHMARK's history instead of runs (.svg, .png)", NULL},
    {'a', 0, "axes", "AXES",
     "with --history: only the points of these axes, as\n"
     "'show' prints them (else a line per GPU model and axes)",
     NULL},
    {'f', 0, "filter", "WORDS",
     "with --history: only the runs that match KEY=VALUE\n"
     "words, as 'history --filter': 'gpu=H200 branch=main'",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench plot [--db PATH] -o FILE.svg|.png|.html RUN [RUN...]\n"
            "       vyre-bench plot [--db PATH] -o FILE.svg|.png --history BENCHMARK\n"
            "                       [--axes AXES] [--filter WORDS]\n\n"
            "Draw stored runs with gnuplot (apt-get install gnuplot-nox):\n"
            "  a sweep    the median against each axis, with the p5-p95 band (log axes\n"
            "             where the axis is geometric), one line per run\n"
            "  a point    the distribution of its samples (a histogram, median dashed)\n"
            "  two runs   the median ratio B/A of each point with its bootstrap interval,\n"
            "             coloured by verdict (as 'vyre-bench compare'); the first is the\n"
            "             baseline\n"
            ".svg and .png hold every chart in a grid (for two runs, the ratio chart);\n"
            ".html is one self-contained page: each run's facts (GPU, driver, git\n"
            "revision, command, date) and every chart inline as SVG.\n"
            "RUN is a run id, 'last' or 'last-N' (at most %d runs; 'last' is the last\n"
            "done run: a failed or interrupted run is named by its id).\n"
            "With --history, the median of BENCHMARK over time across the runs of the\n"
            "store (every machine's in a shared one, as 'vyre-bench history' lists\n"
            "them), one line per GPU model, so that a slow creep shows.\n\n",
            MAX_RUNS);
    tool_cmd_options_help(out, bench_plot_opts);
    fprintf(out,
            "\nexit status: 0 drawn, 2 usage or operational error (no gnuplot, no such run)\n");
}

/* plot --history BENCHMARK: one chart of the benchmark's median over time. */
static int plot_history_cmd(const char *output, const plot_history_opts *ho)
{
    vyre_error err;
    vyre_error_clear(&err);
    plot_format fmt;
    if (plot_format_of(output, &fmt, &err))
        return tool_usage_error("plot", err.hint, "%s", err.message);
    if (fmt == PLOT_HTML)
        return tool_usage_error("plot", "write -o FILE.svg or -o FILE.png",
                                "a history is drawn as .svg or .png, not '%s'", output);
    char gnuplot[4096];
    if (plot_find_gnuplot(gnuplot, sizeof gnuplot, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    vyre_results *db = NULL;
    int code = bench_open_db_existing(&db);
    if (code)
        return code;
    plot_history_opts o = *ho;
    o.db = db;
    o.output = output;
    o.gnuplot = gnuplot;
    o.tmp_dir = getenv("TMPDIR");
    plot_result res;
    if (plot_history(&o, &res, &err)) {
        tool_report(&err);
        vyre_results_close(db);
        return TOOL_EXIT_ERROR;
    }
    if (res.skipped)
        fprintf(stderr, "%s: note: %zu point%s with no finite median left out\n", tool_prog(),
                res.skipped, res.skipped == 1 ? "" : "s");
    char bench[TOOL_CLEAN_SIZE(256)];
    printf("%s: the history of %s: %zu line%s (GPU models), %zu point%s of %zu run%s\n", output,
           tool_clean(o.benchmark, bench, sizeof bench), res.lines, res.lines == 1 ? "" : "s",
           res.points, res.points == 1 ? "" : "s", res.runs, res.runs == 1 ? "" : "s");
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}

int cmd_plot(int argc, char **argv)
{
    const char *output = NULL;
    plot_history_opts ho;
    memset(&ho, 0, sizeof ho);
    int c, stop = 0;
    while ((c = tool_getopt_table("plot", argc, argv, bench_plot_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (c == 'o')
            output = optarg;
        else if (c == 'H')
            ho.benchmark = optarg;
        else if (c == 'a')
            ho.axes = optarg;
        else if (c == 'f')
            ho.filter = optarg;
    }
    if (!output)
        return tool_usage_error("plot", "add -o FILE.svg, -o FILE.png or -o FILE.html",
                                "where to? give the output file with -o");
    if (!ho.benchmark && (ho.axes || ho.filter))
        return tool_usage_error("plot", "add --history BENCHMARK, e.g. --history launch.stream",
                                "%s is for a history plot", ho.axes ? "--axes" : "--filter");
    if (ho.benchmark && optind < argc)
        return tool_usage_error("plot", "plot a history or runs, one at a time",
                                "--history draws no run: '%s' is one too many", argv[optind]);
    if (ho.benchmark)
        return plot_history_cmd(output, &ho);
    if (optind >= argc)
        return tool_usage_error("plot", NULL, "which run? give run ids, 'last' or 'last-N'");
    if (argc - optind > MAX_RUNS)
        return tool_usage_error("plot", NULL, "at most %d runs in one plot", MAX_RUNS);
    vyre_error err;
    vyre_error_clear(&err);
    plot_format fmt;
    if (plot_format_of(output, &fmt, &err))
        return tool_usage_error("plot", err.hint, "%s", err.message);
    char gnuplot[4096];
    if (plot_find_gnuplot(gnuplot, sizeof gnuplot, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    vyre_results *db = NULL;
    int code = bench_open_db_existing(&db);
    if (code)
        return code;
    int64_t ids[MAX_RUNS];
    size_t n = 0;
    for (int i = optind; i < argc; i++) {
        if (vyre_bench_run_resolve(db, argv[i], &ids[n], &err)) {
            tool_report(&err);
            vyre_results_close(db);
            return TOOL_EXIT_ERROR;
        }
        for (size_t k = 0; k < n; k++)
            if (ids[k] == ids[n]) {
                vyre_results_close(db);
                return tool_usage_error("plot", "name each run once",
                                        "run %lld is named twice ('%s')", (long long)ids[n],
                                        argv[i]);
            }
        n++;
    }
    plot_opts po;
    memset(&po, 0, sizeof po);
    po.db = db;
    po.runs = ids;
    po.nruns = n;
    po.output = output;
    po.gnuplot = gnuplot;
    po.tmp_dir = getenv("TMPDIR");
    plot_result res;
    if (plot_runs(&po, &res, &err)) {
        tool_report(&err);
        vyre_results_close(db);
        return TOOL_EXIT_ERROR;
    }
    if (res.skipped)
        fprintf(stderr,
                "%s: note: %zu point%s with no finite median (unknown or infinite in the "
                "results database) left out of the charts\n",
                tool_prog(), res.skipped, res.skipped == 1 ? "" : "s");
    printf("%s: %zu chart%s of run", output, res.ncharts, res.ncharts == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++)
        printf("%s %lld", i ? (i + 1 == n ? " and" : ",") : (n > 1 ? "s" : ""), (long long)ids[i]);
    putchar('\n');
    vyre_results_close(db);
    return TOOL_EXIT_OK;
}
