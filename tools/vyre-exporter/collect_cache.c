/*
 * collect_cache.c - the pipeline cache collector: libcore's stats API on
 * the cache root (--cache.dir, else the usual default resolution:
 * $VYRE_PTX_CACHE_DIR, then $XDG_CACHE_HOME/vyre, ~/.cache/vyre), opened
 * read-only (no lock taken, nothing written, hits not recorded). The stats
 * scan quarantine/ and tmp/, so they are re-read at most every
 * --cache.refresh-interval seconds; scrapes in between export the last
 * figures.
 */
#include "exporter_internal.h"

#include <string.h>

void exp_collect_cache(exporter *x)
{
    if (x->o.no_cache)
        return;
    uint64_t now = exp_mono_ns();
    if (x->cache_state != 3 && (double)(now - x->cache_read_ns) / 1e9 < x->o.cache_refresh_s)
        return;
    x->cache_read_ns = now;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = 0;
    if (x->o.cache_dir)
        exp_copy_str(x->cache_root, sizeof x->cache_root, x->o.cache_dir);
    else
        rc = vyre_cache_default_root(x->cache_root, sizeof x->cache_root, &e);
    vyre_cache *c = NULL;
    vyre_cache_stats st;
    memset(&st, 0, sizeof st);
    if (rc == 0)
        rc = vyre_cache_open(x->cache_root, VYRE_CACHE_READONLY | VYRE_CACHE_NO_HIT_TRACK, &c, &e);
    if (rc == 0)
        rc = vyre_cache_stats_get(c, &st, &e);
    vyre_cache_close(c);
    if (rc == 0) {
        x->cache = st;
        x->cache_state = 0;
    } else if (rc == VYRE_ENOENT) {
        x->cache_state = 1; /* no cache yet: not an error */
    } else {
        x->cache_state = 2;
        x->errors[EXP_C_CACHE]++;
    }
}
