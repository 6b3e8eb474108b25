/*
 * suite_launch.c - the `launch` suite: the host's cost of launching an
 * empty kernel, measured on the host by nature (the GPU runs nothing), so
 * its points say so (mode host, timer wall):
 *
 *   launch.stream     vyre_pipeline_launch, LAUNCH_BATCH a sample: ns per launch
 *   launch.roundtrip  a launch and cuStreamSynchronize: ns per pair
 *   launch.graph      cuGraphLaunch of a graph of GRAPH_KERNELS launches: ns per kernel
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "vyre/pipeline.h"

#define LAUNCH_BATCH    100
#define ROUNDTRIP_BATCH 20
#define GRAPH_KERNELS   32

struct launch_bench {
    struct vyre__gpu *g;
    vyre_pipeline *p;
    vyre_graph *graph;
};

static int sample_launch(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < LAUNCH_BATCH; i++) {
        int rc = vyre_pipeline_launch(lb->p, &cfg, NULL, err);
        if (rc)
            return rc;
    }
    uint64_t t1 = vyre__mono_ns();
    *wall = (double)(t1 - t0);
    *value = *wall / LAUNCH_BATCH;
    return vyre__cuda_check(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize",
                            err);
}

static int sample_roundtrip(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < ROUNDTRIP_BATCH; i++) {
        int rc = vyre_pipeline_launch(lb->p, &cfg, NULL, err);
        if (!rc)
            rc = vyre__cuda_check(lb->g->cu->cuStreamSynchronize(lb->g->stream),
                                  "cuStreamSynchronize", err);
        if (rc)
            return rc;
    }
    *wall = (double)(vyre__mono_ns() - t0);
    *value = *wall / ROUNDTRIP_BATCH;
    return VYRE_OK;
}

static int sample_graph(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    enum { REPLAYS = 8 };
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < REPLAYS; i++) {
        int rc = vyre_graph_launch(lb->graph, NULL, err);
        if (rc)
            return rc;
    }
    uint64_t t1 = vyre__mono_ns();
    *wall = (double)(t1 - t0);
    *value = *wall / (REPLAYS * GRAPH_KERNELS);
    return vyre__cuda_check(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize",
                            err);
}

static int kpass_launch(void *ctx, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    for (int i = 0; i < 4; i++) {
        int rc = vyre_pipeline_launch(lb->p, &cfg, NULL, err);
        if (rc)
            return rc;
    }
    return vyre__cuda_check(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize",
                            err);
}

static int kpass_graph(void *ctx, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    int rc = vyre_graph_launch(lb->graph, NULL, err);
    return rc ? rc
              : vyre__cuda_check(lb->g->cu->cuStreamSynchronize(lb->g->stream),
                                 "cuStreamSynchronize", err);
}

int vyre__bench_launch_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err)
{
    struct launch_bench lb = {g, NULL, NULL};
    int rc = vyre__gpu_compile_src(g, vyre__bench_empty_src, "empty_kernel", &lb.p, err);
    vyre_batch *b = NULL;
    if (!rc)
        rc = vyre_batch_begin(g->ctx, &b, err);
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    for (int k = 0; !rc && k < GRAPH_KERNELS; k++)
        rc = vyre_batch_add(b, lb.p, &cfg, NULL, err);
    if (b) {
        int erc = vyre_batch_end(b, &lb.graph, rc ? NULL : err);
        if (!rc)
            rc = erc;
    }
    vyre_bench_measure_opts o;
    vyre__gpu_measure_opts(&o, env, g);
    o.ctx = &lb;
    /* Their kernel passes come in run.c's records sweep, after every
     * timed pass of the run (see run.c). */
    vyre_bench_point pts[3];
    int timed = 0;
    char axes[32];
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        vyre__gpu_point_init(pt, "launch", "launch.stream", "", g, VYRE_BENCH_HOST, 0);
        pt->items = LAUNCH_BATCH;
        vyre__strlcpy(pt->note, "host cost of one cuLaunchKernel (vyre_pipeline_launch)",
                      sizeof pt->note);
        o.sample = sample_launch;
        rc = vyre__bench_point_run(env, pt, &o, 1, kpass_launch, NULL, &lb, err);
        timed += !rc;
    }
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        vyre__gpu_point_init(pt, "launch", "launch.roundtrip", "", g, VYRE_BENCH_HOST, 0);
        pt->items = ROUNDTRIP_BATCH;
        vyre__strlcpy(pt->note, "launch + cuStreamSynchronize", sizeof pt->note);
        o.sample = sample_roundtrip;
        rc = vyre__bench_point_run(env, pt, &o, 1, kpass_launch, NULL, &lb, err);
        timed += !rc;
    }
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        snprintf(axes, sizeof axes, "kernels=%d", GRAPH_KERNELS);
        vyre__gpu_point_init(pt, "launch", "launch.graph", axes, g, VYRE_BENCH_HOST, 0);
        pt->items = 8 * GRAPH_KERNELS;
        vyre__strlcpy(pt->note, "host cost of cuGraphLaunch per kernel", sizeof pt->note);
        o.sample = sample_graph;
        rc = vyre__bench_point_run(env, pt, &o, 1, kpass_graph, NULL, &lb, err);
        timed += !rc;
    }
    vyre_graph_free(lb.graph);
    vyre_pipeline_free(lb.p);
    return rc;
}

size_t vyre__bench_launch_points(const vyre_bench_env *env)
{
    (void)env;
    return 3;
}
