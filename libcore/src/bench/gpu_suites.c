/*
 * gpu_suites.c - the GPU suites' entry points (suites.c calls them): how
 * many points a suite has and running it on every device of the run, each
 * opened for it alone (gpu_device.c); and the run's GPU facts (driver,
 * toolkit, devices, clocks) stored with a run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "vyre/cuda.h"
#include "vyre/gpu.h"
#include "vyre/version.h"

/* ---- suite dispatch ----------------------------------------------------------------- */

size_t vyre__bench_gpu_points(const char *suite, const vyre_bench_env *env)
{
    size_t per = 0;
    if (strcmp(suite, "launch") == 0)
        per = vyre__bench_launch_points(env);
    else if (strcmp(suite, "memcpy") == 0)
        per = vyre__bench_memcpy_points(env);
    else if (strcmp(suite, "bandwidth") == 0)
        per = vyre__bench_bandwidth_points(env);
    else if (strcmp(suite, "compile") == 0)
        per = vyre__bench_compile_points(env);
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
        struct vyre__gpu g;
        if ((rc = vyre__gpu_open(env, devs[i], &g, err)))
            break;
        if (strcmp(suite, "launch") == 0)
            rc = vyre__bench_launch_run(env, &g, err);
        else if (strcmp(suite, "memcpy") == 0)
            rc = vyre__bench_memcpy_run(env, &g, err);
        else if (strcmp(suite, "bandwidth") == 0)
            rc = vyre__bench_bandwidth_run(env, &g, err);
        else
            rc = vyre__bench_compile_run(env, &g, err);
        vyre__gpu_close(&g);
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
            /* bounded: the driver's version string, not input */
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
