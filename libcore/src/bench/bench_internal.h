/*
 * bench_internal.h - what the bench modules share: the point runner
 * (bench.c) and the suites (bench_suite_cache.c, bench_gpu.c). Not public.
 *
 * The bench subsystem (libcore/src/bench/) is the top layer of libcore and
 * the engine of vyre-bench: measurement under a stopping rule (bench.c),
 * the suite table, the suites and their real kernels (suites.c,
 * bench_gpu.c, bench_suite_cache.c, bench_kernels.c), parameter axes and
 * sweep specs (axes.c), statistics (stats.c), the results database
 * (results.c, bench_db.c) and machine facts (machine.c). It may call every
 * subsystem below it: cuda/, cache/, trace/, base/ (base < trace < cache <
 * cuda < bench; docs/DESIGN.md); nothing in libcore calls it.
 */
#ifndef VYRE_BENCH_INTERNAL_H
#define VYRE_BENCH_INTERNAL_H

#include "vyre/bench.h"

/* A separate pass for CUPTI kernel records: runs the point's work a few
 * times and synchronises. */
typedef int (*vyre__bench_pass_fn)(void *ctx, vyre_error *err);

/*
 * Runs one point: reserves its row (pt->run_id, seq taken from env), pushes
 * the VYRE_RANGE_BENCH_POINT range with the row id, brackets the timed pass
 * with cuProfilerStart/Stop when gpu is set, measures (o), stores the
 * statistics and samples, then, when env->kernels and kpass are set, runs
 * kpass under CUPTI capture (kernels and NVTX markers) and stores the
 * records with the point. `finish` (may be NULL) fills derived figures
 * (metric, note) from the stats before the point is stored. Hands the
 * point to env->on_point and advances progress. Returns 0 (interrupted:
 * env->interrupted set, nothing stored) or an error.
 */
typedef void (*vyre__bench_finish_fn)(vyre_bench_point *pt, void *ctx);
int vyre__bench_point_run(vyre_bench_env *env, vyre_bench_point *pt,
                          const vyre_bench_measure_opts *o, int gpu, vyre__bench_pass_fn kpass,
                          vyre__bench_finish_fn finish, void *ctx, vyre_error *err);

/* The CUPTI kernel-record pass of a point already stored by
 * vyre__bench_point_run (for suites that time all their points before any
 * capture). A failure to capture becomes a note, not an error. */
int vyre__bench_kernel_pass(vyre_bench_env *env, vyre_bench_point *pt, vyre__bench_pass_fn kpass,
                            void *ctx, vyre_error *err);

/* Monotonic ns. */
uint64_t vyre__bench_now_ns(void);

/* Suites. */
size_t vyre__bench_cache_points(const vyre_bench_env *env);
int vyre__bench_cache_run(vyre_bench_env *env, vyre_error *err);
size_t vyre__bench_gpu_points(const char *suite, const vyre_bench_env *env);
int vyre__bench_gpu_run(const char *suite, vyre_bench_env *env, vyre_error *err);

/* Kernels (bench_kernels.c). */
typedef struct vyre__bench_kernel {
    const char *label; /* "matmul" */
    const char *entry; /* extern "C" name */
    const char *src;   /* CUDA C */
} vyre__bench_kernel;
extern const vyre__bench_kernel vyre__bench_kernels[];
extern const size_t vyre__bench_nkernels;
extern const char vyre__bench_stream_src[]; /* stream_copy(float4 *out, const float4 *in, u64 n4) */
extern const char vyre__bench_empty_src[];  /* empty_kernel(void) */

#endif /* VYRE_BENCH_INTERNAL_H */
