/*
 * cmd_push.c - `vyre-bench push RUN... --to WHERE` and `pull RUN...
 * --from WHERE`: runs copied between the local results database and a
 * shared one (libcore's vyre_results_copy_run), with their points,
 * samples, facts and kernel records, once: a run the target already holds
 * (same host, start time and pid) is reported and left alone.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "vyre/vyre.h"

/* Each takes the other's option too, hidden, to say which one it takes. */
const tool_opt bench_push_opts[] = {
    {'T', 0, "to", "WHERE", "the target: a file or a postgresql:// URL", TOOL_OPT_FILE},
    {TOOL_OPT_DB, 0, "db", "PATH",
     "the source (default $XDG_DATA_HOME/vyre/results.sqlite3)\n"
     "or a server, postgresql://user@host:port/db; VYRE_RESULTS_DB",
     TOOL_OPT_FILE},
    {'F', 0, "from", "WHERE", NULL, NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};
const tool_opt bench_pull_opts[] = {
    {'F', 0, "from", "WHERE", "the source: a file or a postgresql:// URL", TOOL_OPT_FILE},
    {TOOL_OPT_DB, 0, "db", "PATH",
     "the target (default $XDG_DATA_HOME/vyre/results.sqlite3)\n"
     "or a server, postgresql://user@host:port/db; VYRE_RESULTS_DB",
     TOOL_OPT_FILE},
    {'T', 0, "to", "WHERE", NULL, NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage_push(FILE *out)
{
    fprintf(out, "usage: vyre-bench push [--db PATH] RUN... --to WHERE\n\n"
                 "Copy runs of the results database to another one, typically a shared\n"
                 "server (postgresql://user@host:port/db): each run with its points,\n"
                 "samples, facts (host, GPU, driver, git revision) and kernel records, in one\n"
                 "transaction. A run the target already holds (same host, start time and\n"
                 "pid) is not copied again. RUN is an id, 'last' or 'last-N'.\n\n");
    tool_cmd_options_help(out, bench_push_opts);
    fprintf(out, "\nexit status: 0 copied (or already there), 2 usage or operational error\n");
}

static void usage_pull(FILE *out)
{
    fprintf(out, "usage: vyre-bench pull [--db PATH] RUN... --from WHERE\n\n"
                 "Copy runs of another results database, typically a shared server, into\n"
                 "this one, as push does the other way. RUN (an id, 'last' or 'last-N') is\n"
                 "named as WHERE knows it.\n\n");
    tool_cmd_options_help(out, bench_pull_opts);
    fprintf(out, "\nexit status: 0 copied (or already there), 2 usage or operational error\n");
}

/* Copies each RUN of `from` (resolved there) to `to`, reporting each. */
static int copy_runs(vyre_results *from, vyre_results *to, char **refs, int n, const char *verb)
{
    vyre_error err;
    vyre_error_clear(&err);
    for (int i = 0; i < n; i++) {
        int64_t id = 0, new_id = 0;
        int existed = 0;
        if (vyre_bench_run_resolve(from, refs[i], &id, &err) ||
            vyre_results_copy_run(from, id, to, &new_id, &existed, &err)) {
            tool_report(&err);
            return TOOL_EXIT_ERROR;
        }
        if (existed)
            printf("run %" PRId64 " is already in %s as run %" PRId64 "\n", id,
                   vyre_results_path(to), new_id);
        else
            printf("%s run %" PRId64 " as run %" PRId64 " of %s\n", verb, id, new_id,
                   vyre_results_path(to));
    }
    return TOOL_EXIT_OK;
}

/* push (pull = 0) or pull: parse, open both, copy. */
static int push_pull(int pull, int argc, char **argv)
{
    const char *sub = pull ? "pull" : "push";
    const char *other = NULL;
    int c, stop = 0;
    while ((c = tool_getopt_table(sub, argc, argv, pull ? bench_pull_opts : bench_push_opts,
                                  pull ? usage_pull : usage_push, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if ((c == 'T' && pull) || (c == 'F' && !pull))
            return tool_usage_error(sub, NULL, "%s takes %s, not %s", sub, pull ? "--from" : "--to",
                                    pull ? "--to" : "--from");
        other = optarg;
    }
    if (!other || !*other)
        return tool_usage_error(sub,
                                pull ? "name the source: --from postgresql://user@host/db"
                                     : "name the target: --to postgresql://user@host/db",
                                "%s needs %s WHERE", sub, pull ? "--from" : "--to");
    if (optind == argc)
        return tool_usage_error(sub, "give run ids, 'last' or 'last-N'", "which runs?");
    vyre_results *local = NULL, *remote = NULL;
    int code = bench_open_db_existing(&local);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_results_open(other, &remote, &err)) {
        tool_report(&err);
        vyre_results_close(local);
        return TOOL_EXIT_ERROR;
    }
    code = pull ? copy_runs(remote, local, argv + optind, argc - optind, "pulled")
                : copy_runs(local, remote, argv + optind, argc - optind, "pushed");
    vyre_results_close(remote);
    vyre_results_close(local);
    return code;
}

int cmd_push(int argc, char **argv)
{
    return push_pull(0, argc, argv);
}

int cmd_pull(int argc, char **argv)
{
    return push_pull(1, argc, argv);
}
