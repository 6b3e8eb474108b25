/*
 * prochist.c - see prochist.h. The set is rebuilt at each collection from
 * the rows of that collection: an entry lives exactly as long as its
 * process is a row, so the memory held is bounded by the rows shown.
 */
#include "prochist.h"

#include <stdlib.h>
#include <string.h>

void top_proc_hist_push(top_proc_hist *h, uint8_t mem, uint8_t sm)
{
    h->mem[h->head] = mem;
    h->sm[h->head] = sm;
    h->head = (h->head + 1) % TOP_PROC_HIST;
    if (h->len < TOP_PROC_HIST)
        h->len++;
}

static uint8_t ring_at(const top_proc_hist *h, const uint8_t *ring, unsigned i)
{
    if (i >= h->len)
        return TOP_PROC_HIST_UNKNOWN;
    unsigned start = (h->head + TOP_PROC_HIST - h->len) % TOP_PROC_HIST;
    return ring[(start + i) % TOP_PROC_HIST];
}

uint8_t top_proc_hist_mem(const top_proc_hist *h, unsigned i)
{
    return ring_at(h, h->mem, i);
}

uint8_t top_proc_hist_sm(const top_proc_hist *h, unsigned i)
{
    return ring_at(h, h->sm, i);
}

static int cmp_keep(const void *a, const void *b)
{
    const top_proc_keep *p = a, *q = b;
    return (p->pid > q->pid) - (p->pid < q->pid);
}

top_proc_keep *top_proc_keep_find(const top_proc_keep_set *set, int32_t pid)
{
    if (!set || !set->n)
        return NULL;
    top_proc_keep key = {.pid = pid};
    return bsearch(&key, set->v, set->n, sizeof key, cmp_keep);
}

int top_proc_keep_due(const top_proc_keep *e)
{
    return e->fresh || (e->age + (unsigned)e->pid) % TOP_PROC_REREAD == 0;
}

void top_proc_keep_set_release(top_proc_keep_set *set)
{
    free(set->v);
    set->v = NULL;
    set->n = 0;
}

/* The memory total of GPU index dev in the sample (0: unknown). */
static uint64_t gpu_total(const vyre_gpu_snapshot *gpus, int dev)
{
    for (unsigned i = 0; gpus && i < gpus->ngpus && i < VYRE_GPU_MAX; i++) {
        const vyre_gpu_info *g = &gpus->gpus[i];
        if ((int)g->index == dev)
            return vyre_gpu_field_valid(g, VYRE_GPU_F_MEMORY) ? g->mem_total_bytes : 0;
    }
    return 0;
}

static uint8_t mem_pct(const vyre_gpu_proc_dev *d, uint64_t total)
{
    if (!d->mem_valid || !total)
        return TOP_PROC_HIST_UNKNOWN;
    double v = 100.0 * (double)d->mem_bytes / (double)total;
    return (uint8_t)(v > 100 ? 100 : v + 0.5);
}

/* The history of device dev in e, added when missing (NULL: no room). */
static top_proc_hist *hist_of(top_proc_keep *e, int dev)
{
    for (unsigned i = 0; i < e->nhist; i++)
        if (e->hist[i].device == dev)
            return &e->hist[i];
    if (e->nhist >= VYRE_GPU_MAX)
        return NULL;
    top_proc_hist *h = &e->hist[e->nhist++];
    memset(h, 0, sizeof *h);
    h->device = dev;
    return h;
}

/* One sample into e: this collection's figures on the GPUs it is on, an
 * unknown sample on those it was on before. */
static void take_sample(top_proc_keep *e, const top_proc_sample *s, const vyre_gpu_snapshot *gpus)
{
    unsigned char done[VYRE_GPU_MAX] = {0};
    for (unsigned k = 0; k < s->ngpus; k++) {
        const vyre_gpu_proc_dev *d = &s->gpus[k];
        top_proc_hist *h = hist_of(e, d->device);
        if (!h)
            continue;
        uint8_t sm = d->util_valid ? (uint8_t)(d->sm_util_pct > 100 ? 100 : d->sm_util_pct)
                                   : TOP_PROC_HIST_UNKNOWN;
        top_proc_hist_push(h, mem_pct(d, gpu_total(gpus, d->device)), sm);
        done[h - e->hist] = 1;
    }
    for (unsigned i = 0; i < e->nhist; i++)
        if (!done[i])
            top_proc_hist_push(&e->hist[i], TOP_PROC_HIST_UNKNOWN, TOP_PROC_HIST_UNKNOWN);
}

int top_proc_keep_update(top_proc_keep_set *set, const top_proc_sample *samples, size_t n,
                         const vyre_gpu_snapshot *gpus)
{
    top_proc_keep *next = n ? malloc(n * sizeof *next) : NULL;
    if (n && !next)
        return -1;
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        const top_proc_sample *s = &samples[i];
        if (nn && next[nn - 1].pid == s->pid)
            continue; /* one entry a pid (the rows are one a process) */
        top_proc_keep *old = top_proc_keep_find(set, s->pid);
        top_proc_keep *e = &next[nn++];
        if (old && old->start_ticks == s->start_ticks) {
            *e = *old;
            e->fresh = 0;
            e->age++;
        } else {
            memset(e, 0, sizeof *e);
            e->pid = s->pid;
            e->start_ticks = s->start_ticks;
            e->fresh = 1;
        }
        take_sample(e, s, gpus);
    }
    /* The samples come by pid (a snapshot's rows): sorted only when they
     * did not, as qsort of entries this size costs more than the rest of a
     * frame (glibc's merge sort copies every entry at every level). */
    size_t k = 1;
    while (k < nn && next[k - 1].pid < next[k].pid)
        k++;
    if (k < nn)
        qsort(next, nn, sizeof *next, cmp_keep);
    free(set->v);
    set->v = next;
    set->n = nn;
    return 0;
}
