/*
 * metrics_dcgm.c - the DCGM-compatible families (--collector.dcgm-compat):
 * the fields NVIDIA's dcgm-exporter exports with its default counters file
 * (etc/default-counters.csv), under its metric names, types, units and
 * labels (gpu, UUID, pci_bus_id, device, modelName, Hostname,
 * DCGM_FI_DRIVER_VERSION), so that dashboards and alerts written for a
 * DCGM fleet read this exporter unchanged. Values come from the same NVML
 * sample as the vyre_gpu_ families; a field NVML cannot give on a GPU is
 * left out for that GPU, never exported as 0.
 *
 * Left out, with why (also in vyre-exporter(1)): DCGM_FI_DEV_MEMORY_TEMP
 * and DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (NVML's field-value interface,
 * which the monitor does not use), DCGM_FI_DEV_PCIE_TX_THROUGHPUT and
 * _RX_THROUGHPUT (NVML measures them by blocking 20 ms a call),
 * DCGM_FI_DEV_XID_ERRORS (needs an NVML event subscription),
 * DCGM_FI_DEV_VGPU_LICENSE_STATUS (vGPU guests only), and every
 * DCGM_FI_PROF_* field (DCGM's profiling module; NVML has no equivalent).
 */
#include "exporter_internal.h"

#include <stdio.h>

#define MIB (1024ull * 1024ull)

/* dcgm-exporter's counters, in its file's order. */
enum {
    D_SM_CLOCK,
    D_MEM_CLOCK,
    D_GPU_TEMP,
    D_POWER,
    D_ENERGY,
    D_PCIE_REPLAY,
    D_GPU_UTIL,
    D_MEM_COPY_UTIL,
    D_ENC_UTIL,
    D_DEC_UTIL,
    D_FB_FREE,
    D_FB_USED,
    D_ROWS_UNCORRECTABLE,
    D_ROWS_CORRECTABLE,
    D_ROW_REMAP_FAILURE,
    D_COUNT
};

static const struct {
    const char *name;
    const char *type;
    const char *help; /* dcgm-exporter's, as its counters file words it */
    unsigned field;
} k_dcgm[D_COUNT] = {
    [D_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
                    VYRE_GPU_F_SM_CLOCK},
    [D_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
                     VYRE_GPU_F_MEM_CLOCK},
    [D_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
                    VYRE_GPU_F_TEMPERATURE},
    [D_POWER] = {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", VYRE_GPU_F_POWER},
    [D_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                  "Total energy consumption since boot (in mJ).", VYRE_GPU_F_ENERGY},
    [D_PCIE_REPLAY] = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter",
                       "Total number of PCIe retries.", VYRE_GPU_F_PCIE_REPLAY},
    [D_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", VYRE_GPU_F_UTIL},
    [D_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
                         VYRE_GPU_F_UTIL},
    [D_ENC_UTIL] = {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).",
                    VYRE_GPU_F_ENC_UTIL},
    [D_DEC_UTIL] = {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).",
                    VYRE_GPU_F_DEC_UTIL},
    [D_FB_FREE] = {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
                   VYRE_GPU_F_MEMORY},
    [D_FB_USED] = {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
                   VYRE_GPU_F_MEMORY},
    [D_ROWS_UNCORRECTABLE] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
                              "Number of remapped rows for uncorrectable errors",
                              VYRE_GPU_F_REMAPPED_ROWS},
    [D_ROWS_CORRECTABLE] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
                            "Number of remapped rows for correctable errors",
                            VYRE_GPU_F_REMAPPED_ROWS},
    [D_ROW_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge",
                             "Whether remapping of rows has failed", VYRE_GPU_F_REMAPPED_ROWS},
};

/* Field f of g in dcgm-exporter's unit (an integer everywhere but power). */
static double dcgm_value(const vyre_gpu_info *g, int f)
{
    switch (f) {
    case D_SM_CLOCK:
        return g->sm_clock_mhz;
    case D_MEM_CLOCK:
        return g->mem_clock_mhz;
    case D_GPU_TEMP:
        return g->temperature_c;
    case D_POWER:
        return g->power_mw / 1000.0;
    case D_ENERGY:
        return (double)g->energy_mj;
    case D_PCIE_REPLAY:
        return g->pcie_replays;
    case D_GPU_UTIL:
        return g->util_gpu_pct;
    case D_MEM_COPY_UTIL:
        return g->util_mem_pct;
    case D_ENC_UTIL:
        return g->enc_util_pct;
    case D_DEC_UTIL:
        return g->dec_util_pct;
    case D_FB_FREE:
        return (double)(g->mem_free_bytes / MIB);
    case D_FB_USED:
        return (double)(g->mem_used_bytes / MIB);
    case D_ROWS_UNCORRECTABLE:
        return g->rows_remapped_uncorrectable;
    case D_ROWS_CORRECTABLE:
        return g->rows_remapped_correctable;
    case D_ROW_REMAP_FAILURE:
        return g->row_remap_failed;
    }
    return 0;
}

#define DCGM_NLABELS 7

void exp_render_dcgm(exporter *x, expo *e)
{
    if (!x->o.dcgm_compat || !x->gpu_ok)
        return;
    unsigned n = x->gsnap.ngpus < VYRE_GPU_MAX ? x->gsnap.ngpus : VYRE_GPU_MAX;
    char idx[VYRE_GPU_MAX][12], dev[VYRE_GPU_MAX][20];
    expo_label lab[VYRE_GPU_MAX][DCGM_NLABELS];
    for (unsigned i = 0; i < n; i++) {
        const vyre_gpu_info *g = &x->gsnap.gpus[i];
        snprintf(idx[i], sizeof idx[i], "%d", g->index);
        snprintf(dev[i], sizeof dev[i], "nvidia%d", g->index);
        lab[i][0] = (expo_label){"gpu", idx[i]};
        lab[i][1] = (expo_label){"UUID", g->uuid};
        lab[i][2] = (expo_label){"pci_bus_id", g->pci_bus_id};
        lab[i][3] = (expo_label){"device", dev[i]};
        lab[i][4] = (expo_label){"modelName", g->name};
        lab[i][5] = (expo_label){"Hostname", x->hostname};
        lab[i][6] = (expo_label){"DCGM_FI_DRIVER_VERSION", x->gsnap.driver_version};
    }
    for (int f = 0; f < D_COUNT; f++) {
        expo_family(e, k_dcgm[f].name, k_dcgm[f].type, k_dcgm[f].help);
        for (unsigned i = 0; i < n; i++) {
            const vyre_gpu_info *g = &x->gsnap.gpus[i];
            if (vyre_gpu_field_valid(g, k_dcgm[f].field))
                expo_sample(e, k_dcgm[f].name, lab[i], DCGM_NLABELS, NULL, dcgm_value(g, f));
        }
    }
}
