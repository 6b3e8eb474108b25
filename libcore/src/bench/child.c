/*
 * child.c - the bench child protocol, both halves. The compile suite times
 * a cold PTX JIT in a fresh process, and the cheapest fresh process that
 * has libvyrecore is the host program itself, started again
 * (base/subprocess.c). The host program's one call, first in main()
 * (vyre_bench_host_start, vyre/bench.h), serves that child when this
 * process is one (vyre_bench_child_main: load the PTX with the driver's
 * JIT cache off, timed, and answer the parent), and otherwise records that
 * the program can be one, so vyre_bench_run_suites re-runs /proc/self/exe
 * (vyre__bench_child_exe) without the front end naming it. The parent's
 * side is vyre__bench_jit_cold_spawn, which suite_compile.c calls for each
 * compile.jit_cold sample.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "base/subprocess.h"
#include "bench/bench_internal.h"
#include "cuda/cuda_internal.h"
#include "cuda/jitcache_internal.h"
#include "vyre/bench.h"
#include "vyre/cuda.h"
#include "vyre/jitcache.h"

/* 1 once this process made the call and is not a child. Written before any
 * run starts (first thing in main), read by runs on any thread. */
static atomic_int g_host_is_child_capable;

int vyre_bench_host_start(int argc, char **argv, int *exit_code)
{
    if (vyre_bench_child_main(argc, argv, exit_code))
        return 1;
    atomic_store(&g_host_is_child_capable, 1);
    return 0;
}

const char *vyre__bench_child_exe(const vyre_bench_run_opts *o)
{
    if (o && o->child_exe)
        return o->child_exe;
    return atomic_load(&g_host_is_child_capable) ? "/proc/self/exe" : NULL;
}

/* ---- the compile suite's child ---------------------------------------------------------- */

/* The child learns what to do from this variable: "jit-cold:<parent pid>"
 * (a stale value inherited from elsewhere names another parent and is
 * ignored), with the PTX path in argv[1]; it answers on descriptor
 * CHILD_FD: "ok <ns>\n", or "error <code>\n<message>\n<hint>". */
#define CHILD_ENV "VYRE__BENCH_CHILD"
#define CHILD_FD  3

/* In the child: loads the PTX with the driver's JIT cache off, timed. */
static int jit_cold_load(const char *ptx_path, uint64_t *ns, vyre_error *err)
{
    /* vyre's contract forces the driver's JIT cache on (vyre/jitcache.h)
     * once per process; this process exists to measure the driver with it
     * off, so it turns it off after that one-time setup, before cuInit. */
    int rc = vyre_jitcache_setup(NULL, err);
    if (rc)
        return rc;
    if (setenv("CUDA_CACHE_DISABLE", "1", 1) != 0)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot set CUDA_CACHE_DISABLE");
    char *ptx = NULL;
    size_t len = 0;
    if ((rc = vyre__read_file(ptx_path, VYRE__BENCH_KERNEL_MAX, &ptx, &len, err))) {
        if (rc == VYRE_ETOOBIG || rc == VYRE_ENOMEM)
            vyre__fail(err, VYRE_ENOMEM, "kernel files above 256 MiB are not supported",
                       "cannot read '%s': too large or out of memory", ptx_path);
        return rc == VYRE_ETOOBIG ? VYRE_ENOMEM : rc;
    }
    rc = vyre_cuda_init(err);
    const vyre__cuda_fns *cu = rc ? NULL : vyre__cuda();
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    if (!rc)
        rc = vyre__cuda_check(cu->cuDeviceGet(&dev, 0), "cuDeviceGet", err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain",
                              err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent", err);
    CUmodule m = NULL;
    if (!rc) {
        uint64_t t0 = vyre__mono_ns();
        rc = vyre__cuda_check(cu->cuModuleLoadData(&m, ptx), "cuModuleLoadData", err);
        *ns = vyre__mono_ns() - t0;
    }
    if (m)
        cu->cuModuleUnload(m);
    if (ctx)
        cu->cuDevicePrimaryCtxRelease(dev);
    free(ptx);
    return rc;
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        len -= (size_t)w;
    }
}

int vyre_bench_child_main(int argc, char **argv, int *exit_code)
{
    const char *what = getenv(CHILD_ENV);
    char want[64];
    snprintf(want, sizeof want, "jit-cold:%ld", (long)getppid());
    if (!what || strcmp(what, want) != 0 || !exit_code)
        return 0;
    unsetenv(CHILD_ENV); /* nothing this process starts is a child */
    vyre_error e;
    vyre_error_clear(&e);
    uint64_t ns = 0;
    int rc = argc == 2 && argv && argv[1]
                 ? jit_cold_load(argv[1], &ns, &e)
                 : vyre__fail(&e, VYRE_EINVAL, NULL, "the cold-JIT child takes one PTX path");
    char reply[32 + VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX];
    int n = rc ? snprintf(reply, sizeof reply, "error %d\n%s\n%s", rc, e.message, e.hint)
               : snprintf(reply, sizeof reply, "ok %" PRIu64 "\n", ns);
    write_all(CHILD_FD, reply, n < 0 ? 0 : (size_t)n < sizeof reply ? (size_t)n : sizeof reply - 1);
    *exit_code = rc ? 1 : 0;
    return 1;
}

int vyre__bench_jit_cold_spawn(const char *exe, const char *ptx_path, double *ns, vyre_error *err)
{
    if (!exe || !ptx_path || !ns)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_jit_cold_spawn: NULL argument");
    char marker[64];
    snprintf(marker, sizeof marker, CHILD_ENV "=jit-cold:%ld", (long)getpid());
    const char *env_set[] = {marker, NULL};
    char *argv[] = {(char *)(uintptr_t)exe, (char *)(uintptr_t)ptx_path, NULL};
    vyre__subprocess sp = {exe, argv, env_set, CHILD_FD, 0, 0};
    char reply[32 + VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX];
    int status = -1;
    int rc = vyre__subprocess_run(&sp, reply, sizeof reply, &status, err);
    if (rc)
        return rc;
    if (strncmp(reply, "ok ", 3) == 0 && status == 0) {
        char *end = NULL;
        double v = strtod(reply + 3, &end);
        if (end != reply + 3 && *end == '\n' && v > 0) {
            *ns = v;
            return VYRE_OK;
        }
    }
    long code = 0;
    char *msg = NULL;
    if (strncmp(reply, "error ", 6) == 0)
        code = strtol(reply + 6, &msg, 10);
    if (code < 0 && code >= INT_MIN && msg && *msg == '\n') {
        msg++;
        char *hint = strchr(msg, '\n');
        if (hint)
            *hint++ = '\0';
        return vyre__fail(err, (int)code, hint, "the cold-JIT child failed: %s", msg);
    }
    return vyre__fail(err, VYRE_ECUDA,
                      "the program that runs the compile suite must call vyre_bench_host_start "
                      "first in main()",
                      "the cold-JIT child '%s' of '%s' gave no result (exit status %d)", exe,
                      ptx_path, status);
}
