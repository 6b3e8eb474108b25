/*
 * vyre/bench.h - benchmark runs: the measurement engine, the built-in
 * suites, and the runs, points and samples kept in the results database.
 *
 * This header is part of libvyrecore's public API.
 *
 * A run is one `vyre-bench run`: a runs row created when it starts
 * (status running), one points row per measured point with its samples,
 * written in one transaction as the point finishes, and a final status:
 * done, interrupted (the points finished so far are kept) or failed (the
 * run's points, samples and kernel records are removed with the status
 * change, so a failed run leaves only its row and its message). Schema:
 * db/results_v2.sql.
 *
 * Measuring a point (vyre_bench_measure): warm-up calls, then samples until
 * the stopping rule (vyre/stats.h) says stop; each sample is timed by the
 * caller's function (GPU time from CUDA events, host wall time); NVML
 * clocks are read between samples (never inside one) and samples taken
 * while the GPU reported a clocks-event reason other than idle are flagged
 * throttled; outliers are flagged with the MAD rule of vyre/stats.h.
 *
 * Suites (vyre_bench_suite_run): "launch", "memcpy", "bandwidth",
 * "compile" need a GPU; "cache" does not. The GPU suites go through
 * vyre/pipeline.h; each point is one NVTX range VYRE_RANGE_BENCH_POINT
 * whose payload is the point's row id, and its timed pass is bracketed by
 * cuProfilerStart/cuProfilerStop (nsys --capture-range=cudaProfilerApi).
 * Kernel records are gathered by CUPTI in a separate pass after the timed
 * one, never during it (that pass has a range of its own with the same
 * payload), and stored as timings rows with the point's id.
 *
 * Nothing here prints: front ends get points through callbacks.
 * Thread-safety: one run on one thread; the database handle may be shared.
 */
#ifndef VYRE_BENCH_H
#define VYRE_BENCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "axes.h"
#include "cupti.h"
#include "error.h"
#include "export.h"
#include "gpu.h"
#include "results.h"
#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the `vyre-bench run/show/export --json` document (docs/JSON.md). */
#define VYRE_BENCH_JSON_SCHEMA_VERSION 2

/* ---- stored records ------------------------------------------------------ */

typedef enum vyre_run_status {
    VYRE_RUN_RUNNING = 0,
    VYRE_RUN_DONE = 1,
    VYRE_RUN_FAILED = 2,
    VYRE_RUN_INTERRUPTED = 3,
} vyre_run_status;

/* "running", "done", "failed", "interrupted"; "?" otherwise. Static. */
VYRE_EXTERN const char *vyre_run_status_name(vyre_run_status s);

/* One run (a runs row). Empty strings are stored as NULL where the column
 * allows it and read back as "". */
typedef struct vyre_bench_run {
    int64_t id;
    int64_t started_ns;  /* Unix ns */
    int64_t finished_ns; /* 0 while running */
    vyre_run_status status;
    char suites[256];   /* "launch,memcpy,cache" or "sweep:FILE:ENTRY" */
    char host[256];     /* filled by vyre_bench_run_begin when empty */
    int64_t pid;        /* likewise */
    char gpu_name[256]; /* of the first device used */
    char gpu_uuid[96];
    char devices[64]; /* "0,1" */
    char driver[96];  /* "13000 (580.65.06)" */
    char cuda_version[32];
    char clocks[128]; /* "sm 1980/1980 MHz, mem 2619 MHz" when the run started */
    char git_rev[64]; /* of the working directory, when it is a git checkout */
    char command_line[1024];
    char vyre_version[32]; /* filled by vyre_bench_run_begin */
    char message[512];     /* why it failed; what was skipped */
    size_t npoints;        /* readers: finished points */
} vyre_bench_run;

typedef enum vyre_bench_mode {
    VYRE_BENCH_HOT = 0,  /* caches warm between samples */
    VYRE_BENCH_COLD = 1, /* L2 flushed (a buffer larger than L2 written) before each sample */
    VYRE_BENCH_HOST = 2, /* a host-side measurement (no GPU, or the host cost of a call) */
} vyre_bench_mode;

/* "hot", "cold", "host"; "?" otherwise. Static. */
VYRE_EXTERN const char *vyre_bench_mode_name(vyre_bench_mode m);

/* One measured point (a points row). Values are ns per item. */
typedef struct vyre_bench_point {
    int64_t id;
    int64_t run_id;
    int seq;            /* order within the run */
    char suite[32];     /* "launch", ..., "sweep" */
    char benchmark[96]; /* "launch.stream", "memcpy.h2d.pinned", ... */
    char axes[256];     /* "N=1024 BLOCK=128", "" for none */
    int device;         /* CUDA ordinal, -1 for host-only points */
    vyre_bench_mode mode;
    int gpu_timer;        /* 1: samples are CUDA-event GPU times; 0: host wall time */
    vyre_stats stats;     /* of the sample values, ns per item */
    size_t n_throttled;   /* samples flagged throttled */
    double wall_median;   /* median host wall time of a sample, ns (whole sample) */
    double bytes;         /* bytes moved per item; 0: not applicable */
    double items;         /* items per sample (launches in a batch, blobs); >= 1 */
    char metric_name[32]; /* a derived figure, e.g. "GB/s", "of_d2d"; "" none */
    double metric;
    vyre_stop_reason stop_reason;
    char stop[160]; /* vyre_stop_format() */
    char note[256];
} vyre_bench_point;

/* One sample of a point. */
typedef struct vyre_bench_sample {
    double value;          /* ns per item (GPU time when the point has a GPU timer) */
    double wall;           /* host wall ns of the whole sample */
    unsigned sm_clock_mhz; /* 0: unknown */
    unsigned char throttled;
    unsigned char outlier;
} vyre_bench_sample;

/* ---- the run lifecycle (in the results database) ------------------------ */

/*
 * Inserts the runs row (status running, started now) from run's
 * descriptive fields; fills run->id, started_ns, status, and host, pid and
 * vyre_version when empty. Returns 0 or the database's errors.
 */
VYRE_EXTERN int vyre_bench_run_begin(vyre_results *db, vyre_bench_run *run, vyre_error *err);

/* Rewrites the descriptive fields of run->id (GPU name, devices, clocks,
 * ..., message) once they are known. */
VYRE_EXTERN int vyre_bench_run_update(vyre_results *db, const vyre_bench_run *run, vyre_error *err);

/*
 * Sets the final status (DONE, FAILED or INTERRUPTED), the finish time and
 * message (NULL keeps the stored one) of run_id, and removes points that
 * never finished; for FAILED, removes every point, sample and kernel
 * record of the run, all in one transaction.
 */
VYRE_EXTERN int vyre_bench_run_finish(vyre_results *db, int64_t run_id, vyre_run_status status,
                                      const char *message, vyre_error *err);

/*
 * Reserves the points row of p (p->run_id, seq, suite, benchmark, axes,
 * device, mode) before it is measured, so that its id can be the NVTX
 * payload; fills p->id. The row counts as unfinished (n = 0) until
 * vyre_bench_point_finish.
 */
VYRE_EXTERN int vyre_bench_point_begin(vyre_results *db, vyre_bench_point *p, vyre_error *err);

/* Writes p's statistics and its n samples, in one transaction. */
VYRE_EXTERN int vyre_bench_point_finish(vyre_results *db, const vyre_bench_point *p,
                                        const vyre_bench_sample *samples, size_t n,
                                        vyre_error *err);

/* Stores n activity records (kernels, NVTX ranges, ...) as timings rows of
 * run_id and point_id, in one transaction. */
VYRE_EXTERN int vyre_bench_point_records(vyre_results *db, int64_t run_id, int64_t point_id,
                                         const vyre_activity *recs, size_t n, vyre_error *err);

/* ---- reading back --------------------------------------------------------- */

/* The newest `limit` runs (0: all), newest first, into a malloc'ed array
 * (*out, the caller's: free()). npoints is filled. */
VYRE_EXTERN int vyre_bench_runs_list(vyre_results *db, size_t limit, vyre_bench_run **out,
                                     size_t *n, vyre_error *err);

/*
 * Resolves a run reference: a run id ("42"), "last" (the newest run) or
 * "last-N" (N runs before it). VYRE_EINVAL for malformed text,
 * VYRE_ENOENT (with a hint naming `vyre-bench runs`) for no such run.
 */
VYRE_EXTERN int vyre_bench_run_resolve(vyre_results *db, const char *ref, int64_t *id,
                                       vyre_error *err);

/* Reads one run. VYRE_ENOENT when there is none. */
VYRE_EXTERN int vyre_bench_run_get(vyre_results *db, int64_t id, vyre_bench_run *out,
                                   vyre_error *err);

/* The finished points of a run in order (*out malloc'ed, the caller's). */
VYRE_EXTERN int vyre_bench_points_get(vyre_results *db, int64_t run_id, vyre_bench_point **out,
                                      size_t *n, vyre_error *err);

/* The samples of a point in order (*out malloc'ed, the caller's). */
VYRE_EXTERN int vyre_bench_samples_get(vyre_results *db, int64_t point_id, vyre_bench_sample **out,
                                       size_t *n, vyre_error *err);

/* Kernel totals of a point from its stored records: name, launches and
 * median duration. */
typedef struct vyre_bench_kernel_row {
    char name[VYRE_ACTIVITY_NAME_MAX];
    uint64_t count;
    double median_ns;
    double total_ns;
} vyre_bench_kernel_row;

/* *out malloc'ed (the caller's), longest total first. */
VYRE_EXTERN int vyre_bench_kernels_get(vyre_results *db, int64_t point_id,
                                       vyre_bench_kernel_row **out, size_t *n, vyre_error *err);

/* ---- comparing two runs -------------------------------------------------- */

/* One point of the comparison: matched on (suite, benchmark, axes, device,
 * mode). has_a / has_b say which run has it; cmp is valid when both do. */
typedef struct vyre_bench_cmp_row {
    vyre_bench_point a, b;
    int has_a, has_b;
    vyre_compare cmp;
} vyre_bench_cmp_row;

/* Compares every point of run b against run a (the baseline) with
 * vyre_stats_compare on their stored samples; rows in a's order, then
 * points only b has. *out malloc'ed (the caller's). opts NULL: defaults. */
VYRE_EXTERN int vyre_bench_compare_runs(vyre_results *db, int64_t a, int64_t b,
                                        const vyre_compare_opts *opts, vyre_bench_cmp_row **out,
                                        size_t *n, vyre_error *err);

/* ---- measuring one point -------------------------------------------------- */

/*
 * Takes one sample: *value = ns per item (GPU time when the point has a
 * GPU timer, else host time), *wall = host wall ns of the sample. Returns
 * 0 or an error, which ends the point.
 */
typedef int (*vyre_bench_sample_fn)(void *ctx, double *value, double *wall, vyre_error *err);

/* Runs before each sample, untimed (cold mode: flush L2). May be NULL. */
typedef int (*vyre_bench_prepare_fn)(void *ctx, vyre_error *err);

typedef struct vyre_bench_measure_opts {
    vyre_bench_sample_fn sample;
    vyre_bench_prepare_fn prepare;
    void *ctx;
    size_t warmup; /* untimed calls of sample first */
    vyre_stop_rule rule;
    vyre_gpu_monitor *mon;             /* NULL: no clocks */
    int nvml_index;                    /* GPU to watch in mon's samples; -1 none */
    const volatile sig_atomic_t *stop; /* set (Ctrl-C): stop after the current sample */
} vyre_bench_measure_opts;

/*
 * Measures one point: fills stats, n_throttled, wall_median, stop_reason
 * and stop of *pt, and returns the samples in *samples (malloc'ed, the
 * caller's; *n of them) with their throttle and outlier flags. When *stop
 * becomes set, returns 0 with *interrupted = 1 (the point is incomplete:
 * do not store it). Returns 0 or the sample function's error.
 */
VYRE_EXTERN int vyre_bench_measure(const vyre_bench_measure_opts *o, vyre_bench_point *pt,
                                   vyre_bench_sample **samples, size_t *n, int *interrupted,
                                   vyre_error *err);

/* ---- suites ---------------------------------------------------------------- */

/* Called as each point is stored (and for progress: done of total points
 * of the whole run). */
typedef void (*vyre_bench_point_fn)(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n,
                                    void *ctx);
typedef void (*vyre_bench_progress_fn)(size_t done, size_t total, const char *what, void *ctx);

/* User sweep: a kernel file, an entry point and axes (see vyre_bench_sweep_check). */
typedef struct vyre_bench_sweep {
    const char *path; /* .cu, .ptx or .cubin */
    const char *entry;
    const vyre_axes *axes;
    const char *spec_json; /* the spec file's object (its "args"), or NULL */
    const char *arch;      /* vyre_bench_sweep_check compiles for it when set ("sm_90") */
} vyre_bench_sweep;

/* Everything a run needs. Zero-initialise, then set. */
typedef struct vyre_bench_env {
    vyre_results *db;
    int64_t run_id;
    vyre_stop_rule rule; /* for GPU and cache points */
    int quick;           /* fewer sizes, shorter cold compile series */
    int cold;            /* kernel points (bandwidth, sweeps): 0 hot, 1 cold, 2 both */
    int kernels;         /* gather CUPTI kernel records per point in a separate pass */
    const int *devices;  /* CUDA ordinals */
    size_t ndevices;
    vyre_gpu_monitor *mon; /* may be NULL */
    const volatile sig_atomic_t *stop;
    const char *self_exe;      /* this program, for the compile suite's child */
    const char *jit_child_cmd; /* its hidden subcommand ("__jit-cold") */
    const char *tmp_dir;       /* scratch directory (the cache suite's cache lives here) */
    vyre_bench_point_fn on_point;
    vyre_bench_progress_fn on_progress;
    void *cb_ctx;
    /* run state, maintained by the suites */
    int next_seq;
    size_t done, total;
    int interrupted;
} vyre_bench_env;

typedef struct vyre_bench_suite_def {
    const char *name;
    int needs_gpu;
    const char *description;
} vyre_bench_suite_def;

/* The suites, in their default order; *n set. Static storage. */
VYRE_EXTERN const vyre_bench_suite_def *vyre_bench_suites(size_t *n);

/* The suite called name, or NULL. */
VYRE_EXTERN const vyre_bench_suite_def *vyre_bench_suite_find(const char *name);

/* Points the suite will measure with env's settings (for progress). */
VYRE_EXTERN size_t vyre_bench_suite_points(const char *name, const vyre_bench_env *env);

/*
 * Runs the suite: every point reserved, measured, stored and handed to
 * env->on_point. Returns 0 (env->interrupted says whether Ctrl-C cut it
 * short), VYRE_EINVAL for an unknown suite, or the first error (a GPU
 * suite on a machine without one: VYRE_ENODRIVER / VYRE_ENODEV).
 */
VYRE_EXTERN int vyre_bench_suite_run(const char *name, vyre_bench_env *env, vyre_error *err);

/*
 * Checks a user sweep before anything is measured: the file readable, the
 * axes bound (see vyre_bench_sweep_run), the spec's args well formed, and,
 * when sw->arch is set, the kernel compiled for it (on the CPU: no GPU
 * needed). Returns 0 or VYRE_EINVAL / VYRE_ENOENT / VYRE_ECOMPILE (the
 * message quotes the first failing line; *log, when log is not NULL,
 * receives the whole compiler log, malloc'ed, the caller's).
 */
VYRE_EXTERN int vyre_bench_sweep_check(const vyre_bench_sweep *sw, char **log, vyre_error *err);

/* Points of a sweep: the axes' product times the modes. */
VYRE_EXTERN size_t vyre_bench_sweep_points(const vyre_bench_sweep *sw, const vyre_bench_env *env);

/*
 * Runs a user sweep on env's devices.
 *
 * Binding (no spec args): the kernel takes (float *out, const float *in,
 * int N); axis N (required) is the element count, axis BLOCK (default 256)
 * the threads per block, grid = ceil(N / BLOCK); out and in are N floats
 * each, in filled with 1.0. Bytes per launch = 8 N. Any other axis is an
 * unknown parameter. With a spec, "args" lists the parameters in order:
 *   {"buffer": "N"}         a float buffer of N elements (an axis name or
 *                           a number; "in": true fills it with 1.0)
 *   {"int": "N"} {"float": "ALPHA"} {"int": 7}   scalars (axis or number)
 * and optional "grid": "N", "block": "BLOCK" name what sets the launch
 * (grid = ceil(grid / block)); "bytes": "N*8" is not supported: bytes per
 * launch is the sum of the buffers' sizes.
 */
VYRE_EXTERN int vyre_bench_sweep_run(const vyre_bench_sweep *sw, vyre_bench_env *env,
                                     vyre_error *err);

/*
 * The compile suite's child (run by a hidden subcommand in a process of
 * its own): initialises the driver with its JIT cache disabled
 * (CUDA_CACHE_DISABLE=1 past vyre's own setting, for this process only),
 * loads the PTX file at path with cuModuleLoadData and returns the time of
 * that load in *ns. Device 0.
 */
VYRE_EXTERN int vyre_bench_jit_cold_child(const char *ptx_path, uint64_t *ns, vyre_error *err);

/*
 * Fills run's gpu_name, gpu_uuid (device devices[0]), devices ("0,1"),
 * driver and clocks (NVML through mon, when not NULL) and cuda_version.
 * Calls vyre_cuda_init: VYRE_ENODRIVER / VYRE_ENODEV / VYRE_ECUDA.
 */
VYRE_EXTERN int vyre_bench_run_describe(vyre_bench_run *run, const int *devices, size_t n,
                                        vyre_gpu_monitor *mon, vyre_error *err);

/* The datasheet DRAM bandwidth of a GPU by name, bytes/s: H100 SXM 3.35e12,
 * H100 PCIe 2.0e12, H200 4.8e12; 0 when unknown. *label names the part. */
VYRE_EXTERN double vyre_bench_peak_bandwidth(const char *gpu_name, const char **label);

/* The git revision of the working directory ("abc1234", "-dirty" appended
 * when modified) into buf, or "" when it is not a checkout or git is
 * missing. Never fails. */
VYRE_EXTERN void vyre_bench_git_rev(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_BENCH_H */
