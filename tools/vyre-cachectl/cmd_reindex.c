/*
 * cmd_reindex.c - `vyre-cachectl reindex`: rebuild the index from the blobs.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "cmds.h"
#include "progress.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl reindex [--json]\n\n"
            "Rebuild index.sqlite3 from the blob headers alone. A missing, corrupt or\n"
            "foreign index is replaced; hit counts and last-use times survive when the old\n"
            "index is readable. Blobs that fail validation are quarantined. This is the\n"
            "fix for 'corrupt index' errors; nothing is lost, the blobs are the truth.\n\n"
            "%s\n"
            "exit status: 0 rebuilt, 2 usage or operational error (missing, unsafe or\n"
            "             read-only cache directory)\n",
            CACHECTL_GLOBAL_HELP);
}

int cmd_reindex(int argc, char **argv)
{
    int rc = cachectl_no_args("reindex", argc, argv, usage);
    if (rc != CACHECTL_HANDLED)
        return rc;

    /* Without the index: the point is to work when it cannot be opened. */
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_WRITE_NOINDEX, &cache)))
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
    if (g_cachectl.json) {
        json_t *o = cachectl_json_root(cache, 1);
        json_object_set_new(o, "scanned", json_integer((json_int_t)res.scanned));
        json_object_set_new(o, "indexed", json_integer((json_int_t)res.indexed));
        json_object_set_new(o, "bytes", json_integer((json_int_t)res.bytes));
        json_object_set_new(o, "quarantined", json_integer((json_int_t)res.quarantined));
        json_object_set_new(o, "rows_before", json_integer((json_int_t)res.rows_before));
        json_object_set_new(o, "links_removed", json_integer((json_int_t)res.removed));
        cachectl_json_print(o);
    } else if (!g_cachectl.quiet) {
        char size[32];
        vyre_format_size(res.bytes, size, sizeof size);
        printf("%-22s %" PRIu64 "\n", "Blob files scanned:", res.scanned);
        printf("%-22s %" PRIu64 " (%s)\n", "Indexed:", res.indexed, size);
        printf("%-22s %" PRIu64 "\n", "Quarantined:", res.quarantined);
        printf("%-22s %" PRIu64 "\n", "Rows before:", res.rows_before);
        if (res.removed)
            printf("%-22s %" PRIu64 " (unlinked, never followed)\n",
                   "Links/special files:", res.removed);
    }
    vyre_cache_close(cache);
    return VYRE_EXIT_OK;
}
