/*
 * nvtx.c - the vyre NVTX domain, registered strings and label rules.
 *
 * NVTX3 is header-only: with no tool attached (no NVTX_INJECTION64_PATH) the
 * first call of each entry point finds no tool and the rest are cheap
 * no-ops. The domain and strings are registered once, lazily, on first push.
 */
#include "trace/nvtx_internal.h"
#include "vyre/nvtx.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "trace/counters_internal.h"
#include "vyre/counters.h"

#include "base/internal.h"

static const vyre_range_def g_catalog[VYRE_RANGE_COUNT] = {
#define VYRE__RANGE_DEF(id, name, desc) {VYRE_RANGE_##id, name, name, desc},
    VYRE_RANGE_CATALOG(VYRE__RANGE_DEF)
#undef VYRE__RANGE_DEF
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_ready; /* 1 once register_once has run: skips pthread_once */
static nvtxDomainHandle_t g_domain;
/* One prebuilt attribute block per catalog entry (registered string, no
 * payload), so a push does not build one. */
static nvtxEventAttributes_t g_attrs[VYRE_RANGE_COUNT];

/* In-process timing: a per-thread stack of open ranges. Deeper nesting
 * than RANGE_DEPTH is still emitted to NVTX but not timed. */
#define RANGE_DEPTH 32
static _Thread_local struct {
    int depth;
    vyre_range_id id[RANGE_DEPTH];
    uint64_t start_ticks[RANGE_DEPTH];
} t_stack;
static atomic_int g_timing = 1;
static _Thread_local uint64_t t_last_pop_ticks;
static _Thread_local int t_last_pop_sampled_out;

/* Adaptive sampling of the hot dispatch ranges. Timing a range reads the TSC
 * twice, about 20 ns each on the lent GPU VMs: against a bare cuGraphLaunch
 * of 8 kernels (about 1 us) that alone was +4%, and graph replay on the vyre
 * path measured 1.06-1.07x bare. So, per thread and per hot range, every
 * dispatch is timed while that thread dispatches less often than once per
 * VYRE__SAMPLE_BELOW_NS; faster than that, the stride doubles up to
 * VYRE__SAMPLE_MAX_STRIDE (one dispatch in 16 timed) and halves again when
 * the rate falls. A timed sample is recorded with the weight of the
 * dispatches it stands for (itself and the untimed ones since the last
 * sample), so a histogram's count and its buckets stay equal, its mean and
 * quantiles are those of a systematic sample, and its count lags the exact
 * dispatch counters by at most VYRE__SAMPLE_MAX_STRIDE - 1 per thread. The
 * exact counts are the counters (launches, dispatches, graph_launches). */
#define VYRE__SAMPLE_BELOW_NS   20000u
#define VYRE__SAMPLE_MAX_STRIDE 16u
typedef struct {
    uint32_t countdown; /* untimed dispatches left before the next sample */
    uint32_t stride;    /* 1 = every dispatch timed */
    uint32_t skipped;   /* untimed dispatches since the last sample */
    uint64_t last_start;
} range_sampler;
static _Thread_local range_sampler t_samp[VYRE_RANGE_COUNT];

static inline int is_hot(vyre_range_id id)
{
    return id == VYRE_RANGE_PIPELINE_DISPATCH || id == VYRE_RANGE_PIPELINE_BATCH_DISPATCH ||
           id == VYRE_RANGE_HOST_DISPATCH || id == VYRE_RANGE_RESIDENT_DISPATCH;
}

int vyre__nvtx_last_pop_sampled_out(void)
{
    return t_last_pop_sampled_out;
}

unsigned vyre__nvtx_sample_stride(vyre_range_id id)
{
    if ((int)id < 0 || id >= VYRE_RANGE_COUNT || !is_hot(id))
        return 1;
    return t_samp[id].stride ? t_samp[id].stride : 1;
}

uint64_t vyre__nvtx_last_pop_ticks(void)
{
    return t_last_pop_ticks;
}

void vyre_range_timing_enable(int on)
{
    atomic_store_explicit(&g_timing, on ? 1 : 0, memory_order_relaxed);
}

static void register_once(void)
{
    const char *t = getenv("VYRE_RANGE_TIMING");
    if (t && strcmp(t, "0") == 0)
        vyre_range_timing_enable(0);
    g_domain = nvtxDomainCreateA(VYRE_NVTX_DOMAIN);
    for (int i = 0; i < VYRE_RANGE_COUNT; i++) {
        nvtxEventAttributes_t *a = &g_attrs[i];
        memset(a, 0, sizeof *a);
        a->version = NVTX_VERSION;
        a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a->message.registered = nvtxDomainRegisterStringA(g_domain, g_catalog[i].label);
    }
    atomic_store_explicit(&g_ready, 1, memory_order_release);
}

/* The launch path calls this twice per range: an acquire load once the
 * domain exists, pthread_once only before. */
static inline void ensure_registered(void)
{
    if (__builtin_expect(!atomic_load_explicit(&g_ready, memory_order_acquire), 0))
        pthread_once(&g_once, register_once);
}

const vyre_range_def *vyre__nvtx_catalog(size_t *count)
{
    if (count)
        *count = VYRE_RANGE_COUNT;
    return g_catalog;
}

const vyre_range_def *vyre_nvtx_range(vyre_range_id id)
{
    if ((int)id < 0 || id >= VYRE_RANGE_COUNT)
        return NULL;
    return &g_catalog[id];
}

int vyre_nvtx_label_validate(const char *label, size_t len, vyre_error *err)
{
    static const char hint[] = "use dot-separated segments of [a-z0-9_] under 'vyre.', e.g. "
                               "'vyre.cuda.pipeline.compile'";
    if (!label || len == 0)
        return vyre__fail(err, VYRE_ELABEL, hint, "NVTX label is empty");
    if (len > VYRE_NVTX_LABEL_MAX)
        return vyre__fail(err, VYRE_ELABEL, hint, "NVTX label is %zu bytes, longer than %d", len,
                          VYRE_NVTX_LABEL_MAX);
    if (memchr(label, '\0', len))
        return vyre__fail(err, VYRE_ELABEL, hint,
                          "NVTX label has an interior NUL at byte %zu of %zu",
                          (size_t)((const char *)memchr(label, '\0', len) - label), len);
    if (label[len] != '\0')
        return vyre__fail(err, VYRE_ELABEL, hint, "NVTX label of %zu bytes is not NUL-terminated",
                          len);
    size_t seg_start = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = label[i];
        if (c == '.' || c == '\0') {
            if (i == seg_start)
                return vyre__fail(err, VYRE_ELABEL, hint,
                                  "NVTX label '%s' has an empty segment at byte %zu", label, i);
            if (seg_start == 0 && (i != 4 || memcmp(label, "vyre", 4) != 0))
                return vyre__fail(err, VYRE_ELABEL, hint,
                                  "NVTX label '%s' does not start with 'vyre.'", label);
            seg_start = i + 1;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return vyre__fail(err, VYRE_ELABEL, hint,
                              "NVTX label has a bad character 0x%02x at byte %zu", (unsigned char)c,
                              i);
    }
    if (seg_start == 0 || len == 4)
        return vyre__fail(err, VYRE_ELABEL, hint, "NVTX label '%s' has nothing after 'vyre'",
                          label);
    return VYRE_OK;
}

static void push(vyre_range_id id, int has_payload, uint64_t payload)
{
    if ((int)id < 0 || id >= VYRE_RANGE_COUNT)
        return;
    ensure_registered();
    if (has_payload) {
        nvtxEventAttributes_t a = g_attrs[id];
        a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        a.payload.ullValue = payload;
        nvtxDomainRangePushEx(g_domain, &a);
    } else {
        nvtxDomainRangePushEx(g_domain, &g_attrs[id]);
    }
    if (t_stack.depth < RANGE_DEPTH) {
        uint64_t start = 0;
        if (atomic_load_explicit(&g_timing, memory_order_relaxed)) {
            range_sampler *s = is_hot(id) ? &t_samp[id] : NULL;
            if (s && s->countdown) {
                s->countdown--;
                s->skipped++;
            } else {
                start = vyre__ticks();
            }
        }
        t_stack.id[t_stack.depth] = id;
        t_stack.start_ticks[t_stack.depth] = start;
    }
    t_stack.depth++;
}

void vyre_nvtx_push(vyre_range_id id)
{
    push(id, 0, 0);
}

void vyre_nvtx_push_payload(vyre_range_id id, uint64_t payload)
{
    push(id, 1, payload);
}

void vyre_nvtx_pop(void)
{
    /* The once-guard makes g_domain safe to read when a pop races another
     * thread's first push; a pop without a push is ignored by NVTX tools. */
    ensure_registered();
    nvtxDomainRangePop(g_domain);
    t_last_pop_ticks = 0; /* an untimed pop leaves no reading to reuse */
    t_last_pop_sampled_out = 0;
    if (t_stack.depth <= 0)
        return;
    t_stack.depth--;
    if (t_stack.depth >= RANGE_DEPTH)
        return;
    vyre_range_id id = t_stack.id[t_stack.depth];
    uint64_t start = t_stack.start_ticks[t_stack.depth];
    if (!start) {
        /* Sampled out (or timing off): no clock read at all. */
        t_last_pop_sampled_out =
            is_hot(id) && atomic_load_explicit(&g_timing, memory_order_relaxed);
        return;
    }
    uint64_t now = vyre__ticks();
    t_last_pop_ticks = now;
    uint64_t ns = vyre__ticks_to_ns(now - start);
    if (!is_hot(id)) {
        vyre_range_record(id, ns);
        return;
    }
    range_sampler *s = &t_samp[id];
    uint64_t weight = (uint64_t)s->skipped + 1;
    if (s->stride == 0)
        s->stride = 1;
    if (s->last_start && start > s->last_start) {
        uint64_t period_ns = vyre__ticks_to_ns(start - s->last_start) / weight;
        if (period_ns < VYRE__SAMPLE_BELOW_NS)
            s->stride =
                s->stride * 2 > VYRE__SAMPLE_MAX_STRIDE ? VYRE__SAMPLE_MAX_STRIDE : s->stride * 2;
        else if (s->stride > 1)
            s->stride /= 2;
    }
    s->last_start = start;
    s->skipped = 0;
    s->countdown = s->stride - 1;
    vyre__range_record_weighted(id, ns, weight);
}
