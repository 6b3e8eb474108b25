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
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_no_opts},
    {"ls", cmd_ls, "list the cached blobs", TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_ls_opts},
    {"show", cmd_show, "print the full header of one blob", TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON,
     cachectl_no_opts},
    {"verify", cmd_verify, "check every blob and the index; --repair fixes what it finds",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_verify_opts},
    {"prune", cmd_prune, "remove blobs by size, age, architecture or toolchain (LRU first)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_prune_opts},
    {"reindex", cmd_reindex, "rebuild the index from the blobs",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_reindex_opts},
    {"seed", cmd_seed, "compile CUDA C or PTX ahead of time into cubin blobs",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_seed_opts},
    {"explain", cmd_explain, "why a source's key hits or misses: its inputs beside the cached ones",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_explain_opts},
    {"clear", cmd_clear, "remove every blob and the index (needs --yes)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_clear_opts},
    {"jit", cmd_jit, "report on (or clear) the CUDA driver's own JIT cache", TOOL_CMD_JSON,
     cachectl_jit_opts},
    {"config", cmd_config, "list, print or set the configuration (max_size, read_only, ...)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_config_opts},
    {"zero-stats", cmd_zero_stats, "reset the hit and miss counters (also -z, --zero-stats)",
     TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON, cachectl_no_opts},
    {"remote", cmd_remote, "remote stores", TOOL_CMD_NEEDS_CACHE | TOOL_CMD_JSON,
     cachectl_remote_opts},
    {"triton", cmd_triton, "Triton's kernel cache", TOOL_CMD_JSON, cachectl_triton_all_opts},
    {"inductor", cmd_inductor, "TorchInductor's cache", TOOL_CMD_JSON, cachectl_inductor_all_opts},
    {NULL, NULL, NULL, 0, NULL},
};

/* The actions of a command that has them (triton ACTION), else NULL. */
static const tool_cmd *actions_of(const tool_cmd *cmd)
{
    if (!strcmp(cmd->name, "triton"))
        return cachectl_triton_actions;
    if (!strcmp(cmd->name, "inductor"))
        return cachectl_inductor_actions;
    if (!strcmp(cmd->name, "remote"))
        return cachectl_remote_actions;
    return NULL;
}

/* ccache's spellings, run in the order given before the command (if any):
 * -z zero-stats, -s stats, -M SIZE config max_size SIZE,
 * --evict-older-than AGE prune --max-age AGE. */
enum { OPT_VERSION = 'V', OPT_EVICT = 0x300 };
static const tool_opt k_main_opts[] = {
    {OPT_VERSION, 'V', "version", NULL, "the versions of vyre-cachectl, libvyrecore and CUDA",
     NULL},
    {TOOL_OPT_SECTION, 0, "", NULL,
     "ccache's spellings, run in the order given (then the command, if any):", NULL},
    {'z', 'z', "zero-stats", NULL, "zero-stats: reset the hit and miss counters", NULL},
    {'s', 's', "show-stats", NULL, "stats", NULL},
    {'M', 'M', "max-size", "SIZE", "config max_size SIZE", NULL},
    {OPT_EVICT, 0, "evict-older-than", "AGE", "prune --max-age AGE", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

/* The commands, each with its actions when it has some (derived from the
 * tables: nothing to keep in step by hand). */
static void usage_commands(FILE *out)
{
    fprintf(out, "commands:\n");
    for (const tool_cmd *c = g_cmds; c->name; c++)
        fprintf(out, "  %-10s %s%s\n", c->name, c->summary,
                actions_of(c) ? ": the actions below" : "");
    for (const tool_cmd *c = g_cmds; c->name; c++) {
        const tool_cmd *acts = actions_of(c);
        if (acts)
            fprintf(out, "\n%s's actions ('vyre-cachectl %s ACTION'):\n", c->name, c->name);
        for (const tool_cmd *a = acts; a && a->name; a++) {
            char both[64];
            snprintf(both, sizeof both, "%s %s", c->name, a->name);
            fprintf(out, "  %-17s %s\n", both, a->summary);
        }
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl [--cache-dir DIR] [--json] [-q|-v] [-o KEY=VALUE]...\n"
                 "                     <command> [<args>]\n"
                 "       vyre-cachectl [-z] [-s] [-M SIZE] [--evict-older-than AGE] [<command>]\n"
                 "       vyre-cachectl --help | --version\n\n"
                 "Inspect, verify, prune and rebuild the vyre pipeline cache, and report on\n"
                 "the CUDA driver's JIT cache.\n\n");
    usage_commands(out);
    fprintf(out, "\noptions:\n");
    tool_opt_help(out, k_main_opts);
    fprintf(out, "\nSizes (max_size, prune --max-size) are written 5G, 500M, 1.5GiB or 750MB;\n"
                 "a size without a unit is GiB, as in ccache.\n\n");
    cachectl_options_help(out, NULL);
    fprintf(out, "\nRun 'vyre-cachectl <command> --help' for a command's options.\n\n"
                 "exit status:\n"
                 "  0  success; the cache is clean\n"
                 "  1  problems found (verify), or prune could not reach its size target\n"
                 "  2  usage or operational error (bad option or value, missing or unsafe\n"
                 "     cache directory, corrupt index: run 'vyre-cachectl reindex')\n");
}

/* ---- main --------------------------------------------------------------- */

#define CCACHE_ACTIONS_MAX 8
typedef struct ccache_action {
    char *cmd; /* the command it runs, and its arguments */
    char *args[3];
} ccache_action;

static int run_actions(const ccache_action *a, size_t n)
{
    int rc = TOOL_EXIT_OK;
    for (size_t i = 0; i < n && rc == TOOL_EXIT_OK; i++) {
        char *argv[5] = {NULL};
        int argc = 0;
        argv[argc++] = a[i].cmd;
        for (size_t k = 0; k < 3 && a[i].args[k]; k++)
            argv[argc++] = a[i].args[k];
        int save = optind;
        rc = tool_run_cmd(tool_cmd_find(g_cmds, a[i].cmd), argc, argv);
        optind = save;
    }
    return rc;
}

int main(int argc, char **argv)
{
    tool_set_prog("vyre-cachectl");
    if (tool_opt_wants_completion(argc, argv))
        return cachectl_complete(g_cmds, k_main_opts, actions_of, argc - 2, argv + 2);
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, NULL, k_main_opts, usage, "+"))
        return TOOL_EXIT_ERROR;
    static char zero[] = "zero-stats", stats[] = "stats", config[] = "config", prune[] = "prune",
                max_size[] = "max_size", max_age[] = "--max-age";
    ccache_action acts[CCACHE_ACTIONS_MAX];
    size_t nact = 0;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == 'z' || c == 's' || c == 'M' || c == OPT_EVICT) {
            if (nact == CCACHE_ACTIONS_MAX)
                return tool_usage_error(NULL, NULL, "at most %d of -z, -s, -M, --evict-older-than",
                                        CCACHE_ACTIONS_MAX);
            ccache_action *a = &acts[nact++];
            memset(a, 0, sizeof *a);
            a->cmd = c == 'z' ? zero : c == 's' ? stats : c == 'M' ? config : prune;
            if (c == 'M' || c == OPT_EVICT) {
                a->args[0] = c == 'M' ? max_size : max_age;
                a->args[1] = optarg;
            }
            continue;
        }
        if (c == 'V') {
            printf("vyre-cachectl %s (libvyrecore %s, CUDA toolkit %s)\n", vyre_version(),
                   vyre_version(), vyre_cuda_toolkit_version());
            return TOOL_EXIT_OK;
        }
    }
    if (nact) {
        /* ccache -z -s: alone, or before a command (-z stats). */
        int rc = run_actions(acts, nact);
        if (rc || optind >= argc)
            return rc;
    }
    if (optind >= argc) {
        usage(stderr);
        return TOOL_EXIT_ERROR;
    }
    return tool_dispatch(g_cmds, usage, argc - optind, argv + optind);
}
