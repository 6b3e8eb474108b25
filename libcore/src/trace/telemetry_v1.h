/*
 * telemetry_v1.h - a frozen copy of telemetry page layout version 1, for
 * the reader only. Not public API. Version 1 kept 40 log2 buckets per range
 * (bucket b: 2^b <= ns < 2^(b+1), bucket 0 also 0 ns, the last open-ended);
 * everything else has version 2's (and 3's) offsets up to the histograms
 * and the same ring slots; the bytes version 3 uses for the PID namespace
 * were reserved. Never edit these definitions: pages written by older
 * vyre builds still have exactly this shape.
 */
#ifndef VYRE_TELEMETRY_V1_H
#define VYRE_TELEMETRY_V1_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/telemetry_internal.h"

#define VYRE__TEL_V1_HIST_BUCKETS 40

typedef struct vyre__tel_v1_hist {
    _Atomic uint64_t count;
    _Atomic uint64_t total_ns;
    _Atomic uint64_t max_ns;
    _Atomic uint64_t buckets[VYRE__TEL_V1_HIST_BUCKETS];
} vyre__tel_v1_hist; /* 344 bytes */

typedef struct vyre__tel_v1_header {
    char magic[8];
    uint32_t version; /* 1 */
    uint32_t header_size;
    uint64_t total_size;
    uint32_t ring_capacity;
    uint32_t ring_slot_size;
    uint32_t counters_capacity;
    uint32_t n_counters;
    uint32_t ranges_capacity;
    uint32_t n_ranges;
    uint32_t hist_buckets; /* 40 */
    int32_t pid;
    uint32_t uid;
    uint32_t reserved0;
    uint64_t start_time;
    uint64_t created_ns;
    char exe[64];
    char cmdline[512];
    uint8_t reserved1[48];
    _Atomic uint64_t seq;
    _Atomic uint64_t publish_ns;
    _Atomic uint64_t publish_count;
    _Atomic uint64_t counters[64];
    vyre__tel_v1_hist ranges[32];
    uint8_t reserved2[40];
    _Atomic uint64_t ring_count;
    _Atomic uint32_t ring_head;
    uint32_t reserved3;
    uint8_t reserved4[48];
} vyre__tel_v1_header; /* 12352 */

typedef struct vyre__tel_v1_slot {
    _Atomic uint64_t seq;
    _Atomic uint64_t end_ns;
    _Atomic uint64_t duration_ns;
    _Atomic uint64_t stream_id;
    _Atomic uint32_t grid[3];
    _Atomic uint32_t block[3];
    _Atomic int32_t device;
    _Atomic uint32_t reserved;
    _Atomic uint64_t name[12];
} vyre__tel_v1_slot; /* 160 */

typedef struct vyre__tel_v1_page {
    vyre__tel_v1_header h;
    vyre__tel_v1_slot ring[256];
} vyre__tel_v1_page; /* 53312 */

_Static_assert(sizeof(vyre__tel_v1_hist) == 344, "v1 hist layout");
_Static_assert(offsetof(vyre__tel_v1_header, seq) == 704, "v1 header layout");
_Static_assert(offsetof(vyre__tel_v1_header, ranges) == 1240, "v1 header layout");
_Static_assert(offsetof(vyre__tel_v1_header, ring_count) == 12288, "v1 header layout");
_Static_assert(sizeof(vyre__tel_v1_header) == 12352, "v1 header layout");
_Static_assert(sizeof(vyre__tel_v1_slot) == 160, "v1 slot layout");
_Static_assert(sizeof(vyre__tel_v1_page) == 53312, "v1 page layout");
/* What the upgrade relies on: the parts before the histograms and the
 * slots are the same bytes in both versions. */
_Static_assert(offsetof(vyre__tel_v1_header, ranges) == offsetof(vyre__tel_header, ranges),
               "v1 and the current layout agree up to the histograms");
_Static_assert(sizeof(vyre__tel_v1_slot) == sizeof(vyre__tel_slot), "same ring slots");

/*
 * Rewrites a version 1 page image as a current (version 3) one (both caller-owned,
 * 8-byte aligned, not overlapping). Each log2 bucket's count is spread
 * evenly over the log-linear buckets covering the same durations, so
 * quantiles read from a version 1 page are only as precise as version 1
 * was. Declared sizes that are not version 1's are carried over unchanged,
 * so the reader's size checks still reject them.
 */
void vyre__telemetry_v1_upgrade(const vyre__tel_v1_page *in, vyre__tel_page *out);

#endif /* VYRE_TELEMETRY_V1_H */
