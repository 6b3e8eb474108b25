/*
 * main.c - vyre-bench: the command table (with each command's setup flags)
 * and --version; tool_dispatch does the rest (help CMD, did you mean).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "vyre/vyre.h"

static const tool_cmd g_cmds[] = {
    {"devices", cmd_devices, "list the GPUs and their capabilities", TOOL_CMD_JSON,
     bench_devices_opts},
    {"run", cmd_run, "run suites or a sweep; results go to the results database",
     TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON, bench_run_opts},
    {"runs", cmd_runs, "list the stored runs", TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON, bench_runs_opts},
    {"show", cmd_show, "show a run and its points", TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON,
     bench_show_opts},
    {"compare", cmd_compare, "compare two runs point by point (exit 1 on a regression)",
     TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON, bench_compare_opts},
    {"export", cmd_export, "write a run as CSV or JSON", TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON,
     bench_export_opts},
    {"plot", cmd_plot, "draw runs as SVG, PNG or an HTML report (gnuplot)", TOOL_CMD_NEEDS_DB,
     bench_plot_opts},
    {"rm", cmd_rm, "remove runs (or every failed one) from the results database",
     TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON, bench_rm_opts},
    {"history", cmd_history, "one benchmark's median over time, across runs and machines",
     TOOL_CMD_NEEDS_DB | TOOL_CMD_JSON, bench_history_opts},
    {"push", cmd_push, "copy runs to another results database (a shared server)", TOOL_CMD_NEEDS_DB,
     bench_push_opts},
    {"pull", cmd_pull, "copy runs of another results database (a shared server) here",
     TOOL_CMD_NEEDS_DB, bench_pull_opts},
    {NULL, NULL, NULL, 0, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench [--help] [--version] <command> [<args>]\n\n"
                 "Benchmark GPU pipelines; results are comparable run to run.\n\n"
                 "commands:\n");
    for (const tool_cmd *c = g_cmds; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\nRun 'vyre-bench <command> --help' for a command's options.\n\n"
                 "exit status:\n"
                 "  0  success\n"
                 "  1  compare: some point is SLOWER\n"
                 "  2  usage or operational error\n"
                 "  3  no NVIDIA driver or no GPU found\n"
                 "  4  compare: INCONCLUSIVE (too many points not judged)\n"
                 "  130  run interrupted (Ctrl-C); finished points are kept\n");
}

int main(int argc, char **argv)
{
    int child_exit = 0;
    if (vyre_bench_host_start(argc, argv, &child_exit)) /* run's compile suite, in a child */
        return child_exit;
    tool_set_prog("vyre-bench");
    if (argc < 2) {
        usage(stderr);
        return TOOL_EXIT_ERROR;
    }
    if (tool_opt_wants_completion(argc, argv))
        return tool_dispatch_complete(g_cmds, argc - 2, argv + 2);
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        usage(stdout);
        return TOOL_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        printf("vyre-bench %s (libvyrecore %s, CUDA toolkit %s)\n", vyre_version(), vyre_version(),
               vyre_cuda_toolkit_version());
        return TOOL_EXIT_OK;
    }
    return tool_dispatch(g_cmds, usage, argc - 1, argv + 1);
}
