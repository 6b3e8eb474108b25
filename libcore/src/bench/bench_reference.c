/*
 * bench_reference.c - the fixed references a run measures in every round
 * (suite "reference"), so that `compare` can tell a change in the code
 * from a change in the machine between two runs (issue 23, point 4):
 *
 *   reference.cpu    a fixed integer loop (REF_CPU_ITERS multiply-adds
 *                    in a dependency chain) on one thread: the clock of a
 *                    core and what steals it
 *   reference.cpus   the same loop on every online CPU at once (time until
 *                    the last ends): the parallel capacity left, which a
 *                    neighbour's busy process takes even when one core is
 *                    still free (the cache's verify checks in threads: under
 *                    one busy process on 2 cores it read 3.8x slower while
 *                    reference.cpu read 1.03x)
 *   reference.fsync  a 4 KiB pwrite and fsync of one file under tmp_dir:
 *                    the filesystem and disk the cache suite also uses
 *   reference.gpu    a fixed kernel on each device of a run that uses a
 *                    GPU, held behind the blocking kernel like every GPU
 *                    sample (reference_gpu.c's vyre__bench_gpu_references,
 *                    through vyre__bench_reference_gpu)
 *
 * Their budget is small and fixed (REF_MIN_SAMPLES samples, REF_MIN_TIME
 * seconds a round at least, REF_TIMEOUT at most), whatever the run's rule:
 * they are a yardstick, so they must cost the same in every run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"

#define REF_CPU_ITERS   200000 /* about 0.2-0.6 ms on a current x86 core */
#define REF_FSYNC_BYTES 4096
#define REF_MIN_SAMPLES 20
#define REF_MIN_TIME    0.02
#define REF_TIMEOUT     1.0

#define REF_THREADS_MAX 256

size_t vyre__bench_reference_points(const vyre_bench_env *env)
{
    return 3 + (env->gpu_refs ? (env->ndevices ? env->ndevices : 1) : 0);
}

/* A chain of dependent multiply-adds the compiler cannot fold: volatile
 * seed in, volatile sink out. */
static volatile uint64_t g_ref_seed = 0x9e3779b97f4a7c15ULL;
static volatile uint64_t g_ref_sink;

static void cpu_loop(void)
{
    uint64_t x = g_ref_seed;
    for (unsigned i = 0; i < REF_CPU_ITERS; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    g_ref_sink = x;
}

static int sample_cpu(void *ctx, double *value, double *wall, vyre_error *err)
{
    (void)ctx;
    (void)err;
    uint64_t t0 = vyre__mono_ns();
    cpu_loop();
    double ns = (double)(vyre__mono_ns() - t0);
    *value = *wall = ns;
    return VYRE_OK;
}

static void *cpu_thread(void *arg)
{
    (void)arg;
    cpu_loop();
    return NULL;
}

/* The loop on every online CPU: the calling thread is one of them. A
 * thread that cannot start is an error, not a faster sample. */
static int sample_cpus(void *ctx, double *value, double *wall, vyre_error *err)
{
    size_t n = *(const size_t *)ctx;
    pthread_t th[REF_THREADS_MAX];
    size_t started = 0;
    int rc = 0;
    uint64_t t0 = vyre__mono_ns();
    for (size_t i = 1; i < n && !rc; i++)
        if ((rc = pthread_create(&th[started], NULL, cpu_thread, NULL)) == 0)
            started++;
    cpu_loop();
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    double ns = (double)(vyre__mono_ns() - t0);
    if (rc)
        return vyre__fail(err, VYRE_ENOMEM, "lower the process limit's use, or retry",
                          "cannot start a thread for the CPU reference: %s", strerror(rc));
    *value = *wall = ns;
    return VYRE_OK;
}

static size_t online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > REF_THREADS_MAX ? REF_THREADS_MAX : (size_t)n;
}

struct ref_file {
    int fd;
    char path[1024];
    char buf[REF_FSYNC_BYTES];
};

static int sample_fsync(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct ref_file *f = ctx;
    f->buf[0]++;
    uint64_t t0 = vyre__mono_ns();
    ssize_t w = pwrite(f->fd, f->buf, sizeof f->buf, 0);
    int rc = w == (ssize_t)sizeof f->buf ? fsync(f->fd) : -1;
    double ns = (double)(vyre__mono_ns() - t0);
    if (rc != 0)
        return vyre__fail(err, vyre__errno_code(errno ? errno : EIO),
                          "set TMPDIR to a writable local directory",
                          "cannot write and fsync the reference file '%s': %s", f->path,
                          strerror(errno ? errno : EIO));
    *value = *wall = ns;
    return VYRE_OK;
}

static void ref_point(vyre_bench_point *pt, const char *bench, int device, int gpu)
{
    memset(pt, 0, sizeof *pt);
    vyre__strlcpy(pt->suite, "reference", sizeof pt->suite);
    vyre__strlcpy(pt->benchmark, bench, sizeof pt->benchmark);
    pt->device = device;
    pt->mode = gpu ? VYRE_BENCH_HOT : VYRE_BENCH_HOST;
    pt->gpu_timer = gpu;
    pt->items = 1;
}

/* The fixed budget of a reference, scaled up by the rounds so that
 * vyre__bench_point_run's share of it per round is the same whatever
 * --rounds says. */
static void ref_opts(const vyre_bench_env *env, vyre_bench_measure_opts *o)
{
    unsigned rounds = env->rounds ? env->rounds : 1;
    memset(o, 0, sizeof *o);
    o->warmup = 1;
    o->rule.min_samples = (size_t)REF_MIN_SAMPLES * rounds;
    o->rule.min_time_s = REF_MIN_TIME * rounds;
    o->rule.max_noise = 0; /* stop at the minimums: the same cost every run */
    o->rule.timeout_s = REF_TIMEOUT * rounds;
    o->rule.max_samples = (size_t)REF_MIN_SAMPLES * 50 * rounds;
    o->nvml_index = -1;
    o->stop = env->stop;
}

int vyre__bench_reference_host(vyre_bench_env *env, vyre_error *err)
{
    vyre_bench_measure_opts o;
    ref_opts(env, &o);
    vyre_bench_point pt;
    ref_point(&pt, "reference.cpu", -1, 0);
    o.sample = sample_cpu;
    int rc = vyre__bench_point_run(env, &pt, &o, 0, NULL, NULL, NULL, err);
    if (rc || env->interrupted)
        return rc;
    size_t ncpu = online_cpus();
    ref_point(&pt, "reference.cpus", -1, 0);
    o.sample = sample_cpus;
    o.ctx = &ncpu;
    rc = vyre__bench_point_run(env, &pt, &o, 0, NULL, NULL, NULL, err);
    if (rc || env->interrupted)
        return rc;

    struct ref_file *f = calloc(1, sizeof *f);
    if (!f)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for the fsync reference");
    const char *tmp = env->tmp_dir && *env->tmp_dir ? env->tmp_dir : "/tmp";
    snprintf(f->path, sizeof f->path, "%s/vyre-ref-fsync.XXXXXX", tmp);
    f->fd = mkstemp(f->path);
    if (f->fd < 0) {
        rc = vyre__fail(err, vyre__errno_code(errno), "set TMPDIR to a writable directory",
                        "cannot create the reference file under '%s': %s", tmp, strerror(errno));
        free(f);
        return rc;
    }
    ref_point(&pt, "reference.fsync", -1, 0);
    o.sample = sample_fsync;
    o.ctx = f;
    rc = vyre__bench_point_run(env, &pt, &o, 0, NULL, NULL, NULL, err);
    close(f->fd);
    unlink(f->path);
    free(f);
    return rc;
}

int vyre__bench_reference_gpu(vyre_bench_env *env, int device,
                              const vyre_bench_measure_opts *timing, vyre__bench_finish_fn finish,
                              vyre_error *err)
{
    if (!timing || !timing->sample || env->records_sweep)
        return VYRE_OK;
    size_t slot = 0;
    while (slot < env->ndevices && env->devices[slot] != device)
        slot++;
    if (slot >= VYRE__BENCH_DEVICES_MAX)
        return VYRE_OK;
    if (env->gpu_ref_round_done[slot] == env->round + 1)
        return VYRE_OK; /* measured in this round already */
    env->gpu_ref_round_done[slot] = env->round + 1;
    vyre_bench_measure_opts o;
    ref_opts(env, &o);
    o.sample = timing->sample;
    o.prepare = timing->prepare;
    o.ctx = timing->ctx;
    o.mon = timing->mon;
    o.nvml_index = timing->nvml_index;
    vyre_bench_point pt;
    ref_point(&pt, "reference.gpu", device, 1);
    return vyre__bench_point_run(env, &pt, &o, 1, NULL, finish, timing->ctx, err);
}
