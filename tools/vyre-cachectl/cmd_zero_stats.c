/*
 * cmd_zero_stats.c - `vyre-cachectl zero-stats` (also -z, --zero-stats):
 * resets the hit and miss counters, as ccache -z. The blobs, their last use
 * (and so the LRU order) stay as they are.
 */
#include <stdio.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl zero-stats\n"
                 "       vyre-cachectl -z | --zero-stats\n\n"
                 "Reset the cache's hit and miss counters (stats shows when they were last\n"
                 "zeroed). The blobs and their last use are kept. A cache that does not exist\n"
                 "yet has nothing to reset: nothing is created.\n\n");
    cachectl_options_help(out, cachectl_no_opts);
    fprintf(out, "\n"
                 "exit status: 0 done, 2 usage or operational error (read-only cache, ...)\n");
}

int cmd_zero_stats(int argc, char **argv)
{
    int rc = cachectl_no_args("zero-stats", argc, argv, usage);
    if (rc != CACHECTL_HANDLED)
        return rc;
    /* Nothing to reset in a cache that is not there: say so, create nothing. */
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_READ_OR_EMPTY, &cache)))
        return rc;
    int missing = vyre_cache_is_missing(cache);
    char root[VYRE_CACHE_PATH_MAX];
    snprintf(root, sizeof root, "%s", vyre_cache_root(cache));
    vyre_cache_close(cache);
    cache = NULL;
    if (!missing && (rc = cachectl_open(CACHECTL_WRITE, &cache)))
        return rc;
    vyre_error err;
    vyre_error_clear(&err);
    if (!missing && vyre_cache_zero_stats(cache, &err)) {
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    if (g_tool.json) {
        json_t *o = json_pack("{s:i, s:s, s:b}", "schema_version", 1, "cache_dir", root, "zeroed",
                              !missing);
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        printf("%s\n",
               missing ? "Nothing to reset: the cache does not exist yet." : "Statistics zeroed.");
    }
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
