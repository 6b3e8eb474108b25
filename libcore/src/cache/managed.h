/*
 * managed.h - the one engine that prunes, clears and verifies a managed
 * cache (internal), and the quarantine move its kinds share.
 *
 * A managed cache is a list of entries (a vyre blob, a Triton group, a
 * TorchInductor entry), each with a size on disk, a last use, a time of last change and
 * a removal protocol. A kind describes its entries through a small
 * operations table (describe one, its own reason to go, when it was last
 * touched, remove one, report what became of it) and the engine plans and
 * carries out the removals, all relative to the directory descriptor the
 * kind's scan opened and holds until the removal is done:
 *
 *   1. each entry in the kind's order: clear (o->all) or the age limit for
 *      an entry the limits may take (VYRE__MANAGED_PRUNABLE), else the
 *      kind's own reason (a trash directory a stopped pruner left, a stale
 *      temp folder, an architecture no longer wanted);
 *   2. then the least recently used prunable entries until the cache's
 *      bytes on disk are at most the size limit.
 *
 * The guarantees kept here, once for every kind: an entry the kind does
 * not mark prunable (a foreign name, a link, another tool's file) goes
 * only for the kind's own reason, never for a limit; nothing touched in
 * the last VYRE__MANAGED_GUARD_NS goes, and the time is read again just
 * before the removal, so what a writer changed since the scan stays; an
 * entry already gone (another pruner won) is no failure; a dry run
 * decides and reports the same and removes nothing.
 */
#ifndef VYRE_CACHE_MANAGED_H
#define VYRE_CACHE_MANAGED_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"
#include "vyre/export.h"

/* An entry changed less than this long ago may be being written. */
#define VYRE__MANAGED_GUARD_NS (INT64_C(60) * 1000000000)

/* vyre__managed_entry.flags: the size and age limits and clear may take it. */
#define VYRE__MANAGED_PRUNABLE 1u

/* One entry as the engine sees it (describe fills it). */
typedef struct vyre__managed_entry {
    const char *name;    /* the kind's name for it: breaks ties in LRU order */
    uint64_t bytes;      /* on disk, st_blocks * 512, as du counts */
    int64_t last_use_ns; /* LRU order and the age limit */
    unsigned flags;      /* VYRE__MANAGED_* */
} vyre__managed_entry;

/* What became of each entry (vyre__managed_result.state). */
enum {
    VYRE__MANAGED_KEPT = 0, /* not taken */
    VYRE__MANAGED_REMOVED,  /* removed (with dry_run: would be) */
    VYRE__MANAGED_YOUNG,    /* wanted, but touched within the guard: left */
    VYRE__MANAGED_GONE,     /* wanted, but gone already */
    VYRE__MANAGED_FAILED    /* its removal failed */
};

typedef struct vyre__managed_opts {
    uint64_t
        max_bytes; /* UINT64_MAX: none. LRU prunable entries go until the cache is at most this */
    int64_t max_age_ns; /* 0: none. Prunable entries last used longer ago go */
    int all;            /* clear: every prunable entry */
    int dry_run;        /* decide and report, remove nothing */
    int64_t now_ns;     /* the time decisions are made at */
} vyre__managed_opts;

/* The operations table of a kind. `kind` is the kind's own state (its
 * scanned cache and options); i an index into its list. */
typedef struct vyre__managed_ops {
    size_t (*count)(void *kind);
    void (*describe)(void *kind, size_t i, vyre__managed_entry *out);
    /* Why entry i goes whatever the limits ("trash", "temp", "arch"), or
     * NULL. May be NULL: no reasons of its own. */
    const char *(*own_reason)(void *kind, size_t i, const vyre__managed_opts *o);
    /* The time that says whether i may be touched now, read again from the
     * disk (0: no guard, such as vyre's own trash), or -1: it is gone. */
    int64_t (*touched)(void *kind, size_t i);
    /* Removes i by the kind's protocol (rename to a trash name, then
     * remove). 0, VYRE_ENOENT (gone already), or the failure with err. */
    int (*remove)(void *kind, size_t i, vyre_error *err);
    /* Called for each entry removed (rc 0; with dry_run: would be) or whose
     * removal failed (rc, err the why), in the order they were taken. May
     * be NULL. 0, or VYRE_ENOMEM to stop. */
    int (*report)(void *kind, size_t i, const char *reason, int rc, const vyre_error *err);
    /* 1: step 1 walks the entries least recently used first, else in the
     * kind's list order. */
    int lru_order;
    /* May be NULL. A kind whose removal commits many entries at once (vyre's
     * own: rows deleted in one transaction) removes the entries idx[0..n)
     * here instead of one by one through remove, up to `batch` at a time,
     * and sets state[k] (preset to VYRE__MANAGED_REMOVED) to what became
     * of idx[k]: REMOVED, YOUNG (changed since the scan, so left: what
     * touched says for the others), GONE (gone already) or FAILED. The
     * removed ones are then reported. 0, or a failure (err set): the prune
     * stops after reporting what did go, and returns the code. */
    int (*remove_batch)(void *kind, const size_t *idx, size_t n, unsigned char *state,
                        vyre_error *err);
    size_t batch;
} vyre__managed_ops;

typedef struct vyre__managed_result {
    unsigned char *state; /* malloc'ed, one VYRE__MANAGED_* per entry */
    uint64_t removed, removed_bytes;
    uint64_t young, young_bytes; /* wanted but left: touched within the guard */
    uint64_t failed;
    uint64_t kept_bytes; /* the cache's bytes after (total less what went) */
} vyre__managed_result;

/*
 * Plans and carries out a prune of the n entries of `kind` (total_bytes:
 * the whole cache's size on disk, entries and the rest). *r is always
 * initialised; release it with vyre__managed_result_release. Returns 0
 * (failures of single removals are counted and reported, not returned),
 * VYRE_ENOMEM (from the engine or a report), or the code of a failed
 * remove_batch with err (may be NULL) set.
 */
int vyre__managed_prune(const vyre__managed_ops *ops, void *kind, uint64_t total_bytes,
                        const vyre__managed_opts *o, vyre__managed_result *r, vyre_error *err);

void vyre__managed_result_release(vyre__managed_result *r);

/*
 * verify, the same engine's other job: each entry checked by the kind
 * (check), what it finds collected here, and with repair each entry a
 * problem makes unusable moved into the kind's quarantine once (by the
 * kind's own move: one rename relative to the held descriptor, never a
 * removal). Problems that do not make their entry unusable (a foreign
 * name, a temp file a writer may still own) are reported and left. As in
 * prune, an unusable entry touched in the last VYRE__MANAGED_GUARD_NS
 * (read again just before its move) is not moved: a writer may be
 * creating it now (Triton writes a group's manifest last). Its problems
 * are still reported, marked young.
 */

/* One problem a check found, in entry `entry`. */
typedef struct vyre__managed_problem {
    size_t entry;      /* the kind's index of the entry */
    const char *kind;  /* static: the kind's word ("bad-cubin") */
    char file[256];    /* the file of the entry it is about, "" for the entry */
    char message[640]; /* the check's prefix (vyre__managed_verdict.prefix), then its words */
    int unusable;      /* the entry cannot be used: repair quarantines it */
    int quarantined;   /* with repair, when unusable: 1 its entry moved, -1 not (error) */
    int young;         /* with repair, when unusable: not moved, touched within the guard */
    size_t error;      /* quarantined -1: its index in vyre__managed_verdict.errors */
} vyre__managed_problem;

/* What verify found (*v is always initialised; release it). */
typedef struct vyre__managed_verdict {
    vyre__managed_problem *p; /* malloc'ed, in entry order */
    size_t n, cap;
    vyre_error *errors; /* the failed moves, in entry order */
    size_t n_errors;
    uint64_t unusable, moved; /* entries a problem makes unusable; of those, moved */
    uint64_t young;           /* of those, left: touched within the guard */
    /* For the checks: the entry being checked, and text put before each
     * message (a nested cache's name), else NULL. */
    size_t at;
    const char *prefix;
    int oom;
} vyre__managed_verdict;

/* A check's finding about entry v->at (file may be NULL). */
void vyre__managed_found(vyre__managed_verdict *v, const char *file, const char *kind, int unusable,
                         const char *fmt, ...) VYRE_PRINTF(5, 6);

/* The operations verify uses (count from above). */
typedef struct vyre__managed_check_ops {
    size_t (*count)(const void *kind);
    /* Checks entry i (read again from the disk, bounded, never through a
     * link), each problem through vyre__managed_found. */
    void (*check)(const void *kind, size_t i, vyre__managed_verdict *v);
    /* Moves entry i into the kind's quarantine: 0, or the failure (err). */
    int (*quarantine)(const void *kind, size_t i, vyre_error *err);
    /* The time that says whether i may be moved now (prune's rule: its
     * newest file's mtime, read again from the disk), 0: no guard, or -1:
     * it is gone. May be NULL: no guard. */
    int64_t (*touched)(const void *kind, size_t i);
} vyre__managed_check_ops;

/* Checks every entry of `kind` and, with repair, quarantines the unusable
 * ones. 0 (problems or not), or VYRE_ENOMEM (err names `what`). */
int vyre__managed_verify(const vyre__managed_check_ops *ops, const void *kind, int repair,
                         const char *what, vyre__managed_verdict *v, vyre_error *err);

void vyre__managed_verdict_release(vyre__managed_verdict *v);

/* Why a young entry was not moved, as the public problems carry it in
 * their repair_error (quarantined 0): VYRE_EBUSY, "left alone: changed
 * less than a minute ago". */
#define VYRE__MANAGED_YOUNG_MESSAGE "left alone: changed less than a minute ago"
void vyre__managed_young_error(vyre_error *e);

/*
 * Moves `name` of directory `from` into the quarantine directory q under
 * a name not taken there (`name`, else `name.1`, `name.2`, ...), one
 * rename; `shown` names the entry and `qname` the quarantine in messages.
 * Returns 0, VYRE_ENOENT (gone) or VYRE_EIO.
 */
int vyre__managed_quarantine_move(int from, const char *name, int q, const char *shown,
                                  const char *qname, vyre_error *err);

#endif /* VYRE_CACHE_MANAGED_H */
