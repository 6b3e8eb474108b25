/*
 * jitcache.c - the driver JIT cache contract (see vyre/jitcache.h).
 *
 * Why this exists: the driver silently disables its JIT cache when
 * CUDA_CACHE_DISABLE=1 is inherited, and its default size (256 MiB on older
 * drivers) evicts real Triton/Inductor kernels; a cold PTX JIT costs 9-394 ms
 * a kernel against 0.05-0.57 ms warm (docs/DESIGN.md). So we force the
 * cache on, give it a private directory and a size floor, and refuse
 * settings that would quietly throw that away.
 */
#include "vyre/jitcache.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cuda/jitcache_internal.h"
#include "vyre/units.h"

int vyre_jitcache_resolve(uint64_t floor_bytes, vyre_jitcache_info *info, vyre_error *err)
{
    if (!info)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitcache_resolve: NULL info");
    memset(info, 0, sizeof *info);
    if (floor_bytes == 0)
        return vyre__fail(err, VYRE_EINVAL, "pass a floor of at least 1 byte (default 1 GiB)",
                          "JIT cache size floor of 0 bytes rejected");

    /* A directory we create and size: never one named by the environment of
     * a set-user/group-ID program (secure_getenv). */
    const char *path = secure_getenv("CUDA_CACHE_PATH");
    if (path) {
        if (!*path)
            return vyre__fail(err, VYRE_EENV,
                              "unset CUDA_CACHE_PATH to use the default "
                              "($XDG_CACHE_HOME/vyre/cuda-jit), or set it to a directory",
                              "CUDA_CACHE_PATH is set but empty");
        if (vyre__strlcpy(info->path, path, sizeof info->path) >= sizeof info->path)
            return vyre__fail(err, VYRE_EENV, "set CUDA_CACHE_PATH to a shorter path",
                              "CUDA_CACHE_PATH is longer than %d bytes",
                              VYRE_JITCACHE_PATH_MAX - 1);
        info->path_from_env = 1;
    } else {
        int rc = vyre__xdg_path("XDG_CACHE_HOME", ".cache", "vyre/cuda-jit", info->path,
                                sizeof info->path, err);
        if (rc) {
            if (err && rc == VYRE_EENV)
                vyre__strlcpy(err->hint,
                              "set CUDA_CACHE_PATH to a directory for the driver's JIT cache, "
                              "or set XDG_CACHE_HOME or HOME",
                              sizeof err->hint);
            return rc;
        }
    }

    const char *max = getenv("CUDA_CACHE_MAXSIZE");
    if (max) {
        uint64_t v = 0;
        int prc = vyre_parse_uint(max, &v);
        char hint[256];
        snprintf(hint, sizeof hint,
                 "set CUDA_CACHE_MAXSIZE to a byte count of at least %" PRIu64 " (e.g. %" PRIu64
                 "), or unset it",
                 floor_bytes, floor_bytes);
        if (prc == VYRE_EINVAL)
            return vyre__fail(err, VYRE_EENV, hint,
                              "CUDA_CACHE_MAXSIZE='%s' is not a number of bytes", max);
        if (prc == VYRE_ERANGE)
            return vyre__fail(err, VYRE_EENV, hint, "CUDA_CACHE_MAXSIZE='%s' is out of range", max);
        if (v < floor_bytes)
            return vyre__fail(err, VYRE_EENV, hint,
                              "CUDA_CACHE_MAXSIZE='%s' is below the floor of %" PRIu64
                              " bytes: real kernels would be evicted and re-JITed",
                              max, floor_bytes);
        info->maxsize_bytes = v;
        info->maxsize_from_env = 1;
    } else {
        info->maxsize_bytes = floor_bytes;
    }
    return VYRE_OK;
}

static int apply(const vyre_jitcache_info *info, vyre_error *err)
{
    int rc = vyre__mkdirs(info->path, 0700, err);
    if (rc)
        return rc;
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, info->maxsize_bytes);
    if (setenv("CUDA_CACHE_DISABLE", "0", 1) || setenv("CUDA_CACHE_PATH", info->path, 1) ||
        setenv("CUDA_CACHE_MAXSIZE", num, 1))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot set the CUDA_CACHE_* variables");
    return VYRE_OK;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static uint64_t g_floor;
static int g_status;
static vyre_error g_error;
static vyre_jitcache_info g_info;
static pthread_mutex_t g_floor_lock = PTHREAD_MUTEX_INITIALIZER;

static void setup_once(void)
{
    vyre_error_clear(&g_error);
    g_status = vyre_jitcache_resolve(g_floor, &g_info, &g_error);
    if (g_status == 0)
        g_status = apply(&g_info, &g_error);
}

int vyre__jitcache_setup_floor(uint64_t floor_bytes, vyre_jitcache_info *info, vyre_error *err)
{
    if (floor_bytes == 0)
        return vyre__fail(err, VYRE_EINVAL, "pass a floor of at least 1 byte (default 1 GiB)",
                          "JIT cache size floor of 0 bytes rejected");
    /* The first caller's floor wins; the lock orders the store before the
     * once-routine reads it when two threads race on the first call. */
    pthread_mutex_lock(&g_floor_lock);
    if (g_floor == 0)
        g_floor = floor_bytes;
    pthread_mutex_unlock(&g_floor_lock);
    pthread_once(&g_once, setup_once);
    if (g_status) {
        if (err)
            *err = g_error;
        return g_status;
    }
    if (info)
        *info = g_info;
    return VYRE_OK;
}

int vyre_jitcache_setup(vyre_jitcache_info *info, vyre_error *err)
{
    return vyre__jitcache_setup_floor(VYRE_JITCACHE_FLOOR_BYTES, info, err);
}
