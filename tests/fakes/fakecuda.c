/*
 * fakecuda.c - a tiny fake libcuda for the loader and CLI tests.
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
 *
 * Like the real driver, device queries before cuInit return
 * CUDA_ERROR_NOT_INITIALIZED, and an unknown error code makes
 * cuGetErrorName/cuGetErrorString fail with CUDA_ERROR_INVALID_VALUE.
 */
#include <cuda.h>
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
