/*
 * vyre/cuda.h - the CUDA driver, loaded at run time.
 *
 * This header is part of libvyrecore's public API.
 *
 * libvyrecore never links libcuda: the driver is dlopen()ed on first use
 * ("libcuda.so.1", or the file named by $VYRE_CUDA_LIBRARY) and every entry
 * point is resolved through cuGetProcAddress for the CUDA version the library
 * was built against. A machine without a driver gets VYRE_ENODRIVER with a
 * hint, never a crash, so every tool starts on machines without a GPU.
 */
#ifndef VYRE_CUDA_H
#define VYRE_CUDA_H

#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Capabilities of one device, filled by vyre_cuda_device_info(). */
typedef struct vyre_device_info {
    int ordinal;                  /* CUDA device ordinal */
    char name[256];               /* e.g. "NVIDIA H100 80GB HBM3" */
    char uuid[48];                /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi */
    char pci_bus_id[32];          /* "0000:18:00.0" or empty when unknown */
    char arch[16];                /* device generation, e.g. "sm_90" */
    int cc_major, cc_minor;       /* compute capability */
    int sm_count;                 /* streaming multiprocessors */
    uint64_t total_mem_bytes;     /* global memory */
    int cooperative_launch;       /* 1 when cuLaunchCooperativeKernel is supported */
    int max_threads_per_block;    /* launch limit */
    int max_shared_mem_per_block; /* opt-in maximum, bytes */
    int l2_cache_bytes;           /* L2 size, bytes */
    int memory_bus_width_bits;    /* 0 when unknown */
    int ecc_enabled;              /* 1, 0 */
    int driver_version;           /* cuDriverGetVersion, e.g. 13000 */
} vyre_device_info;

/*
 * Loads the driver and calls cuInit(0), once per process (thread-safe; later
 * calls return the first call's result and detail). Runs vyre_jitcache_setup()
 * first, because the driver reads its JIT-cache variables in cuInit.
 * Returns 0, VYRE_ENODRIVER (no or unusable libcuda), VYRE_EENV (bad
 * $VYRE_CUDA_LIBRARY or JIT-cache variables), VYRE_ENODEV (driver present, no
 * device), or VYRE_ECUDA.
 */
VYRE_EXTERN int vyre_cuda_init(vyre_error *err);

/* Driver version as cuDriverGetVersion reports it (e.g. 13000). */
VYRE_EXTERN int vyre_cuda_driver_version(int *version, vyre_error *err);

/* Number of CUDA devices. Calls vyre_cuda_init(). */
VYRE_EXTERN int vyre_cuda_device_count(int *count, vyre_error *err);

/* Fills *info for device `ordinal`. VYRE_ENODEV when out of range. */
VYRE_EXTERN int vyre_cuda_device_info(int ordinal, vyre_device_info *info, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_CUDA_H */
