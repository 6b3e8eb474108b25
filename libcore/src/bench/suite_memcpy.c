/*
 * suite_memcpy.c - the `memcpy` suite: host to device, device to host
 * (pageable and pinned) and device to device copies of 4 KiB to 256 MiB
 * (64 KiB, 16 MiB and 256 MiB in --quick), GPU-timed, metric GB/s. Pinned
 * and device copies wait behind the blocking kernel; a pageable copy
 * returns only once the GPU has moved the bytes, so it cannot be queued
 * behind a held stream and goes without (its points say so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"

static const size_t k_copy_sizes[] = {4096, 65536, 1u << 20, 16u << 20, 256u << 20};
static const size_t k_copy_sizes_quick[] = {65536, 16u << 20, 256u << 20};

enum copy_kind { C_H2D_PAGEABLE, C_H2D_PINNED, C_D2H_PAGEABLE, C_D2H_PINNED, C_D2D, C_NKINDS };
static const char *const k_copy_names[] = {"memcpy.h2d.pageable", "memcpy.h2d.pinned",
                                           "memcpy.d2h.pageable", "memcpy.d2h.pinned",
                                           "memcpy.d2d"};

struct copy_bench {
    struct vyre__gpu *g;
    enum copy_kind kind;
    size_t bytes;
    CUdeviceptr d0, d1;
    void *pinned, *pageable;
    int cold;
};

static enum vyre__gpu_copy_dir copy_dir(enum copy_kind kind)
{
    switch (kind) {
    case C_H2D_PAGEABLE:
    case C_H2D_PINNED:
        return VYRE__GPU_H2D;
    case C_D2H_PAGEABLE:
    case C_D2H_PINNED:
        return VYRE__GPU_D2H;
    default:
        return VYRE__GPU_D2D;
    }
}

static int copy_issue(struct copy_bench *cb, vyre_error *err)
{
    const vyre__cuda_fns *cu = cb->g->cu;
    CUstream s = cb->g->stream;
    switch (cb->kind) {
    case C_H2D_PAGEABLE:
        return vyre__cuda_check(cu->cuMemcpyHtoDAsync(cb->d0, cb->pageable, cb->bytes, s),
                                "cuMemcpyHtoDAsync", err);
    case C_H2D_PINNED:
        return vyre__cuda_check(cu->cuMemcpyHtoDAsync(cb->d0, cb->pinned, cb->bytes, s),
                                "cuMemcpyHtoDAsync", err);
    case C_D2H_PAGEABLE:
        return vyre__cuda_check(cu->cuMemcpyDtoHAsync(cb->pageable, cb->d0, cb->bytes, s),
                                "cuMemcpyDtoHAsync", err);
    case C_D2H_PINNED:
        return vyre__cuda_check(cu->cuMemcpyDtoHAsync(cb->pinned, cb->d0, cb->bytes, s),
                                "cuMemcpyDtoHAsync", err);
    default:
        return vyre__cuda_check(cu->cuMemcpyDtoDAsync(cb->d1, cb->d0, cb->bytes, s),
                                "cuMemcpyDtoDAsync", err);
    }
}

static int copy_op(void *ctx, vyre_error *err)
{
    struct copy_bench *cb = ctx;
    int rc = copy_issue(cb, err);
    if (rc == 0)
        vyre__gpu_count_copy(copy_dir(cb->kind), cb->bytes);
    return rc;
}

/* A pageable copy returns only once the GPU has moved the bytes: it cannot
 * be queued behind a held stream. */
static int copy_can_block(const struct copy_bench *cb)
{
    return cb->kind != C_H2D_PAGEABLE && cb->kind != C_D2H_PAGEABLE;
}

static int sample_copy(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct copy_bench *cb = ctx;
    return vyre__gpu_time(cb->g, copy_op, cb, 1, copy_can_block(cb), value, wall, err);
}

static int kpass_copy(void *ctx, vyre_error *err)
{
    struct copy_bench *cb = ctx;
    int rc = copy_op(cb, err);
    return rc ? rc
              : vyre__cuda_check(cb->g->cu->cuStreamSynchronize(cb->g->stream),
                                 "cuStreamSynchronize", err);
}

static void finish_copy(vyre_bench_point *pt, void *ctx)
{
    struct copy_bench *cb = ctx;
    /* D2D moves every byte twice (read and write), as the DRAM sees it. */
    double moved = pt->bytes * (strcmp(pt->benchmark, "memcpy.d2d") == 0 ? 2 : 1);
    vyre__strlcpy(pt->metric_name, "GB/s", sizeof pt->metric_name);
    pt->metric = pt->stats.median > 0 ? moved / pt->stats.median : 0;
    if (moved > pt->bytes)
        vyre__strlcpy(pt->note, "GB/s counts read + write", sizeof pt->note);
    vyre__gpu_finish_views(pt, cb->g, copy_op, cb, copy_can_block(cb), 0);
}

static void copy_free(struct copy_bench *cb)
{
    const vyre__cuda_fns *cu = cb->g->cu;
    if (cb->d0)
        cu->cuMemFree(cb->d0);
    if (cb->d1)
        cu->cuMemFree(cb->d1);
    if (cb->pinned)
        cu->cuMemFreeHost(cb->pinned);
    free(cb->pageable);
}

static int copy_alloc(struct copy_bench *cb, size_t max, vyre_error *err)
{
    const vyre__cuda_fns *cu = cb->g->cu;
    int rc;
    if ((rc = vyre__cuda_check(cu->cuMemAlloc(&cb->d0, max), "cuMemAlloc", err)) ||
        (rc = vyre__cuda_check(cu->cuMemAlloc(&cb->d1, max), "cuMemAlloc", err)) ||
        (rc = vyre__cuda_check(cu->cuMemAllocHost(&cb->pinned, max), "cuMemAllocHost", err)))
        return rc;
    cb->pageable = malloc(max);
    if (!cb->pageable)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of host memory for the memcpy suite");
    memset(cb->pageable, 1, max); /* fault the pages in */
    memset(cb->pinned, 1, max);
    return VYRE_OK;
}

int vyre__bench_memcpy_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err)
{
    const size_t *sizes = env->quick ? k_copy_sizes_quick : k_copy_sizes;
    size_t nsizes =
        env->quick ? VYRE_ARRAY_SIZE(k_copy_sizes_quick) : VYRE_ARRAY_SIZE(k_copy_sizes);
    struct copy_bench cb;
    memset(&cb, 0, sizeof cb);
    cb.g = g;
    int rc = copy_alloc(&cb, sizes[nsizes - 1], err);
    vyre_bench_measure_opts o;
    vyre__gpu_measure_opts(&o, env, g);
    o.ctx = &cb;
    o.sample = sample_copy;
    for (size_t s = 0; !rc && !env->interrupted && s < nsizes; s++)
        for (int k = 0; !rc && !env->interrupted && k < C_NKINDS; k++) {
            cb.kind = (enum copy_kind)k;
            cb.bytes = sizes[s];
            char axes[48];
            snprintf(axes, sizeof axes, "bytes=%zu", sizes[s]);
            vyre_bench_point pt;
            vyre__gpu_point_init(&pt, "memcpy", k_copy_names[k], axes, g, VYRE_BENCH_HOT, 1);
            pt.bytes = (double)sizes[s];
            rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_copy, finish_copy, &cb, err);
        }
    copy_free(&cb);
    return rc;
}

size_t vyre__bench_memcpy_points(const vyre_bench_env *env)
{
    return C_NKINDS *
           (env->quick ? VYRE_ARRAY_SIZE(k_copy_sizes_quick) : VYRE_ARRAY_SIZE(k_copy_sizes));
}
