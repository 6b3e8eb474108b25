/*
 * collect.c - see collect.h. Telemetry pages are read through libcore's
 * tracker (vyre_telemetry_tracker_*, as vyre-exporter reads them): it keeps,
 * per process, the previous reading, so every rate is the difference of two
 * real readings over the time between them; this file only maps its
 * results to rows. The host's CPU time is followed here (host_prev).
 */
#include "collect.h"
#include "tool_cachesnap.h"
#include "tool_cli.h"
#include "tool_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What the previous collection saw of one process's host CPU time. */
typedef struct host_prev {
    int32_t pid;
    uint64_t start_ticks;
    uint64_t ticks; /* utime + stime */
    uint64_t mono_ns;
} host_prev;

struct top_collector {
    top_collect_opts opts;
    vyre_gpu_monitor *gpu;
    int gpu_rc;
    char gpu_msg[TOP_MSG_MAX];
    char gpu_hint[TOP_MSG_MAX];
    top_gpu_hist hist[VYRE_GPU_MAX];
    host_prev *hprev; /* sorted by pid */
    size_t nhprev;
    long hz;                         /* clock ticks per second */
    vyre_proc_reader *procfs;        /* /proc, with its cache of user names */
    vyre_telemetry_tracker *tracker; /* the telemetry pages across collections */
    /* cache figures, re-read in a thread every cache_every_s (cachesnap.h) */
    tool_cachesnap *cachesnap;
    tool_cachesnap_figures cache_fig;
    tool_usagesnap *usage; /* the caches' sizes, measured by its own thread */
    uint64_t reap_ns;
    uint64_t last_ns;
    vyre_host_info host_prev; /* the host's figures of the previous collection */
    top_proc_keep_set keep;   /* per process: GPU history, environment (prochist.h) */
};

_Static_assert(TOP_PROC_HIST_UNKNOWN == TOP_HIST_UNKNOWN, "one 'unknown' for every history");

/* ---- pure helpers ------------------------------------------------------ */

void top_gpu_hist_push(top_gpu_hist *h, uint8_t util, uint8_t mem, uint8_t power)
{
    h->util[h->head] = util;
    h->mem[h->head] = mem;
    h->power[h->head] = power;
    h->head = (h->head + 1) % TOP_GPU_HIST;
    if (h->len < TOP_GPU_HIST)
        h->len++;
}

static uint8_t hist_at(const top_gpu_hist *h, const uint8_t *ring, unsigned i)
{
    if (i >= h->len)
        return TOP_HIST_UNKNOWN;
    unsigned start = (h->head + TOP_GPU_HIST - h->len) % TOP_GPU_HIST;
    return ring[(start + i) % TOP_GPU_HIST];
}

uint8_t top_gpu_hist_util(const top_gpu_hist *h, unsigned i)
{
    return hist_at(h, h->util, i);
}

uint8_t top_gpu_hist_mem(const top_gpu_hist *h, unsigned i)
{
    return hist_at(h, h->mem, i);
}

uint8_t top_gpu_hist_power(const top_gpu_hist *h, unsigned i)
{
    return hist_at(h, h->power, i);
}

/* Most processes use few of the ranges: an empty histogram (all zero, one
 * memcmp) adds nothing and is skipped. Summing every bucket of every range
 * of every process was 83% of a frame's time in the view tests. */
static void hist_add(vyre_range_hist *dst, const vyre_range_hist *src)
{
    static const vyre_range_hist empty;
    if (memcmp(src, &empty, sizeof empty) == 0)
        return;
    dst->count += src->count;
    dst->total_ns += src->total_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
        dst->buckets[b] += src->buckets[b];
}

size_t top_aggregate_ranges(const top_snapshot *s, const unsigned char *keep, top_range *out)
{
    vyre_range_hist life[VYRE_RANGE_COUNT], win[VYRE_RANGE_COUNT];
    memset(life, 0, sizeof life);
    memset(win, 0, sizeof win);
    double dt = s->interval_s;
    int any_delta = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        if ((keep && !keep[i]) || !s->procs[i].life)
            continue; /* a row without a page has no ranges: nothing to add */
        const top_proc *p = &s->procs[i];
        for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
            hist_add(&life[r], &p->life[r]);
            if (p->has_delta && p->delta)
                hist_add(&win[r], &p->delta[r]);
        }
        any_delta |= p->has_delta;
    }
    size_t used = 0;
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        top_range *o = &out[r];
        memset(o, 0, sizeof *o);
        o->id = r;
        o->name = vyre_nvtx_range((vyre_range_id)r)->name;
        o->count = life[r].count;
        o->max_ns = life[r].max_ns;
        o->win_count = win[r].count;
        o->count_s = any_delta && dt > 0 ? (double)win[r].count / dt : NAN;
        if (win[r].count > 0) {
            /* The window's max is not in the histogram: cap the quantiles
             * by the lifetime max, which bounds it. */
            win[r].max_ns = life[r].max_ns;
            o->window = 1;
            o->p50_ns = vyre_range_hist_quantile(&win[r], 0.50);
            o->p90_ns = vyre_range_hist_quantile(&win[r], 0.90);
            o->p99_ns = vyre_range_hist_quantile(&win[r], 0.99);
        } else {
            o->p50_ns = vyre_range_hist_quantile(&life[r], 0.50);
            o->p90_ns = vyre_range_hist_quantile(&life[r], 0.90);
            o->p99_ns = vyre_range_hist_quantile(&life[r], 0.99);
        }
        if (o->count)
            used++;
    }
    return used;
}

size_t top_aggregate_kernels(const top_snapshot *s, const unsigned char *keep, top_kernel **out,
                             int *sampled)
{
    *out = NULL;
    if (sampled)
        *sampled = 0;
    size_t cap = 0, n = 0;
    top_kernel *v = NULL;
    /* Calls and time each kept record stands for, per row of v. */
    double *w_calls = NULL, *w_ns = NULL;
    double total_ns = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        if (keep && !keep[i])
            continue;
        const top_proc *p = &s->procs[i];
        double f = vyre_telemetry_kernel_scale(p->kernels_seen, p->kernels_new);
        if (sampled && p->kernels_seen < p->kernels_new)
            *sampled = 1;
        for (size_t k = 0; k < p->nkernels; k++) {
            const top_kernel *src = &p->kernels[k];
            size_t j = 0;
            while (j < n && strcmp(v[j].name, src->name) != 0)
                j++;
            if (j == n) {
                if (n == cap) {
                    size_t ncap = cap ? cap * 2 : 32;
                    top_kernel *nv = realloc(v, ncap * sizeof *nv);
                    if (nv)
                        v = nv;
                    double *nc = nv ? realloc(w_calls, ncap * sizeof *nc) : NULL;
                    if (nc)
                        w_calls = nc;
                    double *nn = nc ? realloc(w_ns, ncap * sizeof *nn) : NULL;
                    if (nn)
                        w_ns = nn;
                    if (!nn)
                        goto done; /* keep what we have */
                    cap = ncap;
                }
                v[n] = *src;
                v[n].estimated = 0;
                w_calls[n] = w_ns[n] = 0;
                n++;
            } else {
                v[j].calls += src->calls;
                v[j].total_ns += src->total_ns;
                if (src->max_ns > v[j].max_ns)
                    v[j].max_ns = src->max_ns;
            }
            w_calls[j] += (double)src->calls * f;
            w_ns[j] += (double)src->total_ns * f;
            if (f > 1.0)
                v[j].estimated = 1;
            total_ns += (double)src->total_ns * f;
        }
    }
done:
    for (size_t j = 0; j < n; j++) {
        v[j].calls_s = s->interval_s > 0 ? w_calls[j] / s->interval_s : NAN;
        v[j].share_pct = total_ns > 0 ? 100.0 * w_ns[j] / total_ns : NAN;
        v[j].mean_ns = v[j].calls ? (double)v[j].total_ns / (double)v[j].calls : NAN;
    }
    free(w_calls);
    free(w_ns);
    *out = v;
    return n;
}

/* ---- collector --------------------------------------------------------- */

int top_collector_new(const top_collect_opts *opts, top_collector **out)
{
    *out = NULL;
    top_collector *c = calloc(1, sizeof *c);
    if (!c)
        return VYRE_ENOMEM;
    if (opts)
        c->opts = *opts;
    int rc = vyre_telemetry_tracker_new(c->opts.telemetry_dir, TOP_MAX_PROCS, &c->tracker, NULL);
    if (rc == VYRE_OK)
        rc = vyre_proc_reader_new(c->opts.proc_root, &c->procfs, NULL);
    if (rc != VYRE_OK) {
        vyre_telemetry_tracker_free(c->tracker);
        free(c);
        return rc;
    }
    if (!(c->opts.cache_every_s > 0))
        c->opts.cache_every_s = 5;
    if (c->opts.reap_every_s == 0)
        c->opts.reap_every_s = 10;
    if (!(c->opts.usage_every_s >= 0))
        c->opts.usage_every_s = 0;
    if (c->opts.usage_every_s > 0) /* started now: the first round runs while NVML opens */
        c->usage = tool_usagesnap_new(c->opts.cache_root, c->opts.usage_every_s, 0, 0);
    c->hz = sysconf(_SC_CLK_TCK);
    if (c->opts.no_gpu) {
        c->gpu_rc = VYRE_ENOTSUP;
        snprintf(c->gpu_msg, sizeof c->gpu_msg, "GPU monitoring turned off");
    } else {
        vyre_error e;
        vyre_error_clear(&e);
        c->gpu_rc = vyre_gpu_monitor_open(&c->gpu, &e);
        if (c->gpu_rc) {
            tool_strlcpy(c->gpu_msg, e.message[0] ? e.message : vyre_strerror(c->gpu_rc),
                         sizeof c->gpu_msg);
            tool_strlcpy(c->gpu_hint, e.hint, sizeof c->gpu_hint);
        }
    }
    *out = c;
    return 0;
}

void top_collector_free(top_collector *c)
{
    if (!c)
        return;
    vyre_gpu_monitor_close(c->gpu);
    tool_cachesnap_free(c->cachesnap);
    tool_usagesnap_free(c->usage);
    vyre_telemetry_tracker_free(c->tracker);
    vyre_proc_reader_free(c->procfs);
    top_proc_keep_set_release(&c->keep);
    free(c->hprev);
    free(c);
}

int top_proc_ranges_alloc(top_proc *p)
{
    vyre_range_hist *h = calloc(2 * VYRE_RANGE_COUNT, sizeof *h);
    if (!h)
        return -1;
    p->life = h;
    p->delta = h + VYRE_RANGE_COUNT;
    return 0;
}

void top_snapshot_release(top_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nprocs; i++) {
        free(s->procs[i].kernels);
        free(s->procs[i].hist);
        free(s->procs[i].life); /* delta is in the same block */
    }
    free(s->procs);
    s->procs = NULL;
    s->nprocs = 0;
    free(s->anc);
    s->anc = NULL;
    s->nanc = 0;
}

static uint8_t pct8(double v)
{
    if (!(v >= 0))
        return TOP_HIST_UNKNOWN;
    return (uint8_t)(v > 100 ? 100 : v + 0.5);
}

static void collect_gpus(top_collector *c, top_snapshot *s)
{
    if (!c->gpu) {
        s->gpu_ok = 0;
        tool_strlcpy(s->gpu_msg, c->gpu_msg, sizeof s->gpu_msg);
        tool_strlcpy(s->gpu_hint, c->gpu_hint, sizeof s->gpu_hint);
        return;
    }
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_gpu_monitor_sample(c->gpu, &s->gpu, &e);
    if (rc) {
        s->gpu_ok = 0;
        tool_strlcpy(s->gpu_msg, e.message[0] ? e.message : vyre_strerror(rc), sizeof s->gpu_msg);
        tool_strlcpy(s->gpu_hint, e.hint, sizeof s->gpu_hint);
        return;
    }
    s->gpu_ok = 1;
    for (unsigned i = 0; i < s->gpu.ngpus && i < VYRE_GPU_MAX; i++) {
        const vyre_gpu_info *g = &s->gpu.gpus[i];
        double util = vyre_gpu_field_valid(g, VYRE_GPU_F_UTIL) ? g->util_gpu_pct : NAN;
        double mem = vyre_gpu_field_valid(g, VYRE_GPU_F_MEMORY) && g->mem_total_bytes
                         ? 100.0 * (double)g->mem_used_bytes / (double)g->mem_total_bytes
                         : NAN;
        double pw =
            vyre_gpu_field_valid(g, VYRE_GPU_F_POWER | VYRE_GPU_F_POWER_LIMIT) && g->power_limit_mw
                ? 100.0 * (double)g->power_mw / (double)g->power_limit_mw
                : NAN;
        top_gpu_hist_push(&c->hist[i], pct8(util), pct8(mem), pct8(pw));
    }
    memcpy(s->gpu_hist, c->hist, sizeof s->gpu_hist);
}

_Static_assert((int)TOP_CACHE_OK == (int)TOOL_CACHESNAP_OK &&
                   (int)TOP_CACHE_MISSING == (int)TOOL_CACHESNAP_MISSING &&
                   (int)TOP_CACHE_ERROR == (int)TOOL_CACHESNAP_ERROR &&
                   (int)TOP_CACHE_PENDING == (int)TOOL_CACHESNAP_PENDING,
               "vyre-top shows cachesnap's states as they are");

/* The cache panel's figures: never waits on the cache for more than
 * TOOL_CACHESNAP_WAIT_MS, and a locked index shows as "cache busy". */
static void collect_cache(top_collector *c, top_snapshot *s)
{
    uint64_t now = s->mono_ns;
    tool_cachesnap_figures *f = &c->cache_fig;
    if (!c->cachesnap)
        c->cachesnap = tool_cachesnap_new(c->opts.cache_root, c->opts.cache_every_s, 1);
    if (c->cachesnap) {
        tool_cachesnap_get(c->cachesnap, now, f);
    } else {
        memset(f, 0, sizeof *f);
        f->state = TOOL_CACHESNAP_ERROR;
        tool_strlcpy(f->msg, "out of memory", sizeof f->msg);
    }
    s->cache_state = f->state;
    tool_strlcpy(s->cache_msg, f->msg, sizeof s->cache_msg);
    tool_strlcpy(s->cache_root, f->root, sizeof s->cache_root);
    s->cache = f->stats;
    s->cache_age_s = f->read_ns && now > f->read_ns ? (double)(now - f->read_ns) / 1e9 : 0;
    s->nremotes = 0;
    for (size_t i = 0; f->state == TOOL_CACHESNAP_OK && i < f->nremotes && i < VYRE_REMOTE_MAX;
         i++) {
        top_remote *r = &s->remotes[s->nremotes++];
        tool_strlcpy(r->url, f->remotes[i].url, sizeof r->url);
        r->read_only = f->remotes[i].read_only;
        r->st = f->remotes[i].st;
    }
}

/* The caches' sizes: a copy of the measuring thread's last round. The
 * first collection waits for the first round USAGE_FIRST_WAIT_MS at most
 * (small caches take milliseconds), later ones never wait. */
#define USAGE_FIRST_WAIT_MS 500u

static void collect_usage(top_collector *c, top_snapshot *s)
{
    s->usage_age_s = NAN;
    if (!(c->opts.usage_every_s > 0))
        return;
    s->usage_on = 1;
    s->usage_every_s = c->opts.usage_every_s;
    if (!c->usage)
        return; /* no thread: "not measured yet", as before a first round */
    tool_usagesnap_get(c->usage, &s->usage, isnan(s->interval_s) ? USAGE_FIRST_WAIT_MS : 0);
    if (s->usage.rounds && s->mono_ns >= s->usage.read_ns)
        s->usage_age_s = (double)(s->mono_ns - s->usage.read_ns) / 1e9;
    else if (s->usage.rounds)
        s->usage_age_s = 0;
}

/* Groups the kernels recorded since the previous collection by name. */
static void proc_kernels(top_proc *p, const vyre_telemetry_proc *tp)
{
    size_t cap = 0;
    for (uint32_t k = 0; k < tp->n_kernels; k++) {
        const vyre_telemetry_kernel *kr = &tp->kernels[k];
        p->kernels_seen++;
        size_t j = 0;
        while (j < p->nkernels && strcmp(p->kernels[j].name, kr->name) != 0)
            j++;
        if (j == p->nkernels) {
            if (p->nkernels == cap) {
                cap = cap ? cap * 2 : 8;
                top_kernel *nv = realloc(p->kernels, cap * sizeof *nv);
                if (!nv)
                    return;
                p->kernels = nv;
            }
            top_kernel *nk = &p->kernels[p->nkernels++];
            memset(nk, 0, sizeof *nk);
            memcpy(nk->name, kr->name, sizeof nk->name);
        }
        top_kernel *t = &p->kernels[j];
        t->calls++;
        t->total_ns += kr->duration_ns;
        if (kr->duration_ns > t->max_ns)
            t->max_ns = kr->duration_ns;
        memcpy(t->grid, kr->grid, sizeof t->grid);
        memcpy(t->block, kr->block, sizeof t->block);
        t->device = kr->device;
    }
}

/* One row from the tracker's reading of a page. Its first reading has no
 * interval: rates stay unknown and its kernels (since the process started)
 * are not this interval's. */
static void take_proc(top_proc *p, const vyre_telemetry_proc *tp)
{
    p->pid = tp->pid;
    p->telemetry = 1;
    p->layout_version = tp->layout_version;
    p->foreign = tp->foreign;
    p->device = -1;
    tool_strlcpy(p->name, tp->exe, sizeof p->name);
    tool_strlcpy(p->cmdline, tp->cmdline, sizeof p->cmdline);
    p->published = tp->publish_count > 0;
    const uint64_t *v = tp->counters.v;
    p->launches = v[VYRE_CTR_LAUNCHES];
    p->graph_launches = v[VYRE_CTR_GRAPH_LAUNCHES];
    p->dispatches = v[VYRE_CTR_DISPATCHES];
    p->h2d_bytes = v[VYRE_CTR_H2D_BYTES];
    p->d2h_bytes = v[VYRE_CTR_D2H_BYTES];
    p->d2d_bytes = v[VYRE_CTR_D2D_BYTES];
    p->kernels_total = tp->kernels_total;
    uint64_t lookups = v[VYRE_CTR_CACHE_HITS] + v[VYRE_CTR_CACHE_MISSES];
    p->cache_hit_pct = lookups ? 100.0 * (double)v[VYRE_CTR_CACHE_HITS] / (double)lookups : NAN;
    p->compile_saved_s = p->published ? (double)v[VYRE_CTR_COMPILE_NS_SAVED] / 1e9 : NAN;
    if (top_proc_ranges_alloc(p) == 0) /* out of memory: no ranges, the rest shown */
        memcpy(p->life, tp->counters.ranges, VYRE_RANGE_COUNT * sizeof *p->life);
    const double *r = tp->rate; /* NAN on a first reading */
    p->launches_s = r[VYRE_CTR_LAUNCHES];
    p->graphs_s = r[VYRE_CTR_GRAPH_LAUNCHES];
    p->dispatches_s = r[VYRE_CTR_DISPATCHES];
    p->h2d_mb_s = r[VYRE_CTR_H2D_BYTES] / 1e6;
    p->d2h_mb_s = r[VYRE_CTR_D2H_BYTES] / 1e6;
    p->d2d_mb_s = r[VYRE_CTR_D2D_BYTES] / 1e6;
    if (!tp->first) {
        p->has_delta = 1;
        if (p->delta)
            memcpy(p->delta, tp->range_delta, VYRE_RANGE_COUNT * sizeof *p->delta);
        p->kernels_new = tp->kernels_new;
        proc_kernels(p, tp);
    }
}

/* A row for a process NVML lists that publishes no telemetry page (a
 * PyTorch job, a CUDA program without the injection library): no vyre
 * figures, all unknown. */
static void blank_proc(top_proc *p, int32_t pid)
{
    p->pid = pid;
    p->device = -1;
    p->launches_s = p->graphs_s = p->dispatches_s = NAN;
    p->h2d_mb_s = p->d2h_mb_s = p->d2d_mb_s = NAN;
    p->cache_hit_pct = p->compile_saved_s = NAN;
}

/* One row of libcore's join: its page's figures, or none, and NVML's view
 * (its GPU, its GPU memory summed over GPUs, its SM utilisation on the
 * busiest, and the same per GPU for the per-GPU rows). */
static void take_row(top_proc *p, const vyre_gpu_proc_row *r, const vyre_gpu_snapshot *gpus)
{
    if (r->page)
        take_proc(p, r->page);
    else
        blank_proc(p, r->pid);
    p->device = r->device;
    p->gpu_mem_valid = r->mem_valid;
    p->gpu_mem_bytes = r->mem_bytes;
    p->sm_util_pct = r->util_valid ? (double)r->sm_util_pct : NAN;
    size_t ng = r->foreign ? 0 : vyre_gpu_join_devices(gpus, r->pid, p->gpus, VYRE_GPU_MAX);
    p->ngpus = ng < VYRE_GPU_MAX ? (unsigned)ng : VYRE_GPU_MAX;
}

/* The rows of libcore's join of the pages (npages of them; none when the
 * directory could not be read) with NVML's processes. */
static void join_rows(top_snapshot *s, const vyre_telemetry_proc *pages, size_t npages)
{
    vyre_gpu_proc_row *rows = NULL;
    size_t n = 0;
    int rc =
        vyre_gpu_join(s->gpu_ok ? &s->gpu : NULL, pages, npages, TOP_MAX_PROCS, &rows, &n, NULL);
    s->procs = rc == VYRE_OK && n ? calloc(n, sizeof *s->procs) : NULL;
    if (rc != VYRE_OK || (n && !s->procs)) {
        snprintf(s->tel_msg, sizeof s->tel_msg, "out of memory");
        s->tel_ok = 0;
        vyre_free(rows);
        return;
    }
    for (size_t i = 0; i < n; i++)
        take_row(&s->procs[s->nprocs++], &rows[i], s->gpu_ok ? &s->gpu : NULL);
    vyre_free(rows);
}

/* The process rows: every live or foreign telemetry page (the tracker
 * leaves stale and invalid pages out and counts them) and every process
 * NVML lists, joined by libcore (vyre_gpu_join, as the exporter joins
 * them), by pid. NVML's processes are rows even when the telemetry
 * directory cannot be read (tel_msg says why). */
static void collect_procs(top_collector *c, top_snapshot *s)
{
    vyre_error e;
    vyre_error_clear(&e);
    vyre_telemetry_update u;
    int rc = vyre_telemetry_tracker_update(c->tracker, &u, &e);
    tool_strlcpy(s->tel_dir, u.dir, sizeof s->tel_dir);
    if (rc) {
        tool_error_line(s->tel_msg, sizeof s->tel_msg, rc, &e);
        join_rows(s, NULL, 0);
        return;
    }
    if (c->opts.reap_every_s > 0 &&
        (c->reap_ns == 0 || (double)(s->mono_ns - c->reap_ns) / 1e9 >= c->opts.reap_every_s)) {
        c->reap_ns = s->mono_ns;
        vyre_telemetry_reap(u.dir, NULL, NULL); /* only dead processes', never foreign pages */
    }
    s->tel_ok = 1;
    s->unreadable = u.invalid;
    s->stale = u.stale;
    join_rows(s, u.procs, u.nprocs);
}

static int cmp_hprev(const void *a, const void *b)
{
    const host_prev *p = a, *q = b;
    return (p->pid > q->pid) - (p->pid < q->pid);
}

/* The host's view of every row: /proc figures, CPU% against the previous
 * collection's CPU time of the same process (same pid and start time), and
 * for rows without a telemetry page their name and command line. */
static void collect_host(top_collector *c, top_snapshot *s)
{
    host_prev *next = s->nprocs ? calloc(s->nprocs, sizeof *next) : NULL;
    size_t nnext = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        top_proc *p = &s->procs[i];
        p->cpu_pct = NAN;
        p->start_unix = NAN;
        if (p->foreign)
            continue; /* /proc/<pid> here is some other process, or none */
        if (vyre_proc_read(c->procfs, p->pid, &p->host, NULL) != VYRE_OK) {
            if (!p->telemetry)
                tool_strlcpy(p->name, "-", sizeof p->name);
            continue;
        }
        uint64_t now = tool_mono_ns();
        uint64_t ticks = p->host.st.utime_ticks + p->host.st.stime_ticks;
        p->start_unix = vyre_proc_start_unix(c->procfs, p->host.st.start_ticks);
        if (!p->telemetry) /* its command line: collect_keep */
            tool_strlcpy(p->name, p->host.st.comm, sizeof p->name);
        host_prev key = {.pid = p->pid};
        const host_prev *hp =
            c->nhprev ? bsearch(&key, c->hprev, c->nhprev, sizeof key, cmp_hprev) : NULL;
        if (hp && hp->start_ticks == p->host.st.start_ticks)
            p->cpu_pct =
                vyre_proc_cpu_pct(hp->ticks, ticks, c->hz, (double)(now - hp->mono_ns) / 1e9);
        if (next)
            next[nnext++] = (host_prev){p->pid, p->host.st.start_ticks, ticks, now};
    }
    free(c->hprev);
    c->hprev = next; /* in pid order: s->procs is sorted */
    c->nhprev = nnext;
}

_Static_assert(TOP_PROC_CMDLINE_MAX == VYRE_TELEMETRY_CMDLINE_MAX, "one command-line size");

/* A row's parent (the tree view) and, without a page, its command line:
 * read when due (top_proc_keep_due), else as last read. With 200 processes
 * these two reads were a quarter of a refresh's CPU time (perf_top_gpus). */
static void reread(top_collector *c, top_proc *p, top_proc_keep *e, int due)
{
    if (!p->host.stat_valid)
        return; /* /proc has it not (exited, or not ours to read) */
    if (due || !e->have_ppid)
        e->have_ppid = vyre_proc_read_ppid(c->procfs, p->pid, &e->ppid) == VYRE_OK;
    p->ppid = e->have_ppid ? e->ppid : 0;
    if (p->telemetry)
        return; /* its page has its command line */
    if (due || !e->have_cmdline) {
        vyre_proc_read_cmdline(c->procfs, p->pid, e->cmdline, sizeof e->cmdline);
        e->have_cmdline = 1;
    }
    tool_strlcpy(p->cmdline, e->cmdline, sizeof p->cmdline);
}

/* What is kept of each process across collections (issue 37, the detail
 * view): its memory and SM% history per GPU, its CUDA_VISIBLE_DEVICES
 * (read from environ once, when it first appears). Processes of another
 * PID namespace have neither (their pid is not ours). */
static void collect_keep(top_collector *c, top_snapshot *s)
{
    top_proc_sample *smp = s->nprocs ? calloc(s->nprocs, sizeof *smp) : NULL;
    size_t n = 0;
    for (size_t i = 0; smp && i < s->nprocs; i++) {
        const top_proc *p = &s->procs[i];
        if (!p->foreign)
            smp[n++] = (top_proc_sample){p->pid, p->host.stat_valid ? p->host.st.start_ticks : 0,
                                         p->gpus, p->ngpus};
    }
    if ((s->nprocs && !smp) ||
        top_proc_keep_update(&c->keep, smp, n, s->gpu_ok ? &s->gpu : NULL) != 0) {
        free(smp);
        return; /* out of memory: no history this time */
    }
    free(smp);
    for (size_t i = 0; i < s->nprocs; i++) {
        top_proc *p = &s->procs[i];
        top_proc_keep *e = p->foreign ? NULL : top_proc_keep_find(&c->keep, p->pid);
        if (!e)
            continue;
        int due = top_proc_keep_due(e);
        if (e->fresh) {
            vyre_proc_read_env(c->procfs, p->pid, "CUDA_VISIBLE_DEVICES", &e->env);
            e->fresh = 0;
        }
        p->cuda_visible = e->env;
        reread(c, p, e, due);
        p->hist = e->nhist ? malloc(e->nhist * sizeof *p->hist) : NULL;
        if (p->hist) {
            memcpy(p->hist, e->hist, e->nhist * sizeof *p->hist);
            p->nhist = e->nhist;
        }
    }
}

/* Whether pid is a row or a known ancestor already. */
static int known_pid(const top_snapshot *s, int32_t pid)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid && !s->procs[i].foreign)
            return 1;
    for (size_t i = 0; i < s->nanc; i++)
        if (s->anc[i].pid == pid)
            return 1;
    return 0;
}

/* The rows' parents, and theirs up to pid 1 (16 levels at most), that are
 * not rows: the tree view's inner nodes (issue 37). */
static void collect_ancestors(top_collector *c, top_snapshot *s)
{
    for (size_t i = 0; i < s->nprocs; i++) {
        top_proc *p = &s->procs[i];
        if (p->foreign || !p->ppid)
            continue; /* its parent unknown (collect_keep reads it) */
        int32_t pid = p->ppid;
        for (int depth = 0; depth < 16 && pid > 1 && !known_pid(s, pid); depth++) {
            top_ancestor a = {.pid = pid};
            vyre_proc_info hp;
            if (vyre_proc_read(c->procfs, pid, &hp, NULL) != VYRE_OK)
                break;
            tool_strlcpy(a.name, hp.st.comm, sizeof a.name);
            vyre_proc_read_ppid(c->procfs, pid, &a.ppid);
            top_ancestor *na = realloc(s->anc, (s->nanc + 1) * sizeof *na);
            if (!na)
                return;
            s->anc = na;
            s->anc[s->nanc++] = a;
            pid = a.ppid;
        }
    }
}

/* The host panel's figures (issue 37): CPU% of all CPUs since the previous
 * collection, memory, swap, load. */
static void collect_machine(top_collector *c, top_snapshot *s)
{
    s->host_ok = vyre_proc_read_host(c->procfs, &s->host, NULL) == VYRE_OK;
    s->host_cpu_pct = s->host_ok ? vyre_host_cpu_pct(&c->host_prev, &s->host) : NAN;
    if (s->host_ok)
        c->host_prev = s->host;
}

void top_collect(top_collector *c, top_snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->mono_ns = tool_mono_ns();
    s->unix_s = (double)tool_unix_ns() / 1e9;
    s->interval_s = c->last_ns ? (double)(s->mono_ns - c->last_ns) / 1e9 : NAN;
    c->last_ns = s->mono_ns;
    collect_gpus(c, s);
    collect_procs(c, s);
    collect_host(c, s);
    collect_keep(c, s);
    collect_machine(c, s);
    collect_ancestors(c, s);
    collect_cache(c, s);
    collect_usage(c, s);
}
