/*
 * cmd_clear.c - `vyre-cachectl clear --yes`: remove every blob and the index
 * rows.
 */
#include <inttypes.h>
#include <stdio.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl clear --yes [--json]\n\n"
            "Remove every blob, every index row, quarantine/ and tmp/. The next run\n"
            "compiles everything again. Only files vyre wrote are removed: anything else\n"
            "found there stays, and is counted as left. The driver's JIT cache is not\n"
            "touched (see 'vyre-cachectl jit --clear').\n\n"
            "  --yes  required: clear refuses to run without it\n\n"
            "%s\n"
            "exit status: 0 cleared, 2 usage or operational error (no --yes, missing,\n"
            "             unsafe or read-only cache directory)\n",
            CACHECTL_GLOBAL_HELP);
}

enum { OPT_YES = CACHECTL_OPT_FIRST_LOCAL };

int cmd_clear(int argc, char **argv)
{
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"yes", no_argument, NULL, OPT_YES},
        {NULL, 0, NULL, 0},
    };
    int yes = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        int rc = cachectl_option(c, "clear", opts, argc, argv, usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc != -1)
            return rc;
        if (c != OPT_YES)
            return TOOL_EXIT_ERROR;
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
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 2); /* 2: bytes on disk (st_blocks * 512) */
        json_object_set_new(o, "removed", json_integer((json_int_t)r.removed));
        json_object_set_new(o, "removed_bytes", json_integer((json_int_t)r.removed_bytes));
        json_object_set_new(o, "left", json_integer((json_int_t)r.left));
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        char size[32];
        vyre_format_size(r.removed_bytes, size, sizeof size);
        printf("Removed %" PRIu64 " blob%s (%s) from %s\n", r.removed, r.removed == 1 ? "" : "s",
               size, vyre_cache_root(cache));
        if (r.left)
            printf("Left %" PRIu64 " entr%s vyre did not write (see 'vyre-cachectl verify').\n",
                   r.left, r.left == 1 ? "y" : "ies");
    }
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
