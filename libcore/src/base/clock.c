/*
 * clock.c - see clock.h.
 *
 * Calibration runs once, on first use, for about 2 ms: it reads the TSC and
 * CLOCK_MONOTONIC_RAW at both ends of a short busy wait and keeps the ratio
 * (ns per tick) and one (ticks, ns) anchor pair. An invariant TSC (CPUID
 * 0x80000007 EDX bit 8) runs at a constant rate across P-states and is
 * synchronised across cores on the processors vyre targets; without it we
 * fall back to clock_gettime.
 */
#include "base/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define VYRE_HAVE_TSC 1
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_ready;    /* 1 once calibrate has run: skips pthread_once */
static int g_tsc;             /* 1: use rdtsc */
static double g_ns_per_tick;  /* valid when g_tsc */
static uint64_t g_anchor_tsc; /* ticks at calibration end */
static uint64_t g_anchor_ns;  /* CLOCK_MONOTONIC ns at the same instant */

static uint64_t mono_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void calibrate(void)
{
#ifdef VYRE_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (!(d & (1u << 8)))
        return; /* no invariant TSC */
    uint64_t n0 = mono_ns(CLOCK_MONOTONIC_RAW), t0 = __rdtsc();
    uint64_t n1;
    do
        n1 = mono_ns(CLOCK_MONOTONIC_RAW);
    while (n1 - n0 < 2000000u);
    uint64_t t1 = __rdtsc();
    if (t1 <= t0)
        return;
    g_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
    /* A TSC below 100 MHz or above 20 GHz is not one to trust. */
    if (g_ns_per_tick < 0.05 || g_ns_per_tick > 10.0)
        return;
    g_anchor_ns = mono_ns(CLOCK_MONOTONIC);
    g_anchor_tsc = __rdtsc();
    g_tsc = 1;
#endif
}

static void calibrate_once(void)
{
    calibrate();
    atomic_store_explicit(&g_ready, 1, memory_order_release);
}

static inline void ensure_calibrated(void)
{
    if (__builtin_expect(!atomic_load_explicit(&g_ready, memory_order_acquire), 0))
        pthread_once(&g_once, calibrate_once);
}

/* On the lent GPU machines (VMs) one rdtsc costs about 20 ns (13 ns on the
 * 2-core dev VM), against a few ns on bare metal: a timed range pays two,
 * which is most of what graph replay adds to a bare cuGraphLaunch there
 * (docs/DESIGN.md, reference figures; perf/perf_hist prints the pieces). */
uint64_t vyre__ticks(void)
{
    ensure_calibrated();
#ifdef VYRE_HAVE_TSC
    if (g_tsc)
        return __rdtsc();
#endif
    return mono_ns(CLOCK_MONOTONIC);
}

uint64_t vyre__ticks_to_ns(uint64_t ticks)
{
    ensure_calibrated();
    return g_tsc ? (uint64_t)((double)ticks * g_ns_per_tick) : ticks;
}

uint64_t vyre__ticks_to_mono_ns(uint64_t t)
{
    ensure_calibrated();
    if (!g_tsc)
        return t;
    return t > g_anchor_tsc ? g_anchor_ns + vyre__ticks_to_ns(t - g_anchor_tsc) : g_anchor_ns;
}

uint64_t vyre__now_ns_fast(void)
{
    return vyre__ticks_to_mono_ns(vyre__ticks());
}

uint64_t vyre__mono_ns(void)
{
    return mono_ns(CLOCK_MONOTONIC);
}

int64_t vyre__unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
