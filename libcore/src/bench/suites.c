/*
 * suites.c - the table of built-in suites and the dispatch to them: the
 * top of the bench subsystem (suites.c -> gpu_suites.c, suite_*.c
 * -> engine.c), so that no suite file calls back into the table.
 */
#include <stddef.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"

/* ---- suites ---------------------------------------------------------------------- */

static const vyre_bench_suite_def k_suites[] = {
    {"launch", 1, "stream launch host cost, launch+sync round trip, graph replay per kernel"},
    {"memcpy", 1, "host to device and back (pageable, pinned), device to device, over sizes"},
    {"bandwidth", 1, "a streaming kernel against the device-to-device copy and the datasheet"},
    {"compile", 1,
     "per kernel: cold NVRTC, cold PTX JIT, driver JIT warm, vyre cache hit, cubin load"},
    {"cache", 0, "pipeline cache store, hit, verify and prune throughput (no GPU)"},
};

const vyre_bench_suite_def *vyre_bench_suites(size_t *n)
{
    if (n)
        *n = VYRE_ARRAY_SIZE(k_suites);
    return k_suites;
}

const vyre_bench_suite_def *vyre_bench_suite_find(const char *name)
{
    for (size_t i = 0; name && i < VYRE_ARRAY_SIZE(k_suites); i++)
        if (strcmp(k_suites[i].name, name) == 0)
            return &k_suites[i];
    return NULL;
}

size_t vyre__bench_suite_points(const char *name, const vyre_bench_env *env)
{
    const vyre_bench_suite_def *d = vyre_bench_suite_find(name);
    if (!d)
        return 0;
    if (!d->needs_gpu)
        return vyre__bench_cache_points(env);
    return vyre__bench_gpu_points(name, env);
}

int vyre__bench_suite_run(const char *name, vyre_bench_env *env, vyre_error *err)
{
    const vyre_bench_suite_def *d = vyre_bench_suite_find(name);
    if (!d || !env || !env->db || env->run_id <= 0)
        return vyre__fail(err, VYRE_EINVAL,
                          "the suites are: launch, memcpy, bandwidth, compile, cache",
                          "unknown suite '%s'", name ? name : "(null)");
    if (!d->needs_gpu)
        return vyre__bench_cache_run(env, err);
    return vyre__bench_gpu_run(name, env, err);
}
