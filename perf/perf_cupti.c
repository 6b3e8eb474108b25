/*
 * perf_cupti.c - what CUPTI capture costs a launch, measured in one
 * process on the same kernel (GPU machine). Prints ratios; never pass/fail.
 *
 * Three ways to run the same launches, interleaved round by round:
 *   off    no CUPTI activity enabled
 *   bare   CUPTI concurrent-kernel activity with a no-op buffer callback
 *          (buffers handed back and freed unread): the floor any CUPTI
 *          client pays
 *   vyre   vyre_cupti_start(KERNEL) with a counting sink attached: records
 *          parsed, normalised and handed to the sink
 * and two launch paths:
 *   launch   cuLaunchKernel of a tiny kernel (1 block of 32 threads):
 *            enqueue = host time of a burst of launches (below the queue
 *            depth), e2e = launches + final synchronise, per launch
 *   graph    cuGraphLaunch of a graph of GRAPH_KERNELS captured launches,
 *            + synchronise, per kernel
 *
 * usage: perf_cupti [--quick]
 */
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfutil.h"
#include "vyre/cuda.h"
#include "vyre/cupti.h"
#include "vyre/nvrtc.h"

#define GRAPH_KERNELS 100

static const char NOOP_SRC[] = "extern \"C\" __global__ void vyre_bench_tiny(float *x)\n"
                               "{\n"
                               "    if (threadIdx.x == 0)\n"
                               "        x[blockIdx.x] += 1.0f;\n"
                               "}\n";

static void die(const char *what, const vyre_error *e)
{
    fprintf(stderr, "perf_cupti: %s%s%s\n", what, e ? ": " : "", e ? e->message : "");
    if (e && e->hint[0])
        fprintf(stderr, "hint: %s\n", e->hint);
    exit(2);
}

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "perf_cupti: %s failed: CUresult %d\n", #call, (int)r_);               \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the driver: this program's own table --------------------------------
 * The launches go through the same driver entry points vyre uses, resolved
 * the same way (cuGetProcAddress_v2 for the toolkit's CUDA_VERSION), from
 * the libcuda.so.1 vyre_cuda_init loaded. The types come from cuda.h, whose
 * versioned names (cuMemAlloc -> cuMemAlloc_v2) apply to the fields too. */
#define DRIVER_FNS(X)                                                                              \
    X(cuDeviceGet)                                                                                 \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuLaunchKernel)                                                                              \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphDestroy)                                                                              \
    X(cuGraphExecDestroy)

typedef struct driver_fns {
#define DRIVER_FIELD(name) __typeof__(&name) name;
    DRIVER_FNS(DRIVER_FIELD)
#undef DRIVER_FIELD
} driver_fns;

static driver_fns g_driver;

static void driver_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        die("the driver vyre loaded is not loaded", NULL);
    __typeof__(&cuGetProcAddress_v2) gp =
        (__typeof__(&cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    if (!gp)
        die("libcuda.so.1 has no cuGetProcAddress_v2", NULL);
    CUdriverProcAddressQueryResult st;
#define DRIVER_RESOLVE(name)                                                                       \
    if (gp(#name, (void **)&g_driver.name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=      \
            CUDA_SUCCESS ||                                                                        \
        st != CU_GET_PROC_ADDRESS_SUCCESS || !g_driver.name)                                       \
        die("the driver lacks " #name, NULL);
    DRIVER_FNS(DRIVER_RESOLVE)
#undef DRIVER_RESOLVE
}

/* ---- bare CUPTI: this program's own client ------------------------------- */

static struct {
    __typeof__(&cuptiActivityRegisterCallbacks) reg;
    __typeof__(&cuptiActivityEnable) enable;
    __typeof__(&cuptiActivityDisable) disable;
    __typeof__(&cuptiActivityFlushAll) flush;
} bare;
static atomic_ulong g_bare_buffers;

static void CUPTIAPI bare_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, VYRE_CUPTI_BUFFER_BYTES_DEFAULT);
    *size = *buf ? VYRE_CUPTI_BUFFER_BYTES_DEFAULT : 0;
    *max_records = 0;
}

static void CUPTIAPI bare_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                   size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    (void)valid;
    atomic_fetch_add(&g_bare_buffers, 1);
    free(buf);
}

static void bare_load(void)
{
    vyre_error e;
    if (vyre_cupti_load(&e))
        die("CUPTI", &e);
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    void *h = dlopen(st.library, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        die("the CUPTI vyre loaded is not loaded", NULL);
    bare.reg = (__typeof__(bare.reg))dlsym(h, "cuptiActivityRegisterCallbacks");
    bare.enable = (__typeof__(bare.enable))dlsym(h, "cuptiActivityEnable");
    bare.disable = (__typeof__(bare.disable))dlsym(h, "cuptiActivityDisable");
    bare.flush = (__typeof__(bare.flush))dlsym(h, "cuptiActivityFlushAll");
    if (!bare.reg || !bare.enable || !bare.disable || !bare.flush)
        die("CUPTI lacks the activity API", NULL);
}

/* ---- the three modes ----------------------------------------------------------- */

enum mode { OFF, BARE, VYRE, NMODES };
static atomic_ulong g_sink_records;

static void count_sink(const vyre_activity *recs, size_t n, void *ctx)
{
    (void)recs;
    (void)ctx;
    atomic_fetch_add(&g_sink_records, n);
}

static void mode_begin(enum mode m)
{
    vyre_error e;
    if (m == BARE) {
        if (bare.reg(bare_request, bare_complete) != CUPTI_SUCCESS ||
            bare.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
            die("bare CUPTI start failed", NULL);
    } else if (m == VYRE) {
        vyre_cupti_config cfg = {.kinds = VYRE_CUPTI_KERNEL};
        if (vyre_cupti_start(&cfg, &e))
            die("vyre_cupti_start", &e);
    }
}

static void mode_end(enum mode m)
{
    vyre_error e;
    if (m == BARE) {
        bare.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        bare.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    } else if (m == VYRE) {
        if (vyre_cupti_stop(&e))
            die("vyre_cupti_stop", &e);
    }
}

/* ---- the measurements ---------------------------------------------------------- */

typedef struct bench {
    const driver_fns *cu;
    CUfunction fn;
    CUstream stream;
    CUdeviceptr d_x;
    CUgraphExec graph;
} bench;

static void launch(bench *b)
{
    void *args[] = {&b->d_x};
    CU(b->cu->cuLaunchKernel(b->fn, 1, 1, 1, 32, 1, 1, 0, b->stream, args, NULL));
}

/* Host time per launch of a burst small enough not to block on the queue. */
static double enqueue_us(bench *b, int burst)
{
    double t0 = perf_now_s();
    for (int i = 0; i < burst; i++)
        launch(b);
    double t1 = perf_now_s();
    CU(b->cu->cuStreamSynchronize(b->stream));
    return (t1 - t0) * 1e6 / burst;
}

/* Launches + synchronise, per launch. */
static double e2e_us(bench *b, int n)
{
    double t0 = perf_now_s();
    for (int i = 0; i < n; i++)
        launch(b);
    CU(b->cu->cuStreamSynchronize(b->stream));
    return (perf_now_s() - t0) * 1e6 / n;
}

/* Graph replays + synchronise, per kernel. */
static double graph_us(bench *b, int replays)
{
    double t0 = perf_now_s();
    for (int i = 0; i < replays; i++)
        CU(b->cu->cuGraphLaunch(b->graph, b->stream));
    CU(b->cu->cuStreamSynchronize(b->stream));
    return (perf_now_s() - t0) * 1e6 / ((double)replays * GRAPH_KERNELS);
}

static void build_graph(bench *b)
{
    CUgraph g;
    CU(b->cu->cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < GRAPH_KERNELS; i++)
        launch(b);
    CU(b->cu->cuStreamEndCapture(b->stream, &g));
    CU(b->cu->cuGraphInstantiateWithFlags(&b->graph, g, 0));
    CU(b->cu->cuGraphDestroy(g));
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int rounds = quick ? 5 : 15, burst = 256, n_e2e = quick ? 2000 : 20000,
        replays = quick ? 20 : 200;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_cuda_init(&e))
        die("CUDA", &e);
    vyre_device_info info;
    if (vyre_cuda_device_info(0, &info, &e))
        die("device 0", &e);
    bare_load();
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    printf("perf_cupti: %s (%s), driver %d, CUPTI %u (%s)\n", info.name, info.arch,
           info.driver_version, st.cupti_version, st.library);
    printf("medians of %d interleaved rounds; ratios are against 'off' (no CUPTI) in the same "
           "run\n",
           rounds);

    driver_load();
    bench b;
    memset(&b, 0, sizeof b);
    b.cu = &g_driver;
    CUdevice dev;
    CUcontext ctx;
    CU(b.cu->cuDeviceGet(&dev, 0));
    CU(b.cu->cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(b.cu->cuCtxSetCurrent(ctx));
    vyre_nvrtc_output out;
    memset(&out, 0, sizeof out);
    if (vyre_nvrtc_compile(NOOP_SRC, strlen(NOOP_SRC), "perf_cupti.cu", info.arch, NULL, 0, 1, &out,
                           &e))
        die("NVRTC", &e);
    CUmodule mod;
    CU(b.cu->cuModuleLoadData(&mod, out.data));
    vyre_nvrtc_output_release(&out);
    CU(b.cu->cuModuleGetFunction(&b.fn, mod, "vyre_bench_tiny"));
    CU(b.cu->cuStreamCreate(&b.stream, CU_STREAM_NON_BLOCKING));
    CU(b.cu->cuMemAlloc(&b.d_x, 4096));
    build_graph(&b);
    if (vyre_cupti_add_sink(count_sink, NULL, &e))
        die("sink", &e);

    /* Warm up every path (module, CUPTI's first-enable work). */
    for (int m = 0; m < NMODES; m++) {
        mode_begin((enum mode)m);
        e2e_us(&b, 1000);
        graph_us(&b, 10);
        mode_end((enum mode)m);
    }

    double enq[NMODES][64], e2e[NMODES][64], gr[NMODES][64];
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < NMODES; m++) {
            mode_begin((enum mode)m);
            enq[m][r] = enqueue_us(&b, burst);
            e2e[m][r] = e2e_us(&b, n_e2e);
            gr[m][r] = graph_us(&b, replays);
            mode_end((enum mode)m);
        }
    }
    double med[3][NMODES];
    for (int m = 0; m < NMODES; m++) {
        med[0][m] = perf_median(enq[m], rounds);
        med[1][m] = perf_median(e2e[m], rounds);
        med[2][m] = perf_median(gr[m], rounds);
    }
    static const char *const what[3] = {"launch enqueue", "launch e2e", "graph e2e"};
    printf("\n%-16s %10s %10s %10s %10s %10s %10s\n", "us per kernel", "off", "bare", "vyre",
           "bare/off", "vyre/off", "vyre/bare");
    for (int w = 0; w < 3; w++)
        printf("%-16s %10.3f %10.3f %10.3f %9.2fx %9.2fx %9.2fx\n", what[w], med[w][OFF],
               med[w][BARE], med[w][VYRE], med[w][BARE] / med[w][OFF], med[w][VYRE] / med[w][OFF],
               med[w][VYRE] / med[w][BARE]);

    vyre_cupti_stats_get(&st);
    unsigned long expect = (unsigned long)rounds * ((unsigned long)burst + (unsigned long)n_e2e +
                                                    (unsigned long)replays * GRAPH_KERNELS) +
                           1000ul + 10ul * GRAPH_KERNELS;
    printf("\nvyre capture: %lu records to the sink (expected %lu kernels), %llu dropped, %llu "
           "buffers; bare: %lu buffers\n",
           (unsigned long)atomic_load(&g_sink_records), expect, (unsigned long long)st.dropped,
           (unsigned long long)st.buffers_completed, (unsigned long)atomic_load(&g_bare_buffers));
    vyre_cupti_remove_sink(count_sink, NULL);
    b.cu->cuGraphExecDestroy(b.graph);
    b.cu->cuMemFree(b.d_x);
    b.cu->cuStreamDestroy(b.stream);
    b.cu->cuModuleUnload(mod);
    b.cu->cuDevicePrimaryCtxRelease(dev);
    return 0;
}
