/*
 * test_gpu_cupti.c - CUPTI activity capture against the real driver and
 * GPU (libcore/src/cuda/cupti.c, bench/results.c). Skips, with the reason, when there
 * is no driver, no GPU or no CUPTI.
 *
 *   - a kernel compiled with NVRTC and launched through the driver table is
 *     reported by name, with a duration and its grid and block; the copies
 *     around it are reported with their bytes and direction;
 *   - the results database's timings writer, as a sink, stores the rows;
 *   - with NVTX routed to CUPTI (NVTX_INJECTION64_PATH = libcupti) the
 *     catalog ranges arrive as ranges with their names, domain, payload
 *     and nesting. NVTX reads that variable once, at the first NVTX call of
 *     a process, so the test re-executes this binary with it set and only
 *     that test selected, unless it is already set (the lead may also run
 *     the binary with it set);
 *   - another CUPTI subscriber makes start fail with VYRE_ECUPTIBUSY and
 *     nothing else; capture works once it is gone.
 *
 * ASan: cuInit needs protect_shadow_gap=0, which test_gpu_cuda.c sets for
 * the whole test_gpu binary through __asan_default_options.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/results_internal.h"
#include "cuda/cuda_internal.h"
#include "cuda/cupti_internal.h"
#include "testutil.h"
#include "trace/nvtx_internal.h"
#include "vyre/counters.h"
#include "vyre/cuda.h"
#include "vyre/cupti.h"
#include "vyre/nvrtc.h"
#include "vyre/nvtx.h"
#include "vyre/results.h"

#define CHILD_VAR "VYRE_TEST_CUPTI_CHILD"

/* libcupti 13.0 keeps a few small allocations for the process's lifetime:
 * tests/common/testutil.c suppresses them (one __lsan_default_suppressions
 * for every test binary). */

static const char *const g_vars[] = {"HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "CUDA_CACHE_PATH"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    char sub[700];
    setenv("HOME", g_tmp, 1);
    snprintf(sub, sizeof sub, "%s/cache", g_tmp);
    setenv("XDG_CACHE_HOME", sub, 1);
    snprintf(sub, sizeof sub, "%s/data", g_tmp);
    setenv("XDG_DATA_HOME", sub, 1);
}

static void teardown(void)
{
    vyre_cupti_stop(NULL);
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(gpu_cupti, .init = setup, .fini = teardown, .timeout = 300);

/* ---- the device and a kernel ------------------------------------------------ */

static const char PROBE_SRC[] =
    "extern \"C\" __global__ void vyre_cupti_probe(float *x, int n)\n"
    "{\n"
    "    int b = blockIdx.y * gridDim.x + blockIdx.x;\n"
    "    int i = b * (blockDim.x * blockDim.y) + threadIdx.y * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        x[i] = x[i] * 2.0f + 1.0f;\n"
    "}\n";

#define GRID_X  37
#define GRID_Y  3
#define BLOCK_X 32
#define BLOCK_Y 4
#define N       (GRID_X * GRID_Y * BLOCK_X * BLOCK_Y)

typedef struct gpu {
    const vyre__cuda_fns *cu;
    vyre_device_info info;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    CUdeviceptr d_x;
    float *h_x; /* pinned */
} gpu;

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

/* Skips the test unless the driver, a GPU and CUPTI are all there. */
static void need_gpu_and_cupti(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc)
        cr_skip_test("no usable CUDA driver: %s: %s", vyre_err_name(rc), e.message);
    int count = 0;
    if (vyre_cuda_device_count(&count, &e) || count < 1)
        cr_skip_test("no CUDA device");
    rc = vyre_cupti_load(&e);
    if (rc)
        cr_skip_test("no CUPTI: %s: %s", vyre_err_name(rc), e.message);
}

static void gpu_open(gpu *g)
{
    memset(g, 0, sizeof *g);
    vyre_error e;
    vyre_error_clear(&e);
    g->cu = vyre__cuda();
    cr_assert_not_null(g->cu);
    cr_assert_eq(vyre_cuda_device_info(0, &g->info, &e), 0, "%s", e.message);
    CU_OK(g->cu->cuDeviceGet(&g->dev, 0));
    CU_OK(g->cu->cuDevicePrimaryCtxRetain(&g->ctx, g->dev));
    CU_OK(g->cu->cuCtxSetCurrent(g->ctx));

    vyre_nvrtc_output out;
    memset(&out, 0, sizeof out);
    int rc = vyre_nvrtc_compile(PROBE_SRC, strlen(PROBE_SRC), "vyre_cupti_probe.cu", g->info.arch,
                                NULL, 0, 1, &out, &e);
    cr_assert_eq(rc, 0, "NVRTC for %s: %s\n%s", g->info.arch, e.message, out.log ? out.log : "");
    CU_OK(g->cu->cuModuleLoadData(&g->mod, out.data));
    vyre_nvrtc_output_release(&out);
    CU_OK(g->cu->cuModuleGetFunction(&g->fn, g->mod, "vyre_cupti_probe"));
    CU_OK(g->cu->cuStreamCreate(&g->stream, 0));
    CU_OK(g->cu->cuMemAlloc(&g->d_x, N * sizeof(float)));
    CU_OK(g->cu->cuMemAllocHost((void **)&g->h_x, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        g->h_x[i] = (float)i;
}

static void gpu_close(gpu *g)
{
    if (!g->cu)
        return;
    g->cu->cuStreamSynchronize(g->stream);
    g->cu->cuMemFreeHost(g->h_x);
    g->cu->cuMemFree(g->d_x);
    g->cu->cuStreamDestroy(g->stream);
    g->cu->cuModuleUnload(g->mod);
    g->cu->cuDevicePrimaryCtxRelease(g->dev);
}

/* Copy in, launch `launches` times, copy out, synchronise. */
static void run_probe(gpu *g, int launches)
{
    int n = N;
    void *args[] = {&g->d_x, &n};
    CU_OK(g->cu->cuMemcpyHtoDAsync(g->d_x, g->h_x, N * sizeof(float), g->stream));
    for (int i = 0; i < launches; i++)
        CU_OK(g->cu->cuLaunchKernel(g->fn, GRID_X, GRID_Y, 1, BLOCK_X, BLOCK_Y, 1, 0, g->stream,
                                    args, NULL));
    CU_OK(g->cu->cuMemcpyDtoHAsync(g->h_x, g->d_x, N * sizeof(float), g->stream));
    CU_OK(g->cu->cuStreamSynchronize(g->stream));
}

/* ---- a collecting sink ------------------------------------------------------- */

#define MAX_RECS 4096
static struct {
    pthread_mutex_t mu;
    size_t n;
    size_t calls;
    vyre_activity recs[MAX_RECS];
} g_col = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void collect(const vyre_activity *recs, size_t n, void *ctx)
{
    cr_assert_eq(ctx, &g_col, "the sink gets its own ctx");
    pthread_mutex_lock(&g_col.mu);
    g_col.calls++;
    for (size_t i = 0; i < n && g_col.n < MAX_RECS; i++)
        g_col.recs[g_col.n++] = recs[i];
    pthread_mutex_unlock(&g_col.mu);
}

static void start_ok(unsigned kinds)
{
    vyre_error e;
    vyre_error_clear(&e);
    vyre_cupti_config cfg = {.kinds = kinds};
    int rc = vyre_cupti_start(&cfg, &e);
    cr_assert_eq(rc, 0, "vyre_cupti_start: %s: %s (hint: %s)", vyre_err_name(rc), e.message,
                 e.hint);
}

static void stop_ok(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_stop(&e), 0, "vyre_cupti_stop: %s", e.message);
}

/* ---- kernels and copies ------------------------------------------------------- */

Test(gpu_cupti, kernels_by_name_with_duration_grid_and_block)
{
    need_gpu_and_cupti();
    gpu g;
    gpu_open(&g);
    vyre_counters before;
    vyre_counters_snapshot(&before);
    cr_assert_eq(vyre_cupti_add_sink(collect, &g_col, NULL), 0);
    start_ok(VYRE_CUPTI_KERNEL | VYRE_CUPTI_MEMCPY | VYRE_CUPTI_MEMSET | VYRE_CUPTI_OVERHEAD);
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    cr_assert_eq(st.running, 1);
    cr_assert_eq(st.kinds_enabled,
                 VYRE_CUPTI_KERNEL | VYRE_CUPTI_MEMCPY | VYRE_CUPTI_MEMSET | VYRE_CUPTI_OVERHEAD);

    run_probe(&g, 3);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_flush(1, &e), 0, "%s", e.message);
    stop_ok();
    cr_assert_eq(vyre_cupti_remove_sink(collect, &g_col), 0);

    /* The kernel ran: x*2+1 three times is 8x+7. */
    for (int i = 0; i < N; i += 997)
        cr_assert_float_eq(g.h_x[i], 8.0f * (float)i + 7.0f, 1e-3f, "x[%d] = %f", i, g.h_x[i]);

    size_t kernels = 0, h2d = 0, d2h = 0;
    uint32_t kernel_stream = 0;
    for (size_t i = 0; i < g_col.n; i++) {
        const vyre_activity *a = &g_col.recs[i];
        if (a->kind == VYRE_ACTIVITY_KERNEL && strcmp(a->name, "vyre_cupti_probe") == 0) {
            kernels++;
            cr_assert_gt(a->end_ns, a->start_ns, "kernel duration %llu..%llu",
                         (unsigned long long)a->start_ns, (unsigned long long)a->end_ns);
            cr_assert_eq(a->grid[0], GRID_X);
            cr_assert_eq(a->grid[1], GRID_Y);
            cr_assert_eq(a->grid[2], 1u);
            cr_assert_eq(a->block[0], BLOCK_X);
            cr_assert_eq(a->block[1], BLOCK_Y);
            cr_assert_eq(a->block[2], 1u);
            cr_assert_eq(a->device_id, 0u);
            kernel_stream = a->stream_id;
            cr_log_info("kernel %s: %llu ns, grid %u,%u,%u block %u,%u,%u, %u regs, stream %u",
                        a->name, (unsigned long long)(a->end_ns - a->start_ns), a->grid[0],
                        a->grid[1], a->grid[2], a->block[0], a->block[1], a->block[2],
                        a->registers_per_thread, a->stream_id);
        } else if (a->kind == VYRE_ACTIVITY_MEMCPY && a->bytes == N * sizeof(float)) {
            if (a->copy_kind == VYRE_COPY_HTOD) {
                h2d++;
                cr_assert_str_eq(a->name, "memcpy_htod");
            } else if (a->copy_kind == VYRE_COPY_DTOH) {
                d2h++;
                cr_assert_str_eq(a->name, "memcpy_dtoh");
            }
            cr_assert_geq(a->end_ns, a->start_ns);
        }
    }
    cr_assert_eq(kernels, 3u, "kernel records for vyre_cupti_probe (of %zu records)", g_col.n);
    cr_assert_eq(h2d, 1u, "HtoD copy records of %zu bytes", N * sizeof(float));
    cr_assert_eq(d2h, 1u, "DtoH copy records of %zu bytes", N * sizeof(float));
    for (size_t i = 0; i < g_col.n; i++)
        if (g_col.recs[i].kind == VYRE_ACTIVITY_MEMCPY && g_col.recs[i].bytes == N * sizeof(float))
            cr_assert_eq(g_col.recs[i].stream_id, kernel_stream, "copies on the kernel's stream");

    vyre_counters after;
    vyre_counters_snapshot(&after);
    cr_assert_geq(after.v[VYRE_CTR_KERNEL_RECORDS] - before.v[VYRE_CTR_KERNEL_RECORDS], 3u);
    vyre_cupti_stats_get(&st);
    cr_assert_eq(st.running, 0);
    cr_assert_geq(st.kernels, 3u);
    cr_assert_eq(st.buffers_requested, st.buffers_completed, "every buffer came back");
    cr_assert_eq(st.corrupt_buffers, 0u);
    cr_log_info("CUPTI %u (%s): %llu records, %llu kernels, %llu copies, %llu overhead, "
                "%llu dropped, %llu buffers",
                st.cupti_version, st.library, (unsigned long long)st.records,
                (unsigned long long)st.kernels, (unsigned long long)st.memcpys,
                (unsigned long long)st.overheads, (unsigned long long)st.dropped,
                (unsigned long long)st.buffers_completed);
    cr_assert_eq(st.dropped, 0u, "no record dropped with 1 MiB buffers");
    gpu_close(&g);
}

Test(gpu_cupti, capture_restarts_and_sinks_stop_when_removed)
{
    need_gpu_and_cupti();
    gpu g;
    gpu_open(&g);
    cr_assert_eq(vyre_cupti_add_sink(collect, &g_col, NULL), 0);
    for (int round = 0; round < 3; round++) {
        start_ok(VYRE_CUPTI_KERNEL);
        cr_assert_eq(vyre_cupti_start(NULL, NULL), VYRE_EBUSY, "start while running");
        run_probe(&g, 2);
        stop_ok();
    }
    size_t seen = g_col.n;
    cr_assert_eq(vyre_cupti_remove_sink(collect, &g_col), 0);
    start_ok(VYRE_CUPTI_KERNEL);
    run_probe(&g, 2);
    stop_ok();
    cr_assert_eq(g_col.n, seen, "a removed sink got records");
    size_t kernels = 0;
    for (size_t i = 0; i < g_col.n; i++)
        kernels += g_col.recs[i].kind == VYRE_ACTIVITY_KERNEL;
    cr_assert_eq(kernels, 6u, "2 kernels in each of 3 captures; none outside them");
    gpu_close(&g);
}

/* CUDA 13 hands activity buffers back per thread: launches from several
 * threads complete buffers concurrently, and every record must arrive once. */
#define THREADS             4
#define LAUNCHES_PER_THREAD 200

typedef struct worker {
    gpu *g;
    CUstream stream;
    int failed;
} worker;

static void *launch_worker(void *arg)
{
    worker *w = arg;
    const vyre__cuda_fns *cu = w->g->cu;
    int n = N;
    void *args[] = {&w->g->d_x, &n};
    if (cu->cuCtxSetCurrent(w->g->ctx) != CUDA_SUCCESS) {
        w->failed = 1;
        return NULL;
    }
    for (int i = 0; i < LAUNCHES_PER_THREAD; i++)
        if (cu->cuLaunchKernel(w->g->fn, GRID_X, GRID_Y, 1, BLOCK_X, BLOCK_Y, 1, 0, w->stream, args,
                               NULL) != CUDA_SUCCESS)
            w->failed = 1;
    if (cu->cuStreamSynchronize(w->stream) != CUDA_SUCCESS)
        w->failed = 1;
    return NULL;
}

Test(gpu_cupti, launches_from_several_threads_all_arrive)
{
    need_gpu_and_cupti();
    gpu g;
    gpu_open(&g);
    cr_assert_eq(vyre_cupti_add_sink(collect, &g_col, NULL), 0);
    /* Small buffers: many completions, from several threads. */
    vyre_error e;
    vyre_error_clear(&e);
    vyre_cupti_config cfg = {.kinds = VYRE_CUPTI_KERNEL, .buffer_bytes = 64 * 1024};
    cr_assert_eq(vyre_cupti_start(&cfg, &e), 0, "%s", e.message);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].g = &g;
        w[i].failed = 0;
        CU_OK(g.cu->cuStreamCreate(&w[i].stream, CU_STREAM_NON_BLOCKING));
        cr_assert_eq(pthread_create(&t[i], NULL, launch_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failed, 0, "worker %d", i);
    }
    stop_ok();
    cr_assert_eq(vyre_cupti_remove_sink(collect, &g_col), 0);
    size_t kernels = 0;
    for (size_t i = 0; i < g_col.n; i++)
        kernels += g_col.recs[i].kind == VYRE_ACTIVITY_KERNEL &&
                   strcmp(g_col.recs[i].name, "vyre_cupti_probe") == 0;
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    cr_log_info("%zu kernel records in %zu sink calls, %llu buffers, %llu dropped", kernels,
                g_col.calls, (unsigned long long)st.buffers_completed,
                (unsigned long long)st.dropped);
    cr_assert_eq(kernels + st.dropped, (size_t)THREADS * LAUNCHES_PER_THREAD);
    cr_assert_eq(st.corrupt_buffers, 0u);
    cr_assert_eq(st.buffers_requested, st.buffers_completed);
    for (int i = 0; i < THREADS; i++)
        g.cu->cuStreamDestroy(w[i].stream);
    gpu_close(&g);
}

/* ---- the timings writer -------------------------------------------------------- */

Test(gpu_cupti, timings_writer_stores_captured_kernels)
{
    need_gpu_and_cupti();
    gpu g;
    gpu_open(&g);
    char path[700];
    snprintf(path, sizeof path, "%s/results.sqlite3", g_tmp);
    vyre_error e;
    vyre_error_clear(&e);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(path, &db, &e), 0, "%s", e.message);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cupti_add_sink(vyre_results_writer_sink, w, &e), 0, "%s", e.message);
    start_ok(VYRE_CUPTI_KERNEL | VYRE_CUPTI_MEMCPY);
    run_probe(&g, 5);
    stop_ok();
    cr_assert_eq(vyre_cupti_remove_sink(vyre_results_writer_sink, w), 0);
    cr_assert_eq(vyre_results_writer_flush(w, &e), 0, "%s", e.message);
    vyre_results_writer_stats ws;
    vyre_results_writer_stats_get(w, &ws);
    cr_assert_eq(ws.last_error, 0, "%s", ws.last_message);
    vyre_results_writer_free(w);
    vyre_results_close(db);

    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*), min(duration_ns) FROM timings WHERE kind = 'kernel' AND "
             "name = 'vyre_cupti_probe' AND grid_x = %d AND grid_y = %d AND block_x = %d AND "
             "block_y = %d AND pid = %d",
             GRID_X, GRID_Y, BLOCK_X, BLOCK_Y, (int)getpid());
    cr_assert_eq(sqlite3_prepare_v2(raw, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(raw));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_eq(sqlite3_column_int64(st, 0), 5, "kernel rows");
    cr_assert_gt(sqlite3_column_int64(st, 1), 0, "kernel durations");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(raw,
                                    "SELECT count(*) FROM timings WHERE kind = 'memcpy' AND "
                                    "bytes > 0 AND copy_kind IN ('htod', 'dtoh')",
                                    -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_geq(sqlite3_column_int64(st, 0), 2, "copy rows");
    sqlite3_finalize(st);
    sqlite3_close(raw);
    gpu_close(&g);
}

/* ---- another profiler ------------------------------------------------------------ */

static void CUPTIAPI other_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
    (void)u;
    (void)d;
    (void)id;
    (void)p;
}

Test(gpu_cupti, another_subscriber_makes_start_ecuptibusy)
{
    need_gpu_and_cupti();
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    /* The same CUPTI instance vyre loaded, used as "another profiler". */
    void *h = dlopen(st.library, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "'%s' is not loaded", st.library);
    __typeof__(&cuptiSubscribe) sub = (__typeof__(&cuptiSubscribe))dlsym(h, "cuptiSubscribe");
    __typeof__(&cuptiUnsubscribe) unsub =
        (__typeof__(&cuptiUnsubscribe))dlsym(h, "cuptiUnsubscribe");
    cr_assert(sub && unsub);
    CUpti_SubscriberHandle other;
    cr_assert_eq(sub(&other, other_cb, NULL), CUPTI_SUCCESS);

    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_start(NULL, &e), VYRE_ECUPTIBUSY, "%s", e.message);
    cr_assert(strstr(e.message, "another profiler (Nsight Systems?) holds CUPTI; capture is off, "
                                "NVTX ranges still work"),
              "%s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    vyre_cupti_stats_get(&st);
    cr_assert_eq(st.running, 0);
    /* NVTX-only fallback: ranges are still fine. */
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    vyre_nvtx_pop();

    cr_assert_eq(unsub(other), CUPTI_SUCCESS);
    start_ok(VYRE_CUPTI_KERNEL);
    stop_ok();
}

/* ---- NVTX routed to CUPTI --------------------------------------------------------- */

static const vyre_activity *find_range(const char *name, size_t from)
{
    for (size_t i = from; i < g_col.n; i++)
        if (g_col.recs[i].kind == VYRE_ACTIVITY_RANGE && strcmp(g_col.recs[i].name, name) == 0)
            return &g_col.recs[i];
    return NULL;
}

/* Runs the marker checks in this process (NVTX already routed). */
static void markers_here(void)
{
    gpu g;
    gpu_open(&g);
    cr_assert_eq(vyre_cupti_add_sink(collect, &g_col, NULL), 0);
    start_ok(VYRE_CUPTI_ALL);
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    cr_assert_eq(st.nvtx_routed, 1);
    cr_assert(st.kinds_enabled & VYRE_CUPTI_MARKER, "MARKER enabled with NVTX routed");

    vyre_nvtx_push(VYRE_RANGE_PIPELINE_COMPILE);
    vyre_nvtx_push(VYRE_RANGE_NVRTC_COMPILE);
    vyre_nvrtc_output out;
    memset(&out, 0, sizeof out);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(
        vyre_nvrtc_compile(PROBE_SRC, strlen(PROBE_SRC), NULL, g.info.arch, NULL, 0, 1, &out, &e),
        0, "%s", e.message);
    vyre_nvrtc_output_release(&out);
    vyre_nvtx_pop();
    vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
    vyre_nvtx_pop();
    vyre_nvtx_pop();
    vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, 4242);
    run_probe(&g, 1);
    vyre_nvtx_pop();
    stop_ok();
    cr_assert_eq(vyre_cupti_remove_sink(collect, &g_col), 0);

    const vyre_activity *outer = find_range("vyre.cuda.pipeline.compile", 0);
    const vyre_activity *inner = find_range("vyre.cuda.nvrtc.compile", 0);
    const vyre_activity *load = find_range("vyre.cuda.module_load", 0);
    const vyre_activity *point = find_range("vyre.bench.point", 0);
    for (size_t i = 0; i < g_col.n; i++)
        if (g_col.recs[i].kind == VYRE_ACTIVITY_RANGE || g_col.recs[i].kind == VYRE_ACTIVITY_MARKER)
            cr_log_info("%s '%s' domain '%s' %llu..%llu thread %llu",
                        vyre_activity_kind_name(g_col.recs[i].kind), g_col.recs[i].name,
                        g_col.recs[i].domain, (unsigned long long)g_col.recs[i].start_ns,
                        (unsigned long long)g_col.recs[i].end_ns,
                        (unsigned long long)g_col.recs[i].thread_id);
    cr_assert_not_null(outer, "no range 'vyre.cuda.pipeline.compile' in %zu records", g_col.n);
    cr_assert_not_null(inner, "no range 'vyre.cuda.nvrtc.compile'");
    cr_assert_not_null(load, "no range 'vyre.cuda.module_load'");
    cr_assert_not_null(point, "no range 'vyre.bench.point'");
    cr_assert_str_eq(outer->domain, VYRE_NVTX_DOMAIN);
    cr_assert_str_eq(inner->domain, VYRE_NVTX_DOMAIN);
    /* Nesting: the compile contains the NVRTC compile, then the load. */
    cr_assert_leq(outer->start_ns, inner->start_ns);
    cr_assert_lt(inner->start_ns, inner->end_ns);
    cr_assert_leq(inner->end_ns, load->start_ns, "siblings in order");
    cr_assert_leq(load->end_ns, outer->end_ns);
    cr_assert_eq(outer->thread_id, inner->thread_id, "same thread");
    cr_assert_gt(inner->end_ns - inner->start_ns, 1000u, "an NVRTC compile takes > 1 us");
    /* The payload rides along. */
    cr_assert_eq(point->has_payload, 1);
    cr_assert_eq(point->payload, 4242u);
    cr_assert_leq(outer->end_ns, point->start_ns);
    vyre_cupti_stats_get(&st);
    cr_assert_eq(st.unpaired_markers, 0u);
    gpu_close(&g);
}

Test(gpu_cupti, nvtx_ranges_arrive_as_markers_with_names_and_nesting)
{
    need_gpu_and_cupti();
    if (vyre__cupti_nvtx_routed()) {
        markers_here();
        return;
    }
    cr_assert_null(getenv(CHILD_VAR), "the re-executed test does not see NVTX routed to CUPTI");
    /* NVTX picks its tool at the first NVTX call of a process: run this
     * test again in a fresh process with NVTX routed to the CUPTI vyre
     * loaded. */
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(len, 0);
    exe[len] = '\0';
    char inj[600];
    snprintf(inj, sizeof inj, "NVTX_INJECTION64_PATH=%s", st.library);
    /* BXFI_MAP tells a Criterion binary it is a test worker: the fresh
     * process must start as a runner. */
    const char *env[] = {inj, CHILD_VAR "=1", "BXFI_MAP", NULL};
    static char filter[] =
        "--filter=gpu_cupti/nvtx_ranges_arrive_as_markers_with_names_and_nesting";
    static char verbose[] = "--verbose";
    char *argv[] = {exe, filter, verbose, NULL};
    tu_proc p;
    tu_run(&p, argv, env);
    cr_log_info("re-executed with %s:\n%s%s", inj, p.out, p.err);
    int passed = strstr(p.err, "Passing: 1") || strstr(p.out, "Passing: 1");
    int code = p.exit_code;
    tu_proc_free(&p);
    cr_assert_eq(code, 0, "the re-executed test failed (exit %d)", code);
    cr_assert(passed, "the re-executed test did not pass (skipped?)");
}
