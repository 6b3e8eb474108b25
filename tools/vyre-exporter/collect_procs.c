/*
 * collect_procs.c - the telemetry collector: every page of the telemetry
 * directory, read through libcore's tracker (vyre_telemetry_tracker_*, as
 * vyre-top reads them: validation, identity across scrapes, ring serials,
 * staleness and foreign pages are decided there), turned into an exp_proc
 * kept between scrapes.
 *
 * A page that fails validation exports nothing and counts one scrape error
 * (collector "telemetry"); so does a page whose process is gone or whose
 * pid was reused (stale). A page that vanished between listing and reading
 * (its process exited) is no error. A page written in another PID
 * namespace (vyre_telemetry_foreign: a container sharing /dev/shm) is
 * counted (pages "foreign") and not exported: its pid names another
 * process here, or none, so the pid label, NVML's GPU for it and the
 * pid-reuse test would all be wrong; an exporter in that namespace exports
 * it. It is no error either. Kernels: the page keeps only a ring of the
 * most recent records; the exporter sums by name the records the tracker
 * reports as new, and counts those that left the ring unseen in
 * kernels_unseen. A new writer under a known pid (pid reused, or an
 * exec'd image) starts its sums again: its counters restart too.
 */
#include "exporter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void exp_procs_free(exporter *x)
{
    for (size_t i = 0; i < x->nprocs; i++)
        free(x->procs[i].kernels);
    free(x->procs);
    x->procs = NULL;
    x->nprocs = 0;
    vyre_telemetry_tracker_free(x->tracker);
    x->tracker = NULL;
}

static void proc_reset(exp_proc *p, const vyre_telemetry_proc *tp)
{
    free(p->kernels);
    memset(p, 0, sizeof *p);
    p->pid = tp->pid;
    p->start_time = tp->start_time;
}

/* The process of tp's pid, started again when tp is the first reading of
 * its writer (the tracker says so: pid reused, or a new page); NULL out of
 * memory. Keeps x->procs sorted. */
static exp_proc *proc_slot(exporter *x, const vyre_telemetry_proc *tp)
{
    size_t lo = 0, hi = x->nprocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->procs[mid].pid < tp->pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->nprocs && x->procs[lo].pid == tp->pid) {
        if (tp->first)
            proc_reset(&x->procs[lo], tp);
        return &x->procs[lo];
    }
    exp_proc *np = realloc(x->procs, (x->nprocs + 1) * sizeof *np);
    if (!np)
        return NULL;
    x->procs = np;
    memmove(&np[lo + 1], &np[lo], (x->nprocs - lo) * sizeof *np);
    x->nprocs++;
    np[lo].kernels = NULL;
    proc_reset(&np[lo], tp);
    return &np[lo];
}

static void add_kernel(exp_proc *p, const vyre_telemetry_kernel *k)
{
    size_t j = 0;
    while (j < p->nkernels && strcmp(p->kernels[j].name, k->name) != 0)
        j++;
    if (j == p->nkernels) {
        if (p->nkernels >= EXP_MAX_KERNEL_NAMES)
            return; /* still in kernels_ns, not by name */
        if (p->nkernels == p->kcap) {
            size_t cap = p->kcap ? p->kcap * 2 : 16;
            exp_kernel *nk = realloc(p->kernels, cap * sizeof *nk);
            if (!nk)
                return;
            p->kernels = nk;
            p->kcap = cap;
        }
        exp_kernel *nk = &p->kernels[p->nkernels++];
        memset(nk, 0, sizeof *nk);
        tool_strlcpy(nk->name, k->name, sizeof nk->name);
    }
    p->kernels[j].calls++;
    uint64_t ns = k->duration_ns;
    p->kernels[j].ns = p->kernels[j].ns > UINT64_MAX - ns ? UINT64_MAX : p->kernels[j].ns + ns;
}

static void take_page(exporter *x, exp_proc *p, const vyre_telemetry_proc *tp)
{
    p->seen = 1;
    tool_strlcpy(p->comm, tp->exe, sizeof p->comm);
    p->created_s = (double)tp->created_ns / 1e9;
    memcpy(p->v, tp->counters.v, sizeof p->v);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        const vyre_range_hist *h = &tp->counters.ranges[r];
        p->range_count[r] = vyre_range_hist_cumulative(h, x->edges, x->edges_n, p->range_le[r]);
        p->range_sum_ns[r] = h->total_ns;
    }
    for (uint32_t k = 0; k < tp->n_kernels; k++) {
        const vyre_telemetry_kernel *kr = &tp->kernels[k];
        add_kernel(p, kr);
        p->kernels_ns = p->kernels_ns > UINT64_MAX - kr->duration_ns
                            ? UINT64_MAX
                            : p->kernels_ns + kr->duration_ns;
    }
    p->kernels_seen += tp->n_kernels;
    p->kernels_unseen += tp->kernels_unseen;
    p->kernels_total = tp->kernels_total;
}

/* The GPU label: libcore's join (vyre_gpu_join, as vyre-top shows it):
 * the lowest NVML index listing the process, else the device of its
 * newest kernel record, else unknown (""). */
static void proc_gpu(exp_proc *p, int device)
{
    if (device >= 0)
        snprintf(p->gpu, sizeof p->gpu, "%d", device);
    else
        p->gpu[0] = '\0';
}

/* The pages of our namespace, each joined with NVML's processes. */
static void take_pages(exporter *x, const vyre_telemetry_update *u)
{
    vyre_gpu_proc_row *rows = NULL;
    size_t n = 0;
    /* max_rows npages: no rows for NVML's processes without a page. */
    if (vyre_gpu_join(x->gpu_ok ? &x->gsnap : NULL, u->procs, u->nprocs, u->nprocs, &rows, &n,
                      NULL) != VYRE_OK) {
        x->errors[EXP_C_TELEMETRY]++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const vyre_telemetry_proc *tp = rows[i].page;
        if (!tp || tp->foreign)
            continue; /* NVML's alone: vyre_gpu_process_info exports them */
        exp_proc *p = proc_slot(x, tp);
        if (!p) {
            x->errors[EXP_C_TELEMETRY]++;
            continue;
        }
        take_page(x, p, tp);
        proc_gpu(p, rows[i].device);
        x->pages_ok++;
    }
    vyre_free(rows);
}

void exp_collect_procs(exporter *x)
{
    x->pages_ok = x->pages_bad = x->pages_stale = x->pages_foreign = 0;
    x->tel_ok = 0;
    x->took_ns[EXP_T_PAGES] = x->took_ns[EXP_T_KERNELS] = 0;
    for (size_t i = 0; i < x->nprocs; i++)
        x->procs[i].seen = 0;
    vyre_telemetry_update u;
    if (!x->tracker &&
        vyre_telemetry_tracker_new(x->o.telemetry_dir, EXP_MAX_PROCS, &x->tracker, NULL) != 0) {
        x->errors[EXP_C_TELEMETRY]++;
        goto drop;
    }
    uint64_t t0 = tool_mono_ns();
    int rc = vyre_telemetry_tracker_update(x->tracker, &u, NULL);
    uint64_t t1 = tool_mono_ns();
    x->took_ns[EXP_T_PAGES] = t1 - t0;
    if (rc != 0) {
        x->errors[EXP_C_TELEMETRY]++;
        goto drop;
    }
    x->tel_ok = 1;
    x->pages_bad = u.invalid;
    x->pages_stale = u.stale;
    x->pages_foreign = u.foreign;
    /* Each invalid or stale page is an error, and so are the pages past
     * EXP_MAX_PROCS (not read). */
    x->errors[EXP_C_TELEMETRY] += u.invalid + u.stale + (u.skipped ? 1 : 0);
    take_pages(x, &u);
    x->took_ns[EXP_T_KERNELS] = tool_mono_ns() - t1;
drop:
    /* Processes whose page is gone (or bad this time) are dropped. */
    {
        size_t k = 0;
        for (size_t i = 0; i < x->nprocs; i++) {
            if (x->procs[i].seen)
                x->procs[k++] = x->procs[i];
            else
                free(x->procs[i].kernels);
        }
        x->nprocs = k;
    }
}
