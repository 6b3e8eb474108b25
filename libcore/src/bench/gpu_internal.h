/*
 * gpu_internal.h - what the GPU suites share (not public): a device under
 * test and its timing (gpu_device.c), and the suites' entry points
 * (suite_launch.c, suite_memcpy.c, suite_bandwidth.c, suite_compile.c),
 * which gpu_suites.c dispatches. reference_gpu.c and sweep_run.c open
 * devices through it too. Every call here runs on the thread that opened
 * the device, with its context current.
 */
#ifndef VYRE_BENCH_GPU_INTERNAL_H
#define VYRE_BENCH_GPU_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_internal.h"
#include "cuda/cuda_internal.h"
#include "vyre/cuda.h"
#include "vyre/pipeline.h"

/* ---- a device under test (gpu_device.c) ---- */

struct vyre__gpu {
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
     * measured on it (vyre__gpu_event_overhead): 0 not yet, 1 measured, -1 failed */
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

/* An op the device times: enqueues its work on g->stream (ctx: the
 * suite's own state). */
typedef int (*vyre__gpu_op_fn)(void *ctx, vyre_error *err);

/* Opens `device` for one suite in one round: context, stream, events, the
 * L2 flush buffer and (unless env->no_blocking) the blocking kernel.
 * Errors: vyre_cuda_device_info's, vyre_ctx_open's, VYRE_ENODRIVER when the
 * driver lacks a call. vyre__gpu_close releases it (and on any state). */
int vyre__gpu_open(vyre_bench_env *env, int device, struct vyre__gpu *g, vyre_error *err);
void vyre__gpu_close(struct vyre__gpu *g);

/* Cold mode's L2 flush, enqueued on g's stream (not waited for). */
int vyre__gpu_flush_l2(struct vyre__gpu *g, vyre_error *err);

/* A vyre_bench_measure_opts.prepare for cold points: flushes L2. ctx is a
 * suite's state struct, which must start with its struct vyre__gpu *. */
int vyre__gpu_prepare_cold(void *ctx, vyre_error *err);

/* reps calls of op queued behind the blocking kernel (when it is on),
 * released together and waited for: no events, nothing timed (the CUPTI
 * pass). */
int vyre__gpu_run_held(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned reps,
                       vyre_error *err);

/* launches calls of op as the batch view times them: captured into a CUDA
 * graph (op must launch on g->stream; one by one when no graph can be
 * built), one replay held behind the blocking kernel between two events,
 * waited for. *per_launch_ns: the events' time a call, 0 when the hold
 * timed out (the launches ran all the same). The sweeps' hot CUPTI pass. */
int vyre__gpu_run_batch(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, unsigned launches,
                        double *per_launch_ns, vyre_error *err);

/* Times reps calls of op on the stream, held behind the blocking kernel
 * when can_block and the device still holds: *gpu_ns per call (events),
 * *wall_ns of the whole (host). A sample whose hold timed out is discarded,
 * counted and taken again. */
int vyre__gpu_time(struct vyre__gpu *g, vyre__gpu_op_fn op, void *octx, int reps, int can_block,
                   double *gpu_ns, double *wall_ns, vyre_error *err);

/* The event pair's own cost on g in ns, measured the first time it is
 * asked for (a few ms); 0 when it cannot be (see gpu_device.c). */
double vyre__gpu_event_overhead(struct vyre__gpu *g);

/* Appends text to pt's note, "; "-separated, truncated to fit. */
void vyre__gpu_append_note(vyre_bench_point *pt, const char *text);

/* What every GPU point gets after its samples: the batch view of a hot
 * GPU-timed point (graph: op launches kernels, so it may be captured into
 * a CUDA graph) and the notes on the blocking kernel. */
void vyre__gpu_finish_views(vyre_bench_point *pt, struct vyre__gpu *g, vyre__gpu_op_fn op,
                            void *octx, int can_block, int graph);

/* A point of suite/bench/axes on g's device, items 1, the rest zero. */
void vyre__gpu_point_init(vyre_bench_point *pt, const char *suite, const char *bench,
                          const char *axes, const struct vyre__gpu *g, vyre_bench_mode mode,
                          int gpu_timer);

/* The run's rule, monitor and stop for g's points; warmup 2, no sample. */
void vyre__gpu_measure_opts(vyre_bench_measure_opts *o, vyre_bench_env *env, struct vyre__gpu *g);

/* CUDA C src compiled and loaded on g's context (*p: free with
 * vyre_pipeline_free). */
int vyre__gpu_compile_src(struct vyre__gpu *g, const char *src, const char *entry,
                          vyre_pipeline **p, vyre_error *err);

/* Counts a copy the suites issue straight to the driver, as vyre's
 * dispatch counts its own, and publishes the telemetry page when due. */
enum vyre__gpu_copy_dir { VYRE__GPU_H2D, VYRE__GPU_D2H, VYRE__GPU_D2D };
void vyre__gpu_count_copy(enum vyre__gpu_copy_dir dir, size_t bytes);

/* ---- the suites: points per device, and a run on one open device ---- */

size_t vyre__bench_launch_points(const vyre_bench_env *env);
int vyre__bench_launch_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err);
size_t vyre__bench_memcpy_points(const vyre_bench_env *env);
int vyre__bench_memcpy_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err);
size_t vyre__bench_bandwidth_points(const vyre_bench_env *env);
int vyre__bench_bandwidth_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err);
size_t vyre__bench_compile_points(const vyre_bench_env *env);
int vyre__bench_compile_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err);

#endif /* VYRE_BENCH_GPU_INTERNAL_H */
