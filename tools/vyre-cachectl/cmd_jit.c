/*
 * cmd_jit.c - `vyre-cachectl jit`: the CUDA driver's own JIT cache (where
 * PTX the driver compiles is kept): the path and size limit vyre puts in
 * force, how full it is; `jit --clear --yes` empties it.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "cmds.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl jit [--json]\n"
            "       vyre-cachectl jit --clear --yes\n\n"
            "Report on the CUDA driver's JIT cache as vyre programs configure it: the\n"
            "path in force (CUDA_CACHE_PATH, else $XDG_CACHE_HOME/vyre/cuda-jit), the bytes\n"
            "and files it holds, CUDA_CACHE_MAXSIZE in force (at least 1 GiB) and how full\n"
            "the cache is. --cache-dir does not apply: this is the driver's cache.\n\n"
            "  --clear  empty the JIT cache directory (keeping the directory); refused\n"
            "           when it does not look like a driver JIT cache\n"
            "  --yes    required with --clear\n\n"
            "%s\n"
            "exit status: 0 reported or cleared, 2 usage or operational error (bad\n"
            "             CUDA_CACHE_* variable, --clear without --yes, unreadable cache)\n",
            CACHECTL_GLOBAL_HELP);
}

enum { OPT_CLEAR = CACHECTL_OPT_FIRST_LOCAL, OPT_YES };

int cmd_jit(int argc, char **argv)
{
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"clear", no_argument, NULL, OPT_CLEAR},
        {"yes", no_argument, NULL, OPT_YES},
        {NULL, 0, NULL, 0},
    };
    int clear = 0, yes = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        int rc = cachectl_option(c, "jit", opts, argc, argv, usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc != -1)
            return rc;
        if (c == OPT_CLEAR)
            clear = 1;
        else if (c == OPT_YES)
            yes = 1;
        else
            return VYRE_EXIT_ERROR;
    }
    if (optind < argc)
        return vyre_cli_usage_error("jit", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("jit");
    if (rc)
        return rc;
    if (yes && !clear)
        return vyre_cli_usage_error("jit", "use 'vyre-cachectl jit --clear --yes'",
                                    "--yes only goes with --clear");

    vyre_jitcache_info info;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &err))
        return cachectl_fail(&err);
    if (clear && !yes)
        return vyre_cli_usage_error("jit", "run 'vyre-cachectl jit --clear --yes' if you mean it",
                                    "--clear would empty the JIT cache '%s'; refusing without "
                                    "--yes",
                                    info.path);

    if (clear) {
        uint64_t files = 0, bytes = 0;
        if (vyre_jitcache_clear(info.path, &files, &bytes, &err))
            return cachectl_fail(&err);
        if (g_cachectl.json) {
            json_t *o =
                json_pack("{s:i, s:s, s:I, s:I}", "schema_version", 1, "path", info.path,
                          "removed_files", (json_int_t)files, "removed_bytes", (json_int_t)bytes);
            cachectl_json_print(o);
        } else if (!g_cachectl.quiet) {
            char size[32];
            vyre_format_size(bytes, size, sizeof size);
            printf("Removed %" PRIu64 " file%s (%s) from %s\n", files, files == 1 ? "" : "s", size,
                   info.path);
        }
        return VYRE_EXIT_OK;
    }

    vyre_jitcache_usage use;
    if (vyre_jitcache_usage_get(info.path, &use, &err))
        return cachectl_fail(&err);
    /* Without a limit the fill is unknown: null in JSON, never 0. */
    double fill = info.maxsize_bytes ? (double)use.bytes / (double)info.maxsize_bytes : -1;
    if (g_cachectl.json) {
        json_t *o =
            json_pack("{s:i, s:s, s:s, s:b, s:I, s:I, s:I, s:s, s:o}", "schema_version", 1, "path",
                      info.path, "path_source", info.path_from_env ? "CUDA_CACHE_PATH" : "default",
                      "exists", use.exists, "files", (json_int_t)use.files, "bytes",
                      (json_int_t)use.bytes, "max_bytes", (json_int_t)info.maxsize_bytes,
                      "max_bytes_source", info.maxsize_from_env ? "CUDA_CACHE_MAXSIZE" : "default",
                      "fill_ratio", fill >= 0 ? json_real(fill) : json_null());
        cachectl_json_print(o);
    } else if (!g_cachectl.quiet) {
        char size[32], max[32];
        vyre_format_size(use.bytes, size, sizeof size);
        vyre_format_size(info.maxsize_bytes, max, sizeof max);
        printf("%-22s %s (%s)\n", "JIT cache path:", info.path,
               info.path_from_env ? "from CUDA_CACHE_PATH" : "vyre default");
        if (!use.exists)
            printf("%-22s %s\n", "Exists:", "no (created by the first vyre program)");
        printf("%-22s %" PRIu64 "\n", "Files:", use.files);
        printf("%-22s %s\n", "Size on disk:", size);
        printf("%-22s %s (%" PRIu64 " bytes, %s)\n", "CUDA_CACHE_MAXSIZE:", max, info.maxsize_bytes,
               info.maxsize_from_env ? "from the environment" : "vyre default");
        if (fill >= 0)
            printf("%-22s %.1f%%\n", "Fill:", fill * 100.0);
        else
            printf("%-22s %s\n", "Fill:", "-");
    }
    return VYRE_EXIT_OK;
}
