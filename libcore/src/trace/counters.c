/*
 * counters.c - process-wide counters and per-range log-linear latency histograms.
 *
 * These run on every launch, where a shared lock-prefixed atomic per
 * counter costs tens of nanoseconds against a ~3.5 us cuLaunchKernel (and
 * the cache line bounces between launching threads). So each thread counts
 * into a slot of its own with plain relaxed loads and stores (one writer
 * per slot, no lock prefix), and a snapshot sums the slots.
 *
 * Slots are never freed: when a thread exits its slot is released with its
 * values intact, and the next new thread adopts it and keeps adding. So a
 * value never moves from one place to another and a snapshot can neither
 * count it twice nor miss it; churning thread pools reuse a bounded set of
 * slots. Threads beyond MAX_SLOTS share one slot with atomic read-modify-
 * write operations. Statistics only: a snapshot is not one instant.
 */
#include "vyre/counters.h"
#include "trace/counters_internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct hist_slot {
    atomic_uint_fast64_t count, total_ns, max_ns;
    atomic_uint_fast64_t buckets[VYRE_HIST_BUCKETS];
} hist_slot;

typedef struct slot {
    atomic_int owned; /* 1 while a live thread writes into it */
    atomic_uint_fast64_t v[VYRE_CTR_COUNT];
    hist_slot h[VYRE_RANGE_COUNT];
} slot;

#define MAX_SLOTS 256

static slot *_Atomic g_slots[MAX_SLOTS];
static atomic_size_t g_nslots; /* slots created so far (published in order) */
static slot g_shared;          /* for threads beyond MAX_SLOTS: atomic RMW */
static pthread_mutex_t g_grow = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static _Thread_local slot *t_slot;
static _Thread_local int t_shared; /* 1: this thread uses g_shared */

static const char *const g_names[VYRE_CTR_COUNT] = {
#define VYRE__CTR_NAME(id, name, unit) name,
    VYRE_COUNTER_LIST(VYRE__CTR_NAME)
#undef VYRE__CTR_NAME
};
static const char *const g_units[VYRE_CTR_COUNT] = {
#define VYRE__CTR_UNIT(id, name, unit) unit,
    VYRE_COUNTER_LIST(VYRE__CTR_UNIT)
#undef VYRE__CTR_UNIT
};

const char *vyre_counter_name(vyre_counter_id id)
{
    return (int)id >= 0 && id < VYRE_CTR_COUNT ? g_names[id] : NULL;
}

const char *vyre_counter_unit(vyre_counter_id id)
{
    return (int)id >= 0 && id < VYRE_CTR_COUNT ? g_units[id] : NULL;
}

static void release_slot(void *p)
{
    /* Release: the next owner's acquire sees every value written here. */
    atomic_store_explicit(&((slot *)p)->owned, 0, memory_order_release);
}

static void make_key(void)
{
    pthread_key_create(&g_key, release_slot);
}

/* The calling thread's slot, or NULL when it shares g_shared. */
static slot *my_slot_slow(void)
{
    pthread_once(&g_key_once, make_key);
    size_t n = atomic_load_explicit(&g_nslots, memory_order_acquire);
    slot *s = NULL;
    for (size_t i = 0; i < n && !s; i++) {
        slot *c = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        int free_ = 0;
        if (c && atomic_compare_exchange_strong_explicit(&c->owned, &free_, 1, memory_order_acquire,
                                                         memory_order_relaxed))
            s = c;
    }
    if (!s) {
        pthread_mutex_lock(&g_grow);
        n = atomic_load_explicit(&g_nslots, memory_order_relaxed);
        if (n < MAX_SLOTS && (s = calloc(1, sizeof *s)) != NULL) {
            atomic_store_explicit(&s->owned, 1, memory_order_relaxed);
            atomic_store_explicit(&g_slots[n], s, memory_order_release);
            atomic_store_explicit(&g_nslots, n + 1, memory_order_release);
        }
        pthread_mutex_unlock(&g_grow);
    }
    if (!s) {
        t_shared = 1;
        return NULL;
    }
    pthread_setspecific(g_key, s);
    t_slot = s;
    return s;
}

static inline slot *my_slot(void)
{
    if (__builtin_expect(t_slot != NULL, 1))
        return t_slot;
    if (t_shared)
        return NULL;
    return my_slot_slow();
}

/* Single writer per slot: a relaxed load and store, no lock prefix. */
static inline void bump(atomic_uint_fast64_t *a, uint64_t n, int shared)
{
    if (shared)
        atomic_fetch_add_explicit(a, n, memory_order_relaxed);
    else
        atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + n,
                              memory_order_relaxed);
}

void vyre_counter_add(vyre_counter_id id, uint64_t n)
{
    if ((int)id < 0 || id >= VYRE_CTR_COUNT)
        return;
    slot *s = my_slot();
    bump(s ? &s->v[id] : &g_shared.v[id], n, s == NULL);
}

/* The record path: one clz, two shifts and a mask, no division, no loop.
 * Below 2 * SUB the index is ns itself (buckets of width 1, exact); above,
 * e = floor(log2 ns) picks the power and the SUB_BITS bits after the leading
 * one pick the sub-bucket, so index = (e - SUB_BITS + 1) * SUB + sub. */
int vyre__hist_bucket_of(uint64_t ns)
{
    if (ns < 2 * VYRE_HIST_SUB)
        return (int)ns;
    int e = 63 - __builtin_clzll(ns);
    if (e >= VYRE_HIST_POWERS)
        return VYRE_HIST_BUCKETS - 1;
    int sub = (int)(ns >> (e - VYRE_HIST_SUB_BITS)) & (VYRE_HIST_SUB - 1);
    return ((e - VYRE_HIST_SUB_BITS + 1) << VYRE_HIST_SUB_BITS) + sub;
}

uint64_t vyre__hist_bucket_lo(int b)
{
    if (b <= 0)
        return 0;
    if (b >= VYRE_HIST_BUCKETS)
        b = VYRE_HIST_BUCKETS - 1;
    if (b < 2 * VYRE_HIST_SUB)
        return (uint64_t)b;
    int e = (b >> VYRE_HIST_SUB_BITS) + VYRE_HIST_SUB_BITS - 1;
    uint64_t sub = (uint64_t)(b & (VYRE_HIST_SUB - 1));
    return (UINT64_C(1) << e) + (sub << (e - VYRE_HIST_SUB_BITS));
}

uint64_t vyre_hist_edge_nearest(uint64_t ns)
{
    int b = vyre__hist_bucket_of(ns);
    uint64_t lo = vyre__hist_bucket_lo(b);
    if (b >= VYRE_HIST_BUCKETS - 1 || lo == ns)
        return lo;
    uint64_t hi = vyre__hist_bucket_lo(b + 1);
    return ns - lo <= hi - ns ? lo : hi;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t vyre_range_hist_cumulative(const vyre_range_hist *h, const uint64_t *edges, size_t n,
                                    uint64_t *out)
{
    uint64_t sum = 0; /* of the buckets below bucket b */
    size_t i = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++) {
        /* An edge at or below bucket b's lower bound counts the buckets
         * below b; the last bucket is open-ended, so an edge above its
         * lower bound counts the same. */
        uint64_t lo = vyre__hist_bucket_lo(b);
        while (i < n && (edges[i] <= lo || b == VYRE_HIST_BUCKETS - 1)) {
            out[i] = i > 0 && out[i - 1] > sum ? out[i - 1] : sum;
            i++;
        }
        sum = sat_add(sum, h->buckets[b]);
    }
    return sum;
}

void vyre_range_record(vyre_range_id id, uint64_t ns)
{
    vyre__range_record_weighted(id, ns, 1);
}

void vyre__range_record_weighted(vyre_range_id id, uint64_t ns, uint64_t weight)
{
    if ((int)id < 0 || id >= VYRE_RANGE_COUNT || weight == 0)
        return;
    slot *s = my_slot();
    int shared = s == NULL;
    hist_slot *h = shared ? &g_shared.h[id] : &s->h[id];
    bump(&h->count, weight, shared);
    bump(&h->total_ns, ns * weight, shared);
    bump(&h->buckets[vyre__hist_bucket_of(ns)], weight, shared);
    uint64_t cur = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
    if (!shared) {
        if (ns > cur)
            atomic_store_explicit(&h->max_ns, ns, memory_order_relaxed);
        return;
    }
    while (ns > cur && !atomic_compare_exchange_weak_explicit(
                           &h->max_ns, &cur, ns, memory_order_relaxed, memory_order_relaxed))
        ;
}

static void add_slot(vyre_counters *out, slot *s)
{
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        out->v[i] += atomic_load_explicit(&s->v[i], memory_order_relaxed);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        hist_slot *h = &s->h[r];
        vyre_range_hist *o = &out->ranges[r];
        o->count += atomic_load_explicit(&h->count, memory_order_relaxed);
        o->total_ns += atomic_load_explicit(&h->total_ns, memory_order_relaxed);
        uint64_t m = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
        if (m > o->max_ns)
            o->max_ns = m;
        for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
            o->buckets[b] += atomic_load_explicit(&h->buckets[b], memory_order_relaxed);
    }
}

void vyre_counters_snapshot(vyre_counters *out)
{
    memset(out, 0, sizeof *out);
    size_t n = atomic_load_explicit(&g_nslots, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        slot *s = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (s)
            add_slot(out, s);
    }
    add_slot(out, &g_shared);
}

uint64_t vyre_range_hist_quantile(const vyre_range_hist *h, double q)
{
    uint64_t n = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
        n += h->buckets[b];
    if (n == 0)
        return 0;
    if (!(q > 0))
        q = 0;
    if (q >= 1)
        return h->max_ns;
    /* The wanted rank, 0-based and fractional, as the exact quantile of the
     * sorted samples x[q * (n - 1)] would be; samples are taken as spread
     * evenly inside their bucket. */
    double rank = q * (double)(n - 1);
    uint64_t before = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++) {
        uint64_t c = h->buckets[b];
        if (c == 0 || (double)(before + c) <= rank) {
            before += c;
            continue;
        }
        uint64_t lo = vyre__hist_bucket_lo(b);
        uint64_t hi = b == VYRE_HIST_BUCKETS - 1 ? h->max_ns + 1 : vyre__hist_bucket_lo(b + 1);
        if (hi > h->max_ns + 1 && h->max_ns >= lo)
            hi = h->max_ns + 1; /* the top bucket ends at the largest sample */
        if (hi <= lo)
            return lo;
        double frac = (rank - (double)before + 0.5) / (double)c;
        uint64_t v = lo + (uint64_t)(frac * (double)(hi - lo));
        if (h->max_ns && v > h->max_ns)
            v = h->max_ns;
        return v;
    }
    return h->max_ns;
}
