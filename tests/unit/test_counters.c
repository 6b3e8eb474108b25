/*
 * test_counters.c - in-process counters and range histograms.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "vyre/counters.h"
#include "base/clock.h"
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
    vyre_range_record(VYRE_RANGE_CODEGEN, 1);              /* bucket 0 */
    vyre_range_record(VYRE_RANGE_CODEGEN, 1000);           /* bucket 9: 512..1023 */
    vyre_range_record(VYRE_RANGE_CODEGEN, 1024);           /* bucket 10 */
    vyre_range_record(VYRE_RANGE_CODEGEN, UINT64_MAX / 2); /* last bucket */
    vyre_counters c;
    vyre_counters_snapshot(&c);
    const vyre_range_hist *h = &c.ranges[VYRE_RANGE_CODEGEN];
    cr_assert_eq(h->buckets[0], 2);
    cr_assert_eq(h->buckets[9], 1);
    cr_assert_eq(h->buckets[10], 1);
    cr_assert_eq(h->buckets[VYRE_HIST_BUCKETS - 1], 1);
    cr_assert_eq(vyre_range_hist_quantile(h, 0.0), 1);
    cr_assert_eq(vyre_range_hist_quantile(h, 0.5), 1023);
    cr_assert_eq(vyre_range_hist_quantile(h, 1.0), UINT64_MAX / 2);
    vyre_range_hist empty;
    memset(&empty, 0, sizeof empty);
    cr_assert_eq(vyre_range_hist_quantile(&empty, 0.5), 0);
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
