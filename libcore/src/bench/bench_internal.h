/*
 * bench_internal.h - what the bench modules share: the run state, the point
 * runner (engine.c), the suites (suite_*.c, gpu_suites.c) and the
 * sweeps, which run.c drives. Not public.
 *
 * The bench subsystem (libcore/src/bench/) is the top layer of libcore and
 * the engine of vyre-bench: measurement under a stopping rule (engine.c),
 * the suite table, the suites and their real kernels (suites.c,
 * suite_*.c, gpu_device.c, gpu_suites.c, bench_kernels.c), parameter axes (axes.c),
 * the sweep spec parser (sweep_spec.c), a sweep's binding, plan and run
 * (sweep_binding.c, sweep_plan.c, sweep_run.c), statistics (stats.c), the results
 * database (results.c) and the runs in it (runs_db.c), machine facts
 * (machine.c), the host program's child hook (child.c) and the
 * orchestration of a whole run (run.c). It may call every subsystem below it: cuda/,
 * cache/, trace/, base/ (base < trace < cache < cuda < bench;
 * docs/DESIGN.md); nothing in libcore calls it.
 */
#ifndef VYRE_BENCH_INTERNAL_H
#define VYRE_BENCH_INTERNAL_H

#include "bench/ptxinfo.h"
#include "vyre/bench.h"
#include "vyre/key.h"

#define VYRE__BENCH_DEVICES_MAX 16

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
    vyre_stats_stop_rule rule;
    vyre_gpu_monitor *mon;             /* NULL: no clocks */
    int nvml_index;                    /* GPU to watch in mon's samples; -1 none */
    const volatile sig_atomic_t *stop; /* set (Ctrl-C): stop after the current sample */
} vyre_bench_measure_opts;

/*
 * Measures one point: fills stats, n_throttled, wall_median, stop_reason
 * and stop of *pt, and returns the samples in *samples (the caller's:
 * vyre_free; *n of them) with their throttle and outlier flags. When *stop
 * becomes set, returns 0 with *interrupted = 1 (the point is incomplete:
 * do not store it). Returns 0 or the sample function's error.
 */
int vyre__bench_measure(const vyre_bench_measure_opts *o, vyre_bench_point *pt,
                        vyre_bench_sample **samples, size_t *n, int *interrupted, vyre_error *err);

/*
 * Marks 'interrupted' every 'running' run of this host whose process is
 * gone: its pid does not exist, belongs to another process (a start time,
 * /proc/<pid>/stat field 22, other than the one recorded at
 * vyre__bench_run_begin), or the machine rebooted since. Its finished points
 * stay, as after Ctrl-C. vyre_bench_runs_list, vyre_bench_run_get and
 * vyre_bench_run_resolve call it first (ignoring its errors), so readers
 * never see a dead run as running. *nreaped (may be NULL) gets the count.
 */
int vyre__bench_runs_reap(vyre_results *db, size_t *nreaped, vyre_error *err);

/* Everything a suite needs while a run goes: run.c fills it from
 * vyre_bench_run_opts; the suites advance the run state. */
typedef struct vyre_bench_env {
    vyre_results *db;
    int64_t run_id;
    vyre_stats_stop_rule rule; /* for GPU and cache points */
    int quick;                 /* fewer sizes, shorter cold compile series */
    int cold;                  /* kernel points (bandwidth, sweeps): 0 hot, 1 cold, 2 both */
    int kernels;               /* gather CUPTI kernel records per point in a separate pass */
    int no_blocking; /* GPU samples without the blocking kernel (--disable-blocking-kernel) */
    /* 0: the timing sweep (kernel passes only noted in `timed`); 1: the
     * records sweep run.c makes after every timed pass of every device
     * (vyre__bench_point_run then measures nothing: it finds the point
     * stored by the timing sweep and runs its kernel pass). */
    int records_sweep;
    /* Set by a kernel pass that times its own launches (the sweeps' hot
     * pass: a held graph replay between two events, CUPTI on): ns a launch,
     * 0 when it did not; vyre__bench_kernel_pass zeroes it before the pass
     * and hands it to vyre__bench_point_traced after. */
    double kpass_traced_ns;
    const int *devices; /* CUDA ordinals */
    size_t ndevices;
    vyre_gpu_monitor *mon; /* may be NULL */
    const volatile sig_atomic_t *stop;
    const char *child_exe; /* run again for the cold-JIT points; NULL: none */
    const char *tmp_dir;   /* scratch directory (the cache suite's cache lives here) */
    vyre_bench_point_fn on_point;
    vyre_bench_progress_fn on_progress;
    void *cb_ctx;
    /* run state, maintained by the suites */
    int next_seq;
    size_t done, total;
    int interrupted;
    /* Points stored by the timing sweep, in order, when kernels is set
     * (malloc'ed; run.c frees it); the records sweep matches its points
     * to these, moving `cursor` forward only. */
    struct vyre__bench_timed *timed;
    size_t ntimed, timed_cap, cursor;
    /* Rounds (see vyre_bench_run_opts.rounds): run.c runs every suite
     * `rounds` times, setting `round`; vyre__bench_point_run measures each
     * pass with 1/rounds of the rule and keeps the samples in `acc`,
     * keyed by (suite, benchmark, axes, device, mode), storing a point
     * only in the last round (vyre__bench_rounds_flush stores what an
     * interrupted run measured). rounds 0 means 1. */
    unsigned rounds, round;
    struct vyre__bench_acc *acc;
    size_t nacc, acc_cap;
    size_t stored;                 /* points stored (the run's result) */
    unsigned clock_min, clock_max; /* SM clocks seen in GPU samples, MHz (0: none) */
    unsigned gpu_ref_round_done[VYRE__BENCH_DEVICES_MAX]; /* round + 1 of the last
                                                             reference.gpu per device slot */
    int gpu_refs; /* the run uses a GPU: reference.gpu on every device in every round */
    /* The blocking kernel's timeouts: samples discarded since the point
     * runner last took the count (it zeroes it before each point's round
     * and adds it to that point's accumulator after, so a timeout is
     * counted with the point whose round lost it, whatever order the
     * rounds interleave points in), and per device slot (the order of
     * `devices`) the timeouts in a row and whether the hold is off for the
     * rest of the run: a device whose releases are lost stays without the
     * hold in later rounds, instead of losing BLOCK_GIVE_UP more samples
     * (seconds each) every round. */
    size_t block_discarded;
    struct vyre__bench_block_state {
        int in_row;
        int gave_up;
    } block[VYRE__BENCH_DEVICES_MAX];
} vyre_bench_env;

/* A point's samples gathered over the rounds. */
struct vyre__bench_acc {
    vyre_bench_point pt; /* as reserved in its first round (id, seq) */
    vyre_bench_sample *s;
    size_t n, cap;
    unsigned rounds;  /* rounds that added samples */
    size_t discarded; /* samples its rounds discarded (env->block_discarded) */
    int stored;
};

/* A point the timing sweep stored, as the records sweep finds it again. */
struct vyre__bench_timed {
    int64_t id;
    char benchmark[96];
    char axes[256];
    char variant[8]; /* "" or, with --vs, "A" or "B" */
    int device;
    int mode;
};

/* Points the suite will measure with env's settings (for progress). */
size_t vyre__bench_suite_points(const char *name, const vyre_bench_env *env);

/*
 * Runs the suite: every point reserved, measured, stored and handed to
 * env->on_point. Returns 0 (env->interrupted says whether Ctrl-C cut it
 * short), VYRE_EINVAL for an unknown suite, or the first error (a GPU
 * suite on a machine without one: VYRE_ENODRIVER / VYRE_ENODEV).
 */
int vyre__bench_suite_run(const char *name, vyre_bench_env *env, vyre_error *err);

/*
 * Checks a user sweep before anything is measured (sweep_plan.c): the
 * file readable, the spec bound (bench/sweep_binding.h), the architecture
 * chosen for a device of compute capability cc_major.cc_minor (0.0: no
 * GPU; vyre__bench_choose_arch), the kernel compiled for it on the CPU,
 * and every point's launch evaluated. Returns 0 or VYRE_EINVAL /
 * VYRE_ERANGE / VYRE_ENOENT / VYRE_ECOMPILE (the message quotes the first
 * failing line; *log, when log is not NULL, receives the whole compiler
 * log, malloc'ed, the caller's).
 */
int vyre__bench_sweep_check(const vyre_bench_sweep *sw, int cc_major, int cc_minor, char **log,
                            vyre_error *err);

/* A sweep's kernel file, read, with its PTX facts when it is PTX. */
typedef struct vyre__sweep_kernel {
    char *src; /* NUL-terminated, len bytes before the NUL */
    size_t len;
    vyre_source_kind kind;
    int have_ptx;
    vyre__ptx_info ptx;
} vyre__sweep_kernel;

/* Reads sw->path (VYRE_ENOENT with a hint naming the spec's "kernel"). */
int vyre__sweep_kernel_load(const vyre_bench_sweep *sw, vyre__sweep_kernel *k, vyre_error *err);
void vyre__sweep_kernel_release(vyre__sweep_kernel *k);

/* The architecture to compile k for on a device of cc_major.cc_minor
 * (0: none), as vyre__bench_choose_arch decides from sw->arch. */
int vyre__sweep_arch(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k, int cc_major,
                     int cc_minor, char *arch, size_t size, const char **origin, vyre_error *err);

/* The largest kernel source or PTX file read (vyre__read_file's max). */
#define VYRE__BENCH_KERNEL_MAX ((size_t)256 << 20)

/* Points of a sweep: the axes' product times the modes times the devices. */
size_t vyre__bench_sweep_points(const vyre_bench_sweep *sw, const vyre_bench_env *env);

/* Runs a user sweep on env's devices. */
int vyre__bench_sweep_run(const vyre_bench_sweep *sw, vyre_bench_env *env, vyre_error *err);

/*
 * Fills run's gpu_name, gpu_uuid (device devices[0]), devices ("0,1"),
 * driver and clocks (NVML through mon, when not NULL) and cuda_version.
 * Calls vyre_cuda_init: VYRE_ENODRIVER / VYRE_ENODEV / VYRE_ECUDA.
 */
int vyre__bench_run_describe(vyre_bench_run *run, const int *devices, size_t n,
                             vyre_gpu_monitor *mon, vyre_error *err);

/*
 * The compile suite's cold PTX JIT: runs exe again (see
 * vyre_bench_child_main) to load the PTX file at ptx_path with the
 * driver's JIT cache off, in a fresh process, and returns the time of that
 * load in *ns. Errors: the child's own (its code, message and hint), or
 * VYRE_ECUDA when it gave no result.
 */
int vyre__bench_jit_cold_spawn(const char *exe, const char *ptx_path, double *ns, vyre_error *err);

/* The program a run re-runs for the cold-JIT points (child.c): o->child_exe
 * when set, else "/proc/self/exe" when this process made
 * vyre_bench_host_start its first call, else NULL (the points are left
 * out). */
const char *vyre__bench_child_exe(const vyre_bench_run_opts *o);

/* A separate pass for CUPTI kernel records: runs the point's work a few
 * times and synchronises. */
typedef int (*vyre__bench_pass_fn)(void *ctx, vyre_error *err);

/*
 * Runs one point: reserves its row (pt->run_id, seq taken from env), pushes
 * the VYRE_RANGE_BENCH_POINT range with the row id, brackets the timed pass
 * with cuProfilerStart/Stop when gpu is set, measures (o), stores the
 * statistics and samples and, when env->kernels is set, remembers the
 * point in env->timed. It never attaches CUPTI: in the records sweep
 * (env->records_sweep) it measures and stores nothing, finds the point the
 * timing sweep stored with the same benchmark, axes, device and mode, and
 * runs kpass (when set) under CUPTI capture (kernels and NVTX markers),
 * storing the records with that point; a point it cannot find is skipped. `finish` (may be NULL)
 * fills derived figures (metric, note) from the stats before the point is stored. Hands the point
 * to env->on_point and advances progress. Returns 0 (interrupted: env->interrupted set, nothing
 * stored) or an error.
 */
typedef void (*vyre__bench_finish_fn)(vyre_bench_point *pt, void *ctx);
int vyre__bench_point_run(vyre_bench_env *env, vyre_bench_point *pt,
                          const vyre_bench_measure_opts *o, int gpu, vyre__bench_pass_fn kpass,
                          vyre__bench_finish_fn finish, void *ctx, vyre_error *err);

/*
 * Adds one round of samples s[0..n-1] measured by the caller to pt (the B
 * side of an A/B sweep, taken alternately with A's samples inside A's
 * vyre__bench_point_run): the row reserved in its first round, the
 * samples kept with env->round, and in the last round the statistics,
 * `finish` (may be NULL) and the point stored and handed on, as
 * vyre__bench_point_run does, remembered (with env->kernels) for a kernel
 * pass of its own: in the records sweep, the caller passes the point to
 * vyre__bench_point_run with its variant and kernel pass. n == 0 or the
 * records sweep: nothing. Returns 0 or an error.
 */
int vyre__bench_point_add(vyre_bench_env *env, vyre_bench_point *pt, const vyre_bench_sample *s,
                          size_t n, vyre__bench_finish_fn finish, void *ctx, vyre_error *err);

/* The CUPTI kernel-record pass of a point already stored (pt->id,
 * pt->run_id). A failure to capture clears env->kernels; never an error.
 * Only the records sweep may call it: every timed pass of the run comes
 * before the first CUPTI attach. */
int vyre__bench_kernel_pass(vyre_bench_env *env, vyre_bench_point *pt, vyre__bench_pass_fn kpass,
                            void *ctx, vyre_error *err);

/*
 * Stores every point in env->acc not stored yet that has samples (an
 * interrupted run's partial rounds), with a note saying how many rounds
 * it has, and hands each to env->on_point. Frees env->acc.
 */
int vyre__bench_rounds_flush(vyre_bench_env *env, vyre_error *err);
void vyre__bench_rounds_release(vyre_bench_env *env);

/* ---- references (bench_reference.c) ----------------------------------------- */

/* Points of the references per round (for progress): the 3 host ones,
 * and reference.gpu per device when env->gpu_refs is set. */
size_t vyre__bench_reference_points(const vyre_bench_env *env);

/*
 * The host references of this round: reference.cpu (a fixed integer loop),
 * reference.cpus (the same loop on every online CPU at once) and
 * reference.fsync (a 4 KiB write and fsync of a file under
 * env->tmp_dir), suite "reference", device -1, mode host, each a point
 * with a small fixed budget, through vyre__bench_point_run.
 */
int vyre__bench_reference_host(vyre_bench_env *env, vyre_error *err);

/*
 * The GPU reference of this round on `device` (a hook for the GPU code,
 * reference_gpu.c; gpu_device.c owns the timing discipline): timing's sample times one
 * launch of a fixed kernel of fixed size (ns, GPU time) as the suites'
 * points are timed, with its prepare, ctx, mon and nvml_index; its rule,
 * warmup and stop are replaced by the references' fixed budget. `finish`
 * (may be NULL) is called with timing->ctx as a suite's is. Stored as
 * suite "reference", benchmark "reference.gpu", mode hot, GPU timer.
 * Called more than once in a round for the same device, it measures only
 * the first time (returns 0 at once).
 */
int vyre__bench_reference_gpu(vyre_bench_env *env, int device,
                              const vyre_bench_measure_opts *timing, vyre__bench_finish_fn finish,
                              vyre_error *err);

/*
 * reference.gpu on every device of the run, through
 * vyre__bench_reference_gpu (reference_gpu.c): a fixed kernel
 * (vyre__bench_reference_ptx) held behind the blocking kernel like every
 * GPU sample. run.c calls it once a round when env->gpu_refs is set.
 */
int vyre__bench_gpu_references(vyre_bench_env *env, vyre_error *err);

/* Monotonic ns. */

/* Suites. */
size_t vyre__bench_cache_points(const vyre_bench_env *env);
int vyre__bench_cache_run(vyre_bench_env *env, vyre_error *err);
size_t vyre__bench_gpu_points(const char *suite, const vyre_bench_env *env);
int vyre__bench_gpu_run(const char *suite, vyre_bench_env *env, vyre_error *err);

/* Kernels (bench_kernels.c). */
extern const vyre_bench_kernel vyre__bench_kernels[]; /* vyre_bench_kernels() */
extern const size_t vyre__bench_nkernels;
extern const char vyre__bench_stream_src[]; /* stream_copy(float4 *out, const float4 *in, u64 n4) */
extern const char vyre__bench_empty_src[];  /* empty_kernel(void) */
/* vyre_block_stream(const volatile u32 *flag, u32 *timed_out, u64 timeout_ns):
 * PTX, loaded by the driver's JIT (no NVRTC, no nvcc); see gpu_device.c. */
extern const char vyre__bench_block_ptx[];
#define VYRE__BENCH_BLOCK_KERNEL "vyre_block_stream"
/* vyre_reference_loop(u32 *out, u32 iters): PTX, loaded by the driver's
 * JIT; each thread a chain of `iters` dependent multiply-adds, its result
 * stored (reference.gpu; see reference_gpu.c). */
extern const char vyre__bench_reference_ptx[];

/* ---- the three views of a GPU time (gpu_device.c, runs_points.c) ---- */

/* The most launches between one pair of events in the batch view: all of
 * them are queued behind the blocking kernel before it is released, and a
 * launch that finds the queue full waits for room, which never comes while
 * the stream is held (the driver's queue holds about a thousand). */
#define VYRE__BENCH_BATCH_LAUNCHES_MAX 256u
/* The most event pairs of the batch view of one point. */
#define VYRE__BENCH_BATCH_PAIRS_MAX 64u

/*
 * The batch view's shape: *launches per event pair (1 ..
 * VYRE__BENCH_BATCH_LAUNCHES_MAX) and *pairs (1 .. VYRE__BENCH_BATCH_PAIRS_MAX)
 * so that launches x pairs x sample_ns covers target_ns, from a sample's
 * time sample_ns. A sample_ns or target_ns that is not a positive number
 * gives one pair of one launch.
 */
void vyre__bench_batch_plan(double sample_ns, double target_ns, unsigned *launches,
                            unsigned *pairs);

/*
 * The event pair's own cost from the empty kernel's samples: median of
 * held (ns, one held launch between two events) less the median of
 * replays (ns, one replay of a CUDA graph of `launches` launches) per
 * launch; 0 when not positive or not a number. Sorts both arrays.
 */
double vyre__bench_event_overhead(double *held, size_t n, double *replays, size_t m,
                                  unsigned launches);

/* Whether the event time gpu_ns and the CUPTI kernel time kernel_ns of a
 * point differ by more than 5% of kernel_ns plus 1 us (the point then says
 * so in its note). 0 when either is not a positive number. */
int vyre__bench_views_disagree(double gpu_ns, double kernel_ns);

/*
 * What CUPTI's kernel tracing did to a point's launches: traced_ns a
 * launch, timed with events around the kernel pass's held graph replay
 * (CUPTI on), against batch_ns, the batch view's same replay without
 * CUPTI. More than 2% slower: writes the note's text into buf and returns
 * 1, else 0 (0 when either is not a positive number). The kernel view is
 * then a traced time, up to that much above the untraced kernel: before
 * Blackwell, CUPTI stamps a concurrent kernel by instrumenting its code,
 * and its stamps add a gap between kernels too (README).
 */
int vyre__bench_traced_note(double traced_ns, double batch_ns, char *buf, size_t size);

/* Appends vyre__bench_traced_note's text, when there is one, to the note
 * of point_id (stored, with its batch view). Returns 0 or the database's
 * error. */
int vyre__bench_point_traced(vyre_results *db, int64_t point_id, double traced_ns, vyre_error *err);

/*
 * Inserts the runs row (status running, started now) from run's
 * descriptive fields; fills run->id, started_ns, status, and host, pid and
 * vyre_version when empty. Returns 0 or the database's errors.
 */
int vyre__bench_run_begin(vyre_results *db, vyre_bench_run *run, vyre_error *err);

/* Rewrites the descriptive fields of run->id (GPU name, devices, clocks,
 * ..., message) once they are known. */
int vyre__bench_run_update(vyre_results *db, const vyre_bench_run *run, vyre_error *err);

/*
 * Sets the final status (DONE, FAILED or INTERRUPTED), the finish time and
 * message (NULL keeps the stored one) of run_id, and removes points that
 * never finished; for FAILED, removes every point, sample and kernel
 * record of the run, all in one transaction.
 */
int vyre__bench_run_finish(vyre_results *db, int64_t run_id, vyre_bench_run_status status,
                           const char *message, vyre_error *err);

/*
 * Reserves the points row of p (p->run_id, seq, suite, benchmark, axes,
 * device, mode) before it is measured, so that its id can be the NVTX
 * payload; fills p->id. The row counts as unfinished (n = 0) until
 * vyre__bench_point_finish.
 */
int vyre__bench_point_begin(vyre_results *db, vyre_bench_point *p, vyre_error *err);

/* Writes p's statistics and its n samples, in one transaction. */
int vyre__bench_point_finish(vyre_results *db, const vyre_bench_point *p,
                             const vyre_bench_sample *samples, size_t n, vyre_error *err);

/* Stores n activity records (kernels, NVTX ranges, ...) as timings rows of
 * run_id and point_id, in one transaction. */
int vyre__bench_point_records(vyre_results *db, int64_t run_id, int64_t point_id,
                              const vyre_activity *recs, size_t n, vyre_error *err);

/* ---- not exported (vyre/bench.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/* The child half of vyre_bench_host_start alone (1: this process was the
 * child, exit with *exit_code; 0: it was not), for a program that names
 * another child_exe. Prefer vyre_bench_host_start. */
int vyre_bench_child_main(int argc, char **argv, int *exit_code);

/* The datasheet DRAM bandwidth of a GPU by name, bytes/s: H100 SXM 3.35e12,
 * H100 PCIe 2.0e12, H200 4.8e12; 0 when unknown. *label names the part. */
double vyre_bench_peak_bandwidth(const char *gpu_name, const char **label);

#endif /* VYRE_BENCH_INTERNAL_H */
