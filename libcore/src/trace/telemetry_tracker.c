/*
 * telemetry_tracker.c - what a monitor makes of successive reads of the
 * telemetry directory (vyre/telemetry.h, "tracker"): which page is which
 * writer across reads, the counter and histogram deltas and rates between
 * two readings of the same writer, the kernel records new since the last
 * reading (by ring serial) and how many left the ring unseen, and which
 * pages are stale, foreign or invalid. vyre-top and vyre-exporter both
 * read pages only through it, so they cannot diverge again (issue 24: one
 * showed stale pages as live, and counted kernels across an exec'd image
 * as 2^64 - n).
 *
 * State: the previous update's results (sorted by pid, as the list is),
 * which are also what the caller reads; an update builds the next array
 * against them and then replaces them.
 */
#include "vyre/telemetry.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "trace/telemetry_internal.h"

#define DEFAULT_MAX_PAGES 1024

struct vyre_telemetry_tracker {
    char dir[VYRE_TELEMETRY_PATH_MAX]; /* "" : vyre_telemetry_dir() each update */
    size_t max_pages;
    vyre_telemetry_proc *procs; /* the last update's results, by pid */
    size_t nprocs;
    vyre_telemetry_snapshot *page; /* scratch, ~200 KiB */
};

double vyre_telemetry_kernel_scale(uint64_t seen, uint64_t recorded)
{
    if (seen == 0 || recorded <= seen)
        return 1.0;
    return (double)recorded / (double)seen;
}

int vyre_telemetry_tracker_new(const char *dir, size_t max_pages, vyre_telemetry_tracker **out,
                               vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_tracker_new: NULL out");
    *out = NULL;
    vyre_telemetry_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating a telemetry tracker");
    if (dir && vyre__strlcpy(t->dir, dir, sizeof t->dir) >= sizeof t->dir) {
        free(t);
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path",
                          "telemetry directory path too long: '%s'", dir);
    }
    t->max_pages = max_pages ? max_pages : DEFAULT_MAX_PAGES;
    t->page = malloc(sizeof *t->page);
    if (!t->page) {
        free(t);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating a telemetry tracker");
    }
    *out = t;
    return VYRE_OK;
}

static void free_procs(vyre_telemetry_proc *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].kernels);
    free(v);
}

void vyre_telemetry_tracker_free(vyre_telemetry_tracker *t)
{
    if (!t)
        return;
    free_procs(t->procs, t->nprocs);
    free(t->page);
    free(t);
}

/* The previous reading of the writer of page s, or NULL: same pid, start
 * time, page creation and PID namespace, and nothing that only grows went
 * backwards (a new page under the same pid and start time is an exec'd
 * image whose counters start again from zero). */
static const vyre_telemetry_proc *find_prev(const vyre_telemetry_tracker *t,
                                            const vyre_telemetry_snapshot *s)
{
    size_t lo = 0, hi = t->nprocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->procs[mid].pid < s->pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= t->nprocs || t->procs[lo].pid != s->pid)
        return NULL;
    const vyre_telemetry_proc *p = &t->procs[lo];
    if (p->start_time != s->start_time || p->created_ns != s->created_ns ||
        p->foreign != vyre_telemetry_foreign(s))
        return NULL;
    uint64_t newest = s->n_kernels ? s->kernels[s->n_kernels - 1].serial : 0;
    if (s->publish_count < p->publish_count || s->kernels_total < p->kernels_total ||
        newest < p->newest_serial)
        return NULL;
    return p;
}

/* Counters, rates and histograms since the previous reading (since the
 * writer started when there is none). */
static void take_deltas(vyre_telemetry_proc *o, const vyre_telemetry_proc *pv)
{
    o->interval_s = pv ? (double)(o->read_ns - pv->read_ns) / 1e9 : NAN;
    for (int i = 0; i < VYRE_CTR_COUNT; i++) {
        uint64_t now = o->counters.v[i], before = pv ? pv->counters.v[i] : 0;
        o->delta[i] = now >= before ? now - before : 0;
        o->rate[i] =
            pv && now >= before && o->interval_s > 0 ? (double)o->delta[i] / o->interval_s : NAN;
    }
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        const vyre_range_hist *b = &o->counters.ranges[r];
        vyre_range_hist *d = &o->range_delta[r];
        if (!pv || b->count < pv->counters.ranges[r].count) { /* cannot go backwards: all new */
            *d = *b;
            continue;
        }
        const vyre_range_hist *a = &pv->counters.ranges[r];
        d->count = b->count - a->count;
        d->total_ns = b->total_ns >= a->total_ns ? b->total_ns - a->total_ns : 0;
        d->max_ns = b->max_ns;
        for (int k = 0; k < VYRE_HIST_BUCKETS; k++)
            d->buckets[k] = b->buckets[k] >= a->buckets[k] ? b->buckets[k] - a->buckets[k] : 0;
    }
}

/* The ring's records newer than the newest serial an earlier reading of
 * the writer saw (all of them at a first reading), and how many were
 * recorded meanwhile. */
static int take_kernels(vyre_telemetry_proc *o, const vyre_telemetry_snapshot *s,
                        const vyre_telemetry_proc *pv)
{
    uint64_t last_serial = pv ? pv->newest_serial : 0;
    uint32_t from = 0;
    while (from < s->n_kernels && s->kernels[from].serial <= last_serial)
        from++;
    o->n_kernels = s->n_kernels - from;
    o->kernels = NULL;
    if (o->n_kernels) {
        vyre_telemetry_kernel *k = malloc(o->n_kernels * sizeof *k);
        if (!k)
            return VYRE_ENOMEM;
        memcpy(k, &s->kernels[from], o->n_kernels * sizeof *k);
        o->kernels = k;
    }
    o->newest_serial = o->n_kernels ? o->kernels[o->n_kernels - 1].serial : last_serial;
    o->kernel_device = pv ? pv->kernel_device : -1;
    for (uint32_t k = 0; k < o->n_kernels; k++)
        if (o->kernels[k].device >= 0)
            o->kernel_device = o->kernels[k].device;
    o->kernels_new = s->kernels_total - (pv ? pv->kernels_total : 0);
    o->kernels_unseen = o->kernels_new > o->n_kernels ? o->kernels_new - o->n_kernels : 0;
    o->kernel_scale = vyre_telemetry_kernel_scale(o->n_kernels, o->kernels_new);
    return VYRE_OK;
}

/* Fills o from page s read at now_ns, against the previous reading pv (NULL:
 * none). */
static int take_page(vyre_telemetry_proc *o, const vyre_telemetry_snapshot *s,
                     const vyre_telemetry_proc *pv, uint64_t now_ns)
{
    memset(o, 0, sizeof *o);
    o->pid = s->pid;
    o->start_time = s->start_time;
    o->created_ns = s->created_ns;
    o->layout_version = s->layout_version;
    o->foreign = vyre_telemetry_foreign(s);
    memcpy(o->exe, s->exe, sizeof o->exe);
    memcpy(o->cmdline, s->cmdline, sizeof o->cmdline);
    o->publish_count = s->publish_count;
    o->counters = s->counters;
    o->kernels_total = s->kernels_total;
    o->read_ns = now_ns;
    o->first = pv == NULL;
    take_deltas(o, pv);
    return take_kernels(o, s, pv);
}

static void empty_update(vyre_telemetry_update *out)
{
    char dir[VYRE_TELEMETRY_PATH_MAX];
    memcpy(dir, out->dir, sizeof dir);
    memset(out, 0, sizeof *out);
    memcpy(out->dir, dir, sizeof dir);
}

static void forget(vyre_telemetry_tracker *t)
{
    free_procs(t->procs, t->nprocs);
    t->procs = NULL;
    t->nprocs = 0;
}

/* Resolves and lists the directory; on failure the tracker forgets. */
static int list_pages(vyre_telemetry_tracker *t, vyre_telemetry_update *out,
                      vyre_telemetry_entry **ents, size_t *n, vyre_error *err)
{
    int rc = VYRE_OK;
    if (t->dir[0])
        memcpy(out->dir, t->dir, sizeof out->dir);
    else
        rc = vyre_telemetry_dir(out->dir, sizeof out->dir, err);
    if (rc) {
        out->dir[0] = '\0';
    } else {
        rc = vyre__telemetry_list(out->dir, ents, n, err);
    }
    if (rc)
        forget(t);
    return rc;
}

/* Reads entry e into o; returns 1 when o was filled, 0 when the page was
 * only counted (gone, invalid, stale), or a negative code. */
static int read_entry(vyre_telemetry_tracker *t, const vyre_telemetry_entry *e,
                      vyre_telemetry_proc *o, vyre_telemetry_update *out)
{
    vyre_telemetry_snapshot *s = t->page;
    int rc = vyre__telemetry_read(e->path, s, NULL);
    if (rc == VYRE_ENOENT) {
        out->gone++;
        return 0;
    }
    if (rc || s->pid != e->pid) {
        out->invalid++;
        return 0;
    }
    if (vyre_telemetry_stale(s)) {
        out->stale++;
        return 0;
    }
    rc = take_page(o, s, find_prev(t, s), vyre__mono_ns());
    if (rc)
        return rc;
    if (o->foreign)
        out->foreign++;
    else
        out->live++;
    return 1;
}

int vyre_telemetry_tracker_update(vyre_telemetry_tracker *t, vyre_telemetry_update *out,
                                  vyre_error *err)
{
    if (!t || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_tracker_update: NULL argument");
    memset(out, 0, sizeof *out);
    vyre_telemetry_entry *ents = NULL;
    size_t n = 0;
    int rc = list_pages(t, out, &ents, &n, err);
    if (rc)
        return rc;
    if (n > t->max_pages) {
        out->skipped = n - t->max_pages;
        n = t->max_pages;
    }
    vyre_telemetry_proc *next = n ? calloc(n, sizeof *next) : NULL;
    if (n && !next) {
        vyre_free(ents);
        forget(t);
        empty_update(out);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading telemetry pages");
    }
    size_t nnext = 0;
    for (size_t i = 0; i < n; i++) {
        rc = read_entry(t, &ents[i], &next[nnext], out);
        if (rc < 0)
            break;
        nnext += (size_t)rc;
        rc = VYRE_OK;
    }
    vyre_free(ents);
    forget(t);
    if (rc) {
        free_procs(next, nnext);
        empty_update(out);
        return vyre__fail(err, rc, NULL, "out of memory reading telemetry pages");
    }
    t->procs = next;
    t->nprocs = nnext;
    out->procs = next;
    out->nprocs = nnext;
    return VYRE_OK;
}
