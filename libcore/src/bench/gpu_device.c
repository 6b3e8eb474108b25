/*
 * gpu_device.c - a device under test, as every GPU suite and sweep opens
 * it (gpu_internal.h): its context, stream, event pair and L2 flush
 * buffer; the blocking kernel that holds the stream while a sample is
 * queued; the timing of an op (one event pair around it, host wall time
 * beside); CUDA graphs of an op; the event pair's own cost; the batch view
 * and the notes every GPU point gets; and the pieces of a point the suites
 * share (point_init, measure_opts, compile_src, the copy counters).
 * The suites are suite_launch.c, suite_memcpy.c, suite_bandwidth.c and
 * suite_compile.c (dispatched by gpu_suites.c), reference_gpu.c and
 * sweep_run.c. See vyre/bench.h for what each measures.
 *
 * Timing: GPU time comes from a pair of CUDA events recorded on the ctx's
 * stream around the work, queued behind the blocking kernel (time_pair:
 * the start is stamped only once the work is queued too), read after
 * cuEventSynchronize; host wall time is CLOCK_MONOTONIC around the same
 * span. Launch-cost points are host measurements by nature (the GPU runs
 * an empty kernel) and say so (mode host, timer wall). Cold mode writes a
 * buffer twice the L2 size before each sample, untimed, then holds the
 * stream: the flush is done by the time the start event is stamped, and
 * the hold touches one host-mapped word, so the sample starts with nothing
 * useful in L2 and without the launch gap (holding first and flushing
 * behind the hold would give the same, with the flush inside the span the
 * host must enqueue before releasing). Each hot GPU point also gets the
 * batch view after its samples (vyre__gpu_finish_views).
 *
 * Measured on an H100 80GB HBM3 (README): the hold takes a 1.5 us Triton
 * kernel's event time from 8.96 to 3.68 us (graph replay 1.49 us); the
 * ~2.3 us left is the cost of an event pair around one launch, which hot
 * sweep samples have taken off (vyre__gpu_event_overhead), and which the
 * batch view (a CUDA graph of the launches) and the CUPTI view do without.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "cuda/cuda_internal.h"
#include "cuda/pipeline_internal.h"
#include "vyre/counters.h"
#include "vyre/cuda.h"
#include "vyre/pipeline.h"
#include "vyre/telemetry.h"

/* ---- a device under test ----------------------------------------------------- */

/* The blocking kernel gives up after this long unreleased (the host
 * enqueues a sample's events and launches in microseconds to a millisecond;
 * seconds mean the release was lost). */
#define BLOCK_TIMEOUT_NS 5000000000ull
/* Timeouts in a row after which a device's samples go without it for the
 * rest of the run, every round (the GPU cannot see the host's writes, or
 * something else holds it): the run goes on, and its points say so. */
#define BLOCK_GIVE_UP 3

static int nvml_index_for(vyre_gpu_monitor *mon, const char *uuid)
{
    if (!mon)
        return -1;
    vyre_gpu_snapshot *s = malloc(sizeof *s);
    int idx = -1;
    if (s && vyre_gpu_monitor_sample(mon, s, NULL) == 0)
        for (unsigned i = 0; i < s->ngpus; i++)
            if (vyre_gpu_field_valid(&s->gpus[i], VYRE_GPU_F_UUID) &&
                strcmp(s->gpus[i].uuid, uuid) == 0)
                idx = (int)i;
    free(s);
    return idx;
}

void vyre__gpu_close(struct vyre__gpu *g)
{
    if (g->cu && g->ctx) {
        vyre_ctx_make_current(g->ctx, NULL);
        g->cu->cuStreamSynchronize(g->stream);
        if (g->e0)
            g->cu->cuEventDestroy(g->e0);
        if (g->e1)
            g->cu->cuEventDestroy(g->e1);
        if (g->flush)
            g->cu->cuMemFree(g->flush);
        if (g->block_mod)
            g->cu->cuModuleUnload(g->block_mod);
        if (g->block_host)
            g->cu->cuMemFreeHost((void *)(uintptr_t)g->block_host);
    }
    vyre_ctx_close(g->ctx);
    memset(g, 0, sizeof *g);
}

/* Loads the blocking kernel (PTX, through the driver's JIT) and maps its
 * two words of host memory into the device. */
static int block_open(struct vyre__gpu *g, vyre_error *err)
{
    const vyre__cuda_fns *cu = g->cu;
    if (!cu->cuMemHostAlloc || !cu->cuMemHostGetDevicePointer || !cu->cuModuleLoadData ||
        !cu->cuModuleGetFunction || !cu->cuLaunchKernel)
        return vyre__fail(err, VYRE_ENODRIVER,
                          "update the NVIDIA driver, or measure without the blocking kernel "
                          "(--disable-blocking-kernel)",
                          "the driver lacks the mapped-memory or module calls of the blocking "
                          "kernel");
    void *host = NULL;
    int rc =
        vyre__cuda_check(cu->cuMemHostAlloc(&host, 2 * sizeof(uint32_t),
                                            CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                         "cuMemHostAlloc(DEVICEMAP)", err);
    if (rc)
        return rc;
    g->block_host = host;
    g->block_host[0] = 0;
    g->block_host[1] = 0;
    if ((rc = vyre__cuda_check(cu->cuMemHostGetDevicePointer(&g->block_dev, host, 0),
                               "cuMemHostGetDevicePointer", err)) ||
        (rc = vyre__cuda_check(cu->cuModuleLoadData(&g->block_mod, vyre__bench_block_ptx),
                               "cuModuleLoadData(the blocking kernel's PTX)", err)) ||
        (rc = vyre__cuda_check(
             cu->cuModuleGetFunction(&g->block_fn, g->block_mod, VYRE__BENCH_BLOCK_KERNEL),
             "cuModuleGetFunction(" VYRE__BENCH_BLOCK_KERNEL ")", err))) {
        g->block_fn = NULL;
        if (err && !err->hint[0])
            vyre__strlcpy(err->hint, "measure without it: --disable-blocking-kernel",
                          sizeof err->hint);
        return rc;
    }
    g->block_timeout_ns = BLOCK_TIMEOUT_NS;
    /* Without it, samples are not corrected (vyre__gpu_event_overhead): not an error. */
    if (cu->cuModuleGetFunction(&g->empty_fn, g->block_mod, "vyre_empty") != CUDA_SUCCESS)
        g->empty_fn = NULL;
    return VYRE_OK;
}

int vyre__gpu_open(vyre_bench_env *env, int device, struct vyre__gpu *g, vyre_error *err)
{
    memset(g, 0, sizeof *g);
    g->device = device;
    int rc = vyre_cuda_device_info(device, &g->info, err);
    if (!rc)
        rc = vyre_ctx_open(device, NULL, &g->ctx, err);
    if (rc)
        return rc;
    g->cu = vyre__cuda();
    g->stream = (CUstream)vyre_ctx_info_get(g->ctx)->cu_stream;
    if (!g->cu->cuEventCreate || !g->cu->cuEventElapsedTime || !g->cu->cuMemsetD32Async) {
        vyre__gpu_close(g);
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks the event or memset calls the bench needs");
    }
    if ((rc = vyre__cuda_check(g->cu->cuEventCreate(&g->e0, CU_EVENT_DEFAULT), "cuEventCreate",
                               err)) ||
        (rc = vyre__cuda_check(g->cu->cuEventCreate(&g->e1, CU_EVENT_DEFAULT), "cuEventCreate",
                               err))) {
        vyre__gpu_close(g);
        return rc;
    }
    /* Cold mode's flush: twice the L2, at least 8 MiB; on a GPU with a
     * large L2 (16 MiB and more) at least 256 MiB, as
     * triton.testing.do_bench, which cold mode is compared with: on an
     * H100 (50 MB of L2) twice the L2 read 2-10 us kernels 4-6% shorter
     * than do_bench did (issue 23). Tried and measured the same (H100,
     * 1-3 M axpy, 8.77/13.28/17.73 us either way): this flush queued behind
     * the hold, right before the start event, as do_bench queues its own;
     * and the flush as a fill kernel (torch's zero_) instead of the
     * driver's memset (within 1% in PyTorch). What does differ is do_bench's
     * queue: it enqueues every rep before one sync, and the same PyTorch
     * loop synchronised after each sample (as here and in nvbench) reads
     * 8.7-8.8 us at 1 M, not do_bench's 9.9 us (README). */
    size_t l2 = (size_t)(g->info.l2_cache_bytes > 0 ? g->info.l2_cache_bytes : 0);
    size_t bytes = l2 * 2;
    if (bytes < (8u << 20))
        bytes = 8u << 20;
    if (l2 >= (16u << 20) && bytes < (256u << 20))
        bytes = 256u << 20;
    g->flush_words = bytes / 4;
    if ((rc = vyre__cuda_check(g->cu->cuMemAlloc(&g->flush, bytes), "cuMemAlloc", err))) {
        vyre__gpu_close(g);
        return rc;
    }
    g->nvml_index = nvml_index_for(env->mon, g->info.uuid);
    g->stop = env->stop;
    size_t slot = 0;
    while (slot < env->ndevices && env->devices[slot] != device)
        slot++;
    g->bs = &env->block[slot < VYRE__BENCH_DEVICES_MAX ? slot : 0];
    g->discarded = &env->block_discarded;
    /* A quarter of --min-time, between 1 ms and half a second: the batch
     * view is a second opinion, not a second measurement of equal cost. */
    g->batch_target_ns = env->rule.min_time_s * 0.25e9;
    if (!(g->batch_target_ns >= 1e6))
        g->batch_target_ns = 1e6;
    if (g->batch_target_ns > 0.5e9)
        g->batch_target_ns = 0.5e9;
    if (!env->no_blocking && (rc = block_open(g, err))) {
        vyre__gpu_close(g);
        return rc;
    }
    return VYRE_OK;
}

int vyre__gpu_flush_l2(struct vyre__gpu *g, vyre_error *err)
{
    static unsigned v;
    return vyre__cuda_check(g->cu->cuMemsetD32Async(g->flush, ++v, g->flush_words, g->stream),
                            "cuMemsetD32Async", err);
}

/*
 * The blocking kernel's discipline (nvbench's): an event recorded on an
 * idle stream is stamped when the GPU reaches it, which is before the
 * next launch has even been submitted, so two events around one launch
 * measure the host's launch latency too (2-4 us kernels read 2.7-3.7x too
 * long on an H200, issue 23). So the stream is held first: a one-thread
 * kernel spins on a host-mapped flag; the start event, the work and the
 * stop event queue up behind it; the host then writes the flag, and the
 * GPU runs all of it back to back. The kernel gives up after
 * block_timeout_ns and says so in the second word: such a sample was
 * stamped without the hold, so it is discarded, counted and taken again;
 * BLOCK_GIVE_UP of them in a row and the device goes on without the hold.
 *
 * Not for work whose enqueue waits for the GPU (a copy from or to pageable
 * memory returns only once the GPU has moved it): behind a held stream it
 * would wait for the timeout every time. Such ops pass can_block = 0.
 */
static int block_arm(struct vyre__gpu *g, vyre_error *err)
{
    g->block_host[0] = 0;
    g->block_host[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    CUdeviceptr timed_out = g->block_dev + sizeof(uint32_t);
    uint64_t timeout = g->block_timeout_ns;
    void *args[] = {&g->block_dev, &timed_out, &timeout};
    return vyre__cuda_check(
        g->cu->cuLaunchKernel(g->block_fn, 1, 1, 1, 1, 1, 1, 0, g->stream, args, NULL),
        "cuLaunchKernel(the blocking kernel)", err);
}

static void block_release(struct vyre__gpu *g)
{
    __atomic_store_n((uint32_t *)(uintptr_t)&g->block_host[0], 1u, __ATOMIC_SEQ_CST);
}

/* After the stop event: did the hold end by its timeout? Counts it. */
static int block_timed_out(struct vyre__gpu *g)
{
    if (!__atomic_load_n((uint32_t *)(uintptr_t)&g->block_host[1], __ATOMIC_SEQ_CST)) {
        g->bs->in_row = 0;
        return 0;
    }
    (*g->discarded)++;
    if (++g->bs->in_row >= BLOCK_GIVE_UP)
        g->bs->gave_up = 1;
    return 1;
}

/* Whether the next sample is held: the op can be queued, the kernel is
 * loaded, and the device has not given it up. */
static int block_on(const struct vyre__gpu *g, int can_block)
{
    return can_block && g->block_fn && !g->bs->gave_up;
}

/* One pair of events around reps calls of op; *ms between them. */
static int time_pair(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned reps, int hold,
                     float *ms, vyre_error *err)
{
    const vyre__cuda_fns *cu = g->cu;
    int rc = hold ? block_arm(g, err) : VYRE_OK;
    int armed = hold && !rc;
    if (!rc)
        rc = vyre__cuda_check(cu->cuEventRecord(g->e0, g->stream), "cuEventRecord", err);
    for (unsigned i = 0; !rc && i < reps; i++)
        rc = op(octx, err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuEventRecord(g->e1, g->stream), "cuEventRecord", err);
    if (armed)
        block_release(g); /* on an error too: never leave the stream held */
    if (!rc)
        rc = vyre__cuda_check(cu->cuEventSynchronize(g->e1), "cuEventSynchronize", err);
    if (rc && armed)
        cu->cuStreamSynchronize(g->stream);
    if (!rc)
        rc = vyre__cuda_check(cu->cuEventElapsedTime(ms, g->e0, g->e1), "cuEventElapsedTime", err);
    return rc;
}

int vyre__gpu_time(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, int reps, int can_block,
                   double *gpu_ns, double *wall_ns, vyre_error *err)
{
    for (;;) {
        int hold = block_on(g, can_block);
        uint64_t t0 = vyre__mono_ns();
        float ms = 0;
        int rc = time_pair(g, op, octx, (unsigned)reps, hold, &ms, err);
        uint64_t t1 = vyre__mono_ns();
        if (rc)
            return rc;
        if (hold && block_timed_out(g))
            continue; /* stamped without the hold: taken again */
        *gpu_ns = (double)ms * 1e6 / reps;
        *wall_ns = (double)(t1 - t0);
        return VYRE_OK;
    }
}

/*
 * reps calls of op queued behind the hold, released together and waited
 * for: the CUPTI pass's launches then run back to back, as in a busy
 * stream, not one by one as the host submits them (each launch with CUPTI
 * on takes the host longer than a 2-10 us kernel runs, so the GPU idled
 * between them). A hold that timed out costs nothing here (the launches
 * ran all the same, only spread out); no hold when it is off.
 */
int vyre__gpu_run_held(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned reps,
                       vyre_error *err)
{
    int hold = block_on(g, 1);
    int rc = hold ? block_arm(g, err) : VYRE_OK;
    int armed = hold && !rc;
    for (unsigned i = 0; !rc && i < reps; i++)
        rc = op(octx, err);
    if (armed)
        block_release(g); /* on an error too: never leave the stream held */
    CUresult s = g->cu->cuStreamSynchronize(g->stream);
    return rc ? rc : vyre__cuda_check(s, "cuStreamSynchronize", err);
}

/* ---- CUDA graphs of an op, and the event pair's own cost -------------------------------- */

/* n calls of op captured from g's stream into an instantiated graph (the
 * op must launch on g->stream: the sweeps' and the references' do). */
static int graph_build(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned n,
                       CUgraphExec *out, vyre_error *err)
{
    const vyre__cuda_fns *cu = g->cu;
    *out = NULL;
    if (!cu->cuStreamBeginCapture || !cu->cuStreamEndCapture || !cu->cuGraphInstantiateWithFlags ||
        !cu->cuGraphLaunch || !cu->cuGraphExecDestroy || !cu->cuGraphDestroy)
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks the CUDA graph calls");
    int rc =
        vyre__cuda_check(cu->cuStreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                         "cuStreamBeginCapture", err);
    if (rc)
        return rc;
    for (unsigned i = 0; !rc && i < n; i++)
        rc = op(octx, err);
    CUgraph graph = NULL;
    CUresult end = cu->cuStreamEndCapture(g->stream, &graph); /* on an error too */
    if (!rc)
        rc = vyre__cuda_check(end, "cuStreamEndCapture", err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuGraphInstantiateWithFlags(out, graph, 0),
                              "cuGraphInstantiateWithFlags", err);
    if (graph)
        cu->cuGraphDestroy(graph);
    return rc;
}

struct graph_op {
    struct vyre__gpu *g;
    CUgraphExec exec;
};

static int graph_op(void *ctx, vyre_error *err)
{
    struct graph_op *o = ctx;
    return vyre__cuda_check(o->g->cu->cuGraphLaunch(o->exec, o->g->stream), "cuGraphLaunch", err);
}

static int empty_op(void *ctx, vyre_error *err)
{
    struct vyre__gpu *g = ctx;
    return vyre__cuda_check(
        g->cu->cuLaunchKernel(g->empty_fn, 1, 1, 1, 32, 1, 1, 0, g->stream, NULL, NULL),
        "cuLaunchKernel(the empty kernel)", err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double vyre__bench_event_overhead(double *held, size_t n, double *replays, size_t m,
                                  unsigned launches)
{
    if (!held || !replays || !n || !m || !launches)
        return 0;
    double d = median_of(held, n) - median_of(replays, m) / launches;
    return isfinite(d) && d > 0 ? d : 0;
}

#define OVERHEAD_SAMPLES 31
#define OVERHEAD_WARMUP  3
#define OVERHEAD_GRAPH   100

/*
 * The event pair's own cost on g, in ns: what two events around one held
 * launch add to the kernel's time in a stream of launches. Measured on the
 * empty kernel as (held event time of one launch) - (per launch time of a
 * CUDA graph of OVERHEAD_GRAPH launches), the two interleaved, medians of
 * OVERHEAD_SAMPLES, once per device per suite and round (a few ms). Hot
 * samples of a sweep have it subtracted, as hyperfine subtracts the
 * shell's spawn time: what is left is the kernel's time inside a stream,
 * the CUDA-graph time of do_bench_cudagraph. Measured on an H100 80GB
 * HBM3 (README): about 2 us. 0 without the hold, the empty kernel or
 * graphs (nothing subtracted), and after any failure.
 */
double vyre__gpu_event_overhead(struct vyre__gpu *g)
{
    if (g->overhead_state)
        return g->overhead_state > 0 ? g->overhead_ns : 0;
    g->overhead_state = -1;
    if (!g->empty_fn || !block_on(g, 1))
        return 0;
    vyre_error e;
    vyre_error_clear(&e);
    struct graph_op go = {g, NULL};
    double held[OVERHEAD_SAMPLES], replay[OVERHEAD_SAMPLES], wall;
    int rc = graph_build(g, empty_op, g, OVERHEAD_GRAPH, &go.exec, &e);
    for (int i = -OVERHEAD_WARMUP; !rc && i < OVERHEAD_SAMPLES; i++) {
        double h = 0, r = 0;
        rc = vyre__gpu_time(g, empty_op, g, 1, 1, &h, &wall, &e);
        if (!rc)
            rc = vyre__gpu_time(g, graph_op, &go, 1, 1, &r, &wall, &e);
        if (i >= 0) {
            held[i] = h;
            replay[i] = r;
        }
    }
    if (go.exec)
        g->cu->cuGraphExecDestroy(go.exec);
    if (rc || block_on(g, 1) == 0)
        return 0; /* the hold timed out meanwhile: no figure to trust */
    g->overhead_ns = vyre__bench_event_overhead(held, OVERHEAD_SAMPLES, replay, OVERHEAD_SAMPLES,
                                                OVERHEAD_GRAPH);
    g->overhead_state = 1;
    return g->overhead_ns;
}

/* ---- the batch view and the notes of the views ---------------------------------------- */

int vyre__gpu_run_batch(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned launches,
                        double *per_launch_ns, vyre_error *err)
{
    *per_launch_ns = 0;
    if (launches == 0)
        return VYRE_OK;
    vyre_error e;
    vyre_error_clear(&e);
    struct graph_op go = {g, NULL};
    if (launches > 1 && graph_build(g, op, octx, launches, &go.exec, &e))
        vyre_error_clear(&e); /* one by one, as the batch view falls back */
    int hold = block_on(g, 1);
    float ms = 0;
    int rc = go.exec ? time_pair(g, graph_op, &go, 1, hold, &ms, err)
                     : time_pair(g, op, octx, launches, hold, &ms, err);
    if (go.exec) {
        g->cu->cuStreamSynchronize(g->stream);
        g->cu->cuGraphExecDestroy(go.exec);
    }
    if (!rc && !(hold && block_timed_out(g)))
        *per_launch_ns = (double)ms * 1e6 / launches;
    return rc;
}

void vyre__bench_batch_plan(double sample_ns, double target_ns, unsigned *launches, unsigned *pairs)
{
    *launches = 1;
    *pairs = 1;
    if (!(sample_ns > 0) || !(target_ns > 0) || !isfinite(sample_ns))
        return;
    double want = ceil(target_ns / sample_ns); /* launches in all */
    if (!(want <= VYRE__BENCH_BATCH_LAUNCHES_MAX))
        want = VYRE__BENCH_BATCH_LAUNCHES_MAX;
    *launches = want >= 1 ? (unsigned)want : 1u;
    double np = ceil(target_ns / (sample_ns * *launches));
    if (!(np <= VYRE__BENCH_BATCH_PAIRS_MAX))
        np = isfinite(target_ns) ? VYRE__BENCH_BATCH_PAIRS_MAX : 1;
    *pairs = np >= 1 ? (unsigned)np : 1u;
}

void vyre__gpu_append_note(vyre_bench_point *pt, const char *text)
{
    size_t len = strlen(pt->note);
    snprintf(pt->note + len, sizeof pt->note - len, "%s%s", len ? "; " : "", text);
}

/*
 * The batch view of a hot GPU point: as many back-to-back calls of op
 * between two events as fill batch_target_ns, per call: what the work
 * costs inside a busy stream. Ops that launch kernels (graph) are captured
 * into a CUDA graph of `launches` calls and each pair of events times one
 * replay, held: the GPU runs them as do_bench_cudagraph does. Launched one
 * by one instead (nvbench's batch), a 1.5 us kernel read 2.35 us a launch
 * on an H100 against 1.49 us in a graph: the GPU's front end needs about
 * 2.3 us per stream launch, which is not the kernel's cost. Other ops (and
 * a graph that cannot be built) go one by one, at most
 * VYRE__BENCH_BATCH_LAUNCHES_MAX a pair, all queued behind the blocking
 * kernel. Samples its holds discard are counted in *g->discarded, which
 * the point runner adds to the point's own (bench.c). A failure is a
 * note: the samples are what the point is for.
 */
static void batch_view(vyre_bench_point *pt, struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx,
                       int can_block, int graph)
{
    unsigned launches = 1, pairs = 1;
    double items = pt->items >= 1 ? pt->items : 1;
    vyre__bench_batch_plan(pt->stats.median * items, g->batch_target_ns, &launches, &pairs);
    vyre_error e;
    vyre_error_clear(&e);
    struct graph_op go = {g, NULL};
    if (graph && launches > 1 && graph_build(g, op, octx, launches, &go.exec, &e))
        vyre_error_clear(&e); /* one by one, below */
    double total_ms = 0;
    unsigned done = 0;
    int rc = VYRE_OK;
    for (unsigned i = 0; !rc && i < pairs && !(g->stop && *g->stop); i++) {
        int hold = block_on(g, can_block);
        float ms = 0;
        rc = go.exec ? time_pair(g, graph_op, &go, 1, hold, &ms, &e)
                     : time_pair(g, op, octx, launches, hold, &ms, &e);
        if (!rc && hold && block_timed_out(g))
            continue;
        total_ms += rc ? 0 : ms;
        done += rc ? 0 : launches;
    }
    if (go.exec) {
        g->cu->cuStreamSynchronize(g->stream);
        g->cu->cuGraphExecDestroy(go.exec);
    }
    if (rc) {
        char note[200];
        /* bounded: a point's note is a fixed field */
        snprintf(note, sizeof note, "no batch time: %.160s", e.message);
        vyre__gpu_append_note(pt, note);
    } else if (done) {
        pt->batch_ns = total_ms * 1e6 / done / items;
    }
}

void vyre__gpu_finish_views(vyre_bench_point *pt, struct vyre__gpu *g, vyre__gpu_op_fn op,
                            void *octx, int can_block, int graph)
{
    if (pt->gpu_timer && pt->mode == VYRE_BENCH_HOT && !(g->stop && *g->stop))
        batch_view(pt, g, op, octx, can_block, graph);
    char note[160];
    if (pt->gpu_timer && g->block_fn && can_block && g->bs->gave_up) {
        snprintf(note, sizeof note,
                 "blocking kernel off after %d timeouts in a row: times include launch latency",
                 BLOCK_GIVE_UP);
        vyre__gpu_append_note(pt, note);
    } else if (pt->gpu_timer && g->block_fn && !can_block) {
        vyre__gpu_append_note(pt, "no blocking kernel: a pageable copy waits for the GPU");
    }
}

void vyre__gpu_point_init(vyre_bench_point *pt, const char *suite, const char *bench,
                          const char *axes, const struct vyre__gpu *g, vyre_bench_mode mode,
                          int gpu_timer)
{
    memset(pt, 0, sizeof *pt);
    vyre__strlcpy(pt->suite, suite, sizeof pt->suite);
    vyre__strlcpy(pt->benchmark, bench, sizeof pt->benchmark);
    vyre__strlcpy(pt->axes, axes, sizeof pt->axes);
    pt->device = g->device;
    pt->mode = mode;
    pt->gpu_timer = gpu_timer;
    pt->items = 1;
}

void vyre__gpu_measure_opts(vyre_bench_measure_opts *o, vyre_bench_env *env, struct vyre__gpu *g)
{
    memset(o, 0, sizeof *o);
    o->warmup = 2;
    o->rule = env->rule;
    o->mon = env->mon;
    o->nvml_index = g->nvml_index;
    o->stop = env->stop;
}

int vyre__gpu_compile_src(struct vyre__gpu *g, const char *src, const char *entry,
                          vyre_pipeline **p, vyre_error *err)
{
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUDA_C;
    d.src = src;
    d.len = strlen(src);
    d.entry = entry;
    return vyre_pipeline_compile(g->ctx, &d, p, err);
}

int vyre__gpu_prepare_cold(void *ctx, vyre_error *err)
{
    struct vyre__gpu **g = ctx; /* every bench struct here starts with its gpu */
    return vyre__gpu_flush_l2(*g, err);
}

/* ---- copies issued outside vyre's dispatch ------------------------------------------- */

/* The memcpy and bandwidth suites' copies go straight to the driver,
 * outside vyre's dispatch: count them as the dispatch path counts its own,
 * and publish as it does (at most every publish interval), so that
 * vyre-top's copy rates show what the bench moves. */
void vyre__gpu_count_copy(enum vyre__gpu_copy_dir dir, size_t bytes)
{
    switch (dir) {
    case VYRE__GPU_H2D:
        vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, bytes);
        break;
    case VYRE__GPU_D2H:
        vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, bytes);
        break;
    default:
        vyre_counter_add(VYRE_CTR_D2D_BYTES, bytes);
        break;
    }
    vyre_telemetry *t = vyre_telemetry_global(NULL);
    if (t)
        vyre_telemetry_maybe_publish(t, vyre__now_ns_fast());
}
