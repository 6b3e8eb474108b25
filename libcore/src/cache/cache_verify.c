/*
 * cache_verify.c - checking and rebuilding the cache: vyre_cache_verify
 * (by phase: layout, tmp/ debris, quarantine, blob files checked in
 * parallel, rows cross-checked with the files), vyre_cache_reindex (the
 * index rebuilt from the blobs) and vyre_cache_clear.
 */
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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
#include "cache/disk_size.h"
#include "cache/index.h"
#include "cache/managed.h"
#include "vyre/nvtx.h"

/* ---- checking many blobs ---------------------------------------------- */

/* Lists and fully validates every blob, spread over a few threads: on
 * page-cached files verify and reindex are bound by open/read/checksum per
 * file, which scales with cores. The calling thread reads blobs/ (a few
 * hundred entries, the shards); each worker then takes the next entry,
 * lists it when it is a shard and checks its files right away, below the
 * shard's open directory, reading them into the worker's one buffer.
 * The lists are put back together in blobs/'s order, each shard's files
 * in readdir's: the list, and out[i] for files->v[i], are what one thread
 * listing and checking in turn would give, so what is reported, repaired
 * and in what order does not depend on the threads. */
typedef struct check_out {
    int rc;               /* vyre__blob_check_in's result; VYRE_EINVAL for a stray name */
    vyre__blob_checked b; /* what the check found (header, sizes, reject) */
} check_out;

/* One entry of blobs/, as readdir gave it, and where its files went. */
typedef struct check_group {
    struct dirent d;
    size_t worker, start, n; /* workers[worker]'s files [start, start + n) */
} check_group;

/* A worker's own: the files of the entries it took, one after another,
 * their checks, and the buffer the checks read files into. */
typedef struct check_worker {
    file_list files;
    check_out *outs; /* outs[i] for files.v[i]; room for files.cap */
    size_t outs_cap;
    vyre__blob_scratch scratch;
    int rc; /* VYRE_ENOMEM when a list could not grow */
} check_worker;

typedef struct check_job {
    const vyre_cache *c;
    DIR *top;
    check_group *groups;
    size_t n_groups;
    check_worker *workers;
    atomic_size_t next; /* the next group to take */
    atomic_size_t done; /* files checked */
} check_job;

#define CHECK_MAX_THREADS 8
#define CHECK_MIN_GROUPS  8 /* fewer shards than this: one thread */

static void check_one(DIR *dd, check_worker *w, const file_ent *e, check_out *o)
{
    if (!e->valid_name || !dd) { /* a valid name is one in a shard */
        memset(&o->b, 0, sizeof o->b);
        o->rc = VYRE_EINVAL;
        return;
    }
    /* The file is opened by its name below the shard's directory, opened
     * without following anything. The path argument names it in messages
     * only, and none is asked for (err is NULL): no path is built per blob. */
    o->rc = vyre__blob_check_in(dirfd(dd), e->name, e->name, &e->key, &w->scratch, &o->b, NULL);
}

/* Lists group g into w's files and checks them. */
static int check_group_run(check_job *j, size_t wi, size_t g)
{
    check_worker *w = &j->workers[wi];
    check_group *gr = &j->groups[g];
    DIR *dd = NULL;
    size_t start = w->files.n;
    int rc = vyre__cache_blobs_entry(j->top, &gr->d, &w->files, &dd);
    if (!rc && dd)
        rc = vyre__cache_blobs_shard(dd, gr->d.d_name, &w->files, 0);
    if (!rc && w->outs_cap < w->files.cap) {
        check_out *o = realloc(w->outs, w->files.cap * sizeof *o);
        if (o) {
            w->outs = o;
            w->outs_cap = w->files.cap;
        } else {
            rc = VYRE_ENOMEM;
        }
    }
    for (size_t k = start; !rc && k < w->files.n; k++)
        check_one(dd, w, &w->files.v[k], &w->outs[k]);
    if (dd)
        closedir(dd);
    gr->worker = wi;
    gr->start = start;
    gr->n = rc ? 0 : w->files.n - start;
    return rc;
}

static void check_some(check_job *j, size_t wi, vyre_cache_progress_fn progress, void *progress_ctx)
{
    check_worker *w = &j->workers[wi];
    for (;;) {
        size_t g = atomic_fetch_add(&j->next, 1);
        if (g >= j->n_groups || w->rc)
            break;
        w->rc = check_group_run(j, wi, g);
        size_t n = j->groups[g].n, d = atomic_fetch_add(&j->done, n) + n;
        if (progress && (d - n) / 256 != d / 256)
            progress(d, 0, progress_ctx); /* the total is known at the end */
    }
}

typedef struct check_thread_arg {
    check_job *j;
    size_t wi;
} check_thread_arg;

static void *check_thread(void *p)
{
    check_thread_arg *a = p;
    check_some(a->j, a->wi, NULL, NULL);
    return NULL;
}

/* blobs/'s entries, as readdir gives them, into j->groups. */
static int list_groups(check_job *j)
{
    size_t cap = 0;
    struct dirent *d;
    while ((d = readdir(j->top))) {
        if (d->d_name[0] == '.')
            continue;
        if (vyre__grow(&j->groups, &cap, j->n_groups + 1, sizeof *j->groups, 256))
            return VYRE_ENOMEM;
        check_group *g = &j->groups[j->n_groups++];
        memset(g, 0, sizeof *g);
        memcpy(&g->d, d, sizeof *d);
    }
    return VYRE_OK;
}

/* The workers' lists put back together, group by group. */
static int check_join(check_job *j, size_t nw, file_list *files, check_out **outs)
{
    size_t n = 0;
    for (size_t g = 0; g < j->n_groups; g++)
        n += j->groups[g].n;
    files->v = malloc((n ? n : 1) * sizeof *files->v);
    *outs = malloc((n ? n : 1) * sizeof **outs);
    if (!files->v || !*outs)
        return VYRE_ENOMEM;
    files->n = files->cap = n;
    size_t at = 0;
    for (size_t g = 0; g < j->n_groups; g++) {
        const check_group *gr = &j->groups[g];
        const check_worker *w = &j->workers[gr->worker];
        if (gr->n == 0)
            continue;
        memcpy(files->v + at, w->files.v + gr->start, gr->n * sizeof *files->v);
        memcpy(*outs + at, w->outs + gr->start, gr->n * sizeof **outs);
        at += gr->n;
    }
    for (size_t i = 0; i < nw; i++)
        if (j->workers[i].rc)
            return j->workers[i].rc;
    return VYRE_OK;
}

static size_t check_threads(size_t n_groups)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = n_groups < CHECK_MIN_GROUPS ? 1 : (size_t)(ncpu > 1 ? ncpu : 1);
    return want > CHECK_MAX_THREADS ? CHECK_MAX_THREADS : want;
}

/* Lists every blob and checks it (see above); files->v and *outs are the
 * caller's to free. */
static int scan_and_check(const vyre_cache *c, file_list *files, check_out **outs,
                          vyre_cache_progress_fn progress, void *progress_ctx, const char *what,
                          vyre_error *err)
{
    check_job j = {.c = c};
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    int rc = vyre__cache_blobs_open(c, &j.top, err);
    if (rc)
        return rc;
    check_worker workers[CHECK_MAX_THREADS];
    memset(workers, 0, sizeof workers);
    j.workers = workers;
    size_t nw = 0;
    if (j.top && (rc = list_groups(&j)) == VYRE_OK) {
        nw = check_threads(j.n_groups);
        pthread_t th[CHECK_MAX_THREADS];
        check_thread_arg args[CHECK_MAX_THREADS];
        size_t started = 0;
        for (size_t t = 1; t < nw; t++) { /* the calling thread is worker 0 */
            args[t] = (check_thread_arg){&j, t};
            if (pthread_create(&th[started], NULL, check_thread, &args[t]) == 0)
                started++;
        }
        check_some(&j, 0, progress, progress_ctx);
        for (size_t t = 0; t < started; t++)
            pthread_join(th[t], NULL);
    }
    if (rc == VYRE_OK)
        rc = check_join(&j, nw, files, outs);
    if (rc == VYRE_OK && progress)
        progress(files->n, files->n, progress_ctx);
    for (size_t i = 0; i < CHECK_MAX_THREADS; i++) {
        free(workers[i].files.v);
        free(workers[i].outs);
        vyre__blob_scratch_release(&workers[i].scratch);
    }
    free(j.groups);
    if (j.top)
        closedir(j.top);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory %s", what);
    return VYRE_OK;
}

/* ---- verify ------------------------------------------------------------ */

typedef struct checked {
    vyre_key key;
    vyre_blob_header h;
    uint64_t file_size, disk_size;
} checked;

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(vyre_key));
}

/* An entry vyre did not write (a name it never uses), found where it looks
 * (blobs/, tmp/, quarantine/): reported, never removed. */
static void left_entry(const char *path, vyre_cache_verify_result *res, vyre_cache_problem_fn fn,
                       void *ctx)
{
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    p.kind = VYRE_PROBLEM_STRAY;
    p.detail = "not written by vyre";
    p.action = "left";
    vyre__strlcpy(p.path, path, sizeof p.path);
    res->stray++;
    vyre__cache_report(fn, ctx, &p, res);
}

/* 1 when e, listed under blobs/, has one of vyre's names there: a shard
 * (blobs/<2 hex>) or a blob name in a shard. */
static int ent_ours(const file_ent *e)
{
    return e->dir[0] ? vyre__blob_is_blob_name(e->name) : vyre__cache_is_hex2(e->name);
}

/* What a row says of its blob, size on disk apart: st_blocks is an
 * accounting figure the filesystem may change under an unchanged file
 * (delayed allocation settling, XFS's speculative preallocation dropped,
 * a copy or a compression), so a different one is no problem: a repair
 * refreshes it quietly (verify_rows). */
static int row_matches(const vyre__index_row *r, const checked *k)
{
    return r->kind == k->h.kind && strcmp(r->arch, k->h.arch) == 0 &&
           strcmp(r->toolchain, k->h.toolchain) == 0 && r->stored_size == k->h.stored_size &&
           r->file_size == k->file_size && r->key_version == k->h.key_version &&
           r->n_kernels == k->h.n_kernels && strcmp(r->source, k->h.source) == 0;
}

/* row_from_header for a header read by a check (which keeps no kernel
 * table): the names are read from the blob (best effort). */
static void row_from_checked(vyre_cache *c, vyre__index_row *row, const vyre_blob_header *h,
                             uint64_t file_size, uint64_t disk_size)
{
    vyre__cache_row_from_header(row, h, file_size, disk_size);
    char *names = NULL;
    if (h->kernels_size && vyre__blob_kernels_at(c->rootfd, c->root, h, &names, NULL) == VYRE_OK &&
        names)
        vyre__cache_kernels_text(row->kernels, sizeof row->kernels, names, h->kernels_size);
    free(names);
}

/* Checks every blob file without holding the lock (it can take long), then
 * cross-checks index and files under the exclusive lock, where no put can
 * be half done. */
#define TMP_PREFIX   16
#define MAX_TMP_SEEN 4096
typedef struct tmp_seen_ent {
    char prefix[TMP_PREFIX];
    int debris;
} tmp_seen_ent;

/* -1: no temp file for key; 0: one in flight; 1: only debris. */
static int tmp_for_key(const tmp_seen_ent *v, size_t n, const vyre_key *key)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    int state = -1;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(v[i].prefix, hex, TMP_PREFIX) != 0)
            continue;
        if (!v[i].debris)
            return 0;
        state = 1;
    }
    return state;
}

/* What verify learns from tmp/ (scanned under the exclusive lock, where no
 * put is half done and no removal is in flight): the key prefixes of the
 * temp files, and the debris, removed only after the cross-check has
 * deleted the rows that go with it (a repair killed in between then leaves
 * debris, never a row without its file). */
typedef struct tmp_scan {
    tmp_seen_ent *seen;
    size_t n_seen;
    char (*debris)[NAME_MAX + 1];
    size_t n_debris, cap;
} tmp_scan;

/* "<root>/<dir><name>" (dir ends with '/') for messages. */
static void flat_path(const vyre_cache *c, const char *dir, const char *name, char *out,
                      size_t size)
{
    char rel[NAME_MAX + 16];
    size_t n = vyre__strlcpy(rel, dir, sizeof rel);
    if (n < sizeof rel)
        vyre__strlcpy(rel + n, name, sizeof rel - n);
    if (vyre__path_join(out, size, c->root, rel, NULL))
        out[0] = '\0';
}

static int debris_push(tmp_scan *t, const char *name)
{
    if (vyre__grow(&t->debris, &t->cap, t->n_debris + 1, sizeof *t->debris, 64))
        return VYRE_ENOMEM;
    vyre__strlcpy(t->debris[t->n_debris++], name, NAME_MAX + 1);
    return VYRE_OK;
}

/* tmp/: vyre's temp names are in flight or debris (older than an hour, or
 * a removal's victim: its remover holds the lock we hold, so it is dead);
 * other names are someone's, reported and left. */
static int verify_tmp_scan(vyre_cache *c, tmp_scan *t, vyre_cache_verify_result *res,
                           vyre_cache_problem_fn fn, void *ctx, vyre_error *err)
{
    DIR *td = vyre__cache_opendir(c->rootfd, "tmp");
    if (!td)
        return VYRE_OK;
    int rc = VYRE_OK;
    struct dirent *f;
    int64_t now = vyre__unix_ns();
    while (rc == VYRE_OK && (f = readdir(td))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(td), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!vyre__blob_is_tmp_name(f->d_name)) {
            char path[VYRE_CACHE_PATH_MAX];
            flat_path(c, "tmp/", f->d_name, path, sizeof path);
            left_entry(path, res, fn, ctx);
            continue;
        }
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        int debris = vyre__blob_is_doomed_name(f->d_name) || now - m > VYRE_CACHE_DEBRIS_AGE_NS;
        /* Temp names start with the key's first 16 hex digits: remember
         * them, a row without its file may belong to this write. */
        if (t->n_seen < MAX_TMP_SEEN) {
            memcpy(t->seen[t->n_seen].prefix, f->d_name, TMP_PREFIX);
            t->seen[t->n_seen].debris = debris;
            t->n_seen++;
        }
        if (!debris)
            res->tmp_in_flight++;
        else
            rc = debris_push(t, f->d_name);
    }
    closedir(td);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory verifying");
    return VYRE_OK;
}

/* Reports the debris found by verify_tmp_scan; repair removes it. */
static void verify_debris(vyre_cache *c, int repair, const tmp_scan *t,
                          vyre_cache_verify_result *res, vyre_cache_problem_fn fn, void *ctx)
{
    int tmpfd = t->n_debris && repair ? vyre__open_dir_at(c->rootfd, "tmp") : -1;
    for (size_t i = 0; i < t->n_debris; i++) {
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        p.kind = VYRE_PROBLEM_DEBRIS;
        flat_path(c, "tmp/", t->debris[i], p.path, sizeof p.path);
        res->debris++;
        if (tmpfd >= 0 && unlinkat(tmpfd, t->debris[i], 0) == 0) {
            p.repaired = 1;
            p.action = "removed";
        }
        vyre__cache_report(fn, ctx, &p, res);
    }
    if (tmpfd >= 0)
        close(tmpfd);
}

/* quarantine/: quarantined blobs are counted (kept for inspection, not a
 * problem); anything else there is someone's, reported and left. */
static void verify_quarantine(vyre_cache *c, vyre_cache_verify_result *res,
                              vyre_cache_problem_fn fn, void *ctx)
{
    DIR *d = vyre__cache_opendir(c->rootfd, "quarantine");
    if (!d)
        return;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        if (vyre__blob_is_quarantine_name(f->d_name)) {
            res->quarantined++;
            continue;
        }
        char path[VYRE_CACHE_PATH_MAX];
        flat_path(c, "quarantine/", f->d_name, path, sizeof path);
        left_entry(path, res, fn, ctx);
    }
    closedir(d);
}

/* The blob phase of verify as a kind of the managed-cache engine
 * (managed.h): an entry is a file listed under blobs/, its check the one
 * check_all made (in parallel, without the lock); repair quarantines a bad
 * or misplaced blob and unlinks a link, special file or hard link that has
 * one of vyre's names (never what it points to). A name vyre never writes
 * is someone's: reported, left. Intact blobs go into good[]. */
typedef struct blob_kind {
    vyre_cache *c;
    const file_list *files;
    const check_out *outs;
    checked *good; /* the phase's output: intact blobs, *n_good of them */
    size_t *n_good;
    vyre_cache_verify_result *res;
} blob_kind;

static size_t blob_count(const void *k)
{
    return ((const blob_kind *)k)->files->n;
}

static void blob_check(const void *kind, size_t i, vyre__managed_verdict *v)
{
    const blob_kind *k = kind;
    const file_ent *e = &k->files->v[i];
    const check_out *o = &k->outs[i];
    if (e->foreign)
        vyre__managed_found(v, NULL, "foreign", ent_ours(e), "%s", vyre__file_type_name(e->mode));
    else if (!e->valid_name)
        vyre__managed_found(v, NULL, "stray", vyre__blob_is_blob_name(e->name), "%s",
                            vyre__blob_is_blob_name(e->name) ? "" : "not written by vyre");
    if (e->foreign || !e->valid_name)
        return;
    k->res->blobs_checked++;
    if (o->rc == VYRE_OK) {
        k->good[(*k->n_good)++] = (checked){e->key, o->b.h, o->b.file_size, o->b.disk_size};
        k->res->bytes_checked += o->b.file_size;
        k->res->stale += VYRE_BLOB_KEY_STALE(o->b.h.key_version) != 0;
    } else if (o->b.hard_link) {
        vyre__managed_found(v, NULL, "foreign", 1, "hard link");
    } else if (o->rc != VYRE_ENOENT) { /* ENOENT: pruned meanwhile */
        vyre__managed_found(v, NULL, "bad-blob", 1, "%s", vyre_blob_reject_name(o->b.why));
    }
}

static int blob_repair(const void *kind, size_t i, vyre_error *err)
{
    (void)err;
    const blob_kind *k = kind;
    const file_ent *e = &k->files->v[i];
    const check_out *o = &k->outs[i];
    char rel[BLOB_REL_MAX + 80];
    vyre__cache_ent_rel(e, rel, sizeof rel);
    int rc = e->foreign || o->b.hard_link
                 ? vyre__blob_unlink_at(k->c->rootfd, rel)
                 : vyre__blob_quarantine_at(k->c->rootfd, k->c->root, rel,
                                            e->valid_name ? o->b.why : VYRE_REJECT_BAD_FIELD, NULL);
    if (!rc && !e->foreign && e->valid_name && k->c->idx)
        vyre__index_delete(k->c->idx, &e->key, NULL);
    return rc ? VYRE_EIO : 0;
}

/* Problem m of the blob phase, reported as verify's callers see them. */
static void blob_report(const blob_kind *k, const vyre__managed_problem *m,
                        vyre_cache_problem_fn fn, void *ctx)
{
    const file_ent *e = &k->files->v[m->entry];
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    vyre__cache_ent_path(k->c, e, p.path, sizeof p.path);
    p.kind = !strcmp(m->kind, "foreign") ? VYRE_PROBLEM_FOREIGN
             : !strcmp(m->kind, "stray") ? VYRE_PROBLEM_STRAY
                                         : VYRE_PROBLEM_BAD_BLOB;
    p.detail = *m->message && p.kind != VYRE_PROBLEM_BAD_BLOB ? m->message : NULL;
    p.reject = p.kind == VYRE_PROBLEM_BAD_BLOB ? k->outs[m->entry].b.why : VYRE_REJECT_NONE;
    p.repaired = m->quarantined > 0;
    if (!m->unusable)
        p.action = p.kind == VYRE_PROBLEM_STRAY ? "left" : "left (not a name vyre writes)";
    else if (p.repaired)
        p.action = p.kind == VYRE_PROBLEM_FOREIGN ? "removed" : "quarantined";
    k->res->foreign += p.kind == VYRE_PROBLEM_FOREIGN;
    k->res->stray += p.kind == VYRE_PROBLEM_STRAY;
    k->res->bad_blobs += p.kind == VYRE_PROBLEM_BAD_BLOB;
    vyre__cache_report(fn, ctx, &p, k->res);
}

/* The blob files as checked: good ones into good[], problems reported. */
static int verify_blobs(vyre_cache *c, int repair, const file_list *files, const check_out *outs,
                        checked *good, size_t *n_good, vyre_cache_verify_result *res,
                        vyre_cache_problem_fn fn, void *ctx, vyre_error *err)
{
    /* No guard, as in prune: a blob is written whole (temp file, rename). */
    static const vyre__managed_check_ops ops = {blob_count, blob_check, blob_repair, NULL};
    *n_good = 0;
    blob_kind k = {c, files, outs, good, n_good, res};
    vyre__managed_verdict v;
    int rc = vyre__managed_verify(&ops, &k, repair, c->root, &v, err);
    for (size_t i = 0; !rc && i < v.n; i++)
        blob_report(&k, &v.p[i], fn, ctx);
    vyre__managed_verdict_release(&v);
    return rc;
}

/* A row the cross-check found without a checked file. */
static void verify_row_without_file(vyre_cache *c, int repair, const vyre__index_row *r,
                                    const tmp_scan *t, vyre_cache_verify_result *res,
                                    vyre_cache_problem_fn fn, void *ctx)
{
    /* The file may have been put after the scan (then it exists now). */
    if (vyre__cache_blob_present(c, &r->key))
        return;
    /* A put records the row before it renames the blob into place, and a
     * removal moves the blob into tmp/ before it deletes the row: killed
     * in between, either leaves this row plus its temp file, part of that
     * operation's debris, not a problem of its own. It goes (first) when
     * the debris goes. */
    int tmp_state = tmp_for_key(t->seen, t->n_seen, &r->key);
    if (tmp_state >= 0) {
        if (tmp_state == 1 && repair)
            vyre__index_delete(c->idx, &r->key, NULL);
        return;
    }
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    vyre_blob_path(c->root, &r->key, p.path, sizeof p.path, NULL);
    p.kind = VYRE_PROBLEM_ROW_WITHOUT_FILE;
    res->rows_without_file++;
    if (repair && vyre__index_delete(c->idx, &r->key, NULL) == VYRE_OK) {
        p.repaired = 1;
        p.action = "row deleted";
    }
    vyre__cache_report(fn, ctx, &p, res);
}

/* A row whose blob now takes another number of blocks on disk. */
static void refresh_disk_size(vyre_cache *c, const vyre__index_row *r, uint64_t disk_size)
{
    vyre__index_row row = *r;
    row.disk_size = disk_size;
    (void)vyre__index_upsert(c->idx, &row, NULL);
}

/* Index rows against the checked files (both sorted by key). */
static void verify_rows(vyre_cache *c, int repair, row_list *rows, checked *good, size_t n_good,
                        const tmp_scan *t, vyre_cache_verify_result *res, vyre_cache_problem_fn fn,
                        void *ctx)
{
    if (n_good)
        qsort(good, n_good, sizeof *good, cmp_key);
    if (rows->n)
        qsort(rows->v, rows->n, sizeof *rows->v, cmp_key); /* key is the first member */
    size_t i = 0, j = 0;
    while (i < rows->n || j < n_good) {
        int d = i == rows->n ? 1 : j == n_good ? -1 : cmp_key(&rows->v[i].key, &good[j].key);
        if (d < 0) {
            verify_row_without_file(c, repair, &rows->v[i++], t, res, fn, ctx);
            continue;
        }
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        const checked *k = &good[j++];
        const vyre__index_row *r = d == 0 ? &rows->v[i++] : NULL;
        if (r && row_matches(r, k)) {
            if (repair && r->disk_size != k->disk_size)
                refresh_disk_size(c, r, k->disk_size);
            continue;
        }
        vyre_blob_path(c->root, &k->key, p.path, sizeof p.path, NULL);
        if (!r && !vyre__cache_blob_present(c, &k->key))
            continue; /* pruned since the scan: consistent */
        p.kind = r ? VYRE_PROBLEM_ROW_MISMATCH : VYRE_PROBLEM_FILE_WITHOUT_ROW;
        if (r)
            res->row_mismatches++;
        else
            res->files_without_row++;
        vyre__index_row row;
        row_from_checked(c, &row, &k->h, k->file_size, k->disk_size);
        if (r) {
            row.hits = r->hits;
            row.last_access_unix_ns = r->last_access_unix_ns;
        }
        if (repair && vyre__index_upsert(c->idx, &row, NULL) == VYRE_OK) {
            p.repaired = 1;
            p.action = r ? "row rewritten" : "indexed";
        }
        vyre__cache_report(fn, ctx, &p, res);
    }
}

int vyre_cache_verify(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                      vyre_cache_problem_fn fn, void *ctx, vyre_cache_progress_fn progress,
                      void *progress_ctx, vyre_error *err)
{
    if (!c || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_verify: NULL argument");
    memset(res, 0, sizeof *res);
    if (repair && c->readonly)
        return vyre__cache_readonly_error(c, err);
    if (c->missing)
        return VYRE_OK; /* first use: nothing to check */
    vyre_nvtx_push(VYRE_RANGE_CACHE_VERIFY);
    file_list files = {0};
    checked *good = NULL;
    check_out *outs = NULL;
    size_t n_good = 0;
    row_list rows = {0};
    int lock_fd = -1;
    tmp_scan t = {0};
    t.seen = malloc(MAX_TMP_SEEN * sizeof *t.seen);
    if (t.seen)
        vyre__cache_check_layout(c, repair, res, fn, ctx);
    int rc = t.seen ? scan_and_check(c, &files, &outs, progress, progress_ctx, "verifying", err)
                    : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying");
    if (rc)
        goto out;
    good = malloc((files.n ? files.n : 1) * sizeof *good);
    if (!good) {
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying");
        goto out;
    }
    if ((rc = verify_blobs(c, repair, &files, outs, good, &n_good, res, fn, ctx, err)))
        goto out;
    verify_quarantine(c, res, fn, ctx);

    /* Checked every blob without the lock (that can take long); tmp/ and
     * the cross-check under it, where no put is half done and no removal
     * in flight. */
    lock_fd = c->readonly ? -1 : vyre__cache_lock(c, LOCK_EX, err);
    if (!c->readonly && lock_fd < 0) {
        rc = lock_fd;
        goto out;
    }
    if ((rc = verify_tmp_scan(c, &t, res, fn, ctx, err)))
        goto out;
    if (c->idx) {
        if ((rc = vyre__cache_all_rows(c, &rows, err)))
            goto out;
        verify_rows(c, repair, &rows, good, n_good, &t, res, fn, ctx);
    }
    verify_debris(c, repair, &t, res, fn, ctx);
out:
    vyre__cache_unlock(lock_fd);
    free(t.seen);
    free(t.debris);
    free(outs);
    free(rows.v);
    free(good);
    free(files.v);
    vyre_nvtx_pop();
    return rc;
}

/* ---- reindex ------------------------------------------------------------ */

int vyre_cache_reindex(vyre_cache *c, vyre_cache_reindex_result *res,
                       vyre_cache_progress_fn progress, void *progress_ctx, vyre_error *err)
{
    if (!c || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_reindex: NULL argument");
    memset(res, 0, sizeof *res);
    if (c->readonly)
        return vyre__cache_readonly_error(c, err);
    int lock_fd = vyre__cache_lock(c, LOCK_EX, err);
    if (lock_fd < 0)
        return lock_fd;
    file_list files = {0};
    check_out *outs = NULL;
    vyre__index_row *rows = NULL;
    size_t n = 0;
    /* The index entries first: a symlink, special file or another user's
     * file there is removed (the entry, never a link's target); a
     * directory is refused. */
    int removable = 0;
    int rc = c->idx ? VYRE_OK : vyre__cache_index_check(c, &removable, err);
    if (rc && !removable)
        goto out;
    if (!c->idx)
        vyre__cache_index_set_aside(c, 0, res->index_kept, sizeof res->index_kept);
    rc = VYRE_OK;
    vyre__cache_check_layout(c, 1, NULL, NULL, NULL);
    rc = scan_and_check(c, &files, &outs, progress, progress_ctx, "reindexing", err);
    if (rc)
        goto out;
    rows = malloc((files.n ? files.n : 1) * sizeof *rows);
    if (!rows) {
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reindexing");
        goto out;
    }
    blob_kind k = {c, &files, outs, NULL, NULL, NULL};
    for (size_t i = 0; i < files.n; i++) {
        const file_ent *e = &files.v[i];
        const check_out *o = &outs[i];
        res->scanned++;
        if (o->rc == VYRE_OK) {
            row_from_checked(c, &rows[n++], &o->b.h, o->b.file_size, o->b.disk_size);
            res->bytes += o->b.disk_size;
        } else if ((ent_ours(e) || vyre__blob_is_blob_name(e->name)) &&
                   (e->foreign || o->b.hard_link || o->rc != VYRE_ENOENT) &&
                   blob_repair(&k, i, NULL) == 0) {
            /* As verify --repair: a name vyre never writes is someone's and
             * stays; of a link only the name goes; a bad blob is moved. */
            (*(e->foreign || o->b.hard_link ? &res->removed : &res->quarantined))++;
        }
    }
    /* A missing or unreadable index is replaced; a readable one keeps its
     * usage columns through replace_all. */
    if (c->idx) {
        uint64_t bytes = 0;
        if (vyre__index_totals(c->idx, &res->rows_before, &bytes, NULL) != VYRE_OK) {
            vyre__index_close(c->idx);
            c->idx = NULL;
        }
    }
    if (!c->idx) {
        vyre__index *idx = NULL;
        rc = vyre__cache_index_open(c, VYRE_INDEX_READWRITE, &idx, NULL);
        if (rc == VYRE_OK) {
            uint64_t bytes = 0;
            if (vyre__index_totals(idx, &res->rows_before, &bytes, NULL) != VYRE_OK) {
                vyre__index_close(idx);
                idx = NULL;
                rc = VYRE_ECORRUPT;
            }
        }
        if (rc != VYRE_OK) {
            vyre__cache_index_set_aside(c, 1, res->index_kept, sizeof res->index_kept);
            res->rows_before = 0;
            if ((rc = vyre__cache_index_open(c, VYRE_INDEX_READWRITE, &idx, err)))
                goto out;
        }
        c->idx = idx;
    }
    rc = vyre__index_replace_all(c->idx, rows, n, err);
    if (rc == VYRE_OK)
        res->indexed = n;
out:
    vyre__cache_unlock(lock_fd);
    free(outs);
    free(rows);
    free(files.v);
    return rc;
}

/* ---- clear ------------------------------------------------------------- */

typedef struct doomed_list {
    doomed *v;
    size_t n, cap;
} doomed_list;

static int doomed_push(doomed_list *l, uint8_t shard, const char *name)
{
    if (vyre__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 256))
        return VYRE_ENOMEM;
    doomed *d = &l->v[l->n++];
    memset(d, 0, sizeof *d);
    d->shard = shard;
    vyre__strlcpy(d->name, name, sizeof d->name);
    return VYRE_OK;
}

/* Lists clear's victims: every blob name in every shard (blobs/<2 hex>/).
 * Other names, there or in blobs/, are counted in *left and stay. */
static int clear_list(const vyre_cache *c, doomed_list *l, uint64_t *left, vyre_error *err)
{
    DIR *top = vyre__cache_opendir(c->rootfd, "blobs");
    if (!top)
        return VYRE_OK;
    int rc = VYRE_OK;
    struct dirent *d;
    while (rc == VYRE_OK && (d = readdir(top))) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        if (!vyre__cache_is_hex2(d->d_name)) {
            (*left)++;
            continue;
        }
        DIR *sd = vyre__cache_opendir(dirfd(top), d->d_name);
        if (!sd)
            continue; /* a link or file in a shard's place: clear_finish removes the entry */
        uint8_t shard = (uint8_t)strtoul(d->d_name, NULL, 16);
        struct dirent *f;
        while (rc == VYRE_OK && (f = readdir(sd))) {
            if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
                continue;
            if (vyre__blob_is_blob_name(f->d_name))
                rc = doomed_push(l, shard, f->d_name);
            else
                (*left)++;
        }
        closedir(sd);
    }
    closedir(top);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory clearing the cache");
    return VYRE_OK;
}

/* Removes vyre's names from the flat directory name of the root (tmp/:
 * temp names; quarantine/: quarantine names); counts the rest in *left. */
static void clear_flat(const vyre_cache *c, const char *name, int (*ours)(const char *),
                       uint64_t *left)
{
    DIR *d = vyre__cache_opendir(c->rootfd, name);
    if (!d)
        return;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!ours(f->d_name) || S_ISDIR(st.st_mode) || unlinkat(dirfd(d), f->d_name, 0) != 0)
            (*left)++;
    }
    closedir(d);
}

/* After the rows went: empty shards go (rmdir: one that still holds
 * someone's file stays), and so do links or files in a shard's place. */
static void clear_shards(const vyre_cache *c)
{
    DIR *top = vyre__cache_opendir(c->rootfd, "blobs");
    if (!top)
        return;
    struct dirent *d;
    while ((d = readdir(top))) {
        struct stat st;
        if (!vyre__cache_is_hex2(d->d_name) ||
            fstatat(dirfd(top), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        unlinkat(dirfd(top), d->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    }
    closedir(top);
}

int vyre_cache_clear(vyre_cache *c, vyre_cache_clear_result *res, vyre_error *err)
{
    vyre_cache_clear_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_clear: NULL argument");
    if (c->readonly)
        return vyre__cache_readonly_error(c, err);
    int fd = vyre__cache_lock(c, LOCK_EX, err);
    if (fd < 0)
        return fd;
    /* blobs/, tmp/ or quarantine/ that are links or files: the entry goes. */
    vyre__cache_check_layout(c, 1, NULL, NULL, NULL);
    doomed_list l = {0};
    shard_fds s;
    vyre__cache_shards_open(c, &s);
    int tmpfd = vyre__cache_removal_tmp(c, err);
    int rc = tmpfd < 0 ? tmpfd : clear_list(c, &l, &res->left, err);
    for (size_t i = 0; rc == VYRE_OK && i < l.n; i++) {
        int e = vyre__cache_doom_one(&s, tmpfd, &l.v[i]);
        if (e) {
            rc = vyre__fail(err, vyre__errno_code(e), "check the cache's permissions",
                            "cannot remove '%s/blobs/%02x/%s': %s", c->root, (unsigned)l.v[i].shard,
                            l.v[i].name, strerror(e));
            vyre__cache_undoom(&s, tmpfd, l.v, i);
        }
    }
    if (rc == VYRE_OK) {
        vyre__cache_step("commit");
        rc = c->idx ? vyre__index_replace_all(c->idx, NULL, 0, err) : VYRE_OK;
        if (rc) {
            vyre__cache_undoom(&s, tmpfd, l.v, l.n);
            vyre__cache_nothing_removed(err);
        }
    }
    if (rc == VYRE_OK) {
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i].moved && l.v[i].regular) {
                res->removed++;
                res->removed_bytes += l.v[i].size;
            }
        vyre__cache_doomed_unlink(tmpfd, l.v, l.n);
        clear_shards(c);
        clear_flat(c, "tmp", vyre__blob_is_tmp_name, &res->left);
        clear_flat(c, "quarantine", vyre__blob_is_quarantine_name, &res->left);
    }
    vyre__cache_shards_close(&s);
    if (tmpfd >= 0)
        close(tmpfd);
    free(l.v);
    vyre__cache_unlock(fd);
    return rc;
}
