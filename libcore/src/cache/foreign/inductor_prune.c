/*
 * inductor_prune.c - bounding TorchInductor's cache (vyre_inductor_prune)
 * as a kind of the managed-cache engine (cache/managed.h): whole entries,
 * least recently used first, each removed by a rename to a vyre trash
 * name first (foreign_internal.h), so a running Inductor or Triton opens
 * the whole entry or finds none and compiles again. The engine leaves what
 * was modified in the last minute; this file says what an entry is, which
 * may go (never a link, a foreign name or another kind's file), and how
 * one is removed, each step relative to the descriptor the scan opened
 * and held in the cache: a cache swapped for a symlink to another folder
 * after the scan is never followed there.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/inductor_internal.h"
#include "cache/managed.h"

static int prunable(const vyre_inductor_entry *e)
{
    return e->kind != VYRE_INDUCTOR_OTHER && !e->foreign && !e->link && !e->trash && !e->unreadable;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The kind's state the operations see. */
typedef struct run {
    const vyre_inductor_cache *c;
    vyre_inductor_prune_fn fn;
    void *user;
    vyre_inductor_prune_result *res;
    int first;       /* the first error's code */
    vyre_error *err; /* gets the first error */
} run;

/* ---- the operations table ----------------------------------------------- */

static size_t op_count(void *kind)
{
    return ((run *)kind)->c->n_entries;
}

static void op_describe(void *kind, size_t i, vyre__managed_entry *out)
{
    const vyre_inductor_entry *e = &((run *)kind)->c->entries[i];
    out->name = e->path;
    out->bytes = e->bytes;
    out->last_use_ns = e->last_use_ns;
    out->flags = prunable(e) ? VYRE__MANAGED_PRUNABLE : 0;
}

/* The trash a stopped pruner left goes, whatever its age. */
static const char *op_own_reason(void *kind, size_t i, const vyre__managed_opts *mo)
{
    (void)mo;
    return ((run *)kind)->c->entries[i].trash ? "trash" : NULL;
}

/* The entry's newest mtime, read again now (its parent reached without
 * following a link), or the scan's when newer; vyre's own trash: 0, no
 * guard. -1: gone. */
static int64_t op_touched(void *kind, size_t i)
{
    const run *r = kind;
    const vyre_inductor_entry *e = &r->c->entries[i];
    const char *last;
    int at = vyre__inductor_open_parent(r->c->fd, e->path, &last, NULL);
    if (at < 0)
        return at == VYRE_ENOENT ? -1 : 0; /* a refusal: remove says why */
    struct stat st;
    int rc = fstatat(at, last, &st, AT_SYMLINK_NOFOLLOW);
    int gone = rc && errno == ENOENT;
    close(at);
    if (gone)
        return -1;
    if (rc || e->trash)
        return 0;
    return mtime_ns(&st) > e->mtime_ns ? mtime_ns(&st) : e->mtime_ns;
}

/* Removes entry i: a directory by rename then removal, a file by rename
 * then unlink; a trash entry (vyre renamed it already) removed as it is. */
static int op_remove(void *kind, size_t i, vyre_error *err)
{
    const run *r = kind;
    const vyre_inductor_entry *e = &r->c->entries[i];
    const char *last;
    int at = vyre__inductor_open_parent(r->c->fd, e->path, &last, err);
    if (at < 0)
        return at;
    struct stat st;
    int rc;
    if (fstatat(at, last, &st, AT_SYMLINK_NOFOLLOW))
        rc = errno == ENOENT
                 ? VYRE_ENOENT
                 : vyre__fail(err, VYRE_EIO, NULL, "'%s': %s", e->path, strerror(errno));
    else if (e->trash)
        rc = S_ISDIR(st.st_mode) ? vyre__foreign_remove_tree(at, last, NULL, err)
             : unlinkat(at, last, 0) && errno != ENOENT
                 ? vyre__fail(err, VYRE_EIO, NULL, "cannot remove '%s': %s", e->path,
                              strerror(errno))
                 : 0;
    else if (S_ISDIR(st.st_mode))
        rc = vyre__foreign_remove_group(at, last, NULL, err);
    else
        rc = vyre__foreign_remove_file(at, last, NULL, err);
    close(at);
    return rc;
}

static int op_report(void *kind, size_t i, const char *reason, int rc, const vyre_error *err)
{
    run *r = kind;
    const vyre_inductor_entry *e = &r->c->entries[i];
    if (!strcmp(reason, "trash")) { /* finished, not counted as an entry; */
        r->res->trash += rc == 0;   /* one that resists is left for next time */
        return 0;
    }
    if (rc && !r->first) {
        r->first = rc;
        if (r->err)
            *r->err = *err;
    }
    if (rc)
        r->res->failed++;
    else {
        r->res->removed++;
        r->res->removed_bytes += e->bytes;
        r->res->removed_by_kind[e->kind]++;
    }
    if (r->fn)
        r->fn(e, rc == 0, r->user);
    return 0;
}

static const vyre__managed_ops inductor_ops = {
    .count = op_count,
    .describe = op_describe,
    .own_reason = op_own_reason,
    .touched = op_touched,
    .remove = op_remove,
    .report = op_report,
    .lru_order = 1, /* clear reports least recently used first */
};

/* Inductor's `young`: every entry prune may take that was modified in the
 * last minute, wanted or not, and those found rewritten at removal. */
static uint64_t young(const vyre_inductor_cache *c, const vyre__managed_result *m, int64_t now)
{
    uint64_t n = 0;
    for (size_t i = 0; i < c->n_entries; i++) {
        const vyre_inductor_entry *e = &c->entries[i];
        int at_scan = prunable(e) && now - e->mtime_ns < VYRE__MANAGED_GUARD_NS;
        n += at_scan || m->state[i] == VYRE__MANAGED_YOUNG;
    }
    return n;
}

int vyre_inductor_prune(const vyre_inductor_cache *c, const vyre_inductor_prune_opts *o,
                        vyre_inductor_prune_fn fn, void *user, vyre_inductor_prune_result *res,
                        vyre_error *err)
{
    memset(res, 0, sizeof *res);
    if (c->fd < 0 || !c->writable)
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "TorchInductor cache '%s' was not opened to be changed", c->dir);
    run r = {c, fn, user, res, 0, err};
    vyre__managed_opts mo = {o->max_bytes ? o->max_bytes : UINT64_MAX, o->max_age_ns, o->all,
                             o->dry_run, vyre__unix_ns()};
    vyre__managed_result m;
    int rc = vyre__managed_prune(&inductor_ops, &r, c->bytes, &mo, &m, NULL);
    if (rc) {
        vyre__managed_result_release(&m);
        return vyre__fail(err, rc, NULL, "out of memory pruning '%s'", c->dir);
    }
    for (size_t i = 0; i < c->n_entries; i++)
        res->foreign += c->entries[i].foreign != 0;
    res->young = young(c, &m, mo.now_ns);
    res->kept = c->n_entries - res->removed - res->trash;
    res->kept_bytes = m.kept_bytes;
    vyre__managed_result_release(&m);
    return r.first;
}
