/*
 * nvml_internal.h - what the NVML module (nvml.c) gives the rest of libcore
 * and its tests beyond vyre/gpu.h: a monitor's latest clocks of one GPU
 * (the measuring loop reads them between samples) and the text of a
 * throttle-reason mask. Not exported.
 */
#ifndef VYRE_CUDA_NVML_INTERNAL_H
#define VYRE_CUDA_NVML_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/gpu.h"

/*
 * The SM clock (MHz) and clocks-event reasons (VYRE_GPU_THROTTLE_* bits) of
 * GPU `index` alone: two NVML calls, for a reading after every benchmark
 * sample (vyre_gpu_monitor_sample also lists processes and their use,
 * which costs far more). Returns the vyre_gpu_field bits it filled
 * (VYRE_GPU_F_SM_CLOCK, VYRE_GPU_F_THROTTLE); 0 for a NULL monitor or an
 * index it does not have.
 */
int vyre__gpu_monitor_clocks(vyre_gpu_monitor *m, unsigned index, unsigned *sm_mhz,
                             uint64_t *reasons);

/*
 * Short words for the VYRE_GPU_THROTTLE_* bits in `reasons`, comma-separated
 * in bit order: "idle", "app-clocks", "power" (software power cap), "hw",
 * "sync-boost", "thermal" (software thermal), "hw-thermal", "power-brake",
 * "display"; unknown bits as "0x...". "none" for 0. Truncated to fit size
 * (always terminated when size > 0). Returns buf. Thread-safe.
 */
const char *vyre__gpu_throttle_text(uint64_t reasons, char *buf, size_t size);

#endif /* VYRE_CUDA_NVML_INTERNAL_H */
