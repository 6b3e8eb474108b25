/*
 * collect_procs.c - the telemetry collector: every page of the telemetry
 * directory, read and validated by libcore (vyre_telemetry_read copies it
 * under its seqlock, trusting nothing in it), turned into an exp_proc kept
 * between scrapes.
 *
 * A page that fails validation exports nothing and counts one scrape error
 * (collector "telemetry"); so does a page whose process is gone or whose
 * pid was reused (stale). A page that vanished between listing and reading
 * (its process exited) is no error. A page written in another PID
 * namespace (vyre_telemetry_foreign: a container sharing /dev/shm) is
 * counted (pages "foreign") and not exported: its pid names another
 * process here, or none, so the pid label, NVML's GPU for it and the
 * pid-reuse test would all be wrong; an exporter in that namespace exports
 * it. It is no error either. Kernels: the page keeps only a ring of
 * the most recent records, so the exporter sums by name those newer than
 * the last serial it saw; records that left the ring unseen are counted in
 * kernels_unseen.
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
}

/* The process of pid (a fresh one when absent or when the pid now belongs
 * to another process); NULL out of memory. Keeps x->procs sorted. */
static exp_proc *proc_slot(exporter *x, int32_t pid, uint64_t start_time)
{
    size_t lo = 0, hi = x->nprocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->nprocs && x->procs[lo].pid == pid) {
        exp_proc *p = &x->procs[lo];
        if (p->start_time != start_time) { /* pid reused: start over */
            free(p->kernels);
            memset(p, 0, sizeof *p);
            p->pid = pid;
            p->start_time = start_time;
            p->device_hint = -1;
        }
        return p;
    }
    exp_proc *np = realloc(x->procs, (x->nprocs + 1) * sizeof *np);
    if (!np)
        return NULL;
    x->procs = np;
    memmove(&np[lo + 1], &np[lo], (x->nprocs - lo) * sizeof *np);
    x->nprocs++;
    exp_proc *p = &np[lo];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->start_time = start_time;
    p->device_hint = -1;
    return p;
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
        exp_copy_str(nk->name, sizeof nk->name, k->name);
    }
    p->kernels[j].calls++;
    uint64_t ns = k->duration_ns;
    p->kernels[j].ns = p->kernels[j].ns > UINT64_MAX - ns ? UINT64_MAX : p->kernels[j].ns + ns;
}

static void take_page(exporter *x, exp_proc *p, const vyre_telemetry_snapshot *pg)
{
    p->seen = 1;
    exp_copy_str(p->comm, sizeof p->comm, pg->exe);
    p->created_s = (double)pg->created_ns / 1e9;
    memcpy(p->v, pg->counters.v, sizeof p->v);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        const vyre_range_hist *h = &pg->counters.ranges[r];
        p->range_count[r] = vyre_range_hist_cumulative(h, x->edges, x->edges_n, p->range_le[r]);
        p->range_sum_ns[r] = h->total_ns;
    }
    /* Kernels newer than those already summed. A ring whose serials went
     * backwards belongs to a new writer: take it whole. */
    uint64_t newest = pg->n_kernels ? pg->kernels[pg->n_kernels - 1].serial : 0;
    if (pg->kernels_total < p->kernels_total || newest < p->last_serial)
        p->last_serial = 0;
    uint64_t fresh = 0;
    for (uint32_t k = 0; k < pg->n_kernels; k++) {
        const vyre_telemetry_kernel *kr = &pg->kernels[k];
        if (kr->serial <= p->last_serial)
            continue;
        add_kernel(p, kr);
        fresh++;
        p->kernels_ns = p->kernels_ns > UINT64_MAX - kr->duration_ns
                            ? UINT64_MAX
                            : p->kernels_ns + kr->duration_ns;
        if (kr->device >= 0)
            p->device_hint = kr->device;
    }
    p->kernels_seen += fresh;
    if (pg->kernels_total >= p->kernels_total) {
        uint64_t recorded = pg->kernels_total - p->kernels_total;
        if (recorded > fresh)
            p->kernels_unseen += recorded - fresh;
    }
    p->kernels_total = pg->kernels_total;
    if (newest > p->last_serial)
        p->last_serial = newest;
}

/* The GPU label: where NVML lists the process, else the device of its
 * newest kernel record, else unknown (""). */
static void proc_gpu(const exporter *x, exp_proc *p)
{
    int dev = -1;
    for (unsigned g = 0; x->gpu_ok && g < x->gsnap.ngpus && g < VYRE_GPU_MAX && dev < 0; g++) {
        const vyre_gpu_info *gi = &x->gsnap.gpus[g];
        if (!vyre_gpu_field_valid(gi, VYRE_GPU_F_PROCS))
            continue;
        for (unsigned k = 0; k < gi->nprocs && k < VYRE_GPU_MAX_PROCS; k++)
            if (gi->procs[k].pid == (uint32_t)p->pid)
                dev = gi->index;
    }
    if (dev < 0)
        dev = p->device_hint;
    if (dev >= 0)
        snprintf(p->gpu, sizeof p->gpu, "%d", dev);
    else
        p->gpu[0] = '\0';
}

void exp_collect_procs(exporter *x)
{
    x->pages_ok = x->pages_bad = x->pages_stale = x->pages_foreign = 0;
    x->tel_ok = 0;
    for (size_t i = 0; i < x->nprocs; i++)
        x->procs[i].seen = 0;
    vyre_error e;
    vyre_error_clear(&e);
    const char *dir = x->o.telemetry_dir;
    if (!dir) {
        if (vyre_telemetry_dir(x->tel_dir, sizeof x->tel_dir, &e) != 0) {
            x->errors[EXP_C_TELEMETRY]++;
            goto drop;
        }
        dir = x->tel_dir;
    }
    vyre_telemetry_entry *ents = NULL;
    size_t n = 0;
    if (vyre_telemetry_list(dir, &ents, &n, &e) != 0) {
        x->errors[EXP_C_TELEMETRY]++;
        goto drop;
    }
    x->tel_ok = 1;
    if (n > EXP_MAX_PROCS) {
        x->errors[EXP_C_TELEMETRY]++; /* the rest are not read */
        n = EXP_MAX_PROCS;
    }
    for (size_t i = 0; i < n; i++) {
        vyre_telemetry_snapshot *pg = x->page;
        int rc = vyre_telemetry_read(ents[i].path, pg, NULL);
        if (rc == VYRE_ENOENT)
            continue; /* exited since the listing */
        if (rc != 0 || pg->pid != ents[i].pid) {
            x->pages_bad++;
            x->errors[EXP_C_TELEMETRY]++;
            continue;
        }
        if (vyre_telemetry_foreign(pg)) {
            x->pages_foreign++;
            continue;
        }
        if (vyre_telemetry_stale(pg)) {
            x->pages_stale++;
            x->errors[EXP_C_TELEMETRY]++;
            continue;
        }
        exp_proc *p = proc_slot(x, pg->pid, pg->start_time);
        if (!p) {
            x->errors[EXP_C_TELEMETRY]++;
            continue;
        }
        take_page(x, p, pg);
        proc_gpu(x, p);
        x->pages_ok++;
    }
    vyre_telemetry_list_free(ents);
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
