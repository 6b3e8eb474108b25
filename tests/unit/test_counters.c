/*
 * test_counters.c - in-process counters and range histograms.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vyre/counters.h"
#include "base/clock.h"
#include "trace/counters_internal.h"
#include "vyre/nvtx.h"

Test(counters, names_units_and_add)
{
    for (int i = 0; i < VYRE_CTR_COUNT; i++) {
        cr_assert_not_null(vyre_counter_name((vyre_counter_id)i));
        cr_assert_not_null(vyre_counter_unit((vyre_counter_id)i));
    }
    cr_assert_null(vyre_counter_name(VYRE_CTR_COUNT));
    cr_assert_str_eq(vyre_counter_name(VYRE_CTR_H2D_BYTES), "h2d_bytes");
    vyre_counter_add(VYRE_CTR_LAUNCHES, 3);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 4);
    vyre_counter_add(VYRE_CTR_COUNT, 99); /* ignored */
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.v[VYRE_CTR_LAUNCHES], 7);
    cr_assert_eq(c.v[VYRE_CTR_SYNCS], 0);
}

static void *adder(void *p)
{
    (void)p;
    for (int i = 0; i < 100000; i++) {
        vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
        vyre_range_record(VYRE_RANGE_CACHE_LOOKUP, (uint64_t)i);
    }
    return NULL;
}

Test(counters, concurrent_adds_are_exact)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, adder, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.v[VYRE_CTR_DISPATCHES], 400000);
    cr_assert_eq(c.ranges[VYRE_RANGE_CACHE_LOOKUP].count, 400000);
    cr_assert_eq(c.ranges[VYRE_RANGE_CACHE_LOOKUP].max_ns, 99999);
    uint64_t n = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
        n += c.ranges[VYRE_RANGE_CACHE_LOOKUP].buckets[b];
    cr_assert_eq(n, 400000);
}

Test(counters, histogram_buckets_and_quantiles)
{
    vyre_range_record(VYRE_RANGE_CODEGEN, 0);              /* bucket 0 */
    vyre_range_record(VYRE_RANGE_CODEGEN, 1);              /* bucket 1: width 1 */
    vyre_range_record(VYRE_RANGE_CODEGEN, 1000);           /* 992..1023 */
    vyre_range_record(VYRE_RANGE_CODEGEN, 1024);           /* 1024..1087 */
    vyre_range_record(VYRE_RANGE_CODEGEN, UINT64_MAX / 2); /* last bucket */
    vyre_counters c;
    vyre_counters_snapshot(&c);
    const vyre_range_hist *h = &c.ranges[VYRE_RANGE_CODEGEN];
    cr_assert_eq(h->buckets[0], 1);
    cr_assert_eq(h->buckets[1], 1);
    cr_assert_eq(h->buckets[111], 1);
    cr_assert_eq(vyre__hist_bucket_lo(111), 992);
    cr_assert_eq(h->buckets[112], 1);
    cr_assert_eq(vyre__hist_bucket_lo(112), 1024);
    cr_assert_eq(h->buckets[VYRE_HIST_BUCKETS - 1], 1);
    cr_assert_eq(vyre_range_hist_quantile(h, 0.0), 0);
    cr_assert_eq(vyre_range_hist_quantile(h, 0.5), 1008, "%llu",
                 (unsigned long long)vyre_range_hist_quantile(h, 0.5));
    cr_assert_eq(vyre_range_hist_quantile(h, 1.0), UINT64_MAX / 2);
    vyre_range_hist empty;
    memset(&empty, 0, sizeof empty);
    cr_assert_eq(vyre_range_hist_quantile(&empty, 0.5), 0);
}

/* Every duration lands in the bucket whose bounds hold it, and no bucket
 * above the exact ones is wider than 1/16 of its lower bound. */
Test(counters, log_linear_bucket_bounds)
{
    cr_assert_eq(vyre__hist_bucket_lo(0), 0);
    for (int b = 1; b < VYRE_HIST_BUCKETS; b++) {
        uint64_t lo = vyre__hist_bucket_lo(b), prev = vyre__hist_bucket_lo(b - 1);
        cr_assert_gt(lo, prev, "bucket %d", b);
        cr_assert_eq(vyre__hist_bucket_of(lo), b, "bucket %d lo %llu", b, (unsigned long long)lo);
        cr_assert_eq(vyre__hist_bucket_of(lo - 1), b - 1, "bucket %d", b);
        if (b >= 2 * VYRE_HIST_SUB)
            cr_assert_leq((lo - prev) * VYRE_HIST_SUB, prev, "bucket %d too wide", b);
    }
    cr_assert_eq(vyre__hist_bucket_of(UINT64_C(1) << VYRE_HIST_POWERS), VYRE_HIST_BUCKETS - 1);
    cr_assert_eq(vyre__hist_bucket_of(UINT64_MAX), VYRE_HIST_BUCKETS - 1);
}

/* Seeded generators for the accuracy tests (splitmix64; Box-Muller). */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
    return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static double rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

enum { DIST_UNIFORM, DIST_LOGNORMAL, DIST_BIMODAL };

static uint64_t draw(int dist, uint64_t *s)
{
    double x;
    switch (dist) {
    case DIST_UNIFORM:
        x = 8000.0 + 5000.0 * rng_unit(s); /* 8..13 us */
        break;
    case DIST_LOGNORMAL:
        x = 10000.0 * exp(0.6 * rng_normal(s)); /* median 10 us */
        break;
    default: /* 70% around 5 us, 30% around 60 us */
        x = rng_unit(s) < 0.7 ? 5000.0 + 300.0 * rng_normal(s) : 60000.0 + 4000.0 * rng_normal(s);
        break;
    }
    return x < 1 ? 1 : (uint64_t)x;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Worst relative error of p50/p90/p99 over n samples of dist; max must be
 * exact. */
static double quantile_error(int dist, uint64_t seed, size_t n)
{
    uint64_t *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    vyre_range_hist *h = calloc(1, sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++) {
        x[i] = draw(dist, &seed);
        h->count++;
        h->total_ns += x[i];
        if (x[i] > h->max_ns)
            h->max_ns = x[i];
        h->buckets[vyre__hist_bucket_of(x[i])]++;
    }
    qsort(x, n, sizeof *x, cmp_u64);
    static const double qs[] = {0.50, 0.90, 0.99};
    double worst = 0;
    for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        double exact = (double)x[(size_t)(qs[k] * (double)(n - 1))];
        double est = (double)vyre_range_hist_quantile(h, qs[k]);
        double err = fabs(est - exact) / exact;
        cr_log_info("dist %d n %zu q %.2f exact %.0f est %.0f err %.4f", dist, n, qs[k], exact, est,
                    err);
        if (err > worst)
            worst = err;
    }
    cr_assert_eq(vyre_range_hist_quantile(h, 1.0), x[n - 1], "max is exact");
    free(h);
    free(x);
    return worst;
}

Test(counters, quantiles_within_3_percent_uniform)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        cr_assert_leq(quantile_error(DIST_UNIFORM, seed, 100000), 0.03);
        cr_assert_leq(quantile_error(DIST_UNIFORM, seed, 1000), 0.03);
    }
}

Test(counters, quantiles_within_3_percent_lognormal)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        cr_assert_leq(quantile_error(DIST_LOGNORMAL, seed, 100000), 0.03);
        cr_assert_leq(quantile_error(DIST_LOGNORMAL, seed, 1000), 0.03);
    }
}

Test(counters, quantiles_within_3_percent_bimodal)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        cr_assert_leq(quantile_error(DIST_BIMODAL, seed, 100000), 0.03);
        cr_assert_leq(quantile_error(DIST_BIMODAL, seed, 1000), 0.03);
    }
}

Test(counters, nvtx_ranges_are_timed_with_nesting)
{
    struct timespec ms = {0, 2000000};
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_COMPILE);
    vyre_nvtx_push(VYRE_RANGE_NVRTC_COMPILE);
    nanosleep(&ms, NULL);
    vyre_nvtx_pop();
    nanosleep(&ms, NULL);
    vyre_nvtx_pop();
    vyre_nvtx_pop(); /* unbalanced: ignored */
    vyre_counters c;
    vyre_counters_snapshot(&c);
    const vyre_range_hist *outer = &c.ranges[VYRE_RANGE_PIPELINE_COMPILE];
    const vyre_range_hist *inner = &c.ranges[VYRE_RANGE_NVRTC_COMPILE];
    cr_assert_eq(outer->count, 1);
    cr_assert_eq(inner->count, 1);
    cr_assert_geq(inner->total_ns, 2000000);
    cr_assert_geq(outer->total_ns, inner->total_ns + 2000000);
}

Test(counters, timing_can_be_turned_off)
{
    vyre_range_timing_enable(0);
    vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
    vyre_nvtx_pop();
    vyre_range_timing_enable(1);
    vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
    vyre_nvtx_pop();
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.ranges[VYRE_RANGE_MODULE_LOAD].count, 1);
}

static void *add_once(void *p)
{
    (void)p;
    vyre_counter_add(VYRE_CTR_SYNCS, 1);
    vyre_range_record(VYRE_RANGE_CACHE_STORE, 5);
    return NULL;
}

Test(counters, churning_threads_reuse_slots_and_lose_nothing)
{
    /* 1000 short-lived threads, one after another: each exits and leaves
     * its slot (and counts) to the next, so nothing is lost or doubled. */
    for (int i = 0; i < 1000; i++) {
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, add_once, NULL), 0);
        pthread_join(t, NULL);
    }
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.v[VYRE_CTR_SYNCS], 1000);
    cr_assert_eq(c.ranges[VYRE_RANGE_CACHE_STORE].count, 1000);
    cr_assert_eq(c.ranges[VYRE_RANGE_CACHE_STORE].total_ns, 5000);
}

static pthread_barrier_t g_bar;

static void *add_many_held(void *p)
{
    (void)p;
    for (int i = 0; i < 1000; i++)
        vyre_counter_add(VYRE_CTR_READBACKS, 1);
    pthread_barrier_wait(&g_bar); /* all alive at once: more than the slots */
    return NULL;
}

Test(counters, more_live_threads_than_slots_share_one_exactly, .timeout = 60)
{
    enum { N = 300 };
    pthread_t t[N];
    pthread_barrier_init(&g_bar, NULL, N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, add_many_held, NULL), 0);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&g_bar);
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.v[VYRE_CTR_READBACKS], (uint64_t)N * 1000);
}

Test(counters, a_timed_pop_leaves_its_clock_reading_for_the_launch_path)
{
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    uint64_t before = vyre__ticks();
    vyre_nvtx_pop();
    uint64_t after = vyre__ticks();
    uint64_t at = vyre__nvtx_last_pop_ticks();
    cr_assert(at >= before && at <= after, "pop read %llu, outside [%llu, %llu]",
              (unsigned long long)at, (unsigned long long)before, (unsigned long long)after);
    /* Its monotonic time is now, give or take the calibration. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t mono = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    int64_t diff = mono - (int64_t)vyre__ticks_to_mono_ns(at);
    cr_assert(diff > -5000000 && diff < 5000000, "off by %lld ns", (long long)diff);
    /* Untimed pops, and pops without a push, leave nothing to reuse. */
    vyre_range_timing_enable(0);
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    vyre_nvtx_pop();
    cr_assert_eq(vyre__nvtx_last_pop_ticks(), 0);
    vyre_range_timing_enable(1);
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
    vyre_nvtx_pop();
    cr_assert_neq(vyre__nvtx_last_pop_ticks(), 0);
    vyre_nvtx_pop();
    cr_assert_eq(vyre__nvtx_last_pop_ticks(), 0);
}

static uint64_t bucket_sum(const vyre_range_hist *h)
{
    uint64_t n = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
        n += h->buckets[b];
    return n;
}

Test(counters, hot_dispatch_ranges_are_sampled_with_weights_that_keep_the_count)
{
    enum { N = 100000 };
    int sampled_out_pops = 0;
    for (int i = 0; i < N; i++) {
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_BATCH_DISPATCH);
        vyre_nvtx_pop();
        sampled_out_pops += vyre__nvtx_last_pop_sampled_out();
    }
    vyre_counters c;
    vyre_counters_snapshot(&c);
    const vyre_range_hist *h = &c.ranges[VYRE_RANGE_PIPELINE_BATCH_DISPATCH];
    /* Back-to-back dispatches are far faster than one per 20 us: the stride
     * reaches 16 and most pops read no clock. */
    cr_assert_eq(vyre__nvtx_sample_stride(VYRE_RANGE_PIPELINE_BATCH_DISPATCH), 16);
    cr_assert_gt(sampled_out_pops, N / 2, "only %d of %d pops were sampled out", sampled_out_pops,
                 N);
    /* The weights keep the count within one stride of the truth, and the
     * buckets add up to it. */
    cr_assert(h->count <= N && h->count > N - 16, "count %llu for %d dispatches",
              (unsigned long long)h->count, N);
    cr_assert_eq(bucket_sum(h), h->count);
    /* A range that is not a dispatch range is never sampled. */
    for (int i = 0; i < 1000; i++) {
        vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
        vyre_nvtx_pop();
        cr_assert_eq(vyre__nvtx_last_pop_sampled_out(), 0);
    }
    vyre_counters_snapshot(&c);
    cr_assert_eq(c.ranges[VYRE_RANGE_MODULE_LOAD].count, 1000);
    cr_assert_eq(vyre__nvtx_sample_stride(VYRE_RANGE_MODULE_LOAD), 1);
}

Test(counters, slow_dispatches_are_all_timed_and_a_rate_drop_restores_full_timing)
{
    /* First fast, so the stride climbs; then slower than one per 20 us, so
     * it falls back to 1 and every dispatch is timed again. */
    for (int i = 0; i < 10000; i++) {
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
        vyre_nvtx_pop();
    }
    cr_assert_eq(vyre__nvtx_sample_stride(VYRE_RANGE_PIPELINE_DISPATCH), 16);
    struct timespec pause = {0, 100000}; /* 100 us: 5x the sampling threshold */
    for (int i = 0; i < 40; i++) {
        nanosleep(&pause, NULL);
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
        vyre_nvtx_pop();
    }
    cr_assert_eq(vyre__nvtx_sample_stride(VYRE_RANGE_PIPELINE_DISPATCH), 1);
    vyre_counters c0;
    vyre_counters_snapshot(&c0);
    for (int i = 0; i < 50; i++) {
        nanosleep(&pause, NULL);
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
        vyre_nvtx_pop();
        cr_assert_eq(vyre__nvtx_last_pop_sampled_out(), 0, "slow dispatch %d was not timed", i);
        cr_assert_neq(vyre__nvtx_last_pop_ticks(), 0);
    }
    vyre_counters c1;
    vyre_counters_snapshot(&c1);
    cr_assert_eq(c1.ranges[VYRE_RANGE_PIPELINE_DISPATCH].count -
                     c0.ranges[VYRE_RANGE_PIPELINE_DISPATCH].count,
                 50);
}
