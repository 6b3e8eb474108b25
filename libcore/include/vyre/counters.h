/*
 * vyre/counters.h - in-process counters and NVTX range latency histograms.
 *
 * This header is part of libvyrecore's public API.
 *
 * libcore counts what it does (launches, copies, bytes, syncs, cache hits,
 * ...) into per-thread slots (one writer each, summed by a snapshot; see
 * counters.c for why), and times every catalog range
 * (vyre_nvtx_push/pop) into a log-linear histogram per range. A snapshot is cheap
 * and lock-free; the telemetry page publishes the same numbers to other
 * processes.
 */
#ifndef VYRE_COUNTERS_H
#define VYRE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "nvtx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ID, "name", "unit"). Append only: the telemetry page stores them by id. */
#define VYRE_COUNTER_LIST(X)                                                                       \
    X(LAUNCHES, "launches", "count")                                                               \
    X(DISPATCHES, "dispatches", "count")                                                           \
    X(BATCH_DISPATCHES, "batch_dispatches", "count")                                               \
    X(GRAPH_LAUNCHES, "graph_launches", "count")                                                   \
    X(H2D_COPIES, "h2d_copies", "count")                                                           \
    X(H2D_BYTES, "h2d_bytes", "bytes")                                                             \
    X(D2H_COPIES, "d2h_copies", "count")                                                           \
    X(D2H_BYTES, "d2h_bytes", "bytes")                                                             \
    X(D2D_BYTES, "d2d_bytes", "bytes")                                                             \
    X(READBACKS, "readbacks", "count")                                                             \
    X(SYNCS, "syncs", "count")                                                                     \
    X(CACHE_HITS, "cache_hits", "count")                                                           \
    X(CACHE_MISSES, "cache_misses", "count")                                                       \
    X(MODULE_CACHE_HITS, "module_cache_hits", "count")                                             \
    X(COMPILES, "compiles", "count")                                                               \
    X(COMPILE_NS, "compile_ns", "ns")                                                              \
    X(COMPILE_NS_SAVED, "compile_ns_saved", "ns")                                                  \
    X(MODULE_LOADS, "module_loads", "count")                                                       \
    X(KERNEL_RECORDS, "kernel_records", "count")                                                   \
    X(CUPTI_DROPPED, "cupti_dropped_records", "count")

typedef enum vyre_counter_id {
#define VYRE__CTR_ENUM(id, name, unit) VYRE_CTR_##id,
    VYRE_COUNTER_LIST(VYRE__CTR_ENUM)
#undef VYRE__CTR_ENUM
        VYRE_CTR_COUNT
} vyre_counter_id;

/* Log-linear histogram buckets (HdrHistogram-style): durations below
 * 2 * VYRE_HIST_SUB ns get one bucket per ns; above that, each power of two
 * [2^e, 2^(e+1)) is split into VYRE_HIST_SUB equal sub-buckets of width
 * 2^(e - VYRE_HIST_SUB_BITS), so a bucket is never wider than 1/16 of its
 * lower bound. Powers up to 2^39 ns (about 9 minutes) are covered; the last
 * bucket takes everything longer. vyre__hist_bucket_lo() gives a bucket's
 * lower bound. */
#define VYRE_HIST_SUB_BITS 4
#define VYRE_HIST_SUB      (1 << VYRE_HIST_SUB_BITS)
#define VYRE_HIST_POWERS   40
#define VYRE_HIST_BUCKETS  ((VYRE_HIST_POWERS - VYRE_HIST_SUB_BITS + 1) * VYRE_HIST_SUB)

typedef struct vyre_range_hist {
    uint64_t count;
    uint64_t total_ns;
    uint64_t max_ns;
    uint64_t buckets[VYRE_HIST_BUCKETS];
} vyre_range_hist;

typedef struct vyre_counters {
    uint64_t v[VYRE_CTR_COUNT];
    vyre_range_hist ranges[VYRE_RANGE_COUNT];
} vyre_counters;

/* "launches", ... (static), NULL when out of range. */
VYRE_EXTERN const char *vyre_counter_name(vyre_counter_id id);

/* Adds n to a counter (the calling thread's slot, no lock prefix; any thread). */
VYRE_EXTERN void vyre_counter_add(vyre_counter_id id, uint64_t n);

/* Copies every counter and histogram (each value is read atomically; the
 * set is not a single instant). */
VYRE_EXTERN void vyre_counters_snapshot(vyre_counters *out);

/* Records one range duration into its histogram (vyre_nvtx_pop does this). */
VYRE_EXTERN void vyre_range_record(vyre_range_id id, uint64_t ns);

/* Estimates the q-quantile (0..1) of a histogram, in ns: linear
 * interpolation inside the bucket holding it, capped at max_ns (q = 1 gives
 * max_ns exactly). Within about 3% of the exact quantile for smooth data.
 * 0 when empty. */
VYRE_EXTERN uint64_t vyre_range_hist_quantile(const vyre_range_hist *h, double q);

/* The bucket edge (a bucket's lower bound, vyre__hist_bucket_lo) nearest
 * to ns: a boundary at which a histogram can be cut exactly. Within 1/32
 * of ns above 32 ns. */
VYRE_EXTERN uint64_t vyre_hist_edge_nearest(uint64_t ns);

/*
 * Cumulative counts of h at n ascending bucket edges (vyre_hist_edge_nearest
 * values): out[i] = durations recorded below edges[i] ns, exact, since each
 * edge is a bucket bound. A value that is not an edge is rounded up to the
 * next edge. Sums saturate at UINT64_MAX, so a hostile histogram
 * cannot wrap them; out[] is non-decreasing even for unsorted edges (each
 * is raised to the previous one). Returns the sum of all buckets (the
 * +Inf count, >= out[n-1]), which a reader that wants a self-consistent
 * histogram uses instead of h->count (a racing writer can leave the two
 * one apart).
 */
VYRE_EXTERN uint64_t vyre_range_hist_cumulative(const vyre_range_hist *h, const uint64_t *edges,
                                                size_t n, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_COUNTERS_H */
