/*
 * cmd_verify.c - `vyre-cachectl verify [--repair]`: check every blob and the
 * index against the files; optionally fix what was found.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "progress.h"
#include "tool_sanitize.h"

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

typedef struct verify_ctx {
    const vyre_cache *cache;
    json_t *problems; /* --json */
    int print;        /* text lines */
    int repair;
} verify_ctx;

static void on_problem(const vyre_cache_verify_problem *p, void *ctx)
{
    verify_ctx *x = ctx;
    const char *rel = cachectl_relpath(x->cache, p->path);
    const char *why =
        p->kind == VYRE_PROBLEM_BAD_BLOB ? vyre_blob_reject_name(p->reject) : p->detail;
    if (x->problems) {
        json_t *o = json_pack("{s:s, s:s, s:b}", "kind", problem_name(p->kind), "path", rel,
                              "repaired", p->repaired);
        json_object_set_new(o, "reason", why ? json_string(why) : json_null());
        json_object_set_new(o, "action", p->action ? json_string(p->action) : json_null());
        json_array_append_new(x->problems, o);
    }
    if (!x->print)
        return;
    /* File names found in the cache and header details: through tool_clean. */
    printf("%-17s ", problem_name(p->kind));
    tool_clean_fputs(rel, stdout);
    if (why) {
        fputs(" (", stdout);
        tool_clean_fputs(why, stdout);
        fputs(")", stdout);
    }
    if (p->action && (p->repaired || x->repair)) /* "left" says why repair did not */
        printf(": %s", p->action);
    printf("\n");
}

/* The --json document (schema_version 1); takes problems. */
static void print_json(vyre_cache *cache, int repair, int clean,
                       const vyre_cache_verify_result *res, json_t *problems)
{
    json_t *o = cachectl_json_root(cache, 1);
    json_object_set_new(o, "repair", json_boolean(repair));
    json_object_set_new(o, "clean", json_boolean(clean));
    json_object_set_new(
        o, "summary",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                  "blobs_checked", (json_int_t)res->blobs_checked, "bytes_checked",
                  (json_int_t)res->bytes_checked, "bad_blobs", (json_int_t)res->bad_blobs,
                  "rows_without_file", (json_int_t)res->rows_without_file, "files_without_row",
                  (json_int_t)res->files_without_row, "row_mismatches",
                  (json_int_t)res->row_mismatches, "debris", (json_int_t)res->debris, "stray",
                  (json_int_t)res->stray, "foreign", (json_int_t)res->foreign, "quarantined",
                  (json_int_t)res->quarantined, "tmp_in_flight", (json_int_t)res->tmp_in_flight,
                  "problems", (json_int_t)res->problems, "repaired", (json_int_t)res->repaired));
    json_object_set_new(json_object_get(o, "summary"), "stale",
                        json_integer((json_int_t)res->stale));
    json_object_set_new(o, "problems", problems);
    tool_json_print(stdout, o);
}

/* The summary for a terminal. */
static void print_summary(int repair, uint64_t remaining, const vyre_cache_verify_result *res)
{
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

    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(repair ? CACHECTL_WRITE : CACHECTL_READ_OR_EMPTY, &cache)))
        return rc;
    verify_ctx x = {cache, g_tool.json ? json_array() : NULL, !g_tool.json && !g_cachectl.quiet,
                    repair};
    cachectl_progress prog;
    cachectl_progress_init(&prog, "verify", "blobs");
    vyre_cache_verify_result res;
    vyre_error err;
    vyre_error_clear(&err);
    int vrc = vyre_cache_verify(cache, repair, &res, on_problem, &x, cachectl_progress_update,
                                &prog, &err);
    cachectl_progress_end(&prog);
    if (vrc) {
        json_decref(x.problems);
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    uint64_t remaining = res.problems - res.repaired;
    int clean = repair ? remaining == 0 : res.problems == 0;

    if (g_tool.json)
        print_json(cache, repair, clean, &res, x.problems);
    else if (!g_cachectl.quiet)
        print_summary(repair, remaining, &res);
    if (!g_tool.json)
        json_decref(x.problems);
    vyre_cache_close(cache);
    return clean ? TOOL_EXIT_OK : TOOL_EXIT_PROBLEMS;
}
