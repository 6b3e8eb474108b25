/*
 * test_gpu_nvml.c - the GPU monitor (libcore/src/cuda/nvml.c) against the real
 * NVML (GPU machine).
 *
 * Skips, with the reason, when libnvidia-ml.so.1 cannot be loaded. Checks
 * that the fields NVML gives are plausible for a data-centre GPU, and that
 * this very process shows up in the process list once it holds a CUDA
 * context. Each test logs what it sampled, so the log doubles as a record
 * of what NVML says on the machine.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_internal.h"
#include "testutil.h"
#include "vyre/cuda.h"
#include "vyre/gpu.h"

#define GIB (1024ull * 1024ull * 1024ull)
#define MIB (1024ull * 1024ull)

static const char *const g_vars[] = {"VYRE_NVML_LIBRARY", "VYRE_CUDA_LIBRARY",  "HOME",
                                     "XDG_CACHE_HOME",    "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH",
                                     "CUDA_CACHE_MAXSIZE"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_xdg[600];

static void nvml_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    /* vyre_cuda_init sets up the JIT cache under HOME/XDG_CACHE_HOME. */
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg", g_tmp);
    setenv("HOME", g_tmp, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
}

static void nvml_teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(gpu_nvml, .init = nvml_setup, .fini = nvml_teardown);

/* Skips unless NVML loads and sees a GPU; else returns an open monitor. */
static vyre_gpu_monitor *need_nvml(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        cr_skip_test("no NVML on this machine: cannot dlopen libnvidia-ml.so.1 (%s)",
                     why ? why : "unknown reason");
    }
    dlclose(h);
    vyre_gpu_monitor *m = NULL;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_gpu_monitor_open(&m, &err);
    cr_assert_eq(rc, 0, "libnvidia-ml.so.1 loads, but: %s: %s (hint: %s)", vyre_err_name(rc),
                 err.message, err.hint);
    vyre_gpu_snapshot snap;
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    if (snap.ngpus == 0) {
        vyre_gpu_monitor_close(m);
        cr_skip_test("NVML works but sees no GPU");
    }
    return m;
}

static void log_gpu(const vyre_gpu_info *g)
{
    char temp[16] = "-", power[32] = "-", limit[32] = "-";
    if (vyre_gpu_field_valid(g, VYRE_GPU_F_TEMPERATURE))
        snprintf(temp, sizeof temp, "%d C", g->temperature_c);
    if (vyre_gpu_field_valid(g, VYRE_GPU_F_POWER))
        snprintf(power, sizeof power, "%.1f W", g->power_mw / 1000.0);
    if (vyre_gpu_field_valid(g, VYRE_GPU_F_POWER_LIMIT))
        snprintf(limit, sizeof limit, "%.1f W", g->power_limit_mw / 1000.0);
    cr_log_info("gpu %d: %s %s valid=0x%x util=%u%%/%u%% mem=%llu/%llu MiB sm=%u/%u MHz "
                "mem=%u MHz temp=%s power=%s/%s throttle=%s procs=%u/%u%s%s%s",
                g->index, g->name, g->uuid, g->valid, g->util_gpu_pct, g->util_mem_pct,
                (unsigned long long)(g->mem_used_bytes / MIB),
                (unsigned long long)(g->mem_total_bytes / MIB), g->sm_clock_mhz,
                g->sm_clock_max_mhz, g->mem_clock_mhz, temp, power, limit,
                vyre_gpu_field_valid(g, VYRE_GPU_F_THROTTLE) ? g->throttle_text : "-", g->nprocs,
                g->nprocs_total, g->procs_truncated ? " (truncated)" : "",
                g->problem[0] ? " problem: " : "", g->problem);
}

Test(gpu_nvml, real_gpu_fields_are_plausible)
{
    vyre_gpu_monitor *m = need_nvml();
    vyre_gpu_snapshot snap;
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    cr_log_info("driver %s, %u GPU(s)", snap.driver_version, snap.ngpus_total);
    cr_assert_neq(snap.driver_version[0], '\0', "NVML gives the driver version");
    for (unsigned i = 0; i < snap.ngpus; i++) {
        const vyre_gpu_info *g = &snap.gpus[i];
        log_gpu(g);
        cr_assert_eq(g->index, (int)i);
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_NAME | VYRE_GPU_F_UUID | VYRE_GPU_F_MEMORY),
                  "gpu %u: valid 0x%x, problem '%s'", i, g->valid, g->problem);
        cr_assert(strstr(g->name, "NVIDIA"), "name '%s'", g->name);
        cr_assert_eq(strncmp(g->uuid, "GPU-", 4), 0, "uuid '%s'", g->uuid);
        cr_assert_gt(g->mem_total_bytes, GIB);
        cr_assert_leq(g->mem_used_bytes, g->mem_total_bytes);
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_SM_CLOCK), "SM clock unknown");
        cr_assert_gt(g->sm_clock_mhz, 0);
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_SM_CLOCK_MAX))
            cr_assert_geq(g->sm_clock_max_mhz, g->sm_clock_mhz);
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_UTIL)) {
            cr_assert_leq(g->util_gpu_pct, 100);
            cr_assert_leq(g->util_mem_pct, 100);
        }
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_TEMPERATURE)) {
            cr_assert_geq(g->temperature_c, 10);
            cr_assert_leq(g->temperature_c, 110);
        }
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_POWER))
            cr_assert_gt(g->power_mw, 0);
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_POWER_LIMIT))
            cr_assert_gt(g->power_limit_mw, 0);
        if (vyre_gpu_field_valid(g, VYRE_GPU_F_THROTTLE))
            cr_assert_neq(g->throttle_text[0], '\0');
    }
    vyre_gpu_monitor_close(m);
}

/* What a sample costs is asserted as work done (NVML calls per sample,
 * through the fake NVML: tests/unit/test_nvml.c), never as time; here the
 * time is only logged. */
Test(gpu_nvml, repeated_sampling_is_stable)
{
    vyre_gpu_monitor *m = need_nvml();
    static vyre_gpu_snapshot snap; /* about 20 KiB: off the stack */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    enum { N = 50 };
    unsigned first_valid = 0;
    for (int k = 0; k < N; k++) {
        cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
        if (k == 0)
            first_valid = snap.gpus[0].valid;
        /* Which fields NVML supports does not change from one sample to the next
         * (processes may come and go, but the query itself keeps working). */
        cr_assert_eq(snap.gpus[0].valid, first_valid, "sample %d: 0x%x vs 0x%x", k,
                     snap.gpus[0].valid, first_valid);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us =
        ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / N;
    cr_log_info("one sample of %u GPU(s): %.1f us (information, not a pass/fail figure)",
                snap.ngpus, us);
    vyre_gpu_monitor_close(m);
}

/* Where this process's pid is in g's list, or -1. */
static int find_pid(const vyre_gpu_info *g, uint32_t pid)
{
    for (unsigned k = 0; k < g->nprocs; k++)
        if (g->procs[k].pid == pid)
            return (int)k;
    return -1;
}

Test(gpu_nvml, this_process_appears_once_it_holds_a_context)
{
    vyre_gpu_monitor *m = need_nvml();
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc)
        cr_skip_test("NVML works but CUDA does not: %s: %s", vyre_err_name(rc), e.message);
    const vyre__cuda_fns *cu = vyre__cuda();
    cr_assert_not_null(cu);
    cr_assert_not_null(cu->cuDevicePrimaryCtxRetain);
    vyre_device_info info;
    cr_assert_eq(vyre_cuda_device_info(0, &info, &e), 0, "%s", e.message);

    static vyre_gpu_snapshot snap;
    cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
    /* CUDA device 0 is the NVML GPU with the same UUID (CUDA may order
     * devices differently, and CUDA_VISIBLE_DEVICES may hide some). */
    int gi = -1;
    for (unsigned i = 0; i < snap.ngpus; i++)
        if (strcmp(snap.gpus[i].uuid, info.uuid) == 0)
            gi = (int)i;
    cr_assert_geq(gi, 0, "no NVML GPU has CUDA device 0's uuid %s", info.uuid);
    if (!vyre_gpu_field_valid(&snap.gpus[gi], VYRE_GPU_F_PROCS))
        cr_skip_test("NVML gives no process list here: %s", snap.gpus[gi].problem);
    const uint32_t me = (uint32_t)getpid();
    cr_assert_lt(find_pid(&snap.gpus[gi], me), 0, "listed before it has a context");

    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf;
    cr_assert_eq(cu->cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    cr_assert_eq(cu->cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    cr_assert_eq(cu->cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    cr_assert_eq(cu->cuMemAlloc(&buf, 256 * MIB), CUDA_SUCCESS);

    /* NVML's process list may lag the context by a moment. */
    int k = -1;
    for (int tries = 0; tries < 50 && k < 0; tries++) {
        cr_assert_eq(vyre_gpu_monitor_sample(m, &snap, NULL), 0);
        k = find_pid(&snap.gpus[gi], me);
        if (k < 0)
            usleep(100 * 1000);
    }
    log_gpu(&snap.gpus[gi]);
    cr_assert_geq(k, 0, "pid %u not among NVML's %u process(es) on GPU %d after 5 s", (unsigned)me,
                  snap.gpus[gi].nprocs_total, gi);
    const vyre_gpu_process *p = &snap.gpus[gi].procs[k];
    if (p->used_valid) {
        cr_log_info("this process (pid %u) is listed on GPU %d with %llu MiB", (unsigned)me, gi,
                    (unsigned long long)(p->used_bytes / MIB));
        cr_assert_geq(p->used_bytes, 256 * MIB, "holds at least its 256 MiB buffer");
    } else {
        cr_log_info("this process (pid %u) is listed on GPU %d, memory unknown", (unsigned)me, gi);
    }

    cu->cuMemFree(buf);
    cu->cuDevicePrimaryCtxRelease(dev);
    vyre_gpu_monitor_close(m);
}

/* The fields the exporter's DCGM-compatible families add, on a real
 * driver: the PCI bus id as nvidia-smi shows it (checks the layout of
 * nvmlPciInfo_t that nvml.c declares), NVML's free memory, and the
 * optional fields once asked for; the board's energy counter never goes
 * back. Encoder, decoder and row-remapping support varies by board (an
 * H100 has no encoder): logged, not required. */
Test(gpu_nvml, dcgm_fields_are_plausible)
{
    vyre_gpu_monitor *m = need_nvml();
    static vyre_gpu_snapshot a, b;
    cr_assert_eq(vyre_gpu_monitor_want(m, VYRE_GPU_F_OPTIONAL), 0);
    cr_assert_eq(vyre_gpu_monitor_sample(m, &a, NULL), 0);
    usleep(200 * 1000);
    cr_assert_eq(vyre_gpu_monitor_sample(m, &b, NULL), 0);
    for (unsigned i = 0; i < b.ngpus; i++) {
        const vyre_gpu_info *g = &b.gpus[i];
        cr_log_info("gpu %u: pci %s, free %llu, energy %llu mJ, enc %u%%, dec %u%%, replays %u, "
                    "rows %u/%u failed %d, valid 0x%x, problem '%s'",
                    i, g->pci_bus_id, (unsigned long long)g->mem_free_bytes,
                    (unsigned long long)g->energy_mj, g->enc_util_pct, g->dec_util_pct,
                    g->pcie_replays, g->rows_remapped_correctable, g->rows_remapped_uncorrectable,
                    g->row_remap_failed, g->valid, g->problem);
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_PCI_BUS_ID), "gpu %u: no PCI bus id", i);
        unsigned dom, bus, dev, fn;
        char end;
        cr_assert_eq(strlen(g->pci_bus_id), 16u, "'%s'", g->pci_bus_id);
        cr_assert_eq(sscanf(g->pci_bus_id, "%8x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &end), 4,
                     "'%s' is not DDDDDDDD:BB:DD.F", g->pci_bus_id);
        cr_assert_leq(g->mem_free_bytes, g->mem_total_bytes);
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_ENERGY), "gpu %u: no energy: '%s'", i,
                  g->problem);
        cr_assert_gt(g->energy_mj, 0u);
        cr_assert_geq(g->energy_mj, a.gpus[i].energy_mj);
        cr_assert(vyre_gpu_field_valid(g, VYRE_GPU_F_PCIE_REPLAY), "gpu %u: '%s'", i, g->problem);
    }
    vyre_gpu_monitor_close(m);
}
