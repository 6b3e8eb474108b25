/*
 * inject.c - libvyre-inject.so: makes any CUDA program visible in vyre-top.
 *
 * The CUDA driver loads the library named by $CUDA_INJECTION64_PATH into
 * every process that calls cuInit and calls its InitializeInjection(), the
 * door Nsight Systems uses. This one subscribes to CUPTI and publishes the
 * process's telemetry page (vyre/telemetry.h) for an unmodified program:
 *
 *   VYRE_INJECT=counters  (default) CUPTI callbacks on the driver's launch,
 *                         graph launch, copy and synchronise calls: launches,
 *                         copies, bytes by direction, syncs. A few relaxed
 *                         atomic adds per call. The runtime's calls reach the
 *                         driver domain too (measured on an H200 with PyTorch:
 *                         2022 launches counted = 2022 kernel records), so the
 *                         runtime domain is not subscribed: that halves the
 *                         callbacks per launch (a launch-bound training step
 *                         ran 1.116x with both domains, 0.999x driver only).
 *   VYRE_INJECT=kernels   counters, plus concurrent-kernel activity: every
 *                         kernel's name, grid and duration into the ring.
 *                         CUPTI timestamps each kernel: costs more.
 *   VYRE_INJECT=full      kernels, plus NVTX ranges when NVTX is routed to
 *                         CUPTI (NVTX_INJECTION64_PATH=<libcupti.so>); ranges
 *                         named as in vyre's catalog fill its histograms.
 *   VYRE_INJECT=off       nothing at all, not even the start line.
 *
 * The host program is not ours, so (each point has a test in
 * tests/cli/test_inject.c or a reason here):
 *   - InitializeInjection always returns success and prints exactly one line
 *     to stderr (or none with off): the page it publishes to, or why it does
 *     not publish (CUPTI missing, CUPTI already held by another profiler,
 *     telemetry directory unusable, bad VYRE_INJECT). Nothing else is ever
 *     printed, nothing exits or aborts, and no environment variable is set
 *     (which is why this file does not use vyre_cupti_start: it calls
 *     vyre_cuda_init, which calls cuInit again from inside cuInit and sets the
 *     driver's JIT-cache variables).
 *   - No constructor does work; everything happens in InitializeInjection.
 *     The one constructor only says that LD_PRELOAD does nothing (it reads
 *     two environment variables and prints at most one line).
 *   - One background thread, with every signal blocked so the host's signal
 *     handling is unchanged, publishes every PUBLISH_MS and flushes CUPTI's
 *     activity buffers; the API callbacks themselves only add to counters.
 *     At exit it is stopped (bounded wait) before the driver tears down.
 *   - A forked child gets nothing: it neither counts nor publishes nor
 *     touches the parent's page (the telemetry module makes the inherited
 *     handle inert; g_forked stops the rest). Children that exec and use
 *     CUDA are injected afresh by the driver and get their own page.
 *   - Built without sanitizers, libvyrecore linked in statically with hidden
 *     symbols: the only export is InitializeInjection (inject.map).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h> /* also the generated *_params structs */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cupti_internal.h" /* the record parser, the telemetry sink */
#include "vyre/counters.h"
#include "vyre/cupti.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

#define PUBLISH_MS     200
#define JOIN_WAIT_MS   1000
#define BUFFER_BYTES   (1u << 20)
#define LINE_MAX_BYTES 1536

/* The one entry point; CUDA calls it once from cuInit. Returns 1 (success)
 * whatever happens, so the program always runs. */
__attribute__((visibility("default"))) int InitializeInjection(void);

typedef enum inject_mode {
    MODE_OFF = 0,
    MODE_COUNTERS = 1,
    MODE_KERNELS = 2,
    MODE_FULL = 3,
} inject_mode;

/* ---- CUPTI entry points (resolved from the library vyre_cupti_load found) */

#define INJECT_CUPTI_FUNCS(X)                                                                      \
    X(cuptiGetResultString)                                                                        \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiEnableCallback)                                                                         \
    X(cuptiActivityEnable)                                                                         \
    X(cuptiActivityRegisterCallbacks)                                                              \
    X(cuptiActivityGetNextRecord)                                                                  \
    X(cuptiActivityGetNumDroppedRecords)                                                           \
    X(cuptiActivityFlushAll)

static struct {
#define INJECT_FIELD(name) __typeof__(&name) name;
    INJECT_CUPTI_FUNCS(INJECT_FIELD)
#undef INJECT_FIELD
} g_cupti;

typedef CUresult (*ptr_attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
static ptr_attr_fn g_ptr_attr; /* cuPointerGetAttribute, for unified copies */

/* ---- state -------------------------------------------------------------- */

static atomic_flag g_init_done = ATOMIC_FLAG_INIT;
static atomic_int g_forked;   /* set in a forked child: do nothing there */
static vyre_telemetry *g_tel; /* the global page; set before callbacks run */
static int g_activity;        /* activity buffers registered (kernels/full) */
static CUpti_SubscriberHandle g_sub;

static pthread_mutex_t g_thread_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_thread_cv;
static int g_stop; /* under g_thread_mu */
static int g_thread_started;
static pthread_t g_thread;

/* Activity parsing (CUPTI may complete buffers from several threads). */
static pthread_mutex_t g_parse_mu = PTHREAD_MUTEX_INITIALIZER;
static vyre__cupti_parser *g_parser; /* set before activity is registered */
static vyre_activity g_rec;

static int forked(void)
{
    return atomic_load_explicit(&g_forked, memory_order_relaxed);
}

static void atfork_child(void)
{
    atomic_store_explicit(&g_forked, 1, memory_order_relaxed);
}

/* One line to stderr in one write(), so it is not interleaved with the
 * host's output; errors are ignored (the host may have closed fd 2). */
VYRE_PRINTF(1, 2) static void say(const char *fmt, ...)
{
    char line[LINE_MAX_BYTES];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

/* ---- counting (API callbacks) -------------------------------------------- */

static void count_copy(int dir, uint64_t bytes)
{
    switch (dir) {
    case cudaMemcpyHostToDevice:
        vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, bytes);
        break;
    case cudaMemcpyDeviceToHost:
        vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, bytes);
        break;
    case cudaMemcpyDeviceToDevice:
        vyre_counter_add(VYRE_CTR_D2D_BYTES, bytes);
        break;
    default: /* host to host: no traffic to the GPU */
        break;
    }
}

static int on_device(const void *p)
{
    unsigned type = 0;
    if (!g_ptr_attr || !p)
        return 0;
    if (g_ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) !=
        CUDA_SUCCESS)
        return 0; /* plain pageable host memory is unknown to the driver */
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY;
}

/* A copy whose direction the call leaves to unified addressing. */
static void count_unified(const void *dst, const void *src, uint64_t bytes)
{
    int d = on_device(dst), s = on_device(src);
    count_copy(s ? (d ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                 : (d ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost),
               bytes);
}

#define DR(name) CUPTI_DRIVER_TRACE_CBID_##name

static const void *dptr(CUdeviceptr p)
{
    return (const void *)(uintptr_t)p;
}

static void count_driver(CUpti_CallbackId cbid, const void *params)
{
    switch (cbid) {
    case DR(cuLaunchKernel):
    case DR(cuLaunchKernel_ptsz):
    case DR(cuLaunchKernelEx):
    case DR(cuLaunchKernelEx_ptsz):
    case DR(cuLaunchCooperativeKernel):
    case DR(cuLaunchCooperativeKernel_ptsz):
    case DR(cuLaunch):
    case DR(cuLaunchGrid):
    case DR(cuLaunchGridAsync):
        vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
        break;
    case DR(cuGraphLaunch):
    case DR(cuGraphLaunch_ptsz):
        vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 1);
        break;
    case DR(cuMemcpyHtoD_v2):
    case DR(cuMemcpyHtoD_v2_ptds):
        count_copy(cudaMemcpyHostToDevice, ((const cuMemcpyHtoD_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyHtoDAsync_v2):
    case DR(cuMemcpyHtoDAsync_v2_ptsz):
        count_copy(cudaMemcpyHostToDevice,
                   ((const cuMemcpyHtoDAsync_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyDtoH_v2):
    case DR(cuMemcpyDtoH_v2_ptds):
        count_copy(cudaMemcpyDeviceToHost, ((const cuMemcpyDtoH_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyDtoHAsync_v2):
    case DR(cuMemcpyDtoHAsync_v2_ptsz):
        count_copy(cudaMemcpyDeviceToHost,
                   ((const cuMemcpyDtoHAsync_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyDtoD_v2):
    case DR(cuMemcpyDtoD_v2_ptds):
        count_copy(cudaMemcpyDeviceToDevice, ((const cuMemcpyDtoD_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyDtoDAsync_v2):
    case DR(cuMemcpyDtoDAsync_v2_ptsz):
        count_copy(cudaMemcpyDeviceToDevice,
                   ((const cuMemcpyDtoDAsync_v2_params *)params)->ByteCount);
        break;
    case DR(cuMemcpy):
    case DR(cuMemcpy_ptds): {
        const cuMemcpy_params *p = params;
        count_unified(dptr(p->dst), dptr(p->src), p->ByteCount);
        break;
    }
    case DR(cuMemcpyAsync):
    case DR(cuMemcpyAsync_ptsz): {
        const cuMemcpyAsync_params *p = params;
        count_unified(dptr(p->dst), dptr(p->src), p->ByteCount);
        break;
    }
    case DR(cuMemcpyPeer):
    case DR(cuMemcpyPeer_ptds):
        count_copy(cudaMemcpyDeviceToDevice, ((const cuMemcpyPeer_params *)params)->ByteCount);
        break;
    case DR(cuMemcpyPeerAsync):
    case DR(cuMemcpyPeerAsync_ptsz):
        count_copy(cudaMemcpyDeviceToDevice, ((const cuMemcpyPeerAsync_params *)params)->ByteCount);
        break;
    case DR(cuCtxSynchronize):
    case DR(cuCtxSynchronize_v2):
    case DR(cuStreamSynchronize):
    case DR(cuStreamSynchronize_ptsz):
    case DR(cuEventSynchronize):
        vyre_counter_add(VYRE_CTR_SYNCS, 1);
        break;
    default:
        break;
    }
}

/* The calls counted above, enabled one by one so that CUPTI calls us for
 * nothing else. */

static const CUpti_CallbackId k_driver_cbids[] = {
    DR(cuLaunchKernel),
    DR(cuLaunchKernel_ptsz),
    DR(cuLaunchKernelEx),
    DR(cuLaunchKernelEx_ptsz),
    DR(cuLaunchCooperativeKernel),
    DR(cuLaunchCooperativeKernel_ptsz),
    DR(cuLaunch),
    DR(cuLaunchGrid),
    DR(cuLaunchGridAsync),
    DR(cuGraphLaunch),
    DR(cuGraphLaunch_ptsz),
    DR(cuMemcpyHtoD_v2),
    DR(cuMemcpyHtoD_v2_ptds),
    DR(cuMemcpyHtoDAsync_v2),
    DR(cuMemcpyHtoDAsync_v2_ptsz),
    DR(cuMemcpyDtoH_v2),
    DR(cuMemcpyDtoH_v2_ptds),
    DR(cuMemcpyDtoHAsync_v2),
    DR(cuMemcpyDtoHAsync_v2_ptsz),
    DR(cuMemcpyDtoD_v2),
    DR(cuMemcpyDtoD_v2_ptds),
    DR(cuMemcpyDtoDAsync_v2),
    DR(cuMemcpyDtoDAsync_v2_ptsz),
    DR(cuMemcpy),
    DR(cuMemcpy_ptds),
    DR(cuMemcpyAsync),
    DR(cuMemcpyAsync_ptsz),
    DR(cuMemcpyPeer),
    DR(cuMemcpyPeer_ptds),
    DR(cuMemcpyPeerAsync),
    DR(cuMemcpyPeerAsync_ptsz),
    DR(cuCtxSynchronize),
    DR(cuCtxSynchronize_v2),
    DR(cuStreamSynchronize),
    DR(cuStreamSynchronize_ptsz),
    DR(cuEventSynchronize),
};

/*
 * Runs on the host's threads, inside its CUDA calls: no locks, no
 * allocation, no output. Calls are counted on exit and only when they
 * succeeded. Only the driver domain is subscribed (see the file header).
 */
static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *cb = data;
    if (!cb || forked())
        return;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_EXIT)
        return;
    if (cb->functionReturnValue && *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS &&
        cb->functionParams)
        count_driver(cbid, cb->functionParams);
}

/* ---- activity (kernels, NVTX ranges) --------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0; /* CUPTI drops records and counts them */
    *max_records = 0;
}

/* A range from NVTX: vyre's catalog names fill the page's histograms. */
static void record_range(const vyre_activity *a)
{
    for (int id = 0; id < VYRE_RANGE_COUNT; id++) {
        const vyre_range_def *r = vyre_nvtx_range((vyre_range_id)id);
        if (r && strcmp(r->name, a->name) == 0) {
            vyre_range_record(r->id, a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0);
            return;
        }
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    /* In a forked child the lock may have been held by a thread that is
     * gone: leave the buffer (and a few bytes) be. */
    if (forked())
        return;
    pthread_mutex_lock(&g_parse_mu);
    CUpti_Activity *rec = NULL;
    uint64_t unpaired = 0;
    while (buffer && valid &&
           g_cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (!vyre__cupti_parser_feed(g_parser, rec, &g_rec, &unpaired))
            continue;
        if (g_rec.kind == VYRE_ACTIVITY_KERNEL) {
            vyre_counter_add(VYRE_CTR_KERNEL_RECORDS, 1);
            vyre__cupti_telemetry_sink(&g_rec, 1, g_tel);
        } else if (g_rec.kind == VYRE_ACTIVITY_RANGE) {
            record_range(&g_rec);
        }
    }
    size_t dropped = 0;
    if (g_cupti.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
        dropped)
        vyre_counter_add(VYRE_CTR_CUPTI_DROPPED, dropped);
    pthread_mutex_unlock(&g_parse_mu);
    free(buffer);
}

/* ---- the publisher thread ---------------------------------------------------- */

static void deadline_in(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *publisher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_thread_mu);
    while (!g_stop) {
        struct timespec until;
        deadline_in(&until, PUBLISH_MS);
        while (!g_stop && pthread_cond_timedwait(&g_thread_cv, &g_thread_mu, &until) != ETIMEDOUT)
            ;
        if (g_stop)
            break;
        pthread_mutex_unlock(&g_thread_mu);
        /* Completed buffers only: kernels still running stay for later. */
        if (g_activity)
            g_cupti.cuptiActivityFlushAll(0);
        vyre_telemetry_publish(g_tel);
        pthread_mutex_lock(&g_thread_mu);
    }
    pthread_mutex_unlock(&g_thread_mu);
    return NULL;
}

/* Stops the publisher before the driver and CUPTI tear down, waiting at
 * most JOIN_WAIT_MS: a thread stuck in CUPTI is left alone rather than the
 * exit held up. The page itself is unlinked by the telemetry module. */
static void at_exit(void)
{
    if (forked() || !g_thread_started)
        return;
    pthread_mutex_lock(&g_thread_mu);
    g_stop = 1;
    pthread_cond_signal(&g_thread_cv);
    pthread_mutex_unlock(&g_thread_mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += JOIN_WAIT_MS / 1000;
    if (pthread_timedjoin_np(g_thread, NULL, &until) == 0)
        g_thread_started = 0;
}

static int start_publisher(void)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&g_thread_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    /* The thread inherits a full signal mask: the host's signals keep going
     * to the host's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&g_thread, NULL, publisher, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    pthread_setname_np(g_thread, "vyre-inject");
    g_thread_started = 1;
    return 0;
}

/* ---- start ---------------------------------------------------------------- */

static int parse_mode(const char *v, inject_mode *mode)
{
    static const struct {
        const char *name;
        inject_mode mode;
    } k[] = {{"off", MODE_OFF},    {"0", MODE_OFF},           {"counters", MODE_COUNTERS},
             {"1", MODE_COUNTERS}, {"kernels", MODE_KERNELS}, {"full", MODE_FULL}};
    if (!v || !*v) {
        *mode = MODE_COUNTERS;
        return 0;
    }
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (strcmp(v, k[i].name) == 0) {
            *mode = k[i].mode;
            return 0;
        }
    }
    return -1;
}

static const char *cupti_text(CUptiResult r)
{
    const char *s = NULL;
    if (g_cupti.cuptiGetResultString)
        g_cupti.cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static int resolve_cupti(char *why, size_t size)
{
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_cupti_load(&err);
    if (rc) {
        snprintf(why, size, "%s (%s)", err.message, err.hint);
        return rc;
    }
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    /* The same file, already loaded: this only takes a reference. */
    void *h = dlopen(st.library, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, size, "cannot reopen '%s': %s", st.library, e ? e : "unknown reason");
        return VYRE_ENOCUPTI;
    }
#define INJECT_RESOLVE(name)                                                                       \
    *(void **)&g_cupti.name = dlsym(h, #name);                                                     \
    if (!g_cupti.name) {                                                                           \
        snprintf(why, size, "'%s' has no %s (CUPTI too old?)", st.library, #name);                 \
        return VYRE_ENOCUPTI;                                                                      \
    }
    INJECT_CUPTI_FUNCS(INJECT_RESOLVE)
#undef INJECT_RESOLVE
    return VYRE_OK;
}

static void enable_callbacks(CUpti_CallbackDomain domain, const CUpti_CallbackId *ids, size_t n)
{
    /* An id this CUPTI does not know is skipped: the others still count. */
    for (size_t i = 0; i < n; i++)
        g_cupti.cuptiEnableCallback(1, g_sub, domain, ids[i]);
}

/* Enables kernel (and, in full mode with NVTX routed, marker) activity.
 * On failure says why in note and leaves counters running. */
static void start_activity(inject_mode mode, char *note, size_t size)
{
    vyre_error e;
    if (vyre__cupti_parser_new(&g_parser, &e) != VYRE_OK) {
        snprintf(note, size, "counters; kernel capture failed: %.700s", e.message);
        return;
    }
    CUptiResult r = g_cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS)
        r = g_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        snprintf(note, size, "counters; kernel capture failed: %s", cupti_text(r));
        vyre__cupti_parser_free(g_parser);
        g_parser = NULL;
        return;
    }
    g_activity = 1;
    if (mode != MODE_FULL) {
        snprintf(note, size, "counters, kernels");
        return;
    }
    if (!vyre__cupti_nvtx_routed()) {
        vyre_cupti_stats st;
        vyre_cupti_stats_get(&st);
        snprintf(note, size, "counters, kernels; NVTX ranges need NVTX_INJECTION64_PATH=%s",
                 st.library);
        return;
    }
    r = g_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    if (r == CUPTI_SUCCESS)
        r = g_cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA);
    if (r != CUPTI_SUCCESS)
        snprintf(note, size, "counters, kernels; NVTX capture failed: %s", cupti_text(r));
    else
        snprintf(note, size, "counters, kernels, NVTX ranges");
}

/* 1 when the CUDA driver library is loaded in this process (not loading
 * it: the host is not ours). */
static int driver_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

static void start(void)
{
    /* A mode, not a path: plain getenv. Paths and libraries (the telemetry
     * directory, CUPTI) come through libcore's secure_getenv. */
    const char *env = getenv("VYRE_INJECT");
    inject_mode mode;
    if (parse_mode(env, &mode) != 0) {
        say("vyre-inject: not publishing: VYRE_INJECT '%s' is not one of off, counters, "
            "kernels, full",
            env);
        return;
    }
    if (mode == MODE_OFF)
        return;
    /* A program built on libvyrecore publishes its own page under the same
     * name; two writers would replace each other's. (A tool linking
     * libvyrecore statically cannot be seen from here.) */
    if (dlsym(RTLD_DEFAULT, "vyre_telemetry_global")) {
        say("vyre-inject: not publishing: this program links libvyrecore and publishes its own "
            "telemetry page");
        return;
    }

    char why[VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX + 16];
    if (resolve_cupti(why, sizeof why) != VYRE_OK) {
        say("vyre-inject: not publishing: %s", why);
        return;
    }
    CUptiResult r = g_cupti.cuptiSubscribe(&g_sub, on_api, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        say("vyre-inject: not publishing: CUPTI is already held by another profiler (Nsight "
            "Systems? torch.profiler?); the program runs untouched");
        return;
    }
    if (r != CUPTI_SUCCESS) {
        /* Without a driver CUPTI answers CUPTI_ERROR_UNKNOWN, which sends a
         * user looking at CUPTI. The driver calls InitializeInjection from
         * cuInit, so a process reaching here without libcuda.so.1 loaded
         * has no driver (or was not started by one). */
        if (!driver_loaded())
            say("vyre-inject: not publishing: no NVIDIA driver in this process (libcuda.so.1 is "
                "not loaded; cuptiSubscribe: %s); check the driver with nvidia-smi",
                cupti_text(r));
        else
            say("vyre-inject: not publishing: cuptiSubscribe failed: %s", cupti_text(r));
        return;
    }

    char page[VYRE_TELEMETRY_PATH_MAX + 32];
    vyre_error err;
    vyre_error_clear(&err);
    g_tel = vyre_telemetry_global(&err);
    if (!g_tel || vyre_telemetry_dir(page, VYRE_TELEMETRY_PATH_MAX, &err) != VYRE_OK) {
        if (!err.code)
            snprintf(err.message, sizeof err.message, "VYRE_TELEMETRY=0");
        say("vyre-inject: not publishing: %s%s%s%s", err.message, err.hint[0] ? " (" : "", err.hint,
            err.hint[0] ? ")" : "");
        g_tel = NULL;
        g_cupti.cuptiUnsubscribe(g_sub);
        return;
    }
    size_t len = strlen(page);
    snprintf(page + len, sizeof page - len, "/%d.vtel", (int)getpid());

    pthread_atfork(NULL, NULL, atfork_child);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (cuda)
        *(void **)&g_ptr_attr = dlsym(cuda, "cuPointerGetAttribute");
    enable_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, k_driver_cbids,
                     sizeof k_driver_cbids / sizeof k_driver_cbids[0]);

    char note[VYRE_ERROR_MESSAGE_MAX];
    if (mode == MODE_COUNTERS)
        snprintf(note, sizeof note, "counters; VYRE_INJECT=kernels adds kernel names");
    else
        start_activity(mode, note, sizeof note);
    vyre_telemetry_publish(g_tel);
    if (start_publisher() == 0)
        atexit(at_exit);
    else
        snprintf(note + strlen(note), sizeof note - strlen(note),
                 "; no publisher thread, the page shows the start only");
    say("vyre-inject: publishing to %s (%s)", page, note);
}

/* 1 when the colon- or space-separated list names this library's file
 * (by path, or by base name as ld.so searches it). */
static int list_names(const char *list, const char *self)
{
    const char *base = strrchr(self, '/');
    base = base ? base + 1 : self;
    size_t nb = strlen(base), ns = strlen(self);
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ": ");
        if (n &&
            ((n == ns && strncmp(p, self, n) == 0) ||
             (n >= nb && strncmp(p + n - nb, base, nb) == 0 && (n == nb || p[n - nb - 1] == '/'))))
            return 1;
        p += n;
        p += strspn(p, ": ");
    }
    return 0;
}

/* LD_PRELOAD=libvyre-inject.so loads this library, but the driver calls
 * InitializeInjection only for the library $CUDA_INJECTION64_PATH names, so
 * nothing is published and nothing said why. This constructor does only
 * that check (no other work: see the top of the file) and says it once per
 * process; with VYRE_INJECT=off it is silent, as the rest is. */
__attribute__((constructor)) static void preload_check(void)
{
    Dl_info info;
    if (!dladdr((void *)&preload_check, &info) || !info.dli_fname)
        return;
    const char *mode = getenv("VYRE_INJECT");
    if (mode && strcmp(mode, "off") == 0)
        return;
    if (!list_names(getenv("LD_PRELOAD"), info.dli_fname))
        return;
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (inj && *inj && list_names(inj, info.dli_fname))
        return;
    say("vyre-inject: LD_PRELOAD loads this library but does nothing: the CUDA driver loads "
        "injections from CUDA_INJECTION64_PATH; run CUDA_INJECTION64_PATH=%s PROGRAM instead",
        info.dli_fname);
}

int InitializeInjection(void)
{
    /* The driver calls this once; a second call (a test, a confused host)
     * changes nothing. Errors never reach the driver: the program runs. */
    if (!atomic_flag_test_and_set(&g_init_done)) {
        int saved = errno;
        start();
        errno = saved;
    }
    return 1;
}
