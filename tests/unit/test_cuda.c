/*
 * test_cuda.c - the run-time CUDA driver loader (libcore/src/cuda/cuda.c),
 * driven through the fake drivers in tests/fakes/fakecuda.c.
 *
 * vyre_cuda_init() runs once per process; Criterion runs every test in its
 * own process, so each test sets the environment first and then calls it.
 * The JIT-cache setup runs inside vyre_cuda_init(): HOME and XDG_CACHE_HOME
 * point at a fresh temp directory in every test.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda/cuda_internal.h"
#include "testutil.h"
#include "vyre/cuda.h"
#include "vyre/jitcache.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif

/* Every variable a test here may touch; saved by the fixture, restored
 * after the test. */
static const char *const g_vars[] = {
    "VYRE_CUDA_LIBRARY",       "HOME",
    "XDG_CACHE_HOME",          "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",         "CUDA_CACHE_MAXSIZE",
    "FAKECUDA_INIT_RESULT",    "FAKECUDA_DEVICES",
    "FAKECUDA_DRIVER_VERSION", "FAKECUDA_CC",
    "FAKECUDA_MISSING",        "FAKECUDA_MISSING_STYLE",
    "FAKECUDA_FAIL",           "FAKECUDA_RECORD",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_xdg[600];
static char g_record[600];

static void cuda_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg-cache", g_tmp);
    snprintf(g_record, sizeof g_record, "%s/cuinit.record", g_tmp);
    setenv("HOME", g_tmp, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
}

static void cuda_teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(cuda, .init = cuda_setup, .fini = cuda_teardown);

static void use_fake(int devices)
{
    char n[16];
    snprintf(n, sizeof n, "%d", devices);
    setenv("VYRE_CUDA_LIBRARY", FAKECUDA_LIB, 1);
    setenv("FAKECUDA_DEVICES", n, 1);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --- loading the library ------------------------------------------------ */

Test(cuda, missing_library_is_enodriver_with_path_and_hint)
{
    setenv("VYRE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_ENODRIVER);
    cr_assert_eq(e.code, VYRE_ENODRIVER);
    cr_assert(strstr(e.message, "'/nonexistent/libcuda.so.1'"), "message: %s", e.message);
    cr_assert(strstr(e.message, "no NVIDIA driver found"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "VYRE_CUDA_LIBRARY"), "hint: %s", e.hint);
    cr_assert(strstr(e.hint, "libcuda.so.1"), "hint: %s", e.hint);
    cr_assert_null(vyre__cuda());

    /* Every entry point reports the same failure and zeroes its output. */
    int count = 42, version = 0;
    vyre_error e2;
    vyre_error_clear(&e2);
    cr_assert_eq(vyre_cuda_device_count(&count, &e2), VYRE_ENODRIVER);
    cr_assert_eq(count, 0);
    cr_assert_str_eq(e2.message, e.message);
    cr_assert_eq(vyre_cuda_driver_version(&version, NULL), VYRE_ENODRIVER);
    vyre_device_info info;
    cr_assert_eq(vyre_cuda_device_info(0, &info, NULL), VYRE_ENODRIVER);
}

Test(cuda, empty_library_variable_is_eenv)
{
    setenv("VYRE_CUDA_LIBRARY", "", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert(strstr(e.message, "VYRE_CUDA_LIBRARY"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "VYRE_CUDA_LIBRARY"), "hint: %s", e.hint);
}

Test(cuda, file_that_is_not_a_library_is_enodriver)
{
    char path[700];
    snprintf(path, sizeof path, "%s/libcuda.so.1", g_tmp);
    tu_write_file(path, "not an ELF file\n", 16);
    setenv("VYRE_CUDA_LIBRARY", path, 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_ENODRIVER);
    char quoted[720];
    snprintf(quoted, sizeof quoted, "'%s'", path);
    cr_assert(strstr(e.message, quoted), "message: %s", e.message);
    cr_assert_neq(e.hint[0], '\0');
}

Test(cuda, library_without_get_proc_address_is_enodriver)
{
    setenv("VYRE_CUDA_LIBRARY", FAKECUDA_NOGETPROC_LIB, 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_ENODRIVER);
    cr_assert(strstr(e.message, "cuGetProcAddress_v2"), "message: %s", e.message);
    cr_assert(strstr(e.message, "'" FAKECUDA_NOGETPROC_LIB "'"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "driver"), "hint: %s", e.hint);
    cr_assert_null(vyre__cuda());
}

/* --- required and optional symbols ------------------------------------- */

struct missing_case {
    char symbol[32];
    char style[16];
};

ParameterizedTestParameters(cuda, missing_required_symbol_is_enodriver)
{
    static const char *const required[] = {
        "cuInit",           "cuDriverGetVersion", "cuGetErrorName",
        "cuGetErrorString", "cuDeviceGetCount",   "cuDeviceGet",
        "cuDeviceGetName",  "cuDeviceGetUuid",    "cuDeviceGetAttribute",
        "cuDeviceTotalMem",
    };
    static const char *const styles[] = {"notfound", "status", "null", "stale"};
    enum { NSTYLES = sizeof styles / sizeof styles[0] };
    static struct missing_case cases[sizeof required / sizeof required[0] * NSTYLES];
    size_t n = 0;
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        for (size_t j = 0; j < NSTYLES; j++) {
            snprintf(cases[n].symbol, sizeof cases[n].symbol, "%s", required[i]);
            snprintf(cases[n].style, sizeof cases[n].style, "%s", styles[j]);
            n++;
        }
    return cr_make_param_array(struct missing_case, cases, n);
}

ParameterizedTest(struct missing_case *c, cuda, missing_required_symbol_is_enodriver)
{
    use_fake(1);
    setenv("FAKECUDA_MISSING", c->symbol, 1);
    setenv("FAKECUDA_MISSING_STYLE", c->style, 1);
    setenv("FAKECUDA_RECORD", g_record, 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_ENODRIVER, "%s (%s)", c->symbol, c->style);
    char quoted[40];
    snprintf(quoted, sizeof quoted, "'%s'", c->symbol);
    cr_assert(strstr(e.message, quoted), "message for %s: %s", c->symbol, e.message);
    cr_assert(strstr(e.hint, "driver"), "hint: %s", e.hint);
    cr_assert_null(vyre__cuda());
    /* The loader gave up before cuInit. */
    cr_assert_null(tu_read_file(g_record, NULL), "cuInit ran although %s is missing", c->symbol);
}

Test(cuda, missing_optional_symbol_is_fine)
{
    use_fake(1);
    setenv("FAKECUDA_MISSING", "cuDeviceGetPCIBusId", 1);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    const vyre__cuda_fns *f = vyre__cuda();
    cr_assert_not_null(f);
    cr_assert_null(f->cuDeviceGetPCIBusId);
    cr_assert_null(f->cuLinkCreate, "the fake has no cuLinkCreate");
    vyre_device_info info;
    cr_assert_eq(vyre_cuda_device_info(0, &info, NULL), 0);
    cr_assert_str_eq(info.pci_bus_id, "");
    cr_assert_str_eq(info.arch, "sm_90");
}

/* --- cuInit results ----------------------------------------------------- */

struct cuinit_case {
    int cu;
    int vyre;
    char message[160];
};

ParameterizedTestParameters(cuda, cuinit_failure_maps_curesult)
{
    static struct cuinit_case cases[] = {
        {100, VYRE_ENODEV,
         "cuInit failed: CUDA_ERROR_NO_DEVICE (fake: no CUDA-capable device is detected)"},
        {2, VYRE_ENOMEM, "cuInit failed: CUDA_ERROR_OUT_OF_MEMORY (fake: out of memory)"},
        {999, VYRE_ECUDA, "cuInit failed: CUDA_ERROR_UNKNOWN (fake: unknown error)"},
        {34, VYRE_ENODRIVER,
         "cuInit failed: CUDA_ERROR_STUB_LIBRARY (fake: CUDA driver is a stub library)"},
        {803, VYRE_ENODRIVER,
         "cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (fake: system has unsupported "
         "display driver / cuda driver combination)"},
        {101, VYRE_ENODEV,
         "cuInit failed: CUDA_ERROR_INVALID_DEVICE (fake: invalid device "
         "ordinal)"},
        /* A code the driver cannot name: the message says so. */
        {12345, VYRE_ECUDA, "cuInit failed: CUresult 12345 (no description from the driver)"},
    };
    return cr_make_param_array(struct cuinit_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct cuinit_case *c, cuda, cuinit_failure_maps_curesult)
{
    use_fake(1);
    char v[16];
    snprintf(v, sizeof v, "%d", c->cu);
    setenv("FAKECUDA_INIT_RESULT", v, 1);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    cr_assert_eq(rc, c->vyre, "CUresult %d gave %s, expected %s", c->cu, vyre_err_name(rc),
                 vyre_err_name(c->vyre));
    cr_assert_eq(e.code, c->vyre);
    cr_assert_str_eq(e.message, c->message);
    cr_assert_neq(e.hint[0], '\0', "no hint for CUresult %d", c->cu);
    cr_assert_null(vyre__cuda());
}

Test(cuda, no_device_hint_names_the_usual_suspects)
{
    use_fake(1);
    setenv("FAKECUDA_INIT_RESULT", "100", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_ENODEV);
    cr_assert(strstr(e.hint, "CUDA_VISIBLE_DEVICES"), "hint: %s", e.hint);
    cr_assert(strstr(e.hint, "nvidia-smi"), "hint: %s", e.hint);
}

Test(cuda, init_is_once_per_process_and_keeps_the_first_result)
{
    use_fake(1);
    setenv("FAKECUDA_INIT_RESULT", "100", 1);
    setenv("FAKECUDA_RECORD", g_record, 1);
    vyre_error first;
    vyre_error_clear(&first);
    cr_assert_eq(vyre_cuda_init(&first), VYRE_ENODEV);
    /* Fixing the environment afterwards changes nothing in this process. */
    unsetenv("FAKECUDA_INIT_RESULT");
    vyre_error again;
    vyre_error_clear(&again);
    cr_assert_eq(vyre_cuda_init(&again), VYRE_ENODEV);
    cr_assert_eq(again.code, first.code);
    cr_assert_str_eq(again.message, first.message);
    cr_assert_str_eq(again.hint, first.hint);
    int count = 7;
    cr_assert_eq(vyre_cuda_device_count(&count, NULL), VYRE_ENODEV);
    cr_assert_eq(count, 0);
    /* cuInit itself ran exactly once: one record block of three lines. */
    char *rec = tu_read_file(g_record, NULL);
    cr_assert_not_null(rec);
    size_t lines = 0;
    for (const char *p = rec; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 3, "cuInit ran %zu/3 times:\n%s", lines, rec);
    free(rec);
}

struct init_thread {
    pthread_barrier_t *barrier;
    int rc;
    const vyre__cuda_fns *fns;
};

static void *init_thread_main(void *arg)
{
    struct init_thread *t = arg;
    pthread_barrier_wait(t->barrier);
    t->rc = vyre_cuda_init(NULL);
    t->fns = vyre__cuda();
    return NULL;
}

Test(cuda, concurrent_init_runs_cuinit_once)
{
    use_fake(2);
    setenv("FAKECUDA_RECORD", g_record, 1);
    enum { N = 16 };
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, N);
    pthread_t th[N];
    struct init_thread t[N];
    for (int i = 0; i < N; i++) {
        t[i].barrier = &barrier;
        t[i].rc = -999;
        cr_assert_eq(pthread_create(&th[i], NULL, init_thread_main, &t[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(t[i].rc, 0, "thread %d: %s", i, vyre_err_name(t[i].rc));
        cr_assert_not_null(t[i].fns);
        cr_assert_eq(t[i].fns, t[0].fns);
    }
    char *rec = tu_read_file(g_record, NULL);
    cr_assert_not_null(rec);
    size_t lines = 0;
    for (const char *p = rec; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 3, "cuInit ran %zu/3 times", lines);
    free(rec);
}

/* --- the JIT cache is configured before cuInit -------------------------- */

Test(cuda, jitcache_is_configured_before_cuinit)
{
    use_fake(1);
    setenv("FAKECUDA_RECORD", g_record, 1);
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    char *rec = tu_read_file(g_record, NULL);
    cr_assert_not_null(rec, "cuInit was not called");
    char expected[1400];
    snprintf(expected, sizeof expected,
             "CUDA_CACHE_DISABLE=0\nCUDA_CACHE_PATH=%s/vyre/cuda-jit\n"
             "CUDA_CACHE_MAXSIZE=1073741824\n",
             g_xdg);
    cr_assert_str_eq(rec, expected);
    free(rec);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/vyre/cuda-jit", g_xdg);
    cr_assert(is_dir(dir), "%s was not created", dir);
}

Test(cuda, bad_jitcache_variable_stops_init_before_cuinit)
{
    use_fake(1);
    setenv("FAKECUDA_RECORD", g_record, 1);
    setenv("CUDA_CACHE_MAXSIZE", "12", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_init(&e), VYRE_EENV);
    cr_assert(strstr(e.message, "CUDA_CACHE_MAXSIZE='12'"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "CUDA_CACHE_MAXSIZE"), "hint: %s", e.hint);
    cr_assert_null(tu_read_file(g_record, NULL), "cuInit ran with a bad JIT-cache setting");
    cr_assert_null(vyre__cuda());
}

/* --- device enumeration ------------------------------------------------- */

Test(cuda, enumerates_the_fake_devices)
{
    use_fake(2);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    cr_assert_not_null(vyre__cuda());
    int count = -1, version = -1;
    cr_assert_eq(vyre_cuda_device_count(&count, NULL), 0);
    cr_assert_eq(count, 2);
    cr_assert_eq(vyre_cuda_driver_version(&version, NULL), 0);
    cr_assert_eq(version, 13000);

    vyre_device_info d;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &d, &e), 0, "%s", e.message);
    cr_assert_eq(d.ordinal, 0);
    cr_assert_str_eq(d.name, "NVIDIA Fake H100 80GB HBM3");
    cr_assert_str_eq(d.uuid, "GPU-00112233-4455-6677-8899-aabbccddeeff");
    cr_assert_str_eq(d.pci_bus_id, "0000:18:00.0");
    cr_assert_str_eq(d.arch, "sm_90");
    cr_assert_eq(d.cc_major, 9);
    cr_assert_eq(d.cc_minor, 0);
    cr_assert_eq(d.sm_count, 132);
    cr_assert_eq(d.total_mem_bytes, UINT64_C(85520809984));
    cr_assert_eq(d.cooperative_launch, 1);
    cr_assert_eq(d.max_threads_per_block, 1024);
    cr_assert_eq(d.max_shared_mem_per_block, 232448);
    cr_assert_eq(d.l2_cache_bytes, 52428800);
    cr_assert_eq(d.memory_bus_width_bits, 5120);
    cr_assert_eq(d.ecc_enabled, 1);
    cr_assert_eq(d.driver_version, 13000);

    cr_assert_eq(vyre_cuda_device_info(1, &d, &e), 0, "%s", e.message);
    cr_assert_eq(d.ordinal, 1);
    cr_assert_str_eq(d.name, "NVIDIA Fake Accelerator With A Long Name");
    cr_assert_str_eq(d.uuid, "GPU-5a4b7869-1e0f-3c2d-d2c3-f0e19687b4a5");
    cr_assert_str_eq(d.pci_bus_id, "0000:3b:00.0");
    cr_assert_str_eq(d.arch, "sm_86");
    cr_assert_eq(d.cc_major, 8);
    cr_assert_eq(d.cc_minor, 6);
    cr_assert_eq(d.sm_count, 84);
    cr_assert_eq(d.total_mem_bytes, UINT64_C(25769803776));
    cr_assert_eq(d.cooperative_launch, 0);
    cr_assert_eq(d.max_shared_mem_per_block, 101376);
    cr_assert_eq(d.l2_cache_bytes, 6291456);
    cr_assert_eq(d.memory_bus_width_bits, 384);
    cr_assert_eq(d.ecc_enabled, 0);
    cr_assert_eq(d.driver_version, 13000);
}

Test(cuda, driver_version_comes_from_the_driver)
{
    use_fake(1);
    setenv("FAKECUDA_DRIVER_VERSION", "12080", 1);
    int version = 0;
    cr_assert_eq(vyre_cuda_driver_version(&version, NULL), 0);
    cr_assert_eq(version, 12080);
    vyre_device_info d;
    cr_assert_eq(vyre_cuda_device_info(0, &d, NULL), 0);
    cr_assert_eq(d.driver_version, 12080);
}

Test(cuda, ordinal_out_of_range_is_enodev)
{
    use_fake(2);
    static const int bad[] = {-1, 2, 3, INT_MAX, INT_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vyre_device_info d;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cuda_device_info(bad[i], &d, &e), VYRE_ENODEV, "ordinal %d", bad[i]);
        char expected[96];
        snprintf(expected, sizeof expected, "no CUDA device %d (this machine has 2)", bad[i]);
        cr_assert_str_eq(e.message, expected);
        /* The front end names its command (vyre-bench devices). */
        cr_assert_eq(e.remedy, VYRE_REMEDY_DEVICES);
    }
}

Test(cuda, zero_devices)
{
    use_fake(0);
    int count = -1;
    cr_assert_eq(vyre_cuda_device_count(&count, NULL), 0);
    cr_assert_eq(count, 0);
    vyre_device_info d;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &d, &e), VYRE_ENODEV);
    cr_assert_str_eq(e.message, "no CUDA device 0 (this machine has 0)");
}

Test(cuda, arch_follows_compute_capability)
{
    use_fake(3);
    setenv("FAKECUDA_CC", "10.0", 1);
    vyre_device_info d;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(vyre_cuda_device_info(i, &d, NULL), 0);
        cr_assert_str_eq(d.arch, "sm_100");
        cr_assert_eq(d.cc_major, 10);
    }
    cr_assert_str_eq(d.name, "NVIDIA Fake GPU 2");
}

Test(cuda, impossible_compute_capability_is_ecuda)
{
    use_fake(1);
    setenv("FAKECUDA_CC", "0.0", 1);
    vyre_device_info d;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &d, &e), VYRE_ECUDA);
    cr_assert(strstr(e.message, "0.0"), "message: %s", e.message);
    cr_assert_neq(e.hint[0], '\0');
}

struct query_case {
    char call[32];
    int cu;
    int vyre;
    char message[128];
};

ParameterizedTestParameters(cuda, failing_device_query_is_reported)
{
    static struct query_case cases[] = {
        {"cuDeviceGetCount", 2, VYRE_ENOMEM,
         "cuDeviceGetCount failed: CUDA_ERROR_OUT_OF_MEMORY (fake: out of memory)"},
        {"cuDeviceGet", 101, VYRE_ENODEV,
         "cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE (fake: invalid device ordinal)"},
        {"cuDeviceGetName", 999, VYRE_ECUDA,
         "cuDeviceGetName failed: CUDA_ERROR_UNKNOWN (fake: unknown error)"},
        {"cuDeviceGetUuid", 999, VYRE_ECUDA,
         "cuDeviceGetUuid failed: CUDA_ERROR_UNKNOWN (fake: unknown error)"},
        {"cuDeviceTotalMem", 1, VYRE_EINVAL,
         "cuDeviceTotalMem failed: CUDA_ERROR_INVALID_VALUE (fake: invalid argument)"},
        {"cuDeviceGetAttribute", 801, VYRE_ENOTSUP,
         "cuDeviceGetAttribute failed: CUDA_ERROR_NOT_SUPPORTED (fake: operation not "
         "supported)"},
        {"cuDriverGetVersion", 999, VYRE_ECUDA,
         "cuDriverGetVersion failed: CUDA_ERROR_UNKNOWN (fake: unknown error)"},
    };
    return cr_make_param_array(struct query_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct query_case *c, cuda, failing_device_query_is_reported)
{
    use_fake(1);
    char fail[64];
    snprintf(fail, sizeof fail, "%s=%d", c->call, c->cu);
    setenv("FAKECUDA_FAIL", fail, 1);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    vyre_device_info d;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &d, &e), c->vyre, "%s", c->call);
    cr_assert_eq(e.code, c->vyre);
    cr_assert_str_eq(e.message, c->message);
}

Test(cuda, failing_optional_pci_query_leaves_it_empty)
{
    use_fake(1);
    setenv("FAKECUDA_FAIL", "cuDeviceGetPCIBusId=999", 1);
    vyre_device_info d;
    cr_assert_eq(vyre_cuda_device_info(0, &d, NULL), 0);
    cr_assert_str_eq(d.pci_bus_id, "");
    cr_assert_str_eq(d.name, "NVIDIA Fake H100 80GB HBM3");
}

/* --- CUresult mapping, directly ----------------------------------------- */

Test(cuda, check_maps_every_listed_curesult)
{
    use_fake(1);
    cr_assert_eq(vyre_cuda_init(NULL), 0);
    static const struct {
        CUresult cu;
        int vyre;
    } map[] = {
        {CUDA_ERROR_NO_DEVICE, VYRE_ENODEV},
        {CUDA_ERROR_INVALID_DEVICE, VYRE_ENODEV},
        {CUDA_ERROR_STUB_LIBRARY, VYRE_ENODRIVER},
        {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, VYRE_ENODRIVER},
        {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, VYRE_ENODRIVER},
        {CUDA_ERROR_OUT_OF_MEMORY, VYRE_ENOMEM},
        {CUDA_ERROR_INVALID_VALUE, VYRE_EINVAL},
        {CUDA_ERROR_INVALID_HANDLE, VYRE_EINVAL},
        {CUDA_ERROR_NOT_SUPPORTED, VYRE_ENOTSUP},
        {CUDA_ERROR_INVALID_PTX, VYRE_ECOMPILE},
        {CUDA_ERROR_INVALID_IMAGE, VYRE_ECOMPILE},
        {CUDA_ERROR_NO_BINARY_FOR_GPU, VYRE_ECOMPILE},
        {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, VYRE_ECOMPILE},
        {CUDA_ERROR_JIT_COMPILER_NOT_FOUND, VYRE_ECOMPILE},
        {CUDA_ERROR_UNKNOWN, VYRE_ECUDA},
        {CUDA_ERROR_LAUNCH_FAILED, VYRE_ECUDA},
        {CUDA_ERROR_NOT_INITIALIZED, VYRE_ECUDA},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre__cuda_check(map[i].cu, "cuTest", &e);
        cr_assert_eq(rc, map[i].vyre, "CUresult %d -> %s", (int)map[i].cu, vyre_err_name(rc));
        cr_assert_eq(e.code, map[i].vyre);
        cr_assert_eq(strncmp(e.message, "cuTest failed: ", 15), 0, "message: %s", e.message);
        cr_assert_neq(e.hint[0], '\0');
    }
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__cuda_check(CUDA_SUCCESS, "cuTest", &e), 0);
    cr_assert_eq(e.code, 0, "success must leave err untouched");
    cr_assert_str_eq(e.message, "");
    cr_assert_eq(vyre__cuda_check(CUDA_ERROR_NO_DEVICE, "cuTest", NULL), VYRE_ENODEV);
}

Test(cuda, check_before_init_has_no_driver_names)
{
    /* Without a loaded driver there is nobody to name the code. */
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__cuda_check(CUDA_ERROR_NO_DEVICE, "cuInit", &e), VYRE_ENODEV);
    cr_assert_str_eq(e.message, "cuInit failed: CUresult 100 (no description from the driver)");
}

/* --- small functions and argument checks -------------------------------- */

Test(cuda, arch_name_bounds)
{
    char buf[16];
    cr_assert_eq(vyre_cuda_arch_name(9, 0, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_90");
    cr_assert_eq(vyre_cuda_arch_name(1, 0, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_10");
    cr_assert_eq(vyre_cuda_arch_name(8, 9, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_89");
    cr_assert_eq(vyre_cuda_arch_name(10, 0, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_100");
    cr_assert_eq(vyre_cuda_arch_name(12, 1, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_121");
    cr_assert_eq(vyre_cuda_arch_name(99, 9, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "sm_999");

    cr_assert_eq(vyre_cuda_arch_name(0, 0, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(-1, 0, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(100, 0, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(9, -1, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(9, 10, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(INT_MAX, 0, buf, sizeof buf), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(9, 0, NULL, 16), VYRE_EINVAL);

    /* "sm_90" needs 6 bytes, "sm_100" 7. */
    char small[8];
    cr_assert_eq(vyre_cuda_arch_name(9, 0, small, 6), 0);
    cr_assert_str_eq(small, "sm_90");
    cr_assert_eq(vyre_cuda_arch_name(9, 0, small, 5), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(10, 0, small, 7), 0);
    cr_assert_eq(vyre_cuda_arch_name(10, 0, small, 6), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_arch_name(9, 0, small, 0), VYRE_EINVAL);
}

Test(cuda, null_arguments_are_einval)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_count(NULL, &e), VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');
    cr_assert_eq(vyre_cuda_driver_version(NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_device_info(0, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_cuda_device_info(0, NULL, NULL), VYRE_EINVAL);
    /* None of these loaded the driver. */
    cr_assert_null(vyre__cuda());
}
