/*
 * vyre/triton.h - reading Triton's kernel cache (another tool's cache).
 *
 * This header is part of libvyrecore's public API.
 *
 * Triton's FileCacheManager keeps one directory per cache key (a base32
 * name) under $TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache, else
 * ~/.triton/cache. A compiled kernel's directory holds <name>.source,
 * .ttir, .ttgir, .llir, .ptx, .cubin, the metadata <name>.json and, written
 * last, the group manifest __grp__<name>.json whose "child_paths" map each
 * file name to its *absolute* path (Triton drops a child whose path does not
 * exist, so a copied cache misses until the manifest is rewritten). A
 * launcher directory holds one compiled .so and no manifest.
 *
 * Everything read is untrusted: nothing is followed through a symbolic
 * link, JSON files are read up to VYRE_TRITON_JSON_MAX bytes and parsed
 * with jansson; a bad file is recorded on its group, never a failed scan.
 * Nothing here writes, except vyre_triton_relocate and
 * vyre_triton_verify with repair, which say so.
 */
#ifndef VYRE_TRITON_H
#define VYRE_TRITON_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_TRITON_PATH_MAX 4096
#define VYRE_TRITON_NAME_MAX 256
/* The largest metadata file read (Triton's are about 1 KiB). */
#define VYRE_TRITON_JSON_MAX (UINT64_C(1) << 20)
/* The largest group manifest read, and the most children one may name.
 * Triton writes about 1 KiB and seven children (source, four IRs, cubin,
 * metadata, each ~200 bytes with its absolute path); these leave room for
 * any future Triton (64x, 146x) and keep a hostile manifest from costing
 * more than a few MB and milliseconds to parse. A manifest over either is
 * a bad manifest of its group (manifest_error), never a failed scan. */
#define VYRE_TRITON_MANIFEST_MAX (UINT64_C(64) << 10)
#define VYRE_TRITON_CHILDREN_MAX 1024
/* The largest cubin read by verify. */
#define VYRE_TRITON_CUBIN_MAX (UINT64_C(256) << 20)

/* One file of a group directory. */
typedef struct vyre_triton_file {
    char name[VYRE_TRITON_NAME_MAX];
    uint64_t bytes;             /* on disk: st_blocks * 512, as du counts */
    uint64_t apparent_bytes;    /* st_size (0 for a non-file) */
    int64_t mtime_ns, atime_ns; /* Unix epoch */
    int regular;                /* 0: a symlink, directory or other non-file */
    int temp;                   /* Triton's temp file (<name>.tmp.pid_<pid>_<rnd>) */
    int named;                  /* the manifest names it (or is it) */
} vyre_triton_file;

/* One manifest entry: a file name and the absolute path Triton recorded,
 * as the manifest has them (untrusted text). name is one malloc'ed block
 * that path points into (memory proportional to the entry), freed with
 * the group by vyre_triton_cache_release. */
typedef struct vyre_triton_child {
    char *name;
    char *path;
} vyre_triton_child;

typedef enum vyre_triton_group_kind {
    VYRE_TRITON_KERNEL = 0,   /* a manifest, or kernel files (a metadata .json) */
    VYRE_TRITON_LAUNCHER = 1, /* a compiled launcher or utility .so, no manifest */
    VYRE_TRITON_TEMP = 2,     /* Triton's temp directory (tmp.pid_<pid>_<rnd>) */
    VYRE_TRITON_OTHER = 3,    /* anything else at the top (a stray file, a symlink) */
} vyre_triton_group_kind;

/* One entry at the top of the cache: a group directory, or something else. */
typedef struct vyre_triton_group {
    char key[VYRE_TRITON_NAME_MAX]; /* the directory (or entry) name */
    vyre_triton_group_kind kind;
    /* Manifest (__grp__<name>.json): has_manifest; manifest_error is "" when
     * it parsed. children: malloc'ed, n_children entries. */
    int has_manifest;
    char manifest_name[VYRE_TRITON_NAME_MAX]; /* its file name */
    char manifest_error[256];
    vyre_triton_child *children;
    size_t n_children;
    /* Metadata (<name>.json): has_metadata; metadata_error "" when it parsed.
     * Fields absent from the file are "" or -1. */
    int has_metadata;
    char metadata_file[VYRE_TRITON_NAME_MAX];
    char metadata_error[256];
    char name[VYRE_TRITON_NAME_MAX]; /* the kernel name */
    char hash[80];
    char backend[32];  /* target.backend: "cuda", "hip" */
    char arch[32];     /* target.arch as written: "90", "gfx942" */
    int64_t warp_size; /* target.warp_size */
    int64_t num_warps, num_stages;
    int64_t shared;          /* bytes of shared memory */
    char triton_version[32]; /* "" before Triton 3.3 */
    /* The files (malloc'ed, n_files), their sum and times. bytes: on disk
     * (st_blocks * 512, as du counts), the files' and the directory's own;
     * apparent_bytes: the files' st_size. */
    vyre_triton_file *files;
    size_t n_files;
    uint64_t bytes, apparent_bytes;
    int64_t mtime_ns;    /* the newest file's mtime (the group's age) */
    int64_t last_use_ns; /* the newest atime or mtime: last use where atime is kept */
} vyre_triton_group;

/* A scanned cache. Owned by the caller: vyre_triton_cache_release(). */
typedef struct vyre_triton_cache {
    char dir[VYRE_TRITON_PATH_MAX];
    vyre_triton_group *groups; /* sorted by key */
    size_t n_groups;
    /* bytes: on disk as du -s counts (st_blocks * 512, the directory's own
     * blocks included); apparent_bytes: st_size summed; files: inodes,
     * directories included */
    uint64_t bytes, apparent_bytes, files;
    /* The cache directory, opened once by the scan and held until the
     * release: verify, quarantine, relocate and prune work relative to it
     * and never open the cache's path again, so a cache swapped for a link
     * to another folder after the scan is never reached. fd_held: fd is
     * open (a zeroed struct holds none). */
    int fd, fd_held;
    /* Why the cache may be read but not changed: it is another user's, or
     * writable by others, or reached through another user's link (checked
     * as vyre's own cache root is). unsafe.code 0: it may be changed. */
    vyre_error unsafe;
    /* dir made absolute (the working directory before it, links not
     * resolved: the path Triton would write), and the directory's resolved
     * path ("" when unknown). A child path is in its group when it is
     * <either>/<key>/<name> (vyre_triton_child_where). */
    char abs_dir[VYRE_TRITON_PATH_MAX];
    char real_dir[VYRE_TRITON_PATH_MAX];
} vyre_triton_cache;

/*
 * The cache directory Triton uses: $TRITON_CACHE_DIR, else
 * $TRITON_HOME/.triton/cache, else $HOME/.triton/cache (the passwd entry's
 * home when HOME is unset), as Triton's knobs resolve it. *source (may be
 * NULL) gets "TRITON_CACHE_DIR", "TRITON_HOME" or "HOME" (static). Returns
 * 0, VYRE_EENV (no home found) or VYRE_ETOOBIG.
 */
VYRE_EXTERN int vyre_triton_cache_dir(char *out, size_t size, const char **source, vyre_error *err);

/*
 * Reads the cache at dir into *out (always initialised; release it),
 * which keeps the directory open (out->fd) for the calls below. A
 * directory that is missing is VYRE_ENOENT, not a directory VYRE_EINVAL;
 * one another user controls is read, and recorded in out->unsafe (see
 * vyre_triton_cache_check_writable); a bad group is recorded, not an
 * error. Reads only. vyre's own entries are not Triton's and are left out
 * of the groups and every count: VYRE_TRITON_QUARANTINE, and
 * ".vyre-trash.*" directories (a group a pruner renamed to remove it;
 * vyre_triton_prune finishes those). Anything else carrying a trash name
 * (a file, a link, a FIFO) is not vyre's: an entry of kind
 * VYRE_TRITON_OTHER like any stray file, listed, never removed.
 */
VYRE_EXTERN int vyre_triton_cache_scan(const char *dir, vyre_triton_cache *out, vyre_error *err);

/* Frees what c holds and closes its directory; c may be released twice. */
VYRE_EXTERN void vyre_triton_cache_release(vyre_triton_cache *c);

/*
 * 0 when the scanned cache c may be changed: its held directory belongs to
 * the user or root and is not writable by others (checked again now), and
 * was not reached through another user's link. Else VYRE_EUNSAFE (or
 * VYRE_EINVAL: c holds no directory) with the reason and a hint. Every
 * call below that changes the cache checks this first.
 */
VYRE_EXTERN int vyre_triton_cache_check_writable(const vyre_triton_cache *c, vyre_error *err);

/* The file `name` of group g (its files are sorted by name), or NULL. */
VYRE_EXTERN const vyre_triton_file *vyre_triton_group_file(const vyre_triton_group *g,
                                                           const char *name);

/* Where a manifest's child points, from its text alone: nothing is looked
 * up on disk, so a child that points elsewhere (another user's file, a
 * dead mount) is never touched. */
typedef enum vyre_triton_child_place {
    /* <abs_dir or real_dir>/<key>/<name>: the group's own file. */
    VYRE_TRITON_CHILD_HERE = 0,
    /* /<elsewhere>/<key>/<name> (no "." or ".." on the way): the same group
     * where the cache was before it was copied or moved; Triton drops the
     * child, or loads that copy, and vyre_triton_relocate points it here. */
    VYRE_TRITON_CHILD_MOVED = 1,
    /* Anything else (relative, "..", another name, not under a directory
     * named by the key): not a file of any copy of the group, which
     * Triton would load all the same. */
    VYRE_TRITON_CHILD_OUTSIDE = 2,
} vyre_triton_child_place;

/* Where child ch of group g of the scanned cache c points. */
VYRE_EXTERN vyre_triton_child_place vyre_triton_child_where(const vyre_triton_cache *c,
                                                            const vyre_triton_group *g,
                                                            const vyre_triton_child *ch);

/* One thing verify found. */
typedef struct vyre_triton_problem {
    char key[VYRE_TRITON_NAME_MAX];  /* the group (top-level entry) */
    char file[VYRE_TRITON_NAME_MAX]; /* the file in it, "" for the group itself */
    const char *kind;                /* static: "bad-manifest", "missing-file", "outside-group",
                                        "bad-metadata", "bad-cubin", "wrong-kernel", "wrong-arch",
                                        "half-written", "orphan", "temp" */
    char message[512];
    int group_bad; /* 1: Triton cannot use the group (repair quarantines it) */
    /* With repair, in a problem that makes its group unusable: 1 the group was moved
     * into VYRE_TRITON_QUARANTINE, -1 its move failed (repair_error),
     * 0 with repair_error.code VYRE_EBUSY: left in place, it changed less than a minute
     * ago (a writer may still be creating it; prune leaves it too) */
    int quarantined;
    vyre_error repair_error;
} vyre_triton_problem;

/*
 * Checks every group of c (read again from disk, bounded, never through a
 * link): the manifest parses and names plain files that exist in the
 * group; the metadata parses and names the kernel; the .cubin is an ELF
 * whose kernel table (vyre_cubin_kernels) has the metadata's name and
 * whose SM (e_flags) is target.arch; files no manifest names, Triton's
 * temp files and directories, and groups without a manifest but with
 * kernel files (half-written: Triton writes the manifest last) are listed.
 * A child that points outside its group (VYRE_TRITON_CHILD_OUTSIDE) is an
 * "outside-group" problem of an unusable group (Triton would load that
 * file), never looked at; one recorded where the cache was before a copy
 * (VYRE_TRITON_CHILD_MOVED) is not a problem (vyre_triton_relocate). Work is
 * linear in the cache. The problems of one group are contiguous, groups
 * in c's order. With repair, each unusable group is then moved once into
 * VYRE_TRITON_QUARANTINE by one rename (after vyre_triton_cache_check_writable, which
 * refuses before anything is read) and its problems say what became of
 * it; nothing is ever deleted. *out: malloc'ed (the caller frees it), *n
 * problems. Returns 0 (problems or not, moves failed or not), VYRE_ENOMEM,
 * VYRE_EUNSAFE, or VYRE_EINVAL when c holds no directory.
 */
VYRE_EXTERN int vyre_triton_verify(const vyre_triton_cache *c, int repair,
                                   vyre_triton_problem **out, size_t *n, vyre_error *err);

/* The folder under the cache where bad groups are moved: kept out of
 * Triton's way (Triton only opens directories named by its keys). */
#define VYRE_TRITON_QUARANTINE ".vyre-quarantine"

/*
 * Rewrites the manifest of group g of the scanned cache c so that every
 * child path is <c->abs_dir>/<key>/<name> (absolute, links not resolved,
 * as Triton compares it), writing a temp file beside it and renaming it
 * over (relative to c's held directory), so a reader sees the old manifest
 * or the new one. *changed: 1 when a path differed (and, unless dry_run,
 * was rewritten). Returns 0, VYRE_EUNSAFE (not dry_run, and
 * vyre_triton_cache_check_writable refused), VYRE_EINVAL (no manifest, one
 * that did not parse, a child name that is not one plain component: its
 * path would leave the group; or a path that is not UTF-8, which a JSON
 * manifest cannot hold), VYRE_EIO.
 */
VYRE_EXTERN int vyre_triton_relocate(const vyre_triton_cache *c, const vyre_triton_group *g,
                                     int dry_run, int *changed, vyre_error *err);

/* ---- why does this machine recompile? (triton_explain.c) ------------------- */

/* The metadata fields that make Triton compile a kernel again when they
 * change, as compared between the groups of one kernel name. */
typedef enum vyre_triton_field {
    VYRE_TRITON_FIELD_ARCH = 0,           /* target.arch */
    VYRE_TRITON_FIELD_BACKEND = 1,        /* target.backend */
    VYRE_TRITON_FIELD_WARP_SIZE = 2,      /* target.warp_size */
    VYRE_TRITON_FIELD_NUM_WARPS = 3,      /* num_warps */
    VYRE_TRITON_FIELD_NUM_STAGES = 4,     /* num_stages */
    VYRE_TRITON_FIELD_SHARED = 5,         /* shared (bytes) */
    VYRE_TRITON_FIELD_TRITON_VERSION = 6, /* triton_version */
    VYRE_TRITON_FIELD_HASH = 7,           /* hash: Triton's key of the compile */
    VYRE_TRITON_FIELD_SOURCE = 8,         /* SHA-256 of the group's <name>.source */
    VYRE_TRITON_FIELD_COUNT = 9
} vyre_triton_field;

/* "target.arch", "target.backend", "target.warp_size", "num_warps",
 * "num_stages", "shared", "triton_version", "hash", "source_sha256"; NULL
 * for an unknown field (static). */
VYRE_EXTERN const char *vyre_triton_field_name(vyre_triton_field f);

#define VYRE_TRITON_VALUE_MAX   80 /* one field's value as text, with NUL */
#define VYRE_TRITON_NEAREST_MAX 5

/* One group of the kernel and its fields as text ("" when the metadata has
 * no such field, or the .source file cannot be read). */
typedef struct vyre_triton_explain_group {
    const vyre_triton_group *group; /* points into the scanned cache */
    char values[VYRE_TRITON_FIELD_COUNT][VYRE_TRITON_VALUE_MAX];
} vyre_triton_explain_group;

/* What vyre_triton_explain found. Owned by the caller:
 * vyre_triton_explanation_release(). */
typedef struct vyre_triton_explanation {
    vyre_triton_explain_group *groups; /* malloc'ed, in the cache's key order */
    size_t n_groups;
    unsigned differ; /* a bit per field whose value is not the same in every group */
    /* With no group: the kernel names of the cache nearest to the one asked
     * for (edit distance, then name), at most VYRE_TRITON_NEAREST_MAX. */
    char nearest[VYRE_TRITON_NEAREST_MAX][VYRE_TRITON_NAME_MAX];
    size_t n_nearest;
} vyre_triton_explanation;

/*
 * The kernel groups of c whose metadata names `kernel`, with the fields
 * above (the .source file read from the group, never through a link, at
 * most VYRE_TRITON_CUBIN_MAX bytes) and which of them differ between the
 * groups: why the same kernel was compiled more than once. out is always
 * initialised. Returns 0 (groups or none), VYRE_EINVAL, VYRE_ENOMEM.
 */
VYRE_EXTERN int vyre_triton_explain(const vyre_triton_cache *c, const char *kernel,
                                    vyre_triton_explanation *out, vyre_error *err);

/* Frees what x holds and zeroes it; NULL is a no-op. */
VYRE_EXTERN void vyre_triton_explanation_release(vyre_triton_explanation *x);
/* ---- prune and clear ------------------------------------------------------ */

/* A group whose directory or newest file was modified less than this ago
 * is never touched: Triton may be writing it (it renames each file into
 * the group, the manifest last). */
#define VYRE_TRITON_GUARD_NS (INT64_C(60) * 1000000000)
/* Triton's temp directories (tmp.pid_*) are removed by prune and clear
 * once older than this: a compile writes one for a few milliseconds, so
 * one an hour old belongs to a process that died. */
#define VYRE_TRITON_TEMP_MAX_AGE_NS (INT64_C(3600) * 1000000000)

/* What vyre_triton_prune removes. Every limit that is set applies; a group
 * any one of them names goes. Only kernel and launcher groups, Triton's
 * temp directories and vyre's own trash are removed: a stray file or link
 * at the top of the cache is never touched. */
typedef struct vyre_triton_prune_opts {
    uint64_t max_size;  /* 0: none. Least recently used groups (last_use_ns) go
                           until the cache's bytes are at most this */
    int64_t max_age_ns; /* 0: none. Groups last used longer ago go */
    /* Kernel groups whose target.arch is none of these go ("90", "sm_90",
     * "gfx942"; "sm_" is ignored). Groups without a readable arch (launchers,
     * half-written groups) are kept. n_keep_arch 0: any arch. */
    const char *const *keep_arch;
    size_t n_keep_arch;
    /* NULL: any. Kernel groups built by another Triton version go, and those
     * whose metadata parsed but records none (Triton before 3.3): what a
     * user wants after an upgrade. Launchers and unreadable groups stay. */
    const char *triton_version;
    int all;        /* clear: every group, whatever the limits */
    int dry_run;    /* decide and report, remove nothing */
    int64_t now_ns; /* 0: the clock */
} vyre_triton_prune_opts;

/* One entry removed (or, with dry_run, that would be). */
typedef struct vyre_triton_pruned {
    char key[VYRE_TRITON_NAME_MAX];
    char name[VYRE_TRITON_NAME_MAX]; /* the kernel name; "" when none */
    /* static: "size", "age", "arch", "triton-version", "clear", "temp"
     * (Triton's temp directory, older than VYRE_TRITON_TEMP_MAX_AGE_NS),
     * "trash" (left by a pruner that died, finished now) */
    const char *reason;
    uint64_t bytes, inodes; /* inodes: the files and the directory */
    int64_t last_use_ns;
    int error;         /* 0, or the VYRE_E* code its removal failed with */
    char message[256]; /* the failure, "" */
} vyre_triton_pruned;

/* What vyre_triton_prune did. Owned by the caller: release it. */
typedef struct vyre_triton_prune_result {
    vyre_triton_pruned *removed; /* malloc'ed, in the order removed */
    size_t n_removed;
    /* The entries that went (temp and trash directories included). */
    uint64_t removed_groups, removed_bytes, removed_inodes;
    /* kept_groups: kernel and launcher groups left; bytes and inodes: the
     * whole cache left (every entry). */
    uint64_t kept_groups, kept_bytes, kept_inodes;
    /* Entries a limit or clear named that the one-minute guard kept. */
    uint64_t young_groups, young_bytes;
    uint64_t failed;      /* removals that failed (their entries' error) */
    uint64_t total_bytes; /* the cache's bytes before */
} vyre_triton_prune_result;

/*
 * Prunes the Triton cache at dir as o says, relative to the one directory
 * descriptor its scan opened (refused with VYRE_EUNSAFE, before anything
 * is removed, for a cache vyre_triton_cache_check_writable refuses):
 * first entries a limit names by
 * themselves (trash left by a dead pruner and temp directories, both only
 * when old, then age, arch and version), then least recently used groups
 * until max_size holds. Each goes as a whole: one rename to a vyre trash
 * name (a reader sees the whole group or nothing), then removal, never
 * through a link; a group younger than VYRE_TRITON_GUARD_NS is skipped
 * (checked again just before its rename). A group another pruner removed
 * first is skipped. Safe beside a running Triton and another pruner.
 * *out is always initialised. Returns 0 (failed removals are in *out, not
 * an error), or what vyre_triton_cache_scan returns, or VYRE_ENOMEM.
 */
VYRE_EXTERN int vyre_triton_prune(const char *dir, const vyre_triton_prune_opts *o,
                                  vyre_triton_prune_result *out, vyre_error *err);

/* Frees what r holds; r may be released twice. */
VYRE_EXTERN void vyre_triton_prune_result_release(vyre_triton_prune_result *r);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_TRITON_H */
