/*
 * vyre/bench.h - benchmark runs: the measurement engine, the built-in
 * suites, and the runs, points and samples kept in the results database.
 *
 * This header is part of libvyrecore's public API.
 *
 * A run (vyre_bench_run_suites) is a runs row created when it starts
 * (status running), one points row per measured point with its samples,
 * written in one transaction once the point's last round is measured
 * (vyre_bench_run_opts.rounds), and a final status: done, interrupted
 * (what the rounds so far measured is kept, marked in each point's note)
 * or failed (the run's points, samples and kernel records are removed
 * with the status change, so a failed run leaves only its row and its
 * message). Schema: db/results_v2.sql and its later steps (samples.round:
 * db/results_v5.sql).
 *
 * Measuring a point (libcore's engine): warm-up calls, then samples until
 * the stopping rule (vyre/stats.h) says stop; each sample is timed by the
 * caller's function (GPU time from CUDA events, host wall time); NVML
 * clocks are read between samples (never inside one) and samples taken
 * while the GPU reported a clocks-event reason other than idle are flagged
 * throttled; outliers are flagged with the MAD rule of vyre/stats.h.
 *
 * Suites (vyre_bench_suites): "launch", "memcpy", "bandwidth",
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

/* ---- stored records ------------------------------------------------------ */

typedef enum vyre_bench_run_status {
    VYRE_RUN_RUNNING = 0,
    VYRE_RUN_DONE = 1,
    VYRE_RUN_FAILED = 2,
    VYRE_RUN_INTERRUPTED = 3,
} vyre_bench_run_status;

/* "running", "done", "failed", "interrupted"; "?" otherwise. Static. */
VYRE_EXTERN const char *vyre_bench_run_status_name(vyre_bench_run_status s);

/* One run (a runs row). Empty strings are stored as NULL where the column
 * allows it and read back as "". */
typedef struct vyre_bench_run {
    int64_t id;
    int64_t started_ns;  /* Unix ns */
    int64_t finished_ns; /* 0 while running */
    vyre_bench_run_status status;
    char suites[256];   /* "launch,memcpy,cache" or "sweep:FILE:ENTRY"; read back:
                         * those that have a point (all asked for when none has) */
    char host[256];     /* filled by vyre__bench_run_begin when empty */
    int64_t pid;        /* likewise */
    char gpu_name[256]; /* of the first device used */
    char gpu_uuid[96];
    char devices[64]; /* "0,1" */
    char driver[96];  /* "13000 (580.65.06)" */
    char cuda_version[32];
    char clocks[128]; /* "sm 1980/1980 MHz, mem 2619 MHz" when the run started */
    char git_rev[64]; /* of the working directory, when it is a git checkout */
    char command_line[1024];
    char vyre_version[32]; /* filled by vyre__bench_run_begin */
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
    vyre_stats_stop_reason stop_reason;
    char stop[160]; /* vyre__stats_stop_format() */
    char note[256];
    /* The three views of a GPU point's time (README, "Which time to quote"):
     * `gpu` is stats.median of a point with a GPU timer (each sample two
     * events around the work, enqueued behind a blocking kernel); `batch`
     * and `kernel` follow. 0: not measured (host points, cold points for
     * batch, points without kernels or without the CUPTI pass). */
    double batch_ns;         /* per launch: back-to-back launches between two events */
    double kernel_ns;        /* per launch: median CUPTI kernel duration (the kernel pass) */
    size_t n_block_timeouts; /* samples discarded: the blocking kernel timed out unreleased */
    /* Rounds (db/results_v5.sql): the rounds the samples were taken in
     * (0 for points stored before rounds existed), and the point's noise
     * with them taken into account, vyre__stats_round_noise: the larger of
     * the samples' robust spread and the spread of the round medians (NAN:
     * fewer than 2 rounds). With 2 rounds or more, stats.robust_noise (the
     * `noise` column) is this value. */
    unsigned rounds;
    double round_noise;
    /* An A/B run (vyre_bench_sweep.vs_path, db/results_v6.sql): "A" for a
     * point of the baseline kernel, "B" for the other one; "" for every
     * point of a normal run and for the references. */
    char variant[4];
} vyre_bench_point;

/* One sample of a point. */
typedef struct vyre_bench_sample {
    double value;          /* ns per item (GPU time when the point has a GPU timer) */
    double wall;           /* host wall ns of the whole sample */
    unsigned sm_clock_mhz; /* 0: unknown */
    unsigned char throttled;
    unsigned char outlier;
    unsigned round; /* the round (0 .. rounds - 1) it was taken in */
} vyre_bench_sample;

/* ---- the run lifecycle (in the results database) ------------------------ */

/*
 * Deletes the n runs ids (with their points, samples and kernel records)
 * in one transaction: all of them or none. Runs whose process died are
 * reaped first; a run still 'running' (its process
 * alive, or on another host, where it cannot be judged) is refused with
 * VYRE_EBUSY and nothing is deleted; a missing id is VYRE_ENOENT (remedy
 * VYRE_REMEDY_BENCH_RUNS). Deleting is the user's explicit act: nothing
 * in libcore calls this on its own.
 */
VYRE_EXTERN int vyre_bench_runs_delete(vyre_results *db, const int64_t *ids, size_t n,
                                       vyre_error *err);

/* ---- reading back --------------------------------------------------------- */

/* The newest `limit` runs (0: all), newest first, into an array *out (the
 * caller's: vyre_free). npoints is filled. */
VYRE_EXTERN int vyre_bench_runs_list(vyre_results *db, size_t limit, vyre_bench_run **out,
                                     size_t *n, vyre_error *err);

/*
 * Resolves a run reference: a run id ("42"), "last" (the newest *done*
 * run) or "last-N" (N done runs before it). Failed, interrupted and running
 * runs are skipped by last/last-N (they stay reachable by id), so a run that
 * failed before its first point never becomes a comparison's candidate. VYRE_EINVAL for malformed
 * text, VYRE_ENOENT (remedy VYRE_REMEDY_BENCH_RUNS) for no such run.
 */
VYRE_EXTERN int vyre_bench_run_resolve(vyre_results *db, const char *ref, int64_t *id,
                                       vyre_error *err);

/* Reads one run. VYRE_ENOENT when there is none. */
VYRE_EXTERN int vyre_bench_run_get(vyre_results *db, int64_t id, vyre_bench_run *out,
                                   vyre_error *err);

/* The finished points of a run in order (*out, the caller's:
 * vyre_free). */
VYRE_EXTERN int vyre_bench_points_get(vyre_results *db, int64_t run_id, vyre_bench_point **out,
                                      size_t *n, vyre_error *err);

/* The samples of a point in order (*out, the caller's:
 * vyre_free). */
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

/* *out (the caller's: vyre_free), longest total
 * first. */
VYRE_EXTERN int vyre_bench_kernels_get(vyre_results *db, int64_t point_id,
                                       vyre_bench_kernel_row **out, size_t *n, vyre_error *err);

/* ---- comparing two runs -------------------------------------------------- */

/* One point of the comparison: matched on (suite, benchmark, axes, device,
 * mode). has_a / has_b say which run has it; cmp is valid when both do. */
typedef struct vyre_bench_cmp_row {
    vyre_bench_point a, b;
    int has_a, has_b;
    vyre_stats_compare_result cmp; /* in time; verdict is the final one */
    /* Added with rounds and references (issue 23). */
    int is_reference;   /* a point of suite "reference": it sets the drift, its own verdict is
                           DRIFT rather than SLOWER/FASTER and never fails a gate */
    double ref_ratio;   /* median ratio of the reference this point's band was widened by
                           (the one that establishes the most drift); NAN: none measured in
                           both runs */
    char reference[96]; /* its benchmark, "" none */
    double clock_a_mhz; /* median SM clock of the samples; 0: unknown (host points) */
    double clock_b_mhz;
    int cycles_compared;              /* clocks differ by more than 2%: compared in cycles too */
    vyre_stats_compare_result cycles; /* valid when cycles_compared (time x clock) */
} vyre_bench_cmp_row;

/*
 * Compares every point of run b against run a[0] (the baseline) on their
 * stored samples with vyre__stats_compare_rounds (samples grouped by their
 * round); rows in a's order, then points only b has. Then, for each
 * point, the drift of its timer kind between the runs: host points
 * ("wall" timer) take the host references (reference.cpu, reference.cpus,
 * reference.fsync), GPU points the GPU reference of their device
 * (reference.gpu); the drift a reference establishes is its median
 * ratio (1/ratio below 1), else 1 when the reference is NOISY; the
 * largest of them is applied by
 * vyre__stats_compare_widen. When both points have SM clocks
 * and they differ by more than 2%, the point is compared again in clock
 * cycles (each sample's time x its clock, as nvbench's compare does) and
 * a SLOWER or FASTER verdict must hold in both, else it is DRIFT.
 * Points match on suite, benchmark, axes, device, mode and variant. An
 * A/B run (points with variants) compared with itself (a == b) matches
 * each A point with the B point of the same place instead: B/A of the
 * samples the run alternated; its shared references match themselves.
 * *out is the caller's: vyre_free. opts NULL: defaults.
 *
 * With na > 1 the baseline is pooled from runs a[0..na-1]
 * (newest first, e.g. from vyre_results_select_pool; 1 to
 * VYRE_RESULTS_POOL_MAX): the points are a[0]'s, and each takes the
 * samples of the same point (suite, benchmark, axes, device, mode,
 * variant) in every pooled run that has it, each run's rounds kept as
 * rounds of their own, so the hierarchical bootstrap sees run-to-run drift
 * as variance between rounds. Row field a is a[0]'s point with its median
 * (a.stats.median) the pooled one; cmp.rounds_a counts the pooled rounds.
 */
VYRE_EXTERN int vyre_bench_compare_runs(vyre_results *db, const int64_t *a, size_t na, int64_t b,
                                        const vyre_stats_compare_opts *opts,
                                        vyre_bench_cmp_row **out, size_t *n, vyre_error *err);

/* The comparison as a whole (issue 34): PASS, FAIL (a point SLOWER) or
 * INCONCLUSIVE (nothing SLOWER, but too much could not be judged). */
typedef enum vyre_bench_outcome {
    VYRE_OUTCOME_PASS = 0,
    VYRE_OUTCOME_FAIL = 1,
    VYRE_OUTCOME_INCONCLUSIVE = 2,
} vyre_bench_outcome;

/* A comparison INCONCLUSIVE when more than this share of its points (not
 * counting the references) could not be judged; --strict: any. */
#define VYRE_COMPARE_UNJUDGED_MAX 0.25

/* The verdicts of a comparison's rows, counted, and its outcome. */
typedef struct vyre_bench_cmp_summary {
    /* every row, references included (compare's tally line) */
    size_t faster, slower, same, noisy, drift, unmatched;
    /* the points judged for the outcome: rows that are no reference */
    size_t points;     /* of them */
    size_t unjudged;   /* NOISY, DRIFT or only in one run */
    size_t u_noisy;    /* of unjudged: NOISY */
    size_t u_drift;    /* DRIFT */
    size_t u_cycles;   /* DRIFT because the verdict did not hold in clock cycles */
    size_t u_one_side; /* only in one run */
    vyre_bench_outcome outcome;
} vyre_bench_cmp_summary;

/*
 * Counts rows[0..n) and decides the outcome: FAIL when a point is SLOWER
 * (a reference never is); else INCONCLUSIVE when no point is compared, or
 * when the unjudged points (NOISY, DRIFT, only one run has) are more than
 * VYRE_COMPARE_UNJUDGED_MAX of the points, or, with strict, when any is;
 * else PASS. References set the drift and are never judged themselves.
 * Pure: reads rows only. out is the caller's.
 */
VYRE_EXTERN void vyre_bench_compare_summarize(const vyre_bench_cmp_row *rows, size_t n, int strict,
                                              vyre_bench_cmp_summary *out);

/* "PASS", "FAIL" or "INCONCLUSIVE". */
VYRE_EXTERN const char *vyre_bench_outcome_name(vyre_bench_outcome o);

/* The arrays the functions above return are freed with vyre_free
 * (vyre/error.h). */

/* ---- suites and runs ------------------------------------------------------- */

/* Called as each point is stored (and for progress: done of total points
 * of the whole run). */
typedef void (*vyre_bench_point_fn)(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n,
                                    void *ctx);
typedef void (*vyre_bench_progress_fn)(size_t done, size_t total, const char *what, void *ctx);

/* Called once, before anything is measured, when GPU suites are left out
 * of a run because there is no usable GPU: `suites` lists them
 * ("launch, memcpy"), `why` says what is missing (with a hint). */
typedef void (*vyre_bench_skip_fn)(const char *suites, const vyre_error *why, void *ctx);

/*
 * User sweep: a kernel file, an entry point and axes.
 *
 * Binding (no spec args): the kernel takes (float *out, const float *in,
 * int N); axis N (required) is the element count, axis BLOCK (default 256)
 * the threads per block, grid = ceil(N / BLOCK); out and in are N floats
 * each, in filled with 1.0. Bytes per launch = 8 N. Any other axis is an
 * unknown parameter. With a spec, "args" lists the parameters in order:
 *
 *   {"buffer": COUNT, "type": "bf16", "fill": "random", "seed": 1}
 *        a device buffer of COUNT elements (a number, an axis or an
 *        expression); type f32 (default), f16, bf16, f64, i8, i32, i64,
 *        u8; fill zeros (default), ones ("in": true, today's spelling),
 *        iota or random (uniform in [-1, 1), integers 0..127; seed default
 *        the parameter's index + 1)
 *   {"int": EXPR, "type": "i64"}      i32 (default) or i64
 *   {"float": X, "type": "f64"}       f32 (default) or f64; X a number, an
 *                                     axis (floating point too) or EXPR
 *   {"null": true}                    a null pointer (Triton's scratch)
 *
 * "grid": in a version 1 spec (no "version": today's), an axis or a
 * number of threads in x, grid = ceil(grid / block); with "version": 2,
 * blocks (programs): EXPR or [EXPR, EXPR, EXPR]. "block": a number, an
 * axis or EXPR (version 2: up to three); left out, the PTX's .reqntid or
 * .maxntid, else 256 (version 1) or an error. "shared": dynamic shared
 * memory per block, EXPR bytes (above 48 KiB set as the kernel's maximum
 * through cuFuncSetAttribute). "bytes", "flops": EXPR per launch; the
 * point's metric is then GB/s (bytes) or TFLOP/s (flops). Without
 * "bytes", bytes per launch is the sum of the buffers' sizes.
 * "cooperative": true launches a cooperative grid (every block resident
 * at once, so the kernel may sync its whole grid: Triton's
 * launch_cooperative_grid; the grid must fit the GPU at once), "pdl":
 * true with programmatic dependent launch (the kernel may start before
 * the one ahead of it on the stream ends: Triton's launch_pdl); both
 * through cuLaunchKernelEx's attributes, false or absent: cuLaunchKernel.
 * EXPR: see
 * libcore/src/bench/expr.h (+ - * / ( ) ceil floor min max over integer
 * axes, exact, overflow-checked). PTX parameters are checked against the
 * spec: their count, and each one's size.
 */
typedef struct vyre_bench_sweep {
    const char *path; /* .cu, .ptx or .cubin */
    const char *entry;
    const vyre_axes *axes;
    const char *spec_json;   /* the spec file's object (its "args"), or NULL */
    const char *spec_origin; /* the spec's name in messages (its path); NULL: "spec" */
    const char *arch;        /* --arch: compile for this; NULL: the PTX's .target when the
                                device runs it, else the device's (vyre_bench_sweep_plan_make) */
    /* An A/B run (`vyre-bench run ... --vs FILE`): a second kernel file
     * (.cu, .ptx or .cubin) with the same entry, launched with the same
     * arguments at every point, measured in the same process, its samples
     * alternating with path's one by one (A, B, A, B) behind the blocking
     * kernel. Every sweep point is then stored twice, variant "A" (path)
     * and "B" (vs_path); vyre_bench_compare_runs(db, run, run) compares
     * them. Checked before anything runs: its entry must exist and, for
     * two PTX files, take the same parameters. NULL: a normal sweep. */
    const char *vs_path;
} vyre_bench_sweep;

/* One point of a sweep as it would be launched (a dry run). */
typedef struct vyre_bench_sweep_plan_point {
    char axes[256]; /* "N=1024 M=64" */
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    double memory_bytes; /* device memory of its buffers */
    double bytes;        /* per launch ("bytes", else the buffers' sum) */
    double flops;        /* per launch; 0: the spec gives none */
} vyre_bench_sweep_plan_point;

/* A dry run's result. vyre_bench_sweep_plan_release frees it. */
typedef struct vyre_bench_sweep_plan {
    char arch[16];           /* compiled for */
    const char *arch_origin; /* "--arch", "the PTX's .target", "the default" (static) */
    const char *source_kind; /* "ptx", "cuda-c", "cubin" (static) */
    size_t cubin_bytes;
    size_t nparams;
    int version; /* of the spec: 1 or 2 */
    size_t npoints;
    vyre_bench_sweep_plan_point *points;
    char *compile_log; /* when the compile failed, or NULL */
    /* How each point is launched beyond grid, block and shared memory:
     * "cooperative", "pdl" or "cooperative, pdl" (the spec's
     * "cooperative" and "pdl"), or NULL for a plain launch (static). */
    const char *launch;
} vyre_bench_sweep_plan;

/*
 * A dry run of sw, with no GPU: reads the kernel, binds the spec, chooses
 * the architecture (sw->arch, else the PTX's .target, else sm_90),
 * compiles the kernel for it, and evaluates every point's launch. Returns
 * 0, or the first error (VYRE_EINVAL / VYRE_ERANGE naming the JSON path,
 * the column or the point; VYRE_ENOENT; VYRE_ECOMPILE with
 * plan->compile_log). plan is always initialised: release it.
 */
VYRE_EXTERN int vyre_bench_sweep_plan_make(const vyre_bench_sweep *sw, vyre_bench_sweep_plan *plan,
                                           vyre_error *err);

/* Frees what plan holds. NULL is a no-op. */
VYRE_EXTERN void vyre_bench_sweep_plan_release(vyre_bench_sweep_plan *plan);

typedef struct vyre_bench_suite_def {
    const char *name;
    int needs_gpu;
    const char *description;
} vyre_bench_suite_def;

/* The suites, in their default order; *n set. Static storage. */
VYRE_EXTERN const vyre_bench_suite_def *vyre_bench_suites(size_t *n);

/* The suite called name, or NULL. */
VYRE_EXTERN const vyre_bench_suite_def *vyre_bench_suite_find(const char *name);

/* What to run and how. Zero-initialise, then set. */
typedef struct vyre_bench_run_opts {
    vyre_results *db;
    const char *const *suites; /* suite names (vyre_bench_suite_find), in order */
    size_t nsuites;
    int explicit_suites;           /* the user named the suites: a GPU suite without a usable GPU
                                      fails the run (VYRE_ENODRIVER / VYRE_ENODEV) instead of
                                      being skipped */
    const vyre_bench_sweep *sweep; /* a user sweep after the suites, or NULL; it is
                                      checked (and compiled for sweep->arch, else as
                                      vyre_bench_sweep's arch says for the first
                                      device; without a GPU the PTX's .target or
                                      sm_90) first */
    const int *devices;            /* CUDA ordinals (at most 16); none: device 0 */
    size_t ndevices;
    int all_devices;           /* every device the driver sees, instead of `devices` */
    vyre_stats_stop_rule rule; /* for GPU and cache points */
    int quick;                 /* fewer sizes, shorter cold compile series */
    int cold;                  /* kernel points (bandwidth, sweeps): 0 hot, 1 cold, 2 both */
    int kernels;               /* gather CUPTI kernel records per point in a separate pass */
    /* 1: enqueue GPU samples without the blocking kernel (each sample's
     * start event is then stamped before its launch arrives: short kernels
     * read long by the launch latency). 0, the default: every GPU-timed
     * sample waits behind a kernel that spins on a host-mapped flag until
     * the sample's events and launches are queued (nvbench's method). */
    int no_blocking_kernel;
    const char *tmp_dir; /* scratch directory; NULL: /tmp */
    /* The program to run again for the compile suite's cold PTX JIT, which
     * needs a fresh process; that program must call vyre_bench_host_start
     * first in main(). NULL: this program itself when it made that call,
     * else the cold-JIT points are left out. */
    const char *child_exe;
    const volatile sig_atomic_t *stop; /* set (Ctrl-C): stop after the current sample */
    const char *command_line;          /* stored with the run */
    const char *git_rev;               /* likewise (the front end's working tree), may be NULL */
    vyre_bench_point_fn on_point;      /* each, may be NULL */
    vyre_bench_progress_fn on_progress;
    vyre_bench_skip_fn on_skip;
    void *cb_ctx;
    /* Rounds (0: VYRE_BENCH_ROUNDS_DEFAULT; at most VYRE_BENCH_ROUNDS_MAX):
     * the whole run (every suite, the sweep, the references) is measured
     * this many times in turn, each pass a round with 1/rounds of each
     * point's stopping rule (min samples rounded up, min time, timeout,
     * max samples), and every point is stored once, with the samples of
     * all its rounds, after the last. A round also measures the fixed
     * references of suite "reference" (reference.cpu, a fixed integer loop;
     * reference.cpus, the loop on every online CPU at once;
     * reference.fsync, a 4 KiB write and fsync under tmp_dir; GPU suites:
     * reference.gpu through vyre__bench_reference_gpu), which compare uses
     * to tell the machine's drift between runs. Interrupted: every point
     * with samples is stored with what it has, its note saying so. */
    unsigned rounds;
} vyre_bench_run_opts;

#define VYRE_BENCH_ROUNDS_DEFAULT 5
#define VYRE_BENCH_ROUNDS_MAX     100

/* How a run went. vyre_bench_run_result_release frees what it holds. */
typedef struct vyre_bench_run_result {
    int64_t run_id;          /* 0: the runs row could not be created */
    size_t npoints;          /* points measured and stored */
    int interrupted;         /* *stop cut the run short (status interrupted) */
    char skipped[128];       /* GPU suites left out ("launch, memcpy"), "" none */
    vyre_error skip_reason;  /* why they were */
    char *compile_log;       /* the sweep's compiler log when it failed to compile, or NULL */
    vyre_error finish_error; /* code != 0: marking the failed run failed too */
    /* The SM clocks seen in GPU samples moved during the run (min and max
     * MHz): they were not locked, and times of a kernel depend on them. */
    int clocks_unlocked;
    unsigned clock_min_mhz, clock_max_mhz;
    unsigned rounds; /* rounds measured (fewer than asked when interrupted) */
} vyre_bench_run_result;

/*
 * Runs a benchmark from start to end: creates the runs row (status
 * running), checks the devices (when anything needs a GPU) and the sweep,
 * decides what runs (without a usable GPU the GPU suites are skipped, and
 * on_skip told, unless explicit_suites), measures every point of every
 * suite on every device and then the sweep, storing each and handing it
 * to on_point, and sets the final status: done, interrupted (*stop set;
 * the finished points are kept) or, on any error, failed with the error's
 * message. Returns 0 (done or interrupted: see res) or the first error
 * (VYRE_ENODRIVER / VYRE_ENODEV for a GPU the run needs and lacks).
 * Thread-safety: one run at a time per process.
 */
VYRE_EXTERN int vyre_bench_run_suites(const vyre_bench_run_opts *opts, vyre_bench_run_result *res,
                                      vyre_error *err);

/* Frees what res holds (compile_log). NULL-safe. */
VYRE_EXTERN void vyre_bench_run_result_release(vyre_bench_run_result *res);

/*
 * The bench child protocol, in one call. The compile suite times a cold
 * PTX JIT (the driver's JIT cache off) in a fresh process: a run starts
 * the host program again with a marker in the environment that names the
 * parent. A program that runs suites makes this its first call in main(),
 * before it parses options or starts threads:
 *
 *     int code;
 *     if (vyre_bench_host_start(argc, argv, &code))
 *         return code;
 *
 * When this process is such a child, it does the measurement, hands the
 * result to the parent and returns 1 with *exit_code set: exit with it at
 * once. Otherwise it returns 0 and records that this program can be the
 * child, so vyre_bench_run_suites re-runs it ("/proc/self/exe") for the
 * cold-JIT points when opts->child_exe is NULL. A program that never makes
 * the call gets no cold-JIT points. Prints nothing; exit_code must not be
 * NULL.
 */
VYRE_EXTERN int vyre_bench_host_start(int argc, char **argv, int *exit_code);

/* A kernel of the built-in suites: CUDA C, compiled by NVRTC at run time. */
typedef struct vyre_bench_kernel {
    const char *label; /* "matmul" */
    const char *entry; /* its extern "C" name */
    const char *src;   /* CUDA C */
} vyre_bench_kernel;

/* The compile suite's kernels, in order: a tiled SGEMM, a row softmax and
 * a block reduction (real kernels, tens of KB of PTX each), then a small
 * saxpy; *n set. Static storage. For programs that measure the same
 * kernels another way (perf/perf_dispatch.c). */
VYRE_EXTERN const vyre_bench_kernel *vyre_bench_kernels(size_t *n);

#define VYRE_BENCH_GIT_REV_MAX 48
#define VYRE_BENCH_GIT_REF_MAX 256

/* The git state a run records (machine.c). */
typedef struct vyre_bench_git {
    char rev[VYRE_BENCH_GIT_REV_MAX]; /* HEAD abbreviated to 12 hex digits (more when
                                         ambiguous); "" when not a checkout */
    int dirty;                        /* tracked files differ from HEAD */
    char ref[VYRE_BENCH_GIT_REF_MAX]; /* the branch, else the tag HEAD stands on, else the
                                         CI's ref name ($GITHUB_REF_NAME, then
                                         $CI_COMMIT_REF_NAME); "" when none */
} vyre_bench_git;

/* Fills *g with the git state of the working tree at dir (NULL: the
 * current directory), running the git found on $PATH without a shell,
 * each call bounded to a few seconds. A directory that is not a checkout
 * is not an error: rev and ref are "" (ref may still come from the CI).
 * Returns 0, VYRE_ENOENT when git is not on $PATH, VYRE_EIO when git did
 * not answer in time; *g is filled as far as it got either way. */
VYRE_EXTERN int vyre_bench_git_state(const char *dir, vyre_bench_git *g, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_BENCH_H */
