/*
 * pipeline_dispatch.c - launching a compiled pipeline (see vyre/pipeline.h):
 * a bare launch with kernel parameters, a resident dispatch with scalars
 * and device buffers, and a host dispatch that stages host memory through
 * the pools, launches, and reads results back.
 *
 * Guarantees: the launch path takes no lock, allocates nothing and makes no
 * context current (pipeline_internal.h); a host dispatch waits for its
 * stream even after an error, so transient memory goes back to the pools
 * only once nothing queued uses it.
 */
#include "cuda/pipeline_internal.h"

#include <string.h>

#include "base/internal.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"

/* ---- dispatching -------------------------------------------------------- */

/* The launch path: see the invariants in pipeline_internal.h. */
static inline int launch_on(vyre_pipeline *p, const vyre_launch_cfg *cfg, CUstream stream,
                            void **args, vyre_error *err)
{
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    CUresult r = p->launch(p->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                           cfg->block[1], cfg->block[2], cfg->shared_bytes, stream, args, NULL);
    vyre_nvtx_pop();
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        return vyre__cuda_check(r, "cuLaunchKernel", err);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
    vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
    vyre__pipeline_telemetry_point();
    return VYRE_OK;
}

int vyre_pipeline_launch(vyre_pipeline *p, const vyre_launch_cfg *cfg, void **args, vyre_error *err)
{
    if (__builtin_expect(!p || !cfg, 0))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_pipeline_launch: NULL argument");
    return launch_on(p, cfg, cfg->stream ? (CUstream)cfg->stream : p->stream, args, err);
}

unsigned vyre__launch_attrs(unsigned flags, CUlaunchAttribute *attrs)
{
    unsigned n = 0;
    if (flags & VYRE__LAUNCH_COOPERATIVE) {
        memset(&attrs[n], 0, sizeof attrs[n]);
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n++].value.cooperative = 1;
    }
    if (flags & VYRE__LAUNCH_PDL) {
        memset(&attrs[n], 0, sizeof attrs[n]);
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n++].value.programmaticStreamSerializationAllowed = 1;
    }
    return n;
}

/* The launch path with attributes (pipeline_internal.h's invariants). */
static int launch_ex_on(vyre_pipeline *p, const vyre_launch_cfg *cfg, unsigned flags,
                        CUstream stream, void **args, vyre_error *err)
{
    const vyre__cuda_fns *cu = p->ctx->cu;
    if (!cu->cuLaunchKernelEx)
        return vyre__fail(err, VYRE_ENOTSUP,
                          "update the NVIDIA driver (cooperative and programmatic dependent "
                          "launches need cuLaunchKernelEx, CUDA 12+)",
                          "the driver has no cuLaunchKernelEx");
    CUlaunchAttribute attrs[2];
    CUlaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.gridDimX = cfg->grid[0];
    lc.gridDimY = cfg->grid[1];
    lc.gridDimZ = cfg->grid[2];
    lc.blockDimX = cfg->block[0];
    lc.blockDimY = cfg->block[1];
    lc.blockDimZ = cfg->block[2];
    lc.sharedMemBytes = cfg->shared_bytes;
    lc.hStream = stream;
    lc.attrs = attrs;
    lc.numAttrs = vyre__launch_attrs(flags, attrs);
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    CUresult r = cu->cuLaunchKernelEx(&lc, p->fn, args, NULL);
    vyre_nvtx_pop();
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        return vyre__cuda_check(r, "cuLaunchKernelEx", err);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
    vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
    vyre__pipeline_telemetry_point();
    return VYRE_OK;
}

int vyre__pipeline_launch_ex(vyre_pipeline *p, const vyre_launch_cfg *cfg, unsigned flags,
                             void **args, vyre_error *err)
{
    if (__builtin_expect(!p || !cfg, 0))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__pipeline_launch_ex: NULL argument");
    CUstream stream = cfg->stream ? (CUstream)cfg->stream : p->stream;
    if (!flags)
        return launch_on(p, cfg, stream, args, err);
    return launch_ex_on(p, cfg, flags, stream, args, err);
}

static int check_dispatch(const vyre_pipeline *p, const vyre_launch_cfg *cfg, const vyre_arg *args,
                          size_t nargs, const char *what, vyre_error *err)
{
    if (!p || !cfg || (nargs && !args))
        return vyre__fail(err, VYRE_EINVAL, NULL, "%s: NULL argument", what);
    if (nargs > VYRE_MAX_ARGS)
        return vyre__fail(err, VYRE_EINVAL, "pack the parameters into fewer buffers or a struct",
                          "%s: %zu kernel parameters (at most %d)", what, nargs, VYRE_MAX_ARGS);
    return VYRE_OK;
}

/* Binds a SCALAR or BUFFER arg into params[i]. */
static int bind_resident(const vyre_ctx *ctx, const vyre_arg *a, size_t i, void **params,
                         vyre_error *err)
{
    switch (a->kind) {
    case VYRE_ARG_SCALAR:
        if (!a->src || !a->size)
            return vyre__fail(err, VYRE_EINVAL, "pass a pointer to the value and its size",
                              "scalar argument %zu has no value", i);
        /* cuLaunchKernel only reads through its parameter pointers. */
        params[i] = (void *)(uintptr_t)a->src;
        return VYRE_OK;
    case VYRE_ARG_BUFFER:
        if (!a->buffer)
            return vyre__fail(err, VYRE_EINVAL, NULL, "buffer argument %zu is NULL", i);
        if (a->buffer->ctx != ctx)
            return vyre__fail(err, VYRE_EINVAL, "allocate the buffer with the pipeline's context",
                              "buffer argument %zu belongs to another context", i);
        params[i] = &a->buffer->dptr;
        return VYRE_OK;
    default:
        return vyre__fail(err, VYRE_EINVAL,
                          "a resident dispatch takes VYRE_ARG_SCALAR and VYRE_ARG_BUFFER only; use "
                          "vyre_pipeline_dispatch_host for host memory",
                          "argument %zu has kind %d", i, (int)a->kind);
    }
}

int vyre_pipeline_dispatch_resident(vyre_pipeline *p, const vyre_launch_cfg *cfg,
                                    const vyre_arg *args, size_t nargs, vyre_error *err)
{
    int rc = check_dispatch(p, cfg, args, nargs, "vyre_pipeline_dispatch_resident", err);
    if (rc)
        return rc;
    void *params[VYRE_MAX_ARGS];
    vyre_nvtx_push(VYRE_RANGE_RESIDENT_DISPATCH);
    for (size_t i = 0; i < nargs && !rc; i++)
        rc = bind_resident(p->ctx, &args[i], i, params, err);
    if (!rc)
        rc = launch_on(p, cfg, cfg->stream ? (CUstream)cfg->stream : p->stream,
                       nargs ? params : NULL, err);
    vyre_nvtx_pop();
    return rc;
}

/* Per-arg transient memory of one host dispatch. */
typedef struct host_slot {
    vyre__block dev, pin;
    CUdeviceptr dptr;
} host_slot;

static int is_host_kind(vyre_arg_kind k)
{
    return k == VYRE_ARG_IN || k == VYRE_ARG_OUT || k == VYRE_ARG_INOUT;
}

/* Stages one IN/OUT/INOUT arg: transient device memory, pinned staging,
 * the upload (or the zeroing of an OUT) queued on stream. */
static int stage_in(vyre_ctx *ctx, const vyre_arg *a, size_t i, CUstream stream, host_slot *s,
                    vyre_error *err)
{
    const vyre__cuda_fns *cu = ctx->cu;
    if (!a->size)
        return vyre__fail(err, VYRE_EINVAL, "pass the size of the host memory in bytes",
                          "host argument %zu has size 0", i);
    if ((a->kind != VYRE_ARG_OUT && !a->src) || (a->kind != VYRE_ARG_IN && !a->dst))
        return vyre__fail(err, VYRE_EINVAL, NULL, "host argument %zu has no host memory", i);
    int rc = vyre__pool_get(&ctx->dev_pool, a->size, &s->dev, err);
    if (!rc)
        rc = vyre__pool_get(&ctx->pin_pool, a->size, &s->pin, err);
    if (rc)
        return rc;
    s->dptr = (CUdeviceptr)s->dev.addr;
    void *staging = (void *)(uintptr_t)s->pin.addr;
    if (a->kind == VYRE_ARG_OUT)
        return vyre__cuda_check(cu->cuMemsetD8Async(s->dptr, 0, a->size, stream), "cuMemsetD8Async",
                                err);
    memcpy(staging, a->src, a->size);
    rc = vyre__cuda_check(cu->cuMemcpyHtoDAsync(s->dptr, staging, a->size, stream),
                          "cuMemcpyHtoDAsync", err);
    if (!rc) {
        vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, a->size);
    }
    return rc;
}

int vyre_pipeline_dispatch_host(vyre_pipeline *p, const vyre_launch_cfg *cfg, const vyre_arg *args,
                                size_t nargs, vyre_error *err)
{
    int rc = check_dispatch(p, cfg, args, nargs, "vyre_pipeline_dispatch_host", err);
    if (rc)
        return rc;
    vyre_ctx *ctx = p->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    rc = vyre__ctx_make_current(ctx, err);
    if (rc)
        return rc;
    CUstream stream = cfg->stream ? (CUstream)cfg->stream : ctx->stream;
    host_slot slots[VYRE_MAX_ARGS];
    void *params[VYRE_MAX_ARGS];
    memset(slots, 0, nargs * sizeof slots[0]);
    int queued = 0, outputs = 0;

    vyre_nvtx_push(VYRE_RANGE_HOST_DISPATCH);
    for (size_t i = 0; i < nargs && !rc; i++) {
        if (is_host_kind(args[i].kind)) {
            queued = 1;
            rc = stage_in(ctx, &args[i], i, stream, &slots[i], err);
            params[i] = &slots[i].dptr;
        } else {
            rc = bind_resident(ctx, &args[i], i, params, err);
        }
    }
    if (!rc) {
        queued = 1;
        rc = launch_on(p, cfg, stream, nargs ? params : NULL, err);
    }
    for (size_t i = 0; i < nargs && !rc; i++) {
        const vyre_arg *a = &args[i];
        if (a->kind != VYRE_ARG_OUT && a->kind != VYRE_ARG_INOUT)
            continue;
        rc = vyre__cuda_check(cu->cuMemcpyDtoHAsync((void *)(uintptr_t)slots[i].pin.addr,
                                                    slots[i].dptr, a->size, stream),
                              "cuMemcpyDtoHAsync", err);
        if (!rc) {
            vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
            vyre_counter_add(VYRE_CTR_D2H_BYTES, a->size);
            outputs = 1;
        }
    }
    /* Wait even after an error: the transient memory goes back to the
     * pools, and nothing queued may still be using it. */
    if (queued) {
        CUresult r = cu->cuStreamSynchronize(stream);
        vyre_counter_add(VYRE_CTR_SYNCS, 1);
        if (!rc)
            rc = vyre__cuda_check(r, "cuStreamSynchronize", err);
    }
    for (size_t i = 0; i < nargs && !rc; i++) {
        const vyre_arg *a = &args[i];
        if (a->kind == VYRE_ARG_OUT || a->kind == VYRE_ARG_INOUT)
            memcpy(a->dst, (const void *)(uintptr_t)slots[i].pin.addr, a->size);
    }
    if (!rc && outputs)
        vyre_counter_add(VYRE_CTR_READBACKS, 1);
    for (size_t i = 0; i < nargs; i++) {
        vyre__pool_put(&ctx->dev_pool, &slots[i].dev);
        vyre__pool_put(&ctx->pin_pool, &slots[i].pin);
    }
    vyre_nvtx_pop();
    return rc;
}
