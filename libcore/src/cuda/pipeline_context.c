/*
 * pipeline_context.c - the vyre_ctx (see vyre/pipeline.h): opening one on a
 * device (the driver entries dispatch needs, the primary context, a
 * non-blocking stream, the memory pools, the cache), what it tells about
 * itself, synchronising it, and closing it.
 *
 * Guarantees: a context that fails to open leaves nothing behind (the same
 * close path undoes every step that succeeded); closing waits for the
 * stream, frees every pipeline handle still open and every module, and
 * leaves no current context behind. The process shows up in vyre-top from
 * its first context on.
 */
#include "cuda/pipeline_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vyre/cuda.h"
#include "vyre/counters.h"

#define POOL_DEVICE_CAP ((size_t)512 << 20) /* transient device memory kept for reuse */
#define POOL_PINNED_CAP ((size_t)256 << 20) /* pinned staging kept for reuse */

#define HINT_DRIVER_OLD "update the NVIDIA driver to one that supports CUDA 13"

/* What dispatch needs of the driver table (optional entries there). */
#define PIPELINE_NEEDED(X)                                                                         \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuLaunchKernel)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemAllocHost)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemcpyHtoDAsync)                                                                           \
    X(cuMemcpyDtoHAsync)                                                                           \
    X(cuMemsetD8Async)                                                                             \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphExecDestroy)                                                                          \
    X(cuGraphDestroy)

static int check_driver_table(const vyre__cuda_fns *cu, vyre_error *err)
{
#define PIPELINE_CHECK(name)                                                                       \
    if (!cu->name)                                                                                 \
        return vyre__fail(err, VYRE_ENODRIVER, HINT_DRIVER_OLD,                                    \
                          "the CUDA driver has no '%s', which dispatch needs", #name);
    PIPELINE_NEEDED(PIPELINE_CHECK)
#undef PIPELINE_CHECK
    return VYRE_OK;
}

int vyre_ctx_open(int device, vyre_cache *cache, vyre_ctx **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_open: NULL argument");
    *out = NULL;
    int rc = vyre_cuda_init(err);
    if (rc)
        return rc;
    const vyre__cuda_fns *cu = vyre__cuda();
    if (!cu)
        return vyre__fail(err, VYRE_ENODRIVER, HINT_DRIVER_OLD, "the CUDA driver is not loaded");
    rc = check_driver_table(cu, err);
    if (rc)
        return rc;
    vyre_device_info info;
    rc = vyre_cuda_device_info(device, &info, err);
    if (rc)
        return rc;

    vyre_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a vyre context");
    ctx->cu = cu;
    ctx->device = device;
    vyre__strlcpy(ctx->arch, info.arch, sizeof ctx->arch);
    vyre__strlcpy(ctx->name, info.name, sizeof ctx->name);
    if (pthread_mutex_init(&ctx->mu, NULL) != 0) {
        free(ctx);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create the context's lock");
    }
    ctx->mu_ready = 1;

    rc = vyre__cuda_check(cu->cuDeviceGet(&ctx->dev, device), "cuDeviceGet", err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuDevicePrimaryCtxRetain(&ctx->cuctx, ctx->dev),
                              "cuDevicePrimaryCtxRetain", err);
    if (rc)
        ctx->cuctx = NULL;
    if (!rc)
        rc = vyre__ctx_make_current(ctx, err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate", err);
    if (rc)
        ctx->stream = NULL;
    if (!rc) {
        rc = vyre__pool_init(&ctx->dev_pool, VYRE__POOL_DEVICE, cu, POOL_DEVICE_CAP, err);
        if (!rc) {
            rc = vyre__pool_init(&ctx->pin_pool, VYRE__POOL_PINNED, cu, POOL_PINNED_CAP, err);
            if (rc)
                vyre__pool_release(&ctx->dev_pool);
            else
                ctx->pools_ready = 1;
        }
    }
    if (!rc) {
        if (cache) {
            ctx->cache = cache;
        } else {
            rc = vyre_cache_open(NULL, NULL, &ctx->cache, err);
            ctx->own_cache = rc == VYRE_OK;
        }
    }
    if (rc) {
        vyre_ctx_close(ctx);
        return rc;
    }
    ctx->info = (vyre_ctx_info){.device = ctx->device,
                                .arch = ctx->arch,
                                .device_name = ctx->name,
                                .cache = ctx->cache,
                                .cu_stream = (void *)ctx->stream};
    *out = ctx;
    /* The process shows up in vyre-top from its first context on. */
    vyre_telemetry_publish(vyre_telemetry_global(NULL));
    return VYRE_OK;
}

void vyre_ctx_close(vyre_ctx *ctx)
{
    if (!ctx)
        return;
    const vyre__cuda_fns *cu = ctx->cu;
    if (ctx->cuctx) {
        (void)cu->cuCtxSetCurrent(ctx->cuctx);
        if (ctx->stream)
            (void)cu->cuStreamSynchronize(ctx->stream);
        for (vyre_pipeline *p = ctx->pipelines, *next; p; p = next) {
            next = p->next;
            vyre_pipeline_free(p);
        }
        for (size_t i = 0; i < ctx->map_cap; i++)
            if (ctx->map[i])
                vyre__module_entry_unload(ctx, ctx->map[i]);
        if (ctx->pools_ready) {
            vyre__pool_release(&ctx->dev_pool);
            vyre__pool_release(&ctx->pin_pool);
        }
        if (ctx->stream)
            (void)cu->cuStreamDestroy(ctx->stream);
        /* Leave no dangling current context behind: releasing the last
         * reference destroys the primary context. */
        (void)cu->cuCtxSetCurrent(NULL);
        (void)cu->cuDevicePrimaryCtxRelease(ctx->dev);
    }
    free(ctx->map);
    if (ctx->own_cache)
        vyre_cache_close(ctx->cache);
    if (ctx->mu_ready)
        pthread_mutex_destroy(&ctx->mu);
    free(ctx);
}

const vyre_ctx_info *vyre_ctx_info_get(const vyre_ctx *ctx)
{
    return ctx ? &ctx->info : NULL;
}

int vyre_ctx_device(const vyre_ctx *ctx)
{
    return ctx ? ctx->device : -1;
}

void *vyre_ctx_cu_context(const vyre_ctx *ctx)
{
    return ctx ? (void *)ctx->cuctx : NULL;
}

int vyre_ctx_make_current(vyre_ctx *ctx, vyre_error *err)
{
    if (!ctx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_make_current: NULL context");
    return vyre__ctx_make_current(ctx, err);
}

int vyre_ctx_synchronize(vyre_ctx *ctx, void *stream, vyre_error *err)
{
    if (!ctx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_synchronize: NULL context");
    int rc = vyre__ctx_make_current(ctx, err);
    if (rc)
        return rc;
    CUresult r = ctx->cu->cuStreamSynchronize(stream ? (CUstream)stream : ctx->stream);
    vyre_counter_add(VYRE_CTR_SYNCS, 1);
    return vyre__cuda_check(r, "cuStreamSynchronize", err);
}

static void pool_stats(vyre__pool *p, vyre_pool_stats *st)
{
    if (st)
        vyre__pool_stats(p, &st->allocs, &st->reuses, &st->cached_bytes, &st->cached_blocks);
}

void vyre_ctx_pool_stats(vyre_ctx *ctx, vyre_pool_stats *device, vyre_pool_stats *pinned)
{
    if (device)
        memset(device, 0, sizeof *device);
    if (pinned)
        memset(pinned, 0, sizeof *pinned);
    if (!ctx || !ctx->pools_ready)
        return;
    pool_stats(&ctx->dev_pool, device);
    pool_stats(&ctx->pin_pool, pinned);
}

void vyre_ctx_trim_pools(vyre_ctx *ctx)
{
    if (!ctx || !ctx->pools_ready || vyre__ctx_make_current(ctx, NULL))
        return;
    vyre__pool_trim(&ctx->dev_pool);
    vyre__pool_trim(&ctx->pin_pool);
}
