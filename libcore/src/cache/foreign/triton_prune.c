/*
 * triton_prune.c - bounding Triton's kernel cache (vyre/triton.h):
 * vyre_triton_prune, for `prune` and `clear`, a kind of the managed-cache
 * engine (cache/managed.h), which plans the removals and leaves what is
 * younger than a minute; this file says what a group is and which go.
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

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/triton_internal.h"
#include "cache/managed.h"

/* The kind's state the operations see. */
typedef struct plan {
    const vyre_triton_cache *c;
    const vyre_triton_prune_opts *o;
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

/* ---- the operations table ----------------------------------------------- */

static size_t op_count(void *kind)
{
    return ((plan *)kind)->c->n_groups;
}

static void op_describe(void *kind, size_t i, vyre__managed_entry *out)
{
    const vyre_triton_group *g = &((plan *)kind)->c->groups[i];
    out->name = g->key;
    out->bytes = g->bytes;
    out->last_use_ns = g->last_use_ns;
    out->flags = is_group(g) ? VYRE__MANAGED_PRUNABLE : 0;
}

/* Why group i goes by itself (not for size, age or clear), or NULL. */
static const char *op_own_reason(void *kind, size_t i, const vyre__managed_opts *mo)
{
    const plan *p = kind;
    const vyre_triton_group *g = &p->c->groups[i];
    const vyre_triton_prune_opts *o = p->o;
    if (vyre__foreign_is_trash(g->key))
        /* Only a directory is vyre's trash; a file, link or FIFO given
         * that name is someone else's: never touched, never a failure. */
        return g->kind != VYRE_TRITON_OTHER ? "trash" : NULL;
    if (g->kind == VYRE_TRITON_TEMP) {
        /* clear takes every temp directory the guard allows. */
        int64_t limit = o->all ? VYRE_TRITON_GUARD_NS : VYRE_TRITON_TEMP_MAX_AGE_NS;
        return mo->now_ns - g->mtime_ns > limit ? "temp" : NULL;
    }
    int kernel = g->kind == VYRE_TRITON_KERNEL;
    if (!kernel)
        return NULL;
    if (o->n_keep_arch && *g->arch && !arch_kept(o, g->arch))
        return "arch";
    if (o->triton_version && g->has_metadata && !*g->metadata_error &&
        strcmp(g->triton_version, o->triton_version))
        return "triton-version";
    return NULL;
}

/* The time that says whether group i may be touched now: a trash entry's
 * ctime (the rename that made it sets it; its mtime is the group's old
 * one), else the directory's mtime, read again now, or its newest file's.
 * -1: it is gone. */
static int64_t op_touched(void *kind, size_t i)
{
    const plan *p = kind;
    const vyre_triton_group *g = &p->c->groups[i];
    struct stat st;
    if (fstatat(p->c->fd, g->key, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (vyre__foreign_is_trash(g->key))
        return ts_ns(st.st_ctim);
    int64_t t = ts_ns(st.st_mtim);
    return t > g->mtime_ns ? t : g->mtime_ns;
}

static int op_remove(void *kind, size_t i, vyre_error *err)
{
    const plan *p = kind;
    return vyre__foreign_remove_group(p->c->fd, p->c->groups[i].key, NULL, err);
}

/* Each group taken goes into the result's list, in the order removed. */
static int op_report(void *kind, size_t i, const char *reason, int error, const vyre_error *err)
{
    plan *p = kind;
    const vyre_triton_group *g = &p->c->groups[i];
    vyre_triton_prune_result *r = p->r;
    if (vyre__grow(&r->removed, &p->cap, r->n_removed + 1, sizeof *r->removed, 32))
        return VYRE_ENOMEM;
    vyre_triton_pruned *e = &r->removed[r->n_removed++];
    memset(e, 0, sizeof *e);
    vyre__strlcpy(e->key, g->key, sizeof e->key);
    vyre__strlcpy(e->name, g->name, sizeof e->name);
    vyre__strlcpy(e->message, error ? err->message : "", sizeof e->message);
    e->reason = reason;
    e->bytes = g->bytes;
    e->inodes = g->n_files + 1;
    e->last_use_ns = g->last_use_ns;
    e->error = error;
    if (!error) /* temp and trash directories too: each went */
        r->removed_inodes += e->inodes;
    return 0;
}

static const vyre__managed_ops triton_ops = {
    .count = op_count,
    .describe = op_describe,
    .own_reason = op_own_reason,
    .touched = op_touched,
    .remove = op_remove,
    .report = op_report,
};

/* The engine's result in Triton's words: groups and inodes kept. */
static void summarise(const plan *p, const vyre__managed_result *m)
{
    vyre_triton_prune_result *r = p->r;
    r->removed_groups = m->removed;
    r->removed_bytes = m->removed_bytes;
    r->young_groups = m->young;
    r->young_bytes = m->young_bytes;
    r->failed = m->failed;
    r->kept_bytes = m->kept_bytes;
    uint64_t gone_inodes = 0;
    for (size_t i = 0; i < p->c->n_groups; i++) {
        const vyre_triton_group *g = &p->c->groups[i];
        if (m->state[i] == VYRE__MANAGED_REMOVED || m->state[i] == VYRE__MANAGED_GONE)
            gone_inodes += g->n_files + 1;
        else
            r->kept_groups += is_group(g);
    }
    r->kept_inodes = p->c->files > gone_inodes ? p->c->files - gone_inodes : 0;
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
    plan p = {.c = &c, .o = o, .r = out};
    vyre__managed_opts mo = {.max_bytes = o->max_size ? o->max_size : UINT64_MAX,
                             .max_age_ns = o->max_age_ns,
                             .all = o->all,
                             .dry_run = o->dry_run};
    mo.now_ns = o->now_ns ? o->now_ns : vyre__unix_ns();
    out->total_bytes = c.bytes;
    vyre__managed_result m;
    rc = vyre__managed_prune(&triton_ops, &p, c.bytes, &mo, &m, NULL);
    if (rc)
        vyre__fail(err, rc, NULL, "out of memory pruning '%s'", dir);
    else
        summarise(&p, &m);
    vyre__managed_result_release(&m);
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
