/*
 * db.c - how the vyre-bench commands that read one run reach it (the
 * database itself is opened by tool_open_db: --db PATH or URL, else
 * VYRE_RESULTS_DB, else results_db of vyre.conf, else the default file):
 * checking the RUN operand and loading that run with its points. Errors are
 * reported here; the callers get exit codes.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "cmds.h"
#include "vyre/vyre.h"

int bench_open_db_existing(vyre_results **db)
{
    *db = NULL;
    char def[VYRE_RESULTS_LOCATION_MAX];
    const char *path = g_tool.db;
    if (!path) {
        vyre_error err;
        vyre_error_clear(&err);
        if (vyre_results_locate(def, sizeof def, NULL, &err)) {
            tool_report(&err);
            return TOOL_EXIT_ERROR;
        }
        path = def;
    }
    /* Opening creates the file: a typo in --db would leave an empty
     * database behind and list no runs, as if the history were gone. (A
     * server's database is the server's: opening it creates no file.) */
    struct stat st;
    if (!vyre_results_is_url(path) && stat(path, &st) != 0 && errno == ENOENT) {
        char shown[VYRE_RESULTS_LOCATION_MAX];
        vyre_results_mask(path, shown, sizeof shown); /* a key=value string may hold one */
        fprintf(stderr, "%s: error: no results database '%s'\n", tool_prog(), shown);
        fprintf(stderr, "hint: %s\n",
                g_tool.db ? "check the path given to --db; 'vyre-bench run --db PATH' creates one"
                          : "measure first: 'vyre-bench run' creates it");
        return TOOL_EXIT_ERROR;
    }
    return tool_open_db(db);
}

int bench_open_run(const char *sub, int argc, char **argv, int first, vyre_results **db,
                   vyre_bench_run *run, vyre_bench_point **pts, size_t *n)
{
    *db = NULL;
    *pts = NULL;
    *n = 0;
    if (first >= argc)
        return tool_usage_error(sub, NULL, "which run? give a run id, 'last' or 'last-N'");
    if (first + 1 < argc)
        return tool_usage_error(sub, NULL, "unexpected argument '%s'", argv[first + 1]);
    int code = bench_open_db_existing(db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    int64_t id = 0;
    if (vyre_bench_run_resolve(*db, argv[first], &id, &err) ||
        vyre_bench_run_get(*db, id, run, &err) || vyre_bench_points_get(*db, id, pts, n, &err)) {
        tool_report(&err);
        vyre_results_close(*db);
        *db = NULL;
        return TOOL_EXIT_ERROR;
    }
    return TOOL_EXIT_OK;
}
