/*
 * seed.c - compiling a list of files into the cache ahead of time, by a
 * pool of threads (vyre_seed_run, see vyre/compile.h).
 *
 * Each file is read, its kind told, and compiled for each architecture
 * through vyre_compile_through_cache: the very path the run-time
 * caller takes, so a seeded blob is a hit there. Threads take files in
 * list order from an atomic counter; each file's outcomes are kept until
 * every earlier file is done, then handed to the caller's on_file under
 * the run's lock, so the caller sees the list's order whatever order the
 * compiles finish in. It lives in cuda/ because it compiles; it calls down
 * to cache/ and base/ only (the list it seeds comes from cache/seed_list.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cuda/compile_internal.h"
#include "vyre/compile.h"

/* One file's results, kept until every earlier file is handed over. */
typedef struct seed_item {
    vyre_source_kind kind;
    char target[VYRE_BLOB_ARCH_MAX]; /* a PTX file's own architecture */
    vyre_seed_outcome *o;            /* n_archs (at least 1) slots */
    vyre_blob **blobs;               /* the outcomes' blobs, owned here */
    char **logs;                     /* the outcomes' logs, owned here */
    size_t n;
    int done;
} seed_item;

typedef struct seed_run {
    vyre_cache *cache;
    const vyre_seed_list *files;
    const vyre_seed_opts *o;
    int has_remotes; /* a hit may have come from a remote store */
    seed_item *items;
    atomic_size_t next;
    pthread_mutex_t mu; /* handing over, the totals */
    size_t next_hand, n_done;
    vyre_seed_totals t;
} seed_run;

/* The next outcome slot of it, cleared. */
static vyre_seed_outcome *slot(seed_item *it)
{
    vyre_seed_outcome *oc = &it->o[it->n++];
    memset(oc, 0, sizeof *oc);
    vyre_error_clear(&oc->error);
    return oc;
}

static void fail_with(vyre_seed_outcome *oc, const char *arch, const vyre_error *err, int code)
{
    oc->status = VYRE_SEED_FAILED;
    oc->arch = arch;
    oc->error = *err;
    oc->error.code = code;
}

/* The whole compiler log of a failed compile (the cache path keeps only
 * the first failing line in its error, so compile once more for it). */
static char *compiler_log(const vyre_compile_request *req, const char *path)
{
    vyre_compile_result res;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_compile_cubin(req, path, &res, &err);
    char *log = res.log && *res.log ? strdup(res.log) : NULL;
    vyre_compile_result_release(&res);
    return log;
}

/* 1 when the cache holds a valid blob for req's key itself, no remote
 * asked (1 too when the key cannot be computed: the compile says why). */
static int held_locally(vyre_cache *c, const vyre_compile_request *req)
{
    vyre_key k;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_compile_key(req, &k, &e))
        return 1;
    vyre_blob *b = NULL;
    int rc = vyre__blob_load(vyre_cache_root(c), &k, &b, NULL, NULL);
    vyre_blob_free(b);
    return rc == VYRE_OK;
}

/* Reads path as the front ends did: too large and unreadable in their words. */
static char *read_source(const char *path, size_t *len, vyre_error *err)
{
    char *src = NULL;
    int rc = vyre__read_file(path, VYRE_BLOB_MAX_PAYLOAD, &src, len, err);
    if (rc == VYRE_ETOOBIG)
        vyre__fail(err, rc, "sources are limited to 512 MiB", "'%s' is too large to read", path);
    else if (rc && rc != VYRE_EINVAL && err && err->hint[0])
        vyre__strlcpy(err->hint, "check the file name", sizeof err->hint);
    return rc ? NULL : src;
}

/* The architectures to compile src for: the run's, or a PTX file's own
 * target (kept in it: outcomes point to it). Their count, or 0 after a failed outcome. */
static size_t archs_of(seed_run *r, seed_item *it, const char *src, size_t len, const char **archs)
{
    const vyre_seed_opts *o = r->o;
    vyre_error err;
    if (o->archs) {
        memcpy(archs, o->archs, o->n_archs * sizeof *archs);
        return o->n_archs;
    }
    if (it->kind == VYRE_SOURCE_PTX) {
        if (vyre_ptx_target_arch(src, len, it->target, sizeof it->target) == VYRE_OK) {
            archs[0] = it->target;
            return 1;
        }
        vyre__fail(&err, VYRE_EINVAL,
                   "give --arch sm_90 (or a list: sm_80,sm_90a) for PTX without one",
                   "the PTX names no real architecture in a '.target' directive");
    } else {
        vyre__fail(&err, VYRE_EINVAL,
                   "give --arch sm_90 (or a list: sm_80,sm_90a): only PTX names its own target",
                   "%s names no target architecture: seeding it needs --arch",
                   it->kind == VYRE_SOURCE_CUBIN ? "a cubin" : "CUDA C source");
    }
    fail_with(slot(it), NULL, &err, VYRE_EINVAL);
    return 0;
}

/* Compiles src for arch through the cache into one outcome of it. 1 when
 * no other architecture is worth trying (a kernel is missing). */
static int seed_arch(seed_run *r, seed_item *it, const char *path, const vyre_compile_request *req)
{
    const vyre_seed_opts *o = r->o;
    vyre_seed_outcome *oc = slot(it);
    vyre_blob *blob = NULL;
    int was_hit = 0;
    /* A hit that was not here before came from a remote store. */
    int local = !r->has_remotes || held_locally(r->cache, req);
    vyre_error err;
    vyre_error_clear(&err);
    int crc = vyre_compile_through_cache(r->cache, req, path, o->entries, o->n_entries, &blob,
                                         &was_hit, &err);
    if (crc) {
        vyre_blob_free(blob);
        fail_with(oc, req->arch, &err, crc);
        if (crc == VYRE_ECOMPILE)
            oc->log = it->logs[it->n - 1] = compiler_log(req, path);
        return crc == VYRE_ENOENT; /* the same for every arch: store nothing */
    }
    oc->status = !was_hit ? VYRE_SEED_SEEDED : local ? VYRE_SEED_PRESENT : VYRE_SEED_FETCHED;
    oc->arch = req->arch;
    oc->blob = it->blobs[it->n - 1] = blob;
    return 0;
}

/* Seeds the file at index i into its item. */
static void seed_file(seed_run *r, size_t i)
{
    seed_item *it = &r->items[i];
    const char *path = r->files->paths[i];
    size_t slots = r->o->n_archs ? r->o->n_archs : 1;
    it->kind = VYRE_SOURCE_CUDA_C;
    it->o = malloc(slots * sizeof *it->o);
    it->blobs = calloc(slots, sizeof *it->blobs);
    it->logs = calloc(slots, sizeof *it->logs);
    if (!it->o || !it->blobs || !it->logs)
        return; /* no outcome: counted as one failure when handed over */
    vyre_error err;
    vyre_error_clear(&err);
    size_t len = 0;
    char *src = read_source(path, &len, &err);
    if (!src) {
        fail_with(slot(it), NULL, &err, err.code);
        return;
    }
    vyre_source_kind_detect(path, src, len, &it->kind);
    const char *archs[VYRE_SEED_MAX_ARCHS];
    size_t n_archs = archs_of(r, it, src, len, archs);
    for (size_t a = 0; a < n_archs; a++) {
        vyre_compile_request req = {it->kind, src, len, archs[a], NULL, r->o->copts, r->o->n_copts};
        if (seed_arch(r, it, path, &req))
            break;
    }
    free(src);
}

static void item_release(seed_item *it)
{
    for (size_t k = 0; it->blobs && it->logs && k < it->n; k++) {
        vyre_blob_free(it->blobs[k]);
        free(it->logs[k]);
    }
    free(it->o);
    free(it->blobs);
    free(it->logs);
    it->o = NULL;
    it->blobs = NULL;
    it->logs = NULL;
}

/* Adds it's outcomes to the totals. */
static void count(vyre_seed_totals *t, const seed_item *it)
{
    if (!it->n)
        t->failed++;
    for (size_t k = 0; k < it->n; k++) {
        switch (it->o[k].status) {
        case VYRE_SEED_SEEDED:
            t->seeded++;
            t->kernels += it->o[k].blob->header.n_kernels;
            break;
        case VYRE_SEED_PRESENT:
            t->present++;
            break;
        case VYRE_SEED_FETCHED:
            t->fetched++;
            break;
        case VYRE_SEED_FAILED:
            t->failed++;
            break;
        }
    }
}

/* Hands over every done item whose predecessors are handed over. mu held. */
static void hand_over(seed_run *r)
{
    const vyre_seed_opts *o = r->o;
    while (r->next_hand < r->files->n && r->items[r->next_hand].done) {
        size_t i = r->next_hand++;
        seed_item *it = &r->items[i];
        count(&r->t, it);
        if (o->on_file) {
            vyre_seed_file f = {r->files->paths[i], i, it->kind, it->o, it->n};
            o->on_file(o->ctx, &f);
        }
        item_release(it);
    }
}

static void *worker(void *p)
{
    seed_run *r = p;
    for (;;) {
        size_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->files->n)
            return NULL;
        seed_file(r, i);
        pthread_mutex_lock(&r->mu);
        r->items[i].done = 1;
        r->n_done++;
        hand_over(r);
        if (r->o->on_progress)
            r->o->on_progress(r->o->ctx, r->n_done, r->files->n);
        pthread_mutex_unlock(&r->mu);
    }
}

/* Threads for the run: the asked number, or one per online CPU, never
 * more than files (at least one) or VYRE_SEED_MAX_JOBS. */
static unsigned jobs_for(unsigned asked, size_t files)
{
    long n = asked;
    if (n == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        n = n < 1 ? 1 : n;
    }
    if (n > VYRE_SEED_MAX_JOBS)
        n = VYRE_SEED_MAX_JOBS;
    if ((size_t)n > files)
        n = files ? (long)files : 1;
    return (unsigned)n;
}

static int check_opts(const vyre_cache *c, const vyre_seed_list *files, const vyre_seed_opts *o,
                      vyre_error *err)
{
    if (!c || !files || !o)
        return vyre__fail(err, VYRE_EINVAL, NULL, "seeding needs a cache, a list and options");
    if (o->n_archs > VYRE_SEED_MAX_ARCHS || (o->n_archs && !o->archs) || (!o->n_archs && o->archs))
        return vyre__fail(err, VYRE_EINVAL, "give from 1 to 16 architectures",
                          "%zu architectures to seed for", o->n_archs);
    for (size_t a = 0; a < o->n_archs; a++)
        if (!o->archs[a] || !vyre_compile_arch_valid(o->archs[a]))
            return vyre__fail(err, VYRE_EINVAL, "write architectures such as sm_80,sm_90,sm_90a",
                              "'%s' is not an architecture", o->archs[a] ? o->archs[a] : "");
    return 0;
}

int vyre_seed_run(vyre_cache *c, const vyre_seed_list *files, const vyre_seed_opts *o,
                  vyre_seed_totals *totals, vyre_error *err)
{
    if (totals)
        memset(totals, 0, sizeof *totals);
    int rc = check_opts(c, files, o, err);
    if (rc)
        return rc;
    seed_run r;
    memset(&r, 0, sizeof r);
    r.cache = c;
    r.files = files;
    r.o = o;
    r.has_remotes = vyre_cache_remote_count(c) > 0;
    r.items = calloc(files->n ? files->n : 1, sizeof *r.items);
    if (!r.items)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory seeding %zu files", files->n);
    atomic_init(&r.next, 0);
    pthread_mutex_init(&r.mu, NULL);
    r.t.jobs = jobs_for(o->jobs, files->n);
    pthread_t tids[VYRE_SEED_MAX_JOBS];
    unsigned started = 0;
    for (unsigned j = 1; j < r.t.jobs; j++) {
        if (pthread_create(&tids[started], NULL, worker, &r) != 0)
            break; /* fewer threads: the work is shared by those there are */
        started++;
    }
    worker(&r);
    for (unsigned j = 0; j < started; j++)
        pthread_join(tids[j], NULL);
    pthread_mutex_destroy(&r.mu);
    free(r.items);
    if (totals)
        *totals = r.t;
    return 0;
}
