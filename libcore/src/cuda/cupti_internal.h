/*
 * cupti_internal.h - the parts of the CUPTI module that need no GPU: the
 * record normaliser and the NVTX marker pairing, shared with the unit tests
 * (which feed them synthetic CUPTI records). Not public API.
 */
#ifndef VYRE_CUPTI_INTERNAL_H
#define VYRE_CUPTI_INTERNAL_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include "vyre/cupti.h"

/* What vyre__cupti_normalize() made of a record. */
enum vyre__cupti_norm {
    VYRE__NORM_SKIP = 0,        /* a kind vyre does not normalise */
    VYRE__NORM_RECORD = 1,      /* *out is a record (markers still need pairing) */
    VYRE__NORM_MARKER_DATA = 2, /* payload for out->marker_id: out->payload/has_payload */
};

/*
 * Normalises one CUPTI record into *out (zeroed first). Reads the record
 * layouts of the toolkit vyre was built with: CUpti_ActivityKernel10 for
 * CONCURRENT_KERNEL and KERNEL, Memcpy6, Memset4, Overhead3, Marker2 and
 * MarkerData2 (later CUPTI versions append fields, so the prefix holds).
 * Strings are copied, cut to fit and always terminated; NULL names give "".
 * Pure: no locks, no global state.
 */
enum vyre__cupti_norm vyre__cupti_normalize(const CUpti_Activity *rec, vyre_activity *out);

/* NVTX ranges arrive as a start marker and an end marker with the same id
 * (the name only on the start). The pairer keeps open starts and turns an
 * end into a VYRE_ACTIVITY_RANGE. Caller-owned; zero it to initialise
 * (memset or `= {0}`); not thread-safe (the module holds its lock). */
#define VYRE__MARKERS_OPEN_MAX 512
typedef struct vyre__marker_pairs {
    size_t n;
    struct vyre__marker_open {
        uint64_t id;
        uint64_t start_ns;
        uint64_t thread_id;
        uint64_t payload;
        int has_payload;
        char name[VYRE_ACTIVITY_NAME_MAX];
        char domain[VYRE_ACTIVITY_DOMAIN_MAX];
    } open[VYRE__MARKERS_OPEN_MAX];
} vyre__marker_pairs;

/*
 * Feeds one normalised VYRE_ACTIVITY_MARKER record. Returns 1 when *rec is
 * now a record to deliver (an instantaneous marker, left as is; or, for an
 * end marker whose start was seen, a VYRE_ACTIVITY_RANGE carrying the
 * start's name, domain, thread and payload, start_ns of the start and
 * end_ns of the end); 0 when there is nothing to deliver (a start, kept
 * open; or an end without a start, counted in *unpaired). A start that
 * finds the table full is counted in *unpaired and dropped.
 */
int vyre__marker_pair(vyre__marker_pairs *p, vyre_activity *rec, uint64_t *unpaired);

/* Attaches an NVTX payload to the open range `id` (MARKER_DATA records
 * follow their start marker). Returns 1 when the range was open, else 0. */
int vyre__marker_payload(vyre__marker_pairs *p, uint64_t id, uint64_t payload);

/* 1 when path (a $NVTX_INJECTION64_PATH value, may be NULL) names a CUPTI
 * library: its file name starts with "libcupti". */
int vyre__cupti_is_cupti_path(const char *path);

/* The kinds start would enable for `requested` (0 = all) given whether
 * NVTX is routed to CUPTI: MARKER is dropped when it is not. */
unsigned vyre__cupti_effective_kinds(unsigned requested, int nvtx_routed);

/* ---- not exported (vyre/cupti.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * Asks CUPTI to hand back buffers (cuptiActivityFlushAll) and delivers their
 * records to the sinks before returning. force = 0 returns only buffers
 * whose records are all complete; force = 1 returns every buffer, records
 * still in flight included (use it after synchronising, or at the end).
 * CUPTI does not synchronise the device: synchronise first to see every
 * kernel. No-op returning 0 when capture is off. Thread-safe; not from a sink.
 */
int vyre_cupti_flush(int force, vyre_error *err);

/* "kernel", "memcpy", "memset", "overhead", "marker", "range"; "none" for
 * anything else. Static strings. */
const char *vyre_activity_kind_name(vyre_activity_kind kind);

/* "htod", "dtoh", "dtod", ... "unknown". Static strings. */
const char *vyre_copy_kind_name(vyre_copy_kind kind);

/* 1 when $NVTX_INJECTION64_PATH names a CUPTI library (its file name starts
 * with "libcupti"), i.e. NVTX ranges are delivered to CUPTI as markers. */
int vyre__cupti_nvtx_routed(void);

/* A ready-made sink: kernel records go into a telemetry page's kernel ring
 * (ctx: the vyre_telemetry, or NULL for vyre_telemetry_global(NULL)), so
 * vyre-top shows the kernels by name. Other records are ignored. */
void vyre__cupti_telemetry_sink(const vyre_activity *recs, size_t n, void *ctx);

/*
 * Parsing raw CUPTI activity records, for libvyre-inject, which runs its own
 * CUPTI client instead of vyre_cupti_start (it must not initialise the
 * driver from inside cuInit) and is built from these modules with this
 * header (inject/CMakeLists.txt), not against libvyrecore.so: the same normalisation and
 * NVTX marker pairing capture uses. A parser holds the NVTX ranges still
 * open; it is not thread-safe (one lock around feeding it).
 */
typedef struct vyre__cupti_parser vyre__cupti_parser;

/* A new parser into *out (the caller's: vyre__cupti_parser_free). */
int vyre__cupti_parser_new(vyre__cupti_parser **out, vyre_error *err);

/* Frees p. NULL-safe. */
void vyre__cupti_parser_free(vyre__cupti_parser *p);

/*
 * Feeds one record (a const CUpti_Activity * from
 * cuptiActivityGetNextRecord; void here so that this header needs no
 * cupti.h). Returns 1 when *out is a record to deliver: a kernel, copy,
 * memset or overhead record, an instantaneous NVTX marker, or a
 * VYRE_ACTIVITY_RANGE made of a start marker and this end. Returns 0 when
 * there is nothing to deliver: a kind vyre does not normalise, a range's
 * payload (kept for its range), a start (kept open), or an end without a
 * start (counted in *unpaired, which may be NULL).
 */
int vyre__cupti_parser_feed(vyre__cupti_parser *p, const void *record, vyre_activity *out,
                            uint64_t *unpaired);

#endif /* VYRE_CUPTI_INTERNAL_H */
