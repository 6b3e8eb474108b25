/*
 * collect_cache.c - the pipeline cache collector: libcore's stats API on
 * the cache root (--cache-dir, else libcore's default resolution:
 * $VYRE_PTX_CACHE_DIR, then $XDG_CACHE_HOME/vyre/ptx-cache, then
 * ~/.cache/vyre/ptx-cache), opened
 * read-only (no lock taken, nothing written, hits not recorded). The stats
 * scan quarantine/ and tmp/, so they are re-read at most every
 * --cache.refresh-interval seconds after the previous read ended, failed
 * or not; scrapes in between export the last figures.
 *
 * The read runs in a thread of its own (tools/common/tool_cachesnap.h) and a
 * scrape waits for it TOOL_CACHESNAP_WAIT_MS at most: an index another
 * process holds locked made every scrape take libcore's 10 s busy timeout,
 * Prometheus's default scrape timeout, and lost the GPU and process series
 * with it. Now such a scrape answers at once with vyre_cache_busy 1.
 */
#include "exporter_internal.h"

#include <string.h>

#include "tool_cachesnap.h"

void exp_collect_cache(exporter *x)
{
    if (x->o.no_cache)
        return;
    if (!x->cachesnap)
        x->cachesnap = tool_cachesnap_new(x->o.cache_dir, x->o.cache_refresh_s, 0);
    if (!x->cachesnap) {
        x->cache_state = 2;
        x->cache_busy = 0;
        x->errors[EXP_C_CACHE]++;
        return;
    }
    tool_cachesnap_figures f;
    uint64_t before = x->cache_read_ns;
    tool_cachesnap_get(x->cachesnap, tool_mono_ns(), &f);
    tool_strlcpy(x->cache_root, f.root, sizeof x->cache_root);
    x->cache_read_ns = f.read_ns;
    x->cache_state = f.state;
    x->cache_busy = f.busy;
    if (f.state == 0)
        x->cache = f.stats;
    /* A read that failed counts once, not once per scrape that shows it. */
    if (f.state == 2 && f.read_ns && f.read_ns != before)
        x->errors[EXP_C_CACHE]++;
}

void exp_cache_free(exporter *x)
{
    tool_cachesnap_free(x->cachesnap);
    x->cachesnap = NULL;
}
