/*
 * cmd_rm.c - `vyre-bench rm`: remove runs (and their points, samples and
 * kernel records) from the results database, all named runs in one
 * transaction; libcore refuses a run whose process is still running.
 */
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "tool_util.h"
#include "cmds.h"
#include "vyre/vyre.h"

const tool_opt bench_rm_opts[] = {
    {'F', 0, "failed", NULL, "every run whose status is failed", NULL},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "the removed runs as one JSON document (schema_version " TOOL_STR(
         BENCH_RM_JSON_SCHEMA_VERSION) ")",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench rm [--db PATH] [--json] RUN...\n"
                 "       vyre-bench rm [--db PATH] [--json] --failed\n\n"
                 "Remove runs and everything stored with them: points, samples, kernel\n"
                 "records. RUN is an id, 'last' or 'last-N' (see 'vyre-bench runs'; 'last'\n"
                 "is the last done run: remove failed ones by id or with --failed).\n"
                 "All the runs named go in one transaction, or none does. A run still\n"
                 "running is refused; a run whose process died is marked interrupted first\n"
                 "and can then be removed.\n\n");
    tool_cmd_options_help(out, bench_rm_opts);
    fprintf(out, "\nexit status: 0 removed (or nothing to remove with --failed),\n"
                 "             2 usage or operational error (nothing removed)\n");
}

/* Collects the failed runs' ids (malloc'ed into *ids). */
static int failed_runs(vyre_results *db, int64_t **ids, size_t *n, vyre_error *err)
{
    vyre_bench_run *runs = NULL;
    size_t nr = 0;
    *ids = NULL;
    *n = 0;
    int rc = vyre_bench_runs_list(db, 0, &runs, &nr, err);
    if (rc)
        return rc;
    *ids = malloc((nr ? nr : 1) * sizeof **ids);
    if (!*ids) {
        vyre_free(runs);
        return tool_set_error(err, VYRE_ENOMEM, NULL, "out of memory listing runs");
    }
    for (size_t i = nr; i-- > 0;) /* oldest first */
        if (runs[i].status == VYRE_RUN_FAILED)
            (*ids)[(*n)++] = runs[i].id;
    vyre_free(runs);
    return VYRE_OK;
}

int cmd_rm(int argc, char **argv)
{
    int failed = 0, c;
    int stop = 0;
    while ((c = tool_getopt_table("rm", argc, argv, bench_rm_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        switch (c) {
        case 'F':
            failed = 1;
            break;
        }
    }
    if (failed && optind < argc)
        return tool_usage_error("rm", "give run ids, or --failed alone",
                                "--failed and run ids cannot be combined");
    if (!failed && optind == argc)
        return tool_usage_error("rm", "give run ids, 'last', 'last-N', or --failed",
                                "which runs? nothing was removed");
    vyre_results *db = NULL;
    int code = bench_open_db_existing(&db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = VYRE_OK;
    if (failed) {
        rc = failed_runs(db, &ids, &n, &err);
    } else {
        n = (size_t)(argc - optind);
        ids = malloc(n * sizeof *ids);
        if (!ids)
            rc = tool_set_error(&err, VYRE_ENOMEM, NULL, "out of memory");
        for (size_t i = 0; !rc && i < n; i++) {
            rc = vyre_bench_run_resolve(db, argv[optind + (int)i], &ids[i], &err);
            for (size_t j = 0; !rc && j < i; j++)
                if (ids[j] == ids[i])
                    rc = tool_set_error(&err, VYRE_EINVAL, "name each run once",
                                        "run %" PRId64 " is named twice", ids[i]);
        }
    }
    /* The runs as they were, for the report. */
    vyre_bench_run *gone = rc || !n ? NULL : calloc(n, sizeof *gone);
    if (!rc && n && !gone)
        rc = tool_set_error(&err, VYRE_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; !rc && i < n; i++)
        rc = vyre_bench_run_get(db, ids[i], &gone[i], &err);
    if (!rc && n)
        rc = vyre_bench_runs_delete(db, ids, n, &err);
    if (rc) {
        tool_report(&err);
        code = TOOL_EXIT_ERROR;
    } else if (g_tool.json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, bench_json_run_info(&gone[i]));
        json_t *o = json_object();
        json_object_set_new(o, "schema_version", json_integer(BENCH_RM_JSON_SCHEMA_VERSION));
        json_object_set_new(o, "db", json_string(vyre_results_path(db)));
        json_object_set_new(o, "removed", arr);
        tool_json_print(stdout, o);
    } else if (!n) {
        printf("no failed runs in %s\n", vyre_results_path(db));
    } else {
        for (size_t i = 0; i < n; i++) {
            printf("removed ");
            bench_run_summary(stdout, &gone[i]);
        }
    }
    free(gone);
    free(ids);
    vyre_results_close(db);
    return code;
}
