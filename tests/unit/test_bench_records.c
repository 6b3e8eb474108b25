/*
 * test_bench_records.c - the two sweeps of a run with kernel records
 * (libcore/src/bench/engine.c, vyre__bench_point_run; run.c drives them)
 * without a GPU: samples come from a callback (gpu = 0), CUPTI is the fake
 * (inject/testing/fakecupti.c through $VYRE_CUPTI_LIBRARY) over the fake
 * driver (tests/fakes/fakecuda.c, two devices).
 *
 * What must hold: the timing sweep never runs a kernel pass (CUPTI stays
 * detached while anything is timed), and the records sweep measures
 * nothing and runs each pass for the point the timing sweep stored, found
 * by benchmark, axes, device and mode, in order, across devices.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/results.h"

#ifndef FAKECUDA_LIB
#error "tests/CMakeLists.txt must define FAKECUDA_LIB"
#endif
#ifndef FAKECUPTI_UNIT_LIB
#error "tests/CMakeLists.txt must define FAKECUPTI_UNIT_LIB"
#endif

static const char *const g_vars[] = {"VYRE_CUPTI_LIBRARY", "VYRE_CUDA_LIBRARY", "FAKECUDA_DEVICES",
                                     "VYRE_NVML_LIBRARY"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    setenv("VYRE_CUPTI_LIBRARY", FAKECUPTI_UNIT_LIB, 1);
    setenv("VYRE_CUDA_LIBRARY", FAKECUDA_LIB, 1);
    setenv("FAKECUDA_DEVICES", "2", 1);
    unsetenv("VYRE_NVML_LIBRARY");
}

static void teardown(void)
{
    tu_env_restore(&g_env);
}

TestSuite(bench_records, .init = setup, .fini = teardown);

/* The call order, as one log: 's' a sample, 'k' a kernel pass. */
struct order {
    char log[256];
    size_t n;
    int64_t kpass_point[8]; /* the point each kernel pass ran for */
    size_t nk;
    int64_t current; /* set by the test before each call */
};

static int sample(void *ctx, double *value, double *wall, vyre_error *err)
{
    (void)err;
    struct order *o = ctx;
    if (o->n + 1 < sizeof o->log)
        o->log[o->n++] = 's';
    *value = 100.0;
    *wall = 100.0;
    return 0;
}

static int kpass(void *ctx, vyre_error *err)
{
    (void)err;
    struct order *o = ctx;
    if (o->n + 1 < sizeof o->log)
        o->log[o->n++] = 'k';
    if (o->nk < 8)
        o->kpass_point[o->nk++] = o->current;
    return 0;
}

static void point(vyre_bench_point *pt, const char *bench, const char *axes, int device)
{
    memset(pt, 0, sizeof *pt);
    snprintf(pt->suite, sizeof pt->suite, "launch");
    snprintf(pt->benchmark, sizeof pt->benchmark, "%s", bench);
    snprintf(pt->axes, sizeof pt->axes, "%s", axes);
    pt->device = device;
    pt->mode = VYRE_BENCH_HOST;
    pt->items = 1;
}

/* One suite's points on devices 0 and 1: two with kernel passes, one
 * without. Returns the ids stored (timing sweep) or found (records). */
static char g_note[256]; /* the last point's note: why CUPTI did not attach */

static void suite(vyre_bench_env *env, struct order *ord, int64_t ids[6])
{
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = sample;
    o.ctx = ord;
    o.rule.min_samples = 3;
    o.rule.max_samples = 3;
    o.rule.timeout_s = 60;
    static const char *const names[3] = {"launch.stream", "launch.none", "launch.graph"};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 3; i++) {
            vyre_bench_point pt;
            point(&pt, names[i], i == 2 ? "kernels=8" : "", d);
            ord->current = ids[d * 3 + i];
            vyre_error e;
            vyre_error_clear(&e);
            int rc = vyre__bench_point_run(env, &pt, &o, 0, i == 1 ? NULL : kpass, NULL, ord, &e);
            cr_assert_eq(rc, 0, "%s on %d: %s", names[i], d, e.message);
            ids[d * 3 + i] = pt.id;
            if (pt.note[0])
                snprintf(g_note, sizeof g_note, "%s", pt.note);
        }
}

Test(bench_records, no_point_is_timed_after_the_first_kernel_pass)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(":memory:", &db, &e), 0, "%s", e.message);
    vyre_bench_run run;
    memset(&run, 0, sizeof run);
    cr_assert_eq(vyre__bench_run_begin(db, &run, &e), 0, "%s", e.message);
    static const int devs[2] = {0, 1};
    vyre_bench_env env;
    memset(&env, 0, sizeof env);
    env.db = db;
    env.run_id = run.id;
    env.kernels = 1;
    env.devices = devs;
    env.ndevices = 2;

    struct order ord;
    memset(&ord, 0, sizeof ord);
    int64_t stored[6] = {0};
    suite(&env, &ord, stored);
    cr_assert_eq(env.done, 6);
    cr_assert_eq(env.ntimed, 4, "the four points with kernel passes are noted");
    cr_assert_eq(ord.nk, 0, "a kernel pass ran in the timing sweep: %s", ord.log);
    size_t timed_samples = ord.n;

    /* The records sweep: ids start at 0 and must come back as stored. */
    env.records_sweep = 1;
    int64_t found[6] = {0};
    memcpy(found, stored, sizeof found); /* ord.current: the id expected */
    int64_t got[6] = {0};
    memcpy(got, found, sizeof got);
    suite(&env, &ord, got);
    cr_assert_eq(env.done, 6, "the records sweep counted points");
    cr_assert_eq(env.kernels, 1, "the fake CUPTI did not attach: %s", g_note);
    cr_assert_eq(ord.nk, 4, "kernel passes: %s", ord.log);
    for (size_t i = timed_samples; i < ord.n; i++)
        cr_assert_eq(ord.log[i], 'k', "a sample after the first kernel pass: %s", ord.log);
    const int with_pass[6] = {1, 0, 1, 1, 0, 1};
    size_t k = 0;
    for (int i = 0; i < 6; i++) {
        if (!with_pass[i])
            continue;
        cr_assert_eq(got[i], stored[i], "point %d found as %lld, stored as %lld", i,
                     (long long)got[i], (long long)stored[i]);
        cr_assert_eq(ord.kpass_point[k], stored[i], "pass %zu ran for another point", k);
        k++;
    }

    /* The run's points are exactly the six timed ones, in order. */
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(db, run.id, &pts, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(pts[i].id, stored[i], "point %zu out of order", i);
    free(pts);
    free(env.timed);
    vyre_results_close(db);
}

Test(bench_records, a_point_the_timing_sweep_did_not_store_gets_no_pass)
{
    vyre_bench_env env;
    memset(&env, 0, sizeof env);
    env.kernels = 1;
    env.records_sweep = 1;
    struct order ord;
    memset(&ord, 0, sizeof ord);
    vyre_bench_point pt;
    point(&pt, "launch.stream", "", 0);
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = sample;
    o.ctx = &ord;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_point_run(&env, &pt, &o, 0, kpass, NULL, &ord, &e), 0, "%s",
                 e.message);
    cr_assert_eq(ord.n, 0, "nothing sampled, no pass: %s", ord.log);
    cr_assert_eq(pt.id, 0);
    cr_assert_eq(env.done, 0);
}
