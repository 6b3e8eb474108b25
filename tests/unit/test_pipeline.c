/*
 * test_pipeline.c - compiling through the cache and dispatching
 * (libcore/src/cuda/pipeline.c) without a GPU, on the fake driver of
 * tests/fakes/fakecuda.c (loaded through VYRE_CUDA_LIBRARY).
 *
 * The fake runs kernels on the CPU and keeps device memory in host memory,
 * so results are checked element by element; its fakecuda_count() says
 * what the driver saw (launches, copies, modules loaded, what is still
 * alive), so every path is also checked for what it asked of the driver
 * and for leaving nothing behind. Pipelines are cubin input (a fake cubin:
 * the ELF magic and a list of kernels): no NVRTC is needed. The real
 * driver runs the same paths in tests/gpu/test_gpu_pipeline.c.
 *
 * Criterion runs every test in its own process: the driver loader, the
 * counters and the fake's state start fresh in each.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/compile_internal.h"
#include "cuda/pipeline_internal.h"
#include "fakecubin.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/compile.h"
#include "vyre/counters.h"
#include "vyre/pipeline.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif

/* A fake cubin with three kernels; len includes the NUL the fake reads to. */
static const char CUBIN[] = "\x7f"
                            "ELF fakecubin:add_one,fill_u32,noop";

static const char *const g_vars[] = {
    "VYRE_CUDA_LIBRARY",  "HOME",
    "XDG_CACHE_HOME",     "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",    "CUDA_CACHE_MAXSIZE",
    "VYRE_PTX_CACHE_DIR", "VYRE_TELEMETRY_DIR",
    "FAKECUDA_DEVICES",   "FAKECUDA_FAIL",
    "FAKECUDA_MISSING",   "FAKECUDA_CC",
    "VYRE_RANGE_TIMING",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_path[700];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    setenv("HOME", g_tmp, 1);
    snprintf(g_path, sizeof g_path, "%s/xdg", g_tmp);
    setenv("XDG_CACHE_HOME", g_path, 1);
    snprintf(g_path, sizeof g_path, "%s/tel", g_tmp);
    setenv("VYRE_TELEMETRY_DIR", g_path, 1);
    setenv("VYRE_CUDA_LIBRARY", FAKECUDA_LIB, 1);
    setenv("FAKECUDA_DEVICES", "1", 1);
}

static void teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(pipeline, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers -------------------------------------------------------------- */

/* What the fake driver counted (see fakecuda.c). */
static long fake(const char *what)
{
    static long (*count)(const char *);
    if (!count) {
        void *h = dlopen(FAKECUDA_LIB, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(h, "%s", dlerror());
        *(void **)&count = dlsym(h, "fakecuda_count");
        cr_assert_not_null(count, "the fake driver has no fakecuda_count");
    }
    long v = count(what);
    cr_assert_geq(v, 0, "the fake does not count '%s'", what);
    return v;
}

/* Nothing is left alive in the driver. */
static void assert_driver_clean(void)
{
    static const char *const live[] = {"modules", "allocs",      "host_allocs", "streams",
                                       "graphs",  "graph_execs", "ctx_refs"};
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
        cr_assert_eq(fake(live[i]), 0, "%ld %s left alive in the driver", fake(live[i]), live[i]);
}

static vyre_cache *open_cache(void)
{
    char root[700];
    snprintf(root, sizeof root, "%s/cache", g_tmp);
    vyre_cache *cache = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(root, NULL, &cache, &e);
    cr_assert_eq(rc, 0, "vyre_cache_open: %s (%s)", e.message, e.hint);
    return cache;
}

static vyre_ctx *open_ctx(vyre_cache *cache)
{
    vyre_ctx *ctx = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_ctx_open(0, cache, &ctx, &e);
    cr_assert_eq(rc, 0, "vyre_ctx_open: %s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
    cr_assert_not_null(ctx);
    return ctx;
}

static vyre_pipeline_desc cubin_desc(const char *entry, unsigned flags)
{
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUBIN;
    d.src = CUBIN;
    d.len = sizeof CUBIN;
    d.entry = entry;
    d.flags = flags;
    return d;
}

static vyre_pipeline *compile(vyre_ctx *ctx, const char *entry, unsigned flags)
{
    vyre_pipeline_desc d = cubin_desc(entry, flags);
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_pipeline_compile(ctx, &d, &p, &e);
    cr_assert_eq(rc, 0, "compile '%s': %s: %s (%s)", entry, vyre_err_name(rc), e.message, e.hint);
    cr_assert_not_null(p);
    return p;
}

static uint64_t delta(const vyre_counters *after, const vyre_counters *before, vyre_counter_id id)
{
    return after->v[id] - before->v[id];
}

#define N 1000u /* elements: not a multiple of the block */

/* ---- without a driver ------------------------------------------------------ */

Test(pipeline, arguments_are_checked_without_a_gpu)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_open(0, NULL, NULL, &e), VYRE_EINVAL);
    vyre_pipeline *p = (vyre_pipeline *)&e; /* must be reset to NULL */
    vyre_pipeline_desc d = cubin_desc("add_one", 0);
    cr_assert_eq(vyre_pipeline_compile(NULL, &d, &p, &e), VYRE_EINVAL);
    cr_assert_null(p);
    vyre_launch_cfg cfg = vyre_launch_1d(1, 1);
    cr_assert_eq(vyre_pipeline_launch(NULL, &cfg, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_pipeline_dispatch_host(NULL, &cfg, NULL, 0, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_pipeline_dispatch_resident(NULL, &cfg, NULL, 0, &e), VYRE_EINVAL);
    vyre_buffer *b = (vyre_buffer *)&e;
    cr_assert_eq(vyre_buffer_alloc(NULL, 16, &b, &e), VYRE_EINVAL);
    cr_assert_null(b);
    char host[4];
    cr_assert_eq(vyre_buffer_upload(NULL, 0, host, sizeof host, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_buffer_download(NULL, 0, host, sizeof host, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_buffer_zero(NULL, &e), VYRE_EINVAL);
    vyre_batch *batch = (vyre_batch *)&e;
    cr_assert_eq(vyre_batch_begin(NULL, &batch, &e), VYRE_EINVAL);
    cr_assert_null(batch);
    vyre_graph *g = (vyre_graph *)&e;
    cr_assert_eq(vyre_batch_end(NULL, &g, &e), VYRE_EINVAL);
    cr_assert_null(g);
    cr_assert_eq(vyre_graph_launch(NULL, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_ctx_synchronize(NULL, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_ctx_make_current(NULL, &e), VYRE_EINVAL);
    cr_assert_str_eq(vyre_ctx_arch(NULL), "");
    cr_assert_null(vyre_pipeline_info_get(NULL));
    cr_assert_eq(vyre_graph_kernels(NULL), 0);
    cr_assert_eq(vyre_buffer_size(NULL), 0);
    /* Freeing NULL is a no-op everywhere. */
    vyre_ctx_close(NULL);
    vyre_pipeline_free(NULL);
    vyre_buffer_free(NULL);
    vyre_batch_abort(NULL);
    vyre_graph_free(NULL);
}

Test(pipeline, ctx_open_without_a_driver_says_why)
{
    char lib[700];
    snprintf(lib, sizeof lib, "%s/nowhere/libcuda.so.1", g_tmp);
    setenv("VYRE_CUDA_LIBRARY", lib, 1);
    vyre_ctx *ctx = (vyre_ctx *)&lib;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_open(0, NULL, &ctx, &e), VYRE_ENODRIVER);
    cr_assert_null(ctx);
    cr_assert(strstr(e.message, lib), "message '%s' does not name '%s'", e.message, lib);
    cr_assert_neq(e.hint[0], '\0', "no hint for '%s'", e.message);
}

/* ---- opening a context ----------------------------------------------------- */

Test(pipeline, ctx_open_names_the_device_and_close_releases_it)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    cr_assert_str_eq(vyre_ctx_arch(ctx), "sm_90");
    cr_assert_str_eq(vyre_ctx_device_name(ctx), "NVIDIA Fake H100 80GB HBM3");
    cr_assert_eq(vyre_ctx_device(ctx), 0);
    cr_assert_eq(vyre_ctx_cache(ctx), cache);
    cr_assert_not_null(vyre_ctx_cu_context(ctx));
    cr_assert_not_null(vyre_ctx_cu_stream(ctx));
    cr_assert_eq(fake("ctx_refs"), 1);
    cr_assert_eq(fake("streams"), 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_synchronize(ctx, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(fake("syncs"), 1);
    vyre_ctx_close(ctx);
    assert_driver_clean();
    vyre_cache_close(cache);
}

Test(pipeline, device_out_of_range_is_enodev)
{
    vyre_ctx *ctx = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_open(3, NULL, &ctx, &e), VYRE_ENODEV, "%s", e.message);
    cr_assert_null(ctx);
    assert_driver_clean();
}

Test(pipeline, a_driver_without_what_dispatch_needs_is_enodriver)
{
    setenv("FAKECUDA_MISSING", "cuGraphLaunch", 1);
    vyre_ctx *ctx = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_open(0, NULL, &ctx, &e), VYRE_ENODRIVER);
    cr_assert_null(ctx);
    cr_assert_str_eq(e.message, "the CUDA driver has no 'cuGraphLaunch', which dispatch needs");
    cr_assert_str_eq(e.hint, "update the NVIDIA driver to one that supports CUDA 13");
    assert_driver_clean();
}

Test(pipeline, a_failing_driver_call_in_ctx_open_leaves_nothing_behind)
{
    vyre_cache *cache = open_cache();
    setenv("FAKECUDA_FAIL", "cuStreamCreate=2", 1);
    vyre_ctx *ctx = (vyre_ctx *)&cache;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_ctx_open(0, cache, &ctx, &e), VYRE_ENOMEM, "%s", e.message);
    cr_assert_null(ctx);
    cr_assert_str_eq(e.message,
                     "cuStreamCreate failed: CUDA_ERROR_OUT_OF_MEMORY (fake: out of memory)");
    assert_driver_clean();
    vyre_cache_close(cache);
}

/* ---- compiling --------------------------------------------------------------- */

Test(pipeline, a_miss_then_a_disk_hit_then_a_module_cache_hit)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    vyre_counters c0, c1;

    /* 1. Nothing anywhere: "compiled" (a cubin is copied), stored, loaded. */
    vyre_counters_snapshot(&c0);
    vyre_pipeline *p1 = compile(ctx, "add_one", 0);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *i1 = vyre_pipeline_info_get(p1);
    cr_assert_eq(i1->origin, VYRE_PIPELINE_COMPILED);
    cr_assert_eq(i1->store_rc, 0, "store: %s", i1->store_error.message);
    cr_assert_eq(i1->cubin_size, sizeof CUBIN);
    cr_assert_str_eq(i1->arch, "sm_90");
    cr_assert_eq(i1->driver_rejected, 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_MODULE_LOADS), 1);
    cr_assert_eq(c1.ranges[VYRE_RANGE_PIPELINE_COMPILE].count -
                     c0.ranges[VYRE_RANGE_PIPELINE_COMPILE].count,
                 1);
    cr_assert_eq(fake("module_loads"), 1);
    vyre_key key = i1->key;

    /* The key is the one vyre_compile_key gives (what `seed` stores). */
    vyre_compile_request req = {
        VYRE_SOURCE_CUBIN, CUBIN, sizeof CUBIN, "sm_90", "add_one", NULL, 0};
    vyre_key want;
    cr_assert_eq(vyre_compile_key(&req, &want, NULL), 0);
    cr_assert_eq(memcmp(&want, &key, sizeof key), 0);
    vyre_blob *blob = NULL;
    cr_assert_eq(vyre_cache_get(cache, &key, &blob, NULL, NULL), 0, "the cubin was not stored");
    cr_assert_eq(blob->size, sizeof CUBIN);
    cr_assert_eq(memcmp(blob->payload, CUBIN, sizeof CUBIN), 0);
    vyre_blob_free(blob);

    /* 2. Same ctx: the module cache, no disk, no load. */
    vyre_counters_snapshot(&c0);
    vyre_pipeline *p2 = compile(ctx, "add_one", 0);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *i2 = vyre_pipeline_info_get(p2);
    cr_assert_eq(i2->origin, VYRE_PIPELINE_FROM_MODULE_CACHE);
    cr_assert_eq(i2->cubin_size, 0);
    cr_assert_eq(i2->compile_ns, 0);
    cr_assert_eq(memcmp(&i2->key, &key, sizeof key), 0);
    cr_assert_eq(vyre_pipeline_cu_function(p2), vyre_pipeline_cu_function(p1));
    cr_assert_eq(vyre_pipeline_cu_module(p2), vyre_pipeline_cu_module(p1));
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_MODULE_CACHE_HITS), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS) + delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 0);
    cr_assert_eq(fake("module_loads"), 1);

    /* Freeing the handles keeps the module: a third compile still hits. */
    vyre_pipeline_free(p1);
    vyre_pipeline_free(p2);
    cr_assert_eq(fake("modules"), 1);
    vyre_pipeline *p3 = compile(ctx, "add_one", 0);
    cr_assert_eq(vyre_pipeline_info_get(p3)->origin, VYRE_PIPELINE_FROM_MODULE_CACHE);
    vyre_ctx_close(ctx); /* frees p3 too */
    assert_driver_clean();

    /* 3. A new ctx: the disk cache, a load, no compile. */
    ctx = open_ctx(cache);
    vyre_counters_snapshot(&c0);
    vyre_pipeline *p4 = compile(ctx, "add_one", 0);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *i4 = vyre_pipeline_info_get(p4);
    cr_assert_eq(i4->origin, VYRE_PIPELINE_FROM_DISK_CACHE);
    cr_assert_eq(i4->cubin_size, sizeof CUBIN);
    cr_assert_geq(i4->compile_ns, 1, "a hit saves the stored compile time");
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILES), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_COMPILE_NS_SAVED), i4->compile_ns);
    cr_assert_eq(fake("module_loads"), 2);

    /* Another entry of the same cubin: the same module, so the same key
     * and blob (key v2: a disk hit), but its own function. */
    vyre_pipeline *p5 = compile(ctx, "fill_u32", 0);
    cr_assert_eq(memcmp(&vyre_pipeline_info_get(p5)->key, &key, sizeof key), 0);
    cr_assert_eq(vyre_pipeline_info_get(p5)->origin, VYRE_PIPELINE_FROM_DISK_CACHE);
    cr_assert_neq(vyre_pipeline_cu_function(p5), vyre_pipeline_cu_function(p4));
    vyre_pipeline_free(p5);
    vyre_pipeline_free(p4);
    vyre_ctx_close(ctx);
    assert_driver_clean();
    vyre_cache_close(cache);
}

Test(pipeline, no_module_cache_gives_a_module_of_its_own)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    vyre_pipeline *a = compile(ctx, "add_one", 0);
    cr_assert_eq(fake("modules"), 1);
    vyre_pipeline *b = compile(ctx, "add_one", VYRE_PIPELINE_NO_MODULE_CACHE);
    cr_assert_eq(vyre_pipeline_info_get(b)->origin, VYRE_PIPELINE_FROM_DISK_CACHE);
    cr_assert_neq(vyre_pipeline_cu_module(b), vyre_pipeline_cu_module(a));
    cr_assert_eq(fake("modules"), 2);
    vyre_pipeline_free(b);
    cr_assert_eq(fake("modules"), 1, "freeing it unloads its module");
    vyre_pipeline_free(a);
    cr_assert_eq(fake("modules"), 1, "the module cache keeps its own");

    vyre_pipeline_desc d = cubin_desc("add_one", 0x80);
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "unknown pipeline flags 0x80");
    cr_assert_str_eq(e.hint, "pass 0 or VYRE_PIPELINE_NO_MODULE_CACHE");
    vyre_ctx_close(ctx);
    assert_driver_clean();
    vyre_cache_close(cache);
}

Test(pipeline, a_missing_entry_is_enoent_and_unloads_the_module)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    vyre_pipeline_desc d = cubin_desc("saxpy", 0);
    vyre_pipeline *p = (vyre_pipeline *)&d;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, &e), VYRE_ENOENT, "%s", e.message);
    cr_assert_null(p);
    cr_assert_str_eq(e.message, "the module has no kernel 'saxpy'");
    cr_assert_str_eq(e.hint, "declare the kernel extern \"C\" (or pass its mangled name) and "
                             "check the entry name");
    cr_assert_eq(fake("module_loads"), 1);
    cr_assert_eq(fake("modules"), 0, "the module without the entry stays loaded");
    /* The ctx still works. */
    p = compile(ctx, "noop", 0);
    vyre_ctx_close(ctx);
    assert_driver_clean();
    vyre_cache_close(cache);
}

Test(pipeline, cubin_input_without_the_elf_magic_is_einval)
{
    vyre_ctx *ctx = open_ctx(NULL); /* the default cache, under XDG_CACHE_HOME */
    static const char not_elf[] = "// CUDA C by mistake\n";
    vyre_pipeline_desc d = cubin_desc("add_one", 0);
    d.src = not_elf;
    d.len = sizeof not_elf - 1;
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, &e), VYRE_EINVAL, "%s", e.message);
    cr_assert_str_eq(e.message, "cubin input for 'add_one' does not start with the ELF magic");
    cr_assert_neq(e.hint[0], '\0');
    cr_assert_eq(fake("module_loads"), 0, "nothing reached the driver");
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

Test(pipeline, an_entry_the_module_lacks_is_enoent_naming_its_kernels)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    /* A cubin whose symbol table lists add_one and twice. */
    const char *k[] = {"add_one", "twice"};
    size_t len = 0;
    unsigned char *img = fake_cubin(k, 2, NULL, 0, 1, "pipeline", &len);
    cr_assert_not_null(img);
    vyre_pipeline_desc d;
    memset(&d, 0, sizeof d);
    d.kind = VYRE_SOURCE_CUBIN;
    d.src = img;
    d.len = len;
    d.entry = "matmul";
    vyre_pipeline *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, &e), VYRE_ENOENT, "%s", e.message);
    cr_assert_str_eq(e.message, "the module has no kernel 'matmul'; it defines 2: add_one, twice");
    cr_assert_neq(e.hint[0], '\0');
    cr_assert_null(p);
    cr_assert_eq(fake("module_loads"), 0, "refused before the driver");
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(cache, &st, NULL), 0);
    cr_assert_eq(st.entries, 0, "a module without the kernel asked for is not stored");

    /* No entry at all: a usage error, before anything is keyed. */
    d.entry = NULL;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "no entry point named for the cubin source");
    d.entry = "";
    cr_assert_eq(vyre_pipeline_compile(ctx, &d, &p, NULL), VYRE_EINVAL);
    free(img);
    vyre_ctx_close(ctx);
    vyre_cache_close(cache);
    assert_driver_clean();
}

Test(pipeline, a_cubin_the_driver_refuses_is_recompiled_and_replaced)
{
    vyre_cache *cache = open_cache();
    vyre_ctx *ctx = open_ctx(cache);
    /* A blob that passes every cache check but is a cubin for another GPU. */
    vyre_compile_request req = {
        VYRE_SOURCE_CUBIN, CUBIN, sizeof CUBIN, "sm_90", "add_one", NULL, 0};
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_key(&req, &h.key, &e), 0, "%s", e.message);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "test-foreign");
    h.compile_ns = 5;
    static const char foreign[] = "\x7f"
                                  "ELF built for sm_75";
    cr_assert_eq(vyre_cache_put(cache, &h, foreign, sizeof foreign, &e), 0, "%s", e.message);

    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_pipeline *p = compile(ctx, "add_one", 0);
    vyre_counters_snapshot(&c1);
    const vyre_pipeline_info *info = vyre_pipeline_info_get(p);
    cr_assert_eq(info->driver_rejected, 1);
    cr_assert_eq(info->origin, VYRE_PIPELINE_COMPILED);
    cr_assert_eq(info->store_rc, 0, "store: %s", info->store_error.message);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_HITS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_CACHE_MISSES), 1);
    cr_assert_eq(fake("module_loads"), 1, "the refused image is not counted as loaded");

    vyre_blob *blob = NULL;
    cr_assert_eq(vyre_cache_get(cache, &h.key, &blob, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(blob->size, sizeof CUBIN, "the foreign blob was not replaced");
    cr_assert_str_eq(blob->header.toolchain, "cubin");
    vyre_blob_free(blob);
    vyre_ctx_close(ctx);
    assert_driver_clean();
    vyre_cache_close(cache);
}

/* ---- dispatching ------------------------------------------------------------- */

Test(pipeline, host_dispatch_uploads_launches_and_reads_back)
{
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline *p = compile(ctx, "add_one", 0);
    static float in[N], out[N];
    for (unsigned i = 0; i < N; i++) {
        in[i] = (float)i * 0.5f;
        out[i] = -7.0f;
    }
    unsigned n = N;
    vyre_arg args[3] = {vyre_arg_out(out, sizeof out), vyre_arg_in(in, sizeof in),
                        vyre_arg_scalar(&n, sizeof n)};
    vyre_launch_cfg cfg = vyre_launch_1d((N + 127) / 128, 128);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_pipeline_dispatch_host(p, &cfg, args, 3, &e);
    cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
    vyre_counters_snapshot(&c1);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(out[i], in[i] + 1.0f, "out[%u] = %g", i, (double)out[i]);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_DISPATCHES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_H2D_COPIES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_H2D_BYTES), sizeof in);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_D2H_COPIES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_D2H_BYTES), sizeof out);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_READBACKS), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_SYNCS), 1);
    cr_assert_eq(
        c1.ranges[VYRE_RANGE_HOST_DISPATCH].count - c0.ranges[VYRE_RANGE_HOST_DISPATCH].count, 1);
    cr_assert_eq(fake("launches"), 1);
    cr_assert_eq(fake("htod"), 1);
    cr_assert_eq(fake("dtoh"), 1);
    cr_assert_eq(fake("memsets"), 1, "the OUT buffer is zeroed on the device");

    /* A kernel that writes only the first half: the rest of an OUT comes
     * back zeroed (the fake's fresh device memory is 0xcd, so a missing
     * zeroing would show). The transient memory comes from the pools. */
    vyre_pool_stats d0, d1;
    vyre_ctx_pool_stats(ctx, &d0, NULL);
    n = N / 2;
    rc = vyre_pipeline_dispatch_host(p, &cfg, args, 3, &e);
    cr_assert_eq(rc, 0, "%s", e.message);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(out[i], i < N / 2 ? in[i] + 1.0f : 0.0f, "out[%u] = %g", i, (double)out[i]);
    vyre_ctx_pool_stats(ctx, &d1, NULL);
    cr_assert_eq(d1.allocs, d0.allocs, "the second dispatch allocated device memory");
    cr_assert_geq(d1.reuses - d0.reuses, 2);

    /* INOUT: read, written, read back in place. */
    vyre_pipeline *fill = compile(ctx, "fill_u32", 0);
    static unsigned words[N];
    for (unsigned i = 0; i < N; i++)
        words[i] = i;
    unsigned value = 0xfeedu, count = N - 1;
    vyre_arg fargs[3] = {vyre_arg_inout(words, sizeof words), vyre_arg_scalar(&value, sizeof value),
                         vyre_arg_scalar(&count, sizeof count)};
    rc = vyre_pipeline_dispatch_host(fill, &cfg, fargs, 3, &e);
    cr_assert_eq(rc, 0, "%s", e.message);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(words[i], i < N - 1 ? 0xfeedu : N - 1, "words[%u] = %u", i, words[i]);
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

Test(pipeline, host_dispatch_errors_say_which_argument)
{
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline *p = compile(ctx, "add_one", 0);
    float host[4] = {0};
    unsigned n = 4;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 32);
    vyre_error e;

    vyre_arg empty[3] = {vyre_arg_out(host, 0), vyre_arg_in(host, sizeof host),
                         vyre_arg_scalar(&n, sizeof n)};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, empty, 3, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "host argument 0 has size 0");
    cr_assert_str_eq(e.hint, "pass the size of the host memory in bytes");

    vyre_arg no_value[3] = {vyre_arg_out(host, sizeof host), vyre_arg_in(host, sizeof host),
                            vyre_arg_scalar(NULL, sizeof n)};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, no_value, 3, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "scalar argument 2 has no value");

    vyre_arg many[VYRE_MAX_ARGS + 1];
    for (size_t i = 0; i < VYRE_MAX_ARGS + 1; i++)
        many[i] = vyre_arg_scalar(&n, sizeof n);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, many, VYRE_MAX_ARGS + 1, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "vyre_pipeline_dispatch_host: 65 kernel parameters (at most 64)");

    /* The driver fails the launch: its error, and nothing counted. */
    vyre_arg ok[3] = {vyre_arg_out(host, sizeof host), vyre_arg_in(host, sizeof host),
                      vyre_arg_scalar(&n, sizeof n)};
    setenv("FAKECUDA_FAIL", "cuLaunchKernel=700", 1);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, ok, 3, &e), VYRE_ECUDA, "%s", e.message);
    cr_assert_str_eq(e.message, "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (fake: an "
                                "illegal memory access was encountered)");
    vyre_counters_snapshot(&c1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_READBACKS), 0);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_SYNCS), 1, "it waits for the queued upload anyway");
    unsetenv("FAKECUDA_FAIL");

    /* Every failed dispatch gave its transient memory back to the pools:
     * nothing is stranded, and the ctx still dispatches. */
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_host(p, &cfg, ok, 3, &e), 0, "%s", e.message);
    cr_assert_eq(host[3], 1.0f);
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

Test(pipeline, resident_buffers_upload_dispatch_and_download)
{
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline *p = compile(ctx, "add_one", 0);
    vyre_buffer *in = NULL, *out = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_buffer_alloc(ctx, N * sizeof(float), &in, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_alloc(ctx, N * sizeof(float), &out, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_size(in), N * sizeof(float));
    cr_assert_neq(vyre_buffer_device_ptr(in), 0);
    cr_assert_eq(fake("allocs"), 2);

    static float host[N], back[N];
    for (unsigned i = 0; i < N; i++)
        host[i] = (float)(N - i);
    cr_assert_eq(vyre_buffer_upload(in, 0, host, sizeof host, &e), 0, "%s", e.message);
    /* A partial upload at an offset. */
    float patch[2] = {100.0f, 200.0f};
    cr_assert_eq(vyre_buffer_upload(in, 10 * sizeof(float), patch, sizeof patch, &e), 0);
    host[10] = 100.0f;
    host[11] = 200.0f;

    unsigned n = N;
    vyre_arg args[3] = {vyre_arg_buffer(out), vyre_arg_buffer(in), vyre_arg_scalar(&n, sizeof n)};
    vyre_launch_cfg cfg = vyre_launch_1d((N + 255) / 256, 256);
    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    cr_assert_eq(vyre_pipeline_dispatch_resident(p, &cfg, args, 3, &e), 0, "%s", e.message);
    vyre_counters_snapshot(&c1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_H2D_COPIES) + delta(&c1, &c0, VYRE_CTR_D2H_COPIES) +
                     delta(&c1, &c0, VYRE_CTR_SYNCS),
                 0, "a resident dispatch copies and waits for nothing");
    cr_assert_eq(vyre_buffer_download(out, 0, back, sizeof back, &e), 0, "%s", e.message);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(back[i], host[i] + 1.0f, "back[%u] = %g", i, (double)back[i]);

    /* The bare launch path takes the driver's parameter array. */
    uint64_t po = vyre_buffer_device_ptr(out), pi = vyre_buffer_device_ptr(out);
    void *params[3] = {&po, &pi, &n};
    cr_assert_eq(vyre_pipeline_launch(p, &cfg, params, &e), 0, "%s", e.message);
    float one = 0;
    cr_assert_eq(vyre_buffer_download(out, 5 * sizeof(float), &one, sizeof one, &e), 0);
    cr_assert_eq(one, host[5] + 2.0f);
    cr_assert_eq(fake("launches"), 2);

    /* Zeroing, ranges, kinds. */
    cr_assert_eq(vyre_buffer_zero(out, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_buffer_download(out, 0, back, sizeof back, &e), 0);
    for (unsigned i = 0; i < N; i++)
        cr_assert_eq(back[i], 0.0f);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_buffer_upload(in, 4000 - 4, patch, sizeof patch, &e), VYRE_ERANGE);
    cr_assert_str_eq(e.message, "vyre_buffer_upload: 8 bytes at offset 3996 of a 4000-byte buffer");
    cr_assert_str_eq(e.hint, "stay within the buffer");
    vyre_arg host_arg[1] = {vyre_arg_in(host, sizeof host)};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_resident(p, &cfg, host_arg, 1, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "argument 0 has kind 2");

    /* A buffer of another ctx (same device) is refused. */
    vyre_ctx *other = open_ctx(NULL);
    vyre_buffer *foreign = NULL;
    cr_assert_eq(vyre_buffer_alloc(other, 16, &foreign, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_ctx_make_current(ctx, &e), 0);
    vyre_arg fargs[3] = {vyre_arg_buffer(foreign), vyre_arg_buffer(in),
                         vyre_arg_scalar(&n, sizeof n)};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_pipeline_dispatch_resident(p, &cfg, fargs, 3, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "buffer argument 0 belongs to another context");
    vyre_buffer_free(foreign);
    vyre_ctx_close(other);

    vyre_buffer_free(in);
    vyre_buffer_free(out);
    cr_assert_eq(fake("allocs"), 0);
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

/* A thread that never made the ctx current: the lean launch path does not
 * either (as documented), so the driver refuses until it does. */
struct launcher {
    vyre_pipeline *p;
    vyre_ctx *ctx;
    int before, after;
};

static void *launch_elsewhere(void *arg)
{
    struct launcher *l = arg;
    vyre_launch_cfg cfg = vyre_launch_1d(1, 1);
    l->before = vyre_pipeline_launch(l->p, &cfg, NULL, NULL);
    l->after = vyre_ctx_make_current(l->ctx, NULL);
    if (!l->after)
        l->after = vyre_pipeline_launch(l->p, &cfg, NULL, NULL);
    return NULL;
}

Test(pipeline, another_thread_launches_once_it_makes_the_ctx_current)
{
    vyre_ctx *ctx = open_ctx(NULL);
    struct launcher l = {compile(ctx, "noop", 0), ctx, 0, 0};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, launch_elsewhere, &l), 0);
    pthread_join(th, NULL);
    cr_assert_eq(l.before, VYRE_ECUDA, "%s", vyre_err_name(l.before));
    cr_assert_eq(l.after, 0, "%s", vyre_err_name(l.after));
    cr_assert_eq(fake("launches"), 1);
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

/* ---- batches and graphs ------------------------------------------------------ */

Test(pipeline, a_graph_replays_its_captured_launches)
{
    vyre_ctx *ctx = open_ctx(NULL);
    vyre_pipeline *fill = compile(ctx, "fill_u32", 0);
    vyre_buffer *buf[3];
    vyre_error e;
    vyre_error_clear(&e);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vyre_buffer_alloc(ctx, N * sizeof(unsigned), &buf[i], &e), 0);

    vyre_batch *b = NULL;
    cr_assert_eq(vyre_batch_begin(ctx, &b, &e), 0, "%s", e.message);
    cr_assert_eq(fake("streams"), 2, "the batch captures on a stream of its own");
    unsigned value = 0, n = N;
    vyre_launch_cfg cfg = vyre_launch_1d((N + 127) / 128, 128);
    for (int i = 0; i < 3; i++) {
        uint64_t d = vyre_buffer_device_ptr(buf[i]);
        value = 10u + (unsigned)i;
        void *params[3] = {&d, &value, &n};
        cr_assert_eq(vyre_batch_add(b, fill, &cfg, params, &e), 0, "%s", e.message);
    }
    value = 999; /* the values were copied when captured */
    cr_assert_eq(fake("launches"), 0, "capturing runs nothing");
    vyre_graph *g = NULL;
    cr_assert_eq(vyre_batch_end(b, &g, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_graph_kernels(g), 3);
    cr_assert_not_null(vyre_graph_cu_exec(g));
    cr_assert_eq(fake("streams"), 1);
    cr_assert_eq(fake("graphs"), 0, "the graph is dropped once instantiated");

    vyre_counters c0, c1;
    vyre_counters_snapshot(&c0);
    for (int r = 0; r < 2; r++)
        cr_assert_eq(vyre_graph_launch(g, NULL, &e), 0, "%s", e.message);
    vyre_counters_snapshot(&c1);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_GRAPH_LAUNCHES), 2);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_BATCH_DISPATCHES), 2);
    cr_assert_eq(delta(&c1, &c0, VYRE_CTR_LAUNCHES), 6);
    cr_assert_eq(fake("graph_launches"), 2);
    cr_assert_eq(fake("launches"), 6);
    static unsigned back[N];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(vyre_buffer_download(buf[i], 0, back, sizeof back, &e), 0, "%s", e.message);
        for (unsigned k = 0; k < N; k++)
            cr_assert_eq(back[k], 10u + (unsigned)i, "buffer %d [%u] = %u", i, k, back[k]);
    }
    vyre_graph_free(g);

    /* An empty batch, a failed add, an abort: no graph, nothing left. */
    cr_assert_eq(vyre_batch_begin(ctx, &b, &e), 0);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_batch_end(b, &g, &e), VYRE_EINVAL);
    cr_assert_null(g);
    cr_assert_str_eq(e.message, "the batch is empty");

    cr_assert_eq(vyre_batch_begin(ctx, &b, &e), 0);
    setenv("FAKECUDA_FAIL", "cuLaunchKernel=1", 1);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_batch_add(b, fill, &cfg, NULL, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "cuLaunchKernel (captured) failed: CUDA_ERROR_INVALID_VALUE "
                                "(fake: invalid argument)");
    unsetenv("FAKECUDA_FAIL");
    vyre_error_clear(&e);
    cr_assert_eq(vyre_batch_end(b, &g, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "a launch added to the batch failed; the graph is discarded");

    cr_assert_eq(vyre_batch_begin(ctx, &b, &e), 0);
    vyre_batch_abort(b);
    cr_assert_eq(fake("streams"), 1);
    cr_assert_eq(fake("graphs") + fake("graph_execs"), 0);

    for (int i = 0; i < 3; i++)
        vyre_buffer_free(buf[i]);
    vyre_ctx_close(ctx);
    assert_driver_clean();
}

/* The spec's "cooperative" and "pdl" as cuLaunchKernelEx attributes
 * (issue 38 point 1): each flag one attribute, with the value the driver
 * takes as on; none for a plain launch. */
Test(pipeline, launch_flags_become_cuLaunchKernelEx_attributes)
{
    CUlaunchAttribute a[2];
    memset(a, 0xff, sizeof a);
    cr_assert_eq(vyre__launch_attrs(0, a), 0);
    cr_assert_eq(vyre__launch_attrs(VYRE__LAUNCH_COOPERATIVE, a), 1);
    cr_assert_eq(a[0].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    cr_assert_eq(a[0].value.cooperative, 1);
    cr_assert_eq(vyre__launch_attrs(VYRE__LAUNCH_PDL, a), 1);
    cr_assert_eq(a[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    cr_assert_eq(a[0].value.programmaticStreamSerializationAllowed, 1);
    cr_assert_eq(vyre__launch_attrs(VYRE__LAUNCH_COOPERATIVE | VYRE__LAUNCH_PDL, a), 2);
    cr_assert_eq(a[0].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    cr_assert_eq(a[1].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    cr_assert_eq(a[1].value.programmaticStreamSerializationAllowed, 1);
}
