/*
 * vyre/gpu.h - GPU monitoring through NVML, loaded at run time.
 *
 * This header is part of libvyrecore's public API.
 *
 * libvyrecore never links NVML: vyre_gpu_monitor_open() dlopen()s
 * "libnvidia-ml.so.1" (or the file named by $VYRE_NVML_LIBRARY) and resolves
 * the few entry points it uses by name. A machine without NVML gets
 * VYRE_ENONVML with a hint, never a crash, so vyre-top starts everywhere.
 *
 * A sample is plain data (fixed-size arrays, no pointers): copy it, keep it
 * as history, hand it to pure formatting functions. Every field may be
 * unknown - NVML answers NVML_ERROR_NOT_SUPPORTED for power on some boards,
 * NO_PERMISSION for others in containers - and such a field is marked
 * invalid in the GPU's `valid` bitmask instead of being reported as 0. A
 * failing field never hides the rest of its GPU. Front ends print unknown
 * fields as '-' (text) or null (JSON); check with vyre_gpu_field_valid().
 *
 * vyre_gpu_join() puts a sample's processes beside the telemetry pages a
 * tracker read (vyre/telemetry.h): the one rule by which vyre-top and
 * vyre-exporter tell which GPU a process runs on.
 */
#ifndef VYRE_GPU_H
#define VYRE_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_GPU_MAX       16 /* GPUs per snapshot; more are counted, not sampled */
#define VYRE_GPU_MAX_PROCS 64 /* processes per GPU; more are counted, not listed */
#define VYRE_GPU_NAME_MAX  96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define VYRE_GPU_UUID_MAX  96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define VYRE_GPU_TEXT_MAX  96 /* throttle text, problem text, driver version */
#define VYRE_GPU_PCI_MAX   32 /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */

/* Fields of vyre_gpu_info, as bits of its `valid` mask. */
typedef enum vyre_gpu_field {
    VYRE_GPU_F_NAME = 1u << 0,         /* name */
    VYRE_GPU_F_UUID = 1u << 1,         /* uuid */
    VYRE_GPU_F_UTIL = 1u << 2,         /* util_gpu_pct, util_mem_pct */
    VYRE_GPU_F_MEMORY = 1u << 3,       /* mem_used_bytes, mem_total_bytes */
    VYRE_GPU_F_SM_CLOCK = 1u << 4,     /* sm_clock_mhz */
    VYRE_GPU_F_MEM_CLOCK = 1u << 5,    /* mem_clock_mhz */
    VYRE_GPU_F_SM_CLOCK_MAX = 1u << 6, /* sm_clock_max_mhz */
    VYRE_GPU_F_TEMPERATURE = 1u << 7,  /* temperature_c */
    VYRE_GPU_F_POWER = 1u << 8,        /* power_mw */
    VYRE_GPU_F_POWER_LIMIT = 1u << 9,  /* power_limit_mw */
    VYRE_GPU_F_THROTTLE = 1u << 10,    /* throttle_reasons, throttle_text */
    VYRE_GPU_F_PROCS = 1u << 11,       /* nprocs, nprocs_total, procs_truncated, procs[] */
    VYRE_GPU_F_PCI_BUS_ID = 1u << 12,  /* pci_bus_id */
    /* Optional: sampled only when asked for with vyre_gpu_monitor_want(). */
    VYRE_GPU_F_ENERGY = 1u << 13,        /* energy_mj */
    VYRE_GPU_F_ENC_UTIL = 1u << 14,      /* enc_util_pct */
    VYRE_GPU_F_DEC_UTIL = 1u << 15,      /* dec_util_pct */
    VYRE_GPU_F_PCIE_REPLAY = 1u << 16,   /* pcie_replays */
    VYRE_GPU_F_REMAPPED_ROWS = 1u << 17, /* rows_remapped_*, row_remap_failed */
} vyre_gpu_field;

/* The optional fields of vyre_gpu_monitor_want(). */
#define VYRE_GPU_F_OPTIONAL                                                                        \
    (VYRE_GPU_F_ENERGY | VYRE_GPU_F_ENC_UTIL | VYRE_GPU_F_DEC_UTIL | VYRE_GPU_F_PCIE_REPLAY |      \
     VYRE_GPU_F_REMAPPED_ROWS)

/* Bits of vyre_gpu_info.throttle_reasons: NVML's clocks-event (throttle)
 * reasons, same values. */
#define VYRE_GPU_THROTTLE_IDLE        0x001ull /* GPU idle: clocks low on purpose */
#define VYRE_GPU_THROTTLE_APP_CLOCKS  0x002ull /* application clocks setting */
#define VYRE_GPU_THROTTLE_SW_POWER    0x004ull /* software power cap */
#define VYRE_GPU_THROTTLE_HW          0x008ull /* hardware slowdown */
#define VYRE_GPU_THROTTLE_SYNC_BOOST  0x010ull /* sync boost */
#define VYRE_GPU_THROTTLE_SW_THERMAL  0x020ull /* software thermal slowdown */
#define VYRE_GPU_THROTTLE_HW_THERMAL  0x040ull /* hardware thermal slowdown */
#define VYRE_GPU_THROTTLE_POWER_BRAKE 0x080ull /* hardware power brake */
#define VYRE_GPU_THROTTLE_DISPLAY     0x100ull /* display clock setting */

/* One process on a GPU: a compute process, or a graphics one (listed once
 * when it is both). */
typedef struct vyre_gpu_process {
    uint32_t pid;        /* as NVML reports it (the host's PID namespace) */
    int used_valid;      /* 0 when NVML cannot tell the process's memory */
    uint64_t used_bytes; /* GPU memory held by the process; 0 when !used_valid */
    /* Its share of the GPU since the previous sample of this monitor
     * (nvmlDeviceGetProcessUtilization; the newest sample NVML holds for the
     * process). util_valid is 0 when NVML has no sample for it in that
     * window, does not support the query, or is too old to have it. */
    int util_valid;
    unsigned sm_util_pct;  /* SM (kernel) utilisation, 0..100; 0 when !util_valid */
    unsigned mem_util_pct; /* memory-controller utilisation, 0..100 */
    int graphics;          /* 1: NVML lists it as a graphics process only */
} vyre_gpu_process;

/* One GPU in a sample. A field is meaningful only when its bit is set in
 * `valid`; otherwise it is zero (or empty). */
typedef struct vyre_gpu_info {
    uint32_t valid;                        /* vyre_gpu_field bits */
    int index;                             /* NVML index (nvidia-smi's numbering) */
    char name[VYRE_GPU_NAME_MAX];          /* e.g. "NVIDIA H100 80GB HBM3" */
    char uuid[VYRE_GPU_UUID_MAX];          /* "GPU-xxxxxxxx-...", as nvidia-smi */
    unsigned util_gpu_pct;                 /* kernel-busy share of the last sample period, 0..100 */
    unsigned util_mem_pct;                 /* memory-controller busy share, 0..100 */
    uint64_t mem_used_bytes;               /* as nvidia-smi's memory.used: without what the
                                              driver reserves (NVML's v2 query; a driver
                                              without it: v1's, which counts it) */
    uint64_t mem_total_bytes;              /* total usable memory */
    unsigned sm_clock_mhz;                 /* current SM clock */
    unsigned mem_clock_mhz;                /* current memory clock */
    unsigned sm_clock_max_mhz;             /* maximum SM clock */
    int temperature_c;                     /* GPU core temperature, degrees C */
    unsigned power_mw;                     /* current board power draw, milliwatts */
    unsigned power_limit_mw;               /* enforced power limit, milliwatts */
    uint64_t throttle_reasons;             /* VYRE_GPU_THROTTLE_* bits; 0: running free */
    char throttle_text[VYRE_GPU_TEXT_MAX]; /* vyre__gpu_throttle_text() of the above */
    unsigned nprocs;                       /* entries in procs[] */
    unsigned nprocs_total;                 /* processes NVML reported (may exceed nprocs) */
    int procs_truncated;                   /* 1 when nprocs_total > nprocs */
    vyre_gpu_process procs[VYRE_GPU_MAX_PROCS]; /* largest memory first, then by pid */
    /* Why fields are unknown, when it is not merely "not supported": the
     * first other NVML failure of this sample, e.g. "power: Insufficient
     * Permissions"; empty when none. For tooltips and logs. */
    char problem[VYRE_GPU_TEXT_MAX];
    char pci_bus_id[VYRE_GPU_PCI_MAX]; /* "00000000:3B:00.0", as nvidia-smi shows it */
    uint64_t mem_free_bytes;           /* NVML's free memory (VYRE_GPU_F_MEMORY) */
    /* The optional fields (vyre_gpu_monitor_want): */
    uint64_t energy_mj;                   /* energy used since the driver loaded, millijoules */
    unsigned enc_util_pct;                /* video encoder busy share, 0..100 */
    unsigned dec_util_pct;                /* video decoder busy share, 0..100 */
    unsigned pcie_replays;                /* PCIe replays (retries) since the driver loaded */
    unsigned rows_remapped_correctable;   /* memory rows remapped for correctable errors */
    unsigned rows_remapped_uncorrectable; /* ... for uncorrectable errors */
    int row_remap_failed;                 /* 1: a row remapping has failed */
} vyre_gpu_info;

/* One sample of every GPU. Plain data: copy it freely. */
typedef struct vyre_gpu_snapshot {
    uint64_t sampled_ns;                    /* CLOCK_MONOTONIC at the start of the sample */
    char driver_version[VYRE_GPU_TEXT_MAX]; /* e.g. "580.65.06"; empty when unknown */
    unsigned ngpus;                         /* entries in gpus[] */
    unsigned ngpus_total;                   /* GPUs NVML sees (may exceed ngpus) */
    int gpus_truncated;                     /* 1 when ngpus_total > ngpus */
    vyre_gpu_info gpus[VYRE_GPU_MAX];       /* by NVML index */
} vyre_gpu_snapshot;

/* An open NVML session (opaque). */
typedef struct vyre_gpu_monitor vyre_gpu_monitor;

/*
 * Loads NVML ($VYRE_NVML_LIBRARY, else "libnvidia-ml.so.1"), calls
 * nvmlInit_v2 and enumerates the GPUs. On success *out is a new monitor that
 * the caller frees with vyre_gpu_monitor_close(); on failure *out is NULL.
 * A machine with NVML but no GPU is a success (samples then have ngpus 0).
 * Returns 0, VYRE_EINVAL (NULL out), VYRE_EENV ($VYRE_NVML_LIBRARY set but
 * empty), VYRE_ENONVML (NVML missing, unusable, or nvmlInit failed: the
 * message quotes nvmlErrorString), VYRE_EPERM (NVML refused access) or
 * VYRE_ENOMEM.
 *
 * Thread-safety: distinct monitors may be opened, sampled and freed from
 * different threads at once (NVML counts its initialisations); one monitor
 * must not be used by two threads at the same time.
 */
VYRE_EXTERN int vyre_gpu_monitor_open(vyre_gpu_monitor **out, vyre_error *err);

/*
 * Asks m's next samples for the optional fields in `fields`
 * (VYRE_GPU_F_OPTIONAL bits; other bits are ignored; 0 asks for none, the
 * default). Each costs one more NVML call per GPU and sample, so monitors
 * that do not show them (vyre-top) leave them off. Returns 0, or
 * VYRE_EINVAL for a NULL m. Same thread rule as vyre_gpu_monitor_sample.
 */
VYRE_EXTERN int vyre_gpu_monitor_want(vyre_gpu_monitor *m, unsigned fields);

/*
 * Samples every GPU into *out (overwritten entirely; caller-owned). Fields
 * NVML cannot give are marked invalid, never the whole sample: the call
 * succeeds even when every field of a lost GPU is unknown. Processes beyond
 * VYRE_GPU_MAX_PROCS per GPU are counted in nprocs_total and dropped
 * (smallest memory first), with procs_truncated set.
 * Returns 0, or VYRE_EINVAL for NULL arguments. Not for concurrent use of
 * one monitor; costs a few dozen NVML calls per GPU (tens of microseconds).
 */
VYRE_EXTERN int vyre_gpu_monitor_sample(vyre_gpu_monitor *m, vyre_gpu_snapshot *out,
                                        vyre_error *err);

/* Calls nvmlShutdown, unloads NVML and frees m. m may be NULL (no-op). */
VYRE_EXTERN void vyre_gpu_monitor_close(vyre_gpu_monitor *m);

/* 1 when every bit of `fields` (vyre_gpu_field bits, OR-ed) is valid in gpu,
 * else 0 (also for a NULL gpu or no bits). Thread-safe. */
VYRE_EXTERN int vyre_gpu_field_valid(const vyre_gpu_info *gpu, unsigned fields);

/*
 * One process of vyre_gpu_join: a telemetry page, a process NVML lists, or
 * both. Plain data, but `page` points into the pages given to the join.
 */
typedef struct vyre_gpu_proc_row {
    int32_t pid;                     /* the page's pid, else NVML's */
    const vyre_telemetry_proc *page; /* its page's reading; NULL: NVML lists it only */
    int foreign;                     /* its page is of another PID namespace: never matched
                                        with NVML's processes (its pid names another one) */
    int device;                      /* the GPU it runs on (see vyre_gpu_join); -1 unknown */
    unsigned ngpus;                  /* GPUs NVML lists it on; 0: none */
    int mem_valid;                   /* NVML knows its memory on one of them at least */
    uint64_t mem_bytes;              /* GPU memory it holds, summed over its GPUs */
    int util_valid;                  /* NVML has a utilisation sample of it */
    unsigned sm_util_pct;            /* SM utilisation on its busiest GPU, 0..100 */
} vyre_gpu_proc_row;

/*
 * Joins the processes of an NVML sample (gpus; NULL: no sample) with npages
 * telemetry readings (pages, as vyre_telemetry_tracker_update gives them)
 * by pid, into *out: a malloc'ed array of *n rows sorted by pid (a foreign
 * page after ours of the same pid) that the caller frees with
 * vyre_free. Every page is a row; so is every process NVML lists
 * (pid > 0, on GPUs whose VYRE_GPU_F_PROCS is valid) that no page of ours
 * names, once however many GPUs list it, while there are fewer than
 * max_rows rows (npages: none of them; SIZE_MAX: no limit). A row's device is the lowest NVML index
 * listing it (a label that does not flip between samples), else the device
 * of its page's newest kernel record (kernel_device), else -1. Returns
 * VYRE_OK, VYRE_EINVAL (NULL out or n, or NULL pages with npages > 0) or
 * VYRE_ENOMEM (*out NULL, *n 0). Thread-safe; reads its inputs only.
 */
VYRE_EXTERN int vyre_gpu_join(const vyre_gpu_snapshot *gpus, const vyre_telemetry_proc *pages,
                              size_t npages, size_t max_rows, vyre_gpu_proc_row **out, size_t *n,
                              vyre_error *err);

/* Rows from vyre_gpu_join are freed with vyre_free. */

/* One GPU's share of one process (vyre_gpu_join_devices): what nvitop and
 * nvidia-smi show as one row. */
typedef struct vyre_gpu_proc_dev {
    int device;           /* NVML index of the GPU */
    int mem_valid;        /* NVML knows its memory on this GPU */
    uint64_t mem_bytes;   /* GPU memory it holds on this GPU */
    int util_valid;       /* NVML has a utilisation sample of it on this GPU */
    unsigned sm_util_pct; /* its SM utilisation on this GPU, 0..100 */
} vyre_gpu_proc_dev;

/*
 * The per-GPU form of a vyre_gpu_join row: the GPUs of sample gpus (NULL:
 * none) whose process list (VYRE_GPU_F_PROCS valid) names pid, by NVML index
 * ascending, into out[0..max) (caller-allocated). Returns how many GPUs list
 * pid (may exceed max: only max are written); 0 for a pid <= 0, a NULL
 * sample or none. The sums and maxima of vyre_gpu_join's row of pid are
 * those of these entries. Thread-safe; reads its inputs only.
 */
VYRE_EXTERN size_t vyre_gpu_join_devices(const vyre_gpu_snapshot *gpus, int32_t pid,
                                         vyre_gpu_proc_dev *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_GPU_H */
