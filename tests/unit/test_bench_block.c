/*
 * test_bench_block.c - the blocking kernel of GPU-timed samples
 * (libcore/src/bench/gpu_device.c, issue 23) without a GPU: the memcpy
 * suite runs in this process over the fake driver (tests/fakes/fakecuda.c),
 * which models vyre_block_stream: a hold from its launch to the next
 * synchronisation, released when the host has written the flag by then,
 * timed out when FAKECUDA_BLOCK_LOST says the release is lost. The fake
 * counts what it saw (fakecuda_count, read through dlopen of the same
 * library).
 *
 * What must hold, in every round of the run (the whole run is measured
 * ROUNDS times, the points interleaved): every sample of a copy that can be
 * queued is held, with exactly its two events queued behind the hold and
 * the release after them; pageable copies (the driver returns from them
 * only once the GPU has moved the bytes) are never queued behind a hold;
 * the GPU reference (reference.gpu, once a round per device) is held the
 * same way; a lost release costs one discarded sample, counted with the
 * point whose round lost it (not the device's next point to finish), never
 * the run; releases lost again and again turn the hold off for the rest of
 * the run on that device (not again in every round) and the run still
 * finishes; and no_blocking_kernel launches no hold at all.
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
                                     "VYRE_CUPTI_LIBRARY",
                                     "FAKECUDA_WRITE_MAX"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_dir[512];
/* The run's tmp_dir (the fsync reference's file): a memory filesystem when
 * there is one (tu_mkdtemp_mem); nothing there is inspected. */
static char g_mem[512];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_dir, sizeof g_dir);
    tu_mkdtemp_mem(g_mem, sizeof g_mem);
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
    /* The holds and events are counted, never the bytes: the fake moves
     * 4 KiB of each 256 MiB copy (a run copied about 19 GiB, 30 s). */
    setenv("FAKECUDA_WRITE_MAX", "4096", 1);
}

static void teardown(void)
{
    tu_rm_rf(g_mem);
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

#define ROUNDS 3

static int is_copy(const vyre_bench_point *p)
{
    return strcmp(p->suite, "memcpy") == 0;
}

static const vyre_bench_point *find(const struct run *r, const char *bench, const char *axes)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->pts[i].benchmark, bench) == 0 && strcmp(r->pts[i].axes, axes) == 0)
            return &r->pts[i];
    cr_assert_fail("no point %s %s", bench, axes);
    return NULL;
}

/* Samples of point p per round: each of the ROUNDS rounds has some. */
static void per_round(const struct run *r, const vyre_bench_point *p, size_t per[ROUNDS])
{
    vyre_bench_sample *s = NULL;
    size_t ns = 0;
    cr_assert_eq(vyre_bench_samples_get(r->db, p->id, &s, &ns, NULL), 0);
    memset(per, 0, ROUNDS * sizeof *per);
    for (size_t k = 0; k < ns; k++) {
        cr_assert_lt(s[k].round, ROUNDS);
        per[s[k].round]++;
    }
    vyre_free(s);
}

/* The memcpy suite, --quick, in ROUNDS rounds of 2 samples a point, no
 * kernel pass: 3 sizes x 5 copies, the 3 host references and the GPU
 * reference of device 0. */
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
    o.rounds = ROUNDS;
    o.rule = (vyre_stats_stop_rule){2 * ROUNDS, 0.0, 0.0, 60.0, 2 * ROUNDS};
    o.no_blocking_kernel = no_blocking;
    o.tmp_dir = g_mem;
    o.command_line = "test";
    cr_assert_eq(vyre_bench_run_suites(&o, &r->res, &e), 0, "%s (%s)", e.message, e.hint);
    cr_assert_eq(r->res.interrupted, 0);
    cr_assert_eq(r->res.rounds, ROUNDS);
    cr_assert_eq(vyre_bench_points_get(r->db, r->res.run_id, &r->pts, &r->n, &e), 0, "%s",
                 e.message);
    size_t copies = 0, refs = 0;
    for (size_t i = 0; i < r->n; i++) {
        copies += is_copy(&r->pts[i]);
        refs += strcmp(r->pts[i].suite, "reference") == 0;
        cr_assert_eq(r->pts[i].rounds, ROUNDS, "%s", r->pts[i].benchmark);
    }
    cr_assert_eq(copies, 15, "3 sizes x 5 copies");
    cr_assert_eq(refs, 4, "reference.cpu, .cpus, .fsync and .gpu");
    cr_assert_eq(r->n, 19);
    const vyre_bench_point *g = find(r, "reference.gpu", "");
    cr_assert_eq(g->device, 0);
    cr_assert_eq(g->gpu_timer, 1);
    cr_assert_eq(g->mode, VYRE_BENCH_HOT);
    vyre_bench_run run;
    cr_assert_eq(vyre_bench_run_get(r->db, r->res.run_id, &run, &e), 0, "%s", e.message);
    cr_assert_eq(run.status, VYRE_RUN_DONE, "%s", run.message);
}

static void run_free(struct run *r)
{
    vyre_free(r->pts);
    vyre_bench_run_result_release(&r->res);
    vyre_results_close(r->db);
}

static int pageable(const vyre_bench_point *p)
{
    return strstr(p->benchmark, "pageable") != NULL;
}

Test(bench_block, every_queued_sample_waits_behind_a_released_hold_in_every_round)
{
    struct run r;
    run_memcpy(&r, 0);
    long launches = fake("block_launches");
    /* 3 sizes x 3 queueable copies x (ROUNDS x (2 warm-up + 2 samples) + at
     * least 1 batch pair), and the GPU reference's ROUNDS x (1 warm-up + 20). */
    cr_assert_geq(launches, 3 * 3 * (ROUNDS * 4 + 1) + ROUNDS * 21, "holds: %ld", launches);
    cr_assert_eq(fake("block_released"), launches, "every hold released by the host");
    cr_assert_eq(fake("block_timeouts"), 0);
    cr_assert_eq(fake("block_early"), 0, "released before the stop event was queued");
    cr_assert_eq(fake("block_events"), 2 * launches, "exactly the sample's two events held");
    cr_assert_eq(fake("block_stalls"), 0, "a pageable copy queued behind a hold");
    long refs = fake("reference_launches");
    cr_assert_geq(refs, ROUNDS * 21, "reference kernels: %ld", refs);
    cr_assert_eq(fake("reference_held"), refs, "every reference launch held");
    for (size_t i = 0; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        if (!p->gpu_timer)
            continue;
        size_t per[ROUNDS];
        per_round(&r, p, per);
        cr_assert_eq(p->n_block_timeouts, 0);
        cr_assert_gt(p->batch_ns, 0, "%s %s has a batch view", p->benchmark, p->axes);
        cr_assert_eq(p->kernel_ns, 0, "no kernel pass, no kernel view");
        if (is_copy(p)) {
            cr_assert_eq(p->stats.n, 2 * ROUNDS, "%s", p->benchmark);
            for (int k = 0; k < ROUNDS; k++)
                cr_assert_eq(per[k], 2, "%s %s round %d: %zu", p->benchmark, p->axes, k, per[k]);
        } else {
            for (int k = 0; k < ROUNDS; k++)
                cr_assert_geq(per[k], 20, "reference.gpu round %d: %zu", k, per[k]);
        }
        if (pageable(p))
            cr_assert(strstr(p->note, "no blocking kernel"), "%s: '%s'", p->benchmark, p->note);
        else
            cr_assert(!strstr(p->note, "blocking kernel"), "%s: '%s'", p->benchmark, p->note);
    }
    run_free(&r);
}

Test(bench_block, a_lost_release_discards_and_counts_one_sample_with_its_point)
{
    setenv("FAKECUDA_BLOCK_LOST", "2", 1);
    struct run r;
    run_memcpy(&r, 0);
    cr_assert_eq(fake("block_timeouts"), 2);
    cr_assert_eq(fake("block_released"), fake("block_launches") - 2);
    cr_assert_eq(fake("block_early"), 0);
    /* The first held sample of the run: the warm-up of the first copy that
     * can be queued, in round 0 (the GPU reference ends each round). Its
     * point finishes in the last round, after every other point's round 0. */
    const vyre_bench_point *first = find(&r, "memcpy.h2d.pinned", "bytes=65536");
    cr_assert_eq(first->n_block_timeouts, 2, "counted with the point that lost them");
    cr_assert(strstr(first->note, "2 samples discarded: the blocking kernel timed out"), "'%s'",
              first->note);
    size_t total = 0;
    for (size_t i = 0; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        if (is_copy(p))
            cr_assert_eq(p->stats.n, 2 * ROUNDS, "%s: the discarded samples are not among them",
                         p->benchmark);
        total += p->n_block_timeouts;
        if (p != first)
            cr_assert(!strstr(p->note, "discarded"), "%s %s: '%s'", p->benchmark, p->axes, p->note);
    }
    cr_assert_eq(total, 2);
    run_free(&r);
}

Test(bench_block, releases_lost_again_and_again_turn_the_hold_off_for_the_run)
{
    setenv("FAKECUDA_BLOCK_LOST", "1000000", 1);
    struct run r;
    run_memcpy(&r, 0);
    cr_assert_eq(fake("block_timeouts"), 3, "three in a row, then no more holds in any round");
    cr_assert_eq(fake("block_launches"), 3);
    cr_assert_eq(fake("reference_held"), 0);
    cr_assert_eq(find(&r, "memcpy.h2d.pinned", "bytes=65536")->n_block_timeouts, 3);
    for (size_t i = 0; i < r.n; i++) {
        const vyre_bench_point *p = &r.pts[i];
        if (!p->gpu_timer)
            continue;
        if (is_copy(p))
            cr_assert_eq(p->stats.n, 2 * ROUNDS);
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
    cr_assert_geq(fake("reference_launches"), ROUNDS * 21, "the reference is measured still");
    for (size_t i = 0; i < r.n; i++) {
        cr_assert(!strstr(r.pts[i].note, "blocking kernel"), "'%s'", r.pts[i].note);
        if (r.pts[i].gpu_timer)
            cr_assert_gt(r.pts[i].batch_ns, 0);
    }
    run_free(&r);
}
