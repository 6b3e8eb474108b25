/*
 * perf_dispatch.c - the pipeline module against the bare driver, on the
 * same kernels in the same process. Prints ratios; never pass/fail.
 *
 *   load     a pipeline-cache hit end to end (vyre_cache_get: open,
 *            validate, checksum; then cuModuleLoadData of the cubin) vs
 *              - the honest baseline: open+fstat+read+close of the same
 *                blob file, then cuModuleLoadData of the cubin in it (what
 *                any program that keeps its cubins in files pays; target
 *                <= 1.05x)
 *              - cuModuleLoadData of the same cubin already in memory
 *                (target <= 1.3x)
 *              - the driver's warm JIT cache loading the kernel's PTX
 *                through cuModuleLoadData (target < 1.0x)
 *              - a cold NVRTC compile (the speedup is reported)
 *            on a tiled SGEMM, a row softmax and a block reduction, each
 *            tens of KB of PTX; also the whole vyre_pipeline_compile path
 *            (key, lookup, load, entry point) for reference
 *   launch   vyre_pipeline_launch (NVTX range, counters) vs bare
 *            cuLaunchKernel of an empty kernel (target <= 1.05x)
 *   graph    vyre_graph_launch vs bare cuGraphLaunch of the same
 *            instantiated graph (target <= 1.05x)
 *
 * Times are medians over interleaved rounds (the variants alternate within
 * each round, so drift hits them alike). The bare calls go through the
 * same driver entry points vyre uses, resolved with cuGetProcAddress_v2.
 *
 * usage: perf_dispatch [--quick]   (quick: fewer rounds)
 * Exit status: 0 measured, 2 error, 3 no NVIDIA driver or GPU (nothing
 * measured; a line says why).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vyre/bench.h"
#include "vyre/pipeline.h"
#include "perfutil.h"
#include "vyre/vyre.h"

#if defined(__SANITIZE_ADDRESS__)
/* cuInit fails under ASan unless the shadow gap is left unprotected (see
 * tests/gpu/test_gpu_cuda.c). Only this program. */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}
#endif

/* ---- the bare driver ------------------------------------------------------
 * This program is built without the CUDA headers, so the few entry points
 * it calls directly are declared here with their cuda.h signatures (CUresult
 * is an int-sized enum; CUmodule, CUfunction, CUstream and CUgraphExec are
 * pointers). */
typedef int (*getproc_fn)(const char *, void **, int, unsigned long long, int *);
typedef int (*module_load_fn)(void **, const void *);
typedef int (*module_unload_fn)(void *);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*graph_launch_fn)(void *, void *);
typedef int (*stream_sync_fn)(void *);

/* The CUDA version vyre asks cuGetProcAddress for (CUDA_VERSION of the
 * 13.0 toolkit). */
#define BENCH_CUDA_VERSION 13000

static struct {
    module_load_fn module_load;
    module_unload_fn module_unload;
    launch_fn launch;
    graph_launch_fn graph_launch;
    stream_sync_fn stream_sync;
} bare;

static void die(const char *what, const vyre_error *e)
{
    fprintf(stderr, "perf_dispatch: %s: %s\n", what, e ? e->message : "failed");
    if (e && e->hint[0])
        fprintf(stderr, "hint: %s\n", e->hint);
    exit(2);
}

static void check_cu(int r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "perf_dispatch: %s failed: CUresult %d\n", what, r);
        exit(2);
    }
}

static void *resolve(getproc_fn gp, const char *name)
{
    void *fn = NULL;
    int status = -1;
    int r = gp(name, &fn, BENCH_CUDA_VERSION, 0, &status);
    if (r != 0 || status != 0 || !fn) {
        fprintf(stderr, "perf_dispatch: the driver has no %s\n", name);
        exit(2);
    }
    return fn;
}

static void load_bare(void)
{
    /* vyre_cuda_init loaded it already: this only takes a reference. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "perf_dispatch: dlopen libcuda.so.1: %s\n", dlerror());
        exit(2);
    }
    getproc_fn gp = (getproc_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!gp) {
        fprintf(stderr, "perf_dispatch: libcuda.so.1 has no cuGetProcAddress_v2\n");
        exit(2);
    }
    bare.module_load = (module_load_fn)resolve(gp, "cuModuleLoadData");
    bare.module_unload = (module_unload_fn)resolve(gp, "cuModuleUnload");
    bare.launch = (launch_fn)resolve(gp, "cuLaunchKernel");
    bare.graph_launch = (graph_launch_fn)resolve(gp, "cuGraphLaunch");
    bare.stream_sync = (stream_sync_fn)resolve(gp, "cuStreamSynchronize");
}

/* ---- timing ---------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- kernels --------------------------------------------------------------
 * Real kernels, not toys: the compile suite's tiled SGEMM, row softmax and
 * block reduction (vyre_bench_kernels()), whose PTX is tens of KB
 * like the Triton and Inductor kernels the design's reference figures come
 * from. The fourth (saxpy) is too small to say anything about loading. */
typedef vyre_bench_kernel kernel_src;
static const kernel_src *g_kernels;
static size_t g_nkernels; /* the first three of vyre_bench_kernels() */
#define NKERNELS g_nkernels

static const char EMPTY_SRC[] = "extern \"C\" __global__ void empty_kernel(void) {}\n";

/* NVRTC has no -O3 (its front end optimises device code by default); the
 * -O3 that matters for a cubin is ptxas's. */
static const char *const g_opts[] = {"-Xptxas=-O3"};

/* PTX of k for arch (the caller releases out). */
static void make_ptx(const kernel_src *k, const char *arch, vyre_nvrtc_output *out)
{
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_nvrtc_compile(k->src, strlen(k->src), k->label, arch, g_opts, 1, 0, out, &e))
        die(k->label, &e);
}

/* ---- load: a cache hit vs the driver's ways to get a module ------------- */

enum { V_BARE_CUBIN, V_FILE_READ, V_VYRE_HIT, V_WARM_JIT, V_FULL_PATH, NVARIANTS };

/* The honest baseline's file read: open+fstat+read+close of the blob file
 * into a buffer sized from fstat (as perf_cache's bare read). The caller
 * frees *out; the cubin is at *out + VYRE_BLOB_HEADER_SIZE. */
static void read_file(const char *path, uint8_t **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < VYRE_BLOB_HEADER_SIZE) {
        fprintf(stderr, "perf_dispatch: cannot read the blob file '%s'\n", path);
        exit(2);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n);
    if (!buf)
        die("out of memory", NULL);
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) {
            fprintf(stderr, "perf_dispatch: short read of '%s'\n", path);
            exit(2);
        }
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
}

static double time_variant(int v, vyre_ctx *ctx, const vyre_pipeline_desc *desc,
                           const vyre_key *key, const char *blob_path, const void *cubin,
                           const char *ptx, int reps)
{
    vyre_error e;
    vyre_error_clear(&e);
    uint64_t total = 0;
    for (int i = 0; i < reps; i++) {
        void *mod = NULL;
        vyre_blob *blob = NULL;
        vyre_pipeline *p = NULL;
        uint64_t t0 = now_ns();
        switch (v) {
        case V_BARE_CUBIN:
            check_cu(bare.module_load(&mod, cubin), "cuModuleLoadData(cubin)");
            break;
        case V_FILE_READ: {
            uint8_t *file = NULL;
            read_file(blob_path, &file);
            check_cu(bare.module_load(&mod, file + VYRE_BLOB_HEADER_SIZE),
                     "cuModuleLoadData(cubin read from the file)");
            free(file);
            break;
        }
        case V_VYRE_HIT:
            if (vyre_cache_get(vyre_ctx_info_get(ctx)->cache, key, &blob, NULL, &e))
                die("vyre_cache_get (expected a hit)", &e);
            check_cu(bare.module_load(&mod, blob->payload), "cuModuleLoadData(cached cubin)");
            vyre_blob_free(blob);
            break;
        case V_WARM_JIT:
            check_cu(bare.module_load(&mod, ptx), "cuModuleLoadData(PTX)");
            break;
        case V_FULL_PATH:
            if (vyre_pipeline_compile(ctx, desc, &p, &e))
                die("vyre_pipeline_compile", &e);
            break;
        }
        total += now_ns() - t0;
        if (mod)
            check_cu(bare.module_unload(mod), "cuModuleUnload");
        if (p) {
            if (vyre_pipeline_info_get(p)->origin != VYRE_PIPELINE_FROM_DISK_CACHE) {
                fprintf(stderr, "perf_dispatch: the full path did not hit the cache\n");
                exit(2);
            }
            vyre_pipeline_free(p); /* unloads: NO_MODULE_CACHE */
        }
    }
    return (double)total / reps;
}

static void bench_load(vyre_ctx *ctx, int quick)
{
    const char *arch = vyre_ctx_info_get(ctx)->arch;
    int rounds = quick ? 5 : 21, reps = quick ? 5 : 20, colds = quick ? 1 : 3;
    printf("\nload: pipeline-cache hit (vyre_cache_get + cuModuleLoadData) vs the driver\n");
    printf("%-8s %8s %8s %10s %10s %9s %9s %9s %10s %9s %8s %8s %8s %9s\n", "kernel", "ptx_KB",
           "cubin_KB", "cold_ms", "jitcold_ms", "bare_us", "file_us", "hit_us", "warmjit_us",
           "full_us", "hit/file", "hit/bare", "hit/jit", "cold/hit");
    for (size_t k = 0; k < NKERNELS; k++) {
        const kernel_src *ks = &g_kernels[k];
        vyre_error e;
        vyre_error_clear(&e);
        vyre_nvrtc_output ptx;
        make_ptx(ks, arch, &ptx);

        /* Cold compiles, straight to a cubin (what a miss pays). */
        vyre_compile_request req = {
            VYRE_SOURCE_CUDA_C, ks->src, strlen(ks->src), arch, ks->entry, g_opts, 1};
        double cold[3];
        vyre_compile_result res;
        memset(&res, 0, sizeof res);
        for (int c = 0; c < colds; c++) {
            vyre_compile_result_release(&res);
            uint64_t t0 = now_ns();
            if (vyre_compile_cubin(&req, NULL, &res, &e))
                die(ks->label, &e);
            cold[c] = (double)(now_ns() - t0);
        }
        double cold_ns = perf_median(cold, colds);

        /* Store it through the run-time path (a miss), then time hits. */
        vyre_pipeline_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.kind = VYRE_SOURCE_CUDA_C;
        desc.src = ks->src;
        desc.len = strlen(ks->src);
        desc.entry = ks->entry;
        desc.opts = g_opts;
        desc.nopts = 1;
        desc.flags = VYRE_PIPELINE_NO_MODULE_CACHE;
        vyre_pipeline *p = NULL;
        if (vyre_pipeline_compile(ctx, &desc, &p, &e))
            die(ks->label, &e);
        if (vyre_pipeline_info_get(p)->store_rc)
            die("storing the cubin", &vyre_pipeline_info_get(p)->store_error);
        vyre_key key = vyre_pipeline_info_get(p)->key;
        vyre_pipeline_free(p);
        char blob_path[VYRE_CACHE_PATH_MAX];
        if (vyre_blob_path(vyre_cache_root(vyre_ctx_info_get(ctx)->cache), &key, blob_path,
                           sizeof blob_path, &e))
            die("the blob's path", &e);

        /* The driver's JIT cache is empty (CUDA_CACHE_PATH is fresh): the
         * first PTX load compiles, and leaves it warm for the rounds. */
        void *mod = NULL;
        uint64_t t0 = now_ns();
        check_cu(bare.module_load(&mod, ptx.data), "cuModuleLoadData(PTX, cold)");
        double jit_cold_ns = (double)(now_ns() - t0);
        check_cu(bare.module_unload(mod), "cuModuleUnload");

        double *samples[NVARIANTS];
        for (int v = 0; v < NVARIANTS; v++) {
            samples[v] = calloc((size_t)rounds, sizeof(double));
            if (!samples[v])
                die("out of memory", NULL);
            (void)time_variant(v, ctx, &desc, &key, blob_path, res.cubin, ptx.data,
                               2); /* warm up */
        }
        for (int r = 0; r < rounds; r++)
            for (int i = 0; i < NVARIANTS; i++) {
                int v = (i + r) % NVARIANTS;
                samples[v][r] =
                    time_variant(v, ctx, &desc, &key, blob_path, res.cubin, ptx.data, reps);
            }
        double med[NVARIANTS];
        for (int v = 0; v < NVARIANTS; v++) {
            med[v] = perf_median(samples[v], rounds);
            free(samples[v]);
        }
        printf("%-8s %8.1f %8.1f %10.2f %10.2f %9.1f %9.1f %9.1f %10.1f %9.1f %7.2fx %7.2fx "
               "%7.2fx %8.0fx\n",
               ks->label, (double)ptx.size / 1024.0, (double)res.size / 1024.0, cold_ns / 1e6,
               jit_cold_ns / 1e6, med[V_BARE_CUBIN] / 1e3, med[V_FILE_READ] / 1e3,
               med[V_VYRE_HIT] / 1e3, med[V_WARM_JIT] / 1e3, med[V_FULL_PATH] / 1e3,
               med[V_VYRE_HIT] / med[V_FILE_READ], med[V_VYRE_HIT] / med[V_BARE_CUBIN],
               med[V_VYRE_HIT] / med[V_WARM_JIT], cold_ns / med[V_VYRE_HIT]);
        vyre_compile_result_release(&res);
        vyre_nvrtc_output_release(&ptx);
    }
    printf("targets: hit/file <= 1.05x (file_us: open+fstat+read+close of the same blob file, "
           "then cuModuleLoadData), hit/bare <= 1.3x (bare_us: the cubin already in memory), "
           "hit/jit < 1.0x; full_us = vyre_pipeline_compile (key + lookup + load + entry), for "
           "reference\n");
}

/* ---- launch and graph: the hot path vs the bare driver -------------------- */

static vyre_pipeline *compile_empty(vyre_ctx *ctx)
{
    vyre_pipeline_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = VYRE_SOURCE_CUDA_C;
    desc.src = EMPTY_SRC;
    desc.len = strlen(EMPTY_SRC);
    desc.entry = "empty_kernel";
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_pipeline_compile(ctx, &desc, &p, &e))
        die("compiling the empty kernel", &e);
    return p;
}

/* ns per launch of reps launches (host side), then waits untimed. */
static double time_launches(int vyre, vyre_pipeline *p, void *stream, int reps)
{
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    void *fn = vyre_pipeline_info_get(p)->cu_function;
    vyre_error e;
    vyre_error_clear(&e);
    uint64_t t0 = now_ns();
    if (vyre) {
        for (int i = 0; i < reps; i++)
            if (vyre_pipeline_launch(p, &cfg, NULL, &e))
                die("vyre_pipeline_launch", &e);
    } else {
        for (int i = 0; i < reps; i++)
            check_cu(bare.launch(fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL), "cuLaunchKernel");
    }
    double ns = (double)(now_ns() - t0) / reps;
    check_cu(bare.stream_sync(stream), "cuStreamSynchronize");
    return ns;
}

static double time_graphs(int vyre, vyre_graph *g, void *stream, int reps)
{
    void *exec = vyre_graph_cu_exec(g);
    vyre_error e;
    vyre_error_clear(&e);
    uint64_t t0 = now_ns();
    if (vyre) {
        for (int i = 0; i < reps; i++)
            if (vyre_graph_launch(g, NULL, &e))
                die("vyre_graph_launch", &e);
    } else {
        for (int i = 0; i < reps; i++)
            check_cu(bare.graph_launch(exec, stream), "cuGraphLaunch");
    }
    double ns = (double)(now_ns() - t0) / reps;
    check_cu(bare.stream_sync(stream), "cuStreamSynchronize");
    return ns;
}

static void bench_launch(vyre_ctx *ctx, int quick)
{
    int rounds = quick ? 11 : 41, reps = 200, greps = 32;
    enum { GRAPH_KERNELS = 8 };
    vyre_pipeline *p = compile_empty(ctx);
    void *stream = vyre_ctx_info_get(ctx)->cu_stream;
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    const char *timing = getenv("VYRE_RANGE_TIMING");
    printf("\nlaunch: vyre_pipeline_launch vs bare cuLaunchKernel, empty kernel, 1x32 threads\n");
    printf("NVTX ranges on (%s), range timing %s, counters on\n",
           inj && *inj ? "a tool is attached" : "no tool attached",
           timing && strcmp(timing, "0") == 0 ? "off" : "on");

    double *sb = calloc((size_t)rounds, sizeof(double)),
           *sv = calloc((size_t)rounds, sizeof(double));
    if (!sb || !sv)
        die("out of memory", NULL);
    (void)time_launches(0, p, stream, 1000); /* warm up both paths */
    (void)time_launches(1, p, stream, 1000);
    for (int r = 0; r < rounds; r++) {
        if (r % 2) {
            sv[r] = time_launches(1, p, stream, reps);
            sb[r] = time_launches(0, p, stream, reps);
        } else {
            sb[r] = time_launches(0, p, stream, reps);
            sv[r] = time_launches(1, p, stream, reps);
        }
    }
    double mb = perf_median(sb, rounds), mv = perf_median(sv, rounds);
    printf("%-8s %12s %12s %8s\n", "", "bare_ns", "vyre_ns", "ratio");
    printf("%-8s %12.0f %12.0f %7.3fx   (target <= 1.05x; %d rounds of %d launches)\n", "launch",
           mb, mv, mv / mb, rounds, reps);

    /* The same captured graph, replayed both ways. */
    vyre_batch *batch = NULL;
    vyre_graph *g = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    if (vyre_batch_begin(ctx, &batch, &e))
        die("vyre_batch_begin", &e);
    for (int k = 0; k < GRAPH_KERNELS; k++)
        if (vyre_batch_add(batch, p, &cfg, NULL, &e))
            die("vyre_batch_add", &e);
    if (vyre_batch_end(batch, &g, &e))
        die("vyre_batch_end", &e);
    (void)time_graphs(0, g, stream, 100);
    (void)time_graphs(1, g, stream, 100);
    for (int r = 0; r < rounds; r++) {
        if (r % 2) {
            sv[r] = time_graphs(1, g, stream, greps);
            sb[r] = time_graphs(0, g, stream, greps);
        } else {
            sb[r] = time_graphs(0, g, stream, greps);
            sv[r] = time_graphs(1, g, stream, greps);
        }
    }
    mb = perf_median(sb, rounds);
    mv = perf_median(sv, rounds);
    printf("%-8s %12.0f %12.0f %7.3fx   (target <= 1.05x; graph of %d kernels, %d rounds of %d "
           "replays)\n",
           "graph", mb, mv, mv / mb, GRAPH_KERNELS, rounds, greps);
    vyre_graph_free(g);
    free(sb);
    free(sv);
    vyre_pipeline_free(p);
}

/* ---- main ------------------------------------------------------------------ */

static void print_counters(void)
{
    static const vyre_counter_id ids[] = {
        VYRE_CTR_LAUNCHES,     VYRE_CTR_DISPATCHES, VYRE_CTR_GRAPH_LAUNCHES, VYRE_CTR_CACHE_HITS,
        VYRE_CTR_CACHE_MISSES, VYRE_CTR_COMPILES,   VYRE_CTR_MODULE_LOADS,   VYRE_CTR_SYNCS};
    vyre_counters c;
    vyre_counters_snapshot(&c);
    printf("\ncounters:");
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        printf(" %s=%llu", vyre_counter_name(ids[i]), (unsigned long long)c.v[ids[i]]);
    printf("\n");
}

static void rm_rf(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "perf_dispatch: could not remove %s\n", path);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 2 || (argc == 2 && !quick)) {
        fprintf(stderr, "usage: perf_dispatch [--quick]\n");
        return 2;
    }
    size_t nk = 0;
    g_kernels = vyre_bench_kernels(&nk);
    g_nkernels = nk < 3 ? nk : 3;
    /* A fresh pipeline cache and a fresh driver JIT cache: the driver reads
     * CUDA_CACHE_PATH in cuInit, so this precedes vyre_cuda_init. */
    const char *tmp = getenv("TMPDIR");
    char base[4096], dir[4200];
    snprintf(base, sizeof base, "%s/vyre-perf-dispatch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror("perf_dispatch: mkdtemp");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/ptx-cache", base);
    setenv("VYRE_PTX_CACHE_DIR", dir, 1);
    snprintf(dir, sizeof dir, "%s/cuda-jit", base);
    if (mkdir(dir, 0700) != 0) {
        perror("perf_dispatch: mkdir");
        return 2;
    }
    setenv("CUDA_CACHE_PATH", dir, 1);

    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV) {
        /* Still show what the kernels weigh, where NVRTC (a CPU library)
         * is there; without it, only the reason for the skip. */
        printf("perf_dispatch: PTX sizes for sm_90:");
        for (size_t k = 0; k < NKERNELS; k++) {
            vyre_nvrtc_output ptx;
            vyre_error ne;
            vyre_error_clear(&ne);
            const kernel_src *ks = &g_kernels[k];
            if (vyre_nvrtc_compile(ks->src, strlen(ks->src), ks->label, "sm_90", g_opts, 1, 0, &ptx,
                                   &ne)) {
                printf(" (none: %s)", ne.message);
                break;
            }
            printf(" %s %.1f KB", ks->label, (double)ptx.size / 1024.0);
            vyre_nvrtc_output_release(&ptx);
        }
        printf("\nperf_dispatch: skipped: %s\n", e.message);
        rm_rf(base);
        return 3;
    }
    if (rc)
        die("vyre_cuda_init", &e);
    vyre_ctx *ctx = NULL;
    if (vyre_ctx_open(0, NULL, &ctx, &e))
        die("vyre_ctx_open", &e);
    load_bare();
    int driver = 0;
    (void)vyre_cuda_driver_version(&driver, NULL);
    printf("perf_dispatch: device 0: %s (%s), driver %d; medians of interleaved rounds%s\n",
           vyre_ctx_info_get(ctx)->device_name, vyre_ctx_info_get(ctx)->arch, driver,
           quick ? " (quick)" : "");

    bench_load(ctx, quick);
    bench_launch(ctx, quick);
    print_counters();

    vyre_ctx_close(ctx);
    rm_rf(base);
    return 0;
}
