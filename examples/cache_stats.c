/*
 * cache_stats.c - what vyre's pipeline cache holds, read the way a program
 * of its own would, with nothing but libcore's public API. Needs no GPU.
 *
 *   cache_stats [CACHE_DIR]
 *
 * Opens the cache (CACHE_DIR, else the default root: $VYRE_PTX_CACHE_DIR,
 * else ~/.cache/vyre/ptx-cache) read-only, so that nothing is created or
 * changed: a cache that does not exist reads as empty. Prints its entries
 * and size on disk against the configured limit, its hit rate over its
 * life, the configuration problems the open went past, and the counters
 * every process using the cache recorded for each remote store
 * (vyre_cache_remote_get with VYRE_CACHE_REMOTE_TOTALS).
 *
 * Exit status: 0, or 2 when the cache cannot be opened (message and hint on
 * stderr).
 *
 * Build against an installed libvyrecore:
 *   cc cache_stats.c $(pkg-config --cflags --libs vyrecore) -o cache_stats
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <vyre/vyre.h>

#define PROG "cache_stats"

static int fail(const char *what, int rc, const vyre_error *err)
{
    fprintf(stderr, PROG ": error: %s: %s\n", what,
            err->message[0] ? err->message : vyre_strerror(rc));
    if (err->hint[0])
        fprintf(stderr, "hint: %s\n", err->hint);
    return 2;
}

static void print_remotes(vyre_cache *c)
{
    for (size_t i = 0; i < vyre_cache_remote_count(c); i++) {
        vyre_remote_info info;
        vyre_remote_stats st;
        vyre_error err = {0};
        if (vyre_cache_remote_get(c, i, VYRE_CACHE_REMOTE_TOTALS, &info, &st, &err)) {
            printf("remote %zu: %s\n", i + 1, err.message);
            continue;
        }
        printf("remote %zu: %s%s: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " errors\n",
               i + 1, info.url, info.read_only ? " (read-only)" : "", st.hits, st.misses,
               st.errors);
    }
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        printf("usage: " PROG " [CACHE_DIR]\n");
        return argc > 2 ? 2 : 0;
    }
    vyre_error err = {0};
    vyre_cache_open_opts opts;
    vyre_cache_open_opts_init(&opts);
    opts.flags = VYRE_CACHE_READONLY | VYRE_CACHE_MISSING_EMPTY;
    vyre_cache *c = NULL;
    int rc = vyre_cache_open(argc == 2 ? argv[1] : NULL, &opts, &c, &err);
    if (rc)
        return fail("cannot open the cache", rc, &err);

    vyre_cache_stats st;
    rc = vyre_cache_stats_get(c, &st, &err);
    if (rc) {
        vyre_cache_close(c);
        return fail("cannot read the cache's statistics", rc, &err);
    }
    char size[32], limit[32];
    vyre_format_size(st.bytes, size, sizeof size);
    vyre_format_size(st.max_size, limit, sizeof limit);
    printf("cache %s%s\n", vyre_cache_root(c),
           vyre_cache_is_missing(c) ? " (not created yet)" : "");
    printf("%" PRIu64 " entries, %s on disk (limit %s)\n", st.entries, size,
           st.max_size ? limit : "none");
    uint64_t asked = st.hits + st.misses;
    if (asked)
        printf("%" PRIu64 " hits of %" PRIu64 " lookups (%.1f%%)\n", st.hits, asked,
               100.0 * (double)st.hits / (double)asked);

    size_t kept = 0, total = 0;
    const vyre_config_problem *ps = vyre_config_problems(vyre_cache_config(c), &kept, &total);
    for (size_t i = 0; i < kept; i++)
        printf("configuration %s: %s\n", ps[i].is_error ? "error" : "warning", ps[i].error.message);
    if (total > kept)
        printf("... and %zu more configuration problems\n", total - kept);

    print_remotes(c);
    vyre_cache_close(c);
    return 0;
}
