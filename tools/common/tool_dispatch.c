/*
 * tool_dispatch.c - see tool_dispatch.h: the command table, `help CMD`,
 * "did you mean", the shared global options and the results-database setup.
 */
#include "tool_dispatch.h"

#include <assert.h>
#include <string.h>

#include "vyre/vyre.h"

tool_globals g_tool;

static int unknown_command(const tool_cmd *cmds, const char *name)
{
    if (name[0] == '-')
        return tool_usage_error(NULL, NULL, "unknown option '%s'", name);
    const char *names[32];
    size_t n = 0;
    for (const tool_cmd *c = cmds; c->name && n < 32; c++)
        names[n++] = c->name;
    const char *near = tool_nearest(name, names, n);
    char hint[128];
    if (near)
        snprintf(hint, sizeof hint, "did you mean '%s'?", near);
    return tool_usage_error(NULL, near ? hint : NULL, "unknown command '%s'", name);
}

int tool_run_cmd(const tool_cmd *cmd, int argc, char **argv)
{
    g_tool.cmd = cmd;
    optind = 0; /* glibc: rescan a new vector from scratch */
    return cmd->fn(argc, argv);
}

int tool_dispatch(const tool_cmd *cmds, void (*usage)(FILE *), int argc, char **argv)
{
    if (strcmp(argv[0], "help") == 0) {
        if (argc < 2) {
            usage(stdout);
            return TOOL_EXIT_OK;
        }
        /* git help CMD: the command's own help. */
        const tool_cmd *cmd = tool_cmd_find(cmds, argv[1]);
        if (!cmd)
            return unknown_command(cmds, argv[1]);
        static char help[] = "--help";
        char *hargv[] = {argv[1], help, NULL};
        return tool_run_cmd(cmd, 2, hargv);
    }
    const tool_cmd *cmd = tool_cmd_find(cmds, argv[0]);
    if (!cmd)
        return unknown_command(cmds, argv[0]);
    return tool_run_cmd(cmd, argc, argv);
}

int tool_global_option(int c, const char *arg, void (*usage)(FILE *), int *code)
{
    switch (c) {
    case TOOL_OPT_DB:
        g_tool.db = arg;
        return TOOL_OPT_HANDLED;
    case TOOL_OPT_JSON:
        g_tool.json = 1;
        return TOOL_OPT_HANDLED;
    case 'h':
        usage(stdout);
        *code = TOOL_EXIT_OK;
        return TOOL_OPT_STOP;
    default:
        return -1;
    }
}

/* The command's long options with the shared ones its flags name: --db
 * first and --json, --help last, where the commands used to list them (the
 * order "did you mean" breaks ties in). */
static void merge_longopts(const struct option *own, struct option *out, size_t cap)
{
    unsigned flags = g_tool.cmd ? g_tool.cmd->flags : 0;
    size_t n = 0;
    if (flags & TOOL_CMD_NEEDS_DB)
        out[n++] = (struct option){"db", required_argument, NULL, TOOL_OPT_DB};
    for (; own && own->name && n + 3 < cap; own++)
        out[n++] = *own;
    if (flags & TOOL_CMD_JSON)
        out[n++] = (struct option){"json", no_argument, NULL, TOOL_OPT_JSON};
    out[n++] = (struct option){"help", no_argument, NULL, 'h'};
    out[n] = (struct option){NULL, 0, NULL, 0};
}

/* shortopts with 'h' added after its leading '+', '-' or ':'. */
static void merge_shortopts(const char *own, char *out, size_t size)
{
    size_t lead = strspn(own, "+-:");
    snprintf(out, size, "%.*sh%s", (int)lead, own, own + lead);
}

int tool_getopt(const char *sub, int argc, char **argv, const char *shortopts,
                const struct option *own, void (*usage)(FILE *), int *code)
{
    struct option longopts[64];
    char shorts[64];
    merge_longopts(own, longopts, sizeof longopts / sizeof longopts[0]);
    merge_shortopts(shortopts ? shortopts : "", shorts, sizeof shorts);
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, shorts, longopts, NULL);
        if (c == '?' || c == ':') {
            *code = tool_bad_option(sub, argv, optind, optopt, shorts, longopts);
            return TOOL_OPT_STOP;
        }
        int r = tool_global_option(c, optarg, usage, code);
        if (r == TOOL_OPT_HANDLED)
            continue;
        return r == TOOL_OPT_STOP ? r : c;
    }
}

int tool_open_db(struct vyre_results **out)
{
    assert(!g_tool.cmd || (g_tool.cmd->flags & TOOL_CMD_NEEDS_DB));
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_results_open(g_tool.db, out, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    return TOOL_EXIT_OK;
}
