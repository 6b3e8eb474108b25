/*
 * cache_prune.c - removing blobs: vyre_cache_prune (size, age, LRU),
 * quarantine expiry, and the automatic cleanup after a put. vyre's blobs
 * are a kind of the managed-cache engine (cache/managed.h), which plans
 * the removals; this file gives the index's rows, the reasons only vyre
 * has (arch, stale key format, stale toolchain) and their removal: under
 * the exclusive lock, the rows still as the scan read them go in one
 * commit per batch, then their blobs are unlinked where they lie. An index
 * row never outlives its file; a prune killed between the commit and the
 * last unlink leaves valid blobs without rows, which gets still serve and
 * verify --repair or reindex index again (and the next prune takes).
 */
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/index.h"
#include "cache/managed.h"
#include "cache/disk_size.h"
#include "vyre/nvtx.h"

/* Rows deleted per commit, and blobs unlinked, under one hold of the
 * exclusive lock: puts wait for it (a few tens of ms), gets do not. 1024
 * cost about 30% more CPU than 8192 on 20,000 blobs (more commits, each
 * writing most of the table's pages to the WAL again). */
#define PRUNE_BATCH 8192

/* ---- prune ------------------------------------------------------------- */

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

void vyre_cache_prune_opts_init(vyre_cache_prune_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->max_bytes = UINT64_MAX;
}

/* vyre's blobs as a kind of the managed-cache engine (cache/managed.h):
 * the index's rows, least recently used first. */
typedef struct blob_kind {
    vyre_cache *c;
    const vyre_cache_prune_opts *o;
    const row_list *rows;
    vyre_cache_prune_fn fn;
    void *ctx;
    int64_t now;
    size_t examined;
    shard_fds *shards; /* opened once (O_NOFOLLOW) for every batch's unlinks */
} blob_kind;

static size_t blob_count(void *kind)
{
    return ((blob_kind *)kind)->rows->n;
}

static int64_t row_used(const vyre__index_row *r)
{
    return r->last_access_unix_ns ? r->last_access_unix_ns : r->created_unix_ns;
}

static void blob_describe(void *kind, size_t i, vyre__managed_entry *out)
{
    const vyre__index_row *r = &((blob_kind *)kind)->rows->v[i];
    out->name = "";            /* ties keep the index's order */
    out->bytes = r->disk_size; /* on disk, as du counts */
    out->last_use_ns = row_used(r);
    out->flags = VYRE__MANAGED_PRUNABLE;
}

/* Every reason but size, in the order they are named: the engine asks
 * for each row once, least recently used first. */
static const char *blob_reason(void *kind, size_t i, const vyre__managed_opts *mo)
{
    (void)mo;
    blob_kind *k = kind;
    const vyre_cache_prune_opts *o = k->o;
    const vyre__index_row *r = &k->rows->v[i];
    if (o->progress && (++k->examined & 1023) == 0)
        o->progress(k->examined, k->rows->n, o->progress_ctx);
    if (o->arch && strcmp(r->arch, o->arch) == 0)
        return "arch";
    if (o->stale && VYRE_BLOB_KEY_STALE(r->key_version))
        return "stale";
    if (o->stale_toolchain && !in_list(r->toolchain, o->keep_toolchains, o->n_keep_toolchains))
        return "stale-toolchain";
    if ((o->max_age_ns > 0 && k->now - row_used(r) > o->max_age_ns) || o->all)
        return "age"; /* all: --max-age 0s, every blob is older than that */
    return NULL;
}

/* A blob is written whole (temp file, rename, row): never half-made, so
 * no guard of its own. */
static int64_t blob_touched(void *kind, size_t i)
{
    (void)kind;
    (void)i;
    return 0;
}

/* A blob whose row went but whose unlink failed: left without its row
 * (a repair indexes it again), and the prune stops with this. */
static int unlink_failed(const vyre_cache *c, const vyre_key *key, int e, vyre_error *err)
{
    char path[VYRE_CACHE_PATH_MAX];
    vyre_blob_path(c->root, key, path, sizeof path, NULL);
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                        vyre__fail(err, vyre__errno_code(e),
                                   "check the cache's permissions; a repair indexes the blob "
                                   "again",
                                   "cannot remove '%s': %s; its index row is gone", path,
                                   strerror(e)));
}

/* The batch's entries, ordered by key. */
typedef struct batch_order {
    const row_list *rows;
    const size_t *idx;
} batch_order;

static int cmp_by_key(const void *a, const void *b, void *arg)
{
    const batch_order *o = arg;
    const vyre_key *x = &o->rows->v[o->idx[*(const size_t *)a]].key;
    const vyre_key *y = &o->rows->v[o->idx[*(const size_t *)b]].key;
    return memcmp(x->bytes, y->bytes, VYRE_KEY_BYTES);
}

/* After the commit: what became of each row (out, in key order) into the
 * engine's state (in its order), the blobs of the deleted rows unlinked.
 * 0, or the first unlink that failed (err set). */
static int unlink_deleted(blob_kind *k, const vyre__index_row *const *rows, const size_t *ord,
                          const unsigned char *out, size_t n, unsigned char *state, vyre_error *err)
{
    int failed = VYRE_OK;
    for (size_t m = 0; m < n; m++) {
        unsigned char *s = &state[ord[m]];
        if (out[m] != VYRE__INDEX_ROW_DELETED) {
            *s = out[m] == VYRE__INDEX_ROW_CHANGED ? VYRE__MANAGED_YOUNG : VYRE__MANAGED_GONE;
            continue;
        }
        int e = vyre__cache_unlink_blob(k->shards, &rows[m]->key);
        if (e) {
            *s = VYRE__MANAGED_FAILED;
            if (!failed)
                failed = unlink_failed(k->c, &rows[m]->key, e, err);
        }
    }
    return failed;
}

/*
 * Rows out first, then files, under the exclusive lock (no put is half
 * done and none starts until the batch is over): the rows still as the
 * scan read them go in one commit, then their blobs are unlinked where
 * they lie, both in key order (the index's order, and one shard after
 * the other). A row a put rewrote or a hit moved since the scan stays,
 * and so does its blob (young); a row already gone is another removal's
 * (gone, its file left alone). A failed commit removes nothing.
 */
static int blob_remove_batch(void *kind, const size_t *idx, size_t n, unsigned char *state,
                             vyre_error *err)
{
    blob_kind *k = kind;
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    const vyre__index_row **rows = malloc((n ? n : 1) * sizeof *rows);
    unsigned char *out = malloc(n ? n : 1);
    int rc =
        ord && rows && out ? VYRE_OK : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory pruning");
    if (!rc) {
        batch_order bo = {k->rows, idx};
        for (size_t j = 0; j < n; j++)
            ord[j] = j;
        qsort_r(ord, n, sizeof *ord, cmp_by_key, &bo);
        for (size_t m = 0; m < n; m++)
            rows[m] = &k->rows->v[idx[ord[m]]];
    }
    vyre__cache_step("lock");
    int fd = rc ? -1 : vyre__cache_lock(k->c, LOCK_EX, err);
    rc = rc ? rc : fd < 0 ? fd : VYRE_OK;
    if (!rc) {
        vyre__cache_step("commit");
        rc = vyre__index_delete_unchanged(k->c->idx, rows, n, out, err);
        if (rc)
            vyre__cache_nothing_removed(err);
    }
    if (rc)
        memset(state, VYRE__MANAGED_FAILED, n);
    else
        rc = unlink_deleted(k, rows, ord, out, n, state, err);
    vyre__cache_unlock(fd);
    free(ord);
    free(rows);
    free(out);
    return rc;
}

/* Reported only once gone: a prune that fails (a locked index: nothing
 * removed) reports none of the batch. */
static int blob_report(void *kind, size_t i, const char *reason, int rc, const vyre_error *err)
{
    (void)err;
    blob_kind *k = kind;
    if (!rc && k->fn) {
        vyre_cache_entry e;
        vyre__cache_entry_from_row(&e, &k->rows->v[i]);
        k->fn(&e, reason, k->ctx);
    }
    return 0;
}

static const vyre__managed_ops blob_ops = {
    .count = blob_count,
    .describe = blob_describe,
    .own_reason = blob_reason,
    .touched = blob_touched,
    .report = blob_report,
    .lru_order = 1,
    .remove_batch = blob_remove_batch,
    .batch = PRUNE_BATCH,
};

static int prune_rows(vyre_cache *c, const vyre_cache_prune_opts *opts,
                      vyre_cache_prune_result *res, vyre_cache_prune_fn fn, void *ctx,
                      vyre_error *err)
{
    row_list rows;
    int rc = vyre__cache_all_rows(c, &rows, err);
    if (rc) {
        free(rows.v);
        return rc;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < rows.n; i++)
        total += rows.v[i].disk_size; /* on disk, as du counts */
    shard_fds shards;
    vyre__cache_shards_open(c, &shards);
    blob_kind k = {c, opts, &rows, fn, ctx, vyre__unix_ns(), 0, &shards};
    vyre__managed_opts mo = {.dry_run = opts->dry_run, .now_ns = k.now};
    mo.max_bytes = opts->max_bytes;
    vyre__managed_result m;
    rc = vyre__managed_prune(&blob_ops, &k, total, &mo, &m, err);
    if (rc == VYRE_ENOMEM && !m.state)
        vyre__fail(err, rc, NULL, "out of memory pruning");
    res->examined = rows.n;
    res->removed = m.removed;
    res->removed_bytes = m.removed_bytes;
    res->kept = rows.n - m.removed;
    res->kept_bytes = m.kept_bytes;
    res->target_reached = m.kept_bytes <= opts->max_bytes;
    if (opts->progress)
        opts->progress(rows.n, rows.n, opts->progress_ctx);
    vyre__managed_result_release(&m);
    vyre__cache_shards_close(&shards);
    free(rows.v);
    return rc;
}

static void prune_quarantine(vyre_cache *c, int64_t max_age_ns, int dry_run, uint64_t *files,
                             uint64_t *bytes);

int vyre_cache_prune(vyre_cache *c, const vyre_cache_prune_opts *opts, vyre_cache_prune_result *res,
                     vyre_cache_prune_fn fn, void *ctx, vyre_error *err)
{
    if (!c || !opts || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_prune: NULL argument");
    memset(res, 0, sizeof *res);
    /* The caller names the identities to keep (vyre_compile_toolchains
     * gives the current ones): the cache sits below the compiler and does
     * not ask it. */
    if (opts->stale_toolchain && (!opts->keep_toolchains || !opts->n_keep_toolchains))
        return vyre__fail(err, VYRE_EINVAL,
                          "pass the identities to keep (vyre_compile_toolchains gives the "
                          "current ones)",
                          "pruning stale toolchains needs the toolchains to keep");
    if (c->readonly && !opts->dry_run)
        return vyre__cache_readonly_error(c, err);
    if (opts->quarantine_max_age_ns > 0)
        prune_quarantine(c, opts->quarantine_max_age_ns, opts->dry_run, &res->quarantine_removed,
                         &res->quarantine_removed_bytes);
    if (opts->max_bytes == UINT64_MAX && opts->max_age_ns <= 0 && !opts->arch &&
        !opts->stale_toolchain && !opts->stale && !opts->all && opts->quarantine_max_age_ns > 0) {
        /* Only quarantine/ to age (an automatic cleanup under the limit):
         * no need to read every row. */
        uint64_t total = 0;
        if (c->idx)
            vyre__index_totals(c->idx, &res->kept, &total, NULL);
        res->examined = res->kept;
        res->kept_bytes = total;
        res->target_reached = 1;
        return VYRE_OK;
    }
    vyre_nvtx_push(VYRE_RANGE_CACHE_PRUNE);
    int rc = prune_rows(c, opts, res, fn, ctx, err);
    vyre_nvtx_pop();
    return rc;
}

/* Removes (or, dry run, counts) the files in quarantine/ whose time (the
 * time they were quarantined) is older than max_age_ns. Only quarantine
 * names (blob_internal.h) are touched: anything else there is someone's,
 * and verify reports it. Entries that are not regular files are unlinked
 * themselves, never followed. */
static void prune_quarantine(vyre_cache *c, int64_t max_age_ns, int dry_run, uint64_t *files,
                             uint64_t *bytes)
{
    DIR *d = vyre__cache_opendir(c->rootfd, "quarantine");
    if (!d)
        return;
    int64_t now = vyre__unix_ns();
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (!vyre__blob_is_quarantine_name(f->d_name) ||
            fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (now - m <= max_age_ns)
            continue;
        if (dry_run || unlinkat(dirfd(d), f->d_name, 0) == 0) {
            (*files)++;
            *bytes += vyre__disk_bytes(&st);
        }
    }
    closedir(d);
}

/* ---- automatic cleanup ------------------------------------------------- */

/* The cleanup lock, opened (created when missing) below the root without
 * following a link; -1 when it cannot be. */
static int cleanup_lock_open(const vyre_cache *c)
{
    int mode = c->umask >= 0 ? 0666 : 0600;
    int fd = openat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK,
                    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) /* another user's, in a group cache */
        fd = openat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    /* The cache's umask, not the process's: a lock made 0644 in a group
     * cache keeps the other members from updating its time, and their
     * puts then clean up every time. */
    if (fd >= 0)
        (void)vyre__fchmod_umask(fd, c->umask); /* only a lock of ours */
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One pass of a cleanup, under the cleanup lock (fd). */
static int cleanup_pass(vyre_cache *c, int force, vyre__cache_cleanup_result *res, vyre_error *err)
{
    const vyre_config *cf = &c->config;
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    /* Decided again under the lock: the cleanup that held it may just
     * have brought the cache down. */
    uint64_t total = 0;
    int rc = vyre__index_total_bytes(c->idx, &total, err);
    if (rc)
        return rc;
    if (cf->max_size && (force || total > cf->max_size))
        po.max_bytes = (uint64_t)((double)cf->max_size * VYRE_CACHE_CLEANUP_RATIO);
    po.max_age_ns = cf->max_age_ns;
    po.quarantine_max_age_ns = cf->quarantine_max_age_ns;
    vyre_cache_prune_result pr;
    memset(&pr, 0, sizeof pr);
    if (po.max_bytes != UINT64_MAX || po.max_age_ns > 0 || po.quarantine_max_age_ns > 0)
        rc = vyre_cache_prune(c, &po, &pr, NULL, NULL, err);
    res->removed += pr.removed;
    res->removed_bytes += pr.removed_bytes;
    res->quarantine_removed += pr.quarantine_removed;
    res->quarantine_removed_bytes += pr.quarantine_removed_bytes;
    return rc;
}

#define CLEANUP_MAX_PASSES 8

int vyre__cache_cleanup(vyre_cache *c, int force, vyre__cache_cleanup_result *res, vyre_error *err)
{
    vyre__cache_cleanup_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__cache_cleanup: NULL argument");
    if (c->readonly)
        return vyre__cache_readonly_error(c, err);
    if (!c->idx)
        return vyre__cache_no_index(c, err);
    int rc = VYRE_OK;
    for (int pass = 0; pass < CLEANUP_MAX_PASSES; pass++) {
        int fd = cleanup_lock_open(c);
        if (fd < 0) {
            int e = errno;
            return vyre__fail(err, vyre__errno_code(e), "check the cache directory's permissions",
                              "cannot open '%s/%s': %s", c->root, VYRE_CACHE_CLEANUP_LOCK,
                              strerror(e));
        }
        /* One cleanup at a time across processes; a put never waits for
         * one: when the lock is held, the holder does the work. */
        int locked = 0;
        while (!locked && flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                goto done; /* another process is at it */
            return vyre__fail(err, vyre__errno_code(e), NULL, "cannot lock '%s/%s': %s", c->root,
                              VYRE_CACHE_CLEANUP_LOCK, strerror(e));
        }
        res->ran = 1;
        rc = cleanup_pass(c, force && pass == 0, res, err);
        futimens(fd, NULL); /* the time of the last cleanup (age-only ones wait an hour) */
        close(fd);          /* releases the flock */
        if (rc)
            break;
        /* A put that finished while this pass ran may have found the lock
         * held and left the cleanup to us: look again after releasing it,
         * so that its bytes are counted by us or by its own next try. */
        uint64_t total = 0;
        if (!c->config.max_size || vyre__index_total_bytes(c->idx, &total, NULL) != VYRE_OK ||
            total <= c->config.max_size)
            break;
    }
done:
    if (vyre__index_total_bytes(c->idx, &res->bytes_after, NULL) != VYRE_OK)
        res->bytes_after = 0;
    return rc;
}

/* After a put: a cleanup when the cache is over max_size, or when max_age
 * or quarantine_max_age is set and the last cleanup is over an hour old.
 * One point lookup and one fstatat on the put path; failures are ignored
 * (the put is done). */
void vyre__cache_maybe_cleanup(vyre_cache *c)
{
    const vyre_config *cf = &c->config;
    if (!c->idx || c->readonly)
        return;
    int due = 0;
    uint64_t total = 0;
    if (cf->max_size && vyre__index_total_bytes(c->idx, &total, NULL) == VYRE_OK &&
        total > cf->max_size)
        due = 1;
    if (!due && (cf->max_age_ns > 0 || cf->quarantine_max_age_ns > 0)) {
        struct stat st;
        if (fstatat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            /* First put: the interval starts now. */
            int fd = errno == ENOENT ? cleanup_lock_open(c) : -1;
            if (fd >= 0)
                close(fd);
        } else {
            int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            due = vyre__unix_ns() - m > VYRE_CACHE_CLEANUP_INTERVAL_NS;
        }
    }
    if (due)
        vyre__cache_cleanup(c, 0, NULL, NULL);
}

int vyre_cache_zero_stats(vyre_cache *c, vyre_error *err)
{
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_zero_stats: NULL argument");
    if (c->missing)
        return VYRE_OK;
    if (c->readonly)
        return vyre__cache_readonly_error(c, err);
    if (!c->idx)
        return vyre__cache_no_index(c, err);
    atomic_store(&c->hits, 0);
    atomic_store(&c->misses, 0);
    atomic_store(&c->rejects, 0);
    return vyre__index_zero_stats(c->idx, vyre__unix_ns(), err);
}
