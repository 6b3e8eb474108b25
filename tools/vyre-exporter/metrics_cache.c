/*
 * metrics_cache.c - the pipeline cache families (label dir), and
 * vyre_cache_up and vyre_cache_busy. The cache keeps no remote tier, so there are no remote
 * counters to export.
 */
#include "exporter_internal.h"

void exp_render_cache(exporter *x, expo *e)
{
    if (x->o.no_cache)
        return;
    expo_label dir = {"dir", x->cache_root};
    expo_family(e, "vyre_cache_up", "gauge",
                "1 when the pipeline cache was read, 0 when it is missing or unreadable.");
    expo_sample(e, "vyre_cache_up", &dir, 1, NULL, x->cache_state == 0 ? 1 : 0);
    expo_family(e, "vyre_cache_busy", "gauge",
                "1 when the cache's index was locked by another process, or slow to read, at "
                "this scrape (its figures are left out rather than wait for it).");
    expo_sample(e, "vyre_cache_busy", &dir, 1, NULL, x->cache_busy ? 1 : 0);
    if (x->cache_state != 0)
        return;
    const vyre_cache_stats *s = &x->cache;
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"vyre_cache_entries", "gauge", "Compiled blobs in the pipeline cache."},
        {"vyre_cache_bytes", "gauge",
         "Size of the cache's blobs on disk (st_blocks * 512, as du counts), bytes."},
        {"vyre_cache_hits_total", "counter", "Lookups that hit, over the cache's life."},
        {"vyre_cache_misses_total", "counter", "Lookups that missed, over the cache's life."},
        {"vyre_cache_compile_saved_seconds_total", "counter",
         "Compile time saved by hits (sum over blobs of hits x compile time), seconds."},
        {"vyre_cache_quarantined", "gauge", "Files in quarantine/ (blobs that failed checks)."},
        {"vyre_cache_quarantined_bytes", "gauge",
         "Size of the files in quarantine/ on disk (st_blocks * 512), bytes."},
    };
    const double v[] = {(double)s->entries,
                        (double)s->bytes,
                        (double)s->hits,
                        (double)s->misses,
                        (double)s->compile_ns_saved / 1e9,
                        (double)s->quarantined,
                        (double)s->quarantine_bytes};
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        expo_family(e, fam[f].name, fam[f].type, fam[f].help);
        expo_sample(e, fam[f].name, &dir, 1, NULL, v[f]);
    }
}
