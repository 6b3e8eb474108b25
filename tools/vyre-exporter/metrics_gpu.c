/*
 * metrics_gpu.c - the per-GPU families (labels gpu, uuid, name), from the
 * NVML sample of this scrape, and vyre_gpu_monitor_up. A field NVML cannot
 * give (not supported, no permission) is left out for that GPU rather than
 * exported as 0.
 */
#include "exporter_internal.h"

#include <stdio.h>

/* NVML's clocks-event (throttle) reasons, one gauge each. */
static const struct {
    uint64_t bit;
    const char *name;
} k_reasons[] = {
    {VYRE_GPU_THROTTLE_IDLE, "idle"},
    {VYRE_GPU_THROTTLE_APP_CLOCKS, "applications_clocks_setting"},
    {VYRE_GPU_THROTTLE_SW_POWER, "sw_power_cap"},
    {VYRE_GPU_THROTTLE_HW, "hw_slowdown"},
    {VYRE_GPU_THROTTLE_SYNC_BOOST, "sync_boost"},
    {VYRE_GPU_THROTTLE_SW_THERMAL, "sw_thermal_slowdown"},
    {VYRE_GPU_THROTTLE_HW_THERMAL, "hw_thermal_slowdown"},
    {VYRE_GPU_THROTTLE_POWER_BRAKE, "hw_power_brake_slowdown"},
    {VYRE_GPU_THROTTLE_DISPLAY, "display_clock_setting"},
};

enum {
    F_UTIL,
    F_MEMUTIL,
    F_MEMUSED,
    F_MEMTOTAL,
    F_SMCLK,
    F_MEMCLK,
    F_SMCLKMAX,
    F_TEMP,
    F_POWER,
    F_PLIMIT,
    F_PROCS,
    F_COUNT
};

static const struct {
    const char *name;
    const char *help;
    unsigned field;
} k_fam[F_COUNT] = {
    [F_UTIL] = {"vyre_gpu_utilization_ratio",
                "Share of the last NVML sample period in which a kernel ran on the GPU (0-1).",
                VYRE_GPU_F_UTIL},
    [F_MEMUTIL] = {"vyre_gpu_memory_utilization_ratio",
                   "Share of the last NVML sample period in which device memory was read or "
                   "written (0-1).",
                   VYRE_GPU_F_UTIL},
    [F_MEMUSED] = {"vyre_gpu_memory_used_bytes", "Device memory in use, bytes.", VYRE_GPU_F_MEMORY},
    [F_MEMTOTAL] = {"vyre_gpu_memory_total_bytes", "Device memory usable, bytes.",
                    VYRE_GPU_F_MEMORY},
    [F_SMCLK] = {"vyre_gpu_sm_clock_hertz", "Current SM clock, hertz.", VYRE_GPU_F_SM_CLOCK},
    [F_MEMCLK] = {"vyre_gpu_memory_clock_hertz", "Current memory clock, hertz.",
                  VYRE_GPU_F_MEM_CLOCK},
    [F_SMCLKMAX] = {"vyre_gpu_sm_clock_max_hertz", "Maximum SM clock, hertz.",
                    VYRE_GPU_F_SM_CLOCK_MAX},
    [F_TEMP] = {"vyre_gpu_temperature_celsius", "GPU core temperature, degrees Celsius.",
                VYRE_GPU_F_TEMPERATURE},
    [F_POWER] = {"vyre_gpu_power_watts", "Board power draw, watts.", VYRE_GPU_F_POWER},
    [F_PLIMIT] = {"vyre_gpu_power_limit_watts", "Enforced board power limit, watts.",
                  VYRE_GPU_F_POWER_LIMIT},
    [F_PROCS] = {"vyre_gpu_processes", "Compute processes NVML lists on the GPU.",
                 VYRE_GPU_F_PROCS},
};

static double value_of(const vyre_gpu_info *g, int f)
{
    switch (f) {
    case F_UTIL:
        return g->util_gpu_pct / 100.0;
    case F_MEMUTIL:
        return g->util_mem_pct / 100.0;
    case F_MEMUSED:
        return (double)g->mem_used_bytes;
    case F_MEMTOTAL:
        return (double)g->mem_total_bytes;
    case F_SMCLK:
        return g->sm_clock_mhz * 1e6;
    case F_MEMCLK:
        return g->mem_clock_mhz * 1e6;
    case F_SMCLKMAX:
        return g->sm_clock_max_mhz * 1e6;
    case F_TEMP:
        return g->temperature_c;
    case F_POWER:
        return g->power_mw / 1000.0;
    case F_PLIMIT:
        return g->power_limit_mw / 1000.0;
    case F_PROCS:
        return g->nprocs_total;
    }
    return 0;
}

void exp_render_gpus(exporter *x, expo *e)
{
    expo_family(e, "vyre_gpu_monitor_up", "gauge",
                "1 when NVML answered this scrape, 0 when it is unavailable (no driver, "
                "no permission, or --no-gpu); the reason is in vyre_gpu_monitor_info.");
    expo_sample(e, "vyre_gpu_monitor_up", NULL, 0, NULL, x->gpu_ok ? 1 : 0);
    expo_family(e, "vyre_gpu_monitor_info", "gauge",
                "Always 1: the NVML driver version, and why NVML is unavailable when it is.");
    {
        expo_label l[2] = {{"driver_version", x->gpu_ok ? x->gsnap.driver_version : ""},
                           {"problem", x->gpu_ok ? "" : x->gpu_msg}};
        expo_sample(e, "vyre_gpu_monitor_info", l, 2, NULL, 1);
    }
    if (!x->gpu_ok)
        return;
    unsigned n = x->gsnap.ngpus < VYRE_GPU_MAX ? x->gsnap.ngpus : VYRE_GPU_MAX;
    char idx[VYRE_GPU_MAX][12];
    expo_label lab[VYRE_GPU_MAX][3];
    for (unsigned i = 0; i < n; i++) {
        const vyre_gpu_info *g = &x->gsnap.gpus[i];
        snprintf(idx[i], sizeof idx[i], "%d", g->index);
        lab[i][0] = (expo_label){"gpu", idx[i]};
        lab[i][1] = (expo_label){"uuid", g->uuid};
        lab[i][2] = (expo_label){"name", g->name};
    }
    for (int f = 0; f < F_COUNT; f++) {
        expo_family(e, k_fam[f].name, "gauge", k_fam[f].help);
        for (unsigned i = 0; i < n; i++) {
            const vyre_gpu_info *g = &x->gsnap.gpus[i];
            if (vyre_gpu_field_valid(g, k_fam[f].field))
                expo_sample(e, k_fam[f].name, lab[i], 3, NULL, value_of(g, f));
        }
    }
    expo_family(e, "vyre_gpu_clocks_event_reason", "gauge",
                "1 when NVML reports this clocks-event (throttle) reason active on the GPU.");
    for (unsigned i = 0; i < n; i++) {
        const vyre_gpu_info *g = &x->gsnap.gpus[i];
        if (!vyre_gpu_field_valid(g, VYRE_GPU_F_THROTTLE))
            continue;
        for (size_t r = 0; r < sizeof k_reasons / sizeof k_reasons[0]; r++) {
            expo_label reason = {"reason", k_reasons[r].name};
            expo_sample(e, "vyre_gpu_clocks_event_reason", lab[i], 3, &reason,
                        (g->throttle_reasons & k_reasons[r].bit) ? 1 : 0);
        }
    }
}
