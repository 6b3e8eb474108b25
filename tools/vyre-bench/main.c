/*
 * main.c - vyre-bench: global options and subcommand dispatch.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool_cli.h"
#include "cmds.h"
#include "vyre/vyre.h"

static const tool_cmd g_cmds[] = {
    {"devices", cmd_devices, "list the GPUs and their capabilities"},
    {"run", cmd_run, "run suites or a sweep; results go to the results database"},
    {"runs", cmd_runs, "list the stored runs"},
    {"show", cmd_show, "show a run and its points"},
    {"compare", cmd_compare, "compare two runs point by point (exit 1 on a regression)"},
    {"export", cmd_export, "write a run as CSV or JSON"},
    {"plot", cmd_plot, "draw runs as SVG, PNG or an HTML report (gnuplot)"},
    {"rm", cmd_rm, "remove runs (or every failed one) from the results database"},
    {NULL, NULL, NULL},
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
                 "  130  run interrupted (Ctrl-C); finished points are kept\n");
}

int main(int argc, char **argv)
{
    int child_exit = 0;
    if (vyre_bench_child_main(argc, argv, &child_exit)) /* run's compile suite, in a child */
        return child_exit;
    tool_set_prog("vyre-bench");
    if (argc < 2) {
        usage(stderr);
        return TOOL_EXIT_ERROR;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 || strcmp(first, "help") == 0) {
        usage(stdout);
        return TOOL_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        printf("vyre-bench %s (libvyrecore %s, CUDA toolkit %s)\n", vyre_version(), vyre_version(),
               vyre_cuda_toolkit_version());
        return TOOL_EXIT_OK;
    }
    const tool_cmd *cmd = tool_cmd_find(g_cmds, first);
    if (!cmd) {
        const char *names[16];
        size_t n = 0;
        for (const tool_cmd *c = g_cmds; c->name && n < 16; c++)
            names[n++] = c->name;
        const char *near = tool_nearest(first, names, n);
        char hint[128];
        if (near)
            snprintf(hint, sizeof hint, "did you mean '%s'?", near);
        if (first[0] == '-')
            return tool_usage_error(NULL, NULL, "unknown option '%s'", first);
        return tool_usage_error(NULL, near ? hint : NULL, "unknown command '%s'", first);
    }
    optind = 1;
    return cmd->fn(argc - 1, argv + 1);
}
