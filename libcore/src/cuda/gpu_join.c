/*
 * gpu_join.c - see vyre_gpu_join in vyre/gpu.h: NVML's processes beside the
 * telemetry pages, by pid. vyre-top and vyre-exporter each joined them
 * their own way (issue 35): vyre-top gave a process on two GPUs the last
 * one and took the device of its last kernel name of the interval, the
 * exporter the first GPU and the newest kernel record ever seen, so the
 * two showed different GPUs for the same process.
 *
 * It lives in cuda/, beside the NVML monitor whose samples it reads: the
 * layer above trace/, whose tracker readings it takes as plain data, so it
 * calls only down (layers base < trace < cache < cuda < bench).
 */
#include "vyre/gpu.h"

#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

/* One process NVML lists on one GPU. */
typedef struct listing {
    int32_t pid;
    int index; /* NVML index of the GPU */
    const vyre_gpu_process *np;
} listing;

static int cmp_listing(const void *a, const void *b)
{
    const listing *p = a, *q = b;
    if (p->pid != q->pid)
        return (p->pid > q->pid) - (p->pid < q->pid);
    return (p->index > q->index) - (p->index < q->index);
}

/* By pid; a foreign row (another namespace's pid) after ours. */
static int cmp_row(const void *a, const void *b)
{
    const vyre_gpu_proc_row *p = a, *q = b;
    if (p->pid != q->pid)
        return (p->pid > q->pid) - (p->pid < q->pid);
    return (p->foreign > q->foreign) - (p->foreign < q->foreign);
}

/* Every process of every GPU whose process list is valid, by pid then
 * NVML index, into *out (malloc'ed; NULL when none). Returns the count, or
 * (size_t)-1 out of memory. */
static size_t list_gpu_procs(const vyre_gpu_snapshot *g, listing **out)
{
    *out = NULL;
    size_t n = 0;
    for (unsigned i = 0; g && i < g->ngpus && i < VYRE_GPU_MAX; i++)
        if (vyre_gpu_field_valid(&g->gpus[i], VYRE_GPU_F_PROCS))
            n += g->gpus[i].nprocs < VYRE_GPU_MAX_PROCS ? g->gpus[i].nprocs : VYRE_GPU_MAX_PROCS;
    if (!n)
        return 0;
    listing *v = malloc(n * sizeof *v);
    if (!v)
        return (size_t)-1;
    size_t k = 0;
    for (unsigned i = 0; i < g->ngpus && i < VYRE_GPU_MAX; i++) {
        const vyre_gpu_info *gi = &g->gpus[i];
        if (!vyre_gpu_field_valid(gi, VYRE_GPU_F_PROCS))
            continue;
        for (unsigned j = 0; j < gi->nprocs && j < VYRE_GPU_MAX_PROCS; j++)
            if ((int32_t)gi->procs[j].pid > 0)
                v[k++] = (listing){(int32_t)gi->procs[j].pid, gi->index, &gi->procs[j]};
    }
    if (k > 1)
        qsort(v, k, sizeof *v, cmp_listing);
    *out = v;
    return k;
}

/* The first listing of pid in v (sorted), or NULL. */
static const listing *first_of(const listing *v, size_t n, int32_t pid)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].pid == pid ? &v[lo] : NULL;
}

/* Whether a page of our namespace names pid. */
static int has_own_page(const vyre_telemetry_proc *pages, size_t npages, int32_t pid)
{
    for (size_t i = 0; i < npages; i++)
        if (pages[i].pid == pid && !pages[i].foreign)
            return 1;
    return 0;
}

/* NVML's view of row r: its GPUs from the listings of its pid. */
static void take_listings(vyre_gpu_proc_row *r, const listing *v, size_t n)
{
    r->device = r->page ? r->page->kernel_device : -1;
    const listing *l = r->foreign ? NULL : first_of(v, n, r->pid);
    if (l)
        r->device = l->index; /* the lowest index: listings are sorted by it */
    for (; l && l < v + n && l->pid == r->pid; l++) {
        r->ngpus++;
        if (l->np->used_valid) {
            r->mem_valid = 1;
            r->mem_bytes += l->np->used_bytes;
        }
        if (l->np->util_valid && (!r->util_valid || l->np->sm_util_pct > r->sm_util_pct)) {
            r->util_valid = 1;
            r->sm_util_pct = l->np->sm_util_pct;
        }
    }
}

int vyre_gpu_join(const vyre_gpu_snapshot *gpus, const vyre_telemetry_proc *pages, size_t npages,
                  size_t max_rows, vyre_gpu_proc_row **out, size_t *n, vyre_error *err)
{
    if (!out || !n || (!pages && npages))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_gpu_join: NULL argument");
    *out = NULL;
    *n = 0;
    listing *v = NULL;
    size_t nv = list_gpu_procs(gpus, &v);
    if (nv == (size_t)-1)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory joining GPU processes");
    vyre_gpu_proc_row *rows = npages + nv ? calloc(npages + nv, sizeof *rows) : NULL;
    if (npages + nv && !rows) {
        free(v);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory joining GPU processes");
    }
    size_t k = 0;
    for (size_t i = 0; i < npages; i++, k++) {
        rows[k].pid = pages[i].pid;
        rows[k].page = &pages[i];
        rows[k].foreign = pages[i].foreign;
    }
    /* NVML's processes without a page: one row each (v is by pid). */
    for (size_t i = 0; i < nv && k < max_rows; i++) {
        if ((i > 0 && v[i - 1].pid == v[i].pid) || has_own_page(pages, npages, v[i].pid))
            continue;
        rows[k++].pid = v[i].pid;
    }
    if (k > 1)
        qsort(rows, k, sizeof *rows, cmp_row);
    for (size_t i = 0; i < k; i++)
        take_listings(&rows[i], v, nv);
    free(v);
    *out = rows;
    *n = k;
    return VYRE_OK;
}

size_t vyre_gpu_join_devices(const vyre_gpu_snapshot *gpus, int32_t pid, vyre_gpu_proc_dev *out,
                             size_t max)
{
    size_t n = 0;
    if (!gpus || pid <= 0)
        return 0;
    /* gpus[] is in NVML index order as sampled; sort what we find so the
     * rows never flip order between samples. */
    for (unsigned i = 0; i < gpus->ngpus && i < VYRE_GPU_MAX; i++) {
        const vyre_gpu_info *gi = &gpus->gpus[i];
        if (!vyre_gpu_field_valid(gi, VYRE_GPU_F_PROCS))
            continue;
        for (unsigned j = 0; j < gi->nprocs && j < VYRE_GPU_MAX_PROCS; j++) {
            const vyre_gpu_process *np = &gi->procs[j];
            if ((int32_t)np->pid != pid)
                continue;
            if (out && n < max) {
                size_t k = n;
                while (k > 0 && out[k - 1].device > gi->index) {
                    out[k] = out[k - 1];
                    k--;
                }
                out[k] = (vyre_gpu_proc_dev){
                    gi->index, np->used_valid ? 1 : 0, np->used_valid ? np->used_bytes : 0,
                    np->util_valid ? 1 : 0, np->util_valid ? np->sm_util_pct : 0};
            }
            n++;
        }
    }
    return n;
}
