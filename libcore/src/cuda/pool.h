/*
 * pool.h - size-class pools of transient device memory and pinned host
 * memory, shared inside libcore (the pipeline module's host dispatch and
 * buffer transfers). Not public API.
 *
 * A pool rounds every request up to a power-of-two size class (256 B to
 * 1 GiB) and keeps freed blocks on per-class free lists, so a dispatch that
 * repeats reuses the blocks of the previous one instead of calling
 * cuMemAlloc / cuMemAllocHost again. Requests above the largest class are
 * allocated exactly and freed on release. The cached total is capped; a
 * block released past the cap is freed at once.
 *
 * Thread-safety: a mutex guards the free lists (pools are never on the
 * launch path). The caller keeps the pool's CUDA context current on the
 * calling thread: allocation and freeing go through the driver.
 */
#ifndef VYRE_POOL_H
#define VYRE_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cuda_internal.h"
#include "vyre/error.h"

#define VYRE__POOL_MIN_SHIFT 8  /* smallest class: 256 B */
#define VYRE__POOL_MAX_SHIFT 30 /* largest class: 1 GiB; larger blocks are never cached */
#define VYRE__POOL_CLASSES   (VYRE__POOL_MAX_SHIFT - VYRE__POOL_MIN_SHIFT + 1)
#define VYRE__POOL_SLOTS     8 /* cached blocks per class */

typedef enum vyre__pool_kind {
    VYRE__POOL_DEVICE = 1, /* cuMemAlloc / cuMemFree */
    VYRE__POOL_PINNED = 2, /* cuMemAllocHost / cuMemFreeHost */
} vyre__pool_kind;

/* One block: a device address or a host pointer (as an integer), and its
 * capacity (the class size, or the exact size above the largest class). */
typedef struct vyre__block {
    uint64_t addr;
    size_t size;
} vyre__block;

typedef struct vyre__pool {
    vyre__pool_kind kind;
    const vyre__cuda_fns *cu;
    pthread_mutex_t mu;
    size_t cap_bytes;    /* at most this much is kept on the free lists */
    size_t cached_bytes; /* kept now */
    uint64_t allocs;     /* blocks obtained from the driver */
    uint64_t reuses;     /* requests served from a free list */
    unsigned n[VYRE__POOL_CLASSES];
    uint64_t slots[VYRE__POOL_CLASSES][VYRE__POOL_SLOTS];
} vyre__pool;

/* Initialises p (no memory is allocated yet). cu is the driver table. */
int vyre__pool_init(vyre__pool *p, vyre__pool_kind kind, const vyre__cuda_fns *cu, size_t cap_bytes,
                    vyre_error *err);

/* Gets a block of at least size bytes (size > 0). On a driver
 * out-of-memory it frees what is cached and tries once more. 0, VYRE_EINVAL
 * or the driver's error. */
int vyre__pool_get(vyre__pool *p, size_t size, vyre__block *out, vyre_error *err);

/* Returns a block from vyre__pool_get (addr 0 is a no-op). The memory must
 * no longer be in use by the GPU (callers synchronise first). */
void vyre__pool_put(vyre__pool *p, const vyre__block *b);

/* Frees every cached block. */
void vyre__pool_trim(vyre__pool *p);

/* Trims and destroys the pool. Blocks still out are the caller's leak. */
void vyre__pool_release(vyre__pool *p);

/* Counters of the pool, read under its lock. */
void vyre__pool_stats(vyre__pool *p, uint64_t *allocs, uint64_t *reuses, uint64_t *cached_bytes,
                      uint64_t *cached_blocks);

#endif /* VYRE_POOL_H */
