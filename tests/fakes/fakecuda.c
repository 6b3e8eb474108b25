/*
 * fakecuda.c - a small fake libcuda for the loader, pipeline and CLI tests.
 *
 * Built twice (tests/CMakeLists.txt): as `fakecuda`, which exports only
 * cuGetProcAddress_v2 as a CUDA 12+ driver does, and with
 * FAKECUDA_NO_GETPROC as `fakecuda_nogetproc`, which exports cuInit and
 * cuDriverGetVersion but no cuGetProcAddress_v2 (a driver too old for vyre).
 *
 * Behaviour is driven by environment variables, read at every call so a
 * test can set them just before vyre_cuda_init():
 *   FAKECUDA_INIT_RESULT=<n>      cuInit returns CUresult n (default 0)
 *   FAKECUDA_DEVICES=<n>          number of devices (default 1)
 *   FAKECUDA_DRIVER_VERSION=<n>   cuDriverGetVersion (default 13000)
 *   FAKECUDA_CC=<major>.<minor>   compute capability of every device
 *                                 (default: 9.0, 8.6, then 7.5)
 *   FAKECUDA_MISSING=a,b          cuGetProcAddress_v2 does not know a and b
 *   FAKECUDA_MISSING_STYLE=s      how a missing symbol is reported:
 *                                 "notfound" (default; CUDA_ERROR_NOT_FOUND,
 *                                 status SYMBOL_NOT_FOUND, NULL), "status"
 *                                 (CUDA_SUCCESS, status VERSION_NOT_SUFFICIENT,
 *                                 NULL) or "null" (CUDA_SUCCESS, status
 *                                 SUCCESS, NULL pointer) or "stale"
 *                                 (CUDA_SUCCESS, status VERSION_NOT_SUFFICIENT,
 *                                 but a non-NULL pointer: only the status
 *                                 says the entry point is unusable)
 *   FAKECUDA_FAIL=name=n,...      the named entry point returns CUresult n
 *   FAKECUDA_RECORD=<path>        each cuInit call appends the CUDA_CACHE_*
 *                                 variables it sees (the real driver reads
 *                                 them in cuInit), one NAME=value line each
 *   FAKECUDA_BLOCK_LOST=<n>       the first n blocking kernels (vyre-bench's
 *                                 vyre_block_stream) never see their release:
 *                                 they time out (see "the blocking kernel")
 *   FAKECUDA_CUPTI_RECORDS=1      each launch hands a kernel record (its
 *                                 virtual start and end) to the fake CUPTI
 *                                 that $VYRE_CUPTI_LIBRARY names, when the
 *                                 process has loaded it and enabled kernel
 *                                 activity, as the real CUPTI would
 *   FAKECUDA_CUPTI_SLOW_NS=<n>    each launch whose record the fake CUPTI
 *                                 takes runs n ns longer (record and events)
 *   FAKECUDA_EVENT_NS=<n>         each event recorded costs n ns of virtual
 *                                 GPU time after its stamp
 *   FAKECUDA_VIRTUAL_EVENTS=1     events stamp the virtual GPU time only,
 *                                 not the host's clock as well
 *   FAKECUDA_WRITE_MAX=<n>        copies (host to device, device to host,
 *                                 device to device), memsets and the 0xcd
 *                                 fill of new allocations write only their
 *                                 first n bytes; spans are still checked
 *                                 whole and logged at their full size. For
 *                                 tests that count operations and never read
 *                                 the bytes (the memcpy suite moves 256 MiB a
 *                                 copy in --quick; a cold pass flushes L2)
 *   FAKECUDA_OP_LOG=<path>        appends a line per stream operation, in
 *                                 the order issued: "memset <bytes>" (8- and
 *                                 32-bit memsets), "block" (vyre-bench's
 *                                 blocking kernel), "launch <name>", and
 *                                 "launch <name> cupti" when the fake CUPTI
 *                                 took the launch's kernel record (a launch
 *                                 of a CUPTI pass)
 *
 * vyre-bench's GPU reference kernel (vyre_reference_loop) runs as a no-op,
 * counted: "reference_launches", and "reference_held" those launched while
 * a blocking kernel held the stream.
 *
 * It also has the contexts, modules, memory, streams and graphs that
 * libcore's pipeline.c needs, on the CPU (see the section below), and the
 * events, device-to-device copies and 32-bit memsets the bench engine
 * needs (an event records the host's monotonic clock: the work before it
 * has run, every call here being synchronous).
 *
 * Like the real driver, device queries before cuInit return
 * CUDA_ERROR_NOT_INITIALIZED, and an unknown error code makes
 * cuGetErrorName/cuGetErrorString fail with CUDA_ERROR_INVALID_VALUE.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
/* Entry points; unused ones are fine in the FAKECUDA_NO_GETPROC build. */
#define FAKE_FN static __attribute__((unused))

static int g_inited;

/* Integer from the environment, or dflt when unset or not a number. */
static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return *end ? dflt : v;
}

/* Is `name` an item of the comma-separated list in $var? If the item has
 * the form name=value, *value gets the value's start. */
static int env_list_has(const char *var, const char *name, const char **value)
{
    const char *s = getenv(var);
    size_t n = strlen(name);
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len >= n && strncmp(s, name, n) == 0 && (len == n || s[n] == '=')) {
            if (value)
                *value = len == n ? NULL : s + n + 1;
            return 1;
        }
        s = end ? end + 1 : NULL;
    }
    return 0;
}

/* CUresult forced by FAKECUDA_FAIL for this entry point, or CUDA_SUCCESS. */
static CUresult forced(const char *name)
{
    const char *v = NULL;
    if (env_list_has("FAKECUDA_FAIL", name, &v) && v)
        return (CUresult)strtol(v, NULL, 10);
    return CUDA_SUCCESS;
}

/* Bytes of an n-byte copy, memset or fill that are really written
 * (FAKECUDA_WRITE_MAX). */
static size_t moved(size_t n)
{
    long cap = env_long("FAKECUDA_WRITE_MAX", -1);
    return cap >= 0 && (unsigned long)cap < n ? (size_t)cap : n;
}

static int device_count(void)
{
    long n = env_long("FAKECUDA_DEVICES", 1);
    return n < 0 ? 0 : (int)n;
}

static CUresult check_device(CUdevice dev)
{
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult code;
    const char *name;
    const char *text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "fake: no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "fake: invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "fake: out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "fake: initialization error"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "fake: CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "fake: no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "fake: invalid device ordinal"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "fake: a PTX JIT compilation failed"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "fake: named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "fake: operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "fake: system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "fake: device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "fake: invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "fake: no kernel image is available for execution on the device"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "fake: too many blocks in cooperative launch"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "fake: invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "fake: the operation is not permitted"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "fake: an illegal memory access was encountered"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "fake: operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "fake: operation failed due to a previous error during capture"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "fake: unknown error"},
};

FAKE_FN CUresult fake_cuGetErrorName(CUresult error, const char **pStr)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error) {
            *pStr = g_errors[i].name;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

FAKE_FN CUresult fake_cuGetErrorString(CUresult error, const char **pStr)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error) {
            *pStr = g_errors[i].text;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static void record_env(void)
{
    const char *path = getenv("FAKECUDA_RECORD");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "a"); /* one block of lines per cuInit call */
    if (!f)
        return;
    static const char *const vars[] = {"CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH",
                                       "CUDA_CACHE_MAXSIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        fprintf(f, "%s=%s\n", vars[i], v ? v : "(unset)");
    }
    fclose(f);
}

FAKE_FN CUresult fake_cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    record_env();
    CUresult r = (CUresult)env_long("FAKECUDA_INIT_RESULT", 0);
    if (r == CUDA_SUCCESS)
        g_inited = 1;
    return r;
}

FAKE_FN CUresult fake_cuDriverGetVersion(int *version)
{
    CUresult r = forced("cuDriverGetVersion");
    if (r)
        return r;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = (int)env_long("FAKECUDA_DRIVER_VERSION", 13000);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceGetCount(int *count)
{
    CUresult r = forced("cuDeviceGetCount");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = device_count();
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = forced("cuDeviceGet");
    if (r)
        return r;
    if ((r = check_device(ordinal)) != CUDA_SUCCESS)
        return r;
    *device = ordinal;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = forced("cuDeviceGetName");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev == 0)
        snprintf(name, (size_t)len, "NVIDIA Fake H100 80GB HBM3");
    else if (dev == 1)
        snprintf(name, (size_t)len, "NVIDIA Fake Accelerator With A Long Name");
    else
        snprintf(name, (size_t)len, "NVIDIA Fake GPU %d", (int)dev);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult r = forced("cuDeviceGetUuid");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    /* Device 0: 00 11 22 ... ff; device d: the same xor (d * 0x5a). */
    for (int k = 0; k < 16; k++)
        uuid->bytes[k] = (char)(unsigned char)((0x11 * k) ^ ((int)dev * 0x5a));
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUresult r = forced("cuDeviceTotalMem");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    if (dev == 0)
        *bytes = (size_t)85520809984ULL; /* 79.6 GiB, as an H100 80GB */
    else if (dev == 1)
        *bytes = (size_t)25769803776ULL; /* 24 GiB */
    else
        *bytes = (size_t)17179869184ULL; /* 16 GiB */
    return CUDA_SUCCESS;
}

static void device_cc(CUdevice dev, int *major, int *minor)
{
    const char *cc = getenv("FAKECUDA_CC");
    if (cc && sscanf(cc, "%d.%d", major, minor) == 2)
        return;
    *major = dev == 0 ? 9 : dev == 1 ? 8 : 7;
    *minor = dev == 0 ? 0 : dev == 1 ? 6 : 5;
}

FAKE_FN CUresult fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = forced("cuDeviceGetAttribute");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    int d = dev < 2 ? (int)dev : 2;
    int major, minor;
    device_cc(dev, &major, &minor);
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = major;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *pi = minor;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = (int[]){132, 84, 40}[d];
        break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        *pi = (int[]){1, 0, 1}[d];
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *pi = (int[]){232448, 101376, 65536}[d];
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        *pi = (int[]){52428800, 6291456, 4194304}[d];
        break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        *pi = (int[]){5120, 384, 256}[d];
        break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
        *pi = (int[]){1, 0, 1}[d];
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult r = forced("cuDeviceGetPCIBusId");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    int bus = dev == 0 ? 0x18 : dev == 1 ? 0x3b : 0x40 + (int)dev;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", bus);
    return CUDA_SUCCESS;
}

/* ---- contexts, modules, memory, streams, graphs ----------------------------
 *
 * Enough of a driver for libcore's pipeline.c: device memory is host
 * memory (a CUdeviceptr is its address), copies and memsets happen at once
 * (every stream is always idle), and a launch runs the kernel on the CPU.
 * New device memory is filled with 0xcd, as a GPU's is undefined, so a
 * missing zeroing shows.
 *
 * A fake cubin is the ELF magic followed by a NUL-terminated line
 * " fakecubin:<name>,<name>...[;ns=N]" naming its kernels; with ";ns=N"
 * every launch of its kernels takes N ns of the fake's virtual GPU time,
 * which events see (an event's time is the host's monotonic clock plus
 * all virtual time so far), so a test can make one kernel slower than
 * another by a known amount. FAKECUDA_LAUNCH_LOG=<path> appends a line per
 * launch: "block" for vyre-bench's blocking kernel, else "<name> <N>" ("unheld
 * <name> <N>" when no hold is pending). The blocking kernel's CUPTI record
 * spans its hold. An image without the
 * ELF magic is CUDA_ERROR_INVALID_IMAGE; an ELF image without that line is
 * CUDA_ERROR_NO_BINARY_FOR_GPU (a cubin for another GPU). Kernels the fake
 * can run (any other listed name loads and runs as a no-op):
 *   add_one(float *out, const float *in, unsigned n)  out[i] = in[i] + 1
 *   fill_u32(unsigned *out, unsigned value, unsigned n) out[i] = value
 *   noop()
 * for i below n and below the launch's thread count. A kernel touching
 * memory outside every live allocation fails the launch with
 * CUDA_ERROR_ILLEGAL_ADDRESS.
 *
 * Launches need a current context (CUDA_ERROR_INVALID_CONTEXT otherwise).
 * Launches on a stream under capture are recorded, parameters copied, and
 * run at each cuGraphLaunch of the instantiated graph; synchronising or
 * copying on a capturing stream is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
 *
 * fakecuda_count("name") (exported; dlopen() this same file to call it)
 * reads what happened: launches (kernels run, graph replays included),
 * graph_launches, module_loads, htod, dtoh, memsets, syncs, and what is
 * alive now: ctx_refs, modules, allocs, host_allocs, streams, graphs,
 * graph_execs. FAKECUDA_FAIL works for every entry point below.
 */

#include <pthread.h>
#include <stdint.h>

#define FAKE_MAX_DEVICES 8
#define FAKE_MAX_PARAMS  4
#define FAKE_MAX_ALLOCS  4096

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

struct CUctx_st {
    int device;
};
static struct CUctx_st g_ctxs[FAKE_MAX_DEVICES];
static unsigned g_ctx_refs[FAKE_MAX_DEVICES];
/* initial-exec: in static TLS. As dynamic TLS (this library is dlopen()ed)
 * LeakSanitizer's tracer died at exit of an ASan vyre-bench that ran a
 * sweep of two points or more ("Tracer caught signal 11", reading the main
 * thread's DTLS), which cut its stdout. */
static _Thread_local CUcontext t_current __attribute__((tls_model("initial-exec")));

typedef struct fake_kernel {
    const char *name;
    unsigned nparams;
    size_t sizes[FAKE_MAX_PARAMS];
} fake_kernel;

static const fake_kernel g_kernels[] = {
    {"add_one", 3, {sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(unsigned)}},
    {"fill_u32", 3, {sizeof(CUdeviceptr), sizeof(unsigned), sizeof(unsigned)}},
    {"noop", 0, {0}},
    /* vyre_block_stream(const volatile u32 *flag, u32 *timed_out, u64 timeout_ns) */
    {"vyre_block_stream", 3, {sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(uint64_t)}},
    /* vyre_reference_loop(u32 *out, u32 iters): vyre-bench's GPU reference */
    {"vyre_reference_loop", 2, {sizeof(CUdeviceptr), sizeof(unsigned)}},
};
static const fake_kernel g_unknown_kernel = {"(listed, not known to the fake)", 0, {0}};

struct CUfunc_st {
    struct CUmod_st *mod;
    const fake_kernel *k;
    char name[64];
};

#define FAKE_MAX_FUNCS 16
struct CUmod_st {
    unsigned magic; /* MOD_MAGIC while loaded */
    char names[512];
    struct CUfunc_st funcs[FAKE_MAX_FUNCS];
    unsigned nfuncs;
    uint64_t kernel_ns; /* ";ns=N" of a fake cubin: virtual time per launch */
};
static uint64_t g_virtual_ns; /* all kernel_ns of launches so far */
#define MOD_MAGIC 0x6d6f64u

/* One launch, its parameter values copied (a captured launch). */
typedef struct fake_launch {
    struct CUfunc_st *f;
    unsigned threads;
    unsigned char params[FAKE_MAX_PARAMS][8];
} fake_launch;

#define FAKE_MAX_CAPTURE 256
struct CUgraph_st {
    fake_launch launches[FAKE_MAX_CAPTURE];
    size_t n;
};
struct CUgraphExec_st {
    fake_launch launches[FAKE_MAX_CAPTURE];
    size_t n;
};

struct CUstream_st {
    unsigned magic; /* STREAM_MAGIC while alive */
    int capturing;
    int capture_broken;
    struct CUgraph_st *capture;
};
#define STREAM_MAGIC 0x737472u

static struct {
    uintptr_t base;
    size_t size;
    int host;
} g_allocs[FAKE_MAX_ALLOCS];

static long g_launches, g_graph_launches, g_module_loads, g_htod, g_dtoh, g_memsets, g_syncs;
static long g_block_launches, g_block_released, g_block_timeouts, g_block_early, g_block_events,
    g_block_stalls, g_reference_launches, g_reference_held;
static long g_modules, g_nallocs, g_host_allocs, g_streams, g_graphs, g_graph_execs;

FAKE_EXPORT long fakecuda_count(const char *what);
FAKE_EXPORT long fakecuda_count(const char *what)
{
    static const struct {
        const char *name;
        long *v;
    } k[] = {
        {"launches", &g_launches},
        {"graph_launches", &g_graph_launches},
        {"module_loads", &g_module_loads},
        {"htod", &g_htod},
        {"dtoh", &g_dtoh},
        {"memsets", &g_memsets},
        {"syncs", &g_syncs},
        {"modules", &g_modules},
        {"allocs", &g_nallocs},
        {"host_allocs", &g_host_allocs},
        {"streams", &g_streams},
        {"graphs", &g_graphs},
        {"graph_execs", &g_graph_execs},
        {"block_launches", &g_block_launches},
        {"block_released", &g_block_released},
        {"block_timeouts", &g_block_timeouts},
        {"block_early", &g_block_early},
        {"block_events", &g_block_events},
        {"block_stalls", &g_block_stalls},
        {"reference_launches", &g_reference_launches},
        {"reference_held", &g_reference_held},
    };
    long v = -1;
    pthread_mutex_lock(&g_mu);
    if (what && strcmp(what, "ctx_refs") == 0) {
        v = 0;
        for (int d = 0; d < FAKE_MAX_DEVICES; d++)
            v += g_ctx_refs[d];
    }
    for (size_t i = 0; what && i < sizeof k / sizeof k[0]; i++)
        if (strcmp(k[i].name, what) == 0)
            v = *k[i].v;
    pthread_mutex_unlock(&g_mu);
    return v;
}

FAKE_FN CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = forced("cuDevicePrimaryCtxRetain");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    if (!pctx || dev >= FAKE_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    g_ctxs[dev].device = (int)dev;
    g_ctx_refs[dev]++;
    pthread_mutex_unlock(&g_mu);
    *pctx = &g_ctxs[dev];
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult r = forced("cuDevicePrimaryCtxRelease");
    if (r)
        return r;
    if ((r = check_device(dev)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&g_mu);
    if (dev >= FAKE_MAX_DEVICES || g_ctx_refs[dev] == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        g_ctx_refs[dev]--;
    pthread_mutex_unlock(&g_mu);
    return r;
}

FAKE_FN CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
    CUresult r = forced("cuCtxSetCurrent");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx) {
        pthread_mutex_lock(&g_mu);
        int alive = ctx >= g_ctxs && ctx < g_ctxs + FAKE_MAX_DEVICES && g_ctx_refs[ctx - g_ctxs];
        pthread_mutex_unlock(&g_mu);
        if (!alive)
            return CUDA_ERROR_INVALID_CONTEXT;
    }
    t_current = ctx;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = t_current;
    return CUDA_SUCCESS;
}

/* Index of the live allocation holding [p, p + n), or -1. Under g_mu. */
static int find_alloc(uintptr_t p, size_t n, int host)
{
    for (int i = 0; i < FAKE_MAX_ALLOCS; i++)
        if (g_allocs[i].base && g_allocs[i].host == host && p >= g_allocs[i].base &&
            n <= g_allocs[i].size && p - g_allocs[i].base <= g_allocs[i].size - n)
            return i;
    return -1;
}

static int device_span_ok(CUdeviceptr p, size_t n)
{
    pthread_mutex_lock(&g_mu);
    int ok = find_alloc((uintptr_t)p, n, 0) >= 0;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

static CUresult alloc(void **out, size_t size, int host)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!t_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    void *p = malloc(size);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0xcd, moved(size));
    pthread_mutex_lock(&g_mu);
    int slot = -1;
    for (int i = 0; i < FAKE_MAX_ALLOCS && slot < 0; i++)
        if (!g_allocs[i].base)
            slot = i;
    if (slot >= 0) {
        g_allocs[slot].base = (uintptr_t)p;
        g_allocs[slot].size = size;
        g_allocs[slot].host = host;
        if (host)
            g_host_allocs++;
        else
            g_nallocs++;
    }
    pthread_mutex_unlock(&g_mu);
    if (slot < 0) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = p;
    return CUDA_SUCCESS;
}

static CUresult release(uintptr_t p, int host)
{
    pthread_mutex_lock(&g_mu);
    int i = find_alloc(p, 1, host);
    if (i >= 0 && g_allocs[i].base == p) {
        g_allocs[i].base = 0;
        if (host)
            g_host_allocs--;
        else
            g_nallocs--;
    } else {
        i = -1;
    }
    pthread_mutex_unlock(&g_mu);
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    free((void *)p);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult r = forced("cuMemAlloc");
    if (r)
        return r;
    void *p = NULL;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    r = alloc(&p, bytesize, 0);
    if (!r)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

FAKE_FN CUresult fake_cuMemFree(CUdeviceptr dptr)
{
    CUresult r = forced("cuMemFree");
    return r ? r : release((uintptr_t)dptr, 0);
}

FAKE_FN CUresult fake_cuMemAllocHost(void **pp, size_t bytesize)
{
    CUresult r = forced("cuMemAllocHost");
    return r ? r : alloc(pp, bytesize, 1);
}

FAKE_FN CUresult fake_cuMemFreeHost(void *p)
{
    CUresult r = forced("cuMemFreeHost");
    return r ? r : release((uintptr_t)p, 1);
}

FAKE_FN CUresult fake_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    CUresult r = forced("cuMemHostAlloc");
    if (r)
        return r;
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return alloc(pp, bytesize, 1);
}

/* Mapped host memory: the device sees it at the host's address (UVA). */
FAKE_FN CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    CUresult r = forced("cuMemHostGetDevicePointer");
    if (r)
        return r;
    if (!pdptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    int i = find_alloc((uintptr_t)p, 1, 1);
    pthread_mutex_unlock(&g_mu);
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static int is_host_alloc(const void *p, size_t n)
{
    pthread_mutex_lock(&g_mu);
    int ok = find_alloc((uintptr_t)p, n ? n : 1, 1) >= 0;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

/* ---- the blocking kernel ----------------------------------------------------
 *
 * vyre-bench holds a stream with vyre_block_stream, a kernel that spins on a
 * flag in mapped host memory until the host writes it (or until its timeout,
 * when it writes 1 to *timed_out). Every call here is synchronous, so the
 * fake keeps the hold pending from the launch to the next synchronisation
 * (cuEventSynchronize, cuStreamSynchronize) and decides then: released when
 * the flag is set (and FAKECUDA_BLOCK_LOST does not lose it), else timed out.
 * It checks the discipline as it goes: an event recorded while the flag is
 * already set (released before the sample was all queued: "block_early"), and
 * a pageable copy queued behind the hold, which a real driver would not
 * return from until the GPU moved it, i.e. after the timeout ("block_stalls":
 * it also times the hold out).
 */
static struct {
    int pending, lost, stalled;
    volatile uint32_t *flag;
    uint32_t *timed_out;
    fake_launch launch; /* for its CUPTI record, which spans the hold */
    uint64_t start_ns;  /* virtual ns at its launch */
} g_block;
static int cupti_record(const fake_launch *l, uint64_t start, uint64_t end);
static void log_memset(size_t bytes);

static CUresult block_launch(const fake_launch *l)
{
    CUdeviceptr flag, out;
    memcpy(&flag, l->params[0], sizeof flag);
    memcpy(&out, l->params[1], sizeof out);
    if (!is_host_alloc((void *)(uintptr_t)flag, 4) || !is_host_alloc((void *)(uintptr_t)out, 4))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    long nth = __atomic_fetch_add(&g_block_launches, 1, __ATOMIC_RELAXED);
    g_block.pending = 1;
    g_block.stalled = 0;
    g_block.lost = nth < env_long("FAKECUDA_BLOCK_LOST", 0);
    g_block.flag = (volatile uint32_t *)(uintptr_t)flag;
    g_block.timed_out = (uint32_t *)(uintptr_t)out;
    g_block.launch = *l;
    g_block.start_ns = __atomic_load_n(&g_virtual_ns, __ATOMIC_SEQ_CST);
    return CUDA_SUCCESS;
}

static void block_on_event(void)
{
    if (!g_block.pending)
        return;
    __atomic_add_fetch(&g_block_events, 1, __ATOMIC_RELAXED);
    if (*g_block.flag)
        __atomic_add_fetch(&g_block_early, 1, __ATOMIC_RELAXED);
}

static void block_on_pageable_copy(void)
{
    if (!g_block.pending)
        return;
    g_block.stalled = 1;
    __atomic_add_fetch(&g_block_stalls, 1, __ATOMIC_RELAXED);
}

static void block_resolve(void)
{
    if (!g_block.pending)
        return;
    g_block.pending = 0;
    /* A real hold spins until the host releases it, so its kernel record
     * spans everything queued behind it, and 1 us more. */
    cupti_record(&g_block.launch, g_block.start_ns,
                 __atomic_load_n(&g_virtual_ns, __ATOMIC_SEQ_CST) + 1000);
    if (g_block.lost || g_block.stalled || !*g_block.flag) {
        *g_block.timed_out = 1;
        __atomic_add_fetch(&g_block_timeouts, 1, __ATOMIC_RELAXED);
    } else {
        __atomic_add_fetch(&g_block_released, 1, __ATOMIC_RELAXED);
    }
}

/* CUDA_SUCCESS when work may be queued on stream s now (it is alive and not
 * capturing). */
static CUresult stream_usable(CUstream s)
{
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (s && s->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s && s->capturing) {
        s->capture_broken = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    CUresult r = forced("cuMemcpyHtoDAsync");
    if (r || (r = stream_usable(s)))
        return r;
    if (!src || !device_span_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    if (!is_host_alloc(src, n))
        block_on_pageable_copy();
    memcpy((void *)(uintptr_t)dst, src, moved(n));
    __atomic_add_fetch(&g_htod, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult r = forced("cuMemcpyDtoHAsync");
    if (r || (r = stream_usable(s)))
        return r;
    if (!dst || !device_span_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    if (!is_host_alloc(dst, n))
        block_on_pageable_copy();
    memcpy(dst, (const void *)(uintptr_t)src, moved(n));
    __atomic_add_fetch(&g_dtoh, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
    return fake_cuMemcpyHtoDAsync(dst, src, n, NULL);
}

FAKE_FN CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
    return fake_cuMemcpyDtoHAsync(dst, src, n, NULL);
}

FAKE_FN CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s)
{
    CUresult r = forced("cuMemsetD8Async");
    if (r || (r = stream_usable(s)))
        return r;
    if (!device_span_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, uc, moved(n));
    __atomic_add_fetch(&g_memsets, 1, __ATOMIC_RELAXED);
    log_memset(n);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuStreamCreate(CUstream *ps, unsigned int flags)
{
    CUresult r = forced("cuStreamCreate");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ps || flags > CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    if (!t_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = STREAM_MAGIC;
    __atomic_add_fetch(&g_streams, 1, __ATOMIC_RELAXED);
    *ps = s;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuStreamDestroy(CUstream s)
{
    CUresult r = forced("cuStreamDestroy");
    if (r)
        return r;
    if (!s || s->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    s->magic = 0;
    free(s->capture);
    free(s);
    __atomic_sub_fetch(&g_streams, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuStreamSynchronize(CUstream s)
{
    CUresult r = forced("cuStreamSynchronize");
    if (r || (r = stream_usable(s)))
        return r;
    block_resolve();
    __atomic_add_fetch(&g_syncs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
    CUresult r = forced("cuStreamBeginCapture");
    if (r)
        return r;
    (void)mode;
    if (!s)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream */
    if (s->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    s->capture = calloc(1, sizeof *s->capture);
    if (!s->capture)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->capturing = 1;
    s->capture_broken = 0;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuStreamEndCapture(CUstream s, CUgraph *pg)
{
    CUresult r = forced("cuStreamEndCapture");
    if (r)
        return r;
    if (!s || s->magic != STREAM_MAGIC || !pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    s->capturing = 0;
    struct CUgraph_st *g = s->capture;
    s->capture = NULL;
    if (s->capture_broken) {
        free(g);
        *pg = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    __atomic_add_fetch(&g_graphs, 1, __ATOMIC_RELAXED);
    *pg = g;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g,
                                                  unsigned long long flags)
{
    CUresult r = forced("cuGraphInstantiateWithFlags");
    if (r)
        return r;
    if (!pe || !g || flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(e->launches, g->launches, g->n * sizeof g->launches[0]);
    e->n = g->n;
    __atomic_add_fetch(&g_graph_execs, 1, __ATOMIC_RELAXED);
    *pe = e;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuGraphDestroy(CUgraph g)
{
    CUresult r = forced("cuGraphDestroy");
    if (r)
        return r;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    free(g);
    __atomic_sub_fetch(&g_graphs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuGraphExecDestroy(CUgraphExec e)
{
    CUresult r = forced("cuGraphExecDestroy");
    if (r)
        return r;
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    free(e);
    __atomic_sub_fetch(&g_graph_execs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

/* PTX text, as the driver JITs it: a module of its `.entry` names. */
static CUresult load_ptx(CUmodule *pm, const char *ptx)
{
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t len = 0;
    for (const char *e = strstr(ptx, ".entry "); e; e = strstr(e, ".entry ")) {
        e += 7;
        size_t n = strcspn(e, "( \t\n");
        if (!n || len + n + 2 > sizeof m->names) {
            free(m);
            return CUDA_ERROR_INVALID_PTX;
        }
        if (len)
            m->names[len++] = ',';
        memcpy(m->names + len, e, n);
        len += n;
    }
    m->magic = MOD_MAGIC;
    __atomic_add_fetch(&g_modules, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_module_loads, 1, __ATOMIC_RELAXED);
    *pm = m;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuModuleLoadData(CUmodule *pm, const void *image)
{
    CUresult r = forced("cuModuleLoadData");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pm || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (!t_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    const char *p = image;
    if (strstr(p, ".version ") && strstr(p, ".entry "))
        return load_ptx(pm, p);
    if (memcmp(p,
               "\x7f"
               "ELF",
               4) != 0)
        return CUDA_ERROR_INVALID_IMAGE;
    static const char tag[] = " fakecubin:";
    if (strncmp(p + 4, tag, sizeof tag - 1) != 0)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    const char *list = p + 4 + sizeof tag - 1;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t len = strnlen(list, sizeof m->names);
    if (len == sizeof m->names) {
        free(m);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    memcpy(m->names, list, len);
    char *opt = strchr(m->names, ';');
    if (opt) {
        *opt++ = '\0';
        if (strncmp(opt, "ns=", 3) == 0)
            m->kernel_ns = strtoull(opt + 3, NULL, 10);
    }
    m->magic = MOD_MAGIC;
    __atomic_add_fetch(&g_modules, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_module_loads, 1, __ATOMIC_RELAXED);
    *pm = m;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuModuleUnload(CUmodule m)
{
    CUresult r = forced("cuModuleUnload");
    if (r)
        return r;
    if (!m || m->magic != MOD_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    m->magic = 0;
    free(m);
    __atomic_sub_fetch(&g_modules, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name)
{
    CUresult r = forced("cuModuleGetFunction");
    if (r)
        return r;
    if (!pf || !name || !m || m->magic != MOD_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = strlen(name);
    const char *s = m->names;
    int listed = 0;
    while (*s && !listed) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        listed = len == n && strncmp(s, name, n) == 0;
        s = end ? end + 1 : s + len;
    }
    if (!listed)
        return CUDA_ERROR_NOT_FOUND;
    for (unsigned i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0) {
            *pf = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    if (m->nfuncs == FAKE_MAX_FUNCS || n >= sizeof m->funcs[0].name)
        return CUDA_ERROR_OUT_OF_MEMORY;
    const fake_kernel *k = &g_unknown_kernel;
    for (size_t i = 0; i < sizeof g_kernels / sizeof g_kernels[0]; i++)
        if (strcmp(g_kernels[i].name, name) == 0)
            k = &g_kernels[i];
    struct CUfunc_st *f = &m->funcs[m->nfuncs++];
    f->mod = m;
    f->k = k;
    memcpy(f->name, name, n + 1);
    *pf = f;
    return CUDA_SUCCESS;
}

/* FAKECUDA_OP_LOG: one line per stream operation (see the top). */
static void log_op(const char *what, const char *name, int cupti)
{
    const char *path = getenv("FAKECUDA_OP_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s%s%s%s\n", what, name ? " " : "", name ? name : "", cupti ? " cupti" : "");
    fclose(f);
}

static void log_memset(size_t bytes)
{
    char n[32];
    snprintf(n, sizeof n, "%zu", bytes);
    log_op("memset", n, 0);
}

static void log_launch(const fake_launch *l)
{
    const char *path = getenv("FAKECUDA_LAUNCH_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    if (strcmp(l->f->k->name, "vyre_block_stream") == 0)
        fprintf(f, "block\n");
    else
        fprintf(f, "%s%s %llu\n", g_block.pending ? "" : "unheld ", l->f->name,
                (unsigned long long)l->f->mod->kernel_ns);
    fclose(f);
}

/* FAKECUDA_CUPTI_RECORDS: the fake CUPTI's fakecupti_kernel, when the
 * process loaded it (RTLD_NOLOAD: never loads it itself). */
static int cupti_record(const fake_launch *l, uint64_t start, uint64_t end)
{
    static int (*rec)(const char *, uint64_t, uint64_t);
    static int looked;
    const char *on = getenv("FAKECUDA_CUPTI_RECORDS");
    if (!on || strcmp(on, "1") != 0)
        return 0;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        const char *lib = getenv("VYRE_CUPTI_LIBRARY");
        void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (h)
            *(void **)&rec = dlsym(h, "fakecupti_kernel");
        __atomic_store_n(&looked, h != NULL, __ATOMIC_RELEASE);
    }
    return rec ? rec(l->f->name, start, end) : 0;
}

/* Runs one launch on the CPU. */
static CUresult run_launch(const fake_launch *l)
{
    const fake_kernel *k = l->f->k;
    log_launch(l);
    if (strcmp(k->name, "vyre_block_stream") == 0) {
        log_op("block", NULL, 0);
        return block_launch(l); /* its record when the hold ends (block_resolve) */
    }
    uint64_t end = __atomic_add_fetch(&g_virtual_ns, l->f->mod->kernel_ns, __ATOMIC_SEQ_CST);
    /* FAKECUDA_CUPTI_SLOW_NS: a launch CUPTI records takes that much
     * longer, in its record and in the virtual time events see (the real
     * CUPTI instruments a concurrent kernel's code to stamp it). */
    uint64_t slow = (uint64_t)env_long("FAKECUDA_CUPTI_SLOW_NS", 0);
    int traced = cupti_record(l, end - l->f->mod->kernel_ns, end + slow);
    if (traced && slow)
        __atomic_add_fetch(&g_virtual_ns, slow, __ATOMIC_SEQ_CST);
    log_op("launch", l->f->name, traced);
    if (k->nparams == 0)
        return CUDA_SUCCESS;
    if (strcmp(k->name, "vyre_reference_loop") == 0) {
        __atomic_add_fetch(&g_reference_launches, 1, __ATOMIC_RELAXED);
        if (g_block.pending)
            __atomic_add_fetch(&g_reference_held, 1, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
    }
    CUdeviceptr out;
    unsigned n;
    memcpy(&out, l->params[0], sizeof out);
    memcpy(&n, l->params[2], sizeof n);
    size_t count = n < l->threads ? n : l->threads;
    if (strcmp(k->name, "add_one") == 0) {
        CUdeviceptr in;
        memcpy(&in, l->params[1], sizeof in);
        if (count && (!device_span_ok(out, count * sizeof(float)) ||
                      !device_span_ok(in, count * sizeof(float))))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        float *o = (float *)(uintptr_t)out;
        const float *x = (const float *)(uintptr_t)in;
        for (size_t i = 0; i < count; i++)
            o[i] = x[i] + 1.0f;
    } else if (strcmp(k->name, "fill_u32") == 0) {
        unsigned v;
        memcpy(&v, l->params[1], sizeof v);
        if (count && !device_span_ok(out, count * sizeof(unsigned)))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        unsigned *o = (unsigned *)(uintptr_t)out;
        for (size_t i = 0; i < count; i++)
            o[i] = v;
    }
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                     unsigned int gz, unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shared, CUstream s,
                                     void **params, void **extra)
{
    CUresult r = forced("cuLaunchKernel");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!t_current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!f || !f->mod || f->mod->magic != MOD_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s && s->magic != STREAM_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (extra || !gx || !gy || !gz || !bx || !by || !bz ||
        (unsigned long long)bx * by * bz > 1024 || shared > 48 * 1024)
        return CUDA_ERROR_INVALID_VALUE;
    fake_launch l;
    memset(&l, 0, sizeof l);
    l.f = f;
    unsigned long long threads = (unsigned long long)gx * gy * gz * bx * by * bz;
    l.threads = threads > UINT32_MAX ? UINT32_MAX : (unsigned)threads;
    if (f->k->nparams && !params)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < f->k->nparams; i++) {
        if (!params[i])
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(l.params[i], params[i], f->k->sizes[i]);
    }
    if (s && s->capturing) {
        if (s->capture->n == FAKE_MAX_CAPTURE)
            return CUDA_ERROR_OUT_OF_MEMORY;
        s->capture->launches[s->capture->n++] = l;
        return CUDA_SUCCESS;
    }
    r = run_launch(&l);
    if (!r)
        __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED);
    return r;
}

/* cuLaunchKernelEx: the attributes vyre sets are checked (a cooperative
 * grid, programmatic stream serialization; anything else is
 * CUDA_ERROR_INVALID_VALUE) and written to FAKECUDA_OP_LOG as
 * "launch_attrs NAME cooperative pdl"; a cooperative grid of more blocks
 * than FAKECUDA_COOPERATIVE_MAX (default: no limit) is
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. Then a launch as
 * cuLaunchKernel's. */
FAKE_FN CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                       void **extra)
{
    CUresult r = forced("cuLaunchKernelEx");
    if (r)
        return r;
    if (!c || (c->numAttrs && !c->attrs) || !f || !f->k)
        return CUDA_ERROR_INVALID_VALUE;
    char what[128];
    int used = snprintf(what, sizeof what, "%s", f->name);
    int coop = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        const char *name = NULL;
        if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative == 1) {
            name = "cooperative";
            coop = 1;
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
                   a->value.programmaticStreamSerializationAllowed == 1)
            name = "pdl";
        if (!name)
            return CUDA_ERROR_INVALID_VALUE;
        if (used >= 0 && (size_t)used < sizeof what)
            used += snprintf(what + used, sizeof what - (size_t)used, " %s", name);
    }
    long max = env_long("FAKECUDA_COOPERATIVE_MAX", 0);
    if (coop && max > 0 && (long long)c->gridDimX * c->gridDimY * c->gridDimZ > max)
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    log_op("launch_attrs", what, 0);
    return fake_cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                               c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra);
}

FAKE_FN CUresult fake_cuGraphLaunch(CUgraphExec e, CUstream s)
{
    CUresult r = forced("cuGraphLaunch");
    if (r || (r = stream_usable(s)))
        return r;
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < e->n; i++) {
        if (e->launches[i].f->mod->magic != MOD_MAGIC)
            return CUDA_ERROR_INVALID_HANDLE;
        if ((r = run_launch(&e->launches[i])) != CUDA_SUCCESS)
            return r;
        __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(&g_graph_launches, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

/* ---- events, D2D copies, 32-bit memsets (the bench engine) ---------------- */

#include <time.h>

struct CUevent_st {
    unsigned magic; /* EVENT_MAGIC while alive */
    int recorded;
    uint64_t ns; /* CLOCK_MONOTONIC when recorded */
};
#define EVENT_MAGIC 0x657674u

FAKE_FN CUresult fake_cuEventCreate(CUevent *e, unsigned int flags)
{
    (void)flags;
    CUresult r = forced("cuEventCreate");
    if (r)
        return r;
    if (!g_inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *ev = calloc(1, sizeof *ev);
    if (!ev)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ev->magic = EVENT_MAGIC;
    *e = ev;
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuEventDestroy(CUevent e)
{
    CUresult r = forced("cuEventDestroy");
    if (r)
        return r;
    if (!e || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    e->magic = 0;
    free(e);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuEventRecord(CUevent e, CUstream s)
{
    CUresult r = forced("cuEventRecord");
    if (r || (r = stream_usable(s)))
        return r;
    if (!e || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    block_on_event();
    /* FAKECUDA_VIRTUAL_EVENTS=1: the stamp is the virtual GPU time alone,
     * so that an event pair reads exactly the kernels and event costs
     * between them, whatever the host was doing (a test of what the bench
     * engine subtracts, which the host's scheduling made miss its bound
     * on a busy machine). Otherwise the host's clock as well. */
    struct timespec ts = {0, 0};
    if (env_long("FAKECUDA_VIRTUAL_EVENTS", 0) != 1)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    e->ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
            __atomic_load_n(&g_virtual_ns, __ATOMIC_SEQ_CST);
    e->recorded = 1;
    /* FAKECUDA_EVENT_NS: each event's own cost, in virtual GPU ns after its
     * stamp (a real GPU's event pair adds about 2 us around one launch). */
    long cost = env_long("FAKECUDA_EVENT_NS", 0);
    if (cost > 0)
        __atomic_add_fetch(&g_virtual_ns, (uint64_t)cost, __ATOMIC_SEQ_CST);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuEventSynchronize(CUevent e)
{
    CUresult r = forced("cuEventSynchronize");
    if (r)
        return r;
    if (!e || e->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    block_resolve();
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    CUresult r = forced("cuEventElapsedTime");
    if (r)
        return r;
    if (!ms || !a || !b || a->magic != EVENT_MAGIC || b->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((double)(int64_t)(b->ns - a->ns) / 1e6);
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult r = forced("cuMemcpyDtoDAsync");
    if (r || (r = stream_usable(s)))
        return r;
    if (!device_span_ok(dst, n) || !device_span_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, moved(n));
    return CUDA_SUCCESS;
}

FAKE_FN CUresult fake_cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    CUresult r = forced("cuMemsetD32Async");
    if (r || (r = stream_usable(s)))
        return r;
    if (n > SIZE_MAX / 4 || !device_span_ok(dst, n * 4))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int *p = (unsigned int *)(uintptr_t)dst;
    for (size_t i = 0, end = moved(n * 4) / 4; i < end; i++)
        p[i] = v;
    log_memset(n * 4);
    return CUDA_SUCCESS;
}

/* Each entry point has the prototype of the toolkit's cuda.h (through its
 * versioning macros), as libcore's table declares it. */
#define FAKE_SAME_TYPE(name)                                                                       \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fake_##name), __typeof__(&name)),      \
                   #name " has the toolkit's prototype");
FAKE_SAME_TYPE(cuDevicePrimaryCtxRetain)
FAKE_SAME_TYPE(cuDevicePrimaryCtxRelease)
FAKE_SAME_TYPE(cuCtxSetCurrent)
FAKE_SAME_TYPE(cuCtxGetCurrent)
FAKE_SAME_TYPE(cuMemAlloc)
FAKE_SAME_TYPE(cuMemFree)
FAKE_SAME_TYPE(cuMemAllocHost)
FAKE_SAME_TYPE(cuMemFreeHost)
FAKE_SAME_TYPE(cuMemHostAlloc)
FAKE_SAME_TYPE(cuMemHostGetDevicePointer)
FAKE_SAME_TYPE(cuMemcpyHtoDAsync)
FAKE_SAME_TYPE(cuMemcpyDtoHAsync)
FAKE_SAME_TYPE(cuMemcpyHtoD)
FAKE_SAME_TYPE(cuMemcpyDtoH)
FAKE_SAME_TYPE(cuMemsetD8Async)
FAKE_SAME_TYPE(cuStreamCreate)
FAKE_SAME_TYPE(cuStreamDestroy)
FAKE_SAME_TYPE(cuStreamSynchronize)
FAKE_SAME_TYPE(cuStreamBeginCapture)
FAKE_SAME_TYPE(cuStreamEndCapture)
FAKE_SAME_TYPE(cuGraphInstantiateWithFlags)
FAKE_SAME_TYPE(cuGraphLaunch)
FAKE_SAME_TYPE(cuGraphDestroy)
FAKE_SAME_TYPE(cuGraphExecDestroy)
FAKE_SAME_TYPE(cuModuleLoadData)
FAKE_SAME_TYPE(cuModuleUnload)
FAKE_SAME_TYPE(cuModuleGetFunction)
FAKE_SAME_TYPE(cuLaunchKernel)
FAKE_SAME_TYPE(cuLaunchKernelEx)
FAKE_SAME_TYPE(cuEventCreate)
FAKE_SAME_TYPE(cuEventDestroy)
FAKE_SAME_TYPE(cuEventRecord)
FAKE_SAME_TYPE(cuEventSynchronize)
FAKE_SAME_TYPE(cuEventElapsedTime)
FAKE_SAME_TYPE(cuMemcpyDtoDAsync)
FAKE_SAME_TYPE(cuMemsetD32Async)

#ifndef FAKECUDA_NO_GETPROC

static const struct {
    const char *name;
    void *fn;
} g_symbols[] = {
    {"cuInit", (void *)fake_cuInit},
    {"cuDriverGetVersion", (void *)fake_cuDriverGetVersion},
    {"cuGetErrorName", (void *)fake_cuGetErrorName},
    {"cuGetErrorString", (void *)fake_cuGetErrorString},
    {"cuDeviceGetCount", (void *)fake_cuDeviceGetCount},
    {"cuDeviceGet", (void *)fake_cuDeviceGet},
    {"cuDeviceGetName", (void *)fake_cuDeviceGetName},
    {"cuDeviceGetUuid", (void *)fake_cuDeviceGetUuid},
    {"cuDeviceGetAttribute", (void *)fake_cuDeviceGetAttribute},
    {"cuDeviceTotalMem", (void *)fake_cuDeviceTotalMem},
    {"cuDeviceGetPCIBusId", (void *)fake_cuDeviceGetPCIBusId},
    {"cuDevicePrimaryCtxRetain", (void *)fake_cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", (void *)fake_cuDevicePrimaryCtxRelease},
    {"cuCtxSetCurrent", (void *)fake_cuCtxSetCurrent},
    {"cuCtxGetCurrent", (void *)fake_cuCtxGetCurrent},
    {"cuMemAlloc", (void *)fake_cuMemAlloc},
    {"cuMemFree", (void *)fake_cuMemFree},
    {"cuMemAllocHost", (void *)fake_cuMemAllocHost},
    {"cuMemFreeHost", (void *)fake_cuMemFreeHost},
    {"cuMemHostAlloc", (void *)fake_cuMemHostAlloc},
    {"cuMemHostGetDevicePointer", (void *)fake_cuMemHostGetDevicePointer},
    {"cuMemcpyHtoD", (void *)fake_cuMemcpyHtoD},
    {"cuMemcpyDtoH", (void *)fake_cuMemcpyDtoH},
    {"cuMemcpyHtoDAsync", (void *)fake_cuMemcpyHtoDAsync},
    {"cuMemcpyDtoHAsync", (void *)fake_cuMemcpyDtoHAsync},
    {"cuMemsetD8Async", (void *)fake_cuMemsetD8Async},
    {"cuStreamCreate", (void *)fake_cuStreamCreate},
    {"cuStreamDestroy", (void *)fake_cuStreamDestroy},
    {"cuStreamSynchronize", (void *)fake_cuStreamSynchronize},
    {"cuStreamBeginCapture", (void *)fake_cuStreamBeginCapture},
    {"cuStreamEndCapture", (void *)fake_cuStreamEndCapture},
    {"cuGraphInstantiateWithFlags", (void *)fake_cuGraphInstantiateWithFlags},
    {"cuGraphLaunch", (void *)fake_cuGraphLaunch},
    {"cuGraphDestroy", (void *)fake_cuGraphDestroy},
    {"cuGraphExecDestroy", (void *)fake_cuGraphExecDestroy},
    {"cuModuleLoadData", (void *)fake_cuModuleLoadData},
    {"cuModuleUnload", (void *)fake_cuModuleUnload},
    {"cuModuleGetFunction", (void *)fake_cuModuleGetFunction},
    {"cuLaunchKernel", (void *)fake_cuLaunchKernel},
    {"cuLaunchKernelEx", (void *)fake_cuLaunchKernelEx},
    {"cuEventCreate", (void *)fake_cuEventCreate},
    {"cuEventDestroy", (void *)fake_cuEventDestroy},
    {"cuEventRecord", (void *)fake_cuEventRecord},
    {"cuEventSynchronize", (void *)fake_cuEventSynchronize},
    {"cuEventElapsedTime", (void *)fake_cuEventElapsedTime},
    {"cuMemcpyDtoDAsync", (void *)fake_cuMemcpyDtoDAsync},
    {"cuMemsetD32Async", (void *)fake_cuMemsetD32Async},
};

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)flags;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (cudaVersion < 12000)
        return CUDA_ERROR_NOT_FOUND;
    void *fn = NULL;
    for (size_t i = 0; i < sizeof g_symbols / sizeof g_symbols[0]; i++)
        if (strcmp(g_symbols[i].name, symbol) == 0)
            fn = g_symbols[i].fn;
    if (fn && env_list_has("FAKECUDA_MISSING", symbol, NULL)) {
        const char *style = getenv("FAKECUDA_MISSING_STYLE");
        if (style && strcmp(style, "status") == 0) {
            if (symbolStatus)
                *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_SUCCESS;
        }
        if (style && strcmp(style, "stale") == 0) {
            *pfn = fn;
            if (symbolStatus)
                *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_SUCCESS;
        }
        if (style && strcmp(style, "null") == 0) {
            if (symbolStatus)
                *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
        fn = NULL;
    }
    if (!fn)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = fn;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

#else /* FAKECUDA_NO_GETPROC: an old-style driver exporting plain symbols */

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    return fake_cuInit(flags);
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *version)
{
    return fake_cuDriverGetVersion(version);
}

#endif
