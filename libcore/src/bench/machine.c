/*
 * machine.c - small facts about the machine a run describes: the datasheet
 * bandwidth of known GPUs.
 */
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"

/* ---- facts about the machine ----------------------------------------------------- */

double vyre_bench_peak_bandwidth(const char *gpu_name, const char **label)
{
    static const struct {
        const char *needle, *also, *label;
        double bps;
    } parts[] = {
        {"H200", NULL, "H200 (4.8 TB/s)", 4.8e12},
        {"H100", "PCIe", "H100 PCIe (2.0 TB/s)", 2.0e12},
        {"H100", NULL, "H100 SXM (3.35 TB/s)", 3.35e12},
    };
    if (label)
        *label = NULL;
    for (size_t i = 0; gpu_name && i < VYRE_ARRAY_SIZE(parts); i++) {
        if (!strstr(gpu_name, parts[i].needle))
            continue;
        if (parts[i].also && !strcasestr(gpu_name, parts[i].also))
            continue;
        if (label)
            *label = parts[i].label;
        return parts[i].bps;
    }
    return 0;
}
