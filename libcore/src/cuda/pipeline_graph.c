/*
 * pipeline_graph.c - batched dispatch (see vyre/pipeline.h): launches
 * captured on a stream into a CUDA graph (vyre_batch_*), instantiated once
 * and replayed (vyre_graph_*).
 *
 * Guarantees: the capture is thread-local, so other threads' CUDA calls
 * neither break it nor are broken by it; a batch with a failed launch or
 * none at all gives no graph; replay is on the launch path (no lock, no
 * allocation).
 */
#include "cuda/pipeline_internal.h"

#include <stdlib.h>

#include "base/internal.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"

struct vyre_batch {
    vyre_ctx *ctx;
    CUstream stream;
    size_t kernels;
    int failed;
};

struct vyre_graph {
    __typeof__(&cuGraphLaunch) launch;
    CUgraphExec exec;
    CUstream stream;
    size_t kernels;
    vyre_ctx *ctx;
};

int vyre_batch_begin(vyre_ctx *ctx, vyre_batch **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!ctx || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_begin: NULL argument");
    const vyre__cuda_fns *cu = ctx->cu;
    int rc = vyre__ctx_make_current(ctx, err);
    if (rc)
        return rc;
    vyre_batch *b = calloc(1, sizeof *b);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a batch");
    b->ctx = ctx;
    rc = vyre__cuda_check(cu->cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
                          err);
    if (rc) {
        free(b);
        return rc;
    }
    /* Thread-local mode: other threads' unrelated CUDA calls neither break
     * the capture nor are broken by it. */
    rc = vyre__cuda_check(cu->cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                          "cuStreamBeginCapture", err);
    if (rc) {
        (void)cu->cuStreamDestroy(b->stream);
        free(b);
        return rc;
    }
    *out = b;
    return VYRE_OK;
}

int vyre_batch_add(vyre_batch *b, vyre_pipeline *p, const vyre_launch_cfg *cfg, void **args,
                   vyre_error *err)
{
    if (!b || !p || !cfg)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_add: NULL argument");
    if (p->ctx != b->ctx) {
        b->failed = 1;
        return vyre__fail(err, VYRE_EINVAL, "compile the pipeline with the batch's context",
                          "vyre_batch_add: the pipeline belongs to another context");
    }
    CUresult r = p->launch(p->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                           cfg->block[1], cfg->block[2], cfg->shared_bytes, b->stream, args, NULL);
    if (r != CUDA_SUCCESS) {
        b->failed = 1;
        return vyre__cuda_check(r, "cuLaunchKernel (captured)", err);
    }
    b->kernels++;
    return VYRE_OK;
}

/* Ends the capture and frees the batch; returns the captured graph (NULL
 * on failure) and the driver's result in *rc. */
static CUgraph batch_finish(vyre_batch *b, int *rc, vyre_error *err)
{
    const vyre__cuda_fns *cu = b->ctx->cu;
    CUgraph graph = NULL;
    /* End the capture before anything else: while it runs, this thread
     * must make no call the capture would reject. */
    *rc = vyre__cuda_check(cu->cuStreamEndCapture(b->stream, &graph), "cuStreamEndCapture", err);
    int cur = vyre__ctx_make_current(b->ctx, *rc ? NULL : err);
    if (!*rc)
        *rc = cur;
    (void)cu->cuStreamDestroy(b->stream);
    free(b);
    return graph;
}

void vyre_batch_abort(vyre_batch *b)
{
    if (!b)
        return;
    const vyre__cuda_fns *cu = b->ctx->cu;
    int rc;
    CUgraph graph = batch_finish(b, &rc, NULL);
    if (graph)
        (void)cu->cuGraphDestroy(graph);
}

int vyre_batch_end(vyre_batch *b, vyre_graph **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!b)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_end: NULL batch");
    if (!out) {
        vyre_batch_abort(b);
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_end: NULL output");
    }
    vyre_ctx *ctx = b->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    int failed = b->failed;
    size_t kernels = b->kernels;
    int rc;
    CUgraph graph = batch_finish(b, &rc, err);
    if (!rc && failed)
        rc = vyre__fail(err, VYRE_EINVAL, "fix the failed vyre_batch_add and capture again",
                        "a launch added to the batch failed; the graph is discarded");
    if (!rc && !kernels)
        rc = vyre__fail(err, VYRE_EINVAL, "add launches with vyre_batch_add before ending it",
                        "the batch is empty");
    CUgraphExec exec = NULL;
    if (!rc)
        rc = vyre__cuda_check(cu->cuGraphInstantiateWithFlags(&exec, graph, 0),
                              "cuGraphInstantiateWithFlags", err);
    /* The executable graph does not need the graph it came from. */
    if (graph)
        (void)cu->cuGraphDestroy(graph);
    if (rc)
        return rc;
    vyre_graph *g = calloc(1, sizeof *g);
    if (!g) {
        (void)cu->cuGraphExecDestroy(exec);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a graph");
    }
    g->launch = cu->cuGraphLaunch;
    g->exec = exec;
    g->stream = ctx->stream;
    g->kernels = kernels;
    g->ctx = ctx;
    *out = g;
    return VYRE_OK;
}

int vyre_graph_launch(vyre_graph *g, void *stream, vyre_error *err)
{
    if (__builtin_expect(!g, 0))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_graph_launch: NULL graph");
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_BATCH_DISPATCH);
    CUresult r = g->launch(g->exec, stream ? (CUstream)stream : g->stream);
    vyre_nvtx_pop();
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        return vyre__cuda_check(r, "cuGraphLaunch", err);
    vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 1);
    vyre_counter_add(VYRE_CTR_BATCH_DISPATCHES, 1);
    vyre_counter_add(VYRE_CTR_LAUNCHES, g->kernels);
    vyre__pipeline_telemetry_point();
    return VYRE_OK;
}

size_t vyre_graph_kernels(const vyre_graph *g)
{
    return g ? g->kernels : 0;
}

void *vyre_graph_cu_exec(const vyre_graph *g)
{
    return g ? (void *)g->exec : NULL;
}

void vyre_graph_free(vyre_graph *g)
{
    if (!g)
        return;
    if (!vyre__ctx_make_current(g->ctx, NULL))
        (void)g->ctx->cu->cuGraphExecDestroy(g->exec);
    free(g);
}
