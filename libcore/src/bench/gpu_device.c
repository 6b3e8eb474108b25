/*
 * bench_gpu.c - the GPU suites (launch, memcpy, bandwidth, compile), user
 * sweeps, the compile suite's cold-JIT child (run again through
 * base/subprocess.c), and the run's GPU facts. See
 * vyre/bench.h for what each measures.
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
 * batch view after its samples (finish_views).
 *
 * Measured on an H100 80GB HBM3 (README): the hold takes a 1.5 us Triton
 * kernel's event time from 8.96 to 3.68 us (graph replay 1.49 us); the
 * ~2.3 us left is the cost of an event pair around one launch, which hot
 * sweep samples have taken off (event_overhead), and which the batch view
 * (a CUDA graph of the launches) and the CUPTI view do without.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "bench/bench_internal.h"
#include "bench/sweep_spec.h"
#include "cuda/cuda_internal.h"
#include "base/internal.h"
#include "base/subprocess.h"
#include "vyre/compile.h"
#include "vyre/counters.h"
#include "vyre/telemetry.h"
#include "vyre/cuda.h"
#include "vyre/jitcache.h"
#include "vyre/nvrtc.h"
#include "vyre/pipeline.h"
#include "vyre/units.h"
#include "vyre/version.h"

/* ---- a device under test ----------------------------------------------------- */

/* The blocking kernel gives up after this long unreleased (the host
 * enqueues a sample's events and launches in microseconds to a millisecond;
 * seconds mean the release was lost). */
#define BLOCK_TIMEOUT_NS 5000000000ull
/* Timeouts in a row after which a device's samples go without it for the
 * rest of the run, every round (the GPU cannot see the host's writes, or
 * something else holds it): the run goes on, and its points say so. */
#define BLOCK_GIVE_UP 3

struct gpu {
    vyre_ctx *ctx;
    const vyre__cuda_fns *cu;
    CUstream stream;
    CUevent e0, e1;
    int device;
    int nvml_index;
    vyre_device_info info;
    CUdeviceptr flush;
    size_t flush_words;
    /* the blocking kernel (NULL block_fn: off) and its host-mapped words:
     * word[0] the release flag, word[1] set by the kernel when it timed out */
    CUmodule block_mod;
    CUfunction block_fn;
    volatile uint32_t *block_host;
    CUdeviceptr block_dev;
    uint64_t block_timeout_ns;
    /* the empty kernel of the same module, and the event pair's own cost
     * measured on it (event_overhead): 0 not yet, 1 measured, -1 failed */
    CUfunction empty_fn;
    double overhead_ns;
    int overhead_state;
    /* Kept in the run's env, not here: this struct lives for one suite in
     * one round, and a point's rounds are interleaved with the others'.
     * discarded: env->block_discarded, which the point runner hands to the
     * point being measured; bs: the device's timeouts in a row and whether
     * its hold is off for the rest of the run. */
    size_t *discarded;
    struct vyre__bench_block_state *bs;
    double batch_target_ns; /* the batch view's time per point */
    const volatile sig_atomic_t *stop;
};

static int cu_ok(CUresult r, const char *call, vyre_error *err)
{
    return vyre__cuda_check(r, call, err);
}

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

static void gpu_close(struct gpu *g)
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
static int block_open(struct gpu *g, vyre_error *err)
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
    int rc = cu_ok(cu->cuMemHostAlloc(&host, 2 * sizeof(uint32_t),
                                      CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                   "cuMemHostAlloc(DEVICEMAP)", err);
    if (rc)
        return rc;
    g->block_host = host;
    g->block_host[0] = 0;
    g->block_host[1] = 0;
    if ((rc = cu_ok(cu->cuMemHostGetDevicePointer(&g->block_dev, host, 0),
                    "cuMemHostGetDevicePointer", err)) ||
        (rc = cu_ok(cu->cuModuleLoadData(&g->block_mod, vyre__bench_block_ptx),
                    "cuModuleLoadData(the blocking kernel's PTX)", err)) ||
        (rc = cu_ok(cu->cuModuleGetFunction(&g->block_fn, g->block_mod, "vyre_block_stream"),
                    "cuModuleGetFunction(vyre_block_stream)", err))) {
        g->block_fn = NULL;
        if (err && !err->hint[0])
            vyre__strlcpy(err->hint, "measure without it: --disable-blocking-kernel",
                          sizeof err->hint);
        return rc;
    }
    g->block_timeout_ns = BLOCK_TIMEOUT_NS;
    /* Without it, samples are not corrected (event_overhead): not an error. */
    if (cu->cuModuleGetFunction(&g->empty_fn, g->block_mod, "vyre_empty") != CUDA_SUCCESS)
        g->empty_fn = NULL;
    return VYRE_OK;
}

static int gpu_open(vyre_bench_env *env, int device, struct gpu *g, vyre_error *err)
{
    memset(g, 0, sizeof *g);
    g->device = device;
    int rc = vyre_cuda_device_info(device, &g->info, err);
    if (!rc)
        rc = vyre_ctx_open(device, NULL, &g->ctx, err);
    if (rc)
        return rc;
    g->cu = vyre__cuda();
    g->stream = (CUstream)vyre_ctx_cu_stream(g->ctx);
    if (!g->cu->cuEventCreate || !g->cu->cuEventElapsedTime || !g->cu->cuMemsetD32Async) {
        gpu_close(g);
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks the event or memset calls the bench needs");
    }
    if ((rc = cu_ok(g->cu->cuEventCreate(&g->e0, CU_EVENT_DEFAULT), "cuEventCreate", err)) ||
        (rc = cu_ok(g->cu->cuEventCreate(&g->e1, CU_EVENT_DEFAULT), "cuEventCreate", err))) {
        gpu_close(g);
        return rc;
    }
    /* Cold mode's flush: twice the L2, at least 8 MiB; on a GPU with a
     * large L2 (16 MiB and more) at least 256 MiB, as
     * triton.testing.do_bench, which cold mode is compared with: on an
     * H100 (50 MB of L2) twice the L2 read 2-10 us kernels 4-6% shorter
     * than do_bench did (issue 23). */
    size_t l2 = (size_t)(g->info.l2_cache_bytes > 0 ? g->info.l2_cache_bytes : 0);
    size_t bytes = l2 * 2;
    if (bytes < (8u << 20))
        bytes = 8u << 20;
    if (l2 >= (16u << 20) && bytes < (256u << 20))
        bytes = 256u << 20;
    g->flush_words = bytes / 4;
    if ((rc = cu_ok(g->cu->cuMemAlloc(&g->flush, bytes), "cuMemAlloc", err))) {
        gpu_close(g);
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
        gpu_close(g);
        return rc;
    }
    return VYRE_OK;
}

static int flush_l2(struct gpu *g, vyre_error *err)
{
    static unsigned v;
    return cu_ok(g->cu->cuMemsetD32Async(g->flush, ++v, g->flush_words, g->stream),
                 "cuMemsetD32Async", err);
}

/* Times reps calls of op on the stream: GPU ns per call (events), wall ns
 * of the whole. */
typedef int (*gpu_op_fn)(void *ctx, vyre_error *err);

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
static int block_arm(struct gpu *g, vyre_error *err)
{
    g->block_host[0] = 0;
    g->block_host[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    CUdeviceptr timed_out = g->block_dev + sizeof(uint32_t);
    uint64_t timeout = g->block_timeout_ns;
    void *args[] = {&g->block_dev, &timed_out, &timeout};
    return cu_ok(g->cu->cuLaunchKernel(g->block_fn, 1, 1, 1, 1, 1, 1, 0, g->stream, args, NULL),
                 "cuLaunchKernel(the blocking kernel)", err);
}

static void block_release(struct gpu *g)
{
    __atomic_store_n((uint32_t *)(uintptr_t)&g->block_host[0], 1u, __ATOMIC_SEQ_CST);
}

/* After the stop event: did the hold end by its timeout? Counts it. */
static int block_timed_out(struct gpu *g)
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
static int block_on(const struct gpu *g, int can_block)
{
    return can_block && g->block_fn && !g->bs->gave_up;
}

/* One pair of events around reps calls of op; *ms between them. */
static int time_pair(struct gpu *g, gpu_op_fn op, void *octx, unsigned reps, int hold, float *ms,
                     vyre_error *err)
{
    const vyre__cuda_fns *cu = g->cu;
    int rc = hold ? block_arm(g, err) : VYRE_OK;
    int armed = hold && !rc;
    if (!rc)
        rc = cu_ok(cu->cuEventRecord(g->e0, g->stream), "cuEventRecord", err);
    for (unsigned i = 0; !rc && i < reps; i++)
        rc = op(octx, err);
    if (!rc)
        rc = cu_ok(cu->cuEventRecord(g->e1, g->stream), "cuEventRecord", err);
    if (armed)
        block_release(g); /* on an error too: never leave the stream held */
    if (!rc)
        rc = cu_ok(cu->cuEventSynchronize(g->e1), "cuEventSynchronize", err);
    if (rc && armed)
        cu->cuStreamSynchronize(g->stream);
    if (!rc)
        rc = cu_ok(cu->cuEventElapsedTime(ms, g->e0, g->e1), "cuEventElapsedTime", err);
    return rc;
}

static int time_gpu(struct gpu *g, gpu_op_fn op, void *octx, int reps, int can_block,
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

/* ---- CUDA graphs of an op, and the event pair's own cost -------------------------------- */

/* n calls of op captured from g's stream into an instantiated graph (the
 * op must launch on g->stream: the sweeps' and the references' do). */
static int graph_build(struct gpu *g, gpu_op_fn op, void *octx, unsigned n, CUgraphExec *out,
                       vyre_error *err)
{
    const vyre__cuda_fns *cu = g->cu;
    *out = NULL;
    if (!cu->cuStreamBeginCapture || !cu->cuStreamEndCapture || !cu->cuGraphInstantiateWithFlags ||
        !cu->cuGraphLaunch || !cu->cuGraphExecDestroy || !cu->cuGraphDestroy)
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks the CUDA graph calls");
    int rc = cu_ok(cu->cuStreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                   "cuStreamBeginCapture", err);
    if (rc)
        return rc;
    for (unsigned i = 0; !rc && i < n; i++)
        rc = op(octx, err);
    CUgraph graph = NULL;
    CUresult end = cu->cuStreamEndCapture(g->stream, &graph); /* on an error too */
    if (!rc)
        rc = cu_ok(end, "cuStreamEndCapture", err);
    if (!rc)
        rc = cu_ok(cu->cuGraphInstantiateWithFlags(out, graph, 0), "cuGraphInstantiateWithFlags",
                   err);
    if (graph)
        cu->cuGraphDestroy(graph);
    return rc;
}

struct graph_op {
    struct gpu *g;
    CUgraphExec exec;
};

static int graph_op(void *ctx, vyre_error *err)
{
    struct graph_op *o = ctx;
    return cu_ok(o->g->cu->cuGraphLaunch(o->exec, o->g->stream), "cuGraphLaunch", err);
}

static int empty_op(void *ctx, vyre_error *err)
{
    struct gpu *g = ctx;
    return cu_ok(g->cu->cuLaunchKernel(g->empty_fn, 1, 1, 1, 32, 1, 1, 0, g->stream, NULL, NULL),
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
static double event_overhead(struct gpu *g)
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
        rc = time_gpu(g, empty_op, g, 1, 1, &h, &wall, &e);
        if (!rc)
            rc = time_gpu(g, graph_op, &go, 1, 1, &r, &wall, &e);
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

static void append_note(vyre_bench_point *pt, const char *text)
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
static void batch_view(vyre_bench_point *pt, struct gpu *g, gpu_op_fn op, void *octx, int can_block,
                       int graph)
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
        snprintf(note, sizeof note, "no batch time: %.160s", e.message);
        append_note(pt, note);
    } else if (done) {
        pt->batch_ns = total_ms * 1e6 / done / items;
    }
}

static void finish_views(vyre_bench_point *pt, struct gpu *g, gpu_op_fn op, void *octx,
                         int can_block, int graph)
{
    if (pt->gpu_timer && pt->mode == VYRE_BENCH_HOT && !(g->stop && *g->stop))
        batch_view(pt, g, op, octx, can_block, graph);
    char note[160];
    if (pt->gpu_timer && g->block_fn && can_block && g->bs->gave_up) {
        snprintf(note, sizeof note,
                 "blocking kernel off after %d timeouts in a row: times include launch latency",
                 BLOCK_GIVE_UP);
        append_note(pt, note);
    } else if (pt->gpu_timer && g->block_fn && !can_block) {
        append_note(pt, "no blocking kernel: a pageable copy waits for the GPU");
    }
}

static void point_init(vyre_bench_point *pt, const char *suite, const char *bench, const char *axes,
                       const struct gpu *g, vyre_bench_mode mode, int gpu_timer)
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

static void measure_opts(vyre_bench_measure_opts *o, vyre_bench_env *env, struct gpu *g)
{
    memset(o, 0, sizeof *o);
    o->warmup = 2;
    o->rule = env->rule;
    o->mon = env->mon;
    o->nvml_index = g->nvml_index;
    o->stop = env->stop;
}

static int compile_src(struct gpu *g, const char *src, const char *entry, vyre_pipeline **p,
                       vyre_error *err)
{
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUDA_C;
    d.src = src;
    d.len = strlen(src);
    d.entry = entry;
    return vyre_pipeline_compile(g->ctx, &d, p, err);
}

/* ---- launch ------------------------------------------------------------------- */

#define LAUNCH_BATCH    100
#define ROUNDTRIP_BATCH 20
#define GRAPH_KERNELS   32

struct launch_bench {
    struct gpu *g;
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
    return cu_ok(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize", err);
}

static int sample_roundtrip(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < ROUNDTRIP_BATCH; i++) {
        int rc = vyre_pipeline_launch(lb->p, &cfg, NULL, err);
        if (!rc)
            rc = cu_ok(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize", err);
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
    return cu_ok(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize", err);
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
    return cu_ok(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize", err);
}

static int kpass_graph(void *ctx, vyre_error *err)
{
    struct launch_bench *lb = ctx;
    int rc = vyre_graph_launch(lb->graph, NULL, err);
    return rc ? rc
              : cu_ok(lb->g->cu->cuStreamSynchronize(lb->g->stream), "cuStreamSynchronize", err);
}

static int run_launch(vyre_bench_env *env, struct gpu *g, vyre_error *err)
{
    struct launch_bench lb = {g, NULL, NULL};
    int rc = compile_src(g, vyre__bench_empty_src, "empty_kernel", &lb.p, err);
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
    measure_opts(&o, env, g);
    o.ctx = &lb;
    /* Their kernel passes come in run.c's records sweep, after every
     * timed pass of the run (see run.c). */
    vyre_bench_point pts[3];
    int timed = 0;
    char axes[32];
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        point_init(pt, "launch", "launch.stream", "", g, VYRE_BENCH_HOST, 0);
        pt->items = LAUNCH_BATCH;
        vyre__strlcpy(pt->note, "host cost of one cuLaunchKernel (vyre_pipeline_launch)",
                      sizeof pt->note);
        o.sample = sample_launch;
        rc = vyre__bench_point_run(env, pt, &o, 1, kpass_launch, NULL, &lb, err);
        timed += !rc;
    }
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        point_init(pt, "launch", "launch.roundtrip", "", g, VYRE_BENCH_HOST, 0);
        pt->items = ROUNDTRIP_BATCH;
        vyre__strlcpy(pt->note, "launch + cuStreamSynchronize", sizeof pt->note);
        o.sample = sample_roundtrip;
        rc = vyre__bench_point_run(env, pt, &o, 1, kpass_launch, NULL, &lb, err);
        timed += !rc;
    }
    if (!rc && !env->interrupted) {
        vyre_bench_point *pt = &pts[timed];
        snprintf(axes, sizeof axes, "kernels=%d", GRAPH_KERNELS);
        point_init(pt, "launch", "launch.graph", axes, g, VYRE_BENCH_HOST, 0);
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

/* ---- memcpy ------------------------------------------------------------------- */

static const size_t k_copy_sizes[] = {4096, 65536, 1u << 20, 16u << 20, 256u << 20};
static const size_t k_copy_sizes_quick[] = {65536, 16u << 20, 256u << 20};

enum copy_kind { C_H2D_PAGEABLE, C_H2D_PINNED, C_D2H_PAGEABLE, C_D2H_PINNED, C_D2D, C_NKINDS };
static const char *const k_copy_names[] = {"memcpy.h2d.pageable", "memcpy.h2d.pinned",
                                           "memcpy.d2h.pageable", "memcpy.d2h.pinned",
                                           "memcpy.d2d"};

struct copy_bench {
    struct gpu *g;
    enum copy_kind kind;
    size_t bytes;
    CUdeviceptr d0, d1;
    void *pinned, *pageable;
    int cold;
};

/* The memcpy suite's copies go straight to the driver, outside vyre's
 * dispatch: count them as the dispatch path counts its own, and publish as
 * it does (at most every publish interval), so that vyre-top's copy rates
 * show what the bench moves. */
static void count_copy(enum copy_kind kind, size_t bytes)
{
    switch (kind) {
    case C_H2D_PAGEABLE:
    case C_H2D_PINNED:
        vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, bytes);
        break;
    case C_D2H_PAGEABLE:
    case C_D2H_PINNED:
        vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, bytes);
        break;
    default:
        vyre_counter_add(VYRE_CTR_D2D_BYTES, bytes);
        break;
    }
    vyre_telemetry *t = vyre_telemetry_global();
    if (t)
        vyre_telemetry_maybe_publish(t, vyre__now_ns_fast());
}

static int copy_issue(struct copy_bench *cb, vyre_error *err)
{
    const vyre__cuda_fns *cu = cb->g->cu;
    CUstream s = cb->g->stream;
    switch (cb->kind) {
    case C_H2D_PAGEABLE:
        return cu_ok(cu->cuMemcpyHtoDAsync(cb->d0, cb->pageable, cb->bytes, s), "cuMemcpyHtoDAsync",
                     err);
    case C_H2D_PINNED:
        return cu_ok(cu->cuMemcpyHtoDAsync(cb->d0, cb->pinned, cb->bytes, s), "cuMemcpyHtoDAsync",
                     err);
    case C_D2H_PAGEABLE:
        return cu_ok(cu->cuMemcpyDtoHAsync(cb->pageable, cb->d0, cb->bytes, s), "cuMemcpyDtoHAsync",
                     err);
    case C_D2H_PINNED:
        return cu_ok(cu->cuMemcpyDtoHAsync(cb->pinned, cb->d0, cb->bytes, s), "cuMemcpyDtoHAsync",
                     err);
    default:
        return cu_ok(cu->cuMemcpyDtoDAsync(cb->d1, cb->d0, cb->bytes, s), "cuMemcpyDtoDAsync", err);
    }
}

static int copy_op(void *ctx, vyre_error *err)
{
    struct copy_bench *cb = ctx;
    int rc = copy_issue(cb, err);
    if (rc == 0)
        count_copy(cb->kind, cb->bytes);
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
    return time_gpu(cb->g, copy_op, cb, 1, copy_can_block(cb), value, wall, err);
}

static int prepare_cold(void *ctx, vyre_error *err)
{
    struct gpu **g = ctx; /* every bench struct here starts with its gpu */
    return flush_l2(*g, err);
}

static int kpass_copy(void *ctx, vyre_error *err)
{
    struct copy_bench *cb = ctx;
    int rc = copy_op(cb, err);
    return rc ? rc
              : cu_ok(cb->g->cu->cuStreamSynchronize(cb->g->stream), "cuStreamSynchronize", err);
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
    finish_views(pt, cb->g, copy_op, cb, copy_can_block(cb), 0);
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
    if ((rc = cu_ok(cu->cuMemAlloc(&cb->d0, max), "cuMemAlloc", err)) ||
        (rc = cu_ok(cu->cuMemAlloc(&cb->d1, max), "cuMemAlloc", err)) ||
        (rc = cu_ok(cu->cuMemAllocHost(&cb->pinned, max), "cuMemAllocHost", err)))
        return rc;
    cb->pageable = malloc(max);
    if (!cb->pageable)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of host memory for the memcpy suite");
    memset(cb->pageable, 1, max); /* fault the pages in */
    memset(cb->pinned, 1, max);
    return VYRE_OK;
}

static int run_memcpy(vyre_bench_env *env, struct gpu *g, vyre_error *err)
{
    const size_t *sizes = env->quick ? k_copy_sizes_quick : k_copy_sizes;
    size_t nsizes =
        env->quick ? VYRE_ARRAY_SIZE(k_copy_sizes_quick) : VYRE_ARRAY_SIZE(k_copy_sizes);
    struct copy_bench cb;
    memset(&cb, 0, sizeof cb);
    cb.g = g;
    int rc = copy_alloc(&cb, sizes[nsizes - 1], err);
    vyre_bench_measure_opts o;
    measure_opts(&o, env, g);
    o.ctx = &cb;
    o.sample = sample_copy;
    for (size_t s = 0; !rc && !env->interrupted && s < nsizes; s++)
        for (int k = 0; !rc && !env->interrupted && k < C_NKINDS; k++) {
            cb.kind = (enum copy_kind)k;
            cb.bytes = sizes[s];
            char axes[48];
            snprintf(axes, sizeof axes, "bytes=%zu", sizes[s]);
            vyre_bench_point pt;
            point_init(&pt, "memcpy", k_copy_names[k], axes, g, VYRE_BENCH_HOT, 1);
            pt.bytes = (double)sizes[s];
            rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_copy, finish_copy, &cb, err);
        }
    copy_free(&cb);
    return rc;
}

/* ---- bandwidth ------------------------------------------------------------------ */

#define BW_BYTES ((size_t)512 << 20)

struct bw_bench {
    struct gpu *g; /* first: prepare_cold */
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
        int rc = cu_ok(b->g->cu->cuMemcpyDtoDAsync(b->out, b->in, BW_BYTES, b->g->stream),
                       "cuMemcpyDtoDAsync", err);
        if (rc == 0)
            count_copy(C_D2D, BW_BYTES);
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
    return time_gpu(b->g, bw_op, b, 1, 1, value, wall, err);
}

static int kpass_bw(void *ctx, vyre_error *err)
{
    struct bw_bench *b = ctx;
    int rc = bw_op(b, err);
    return rc ? rc : cu_ok(b->g->cu->cuStreamSynchronize(b->g->stream), "cuStreamSynchronize", err);
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
    finish_views(pt, b->g, bw_op, b, 1, 0);
}

static int run_bandwidth(vyre_bench_env *env, struct gpu *g, vyre_error *err)
{
    struct bw_bench b;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.n4 = BW_BYTES / 16;
    b.peak = vyre_bench_peak_bandwidth(g->info.name, &b.peak_label);
    int rc = compile_src(g, vyre__bench_stream_src, "stream_copy", &b.p, err);
    if (!rc)
        rc = cu_ok(g->cu->cuMemAlloc(&b.in, BW_BYTES), "cuMemAlloc", err);
    if (!rc)
        rc = cu_ok(g->cu->cuMemAlloc(&b.out, BW_BYTES), "cuMemAlloc", err);
    if (!rc)
        rc = cu_ok(g->cu->cuMemsetD32Async(b.in, 0x3f800000u, BW_BYTES / 4, g->stream),
                   "cuMemsetD32Async", err);
    vyre_bench_measure_opts o;
    measure_opts(&o, env, g);
    o.ctx = &b;
    o.sample = sample_bw;
    char axes[48];
    snprintf(axes, sizeof axes, "bytes=%zu", BW_BYTES);
    vyre_bench_point pt;
    if (!rc && !env->interrupted) {
        point_init(&pt, "bandwidth", "bandwidth.d2d", axes, g, VYRE_BENCH_HOT, 1);
        pt.bytes = (double)BW_BYTES;
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_bw, finish_bw, &b, err);
    }
    b.use_kernel = 1;
    for (int m = 0; m < 2 && !rc && !env->interrupted; m++) {
        int cold = m == 1;
        if ((env->cold == 0 && cold) || (env->cold == 1 && !cold))
            continue;
        point_init(&pt, "bandwidth", "bandwidth.stream_copy", axes, g,
                   cold ? VYRE_BENCH_COLD : VYRE_BENCH_HOT, 1);
        pt.bytes = (double)BW_BYTES;
        o.prepare = cold ? prepare_cold : NULL;
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_bw, finish_bw, &b, err);
    }
    if (b.in)
        g->cu->cuMemFree(b.in);
    if (b.out)
        g->cu->cuMemFree(b.out);
    vyre_pipeline_free(b.p);
    return rc;
}

static size_t bandwidth_points(const vyre_bench_env *env)
{
    return 1 + (env->cold == 2 ? 2 : 1);
}

/* ---- compile -------------------------------------------------------------------- */

enum { V_NVRTC, V_JIT_COLD, V_JIT_WARM, V_CACHE_HIT, V_CUBIN_LOAD, NVARIANTS };
static const char *const k_variant_names[] = {"compile.nvrtc_cold", "compile.jit_cold",
                                              "compile.jit_warm", "compile.cache_hit",
                                              "compile.cubin_load"};
static const char *const k_variant_notes[] = {
    "NVRTC CUDA C -> cubin", "cuModuleLoadData(PTX), driver cache disabled, child process",
    "cuModuleLoadData(PTX), driver JIT cache warm", "vyre_cache_get + cuModuleLoadData(cubin)",
    "cuModuleLoadData(cubin in memory)"};

static const char *const k_compile_opts[] = {"-Xptxas=-O3"};

struct compile_bench {
    struct gpu *g;
    const vyre_bench_kernel *k;
    vyre_nvrtc_output ptx;
    vyre_compile_result cubin;
    vyre_key key;
    char ptx_path[1024];
    const char *child_exe;
    int variant;
    double nvrtc_median;
};

static int load_unload(struct compile_bench *cb, const void *image, vyre_error *err)
{
    CUmodule m = NULL;
    int rc = cu_ok(cb->g->cu->cuModuleLoadData(&m, image), "cuModuleLoadData", err);
    if (!rc)
        cb->g->cu->cuModuleUnload(m);
    return rc;
}

static int sample_compile(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct compile_bench *cb = ctx;
    int rc = VYRE_OK;
    uint64_t t0 = vyre__mono_ns();
    switch (cb->variant) {
    case V_NVRTC: {
        vyre_compile_request req = {
            VYRE_SOURCE_CUDA_C, cb->k->src, strlen(cb->k->src), cb->g->info.arch, cb->k->entry,
            k_compile_opts,     1};
        vyre_compile_result res;
        memset(&res, 0, sizeof res);
        rc = vyre_compile_cubin(&req, &res, err);
        vyre_compile_result_release(&res);
        break;
    }
    case V_JIT_COLD: {
        double ns = 0;
        rc = vyre__bench_jit_cold_spawn(cb->child_exe, cb->ptx_path, &ns, err);
        *wall = (double)(vyre__mono_ns() - t0);
        *value = ns;
        return rc;
    }
    case V_JIT_WARM:
        rc = load_unload(cb, cb->ptx.data, err);
        break;
    case V_CACHE_HIT: {
        vyre_blob *b = NULL;
        rc = vyre_cache_get(vyre_ctx_cache(cb->g->ctx), &cb->key, &b, NULL, err);
        if (rc == VYRE_ENOENT)
            rc = vyre__fail(err, VYRE_ECORRUPT, NULL, "the cubin stored for '%s' was not a hit",
                            cb->k->label);
        if (!rc)
            rc = load_unload(cb, b->payload, err);
        vyre_blob_free(b);
        break;
    }
    default:
        rc = load_unload(cb, cb->cubin.cubin, err);
        break;
    }
    *wall = (double)(vyre__mono_ns() - t0);
    *value = *wall;
    return rc;
}

static void finish_compile(vyre_bench_point *pt, void *ctx)
{
    struct compile_bench *cb = ctx;
    if (cb->variant == V_NVRTC)
        cb->nvrtc_median = pt->stats.median;
    snprintf(pt->note, sizeof pt->note, "%s; PTX %.1f KB, cubin %.1f KB",
             k_variant_notes[cb->variant], (double)cb->ptx.size / 1024.0,
             (double)cb->cubin.size / 1024.0);
    if (cb->variant != V_NVRTC && cb->nvrtc_median > 0 && pt->stats.median > 0) {
        vyre__strlcpy(pt->metric_name, "x_faster", sizeof pt->metric_name);
        pt->metric = cb->nvrtc_median / pt->stats.median;
    }
}

static int compile_prepare_kernel(struct compile_bench *cb, vyre_bench_env *env, vyre_error *err)
{
    const char *arch = cb->g->info.arch;
    int rc = vyre_nvrtc_compile(cb->k->src, strlen(cb->k->src), cb->k->label, arch, k_compile_opts,
                                1, 0, &cb->ptx, err);
    vyre_compile_request req = {
        VYRE_SOURCE_CUDA_C, cb->k->src, strlen(cb->k->src), arch, cb->k->entry, k_compile_opts, 1};
    if (!rc)
        rc = vyre_compile_cubin(&req, &cb->cubin, err);
    /* Store through the run-time path so that the hit variant hits. */
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUDA_C;
    d.src = cb->k->src;
    d.len = strlen(cb->k->src);
    d.entry = cb->k->entry;
    d.opts = k_compile_opts;
    d.nopts = 1;
    d.flags = VYRE_PIPELINE_NO_MODULE_CACHE;
    vyre_pipeline *p = NULL;
    if (!rc)
        rc = vyre_pipeline_compile(cb->g->ctx, &d, &p, err);
    if (!rc) {
        cb->key = vyre_pipeline_info_get(p)->key;
        if (vyre_pipeline_info_get(p)->store_rc)
            rc = vyre__fail(err, vyre_pipeline_info_get(p)->store_rc, NULL,
                            "cannot store the cubin of '%s' in the cache: %s", cb->k->label,
                            vyre_pipeline_info_get(p)->store_error.message);
        vyre_pipeline_free(p);
    }
    if (!rc) {
        const char *tmp = env->tmp_dir && *env->tmp_dir ? env->tmp_dir : "/tmp";
        snprintf(cb->ptx_path, sizeof cb->ptx_path, "%s/vyre-bench-%s.XXXXXX", tmp, cb->k->label);
        int fd = mkstemp(cb->ptx_path);
        if (fd < 0)
            return vyre__fail(err, vyre__errno_code(errno), "set TMPDIR to a writable directory",
                              "cannot create '%s': %s", cb->ptx_path, strerror(errno));
        size_t off = 0;
        while (off < cb->ptx.size) {
            ssize_t w = write(fd, (const char *)cb->ptx.data + off, cb->ptx.size - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
        if (off != cb->ptx.size)
            rc = vyre__fail(err, VYRE_EIO, NULL, "cannot write '%s'", cb->ptx_path);
    }
    /* Warm the driver's JIT cache for the warm variant. */
    if (!rc)
        rc = load_unload(cb, cb->ptx.data, err);
    return rc;
}

static int run_compile(vyre_bench_env *env, struct gpu *g, vyre_error *err)
{
    int rc = VYRE_OK;
    for (size_t k = 0; !rc && !env->interrupted && k < vyre__bench_nkernels; k++) {
        struct compile_bench cb;
        memset(&cb, 0, sizeof cb);
        cb.g = g;
        cb.k = &vyre__bench_kernels[k];
        cb.child_exe = env->child_exe;
        rc = compile_prepare_kernel(&cb, env, err);
        vyre_bench_measure_opts o;
        measure_opts(&o, env, g);
        o.ctx = &cb;
        o.sample = sample_compile;
        char axes[64];
        snprintf(axes, sizeof axes, "kernel=%s", cb.k->label);
        for (int v = 0; !rc && !env->interrupted && v < NVARIANTS; v++) {
            if (v == V_JIT_COLD && !cb.child_exe)
                continue;
            cb.variant = v;
            o.warmup = v == V_NVRTC || v == V_JIT_COLD ? 0 : 2;
            o.rule = env->rule;
            if (v == V_NVRTC || v == V_JIT_COLD) {
                /* Up to a third of a second a sample: a short series, but
                 * never below the run's --min-samples (10 by default, in
                 * --quick too). */
                o.rule.max_samples = o.rule.min_samples * 2;
                o.rule.min_time_s = 0;
            }
            vyre_bench_point pt;
            point_init(&pt, "compile", k_variant_names[v], axes, g, VYRE_BENCH_HOST, 0);
            rc = vyre__bench_point_run(env, &pt, &o, 1, NULL, finish_compile, &cb, err);
        }
        if (cb.ptx_path[0])
            unlink(cb.ptx_path);
        vyre_nvrtc_output_release(&cb.ptx);
        vyre_compile_result_release(&cb.cubin);
    }
    return rc;
}

/* ---- reference.gpu ---------------------------------------------------------------- */

/* The GPU reference's shape: 64 blocks of 128 threads (one wave on any
 * GPU vyre runs on), REF_ITERS steps each. By count (a dependent IMAD and
 * the loop's add and branch, some 8 cycles a step) about 16k cycles, 8 us
 * at 1.98 GHz: long enough that the event pair's own cost is small, short
 * enough that a round's 20-1000 samples cost tens of ms. Not yet timed on
 * a GPU: measure it before quoting it. Never change these: runs are
 * compared through them. */
#define REF_BLOCKS  64u
#define REF_THREADS 128u
#define REF_ITERS   2048u

struct ref_bench {
    struct gpu *g; /* first, as every bench struct here */
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr out;
    unsigned iters;
};

static int ref_op(void *ctx, vyre_error *err)
{
    struct ref_bench *rb = ctx;
    void *args[] = {&rb->out, &rb->iters};
    return cu_ok(rb->g->cu->cuLaunchKernel(rb->fn, REF_BLOCKS, 1, 1, REF_THREADS, 1, 1, 0,
                                           rb->g->stream, args, NULL),
                 "cuLaunchKernel(the reference kernel)", err);
}

static int sample_ref(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct ref_bench *rb = ctx;
    return time_gpu(rb->g, ref_op, rb, 1, 1, value, wall, err);
}

static void finish_ref(vyre_bench_point *pt, void *ctx)
{
    struct ref_bench *rb = ctx;
    snprintf(pt->note, sizeof pt->note, "fixed kernel: %u x %u threads, %u dependent steps",
             REF_BLOCKS, REF_THREADS, REF_ITERS);
    finish_views(pt, rb->g, ref_op, rb, 1, 1);
}

/* reference.gpu of one device, opened for it alone. */
static int reference_device(vyre_bench_env *env, int device, vyre_error *err)
{
    struct gpu g;
    int rc = gpu_open(env, device, &g, err);
    if (rc)
        return rc;
    struct ref_bench rb = {&g, NULL, NULL, 0, REF_ITERS};
    const vyre__cuda_fns *cu = g.cu;
    if (!cu->cuModuleLoadData || !cu->cuModuleGetFunction || !cu->cuLaunchKernel)
        rc = vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                        "the driver lacks the module calls of the GPU reference");
    if (!rc)
        rc = cu_ok(cu->cuModuleLoadData(&rb.mod, vyre__bench_reference_ptx),
                   "cuModuleLoadData(the reference kernel's PTX)", err);
    if (!rc)
        rc = cu_ok(cu->cuModuleGetFunction(&rb.fn, rb.mod, "vyre_reference_loop"),
                   "cuModuleGetFunction(vyre_reference_loop)", err);
    if (!rc)
        rc = cu_ok(cu->cuMemAlloc(&rb.out, (size_t)REF_BLOCKS * REF_THREADS * sizeof(uint32_t)),
                   "cuMemAlloc", err);
    vyre_bench_measure_opts o;
    measure_opts(&o, env, &g);
    o.ctx = &rb;
    o.sample = sample_ref;
    if (!rc)
        rc = vyre__bench_reference_gpu(env, device, &o, finish_ref, err);
    cu->cuStreamSynchronize(g.stream);
    if (rb.out)
        cu->cuMemFree(rb.out);
    if (rb.mod)
        cu->cuModuleUnload(rb.mod);
    gpu_close(&g);
    return rc;
}

int vyre__bench_gpu_references(vyre_bench_env *env, vyre_error *err)
{
    if (env->records_sweep)
        return VYRE_OK;
    int rc = vyre_cuda_init(err);
    static const int dev0 = 0;
    const int *devs = env->ndevices ? env->devices : &dev0;
    size_t nd = env->ndevices ? env->ndevices : 1;
    for (size_t i = 0; !rc && !env->interrupted && i < nd; i++)
        rc = reference_device(env, devs[i], err);
    return rc;
}

/* ---- suite dispatch ----------------------------------------------------------------- */

size_t vyre__bench_gpu_points(const char *suite, const vyre_bench_env *env)
{
    size_t per = 0;
    if (strcmp(suite, "launch") == 0)
        per = 3;
    else if (strcmp(suite, "memcpy") == 0)
        per = C_NKINDS *
              (env->quick ? VYRE_ARRAY_SIZE(k_copy_sizes_quick) : VYRE_ARRAY_SIZE(k_copy_sizes));
    else if (strcmp(suite, "bandwidth") == 0)
        per = bandwidth_points(env);
    else if (strcmp(suite, "compile") == 0)
        per = vyre__bench_nkernels * (env->child_exe ? NVARIANTS : NVARIANTS - 1);
    return per * (env->ndevices ? env->ndevices : 1);
}

int vyre__bench_gpu_run(const char *suite, vyre_bench_env *env, vyre_error *err)
{
    int rc = vyre_cuda_init(err);
    if (rc)
        return rc;
    static const int dev0 = 0;
    const int *devs = env->ndevices ? env->devices : &dev0;
    size_t nd = env->ndevices ? env->ndevices : 1;
    for (size_t i = 0; !rc && !env->interrupted && i < nd; i++) {
        struct gpu g;
        if ((rc = gpu_open(env, devs[i], &g, err)))
            break;
        if (strcmp(suite, "launch") == 0)
            rc = run_launch(env, &g, err);
        else if (strcmp(suite, "memcpy") == 0)
            rc = run_memcpy(env, &g, err);
        else if (strcmp(suite, "bandwidth") == 0)
            rc = run_bandwidth(env, &g, err);
        else
            rc = run_compile(env, &g, err);
        gpu_close(&g);
    }
    return rc;
}

/* ---- the run's GPU facts -------------------------------------------------------------- */

int vyre__bench_run_describe(vyre_bench_run *run, const int *devices, size_t n,
                             vyre_gpu_monitor *mon, vyre_error *err)
{
    if (!run || (!devices && n))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_run_describe: bad arguments");
    vyre__strlcpy(run->cuda_version, vyre_cuda_toolkit_version(), sizeof run->cuda_version);
    int driver = 0;
    int rc = vyre_cuda_driver_version(&driver, err);
    if (rc)
        return rc;
    size_t len = 0;
    run->devices[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        vyre_device_info di;
        if ((rc = vyre_cuda_device_info(devices[i], &di, err)))
            return rc;
        len += (size_t)snprintf(run->devices + len, sizeof run->devices - len, "%s%d", i ? "," : "",
                                devices[i]);
        if (len >= sizeof run->devices)
            len = sizeof run->devices - 1;
        if (i == 0) {
            vyre__strlcpy(run->gpu_name, di.name, sizeof run->gpu_name);
            vyre__strlcpy(run->gpu_uuid, di.uuid, sizeof run->gpu_uuid);
        }
    }
    snprintf(run->driver, sizeof run->driver, "%d", driver);
    vyre_gpu_snapshot *s = mon ? malloc(sizeof *s) : NULL;
    if (s && vyre_gpu_monitor_sample(mon, s, NULL) == 0) {
        if (s->driver_version[0])
            snprintf(run->driver, sizeof run->driver, "%d (%.60s)", driver, s->driver_version);
        for (unsigned i = 0; i < s->ngpus; i++) {
            const vyre_gpu_info *g = &s->gpus[i];
            if (!vyre_gpu_field_valid(g, VYRE_GPU_F_UUID) || strcmp(g->uuid, run->gpu_uuid) != 0)
                continue;
            int sm = vyre_gpu_field_valid(g, VYRE_GPU_F_SM_CLOCK);
            int smax = vyre_gpu_field_valid(g, VYRE_GPU_F_SM_CLOCK_MAX);
            int mem = vyre_gpu_field_valid(g, VYRE_GPU_F_MEM_CLOCK);
            snprintf(run->clocks, sizeof run->clocks, "sm %s%u/%s%u MHz, mem %s%u MHz",
                     sm ? "" : "?", sm ? g->sm_clock_mhz : 0, smax ? "" : "?",
                     smax ? g->sm_clock_max_mhz : 0, mem ? "" : "?", mem ? g->mem_clock_mhz : 0);
        }
    }
    free(s);
    return VYRE_OK;
}

/* ---- the compile suite's child ---------------------------------------------------------- */

/* The child learns what to do from this variable: "jit-cold:<parent pid>"
 * (a stale value inherited from elsewhere names another parent and is
 * ignored), with the PTX path in argv[1]; it answers on descriptor
 * CHILD_FD: "ok <ns>\n", or "error <code>\n<message>\n<hint>". */
#define CHILD_ENV "VYRE__BENCH_CHILD"
#define CHILD_FD  3

/* In the child: loads the PTX with the driver's JIT cache off, timed. */
static int jit_cold_load(const char *ptx_path, uint64_t *ns, vyre_error *err)
{
    /* vyre's contract forces the driver's JIT cache on (vyre/jitcache.h)
     * once per process; this process exists to measure the driver with it
     * off, so it turns it off after that one-time setup, before cuInit. */
    int rc = vyre_jitcache_setup(NULL, err);
    if (rc)
        return rc;
    if (setenv("CUDA_CACHE_DISABLE", "1", 1) != 0)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot set CUDA_CACHE_DISABLE");
    char *ptx = NULL;
    size_t len = 0;
    if ((rc = vyre__read_file(ptx_path, VYRE__BENCH_KERNEL_MAX, &ptx, &len, err))) {
        if (rc == VYRE_ETOOBIG || rc == VYRE_ENOMEM)
            vyre__fail(err, VYRE_ENOMEM, "kernel files above 256 MiB are not supported",
                       "cannot read '%s': too large or out of memory", ptx_path);
        return rc == VYRE_ETOOBIG ? VYRE_ENOMEM : rc;
    }
    rc = vyre_cuda_init(err);
    const vyre__cuda_fns *cu = rc ? NULL : vyre__cuda();
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    if (!rc)
        rc = cu_ok(cu->cuDeviceGet(&dev, 0), "cuDeviceGet", err);
    if (!rc)
        rc = cu_ok(cu->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain", err);
    if (!rc)
        rc = cu_ok(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent", err);
    CUmodule m = NULL;
    if (!rc) {
        uint64_t t0 = vyre__mono_ns();
        rc = cu_ok(cu->cuModuleLoadData(&m, ptx), "cuModuleLoadData", err);
        *ns = vyre__mono_ns() - t0;
    }
    if (m)
        cu->cuModuleUnload(m);
    if (ctx)
        cu->cuDevicePrimaryCtxRelease(dev);
    free(ptx);
    return rc;
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        len -= (size_t)w;
    }
}

int vyre_bench_child_main(int argc, char **argv, int *exit_code)
{
    const char *what = getenv(CHILD_ENV);
    char want[64];
    snprintf(want, sizeof want, "jit-cold:%ld", (long)getppid());
    if (!what || strcmp(what, want) != 0 || !exit_code)
        return 0;
    unsetenv(CHILD_ENV); /* nothing this process starts is a child */
    vyre_error e;
    vyre_error_clear(&e);
    uint64_t ns = 0;
    int rc = argc == 2 && argv && argv[1]
                 ? jit_cold_load(argv[1], &ns, &e)
                 : vyre__fail(&e, VYRE_EINVAL, NULL, "the cold-JIT child takes one PTX path");
    char reply[32 + VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX];
    int n = rc ? snprintf(reply, sizeof reply, "error %d\n%s\n%s", rc, e.message, e.hint)
               : snprintf(reply, sizeof reply, "ok %" PRIu64 "\n", ns);
    write_all(CHILD_FD, reply, n < 0 ? 0 : (size_t)n < sizeof reply ? (size_t)n : sizeof reply - 1);
    *exit_code = rc ? 1 : 0;
    return 1;
}

int vyre__bench_jit_cold_spawn(const char *exe, const char *ptx_path, double *ns, vyre_error *err)
{
    if (!exe || !ptx_path || !ns)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_jit_cold_spawn: NULL argument");
    char marker[64];
    snprintf(marker, sizeof marker, CHILD_ENV "=jit-cold:%ld", (long)getpid());
    const char *env_set[] = {marker, NULL};
    char *argv[] = {(char *)(uintptr_t)exe, (char *)(uintptr_t)ptx_path, NULL};
    vyre__subprocess sp = {exe, argv, env_set, CHILD_FD};
    char reply[32 + VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX];
    int status = -1;
    int rc = vyre__subprocess_run(&sp, reply, sizeof reply, &status, err);
    if (rc)
        return rc;
    if (strncmp(reply, "ok ", 3) == 0 && status == 0) {
        char *end = NULL;
        double v = strtod(reply + 3, &end);
        if (end != reply + 3 && *end == '\n' && v > 0) {
            *ns = v;
            return VYRE_OK;
        }
    }
    long code = 0;
    char *msg = NULL;
    if (strncmp(reply, "error ", 6) == 0)
        code = strtol(reply + 6, &msg, 10);
    if (code < 0 && code >= INT_MIN && msg && *msg == '\n') {
        msg++;
        char *hint = strchr(msg, '\n');
        if (hint)
            *hint++ = '\0';
        return vyre__fail(err, (int)code, hint, "the cold-JIT child failed: %s", msg);
    }
    return vyre__fail(err, VYRE_ECUDA,
                      "the program that runs the compile suite must call vyre_bench_child_main "
                      "first in main()",
                      "the cold-JIT child '%s' of '%s' gave no result (exit status %d)", exe,
                      ptx_path, status);
}

/* ---- user sweeps --------------------------------------------------------------------------- */

/* The binding and the checks are bench/sweep_spec.c's and sweep_plan.c's;
 * here each point's launch is set up on the device: buffers allocated and
 * filled, scalars laid out as the kernel takes them, the dynamic shared
 * memory limit raised when a point asks for more than the default 48 KiB. */

size_t vyre__bench_sweep_points(const vyre_bench_sweep *sw, const vyre_bench_env *env)
{
    if (!sw || !sw->axes || !env)
        return 0;
    return vyre_axes_count(sw->axes) * (env->cold == 2 ? 2 : 1) *
           (env->ndevices ? env->ndevices : 1) * (sw->vs_path ? 2 : 1);
}

/*
 * The B side of an A/B sweep (vyre_bench_sweep.vs_path): its pipeline,
 * launched with A's buffers and scalars, and the samples taken right
 * after each of A's. Why one sample of each in turn rather than A's
 * point then B's: whatever the machine does meanwhile (a neighbour's
 * job, clocks, heat) lands on both alike, as hyperfine alternates
 * commands; and the pairs share their round, which the comparison
 * resamples. Every sample of either waits behind the blocking kernel.
 */
struct sweep_ab {
    vyre_pipeline *p;
    vyre_bench_sample *s; /* B's samples of the point so far, warm-up first */
    size_t n, cap;
    int cold; /* flush L2 before B's sample too */
};

struct sweep_bench {
    struct gpu *g; /* first: prepare_cold */
    vyre_pipeline *p;
    const vyre__sweep_binding *b;
    const vyre__sweep_kernel *k;
    vyre__sweep_launch l;
    vyre_launch_cfg cfg;
    CUdeviceptr bufs[VYRE__SWEEP_ARGS_MAX];
    CUdeviceptr nulls[VYRE__SWEEP_ARGS_MAX];
    int32_t i32[VYRE__SWEEP_ARGS_MAX];
    int64_t i64[VYRE__SWEEP_ARGS_MAX];
    float f32[VYRE__SWEEP_ARGS_MAX];
    double f64[VYRE__SWEEP_ARGS_MAX];
    void *params[VYRE__SWEEP_ARGS_MAX];
    unsigned shared_set; /* the kernel's dynamic shared maximum as last set */
    struct sweep_ab *ab; /* NULL: no --vs */
    int correct;         /* hot: the event pair's own cost comes off each sample */
};

/* A hot sample less the event pair's own cost (event_overhead). */
static double corrected(struct sweep_bench *s, double value)
{
    if (!s->correct)
        return value;
    double v = value - event_overhead(s->g);
    return v > 0 ? v : 0;
}

static int sweep_op(void *ctx, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    return vyre_pipeline_launch(s->p, &s->cfg, s->params, err);
}

static int sweep_op_b(void *ctx, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    return vyre_pipeline_launch(s->ab->p, &s->cfg, s->params, err);
}

static int sample_sweep(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    int rc = time_gpu(s->g, sweep_op, s, 1, 1, value, wall, err);
    if (!rc)
        *value = corrected(s, *value);
    return rc;
}

/* A's sample (the value returned), then B's (kept in s->ab). */
static int sample_sweep_ab(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    struct sweep_ab *ab = s->ab;
    int rc = time_gpu(s->g, sweep_op, s, 1, 1, value, wall, err);
    if (!rc && ab->cold)
        rc = flush_l2(s->g, err);
    double v = 0, w = 0;
    if (!rc)
        rc = time_gpu(s->g, sweep_op_b, s, 1, 1, &v, &w, err);
    if (rc)
        return rc;
    *value = corrected(s, *value);
    v = corrected(s, v);
    if (ab->n == ab->cap) {
        size_t cap = ab->cap ? ab->cap * 2 : 64;
        vyre_bench_sample *p = realloc(ab->s, cap * sizeof *p);
        if (!p)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory keeping the --vs samples");
        ab->s = p;
        ab->cap = cap;
    }
    vyre_bench_sample *x = &ab->s[ab->n++];
    memset(x, 0, sizeof *x);
    x->value = v;
    x->wall = w;
    return VYRE_OK;
}

static int kpass_sweep(void *ctx, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    int rc = VYRE_OK;
    for (int i = 0; !rc && i < 3; i++)
        rc = sweep_op(s, err);
    return rc ? rc : cu_ok(s->g->cu->cuStreamSynchronize(s->g->stream), "cuStreamSynchronize", err);
}

/* GB/s from the bytes a launch moves, TFLOP/s from its flops (the GB/s
 * then goes to the note). Bytes per ns is GB/s; flops per ns is GFLOP/s.
 * op: the kernel whose batch view is taken (A's or B's). */
static void finish_sweep_op(vyre_bench_point *pt, struct sweep_bench *s, gpu_op_fn op)
{
    if (pt->stats.median > 0 && s->l.flops > 0) {
        vyre__strlcpy(pt->metric_name, "TFLOP/s", sizeof pt->metric_name);
        pt->metric = s->l.flops / pt->stats.median / 1e3;
        if (pt->bytes > 0)
            snprintf(pt->note, sizeof pt->note, "%.1f GB/s", pt->bytes / pt->stats.median);
    } else if (pt->stats.median > 0 && pt->bytes > 0) {
        vyre__strlcpy(pt->metric_name, "GB/s", sizeof pt->metric_name);
        pt->metric = pt->bytes / pt->stats.median;
    }
    if (s->correct && s->g->overhead_state > 0) {
        char note[96];
        snprintf(note, sizeof note, "event pair's own %.2f us subtracted", s->g->overhead_ns / 1e3);
        append_note(pt, note);
    }
    finish_views(pt, s->g, op, s, 1, 1);
}

static void finish_sweep(vyre_bench_point *pt, void *ctx)
{
    finish_sweep_op(pt, ctx, sweep_op);
}

static void finish_sweep_b(vyre_bench_point *pt, void *ctx)
{
    finish_sweep_op(pt, ctx, sweep_op_b);
}

/* B's point of this round: the samples taken after each of A's measured
 * ones (the warm-up pairs dropped), stored beside A's. */
static int sweep_point_b(vyre_bench_env *env, struct sweep_bench *s, const vyre_bench_point *a,
                         size_t warmup, vyre_error *err)
{
    struct sweep_ab *ab = s->ab;
    size_t n = ab->n;
    ab->n = 0;
    if (env->records_sweep || env->interrupted || n <= warmup)
        return VYRE_OK;
    vyre_bench_point pt;
    point_init(&pt, a->suite, a->benchmark, a->axes, s->g, a->mode, 1);
    vyre__strlcpy(pt.variant, "B", sizeof pt.variant);
    pt.bytes = a->bytes;
    pt.stop_reason = a->stop_reason;
    vyre__strlcpy(pt.stop, a->stop, sizeof pt.stop);
    return vyre__bench_point_add(env, &pt, ab->s + warmup, n - warmup, finish_sweep_b, s, err);
}

static void sweep_free(struct sweep_bench *s)
{
    for (size_t i = 0; i < VYRE__SWEEP_ARGS_MAX; i++)
        if (s->bufs[i]) {
            s->g->cu->cuMemFree(s->bufs[i]);
            s->bufs[i] = 0;
        }
}

/* Fills buffer i as its parameter says: zeros by memset, anything else
 * generated on the host in chunks and copied. */
static int fill_buffer(struct sweep_bench *s, size_t i, vyre_error *err)
{
    const vyre__sweep_arg *a = &s->b->args[i];
    const vyre__cuda_fns *cu = s->g->cu;
    size_t esz = vyre__elem_size(a->type);
    uint64_t n = s->l.buf_elems[i];
    if (a->fill == VYRE__FILL_ZEROS)
        return cu_ok(cu->cuMemsetD8Async(s->bufs[i], 0, (size_t)(n * esz), s->g->stream),
                     "cuMemsetD8Async", err);
    /* Ones of the 1- and 4-byte types are a memset too (f32 1.0 is 0x3f800000). */
    if (a->fill == VYRE__FILL_ONES && esz == 1)
        return cu_ok(cu->cuMemsetD8Async(s->bufs[i], 1, (size_t)n, s->g->stream), "cuMemsetD8Async",
                     err);
    if (a->fill == VYRE__FILL_ONES && esz == 4)
        return cu_ok(cu->cuMemsetD32Async(s->bufs[i], a->type == VYRE__F32 ? 0x3f800000u : 1u,
                                          (size_t)n, s->g->stream),
                     "cuMemsetD32Async", err);
    if (!cu->cuMemcpyHtoDAsync)
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks cuMemcpyHtoDAsync");
    size_t chunk = (size_t)(4u << 20) / esz; /* elements per 4 MiB */
    if (chunk > n)
        chunk = (size_t)n;
    void *host = malloc(chunk * esz);
    if (!host)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of host memory filling a buffer");
    int rc = VYRE_OK;
    for (uint64_t first = 0; !rc && first < n; first += chunk) {
        size_t m = n - first < chunk ? (size_t)(n - first) : chunk;
        vyre__fill_chunk(a->type, a->fill, a->seed, first, host, m);
        /* On the sweep's stream, waited for: the chunk is reused, and the
         * kernel on that stream must see the whole buffer. */
        rc = cu_ok(cu->cuMemcpyHtoDAsync(s->bufs[i] + first * esz, host, m * esz, s->g->stream),
                   "cuMemcpyHtoDAsync", err);
        if (!rc)
            rc = cu_ok(cu->cuStreamSynchronize(s->g->stream), "cuStreamSynchronize", err);
    }
    free(host);
    return rc;
}

static int sweep_point(vyre_bench_env *env, const vyre_bench_sweep *sw, struct sweep_bench *s,
                       const size_t *coords, int cold, vyre_error *err)
{
    const vyre__sweep_binding *b = s->b;
    const vyre__cuda_fns *cu = s->g->cu;
    int rc = vyre__sweep_binding_eval(b, sw->axes, coords, s->k->have_ptx ? &s->k->ptx : NULL,
                                      (unsigned)(s->g->info.max_shared_mem_per_block > 0
                                                     ? s->g->info.max_shared_mem_per_block
                                                     : 0),
                                      &s->l, err);
    if (rc)
        return rc;
    memset(&s->cfg, 0, sizeof s->cfg);
    memcpy(s->cfg.grid, s->l.grid, sizeof s->cfg.grid);
    memcpy(s->cfg.block, s->l.block, sizeof s->cfg.block);
    s->cfg.shared_bytes = s->l.shared_bytes;
    if (s->l.shared_bytes > (48u << 10) && s->l.shared_bytes != s->shared_set) {
        if (!cu->cuFuncSetAttribute)
            return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                              "the driver lacks cuFuncSetAttribute, needed for more than 48 KiB "
                              "of dynamic shared memory");
        rc = cu_ok(cu->cuFuncSetAttribute((CUfunction)vyre_pipeline_cu_function(s->p),
                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int)s->l.shared_bytes),
                   "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err);
        if (rc)
            return rc;
        s->shared_set = s->l.shared_bytes;
    }
    for (size_t i = 0; !rc && i < b->nargs; i++) {
        const vyre__sweep_arg *a = &b->args[i];
        switch (a->kind) {
        case VYRE__ARG_BUFFER:
            rc = cu_ok(
                cu->cuMemAlloc(&s->bufs[i], (size_t)(s->l.buf_elems[i] * vyre__elem_size(a->type))),
                "cuMemAlloc", err);
            if (!rc)
                rc = fill_buffer(s, i, err);
            s->params[i] = &s->bufs[i];
            break;
        case VYRE__ARG_NULL:
            s->nulls[i] = 0;
            s->params[i] = &s->nulls[i];
            break;
        case VYRE__ARG_INT:
            if (a->type == VYRE__I64) {
                s->i64[i] = s->l.ints[i];
                s->params[i] = &s->i64[i];
            } else {
                s->i32[i] = (int32_t)s->l.ints[i];
                s->params[i] = &s->i32[i];
            }
            break;
        case VYRE__ARG_FLOAT:
            if (a->type == VYRE__F64) {
                s->f64[i] = s->l.floats[i];
                s->params[i] = &s->f64[i];
            } else {
                s->f32[i] = (float)s->l.floats[i];
                s->params[i] = &s->f32[i];
            }
            break;
        }
    }
    char axes[256];
    vyre_axes_format_point(sw->axes, coords, axes, sizeof axes);
    char bench[96];
    snprintf(bench, sizeof bench, "sweep.%s", sw->entry);
    vyre_bench_point pt;
    point_init(&pt, "sweep", bench, axes, s->g, cold ? VYRE_BENCH_COLD : VYRE_BENCH_HOT, 1);
    pt.bytes = s->l.bytes;
    vyre_bench_measure_opts o;
    measure_opts(&o, env, s->g);
    o.ctx = s;
    o.sample = s->ab ? sample_sweep_ab : sample_sweep;
    o.prepare = cold ? prepare_cold : NULL;
    s->correct = !cold;
    if (s->ab) {
        vyre__strlcpy(pt.variant, "A", sizeof pt.variant);
        s->ab->n = 0;
        s->ab->cold = cold;
    }
    if (!rc)
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_sweep, finish_sweep, s, err);
    if (!rc && s->ab)
        rc = sweep_point_b(env, s, &pt, o.warmup, err);
    cu->cuStreamSynchronize(s->g->stream);
    sweep_free(s);
    return rc;
}

/* Out-of-memory sizes fail before the first point is measured. */
static int check_memory(const vyre_bench_sweep *sw, const vyre__sweep_binding *b,
                        const vyre__sweep_kernel *k, struct gpu *g, vyre_error *err)
{
    size_t free_b = 0, total_b = 0;
    if (g->cu->cuMemGetInfo)
        g->cu->cuMemGetInfo(&free_b, &total_b);
    size_t coords[VYRE_AXES_MAX];
    size_t count = vyre_axes_count(sw->axes);
    for (size_t i = 0; free_b && i < count; i++) {
        vyre_axes_point(sw->axes, i, coords);
        vyre__sweep_launch l;
        int rc =
            vyre__sweep_binding_eval(b, sw->axes, coords, k->have_ptx ? &k->ptx : NULL, 0, &l, err);
        if (rc)
            return rc;
        if (l.memory_bytes > (double)free_b * 0.95) {
            char at[256], needs[32], has[32];
            vyre_axes_format_point(sw->axes, coords, at, sizeof at);
            vyre_format_size((uint64_t)l.memory_bytes, needs, sizeof needs);
            vyre_format_size((uint64_t)free_b, has, sizeof has);
            return vyre__fail(err, VYRE_ENOMEM, "lower the upper end of the axis",
                              "point '%s' needs %s of device memory; device %d has %s free", at,
                              needs, g->device, has);
        }
    }
    return VYRE_OK;
}

/* Compiles k (the file of sw->path) for g's device, as the sweep check
 * chose (the PTX's .target when the device runs it, else the device's). */
static int sweep_compile(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k, struct gpu *g,
                         vyre_pipeline **p, vyre_error *err)
{
    char arch[16];
    int rc =
        vyre__sweep_arch(sw, k, g->info.cc_major, g->info.cc_minor, arch, sizeof arch, NULL, err);
    vyre_pipeline_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = k->kind;
    desc.src = k->src;
    desc.len = k->len;
    desc.entry = sw->entry;
    desc.arch = arch;
    if (!rc)
        rc = vyre_pipeline_compile(g->ctx, &desc, p, err);
    return rc;
}

/* The --vs kernel's pipeline on g (the timing sweep only: the records
 * sweep runs A's kernel passes alone). */
static int sweep_ab_open(const vyre_bench_sweep *sw, const vyre_bench_env *env, struct gpu *g,
                         struct sweep_ab *ab, vyre_error *err)
{
    memset(ab, 0, sizeof *ab);
    if (!sw->vs_path || env->records_sweep)
        return VYRE_OK;
    vyre_bench_sweep bsw = *sw;
    bsw.path = sw->vs_path;
    vyre__sweep_kernel kb;
    int rc = vyre__sweep_kernel_load(&bsw, &kb, err);
    if (!rc)
        rc = sweep_compile(&bsw, &kb, g, &ab->p, err);
    vyre__sweep_kernel_release(&kb);
    return rc;
}

static void sweep_ab_close(struct sweep_ab *ab)
{
    vyre_pipeline_free(ab->p);
    free(ab->s);
    memset(ab, 0, sizeof *ab);
}

int vyre__bench_sweep_run(const vyre_bench_sweep *sw, vyre_bench_env *env, vyre_error *err)
{
    if (!sw || !env)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_sweep_run: NULL argument");
    vyre__sweep_binding b;
    vyre__sweep_kernel k;
    memset(&k, 0, sizeof k);
    int rc = vyre__sweep_binding_make(sw, &b, err);
    if (!rc && (rc = vyre__sweep_kernel_load(sw, &k, err)))
        vyre__sweep_binding_release(&b);
    if (rc)
        return rc;
    rc = vyre_cuda_init(err);
    size_t count = vyre_axes_count(sw->axes);
    size_t coords[VYRE_AXES_MAX];
    static const int dev0 = 0;
    const int *devs = env->ndevices ? env->devices : &dev0;
    size_t nd = env->ndevices ? env->ndevices : 1;
    for (size_t d = 0; !rc && !env->interrupted && d < nd; d++) {
        struct gpu g;
        if ((rc = gpu_open(env, devs[d], &g, err)))
            break;
        rc = check_memory(sw, &b, &k, &g, err);
        struct sweep_bench s;
        memset(&s, 0, sizeof s);
        s.g = &g;
        s.b = &b;
        s.k = &k;
        struct sweep_ab ab;
        if (!rc)
            rc = sweep_compile(sw, &k, &g, &s.p, err);
        if (!rc && !(rc = sweep_ab_open(sw, env, &g, &ab, err)) && ab.p)
            s.ab = &ab;
        for (size_t i = 0; !rc && !env->interrupted && i < count; i++) {
            vyre_axes_point(sw->axes, i, coords);
            for (int m = 0; !rc && !env->interrupted && m < 2; m++) {
                if ((env->cold == 0 && m == 1) || (env->cold == 1 && m == 0))
                    continue;
                rc = sweep_point(env, sw, &s, coords, m, err);
            }
        }
        if (s.ab)
            sweep_ab_close(s.ab);
        vyre_pipeline_free(s.p);
        gpu_close(&g);
    }
    vyre__sweep_kernel_release(&k);
    vyre__sweep_binding_release(&b);
    return rc;
}
