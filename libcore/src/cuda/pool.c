/*
 * pool.c - size-class pools of transient device memory and pinned host
 * memory (see pool.h).
 *
 * Why pools: cuMemAlloc and, worse, cuMemAllocHost (which pins pages) cost
 * tens of microseconds to milliseconds; a host dispatch that allocated its
 * device buffers and staging memory every time would spend more there than
 * in the copies. Power-of-two classes waste at most half a block, which is
 * the usual trade for a free list that needs no search.
 */
#include "cuda/pool.h"

#include <stdio.h>
#include <string.h>

#include "base/internal.h"

static int class_of(size_t size)
{
    int shift = VYRE__POOL_MIN_SHIFT;
    while (shift <= VYRE__POOL_MAX_SHIFT && ((size_t)1 << shift) < size)
        shift++;
    return shift > VYRE__POOL_MAX_SHIFT ? -1 : shift - VYRE__POOL_MIN_SHIFT;
}

static const char *kind_name(const vyre__pool *p)
{
    return p->kind == VYRE__POOL_DEVICE ? "device" : "pinned host";
}

static CUresult raw_alloc(vyre__pool *p, size_t size, uint64_t *addr)
{
    if (p->kind == VYRE__POOL_DEVICE) {
        CUdeviceptr d = 0;
        CUresult r = p->cu->cuMemAlloc(&d, size);
        *addr = (uint64_t)d;
        return r;
    }
    void *h = NULL;
    CUresult r = p->cu->cuMemAllocHost(&h, size);
    *addr = (uint64_t)(uintptr_t)h;
    return r;
}

static void raw_free(vyre__pool *p, uint64_t addr)
{
    /* Errors here (a context already destroyed) leave nothing to undo. */
    if (p->kind == VYRE__POOL_DEVICE)
        (void)p->cu->cuMemFree((CUdeviceptr)addr);
    else
        (void)p->cu->cuMemFreeHost((void *)(uintptr_t)addr);
}

int vyre__pool_init(vyre__pool *p, vyre__pool_kind kind, const vyre__cuda_fns *cu, size_t cap_bytes,
                    vyre_error *err)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->cu = cu;
    p->cap_bytes = cap_bytes;
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create the %s memory pool's lock",
                          kind_name(p));
    return VYRE_OK;
}

/* Frees the cached blocks; called with the lock held. */
static void trim_locked(vyre__pool *p)
{
    for (int c = 0; c < VYRE__POOL_CLASSES; c++) {
        for (unsigned i = 0; i < p->n[c]; i++)
            raw_free(p, p->slots[c][i]);
        p->n[c] = 0;
    }
    p->cached_bytes = 0;
}

int vyre__pool_get(vyre__pool *p, size_t size, vyre__block *out, vyre_error *err)
{
    out->addr = 0;
    out->size = 0;
    if (size == 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "a %s memory block of 0 bytes", kind_name(p));
    int c = class_of(size);
    size_t want = c < 0 ? size : (size_t)1 << (c + VYRE__POOL_MIN_SHIFT);

    pthread_mutex_lock(&p->mu);
    if (c >= 0 && p->n[c] > 0) {
        out->addr = p->slots[c][--p->n[c]];
        out->size = want;
        p->cached_bytes -= want;
        p->reuses++;
        pthread_mutex_unlock(&p->mu);
        return VYRE_OK;
    }
    uint64_t addr = 0;
    CUresult r = raw_alloc(p, want, &addr);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        /* Memory parked on our free lists may be exactly what is missing. */
        trim_locked(p);
        r = raw_alloc(p, want, &addr);
    }
    if (r == CUDA_SUCCESS)
        p->allocs++;
    pthread_mutex_unlock(&p->mu);
    if (r != CUDA_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "%s of %zu bytes",
                 p->kind == VYRE__POOL_DEVICE ? "cuMemAlloc" : "cuMemAllocHost", want);
        return vyre__cuda_check(r, call, err);
    }
    out->addr = addr;
    out->size = want;
    return VYRE_OK;
}

void vyre__pool_put(vyre__pool *p, const vyre__block *b)
{
    if (!b || !b->addr)
        return;
    int c = class_of(b->size);
    int keep = 0;
    pthread_mutex_lock(&p->mu);
    if (c >= 0 && ((size_t)1 << (c + VYRE__POOL_MIN_SHIFT)) == b->size &&
        p->n[c] < VYRE__POOL_SLOTS && p->cached_bytes + b->size <= p->cap_bytes) {
        p->slots[c][p->n[c]++] = b->addr;
        p->cached_bytes += b->size;
        keep = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (!keep)
        raw_free(p, b->addr);
}

void vyre__pool_trim(vyre__pool *p)
{
    pthread_mutex_lock(&p->mu);
    trim_locked(p);
    pthread_mutex_unlock(&p->mu);
}

void vyre__pool_release(vyre__pool *p)
{
    vyre__pool_trim(p);
    pthread_mutex_destroy(&p->mu);
}

void vyre__pool_stats(vyre__pool *p, uint64_t *allocs, uint64_t *reuses, uint64_t *cached_bytes,
                      uint64_t *cached_blocks)
{
    pthread_mutex_lock(&p->mu);
    uint64_t blocks = 0;
    for (int c = 0; c < VYRE__POOL_CLASSES; c++)
        blocks += p->n[c];
    if (allocs)
        *allocs = p->allocs;
    if (reuses)
        *reuses = p->reuses;
    if (cached_bytes)
        *cached_bytes = p->cached_bytes;
    if (cached_blocks)
        *cached_blocks = blocks;
    pthread_mutex_unlock(&p->mu);
}
