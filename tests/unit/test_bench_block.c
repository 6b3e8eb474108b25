/*
 * test_bench_block.c - the blocking kernel of GPU-timed samples
 * (libcore/src/bench/bench_gpu.c, issue 23) without a GPU: the memcpy
 * suite runs in this process over the fake driver (tests/fakes/fakecuda.c),
 * which models vyre_block_stream: a hold from its launch to the next
 * synchronisation, released when the host has written the flag by then,
 * timed out when FAKECUDA_BLOCK_LOST says the release is lost. The fake
 * counts what it saw (fakecuda_count, read through dlopen of the same
 * library).
 *
 * What must hold: every sample of a copy that can be queued is held, with
 * exactly its two events queued behind the hold and the release after
 * them; pageable copies (the driver returns from them only once the GPU
 * has moved the bytes) are never queued behind a hold; a lost release
 * costs one discarded, counted sample, never the run; releases lost again
 * and again turn the hold off and the run still finishes; and
 * no_blocking_kernel launches no hold at all.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/results.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif

static const char *const g_vars[] = {"VYRE_CUDA_LIBRARY",
                                     "FAKECUDA_DEVICES",
                                     "VYRE_NVML_LIBRARY",
                                     "FAKECUDA_BLOCK_LOST",
                                     "HOME",
                                     "XDG_CACHE_HOME",
                                     "VYRE_PTX_CACHE_DIR",
                                     "CUDA_CACHE_PATH",
                                     "FAKECUDA_FAIL",
                                     "VYRE_TELEMETRY_DIR",
                                     "VYRE_CUPTI_LIBRARY"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_dir[512];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_dir, sizeof g_dir);
    char p[700];
    setenv("HOME", g_dir, 1);
    snprintf(p, sizeof p, "%s/xdg", g_dir);
    setenv("XDG_CACHE_HOME", p, 1);
    snprintf(p, sizeof p, "%s/ptx-cache", g_dir);
    setenv("VYRE_PTX_CACHE_DIR", p, 1);
    snprintf(p, sizeof p, "%s/cuda-jit", g_dir);
    setenv("CUDA_CACHE_PATH", p, 1);
    snprintf(p, sizeof p, "%s/tel", g_dir);
    setenv("VYRE_TELEMETRY_DIR", p, 1);
    setenv("VYRE_CUDA_LIBRARY", FAKECUDA_LIB, 1);
    setenv("FAKECUDA_DEVICES", "1", 1);
    setenv("VYRE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    unsetenv("FAKECUDA_BLOCK_LOST");
    unsetenv("FAKECUDA_FAIL");
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
    tu_env_restore(&g_env);
}

TestSuite(bench_block, .init = setup, .fini = teardown, .timeout = 120);

static long fake(const char *what)
{
    void *h = dlopen(FAKECUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "the fake driver is not loaded: %s", dlerror());
    long (*count)(const char *) = (long (*)(const char *))dlsym(h, "fakecuda_count");
    cr_assert_not_null(count);
    long v = count(what);
    dlclose(h);
    return v;
}

struct run {
    vyre_results *db;
    vyre_bench_run_result res;
    vyre_bench_point *pts;
    size_t n;
};

/* The memcpy suite, --quick, 3 samples a point, no kernel pass. */
static void run_memcpy(struct run *r, int no_blocking)
{
    memset(r, 0, sizeof *r);
    char path[700];
    snprintf(path, sizeof path, "%s/results.sqlite3", g_dir);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(path, &r->db, &e), 0, "%s", e.message);
    static const char *const suites[] = {"memcpy"};
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    o.db = r->db;
    o.suites = suites;
    o.nsuites = 1;
    o.explicit_suites = 1;
    o.quick = 1;
    o.rule = (vyre_stats_stop_rule){3, 0.0, 0.0, 60.0, 3};
    o.no_blocking_kernel = no_blocking;
    o.tmp_dir = g_dir;
    o.command_line = "test";
    cr_assert_eq(vyre_bench_run_suites(&o, &r->res, &e), 0, "%s (%s)", e.message, e.hint);
    cr_assert_eq(r->res.interrupted, 0);
    cr_assert_eq(vyre_bench_points_get(r->db, r->res.run_id, &r->pts, &r->n, &e), 0, "%s",
                 e.message);
    cr_assert_eq(r->n, 15, "3 sizes x 5 copies");
    vyre_bench_run run;
    cr_assert_eq(vyre_bench_run_get(r->db, r->res.run_id, &run, &e), 0, "%s", e.message);
    cr_assert_eq(run.status, VYRE_RUN_DONE, "%s", run.message);
}

static void run_free(struct run *r)
{
    vyre_bench_point_list_free(r->pts);
    vyre_bench_run_result_release(&r->res);
    vyre_results_close(r->db);
}

static int pageable(const vyre_bench_point *p)
{
    return strstr(p->benchmark, "pageable") != NULL;
}

Test(bench_block, every_queued_sample_waits_behind_a_released_hold)
{
    struct run r;
    run_memcpy(&r, 0);
    long launches = fake("block_launches");
    /* 3 sizes x 3 queueable copies x (2 warm-up + 3 samples + at least 1 batch pair). */
    cr_assert_geq(launches, 3 * 3 * 6, "holds: %ld", launches);
    cr_assert_eq(fake("block_released"), launches, "every hold released by the host");
    cr_assert_eq(fake("block_timeouts"), 0);
    cr_assert_eq(fake("block_early"), 0, "released before the stop event was queued");
    cr_assert_eq(fake("block_events"), 2 * launches, "exactly the sample's two events held");
    cr_assert_eq(fake("block_stalls"), 0, "a pageable copy queued behind a hold");
    for (size_t i = 0; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        cr_assert_eq(p->stats.n, 3, "%s", p->benchmark);
        cr_assert_eq(p->n_block_timeouts, 0);
        cr_assert_gt(p->batch_ns, 0, "%s %s has a batch view", p->benchmark, p->axes);
        cr_assert_eq(p->kernel_ns, 0, "no kernel pass, no kernel view");
        if (pageable(p))
            cr_assert(strstr(p->note, "no blocking kernel"), "%s: '%s'", p->benchmark, p->note);
        else
            cr_assert(!strstr(p->note, "blocking kernel"), "%s: '%s'", p->benchmark, p->note);
    }
    run_free(&r);
}

Test(bench_block, a_lost_release_discards_and_counts_one_sample)
{
    setenv("FAKECUDA_BLOCK_LOST", "2", 1);
    struct run r;
    run_memcpy(&r, 0);
    cr_assert_eq(fake("block_timeouts"), 2);
    cr_assert_eq(fake("block_released"), fake("block_launches") - 2);
    cr_assert_eq(fake("block_early"), 0);
    size_t total = 0;
    for (size_t i = 0; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        cr_assert_eq(p->stats.n, 3, "%s: the discarded samples are not among the 3", p->benchmark);
        total += p->n_block_timeouts;
        if (p->n_block_timeouts)
            cr_assert(strstr(p->note, "2 samples discarded: the blocking kernel timed out"),
                      "%s: '%s'", p->benchmark, p->note);
    }
    cr_assert_eq(total, 2, "counted with the point that lost them");
    cr_assert_eq(r.pts[1].n_block_timeouts, 2, "the first held point: %s", r.pts[1].benchmark);
    run_free(&r);
}

Test(bench_block, releases_lost_again_and_again_turn_the_hold_off_and_the_run_ends)
{
    setenv("FAKECUDA_BLOCK_LOST", "1000000", 1);
    struct run r;
    run_memcpy(&r, 0);
    cr_assert_eq(fake("block_timeouts"), 3, "three in a row, then no more holds");
    cr_assert_eq(fake("block_launches"), 3);
    for (size_t i = 1; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        cr_assert_eq(p->stats.n, 3);
        if (!pageable(p))
            cr_assert(strstr(p->note, "blocking kernel off after 3 timeouts in a row"), "%s: '%s'",
                      p->benchmark, p->note);
    }
    run_free(&r);
}

Test(bench_block, disabled_launches_no_hold)
{
    struct run r;
    run_memcpy(&r, 1);
    cr_assert_eq(fake("block_launches"), 0);
    for (size_t i = 0; i < r.n; i++) {
        cr_assert(!strstr(r.pts[i].note, "blocking kernel"), "'%s'", r.pts[i].note);
        cr_assert_gt(r.pts[i].batch_ns, 0);
    }
    run_free(&r);
}
