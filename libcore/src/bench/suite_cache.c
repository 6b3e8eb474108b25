/*
 * suite_cache.c - the `cache` suite: host-side throughput of the
 * pipeline cache on a temporary cache of its own (needs no GPU):
 *
 *   cache.store  size=S   vyre_cache_put of 8 new blobs (durable: fsync,
 *                         rename, fsync of the directory): ns per blob
 *   cache.hit    size=S   vyre_cache_get of 64 stored blobs (open,
 *                         validate, checksum, hit tracking): ns per get
 *   cache.verify blobs=B  vyre_cache_verify of a cache of B blobs: ns per blob
 *   cache.prune  blobs=B  vyre_cache_prune of B blobs down to nothing (the
 *                         cache is refilled, untimed, before each sample)
 *
 * Sizes 4K, 64K and 1M; metric MB/s for store and hit, blobs/s for verify
 * and prune. The cache lives in a fresh directory under env->tmp_dir and is
 * removed at the end. Host points stop at 3 s at most whatever the rule
 * says: their noise is the filesystem's, not the code's.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "bench/bench_internal.h"
#include "base/internal.h"
#include "cache/config_internal.h"
#include "vyre/cache.h"

#define STORE_BATCH  8
#define HIT_BATCH    64
#define HIT_KEYS     32
#define VERIFY_BLOBS 256
#define PRUNE_BLOBS  64
#define HOST_TIMEOUT 3.0

static const size_t k_sizes[] = {4096, 65536, 1048576};

size_t vyre__bench_cache_points(const vyre_bench_env *env)
{
    (void)env;
    return 2 * VYRE_ARRAY_SIZE(k_sizes) + 2;
}

struct cache_bench {
    vyre_cache *c;
    char root[1024];
    unsigned seed;
    unsigned next;
    char *payload;
    size_t size;
    vyre_key keys[HIT_KEYS];
};

static void make_key(vyre_key *k, unsigned seed, unsigned i)
{
    for (int b = 0; b < VYRE_KEY_BYTES; b++)
        k->bytes[b] = (uint8_t)((seed * 131u + i * 7919u + (unsigned)b * 31u) >> (b % 3));
    memcpy(k->bytes, &i, sizeof i);
    memcpy(k->bytes + 4, &seed, sizeof seed);
}

static int put_one(struct cache_bench *cb, const vyre_key *k, vyre_error *err)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = *k;
    h.kind = VYRE_BLOB_CUBIN;
    vyre__strlcpy(h.arch, "sm_90", sizeof h.arch);
    vyre__strlcpy(h.toolchain, "bench", sizeof h.toolchain);
    h.compile_ns = 1000000;
    return vyre_cache_put(cb->c, &h, cb->payload, cb->size, err);
}

static int sample_store(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct cache_bench *cb = ctx;
    vyre_key k[STORE_BATCH];
    for (int i = 0; i < STORE_BATCH; i++)
        make_key(&k[i], cb->seed, cb->next++);
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < STORE_BATCH; i++) {
        int rc = put_one(cb, &k[i], err);
        if (rc)
            return rc;
    }
    double ns = (double)(vyre__mono_ns() - t0);
    *wall = ns;
    *value = ns / STORE_BATCH;
    return VYRE_OK;
}

static int sample_hit(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct cache_bench *cb = ctx;
    uint64_t t0 = vyre__mono_ns();
    for (int i = 0; i < HIT_BATCH; i++) {
        vyre_blob *b = NULL;
        int rc = vyre_cache_get(cb->c, &cb->keys[i % HIT_KEYS], &b, NULL, err);
        if (rc)
            return rc == VYRE_ENOENT ? vyre__fail(err, VYRE_ECORRUPT, NULL,
                                                  "a blob stored by the cache suite was missing")
                                     : rc;
        vyre_blob_free(b);
    }
    double ns = (double)(vyre__mono_ns() - t0);
    *wall = ns;
    *value = ns / HIT_BATCH;
    return VYRE_OK;
}

static int sample_verify(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct cache_bench *cb = ctx;
    vyre_cache_verify_result res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = vyre__mono_ns();
    int rc = vyre_cache_verify(cb->c, 0, &res, NULL, NULL, NULL, NULL, err);
    double ns = (double)(vyre__mono_ns() - t0);
    if (rc)
        return rc;
    *wall = ns;
    *value = ns / (double)(res.blobs_checked ? res.blobs_checked : 1);
    return VYRE_OK;
}

static int prepare_prune(void *ctx, vyre_error *err)
{
    struct cache_bench *cb = ctx;
    for (int i = 0; i < PRUNE_BLOBS; i++) {
        vyre_key k;
        make_key(&k, cb->seed, cb->next++);
        int rc = put_one(cb, &k, err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

static int sample_prune(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct cache_bench *cb = ctx;
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    po.max_bytes = 0;
    vyre_cache_prune_result res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = vyre__mono_ns();
    int rc = vyre_cache_prune(cb->c, &po, &res, NULL, NULL, err);
    double ns = (double)(vyre__mono_ns() - t0);
    if (rc)
        return rc;
    *wall = ns;
    *value = ns / (double)(res.removed ? res.removed : 1);
    return VYRE_OK;
}

static void finish_mbps(vyre_bench_point *pt, void *ctx)
{
    (void)ctx;
    vyre__strlcpy(pt->metric_name, "MB/s", sizeof pt->metric_name);
    pt->metric = pt->stats.median > 0 ? pt->bytes / pt->stats.median * 1e3 : 0;
}

static void finish_per_s(vyre_bench_point *pt, void *ctx)
{
    (void)ctx;
    vyre__strlcpy(pt->metric_name, "blobs/s", sizeof pt->metric_name);
    pt->metric = pt->stats.median > 0 ? 1e9 / pt->stats.median : 0;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[2048];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                rm_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static void point_init(vyre_bench_point *pt, const char *bench, const char *axes, double items,
                       double bytes)
{
    memset(pt, 0, sizeof *pt);
    vyre__strlcpy(pt->suite, "cache", sizeof pt->suite);
    vyre__strlcpy(pt->benchmark, bench, sizeof pt->benchmark);
    vyre__strlcpy(pt->axes, axes, sizeof pt->axes);
    pt->device = -1;
    pt->mode = VYRE_BENCH_HOST;
    pt->items = items;
    pt->bytes = bytes;
}

/* Opens a fresh cache in a new directory under base/name. */
static int open_fresh(struct cache_bench *cb, const char *base, const char *name, vyre_error *err)
{
    int n = snprintf(cb->root, sizeof cb->root, "%s/%s", base, name);
    if (n < 0 || (size_t)n >= sizeof cb->root)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter TMPDIR",
                          "temporary cache path '%s/%s' is too long", base, name);
    /* The built-in defaults, not the user's files or environment: a
     * temporary cache takes no remote store, size limit or umask from
     * them, and a typo there does not stop the benchmark (issue 22). */
    vyre_config cf;
    vyre__config_init(&cf);
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = &cf;
    return vyre_cache_open(cb->root, &oo, &cb->c, err);
}

static int run_sized(vyre_bench_env *env, const char *base, vyre_bench_measure_opts *o,
                     vyre_error *err)
{
    struct cache_bench cb;
    memset(&cb, 0, sizeof cb);
    int rc = open_fresh(&cb, base, "sized", err);
    size_t max = k_sizes[VYRE_ARRAY_SIZE(k_sizes) - 1];
    cb.payload = rc ? NULL : malloc(max);
    if (!rc && !cb.payload)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for the cache suite");
    for (size_t i = 0; !rc && i < max; i++)
        cb.payload[i] = (char)(i * 2654435761u >> 13);
    for (size_t s = 0; !rc && !env->interrupted && s < VYRE_ARRAY_SIZE(k_sizes); s++) {
        cb.size = k_sizes[s];
        cb.seed = (unsigned)s * 2 + 1;
        char axes[64];
        snprintf(axes, sizeof axes, "size=%zu", cb.size);
        vyre_bench_point pt;
        point_init(&pt, "cache.store", axes, STORE_BATCH, (double)cb.size);
        o->sample = sample_store;
        o->prepare = NULL;
        o->ctx = &cb;
        rc = vyre__bench_point_run(env, &pt, o, 0, NULL, finish_mbps, NULL, err);
        if (rc || env->interrupted)
            break;
        /* Hits on blobs of this size. */
        cb.seed = (unsigned)s * 2 + 2;
        for (unsigned k = 0; !rc && k < HIT_KEYS; k++) {
            make_key(&cb.keys[k], cb.seed, k);
            rc = put_one(&cb, &cb.keys[k], err);
        }
        if (rc)
            break;
        point_init(&pt, "cache.hit", axes, HIT_BATCH, (double)cb.size);
        o->sample = sample_hit;
        rc = vyre__bench_point_run(env, &pt, o, 0, NULL, finish_mbps, NULL, err);
    }
    free(cb.payload);
    vyre_cache_close(cb.c);
    return rc;
}

static int run_maintenance(vyre_bench_env *env, const char *base, vyre_bench_measure_opts *o,
                           vyre_error *err)
{
    struct cache_bench cb;
    memset(&cb, 0, sizeof cb);
    cb.size = 16384;
    cb.seed = 101;
    int rc = open_fresh(&cb, base, "verify", err);
    cb.payload = rc ? NULL : malloc(cb.size);
    if (!rc && !cb.payload)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for the cache suite");
    for (size_t i = 0; !rc && i < cb.size; i++)
        cb.payload[i] = (char)(i * 40503u >> 7);
    for (unsigned i = 0; !rc && i < VERIFY_BLOBS; i++) {
        vyre_key k;
        make_key(&k, cb.seed, i);
        rc = put_one(&cb, &k, err);
    }
    vyre_bench_point pt;
    char axes[64];
    if (!rc && !env->interrupted) {
        snprintf(axes, sizeof axes, "blobs=%d", VERIFY_BLOBS);
        point_init(&pt, "cache.verify", axes, VERIFY_BLOBS, (double)cb.size);
        o->sample = sample_verify;
        o->prepare = NULL;
        o->ctx = &cb;
        rc = vyre__bench_point_run(env, &pt, o, 0, NULL, finish_per_s, NULL, err);
    }
    vyre_cache_close(cb.c);
    cb.c = NULL;
    if (!rc && !env->interrupted)
        rc = open_fresh(&cb, base, "prune", err);
    if (!rc && !env->interrupted) {
        cb.seed = 202;
        snprintf(axes, sizeof axes, "blobs=%d", PRUNE_BLOBS);
        point_init(&pt, "cache.prune", axes, PRUNE_BLOBS, (double)cb.size);
        o->sample = sample_prune;
        o->prepare = prepare_prune;
        o->ctx = &cb;
        rc = vyre__bench_point_run(env, &pt, o, 0, NULL, finish_per_s, NULL, err);
    }
    free(cb.payload);
    vyre_cache_close(cb.c);
    return rc;
}

int vyre__bench_cache_run(vyre_bench_env *env, vyre_error *err)
{
    const char *tmp = env->tmp_dir && *env->tmp_dir ? env->tmp_dir : "/tmp";
    char base[1024];
    snprintf(base, sizeof base, "%s/vyre-suite-cache.XXXXXX", tmp);
    if (!mkdtemp(base))
        return vyre__fail(err, vyre__errno_code(errno), "set TMPDIR to a writable directory",
                          "cannot create a temporary cache under '%s': %s", tmp, strerror(errno));
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.warmup = 1;
    o.rule = env->rule;
    if (o.rule.timeout_s <= 0 || o.rule.timeout_s > HOST_TIMEOUT)
        o.rule.timeout_s = HOST_TIMEOUT;
    o.nvml_index = -1;
    o.stop = env->stop;
    int rc = run_sized(env, base, &o, err);
    if (!rc && !env->interrupted)
        rc = run_maintenance(env, base, &o, err);
    rm_tree(base);
    return rc;
}
