/*
 * test_gpu_pipeline.c - compiling through the cache and dispatching, on the
 * real driver (GPU machine).
 *
 * Every test that needs a GPU skips, with the reason, when vyre_cuda_init
 * reports no driver or no device. Each test gets a fresh HOME and
 * XDG_CACHE_HOME under a temp directory, so the default pipeline cache and
 * the driver's JIT cache start empty.
 *
 * Criterion runs each test in a process of its own, so the counters start
 * at zero; the tests still compare before/after snapshots. The cross-process
 * test forks before anything initialises CUDA (a child of a process that
 * did cannot use CUDA), and its children report through a pipe, not
 * through Criterion.
 *
 * (The __asan_default_options hook that cuInit needs under ASan is defined
 * once for this binary, in test_gpu_cuda.c.)
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "cuda/compile_internal.h"
#include "cuda/nvrtc_internal.h"
#include "cuda/pipeline_internal.h"
#include "trace/telemetry_internal.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/compile.h"
#include "vyre/counters.h"
#include "vyre/cuda.h"
#include "vyre/nvrtc.h"
#include "vyre/nvtx.h"
#include "vyre/pipeline.h"
#include "vyre/telemetry.h"

#define MSG_MAX 2048

static const char SAXPY_SRC[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n";

/* Each thread sums a grid-stride slice serially, the block sums its
 * threads' partials in a shared-memory tree, and block 0's thread 0 of each
 * block adds the block's partial into *out. Launched with 256 x 256. */
static const char REDUCE_SRC[] =
    "extern \"C\" __global__ void reduce_sum(const float *x, float *out, unsigned n)\n"
    "{\n"
    "    __shared__ float s[256];\n"
    "    unsigned tid = threadIdx.x;\n"
    "    float acc = 0.0f;\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += gridDim.x * blockDim.x)\n"
    "        acc += x[i];\n"
    "    s[tid] = acc;\n"
    "    __syncthreads();\n"
    "    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {\n"
    "        if (tid < w)\n"
    "            s[tid] += s[tid + w];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (tid == 0)\n"
    "        atomicAdd(out, s[0]);\n"
    "}\n";

#define SAXPY_N      ((1u << 20) + 3) /* not a multiple of the block: checks the bounds test */
#define REDUCE_N     (1u << 20)
#define REDUCE_GRID  256u
#define REDUCE_BLOCK 256u

static const char *const g_vars[] = {"VYRE_CUDA_LIBRARY",  "HOME",
                                     "XDG_CACHE_HOME",     "CUDA_CACHE_DISABLE",
                                     "CUDA_CACHE_PATH",    "CUDA_CACHE_MAXSIZE",
                                     "VYRE_PTX_CACHE_DIR", "VYRE_RANGE_TIMING",
                                     "VYRE_TELEMETRY_DIR"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_xdg[600];

static void pipe_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg", g_tmp);
    setenv("HOME", g_tmp, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
}

static void pipe_teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(gpu_pipeline, .init = pipe_setup, .fini = pipe_teardown);

/* ---- helpers -------------------------------------------------------------- */

static void need_gpu(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV)
        cr_skip_test("no GPU here (%s): %s", vyre_err_name(rc), e.message);
    cr_assert_eq(rc, 0, "vyre_cuda_init: %s (%s)", e.message, e.hint);
}

static vyre_ctx *open_ctx(vyre_cache *cache)
{
    vyre_ctx *ctx = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_ctx_open(0, cache, &ctx, &e);
    cr_assert_eq(rc, 0, "vyre_ctx_open: %s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
    cr_assert_not_null(ctx);
    cr_log_info("device 0: %s, %s", vyre_ctx_info_get(ctx)->device_name,
                vyre_ctx_info_get(ctx)->arch);
    return ctx;
}

static vyre_pipeline_desc cuda_desc(const char *src, const char *entry, unsigned flags)
{
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUDA_C;
    d.src = src;
    d.len = strlen(src);
    d.entry = entry;
    d.flags = flags;
    return d;
}

static vyre_pipeline *compile_desc(vyre_ctx *ctx, const vyre_pipeline_desc *d)
{
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_pipeline_compile(ctx, d, &p, &e);
    cr_assert_eq(rc, 0, "vyre_pipeline_compile '%s': %s: %s (%s)", d->entry, vyre_err_name(rc),
                 e.message, e.hint);
    cr_assert_not_null(p);
    return p;
}

static const char *origin_name(vyre_pipeline_origin o)
{
    switch (o) {
    case VYRE_PIPELINE_FROM_MODULE_CACHE:
        return "module cache";
    case VYRE_PIPELINE_FROM_DISK_CACHE:
        return "disk cache";
    case VYRE_PIPELINE_COMPILED:
        return "compiled";
    }
    return "?";
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

/* Uniform in [-1, 1). */
static float rnd(uint32_t *s)
{
    return (float)((double)(lcg(s) >> 8) / (double)(1u << 23)) - 1.0f;
}

static double dabs(double v)
{
    return v < 0 ? -v : v;
}

/*
 * Runs saxpy by host dispatch and checks every element. The GPU computes
 * a*x+y either fused (one rounding) or as a product and a sum (two); both
 * lie within 2^-23 * (|a*x| + |y|) of the exact value, which is what is
 * checked against the exact value computed in double (a*x is exact there:
 * 24-bit by 24-bit significands). An element off by an index or left
 * unwritten misses that by orders of magnitude. Returns 0, or 1 with msg.
 */
static int saxpy_run(vyre_pipeline *p, char *msg, size_t size)
{
    const unsigned n = SAXPY_N;
    const float a = 2.5f;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *y0 = malloc(n * sizeof *y0);
    if (!x || !y || !y0) {
        snprintf(msg, size, "out of memory");
        free(x), free(y), free(y0);
        return 1;
    }
    uint32_t s = 12345;
    for (unsigned i = 0; i < n; i++) {
        x[i] = rnd(&s);
        y0[i] = y[i] = rnd(&s);
    }
    vyre_arg args[4] = {vyre_arg_scalar(&a, sizeof a), vyre_arg_in(x, n * sizeof *x),
                        vyre_arg_inout(y, n * sizeof *y), vyre_arg_scalar(&n, sizeof n)};
    vyre_launch_cfg cfg = vyre_launch_1d((n + 255) / 256, 256);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_pipeline_dispatch_host(p, &cfg, args, 4, &e);
    int bad = 0;
    if (rc) {
        snprintf(msg, size, "vyre_pipeline_dispatch_host: %s: %s (%s)", vyre_err_name(rc),
                 e.message, e.hint);
        bad = 1;
    }
    for (unsigned i = 0; i < n && !bad; i++) {
        double ax = (double)a * (double)x[i];
        double exact = ax + (double)y0[i];
        double tol = (dabs(ax) + dabs((double)y0[i])) / (double)(1u << 23);
        if (dabs((double)y[i] - exact) > tol) {
            snprintf(msg, size, "saxpy y[%u] = %.9g, expected %.9g (x %.9g, y %.9g)", i,
                     (double)y[i], exact, (double)x[i], (double)y0[i]);
            bad = 1;
        }
    }
    free(x), free(y), free(y0);
    return bad;
}

static void expect_saxpy(vyre_pipeline *p)
{
    char msg[MSG_MAX] = "";
    cr_assert_eq(saxpy_run(p, msg, sizeof msg), 0, "%s", msg);
}

static uint64_t delta(const vyre_counters *after, const vyre_counters *before, vyre_counter_id id)
{
    return after->v[id] - before->v[id];
}

static uint64_t range_delta(const vyre_counters *after, const vyre_counters *before,
                            vyre_range_id id)
{
    return after->ranges[id].count - before->ranges[id].count;
}

/* Files directly under dir (0 when it does not exist). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Argument checks and a missing driver need no GPU: tests/unit/test_pipeline.c
 * runs them, and every path below, on the fake driver too. */

/* ---- on the GPU ---------------------------------------------------------- */

Test(gpu_pipeline, saxpy_through_nvrtc_is_right_and_counted)
{
    need_gpu();
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_counters c0, c1, c2;
    vyre_counters_snapshot(&c0);

    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);
    const vyre_pipeline_info *info = vyre_pipeline_info_get(p);
    cr_assert_eq(info->origin, VYRE_PIPELINE_COMPILED, "origin %s", origin_name(info->origin));
    cr_assert_str_eq(info->arch, vyre_ctx_info_get(ctx)->arch);
    cr_assert_eq(info->store_rc, 0, "store: %s", info->store_error.message);
    cr_assert_gt(info->cubin_size, 0);
    cr_assert_gt(info->compile_ns, 0);
    expect_saxpy(p);
    vyre_counters_snapshot(&c1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_MODULE_LOADS), 1);
    cr_assert_gt(delta(&c1, &c0, VYRE_CTR_COMPILE_NS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_DISPATCHES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_H2D_COPIES), 2);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_H2D_BYTES), 2 * (uint64_t)SAXPY_N * sizeof(float));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_D2H_COPIES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_D2H_BYTES), (uint64_t)SAXPY_N * sizeof(float));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_READBACKS), 1);
    cr_assert_geq(delta(&c1, &c0, VYRE_CTR_SYNCS), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_PIPELINE_COMPILE), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_NVRTC_COMPILE), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_MODULE_LOAD), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_CACHE_LOOKUP), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_CACHE_STORE), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_HOST_DISPATCH), 1);
    cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_PIPELINE_DISPATCH), 1);

    /* The same key again in this process: neither disk nor compiler. */
    vyre_pipeline *q = compile_desc(ctx, &d);
    const vyre_pipeline_info *qi = vyre_pipeline_info_get(q);
    cr_assert_eq(qi->origin, VYRE_PIPELINE_FROM_MODULE_CACHE, "origin %s", origin_name(qi->origin));
    cr_assert_eq(memcmp(&qi->key, &info->key, sizeof qi->key), 0);
    cr_assert_eq(vyre_pipeline_info_get(q)->cu_function, vyre_pipeline_info_get(p)->cu_function);
    expect_saxpy(q);
    vyre_counters_snapshot(&c2);
    cr_assert_eq(delta(&c2, &c1, VYRE_CTR_MODULE_CACHE_HITS), 1);
    cr_assert_eq(delta(&c2, &c1, VYRE_CTR_COMPILES), 0);
    cr_assert_eq(delta(&c2, &c1, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c2, &c1, VYRE_CTR_CACHE_MISSES), 0);
    cr_assert_eq(delta(&c2, &c1, VYRE_CTR_MODULE_LOADS), 0);
    cr_assert_eq(range_delta(&c2, &c1, VYRE_RANGE_CACHE_LOOKUP), 0);

    /* The second host dispatch reused the first one's transient memory. */
    vyre_pool_stats dev, pin;
    vyre_ctx_pool_stats(ctx, &dev, &pin);
    cr_assert_eq(dev.allocs, 2, "device pool allocs %llu", (unsigned long long)dev.allocs);
    cr_assert_eq(dev.reuses, 2, "device pool reuses %llu", (unsigned long long)dev.reuses);
    cr_assert_eq(pin.allocs, 2, "pinned pool allocs %llu", (unsigned long long)pin.allocs);
    cr_assert_eq(pin.reuses, 2, "pinned pool reuses %llu", (unsigned long long)pin.reuses);
    vyre_ctx_trim_pools(ctx);
    vyre_ctx_pool_stats(ctx, &dev, &pin);
    cr_assert_eq(dev.cached_bytes + pin.cached_bytes, 0);

    vyre_pipeline_free(q);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
}

Test(gpu_pipeline, reduction_of_a_million_floats_is_right)
{
    need_gpu();
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline_desc d = cuda_desc(REDUCE_SRC, "reduce_sum", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);

    const unsigned n = REDUCE_N;
    float *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    uint32_t s = 777;
    double ref = 0, ref_abs = 0;
    for (unsigned i = 0; i < n; i++) {
        x[i] = (rnd(&s) + 1.0f) * 0.5f; /* [0, 1) */
        ref += (double)x[i];
        ref_abs += dabs((double)x[i]);
    }

    /* Resident path: upload, zero, dispatch, download. */
    vyre_error e;
    vyre_error_clear(&e);
    vyre_buffer *bx = NULL, *bout = NULL;
    cr_assert_eq(vyre_buffer_alloc(ctx, n * sizeof *x, &bx, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_alloc(ctx, sizeof(float), &bout, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_upload(bx, 0, x, n * sizeof *x, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_zero(bout, &e), 0, "%s", e.message);
    vyre_arg args[3] = {vyre_arg_buffer(bx), vyre_arg_buffer(bout), vyre_arg_scalar(&n, sizeof n)};
    vyre_launch_cfg cfg = vyre_launch_1d(REDUCE_GRID, REDUCE_BLOCK);
    cr_assert_eq(vyre_pipeline_dispatch_resident(p, &cfg, args, 3, &e), 0, "%s", e.message);
    float got = -1;
    cr_assert_eq(vyre_buffer_download(bout, 0, &got, sizeof got, &e), 0, "%s", e.message);

    /*
     * Tolerance. Every input passes through at most d sequential float
     * additions on its way into the result: 16 in its thread's serial loop
     * (2^20 elements over 256 x 256 threads), 8 in the block's tree
     * (log2 256) and at worst 256 in the chain of atomicAdds (one per
     * block, in any order). Summation with that depth is off from the exact
     * sum by at most gamma_d * sum|x_i|, gamma_d = d*u / (1 - d*u) with
     * u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms,
     * 4.2). With d = 280 that is about 1.7e-5 relative; a lost or doubled
     * block (about 2048) is far outside it. The double-precision host sum
     * is exact to far better than that.
     */
    const double u = 1.0 / (double)(1u << 24), depth = 16 + 8 + 256;
    double tol = depth * u / (1 - depth * u) * ref_abs;
    cr_log_info("sum: gpu %.3f, host %.3f, |diff| %.4g, tolerance %.4g", (double)got, ref,
                dabs((double)got - ref), tol);
    cr_assert_leq(dabs((double)got - ref), tol, "gpu sum %.6f vs host %.6f (tolerance %.6g)",
                  (double)got, ref, tol);

    /* Small integers sum exactly in float while every partial sum stays
     * below 2^24 (here at most 7 * 2^20): the result must be exact, which
     * catches a single lost or doubled element. Host dispatch this time,
     * with the output zeroed by vyre (VYRE_ARG_OUT). */
    uint64_t exact = 0;
    for (unsigned i = 0; i < n; i++) {
        x[i] = (float)((i * 7u) % 8u);
        exact += (i * 7u) % 8u;
    }
    float sum = -1;
    vyre_arg hargs[3] = {vyre_arg_in(x, n * sizeof *x), vyre_arg_out(&sum, sizeof sum),
                         vyre_arg_scalar(&n, sizeof n)};
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, hargs, 3, &e), 0, "%s", e.message);
    cr_assert_eq((uint64_t)sum, exact, "integer sum %.1f, expected %llu", (double)sum,
                 (unsigned long long)exact);
    cr_assert_eq((double)sum, (double)exact);

    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_geq(c.v[VYRE_CTR_READBACKS], 2);
    cr_assert_geq(c.ranges[VYRE_RANGE_RESIDENT_DISPATCH].count, 1);

    free(x);
    vyre_buffer_free(bx);
    vyre_buffer_free(bout);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
}

/* ---- across processes ---------------------------------------------------- */

typedef int (*child_fn)(int expect_hit, char *msg, size_t size);

/* Forks; the child sets env (name, value pairs, NULL-terminated), runs fn
 * and exits with its result, writing its message to a pipe. Returns the
 * child's exit status (128 + signal when killed). */
static int run_child(child_fn fn, int arg, const char *const *env, char *msg, size_t size)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        close(fds[0]);
        for (const char *const *kv = env; kv && kv[0]; kv += 2)
            setenv(kv[0], kv[1], 1);
        char m[MSG_MAX] = "";
        int code = fn(arg, m, sizeof m);
        size_t len = strlen(m), off = 0;
        while (off < len) {
            ssize_t w = write(fds[1], m + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        _exit(code); /* no atexit handlers: Criterion's belong to the parent */
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < size && (r = read(fds[0], msg + got, size - 1 - got)) > 0)
        got += (size_t)r;
    msg[got] = '\0';
    close(fds[0]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

#define CHILD_SKIP 77

/* One process's run: compile saxpy with the default cache, check where it
 * came from and what was counted, run it. */
static int child_saxpy(int expect_hit, char *msg, size_t size)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV) {
        snprintf(msg, size, "no GPU here (%s): %s", vyre_err_name(rc), e.message);
        return CHILD_SKIP;
    }
    vyre_ctx *ctx = NULL;
    if (rc == 0)
        rc = vyre_ctx_open(0, NULL, &ctx, &e);
    if (rc) {
        snprintf(msg, size, "opening the GPU: %s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
        return 1;
    }
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = NULL;
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    rc = vyre_pipeline_compile(ctx, &d, &p, &e);
    vyre_counters_snapshot(&c1);
    int bad = 0;
    if (rc) {
        snprintf(msg, size, "vyre_pipeline_compile (%s): %s: %s (%s)",
                 expect_hit ? "expected a hit" : "expected a miss", vyre_err_name(rc), e.message,
                 e.hint);
        bad = 1;
    }
    vyre_pipeline_origin want = expect_hit ? VYRE_PIPELINE_FROM_DISK_CACHE : VYRE_PIPELINE_COMPILED;
    if (!bad && vyre_pipeline_info_get(p)->origin != want) {
        snprintf(msg, size, "pipeline came from the %s, expected the %s",
                 origin_name(vyre_pipeline_info_get(p)->origin), origin_name(want));
        bad = 1;
    }
    uint64_t hits = delta(&c1, &c0, VYRE_CTR_CACHE_HITS);
    uint64_t misses = delta(&c1, &c0, VYRE_CTR_CACHE_MISSES);
    uint64_t compiles = delta(&c1, &c0, VYRE_CTR_COMPILES);
    uint64_t nvrtc = range_delta(&c1, &c0, VYRE_RANGE_NVRTC_COMPILE);
    if (!bad && (hits != (expect_hit ? 1u : 0u) || misses != (expect_hit ? 0u : 1u) ||
                 compiles != (expect_hit ? 0u : 1u) || nvrtc != (expect_hit ? 0u : 1u))) {
        snprintf(msg, size, "counted %llu hits, %llu misses, %llu compiles, %llu NVRTC ranges",
                 (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)compiles,
                 (unsigned long long)nvrtc);
        bad = 1;
    }
    if (!bad && expect_hit && vyre_pipeline_info_get(p)->compile_ns == 0) {
        snprintf(msg, size, "a hit that saved 0 ns of compile time");
        bad = 1;
    }
    if (!bad)
        bad = saxpy_run(p, msg, size);
    /* The hit ran with NVRTC made unloadable: show that it really was. */
    if (!bad && expect_hit && vyre_nvrtc_load(NULL) != VYRE_ENONVRTC) {
        snprintf(msg, size, "NVRTC loads in the hit process: VYRE_NVRTC_LIBRARY was not honoured");
        bad = 1;
    }
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
    return bad;
}

Test(gpu_pipeline, a_miss_in_one_process_is_a_hit_in_the_next)
{
    /* Nothing here may initialise CUDA before the forks. */
    char msg[MSG_MAX];
    int st = run_child(child_saxpy, 0, NULL, msg, sizeof msg);
    if (st == CHILD_SKIP)
        cr_skip_test("%s", msg);
    cr_assert_eq(st, 0, "first process (miss): status %d: %s", st, msg);

    /* No compiler in the second process: a hit must not need one. */
    static const char *const no_compiler[] = {"VYRE_NVRTC_LIBRARY", "/nonexistent",
                                              "VYRE_NVJITLINK_LIBRARY", "/nonexistent", NULL};
    st = run_child(child_saxpy, 1, no_compiler, msg, sizeof msg);
    cr_assert_eq(st, 0, "second process (hit, no compiler): status %d: %s", st, msg);
}

/* ---- bad blobs ----------------------------------------------------------- */

Test(gpu_pipeline, a_corrupted_blob_is_recompiled_not_loaded)
{
    need_gpu();
    vyre_ctx *ctx = open_ctx(NULL);
    const char *root = vyre_cache_root(vyre_ctx_info_get(ctx)->cache);
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", VYRE_PIPELINE_NO_MODULE_CACHE);
    vyre_pipeline *p = compile_desc(ctx, &d);
    cr_assert_eq(vyre_pipeline_info_get(p)->origin, VYRE_PIPELINE_COMPILED);
    cr_assert_eq(vyre_pipeline_info_get(p)->store_rc, 0);
    vyre_key key = vyre_pipeline_info_get(p)->key;
    vyre_pipeline_free(p);

    /* Flip one payload byte in place. */
    char path[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_blob_path(root, &key, path, sizeof path, NULL), 0);
    size_t len = 0;
    char *bytes = tu_read_file(path, &len);
    cr_assert_not_null(bytes, "no blob at '%s'", path);
    cr_assert_gt(len, VYRE_BLOB_HEADER_SIZE + 64);
    size_t at = VYRE_BLOB_HEADER_SIZE + (len - VYRE_BLOB_HEADER_SIZE) / 2;
    bytes[at] = (char)(bytes[at] ^ 0x5a);
    tu_write_file(path, bytes, len);
    free(bytes);

    char qdir[VYRE_CACHE_PATH_MAX + 16];
    snprintf(qdir, sizeof qdir, "%s/quarantine", root);
    int quarantined = count_files(qdir);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    p = compile_desc(ctx, &d);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *info = vyre_pipeline_info_get(p);
    cr_assert_eq(info->origin, VYRE_PIPELINE_COMPILED, "origin %s", origin_name(info->origin));
    cr_assert_eq(info->rejected, VYRE_REJECT_PAYLOAD_SUM, "rejected as '%s'",
                 vyre_blob_reject_name(info->rejected));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 1);
    cr_assert_eq(count_files(qdir), quarantined + 1, "nothing new in '%s'", qdir);
    expect_saxpy(p);
    vyre_pipeline_free(p);

    /* The recompiled cubin replaced it: the next process-level lookup hits. */
    p = compile_desc(ctx, &d);
    cr_assert_eq(vyre_pipeline_info_get(p)->origin, VYRE_PIPELINE_FROM_DISK_CACHE, "origin %s",
                 origin_name(vyre_pipeline_info_get(p)->origin));
    expect_saxpy(p);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
}

Test(gpu_pipeline, a_cubin_the_driver_refuses_is_recompiled_and_replaced)
{
    need_gpu();
    char root[700];
    snprintf(root, sizeof root, "%s/cache", g_tmp);
    vyre_cache *cache = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_open(root, NULL, &cache, &e), 0, "%s", e.message);
    vyre_ctx *ctx = open_ctx(cache);

    /* A blob that passes every cache check but is no loadable cubin. */
    vyre_compile_request req = {VYRE_SOURCE_CUDA_C,
                                SAXPY_SRC,
                                strlen(SAXPY_SRC),
                                vyre_ctx_info_get(ctx)->arch,
                                "saxpy",
                                NULL,
                                0};
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    cr_assert_eq(vyre_compile_key(&req, &h.key, &e), 0, "%s", e.message);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "%s", vyre_ctx_info_get(ctx)->arch);
    snprintf(h.toolchain, sizeof h.toolchain, "test-garbage");
    h.compile_ns = 5;
    unsigned char junk[256];
    memset(junk, 0, sizeof junk);
    memcpy(junk,
           "\x7f"
           "ELF",
           4);
    cr_assert_eq(vyre_cache_put(cache, &h, junk, sizeof junk, &e), 0, "%s", e.message);

    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *info = vyre_pipeline_info_get(p);
    cr_assert_eq(memcmp(&info->key, &h.key, sizeof h.key), 0, "the pipeline's key differs");
    cr_assert_eq(info->driver_rejected, 1);
    cr_assert_eq(info->origin, VYRE_PIPELINE_COMPILED, "origin %s", origin_name(info->origin));
    cr_assert_eq(info->store_rc, 0, "store: %s", info->store_error.message);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 1);
    expect_saxpy(p);

    vyre_blob *blob = NULL;
    cr_assert_eq(vyre_cache_get(cache, &h.key, &blob, NULL, &e), 0, "%s", e.message);
    cr_assert_gt(blob->size, sizeof junk, "the junk blob was not replaced");
    cr_assert_neq(strcmp(blob->header.toolchain, "test-garbage"), 0);
    vyre_blob_free(blob);

    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
    vyre_cache_close(cache);
}

/* ---- seeding, PTX, graphs ------------------------------------------------ */

Test(gpu_pipeline, a_blob_seeded_without_a_context_is_a_runtime_hit)
{
    need_gpu();
    vyre_device_info dev;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &dev, &e), 0, "%s", e.message);
    char root[700];
    snprintf(root, sizeof root, "%s/seeded", g_tmp);
    vyre_cache *cache = NULL;
    cr_assert_eq(vyre_cache_open(root, NULL, &cache, &e), 0, "%s", e.message);

    /* What `vyre-cachectl seed` does: no context, the device's arch. */
    vyre_compile_request req = {
        VYRE_SOURCE_CUDA_C, SAXPY_SRC, strlen(SAXPY_SRC), dev.arch, "saxpy", NULL, 0};
    vyre_blob *blob = NULL;
    int was_hit = -1;
    cr_assert_eq(vyre_compile_through_cache(cache, &req, NULL, NULL, 0, &blob, &was_hit, &e), 0,
                 "%s", e.message);
    cr_assert_eq(was_hit, 0);
    vyre_blob_free(blob);

    vyre_ctx *ctx = open_ctx(cache);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);
    vyre_counters_snapshot(&c1);
    cr_assert_eq(vyre_pipeline_info_get(p)->origin, VYRE_PIPELINE_FROM_DISK_CACHE, "origin %s",
                 origin_name(vyre_pipeline_info_get(p)->origin));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 0);
    cr_assert_gt(delta(&c1, &c0, VYRE_CTR_COMPILE_NS_SAVED), 0);
    expect_saxpy(p);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
    vyre_cache_close(cache);
}

/* A fleet store on loopback (a GET server of the test's own, holding the
 * blob another cache seeded): an empty local cache gets the kernel from it,
 * validated, without compiling, and it runs correctly. */
Test(gpu_pipeline, a_kernel_in_a_remote_store_is_a_runtime_hit)
{
    need_gpu();
    vyre_device_info dev;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &dev, &e), 0, "%s", e.message);
    char seeded[700], empty[700];
    snprintf(seeded, sizeof seeded, "%s/seeded", g_tmp);
    snprintf(empty, sizeof empty, "%s/empty", g_tmp);
    vyre_cache *seed = NULL;
    cr_assert_eq(vyre_cache_open(seeded, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &seed, &e), 0, "%s",
                 e.message);
    vyre_compile_request req = {
        VYRE_SOURCE_CUDA_C, SAXPY_SRC, strlen(SAXPY_SRC), dev.arch, "saxpy", NULL, 0};
    vyre_blob *blob = NULL;
    int was_hit = -1;
    cr_assert_eq(vyre_compile_through_cache(seed, &req, NULL, NULL, 0, &blob, &was_hit, &e), 0,
                 "%s", e.message);
    char path[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_blob_path(seeded, &blob->header.key, path, sizeof path, &e), 0);
    vyre_blob_free(blob);
    vyre_cache_close(seed);
    size_t len = 0;
    char *bytes = tu_read_file(path, &len);
    cr_assert_not_null(bytes);

    ts_fault store;
    store.body = bytes;
    store.body_len = len;
    ts_fault_start(&store, TS_FAULT_BODY);
    char spec[128];
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/fleet", store.port);
    vyre_cache *cache = NULL;
    cr_assert_eq(vyre_cache_open(empty, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &cache, &e), 0, "%s",
                 e.message);
    cr_assert_eq(vyre__cache_set_remotes(cache, spec, &e), 0, "%s", e.message);

    vyre_ctx *ctx = open_ctx(cache);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);
    vyre_counters_snapshot(&c1);
    cr_assert_eq(vyre_pipeline_info_get(p)->origin, VYRE_PIPELINE_FROM_DISK_CACHE, "origin %s",
                 origin_name(vyre_pipeline_info_get(p)->origin));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 0);
    vyre_remote_stats st;
    cr_assert_eq(vyre_cache_remote_get(cache, 0, 0, NULL, &st, NULL), 0);
    cr_assert_eq(st.hits, 1, "the remote store served it");
    cr_assert_eq(st.rejected + st.errors, 0);
    cr_assert_eq(store.requests, 1);
    cr_log_info("remote hit from %s: %zu bytes, origin %s", spec, len,
                origin_name(vyre_pipeline_info_get(p)->origin));
    expect_saxpy(p);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
    vyre_cache_close(cache);
    ts_fault_stop(&store);
    free(bytes);
}

/* One module, two kernels (issue 12): saxpy, and a second entry. */
static const char TWO_KERNELS_SRC[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void negate(float *x, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        x[i] = -x[i];\n"
    "}\n";

Test(gpu_pipeline, a_module_seeded_with_no_flags_is_one_blob_hit_by_each_of_its_kernels)
{
    need_gpu();
    vyre_device_info dev;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &dev, &e), 0, "%s", e.message);
    /* The module as PTX for this device (its .target names the arch), in a
     * directory, as Triton leaves its kernels. */
    vyre_nvrtc_output o;
    int rc = vyre_nvrtc_compile(TWO_KERNELS_SRC, strlen(TWO_KERNELS_SRC), "two.cu", dev.arch, NULL,
                                0, 0, &o, &e);
    if (rc == VYRE_ENONVRTC)
        cr_skip_test("NVRTC cannot be loaded: %s", e.message);
    cr_assert_eq(rc, 0, "%s", e.message);
    char dir[700], path[800], root[700];
    snprintf(dir, sizeof dir, "%s/kernels", g_tmp);
    snprintf(path, sizeof path, "%s/two.ptx", dir);
    snprintf(root, sizeof root, "%s/seeded", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    tu_write_file(path, o.data, o.size);

    /* `vyre-cachectl seed DIR`, no flags: the arch from .target, the
     * kernels from the module. */
    /* VYRE_TEST_CACHECTL_BIN: where vyre-cachectl is when the test binary
     * travelled without its build tree (the GPU machine's bundle). */
    const char *env_bin = getenv("VYRE_TEST_CACHECTL_BIN");
    char bin[4096], opt[] = "--cache-dir", cmd[] = "seed";
    snprintf(bin, sizeof bin, "%s", env_bin && *env_bin ? env_bin : VYRE_CACHECTL_BIN);
    char *argv[] = {bin, opt, root, cmd, dir, NULL};
    tu_proc pr;
    tu_run(&pr, argv, NULL);
    cr_assert_eq(pr.exit_code, 0, "seed: %s%s", pr.out, pr.err);
    cr_assert(strstr(pr.out, "Seeded 1 module (2 kernels), already present 0, failed 0"), "%s",
              pr.out);
    tu_proc_free(&pr);

    vyre_cache *cache = NULL;
    cr_assert_eq(vyre_cache_open(root, NULL, &cache, &e), 0, "%s", e.message);
    vyre_ctx *ctx = open_ctx(cache);
    const char *entries[] = {"saxpy", "negate"};
    vyre_pipeline *p[2];
    for (int i = 0; i < 2; i++) {
        vyre_pipeline_desc d;
        memset(&d, 0, sizeof d);
        d.kind = VYRE_SOURCE_PTX;
        d.src = o.data;
        d.len = o.size;
        d.entry = entries[i];
        vyre_counters c0, c1;
        vyre_counters_snapshot(&c0);
        p[i] = compile_desc(ctx, &d);
        vyre_counters_snapshot(&c1);
        cr_assert_eq(vyre_pipeline_info_get(p[i])->origin, VYRE_PIPELINE_FROM_DISK_CACHE,
                     "%s: origin %s", entries[i],
                     origin_name(vyre_pipeline_info_get(p[i])->origin));
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 1, "%s", entries[i]);
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 0, "%s", entries[i]);
    }
    cr_assert_eq(memcmp(&vyre_pipeline_info_get(p[0])->key, &vyre_pipeline_info_get(p[1])->key,
                        sizeof(vyre_key)),
                 0, "one module, one key");
    cr_assert_neq(vyre_pipeline_info_get(p[0])->cu_function,
                  vyre_pipeline_info_get(p[1])->cu_function);
    expect_saxpy(p[0]);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(cache, &st, &e), 0, "%s", e.message);
    cr_assert_eq(st.entries, 1, "one blob");

    /* An entry the module does not define: VYRE_ENOENT naming both. */
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_PTX;
    d.src = o.data;
    d.len = o.size;
    d.entry = "matmul";
    vyre_pipeline *q = NULL;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &q, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no kernel 'matmul'") && strstr(e.message, "saxpy") &&
                  strstr(e.message, "negate"),
              "%s", e.message);

    vyre_pipeline_free(p[1]);
    vyre_pipeline_free(p[0]);
    vyre_ctx_close(ctx);
    vyre_cache_close(cache);
    vyre_nvrtc_output_release(&o);
}

Test(gpu_pipeline, ptx_input_is_linked_by_nvjitlink)
{
    need_gpu();
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_nvrtc_output o;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvrtc_compile(SAXPY_SRC, strlen(SAXPY_SRC), "saxpy.cu",
                                    vyre_ctx_info_get(ctx)->arch, NULL, 0, 0, &o, &e),
                 0, "%s", e.message);
    cr_assert_eq(o.is_cubin, 0);

    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_PTX;
    d.src = o.data;
    d.len = o.size;
    d.entry = "saxpy";
    vyre_pipeline *p = compile_desc(ctx, &d);
    cr_assert_eq(vyre_pipeline_info_get(p)->origin, VYRE_PIPELINE_COMPILED);
    expect_saxpy(p);

    vyre_blob *blob = NULL;
    cr_assert_eq(vyre_cache_get(vyre_ctx_info_get(ctx)->cache, &vyre_pipeline_info_get(p)->key,
                                &blob, NULL, &e),
                 0, "%s", e.message);
    cr_assert_eq(blob->header.kind, VYRE_BLOB_CUBIN);
    cr_assert_eq(strncmp(blob->header.toolchain, "nvjitlink-", 10), 0, "toolchain '%s'",
                 blob->header.toolchain);
    vyre_blob_free(blob);

    vyre_pipeline *q = compile_desc(ctx, &d);
    cr_assert_eq(vyre_pipeline_info_get(q)->origin, VYRE_PIPELINE_FROM_MODULE_CACHE);
    vyre_pipeline_free(q);
    vyre_pipeline_free(p);
    vyre_nvrtc_output_release(&o);
    vyre_ctx_close(ctx);
}

Test(gpu_pipeline, graph_batched_dispatch_matches_single_dispatch)
{
    need_gpu();
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
    vyre_pipeline *p = compile_desc(ctx, &d);
    enum { K = 8 };
    const unsigned n = 1u << 16;
    size_t bytes = n * sizeof(float);
    float *x = malloc(bytes), *y0 = malloc(bytes), *y1 = malloc(bytes), *y2 = malloc(bytes);
    cr_assert(x && y0 && y1 && y2);
    uint32_t s = 99;
    for (unsigned i = 0; i < n; i++) {
        x[i] = rnd(&s);
        y0[i] = rnd(&s);
    }
    vyre_error e;
    vyre_error_clear(&e);
    vyre_buffer *bx, *b1, *b2;
    cr_assert_eq(vyre_buffer_alloc(ctx, bytes, &bx, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_alloc(ctx, bytes, &b1, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_alloc(ctx, bytes, &b2, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_upload(bx, 0, x, bytes, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_upload(b1, 0, y0, bytes, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_upload(b2, 0, y0, bytes, &e), 0, "%s", e.message);

    uint64_t px = vyre_buffer_device_ptr(bx), p1 = vyre_buffer_device_ptr(b1),
             p2 = vyre_buffer_device_ptr(b2);
    float a1 = 0.5f, a2 = 0.5f;
    unsigned nn = n;
    void *args1[] = {&a1, &px, &p1, &nn};
    void *args2[] = {&a2, &px, &p2, &nn};
    vyre_launch_cfg cfg = vyre_launch_1d(n / 256, 256);

    /* An empty batch is refused; an aborted one leaves nothing behind. */
    vyre_batch *batch = NULL;
    vyre_graph *none = (vyre_graph *)&e;
    cr_assert_eq(vyre_batch_begin(ctx, &batch, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_batch_end(batch, &none, &e), VYRE_EINVAL);
    cr_assert_null(none);
    cr_assert_eq(vyre_batch_begin(ctx, &batch, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_batch_add(batch, p, &cfg, args2, &e), 0, "%s", e.message);
    vyre_batch_abort(batch);

    cr_assert_eq(vyre_batch_begin(ctx, &batch, &e), 0, "%s", e.message);
    for (int k = 0; k < K; k++)
        cr_assert_eq(vyre_batch_add(batch, p, &cfg, args2, &e), 0, "%s", e.message);
    vyre_graph *g = NULL;
    cr_assert_eq(vyre_batch_end(batch, &g, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_graph_kernels(g), K);
    cr_assert_not_null(vyre_graph_cu_exec(g));

    /* The parameter values were copied at capture: the graph keeps 0.5. */
    a2 = 99.0f;
    for (int round = 1; round <= 2; round++) {
        vyre_counters c0, c1;
        vyre_counters_snapshot(&c0);
        for (int k = 0; k < K; k++)
            cr_assert_eq(vyre_pipeline_launch(p, &cfg, args1, &e), 0, "%s", e.message);
        cr_assert_eq(vyre_graph_launch(g, NULL, &e), 0, "%s", e.message);
        cr_assert_eq(vyre_ctx_synchronize(ctx, NULL, &e), 0, "%s", e.message);
        vyre_counters_snapshot(&c1);
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_GRAPH_LAUNCHES), 1);
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_BATCH_DISPATCHES), 1);
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 2 * K);
        cr_assert_eq(delta(&c1, &c0, VYRE_CTR_DISPATCHES), K);
        cr_assert_eq(range_delta(&c1, &c0, VYRE_RANGE_PIPELINE_BATCH_DISPATCH), 1);

        cr_assert_eq(vyre_buffer_download(b1, 0, y1, bytes, &e), 0, "%s", e.message);
        cr_assert_eq(vyre_buffer_download(b2, 0, y2, bytes, &e), 0, "%s", e.message);
        /* Same kernel, same operations in the same order: bit for bit. */
        cr_assert_eq(memcmp(y1, y2, bytes), 0, "round %d: graph and single dispatch differ", round);
        /* And right: y0 + m*a*x after m = round*K updates. Each update is
         * within 2^-23 * (|a*x| + |y|) of its exact value (see saxpy_run),
         * and |a*x| + |y| <= 0.5 + 1 + 0.5*m all along. */
        for (unsigned i = 0; i < n; i++) {
            double m = (double)(round * K);
            double want = (double)y0[i] + m * 0.5 * (double)x[i];
            double tol = m * (1.5 + 0.5 * m) / (double)(1u << 23);
            cr_assert_leq(dabs((double)y2[i] - want), tol, "round %d y[%u] = %.9g, want %.9g",
                          round, i, (double)y2[i], want);
        }
    }

    vyre_graph_free(g);
    vyre_buffer_free(bx);
    vyre_buffer_free(b1);
    vyre_buffer_free(b2);
    free(x), free(y0), free(y1), free(y2);
    vyre_pipeline_free(p);
    vyre_ctx_close(ctx);
}

/* ---- telemetry seen from another process ---------------------------------- */

#define TEL_DISPATCHES 40

Test(gpu_pipeline, a_second_process_reads_the_launches_from_the_telemetry_page)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/tel", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    setenv("VYRE_TELEMETRY_DIR", dir, 1);
    int ready[2], done[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(done), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* The instrumented process: dispatches, then waits to be read. */
        close(ready[0]);
        close(done[1]);
        vyre_error e;
        char code = 'x';
        int rc = vyre_cuda_init(&e);
        vyre_ctx *ctx = NULL;
        if (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV)
            code = 's';
        else if (rc == 0 && vyre_ctx_open(0, NULL, &ctx, &e) == 0) {
            vyre_pipeline_desc d = cuda_desc(SAXPY_SRC, "saxpy", 0);
            vyre_pipeline *p = NULL;
            char msg[MSG_MAX];
            code = 'k';
            if (vyre_pipeline_compile(ctx, &d, &p, &e) != 0)
                code = 'c';
            for (int i = 0; code == 'k' && i < TEL_DISPATCHES; i++)
                if (saxpy_run(p, msg, sizeof msg) != 0)
                    code = 'r';
            vyre_telemetry_publish(vyre_telemetry_global(NULL));
            vyre_pipeline_free(p);
        }
        if (write(ready[1], &code, 1) != 1)
            _exit(3);
        char c;
        if (read(done[0], &c, 1) < 0)
            _exit(4);
        vyre_ctx_close(ctx);
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    char code = 0;
    cr_assert_eq(read(ready[0], &code, 1), 1, "the child died before publishing");
    if (code == 's') {
        cr_assert_eq(write(done[1], "q", 1), 1);
        waitpid(pid, NULL, 0);
        cr_skip_test("no GPU here");
    }
    char path[800];
    snprintf(path, sizeof path, "%s/%d.vtel", dir, (int)pid);
    static vyre_telemetry_snapshot s;
    vyre_error e;
    int rc = vyre__telemetry_read(path, &s, &e);
    cr_assert_eq(write(done[1], "q", 1), 1);
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert_eq(code, 'k', "the child failed (%c)", code);
    cr_assert_eq(rc, 0, "reading %s: %s", path, e.message);
    cr_assert_eq(s.pid, (int32_t)pid);
    /* saxpy_run is a host dispatch: one launch, two uploads, one readback. */
    cr_assert_geq(s.counters.v[VYRE_CTR_LAUNCHES], TEL_DISPATCHES);
    cr_assert_geq(s.counters.v[VYRE_CTR_DISPATCHES], TEL_DISPATCHES);
    cr_assert_geq(s.counters.v[VYRE_CTR_H2D_BYTES], (uint64_t)TEL_DISPATCHES * 2 * SAXPY_N * 4);
    cr_assert_geq(s.counters.v[VYRE_CTR_READBACKS], TEL_DISPATCHES);
    cr_assert_geq(s.counters.ranges[VYRE_RANGE_HOST_DISPATCH].count, TEL_DISPATCHES);
    cr_assert_eq(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}
