/*
 * telemetry_internal.h - the telemetry page layout (version 3) and test
 * hooks. Not public API: vyre-top goes through vyre__telemetry_read(). The
 * tests include this to craft hostile pages.
 *
 * The trace subsystem (libcore/src/trace/) owns what a process tells the
 * outside about itself: the NVTX domain and range catalog (nvtx.c), the
 * process-wide counters and per-range latency histograms (counters.c), and
 * the telemetry page that carries both to vyre-top and the exporter
 * (telemetry_writer.c writes it, telemetry_reader.c reads it with
 * telemetry_dir.c, telemetry_identity.c and telemetry_v1.c, telemetry_reap.c
 * removes stale pages, telemetry_tracker.c follows pages across reads). It may
 * call base/ only (base < trace < cache < cuda < bench; docs/DESIGN.md), so
 * that the cache, the CUDA layer and the bench engine can all report
 * through it; it knows nothing of blobs, CUDA or benchmarks. Kernel records
 * reach the page from above, through vyre_telemetry_add_kernel (cuda/cupti.c).
 *
 * The page is one file of exactly `total_size` bytes:
 *
 *   vyre__tel_header   (header_size = 153664 bytes)
 *   vyre__tel_slot     ring[ring_capacity = 256]   (ring_slot_size = 160)
 *
 * total_size = header_size + ring_capacity * ring_slot_size = 194624 bytes.
 * Version 2 replaced version 1's 40 log2 buckets per range with
 * VYRE_HIST_BUCKETS log-linear ones (counters.h); the rest is unchanged.
 * Version 3 records the writer's PID namespace (pid_ns_dev, pid_ns_ino:
 * stat of /proc/self/ns/pid, 0 when unknown) in 16 bytes that were
 * reserved (zero) in version 2, so a reader in another namespace (a
 * container sharing /dev/shm, `unshare --pid`) knows the pid is not one of
 * its own and never judges the page by it. Sizes and every other offset are
 * version 2's: a version 2 page is read as version 3 with the namespace
 * unknown.
 * All integers are fixed-width, naturally aligned, in the writer's native
 * byte order (a page never leaves its machine); every size is explicit so a
 * reader checks them before touching anything else. The layout never changes
 * within a version: growing it means a new VYRE_TELEMETRY_LAYOUT_VERSION.
 * Counters and ranges have room to grow (64 and 32 entries) with n_counters
 * and n_ranges saying how many are in use, so appending to
 * VYRE_COUNTER_LIST or the range catalog does not change the layout.
 *
 * Concurrency. The identity part is written once, before the page gets its
 * public name (the writer fills "<pid>.vtel.tmp" and links it), so readers
 * never see it change. The published part (publish_ns .. ranges) is guarded
 * by `seq`: odd while the writer copies, even when done. Each ring slot has
 * its own seqlock, `seq` = 2 * serial when complete and 2 * serial - 1 while
 * written, so a reader copying the ring is never starved by a burst of
 * kernels and knows which record a slot holds. Every field a writer changes
 * after publication is an _Atomic lock-free integer (strings are packed into
 * uint64_t words), so the writer's stores are never data races; the fences
 * are C11 release/acquire. Readers do not map the page: they copy it with
 * pread (see telemetry_reader.c), so a page truncated under them is a short read,
 * never SIGBUS.
 */
#ifndef VYRE_TELEMETRY_INTERNAL_H
#define VYRE_TELEMETRY_INTERNAL_H

#include <dirent.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "vyre/counters.h"
#include "vyre/telemetry.h"

/* ---- the page reader, not exported (vyre/telemetry.h): the tracker is the
 * public reader; inject/testing/inject_peek and the tests call these ---- */

/* One page found by vyre__telemetry_list. */
typedef struct vyre_telemetry_entry {
    int32_t pid;                        /* from the file name */
    char path[VYRE_TELEMETRY_PATH_MAX]; /* directory + "/<pid>.vtel" */
} vyre_telemetry_entry;

/*
 * A consistent copy of one page (about 200 KiB: caller-allocated, usually
 * once and reused). Strings are NUL-terminated with control characters
 * replaced by '?', so they are safe to print.
 */
typedef struct vyre_telemetry_snapshot {
    uint32_t layout_version; /* of the page read: 1 to VYRE_TELEMETRY_LAYOUT_VERSION */
    int32_t pid;             /* in the writer's PID namespace */
    uint32_t uid;
    uint64_t start_time; /* clock ticks after boot (/proc/<pid>/stat field 22) */
    uint64_t created_ns; /* CLOCK_REALTIME when the page was created */
    uint64_t pid_ns_dev; /* the writer's PID namespace (device and inode of */
    uint64_t pid_ns_ino; /* /proc/self/ns/pid); both 0: unknown (layout < 3) */
    char exe[VYRE_TELEMETRY_EXE_MAX];
    char cmdline[VYRE_TELEMETRY_CMDLINE_MAX]; /* arguments joined by spaces */
    uint64_t publish_count;                   /* publishes so far; 0: counters not yet published */
    uint64_t publish_ns;                      /* CLOCK_MONOTONIC of the last publish */
    uint32_t n_counters;                      /* counters and ranges the writer knows; counters */
    uint32_t n_ranges;                        /* past them (a newer reader's) read as 0 */
    vyre_counters counters;
    uint64_t kernels_total; /* kernels the process ever recorded */
    uint32_t n_kernels;     /* kernels[] filled, oldest first */
    vyre_telemetry_kernel kernels[VYRE_TELEMETRY_RING_CAPACITY];
} vyre_telemetry_snapshot;

/*
 * Lists the "<pid>.vtel" pages of dir (NULL: vyre_telemetry_dir()), sorted by
 * pid, into a malloc'ed array *out of *n entries that the caller frees with
 * vyre_free. A missing directory is an empty list (VYRE_OK,
 * *out NULL, *n 0); an unsafe one is VYRE_EUNSAFE. Other names are skipped.
 */
int vyre__telemetry_list(const char *dir, vyre_telemetry_entry **out, size_t *n, vyre_error *err);

/* A list from vyre__telemetry_list is freed with vyre_free. */

/*
 * Validates the page at path and copies it into *out. Errors: VYRE_ENOENT
 * (gone: the process exited), VYRE_EUNSAFE (the page or its directory is a
 * symlink, not a regular file, not owned by us, writable by others),
 * VYRE_EVERSION (another layout version), VYRE_ECORRUPT (bad magic, sizes,
 * unterminated strings, ring fields out of range, resized while read),
 * VYRE_EBUSY (the writer kept publishing, or died
 * mid-publish, through every retry). On failure *out is zeroed. Never
 * crashes on any content. Thread-safe.
 */
int vyre__telemetry_read(const char *path, vyre_telemetry_snapshot *out, vyre_error *err);

/* vyre_telemetry_maybe_publish() publishes at most this often (tuning,
 * not API: the header promises 10 ms). */
#define VYRE_TELEMETRY_PUBLISH_INTERVAL_NS UINT64_C(10000000)

#define VYRE__TEL_MAGIC        "VYRETEL" /* 8 bytes with its NUL */
#define VYRE__TEL_COUNTERS_CAP 64
#define VYRE__TEL_RANGES_CAP   32
#define VYRE__TEL_HIST_BUCKETS 592
#define VYRE__TEL_NAME_WORDS   (VYRE_TELEMETRY_KERNEL_NAME_MAX / 8)

typedef struct vyre__tel_hist {
    _Atomic uint64_t count;
    _Atomic uint64_t total_ns;
    _Atomic uint64_t max_ns;
    _Atomic uint64_t buckets[VYRE__TEL_HIST_BUCKETS];
} vyre__tel_hist; /* 4760 bytes */

typedef struct vyre__tel_header {
    /* Identity and layout: written once before the page is visible. */
    char magic[8];                            /*     0 "VYRETEL\0" */
    uint32_t version;                         /*     8 VYRE_TELEMETRY_LAYOUT_VERSION */
    uint32_t header_size;                     /*    12 sizeof(vyre__tel_header) */
    uint64_t total_size;                      /*    16 header_size + ring */
    uint32_t ring_capacity;                   /*    24 VYRE_TELEMETRY_RING_CAPACITY */
    uint32_t ring_slot_size;                  /*    28 sizeof(vyre__tel_slot) */
    uint32_t counters_capacity;               /*    32 VYRE__TEL_COUNTERS_CAP */
    uint32_t n_counters;                      /*    36 the writer's VYRE_CTR_COUNT */
    uint32_t ranges_capacity;                 /*    40 VYRE__TEL_RANGES_CAP */
    uint32_t n_ranges;                        /*    44 the writer's VYRE_RANGE_COUNT */
    uint32_t hist_buckets;                    /*    48 VYRE__TEL_HIST_BUCKETS */
    int32_t pid;                              /*    52 */
    uint32_t uid;                             /*    56 must equal the file's owner */
    uint32_t reserved0;                       /*    60 */
    uint64_t start_time;                      /*    64 /proc/<pid>/stat field 22 (ticks) */
    uint64_t created_ns;                      /*    72 CLOCK_REALTIME at creation */
    char exe[VYRE_TELEMETRY_EXE_MAX];         /*    80 NUL-terminated */
    char cmdline[VYRE_TELEMETRY_CMDLINE_MAX]; /*   144 NUL-terminated */
    uint64_t pid_ns_dev;                      /*   656 st_dev of /proc/self/ns/pid; 0 unknown */
    uint64_t pid_ns_ino;                      /*   664 st_ino of it; 0 unknown (version < 3) */
    uint8_t reserved1[32];                    /*   672 seq on its own line */
    /* Published part, under seq. */
    _Atomic uint64_t seq;                              /*   704 seqlock */
    _Atomic uint64_t publish_ns;                       /*   712 CLOCK_MONOTONIC */
    _Atomic uint64_t publish_count;                    /*   720 */
    _Atomic uint64_t counters[VYRE__TEL_COUNTERS_CAP]; /*   728 */
    vyre__tel_hist ranges[VYRE__TEL_RANGES_CAP];       /*  1240 */
    uint8_t reserved2[40];                             /* 153560 */
    /* Ring bookkeeping (the slots carry their own seqlocks). */
    _Atomic uint64_t ring_count; /* 153600 kernels ever added */
    _Atomic uint32_t ring_head;  /* 153608 slot of the next kernel, < capacity */
    uint32_t reserved3;          /* 153612 */
    uint8_t reserved4[48];       /* 153616 */
} vyre__tel_header;              /* 153664 */

typedef struct vyre__tel_slot {
    _Atomic uint64_t seq; /*   0 2*serial done, odd while written, 0 empty */
    _Atomic uint64_t end_ns;
    _Atomic uint64_t duration_ns;
    _Atomic uint64_t stream_id;
    _Atomic uint32_t grid[3];                    /*  32 */
    _Atomic uint32_t block[3];                   /*  44 */
    _Atomic int32_t device;                      /*  56 */
    _Atomic uint32_t reserved;                   /*  60 */
    _Atomic uint64_t name[VYRE__TEL_NAME_WORDS]; /*  64 96 bytes, NUL-terminated */
} vyre__tel_slot;                                /* 160 */

typedef struct vyre__tel_page {
    vyre__tel_header h;
    vyre__tel_slot ring[VYRE_TELEMETRY_RING_CAPACITY];
} vyre__tel_page; /* 194624 */

_Static_assert(sizeof(_Atomic uint64_t) == 8 && _Alignof(_Atomic uint64_t) == 8,
               "the page needs plain 8-byte atomics");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "atomics shared between processes must be lock-free");
_Static_assert(sizeof(vyre__tel_hist) == 4760, "hist layout");
_Static_assert(offsetof(vyre__tel_header, exe) == 80, "header layout");
_Static_assert(offsetof(vyre__tel_header, pid_ns_dev) == 656, "header layout");
_Static_assert(offsetof(vyre__tel_header, pid_ns_ino) == 664, "header layout");
_Static_assert(offsetof(vyre__tel_header, seq) == 704, "header layout");
_Static_assert(offsetof(vyre__tel_header, ranges) == 1240, "header layout");
_Static_assert(offsetof(vyre__tel_header, ring_count) == 153600, "header layout");
_Static_assert(sizeof(vyre__tel_header) == 153664, "header layout");
_Static_assert(offsetof(vyre__tel_slot, name) == 64, "slot layout");
_Static_assert(sizeof(vyre__tel_slot) == 160, "slot layout");
_Static_assert(sizeof(vyre__tel_page) == 194624, "page layout");
_Static_assert(VYRE_CTR_COUNT <= VYRE__TEL_COUNTERS_CAP, "grow the page (new layout version)");
_Static_assert(VYRE_RANGE_COUNT <= VYRE__TEL_RANGES_CAP, "grow the page (new layout version)");
_Static_assert(VYRE_HIST_BUCKETS == VYRE__TEL_HIST_BUCKETS, "new layout version needed");
_Static_assert(VYRE_TELEMETRY_KERNEL_NAME_MAX % 8 == 0, "names are packed in words");

/* Test hook: publishes *c instead of the live counters, under the same
 * seqlock as vyre_telemetry_publish. */
int vyre__telemetry_publish_snapshot(vyre_telemetry *t, const vyre_counters *c);

/*
 * The reader's validate-and-copy path on a page image of len bytes (8-byte
 * aligned) instead of a file, as if its file belonged to uid `owner`; `name`
 * names it in messages. Same checks and codes as vyre__telemetry_read, minus
 * the file's type, owner and mode; a busy part is not retried (the image
 * cannot change). For the fuzzer and the tests.
 */
int vyre__telemetry_parse(const char *name, const void *img, size_t len, uint32_t owner,
                          vyre_telemetry_snapshot *out, vyre_error *err);

/* Reads field 22 of /proc/<pid>/stat (pid 0: self) into *ticks; 0 or a
 * negative code. */
int vyre__telemetry_start_time(int pid, uint64_t *ticks);

/* ---- shared by the writer and the reading side (telemetry_dir.c, telemetry_identity.c) ---- */

/* Resolves the telemetry directory ($VYRE_TELEMETRY_DIR through
 * secure_getenv, else /dev/shm/vyre-<euid>); *is_default says which. */
int vyre__tel_resolve_dir(char *out, size_t size, int *is_default, vyre_error *err);

/* Opens dir (creating it 0700 when `create`) and checks that it may hold
 * our pages (ours and writable by nobody else, or root's and sticky);
 * *dfd gets the descriptor. VYRE_ENOENT when missing, VYRE_EUNSAFE when not
 * trusted or a symlink. */
int vyre__tel_open_dir(const char *dir, int is_default, int create, int *dfd, vyre_error *err);

/* The calling process's PID namespace (device and inode of
 * /proc/self/ns/pid); both 0 when /proc cannot tell. */
void vyre__tel_own_pid_ns(uint64_t *dev, uint64_t *ino);

/* What a page file says about its writer, from its identity part (written
 * before the page gets its name; a tmp file may still be all zero). */
typedef struct vyre__tel_page_id {
    int valid; /* a known magic and layout */
    int32_t pid;
    uint64_t start_time;
    int foreign; /* it records another PID namespace (ns_foreign) */
} vyre__tel_page_id;

/* Reads the identity part of the page file `name` in dfd (never following a
 * symlink or blocking); id->valid 0 when it is not a page of a known
 * layout. */
void vyre__tel_read_id(int dfd, const char *name, vyre__tel_page_id *id);

/* ---- shared by the reading side's files ------------------------------- */

/* The layouts the reader knows: 1 (its own frozen copy, telemetry_v1.h),
 * 2 (the current one without the PID namespace) and the current one. */
static inline int vyre__tel_known_version(uint32_t v)
{
    return v == 1 || v == 2 || v == VYRE_TELEMETRY_LAYOUT_VERSION;
}

/* Whether name is a page's: "<pid>.vtel" (*tmp 0) or "<pid>.vtel.tmp"
 * (*tmp 1), pid canonical decimal; 1 or 0. (telemetry_dir.c) */
int vyre__tel_parse_name(const char *name, int32_t *pid, int *tmp);

/* Opens dir (NULL: the default, resolved into buf) for reading through
 * vyre__tel_open_dir; *dfd -1 and 0 when it is missing. (telemetry_dir.c) */
int vyre__tel_open_reader_dir(const char *dir, char *buf, size_t size, int *dfd, vyre_error *err);

/* vyre__tel_open_reader_dir, then the directory as a DIR stream in *d (the
 * caller closedir()s it; NULL with 0 when there is nothing to read, as
 * *dfd < 0 there). telemetry_dir.c; list and reap read through it. */
int vyre__tel_opendir_reader(const char *dir, char *buf, size_t size, DIR **d, vyre_error *err);

/* ---- not exported (vyre/telemetry.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * Creates this process's page and returns its handle in *out (caller frees
 * with vyre__telemetry_close). With VYRE_TELEMETRY=0 returns VYRE_OK and sets
 * *out to NULL: every writer function accepts NULL as "telemetry off".
 * Errors: VYRE_EENV (bad VYRE_TELEMETRY or VYRE_TELEMETRY_DIR), VYRE_EUNSAFE
 * (directory not ours or writable by others), VYRE_EEXIST (this process
 * already has a page open: use vyre_telemetry_global; or the page name of
 * our pid is held by a process of another PID namespace, which is never
 * replaced), VYRE_ENOSPC (the page's storage cannot be reserved: a full
 * file system; nothing is published), I/O codes. A stale page left under
 * our pid (pid reuse, or our image before exec) is replaced.
 * Thread-safe. After fork() the child's inherited handle is inert (its
 * calls do nothing) and the child may open its own page.
 */
int vyre__telemetry_open(vyre_telemetry **out, vyre_error *err);

/*
 * Removes the page (unlink) and unmaps it, then frees t. NULL is a no-op.
 * In a forked child an inherited handle is only unmapped and freed, the
 * parent's page stays. Not to be called while other threads use t.
 */
void vyre__telemetry_close(vyre_telemetry *t);

/*
 * Whether the writer of a page copied by vyre__telemetry_read lives in
 * another PID namespace than the calling process: 1 when the page records
 * a namespace and it is not the caller's (or the caller's own cannot be
 * told), 0 when it is the caller's or the page does not say (layouts 1
 * and 2, a writer without /proc), also for NULL. A foreign page's pid and
 * start time mean nothing here: do not look it up in /proc, signal it or
 * match it with NVML's processes. Thread-safe.
 */
int vyre_telemetry_foreign(const vyre_telemetry_snapshot *s);

/*
 * Whether the writer of a page copied by vyre__telemetry_read is gone: 1
 * when its process is dead (kill(pid, 0) fails with ESRCH) or its pid now
 * belongs to another process (the page's start time differs from the live
 * process's), 0 when it is alive, when that cannot be told or when the
 * page is foreign (vyre_telemetry_foreign), also for NULL. Such a page is
 * stale: vyre_telemetry_reap would remove it.
 */
int vyre_telemetry_stale(const vyre_telemetry_snapshot *s);

#endif /* VYRE_TELEMETRY_INTERNAL_H */
