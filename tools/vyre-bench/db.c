/*
 * db.c - how the vyre-bench commands that read one run reach it (the
 * database itself is opened by tool_open_db, --db PATH or the default):
 * checking the RUN operand and loading that run with its points. Errors are
 * reported here; the callers get exit codes.
 */
#include <stdio.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "cmds.h"
#include "vyre/vyre.h"

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
    int code = tool_open_db(db);
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
