/*
 * cmd_clear.c - `vyre-cachectl clear --yes`: remove every blob and the index
 * rows.
 */
#include <stdio.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "tally.h"

enum { OPT_YES = CACHECTL_OPT_FIRST_LOCAL };

const tool_opt cachectl_clear_opts[] = {
    {OPT_YES, 0, "yes", NULL, "required: clear refuses to run without it", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl clear --yes [--json]\n\n"
                 "Remove every blob, every index row, quarantine/ and tmp/. The next run\n"
                 "compiles everything again. Only files vyre wrote are removed: anything else\n"
                 "found there stays, and is counted as left. The driver's JIT cache is not\n"
                 "touched (see 'vyre-cachectl jit --clear').\n\n");
    cachectl_options_help(out, cachectl_clear_opts);
    fprintf(out, "\n"
                 "exit status: 0 cleared, 2 usage or operational error (no --yes, missing,\n"
                 "             unsafe or read-only cache directory)\n");
}

/* What clear says, in tally.c's words. */
static const cachectl_line g_summary[] = {
    {-1, "Removed {removed} {noun removed} ({removed_bytes}) from {dir}"},
    {TALLY_FOREIGN, "Left {foreign} {entry/entries foreign} vyre did not write (see 'vyre-cachectl "
                    "verify')."},
    {0, NULL},
};
static const cachectl_jfield g_fields[] = {
    {"removed", TALLY_REMOVED},
    {"removed_bytes", TALLY_REMOVED_BYTES},
    {"left", TALLY_FOREIGN},
    {NULL, 0},
};
static const cachectl_kind g_vyre_clear = {"blob", "blobs", NULL, g_summary, g_fields};

int cmd_clear(int argc, char **argv)
{
    cachectl_parser p;
    int yes = 0, c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "clear", cachectl_clear_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_YES)
            yes = 1;
    }
    if (optind < argc)
        return tool_usage_error("clear", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("clear");
    if (rc)
        return rc;

    vyre_error err;
    vyre_error_clear(&err);
    if (!yes) {
        /* Refuse before touching anything; name the directory it would be. */
        char root[VYRE_CACHE_PATH_MAX];
        if (g_cachectl.cache_dir)
            snprintf(root, sizeof root, "%s", g_cachectl.cache_dir);
        else if (vyre_cache_default_root(root, sizeof root, &err))
            return cachectl_fail(&err);
        return tool_usage_error("clear", "run 'vyre-cachectl clear --yes' if you mean it",
                                "clear would remove every blob in '%s'; refusing without --yes",
                                root);
    }
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_WRITE, &cache)))
        return rc;
    vyre_cache_clear_result r;
    if (vyre_cache_clear(cache, &r, &err)) {
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    cachectl_tally t = {.dir = vyre_cache_root(cache)};
    t.v[TALLY_REMOVED] = r.removed;
    t.v[TALLY_REMOVED_BYTES] = r.removed_bytes;
    t.v[TALLY_FOREIGN] = r.left;
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 2); /* 2: bytes on disk (st_blocks * 512) */
        cachectl_tally_json(&g_vyre_clear, &t, o);
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet)
        cachectl_tally_print(&g_vyre_clear, &t);
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
