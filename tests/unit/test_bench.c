/*
 * test_bench.c - the measurement engine of vyre-bench
 * (libcore/src/bench/bench.c, vyre_bench_measure) without a GPU: samples
 * come from a callback, clocks from the fake NVML (tests/fakes/fakenvml.c).
 *
 * Throttle flagging: the engine reads NVML after each sample and flags the
 * sample when a power or thermal clocks-event reason is set. The sample
 * callback sets FAKENVML_THROTTLE (which the fake reads at every call) to
 * the reasons "the GPU" reports for that sample, so every flag is known
 * before the point is measured and asserted exactly.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/gpu.h"

#ifndef FAKENVML_LIB
#error "tests/CMakeLists.txt must define FAKENVML_LIB"
#endif

static const char *const g_vars[] = {"VYRE_NVML_LIBRARY", "FAKENVML_GPUS", "FAKENVML_UNSUPPORTED",
                                     "FAKENVML_FAIL", "FAKENVML_THROTTLE"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
}

static void teardown(void)
{
    tu_env_restore(&g_env);
}

TestSuite(bench, .init = setup, .fini = teardown);

/* Every clocks-event reason alone, none, and mixes; what a sample under it
 * must be flagged as. Throttling: software power cap, hardware slowdown,
 * software and hardware thermal, power brake. Not throttling: idle,
 * application clocks, sync boost, display. */
static const struct {
    unsigned long long reasons;
    int throttled;
} k_schedule[] = {
    {0x000, 0}, {0x001, 0}, {0x002, 0}, {0x004, 1}, {0x008, 1}, {0x010, 0}, {0x020, 1},
    {0x040, 1}, {0x080, 1}, {0x100, 0}, {0x005, 1}, {0x113, 0}, {0x1ff, 1}, {0x000, 0},
};
#define NSCHED (sizeof k_schedule / sizeof k_schedule[0])

struct sampler {
    size_t calls;  /* sample() calls, warm-up included */
    size_t warmup; /* the first `warmup` calls are untimed */
    int set_reasons;
};

/* Sample k (after warm-up) takes 1000 + k ns and leaves the fake NVML
 * reporting k_schedule[k]'s reasons. */
static int sample(void *ctx, double *value, double *wall, vyre_error *err)
{
    (void)err;
    struct sampler *s = ctx;
    size_t k = s->calls++;
    size_t timed = k >= s->warmup ? k - s->warmup : 0;
    if (s->set_reasons) {
        char hex[32];
        snprintf(hex, sizeof hex, "%llx", k_schedule[timed % NSCHED].reasons);
        setenv("FAKENVML_THROTTLE", hex, 1);
    }
    *value = 1000.0 + (double)timed;
    *wall = 2000.0;
    return 0;
}

static vyre_gpu_monitor *open_monitor(void)
{
    vyre_gpu_monitor *m = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_gpu_monitor_open(&m, &e);
    cr_assert_eq(rc, 0, "fake NVML: %s: %s", vyre_err_name(rc), e.message);
    return m;
}

/* Measures exactly NSCHED samples after 3 warm-up calls. */
static vyre_bench_sample *measure(vyre_gpu_monitor *mon, int nvml_index, int set_reasons,
                                  vyre_bench_point *pt, size_t *n)
{
    struct sampler s = {0, 3, set_reasons};
    vyre_bench_measure_opts o;
    memset(&o, 0, sizeof o);
    o.sample = sample;
    o.ctx = &s;
    o.warmup = s.warmup;
    o.rule.min_samples = NSCHED;
    o.rule.max_samples = NSCHED;
    o.rule.timeout_s = 60;
    o.mon = mon;
    o.nvml_index = nvml_index;
    memset(pt, 0, sizeof *pt);
    snprintf(pt->benchmark, sizeof pt->benchmark, "test.throttle");
    vyre_bench_sample *samples = NULL;
    int interrupted = -1;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_bench_measure(&o, pt, &samples, n, &interrupted, &e);
    cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert_eq(interrupted, 0);
    cr_assert_eq(*n, NSCHED);
    cr_assert_eq(s.calls, s.warmup + NSCHED);
    cr_assert_not_null(samples);
    for (size_t k = 0; k < *n; k++)
        cr_assert_eq(samples[k].value, 1000.0 + (double)k, "sample %zu out of order", k);
    return samples;
}

Test(bench, samples_under_power_or_thermal_reasons_are_flagged_throttled)
{
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_point pt;
    size_t n = 0;
    vyre_bench_sample *s = measure(mon, 0, 1, &pt, &n);
    size_t want = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, k_schedule[k].throttled, "sample %zu under reasons 0x%llx", k,
                     k_schedule[k].reasons);
        cr_assert_eq(s[k].sm_clock_mhz, 1500u, "sample %zu: the fake's SM clock of GPU 0", k);
        want += (size_t)k_schedule[k].throttled;
    }
    cr_assert_eq(pt.n_throttled, want);
    cr_assert_eq(pt.stats.n, NSCHED);
    cr_assert_eq(pt.wall_median, 2000.0);
    free(s);
    vyre_gpu_monitor_close(mon);
}

Test(bench, only_the_watched_gpu_counts)
{
    /* GPU 0 is held at a power cap; GPU 1 (watched) is idle. */
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_THROTTLE", "4", 1);
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_point pt;
    size_t n = 0;
    vyre_bench_sample *s = measure(mon, 1, 0, &pt, &n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, 0, "sample %zu", k);
        cr_assert_eq(s[k].sm_clock_mhz, 1501u, "sample %zu: GPU 1's SM clock", k);
    }
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* The same run watching GPU 0: every sample is throttled. */
    s = measure(mon, 0, 0, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(s[k].throttled, 1, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, NSCHED);
    free(s);
    vyre_gpu_monitor_close(mon);
}

Test(bench, unknown_reasons_or_no_monitor_flag_nothing)
{
    vyre_bench_point pt;
    size_t n = 0;

    /* NVML cannot say why the clocks are what they are: unknown is not
     * throttled, and the clock is still recorded. */
    setenv("FAKENVML_UNSUPPORTED", "throttle", 1);
    vyre_gpu_monitor *mon = open_monitor();
    vyre_bench_sample *s = measure(mon, 0, 1, &pt, &n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(s[k].throttled, 0, "sample %zu", k);
        cr_assert_eq(s[k].sm_clock_mhz, 1500u);
    }
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* A GPU index the monitor does not have. */
    unsetenv("FAKENVML_UNSUPPORTED");
    s = measure(mon, 5, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, 0);
    free(s);

    /* No index, then no monitor at all: no clocks read. */
    s = measure(mon, -1, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    free(s);
    vyre_gpu_monitor_close(mon);
    s = measure(NULL, 0, 1, &pt, &n);
    for (size_t k = 0; k < n; k++)
        cr_assert(s[k].throttled == 0 && s[k].sm_clock_mhz == 0, "sample %zu", k);
    cr_assert_eq(pt.n_throttled, 0);
    free(s);
}
