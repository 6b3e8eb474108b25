/*
 * pipeline.c - compiling pipelines through the caches, and dispatching them.
 *
 * Owns the vyre_ctx (device, primary context, stream, module cache, memory
 * pools), the compile path (module cache -> disk cache -> compiler), the
 * dispatch paths (bare launch, resident, host buffers, CUDA graphs) and
 * their counters and NVTX ranges. See vyre/pipeline.h for the contract.
 *
 * Invariants worth knowing before changing anything here:
 *  - The launch path (launch_on and its callers vyre_pipeline_launch,
 *    vyre_pipeline_dispatch_resident, vyre_graph_launch) takes no lock,
 *    allocates nothing and makes no context current: an NVTX push/pop,
 *    relaxed counter adds and the driver call. perf/perf_dispatch.c holds
 *    it to 1.05x of a bare cuLaunchKernel.
 *  - Keys come only from vyre_compile_key() with the architecture the cubin
 *    is for, so what `vyre-cachectl seed` stored is what we look up.
 *  - Nothing from the disk reaches the driver unvalidated: vyre_cache_get
 *    checks the blob (and quarantines a bad one, which is then a miss).
 *    A validated cubin the driver still refuses is recompiled and replaced.
 *  - Module entries are shared by pipeline handles and counted under
 *    ctx->mu; an entry in the module map holds one reference of its own, so
 *    it lives until vyre_ctx_close.
 */
#include "vyre/pipeline.h"
#include "vyre/telemetry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "cuda/compile_internal.h"
#include "cuda/cuda_internal.h"
#include "base/internal.h"
#include "cuda/pool.h"
#include "trace/counters_internal.h"
#include "vyre/compile.h"
#include "vyre/counters.h"
#include "vyre/cuda.h"
#include "vyre/nvtx.h"

#define POOL_DEVICE_CAP ((size_t)512 << 20) /* transient device memory kept for reuse */
#define POOL_PINNED_CAP ((size_t)256 << 20) /* pinned staging kept for reuse */
#define MAP_MIN_CAP     16

#define HINT_DRIVER_OLD "update the NVIDIA driver to one that supports CUDA 13"
#define HINT_ENTRY                                                                                 \
    "declare the kernel extern \"C\" (or pass its mangled name) and check the entry name"

/* What dispatch needs of the driver table (optional entries there). */
#define PIPELINE_NEEDED(X)                                                                         \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuLaunchKernel)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemAllocHost)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemcpyHtoDAsync)                                                                           \
    X(cuMemcpyDtoHAsync)                                                                           \
    X(cuMemsetD8Async)                                                                             \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuGraphInstantiateWithFlags)                                                                 \
    X(cuGraphLaunch)                                                                               \
    X(cuGraphExecDestroy)                                                                          \
    X(cuGraphDestroy)

/* A loaded module and one of its entry points. The cache key names the
 * module (key v2 has no entry); the map is keyed by module and entry. */
typedef struct module_entry {
    vyre_key key;       /* the map's: the cache key and the entry, hashed */
    vyre_key cache_key; /* the pipeline cache's (p->info.key) */
    CUmodule mod;
    CUfunction fn;
    unsigned refs; /* handles, plus one while in the map; under ctx->mu */
    int in_map;
} module_entry;

struct vyre_ctx {
    const vyre__cuda_fns *cu;
    int device;
    CUdevice dev;
    CUcontext cuctx; /* the primary context, retained while non-NULL */
    CUstream stream;
    vyre_cache *cache;
    int own_cache;
    char arch[VYRE_BLOB_ARCH_MAX];
    char name[256];
    pthread_mutex_t mu; /* the module map and the list of handles */
    int mu_ready;
    module_entry **map; /* open addressing, linear probing; NULL slots empty */
    size_t map_cap, map_count;
    vyre_pipeline *pipelines; /* every open handle */
    vyre__pool dev_pool, pin_pool;
    int pools_ready;
};

struct vyre_pipeline {
    /* The launch path reads only these four. */
    __typeof__(&cuLaunchKernel) launch;
    CUfunction fn;
    CUstream stream;
    vyre_ctx *ctx;
    module_entry *m;
    vyre_pipeline *prev, *next;
    vyre_pipeline_info info;
};

struct vyre_buffer {
    vyre_ctx *ctx;
    CUdeviceptr dptr;
    size_t size;
};

struct vyre_batch {
    vyre_ctx *ctx;
    CUstream stream;
    size_t kernels;
    int failed;
};

struct vyre_graph {
    __typeof__(&cuGraphLaunch) launch;
    CUgraphExec exec;
    CUstream stream;
    size_t kernels;
    vyre_ctx *ctx;
};

/*
 * Every dispatch path (vyre_pipeline_launch, resident and host dispatch,
 * graph replay) passes through here after a successful launch. It runs on
 * the launch path: the common case is two atomic loads, one TSC read (see
 * clock.h) and a compare; a publish (a copy of the counters under the page's
 * seqlock) happens at most once per VYRE_TELEMETRY_PUBLISH_INTERVAL_NS.
 */
static inline void telemetry_point(void)
{
    vyre_telemetry *t = vyre_telemetry_global();
    if (!t)
        return;
    /* The dispatch range was just popped on this thread: reuse its clock
     * reading rather than taking another. A dispatch left untimed by range
     * sampling (trace/nvtx.c) skips the check: at that rate the next timed
     * one comes within 16 dispatches, far inside the publish interval. */
    uint64_t ticks = vyre__nvtx_last_pop_ticks();
    if (!ticks && vyre__nvtx_last_pop_sampled_out())
        return;
    vyre_telemetry_maybe_publish(t, ticks ? vyre__ticks_to_mono_ns(ticks) : vyre__now_ns_fast());
}

static int make_current(vyre_ctx *ctx, vyre_error *err)
{
    return vyre__cuda_check(ctx->cu->cuCtxSetCurrent(ctx->cuctx), "cuCtxSetCurrent", err);
}

/* ---- context ------------------------------------------------------------ */

static int check_driver_table(const vyre__cuda_fns *cu, vyre_error *err)
{
#define PIPELINE_CHECK(name)                                                                       \
    if (!cu->name)                                                                                 \
        return vyre__fail(err, VYRE_ENODRIVER, HINT_DRIVER_OLD,                                    \
                          "the CUDA driver has no '%s', which dispatch needs", #name);
    PIPELINE_NEEDED(PIPELINE_CHECK)
#undef PIPELINE_CHECK
    return VYRE_OK;
}

int vyre_ctx_open(int device, vyre_cache *cache, vyre_ctx **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_open: NULL argument");
    *out = NULL;
    int rc = vyre_cuda_init(err);
    if (rc)
        return rc;
    const vyre__cuda_fns *cu = vyre__cuda();
    if (!cu)
        return vyre__fail(err, VYRE_ENODRIVER, HINT_DRIVER_OLD, "the CUDA driver is not loaded");
    rc = check_driver_table(cu, err);
    if (rc)
        return rc;
    vyre_device_info info;
    rc = vyre_cuda_device_info(device, &info, err);
    if (rc)
        return rc;

    vyre_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a vyre context");
    ctx->cu = cu;
    ctx->device = device;
    vyre__strlcpy(ctx->arch, info.arch, sizeof ctx->arch);
    vyre__strlcpy(ctx->name, info.name, sizeof ctx->name);
    if (pthread_mutex_init(&ctx->mu, NULL) != 0) {
        free(ctx);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create the context's lock");
    }
    ctx->mu_ready = 1;

    rc = vyre__cuda_check(cu->cuDeviceGet(&ctx->dev, device), "cuDeviceGet", err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuDevicePrimaryCtxRetain(&ctx->cuctx, ctx->dev),
                              "cuDevicePrimaryCtxRetain", err);
    if (rc)
        ctx->cuctx = NULL;
    if (!rc)
        rc = make_current(ctx, err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate", err);
    if (rc)
        ctx->stream = NULL;
    if (!rc) {
        rc = vyre__pool_init(&ctx->dev_pool, VYRE__POOL_DEVICE, cu, POOL_DEVICE_CAP, err);
        if (!rc) {
            rc = vyre__pool_init(&ctx->pin_pool, VYRE__POOL_PINNED, cu, POOL_PINNED_CAP, err);
            if (rc)
                vyre__pool_release(&ctx->dev_pool);
            else
                ctx->pools_ready = 1;
        }
    }
    if (!rc) {
        if (cache) {
            ctx->cache = cache;
        } else {
            rc = vyre_cache_open(NULL, 0, &ctx->cache, err);
            ctx->own_cache = rc == VYRE_OK;
        }
    }
    if (rc) {
        vyre_ctx_close(ctx);
        return rc;
    }
    *out = ctx;
    /* The process shows up in vyre-top from its first context on. */
    vyre_telemetry_publish(vyre_telemetry_global());
    return VYRE_OK;
}

static void entry_unload(vyre_ctx *ctx, module_entry *m)
{
    if (m->mod)
        (void)ctx->cu->cuModuleUnload(m->mod);
    free(m);
}

void vyre_ctx_close(vyre_ctx *ctx)
{
    if (!ctx)
        return;
    const vyre__cuda_fns *cu = ctx->cu;
    if (ctx->cuctx) {
        (void)cu->cuCtxSetCurrent(ctx->cuctx);
        if (ctx->stream)
            (void)cu->cuStreamSynchronize(ctx->stream);
        for (vyre_pipeline *p = ctx->pipelines, *next; p; p = next) {
            next = p->next;
            vyre_pipeline_free(p);
        }
        for (size_t i = 0; i < ctx->map_cap; i++)
            if (ctx->map[i])
                entry_unload(ctx, ctx->map[i]);
        if (ctx->pools_ready) {
            vyre__pool_release(&ctx->dev_pool);
            vyre__pool_release(&ctx->pin_pool);
        }
        if (ctx->stream)
            (void)cu->cuStreamDestroy(ctx->stream);
        /* Leave no dangling current context behind: releasing the last
         * reference destroys the primary context. */
        (void)cu->cuCtxSetCurrent(NULL);
        (void)cu->cuDevicePrimaryCtxRelease(ctx->dev);
    }
    free(ctx->map);
    if (ctx->own_cache)
        vyre_cache_close(ctx->cache);
    if (ctx->mu_ready)
        pthread_mutex_destroy(&ctx->mu);
    free(ctx);
}

const char *vyre_ctx_arch(const vyre_ctx *ctx)
{
    return ctx ? ctx->arch : "";
}

const char *vyre_ctx_device_name(const vyre_ctx *ctx)
{
    return ctx ? ctx->name : "";
}

int vyre_ctx_device(const vyre_ctx *ctx)
{
    return ctx ? ctx->device : -1;
}

vyre_cache *vyre_ctx_cache(vyre_ctx *ctx)
{
    return ctx ? ctx->cache : NULL;
}

void *vyre_ctx_cu_context(const vyre_ctx *ctx)
{
    return ctx ? (void *)ctx->cuctx : NULL;
}

void *vyre_ctx_cu_stream(const vyre_ctx *ctx)
{
    return ctx ? (void *)ctx->stream : NULL;
}

int vyre_ctx_make_current(vyre_ctx *ctx, vyre_error *err)
{
    if (!ctx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_make_current: NULL context");
    return make_current(ctx, err);
}

int vyre_ctx_synchronize(vyre_ctx *ctx, void *stream, vyre_error *err)
{
    if (!ctx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_ctx_synchronize: NULL context");
    int rc = make_current(ctx, err);
    if (rc)
        return rc;
    CUresult r = ctx->cu->cuStreamSynchronize(stream ? (CUstream)stream : ctx->stream);
    vyre_counter_add(VYRE_CTR_SYNCS, 1);
    return vyre__cuda_check(r, "cuStreamSynchronize", err);
}

static void pool_stats(vyre__pool *p, vyre_pool_stats *st)
{
    if (st)
        vyre__pool_stats(p, &st->allocs, &st->reuses, &st->cached_bytes, &st->cached_blocks);
}

void vyre_ctx_pool_stats(vyre_ctx *ctx, vyre_pool_stats *device, vyre_pool_stats *pinned)
{
    if (device)
        memset(device, 0, sizeof *device);
    if (pinned)
        memset(pinned, 0, sizeof *pinned);
    if (!ctx || !ctx->pools_ready)
        return;
    pool_stats(&ctx->dev_pool, device);
    pool_stats(&ctx->pin_pool, pinned);
}

void vyre_ctx_trim_pools(vyre_ctx *ctx)
{
    if (!ctx || !ctx->pools_ready || make_current(ctx, NULL))
        return;
    vyre__pool_trim(&ctx->dev_pool);
    vyre__pool_trim(&ctx->pin_pool);
}

/* ---- the module map ------------------------------------------------------ */

/* The map's key of (module, entry): one module loaded once per entry asked
 * for, each with its own function handle. */
static int module_map_key(const vyre_key *cache_key, const char *entry, vyre_key *out,
                          vyre_error *err)
{
    vyre_key_input in = {
        .backend = "vyre.module-map",
        .entry = entry,
        .source_kind = VYRE_SOURCE_CUBIN,
        .source = cache_key->bytes,
        .source_len = VYRE_KEY_BYTES,
    };
    return vyre_key_compute(&in, out, err);
}

static size_t key_hash(const vyre_key *k)
{
    uint64_t h;
    memcpy(&h, k->bytes, sizeof h); /* a SHA-256 prefix is already uniform */
    return (size_t)h;
}

/* Called with ctx->mu held. */
static module_entry *map_find(const vyre_ctx *ctx, const vyre_key *k)
{
    if (!ctx->map_cap)
        return NULL;
    size_t mask = ctx->map_cap - 1;
    for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
        module_entry *e = ctx->map[i];
        if (!e)
            return NULL;
        if (memcmp(e->key.bytes, k->bytes, VYRE_KEY_BYTES) == 0)
            return e;
    }
}

static void map_place(module_entry **map, size_t cap, module_entry *e)
{
    size_t mask = cap - 1;
    size_t i = key_hash(&e->key) & mask;
    while (map[i])
        i = (i + 1) & mask;
    map[i] = e;
}

/* Called with ctx->mu held. Keeps the load factor at or under 1/2. */
static int map_insert(vyre_ctx *ctx, module_entry *e, vyre_error *err)
{
    if ((ctx->map_count + 1) * 2 > ctx->map_cap) {
        size_t cap = ctx->map_cap ? ctx->map_cap * 2 : MAP_MIN_CAP;
        module_entry **map = calloc(cap, sizeof *map);
        if (!map)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot grow the module cache to %zu slots",
                              cap);
        for (size_t i = 0; i < ctx->map_cap; i++)
            if (ctx->map[i])
                map_place(map, cap, ctx->map[i]);
        free(ctx->map);
        ctx->map = map;
        ctx->map_cap = cap;
    }
    map_place(ctx->map, ctx->map_cap, e);
    ctx->map_count++;
    return VYRE_OK;
}

/* ---- compiling ---------------------------------------------------------- */

/* Loads a cubin image and finds the entry point into m. */
static int load_module(vyre_ctx *ctx, const void *image, const char *entry, module_entry *m,
                       vyre_error *err)
{
    const vyre__cuda_fns *cu = ctx->cu;
    CUmodule mod = NULL;
    vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
    CUresult r = cu->cuModuleLoadData(&mod, image);
    vyre_nvtx_pop();
    if (r != CUDA_SUCCESS)
        return vyre__cuda_check(r, "cuModuleLoadData", err);
    vyre_counter_add(VYRE_CTR_MODULE_LOADS, 1);
    CUfunction fn = NULL;
    r = cu->cuModuleGetFunction(&fn, mod, entry);
    if (r != CUDA_SUCCESS) {
        (void)cu->cuModuleUnload(mod);
        if (r == CUDA_ERROR_NOT_FOUND)
            return vyre__fail(err, VYRE_ENOENT, HINT_ENTRY, "the module has no kernel '%s'", entry);
        return vyre__cuda_check(r, "cuModuleGetFunction", err);
    }
    m->mod = mod;
    m->fn = fn;
    return VYRE_OK;
}

/* Compiles req, stores the cubin (a failed store is recorded, not fatal)
 * and loads it. */
static int compile_and_load(vyre_ctx *ctx, const vyre_compile_request *req, module_entry *m,
                            vyre_pipeline_info *info, vyre_error *err)
{
    vyre_counter_add(VYRE_CTR_CACHE_MISSES, 1);
    vyre_compile_result res;
    int nvrtc = req->kind == VYRE_SOURCE_CUDA_C;
    if (nvrtc)
        vyre_nvtx_push(VYRE_RANGE_NVRTC_COMPILE);
    int rc = vyre_compile_cubin(req, &res, err);
    if (nvrtc)
        vyre_nvtx_pop();
    if (rc) {
        vyre_compile_result_release(&res);
        return rc;
    }
    vyre_counter_add(VYRE_CTR_COMPILES, 1);
    vyre_counter_add(VYRE_CTR_COMPILE_NS, res.compile_ns);

    vyre_error_clear(&info->store_error);
    rc = VYRE_OK;
    {
        char *names = NULL;
        size_t names_len = 0, n = 0;
        if (vyre_cubin_kernels(res.cubin, res.size, &names, &names_len, &n, NULL) == VYRE_OK)
            rc = vyre__compile_check_entry(names, names_len, n, req->entry, err);
        free(names);
    }
    if (rc) {
        vyre_compile_result_release(&res);
        return rc;
    }
    info->store_rc =
        vyre__compile_store(ctx->cache, req, &m->cache_key, &res, NULL, NULL, &info->store_error);

    rc = load_module(ctx, res.cubin, req->entry, m, err);
    info->origin = VYRE_PIPELINE_COMPILED;
    info->compile_ns = res.compile_ns;
    info->cubin_size = res.size;
    vyre_compile_result_release(&res);
    return rc;
}

/* The disk cache, else the compiler. */
static int load_or_compile(vyre_ctx *ctx, const vyre_compile_request *req, module_entry *m,
                           vyre_pipeline_info *info, vyre_error *err)
{
    vyre_blob *blob = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    int rc = vyre_cache_get(ctx->cache, &m->cache_key, &blob, &why, err);
    info->rejected = why == VYRE_REJECT_STALE ? VYRE_REJECT_NONE : why;
    if (rc == VYRE_OK) {
        if (blob->header.kind == VYRE_BLOB_CUBIN) {
            /* The module is the right one (the key says so); the kernel
             * asked for must be in it: a clear error naming the ones it
             * has, not the driver's NOT_FOUND. */
            rc = vyre__compile_blob_has_entry(blob, req->entry, err);
            if (rc) {
                vyre_blob_free(blob);
                return rc;
            }
            vyre_error lerr;
            vyre_error_clear(&lerr);
            rc = load_module(ctx, blob->payload, req->entry, m, &lerr);
            if (rc == VYRE_OK) {
                vyre_counter_add(VYRE_CTR_CACHE_HITS, 1);
                vyre_counter_add(VYRE_CTR_COMPILE_NS_SAVED, blob->header.compile_ns);
                info->origin = VYRE_PIPELINE_FROM_DISK_CACHE;
                info->compile_ns = blob->header.compile_ns;
                info->cubin_size = blob->size;
                vyre_blob_free(blob);
                return VYRE_OK;
            }
            if (rc == VYRE_ENOMEM) {
                vyre_blob_free(blob);
                if (err)
                    *err = lerr;
                return rc;
            }
            /* A cubin that passed the cache's checks but not the driver's
             * (built for another GPU by a foreign writer, or damaged before
             * it was checksummed): recompile, and the store replaces it. */
            info->driver_rejected = 1;
        }
        /* Another kind under a cubin key comes only from a foreign writer:
         * compile and replace it too. */
        vyre_blob_free(blob);
    } else if (rc != VYRE_ENOENT) {
        return rc;
    }
    return compile_and_load(ctx, req, m, info, err);
}

static void link_handle(vyre_ctx *ctx, vyre_pipeline *p)
{
    pthread_mutex_lock(&ctx->mu);
    p->prev = NULL;
    p->next = ctx->pipelines;
    if (ctx->pipelines)
        ctx->pipelines->prev = p;
    ctx->pipelines = p;
    pthread_mutex_unlock(&ctx->mu);
}

static int compile_in(vyre_ctx *ctx, const vyre_pipeline_desc *desc, uint64_t t0,
                      vyre_pipeline **out, vyre_error *err)
{
    if (desc->flags & ~(unsigned)VYRE_PIPELINE_NO_MODULE_CACHE)
        return vyre__fail(err, VYRE_EINVAL, "pass 0 or VYRE_PIPELINE_NO_MODULE_CACHE",
                          "unknown pipeline flags 0x%x", desc->flags);
    vyre_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a pipeline");
    vyre_compile_request req = {
        .kind = desc->kind,
        .src = desc->src,
        .len = desc->len,
        .arch = desc->arch ? desc->arch : ctx->arch,
        .entry = desc->entry,
        .opts = desc->opts,
        .nopts = desc->nopts,
    };
    vyre_key map_key;
    int rc = vyre_compile_key(&req, &p->info.key, err);
    if (!rc)
        rc = module_map_key(&p->info.key, req.entry, &map_key, err);
    if (!rc)
        rc = make_current(ctx, err);
    if (rc) {
        free(p);
        return rc;
    }
    vyre__strlcpy(p->info.arch, req.arch, sizeof p->info.arch);

    int use_map = !(desc->flags & VYRE_PIPELINE_NO_MODULE_CACHE);
    module_entry *m = NULL;
    if (use_map) {
        pthread_mutex_lock(&ctx->mu);
        m = map_find(ctx, &map_key);
        if (m)
            m->refs++;
        pthread_mutex_unlock(&ctx->mu);
        if (m) {
            vyre_counter_add(VYRE_CTR_MODULE_CACHE_HITS, 1);
            p->info.origin = VYRE_PIPELINE_FROM_MODULE_CACHE;
        }
    }
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m) {
            free(p);
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a module entry");
        }
        m->key = map_key;
        m->cache_key = p->info.key;
        /* No lock while loading or compiling (a compile can take a second):
         * two threads may race to the same key, and the loser's module is
         * dropped below. */
        rc = load_or_compile(ctx, &req, m, &p->info, err);
        if (rc) {
            free(m);
            free(p);
            return rc;
        }
        if (use_map) {
            pthread_mutex_lock(&ctx->mu);
            module_entry *won = map_find(ctx, &m->key);
            if (won) {
                won->refs++;
            } else {
                rc = map_insert(ctx, m, err);
                if (!rc) {
                    m->refs = 2; /* the map's and this handle's */
                    m->in_map = 1;
                }
            }
            pthread_mutex_unlock(&ctx->mu);
            if (won || rc) {
                entry_unload(ctx, m);
                m = won;
            }
            if (rc) {
                free(p);
                return rc;
            }
        } else {
            m->refs = 1;
        }
    }
    p->m = m;
    p->fn = m->fn;
    p->launch = ctx->cu->cuLaunchKernel;
    p->stream = ctx->stream;
    p->ctx = ctx;
    link_handle(ctx, p);
    p->info.elapsed_ns = vyre__mono_ns() - t0;
    *out = p;
    return VYRE_OK;
}

int vyre_pipeline_compile(vyre_ctx *ctx, const vyre_pipeline_desc *desc, vyre_pipeline **out,
                          vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!ctx || !desc || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_pipeline_compile: NULL argument");
    /* A pipeline launches one kernel: the key names the module, the entry
     * which of its kernels (vyre_compile_key no longer requires one). */
    if (!desc->entry || !*desc->entry)
        return vyre__fail(err, VYRE_EINVAL, "name the kernel to launch (its extern \"C\" name)",
                          "no entry point named for the %s source",
                          vyre_source_kind_name(desc->kind) ? vyre_source_kind_name(desc->kind)
                                                            : "pipeline");
    uint64_t t0 = vyre__mono_ns();
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_COMPILE);
    int rc = compile_in(ctx, desc, t0, out, err);
    vyre_nvtx_pop();
    /* Publish now: compiles are rare and vyre-top shows their counters. */
    vyre_telemetry_publish(vyre_telemetry_global());
    return rc;
}

void vyre_pipeline_free(vyre_pipeline *p)
{
    if (!p)
        return;
    vyre_ctx *ctx = p->ctx;
    pthread_mutex_lock(&ctx->mu);
    if (p->prev)
        p->prev->next = p->next;
    else
        ctx->pipelines = p->next;
    if (p->next)
        p->next->prev = p->prev;
    module_entry *m = p->m;
    int drop = --m->refs == 0;
    pthread_mutex_unlock(&ctx->mu);
    if (drop) {
        (void)make_current(ctx, NULL);
        entry_unload(ctx, m);
    }
    free(p);
}

const vyre_pipeline_info *vyre_pipeline_info_get(const vyre_pipeline *p)
{
    return p ? &p->info : NULL;
}

void *vyre_pipeline_cu_function(const vyre_pipeline *p)
{
    return p ? (void *)p->fn : NULL;
}

void *vyre_pipeline_cu_module(const vyre_pipeline *p)
{
    return p ? (void *)p->m->mod : NULL;
}

/* ---- dispatching -------------------------------------------------------- */

/* The launch path: see the invariants at the top of this file. */
static inline int launch_on(vyre_pipeline *p, const vyre_launch_cfg *cfg, CUstream stream,
                            void **args, vyre_error *err)
{
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    CUresult r = p->launch(p->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                           cfg->block[1], cfg->block[2], cfg->shared_bytes, stream, args, NULL);
    vyre_nvtx_pop();
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        return vyre__cuda_check(r, "cuLaunchKernel", err);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
    vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
    telemetry_point();
    return VYRE_OK;
}

int vyre_pipeline_launch(vyre_pipeline *p, const vyre_launch_cfg *cfg, void **args, vyre_error *err)
{
    if (__builtin_expect(!p || !cfg, 0))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_pipeline_launch: NULL argument");
    return launch_on(p, cfg, cfg->stream ? (CUstream)cfg->stream : p->stream, args, err);
}

static int check_dispatch(const vyre_pipeline *p, const vyre_launch_cfg *cfg, const vyre_arg *args,
                          size_t nargs, const char *what, vyre_error *err)
{
    if (!p || !cfg || (nargs && !args))
        return vyre__fail(err, VYRE_EINVAL, NULL, "%s: NULL argument", what);
    if (nargs > VYRE_MAX_ARGS)
        return vyre__fail(err, VYRE_EINVAL, "pack the parameters into fewer buffers or a struct",
                          "%s: %zu kernel parameters (at most %d)", what, nargs, VYRE_MAX_ARGS);
    return VYRE_OK;
}

/* Binds a SCALAR or BUFFER arg into params[i]. */
static int bind_resident(const vyre_ctx *ctx, const vyre_arg *a, size_t i, void **params,
                         vyre_error *err)
{
    switch (a->kind) {
    case VYRE_ARG_SCALAR:
        if (!a->src || !a->size)
            return vyre__fail(err, VYRE_EINVAL, "pass a pointer to the value and its size",
                              "scalar argument %zu has no value", i);
        /* cuLaunchKernel only reads through its parameter pointers. */
        params[i] = (void *)(uintptr_t)a->src;
        return VYRE_OK;
    case VYRE_ARG_BUFFER:
        if (!a->buffer)
            return vyre__fail(err, VYRE_EINVAL, NULL, "buffer argument %zu is NULL", i);
        if (a->buffer->ctx != ctx)
            return vyre__fail(err, VYRE_EINVAL, "allocate the buffer with the pipeline's context",
                              "buffer argument %zu belongs to another context", i);
        params[i] = &a->buffer->dptr;
        return VYRE_OK;
    default:
        return vyre__fail(err, VYRE_EINVAL,
                          "a resident dispatch takes VYRE_ARG_SCALAR and VYRE_ARG_BUFFER only; use "
                          "vyre_pipeline_dispatch_host for host memory",
                          "argument %zu has kind %d", i, (int)a->kind);
    }
}

int vyre_pipeline_dispatch_resident(vyre_pipeline *p, const vyre_launch_cfg *cfg,
                                    const vyre_arg *args, size_t nargs, vyre_error *err)
{
    int rc = check_dispatch(p, cfg, args, nargs, "vyre_pipeline_dispatch_resident", err);
    if (rc)
        return rc;
    void *params[VYRE_MAX_ARGS];
    vyre_nvtx_push(VYRE_RANGE_RESIDENT_DISPATCH);
    for (size_t i = 0; i < nargs && !rc; i++)
        rc = bind_resident(p->ctx, &args[i], i, params, err);
    if (!rc)
        rc = launch_on(p, cfg, cfg->stream ? (CUstream)cfg->stream : p->stream,
                       nargs ? params : NULL, err);
    vyre_nvtx_pop();
    return rc;
}

/* Per-arg transient memory of one host dispatch. */
typedef struct host_slot {
    vyre__block dev, pin;
    CUdeviceptr dptr;
} host_slot;

static int is_host_kind(vyre_arg_kind k)
{
    return k == VYRE_ARG_IN || k == VYRE_ARG_OUT || k == VYRE_ARG_INOUT;
}

/* Stages one IN/OUT/INOUT arg: transient device memory, pinned staging,
 * the upload (or the zeroing of an OUT) queued on stream. */
static int stage_in(vyre_ctx *ctx, const vyre_arg *a, size_t i, CUstream stream, host_slot *s,
                    vyre_error *err)
{
    const vyre__cuda_fns *cu = ctx->cu;
    if (!a->size)
        return vyre__fail(err, VYRE_EINVAL, "pass the size of the host memory in bytes",
                          "host argument %zu has size 0", i);
    if ((a->kind != VYRE_ARG_OUT && !a->src) || (a->kind != VYRE_ARG_IN && !a->dst))
        return vyre__fail(err, VYRE_EINVAL, NULL, "host argument %zu has no host memory", i);
    int rc = vyre__pool_get(&ctx->dev_pool, a->size, &s->dev, err);
    if (!rc)
        rc = vyre__pool_get(&ctx->pin_pool, a->size, &s->pin, err);
    if (rc)
        return rc;
    s->dptr = (CUdeviceptr)s->dev.addr;
    void *staging = (void *)(uintptr_t)s->pin.addr;
    if (a->kind == VYRE_ARG_OUT)
        return vyre__cuda_check(cu->cuMemsetD8Async(s->dptr, 0, a->size, stream), "cuMemsetD8Async",
                                err);
    memcpy(staging, a->src, a->size);
    rc = vyre__cuda_check(cu->cuMemcpyHtoDAsync(s->dptr, staging, a->size, stream),
                          "cuMemcpyHtoDAsync", err);
    if (!rc) {
        vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, a->size);
    }
    return rc;
}

int vyre_pipeline_dispatch_host(vyre_pipeline *p, const vyre_launch_cfg *cfg, const vyre_arg *args,
                                size_t nargs, vyre_error *err)
{
    int rc = check_dispatch(p, cfg, args, nargs, "vyre_pipeline_dispatch_host", err);
    if (rc)
        return rc;
    vyre_ctx *ctx = p->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    rc = make_current(ctx, err);
    if (rc)
        return rc;
    CUstream stream = cfg->stream ? (CUstream)cfg->stream : ctx->stream;
    host_slot slots[VYRE_MAX_ARGS];
    void *params[VYRE_MAX_ARGS];
    memset(slots, 0, nargs * sizeof slots[0]);
    int queued = 0, outputs = 0;

    vyre_nvtx_push(VYRE_RANGE_HOST_DISPATCH);
    for (size_t i = 0; i < nargs && !rc; i++) {
        if (is_host_kind(args[i].kind)) {
            queued = 1;
            rc = stage_in(ctx, &args[i], i, stream, &slots[i], err);
            params[i] = &slots[i].dptr;
        } else {
            rc = bind_resident(ctx, &args[i], i, params, err);
        }
    }
    if (!rc) {
        queued = 1;
        rc = launch_on(p, cfg, stream, nargs ? params : NULL, err);
    }
    for (size_t i = 0; i < nargs && !rc; i++) {
        const vyre_arg *a = &args[i];
        if (a->kind != VYRE_ARG_OUT && a->kind != VYRE_ARG_INOUT)
            continue;
        rc = vyre__cuda_check(cu->cuMemcpyDtoHAsync((void *)(uintptr_t)slots[i].pin.addr,
                                                    slots[i].dptr, a->size, stream),
                              "cuMemcpyDtoHAsync", err);
        if (!rc) {
            vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
            vyre_counter_add(VYRE_CTR_D2H_BYTES, a->size);
            outputs = 1;
        }
    }
    /* Wait even after an error: the transient memory goes back to the
     * pools, and nothing queued may still be using it. */
    if (queued) {
        CUresult r = cu->cuStreamSynchronize(stream);
        vyre_counter_add(VYRE_CTR_SYNCS, 1);
        if (!rc)
            rc = vyre__cuda_check(r, "cuStreamSynchronize", err);
    }
    for (size_t i = 0; i < nargs && !rc; i++) {
        const vyre_arg *a = &args[i];
        if (a->kind == VYRE_ARG_OUT || a->kind == VYRE_ARG_INOUT)
            memcpy(a->dst, (const void *)(uintptr_t)slots[i].pin.addr, a->size);
    }
    if (!rc && outputs)
        vyre_counter_add(VYRE_CTR_READBACKS, 1);
    for (size_t i = 0; i < nargs; i++) {
        vyre__pool_put(&ctx->dev_pool, &slots[i].dev);
        vyre__pool_put(&ctx->pin_pool, &slots[i].pin);
    }
    vyre_nvtx_pop();
    return rc;
}

/* ---- resident buffers --------------------------------------------------- */

int vyre_buffer_alloc(vyre_ctx *ctx, size_t size, vyre_buffer **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!ctx || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_buffer_alloc: NULL argument");
    if (!size)
        return vyre__fail(err, VYRE_EINVAL, "allocate at least one byte", "a buffer of 0 bytes");
    int rc = make_current(ctx, err);
    if (rc)
        return rc;
    vyre_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a buffer handle");
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc of %zu bytes", size);
    rc = vyre__cuda_check(ctx->cu->cuMemAlloc(&b->dptr, size), call, err);
    if (rc) {
        free(b);
        return rc;
    }
    b->ctx = ctx;
    b->size = size;
    *out = b;
    return VYRE_OK;
}

void vyre_buffer_free(vyre_buffer *b)
{
    if (!b)
        return;
    if (!make_current(b->ctx, NULL))
        (void)b->ctx->cu->cuMemFree(b->dptr);
    free(b);
}

uint64_t vyre_buffer_device_ptr(const vyre_buffer *b)
{
    return b ? (uint64_t)b->dptr : 0;
}

size_t vyre_buffer_size(const vyre_buffer *b)
{
    return b ? b->size : 0;
}

static int check_span(const vyre_buffer *b, size_t offset, const void *host, size_t n,
                      const char *what, vyre_error *err)
{
    if (!b || (n && !host))
        return vyre__fail(err, VYRE_EINVAL, NULL, "%s: NULL argument", what);
    if (offset > b->size || n > b->size - offset)
        return vyre__fail(err, VYRE_ERANGE, "stay within the buffer",
                          "%s: %zu bytes at offset %zu of a %zu-byte buffer", what, n, offset,
                          b->size);
    return VYRE_OK;
}

/* Copies through pinned staging on the ctx's stream and waits. */
static int transfer(vyre_buffer *b, size_t offset, const void *src, void *dst, size_t n,
                    vyre_error *err)
{
    vyre_ctx *ctx = b->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    int rc = make_current(ctx, err);
    if (rc)
        return rc;
    vyre__block st;
    rc = vyre__pool_get(&ctx->pin_pool, n, &st, err);
    if (rc)
        return rc;
    void *staging = (void *)(uintptr_t)st.addr;
    CUresult r;
    if (src) {
        memcpy(staging, src, n);
        r = cu->cuMemcpyHtoDAsync(b->dptr + offset, staging, n, ctx->stream);
        rc = vyre__cuda_check(r, "cuMemcpyHtoDAsync", err);
    } else {
        r = cu->cuMemcpyDtoHAsync(staging, b->dptr + offset, n, ctx->stream);
        rc = vyre__cuda_check(r, "cuMemcpyDtoHAsync", err);
    }
    r = cu->cuStreamSynchronize(ctx->stream);
    vyre_counter_add(VYRE_CTR_SYNCS, 1);
    if (!rc)
        rc = vyre__cuda_check(r, "cuStreamSynchronize", err);
    if (!rc) {
        if (src) {
            vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
            vyre_counter_add(VYRE_CTR_H2D_BYTES, n);
        } else if (dst) {
            memcpy(dst, staging, n);
            vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
            vyre_counter_add(VYRE_CTR_D2H_BYTES, n);
            vyre_counter_add(VYRE_CTR_READBACKS, 1);
        }
    }
    vyre__pool_put(&ctx->pin_pool, &st);
    return rc;
}

int vyre_buffer_upload(vyre_buffer *b, size_t offset, const void *src, size_t n, vyre_error *err)
{
    int rc = check_span(b, offset, src, n, "vyre_buffer_upload", err);
    if (rc || !n)
        return rc;
    return transfer(b, offset, src, NULL, n, err);
}

int vyre_buffer_download(vyre_buffer *b, size_t offset, void *dst, size_t n, vyre_error *err)
{
    int rc = check_span(b, offset, dst, n, "vyre_buffer_download", err);
    if (rc || !n)
        return rc;
    return transfer(b, offset, NULL, dst, n, err);
}

int vyre_buffer_zero(vyre_buffer *b, vyre_error *err)
{
    if (!b)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_buffer_zero: NULL buffer");
    int rc = make_current(b->ctx, err);
    if (rc)
        return rc;
    return vyre__cuda_check(b->ctx->cu->cuMemsetD8Async(b->dptr, 0, b->size, b->ctx->stream),
                            "cuMemsetD8Async", err);
}

/* ---- batches and graphs ------------------------------------------------- */

int vyre_batch_begin(vyre_ctx *ctx, vyre_batch **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!ctx || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_begin: NULL argument");
    const vyre__cuda_fns *cu = ctx->cu;
    int rc = make_current(ctx, err);
    if (rc)
        return rc;
    vyre_batch *b = calloc(1, sizeof *b);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a batch");
    b->ctx = ctx;
    rc = vyre__cuda_check(cu->cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
                          err);
    if (rc) {
        free(b);
        return rc;
    }
    /* Thread-local mode: other threads' unrelated CUDA calls neither break
     * the capture nor are broken by it. */
    rc = vyre__cuda_check(cu->cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                          "cuStreamBeginCapture", err);
    if (rc) {
        (void)cu->cuStreamDestroy(b->stream);
        free(b);
        return rc;
    }
    *out = b;
    return VYRE_OK;
}

int vyre_batch_add(vyre_batch *b, vyre_pipeline *p, const vyre_launch_cfg *cfg, void **args,
                   vyre_error *err)
{
    if (!b || !p || !cfg)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_add: NULL argument");
    if (p->ctx != b->ctx) {
        b->failed = 1;
        return vyre__fail(err, VYRE_EINVAL, "compile the pipeline with the batch's context",
                          "vyre_batch_add: the pipeline belongs to another context");
    }
    CUresult r = p->launch(p->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2], cfg->block[0],
                           cfg->block[1], cfg->block[2], cfg->shared_bytes, b->stream, args, NULL);
    if (r != CUDA_SUCCESS) {
        b->failed = 1;
        return vyre__cuda_check(r, "cuLaunchKernel (captured)", err);
    }
    b->kernels++;
    return VYRE_OK;
}

/* Ends the capture and frees the batch; returns the captured graph (NULL
 * on failure) and the driver's result in *rc. */
static CUgraph batch_finish(vyre_batch *b, int *rc, vyre_error *err)
{
    const vyre__cuda_fns *cu = b->ctx->cu;
    CUgraph graph = NULL;
    /* End the capture before anything else: while it runs, this thread
     * must make no call the capture would reject. */
    *rc = vyre__cuda_check(cu->cuStreamEndCapture(b->stream, &graph), "cuStreamEndCapture", err);
    int cur = make_current(b->ctx, *rc ? NULL : err);
    if (!*rc)
        *rc = cur;
    (void)cu->cuStreamDestroy(b->stream);
    free(b);
    return graph;
}

void vyre_batch_abort(vyre_batch *b)
{
    if (!b)
        return;
    const vyre__cuda_fns *cu = b->ctx->cu;
    int rc;
    CUgraph graph = batch_finish(b, &rc, NULL);
    if (graph)
        (void)cu->cuGraphDestroy(graph);
}

int vyre_batch_end(vyre_batch *b, vyre_graph **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!b)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_end: NULL batch");
    if (!out) {
        vyre_batch_abort(b);
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_batch_end: NULL output");
    }
    vyre_ctx *ctx = b->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    int failed = b->failed;
    size_t kernels = b->kernels;
    int rc;
    CUgraph graph = batch_finish(b, &rc, err);
    if (!rc && failed)
        rc = vyre__fail(err, VYRE_EINVAL, "fix the failed vyre_batch_add and capture again",
                        "a launch added to the batch failed; the graph is discarded");
    if (!rc && !kernels)
        rc = vyre__fail(err, VYRE_EINVAL, "add launches with vyre_batch_add before ending it",
                        "the batch is empty");
    CUgraphExec exec = NULL;
    if (!rc)
        rc = vyre__cuda_check(cu->cuGraphInstantiateWithFlags(&exec, graph, 0),
                              "cuGraphInstantiateWithFlags", err);
    /* The executable graph does not need the graph it came from. */
    if (graph)
        (void)cu->cuGraphDestroy(graph);
    if (rc)
        return rc;
    vyre_graph *g = calloc(1, sizeof *g);
    if (!g) {
        (void)cu->cuGraphExecDestroy(exec);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a graph");
    }
    g->launch = cu->cuGraphLaunch;
    g->exec = exec;
    g->stream = ctx->stream;
    g->kernels = kernels;
    g->ctx = ctx;
    *out = g;
    return VYRE_OK;
}

int vyre_graph_launch(vyre_graph *g, void *stream, vyre_error *err)
{
    if (__builtin_expect(!g, 0))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_graph_launch: NULL graph");
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_BATCH_DISPATCH);
    CUresult r = g->launch(g->exec, stream ? (CUstream)stream : g->stream);
    vyre_nvtx_pop();
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        return vyre__cuda_check(r, "cuGraphLaunch", err);
    vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 1);
    vyre_counter_add(VYRE_CTR_BATCH_DISPATCHES, 1);
    vyre_counter_add(VYRE_CTR_LAUNCHES, g->kernels);
    telemetry_point();
    return VYRE_OK;
}

size_t vyre_graph_kernels(const vyre_graph *g)
{
    return g ? g->kernels : 0;
}

void *vyre_graph_cu_exec(const vyre_graph *g)
{
    return g ? (void *)g->exec : NULL;
}

void vyre_graph_free(vyre_graph *g)
{
    if (!g)
        return;
    if (!make_current(g->ctx, NULL))
        (void)g->ctx->cu->cuGraphExecDestroy(g->exec);
    free(g);
}
