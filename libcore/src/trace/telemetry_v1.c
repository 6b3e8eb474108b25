/*
 * telemetry_v1.c - layout 1 pages (frozen in telemetry_v1.h) rewritten as
 * the current layout, for the reader.
 *
 * Guarantees: every field the current layout shares with layout 1 is
 * copied; declared sizes are mapped to the current ones only when they are
 * layout 1's own (anything else stays as found, so the reader's size checks
 * still refuse it); each log2 bucket's count is spread over the log-linear
 * buckets that cover its range, so counts and totals are kept.
 */
#include "trace/counters_internal.h"
#include "trace/telemetry_v1.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "trace/telemetry_internal.h"
#include "vyre/counters.h"

static uint64_t load_u64(const _Atomic uint64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}

static void store_u64(_Atomic uint64_t *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

void vyre__telemetry_v1_upgrade(const vyre__tel_v1_page *in, vyre__tel_page *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out, in, offsetof(vyre__tel_header, ranges));
    if (in->h.header_size == sizeof(vyre__tel_v1_header))
        out->h.header_size = sizeof(vyre__tel_header);
    if (in->h.total_size == sizeof(vyre__tel_v1_page))
        out->h.total_size = sizeof(vyre__tel_page);
    if (in->h.hist_buckets == VYRE__TEL_V1_HIST_BUCKETS)
        out->h.hist_buckets = VYRE__TEL_HIST_BUCKETS;
    out->h.pid_ns_dev = out->h.pid_ns_ino = 0; /* reserved bytes in version 1 */
    for (int r = 0; r < VYRE__TEL_RANGES_CAP; r++) {
        const vyre__tel_v1_hist *a = &in->h.ranges[r];
        vyre__tel_hist *b = &out->h.ranges[r];
        store_u64(&b->count, load_u64(&a->count));
        store_u64(&b->total_ns, load_u64(&a->total_ns));
        store_u64(&b->max_ns, load_u64(&a->max_ns));
        for (int k = 0; k < VYRE__TEL_V1_HIST_BUCKETS; k++) {
            uint64_t c = load_u64(&a->buckets[k]);
            if (c == 0)
                continue;
            uint64_t lo = k == 0 ? 0 : UINT64_C(1) << k;
            int first = vyre__hist_bucket_of(lo);
            int last = vyre__hist_bucket_of((UINT64_C(2) << k) - 1);
            uint64_t span = (uint64_t)(last - first + 1);
            for (int j = first; j <= last; j++) {
                uint64_t share = c / span + ((uint64_t)(j - first) < c % span);
                store_u64(&b->buckets[j], load_u64(&b->buckets[j]) + share);
            }
        }
    }
    store_u64(&out->h.ring_count, load_u64(&in->h.ring_count));
    atomic_store_explicit(&out->h.ring_head,
                          atomic_load_explicit(&in->h.ring_head, memory_order_relaxed),
                          memory_order_relaxed);
    memcpy(out->ring, in->ring, sizeof out->ring);
}
