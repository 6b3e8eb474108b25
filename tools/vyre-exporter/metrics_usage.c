/*
 * metrics_usage.c - the vyre_cache_usage_ families: each cache of compiled
 * GPU code (label cache: vyre, cuda_jit, triton, inductor) with its size,
 * inodes, limit and its filesystem's free space, as the last round of the
 * measuring thread found them (collect_usage.c).
 *
 * Labels: `cache` only, four values, so the series stay bounded; the path
 * (any length, any bytes) and where it came from are on the one
 * vyre_cache_usage_info series of each cache, as node_exporter puts
 * descriptive text on its *_info families. A cache that could not be
 * measured has vyre_cache_usage_up 0 and no other figure (an unknown is
 * left out, never exported as 0); one whose directory is not created yet
 * is measured: 0 bytes, 0 files, and its filesystem's free space (that of
 * the nearest existing parent, where it will be created).
 */
#include "exporter_internal.h"

#include <math.h>

/* What a family shows of one measured cache; NAN: leave the sample out. */
typedef double (*usage_get)(const tool_usage_fig *f);

static double g_bytes(const tool_usage_fig *f)
{
    return (double)f->u.bytes;
}
static double g_files(const tool_usage_fig *f)
{
    return (double)f->u.files;
}
static double g_exists(const tool_usage_fig *f)
{
    return f->u.exists ? 1 : 0;
}
static double g_limit(const tool_usage_fig *f)
{
    return f->where.limit_bytes ? (double)f->where.limit_bytes : NAN;
}
static double g_mtime(const tool_usage_fig *f)
{
    return f->u.newest_mtime_ns ? (double)f->u.newest_mtime_ns / 1e9 : NAN;
}
static double g_fs_size(const tool_usage_fig *f)
{
    return f->u.fs_valid ? (double)f->u.fs_size_bytes : NAN;
}
static double g_fs_avail(const tool_usage_fig *f)
{
    return f->u.fs_valid ? (double)f->u.fs_avail_bytes : NAN;
}
static double g_fs_files(const tool_usage_fig *f)
{
    return f->u.fs_valid && f->u.fs_files ? (double)f->u.fs_files : NAN;
}
static double g_fs_avail_files(const tool_usage_fig *f)
{
    return f->u.fs_valid && f->u.fs_files ? (double)f->u.fs_avail_files : NAN;
}
static double g_partial(const tool_usage_fig *f)
{
    return f->u.partial ? 1 : 0;
}
static double g_skipped(const tool_usage_fig *f)
{
    return (double)f->u.skipped;
}
static double g_scan_s(const tool_usage_fig *f)
{
    return (double)f->u.scan_ns / 1e9;
}

static const struct {
    const char *name, *help;
    usage_get get;
} g_fam[] = {
    {"vyre_cache_usage_exists",
     "1 when the cache's directory exists, 0 when it is not created yet.", g_exists},
    {"vyre_cache_usage_bytes",
     "Size of the cache on disk (st_blocks * 512 summed, as du counts), bytes; at least this "
     "when the scan was partial.",
     g_bytes},
    {"vyre_cache_usage_files",
     "Entries in the cache, directories and links included: the inodes it takes; at least "
     "this when the scan was partial.",
     g_files},
    {"vyre_cache_usage_limit_bytes",
     "The cache's configured size limit, bytes (vyre: max_size; cuda_jit: CUDA_CACHE_MAXSIZE "
     "or vyre's default); absent when it has none.",
     g_limit},
    {"vyre_cache_usage_newest_mtime_seconds",
     "Modification time of the cache's newest entry, seconds since the Unix epoch.", g_mtime},
    {"vyre_cache_usage_filesystem_size_bytes",
     "Size of the filesystem holding the cache (or the parent it will be created in), bytes.",
     g_fs_size},
    {"vyre_cache_usage_filesystem_avail_bytes",
     "Bytes of that filesystem an unprivileged writer can still use.", g_fs_avail},
    {"vyre_cache_usage_filesystem_files",
     "Inodes of that filesystem; absent when it reports none (btrfs).", g_fs_files},
    {"vyre_cache_usage_filesystem_avail_files",
     "Inodes of that filesystem an unprivileged writer can still use.", g_fs_avail_files},
    {"vyre_cache_usage_scan_partial",
     "1 when the last scan stopped at its entry or time bound: bytes and files are lower "
     "bounds.",
     g_partial},
    {"vyre_cache_usage_scan_skipped",
     "Entries or subtrees the last scan could not read (permissions, too deep).", g_skipped},
    {"vyre_cache_usage_scan_duration_seconds", "Time the last scan of the cache took, seconds.",
     g_scan_s},
};

static void render_up_and_info(exporter *x, expo *e)
{
    const tool_usagesnap_figures *u = &x->usage_fig;
    expo_family(e, "vyre_cache_usage_up", "gauge",
                "1 when the cache's size was measured at the last scan; 0 when it could not be "
                "located or read (the scrape errors of collector cache_usage count them).");
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        expo_label l = {"cache", u->c[i].where.name};
        expo_sample(e, "vyre_cache_usage_up", &l, 1, NULL, u->c[i].state == TOOL_USAGE_OK);
    }
    expo_family(e, "vyre_cache_usage_info", "gauge",
                "Always 1: where each cache is (path) and what set it (from: the variable, "
                "\"default\" or \"caller\" for --cache-dir).");
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        const vyre_usage_cache *w = &u->c[i].where;
        if (!w->located)
            continue;
        expo_label l[3] = {{"cache", w->name}, {"path", w->path}, {"from", w->path_from}};
        expo_sample(e, "vyre_cache_usage_info", l, 3, NULL, 1);
    }
}

void exp_render_usage(exporter *x, expo *e)
{
    if (!(x->o.usage_every_s > 0))
        return;
    const tool_usagesnap_figures *u = &x->usage_fig;
    expo_family(e, "vyre_cache_usage_scans_total", "counter",
                "Rounds of cache size scans since the exporter started (one every "
                "--cache-usage-interval seconds, in a thread of their own).");
    expo_sample_u64(e, "vyre_cache_usage_scans_total", NULL, 0, NULL, u->rounds);
    if (!u->rounds)
        return;
    expo_family(e, "vyre_cache_usage_scan_age_seconds", "gauge",
                "Time since the last round of cache size scans ended, seconds.");
    uint64_t now = tool_mono_ns();
    expo_sample(e, "vyre_cache_usage_scan_age_seconds", NULL, 0, NULL,
                now > u->read_ns ? (double)(now - u->read_ns) / 1e9 : 0);
    render_up_and_info(x, e);
    for (size_t f = 0; f < sizeof g_fam / sizeof g_fam[0]; f++) {
        expo_family(e, g_fam[f].name, "gauge", g_fam[f].help);
        for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
            if (u->c[i].state != TOOL_USAGE_OK)
                continue;
            double v = g_fam[f].get(&u->c[i]);
            if (isnan(v))
                continue;
            expo_label l = {"cache", u->c[i].where.name};
            expo_sample(e, g_fam[f].name, &l, 1, NULL, v);
        }
    }
}
