/*
 * vyre/cupti.h - CUPTI activity capture, loaded at run time.
 *
 * This header is part of libvyrecore's public API.
 *
 * libvyrecore never links libcupti. The library is dlopen()ed on first use,
 * once per process (thread-safe): the file named by $VYRE_CUPTI_LIBRARY when
 * set (empty is VYRE_EENV; a file that does not load is VYRE_ENOCUPTI, with
 * no fallback); else, when NVTX is routed to CUPTI, the very file
 * $NVTX_INJECTION64_PATH names (so NVTX and vyre share one CUPTI); else
 * "libcupti.so.13" through the dynamic linker's search; else the same name
 * under $CUDA_HOME/lib64, /usr/local/cuda/lib64, $CUDA_HOME/extras/CUPTI/lib64
 * and /usr/local/cuda/extras/CUPTI/lib64. Loading needs no driver; capture
 * does.
 *
 * Capture collects CUPTI activity records (kernels, copies, memsets, CUPTI's
 * own overhead and, when NVTX is routed to CUPTI, NVTX markers), normalises
 * them into vyre_activity records and hands them, in batches, to registered
 * sinks (the telemetry page, the results database's timings writer, a
 * test). CUPTI hands buffers back from its own threads (in CUDA 13 one
 * buffer stream per application thread), so sinks are called from CUPTI's
 * threads, one call at a time.
 *
 * Only one CUPTI client can hold the activity API in a process. When another
 * profiler already holds it (Nsight Systems, Nsight Compute, a framework's
 * profiler), starting capture fails with VYRE_ECUPTIBUSY and changes
 * nothing: callers keep running with NVTX ranges only.
 */
#ifndef VYRE_CUPTI_H
#define VYRE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a vyre_activity record describes. Append only: stored in results. */
typedef enum vyre_activity_kind {
    VYRE_ACTIVITY_NONE = 0,
    VYRE_ACTIVITY_KERNEL = 1,   /* a kernel execution (concurrent-kernel record) */
    VYRE_ACTIVITY_MEMCPY = 2,   /* a copy; bytes and copy_kind set */
    VYRE_ACTIVITY_MEMSET = 3,   /* a memset; bytes set */
    VYRE_ACTIVITY_OVERHEAD = 4, /* time CUPTI or the driver spent on itself */
    VYRE_ACTIVITY_MARKER = 5,   /* an NVTX marker: instantaneous, or one end of a range */
    VYRE_ACTIVITY_RANGE = 6,    /* an NVTX range: a start marker paired with its end */
} vyre_activity_kind;

/* Copy direction of a VYRE_ACTIVITY_MEMCPY record (CUPTI's values). */
typedef enum vyre_copy_kind {
    VYRE_COPY_UNKNOWN = 0,
    VYRE_COPY_HTOD = 1,
    VYRE_COPY_DTOH = 2,
    VYRE_COPY_HTOA = 3,
    VYRE_COPY_ATOH = 4,
    VYRE_COPY_ATOA = 5,
    VYRE_COPY_ATOD = 6,
    VYRE_COPY_DTOA = 7,
    VYRE_COPY_DTOD = 8,
    VYRE_COPY_HTOH = 9,
    VYRE_COPY_PTOP = 10,
} vyre_copy_kind;

/* marker_flags of VYRE_ACTIVITY_MARKER records (CUPTI's values). */
#define VYRE_MARKER_INSTANT 0x1u
#define VYRE_MARKER_START   0x2u
#define VYRE_MARKER_END     0x4u

#define VYRE_ACTIVITY_NAME_MAX   256 /* incl. NUL; longer names are cut */
#define VYRE_ACTIVITY_DOMAIN_MAX 64  /* incl. NUL */

/*
 * One normalised activity record. Timestamps are CUPTI's (nanoseconds on
 * CUPTI's clock, cuptiGetTimestamp; 0 when CUPTI could not time it). Fields
 * that do not apply to a kind are 0 / "".
 */
typedef struct vyre_activity {
    vyre_activity_kind kind;
    char name[VYRE_ACTIVITY_NAME_MAX];     /* kernel name as in the module (mangled
                                              unless extern "C"); NVTX message for
                                              markers and ranges; overhead kind, e.g.
                                              "cupti_buffer_flush"; copy: "memcpy_htod" */
    char domain[VYRE_ACTIVITY_DOMAIN_MAX]; /* NVTX domain ("" = default domain) */
    uint64_t start_ns;
    uint64_t end_ns;               /* == start_ns for instantaneous markers */
    uint32_t grid[3], block[3];    /* kernels */
    int32_t static_shared_bytes;   /* kernels */
    int32_t dynamic_shared_bytes;  /* kernels */
    uint32_t registers_per_thread; /* kernels */
    uint32_t device_id;            /* kernels, copies, memsets */
    uint32_t context_id;           /* kernels, copies, memsets */
    uint32_t stream_id;            /* kernels, copies, memsets */
    uint32_t correlation_id;       /* links a record to the API call that made it */
    uint32_t graph_id;             /* 0 unless launched from a CUDA graph */
    uint64_t bytes;                /* copies, memsets */
    vyre_copy_kind copy_kind;      /* copies */
    uint32_t overhead_kind;        /* CUPTI's CUpti_ActivityOverheadKind */
    uint32_t marker_flags;         /* VYRE_MARKER_* (markers) */
    uint64_t marker_id;            /* CUPTI's marker id (markers, ranges) */
    uint64_t thread_id;            /* OS thread of a marker/range, else 0 */
    uint64_t payload;              /* NVTX payload (ranges), when has_payload */
    int has_payload;
} vyre_activity;

/*
 * A sink receives n records (n >= 1) at recs, valid only during the call.
 * It runs on a CUPTI thread or inside vyre_cupti_flush()/vyre_cupti_stop(),
 * never concurrently with itself or another sink, and must not call
 * vyre_cupti_start/stop/flush/add_sink/remove_sink (they would deadlock).
 * Keep it short: CUPTI waits for it before reusing the buffer.
 */
typedef void (*vyre_activity_sink_fn)(const vyre_activity *recs, size_t n, void *ctx);

/* Activity kinds to capture: a mask of these bits. */
#define VYRE_CUPTI_KERNEL   0x01u /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL */
#define VYRE_CUPTI_MEMCPY   0x02u /* CUPTI_ACTIVITY_KIND_MEMCPY */
#define VYRE_CUPTI_MEMSET   0x04u /* CUPTI_ACTIVITY_KIND_MEMSET */
#define VYRE_CUPTI_OVERHEAD 0x08u /* CUPTI_ACTIVITY_KIND_OVERHEAD */
#define VYRE_CUPTI_MARKER   0x10u /* CUPTI_ACTIVITY_KIND_MARKER + MARKER_DATA */
#define VYRE_CUPTI_ALL      0x1fu

#define VYRE_CUPTI_BUFFER_BYTES_DEFAULT (1u << 20)

/* Capture settings. Zero-initialise, then set what you need; a NULL config
 * is VYRE_CUPTI_ALL with the default buffer size. */
typedef struct vyre_cupti_config {
    unsigned kinds;      /* VYRE_CUPTI_* mask; 0 means VYRE_CUPTI_ALL */
    size_t buffer_bytes; /* per CUPTI buffer; 0 means the default (1 MiB) */
} vyre_cupti_config;

/* What capture has done since the process started (all starts together). */
typedef struct vyre_cupti_stats {
    int loaded;                 /* libcupti is loaded */
    int running;                /* capture is on */
    int nvtx_routed;            /* NVTX_INJECTION64_PATH names a CUPTI library */
    unsigned kinds_requested;   /* mask asked for by the last start */
    unsigned kinds_enabled;     /* mask actually enabled by the last start */
    uint32_t cupti_version;     /* cuptiGetVersion, 0 when unknown */
    char library[512];          /* the file loaded, "" before */
    uint64_t buffers_requested; /* buffers handed to CUPTI */
    uint64_t buffers_completed; /* buffers CUPTI gave back */
    uint64_t buffer_alloc_failures;
    uint64_t records;                                               /* CUPTI records parsed */
    uint64_t kernels, memcpys, memsets, overheads, markers, ranges; /* delivered, by kind */
    uint64_t other_records;    /* records of kinds vyre does not normalise */
    uint64_t dropped;          /* records CUPTI dropped (no buffer space) */
    uint64_t unpaired_markers; /* range ends without a start, or starts lost */
    uint64_t corrupt_buffers;  /* buffers whose parsing stopped on a bad record */
} vyre_cupti_stats;

/* Loads libcupti (see the top of this file) without enabling anything.
 * Returns 0, VYRE_ENOCUPTI or VYRE_EENV. Later calls return the first
 * call's result and detail. Thread-safe. */
VYRE_EXTERN int vyre_cupti_load(vyre_error *err);

/*
 * Starts capture: loads CUPTI, subscribes, registers the buffer callbacks
 * and enables the kinds in cfg (NULL: all). VYRE_CUPTI_MARKER is enabled
 * only when NVTX is routed to CUPTI ($NVTX_INJECTION64_PATH names libcupti): without the
 * routing there are no markers to capture, and kernel+memcpy+marker capture
 * has crashed on the GPU machine in that state. stats.kinds_enabled says
 * what was enabled.
 *
 * Returns 0; VYRE_ECUPTIBUSY when another profiler holds CUPTI (nothing
 * is changed, NVTX ranges still work); VYRE_EBUSY when capture is already
 * on; VYRE_ENOCUPTI / VYRE_EENV (no CUPTI); VYRE_ENODRIVER (CUPTI cannot
 * reach the CUDA driver); VYRE_EINVAL (bad config). On failure every kind
 * this call enabled is disabled again. Thread-safe.
 */
VYRE_EXTERN int vyre_cupti_start(const vyre_cupti_config *cfg, vyre_error *err);

/* Disables every kind start enabled, flushes (forced) so sinks receive
 * everything captured, and unsubscribes. No-op returning 0 when capture is
 * off. Thread-safe; not from a sink. */
VYRE_EXTERN int vyre_cupti_stop(vyre_error *err);

#define VYRE_CUPTI_SINKS_MAX 8

/* Registers fn(ctx) as a sink; records completed after this call reach it.
 * The same (fn, ctx) twice is VYRE_EEXIST; more than VYRE_CUPTI_SINKS_MAX
 * sinks is VYRE_ERANGE. Works with capture on or off. Thread-safe. */
VYRE_EXTERN int vyre_cupti_add_sink(vyre_activity_sink_fn fn, void *ctx, vyre_error *err);

/* Removes the sink registered as (fn, ctx). When it returns, the sink is
 * not running and will not be called again, so ctx may be freed. Returns
 * 0 or VYRE_ENOENT. Thread-safe; not from a sink. */
VYRE_EXTERN int vyre_cupti_remove_sink(vyre_activity_sink_fn fn, void *ctx);

/* Copies the statistics (each field read atomically). */
VYRE_EXTERN void vyre_cupti_stats_get(vyre_cupti_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_CUPTI_H */
