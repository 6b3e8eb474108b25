/*
 * cupti.c - CUPTI activity capture, loaded at run time (see vyre/cupti.h).
 *
 * Owns the dlopen() of libcupti (search rules in vyre/cupti.h; the common
 * mechanics are base/loader.c's), its function table, the capture session
 * (subscribe, buffer callbacks, enabled kinds), the normalisation of CUPTI
 * records into vyre_activity records, NVTX marker pairing, and the sinks.
 *
 * Guarantees and the reasons for them:
 *   - libcupti is never linked and a missing CUPTI is an error with a hint,
 *     never a crash: the tools must start where there is no toolkit.
 *   - Another profiler holding CUPTI is VYRE_ECUPTIBUSY and changes nothing.
 *     CUPTI allows one subscriber per process; we subscribe (with no
 *     callback domain enabled) before touching the activity API, which is
 *     where a second client is told so, and we never fight for it.
 *   - Buffer completion is thread-safe. In CUDA 13 activity buffers are per
 *     thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER defaults to 1),
 *     so completions arrive from several threads at once: parsing, marker
 *     pairing and sink calls run under g_sink_mu, which also makes
 *     remove_sink a barrier (a removed sink is not running and never runs
 *     again). Statistics are relaxed atomics, readable without the lock.
 *   - start/stop/flush are serialised by g_state_mu and never hold
 *     g_sink_mu while calling CUPTI: cuptiActivityFlushAll runs completion
 *     callbacks on the calling thread, which take g_sink_mu.
 *   - MARKER capture is enabled only when NVTX is routed to CUPTI: without
 *     the routing there are no NVTX markers to capture, and kernel + memcpy
 *     + marker capture in that state crashed on the GPU machine (GPU.md).
 *   - Every buffer handed to CUPTI is freed exactly once, in its completion.
 */
#include "cuda/cupti_internal.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vyre/counters.h"
#include "vyre/telemetry.h"
#include "vyre/cuda.h"

#include "base/internal.h"
#include "cuda/toolkit_internal.h"

/* The soname below names the toolkit major we were built against. */
_Static_assert(CUDA_VERSION / 1000 == 13, "update the CUPTI soname for this CUDA major");

#define CUPTI_SONAME "libcupti.so.13"
#define HINT_NOCUPTI                                                                               \
    "install the CUDA toolkit's CUPTI (libcupti.so.13, package cuda-cupti-13-0), or set "          \
    "VYRE_CUPTI_LIBRARY to the path of libcupti.so"
#define HINT_BUSY        "run without the other profiler to capture with vyre; NVTX ranges still reach it"
#define BUFFER_BYTES_MIN (64u * 1024u)
#define BUFFER_BYTES_MAX (256u * 1024u * 1024u)
#define CHUNK_RECORDS    64 /* records per sink call */

#define VYRE_CUPTI_FUNCS(X)                                                                        \
    X(cuptiGetResultString)                                                                        \
    X(cuptiGetVersion)                                                                             \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiActivityEnable)                                                                         \
    X(cuptiActivityDisable)                                                                        \
    X(cuptiActivityRegisterCallbacks)                                                              \
    X(cuptiActivityGetNextRecord)                                                                  \
    X(cuptiActivityGetNumDroppedRecords)                                                           \
    X(cuptiActivityFlushAll)

typedef struct cupti_fns {
#define CUPTI_FIELD(name) __typeof__(&name) name;
    VYRE_CUPTI_FUNCS(CUPTI_FIELD)
#undef CUPTI_FIELD
} cupti_fns;

/* ---- loading ------------------------------------------------------------ */

static cupti_fns g_fns;
static uint32_t g_version;
static atomic_int g_loaded; /* set (release) once g_fns, g_lib.path, g_version are final */

int vyre__cupti_is_cupti_path(const char *path)
{
    if (!path || !*path)
        return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return strncmp(base, "libcupti", 8) == 0;
}

/* NVTX_INJECTION64_PATH names a library to load: secure_getenv, as for
 * every library path (base/loader.c). */
int vyre__cupti_nvtx_routed(void)
{
    return vyre__cupti_is_cupti_path(secure_getenv("NVTX_INJECTION64_PATH"));
}

/* NVTX loads the injection library by that path: open the same file, so
 * that the markers and our activity API are one CUPTI instance. */
static const char *nvtx_injection(void)
{
    const char *inj = secure_getenv("NVTX_INJECTION64_PATH");
    return vyre__cupti_is_cupti_path(inj) ? inj : NULL;
}

static const char *const g_sonames[] = {CUPTI_SONAME, NULL};
/* The toolkit's CUPTI lives in lib64 in package installs and in
 * extras/CUPTI/lib64 in runfile installs. */
static const char *const g_subdirs[] = {"lib64", "extras/CUPTI/lib64", NULL};
static const vyre__lib_spec g_spec = {
    .fail = "CUPTI not available",
    .env = "VYRE_CUPTI_LIBRARY",
    .env_named = 1,
    .names = g_sonames,
    .root_env = VYRE__TOOLKIT_ROOT_ENV,
    .root_default = VYRE__TOOLKIT_ROOT_DEFAULT,
    .subdirs = g_subdirs,
    .first = nvtx_injection,
    .missing_code = VYRE_ENOCUPTI,
    .hint = HINT_NOCUPTI,
    .sym_lead = "CUPTI not available: ",
    .sym_noun = "symbol '",
    .sym_tail = "' (an older or foreign library)",
};
static const vyre__lib_sym g_syms[] = {
#define CUPTI_SYM(name) {#name, offsetof(cupti_fns, name), 0},
    VYRE_CUPTI_FUNCS(CUPTI_SYM)
#undef CUPTI_SYM
};

/* After the symbols. The handle is never dlclose()d: CUPTI keeps
 * process-wide state, may be NVTX's injection, and its threads may still
 * be running. */
static int ready(void *handle, char *path, vyre_error *err)
{
    (void)handle;
    (void)err;
    /* Report the file itself, not the soname the linker searched for: it
     * is what NVTX_INJECTION64_PATH should name to route NVTX here. */
    Dl_info where;
    if (dladdr((void *)g_fns.cuptiGetVersion, &where) && where.dli_fname &&
        strchr(where.dli_fname, '/'))
        vyre__strlcpy(path, where.dli_fname, VYRE__LIB_PATH_MAX);
    uint32_t v = 0;
    if (g_fns.cuptiGetVersion(&v) == CUPTI_SUCCESS)
        g_version = v;
    atomic_store_explicit(&g_loaded, 1, memory_order_release);
    return VYRE_OK;
}

static vyre__lib_once g_lib = {
    .spec = &g_spec,
    .syms = g_syms,
    .nsyms = VYRE_ARRAY_SIZE(g_syms),
    .table = &g_fns,
    .table_size = sizeof g_fns,
    .ready = ready,
    VYRE__LIB_ONCE_STATE,
};

int vyre_cupti_load(vyre_error *err)
{
    return vyre__lib_load(&g_lib, err);
}

/* ---- errors ------------------------------------------------------------- */

static int map_cupti(CUptiResult r)
{
    switch (r) {
    case CUPTI_SUCCESS:
        return VYRE_OK;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
        return VYRE_ECUPTIBUSY;
    case CUPTI_ERROR_NOT_INITIALIZED:
        return VYRE_ENODRIVER;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return VYRE_EPERM;
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_KIND:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
        return VYRE_ENOTSUP;
    case CUPTI_ERROR_INVALID_PARAMETER:
        return VYRE_EINVAL;
    case CUPTI_ERROR_OUT_OF_MEMORY:
        return VYRE_ENOMEM;
    default:
        return VYRE_ENOCUPTI;
    }
}

static const char *hint_for(int code)
{
    switch (code) {
    case VYRE_ECUPTIBUSY:
        return HINT_BUSY;
    case VYRE_ENODRIVER:
        return "CUPTI cannot reach the CUDA driver: check that vyre_cuda_init succeeds "
               "(nvidia-smi, "
               "the driver install)";
    case VYRE_EPERM:
        return "allow profiling for this user (NVreg_RestrictProfilingToAdminUsers=0) or run "
               "with the needed privileges";
    case VYRE_ENOTSUP:
        return "this device or CUPTI version cannot capture that activity kind: capture fewer "
               "kinds (vyre_cupti_config.kinds)";
    default:
        return "see the CUPTI documentation for this error";
    }
}

static int cupti_fail(CUptiResult r, const char *call, vyre_error *err)
{
    int code = map_cupti(r);
    const char *text = NULL;
    if (g_fns.cuptiGetResultString)
        g_fns.cuptiGetResultString(r, &text);
    if (code == VYRE_ECUPTIBUSY)
        return vyre__fail(err, code, HINT_BUSY,
                          "another profiler (Nsight Systems?) holds CUPTI; capture is off, NVTX "
                          "ranges still work (%s: %s)",
                          call, text ? text : "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    char fallback[32];
    if (!text) {
        snprintf(fallback, sizeof fallback, "CUptiResult %d", (int)r);
        text = fallback;
    }
    return vyre__fail(err, code, hint_for(code), "%s failed: %s", call, text);
}

/* ---- normalisation (pure) ---------------------------------------------- */

static void copy_str(char *dst, size_t size, const char *src)
{
    vyre__strlcpy(dst, src ? src : "", size);
}

static uint32_t dim(int32_t v)
{
    return v < 0 ? 0u : (uint32_t)v;
}

static const char *overhead_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
        return "runtime_triggered_module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
        return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
        return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
        return "activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
        return "uvm_activity_init";
    default:
        return "unknown";
    }
}

const char *vyre_copy_kind_name(vyre_copy_kind kind)
{
    static const char *const names[] = {"unknown", "htod", "dtoh", "htoa", "atoh", "atoa",
                                        "atod",    "dtoa", "dtod", "htoh", "ptop"};
    if ((int)kind < 0 || (size_t)kind >= VYRE_ARRAY_SIZE(names))
        return "unknown";
    return names[kind];
}

const char *vyre_activity_kind_name(vyre_activity_kind kind)
{
    switch (kind) {
    case VYRE_ACTIVITY_KERNEL:
        return "kernel";
    case VYRE_ACTIVITY_MEMCPY:
        return "memcpy";
    case VYRE_ACTIVITY_MEMSET:
        return "memset";
    case VYRE_ACTIVITY_OVERHEAD:
        return "overhead";
    case VYRE_ACTIVITY_MARKER:
        return "marker";
    case VYRE_ACTIVITY_RANGE:
        return "range";
    default:
        return "none";
    }
}

/* What kernel, memcpy and memset records share (three struct types of
 * CUPTI's, no common one). */
#define GPU_FIELDS(out, r)                                                                         \
    ((out)->start_ns = (r)->start, (out)->end_ns = (r)->end, (out)->device_id = (r)->deviceId,     \
     (out)->context_id = (r)->contextId, (out)->stream_id = (r)->streamId,                         \
     (out)->correlation_id = (r)->correlationId, (out)->graph_id = (r)->graphId)

enum vyre__cupti_norm vyre__cupti_normalize(const CUpti_Activity *rec, vyre_activity *out)
{
    memset(out, 0, sizeof *out);
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        out->kind = VYRE_ACTIVITY_KERNEL;
        copy_str(out->name, sizeof out->name, k->name);
        GPU_FIELDS(out, k);
        out->grid[0] = dim(k->gridX);
        out->grid[1] = dim(k->gridY);
        out->grid[2] = dim(k->gridZ);
        out->block[0] = dim(k->blockX);
        out->block[1] = dim(k->blockY);
        out->block[2] = dim(k->blockZ);
        out->static_shared_bytes = k->staticSharedMemory;
        out->dynamic_shared_bytes = k->dynamicSharedMemory;
        out->registers_per_thread = k->registersPerThread;
        return VYRE__NORM_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        out->kind = VYRE_ACTIVITY_MEMCPY;
        out->copy_kind =
            m->copyKind <= VYRE_COPY_PTOP ? (vyre_copy_kind)m->copyKind : VYRE_COPY_UNKNOWN;
        snprintf(out->name, sizeof out->name, "memcpy_%s", vyre_copy_kind_name(out->copy_kind));
        out->bytes = m->bytes;
        GPU_FIELDS(out, m);
        return VYRE__NORM_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        out->kind = VYRE_ACTIVITY_MEMSET;
        copy_str(out->name, sizeof out->name, "memset");
        out->bytes = m->bytes;
        GPU_FIELDS(out, m);
        return VYRE__NORM_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)rec;
        out->kind = VYRE_ACTIVITY_OVERHEAD;
        out->overhead_kind = (uint32_t)o->overheadKind;
        copy_str(out->name, sizeof out->name, overhead_name(out->overhead_kind));
        out->start_ns = o->start;
        out->end_ns = o->end;
        out->correlation_id = o->correlationId;
        if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
            out->thread_id = o->objectId.pt.threadId;
        return VYRE__NORM_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)rec;
        out->kind = VYRE_ACTIVITY_MARKER;
        out->marker_flags = (uint32_t)m->flags & (VYRE_MARKER_INSTANT | VYRE_MARKER_START |
                                                  VYRE_MARKER_END | 0x78u /* sync flags */);
        out->marker_id = m->id;
        copy_str(out->name, sizeof out->name, m->name);
        copy_str(out->domain, sizeof out->domain, m->domain);
        out->start_ns = m->timestamp;
        out->end_ns = m->timestamp;
        if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
            m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
            out->thread_id = m->objectId.pt.threadId;
        return VYRE__NORM_RECORD;
    }
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
        const CUpti_ActivityMarkerData2 *d = (const CUpti_ActivityMarkerData2 *)rec;
        out->kind = VYRE_ACTIVITY_NONE;
        out->marker_id = d->id;
        if (d->payloadKind == CUPTI_METRIC_VALUE_KIND_UINT64) {
            out->payload = d->payload.metricValueUint64;
            out->has_payload = 1;
        } else if (d->payloadKind == CUPTI_METRIC_VALUE_KIND_INT64) {
            out->payload = (uint64_t)d->payload.metricValueInt64;
            out->has_payload = 1;
        }
        return VYRE__NORM_MARKER_DATA;
    }
    default:
        return VYRE__NORM_SKIP;
    }
}

/* ---- NVTX marker pairing (pure) ---------------------------------------- */

static struct vyre__marker_open *find_open(vyre__marker_pairs *p, uint64_t id)
{
    /* Newest first: the range ending is usually the innermost one. */
    for (size_t i = p->n; i-- > 0;)
        if (p->open[i].id == id)
            return &p->open[i];
    return NULL;
}

int vyre__marker_pair(vyre__marker_pairs *p, vyre_activity *rec, uint64_t *unpaired)
{
    if (rec->marker_flags & VYRE_MARKER_START) {
        if (p->n >= VYRE__MARKERS_OPEN_MAX) {
            (*unpaired)++;
            return 0;
        }
        struct vyre__marker_open *o = &p->open[p->n++];
        o->id = rec->marker_id;
        o->start_ns = rec->start_ns;
        o->thread_id = rec->thread_id;
        o->payload = rec->payload;
        o->has_payload = rec->has_payload;
        memcpy(o->name, rec->name, sizeof o->name);
        memcpy(o->domain, rec->domain, sizeof o->domain);
        return 0;
    }
    if (rec->marker_flags & VYRE_MARKER_END) {
        struct vyre__marker_open *o = find_open(p, rec->marker_id);
        if (!o) {
            (*unpaired)++;
            return 0;
        }
        uint64_t end_ns = rec->start_ns;
        rec->kind = VYRE_ACTIVITY_RANGE;
        rec->start_ns = o->start_ns;
        rec->end_ns = end_ns;
        if (!rec->thread_id)
            rec->thread_id = o->thread_id;
        rec->payload = o->payload;
        rec->has_payload = o->has_payload;
        memcpy(rec->name, o->name, sizeof rec->name);
        memcpy(rec->domain, o->domain, sizeof rec->domain);
        /* Keep the table dense; order does not matter beyond find_open's
         * newest-first heuristic, so the last entry fills the hole. */
        *o = p->open[--p->n];
        return 1;
    }
    return 1; /* instantaneous (or synchronisation) marker */
}

int vyre__marker_payload(vyre__marker_pairs *p, uint64_t id, uint64_t payload)
{
    struct vyre__marker_open *o = find_open(p, id);
    if (!o)
        return 0;
    o->payload = payload;
    o->has_payload = 1;
    return 1;
}

unsigned vyre__cupti_effective_kinds(unsigned requested, int nvtx_routed)
{
    unsigned k = requested ? requested & VYRE_CUPTI_ALL : VYRE_CUPTI_ALL;
    if (!nvtx_routed)
        k &= ~VYRE_CUPTI_MARKER;
    return k;
}

/* ---- capture state ------------------------------------------------------- */

typedef atomic_uint_fast64_t stat_t;
static struct {
    stat_t buffers_requested, buffers_completed, buffer_alloc_failures, records;
    stat_t kernels, memcpys, memsets, overheads, markers, ranges, other_records;
    stat_t dropped, unpaired_markers, corrupt_buffers;
} g_st;

static pthread_mutex_t g_state_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_running; /* under g_state_mu; mirrored in g_running_pub */
static atomic_int g_running_pub;
static atomic_uint g_kinds_requested, g_kinds_enabled;
static atomic_size_t g_buffer_bytes = VYRE_CUPTI_BUFFER_BYTES_DEFAULT;
static CUpti_SubscriberHandle g_sub;

/* Under g_sink_mu. */
static pthread_mutex_t g_sink_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    vyre_activity_sink_fn fn;
    void *ctx;
} g_sinks[VYRE_CUPTI_SINKS_MAX];
static size_t g_nsinks;
static vyre__marker_pairs g_pairs;
static vyre_activity g_chunk[CHUNK_RECORDS];
static size_t g_chunk_n;

static void stat_add(stat_t *s, uint64_t n)
{
    atomic_fetch_add_explicit(s, n, memory_order_relaxed);
}

static uint64_t stat_get(stat_t *s)
{
    return atomic_load_explicit(s, memory_order_relaxed);
}

/* Under g_sink_mu. */
static void deliver_chunk(void)
{
    if (!g_chunk_n)
        return;
    for (size_t i = 0; i < g_nsinks; i++)
        g_sinks[i].fn(g_chunk, g_chunk_n, g_sinks[i].ctx);
    g_chunk_n = 0;
}

static void count_kind(vyre_activity_kind kind)
{
    switch (kind) {
    case VYRE_ACTIVITY_KERNEL:
        stat_add(&g_st.kernels, 1);
        vyre_counter_add(VYRE_CTR_KERNEL_RECORDS, 1);
        break;
    case VYRE_ACTIVITY_MEMCPY:
        stat_add(&g_st.memcpys, 1);
        break;
    case VYRE_ACTIVITY_MEMSET:
        stat_add(&g_st.memsets, 1);
        break;
    case VYRE_ACTIVITY_OVERHEAD:
        stat_add(&g_st.overheads, 1);
        break;
    case VYRE_ACTIVITY_MARKER:
        stat_add(&g_st.markers, 1);
        break;
    case VYRE_ACTIVITY_RANGE:
        stat_add(&g_st.ranges, 1);
        break;
    default:
        break;
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    size_t bytes = atomic_load_explicit(&g_buffer_bytes, memory_order_relaxed);
    /* CUPTI wants 8-byte aligned buffers; bytes is a multiple of 8. */
    uint8_t *p = aligned_alloc(8, bytes);
    if (!p) {
        stat_add(&g_st.buffer_alloc_failures, 1);
        bytes = 0; /* CUPTI drops records and counts them */
    } else {
        stat_add(&g_st.buffers_requested, 1);
    }
    *buffer = p;
    *size = bytes;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    stat_add(&g_st.buffers_completed, 1);
    pthread_mutex_lock(&g_sink_mu);
    uint64_t unpaired = 0;
    CUpti_Activity *rec = NULL;
    while (buffer && valid) {
        CUptiResult r = g_fns.cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (r != CUPTI_SUCCESS) {
            stat_add(&g_st.corrupt_buffers, 1);
            break;
        }
        stat_add(&g_st.records, 1);
        vyre_activity *a = &g_chunk[g_chunk_n];
        enum vyre__cupti_norm got = vyre__cupti_normalize(rec, a);
        if (got == VYRE__NORM_SKIP) {
            stat_add(&g_st.other_records, 1);
            continue;
        }
        if (got == VYRE__NORM_MARKER_DATA) {
            if (a->has_payload)
                vyre__marker_payload(&g_pairs, a->marker_id, a->payload);
            continue;
        }
        if (a->kind == VYRE_ACTIVITY_MARKER && !vyre__marker_pair(&g_pairs, a, &unpaired))
            continue;
        count_kind(a->kind);
        if (++g_chunk_n == CHUNK_RECORDS)
            deliver_chunk();
    }
    deliver_chunk();
    if (unpaired)
        stat_add(&g_st.unpaired_markers, unpaired);
    size_t dropped = 0;
    if (g_fns.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS &&
        dropped) {
        stat_add(&g_st.dropped, dropped);
        vyre_counter_add(VYRE_CTR_CUPTI_DROPPED, dropped);
    }
    pthread_mutex_unlock(&g_sink_mu);
    free(buffer);
}

static void CUPTIAPI subscriber_noop(void *userdata, CUpti_CallbackDomain domain,
                                     CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    (void)domain;
    (void)cbid;
    (void)cbdata;
}

/* The activity kinds behind each mask bit, in enable order. */
static const struct {
    unsigned bit;
    CUpti_ActivityKind kind;
    const char *call;
} k_kinds[] = {
    {VYRE_CUPTI_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)"},
    {VYRE_CUPTI_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)"},
    {VYRE_CUPTI_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)"},
    {VYRE_CUPTI_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD)"},
    {VYRE_CUPTI_MARKER, CUPTI_ACTIVITY_KIND_MARKER,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER)"},
    {VYRE_CUPTI_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA,
     "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA)"},
};

/* Disables the first n entries of k_kinds that are in mask, last first. */
static void disable_kinds(unsigned mask, size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (mask & k_kinds[i].bit)
            g_fns.cuptiActivityDisable(k_kinds[i].kind);
}

static int check_config(const vyre_cupti_config *cfg, unsigned *kinds, size_t *bytes,
                        vyre_error *err)
{
    *kinds = VYRE_CUPTI_ALL;
    *bytes = VYRE_CUPTI_BUFFER_BYTES_DEFAULT;
    if (!cfg)
        return VYRE_OK;
    if (cfg->kinds & ~VYRE_CUPTI_ALL)
        return vyre__fail(err, VYRE_EINVAL, "use a mask of VYRE_CUPTI_* bits",
                          "unknown CUPTI activity kinds 0x%x", cfg->kinds & ~VYRE_CUPTI_ALL);
    if (cfg->kinds)
        *kinds = cfg->kinds;
    if (cfg->buffer_bytes) {
        if (cfg->buffer_bytes < BUFFER_BYTES_MIN || cfg->buffer_bytes > BUFFER_BYTES_MAX)
            return vyre__fail(err, VYRE_ERANGE, "use 64 KiB to 256 MiB (default 1 MiB)",
                              "CUPTI buffer size %zu bytes is out of range", cfg->buffer_bytes);
        *bytes = (cfg->buffer_bytes + 7u) & ~(size_t)7u;
    }
    return VYRE_OK;
}

static int start_locked(const vyre_cupti_config *cfg, vyre_error *err)
{
    if (g_running)
        return vyre__fail(err, VYRE_EBUSY, "call vyre_cupti_stop() before starting again",
                          "CUPTI capture is already on");
    unsigned requested;
    size_t bytes;
    int rc = check_config(cfg, &requested, &bytes, err);
    if (rc)
        return rc;
    if ((rc = vyre_cupti_load(err)))
        return rc;
    /* CUPTI needs the driver, and without one says only
     * CUPTI_ERROR_UNKNOWN: ask the driver loader, which says why. */
    if ((rc = vyre_cuda_init(err)))
        return rc;
    unsigned kinds = vyre__cupti_effective_kinds(requested, vyre__cupti_nvtx_routed());
    atomic_store(&g_kinds_requested, requested);
    atomic_store(&g_buffer_bytes, bytes);

    CUptiResult r = g_fns.cuptiSubscribe(&g_sub, subscriber_noop, NULL);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(r, "cuptiSubscribe", err);
    r = g_fns.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(r, "cuptiActivityRegisterCallbacks", err);
        g_fns.cuptiUnsubscribe(g_sub);
        return rc;
    }
    pthread_mutex_lock(&g_sink_mu);
    memset(&g_pairs, 0, sizeof g_pairs); /* starts left open by the last session */
    pthread_mutex_unlock(&g_sink_mu);
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(k_kinds); i++) {
        if (!(kinds & k_kinds[i].bit))
            continue;
        r = g_fns.cuptiActivityEnable(k_kinds[i].kind);
        if (r != CUPTI_SUCCESS) {
            rc = cupti_fail(r, k_kinds[i].call, err);
            disable_kinds(kinds, i);
            g_fns.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            g_fns.cuptiUnsubscribe(g_sub);
            return rc;
        }
    }
    atomic_store(&g_kinds_enabled, kinds);
    g_running = 1;
    atomic_store(&g_running_pub, 1);
    return VYRE_OK;
}

int vyre_cupti_start(const vyre_cupti_config *cfg, vyre_error *err)
{
    pthread_mutex_lock(&g_state_mu);
    int rc = start_locked(cfg, err);
    pthread_mutex_unlock(&g_state_mu);
    return rc;
}

int vyre_cupti_flush(int force, vyre_error *err)
{
    pthread_mutex_lock(&g_state_mu);
    int rc = VYRE_OK;
    if (g_running) {
        CUptiResult r = g_fns.cuptiActivityFlushAll(force ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
        if (r != CUPTI_SUCCESS)
            rc = cupti_fail(r, "cuptiActivityFlushAll", err);
    }
    pthread_mutex_unlock(&g_state_mu);
    return rc;
}

int vyre_cupti_stop(vyre_error *err)
{
    pthread_mutex_lock(&g_state_mu);
    int rc = VYRE_OK;
    if (g_running) {
        unsigned kinds = atomic_load(&g_kinds_enabled);
        disable_kinds(kinds, VYRE_ARRAY_SIZE(k_kinds));
        CUptiResult r = g_fns.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS)
            rc = cupti_fail(r, "cuptiActivityFlushAll", err);
        r = g_fns.cuptiUnsubscribe(g_sub);
        if (r != CUPTI_SUCCESS && !rc)
            rc = cupti_fail(r, "cuptiUnsubscribe", err);
        g_running = 0;
        atomic_store(&g_running_pub, 0);
        atomic_store(&g_kinds_enabled, 0u);
    }
    pthread_mutex_unlock(&g_state_mu);
    return rc;
}

/* ---- sinks and statistics ------------------------------------------------ */

int vyre_cupti_add_sink(vyre_activity_sink_fn fn, void *ctx, vyre_error *err)
{
    if (!fn)
        return vyre__fail(err, VYRE_EINVAL, "pass a sink function", "vyre_cupti_add_sink: NULL fn");
    pthread_mutex_lock(&g_sink_mu);
    int rc = VYRE_OK;
    for (size_t i = 0; i < g_nsinks; i++)
        if (g_sinks[i].fn == fn && g_sinks[i].ctx == ctx)
            rc = vyre__fail(err, VYRE_EEXIST, "register each (fn, ctx) once",
                            "this CUPTI sink is already registered");
    if (!rc && g_nsinks == VYRE_CUPTI_SINKS_MAX)
        rc = vyre__fail(err, VYRE_ERANGE, "remove a sink first (vyre_cupti_remove_sink)",
                        "too many CUPTI sinks (at most %d)", VYRE_CUPTI_SINKS_MAX);
    if (!rc) {
        g_sinks[g_nsinks].fn = fn;
        g_sinks[g_nsinks].ctx = ctx;
        g_nsinks++;
    }
    pthread_mutex_unlock(&g_sink_mu);
    return rc;
}

int vyre_cupti_remove_sink(vyre_activity_sink_fn fn, void *ctx)
{
    pthread_mutex_lock(&g_sink_mu);
    int rc = VYRE_ENOENT;
    for (size_t i = 0; i < g_nsinks; i++) {
        if (g_sinks[i].fn == fn && g_sinks[i].ctx == ctx) {
            memmove(&g_sinks[i], &g_sinks[i + 1], (g_nsinks - i - 1) * sizeof g_sinks[0]);
            g_nsinks--;
            rc = VYRE_OK;
            break;
        }
    }
    pthread_mutex_unlock(&g_sink_mu);
    return rc;
}

void vyre_cupti_stats_get(vyre_cupti_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    /* Reading the load state must not load anything. */
    out->loaded = atomic_load_explicit(&g_loaded, memory_order_acquire);
    if (out->loaded) {
        vyre__strlcpy(out->library, g_lib.path, sizeof out->library);
        out->cupti_version = g_version;
    }
    out->running = atomic_load(&g_running_pub);
    out->nvtx_routed = vyre__cupti_nvtx_routed();
    out->kinds_requested = atomic_load(&g_kinds_requested);
    out->kinds_enabled = atomic_load(&g_kinds_enabled);
    out->buffers_requested = stat_get(&g_st.buffers_requested);
    out->buffers_completed = stat_get(&g_st.buffers_completed);
    out->buffer_alloc_failures = stat_get(&g_st.buffer_alloc_failures);
    out->records = stat_get(&g_st.records);
    out->kernels = stat_get(&g_st.kernels);
    out->memcpys = stat_get(&g_st.memcpys);
    out->memsets = stat_get(&g_st.memsets);
    out->overheads = stat_get(&g_st.overheads);
    out->markers = stat_get(&g_st.markers);
    out->ranges = stat_get(&g_st.ranges);
    out->other_records = stat_get(&g_st.other_records);
    out->dropped = stat_get(&g_st.dropped);
    out->unpaired_markers = stat_get(&g_st.unpaired_markers);
    out->corrupt_buffers = stat_get(&g_st.corrupt_buffers);
}

void vyre__cupti_telemetry_sink(const vyre_activity *recs, size_t n, void *ctx)
{
    vyre_telemetry *t = ctx ? ctx : vyre_telemetry_global(NULL);
    if (!t)
        return;
    for (size_t i = 0; i < n; i++) {
        const vyre_activity *a = &recs[i];
        if (a->kind != VYRE_ACTIVITY_KERNEL)
            continue;
        vyre_telemetry_kernel_record k = {
            .name = a->name,
            .grid = {a->grid[0], a->grid[1], a->grid[2]},
            .block = {a->block[0], a->block[1], a->block[2]},
            .stream_id = a->stream_id,
            .duration_ns = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0,
            .end_ns = a->end_ns,
            .device = (int32_t)a->device_id,
        };
        vyre_telemetry_add_kernel(t, &k);
    }
}
