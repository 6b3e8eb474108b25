/*
 * suite_compile.c - the `compile` suite: what each way of getting a kernel
 * onto the GPU costs, per built-in kernel (bench_kernels.c), host-timed:
 *
 *   compile.nvrtc_cold  NVRTC CUDA C -> cubin
 *   compile.jit_cold    cuModuleLoadData(PTX) with the driver's JIT cache
 *                       off, in a fresh process (the cold-JIT child, child.c)
 *   compile.jit_warm    cuModuleLoadData(PTX), the driver's JIT cache warm
 *   compile.cache_hit   vyre_cache_get + cuModuleLoadData(cubin)
 *   compile.cubin_load  cuModuleLoadData(cubin in memory)
 *
 * Every variant but the first says how many times faster than NVRTC it is
 * (metric x_faster). The cold-JIT points need a child program
 * (env->child_exe); without one they are left out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "vyre/cache.h"
#include "vyre/compile.h"
#include "vyre/nvrtc.h"
#include "vyre/pipeline.h"

enum { V_NVRTC, V_JIT_COLD, V_JIT_WARM, V_CACHE_HIT, V_CUBIN_LOAD, NVARIANTS };
static const char *const k_variant_names[] = {"compile.nvrtc_cold", "compile.jit_cold",
                                              "compile.jit_warm", "compile.cache_hit",
                                              "compile.cubin_load"};
static const char *const k_variant_notes[] = {
    "NVRTC CUDA C -> cubin", "cuModuleLoadData(PTX), driver cache disabled, child process",
    "cuModuleLoadData(PTX), driver JIT cache warm", "vyre_cache_get + cuModuleLoadData(cubin)",
    "cuModuleLoadData(cubin in memory)"};

static const char *const k_compile_opts[] = {"-Xptxas=-O3"};

struct compile_bench {
    struct vyre__gpu *g;
    const vyre_bench_kernel *k;
    vyre_nvrtc_output ptx;
    vyre_compile_result cubin;
    vyre_key key;
    char ptx_path[1024];
    const char *child_exe;
    int variant;
    double nvrtc_median;
};

static int load_unload(struct compile_bench *cb, const void *image, vyre_error *err)
{
    CUmodule m = NULL;
    int rc = vyre__cuda_check(cb->g->cu->cuModuleLoadData(&m, image), "cuModuleLoadData", err);
    if (!rc)
        cb->g->cu->cuModuleUnload(m);
    return rc;
}

static int sample_compile(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct compile_bench *cb = ctx;
    int rc = VYRE_OK;
    uint64_t t0 = vyre__mono_ns();
    switch (cb->variant) {
    case V_NVRTC: {
        vyre_compile_request req = {
            VYRE_SOURCE_CUDA_C, cb->k->src, strlen(cb->k->src), cb->g->info.arch, cb->k->entry,
            k_compile_opts,     1};
        vyre_compile_result res;
        memset(&res, 0, sizeof res);
        rc = vyre_compile_cubin(&req, NULL, &res, err);
        vyre_compile_result_release(&res);
        break;
    }
    case V_JIT_COLD: {
        double ns = 0;
        rc = vyre__bench_jit_cold_spawn(cb->child_exe, cb->ptx_path, &ns, err);
        *wall = (double)(vyre__mono_ns() - t0);
        *value = ns;
        return rc;
    }
    case V_JIT_WARM:
        rc = load_unload(cb, cb->ptx.data, err);
        break;
    case V_CACHE_HIT: {
        vyre_blob *b = NULL;
        rc = vyre_cache_get(vyre_ctx_info_get(cb->g->ctx)->cache, &cb->key, &b, NULL, err);
        if (rc == VYRE_ENOENT)
            rc = vyre__fail(err, VYRE_ECORRUPT, NULL, "the cubin stored for '%s' was not a hit",
                            cb->k->label);
        if (!rc)
            rc = load_unload(cb, b->payload, err);
        vyre_blob_free(b);
        break;
    }
    default:
        rc = load_unload(cb, cb->cubin.cubin, err);
        break;
    }
    *wall = (double)(vyre__mono_ns() - t0);
    *value = *wall;
    return rc;
}

static void finish_compile(vyre_bench_point *pt, void *ctx)
{
    struct compile_bench *cb = ctx;
    if (cb->variant == V_NVRTC)
        cb->nvrtc_median = pt->stats.median;
    snprintf(pt->note, sizeof pt->note, "%s; PTX %.1f KB, cubin %.1f KB",
             k_variant_notes[cb->variant], (double)cb->ptx.size / 1024.0,
             (double)cb->cubin.size / 1024.0);
    if (cb->variant != V_NVRTC && cb->nvrtc_median > 0 && pt->stats.median > 0) {
        vyre__strlcpy(pt->metric_name, "x_faster", sizeof pt->metric_name);
        pt->metric = cb->nvrtc_median / pt->stats.median;
    }
}

static int compile_prepare_kernel(struct compile_bench *cb, vyre_bench_env *env, vyre_error *err)
{
    const char *arch = cb->g->info.arch;
    int rc = vyre_nvrtc_compile(cb->k->src, strlen(cb->k->src), cb->k->label, arch, k_compile_opts,
                                1, 0, &cb->ptx, err);
    vyre_compile_request req = {
        VYRE_SOURCE_CUDA_C, cb->k->src, strlen(cb->k->src), arch, cb->k->entry, k_compile_opts, 1};
    if (!rc)
        rc = vyre_compile_cubin(&req, NULL, &cb->cubin, err);
    /* Store through the run-time path so that the hit variant hits. */
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUDA_C;
    d.src = cb->k->src;
    d.len = strlen(cb->k->src);
    d.entry = cb->k->entry;
    d.opts = k_compile_opts;
    d.nopts = 1;
    d.flags = VYRE_PIPELINE_NO_MODULE_CACHE;
    vyre_pipeline *p = NULL;
    if (!rc)
        rc = vyre_pipeline_compile(cb->g->ctx, &d, &p, err);
    if (!rc) {
        cb->key = vyre_pipeline_info_get(p)->key;
        if (vyre_pipeline_info_get(p)->store_rc)
            rc = vyre__fail(err, vyre_pipeline_info_get(p)->store_rc, NULL,
                            "cannot store the cubin of '%s' in the cache: %s", cb->k->label,
                            vyre_pipeline_info_get(p)->store_error.message);
        vyre_pipeline_free(p);
    }
    if (!rc) {
        const char *tmp = env->tmp_dir && *env->tmp_dir ? env->tmp_dir : "/tmp";
        snprintf(cb->ptx_path, sizeof cb->ptx_path, "%s/vyre-jit-cold-%s.XXXXXX", tmp,
                 cb->k->label);
        int fd = mkstemp(cb->ptx_path);
        if (fd < 0)
            return vyre__fail(err, vyre__errno_code(errno), "set TMPDIR to a writable directory",
                              "cannot create '%s': %s", cb->ptx_path, strerror(errno));
        size_t off = 0;
        while (off < cb->ptx.size) {
            ssize_t w = write(fd, (const char *)cb->ptx.data + off, cb->ptx.size - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
        if (off != cb->ptx.size)
            rc = vyre__fail(err, VYRE_EIO, NULL, "cannot write '%s'", cb->ptx_path);
    }
    /* Warm the driver's JIT cache for the warm variant. */
    if (!rc)
        rc = load_unload(cb, cb->ptx.data, err);
    return rc;
}

int vyre__bench_compile_run(vyre_bench_env *env, struct vyre__gpu *g, vyre_error *err)
{
    int rc = VYRE_OK;
    for (size_t k = 0; !rc && !env->interrupted && k < vyre__bench_nkernels; k++) {
        struct compile_bench cb;
        memset(&cb, 0, sizeof cb);
        cb.g = g;
        cb.k = &vyre__bench_kernels[k];
        cb.child_exe = env->child_exe;
        rc = compile_prepare_kernel(&cb, env, err);
        vyre_bench_measure_opts o;
        vyre__gpu_measure_opts(&o, env, g);
        o.ctx = &cb;
        o.sample = sample_compile;
        char axes[64];
        snprintf(axes, sizeof axes, "kernel=%s", cb.k->label);
        for (int v = 0; !rc && !env->interrupted && v < NVARIANTS; v++) {
            if (v == V_JIT_COLD && !cb.child_exe)
                continue;
            cb.variant = v;
            o.warmup = v == V_NVRTC || v == V_JIT_COLD ? 0 : 2;
            o.rule = env->rule;
            if (v == V_NVRTC || v == V_JIT_COLD) {
                /* Up to a third of a second a sample: a short series, but
                 * never below the run's --min-samples (10 by default, in
                 * --quick too). */
                o.rule.max_samples = o.rule.min_samples * 2;
                o.rule.min_time_s = 0;
            }
            vyre_bench_point pt;
            vyre__gpu_point_init(&pt, "compile", k_variant_names[v], axes, g, VYRE_BENCH_HOST, 0);
            rc = vyre__bench_point_run(env, &pt, &o, 1, NULL, finish_compile, &cb, err);
        }
        if (cb.ptx_path[0])
            unlink(cb.ptx_path);
        vyre_nvrtc_output_release(&cb.ptx);
        vyre_compile_result_release(&cb.cubin);
    }
    return rc;
}

size_t vyre__bench_compile_points(const vyre_bench_env *env)
{
    return vyre__bench_nkernels * (env->child_exe ? NVARIANTS : NVARIANTS - 1);
}
