/*
 * cmd_verify.c - `vyre-cachectl verify [--repair]`: check every blob and the
 * index against the files; optionally fix what was found. libcore checks
 * and repairs (vyre_cache_verify); the report is verify_print.c's, as for
 * Triton's groups and TorchInductor's entries: this file gives it vyre's
 * words, its JSON fields and its summary table.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "progress.h"
#include "verify_print.h"

enum { OPT_REPAIR = CACHECTL_OPT_FIRST_LOCAL };

const tool_opt cachectl_verify_opts[] = {
    {OPT_REPAIR, 0, "repair", NULL,
     "quarantine bad blobs and misplaced ones, delete index\n"
     "rows whose file is gone, index valid blobs the index\n"
     "lacks, rewrite rows that disagree with their blob,\n"
     "remove debris; each problem line then says what was\n"
     "done; a symlink, FIFO, socket, device or hard link\n"
     "where a directory or blob belongs is removed itself,\n"
     "never what it points to. Files under names vyre never\n"
     "writes (in blobs/, tmp/, quarantine/) are someone\n"
     "else's: reported as stray and left where they are",
     NULL},
    {'q', 'q', "quiet", NULL, "print nothing; the exit status says it all", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl verify [--repair] [--json]\n\n"
                 "Check every blob (header, checksums, file name), the index against the\n"
                 "files, and tmp/ for debris older than an hour. Prints a line per problem,\n"
                 "then a summary table. Without --repair nothing is changed.\n\n");
    cachectl_options_help(out, cachectl_verify_opts);
    fprintf(out, "\n"
                 "exit status: 0 clean (with --repair: every problem was repaired),\n"
                 "             1 problems found (and, with --repair, some remain),\n"
                 "             2 usage or operational error\n");
}

static const char *problem_name(vyre_cache_problem_kind k)
{
    switch (k) {
    case VYRE_PROBLEM_BAD_BLOB:
        return "bad-blob";
    case VYRE_PROBLEM_ROW_WITHOUT_FILE:
        return "row-without-file";
    case VYRE_PROBLEM_FILE_WITHOUT_ROW:
        return "file-without-row";
    case VYRE_PROBLEM_ROW_MISMATCH:
        return "row-mismatch";
    case VYRE_PROBLEM_DEBRIS:
        return "debris";
    case VYRE_PROBLEM_STRAY:
        return "stray";
    case VYRE_PROBLEM_FOREIGN:
        return "foreign";
    }
    return "unknown";
}

/* What the report reads of one problem (libcore's strings are its own
 * only while the callback runs). */
typedef struct blob_problem {
    vyre_cache_problem_kind kind;
    char *rel, *why;    /* malloc'ed: the path in the cache; the reason or NULL */
    const char *action; /* libcore's words (static storage) or NULL */
    int repaired;
} blob_problem;

typedef struct result {
    vyre_cache *cache;
    int repair;
    blob_problem *p;
    size_t n, cap;
    vyre_cache_verify_result res;
} result;

static void on_problem(const vyre_cache_verify_problem *p, void *ctx)
{
    result *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->p = tool_need(realloc(r->p, r->cap * sizeof *r->p));
    }
    const char *why =
        p->kind == VYRE_PROBLEM_BAD_BLOB ? vyre_blob_reject_name(p->reject) : p->detail;
    r->p[r->n++] = (blob_problem){p->kind, tool_need(strdup(cachectl_relpath(r->cache, p->path))),
                                  why ? tool_need(strdup(why)) : NULL, p->action, p->repaired};
}

static void get(const void *ctx, size_t i, cachectl_vproblem *out)
{
    const blob_problem *p = &((const result *)ctx)->p[i];
    *out = (cachectl_vproblem){.entry = p->rel,
                               .kind = problem_name(p->kind),
                               .message = p->why,
                               .action = p->action,
                               .repaired = p->repaired};
}

static void json_problem(const void *ctx, size_t i, json_t *o)
{
    const blob_problem *p = &((const result *)ctx)->p[i];
    json_object_set_new(o, "path", json_string(p->rel));
    json_object_set_new(o, "repaired", json_boolean(p->repaired));
    json_object_set_new(o, "reason", p->why ? json_string(p->why) : json_null());
    json_object_set_new(o, "action", p->action ? json_string(p->action) : json_null());
}

/* The --json document (schema_version 1) but its problems and clean. */
static json_t *json_root(const void *ctx)
{
    const result *r = ctx;
    const vyre_cache_verify_result *res = &r->res;
    json_t *o = cachectl_json_root(r->cache, 1);
    json_object_set_new(o, "repair", json_boolean(r->repair));
    json_object_set_new(
        o, "summary",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                  "blobs_checked", (json_int_t)res->blobs_checked, "bytes_checked",
                  (json_int_t)res->bytes_checked, "bad_blobs", (json_int_t)res->bad_blobs,
                  "rows_without_file", (json_int_t)res->rows_without_file, "files_without_row",
                  (json_int_t)res->files_without_row, "row_mismatches",
                  (json_int_t)res->row_mismatches, "debris", (json_int_t)res->debris, "stray",
                  (json_int_t)res->stray, "foreign", (json_int_t)res->foreign, "quarantined",
                  (json_int_t)res->quarantined, "tmp_in_flight", (json_int_t)res->tmp_in_flight,
                  "problems", (json_int_t)res->problems, "repaired", (json_int_t)res->repaired,
                  "stale", (json_int_t)res->stale));
    return o;
}

/* The summary for a terminal. */
static void summary(const void *ctx, int repair)
{
    const vyre_cache_verify_result *res = &((const result *)ctx)->res;
    uint64_t remaining = res->problems - res->repaired;
    char size[32];
    vyre_format_size(res->bytes_checked, size, sizeof size);
    if (res->problems)
        printf("\n");
    printf("%-22s %" PRIu64 " (%s)\n", "Blobs checked:", res->blobs_checked, size);
    printf("%-22s %" PRIu64 "\n", "Bad blobs:", res->bad_blobs);
    printf("%-22s %" PRIu64 "\n", "Rows without file:", res->rows_without_file);
    printf("%-22s %" PRIu64 "\n", "Files without row:", res->files_without_row);
    printf("%-22s %" PRIu64 "\n", "Row mismatches:", res->row_mismatches);
    printf("%-22s %" PRIu64 "\n", "Debris in tmp/:", res->debris);
    printf("%-22s %" PRIu64 "\n", "Stray files:", res->stray);
    printf("%-22s %" PRIu64 "\n", "Links/special files:", res->foreign);
    printf("%-22s %" PRIu64 " (kept for inspection)\n", "Quarantined:", res->quarantined);
    printf("%-22s %" PRIu64 "\n", "Writes in flight:", res->tmp_in_flight);
    printf("%-22s %" PRIu64 " (older key format, never hit; 'prune --stale' removes "
           "them)\n",
           "Stale blobs:", res->stale);
    if (repair)
        printf("%-22s %" PRIu64 " of %" PRIu64 "\n", "Repaired:", res->repaired, res->problems);
    if (res->problems == 0)
        printf("The cache is clean.\n");
    else if (!repair)
        printf("%" PRIu64 " problem%s found. Run 'vyre-cachectl verify --repair' to "
               "fix them.\n",
               res->problems, res->problems == 1 ? "" : "s");
    else if (remaining)
        printf("%" PRIu64 " problem%s could not be repaired.\n", remaining,
               remaining == 1 ? "" : "s");
    else
        printf("Repaired %" PRIu64 " problem%s; the cache is clean.\n", res->repaired,
               res->repaired == 1 ? "" : "s");
}

int cmd_verify(int argc, char **argv)
{
    cachectl_parser p;
    int repair = 0, c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "verify", cachectl_verify_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_REPAIR)
            repair = 1;
    }
    if (optind < argc)
        return tool_usage_error("verify", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("verify");
    if (rc)
        return rc;

    result r = {.repair = repair};
    if ((rc = cachectl_open(repair ? CACHECTL_WRITE : CACHECTL_READ_OR_EMPTY, &r.cache)))
        return rc;
    cachectl_progress prog;
    cachectl_progress_init(&prog, "verify", "blobs");
    vyre_error err;
    vyre_error_clear(&err);
    rc = vyre_cache_verify(r.cache, repair, &r.res, on_problem, &r, cachectl_progress_update, &prog,
                           &err);
    cachectl_progress_end(&prog);
    if (rc) {
        rc = cachectl_fail(&err);
    } else {
        cachectl_verify k = {.one_by_one = 1,
                             .n = r.n,
                             .ctx = &r,
                             .get = get,
                             .json_problem = json_problem,
                             .json_root = json_root,
                             .summary = summary};
        rc = cachectl_verify_report(&k, repair);
    }
    for (size_t i = 0; i < r.n; i++) {
        free(r.p[i].rel);
        free(r.p[i].why);
    }
    free(r.p);
    vyre_cache_close(r.cache);
    return rc;
}
