/*
 * run.c - one benchmark run from start to end (vyre_bench_run_suites): the
 * runs row, the device checks, which suites run and which are skipped for
 * want of a GPU, the total of points for progress, the loop over the
 * suites and the sweep, and the final status. The top of the bench
 * subsystem: run.c -> suites.c -> gpu_suites.c, suite_*.c ->
 * engine.c; nothing calls back up into it.
 *
 * Every device is measured as if alone. Once CUPTI activity capture has
 * been enabled in a process, cuGraphLaunch's host cost stays higher for
 * the rest of the process, on every device, even after capture stops (an
 * H200: about 37 -> 230 ns a kernel). So with --kernels a run is two
 * sweeps over the same suites and devices: the timing sweep measures and
 * stores every point with CUPTI never attached (vyre__bench_point_run only
 * notes which points have a kernel pass, in env->timed), then the records
 * sweep runs the suites again with env->records_sweep set, where
 * vyre__bench_point_run measures nothing and runs each point's kernel
 * pass under CUPTI, storing the records with the point the timing sweep
 * stored (matched by benchmark, axes, device and mode; see
 * vyre__bench_point_run). The suites' setup (contexts, pipelines,
 * buffers) runs twice, so the kernel passes never outlive what they use;
 * suites without kernel passes (compile, cache) are not run again. Only
 * the timing sweep's points are counted, shown and numbered.
 *
 * Rounds (issue 23): the timing sweep is itself `rounds` passes over the
 * host references, the suites and the sweep, each pass a round with 1/R
 * of every point's budget (vyre__bench_point_run keeps the samples per
 * point and stores the point after the last round). Why whole passes, not
 * R rounds of one point back to back: slow drift (a neighbour's load, a
 * warming chassis, a filesystem flushing) lands between the rounds of
 * every point, where the comparison's hierarchical bootstrap sees it,
 * instead of inside one point's samples, where it looks like a real
 * difference between points or runs. The suites' code stays as it is;
 * their setup runs once per round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "vyre/cuda.h"
#include "vyre/version.h"

#define RUN_SUITES_MAX 16

/* The GPU a run needs: the devices checked (and, for all_devices, listed),
 * the run's GPU facts filled in, the NVML monitor opened, the first
 * device's compute capability. Returns 0 or the reason there is no usable GPU
 * (in *gerr), which the caller turns into a skip or a failure. */
static int gpu_check(const vyre_bench_run_opts *o, int *devs, size_t *ndevs, vyre_bench_run *run,
                     vyre_gpu_monitor **mon, int cc[2], vyre_error *gerr)
{
    int count = 0;
    int rc = vyre_cuda_device_count(&count, gerr);
    if (rc)
        return rc;
    if (count == 0)
        return vyre__fail(gerr, VYRE_ENODEV, "check nvidia-smi and CUDA_VISIBLE_DEVICES",
                          "the NVIDIA driver reports no GPU");
    if (o->all_devices) {
        *ndevs = 0;
        for (int d = 0; d < count && d < VYRE__BENCH_DEVICES_MAX; d++)
            devs[(*ndevs)++] = d;
    }
    for (size_t i = 0; i < *ndevs; i++)
        if (devs[i] >= count)
            return vyre__remedy(gerr, VYRE_REMEDY_DEVICES,
                                vyre__fail(gerr, VYRE_ENODEV, NULL,
                                           "no device %d: the driver sees %d GPU%s", devs[i], count,
                                           count == 1 ? "" : "s"));
    if (vyre_gpu_monitor_open(mon, NULL) != 0)
        *mon = NULL;
    if ((rc = vyre__bench_run_describe(run, devs, *ndevs, *mon, gerr)))
        return rc;
    vyre_device_info di;
    if (vyre_cuda_device_info(devs[0], &di, NULL) == 0) {
        cc[0] = di.cc_major;
        cc[1] = di.cc_minor;
    }
    return VYRE_OK;
}

static int check_opts(const vyre_bench_run_opts *o, vyre_bench_run_result *res, vyre_error *err)
{
    if (!o || !res || !o->db || (!o->nsuites && !o->sweep) || (o->nsuites && !o->suites) ||
        (o->ndevices && !o->devices))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_run_suites: bad arguments");
    if (o->rounds > VYRE_BENCH_ROUNDS_MAX)
        return vyre__fail(err, VYRE_EINVAL, "measure in fewer rounds, such as 5",
                          "%u rounds is more than %d", o->rounds, VYRE_BENCH_ROUNDS_MAX);
    if (o->nsuites > RUN_SUITES_MAX || o->ndevices > VYRE__BENCH_DEVICES_MAX)
        return vyre__fail(err, VYRE_EINVAL, "run fewer at a time",
                          "a run takes at most %d suites and %d devices", RUN_SUITES_MAX,
                          VYRE__BENCH_DEVICES_MAX);
    for (size_t i = 0; i < o->nsuites; i++)
        if (!vyre_bench_suite_find(o->suites[i]))
            return vyre__fail(err, VYRE_EINVAL,
                              "the suites are: launch, memcpy, bandwidth, compile, cache",
                              "unknown suite '%s'", o->suites[i] ? o->suites[i] : "(null)");
    if (o->sweep && (!o->sweep->path || !o->sweep->entry || !o->sweep->axes))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_run_suites: incomplete sweep");
    return VYRE_OK;
}

/* The runs row's descriptive fields known before anything is checked. */
static void describe_request(const vyre_bench_run_opts *o, vyre_bench_run *run)
{
    vyre__strlcpy(run->command_line, o->command_line ? o->command_line : "",
                  sizeof run->command_line);
    vyre__strlcpy(run->git_rev, o->git_rev ? o->git_rev : "", sizeof run->git_rev);
    vyre__strlcpy(run->cuda_version, vyre_cuda_toolkit_version(), sizeof run->cuda_version);
    size_t len = 0;
    for (size_t i = 0; i < o->nsuites && len < sizeof run->suites; i++)
        len += (size_t)snprintf(run->suites + len, sizeof run->suites - len, "%s%s", i ? "," : "",
                                o->suites[i]);
    if (o->sweep && len < sizeof run->suites)
        snprintf(run->suites + len, sizeof run->suites - len, "%ssweep:%s:%s", len ? "," : "",
                 o->sweep->path, o->sweep->entry);
}

/* Suites whose points have CUPTI kernel passes (the records sweep). */
static int has_kernel_passes(const char *suite)
{
    return strcmp(suite, "launch") == 0 || strcmp(suite, "memcpy") == 0 ||
           strcmp(suite, "bandwidth") == 0;
}

/* The records sweep (see the top of this file): after every timed pass. */
static int records_all(const vyre_bench_run_opts *o, vyre_bench_env *env, const char *const *todo,
                       size_t ntodo, vyre_error *err)
{
    env->records_sweep = 1;
    env->cursor = 0;
    int rc = VYRE_OK;
    for (size_t i = 0;
         !rc && env->kernels && !env->interrupted && !(o->stop && *o->stop) && i < ntodo; i++)
        if (has_kernel_passes(todo[i]))
            rc = vyre__bench_suite_run(todo[i], env, err);
    if (!rc && env->kernels && !env->interrupted && !(o->stop && *o->stop) && o->sweep)
        rc = vyre__bench_sweep_run(o->sweep, env, err);
    env->records_sweep = 0;
    return rc;
}

/* One round: the host references, every suite, the sweep, then the GPU
 * reference of each device (the references bracket the round). */
static int measure_round(const vyre_bench_run_opts *o, vyre_bench_env *env, const char *const *todo,
                         size_t ntodo, vyre_error *err)
{
    int rc = vyre__bench_reference_host(env, err);
    for (size_t i = 0; !rc && !env->interrupted && !(o->stop && *o->stop) && i < ntodo; i++)
        rc = vyre__bench_suite_run(todo[i], env, err);
    if (!rc && !env->interrupted && !(o->stop && *o->stop) && o->sweep)
        rc = vyre__bench_sweep_run(o->sweep, env, err);
    if (!rc && !env->interrupted && !(o->stop && *o->stop) && env->gpu_refs)
        rc = vyre__bench_gpu_references(env, err);
    return rc;
}

/* Measures everything that runs, round after round (see the top of this
 * file); the run's state ends up in env. An interrupted run stores what
 * its rounds measured. */
static int measure_all(const vyre_bench_run_opts *o, vyre_bench_env *env, const char *const *todo,
                       size_t ntodo, vyre_error *err)
{
    if (!ntodo && !o->sweep)
        return VYRE_OK; /* everything skipped: no references either */
    /* A run that uses a GPU measures reference.gpu on its devices. */
    env->gpu_refs = o->sweep != NULL;
    for (size_t i = 0; i < ntodo; i++)
        env->gpu_refs |= vyre_bench_suite_find(todo[i])->needs_gpu;
    size_t per_round = vyre__bench_reference_points(env);
    for (size_t i = 0; i < ntodo; i++)
        per_round += vyre__bench_suite_points(todo[i], env);
    if (o->sweep)
        per_round += vyre__bench_sweep_points(o->sweep, env);
    env->total = per_round * env->rounds;
    int rc = VYRE_OK;
    for (env->round = 0;
         !rc && !env->interrupted && !(o->stop && *o->stop) && env->round < env->rounds;
         env->round++)
        rc = measure_round(o, env, todo, ntodo, err);
    if (!rc)
        rc = vyre__bench_rounds_flush(env, err);
    vyre__bench_rounds_release(env);
    if (!rc && env->ntimed)
        rc = records_all(o, env, todo, ntodo, err);
    return rc;
}

/* What the measuring left in env, into the run's result. */
static void result_from(vyre_bench_run_result *res, const vyre_bench_env *env,
                        const vyre_bench_run_opts *o)
{
    res->npoints = env->stored;
    res->rounds = env->round;
    res->clock_min_mhz = env->clock_min;
    res->clock_max_mhz = env->clock_max;
    /* A locked clock does not move; 1% leaves room for NVML's rounding. */
    res->clocks_unlocked = env->clock_min && env->clock_max > env->clock_min + env->clock_min / 100;
    res->interrupted = env->interrupted || (o->stop && *o->stop);
}

int vyre_bench_run_suites(const vyre_bench_run_opts *o, vyre_bench_run_result *res, vyre_error *err)
{
    if (res)
        memset(res, 0, sizeof *res);
    int rc = check_opts(o, res, err);
    if (rc)
        return rc;
    vyre_error e; /* the run's error, kept for its failed status */
    vyre_error_clear(&e);
    vyre_gpu_monitor *mon = NULL;

    vyre_bench_run run;
    memset(&run, 0, sizeof run);
    describe_request(o, &run);
    if ((rc = vyre__bench_run_begin(o->db, &run, &e)))
        goto out;
    res->run_id = run.id;

    /* The GPU, when anything needs one. */
    int devs[VYRE__BENCH_DEVICES_MAX] = {0};
    size_t ndevs = 1;
    if (o->ndevices) {
        memcpy(devs, o->devices, o->ndevices * sizeof *devs);
        ndevs = o->ndevices;
    }
    int need_gpu = o->sweep != NULL;
    for (size_t i = 0; i < o->nsuites; i++)
        need_gpu |= vyre_bench_suite_find(o->suites[i])->needs_gpu;
    int gpu_rc = -1;
    vyre_error gerr;
    vyre_error_clear(&gerr);
    int cc[2] = {0, 0}; /* of the first device; 0.0: none */
    if (need_gpu)
        gpu_rc = gpu_check(o, devs, &ndevs, &run, &mon, cc, &gerr);

    /* A sweep is checked (and compiled, for the first device or, without
     * one, as a dry run would) before anything is measured. */
    if (o->sweep && (rc = vyre__bench_sweep_check(o->sweep, gpu_rc == 0 ? cc[0] : 0,
                                                  gpu_rc == 0 ? cc[1] : 0, &res->compile_log, &e)))
        goto failed;

    /* What runs, what is skipped. */
    const char *todo[RUN_SUITES_MAX];
    size_t ntodo = 0;
    size_t slen = 0;
    for (size_t i = 0; i < o->nsuites; i++) {
        const vyre_bench_suite_def *d = vyre_bench_suite_find(o->suites[i]);
        if (d->needs_gpu && gpu_rc != 0) {
            if (o->explicit_suites) {
                e = gerr;
                rc = gpu_rc;
                goto failed;
            }
            slen += (size_t)snprintf(res->skipped + slen, sizeof res->skipped - slen, "%s%s",
                                     slen ? ", " : "", d->name);
            if (slen >= sizeof res->skipped)
                slen = sizeof res->skipped - 1;
            continue;
        }
        todo[ntodo++] = d->name;
    }
    if (o->sweep && gpu_rc != 0) {
        e = gerr;
        rc = gpu_rc;
        goto failed;
    }
    if (res->skipped[0]) {
        res->skip_reason = gerr;
        /* bounded: run.message is a fixed field of the public struct */
        snprintf(run.message, sizeof run.message, "skipped GPU suites %s: %.300s", res->skipped,
                 gerr.message);
        if (o->on_skip)
            o->on_skip(res->skipped, &gerr, o->cb_ctx);
    }
    if (need_gpu || res->skipped[0]) {
        if (gpu_rc != 0)
            run.devices[0] = '\0';
        if ((rc = vyre__bench_run_update(o->db, &run, &e)))
            goto failed;
    }

    vyre_bench_env env;
    memset(&env, 0, sizeof env);
    env.db = o->db;
    env.run_id = run.id;
    env.rule = o->rule;
    env.quick = o->quick;
    env.cold = o->cold;
    env.kernels = o->kernels;
    env.no_blocking = o->no_blocking_kernel;
    env.devices = devs;
    env.ndevices = ndevs;
    env.mon = mon;
    env.stop = o->stop;
    env.child_exe = vyre__bench_child_exe(o);
    env.tmp_dir = o->tmp_dir;
    env.on_point = o->on_point;
    env.on_progress = o->on_progress;
    env.cb_ctx = o->cb_ctx;
    env.rounds = o->rounds ? o->rounds : VYRE_BENCH_ROUNDS_DEFAULT;
    rc = measure_all(o, &env, todo, ntodo, &e);
    free(env.timed);
    result_from(res, &env, o);
    if (rc)
        goto failed;
    rc = vyre__bench_run_finish(o->db, run.id,
                                res->interrupted ? VYRE_RUN_INTERRUPTED : VYRE_RUN_DONE,
                                run.message[0] ? run.message : NULL, &e);
    goto out;

failed:
    /* A wait on the server that the interrupt flag ended is an interrupted run. */
    vyre__bench_run_finish(o->db, run.id, rc == VYRE_EINTR ? VYRE_RUN_INTERRUPTED : VYRE_RUN_FAILED,
                           e.message, &res->finish_error);
out:
    vyre_gpu_monitor_close(mon);
    if (rc && err)
        *err = e;
    return rc;
}

void vyre_bench_run_result_release(vyre_bench_run_result *res)
{
    if (!res)
        return;
    free(res->compile_log);
    res->compile_log = NULL;
}
