/*
 * test_nvml.c - the NVML GPU monitor (libcore/src/cuda/nvml.c), driven
 * through the fake NVML in tests/fakes/fakenvml.c.
 *
 * Criterion runs every test in its own process; each test sets the fake's
 * environment, then opens a monitor. The fake's values are documented in
 * fakenvml.c and asserted exactly here.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/nvml_internal.h"
#include "testutil.h"
#include "vyre/gpu.h"

#ifndef FAKENVML_LIB
#error "tests/CMakeLists.txt must define FAKENVML_LIB"
#endif

#define GIB (1024ull * 1024ull * 1024ull)
#define MIB (1024ull * 1024ull)

static const char *const g_vars[] = {
    "VYRE_NVML_LIBRARY",     "FAKENVML_INIT_FAIL", "FAKENVML_GPUS",
    "FAKENVML_UNSUPPORTED",  "FAKENVML_FAIL",      "FAKENVML_PROCS",
    "FAKENVML_MANY_PROCS",   "FAKENVML_PROC_UTIL", "FAKENVML_GRAPHICS_PROCS",
    "FAKENVML_RESERVED_MIB",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;

static void gpu_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
}

static void gpu_teardown(void)
{
    tu_env_restore(&g_env);
}

TestSuite(gpu_monitor, .init = gpu_setup, .fini = gpu_teardown);

/* Opens a monitor on the fake and takes one sample into *snap. */
static vyre_gpu_monitor *open_and_sample(vyre_gpu_snapshot *snap)
{
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    int rc = vyre_gpu_monitor_open(&m, &err);
    cr_assert_eq(rc, 0, "open: %s (%s)", err.message, vyre_err_name(rc));
    cr_assert_not_null(m);
    rc = vyre_gpu_monitor_sample(m, snap, &err);
    cr_assert_eq(rc, 0, "sample: %s", err.message);
    return m;
}

#define ALL_FIELDS                                                                                 \
    (VYRE_GPU_F_NAME | VYRE_GPU_F_UUID | VYRE_GPU_F_UTIL | VYRE_GPU_F_MEMORY |                     \
     VYRE_GPU_F_SM_CLOCK | VYRE_GPU_F_MEM_CLOCK | VYRE_GPU_F_SM_CLOCK_MAX |                        \
     VYRE_GPU_F_TEMPERATURE | VYRE_GPU_F_POWER | VYRE_GPU_F_POWER_LIMIT | VYRE_GPU_F_THROTTLE |    \
     VYRE_GPU_F_PROCS | VYRE_GPU_F_PCI_BUS_ID)

/* ---- loading and initialisation ------------------------------------------ */

Test(gpu_monitor, missing_nvml_is_enonvml_with_hint)
{
    setenv("VYRE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    vyre_gpu_monitor *m = (vyre_gpu_monitor *)1;
    vyre_error err = {0};
    int rc = vyre_gpu_monitor_open(&m, &err);
    cr_assert_eq(rc, VYRE_ENONVML, "%s", vyre_err_name(rc));
    cr_assert_null(m);
    cr_assert_eq(err.code, VYRE_ENONVML);
    cr_assert(strstr(err.message, "cannot load '/nonexistent/libnvidia-ml.so.1'"), "%s",
              err.message);
    cr_assert(strstr(err.hint, "VYRE_NVML_LIBRARY"), "%s", err.hint);
}

Test(gpu_monitor, empty_library_variable_is_eenv)
{
    setenv("VYRE_NVML_LIBRARY", "", 1);
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    cr_assert_eq(vyre_gpu_monitor_open(&m, &err), VYRE_EENV);
    cr_assert_null(m);
    cr_assert(strstr(err.message, "VYRE_NVML_LIBRARY is set but empty"), "%s", err.message);
    cr_assert(strstr(err.hint, "unset VYRE_NVML_LIBRARY"), "%s", err.hint);
}

Test(gpu_monitor, library_without_nvml_symbols_is_refused)
{
    /* The fake libcuda loads fine but is no NVML. */
    setenv("VYRE_NVML_LIBRARY", FAKECUDA_LIB, 1);
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    cr_assert_eq(vyre_gpu_monitor_open(&m, &err), VYRE_ENONVML);
    cr_assert_null(m);
    cr_assert(strstr(err.message, "has no 'nvmlInit_v2'"), "%s", err.message);
    cr_assert(strstr(err.hint, "update the NVIDIA driver"), "%s", err.hint);
}

Test(gpu_monitor, init_failure_quotes_nvml_error_string)
{
    setenv("FAKENVML_INIT_FAIL", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    int rc = vyre_gpu_monitor_open(&m, &err);
    cr_assert_eq(rc, VYRE_ENONVML, "%s", vyre_err_name(rc));
    cr_assert_null(m);
    cr_assert_str_eq(err.message, "nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
    cr_assert(strstr(err.hint, "kernel driver is not loaded"), "%s", err.hint);
}

Test(gpu_monitor, init_permission_failure_is_eperm)
{
    setenv("FAKENVML_INIT_FAIL", "4", 1); /* NVML_ERROR_NO_PERMISSION */
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    cr_assert_eq(vyre_gpu_monitor_open(&m, &err), VYRE_EPERM);
    cr_assert(strstr(err.message, "Insufficient Permissions"), "%s", err.message);
    cr_assert(strstr(err.hint, "/dev/nvidia"), "%s", err.hint);
}

Test(gpu_monitor, count_failure_shuts_nvml_down)
{
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    int (*init_count)(void) = (int (*)(void))dlsym(h, "fakenvml_init_count");
    cr_assert_not_null(init_count);
    setenv("FAKENVML_FAIL", "count=15", 1);
    vyre_gpu_monitor *m = NULL;
    vyre_error err = {0};
    cr_assert_eq(vyre_gpu_monitor_open(&m, &err), VYRE_ENONVML);
    cr_assert_str_eq(err.message, "nvmlDeviceGetCount_v2 failed: GPU is lost (NVML error 15)");
    cr_assert_eq(init_count(), 0, "nvmlInit_v2 without nvmlShutdown");
    dlclose(h);
}

Test(gpu_monitor, null_arguments)
{
    vyre_error err = {0};
    cr_assert_eq(vyre_gpu_monitor_open(NULL, &err), VYRE_EINVAL);
    vyre_gpu_snapshot snap;
    cr_assert_eq(vyre_gpu_monitor_sample(NULL, &snap, NULL), VYRE_EINVAL);
    vyre_gpu_monitor *m = NULL;
    cr_assert_eq(vyre_gpu_monitor_open(&m, NULL), 0);
    cr_assert_eq(vyre_gpu_monitor_sample(m, NULL, &err), VYRE_EINVAL);
    vyre_gpu_monitor_close(m);
    vyre_gpu_monitor_close(NULL); /* no-op */
}

Test(gpu_monitor, open_and_close_balance_nvml_init)
{
    /* Sharing the fake with the monitor (dlopen counts references) lets the
     * test see the fake's state; it also keeps it loaded across close. */
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    int (*init_count)(void) = (int (*)(void))dlsym(h, "fakenvml_init_count");
    cr_assert_not_null(init_count);
    vyre_gpu_monitor *a = NULL, *b = NULL;
    cr_assert_eq(vyre_gpu_monitor_open(&a, NULL), 0);
    cr_assert_eq(init_count(), 1);
    cr_assert_eq(vyre_gpu_monitor_open(&b, NULL), 0);
    cr_assert_eq(init_count(), 2);
    vyre_gpu_monitor_close(a);
    cr_assert_eq(init_count(), 1);
    vyre_gpu_snapshot snap;
    cr_assert_eq(vyre_gpu_monitor_sample(b, &snap, NULL), 0);
    cr_assert_eq(snap.ngpus, 1);
    cr_assert(vyre_gpu_field_valid(&snap.gpus[0], ALL_FIELDS));
    vyre_gpu_monitor_close(b);
    cr_assert_eq(init_count(), 0);
    dlclose(h);
}

/* ---- sampling ------------------------------------------------------------- */

Test(gpu_monitor, two_gpus_exact_values)
{
    setenv("FAKENVML_GPUS", "2", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_eq(snap.ngpus, 2);
    cr_assert_eq(snap.ngpus_total, 2);
    cr_assert_eq(snap.gpus_truncated, 0);
    cr_assert_str_eq(snap.driver_version, "580.00.01");
    cr_assert_gt(snap.sampled_ns, 0);
    for (unsigned i = 0; i < 2; i++) {
        const vyre_gpu_info *g = &snap.gpus[i];
        char want[96];
        cr_assert_eq(g->valid, ALL_FIELDS, "gpu %u valid 0x%x", i, g->valid);
        cr_assert(vyre_gpu_field_valid(g, ALL_FIELDS));
        cr_assert_eq(g->index, (int)i);
        snprintf(want, sizeof want, "NVIDIA Fake GPU %u", i);
        cr_assert_str_eq(g->name, want);
        snprintf(want, sizeof want, "GPU-00000000-0000-0000-0000-%012u", i);
        cr_assert_str_eq(g->uuid, want);
        cr_assert_eq(g->util_gpu_pct, 10u * (i + 1));
        cr_assert_eq(g->util_mem_pct, 5u * (i + 1));
        cr_assert_eq(g->mem_total_bytes, (80ull + i) * GIB);
        cr_assert_eq(g->mem_used_bytes, (1ull + i) * GIB);
        cr_assert_eq(g->sm_clock_mhz, 1500u + i);
        cr_assert_eq(g->mem_clock_mhz, 2619u);
        cr_assert_eq(g->sm_clock_max_mhz, 1980u);
        cr_assert_eq(g->temperature_c, 40 + (int)i);
        cr_assert_eq(g->power_mw, 100000u + 1000u * i);
        cr_assert_eq(g->power_limit_mw, 700000u);
        cr_assert_eq(g->nprocs, 0);
        cr_assert_eq(g->nprocs_total, 0);
        cr_assert_eq(g->procs_truncated, 0);
        cr_assert_str_eq(g->problem, "");
    }
    cr_assert_eq(snap.gpus[0].throttle_reasons,
                 VYRE_GPU_THROTTLE_SW_POWER | VYRE_GPU_THROTTLE_SW_THERMAL);
    cr_assert_str_eq(snap.gpus[0].throttle_text, "power,thermal");
    cr_assert_eq(snap.gpus[1].throttle_reasons, VYRE_GPU_THROTTLE_IDLE);
    cr_assert_str_eq(snap.gpus[1].throttle_text, "idle");
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, no_gpu_is_an_empty_sample)
{
    setenv("FAKENVML_GPUS", "0", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_eq(snap.ngpus, 0);
    cr_assert_eq(snap.ngpus_total, 0);
    cr_assert_eq(snap.gpus_truncated, 0);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, more_gpus_than_slots_are_counted)
{
    setenv("FAKENVML_GPUS", "20", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_eq(snap.ngpus, VYRE_GPU_MAX);
    cr_assert_eq(snap.ngpus_total, 20);
    cr_assert_eq(snap.gpus_truncated, 1);
    cr_assert_str_eq(snap.gpus[VYRE_GPU_MAX - 1].name, "NVIDIA Fake GPU 15");
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, unsupported_fields_are_invalid_others_stay_valid)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_UNSUPPORTED", "power,temperature", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const unsigned gone = VYRE_GPU_F_POWER | VYRE_GPU_F_TEMPERATURE;
    for (unsigned i = 0; i < 2; i++) {
        const vyre_gpu_info *g = &snap.gpus[i];
        cr_assert_eq(g->valid, ALL_FIELDS & ~gone, "gpu %u valid 0x%x", i, g->valid);
        cr_assert_not(vyre_gpu_field_valid(g, VYRE_GPU_F_POWER));
        cr_assert_not(vyre_gpu_field_valid(g, VYRE_GPU_F_TEMPERATURE));
        cr_assert_not(vyre_gpu_field_valid(g, VYRE_GPU_F_POWER | VYRE_GPU_F_MEMORY));
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_POWER_LIMIT | VYRE_GPU_F_MEMORY));
        cr_assert_eq(g->power_mw, 0, "an unknown field is not a made-up value");
        cr_assert_eq(g->temperature_c, 0);
        cr_assert_eq(g->power_limit_mw, 700000u);
        cr_assert_eq(g->sm_clock_mhz, 1500u + i);
        /* "Not supported" is ordinary: no problem to report. */
        cr_assert_str_eq(g->problem, "");
    }
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, every_field_unsupported_keeps_the_gpu)
{
    setenv("FAKENVML_UNSUPPORTED",
           "name,uuid,utilization,memory,sm_clock,mem_clock,max_clock,temperature,power,"
           "power_limit,throttle,processes,pci",
           1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_eq(snap.ngpus, 1);
    cr_assert_eq(snap.gpus[0].index, 0);
    cr_assert_eq(snap.gpus[0].valid, 0);
    cr_assert_str_eq(snap.gpus[0].name, "");
    cr_assert_str_eq(snap.gpus[0].throttle_text, "");
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, other_failures_are_named_in_problem)
{
    setenv("FAKENVML_FAIL", "power=4,temperature=15", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert_not(vyre_gpu_field_valid(g, VYRE_GPU_F_POWER));
    cr_assert_not(vyre_gpu_field_valid(g, VYRE_GPU_F_TEMPERATURE));
    cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_MEMORY | VYRE_GPU_F_PROCS));
    /* The first failure in sampling order (temperature comes before power). */
    cr_assert_str_eq(g->problem, "temperature: GPU is lost");
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, lost_handle_marks_the_gpu_unknown_not_the_sample)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_FAIL", "handle=15", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_eq(snap.ngpus, 2);
    for (unsigned i = 0; i < 2; i++) {
        cr_assert_eq(snap.gpus[i].index, (int)i);
        cr_assert_eq(snap.gpus[i].valid, 0);
        cr_assert_str_eq(snap.gpus[i].problem, "handle: GPU is lost");
    }
    /* The handle comes back: the next sample sees the GPU again. */
    unsetenv("FAKENVML_FAIL");
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_eq(snap.gpus[1].valid, ALL_FIELDS);
    cr_assert_str_eq(snap.gpus[1].name, "NVIDIA Fake GPU 1");
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, processes_listed_largest_first)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_PROCS", "0:300:1048576,1:42:4096,0:100:-,0:200:8388608,0:150:1048576", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_PROCS));
    cr_assert_eq(g->nprocs, 4);
    cr_assert_eq(g->nprocs_total, 4);
    cr_assert_eq(g->procs_truncated, 0);
    /* By memory, ties by pid, unknown sizes last. */
    cr_assert_eq(g->procs[0].pid, 200);
    cr_assert_eq(g->procs[0].used_bytes, 8 * MIB);
    cr_assert_eq(g->procs[1].pid, 150);
    cr_assert_eq(g->procs[1].used_bytes, MIB);
    cr_assert_eq(g->procs[2].pid, 300);
    cr_assert_eq(g->procs[2].used_valid, 1);
    cr_assert_eq(g->procs[3].pid, 100);
    cr_assert_eq(g->procs[3].used_valid, 0, "NVML_VALUE_NOT_AVAILABLE is unknown");
    cr_assert_eq(g->procs[3].used_bytes, 0);
    cr_assert_eq(snap.gpus[1].nprocs, 1);
    cr_assert_eq(snap.gpus[1].procs[0].pid, 42);
    cr_assert_eq(snap.gpus[1].procs[0].used_bytes, 4096);
    cr_assert_eq(snap.gpus[1].procs[0].used_valid, 1);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, graphics_processes_are_listed_once)
{
    setenv("FAKENVML_PROCS", "0:300:1048576", 1);
    /* 300 both computes and draws: one entry, a compute one. 400 only
     * draws. */
    setenv("FAKENVML_GRAPHICS_PROCS", "0:300:2097152,0:400:3145728", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert_eq(g->nprocs, 2);
    cr_assert_eq(g->nprocs_total, 2);
    cr_assert_eq(g->procs_truncated, 0);
    cr_assert_eq(g->procs[0].pid, 400, "largest first");
    cr_assert_eq(g->procs[0].graphics, 1);
    cr_assert_eq(g->procs[0].used_bytes, 3 * MIB);
    cr_assert_eq(g->procs[1].pid, 300);
    cr_assert_eq(g->procs[1].graphics, 0);
    cr_assert_eq(g->procs[1].used_bytes, MIB, "the compute entry's memory");
    /* A failing graphics query leaves the compute list whole. */
    setenv("FAKENVML_FAIL", "graphics=15", 1);
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_eq(g->nprocs, 1);
    cr_assert_eq(g->procs[0].pid, 300);
    cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_PROCS));
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, process_utilisation_is_the_newest_sample_per_process)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_PROCS", "0:300:1048576,0:100:-,1:42:4096", 1);
    /* pid 300 has two samples in the window (the later one wins: same
     * timestamp, so the last listed); pid 100 none; 999 is not listed. */
    setenv("FAKENVML_PROC_UTIL", "0:300:10:1,0:300:42:7,0:999:50:50,1:42:100:3", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert_eq(g->nprocs, 2);
    cr_assert_eq(g->procs[0].pid, 300);
    cr_assert_eq(g->procs[0].util_valid, 1);
    cr_assert_eq(g->procs[0].sm_util_pct, 42);
    cr_assert_eq(g->procs[0].mem_util_pct, 7);
    cr_assert_eq(g->procs[1].pid, 100);
    cr_assert_eq(g->procs[1].util_valid, 0, "no sample: unknown, not 0%%");
    cr_assert_eq(g->procs[1].sm_util_pct, 0);
    cr_assert_eq(snap.gpus[1].procs[0].util_valid, 1);
    cr_assert_eq(snap.gpus[1].procs[0].sm_util_pct, 100);
    /* No sample in the next window (NVML_ERROR_NOT_FOUND): unknown again. */
    unsetenv("FAKENVML_PROC_UTIL");
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_eq(g->procs[0].util_valid, 0);
    cr_assert_str_eq(g->problem, "", "NOT_FOUND is no problem");
    vyre_gpu_monitor_close(m);
    /* An NVML without the query: memory still known, utilisation not. */
    setenv("VYRE_NVML_LIBRARY", FAKENVML_OLD_LIB, 1);
    setenv("FAKENVML_PROC_UTIL", "0:300:42:7", 1);
    m = open_and_sample(&snap);
    cr_assert_eq(g->procs[0].pid, 300);
    cr_assert_eq(g->procs[0].used_valid, 1);
    cr_assert_eq(g->procs[0].util_valid, 0);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, more_processes_than_slots_truncate_and_say_so)
{
    /* 100 processes: NVML first answers INSUFFICIENT_SIZE for the monitor's
     * 64-entry buffer, which then grows; the snapshot keeps the 64 largest. */
    setenv("FAKENVML_MANY_PROCS", "100", 1);
    setenv("FAKENVML_PROCS", "0:7:-", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_PROCS));
    cr_assert_eq(g->nprocs, VYRE_GPU_MAX_PROCS);
    cr_assert_eq(g->nprocs_total, 101);
    cr_assert_eq(g->procs_truncated, 1);
    for (unsigned k = 0; k < VYRE_GPU_MAX_PROCS; k++) {
        /* pid 10000+j holds (j+1) MiB: the largest is j = 99. */
        cr_assert_eq(g->procs[k].pid, 10099u - k, "slot %u", k);
        cr_assert_eq(g->procs[k].used_bytes, (100ull - k) * MIB);
    }
    cr_assert_str_eq(g->problem, "");
    /* Exactly as many as the slots: not truncated. */
    setenv("FAKENVML_MANY_PROCS", "64", 1);
    unsetenv("FAKENVML_PROCS");
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_eq(g->nprocs, 64);
    cr_assert_eq(g->nprocs_total, 64);
    cr_assert_eq(g->procs_truncated, 0);
    cr_assert_eq(g->procs[63].pid, 10000u);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, old_nvml_uses_the_fallback_entry_points)
{
    setenv("VYRE_NVML_LIBRARY", FAKENVML_OLD_LIB, 1);
    setenv("FAKENVML_PROCS", "0:77:2048", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    const vyre_gpu_info *g = &snap.gpus[0];
    cr_assert_eq(g->valid, ALL_FIELDS, "valid 0x%x", g->valid);
    cr_assert_eq(g->nprocs, 1);
    cr_assert_eq(g->procs[0].pid, 77);
    cr_assert_str_eq(g->throttle_text, "power,thermal");
    cr_assert_str_eq(snap.driver_version, "", "unknown driver version stays empty");
    vyre_gpu_monitor_close(m);
}

/* nvidia-smi's memory.used leaves out what the driver reserves (NVML's v2
 * query); v1's used counts it: 480 MiB more on an idle H100 (driver 580),
 * which vyre-top showed before it asked v2. A driver without v2 gives v1. */
Test(gpu_monitor, memory_used_leaves_out_the_reserved_memory_as_nvidia_smi)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_RESERVED_MIB", "480", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    for (unsigned i = 0; i < 2; i++) {
        const vyre_gpu_info *g = &snap.gpus[i];
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_MEMORY));
        cr_expect_eq(g->mem_used_bytes, (1 + i) * GIB, "GPU %u: %llu", i,
                     (unsigned long long)g->mem_used_bytes);
        cr_expect_eq(g->mem_total_bytes, (80 + i) * GIB);
        cr_expect_eq(g->mem_free_bytes, (80 + i) * GIB - (1 + i) * GIB - 480 * MIB);
    }
    vyre_gpu_monitor_close(m);

    setenv("VYRE_NVML_LIBRARY", FAKENVML_OLD_LIB, 1);
    m = open_and_sample(&snap);
    cr_expect_eq(snap.gpus[0].mem_used_bytes, GIB + 480 * MIB);
    cr_expect_eq(snap.gpus[0].mem_free_bytes, 80 * GIB - GIB - 480 * MIB);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, repeated_sampling_sees_new_values)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_PROCS", "1:5:1024", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    uint64_t last_ns = snap.sampled_ns;
    for (unsigned k = 1; k < 200; k++) {
        /* Fill with garbage first: sample overwrites all of it. */
        memset(&snap, 0xA5, sizeof snap);
        cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
        cr_assert_geq(snap.sampled_ns, last_ns);
        last_ns = snap.sampled_ns;
        cr_assert_eq(snap.gpus[0].util_gpu_pct, 10u + k);
        cr_assert_eq(snap.gpus[1].util_gpu_pct, 20u + k);
        cr_assert_eq(snap.gpus[0].nprocs, 0);
        cr_assert_eq(snap.gpus[1].nprocs, 1);
        cr_assert_str_eq(snap.gpus[1].problem, "");
        cr_assert_eq(snap.gpus[0].valid, ALL_FIELDS);
    }
    /* The snapshot is plain data: a copy compares equal. */
    vyre_gpu_snapshot copy = snap;
    cr_assert_eq(memcmp(&copy, &snap, sizeof snap), 0);
    vyre_gpu_monitor_close(m);
}

Test(gpu_monitor, static_fields_are_queried_once)
{
    /* nvmlDeviceGetMaxClockInfo costs ~1.5 ms of CPU on an H200: a monitor
     * refreshing 10 times a second must not pay it every time. */
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    unsigned (*calls)(const char *) = (unsigned (*)(const char *))dlsym(h, "fakenvml_calls");
    cr_assert_not_null(calls);
    setenv("FAKENVML_GPUS", "2", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    for (int k = 0; k < 9; k++)
        cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_eq(calls("max_clock"), 2, "once per GPU");
    cr_assert_eq(calls("name"), 2);
    cr_assert_eq(calls("uuid"), 2);
    cr_assert_eq(calls("handle"), 2);
    cr_assert_eq(calls("power"), 20, "dynamic fields: every sample");
    cr_assert_eq(calls("sm_clock"), 20);
    cr_assert_eq(snap.gpus[1].sm_clock_max_mhz, 1980u);
    cr_assert_str_eq(snap.gpus[1].name, "NVIDIA Fake GPU 1");
    vyre_gpu_monitor_close(m);
    dlclose(h);
}

/* "Cheap" as work, not time: a steady-state sample makes the same small
 * number of NVML device queries every time, per GPU, however many
 * processes there are (no per-process query). The bound is structural:
 * one call per dynamic field and at most two for the process list. */
Test(gpu_monitor, a_sample_costs_a_bounded_number_of_nvml_calls)
{
    enum { PER_GPU_MAX = 12, SAMPLES = 20 };
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    unsigned (*calls)(const char *) = (unsigned (*)(const char *))dlsym(h, "fakenvml_calls");
    cr_assert_not_null(calls);
    static const char *const procs[] = {"0", "1000"};
    for (size_t pi = 0; pi < sizeof procs / sizeof procs[0]; pi++) {
        setenv("FAKENVML_GPUS", "3", 1);
        setenv("FAKENVML_MANY_PROCS", procs[pi], 1);
        static vyre_gpu_snapshot snap;
        vyre_gpu_monitor *m = open_and_sample(&snap);
        unsigned per_sample = 0;
        for (int k = 0; k < SAMPLES; k++) {
            unsigned before = calls("all");
            cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
            unsigned used = calls("all") - before;
            if (k == 0)
                per_sample = used;
            cr_assert_eq(used, per_sample, "sample %d made %u NVML calls, the first %u", k, used,
                         per_sample);
        }
        cr_assert_eq(snap.ngpus, 3);
        cr_assert_geq(snap.gpus[0].nprocs_total, (unsigned)atoi(procs[pi]));
        cr_assert_geq(per_sample, 3u, "the fake counted nothing: the check would be empty");
        cr_assert_leq(per_sample, 3u * PER_GPU_MAX, "%u NVML calls a sample for 3 GPUs, %s procs",
                      per_sample, procs[pi]);
        vyre_gpu_monitor_close(m);
    }
    dlclose(h);
}

Test(gpu_monitor, failed_static_fields_are_retried_unsupported_ones_not)
{
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    unsigned (*calls)(const char *) = (unsigned (*)(const char *))dlsym(h, "fakenvml_calls");
    cr_assert_not_null(calls);
    setenv("FAKENVML_FAIL", "name=15", 1);
    setenv("FAKENVML_UNSUPPORTED", "max_clock", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    cr_assert_not(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_NAME));
    cr_assert_not(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_SM_CLOCK_MAX));
    cr_assert_str_eq(snap.gpus[0].name, "");
    cr_assert_str_eq(snap.gpus[0].problem, "name: GPU is lost");
    cr_assert(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_UUID | VYRE_GPU_F_SM_CLOCK));
    unsetenv("FAKENVML_FAIL");
    unsetenv("FAKENVML_UNSUPPORTED");
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_str_eq(snap.gpus[0].name, "NVIDIA Fake GPU 0");
    cr_assert_str_eq(snap.gpus[0].problem, "");
    /* "Not supported" is an answer, not a failure: not asked again. */
    cr_assert_not(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_SM_CLOCK_MAX));
    cr_assert_eq(calls("max_clock"), 1);
    cr_assert_eq(calls("name"), 3, "open, first sample, second sample");
    vyre_gpu_monitor_close(m);
    dlclose(h);
}

/* ---- pure helpers --------------------------------------------------------- */

Test(gpu_monitor, field_valid_needs_every_bit)
{
    vyre_gpu_info g;
    memset(&g, 0, sizeof g);
    g.valid = VYRE_GPU_F_NAME | VYRE_GPU_F_POWER;
    cr_assert(vyre_gpu_field_valid(&g, VYRE_GPU_F_NAME));
    cr_assert(vyre_gpu_field_valid(&g, VYRE_GPU_F_NAME | VYRE_GPU_F_POWER));
    cr_assert_not(vyre_gpu_field_valid(&g, VYRE_GPU_F_NAME | VYRE_GPU_F_UUID));
    cr_assert_not(vyre_gpu_field_valid(&g, 0));
    cr_assert_not(vyre_gpu_field_valid(NULL, VYRE_GPU_F_NAME));
}

Test(gpu_monitor, throttle_text)
{
    char buf[96];
    cr_assert_str_eq(vyre__gpu_throttle_text(0, buf, sizeof buf), "none");
    cr_assert_str_eq(vyre__gpu_throttle_text(VYRE_GPU_THROTTLE_IDLE, buf, sizeof buf), "idle");
    cr_assert_str_eq(vyre__gpu_throttle_text(0x1ff, buf, sizeof buf),
                     "idle,app-clocks,power,hw,sync-boost,thermal,hw-thermal,power-brake,display");
    cr_assert_str_eq(
        vyre__gpu_throttle_text(VYRE_GPU_THROTTLE_HW_THERMAL | 0x1000, buf, sizeof buf),
        "hw-thermal,0x1000");
    cr_assert_str_eq(vyre__gpu_throttle_text(0x1000, buf, sizeof buf), "0x1000");
    char small[8];
    cr_assert_str_eq(vyre__gpu_throttle_text(0x24, small, sizeof small), "power,t");
    cr_assert_str_eq(vyre__gpu_throttle_text(0x24 | 0x1000, small, sizeof small), "power,t");
    cr_assert_null(vyre__gpu_throttle_text(1, NULL, 4));
    char one[1] = {'x'};
    cr_assert_eq(vyre__gpu_throttle_text(1, one, 0), one);
    cr_assert_eq(one[0], 'x', "size 0 writes nothing");
    cr_assert_str_eq(vyre__gpu_throttle_text(1, one, 1), "");
}

/* ---- the clocks of one GPU (vyre__gpu_monitor_clocks) ------------------------------ */

Test(gpu_monitor, clocks_of_one_gpu_are_its_sm_clock_and_reasons)
{
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_THROTTLE", "4", 1);
    vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    for (unsigned i = 0; i < 2; i++) {
        unsigned mhz = 0;
        uint64_t reasons = 0xdead;
        int valid = vyre__gpu_monitor_clocks(m, i, &mhz, &reasons);
        cr_assert_eq(valid, VYRE_GPU_F_SM_CLOCK | VYRE_GPU_F_THROTTLE, "gpu %u: 0x%x", i, valid);
        cr_assert_eq(mhz, snap.gpus[i].sm_clock_mhz, "gpu %u: the snapshot's SM clock", i);
        cr_assert_eq(reasons, snap.gpus[i].throttle_reasons, "gpu %u", i);
    }
    unsigned mhz = 7;
    cr_assert_eq(vyre__gpu_monitor_clocks(m, 2, &mhz, NULL), 0, "no GPU 2");
    cr_assert_eq(mhz, 7u, "left as it was");
    cr_assert_eq(vyre__gpu_monitor_clocks(NULL, 0, &mhz, NULL), 0);
    vyre_gpu_monitor_close(m);
}

/* The optional fields (vyre_gpu_monitor_want) cost nothing until asked
 * for: no NVML call, no valid bit; asked for, they come with the fake's
 * values. The PCI bus id is static and always there. */
Test(gpu_monitor, optional_fields_are_sampled_only_when_wanted)
{
    void *h = dlopen(FAKENVML_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    unsigned (*calls)(const char *) = (unsigned (*)(const char *))dlsym(h, "fakenvml_calls");
    cr_assert_not_null(calls);
    static const char *const optional[] = {"energy", "enc_util", "dec_util", "pcie_replay",
                                           "remapped_rows"};
    setenv("FAKENVML_GPUS", "2", 1);
    static vyre_gpu_snapshot snap;
    vyre_gpu_monitor *m = open_and_sample(&snap);
    for (size_t k = 0; k < sizeof optional / sizeof optional[0]; k++)
        cr_assert_eq(calls(optional[k]), 0u, "'%s' queried unasked", optional[k]);
    for (unsigned i = 0; i < 2; i++) {
        cr_assert_eq(snap.gpus[i].valid & VYRE_GPU_F_OPTIONAL, 0u);
        cr_assert_str_eq(snap.gpus[i].pci_bus_id, i ? "00000000:19:00.0" : "00000000:18:00.0");
        cr_assert_eq(snap.gpus[i].mem_free_bytes, (79ull) << 30);
    }
    cr_assert_eq(vyre_gpu_monitor_want(NULL, VYRE_GPU_F_OPTIONAL), VYRE_EINVAL);
    cr_assert_eq(vyre_gpu_monitor_want(m, VYRE_GPU_F_OPTIONAL | VYRE_GPU_F_POWER), 0);
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    for (unsigned i = 0; i < 2; i++) {
        const vyre_gpu_info *g = &snap.gpus[i];
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_OPTIONAL), "gpu %u valid 0x%x", i, g->valid);
        cr_assert_eq(g->energy_mj, 5000000000ull + 1000u * i);
        cr_assert_eq(g->enc_util_pct, 3 + i);
        cr_assert_eq(g->dec_util_pct, 7 + i);
        cr_assert_eq(g->pcie_replays, 11 + i);
        cr_assert_eq(g->rows_remapped_correctable, 2 * i);
        cr_assert_eq(g->rows_remapped_uncorrectable, i);
        cr_assert_eq(g->row_remap_failed, (int)i);
    }
    setenv("FAKENVML_UNSUPPORTED", "energy", 1);
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_assert_not(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_ENERGY));
    cr_assert_eq(snap.gpus[0].energy_mj, 0u);
    cr_assert(vyre_gpu_field_valid(&snap.gpus[0], VYRE_GPU_F_ENC_UTIL));
    vyre_gpu_monitor_close(m);
    dlclose(h);
}
