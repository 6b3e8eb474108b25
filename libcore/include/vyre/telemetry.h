/*
 * vyre/telemetry.h - the per-process telemetry page that vyre-top reads.
 *
 * This header is part of libvyrecore's public API.
 *
 * An instrumented process owns one shared-memory page: the file
 * "<pid>.vtel" in the telemetry directory ($VYRE_TELEMETRY_DIR, else
 * /dev/shm/vyre-<uid>; created 0700; refused when it is a symlink, when
 * another user owns it or when group/others may write it, unless it is
 * root's and sticky as /dev/shm is), mode 0600, mmap'ed MAP_SHARED by its
 * writer (readers copy it with pread, never map it). It holds the
 * process identity (pid, uid, start time, exe name, command line), the
 * counters and range histograms of vyre/counters.h, and a ring of the most
 * recent kernels. The layout is versioned (libcore/src/trace/telemetry_internal.h).
 *
 * Writer side. There is no background thread: libcore publishes from its
 * dispatch paths through vyre_telemetry_maybe_publish(), which copies the
 * counters at most once every 10 ms, so
 * the launch path pays two relaxed atomic loads almost every time. The CUPTI
 * module appends kernels with vyre_telemetry_add_kernel(). Publishing never
 * breaks the host program: every writer function returns an error code and
 * never aborts; a NULL handle (telemetry off) makes them no-ops.
 * VYRE_TELEMETRY=0 turns publishing off.
 *
 * Reader side. The tracker below lists the pages, validates each one
 * (owner, mode, size, version, bounded strings, ring ranges) and copies it
 * consistently without stopping the writer (seqlock), and
 * vyre_telemetry_reap() removes pages of dead processes. The reader trusts nothing in a page: any
 * content, and a page truncated or extended while it is read, gives an error code, never a crash; a
 * FIFO or socket under a page's name never blocks it. A page is read only by its owner: another
 * user's page is refused (VYRE_EUNSAFE) even when its layout validates, since a valid layout says
 * nothing about who wrote the numbers in it. Pids are those of the writer's PID namespace, which
 * the page records: a page whose writer is in another namespace than the reader (a container
 * sharing /dev/shm, `unshare
 * --pid`) is foreign (vyre_telemetry_foreign): its pid says nothing about
 * the reader's processes, so it is never judged stale and never reaped.
 *
 * Monitor side (vyre-top, vyre-exporter). A tracker (vyre_telemetry_tracker_*)
 * reads every page of the directory once per update and follows each
 * writer across updates: identity, deltas and rates, ring serials, the
 * scaling of an overflowed ring, staleness and foreign pages. The monitors
 * only map its results to their views, so they give the same answers.
 */
#ifndef VYRE_TELEMETRY_H
#define VYRE_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Layout version this library writes and reads. */
#define VYRE_TELEMETRY_LAYOUT_VERSION 3
/* Kernels kept in the ring (the most recent ones). */
#define VYRE_TELEMETRY_RING_CAPACITY 256
/* Field sizes, terminating NUL included; longer values are truncated. */
#define VYRE_TELEMETRY_KERNEL_NAME_MAX 96
#define VYRE_TELEMETRY_EXE_MAX         64
#define VYRE_TELEMETRY_CMDLINE_MAX     512
/* Longest path vyre_telemetry_dir() and the list entries hold. */
#define VYRE_TELEMETRY_PATH_MAX 4096

/* A writer handle (one per process). Opaque. */
typedef struct vyre_telemetry vyre_telemetry;

/* One kernel execution, as the CUPTI module reports it. Caller-owned; name is
 * copied (truncated to VYRE_TELEMETRY_KERNEL_NAME_MAX - 1 bytes) and may be
 * NULL. Times are in the producer's clock (CUPTI timestamps, ns). */
typedef struct vyre_telemetry_kernel_record {
    const char *name;
    uint32_t grid[3];
    uint32_t block[3];
    uint64_t stream_id;
    uint64_t duration_ns;
    uint64_t end_ns;
    int32_t device;
} vyre_telemetry_kernel_record;

/* ---- writer ---------------------------------------------------------- */

/*
 * Resolves the telemetry directory into out: $VYRE_TELEMETRY_DIR (must be a
 * non-empty absolute path) else /dev/shm/vyre-<euid>. Does not create it.
 * VYRE_EENV for an empty or relative $VYRE_TELEMETRY_DIR, VYRE_ETOOBIG when
 * out is too small.
 */
VYRE_EXTERN int vyre_telemetry_dir(char *out, size_t size, vyre_error *err);

/*
 * Copies the current counters snapshot and range histograms into the page
 * under its seqlock. Returns VYRE_OK (also for a NULL or inherited handle).
 * Thread-safe (concurrent publishers are serialized).
 */
VYRE_EXTERN int vyre_telemetry_publish(vyre_telemetry *t);

/*
 * Publishes when the last publish through this function is at least
 * 10 ms older than now_ns (CLOCK_MONOTONIC, ns);
 * of threads racing past the interval, exactly one publishes. Returns 1 when
 * it published, 0 when it did not need to (or t is NULL), a negative code on
 * failure. The pipeline calls this from its dispatch paths. Thread-safe.
 */
VYRE_EXTERN int vyre_telemetry_maybe_publish(vyre_telemetry *t, uint64_t now_ns);

/*
 * Appends one kernel to the ring (overwriting the oldest once full) and
 * returns VYRE_OK; VYRE_EINVAL when k is NULL. NULL t: no-op. Thread-safe.
 */
VYRE_EXTERN int vyre_telemetry_add_kernel(vyre_telemetry *t, const vyre_telemetry_kernel_record *k);

/*
 * The process-wide page, opened on first call (later calls cost two atomic
 * loads). NULL when telemetry is off (VYRE_TELEMETRY=0) or opening failed:
 * the failure is remembered, not retried, and every call returning NULL
 * copies it into err (when non-NULL; err->code 0 when telemetry is only
 * off; err is cleared when a page is returned). The page is unlinked when
 * the process exits normally; pages of processes that died otherwise are
 * removed by vyre_telemetry_reap(). A forked child gets its own page on its
 * first call. Thread-safe. Never close the result.
 */
VYRE_EXTERN vyre_telemetry *vyre_telemetry_global(vyre_error *err);

/* ---- reader ---------------------------------------------------------- */

/* One kernel read back from a page. */
typedef struct vyre_telemetry_kernel {
    uint64_t serial; /* 1 for the first kernel the process recorded */
    uint64_t end_ns;
    uint64_t duration_ns;
    uint64_t stream_id;
    uint32_t grid[3];
    uint32_t block[3];
    int32_t device;
    char name[VYRE_TELEMETRY_KERNEL_NAME_MAX];
} vyre_telemetry_kernel;

/*
 * Removes the pages (and leftover "<pid>.vtel.tmp" files) in dir (NULL:
 * vyre_telemetry_dir()) whose process is dead (kill(pid, 0) fails with
 * ESRCH) or whose pid was reused (the page's start time differs from the
 * live process's). Pages of live processes, pages whose liveness cannot be
 * told and pages written in another PID namespace (vyre_telemetry_foreign)
 * are kept. *removed (may be NULL) gets the number removed.
 */
VYRE_EXTERN int vyre_telemetry_reap(const char *dir, size_t *removed, vyre_error *err);

/* ---- tracker (monitors) ---------------------------------------------- */

/*
 * What a tracker makes of one page at one update. A writer is one page of
 * one process: the same pid, start time, page creation time and PID
 * namespace; a page whose publish count, kernel count or ring serials went
 * backwards is a new writer too (the image after an exec reuses the pid
 * and the start time). The first reading of a writer has no previous one:
 * `first` is set, rates are NAN, and the deltas and kernels are since the
 * writer started (all of the ring). Later readings give what happened
 * since the previous update that read the same writer.
 */
typedef struct vyre_telemetry_proc {
    int32_t pid; /* in the writer's PID namespace (see foreign) */
    uint64_t start_time;
    uint64_t created_ns;
    uint32_t layout_version;
    int foreign; /* vyre_telemetry_foreign: pid and start time mean nothing here */
    char exe[VYRE_TELEMETRY_EXE_MAX];
    char cmdline[VYRE_TELEMETRY_CMDLINE_MAX];
    uint64_t publish_count;         /* 0: counters not yet published */
    vyre_counters counters;         /* lifetime */
    uint64_t kernels_total;         /* kernels the process ever recorded */
    uint64_t read_ns;               /* CLOCK_MONOTONIC when the page was read */
    int first;                      /* 1: no previous reading of this writer */
    double interval_s;              /* since the previous reading; NAN when first */
    uint64_t delta[VYRE_CTR_COUNT]; /* counters since the previous reading (0 for
                                       one that went backwards) */
    double rate[VYRE_CTR_COUNT];    /* delta / interval_s; NAN when first or backwards */
    vyre_range_hist range_delta[VYRE_RANGE_COUNT]; /* max_ns: the lifetime max */
    /* Kernel records newer than the previous reading's newest, oldest
     * first (the ring keeps the last VYRE_TELEMETRY_RING_CAPACITY). */
    vyre_telemetry_kernel *kernels; /* owned by the tracker */
    uint32_t n_kernels;
    uint64_t kernels_new;    /* recorded since the previous reading */
    uint64_t kernels_unseen; /* of those, left the ring before this read */
    double kernel_scale;     /* vyre_telemetry_kernel_scale(n_kernels, kernels_new) */
    uint64_t newest_serial;  /* newest kernel serial any reading of the writer saw */
    int32_t kernel_device;   /* device of the newest kernel record any reading of the
                                writer saw that names one; -1: none yet */
} vyre_telemetry_proc;

/*
 * One update's results, owned by the tracker and valid until its next
 * update or free. procs are the live and the foreign pages, by pid (a pid
 * names one page file, so one row each). Pages counted but not in procs:
 *   stale   - the writer is dead or its pid now belongs to another process
 *             (vyre_telemetry_stale). The one staleness rule of the
 *             monitors: a stale page is never shown as live, whatever a
 *             reap does later (vyre_telemetry_reap removes the same pages);
 *   invalid - its validation failed (the reader side at the top of this
 *             file), or it names another pid than its file;
 *   gone    - removed between listing and reading (its process exited): no
 *             error;
 *   skipped - beyond max_pages, not read.
 * foreign counts the procs that are foreign.
 */
typedef struct vyre_telemetry_update {
    const vyre_telemetry_proc *procs;
    size_t nprocs;
    size_t live, foreign, stale, invalid, gone, skipped;
    char dir[VYRE_TELEMETRY_PATH_MAX]; /* the directory read; "" when unresolved */
} vyre_telemetry_update;

typedef struct vyre_telemetry_tracker vyre_telemetry_tracker;

/*
 * A tracker of the pages in dir (NULL: vyre_telemetry_dir() at each
 * update, so a changed $VYRE_TELEMETRY_DIR is followed), reading at most
 * max_pages a time (0: 1024). Returns VYRE_OK with *out set (caller frees
 * with vyre_telemetry_tracker_free), VYRE_EINVAL, VYRE_ETOOBIG (dir too
 * long) or VYRE_ENOMEM. Not thread-safe: one thread updates and reads it.
 */
VYRE_EXTERN int vyre_telemetry_tracker_new(const char *dir, size_t max_pages,
                                           vyre_telemetry_tracker **out, vyre_error *err);

/*
 * Lists and reads every page once (validated as the top of this file
 * says; foreign and stale as above) and fills *out. Never
 * writes or removes a page. When the directory cannot be resolved or
 * listed, returns its code with err set and *out empty (dir says which
 * one, when resolved); the tracker then forgets every writer. A missing
 * directory is no error: no pages.
 */
VYRE_EXTERN int vyre_telemetry_tracker_update(vyre_telemetry_tracker *t, vyre_telemetry_update *out,
                                              vyre_error *err);

/* Frees t and its results. NULL is a no-op. */
VYRE_EXTERN void vyre_telemetry_tracker_free(vyre_telemetry_tracker *t);

/*
 * How many calls one kernel record kept in an overflowed ring stands for:
 * recorded / seen when seen < recorded, else 1 (also when nothing was seen:
 * there is nothing to scale).
 */
VYRE_EXTERN double vyre_telemetry_kernel_scale(uint64_t seen, uint64_t recorded);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_TELEMETRY_H */
