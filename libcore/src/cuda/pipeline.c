/*
 * pipeline.c - compiling a pipeline through the caches (see vyre/pipeline.h):
 * the module map, then the disk cache, then the compiler; and the
 * pipeline handle's life (its info, free).
 *
 * Guarantees:
 *  - Keys come only from vyre_compile_key() with the architecture the cubin
 *    is for, so what `vyre-cachectl seed` stored is what we look up.
 *  - Nothing from the disk reaches the driver unvalidated: vyre_cache_get
 *    checks the blob (and quarantines a bad one, which is then a miss).
 *    A validated cubin the driver still refuses is recompiled and replaced.
 *  - No lock is held while loading or compiling: two threads racing to one
 *    key both compile, and the loser's module is dropped for the winner's.
 */
#include "base/cubin.h"
#include "cuda/pipeline_internal.h"

#include <stdlib.h>

#include "base/internal.h"
#include "cuda/compile_internal.h"
#include "vyre/compile.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"

#define HINT_ENTRY                                                                                 \
    "declare the kernel extern \"C\" (or pass its mangled name) and check the entry name"

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
    int rc = vyre_compile_cubin(req, NULL, &res, err);
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
        rc = vyre__module_map_key(&p->info.key, req.entry, &map_key, err);
    if (!rc)
        rc = vyre__ctx_make_current(ctx, err);
    if (rc) {
        free(p);
        return rc;
    }
    vyre__strlcpy(p->info.arch, req.arch, sizeof p->info.arch);

    int use_map = !(desc->flags & VYRE_PIPELINE_NO_MODULE_CACHE);
    module_entry *m = NULL;
    if (use_map) {
        pthread_mutex_lock(&ctx->mu);
        m = vyre__module_map_find(ctx, &map_key);
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
            module_entry *won = vyre__module_map_find(ctx, &m->key);
            if (won) {
                won->refs++;
            } else {
                rc = vyre__module_map_insert(ctx, m, err);
                if (!rc) {
                    m->refs = 2; /* the map's and this handle's */
                    m->in_map = 1;
                }
            }
            pthread_mutex_unlock(&ctx->mu);
            if (won || rc) {
                vyre__module_entry_unload(ctx, m);
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
    p->info.cu_function = (void *)m->fn;
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
    vyre_telemetry_publish(vyre_telemetry_global(NULL));
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
        (void)vyre__ctx_make_current(ctx, NULL);
        vyre__module_entry_unload(ctx, m);
    }
    free(p);
}

const vyre_pipeline_info *vyre_pipeline_info_get(const vyre_pipeline *p)
{
    return p ? &p->info : NULL;
}

void *vyre_pipeline_cu_module(const vyre_pipeline *p)
{
    return p ? (void *)p->m->mod : NULL;
}
