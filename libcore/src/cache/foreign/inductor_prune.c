/*
 * inductor_prune.c - bounding TorchInductor's cache (vyre_inductor_prune):
 * whole entries, least recently used first, each removed by a rename to a
 * vyre trash name first (foreign_internal.h), so a running Inductor or
 * Triton opens the whole entry or finds none and compiles again. Nothing
 * modified in the last minute is touched: a running compile may be
 * writing it. Every step is relative to the descriptor the scan opened
 * (and checked for a change) and held in the cache: a cache swapped for a
 * symlink to another folder after the scan is never followed there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/inductor_internal.h"

static int prunable(const vyre_inductor_entry *e)
{
    return e->kind != VYRE_INDUCTOR_OTHER && !e->foreign && !e->link && !e->trash && !e->unreadable;
}

static int cmp_lru(const void *a, const void *b)
{
    const vyre_inductor_entry *x = *(const vyre_inductor_entry *const *)a;
    const vyre_inductor_entry *y = *(const vyre_inductor_entry *const *)b;
    if (x->last_use_ns != y->last_use_ns)
        return x->last_use_ns < y->last_use_ns ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Removes entry e (trash: what a stopped pruner renamed). *bytes gets
 * what went. Returns 0, 1 when it changed since the scan and is young now
 * (left), VYRE_ENOENT (gone already) or the error. */
static int remove_entry(const vyre_inductor_cache *c, const vyre_inductor_entry *e, int64_t now,
                        unsigned long long *bytes, vyre_error *err)
{
    const char *last;
    int at = vyre__inductor_open_parent(c->fd, e->path, &last, err);
    if (at < 0)
        return at;
    struct stat st;
    int rc;
    if (fstatat(at, last, &st, AT_SYMLINK_NOFOLLOW))
        rc = errno == ENOENT
                 ? VYRE_ENOENT
                 : vyre__fail(err, VYRE_EIO, NULL, "'%s': %s", e->path, strerror(errno));
    else if (!e->trash && now - mtime_ns(&st) < VYRE_INDUCTOR_MIN_AGE_NS)
        rc = 1; /* rewritten since the scan */
    else if (e->trash)
        rc = S_ISDIR(st.st_mode) ? vyre__foreign_remove_tree(at, last, bytes, err)
             : unlinkat(at, last, 0) && errno != ENOENT
                 ? vyre__fail(err, VYRE_EIO, NULL, "cannot remove '%s': %s", e->path,
                              strerror(errno))
                 : 0;
    else if (S_ISDIR(st.st_mode))
        rc = vyre__foreign_remove_group(at, last, bytes, err);
    else
        rc = vyre__foreign_remove_file(at, last, bytes, err);
    close(at);
    return rc;
}

/* Finishes the trash a stopped pruner left (vyre's own, any age). */
static void finish_trash(const vyre_inductor_cache *c, const vyre_inductor_prune_opts *o,
                         int64_t now, vyre_inductor_prune_result *res)
{
    for (size_t i = 0; i < c->n_entries; i++) {
        const vyre_inductor_entry *e = &c->entries[i];
        unsigned long long b = 0;
        if (e->trash && (o->dry_run || remove_entry(c, e, now, &b, NULL) == 0))
            res->trash++;
    }
}

typedef struct run {
    const vyre_inductor_cache *c;
    const vyre_inductor_prune_opts *o;
    vyre_inductor_prune_fn fn;
    void *user;
    vyre_inductor_prune_result *res;
    int64_t now;
    uint64_t total; /* bytes left in the cache */
    int first;      /* the first error's code */
} run;

static int wanted(const run *r, const vyre_inductor_entry *e)
{
    const vyre_inductor_prune_opts *o = r->o;
    return o->all || (o->max_age_ns > 0 && r->now - e->last_use_ns > o->max_age_ns) ||
           (o->max_bytes > 0 && r->total > o->max_bytes);
}

static void prune_one(run *r, const vyre_inductor_entry *e, vyre_error *err)
{
    if (r->now - e->mtime_ns < VYRE_INDUCTOR_MIN_AGE_NS) {
        r->res->young++;
        return;
    }
    if (!wanted(r, e))
        return;
    int rc = 0;
    if (!r->o->dry_run) {
        unsigned long long b = 0;
        vyre_error e2;
        vyre_error_clear(&e2);
        rc = remove_entry(r->c, e, r->now, &b, r->first ? NULL : &e2);
        if (rc == 1)
            r->res->young++;
        if (rc == 1 || rc == VYRE_ENOENT)
            return; /* left as it is, or another pruner won */
        if (rc && !r->first) {
            r->first = rc;
            if (err)
                *err = e2;
        }
    }
    if (rc)
        r->res->failed++;
    else {
        r->res->removed++;
        r->res->removed_bytes += e->bytes;
        r->res->removed_by_kind[e->kind]++;
        r->total = r->total > e->bytes ? r->total - e->bytes : 0;
    }
    if (r->fn)
        r->fn(e, rc == 0, r->user);
}

int vyre_inductor_prune(const vyre_inductor_cache *c, const vyre_inductor_prune_opts *o,
                        vyre_inductor_prune_fn fn, void *user, vyre_inductor_prune_result *res,
                        vyre_error *err)
{
    memset(res, 0, sizeof *res);
    if (c->fd < 0 || !c->writable)
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "TorchInductor cache '%s' was not opened to be changed", c->dir);
    run r = {c, o, fn, user, res, vyre__unix_ns(), c->bytes, 0};
    const vyre_inductor_entry **lru = malloc((c->n_entries ? c->n_entries : 1) * sizeof *lru);
    if (!lru)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory pruning '%s'", c->dir);
    size_t n = 0;
    uint64_t trash_bytes = 0;
    for (size_t i = 0; i < c->n_entries; i++) {
        if (prunable(&c->entries[i]))
            lru[n++] = &c->entries[i];
        if (c->entries[i].trash)
            trash_bytes += c->entries[i].bytes;
        res->foreign += c->entries[i].foreign != 0;
    }
    r.total -= trash_bytes < r.total ? trash_bytes : r.total;
    finish_trash(c, o, r.now, res);
    qsort(lru, n, sizeof *lru, cmp_lru);
    for (size_t i = 0; i < n; i++)
        prune_one(&r, lru[i], err);
    free(lru);
    res->kept = c->n_entries - res->removed - res->trash;
    res->kept_bytes = r.total;
    return r.first;
}
