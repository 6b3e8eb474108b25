/*
 * tool_dispatch.c - see tool_dispatch.h: the command table, `help CMD`,
 * "did you mean", the shared global options and the results-database setup.
 */
#include "tool_dispatch.h"

#include <assert.h>
#include <string.h>

#include "tool_opt.h"
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
static int has_long(const struct option *own, const char *name)
{
    for (; own && own->name; own++)
        if (strcmp(own->name, name) == 0)
            return 1;
    return 0;
}

static void merge_longopts(const struct option *own, struct option *out, size_t cap)
{
    unsigned flags = g_tool.cmd ? g_tool.cmd->flags : 0;
    size_t n = 0;
    if ((flags & TOOL_CMD_NEEDS_DB) && !has_long(own, "db"))
        out[n++] = (struct option){"db", required_argument, NULL, TOOL_OPT_DB};
    int own_json = has_long(own, "json");
    for (; own && own->name && n + 3 < cap; own++)
        out[n++] = *own;
    if ((flags & TOOL_CMD_JSON) && !own_json)
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

int tool_getopt_table(const char *sub, int argc, char **argv, const tool_opt *own,
                      void (*usage)(FILE *), int *code)
{
    tool_opt_arrays g;
    if (tool_opt_getopt(own, &g) != 0) {
        *code = tool_usage_error(sub, NULL, "too many options declared (a programming error)");
        return TOOL_OPT_STOP;
    }
    return tool_getopt(sub, argc, argv, g.shorts, g.longs, usage, code);
}

/* The shared options, declared once, in the order commands list them. */
static const tool_opt shared_db[] = {
    {TOOL_OPT_DB, 0, "db", "PATH",
     "results database (default $XDG_DATA_HOME/vyre/results.sqlite3)\n"
     "or a server, postgresql://user@host:port/db; VYRE_RESULTS_DB",
     TOOL_OPT_FILE},
    {0, 0, NULL, NULL, NULL, NULL},
};
static const tool_opt shared_json[] = {
    {TOOL_OPT_JSON, 0, "json", NULL, "one JSON document", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};
static const tool_opt shared_help[] = {
    {'h', 'h', "help", NULL, "this help", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static int table_has(const tool_opt *own, const char *name)
{
    for (; own && own->name; own++)
        if (strcmp(own->name, name) == 0)
            return 1;
    return 0;
}

/* Calls fn on the command's own table and the shared tables it gets. */
static void each_table(const tool_cmd *cmd, const tool_opt *own,
                       void (*fn)(FILE *, const tool_opt *), FILE *out)
{
    unsigned flags = cmd ? cmd->flags : 0;
    if (own)
        fn(out, own);
    if ((flags & TOOL_CMD_JSON) && !table_has(own, "json"))
        fn(out, shared_json);
    if ((flags & TOOL_CMD_NEEDS_DB) && !table_has(own, "db"))
        fn(out, shared_db);
    fn(out, shared_help);
}

void tool_cmd_options_help(FILE *out, const tool_opt *own)
{
    each_table(g_tool.cmd, own, tool_opt_help, out);
}

int tool_dispatch_complete(const tool_cmd *cmds, int argc, char **argv)
{
    const tool_cmd *cmd = NULL;
    for (int i = 0; i < argc && !cmd; i++)
        if (argv[i][0] != '-')
            cmd = tool_cmd_find(cmds, argv[i]);
    if (cmd) {
        each_table(cmd, cmd->opts, tool_opt_complete, stdout);
        return TOOL_EXIT_OK;
    }
    for (const tool_cmd *c = cmds; c->name; c++)
        printf("%s\t0\t\n", c->name);
    printf("--help\t0\t\n--version\t0\t\n");
    return TOOL_EXIT_OK;
}
