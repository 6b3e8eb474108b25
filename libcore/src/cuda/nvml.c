/*
 * nvml.c - GPU monitoring through NVML, loaded at run time.
 *
 * Owns the loading of libnvidia-ml (through base/loader.c), the handful of
 * NVML declarations vyre needs (there is no nvml.h at build time, and linking NVML would stop the
 * tools from starting on machines without a driver), and the translation of
 * NVML's answers into vyre_gpu_snapshot. Guarantees: a missing or broken
 * NVML is an error with a hint, never a crash; a field NVML cannot give is
 * marked invalid and never reported as a made-up 0; one failing field never
 * hides the rest of its GPU.
 */
#include "vyre/gpu.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/internal.h"
#include "base/loader.h"
#include "cuda/nvml_internal.h"

/* ---- NVML declarations (nvml.h, driver R525+; layouts are ABI) ---------- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
};
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_GPU = 0 };
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlMemory_v2_t (R510+): `used` leaves out what the driver and firmware
 * reserve, as nvidia-smi's memory.used does; v1's `used` counts it (about
 * 480 MiB more on an idle H100 with driver 580). */
typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2 ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24))

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* nvmlProcessInfo_v2_t: the layout of both ...RunningProcesses_v2 and _v3. */
/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3). */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* NVML_VALUE_NOT_AVAILABLE when unknown */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlProcessUtilizationSample_t: one utilisation sample of one process. */
typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU timestamp, microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef nvmlReturn_t (*nvml_void_fn)(void);
typedef nvmlReturn_t (*nvml_uintp_fn)(unsigned int *);
typedef nvmlReturn_t (*nvml_handle_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_str_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_sysstr_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_mem_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvml_mem2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*nvml_enum_uint_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_ull_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_procs_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvml_putil_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                      unsigned int *, unsigned long long);
typedef nvmlReturn_t (*nvml_pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvml_codec_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvml_remap_fn)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
                                      unsigned int *);
typedef const char *(*nvml_errstr_fn)(nvmlReturn_t);

/* R = required (open fails without it), O = optional (NULL: field unknown).
 * nvmlDeviceGetCurrentClocksEventReasons replaced ...ThrottleReasons (12.2);
 * _v3 of the process query came with R510: the older name is the fallback. */
#define NVML_FUNCS(R, O)                                                                           \
    R(nvmlInit_v2, nvml_void_fn)                                                                   \
    R(nvmlShutdown, nvml_void_fn)                                                                  \
    R(nvmlErrorString, nvml_errstr_fn)                                                             \
    R(nvmlDeviceGetCount_v2, nvml_uintp_fn)                                                        \
    R(nvmlDeviceGetHandleByIndex_v2, nvml_handle_fn)                                               \
    O(nvmlSystemGetDriverVersion, nvml_sysstr_fn)                                                  \
    O(nvmlDeviceGetName, nvml_str_fn)                                                              \
    O(nvmlDeviceGetUUID, nvml_str_fn)                                                              \
    O(nvmlDeviceGetUtilizationRates, nvml_util_fn)                                                 \
    O(nvmlDeviceGetMemoryInfo_v2, nvml_mem2_fn)                                                    \
    O(nvmlDeviceGetMemoryInfo, nvml_mem_fn)                                                        \
    O(nvmlDeviceGetClockInfo, nvml_enum_uint_fn)                                                   \
    O(nvmlDeviceGetMaxClockInfo, nvml_enum_uint_fn)                                                \
    O(nvmlDeviceGetTemperature, nvml_enum_uint_fn)                                                 \
    O(nvmlDeviceGetPowerUsage, nvml_dev_uint_fn)                                                   \
    O(nvmlDeviceGetEnforcedPowerLimit, nvml_dev_uint_fn)                                           \
    O(nvmlDeviceGetCurrentClocksEventReasons, nvml_dev_ull_fn)                                     \
    O(nvmlDeviceGetCurrentClocksThrottleReasons, nvml_dev_ull_fn)                                  \
    O(nvmlDeviceGetComputeRunningProcesses_v3, nvml_procs_fn)                                      \
    O(nvmlDeviceGetComputeRunningProcesses_v2, nvml_procs_fn)                                      \
    O(nvmlDeviceGetGraphicsRunningProcesses_v3, nvml_procs_fn)                                     \
    O(nvmlDeviceGetGraphicsRunningProcesses_v2, nvml_procs_fn)                                     \
    O(nvmlDeviceGetProcessUtilization, nvml_putil_fn)                                              \
    O(nvmlDeviceGetPciInfo_v3, nvml_pci_fn)                                                        \
    O(nvmlDeviceGetTotalEnergyConsumption, nvml_dev_ull_fn)                                        \
    O(nvmlDeviceGetEncoderUtilization, nvml_codec_fn)                                              \
    O(nvmlDeviceGetDecoderUtilization, nvml_codec_fn)                                              \
    O(nvmlDeviceGetPcieReplayCounter, nvml_dev_uint_fn)                                            \
    O(nvmlDeviceGetRemappedRows, nvml_remap_fn)

typedef struct nvml_fns {
#define NVML_FIELD(name, type) type name;
    NVML_FUNCS(NVML_FIELD, NVML_FIELD)
#undef NVML_FIELD
} nvml_fns;

/* ---- the monitor ---------------------------------------------------------- */

#define LIBNVML_DEFAULT "libnvidia-ml.so.1"
#define HINT_NONVML                                                                                \
    "install the NVIDIA driver (it provides libnvidia-ml.so.1), or set VYRE_NVML_LIBRARY to its "  \
    "path"
/* Largest process list fetched from NVML per GPU: bounds memory when a GPU
 * reports an absurd count. Beyond it the list is truncated like any other. */
#define PROCS_FETCH_MAX 65536u

/* A GPU's fields that do not change while the driver is loaded, fetched
 * once: nvmlDeviceGetMaxClockInfo alone costs about 1.5 ms of CPU per call
 * (H200, driver 580), more than all the other queries of a sample together.
 * A field whose query failed other than NOT_SUPPORTED is fetched again at
 * the next sample. */
typedef struct gpu_static {
    nvmlDevice_t dev; /* NULL: handle not (yet) obtained */
    nvmlReturn_t name_rc, uuid_rc, max_clock_rc, pci_rc;
    char name[VYRE_GPU_NAME_MAX];
    char pci_bus_id[VYRE_GPU_PCI_MAX];
    char uuid[VYRE_GPU_UUID_MAX];
    unsigned sm_clock_max_mhz;
    unsigned long long util_seen_us; /* newest process-utilisation sample seen */
} gpu_static;

struct vyre_gpu_monitor {
    void *lib;
    nvml_fns f;
    unsigned ngpus_total;
    unsigned ngpus; /* min(ngpus_total, VYRE_GPU_MAX) */
    unsigned want;  /* VYRE_GPU_F_OPTIONAL bits asked for */
    gpu_static gpu[VYRE_GPU_MAX];
    char driver_version[VYRE_GPU_TEXT_MAX];
    nvmlProcessInfo_t *pbuf; /* scratch for process lists */
    unsigned pcap;           /* entries pbuf holds */
    nvmlProcessInfo_t *gbuf; /* scratch for graphics process lists */
    unsigned gcap;
    nvmlProcessUtilizationSample_t *ubuf; /* scratch for utilisation samples */
    unsigned ucap;
};

/* NVML answers worth asking again: anything but success and "not supported". */
static int retry(nvmlReturn_t r)
{
    return r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED;
}

static const char *nvml_text(const vyre_gpu_monitor *m, nvmlReturn_t r)
{
    const char *s = m->f.nvmlErrorString ? m->f.nvmlErrorString(r) : NULL;
    return s && *s ? s : "unknown NVML error";
}

static const char *init_hint(nvmlReturn_t r)
{
    switch (r) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "the NVIDIA kernel driver is not loaded: check 'nvidia-smi' and 'lsmod | grep "
               "nvidia'";
    case NVML_ERROR_NO_PERMISSION:
        return "this user may not open /dev/nvidia*: check those files' permissions and group";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "libnvidia-ml and the kernel driver come from different driver versions: reboot "
               "after a driver update, or reinstall the driver";
    default:
        return "run 'nvidia-smi': if it fails too, the driver installation needs repair";
    }
}

static const char *const g_nvml_names[] = {LIBNVML_DEFAULT, NULL};
static const vyre__lib_spec g_nvml_spec = {
    .fail = "NVML not available",
    .env = "VYRE_NVML_LIBRARY",
    .names = g_nvml_names,
    .missing_code = VYRE_ENONVML,
    .hint = HINT_NONVML,
    .env_hint = "check that VYRE_NVML_LIBRARY names the driver's libnvidia-ml.so.1, or unset it",
    .empty_hint = "unset VYRE_NVML_LIBRARY, or set it to the path of libnvidia-ml.so.1",
    .sym_noun = "'",
    .sym_tail = "': it is not NVML, or an NVML too old for vyre",
    .sym_hint = "update the NVIDIA driver, or point VYRE_NVML_LIBRARY at the driver's "
                "libnvidia-ml.so.1",
};
static const vyre__lib_sym g_nvml_syms[] = {
#define NVML_REQ(name, type) {#name, offsetof(nvml_fns, name), 0},
#define NVML_OPT(name, type) {#name, offsetof(nvml_fns, name), 1},
    NVML_FUNCS(NVML_REQ, NVML_OPT)
#undef NVML_REQ
#undef NVML_OPT
};

/* Loads the library and its symbols into m. */
static int load_library(vyre_gpu_monitor *m, vyre_error *err)
{
    char path[VYRE__LIB_PATH_MAX];
    int rc = vyre__lib_open(&g_nvml_spec, &m->lib, path, sizeof path, err);
    if (rc)
        return rc;
    return vyre__lib_resolve(&g_nvml_spec, m->lib, path, g_nvml_syms, VYRE_ARRAY_SIZE(g_nvml_syms),
                             &m->f, err);
}

/* Fills what is missing of GPU i's static fields; returns the handle's
 * result. A missing function counts as NOT_SUPPORTED. */
static nvmlReturn_t fetch_static(vyre_gpu_monitor *m, unsigned i)
{
    const nvml_fns *f = &m->f;
    gpu_static *s = &m->gpu[i];
    if (!s->dev) {
        nvmlReturn_t r = f->nvmlDeviceGetHandleByIndex_v2(i, &s->dev);
        if (r != NVML_SUCCESS) {
            s->dev = NULL;
            return r;
        }
    }
    if (retry(s->name_rc)) {
        s->name_rc = f->nvmlDeviceGetName ? f->nvmlDeviceGetName(s->dev, s->name, sizeof s->name)
                                          : NVML_ERROR_NOT_SUPPORTED;
        s->name[sizeof s->name - 1] = '\0';
    }
    if (retry(s->uuid_rc)) {
        s->uuid_rc = f->nvmlDeviceGetUUID ? f->nvmlDeviceGetUUID(s->dev, s->uuid, sizeof s->uuid)
                                          : NVML_ERROR_NOT_SUPPORTED;
        s->uuid[sizeof s->uuid - 1] = '\0';
    }
    if (retry(s->max_clock_rc))
        s->max_clock_rc =
            f->nvmlDeviceGetMaxClockInfo
                ? f->nvmlDeviceGetMaxClockInfo(s->dev, NVML_CLOCK_SM, &s->sm_clock_max_mhz)
                : NVML_ERROR_NOT_SUPPORTED;
    if (retry(s->pci_rc)) {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        s->pci_rc = f->nvmlDeviceGetPciInfo_v3 ? f->nvmlDeviceGetPciInfo_v3(s->dev, &pci)
                                               : NVML_ERROR_NOT_SUPPORTED;
        pci.busId[sizeof pci.busId - 1] = '\0';
        vyre__strlcpy(s->pci_bus_id, pci.busId, sizeof s->pci_bus_id);
    }
    return NVML_SUCCESS;
}

int vyre_gpu_monitor_open(vyre_gpu_monitor **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_gpu_monitor_open: NULL argument");
    *out = NULL;
    vyre_gpu_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening the GPU monitor");
    int rc = load_library(m, err);
    if (rc)
        goto fail;
    nvmlReturn_t r = m->f.nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        rc = vyre__fail(err, r == NVML_ERROR_NO_PERMISSION ? VYRE_EPERM : VYRE_ENONVML,
                        init_hint(r), "nvmlInit_v2 failed: %s (NVML error %d)", nvml_text(m, r), r);
        goto fail;
    }
    unsigned count = 0;
    r = m->f.nvmlDeviceGetCount_v2(&count);
    if (r != NVML_SUCCESS) {
        rc =
            vyre__fail(err, r == NVML_ERROR_NO_PERMISSION ? VYRE_EPERM : VYRE_ENONVML, init_hint(r),
                       "nvmlDeviceGetCount_v2 failed: %s (NVML error %d)", nvml_text(m, r), r);
        m->f.nvmlShutdown();
        goto fail;
    }
    m->ngpus_total = count;
    m->ngpus = count < VYRE_GPU_MAX ? count : VYRE_GPU_MAX;
    if (m->f.nvmlSystemGetDriverVersion &&
        m->f.nvmlSystemGetDriverVersion(m->driver_version, sizeof m->driver_version) !=
            NVML_SUCCESS)
        m->driver_version[0] = '\0';
    m->driver_version[sizeof m->driver_version - 1] = '\0';
    for (unsigned i = 0; i < m->ngpus; i++) {
        m->gpu[i].name_rc = m->gpu[i].uuid_rc = m->gpu[i].max_clock_rc = m->gpu[i].pci_rc = -1;
        fetch_static(m, i); /* failures: retried at every sample */
    }
    *out = m;
    return VYRE_OK;
fail:
    if (m->lib)
        dlclose(m->lib);
    free(m);
    return rc;
}

void vyre_gpu_monitor_close(vyre_gpu_monitor *m)
{
    if (!m)
        return;
    m->f.nvmlShutdown();
    dlclose(m->lib);
    free(m->pbuf);
    free(m->gbuf);
    free(m->ubuf);
    free(m);
}

/* ---- sampling ------------------------------------------------------------- */

/* Records the outcome of one NVML call for `bit`: sets the bit on success;
 * otherwise notes the first failure that is not a plain "not supported" in
 * g->problem. Returns 1 on success. */
static int note(const vyre_gpu_monitor *m, vyre_gpu_info *g, nvmlReturn_t r, const char *what,
                unsigned bit)
{
    if (r == NVML_SUCCESS) {
        g->valid |= bit;
        return 1;
    }
    if (r != NVML_ERROR_NOT_SUPPORTED && !g->problem[0])
        snprintf(g->problem, sizeof g->problem, "%s: %s", what, nvml_text(m, r));
    return 0;
}

/* Memory as nvidia-smi shows it: the v2 query where the driver has it,
 * else v1 (whose `used` includes the reserved memory). */
static void read_memory(const vyre_gpu_monitor *m, const nvml_fns *f, nvmlDevice_t d,
                        vyre_gpu_info *g)
{
    nvmlMemory_v2_t m2 = {.version = NVML_MEMORY_V2};
    if (f->nvmlDeviceGetMemoryInfo_v2 && f->nvmlDeviceGetMemoryInfo_v2(d, &m2) == NVML_SUCCESS) {
        g->valid |= VYRE_GPU_F_MEMORY;
        g->mem_used_bytes = m2.used;
        g->mem_total_bytes = m2.total;
        g->mem_free_bytes = m2.free;
        return;
    }
    nvmlMemory_t mem;
    if (f->nvmlDeviceGetMemoryInfo &&
        note(m, g, f->nvmlDeviceGetMemoryInfo(d, &mem), "memory", VYRE_GPU_F_MEMORY)) {
        g->mem_used_bytes = mem.used;
        g->mem_total_bytes = mem.total;
        g->mem_free_bytes = mem.free;
    }
}

static int proc_cmp(const void *pa, const void *pb)
{
    const vyre_gpu_process *a = pa, *b = pb;
    /* Unknown sizes sort as 0: after every process with a known size. */
    uint64_t ua = a->used_valid ? a->used_bytes + 1 : 0;
    uint64_t ub = b->used_valid ? b->used_bytes + 1 : 0;
    if (ua != ub)
        return ua > ub ? -1 : 1;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

/* Fetches a process list into *buf, growing it as NVML asks; NVML
 * returns INSUFFICIENT_SIZE (and the count it needs) when the buffer is too
 * small, and processes may start between two calls, hence the retries. */
static nvmlReturn_t fetch_procs(nvmlProcessInfo_t **buf, unsigned *cap, nvmlDevice_t dev,
                                nvml_procs_fn fn, unsigned *n, int *capped)
{
    *capped = 0;
    if (!*buf) {
        *buf = calloc(VYRE_GPU_MAX_PROCS, sizeof **buf);
        if (!*buf)
            return NVML_ERROR_INSUFFICIENT_SIZE;
        *cap = VYRE_GPU_MAX_PROCS;
    }
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned count = *cap;
        r = fn(dev, &count, *buf);
        if (r == NVML_SUCCESS) {
            *n = count < *cap ? count : *cap;
            return r;
        }
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        if (*cap >= PROCS_FETCH_MAX) {
            /* NVML wants more than we will hold: report the count, no list. */
            *capped = 1;
            *n = count;
            return r;
        }
        unsigned want = count > *cap ? count : *cap;
        want = want > PROCS_FETCH_MAX - 16 ? PROCS_FETCH_MAX : want + 16;
        nvmlProcessInfo_t *p = realloc(*buf, (size_t)want * sizeof *p);
        if (!p)
            return r;
        *buf = p;
        *cap = want;
    }
    return r;
}

static void sample_procs(vyre_gpu_monitor *m, nvmlDevice_t dev, vyre_gpu_info *g)
{
    nvml_procs_fn fn = m->f.nvmlDeviceGetComputeRunningProcesses_v3
                           ? m->f.nvmlDeviceGetComputeRunningProcesses_v3
                           : m->f.nvmlDeviceGetComputeRunningProcesses_v2;
    if (!fn)
        return;
    unsigned n = 0;
    int capped = 0;
    nvmlReturn_t r = fetch_procs(&m->pbuf, &m->pcap, dev, fn, &n, &capped);
    if (capped) {
        /* Known count, list unusable: valid but empty and truncated. */
        g->valid |= VYRE_GPU_F_PROCS;
        g->nprocs_total = n;
        g->procs_truncated = n > 0;
        return;
    }
    if (!note(m, g, r, "processes", VYRE_GPU_F_PROCS))
        return;
    /* Graphics processes too (a display server, a GL or Vulkan program), as
     * nvidia-smi and nvitop list them; one that also computes is listed
     * once. A failing graphics query leaves the compute list as it is. */
    unsigned ng = 0;
    nvml_procs_fn gfn = m->f.nvmlDeviceGetGraphicsRunningProcesses_v3
                            ? m->f.nvmlDeviceGetGraphicsRunningProcesses_v3
                            : m->f.nvmlDeviceGetGraphicsRunningProcesses_v2;
    int gcapped = 0;
    if (gfn &&
        (fetch_procs(&m->gbuf, &m->gcap, dev, gfn, &ng, &gcapped) != NVML_SUCCESS || gcapped))
        ng = 0;
    /* Keep the VYRE_GPU_MAX_PROCS largest, sorted: once kept[] is full it is
     * sorted, and each later process enters by insertion only when it beats
     * the smallest kept, so truncation drops the smallest users. */
    unsigned total = 0;
    vyre_gpu_process *kept = g->procs; /* zeroed by the caller */
    unsigned keep = 0;
    for (unsigned i = 0; i < n + ng; i++) {
        const nvmlProcessInfo_t *e = i < n ? &m->pbuf[i] : &m->gbuf[i - n];
        int dup = 0;
        for (unsigned j = 0; i >= n && j < i && !dup; j++)
            dup = (j < n ? m->pbuf[j].pid : m->gbuf[j - n].pid) == e->pid;
        if (dup)
            continue;
        total++;
        vyre_gpu_process p = {.pid = e->pid, .graphics = i >= n};
        if (e->usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
            p.used_valid = 1;
            p.used_bytes = e->usedGpuMemory;
        }
        if (keep < VYRE_GPU_MAX_PROCS) {
            kept[keep++] = p;
            if (keep == VYRE_GPU_MAX_PROCS)
                qsort(kept, keep, sizeof kept[0], proc_cmp);
            continue;
        }
        /* Full: replace the last (smallest) when p sorts before it. */
        if (proc_cmp(&p, &kept[keep - 1]) < 0) {
            unsigned j = keep - 1;
            while (j > 0 && proc_cmp(&p, &kept[j - 1]) < 0) {
                kept[j] = kept[j - 1];
                j--;
            }
            kept[j] = p;
        }
    }
    if (keep > 1 && keep < VYRE_GPU_MAX_PROCS)
        qsort(kept, keep, sizeof kept[0], proc_cmp);
    g->nprocs_total = total;
    g->nprocs = keep;
    g->procs_truncated = total > keep;
}

/* Fetches the process-utilisation samples newer than st->util_seen_us into
 * m->ubuf (growing it as NVML asks, as fetch_procs does); *n gets how many.
 * NOT_FOUND (no sample in the window) is a success with none. */
static nvmlReturn_t fetch_util(vyre_gpu_monitor *m, gpu_static *st, unsigned *n)
{
    *n = 0;
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned count = m->ucap;
        r = m->f.nvmlDeviceGetProcessUtilization(st->dev, m->ucap ? m->ubuf : NULL, &count,
                                                 st->util_seen_us);
        if (r == NVML_ERROR_NOT_FOUND)
            return NVML_SUCCESS;
        if (r == NVML_SUCCESS) {
            *n = count < m->ucap ? count : m->ucap;
            return r;
        }
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || count > PROCS_FETCH_MAX)
            return r;
        unsigned want = (count > m->ucap ? count : m->ucap) + 16;
        nvmlProcessUtilizationSample_t *u = realloc(m->ubuf, (size_t)want * sizeof *u);
        if (!u)
            return r;
        m->ubuf = u;
        m->ucap = want;
    }
    return r;
}

/* Gives each listed process of g its newest utilisation sample since the
 * previous call (a process may have several in the window). */
static void sample_proc_util(vyre_gpu_monitor *m, gpu_static *st, vyre_gpu_info *g)
{
    if (!m->f.nvmlDeviceGetProcessUtilization || !g->nprocs)
        return;
    unsigned n = 0;
    if (fetch_util(m, st, &n) != NVML_SUCCESS)
        return; /* unknown: every process keeps util_valid 0 */
    unsigned long long newest = st->util_seen_us;
    for (unsigned k = 0; k < g->nprocs; k++) {
        vyre_gpu_process *p = &g->procs[k];
        unsigned long long ts = 0;
        for (unsigned i = 0; i < n; i++) {
            const nvmlProcessUtilizationSample_t *u = &m->ubuf[i];
            if (u->pid != p->pid || (p->util_valid && u->timeStamp < ts))
                continue;
            ts = u->timeStamp;
            p->util_valid = 1;
            p->sm_util_pct = u->smUtil > 100 ? 100 : u->smUtil;
            p->mem_util_pct = u->memUtil > 100 ? 100 : u->memUtil;
        }
    }
    for (unsigned i = 0; i < n; i++)
        if (m->ubuf[i].timeStamp > newest)
            newest = m->ubuf[i].timeStamp;
    st->util_seen_us = newest;
}

int vyre_gpu_monitor_want(vyre_gpu_monitor *m, unsigned fields)
{
    if (!m)
        return VYRE_EINVAL;
    m->want = fields & VYRE_GPU_F_OPTIONAL;
    return VYRE_OK;
}

/* The optional fields m->want asks for (one NVML call each). */
static void sample_optional(vyre_gpu_monitor *m, nvmlDevice_t d, vyre_gpu_info *g)
{
    const nvml_fns *f = &m->f;
    unsigned v, period;
    unsigned long long e;
    if ((m->want & VYRE_GPU_F_ENERGY) && f->nvmlDeviceGetTotalEnergyConsumption &&
        note(m, g, f->nvmlDeviceGetTotalEnergyConsumption(d, &e), "energy", VYRE_GPU_F_ENERGY))
        g->energy_mj = e;
    if ((m->want & VYRE_GPU_F_ENC_UTIL) && f->nvmlDeviceGetEncoderUtilization &&
        note(m, g, f->nvmlDeviceGetEncoderUtilization(d, &v, &period), "encoder utilization",
             VYRE_GPU_F_ENC_UTIL))
        g->enc_util_pct = v > 100 ? 100 : v;
    if ((m->want & VYRE_GPU_F_DEC_UTIL) && f->nvmlDeviceGetDecoderUtilization &&
        note(m, g, f->nvmlDeviceGetDecoderUtilization(d, &v, &period), "decoder utilization",
             VYRE_GPU_F_DEC_UTIL))
        g->dec_util_pct = v > 100 ? 100 : v;
    if ((m->want & VYRE_GPU_F_PCIE_REPLAY) && f->nvmlDeviceGetPcieReplayCounter &&
        note(m, g, f->nvmlDeviceGetPcieReplayCounter(d, &v), "PCIe replays",
             VYRE_GPU_F_PCIE_REPLAY))
        g->pcie_replays = v;
    unsigned corr, unc, pending, failed;
    if ((m->want & VYRE_GPU_F_REMAPPED_ROWS) && f->nvmlDeviceGetRemappedRows &&
        note(m, g, f->nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failed), "remapped rows",
             VYRE_GPU_F_REMAPPED_ROWS)) {
        g->rows_remapped_correctable = corr;
        g->rows_remapped_uncorrectable = unc;
        g->row_remap_failed = failed != 0;
    }
}

static void sample_gpu(vyre_gpu_monitor *m, unsigned i, vyre_gpu_info *g)
{
    const nvml_fns *f = &m->f;
    g->index = (int)i;
    gpu_static *st = &m->gpu[i];
    nvmlReturn_t hr = fetch_static(m, i);
    if (hr != NVML_SUCCESS) {
        note(m, g, hr, "handle", 0);
        if (!g->problem[0]) /* "not supported" still leaves nothing to show */
            snprintf(g->problem, sizeof g->problem, "handle: %s", nvml_text(m, hr));
        return;
    }
    nvmlDevice_t d = st->dev;
    if (note(m, g, st->name_rc, "name", VYRE_GPU_F_NAME))
        vyre__strlcpy(g->name, st->name, sizeof g->name);
    if (note(m, g, st->uuid_rc, "uuid", VYRE_GPU_F_UUID))
        vyre__strlcpy(g->uuid, st->uuid, sizeof g->uuid);
    if (note(m, g, st->pci_rc, "PCI info", VYRE_GPU_F_PCI_BUS_ID))
        vyre__strlcpy(g->pci_bus_id, st->pci_bus_id, sizeof g->pci_bus_id);
    nvmlUtilization_t u;
    if (f->nvmlDeviceGetUtilizationRates &&
        note(m, g, f->nvmlDeviceGetUtilizationRates(d, &u), "utilization", VYRE_GPU_F_UTIL)) {
        g->util_gpu_pct = u.gpu;
        g->util_mem_pct = u.memory;
    }
    read_memory(m, f, d, g);
    unsigned v;
    if (f->nvmlDeviceGetClockInfo) {
        if (note(m, g, f->nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v), "SM clock",
                 VYRE_GPU_F_SM_CLOCK))
            g->sm_clock_mhz = v;
        if (note(m, g, f->nvmlDeviceGetClockInfo(d, NVML_CLOCK_MEM, &v), "memory clock",
                 VYRE_GPU_F_MEM_CLOCK))
            g->mem_clock_mhz = v;
    }
    if (note(m, g, st->max_clock_rc, "max SM clock", VYRE_GPU_F_SM_CLOCK_MAX))
        g->sm_clock_max_mhz = st->sm_clock_max_mhz;
    if (f->nvmlDeviceGetTemperature &&
        note(m, g, f->nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v), "temperature",
             VYRE_GPU_F_TEMPERATURE))
        g->temperature_c = (int)v;
    if (f->nvmlDeviceGetPowerUsage &&
        note(m, g, f->nvmlDeviceGetPowerUsage(d, &v), "power", VYRE_GPU_F_POWER))
        g->power_mw = v;
    if (f->nvmlDeviceGetEnforcedPowerLimit && note(m, g, f->nvmlDeviceGetEnforcedPowerLimit(d, &v),
                                                   "power limit", VYRE_GPU_F_POWER_LIMIT))
        g->power_limit_mw = v;
    nvml_dev_ull_fn reasons_fn = f->nvmlDeviceGetCurrentClocksEventReasons
                                     ? f->nvmlDeviceGetCurrentClocksEventReasons
                                     : f->nvmlDeviceGetCurrentClocksThrottleReasons;
    unsigned long long reasons;
    if (reasons_fn &&
        note(m, g, reasons_fn(d, &reasons), "throttle reasons", VYRE_GPU_F_THROTTLE)) {
        g->throttle_reasons = reasons;
        vyre__gpu_throttle_text(reasons, g->throttle_text, sizeof g->throttle_text);
    }
    sample_optional(m, d, g);
    sample_procs(m, d, g);
    sample_proc_util(m, st, g);
}

int vyre_gpu_monitor_sample(vyre_gpu_monitor *m, vyre_gpu_snapshot *out, vyre_error *err)
{
    if (!m || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_gpu_monitor_sample: NULL argument");
    memset(out, 0, sizeof *out);
    out->sampled_ns = vyre__mono_ns();
    vyre__strlcpy(out->driver_version, m->driver_version, sizeof out->driver_version);
    out->ngpus_total = m->ngpus_total;
    out->ngpus = m->ngpus;
    out->gpus_truncated = m->ngpus_total > m->ngpus;
    for (unsigned i = 0; i < m->ngpus; i++)
        sample_gpu(m, i, &out->gpus[i]);
    return VYRE_OK;
}

int vyre__gpu_monitor_clocks(vyre_gpu_monitor *m, unsigned index, unsigned *sm_mhz,
                             uint64_t *reasons)
{
    if (!m || index >= m->ngpus || fetch_static(m, index) != NVML_SUCCESS)
        return 0;
    const nvml_fns *f = &m->f;
    nvmlDevice_t d = m->gpu[index].dev;
    int valid = 0;
    unsigned v;
    if (sm_mhz && f->nvmlDeviceGetClockInfo &&
        f->nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS) {
        *sm_mhz = v;
        valid |= VYRE_GPU_F_SM_CLOCK;
    }
    nvml_dev_ull_fn reasons_fn = f->nvmlDeviceGetCurrentClocksEventReasons
                                     ? f->nvmlDeviceGetCurrentClocksEventReasons
                                     : f->nvmlDeviceGetCurrentClocksThrottleReasons;
    unsigned long long r;
    if (reasons && reasons_fn && reasons_fn(d, &r) == NVML_SUCCESS) {
        *reasons = r;
        valid |= VYRE_GPU_F_THROTTLE;
    }
    return valid;
}

/* ---- pure helpers --------------------------------------------------------- */

int vyre_gpu_field_valid(const vyre_gpu_info *gpu, unsigned fields)
{
    return gpu && fields && (gpu->valid & fields) == fields;
}

const char *vyre__gpu_throttle_text(uint64_t reasons, char *buf, size_t size)
{
    static const char *const words[] = {"idle",       "app-clocks",  "power",
                                        "hw",         "sync-boost",  "thermal",
                                        "hw-thermal", "power-brake", "display"};
    if (!buf || !size)
        return buf;
    buf[0] = '\0';
    if (!reasons) {
        vyre__strlcpy(buf, "none", size);
        return buf;
    }
    size_t len = 0;
    for (size_t bit = 0; bit < VYRE_ARRAY_SIZE(words) && len < size; bit++) {
        if (!(reasons & (1ull << bit)))
            continue;
        int n = snprintf(buf + len, size - len, "%s%s", len ? "," : "", words[bit]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    uint64_t unknown = reasons & ~((1ull << VYRE_ARRAY_SIZE(words)) - 1);
    if (unknown && len < size)
        snprintf(buf + len, size - len, "%s0x%llx", len ? "," : "", (unsigned long long)unknown);
    return buf;
}
