/*
 * vyre/inductor.h - reading TorchInductor's cache (another tool's cache).
 *
 * This header is part of libvyrecore's public API.
 *
 * TorchInductor (torch.compile's back end) keeps its cache in
 * $TORCHINDUCTOR_CACHE_DIR, else <temp dir>/torchinductor_<user> (Python's
 * tempfile.gettempdir(): $TMPDIR, $TEMP or $TMP when it names a directory,
 * else /tmp; the user as getpass.getuser() finds it, with \ / : * ? " < > |
 * replaced by '_'). Inside: generated kernels (<2 chars>/<key>.py), autotune
 * results (<2 chars>/<hash>.best_config, JSON), fxgraph/ and aotautograd/
 * entries (pickles: vyre never unpickles them), and, unless
 * TRITON_CACHE_DIR is set, a Triton cache per device under triton/<device>/
 * (vyre/triton.h reads it).
 *
 * Only the names Inductor gives count as its entries: a kernel is
 * <k[1:3]>/<k>.py with k "c" and 51 base32 characters (codecache.py's
 * code_hash), an autotune result <2>/<64 hex>.best_config (or the kernel's
 * key), an FX graph entry fxgraph/<k[1:3]>/<k>/ (k "f" + 51), an
 * AOTAutograd entry aotautograd/<k>/ (k "a" + 51). A name of that shape
 * Inductor would never make (`go/main.py`) is foreign: listed, reported,
 * never removed.
 *
 * Everything that changes the cache (prune, clear, quarantine) works
 * relative to the one directory descriptor the scan opened and the cache
 * holds until it is released: no path of the cache is opened again, so a
 * cache swapped for a symlink to another folder meanwhile is never
 * followed there.
 */
#ifndef VYRE_INDUCTOR_H
#define VYRE_INDUCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "triton.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The directory TorchInductor uses, resolved as above. *source (may be
 * NULL) gets "TORCHINDUCTOR_CACHE_DIR" or "default" (static). Touches
 * nothing. Returns 0, VYRE_EENV (no user name found) or VYRE_ETOOBIG.
 */
VYRE_EXTERN int vyre_inductor_cache_dir(char *out, size_t size, const char **source,
                                        vyre_error *err);

/* The longest entry path kept, relative to the cache: at most three names
 * ("fxgraph/<2>/<key>", "triton/<device>/<KEY>"), each under 256 bytes. */
#define VYRE_INDUCTOR_ENTRY_MAX 800

/* The largest .best_config read by verify (Inductor's are about 256 bytes). */
#define VYRE_INDUCTOR_JSON_MAX (UINT64_C(1) << 20)

/* Entries younger than this (by mtime) are never removed by prune or
 * clear: a running Inductor may be writing them. */
#define VYRE_INDUCTOR_MIN_AGE_NS (INT64_C(60) * 1000000000)

/* The folder under the cache where verify --repair moves bad entries, by
 * the path they had: Inductor opens only its own names, never this one. */
#define VYRE_INDUCTOR_QUARANTINE ".vyre-quarantine"

typedef enum vyre_inductor_kind {
    VYRE_INDUCTOR_KERNEL = 0,      /* <2>/<key>.py: a generated kernel (Python source) */
    VYRE_INDUCTOR_AUTOTUNE = 1,    /* <2>/<hash>.best_config: an autotune result (JSON) */
    VYRE_INDUCTOR_FXGRAPH = 2,     /* fxgraph/<2>/<key>/: an FX graph entry (pickles) */
    VYRE_INDUCTOR_AOTAUTOGRAD = 3, /* aotautograd/<key>/: an AOTAutograd entry (pickles) */
    VYRE_INDUCTOR_TRITON = 4,      /* triton/<device>/<KEY>/: a kernel or launcher group of
                                      the nested Triton cache */
    VYRE_INDUCTOR_OTHER = 5,       /* anything else (locks, C++ kernels, Triton's temp
                                      directories, stray files): listed, never removed */
} vyre_inductor_kind;
#define VYRE_INDUCTOR_KINDS 6

/* "kernel", "autotune", "fxgraph", "aotautograd", "triton", "other" (static). */
VYRE_EXTERN const char *vyre_inductor_kind_name(vyre_inductor_kind kind);

/* One entry: the unit stats count and prune removes whole. */
typedef struct vyre_inductor_entry {
    char path[VYRE_INDUCTOR_ENTRY_MAX]; /* relative to the cache, '/'-separated */
    vyre_inductor_kind kind;
    int dir;                 /* a directory (removed whole), else one file */
    int link;                /* a symbolic link or special file (never followed or read) */
    int trash;               /* a vyre trash name a stopped pruner left: prune finishes it */
    int unreadable;          /* a directory vyre could not list (its size is a lower bound) */
    int foreign;             /* kind "other" because Inductor never makes this name, though it
                                sits where Inductor writes kernels, autotune results or entries
                                (`go/main.py`): reported, never removed */
    uint64_t links;          /* symbolic links inside a directory entry */
    uint64_t bytes;          /* on disk: st_blocks * 512 of all its inodes, as du counts */
    uint64_t apparent_bytes; /* regular files' sizes (st_size) */
    uint64_t files;          /* inodes: the entry itself and all below it */
    int64_t mtime_ns;        /* the newest mtime in the entry (its age) */
    int64_t last_use_ns;     /* the newest atime or mtime: last use where atime is kept */
} vyre_inductor_entry;

/* One device folder of the nested Triton cache (triton/<device>/). Its
 * cache.dir reaches it through the held descriptor of the Inductor cache
 * (/proc/self/fd/<fd>/triton/<device>) where /proc is mounted, else by its
 * path: valid until the Inductor cache is released. */
typedef struct vyre_inductor_triton {
    char device[VYRE_TRITON_NAME_MAX];
    vyre_triton_cache cache;
} vyre_inductor_triton;

/* A scanned cache. Owned by the caller: vyre_inductor_cache_release(). */
typedef struct vyre_inductor_cache {
    char dir[VYRE_TRITON_PATH_MAX];
    vyre_inductor_entry *entries; /* sorted by path */
    size_t n_entries;
    vyre_inductor_triton *triton; /* sorted by device; empty when TRITON_CACHE_DIR was set */
    size_t n_triton;
    int has_triton_dir; /* triton/ exists (Inductor nests Triton's cache) */
    /* bytes: on disk as du -s counts (st_blocks * 512 of every inode, the
     * directories' own included); apparent_bytes: regular files' st_size;
     * files: inodes, directories included */
    uint64_t bytes, apparent_bytes, files;
    int fd;       /* the cache directory, opened once by the scan and held until release
                     (below 3: none); every later step works relative to it */
    int writable; /* scanned with VYRE_INDUCTOR_SCAN_WRITE: prune and quarantine may use it */
} vyre_inductor_cache;

/* vyre_inductor_cache_scan flag: the caller means to change the cache
 * (prune, clear, verify --repair). The directory must then belong to the
 * user or root and not be writable by others (group-writable only with
 * the setgid bit and a group the user is in), as vyre's own cache root;
 * a symlink on the way owned by another user is refused. */
#define VYRE_INDUCTOR_SCAN_WRITE 1u

/*
 * Opens the cache at dir once and reads it into *out (always initialised;
 * release it): every entry with its kind, bytes, inodes and times, the
 * nested Triton cache through vyre_triton_cache_scan. The directory stays
 * open in out->fd until release. Nothing is followed through a symbolic
 * link below dir, nor read (names and sizes only). flags: 0, or
 * VYRE_INDUCTOR_SCAN_WRITE. A missing directory is VYRE_ENOENT, one that
 * is not a directory VYRE_EINVAL; VYRE_EUNSAFE (with
 * VYRE_INDUCTOR_SCAN_WRITE: another user's, or writable by others, with a
 * hint); VYRE_ENOMEM.
 */
VYRE_EXTERN int vyre_inductor_cache_scan(const char *dir, unsigned flags, vyre_inductor_cache *out,
                                         vyre_error *err);

/* Frees what c holds and closes its directory; c may be released twice. */
VYRE_EXTERN void vyre_inductor_cache_release(vyre_inductor_cache *c);

/* One thing verify found. */
typedef struct vyre_inductor_problem {
    char path[VYRE_INDUCTOR_ENTRY_MAX + VYRE_TRITON_NAME_MAX]; /* the entry, or file in it */
    char entry[VYRE_INDUCTOR_ENTRY_MAX];                       /* the entry repair moves */
    const char *kind; /* static: "bad-autotune", "missing-triton-group", "bad-kernel", "link",
                         "unreadable", "foreign", or a vyre_triton_problem kind */
    char message[640];
    int entry_bad; /* 1: Inductor cannot use the entry (repair quarantines it) */
    /* With repair, in a problem that makes its entry unusable: 1 the entry was moved
     * into VYRE_INDUCTOR_QUARANTINE, -1 its move failed (repair_error),
     * 0 with repair_error.code VYRE_EBUSY: left in place, it changed less than a minute
     * ago (a writer may still be creating it; prune leaves it too) */
    int quarantined;
    vyre_error repair_error;
} vyre_inductor_problem;

/* What verify found and what it could not check. Release it. */
typedef struct vyre_inductor_report {
    vyre_inductor_problem *problems; /* malloc'ed */
    size_t n_problems;
    uint64_t checked[VYRE_INDUCTOR_KINDS];     /* entries checked, by kind */
    uint64_t not_checked[VYRE_INDUCTOR_KINDS]; /* pickles and others, by kind */
    uint64_t hashes_unchecked; /* triton_cache_hash values not looked up: no triton/ */
} vyre_inductor_report;

/*
 * Checks what can be checked without Python, each file read again from
 * disk, bounded, never through a link: a .best_config is a JSON object
 * with integer num_warps and num_stages and a string configs_hash, and its
 * triton_cache_hash (when present) names a group of the nested Triton
 * cache; a .py kernel is non-empty UTF-8 text without NUL bytes (not parsed
 * as Python); the nested Triton cache per vyre_triton_verify; links,
 * unreadable files and foreign names (never entry_bad: left alone) are
 * listed. Files are opened relative to c->fd. FX graph and AOTAutograd entries are pickles
 * and are not checked (counted in not_checked). The problems of one entry
 * are contiguous, entries in c's order. With repair, each unusable entry is
 * then moved once into VYRE_INDUCTOR_QUARANTINE (one rename) and its problems say what
 * became of it; nothing is ever deleted. Returns 0 (problems or not, moves
 * failed or not), or VYRE_ENOMEM.
 */
VYRE_EXTERN int vyre_inductor_verify(const vyre_inductor_cache *c, int repair,
                                     vyre_inductor_report *out, vyre_error *err);

/* Frees what r holds; r may be released twice. */
VYRE_EXTERN void vyre_inductor_report_release(vyre_inductor_report *r);

typedef struct vyre_inductor_prune_opts {
    uint64_t max_bytes; /* remove least recently used entries until the cache fits; 0: no bound */
    int64_t max_age_ns; /* remove entries unused for longer; 0: no bound */
    int all;            /* clear: every entry that may be removed */
    int dry_run;        /* say what would go; remove nothing */
} vyre_inductor_prune_opts;

typedef struct vyre_inductor_prune_result {
    uint64_t removed, removed_bytes; /* entries (would be) removed */
    uint64_t removed_by_kind[VYRE_INDUCTOR_KINDS];
    uint64_t kept, kept_bytes; /* every other entry, others included */
    uint64_t young;            /* left: modified less than a minute ago */
    uint64_t failed;           /* could not be removed (the first error in err) */
    uint64_t trash;            /* trash a stopped pruner left, finished */
    uint64_t foreign;          /* foreign names left (vyre_inductor_entry.foreign) */
} vyre_inductor_prune_result;

/* Called for each entry prune removes (or would remove): removed is 0 when
 * removal failed. */
typedef void (*vyre_inductor_prune_fn)(const vyre_inductor_entry *e, int removed, void *user);

/*
 * Removes whole entries of c, least recently used first, until the bounds
 * of o hold (o->all: every one). Kernels, autotune results, FX graph,
 * AOTAutograd and Triton entries may go; "other" entries and links never
 * do, nor an entry modified in the last VYRE_INDUCTOR_MIN_AGE_NS. A
 * directory is renamed to a vyre trash name, then removed; a file renamed
 * to one, then unlinked; so a running reader sees the entry or nothing.
 * Every step is relative to c->fd and nothing is followed through a link;
 * c must have been scanned with VYRE_INDUCTOR_SCAN_WRITE (else
 * VYRE_EINVAL, nothing removed). Foreign names are counted, never removed. fn (may be NULL) is
 * called per entry. Returns 0, or the first error when an entry could not be removed (the others
 * are still tried; *res counts them).
 */
VYRE_EXTERN int vyre_inductor_prune(const vyre_inductor_cache *c, const vyre_inductor_prune_opts *o,
                                    vyre_inductor_prune_fn fn, void *user,
                                    vyre_inductor_prune_result *res, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_INDUCTOR_H */
