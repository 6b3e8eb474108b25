/*
 * cmd_reindex.c - `vyre-cachectl reindex [--adopt]`: rebuild the index from
 * the blobs (and, with --adopt, take back a cache an earlier vyre made).
 */
#include <inttypes.h>
#include <stdio.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "progress.h"

enum { OPT_ADOPT = CACHECTL_OPT_FIRST_LOCAL };

const tool_opt cachectl_reindex_opts[] = {
    {OPT_ADOPT, 0, "adopt", NULL,
     "take back a cache made by an earlier vyre that lost\n"
     "its index: vyre uses no non-empty directory without\n"
     "its marker (" VYRE_CACHE_MARKER "); --adopt checks that\n"
     "every entry of the directory and of its blobs/ has a\n"
     "name vyre writes, then writes the marker",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl reindex [--adopt] [--json]\n\n"
                 "Rebuild index.sqlite3 from the blob headers alone. A missing or corrupt\n"
                 "index is replaced; hit counts and last-use times survive when the old\n"
                 "index is readable. A file under the index's name that is not vyre's (another\n"
                 "program's database, another user's file) is never deleted: it is kept as\n"
                 "index.sqlite3.foreign-<time>, and reindex says so. Blobs that fail\n"
                 "validation are quarantined. This is the fix for 'corrupt index' errors;\n"
                 "nothing is lost, the blobs are the truth.\n\n");
    cachectl_options_help(out, cachectl_reindex_opts);
    fprintf(out, "\n"
                 "exit status: 0 rebuilt, 2 usage or operational error (missing, unsafe,\n"
                 "             foreign or read-only cache directory)\n");
}

/* Opens the cache for --adopt: as cachectl_open(CACHECTL_WRITE_NOINDEX)
 * does, a missing directory is refused before anything is created. */
static int open_adopt(vyre_cache **out)
{
    vyre_config *cf;
    char root[VYRE_CACHE_PATH_MAX];
    int rc = cachectl_config(&cf, root, sizeof root);
    if (rc)
        return rc;
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = cf;
    oo.flags = VYRE_CACHE_READONLY | VYRE_CACHE_NO_INDEX | VYRE_CACHE_ADOPT;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_cache *probe = NULL;
    rc = vyre_cache_open(root, &oo, &probe, &err);
    vyre_cache_close(probe);
    if (rc)
        return cachectl_fail(&err);
    oo.flags = VYRE_CACHE_NO_HIT_TRACK | VYRE_CACHE_NO_INDEX | VYRE_CACHE_ADOPT;
    if (vyre_cache_open(root, &oo, out, &err))
        return cachectl_fail(&err);
    return TOOL_EXIT_OK;
}

static void print_result(const vyre_cache *cache, const vyre_cache_reindex_result *res, int adopt)
{
    const char *kept = res->index_kept[0] ? cachectl_relpath(cache, res->index_kept) : NULL;
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 2); /* 2: bytes on disk (st_blocks * 512) */
        json_object_set_new(o, "scanned", json_integer((json_int_t)res->scanned));
        json_object_set_new(o, "indexed", json_integer((json_int_t)res->indexed));
        json_object_set_new(o, "bytes", json_integer((json_int_t)res->bytes));
        json_object_set_new(o, "quarantined", json_integer((json_int_t)res->quarantined));
        json_object_set_new(o, "rows_before", json_integer((json_int_t)res->rows_before));
        json_object_set_new(o, "links_removed", json_integer((json_int_t)res->removed));
        json_object_set_new(o, "index_kept", kept ? json_string(kept) : json_null());
        json_object_set_new(o, "adopted", json_boolean(adopt));
        tool_json_print(stdout, o);
        return;
    }
    if (g_cachectl.quiet)
        return;
    char size[32];
    vyre_format_size(res->bytes, size, sizeof size);
    printf("%-22s %" PRIu64 "\n", "Blob files scanned:", res->scanned);
    printf("%-22s %" PRIu64 " (%s)\n", "Indexed:", res->indexed, size);
    printf("%-22s %" PRIu64 "\n", "Quarantined:", res->quarantined);
    printf("%-22s %" PRIu64 "\n", "Rows before:", res->rows_before);
    if (res->removed)
        printf("%-22s %" PRIu64 " (unlinked, never followed)\n",
               "Links/special files:", res->removed);
    if (kept)
        printf("%-22s %s (not vyre's index: kept, not deleted)\n", "Foreign index kept:", kept);
    if (adopt)
        printf("%-22s %s written\n", "Adopted:", VYRE_CACHE_MARKER);
}

int cmd_reindex(int argc, char **argv)
{
    cachectl_parser p;
    int adopt = 0, c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "reindex", cachectl_reindex_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_ADOPT)
            adopt = 1;
    }
    if (optind < argc)
        return tool_usage_error("reindex", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("reindex");
    if (rc)
        return rc;

    /* Without the index: the point is to work when it cannot be opened. */
    vyre_cache *cache = NULL;
    if ((rc = adopt ? open_adopt(&cache) : cachectl_open(CACHECTL_WRITE_NOINDEX, &cache)))
        return rc;
    cachectl_progress prog;
    cachectl_progress_init(&prog, "reindex", "blobs");
    vyre_cache_reindex_result res;
    vyre_error err;
    vyre_error_clear(&err);
    int rrc = vyre_cache_reindex(cache, &res, cachectl_progress_update, &prog, &err);
    cachectl_progress_end(&prog);
    if (rrc) {
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    print_result(cache, &res, adopt);
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
