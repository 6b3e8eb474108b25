/*
 * test_gpu_cuda.c - the CUDA loader against the real driver (GPU machine).
 *
 * Skips, with the reason, when libcuda.so.1 cannot be loaded. Otherwise it
 * checks vyre's view of every device against what the driver says when
 * asked directly: this test dlopen()s libcuda.so.1 itself and resolves the
 * same entry points through cuGetProcAddress_v2.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "testutil.h"
#include "vyre/cuda.h"
#include "vyre/jitcache.h"

#if defined(__SANITIZE_ADDRESS__)
/* The driver maps memory where ASan's shadow gap is protected by default,
 * and cuInit then fails with CUDA_ERROR_OUT_OF_MEMORY: let it. (Only this
 * binary; ASAN_OPTIONS in the environment still takes precedence.) Default
 * visibility: the ASan runtime looks the hook up dynamically. */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}
#endif

static const char *const g_vars[] = {"VYRE_CUDA_LIBRARY", "HOME",
                                     "XDG_CACHE_HOME",    "CUDA_CACHE_DISABLE",
                                     "CUDA_CACHE_PATH",   "CUDA_CACHE_MAXSIZE"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_xdg[600];

static void gpu_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg", g_tmp);
    setenv("HOME", g_tmp, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
}

static void gpu_teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(gpu_cuda, .init = gpu_setup, .fini = gpu_teardown);

/* The driver, resolved by this test on its own. */
typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
static struct {
    __typeof__(&cuInit) init;
    __typeof__(&cuDriverGetVersion) driver_version;
    __typeof__(&cuDeviceGetCount) count;
    __typeof__(&cuDeviceGet) get;
    __typeof__(&cuDeviceGetName) name;
    __typeof__(&cuDeviceGetUuid) uuid;
    __typeof__(&cuDeviceTotalMem) total_mem;
    __typeof__(&cuDeviceGetAttribute) attr;
    __typeof__(&cuDeviceGetPCIBusId) pci;
} drv;

static void *resolve(get_proc_fn gp, const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = gp(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    cr_assert(r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && fn,
              "the driver has no %s (CUresult %d, status %d)", name, (int)r, (int)st);
    return fn;
}

/* Skips the test when there is no driver; else loads it for direct calls. */
static void need_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        cr_skip_test("no NVIDIA driver on this machine: cannot dlopen libcuda.so.1 (%s)",
                     why ? why : "unknown reason");
    }
    get_proc_fn gp = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
    cr_assert_not_null(gp, "libcuda.so.1 has no cuGetProcAddress_v2");
    drv.init = (__typeof__(drv.init))resolve(gp, "cuInit");
    drv.driver_version = (__typeof__(drv.driver_version))resolve(gp, "cuDriverGetVersion");
    drv.count = (__typeof__(drv.count))resolve(gp, "cuDeviceGetCount");
    drv.get = (__typeof__(drv.get))resolve(gp, "cuDeviceGet");
    drv.name = (__typeof__(drv.name))resolve(gp, "cuDeviceGetName");
    drv.uuid = (__typeof__(drv.uuid))resolve(gp, "cuDeviceGetUuid");
    drv.total_mem = (__typeof__(drv.total_mem))resolve(gp, "cuDeviceTotalMem");
    drv.attr = (__typeof__(drv.attr))resolve(gp, "cuDeviceGetAttribute");
    drv.pci = (__typeof__(drv.pci))resolve(gp, "cuDeviceGetPCIBusId");
}

static int driver_attr(CUdevice dev, CUdevice_attribute a)
{
    int v = -12345;
    cr_assert_eq(drv.attr(&v, a, dev), CUDA_SUCCESS, "cuDeviceGetAttribute(%d)", (int)a);
    return v;
}

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void expect_uuid_format(const char *u)
{
    cr_assert_eq(strlen(u), 40, "uuid '%s'", u);
    cr_assert_eq(strncmp(u, "GPU-", 4), 0, "uuid '%s'", u);
    for (size_t i = 4; i < 40; i++) {
        if (i == 12 || i == 17 || i == 22 || i == 27)
            cr_assert_eq(u[i], '-', "uuid '%s' at %zu", u, i);
        else
            cr_assert(is_lower_hex(u[i]), "uuid '%s' at %zu", u, i);
    }
}

Test(gpu_cuda, init_and_device_zero)
{
    need_driver();
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), 0, "vyre_cuda_init: %s (%s)", e.message, e.hint);
    int count = 0;
    cr_assert_eq(vyre_cuda_device_count(&count, &e), 0, "%s", e.message);
    cr_assert_geq(count, 1);
    vyre_device_info d;
    cr_assert_eq(vyre_cuda_device_info(0, &d, &e), 0, "%s", e.message);
    cr_assert_eq(d.ordinal, 0);
    cr_assert_neq(d.name[0], '\0');
    cr_assert(strstr(d.name, "NVIDIA"), "name '%s'", d.name);
    expect_uuid_format(d.uuid);
    cr_assert_geq(d.cc_major, 7, "compute capability %d.%d", d.cc_major, d.cc_minor);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", d.cc_major, d.cc_minor);
    cr_assert_str_eq(d.arch, arch);
    cr_assert_gt(d.sm_count, 0);
    cr_assert_gt(d.total_mem_bytes, UINT64_C(1) << 30);
    cr_assert_geq(d.driver_version, 12000);
    cr_assert_gt(d.max_threads_per_block, 0);
    cr_assert_gt(d.l2_cache_bytes, 0);
    cr_log_info("device 0: %s, %s, %s, %d SMs, %llu bytes, driver %d, PCI %s", d.name, d.uuid,
                d.arch, d.sm_count, (unsigned long long)d.total_mem_bytes, d.driver_version,
                d.pci_bus_id);
}

Test(gpu_cuda, matches_the_driver_asked_directly)
{
    need_driver();
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    cr_assert_eq(drv.init(0), CUDA_SUCCESS);
    int n_vyre = 0, n_drv = 0, v_vyre = 0, v_drv = 0;
    cr_assert_eq(vyre_cuda_device_count(&n_vyre, NULL), 0);
    cr_assert_eq(drv.count(&n_drv), CUDA_SUCCESS);
    cr_assert_eq(n_vyre, n_drv);
    cr_assert_eq(vyre_cuda_driver_version(&v_vyre, NULL), 0);
    cr_assert_eq(drv.driver_version(&v_drv), CUDA_SUCCESS);
    cr_assert_eq(v_vyre, v_drv);

    for (int i = 0; i < n_drv; i++) {
        vyre_device_info d;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cuda_device_info(i, &d, &e), 0, "device %d: %s", i, e.message);
        CUdevice dev;
        cr_assert_eq(drv.get(&dev, i), CUDA_SUCCESS);

        char name[256];
        cr_assert_eq(drv.name(name, sizeof name, dev), CUDA_SUCCESS);
        cr_assert_str_eq(d.name, name);

        CUuuid u;
        cr_assert_eq(drv.uuid(&u, dev), CUDA_SUCCESS);
        const unsigned char *b = (const unsigned char *)u.bytes;
        char uuid[48];
        snprintf(uuid, sizeof uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        cr_assert_str_eq(d.uuid, uuid);

        size_t mem = 0;
        cr_assert_eq(drv.total_mem(&mem, dev), CUDA_SUCCESS);
        cr_assert_eq(d.total_mem_bytes, (uint64_t)mem);

        char pci[32];
        cr_assert_eq(drv.pci(pci, sizeof pci, dev), CUDA_SUCCESS);
        cr_assert_eq(strcasecmp(d.pci_bus_id, pci), 0, "'%s' vs '%s'", d.pci_bus_id, pci);

        int major = driver_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = driver_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        cr_assert_eq(d.cc_major, major);
        cr_assert_eq(d.cc_minor, minor);
        char arch[16];
        snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
        cr_assert_str_eq(d.arch, arch);
        cr_assert_eq(d.sm_count, driver_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
        cr_assert_eq(d.cooperative_launch,
                     driver_attr(dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH));
        cr_assert_eq(d.max_threads_per_block,
                     driver_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
        cr_assert_eq(d.max_shared_mem_per_block,
                     driver_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        cr_assert_eq(d.l2_cache_bytes, driver_attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
        cr_assert_eq(d.memory_bus_width_bits,
                     driver_attr(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
        cr_assert_eq(d.ecc_enabled, driver_attr(dev, CU_DEVICE_ATTRIBUTE_ECC_ENABLED));
        cr_assert_eq(d.driver_version, v_drv);
    }
    vyre_device_info d;
    cr_assert_eq(vyre_cuda_device_info(n_drv, &d, NULL), VYRE_ENODEV);
    cr_assert_eq(vyre_cuda_device_info(-1, &d, NULL), VYRE_ENODEV);
}

Test(gpu_cuda, jit_cache_is_on_after_init)
{
    need_driver();
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    const char *disable = getenv("CUDA_CACHE_DISABLE");
    cr_assert_not_null(disable);
    cr_assert_str_eq(disable, "0");
    const char *path = getenv("CUDA_CACHE_PATH");
    cr_assert_not_null(path);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/vyre/cuda-jit", g_xdg);
    cr_assert_str_eq(path, expected);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "CUDA_CACHE_PATH '%s' does not exist", path);
    cr_assert(S_ISDIR(st.st_mode));
    const char *max = getenv("CUDA_CACHE_MAXSIZE");
    cr_assert_not_null(max);
    cr_assert_geq(strtoull(max, NULL, 10), VYRE_JITCACHE_FLOOR_BYTES);
}
