/*
 * cuda.c - loading the CUDA driver at run time.
 *
 * Owns the loading of libcuda (through base/loader.c), the function table
 * resolved through cuGetProcAddress, cuInit, device enumeration and the
 * CUresult -> vyre error mapping. Guarantees: no symbol of libcuda is linked; a missing or broken
 * driver is an error with a hint (VYRE_ENODRIVER), never a crash; the loader
 * runs once per process and is thread-safe.
 */
#include "cuda/cuda_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "base/loader.h"
#include "cuda/jitcache_internal.h"
#include "vyre/jitcache.h"

#define LIBCUDA_DEFAULT "libcuda.so.1"
#define HINT_NODRIVER                                                                              \
    "install the NVIDIA driver (it provides libcuda.so.1), or set VYRE_CUDA_LIBRARY to its path"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_status;
static vyre_error g_error;
static vyre__cuda_fns g_fns;
static void *g_handle;

const vyre__cuda_fns *vyre__cuda(void)
{
    return g_status == 0 && g_handle ? &g_fns : NULL;
}

static int map_curesult(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS:
        return VYRE_OK;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
        return VYRE_ENODEV;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return VYRE_ENODRIVER;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return VYRE_ENOMEM;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return VYRE_EINVAL;
    case CUDA_ERROR_NOT_SUPPORTED:
        return VYRE_ENOTSUP;
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
        return VYRE_ECOMPILE;
    default:
        return VYRE_ECUDA;
    }
}

static const char *hint_for(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_NO_DEVICE:
        return "no GPU is visible to this process: check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return "the driver is older than the CUDA version vyre was built for: update the NVIDIA "
               "driver";
    case CUDA_ERROR_STUB_LIBRARY:
        return "a stub libcuda was loaded: put the real driver's libcuda.so.1 first in the "
               "library path";
    case CUDA_ERROR_OUT_OF_MEMORY:
        return "free GPU memory (see nvidia-smi) or use smaller buffers";
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        return "the PTX is newer than the driver: update the driver or compile for an older ISA";
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
        return "a cooperative grid must be resident at once: at most the SMs times the blocks "
               "one SM holds (fewer registers, warps or shared memory a block let it hold more)";
    default:
        return "see the CUDA driver API documentation for this error";
    }
}

int vyre__cuda_check(CUresult r, const char *call, vyre_error *err)
{
    if (r == CUDA_SUCCESS)
        return VYRE_OK;
    const char *name = NULL, *text = NULL;
    if (g_fns.cuGetErrorName)
        g_fns.cuGetErrorName(r, &name);
    if (g_fns.cuGetErrorString)
        g_fns.cuGetErrorString(r, &text);
    char fallback[32];
    if (!name) {
        snprintf(fallback, sizeof fallback, "CUresult %d", (int)r);
        name = fallback;
    }
    return vyre__fail(err, map_curesult(r), hint_for(r), "%s failed: %s (%s)", call, name,
                      text ? text : "no description from the driver");
}

static int load_symbols(get_proc_fn get_proc, vyre_error *err)
{
    CUdriverProcAddressQueryResult st;
    CUresult r;
#define VYRE__CUDA_REQ(name)                                                                       \
    st = CU_GET_PROC_ADDRESS_SUCCESS;                                                              \
    r = get_proc(#name, (void **)&g_fns.name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);     \
    if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || !g_fns.name)                     \
        return vyre__fail(err, VYRE_ENODRIVER,                                                     \
                          "update the NVIDIA driver to one that supports CUDA " VYRE__CUDA_MAJ,    \
                          "the CUDA driver has no '%s' for CUDA %d (it is too old for vyre)",      \
                          #name, CUDA_VERSION);
#define VYRE__CUDA_OPT(name)                                                                       \
    st = CU_GET_PROC_ADDRESS_SUCCESS;                                                              \
    r = get_proc(#name, (void **)&g_fns.name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);     \
    if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)                                    \
        g_fns.name = NULL;
#define VYRE__CUDA_STR2(x) #x
#define VYRE__CUDA_STR(x)  VYRE__CUDA_STR2(x)
#define VYRE__CUDA_MAJ     VYRE__CUDA_STR(CUDA_VERSION)
    VYRE_CUDA_FUNCS(VYRE__CUDA_REQ, VYRE__CUDA_OPT)
#undef VYRE__CUDA_REQ
#undef VYRE__CUDA_OPT
    return VYRE_OK;
}

static const char *const g_names[] = {LIBCUDA_DEFAULT, NULL};
static const vyre__lib_spec g_spec = {
    .fail = "no NVIDIA driver found",
    .env = "VYRE_CUDA_LIBRARY",
    .names = g_names,
    .missing_code = VYRE_ENODRIVER,
    .hint = HINT_NODRIVER,
    .empty_hint = "unset VYRE_CUDA_LIBRARY, or set it to the path of libcuda.so.1",
    .sym_tail = ": the driver is too old or not a CUDA driver",
    .sym_hint = "update the NVIDIA driver (vyre needs cuGetProcAddress_v2, CUDA 12+)",
};

/* Everything else is resolved through cuGetProcAddress, per CUDA version. */
typedef struct entry_fns {
    get_proc_fn cuGetProcAddress_v2;
} entry_fns;
static const vyre__lib_sym g_entry[] = {
    {"cuGetProcAddress_v2", offsetof(entry_fns, cuGetProcAddress_v2), 0},
};

static int do_init(vyre_error *err)
{
    void *h = NULL;
    char path[VYRE__LIB_PATH_MAX];
    int rc = vyre__lib_open(&g_spec, &h, path, sizeof path, err);
    if (rc)
        return rc;
    entry_fns entry = {NULL};
    rc = vyre__lib_resolve(&g_spec, h, path, g_entry, VYRE_ARRAY_SIZE(g_entry), &entry, err);
    if (rc) {
        dlclose(h);
        return rc;
    }
    get_proc_fn get_proc = entry.cuGetProcAddress_v2;
    rc = load_symbols(get_proc, err);
    if (rc) {
        memset(&g_fns, 0, sizeof g_fns);
        dlclose(h);
        return rc;
    }
    g_handle = h;
    /* The driver reads CUDA_CACHE_* in cuInit: configure them first. */
    rc = vyre_jitcache_setup(NULL, err);
    if (rc)
        return rc;
    rc = vyre__cuda_check(g_fns.cuInit(0), "cuInit", err);
    if (rc)
        return rc;
    return VYRE_OK;
}

static void init_once(void)
{
    vyre_error_clear(&g_error);
    g_status = do_init(&g_error);
}

int vyre_cuda_init(vyre_error *err)
{
    pthread_once(&g_once, init_once);
    if (g_status && err)
        *err = g_error;
    return g_status;
}

int vyre_cuda_driver_version(int *version, vyre_error *err)
{
    if (!version)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cuda_driver_version: NULL argument");
    int rc = vyre_cuda_init(err);
    if (rc)
        return rc;
    return vyre__cuda_check(g_fns.cuDriverGetVersion(version), "cuDriverGetVersion", err);
}

int vyre_cuda_device_count(int *count, vyre_error *err)
{
    if (!count)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cuda_device_count: NULL argument");
    *count = 0;
    int rc = vyre_cuda_init(err);
    if (rc)
        return rc;
    return vyre__cuda_check(g_fns.cuDeviceGetCount(count), "cuDeviceGetCount", err);
}

int vyre_cuda_arch_name(int cc_major, int cc_minor, char *buf, size_t size)
{
    if (!buf || cc_major < 1 || cc_major > 99 || cc_minor < 0 || cc_minor > 9)
        return VYRE_EINVAL;
    int n = snprintf(buf, size, "sm_%d%d", cc_major, cc_minor);
    return n < 0 || (size_t)n >= size ? VYRE_EINVAL : VYRE_OK;
}

static void format_uuid(const unsigned char b[16], char *out, size_t size)
{
    snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

int vyre_cuda_device_info(int ordinal, vyre_device_info *info, vyre_error *err)
{
    if (!info)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cuda_device_info: NULL argument");
    memset(info, 0, sizeof *info);
    int count = 0;
    int rc = vyre_cuda_device_count(&count, err);
    if (rc)
        return rc;
    if (ordinal < 0 || ordinal >= count)
        return vyre__remedy(err, VYRE_REMEDY_DEVICES,
                            vyre__fail(err, VYRE_ENODEV, NULL,
                                       "no CUDA device %d (this machine has %d)", ordinal, count));
    CUdevice dev;
    rc = vyre__cuda_check(g_fns.cuDeviceGet(&dev, ordinal), "cuDeviceGet", err);
    if (rc)
        return rc;
    info->ordinal = ordinal;
    rc = vyre__cuda_check(g_fns.cuDeviceGetName(info->name, (int)sizeof info->name, dev),
                          "cuDeviceGetName", err);
    if (rc)
        return rc;
    info->name[sizeof info->name - 1] = '\0';
    CUuuid uuid;
    rc = vyre__cuda_check(g_fns.cuDeviceGetUuid(&uuid, dev), "cuDeviceGetUuid", err);
    if (rc)
        return rc;
    format_uuid((const unsigned char *)uuid.bytes, info->uuid, sizeof info->uuid);
    size_t mem = 0;
    rc = vyre__cuda_check(g_fns.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem", err);
    if (rc)
        return rc;
    info->total_mem_bytes = mem;

    static const struct {
        CUdevice_attribute attr;
        size_t offset;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(vyre_device_info, cc_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(vyre_device_info, cc_minor)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(vyre_device_info, sm_count)},
        {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, offsetof(vyre_device_info, cooperative_launch)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         offsetof(vyre_device_info, max_threads_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
         offsetof(vyre_device_info, max_shared_mem_per_block)},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(vyre_device_info, l2_cache_bytes)},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
         offsetof(vyre_device_info, memory_bus_width_bits)},
        {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, offsetof(vyre_device_info, ecc_enabled)},
    };
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(attrs); i++) {
        int v = 0;
        rc = vyre__cuda_check(g_fns.cuDeviceGetAttribute(&v, attrs[i].attr, dev),
                              "cuDeviceGetAttribute", err);
        if (rc)
            return rc;
        memcpy((char *)info + attrs[i].offset, &v, sizeof v);
    }
    if (vyre_cuda_arch_name(info->cc_major, info->cc_minor, info->arch, sizeof info->arch))
        return vyre__fail(err, VYRE_ECUDA, "report this device to the vyre developers",
                          "device %d reports an impossible compute capability %d.%d", ordinal,
                          info->cc_major, info->cc_minor);
    if (g_fns.cuDeviceGetPCIBusId &&
        g_fns.cuDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, dev) !=
            CUDA_SUCCESS)
        info->pci_bus_id[0] = '\0';
    info->pci_bus_id[sizeof info->pci_bus_id - 1] = '\0';
    return vyre__cuda_check(g_fns.cuDriverGetVersion(&info->driver_version), "cuDriverGetVersion",
                            err);
}
