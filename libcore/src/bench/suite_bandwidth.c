/*
 * suite_bandwidth.c - the `bandwidth` suite: device memory bandwidth over
 * BW_BYTES (512 MiB), read + write, GPU-timed: bandwidth.d2d
 * (cuMemcpyDtoDAsync, GB/s, with its fraction of the datasheet peak) and
 * bandwidth.stream_copy (a float4 copy kernel, hot and cold, as a fraction
 * of d2d measured in the same run).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "vyre/pipeline.h"

#define BW_BYTES ((size_t)512 << 20)

struct bw_bench {
    struct vyre__gpu *g; /* first: vyre__gpu_prepare_cold */
    vyre_pipeline *p;
    CUdeviceptr in, out;
    unsigned long long n4;
    int use_kernel;
    double d2d_gbps; /* measured in this run */
    const char *peak_label;
    double peak;
};

static int bw_op(void *ctx, vyre_error *err)
{
    struct bw_bench *b = ctx;
    if (!b->use_kernel) {
        int rc =
            vyre__cuda_check(b->g->cu->cuMemcpyDtoDAsync(b->out, b->in, BW_BYTES, b->g->stream),
                             "cuMemcpyDtoDAsync", err);
        if (rc == 0)
            vyre__gpu_count_copy(VYRE__GPU_D2D, BW_BYTES);
        return rc;
    }
    void *args[] = {&b->out, &b->in, &b->n4};
    unsigned grid = (unsigned)((b->n4 + 255) / 256);
    vyre_launch_cfg cfg = vyre_launch_1d(grid, 256);
    return vyre_pipeline_launch(b->p, &cfg, args, err);
}

static int sample_bw(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct bw_bench *b = ctx;
    return vyre__gpu_time(b->g, bw_op, b, 1, 1, value, wall, err);
}

static int kpass_bw(void *ctx, vyre_error *err)
{
    struct bw_bench *b = ctx;
    int rc = bw_op(b, err);
    return rc ? rc
              : vyre__cuda_check(b->g->cu->cuStreamSynchronize(b->g->stream), "cuStreamSynchronize",
                                 err);
}

static void finish_bw(vyre_bench_point *pt, void *ctx)
{
    struct bw_bench *b = ctx;
    double gbps = pt->stats.median > 0 ? 2.0 * pt->bytes / pt->stats.median : 0; /* read + write */
    char peak[96];
    if (b->peak > 0)
        snprintf(peak, sizeof peak, "%.2f of %s", gbps * 1e9 / b->peak, b->peak_label);
    else
        snprintf(peak, sizeof peak, "no datasheet peak known for this GPU");
    if (!b->use_kernel) {
        b->d2d_gbps = gbps;
        vyre__strlcpy(pt->metric_name, "GB/s", sizeof pt->metric_name);
        pt->metric = gbps;
        snprintf(pt->note, sizeof pt->note, "read + write; %s", peak);
    } else {
        vyre__strlcpy(pt->metric_name, "of_d2d", sizeof pt->metric_name);
        pt->metric = b->d2d_gbps > 0 ? gbps / b->d2d_gbps : NAN;
        snprintf(pt->note, sizeof pt->note, "%.0f GB/s read + write; %s", gbps, peak);
    }
    vyre__gpu_finish_views(pt, b->g, bw_op, b, 1, 0);
}

int vyre__bench_bandwidth_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err)
{
    struct bw_bench b;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.n4 = BW_BYTES / 16;
    b.peak = vyre_bench_peak_bandwidth(g->info.name, &b.peak_label);
    int rc = vyre__gpu_compile_src(g, vyre__bench_stream_src, "stream_copy", &b.p, err);
    if (!rc)
        rc = vyre__cuda_check(g->cu->cuMemAlloc(&b.in, BW_BYTES), "cuMemAlloc", err);
    if (!rc)
        rc = vyre__cuda_check(g->cu->cuMemAlloc(&b.out, BW_BYTES), "cuMemAlloc", err);
    if (!rc)
        rc = vyre__cuda_check(g->cu->cuMemsetD32Async(b.in, 0x3f800000u, BW_BYTES / 4, g->stream),
                              "cuMemsetD32Async", err);
    vyre_bench_measure_opts o;
    vyre__gpu_measure_opts(&o, env, g);
    o.ctx = &b;
    o.sample = sample_bw;
    char axes[48];
    snprintf(axes, sizeof axes, "bytes=%zu", BW_BYTES);
    vyre_bench_point pt;
    if (!rc && !env->interrupted) {
        vyre__gpu_point_init(&pt, "bandwidth", "bandwidth.d2d", axes, g, VYRE_BENCH_HOT, 1);
        pt.bytes = (double)BW_BYTES;
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_bw, finish_bw, &b, err);
    }
    b.use_kernel = 1;
    for (int m = 0; m < 2 && !rc && !env->interrupted; m++) {
        int cold = m == 1;
        if ((env->cold == 0 && cold) || (env->cold == 1 && !cold))
            continue;
        vyre__gpu_point_init(&pt, "bandwidth", "bandwidth.stream_copy", axes, g,
                             cold ? VYRE_BENCH_COLD : VYRE_BENCH_HOT, 1);
        pt.bytes = (double)BW_BYTES;
        o.prepare = cold ? vyre__gpu_prepare_cold : NULL;
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_bw, finish_bw, &b, err);
    }
    if (b.in)
        g->cu->cuMemFree(b.in);
    if (b.out)
        g->cu->cuMemFree(b.out);
    vyre_pipeline_free(b.p);
    return rc;
}

size_t vyre__bench_bandwidth_points(const vyre_bench_env *env)
{
    return 1 + (env->cold == 2 ? 2 : 1);
}
