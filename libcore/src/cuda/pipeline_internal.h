/*
 * pipeline_internal.h - the insides of a context and its pipelines, shared
 * by the files that implement vyre/pipeline.h (internal to libcore).
 *
 * A context (pipeline_context.c) owns the device, its primary context, a
 * stream, the module map (pipeline_modules.c) and the memory pools
 * (pool.c). Pipelines are compiled through the caches (pipeline.c:
 * module map -> disk cache -> compiler) and dispatched bare, resident or
 * with host buffers (pipeline_dispatch.c), with device buffers
 * (pipeline_buffer.c) or as captured CUDA graphs (pipeline_graph.c).
 *
 * Invariants worth knowing before changing anything here:
 *  - The launch path (pipeline_dispatch.c's launch_on and its callers
 *    vyre_pipeline_launch, vyre_pipeline_dispatch_resident, and
 *    vyre_graph_launch) takes no lock, allocates nothing and makes no
 *    context current: an NVTX push/pop, relaxed counter adds and the
 *    driver call. perf/perf_dispatch.c holds it to 1.05x of a bare
 *    cuLaunchKernel. What it needs from here is static inline for that.
 *  - Module entries are shared by pipeline handles and counted under
 *    ctx->mu; an entry in the module map holds one reference of its own, so
 *    it lives until vyre_ctx_close.
 *  - No call circle between the files: pipeline_context.c calls
 *    pipeline.c (vyre_pipeline_free) and pipeline_modules.c; pipeline.c
 *    calls pipeline_modules.c; the rest call none of them.
 */
#ifndef VYRE_PIPELINE_INTERNAL_H
#define VYRE_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "cuda/cuda_internal.h"
#include "cuda/pool.h"
#include "trace/counters_internal.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/error.h"
#include "vyre/key.h"
#include "vyre/pipeline.h"
#include "vyre/telemetry.h"

/* A loaded module and one of its entry points. The cache key names the
 * module (key v2 has no entry); the map is keyed by module and entry. */
typedef struct module_entry {
    vyre_key key;       /* the map's: the cache key and the entry, hashed */
    vyre_key cache_key; /* the pipeline cache's (p->info.key) */
    CUmodule mod;
    CUfunction fn;
    unsigned refs; /* handles, plus one while in the map; under ctx->mu */
    int in_map;
} module_entry;

struct vyre_ctx {
    const vyre__cuda_fns *cu;
    int device;
    CUdevice dev;
    CUcontext cuctx; /* the primary context, retained while non-NULL */
    CUstream stream;
    vyre_cache *cache;
    int own_cache;
    char arch[VYRE_BLOB_ARCH_MAX];
    char name[256];
    pthread_mutex_t mu; /* the module map and the list of handles */
    int mu_ready;
    module_entry **map; /* open addressing, linear probing; NULL slots empty */
    size_t map_cap, map_count;
    vyre_pipeline *pipelines; /* every open handle */
    vyre__pool dev_pool, pin_pool;
    int pools_ready;
};

struct vyre_pipeline {
    /* The launch path reads only these four. */
    __typeof__(&cuLaunchKernel) launch;
    CUfunction fn;
    CUstream stream;
    vyre_ctx *ctx;
    module_entry *m;
    vyre_pipeline *prev, *next;
    vyre_pipeline_info info;
};

struct vyre_buffer {
    vyre_ctx *ctx;
    CUdeviceptr dptr;
    size_t size;
};

/*
 * Every dispatch path (vyre_pipeline_launch, resident and host dispatch,
 * graph replay) passes through here after a successful launch. It runs on
 * the launch path: the common case is two atomic loads, one TSC read (see
 * clock.h) and a compare; a publish (a copy of the counters under the page's
 * seqlock) happens at most once per VYRE_TELEMETRY_PUBLISH_INTERVAL_NS.
 */
static inline void vyre__pipeline_telemetry_point(void)
{
    vyre_telemetry *t = vyre_telemetry_global();
    if (!t)
        return;
    /* The dispatch range was just popped on this thread: reuse its clock
     * reading rather than taking another. A dispatch left untimed by range
     * sampling (trace/nvtx.c) skips the check: at that rate the next timed
     * one comes within 16 dispatches, far inside the publish interval. */
    uint64_t ticks = vyre__nvtx_last_pop_ticks();
    if (!ticks && vyre__nvtx_last_pop_sampled_out())
        return;
    vyre_telemetry_maybe_publish(t, ticks ? vyre__ticks_to_mono_ns(ticks) : vyre__now_ns_fast());
}

/* Makes ctx's primary context current on the calling thread. */
static inline int vyre__ctx_make_current(vyre_ctx *ctx, vyre_error *err)
{
    return vyre__cuda_check(ctx->cu->cuCtxSetCurrent(ctx->cuctx), "cuCtxSetCurrent", err);
}

/* ---- pipeline_modules.c ---- */

/* The map's key of (module cache_key, entry) into *out. */
int vyre__module_map_key(const vyre_key *cache_key, const char *entry, vyre_key *out,
                         vyre_error *err);
/* The entry of map key k, or NULL. With ctx->mu held. */
module_entry *vyre__module_map_find(const vyre_ctx *ctx, const vyre_key *k);
/* Adds e (growing the map when needed). With ctx->mu held. */
int vyre__module_map_insert(vyre_ctx *ctx, module_entry *e, vyre_error *err);
/* Unloads m's module, if any, and frees m. */
void vyre__module_entry_unload(vyre_ctx *ctx, module_entry *m);

/* ---- pipeline_dispatch.c: launches with attributes ---- */

/* How a launch is made beyond cuLaunchKernel's arguments (bits). */
enum {
    VYRE__LAUNCH_COOPERATIVE = 1u << 0, /* every block resident at once (grid sync) */
    VYRE__LAUNCH_PDL = 1u << 1,         /* programmatic dependent launch: may start
                                           before the kernel ahead of it on the
                                           stream has finished */
};

/* The cuLaunchKernelEx attributes of flags into attrs (room for 2).
 * Returns how many. */
unsigned vyre__launch_attrs(unsigned flags, CUlaunchAttribute *attrs);

/*
 * vyre_pipeline_launch with flags: 0 launches through cuLaunchKernel as it
 * does; VYRE__LAUNCH_* through cuLaunchKernelEx with
 * CU_LAUNCH_ATTRIBUTE_COOPERATIVE and/or
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION. The same launch
 * path (no lock, no allocation), counted alike. VYRE_ENOTSUP when the
 * driver has no cuLaunchKernelEx (before CUDA 12); a cooperative grid
 * larger than the GPU holds at once is the driver's error
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), with a hint.
 */
int vyre__pipeline_launch_ex(vyre_pipeline *p, const vyre_launch_cfg *cfg, unsigned flags,
                             void **args, vyre_error *err);

/* ---- not exported (vyre/pipeline.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/* The CUDA ordinal the ctx was opened on. */
int vyre_ctx_device(const vyre_ctx *ctx);

/* Makes the ctx's context current on the calling thread. */
int vyre_ctx_make_current(vyre_ctx *ctx, vyre_error *err);

/* Waits for all work on `stream` (a CUstream; NULL: the ctx's stream).
 * Counted as a sync. */
int vyre_ctx_synchronize(vyre_ctx *ctx, void *stream, vyre_error *err);

/* Interop with code that calls the driver itself: the CUcontext and the
 * ctx's CUstream, as void pointers. Owned by the ctx. */
void *vyre_ctx_cu_context(const vyre_ctx *ctx);

/* Fills the stats of the transient device pool and of the pinned host
 * staging pool (either may be NULL). */
void vyre_ctx_pool_stats(vyre_ctx *ctx, vyre_pool_stats *device, vyre_pool_stats *pinned);

/* Frees the memory held on the pools' free lists. */
void vyre_ctx_trim_pools(vyre_ctx *ctx);

void *vyre_pipeline_cu_module(const vyre_pipeline *p);

/* A device-resident buffer. */
int vyre_buffer_alloc(vyre_ctx *ctx, size_t size, vyre_buffer **out, vyre_error *err);

/* Frees b (the GPU must be done with it). NULL is a no-op. */
void vyre_buffer_free(vyre_buffer *b);

/* Copies n bytes from host memory src to b at offset, through pinned
 * staging on the ctx's stream, and waits for the copy. VYRE_ERANGE when
 * offset + n is past the end. */
int vyre_buffer_upload(vyre_buffer *b, size_t offset, const void *src, size_t n, vyre_error *err);

/* Copies n bytes of b at offset to host memory dst after the work queued
 * on the ctx's stream, and waits for it. Counted as a readback. */
int vyre_buffer_download(vyre_buffer *b, size_t offset, void *dst, size_t n, vyre_error *err);

/* Queues zeroing of the whole of b on the ctx's stream (asynchronous). */
int vyre_buffer_zero(vyre_buffer *b, vyre_error *err);

/* The device address (a CUdeviceptr) and the size of b. */
uint64_t vyre_buffer_device_ptr(const vyre_buffer *b);

size_t vyre_buffer_size(const vyre_buffer *b);

/*
 * Resident dispatch: args are SCALAR and BUFFER only (no copies).
 * Asynchronous, like vyre_pipeline_launch. VYRE_EINVAL for other kinds or a
 * buffer of another ctx.
 */
int vyre_pipeline_dispatch_resident(vyre_pipeline *p, const vyre_launch_cfg *cfg,
                                    const vyre_arg *args, size_t nargs, vyre_error *err);

/* Ends the capture and discards it. NULL is a no-op. */
void vyre_batch_abort(vyre_batch *b);

/* Kernels captured in g. */
size_t vyre_graph_kernels(const vyre_graph *g);

#endif /* VYRE_PIPELINE_INTERNAL_H */
