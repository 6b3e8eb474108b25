/*
 * counters.c - process-wide counters and per-range log2 latency histograms.
 *
 * Relaxed atomics only: these are statistics, read by snapshots that do not
 * need one consistent instant (the telemetry page adds its own seqlock).
 */
#include "vyre/counters.h"

#include <stdatomic.h>
#include <string.h>

typedef struct hist_atomic {
    atomic_uint_fast64_t count, total_ns, max_ns;
    atomic_uint_fast64_t buckets[VYRE_HIST_BUCKETS];
} hist_atomic;

static atomic_uint_fast64_t g_ctr[VYRE_CTR_COUNT];
static hist_atomic g_hist[VYRE_RANGE_COUNT];

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

void vyre_counter_add(vyre_counter_id id, uint64_t n)
{
    if ((int)id >= 0 && id < VYRE_CTR_COUNT)
        atomic_fetch_add_explicit(&g_ctr[id], n, memory_order_relaxed);
}

static int bucket_of(uint64_t ns)
{
    if (ns == 0)
        return 0;
    int b = 63 - __builtin_clzll(ns);
    return b < VYRE_HIST_BUCKETS ? b : VYRE_HIST_BUCKETS - 1;
}

void vyre_range_record(vyre_range_id id, uint64_t ns)
{
    if ((int)id < 0 || id >= VYRE_RANGE_COUNT)
        return;
    hist_atomic *h = &g_hist[id];
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->total_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->buckets[bucket_of(ns)], 1, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
    while (ns > cur && !atomic_compare_exchange_weak_explicit(
                           &h->max_ns, &cur, ns, memory_order_relaxed, memory_order_relaxed))
        ;
}

void vyre_counters_snapshot(vyre_counters *out)
{
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        out->v[i] = atomic_load_explicit(&g_ctr[i], memory_order_relaxed);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        hist_atomic *h = &g_hist[r];
        vyre_range_hist *o = &out->ranges[r];
        o->count = atomic_load_explicit(&h->count, memory_order_relaxed);
        o->total_ns = atomic_load_explicit(&h->total_ns, memory_order_relaxed);
        o->max_ns = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
        for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
            o->buckets[b] = atomic_load_explicit(&h->buckets[b], memory_order_relaxed);
    }
}

uint64_t vyre_range_hist_quantile(const vyre_range_hist *h, double q)
{
    uint64_t n = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
        n += h->buckets[b];
    if (n == 0)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    uint64_t rank = (uint64_t)(q * (double)(n - 1)) + 1, seen = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++) {
        seen += h->buckets[b];
        if (seen >= rank) {
            if (b == VYRE_HIST_BUCKETS - 1)
                return h->max_ns; /* the open-ended last bucket */
            uint64_t upper = (UINT64_C(2) << b) - 1;
            return upper < h->max_ns || h->max_ns == 0 ? upper : h->max_ns;
        }
    }
    return h->max_ns;
}
