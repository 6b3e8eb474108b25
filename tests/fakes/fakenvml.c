/*
 * fakenvml.c - a small fake libnvidia-ml for the GPU monitor tests.
 *
 * Built twice (tests/CMakeLists.txt): as `fakenvml`, a current NVML, and
 * with FAKENVML_OLD as `fakenvml_old`, an older one that lacks
 * nvmlDeviceGetComputeRunningProcesses_v3 and
 * nvmlDeviceGetCurrentClocksEventReasons (vyre falls back to _v2 and
 * ...ThrottleReasons), and nvmlSystemGetDriverVersion.
 *
 * Behaviour is driven by environment variables, read at every call:
 *   FAKENVML_INIT_FAIL=<n>      nvmlInit_v2 returns nvmlReturn_t n
 *   FAKENVML_GPUS=<n>           number of GPUs (default 1)
 *   FAKENVML_BLOCK_FILE=<path>  while <path> exists, utilisation queries wait
 *                               (a stuck NVML); <path>.waiting exists meanwhile
 *   FAKENVML_UNSUPPORTED=a,b    these queries return NOT_SUPPORTED: name,
 *                               uuid, utilization, memory, sm_clock,
 *                               mem_clock, max_clock, temperature, power,
 *                               power_limit, throttle, processes, handle,
 *                               pci, energy, enc_util, dec_util,
 *                               pcie_replay, remapped_rows
 *   FAKENVML_FAIL=a=n,...       the named query returns nvmlReturn_t n
 *   FAKENVML_PROCS=g:pid:bytes,...  compute processes; bytes "-" is
 *                               NVML_VALUE_NOT_AVAILABLE
 *   FAKENVML_MANY_PROCS=<n>     n more processes on GPU 0: pid 10000+j,
 *                               (j+1) MiB each
 *   FAKENVML_THROTTLE=<hex>     clocks-event reasons of GPU 0 (default 0x24)
 *   FAKENVML_GRAPHICS_PROCS=g:pid:bytes,...  graphics processes
 *                               (nvmlDeviceGetGraphicsRunningProcesses_v3,
 *                               not in the old fake); bytes as above
 *   FAKENVML_PROC_UTIL=g:pid:sm:mem,...  process-utilisation samples
 *                               (nvmlDeviceGetProcessUtilization, not in
 *                               the old fake): each call returns one sample
 *                               per item of GPU g, stamped one microsecond
 *                               after the caller's lastSeenTimeStamp; none
 *                               listed: NVML_ERROR_NOT_FOUND
 *   FAKENVML_UUID_AS_CUDA=1     GPU i's UUID is the one the fake driver
 *                               (fakecuda.c) gives device i, as on a real
 *                               machine where both name the same GPUs
 *                               (bytes (0x11 * k) ^ (i * 0x5a))
 *   FAKENVML_RESERVED_MIB=<n>   memory the driver reserves on every GPU
 *                               (default 0): nvmlDeviceGetMemoryInfo's
 *                               used counts it, as a real v1 query does;
 *                               ..._v2 (not in the old fake) gives it apart
 *                               and leaves it out of used, as nvidia-smi
 *   FAKENVML_SM_CLOCKS=a,b,...  the SM clock of every GPU steps through
 *                               these MHz, one value a call, round and
 *                               round (a clock that moves: not locked)
 *
 * Values of GPU i (deterministic, so tests can assert them exactly):
 *   name "NVIDIA Fake GPU <i>", uuid "GPU-00000000-0000-0000-0000-00000000000<i>",
 *   utilization gpu 10*(i+1)+k (k: earlier utilization calls for GPU i) and
 *   memory 5*(i+1), memory total (80+i) GiB and used (i+1) GiB, SM clock
 *   1500+i, memory clock 2619, max SM clock 1980, temperature 40+i C,
 *   power 100000+1000*i mW, limit 700000 mW, throttle reasons 0x24 (power
 *   cap, software thermal) on GPU 0 and 0x1 (idle) on the others; PCI bus
 *   id "00000000:<0x18+i, two hex digits>:00.0", energy 5000000000+1000*i
 *   mJ (above 2^32), encoder utilization 3+i, decoder 7+i, PCIe replays
 *   11+i, remapped rows 2*i correctable and i uncorrectable, remapping
 *   failed on GPU 1 only.
 *
 * Like the real library, calls before nvmlInit_v2 (or after the matching
 * nvmlShutdown) return NVML_ERROR_UNINITIALIZED. Two functions that are
 * not NVML let a test that dlopen()s this same file look inside:
 * fakenvml_init_count() (nvmlInit_v2 calls not yet shut down) and
 * fakenvml_calls("max_clock") (calls of the device query of that name;
 * "all": of every device query above together).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

enum {
    OK = 0,
    E_UNINITIALIZED = 1,
    E_INVALID_ARGUMENT = 2,
    E_NOT_SUPPORTED = 3,
    E_NOT_FOUND = 6,
    E_INSUFFICIENT_SIZE = 7,
};

#define MAX_GPUS 64
#define GIB      (1024ull * 1024ull * 1024ull)
#define MIB      (1024ull * 1024ull)

/* A handle is a pointer into this array: &g_gpus[i]. */
static struct nvmlDevice_st {
    int index;
} g_gpus[MAX_GPUS];
static int g_init_count;
static unsigned g_util_calls[MAX_GPUS];

FAKE_EXPORT int fakenvml_init_count(void);
FAKE_EXPORT int fakenvml_init_count(void)
{
    return g_init_count;
}

/* Calls per device query, by the names FAKENVML_UNSUPPORTED uses. */
static const char *const g_queries[] = {
    "name",        "uuid",   "utilization", "memory",   "sm_clock",    "mem_clock",     "max_clock",
    "temperature", "power",  "power_limit", "throttle", "processes",   "handle",        "proc_util",
    "pci",         "energy", "enc_util",    "dec_util", "pcie_replay", "remapped_rows",
};
static unsigned g_calls[sizeof g_queries / sizeof g_queries[0]];

static void count_call(const char *what)
{
    for (size_t k = 0; k < sizeof g_queries / sizeof g_queries[0]; k++)
        if (strcmp(g_queries[k], what) == 0)
            g_calls[k]++;
}

FAKE_EXPORT unsigned fakenvml_calls(const char *what);
FAKE_EXPORT unsigned fakenvml_calls(const char *what)
{
    unsigned all = 0;
    for (size_t k = 0; k < sizeof g_queries / sizeof g_queries[0]; k++) {
        if (strcmp(g_queries[k], what) == 0)
            return g_calls[k];
        all += g_calls[k];
    }
    return strcmp(what, "all") == 0 ? all : 0;
}

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return *end ? dflt : v;
}

/* Is `name` an item of the comma-separated list in $var? With name=value
 * items, *value gets the value's start. */
static int env_list_has(const char *var, const char *name, const char **value)
{
    const char *s = getenv(var);
    size_t n = strlen(name);
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len >= n && strncmp(s, name, n) == 0 && (len == n || s[n] == '=')) {
            if (value)
                *value = len == n ? NULL : s + n + 1;
            return 1;
        }
        s = end ? end + 1 : NULL;
    }
    return 0;
}

/* Result forced for query `what` by the environment, or OK. */
static nvmlReturn_t forced(const char *what)
{
    count_call(what);
    if (env_list_has("FAKENVML_UNSUPPORTED", what, NULL))
        return E_NOT_SUPPORTED;
    const char *v = NULL;
    if (env_list_has("FAKENVML_FAIL", what, &v) && v)
        return (nvmlReturn_t)strtol(v, NULL, 10);
    return OK;
}

static int ngpus(void)
{
    long n = env_long("FAKENVML_GPUS", 1);
    return n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : (int)n;
}

/* Common checks of a device query: initialised, valid handle, not forced
 * to fail. Sets *i to the GPU index. */
static nvmlReturn_t dev_check(nvmlDevice_t d, const void *outp, const char *what, int *i)
{
    if (g_init_count <= 0)
        return E_UNINITIALIZED;
    if (!d || d < g_gpus || d >= g_gpus + ngpus() || !outp)
        return E_INVALID_ARGUMENT;
    *i = d->index;
    return forced(what);
}

FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t r);
FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case 0:
        return "Success";
    case 1:
        return "Uninitialized";
    case 2:
        return "Invalid Argument";
    case 3:
        return "Not Supported";
    case 4:
        return "Insufficient Permissions";
    case 7:
        return "Insufficient Size";
    case 9:
        return "Driver Not Loaded";
    case 15:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void);
FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    long fail = env_long("FAKENVML_INIT_FAIL", 0);
    if (fail)
        return (nvmlReturn_t)fail;
    g_init_count++;
    return OK;
}

/* What Python's NVML binding (nvidia-ml-py) calls for nvmlInit, so that
 * nvitop runs against this fake (perf_top_gpus's comparison, docs/TOP.md). */
FAKE_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
FAKE_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return nvmlInit_v2();
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void);
FAKE_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (g_init_count <= 0)
        return E_UNINITIALIZED;
    g_init_count--;
    return OK;
}

#ifndef FAKENVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len);
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
    if (g_init_count <= 0)
        return E_UNINITIALIZED;
    if (!buf || len < 10)
        return E_INSUFFICIENT_SIZE;
    snprintf(buf, len, "%s", "580.00.01");
    return OK;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (g_init_count <= 0)
        return E_UNINITIALIZED;
    if (!count)
        return E_INVALID_ARGUMENT;
    nvmlReturn_t r = forced("count");
    if (r)
        return r;
    *count = (unsigned)ngpus();
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (g_init_count <= 0)
        return E_UNINITIALIZED;
    if (!d || i >= (unsigned)ngpus())
        return E_INVALID_ARGUMENT;
    nvmlReturn_t r = forced("handle");
    if (r)
        return r;
    g_gpus[i].index = (int)i;
    *d = &g_gpus[i];
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len)
{
    int i;
    nvmlReturn_t r = dev_check(d, buf, "name", &i);
    if (r)
        return r;
    int n = snprintf(buf, len, "NVIDIA Fake GPU %d", i);
    return n < 0 || (unsigned)n >= len ? E_INSUFFICIENT_SIZE : OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
    int i;
    nvmlReturn_t r = dev_check(d, buf, "uuid", &i);
    if (r)
        return r;
    const char *as_cuda = getenv("FAKENVML_UUID_AS_CUDA");
    int n;
    if (as_cuda && strcmp(as_cuda, "1") == 0) {
        unsigned char b[16];
        for (int k = 0; k < 16; k++)
            b[k] = (unsigned char)((0x11 * k) ^ (i * 0x5a));
        n = snprintf(buf, len,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                     b[12], b[13], b[14], b[15]);
    } else {
        n = snprintf(buf, len, "GPU-00000000-0000-0000-0000-%012d", i);
    }
    return n < 0 || (unsigned)n >= len ? E_INSUFFICIENT_SIZE : OK;
}

/* FAKENVML_BLOCK_FILE: NVML stuck inside a sample while the file exists. */
static void maybe_block(void)
{
    const char *p = getenv("FAKENVML_BLOCK_FILE");
    if (!p || !*p || access(p, F_OK) != 0)
        return;
    char w[4096];
    snprintf(w, sizeof w, "%s.waiting", p);
    FILE *f = fopen(w, "w");
    if (f)
        fclose(f);
    while (access(p, F_OK) == 0)
        usleep(1000);
    unlink(w);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    maybe_block();
    int i;
    nvmlReturn_t r = dev_check(d, u, "utilization", &i);
    if (r)
        return r;
    u->gpu = 10u * (unsigned)(i + 1) + g_util_calls[i]++;
    u->memory = 5u * (unsigned)(i + 1);
    return OK;
}

/* FAKENVML_RESERVED_MIB in bytes. */
static unsigned long long reserved_bytes(void)
{
    const char *s = getenv("FAKENVML_RESERVED_MIB");
    return s ? strtoull(s, NULL, 10) * 1024ull * 1024ull : 0;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    int i;
    nvmlReturn_t r = dev_check(d, m, "memory", &i);
    if (r)
        return r;
    m->total = (80ull + (unsigned)i) * GIB;
    m->used = (1ull + (unsigned)i) * GIB + reserved_bytes();
    m->free = m->total - m->used;
    return OK;
}

#ifndef FAKENVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    int i;
    nvmlReturn_t r = dev_check(d, m, "memory", &i);
    if (r)
        return r;
    if (m->version != ((unsigned)sizeof *m | (2u << 24)))
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    m->total = (80ull + (unsigned)i) * GIB;
    m->reserved = reserved_bytes();
    m->used = (1ull + (unsigned)i) * GIB;
    m->free = m->total - m->used - m->reserved;
    return OK;
}
#endif

/* GPU i's SM clock: 1500 + i, or the next of FAKENVML_SM_CLOCKS. */
static unsigned sm_clock(int i)
{
    static unsigned step;
    const char *list = getenv("FAKENVML_SM_CLOCKS");
    if (!list || !*list)
        return 1500u + (unsigned)i;
    unsigned n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    unsigned want = step++ % n;
    const char *p = list;
    for (unsigned k = 0; k < want; k++)
        p = strchr(p, ',') + 1;
    return (unsigned)strtoul(p, NULL, 10);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    int i;
    nvmlReturn_t r = dev_check(d, mhz, type == 1 ? "sm_clock" : "mem_clock", &i);
    if (r)
        return r;
    if (type == 1)
        *mhz = sm_clock(i);
    else if (type == 2)
        *mhz = 2619u;
    else
        return E_INVALID_ARGUMENT;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    int i;
    nvmlReturn_t r = dev_check(d, mhz, "max_clock", &i);
    if (r)
        return r;
    if (type != 1)
        return E_INVALID_ARGUMENT;
    *mhz = 1980u;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c)
{
    int i;
    nvmlReturn_t r = dev_check(d, c, "temperature", &i);
    if (r)
        return r;
    if (sensor != 0)
        return E_INVALID_ARGUMENT;
    *c = 40u + (unsigned)i;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    int i;
    nvmlReturn_t r = dev_check(d, mw, "power", &i);
    if (r)
        return r;
    *mw = 100000u + 1000u * (unsigned)i;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
    int i;
    nvmlReturn_t r = dev_check(d, mw, "power_limit", &i);
    if (r)
        return r;
    *mw = 700000u;
    return OK;
}

static nvmlReturn_t reasons(nvmlDevice_t d, unsigned long long *out)
{
    int i;
    nvmlReturn_t r = dev_check(d, out, "throttle", &i);
    if (r)
        return r;
    const char *t = getenv("FAKENVML_THROTTLE");
    *out = i != 0 ? 0x1ull : t && *t ? strtoull(t, NULL, 16) : 0x24ull;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                                   unsigned long long *out);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                                   unsigned long long *out)
{
    return reasons(d, out);
}

#ifndef FAKENVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                                unsigned long long *out);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                                unsigned long long *out)
{
    return reasons(d, out);
}
#endif

/* Appends the processes of GPU i to out (up to cap), returns how many
 * there are in all. */
static unsigned list_procs(int i, nvmlProcessInfo_t *out, unsigned cap)
{
    unsigned n = 0;
    const char *s = getenv("FAKENVML_PROCS");
    while (s && *s) {
        int gpu = -1;
        unsigned pid = 0;
        char bytes[32] = "";
        int used = 0;
        if (sscanf(s, "%d:%u:%31[^,]%n", &gpu, &pid, bytes, &used) == 3 && gpu == i) {
            if (n < cap) {
                out[n].pid = pid;
                out[n].usedGpuMemory = strcmp(bytes, "-") == 0 ? ~0ull : strtoull(bytes, NULL, 10);
                out[n].gpuInstanceId = ~0u;
                out[n].computeInstanceId = ~0u;
            }
            n++;
        }
        const char *end = strchr(s, ',');
        s = end ? end + 1 : NULL;
    }
    if (i == 0) {
        long many = env_long("FAKENVML_MANY_PROCS", 0);
        for (long j = 0; j < many; j++, n++)
            if (n < cap) {
                out[n].pid = 10000u + (unsigned)j;
                out[n].usedGpuMemory = ((unsigned long long)j + 1) * MIB;
                out[n].gpuInstanceId = ~0u;
                out[n].computeInstanceId = ~0u;
            }
    }
    return n;
}

/* As the real library: INSUFFICIENT_SIZE with the needed count when the
 * caller's array is too small (nothing written then). */
static nvmlReturn_t procs(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
    int i;
    nvmlReturn_t r = dev_check(d, count, "processes", &i);
    if (r)
        return r;
    unsigned need = list_procs(i, NULL, 0);
    if (*count < need || (need && !infos)) {
        *count = need;
        return E_INSUFFICIENT_SIZE;
    }
    *count = list_procs(i, infos, *count);
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d,
                                                                 unsigned int *count,
                                                                 nvmlProcessInfo_t *infos);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d,
                                                                 unsigned int *count,
                                                                 nvmlProcessInfo_t *infos)
{
    return procs(d, count, infos);
}

#ifndef FAKENVML_OLD
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                                 unsigned int *count,
                                                                 nvmlProcessInfo_t *infos);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                                 unsigned int *count,
                                                                 nvmlProcessInfo_t *infos)
{
    return procs(d, count, infos);
}
#endif

#ifndef FAKENVML_OLD
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* The FAKENVML_PROC_UTIL samples of GPU i into out (up to cap); returns how
 * many there are in all. */
static unsigned list_util(int i, nvmlProcessUtilizationSample_t *out, unsigned cap,
                          unsigned long long ts)
{
    unsigned n = 0;
    const char *s = getenv("FAKENVML_PROC_UTIL");
    while (s && *s) {
        int gpu = -1;
        unsigned pid = 0, sm = 0, mem = 0;
        if (sscanf(s, "%d:%u:%u:%u", &gpu, &pid, &sm, &mem) == 4 && gpu == i) {
            if (n < cap)
                out[n] = (nvmlProcessUtilizationSample_t){
                    .pid = pid, .timeStamp = ts, .smUtil = sm, .memUtil = mem};
            n++;
        }
        const char *end = strchr(s, ',');
        s = end ? end + 1 : NULL;
    }
    return n;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                         nvmlProcessUtilizationSample_t *u,
                                                         unsigned int *count,
                                                         unsigned long long last_seen);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                         nvmlProcessUtilizationSample_t *u,
                                                         unsigned int *count,
                                                         unsigned long long last_seen)
{
    int i;
    nvmlReturn_t r = dev_check(d, count, "proc_util", &i);
    if (r)
        return r;
    unsigned need = list_util(i, NULL, 0, 0);
    if (!need) {
        *count = 0;
        return E_NOT_FOUND;
    }
    if (!u || *count < need) {
        *count = need;
        return E_INSUFFICIENT_SIZE;
    }
    *count = list_util(i, u, *count, last_seen + 1);
    return OK;
}
#endif

#ifndef FAKENVML_OLD
/* Graphics processes of GPU i from FAKENVML_GRAPHICS_PROCS (as list_procs). */
static unsigned list_graphics(int i, nvmlProcessInfo_t *out, unsigned cap)
{
    unsigned n = 0;
    const char *s = getenv("FAKENVML_GRAPHICS_PROCS");
    while (s && *s) {
        int gpu = -1;
        unsigned pid = 0;
        char bytes[32] = "";
        if (sscanf(s, "%d:%u:%31[^,]", &gpu, &pid, bytes) == 3 && gpu == i) {
            if (n < cap)
                out[n] = (nvmlProcessInfo_t){
                    .pid = pid,
                    .usedGpuMemory = strcmp(bytes, "-") == 0 ? ~0ull : strtoull(bytes, NULL, 10),
                    .gpuInstanceId = ~0u,
                    .computeInstanceId = ~0u};
            n++;
        }
        const char *end = strchr(s, ',');
        s = end ? end + 1 : NULL;
    }
    return n;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d,
                                                                  unsigned int *count,
                                                                  nvmlProcessInfo_t *infos);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d,
                                                                  unsigned int *count,
                                                                  nvmlProcessInfo_t *infos)
{
    int i;
    nvmlReturn_t r = dev_check(d, count, "graphics", &i);
    if (r)
        return r;
    unsigned need = list_graphics(i, NULL, 0);
    if (*count < need || (need && !infos)) {
        *count = need;
        return E_INSUFFICIENT_SIZE;
    }
    *count = list_graphics(i, infos, *count);
    return OK;
}
#endif

/* nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it. */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    int i;
    nvmlReturn_t r = dev_check(d, p, "pci", &i);
    if (r)
        return r;
    memset(p, 0, sizeof *p);
    p->bus = 0x18u + (unsigned)i;
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d,
                                                             unsigned long long *mj);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    int i;
    nvmlReturn_t r = dev_check(d, mj, "energy", &i);
    if (r)
        return r;
    *mj = 5000000000ull + 1000ull * (unsigned)i;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned int *u,
                                                         unsigned int *period_us);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned int *u,
                                                         unsigned int *period_us)
{
    int i;
    nvmlReturn_t r = dev_check(d, u, "enc_util", &i);
    if (r || !period_us)
        return r ? r : E_INVALID_ARGUMENT;
    *u = 3u + (unsigned)i;
    *period_us = 167000;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned int *u,
                                                         unsigned int *period_us);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned int *u,
                                                         unsigned int *period_us)
{
    int i;
    nvmlReturn_t r = dev_check(d, u, "dec_util", &i);
    if (r || !period_us)
        return r ? r : E_INVALID_ARGUMENT;
    *u = 7u + (unsigned)i;
    *period_us = 167000;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *n);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *n)
{
    int i;
    nvmlReturn_t r = dev_check(d, n, "pcie_replay", &i);
    if (r)
        return r;
    *n = 11u + (unsigned)i;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr,
                                                   unsigned int *unc, unsigned int *pending,
                                                   unsigned int *failed);
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr,
                                                   unsigned int *unc, unsigned int *pending,
                                                   unsigned int *failed)
{
    int i;
    nvmlReturn_t r = dev_check(d, corr, "remapped_rows", &i);
    if (r || !unc || !pending || !failed)
        return r ? r : E_INVALID_ARGUMENT;
    *corr = 2u * (unsigned)i;
    *unc = (unsigned)i;
    *pending = 0;
    *failed = i == 1;
    return OK;
}
