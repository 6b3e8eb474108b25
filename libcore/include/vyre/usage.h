/*
 * vyre/usage.h - how much the caches of compiled GPU code hold, and how
 * full the filesystems under them are.
 *
 * This header is part of libvyrecore's public API.
 *
 * Four caches fill a machine that runs PyTorch: vyre's pipeline cache, the
 * driver's JIT cache, Triton's and TorchInductor's (the last two have no
 * size limit of their own, and Inductor's default is under /tmp). The
 * monitors show each one's size beside its limit and its filesystem's fill,
 * so a full /tmp is seen before a compile fails on it.
 *
 * Measuring walks a directory tree: it is bounded (a Triton cache on Lustre
 * can hold millions of files, and one stat there may take a millisecond),
 * it never follows a symbolic link below the directory given, and a
 * subtree it cannot read is counted as skipped, never an error. It reads
 * metadata only (no file is opened but directories) and writes nothing.
 * Monitors call it off their drawing or scrape path.
 */
#ifndef VYRE_USAGE_H
#define VYRE_USAGE_H

#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_USAGE_PATH_MAX 4096
/* The default bounds of one measurement: entries looked at, and time. */
#define VYRE_USAGE_DEFAULT_MAX_ENTRIES UINT64_C(1000000)
#define VYRE_USAGE_DEFAULT_MAX_MS      UINT64_C(2000)
/* Directories deeper than this below the root are skipped (Inductor's
 * deepest entries are four levels down; the driver's two). */
#define VYRE_USAGE_MAX_DEPTH 32

/* What a cache directory holds and its filesystem. */
typedef struct vyre_usage {
    int exists;              /* 1: the directory exists (0: the counts are 0) */
    uint64_t bytes;          /* on disk: st_blocks * 512 of the root and every entry below it, as
                                du -s counts; a hard link counts each time */
    uint64_t apparent_bytes; /* regular files' sizes (st_size) summed */
    uint64_t files;          /* entries below the root, directories and links included: inodes */
    uint64_t skipped;        /* entries or subtrees that could not be read (or too deep) */
    int64_t newest_mtime_ns; /* the newest mtime of an entry (Unix epoch); 0: none */
    int partial;      /* 1: the walk stopped at its entry or time bound: bytes and files are at
                         least these */
    uint64_t scan_ns; /* how long the walk took */
    /* The filesystem holding the directory (statvfs), or its nearest
     * existing parent when the directory does not exist yet. */
    int fs_valid;
    uint64_t fs_size_bytes;  /* f_blocks * f_frsize */
    uint64_t fs_free_bytes;  /* f_bfree: root's reserve included */
    uint64_t fs_avail_bytes; /* f_bavail: what an unprivileged writer can still use */
    uint64_t fs_files;       /* f_files: inodes; 0 on filesystems that report none (btrfs) */
    uint64_t fs_avail_files; /* f_favail */
} vyre_usage;

/*
 * Measures the directory dir into *out (always initialised): the tree is
 * walked through descriptors opened O_NOFOLLOW, links below dir are counted
 * and never followed (dir itself is followed, as the programs that use it
 * do). The walk stops after max_entries entries or max_ms milliseconds
 * (0: the defaults above) and sets partial. A missing dir is not an error
 * (exists 0, filesystem of its nearest parent). Errors: VYRE_EINVAL (NULL
 * or empty dir), VYRE_EEXIST (dir is not a directory), VYRE_EPERM /
 * VYRE_EIO (dir itself cannot be read; the filesystem figures are still
 * filled when statvfs works). Thread-safe.
 */
VYRE_EXTERN int vyre_usage_measure(const char *dir, uint64_t max_entries, uint64_t max_ms,
                                   vyre_usage *out, vyre_error *err);

/* How full the filesystem is, as df shows it: used / (used + avail) in
 * percent (root's reserve counts as neither); -1 when unknown. */
VYRE_EXTERN double vyre_usage_fs_full_pct(const vyre_usage *u);

/* The same for inodes: used / (used + avail); -1 when the filesystem
 * reports no inode figures. */
VYRE_EXTERN double vyre_usage_inodes_full_pct(const vyre_usage *u);

/* ---- the caches a machine has ------------------------------------------ */

typedef enum vyre_usage_cache_id {
    VYRE_USAGE_VYRE = 0,     /* vyre's pipeline cache */
    VYRE_USAGE_CUDA_JIT = 1, /* the CUDA driver's JIT cache */
    VYRE_USAGE_TRITON = 2,   /* Triton's kernel cache */
    VYRE_USAGE_INDUCTOR = 3, /* TorchInductor's cache */
    VYRE_USAGE_N_CACHES = 4
} vyre_usage_cache_id;

#define VYRE_USAGE_FROM_MAX 1100

/* Where one cache is and what bounds it. */
typedef struct vyre_usage_cache {
    int id;           /* vyre_usage_cache_id */
    const char *name; /* static: "vyre", "cuda_jit", "triton", "inductor" */
    int located;      /* 0: no location could be worked out: error says why */
    char path[VYRE_USAGE_PATH_MAX];
    /* static: the variable the location came from ("VYRE_PTX_CACHE_DIR",
     * "XDG_CACHE_HOME", "HOME", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR",
     * "TRITON_HOME", "TORCHINDUCTOR_CACHE_DIR"), "default" (Inductor's
     * temp-dir default) or "caller" (the caller gave the path) */
    const char *path_from;
    uint64_t limit_bytes; /* 0: no limit, or none known (limit_from says which) */
    /* Where the limit came from, for people: "max_size, default",
     * "max_size, /x/vyre.conf:3", "CUDA_CACHE_MAXSIZE", "vyre's default
     * CUDA_CACHE_MAXSIZE", "triton_max_size, env VYRE_CACHE_TRITON_MAX_SIZE", "none
     * (triton_max_size 0, default)", "unknown: ..." */
    char limit_from[VYRE_USAGE_FROM_MAX];
    vyre_error error; /* why not located (code 0 when it was) */
} vyre_usage_cache;

/*
 * Works out the four caches, in vyre_usage_cache_id order, into
 * out[VYRE_USAGE_N_CACHES]: vyre's at vyre_root (NULL: its default
 * resolution) with max_size from its configuration (vyre/config.h; a
 * configuration that does not load leaves the limit unknown), the JIT
 * cache as vyre_jitcache_resolve() gives it for the current environment
 * (CUDA_CACHE_PATH and CUDA_CACHE_MAXSIZE when set, else vyre's defaults:
 * what vyre's own processes run with), Triton's as
 * vyre_triton_cache_dir(), Inductor's as vyre_inductor_cache_dir(). A
 * cache that cannot be located is recorded in its entry, not an error.
 * Touches nothing on disk but reading configuration files. Returns 0, or
 * VYRE_EINVAL (out NULL).
 */
VYRE_EXTERN int vyre_usage_caches(const char *vyre_root, vyre_usage_cache out[VYRE_USAGE_N_CACHES]);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_USAGE_H */
