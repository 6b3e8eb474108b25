/*
 * triton_prune.c - bounding Triton's kernel cache (vyre/triton.h):
 * vyre_triton_prune, for `prune` and `clear`.
 *
 * Triton has no eviction of its own (FileCacheManager only adds), so a
 * busy machine's cache grows until the disk or the inode table is full.
 * A group is Triton's unit: a kernel is found through its directory and
 * the manifest written last, so a group goes as a whole or not at all,
 * through vyre__foreign_remove_group (one rename, then removal). Triton
 * 3.6 fills a group by renaming each file into it (each rename bumps the
 * directory's mtime), so a group whose directory and newest file are a
 * minute old is not being written; the directory's mtime is read again
 * just before the rename, so a group Triton touched since the scan stays.
 */
#include "vyre/triton.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/triton_internal.h"

/* What became of each entry of the scan. */
enum { UNDECIDED = 0, REMOVED, YOUNG, GONE, FAILED };

typedef struct plan {
    const vyre_triton_cache *c;
    const vyre_triton_prune_opts *o;
    int top;
    int64_t now;
    unsigned char *state; /* per group */
    uint64_t bytes;       /* the cache's bytes as they stand */
    vyre_triton_prune_result *r;
    size_t cap;
} plan;

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int is_group(const vyre_triton_group *g)
{
    return (g->kind == VYRE_TRITON_KERNEL || g->kind == VYRE_TRITON_LAUNCHER) &&
           !vyre__foreign_is_trash(g->key);
}

/* "sm_90" and "90" are the same arch; target.arch is written "90". */
static const char *bare_arch(const char *a)
{
    return !strncmp(a, "sm_", 3) ? a + 3 : a;
}

static int arch_kept(const vyre_triton_prune_opts *o, const char *arch)
{
    for (size_t i = 0; i < o->n_keep_arch; i++)
        if (o->keep_arch[i] && !strcmp(bare_arch(o->keep_arch[i]), bare_arch(arch)))
            return 1;
    return 0;
}

/* The time that says whether `key` may be touched now: a trash entry's
 * ctime (the rename that made it sets it; its mtime is the group's old
 * one), else the directory's mtime, read again now. -1: it is gone. */
static int64_t touched_ns(const plan *p, const vyre_triton_group *g)
{
    struct stat st;
    if (fstatat(p->top, g->key, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (vyre__foreign_is_trash(g->key))
        return ts_ns(st.st_ctim);
    int64_t t = ts_ns(st.st_mtim);
    return t > g->mtime_ns ? t : g->mtime_ns; /* g->mtime_ns: the newest file's */
}

/* Why group g goes by itself (not for size), or NULL. */
static const char *own_reason(const plan *p, const vyre_triton_group *g)
{
    const vyre_triton_prune_opts *o = p->o;
    if (vyre__foreign_is_trash(g->key))
        /* Only a directory is vyre's trash; a file, link or FIFO given
         * that name is someone else's: never touched, never a failure. */
        return g->kind != VYRE_TRITON_OTHER ? "trash" : NULL;
    if (g->kind == VYRE_TRITON_TEMP) {
        /* clear takes every temp directory the guard allows. */
        int64_t limit = o->all ? VYRE_TRITON_GUARD_NS : VYRE_TRITON_TEMP_MAX_AGE_NS;
        return p->now - g->mtime_ns > limit ? "temp" : NULL;
    }
    if (!is_group(g))
        return NULL;
    if (o->all)
        return "clear";
    if (o->max_age_ns > 0 && p->now - g->last_use_ns > o->max_age_ns)
        return "age";
    int kernel = g->kind == VYRE_TRITON_KERNEL;
    if (o->n_keep_arch && kernel && *g->arch && !arch_kept(o, g->arch))
        return "arch";
    if (o->triton_version && kernel && g->has_metadata && !*g->metadata_error &&
        strcmp(g->triton_version, o->triton_version))
        return "triton-version";
    return NULL;
}

static int record(plan *p, const vyre_triton_group *g, const char *reason, int error,
                  const char *message)
{
    vyre_triton_prune_result *r = p->r;
    if (r->n_removed == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 32;
        vyre_triton_pruned *a = realloc(r->removed, ncap * sizeof *a);
        if (!a)
            return VYRE_ENOMEM;
        r->removed = a;
        p->cap = ncap;
    }
    vyre_triton_pruned *e = &r->removed[r->n_removed++];
    memset(e, 0, sizeof *e);
    vyre__strlcpy(e->key, g->key, sizeof e->key);
    vyre__strlcpy(e->name, g->name, sizeof e->name);
    vyre__strlcpy(e->message, message ? message : "", sizeof e->message);
    e->reason = reason;
    e->bytes = g->bytes;
    e->inodes = g->n_files + 1;
    e->last_use_ns = g->last_use_ns;
    e->error = error;
    if (error) {
        r->failed++;
        return 0;
    }
    r->removed_groups++; /* temp and trash directories too: each went */
    r->removed_bytes += g->bytes;
    r->removed_inodes += e->inodes;
    return 0;
}

/* Removes group i for `reason`, unless it is young or gone. 0, or
 * VYRE_ENOMEM. */
static int take(plan *p, size_t i, const char *reason)
{
    const vyre_triton_group *g = &p->c->groups[i];
    int64_t t = touched_ns(p, g);
    if (t < 0) {
        p->state[i] = GONE; /* another pruner, or Triton itself */
        p->bytes -= g->bytes;
        return 0;
    }
    if (p->now - t < VYRE_TRITON_GUARD_NS) {
        p->state[i] = YOUNG;
        p->r->young_groups++;
        p->r->young_bytes += g->bytes;
        return 0;
    }
    int rc = 0;
    vyre_error e;
    vyre_error_clear(&e);
    if (!p->o->dry_run)
        rc = vyre__foreign_remove_group(p->top, g->key, NULL, &e);
    if (rc == VYRE_ENOENT) {
        p->state[i] = GONE;
        p->bytes -= g->bytes;
        return 0;
    }
    p->state[i] = rc ? FAILED : REMOVED;
    if (!rc)
        p->bytes -= g->bytes;
    return record(p, g, reason, rc, rc ? e.message : NULL);
}

static int cmp_lru(const void *a, const void *b, void *arg)
{
    const vyre_triton_cache *c = ((const plan *)arg)->c;
    const vyre_triton_group *x = &c->groups[*(const size_t *)a];
    const vyre_triton_group *y = &c->groups[*(const size_t *)b];
    if (x->last_use_ns != y->last_use_ns)
        return x->last_use_ns < y->last_use_ns ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Least recently used groups first until the cache fits max_size. */
static int take_for_size(plan *p)
{
    const vyre_triton_cache *c = p->c;
    if (!p->o->max_size || p->bytes <= p->o->max_size)
        return 0;
    size_t *order = malloc((c->n_groups ? c->n_groups : 1) * sizeof *order);
    if (!order)
        return VYRE_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < c->n_groups; i++)
        if (p->state[i] == UNDECIDED && is_group(&c->groups[i]))
            order[n++] = i;
    qsort_r(order, n, sizeof *order, cmp_lru, p);
    int rc = 0;
    for (size_t k = 0; !rc && k < n && p->bytes > p->o->max_size; k++)
        rc = take(p, order[k], "size");
    free(order);
    return rc;
}

static int run_plan(plan *p)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->c->n_groups; i++) {
        const char *why = own_reason(p, &p->c->groups[i]);
        if (why)
            rc = take(p, i, why);
    }
    if (!rc)
        rc = take_for_size(p);
    if (rc)
        return rc;
    vyre_triton_prune_result *r = p->r;
    uint64_t gone_inodes = 0;
    for (size_t i = 0; i < p->c->n_groups; i++) {
        const vyre_triton_group *g = &p->c->groups[i];
        if (p->state[i] == REMOVED || p->state[i] == GONE)
            gone_inodes += g->n_files + 1;
        else
            r->kept_groups += is_group(g);
    }
    r->kept_bytes = p->bytes;
    r->kept_inodes = p->c->files > gone_inodes ? p->c->files - gone_inodes : 0;
    return 0;
}

int vyre_triton_prune(const char *dir, const vyre_triton_prune_opts *o,
                      vyre_triton_prune_result *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    if (!o)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_triton_prune: no options");
    vyre_triton_cache c;
    int rc = vyre__triton_scan(dir, 1, &c, err); /* trash too: it finishes it */
    if (rc)
        return rc;
    /* Another user's cache, or one others may write, is refused before
     * anything is decided; a dry run changes nothing and may look. */
    if (!o->dry_run && (rc = vyre_triton_cache_check_writable(&c, err))) {
        vyre_triton_cache_release(&c);
        return rc;
    }
    /* Every step works relative to the directory the scan opened and
     * checked: the path is not opened again, so a cache swapped for a link
     * to another folder while the prune runs is never reached. */
    plan p = {.c = &c, .o = o, .r = out, .bytes = c.bytes, .top = c.fd};
    p.now = o->now_ns ? o->now_ns : vyre__unix_ns();
    out->total_bytes = c.bytes;
    p.state = calloc(c.n_groups ? c.n_groups : 1, 1);
    if (!p.state)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory pruning '%s'", dir);
    else if ((rc = run_plan(&p)))
        vyre__fail(err, rc, NULL, "out of memory pruning '%s'", dir);
    free(p.state);
    vyre_triton_cache_release(&c);
    if (rc)
        vyre_triton_prune_result_release(out);
    return rc;
}

void vyre_triton_prune_result_release(vyre_triton_prune_result *r)
{
    if (!r)
        return;
    free(r->removed);
    r->removed = NULL;
    r->n_removed = 0;
}
