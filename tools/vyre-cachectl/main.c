/*
 * main.c - vyre-cachectl: the global options before the command, and the
 * command table with each command's setup flags (tool_dispatch runs it).
 * The helpers the subcommands share are in common.c; everything about the
 * cache itself is in libcore.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "cmds.h"
#include "vyre/vyre.h"

static const tool_cmd g_cmds[] = {
    {"stats", cmd_stats, "entries, size, hits and health of the pipeline cache",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"ls", cmd_ls, "list the cached blobs", TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"show", cmd_show, "print the full header of one blob", TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON,
     NULL},
    {"verify", cmd_verify, "check every blob and the index; --repair fixes what it finds",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"prune", cmd_prune, "remove blobs by size, age, architecture or toolchain (LRU first)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"reindex", cmd_reindex, "rebuild the index from the blobs",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"seed", cmd_seed, "compile CUDA C or PTX ahead of time into cubin blobs",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"explain", cmd_explain, "why a source's key hits or misses: its inputs beside the cached ones",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"clear", cmd_clear, "remove every blob and the index (needs --yes)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"jit", cmd_jit, "report on (or clear) the CUDA driver's own JIT cache", TOOL_CMD_JSON, NULL},
    {"config", cmd_config, "list, print or set the configuration (max_size, read_only, ...)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"zero-stats", cmd_zero_stats, "reset the hit and miss counters (also -z, --zero-stats)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"remote", cmd_remote, "check remote stores; push blobs to them, pull blobs from them",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, NULL},
    {"triton", cmd_triton, "Triton's kernel cache: stats, ls, verify, relocate", TOOL_CMD_JSON,
     NULL},
    {"inductor", cmd_inductor, "TorchInductor's cache: stats, ls, verify, prune, clear",
     TOOL_CMD_JSON, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl [--cache-dir DIR] [--json] [-q|-v] [-o KEY=VALUE]...\n"
                 "                     <command> [<args>]\n"
                 "       vyre-cachectl -z | --zero-stats\n"
                 "       vyre-cachectl --help | --version\n\n"
                 "Inspect, verify, prune and rebuild the vyre pipeline cache, and report on\n"
                 "the CUDA driver's JIT cache.\n\n"
                 "commands:\n");
    for (const tool_cmd *c = g_cmds; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out,
            "\nSizes (max_size, prune --max-size) are written 5G, 500M, 1.5GiB or 750MB;\n"
            "a size without a unit is GiB, as in ccache.\n"
            "\n%s\n"
            "Run 'vyre-cachectl <command> --help' for a command's options.\n\n"
            "exit status:\n"
            "  0  success; the cache is clean\n"
            "  1  problems found (verify), or prune could not reach its size target\n"
            "  2  usage or operational error (bad option or value, missing or unsafe\n"
            "     cache directory, corrupt index: run 'vyre-cachectl reindex')\n",
            CACHECTL_GLOBAL_HELP);
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    tool_set_prog("vyre-cachectl");
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"version", no_argument, NULL, 'V'},
        {"zero-stats", no_argument, NULL, 'z'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c, zero = 0;
    while ((c = getopt_long(argc, argv, "+" CACHECTL_GLOBAL_SHORTOPTS "Vz", opts, NULL)) != -1) {
        if (c == 'z') {
            zero = 1;
            continue;
        }
        if (c == 'V') {
            printf("vyre-cachectl %s (libvyrecore %s, CUDA toolkit %s)\n", vyre_version(),
                   vyre_version(), vyre_cuda_toolkit_version());
            return TOOL_EXIT_OK;
        }
        int rc = cachectl_option(c, NULL, opts, argc, argv, usage);
        if (rc != CACHECTL_HANDLED)
            return rc;
    }
    if (zero) {
        /* ccache -z: alone, or before a command (-z stats). */
        static char zname[] = "zero-stats";
        char *zargv[] = {zname, NULL};
        int save = optind;
        int zrc = tool_run_cmd(tool_cmd_find(g_cmds, zname), 1, zargv);
        if (zrc || save >= argc)
            return zrc;
        optind = save;
    }
    if (optind >= argc) {
        usage(stderr);
        return TOOL_EXIT_ERROR;
    }
    return tool_dispatch(g_cmds, usage, argc - optind, argv + optind);
}
