/*
 * test_stats.c - sample statistics, stopping rules and Mann-Whitney
 * verdicts, against values worked out by hand in the comments.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats_internal.h"
#include "vyre/stats.h"

#define EPS 1e-9

static void assert_near(double got, double want, double tol, const char *what)
{
    cr_assert(fabs(got - want) <= tol, "%s: got %.12g, want %.12g (+-%g)", what, got, want, tol);
}

/* Deterministic uniform in [-1, 1) (xorshift64*), so no test is flaky. */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    uint64_t r = *s * UINT64_C(2685821657736338717);
    return (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* n samples center * (1 + spread * u), u uniform in [-1, 1). */
static double *synth(size_t n, double center, double spread, uint64_t seed)
{
    double *x = malloc(n * sizeof *x);
    cr_assert(x);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        x[i] = center * (1.0 + spread * uniform(&s));
    return x;
}

Test(stats, even_sample_by_hand)
{
    /* x = 2 4 4 4 5 5 7 9 (sorted already; fed shuffled).
     * mean = 40 / 8 = 5; squared deviations 9 1 1 1 0 0 4 16 = 32;
     * sample stddev = sqrt(32 / 7) = 2.138089935; noise = 0.427617987.
     * median = (4 + 5) / 2 = 4.5.
     * p5:  h = 7 * 0.05 = 0.35 -> 2 + 0.35 * (4 - 2) = 2.7.
     * p95: h = 7 * 0.95 = 6.65 -> 7 + 0.65 * (9 - 7) = 8.3.
     * |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> sorted middle pair .5 .5:
     * MAD = 0.5; outlier threshold 3 * 1.4826 * 0.5 = 2.2239, exceeded by
     * 2 (2.5), 7 (2.5) and 9 (4.5): three outliers. */
    const double x[] = {5, 9, 4, 2, 4, 7, 4, 5};
    vyre_stats s;
    vyre_error e;
    cr_assert_eq(vyre__stats_compute(x, 8, &s, &e), 0, "%s", e.message);
    cr_assert_eq(s.n, 8);
    assert_near(s.min, 2, EPS, "min");
    assert_near(s.max, 9, EPS, "max");
    assert_near(s.mean, 5, EPS, "mean");
    assert_near(s.median, 4.5, EPS, "median");
    assert_near(s.stddev, 2.138089935299395, 1e-12, "stddev");
    assert_near(s.rel_stddev, 0.427617987059879, 1e-12, "noise");
    assert_near(s.p5, 2.7, EPS, "p5");
    assert_near(s.p95, 8.3, EPS, "p95");
    assert_near(s.mad, 0.5, EPS, "mad");
    cr_assert_eq(s.n_outliers, 3);

    unsigned char flags[8];
    size_t n = 0;
    cr_assert_eq(vyre__stats_outliers(x, 8, 3.0, flags, &n, &e), 0);
    const unsigned char want[] = {0, 1, 0, 1, 0, 1, 0, 0};
    cr_assert_eq(n, 3);
    cr_assert_arr_eq(flags, want, 8);
    /* k = 5: threshold 3.7065, only 9 (4.5) is beyond. */
    cr_assert_eq(vyre__stats_outliers(x, 8, 5.0, NULL, &n, &e), 0);
    cr_assert_eq(n, 1);
}

Test(stats, odd_sample_with_outlier)
{
    /* x = 1 2 3 4 100: median 3; mean 22; deviations from the mean
     * -21 -20 -19 -18 78, squares sum 7610, stddev sqrt(7610 / 4) =
     * 43.617656975. |x - 3| = 2 1 0 1 97 -> 0 1 1 2 97: MAD = 1; threshold
     * 4.4478: only 100 is an outlier. p5: h = 0.2 -> 1.2; p95: h = 3.8 ->
     * 4 + 0.8 * 96 = 80.8. */
    const double x[] = {100, 3, 1, 4, 2};
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(x, 5, &s, NULL), 0);
    assert_near(s.median, 3, EPS, "median");
    assert_near(s.mean, 22, EPS, "mean");
    assert_near(s.stddev, 43.617656975128774, 1e-9, "stddev");
    assert_near(s.mad, 1, EPS, "mad");
    assert_near(s.p5, 1.2, EPS, "p5");
    assert_near(s.p95, 80.8, EPS, "p95");
    cr_assert_eq(s.n_outliers, 1);
}

Test(stats, percentile_edges)
{
    const double s[] = {10, 20, 30, 40};
    assert_near(vyre_stats_percentile_sorted(s, 4, 0), 10, EPS, "p0");
    assert_near(vyre_stats_percentile_sorted(s, 4, 100), 40, EPS, "p100");
    /* h = 3 * 0.5 = 1.5 -> 20 + 0.5 * 10 = 25, the median. */
    assert_near(vyre_stats_percentile_sorted(s, 4, 50), 25, EPS, "p50");
    /* h = 3 * 0.25 = 0.75 -> 17.5. */
    assert_near(vyre_stats_percentile_sorted(s, 4, 25), 17.5, EPS, "p25");
    assert_near(vyre_stats_percentile_sorted(s, 1, 95), 10, EPS, "n=1");
}

Test(stats, mad_zero_falls_back_to_mean_deviation)
{
    /* 5 5 5 5 6: MAD = 0; mean |x - 5| = 0.2, scale 1.253314 * 0.2 =
     * 0.2506628, threshold 0.752 < 1: the 6 is flagged. */
    const double x[] = {5, 5, 6, 5, 5};
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(x, 5, &s, NULL), 0);
    assert_near(s.mad, 0, 0, "mad");
    cr_assert_eq(s.n_outliers, 1);
    /* All equal: no scale at all, nothing is an outlier, noise is 0. */
    const double y[] = {7, 7, 7, 7};
    cr_assert_eq(vyre__stats_compute(y, 4, &s, NULL), 0);
    cr_assert_eq(s.n_outliers, 0);
    assert_near(s.stddev, 0, 0, "stddev");
    assert_near(s.rel_stddev, 0, 0, "noise");
}

Test(stats, single_sample_and_bad_input)
{
    const double one[] = {3.5};
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(one, 1, &s, NULL), 0);
    assert_near(s.median, 3.5, 0, "median");
    assert_near(s.p5, 3.5, 0, "p5");
    assert_near(s.p95, 3.5, 0, "p95");
    cr_assert(isnan(s.stddev) && isnan(s.rel_stddev), "n = 1 has no spread");

    vyre_error e;
    cr_assert_eq(vyre__stats_compute(one, 0, &s, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "the sample set has no samples");
    const double bad[] = {1, NAN, 2};
    cr_assert_eq(vyre__stats_compute(bad, 3, &s, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "sample 1 of the sample set is 'nan', not a finite number");
    cr_assert_eq(vyre__stats_outliers(one, 1, 0.0, NULL, NULL, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "outlier factor '0' must be above 0");
}

Test(stats, running_matches_batch)
{
    double *x = synth(1000, 50.0, 0.3, 42);
    vyre_stats_running r = VYRE_RUNNING_INIT;
    for (size_t i = 0; i < 1000; i++)
        vyre__stats_running_push(&r, x[i]);
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(x, 1000, &s, NULL), 0);
    cr_assert_eq(r.n, 1000);
    assert_near(r.mean, s.mean, 1e-9, "mean");
    assert_near(vyre__stats_running_stddev(&r), s.stddev, 1e-9, "stddev");
    assert_near(vyre__stats_running_noise(&r), s.rel_stddev, 1e-12, "noise");
    assert_near(r.min, s.min, 0, "min");
    assert_near(r.max, s.max, 0, "max");
    assert_near(r.sum, s.mean * 1000, 1e-6, "sum");
    free(x);
}

/* ---- stopping rules ---- */

/* n samples alternating 0.999 and 1.001: mean 1, stddev sqrt(n * 1e-6 /
 * (n - 1)); for n = 20 that is 0.0010260, noise 0.10 %. */
static vyre_stats_running quiet(size_t n)
{
    vyre_stats_running r = VYRE_RUNNING_INIT;
    for (size_t i = 0; i < n; i++)
        vyre__stats_running_push(&r, i % 2 ? 1.001 : 0.999);
    return r;
}

/* Alternating 0.9 and 1.1: noise about 10 %. */
static vyre_stats_running noisy(size_t n)
{
    vyre_stats_running r = VYRE_RUNNING_INIT;
    for (size_t i = 0; i < n; i++)
        vyre__stats_running_push(&r, i % 2 ? 1.1 : 0.9);
    return r;
}

static void expect_stop(vyre_stats_stop_decision d, const vyre_stats_stop_rule *rule, int stop,
                        vyre_stats_stop_reason reason, const char *text)
{
    char buf[160];
    size_t len = vyre__stats_stop_format(&d, rule, buf, sizeof buf);
    cr_assert_eq(len, strlen(buf));
    cr_assert_eq(d.stop, stop, "%s: stop %d", buf, d.stop);
    cr_assert_eq(d.reason, reason, "%s: reason %s", buf, vyre_stats_stop_reason_name(d.reason));
    cr_assert_str_eq(buf, text);
}

Test(stats, stop_rules)
{
    const vyre_stats_stop_rule rule = VYRE_STOP_RULE_DEFAULT; /* 10, 0.5 s, 0.5 %, 15 s */
    vyre_stats_running r = quiet(5);
    expect_stop(vyre__stats_stop_check(&rule, &r, 0.6, 1.0), &rule, 0,
                VYRE_STOP_MIN_SAMPLES_NOT_MET, "min-samples: 5 of 10");
    r = quiet(20);
    expect_stop(vyre__stats_stop_check(&rule, &r, 0.2, 1.0), &rule, 0, VYRE_STOP_MIN_TIME_NOT_MET,
                "min-time: 0.20 s of 0.50 s");
    expect_stop(vyre__stats_stop_check(&rule, &r, 0.6, 1.0), &rule, 1, VYRE_STOP_NOISE_OK,
                "noise-ok: 0.10% <= 0.50% after 20 samples, 0.60 s");
    /* Met together with the timeout: the good news wins. */
    expect_stop(vyre__stats_stop_check(&rule, &r, 0.6, 20.0), &rule, 1, VYRE_STOP_NOISE_OK,
                "noise-ok: 0.10% <= 0.50% after 20 samples, 0.60 s");

    r = noisy(40);
    /* 0.9/1.1 alternating, n = 40: stddev sqrt(40 * 0.01 / 39) = 0.10127. */
    expect_stop(vyre__stats_stop_check(&rule, &r, 3.0, 3.0), &rule, 0, VYRE_STOP_NOISY,
                "noisy: 10.13% > 0.50% after 40 samples");
    expect_stop(vyre__stats_stop_check(&rule, &r, 15.0, 15.0), &rule, 1, VYRE_STOP_TIMEOUT,
                "timeout: noise 10.13% > 0.50% after 40 samples, 15.0 s");
    /* Stored with a point: no figure of its own beside the noise column
     * (issue 25), the threshold and the rest kept. */
    vyre_stats_stop_decision d = vyre__stats_stop_check(&rule, &r, 15.0, 15.0);
    d.noise = NAN;
    expect_stop(d, &rule, 1, VYRE_STOP_TIMEOUT, "timeout: noise > 0.50% after 40 samples, 15.0 s");
    r = quiet(20);
    d = vyre__stats_stop_check(&rule, &r, 0.6, 1.0);
    d.noise = NAN;
    expect_stop(d, &rule, 1, VYRE_STOP_NOISE_OK,
                "noise-ok: noise <= 0.50% after 20 samples, 0.60 s");
    r = noisy(40);
    /* A kernel so slow that the timeout comes before the minimum samples. */
    r = noisy(3);
    expect_stop(vyre__stats_stop_check(&rule, &r, 15.5, 16.0), &rule, 1, VYRE_STOP_TIMEOUT,
                "timeout: 3 of 10 samples after 16.0 s");
    r = quiet(20);
    expect_stop(vyre__stats_stop_check(&rule, &r, 0.1, 16.0), &rule, 1, VYRE_STOP_TIMEOUT,
                "timeout: 0.10 s of 0.50 s measured after 16.0 s");

    vyre_stats_stop_rule capped = rule;
    capped.max_samples = 40;
    r = noisy(40);
    expect_stop(vyre__stats_stop_check(&capped, &r, 3.0, 3.0), &capped, 1, VYRE_STOP_MAX_SAMPLES,
                "max-samples: 40 samples, noise 10.13%");

    vyre_stats_stop_rule no_noise = rule;
    no_noise.max_noise = 0;
    expect_stop(vyre__stats_stop_check(&no_noise, &r, 0.5, 1.0), &no_noise, 1,
                VYRE_STOP_MINIMUMS_MET, "minimums-met: 40 samples, 0.50 s, noise 10.13%");

    /* min_samples 1 still needs two samples for a noise figure. */
    vyre_stats_stop_rule one = rule;
    one.min_samples = 1;
    one.min_time_s = 0;
    r = quiet(1);
    expect_stop(vyre__stats_stop_check(&one, &r, 0.0, 0.0), &one, 0, VYRE_STOP_NOISY,
                "noisy: - > 0.50% after 1 samples");
    cr_assert_str_eq(vyre_stats_stop_reason_name((vyre_stats_stop_reason)99), "?");
}

/* ---- Mann-Whitney ---- */

Test(stats, mann_whitney_exact_small)
{
    /* m = 2, n = 3: the C(5, 2) = 10 orderings give U = 0..6 with counts
     * 1 1 2 2 2 1 1. a = {1, 2} below b = {3, 4, 5}: U1 = 0,
     * p = 2 * 1/10 = 0.2. a = {1, 3}, b = {2, 4, 5}: U1 = 1 (3 > 2),
     * p = 2 * (1 + 1)/10 = 0.4. */
    vyre_stats_mann_whitney_result mw;
    const double a1[] = {1, 2}, b1[] = {3, 4, 5};
    cr_assert_eq(vyre__stats_mann_whitney(a1, 2, b1, 3, &mw, NULL), 0);
    cr_assert(mw.exact);
    assert_near(mw.u1, 0, 0, "u1");
    assert_near(mw.u2, 6, 0, "u2");
    assert_near(mw.p, 0.2, 1e-12, "p");
    const double a2[] = {1, 3}, b2[] = {2, 4, 5};
    cr_assert_eq(vyre__stats_mann_whitney(a2, 2, b2, 3, &mw, NULL), 0);
    assert_near(mw.u1, 1, 0, "u1");
    assert_near(mw.p, 0.4, 1e-12, "p");
    /* Middle of the distribution: p capped at 1. a = {2, 4}, b = {1, 3, 5}:
     * U1 = 1 + 2 = 3 = mean, 2 * P(U <= 3) = 2 * 6/10 > 1. */
    const double a3[] = {2, 4}, b3[] = {1, 3, 5};
    cr_assert_eq(vyre__stats_mann_whitney(a3, 2, b3, 3, &mw, NULL), 0);
    assert_near(mw.p, 1.0, 0, "p");
    assert_near(mw.z, 0, 0, "z");

    /* 5 v 5 fully separated: p = 2 / C(10, 5) = 2/252 = 0.0079365; the
     * normal approximation would give 0.0122 and miss alpha = 0.01. */
    const double a4[] = {1, 2, 3, 4, 5}, b4[] = {6, 7, 8, 9, 10};
    cr_assert_eq(vyre__stats_mann_whitney(a4, 5, b4, 5, &mw, NULL), 0);
    cr_assert(mw.exact);
    assert_near(mw.p, 2.0 / 252.0, 1e-12, "p");
}

Test(stats, mann_whitney_exact_matches_enumeration)
{
    /* m = 4, n = 6: all C(10, 4) = 210 placements of a among the ranks
     * 1..10, counted by brute force, against the q-binomial counts. */
    double hist[25] = {0};
    for (unsigned mask = 0; mask < 1024; mask++) {
        if (__builtin_popcount(mask) != 4)
            continue;
        int u1 = 0;
        for (int i = 0; i < 10; i++)
            for (int j = 0; j < 10; j++)
                u1 += (mask >> i & 1) && !(mask >> j & 1) && i > j;
        hist[u1]++;
    }
    for (unsigned mask = 0; mask < 1024; mask++) {
        if (__builtin_popcount(mask) != 4)
            continue;
        double a[4], b[6];
        size_t na = 0, nb = 0;
        for (int i = 0; i < 10; i++) {
            if (mask >> i & 1)
                a[na++] = i + 1;
            else
                b[nb++] = i + 1;
        }
        vyre_stats_mann_whitney_result mw;
        cr_assert_eq(vyre__stats_mann_whitney(a, 4, b, 6, &mw, NULL), 0);
        cr_assert(mw.exact);
        double below = 0;
        for (int u = 0; u <= (int)mw.u; u++)
            below += hist[u];
        double want = 2.0 * below / 210.0;
        assert_near(mw.p, want < 1.0 ? want : 1.0, 1e-12, "exact p");
    }
}

Test(stats, mann_whitney_with_ties)
{
    /* a = 1 2 2 3 5, b = 2 4 6 7 8. Pooled and ranked:
     * 1a:1, 2a 2a 2b: mid-rank 3, 3a:5, 4b:6, 5a:7, 6b:8, 7b:9, 8b:10.
     * R1 = 1 + 3 + 3 + 5 + 7 = 19, U1 = 19 - 5*6/2 = 4, U2 = 25 - 4 = 21.
     * One tie group of t = 3: sum(t^3 - t) = 24.
     * var = 25/12 * (11 - 24/(10*9)) = 22.361111, sigma = 4.7287537.
     * z = (4 - 12.5 + 0.5) / sigma = -1.6917777; p = erfc(1.6917777 / sqrt 2)
     * = 0.0906884. */
    const double a[] = {1, 2, 2, 3, 5}, b[] = {2, 4, 6, 7, 8};
    vyre_stats_mann_whitney_result mw;
    cr_assert_eq(vyre__stats_mann_whitney(a, 5, b, 5, &mw, NULL), 0);
    cr_assert(!mw.exact, "ties use the normal approximation");
    assert_near(mw.u1, 4, EPS, "u1");
    assert_near(mw.u2, 21, EPS, "u2");
    assert_near(mw.u, 4, EPS, "u");
    assert_near(mw.z, -1.691777704440579, 1e-6, "z");
    assert_near(mw.p, 0.09068836617120415, 1e-6, "p");
    /* Swapping the samples mirrors U and z, keeps p. */
    cr_assert_eq(vyre__stats_mann_whitney(b, 5, a, 5, &mw, NULL), 0);
    assert_near(mw.u1, 21, EPS, "u1 swapped");
    assert_near(mw.z, 1.691777704440579, 1e-6, "z swapped");
    assert_near(mw.p, 0.09068836617120415, 1e-6, "p swapped");
}

Test(stats, mann_whitney_separated_large)
{
    /* n1 = n2 = 20, a entirely below b: U1 = 0, mean 200,
     * sigma = sqrt(20*20*41/12) = 36.968455. With the continuity correction
     * z = -199.5 / sigma = -5.3964928 (-200 / sigma = -5.4100178 without
     * it). No ties and N = 40 <= 50: p is exact, 2 / C(40, 20) =
     * 1.45088891e-11. */
    double a[30], b[30];
    for (int i = 0; i < 30; i++) {
        a[i] = 1.0 + i;
        b[i] = 100.0 + i;
    }
    vyre_stats_mann_whitney_result mw;
    cr_assert_eq(vyre__stats_mann_whitney(a, 20, b, 20, &mw, NULL), 0);
    assert_near(mw.u1, 0, 0, "u1");
    assert_near(mw.z, -5.396492763484582, 1e-6, "z");
    cr_assert(mw.exact);
    assert_near(mw.p / 1.4508889103849688e-11, 1.0, 1e-6, "p relative");
    /* n1 = n2 = 30 (N = 60): normal approximation. sigma = sqrt(900 * 61 /
     * 12) = 67.6387463, z = -449.5 / sigma = -6.6455992, p =
     * erfc(6.6455992 / sqrt 2) = 3.01986e-11. */
    cr_assert_eq(vyre__stats_mann_whitney(a, 30, b, 30, &mw, NULL), 0);
    cr_assert(!mw.exact);
    assert_near(mw.z, -6.64559922588161, 1e-6, "z");
    assert_near(mw.p / 3.019859359162151e-11, 1.0, 1e-4, "p relative");
}

Test(stats, mann_whitney_all_tied)
{
    const double a[] = {3, 3, 3}, b[] = {3, 3};
    vyre_stats_mann_whitney_result mw;
    cr_assert_eq(vyre__stats_mann_whitney(a, 3, b, 2, &mw, NULL), 0);
    assert_near(mw.u1, 3, EPS, "u1");
    assert_near(mw.z, 0, 0, "z");
    assert_near(mw.p, 1, 0, "p");
    vyre_error e;
    cr_assert_eq(vyre__stats_mann_whitney(a, 3, b, 0, &mw, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "the second sample set has no samples");
}

/* ---- verdicts ---- */

static vyre_stats_compare_result compare(const double *a, size_t n1, const double *b, size_t n2)
{
    vyre_stats_compare_result c;
    vyre_error e;
    cr_assert_eq(vyre__stats_compare(a, n1, b, n2, NULL, &c, &e), 0, "%s", e.message);
    return c;
}

Test(stats, hodges_lehmann_by_hand)
{
    /* b - a over all pairs of a = 1 2 3, b = 4 5 6: 3 4 5 2 3 4 1 2 3,
     * sorted 1 2 2 3 3 3 4 4 5: median 3. Even count: a = 1 2, b = 4 7:
     * 3 6 2 5 -> 2 3 5 6 -> 4. */
    const double a[] = {1, 2, 3}, b[] = {4, 5, 6};
    vyre_stats_compare_result c = compare(a, 3, b, 3);
    assert_near(c.hl_shift, 3, EPS, "hl");
    assert_near(c.median_a, 2, EPS, "median a");
    assert_near(c.median_b, 5, EPS, "median b");
    assert_near(c.ratio, 2.5, EPS, "ratio");
    cr_assert(!c.hl_approx);
    const double a2[] = {1, 2}, b2[] = {4, 7};
    c = compare(a2, 2, b2, 2);
    assert_near(c.hl_shift, 4, EPS, "hl even");
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

Test(stats, hodges_lehmann_matches_brute_force)
{
    /* 301 x 200 = 60200 differences: median by full sort. */
    double *a = synth(301, 10.0, 0.4, 7), *b = synth(200, 11.0, 0.4, 8);
    double *d = malloc(301 * 200 * sizeof *d);
    cr_assert(d);
    for (size_t i = 0; i < 301; i++)
        for (size_t j = 0; j < 200; j++)
            d[i * 200 + j] = b[j] - a[i];
    qsort(d, 301 * 200, sizeof *d, cmp_d);
    double want = (d[30099] + d[30100]) / 2.0;
    vyre_stats_compare_result c = compare(a, 301, b, 200);
    assert_near(c.hl_shift, want, 1e-12, "hl");
    cr_assert(!c.hl_approx);
    free(a);
    free(b);
    free(d);

    /* Beyond 2^20 pairs the samples are thinned: b = a + 5 exactly, so the
     * thinned estimate must still be close to 5. */
    a = synth(3000, 100.0, 0.2, 9);
    b = malloc(3000 * sizeof *b);
    cr_assert(b);
    for (size_t i = 0; i < 3000; i++)
        b[i] = a[(i * 7) % 3000] + 5.0;
    c = compare(a, 3000, b, 3000);
    cr_assert(c.hl_approx);
    assert_near(c.hl_shift, 5.0, 0.2, "thinned hl");
    free(a);
    free(b);
}

Test(stats, verdicts_on_synthetic_sets)
{
    /* Low noise: +-0.5 % uniform around 100, 200 samples. */
    double *a = synth(200, 100.0, 0.005, 1);
    double *same = synth(200, 100.0, 0.005, 1);
    vyre_stats_compare_result c = compare(a, 200, same, 200);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SAME, "identical: %s", vyre_stats_verdict_name(c.verdict));
    assert_near(c.mw.p, 1.0, 1e-12, "identical p");
    assert_near(c.ratio, 1.0, 0, "identical ratio");

    double *fast = synth(200, 90.0, 0.005, 2);
    c = compare(a, 200, fast, 200);
    cr_assert_eq(c.verdict, VYRE_VERDICT_FASTER, "10%% faster: %s",
                 vyre_stats_verdict_name(c.verdict));
    cr_assert(c.mw.p < 1e-10 && c.mw.z > 0);
    assert_near(c.ratio, 0.9, 0.005, "ratio");
    assert_near(c.hl_shift, -10.0, 0.5, "hl");

    double *slow = synth(200, 110.0, 0.005, 3);
    c = compare(a, 200, slow, 200);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SLOWER, "10%% slower: %s",
                 vyre_stats_verdict_name(c.verdict));

    /* 1 % slower: clearly significant with this little noise, yet below the
     * 2 % minimum effect, so SAME; with a 0.5 % threshold it is SLOWER. */
    double *tiny = synth(200, 101.0, 0.005, 4);
    c = compare(a, 200, tiny, 200);
    cr_assert(c.mw.p < 0.01, "p = %g", c.mw.p);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SAME, "1%%: %s", vyre_stats_verdict_name(c.verdict));
    vyre_stats_compare_opts strict = {0.01, 0.005, 0.10};
    cr_assert_eq(vyre__stats_compare(a, 200, tiny, 200, &strict, &c, NULL), 0);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SLOWER);

    /* High noise (+-50 %), 20 samples, medians 3 % apart: above the 10 %
     * noise limit, so NOISY; with the limit raised, the interval straddles
     * 1 and the verdict is SAME. */
    double *wa = synth(20, 100.0, 0.5, 5), *wb = synth(20, 103.0, 0.5, 6);
    c = compare(wa, 20, wb, 20);
    cr_assert(c.mw.p > 0.01, "p = %g", c.mw.p);
    cr_assert_eq(c.verdict, VYRE_VERDICT_NOISY, "%s", vyre_stats_verdict_name(c.verdict));
    vyre_stats_compare_opts lax = {0.01, 0.02, 1.0};
    cr_assert_eq(vyre__stats_compare(wa, 20, wb, 20, &lax, &c, NULL), 0);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SAME, "%s", vyre_stats_verdict_name(c.verdict));
    cr_assert(c.ratio_lo < 1.0 && c.ratio_hi > 1.0, "[%g, %g]", c.ratio_lo, c.ratio_hi);

    free(a);
    free(same);
    free(fast);
    free(slow);
    free(tiny);
    free(wa);
    free(wb);
}

Test(stats, compare_bad_options)
{
    const double a[] = {1, 2, 3};
    vyre_stats_compare_result c;
    vyre_error e;
    vyre_stats_compare_opts o = {0, 0.02, 0.10};
    cr_assert_eq(vyre__stats_compare(a, 3, a, 3, &o, &c, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "significance level '0' is not between 0 and 1");
    cr_assert_str_eq(e.hint, "use a significance level such as 0.01 or 0.05");
    o = (vyre_stats_compare_opts){0.01, -1, 0.10};
    cr_assert_eq(vyre__stats_compare(a, 3, a, 3, &o, &c, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "minimum change '-1' is negative");
    o = (vyre_stats_compare_opts){0.01, 0.02, 0};
    cr_assert_eq(vyre__stats_compare(a, 3, a, 3, &o, &c, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "noise limit '0' is not above 0");
    cr_assert_str_eq(e.hint, "use a noise limit such as 0.10 (10 %)");
    const double inf[] = {1, INFINITY};
    cr_assert_eq(vyre__stats_compare(a, 3, inf, 2, NULL, &c, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "sample 1 of the second sample set is 'inf', not a finite number");
    cr_assert_str_eq(vyre_stats_verdict_name(VYRE_VERDICT_FASTER), "FASTER");
    cr_assert_str_eq(vyre_stats_verdict_name(VYRE_VERDICT_SLOWER), "SLOWER");
    cr_assert_str_eq(vyre_stats_verdict_name(VYRE_VERDICT_SAME), "SAME");
    cr_assert_str_eq(vyre_stats_verdict_name(VYRE_VERDICT_NOISY), "NOISY");
}

Test(stats, robust_noise_of_an_odd_sample_with_an_outlier)
{
    /* median 3; |x - 3| = 2 1 0 1 97, MAD 1; 1.4826 * 1 / 3. The 100 does
     * not move it, as it would a standard deviation. */
    const double x[] = {4, 1, 100, 3, 2};
    assert_near(vyre__stats_robust_noise(x, 5), 1.4826 / 3.0, 1e-12, "robust noise");
    cr_assert(isnan(vyre__stats_robust_noise(x, 1)), "one sample has no spread");
    cr_assert(isnan(vyre__stats_robust_noise(x, 0)));
    const double z[] = {0, 0, 1};
    cr_assert(isnan(vyre__stats_robust_noise(z, 3)));
}

/* Uniform +-w has MAD w / 2, so robust noise 1.4826 w / 2: the spread that
 * gives robust noise `noise`. */
static double spread_for(double noise)
{
    return noise * 2.0 / 1.4826;
}

Test(stats, aa_from_one_distribution_is_same)
{
    /* Two independent draws of 3000 samples each from one distribution at
     * 5 % noise: whatever the Mann-Whitney p, the interval stays inside
     * 1 +- 5 %. */
    for (uint64_t seed = 10; seed < 16; seed++) {
        double *a = synth(3000, 445e3, spread_for(0.05), seed);
        double *b = synth(3000, 445e3, spread_for(0.05), seed + 100);
        vyre_stats_compare_result c = compare(a, 3000, b, 3000);
        cr_assert_eq(c.verdict, VYRE_VERDICT_SAME, "seed %d: %s [%g, %g]", (int)seed,
                     vyre_stats_verdict_name(c.verdict), c.ratio_lo, c.ratio_hi);
        assert_near(c.noise_a, 0.05, 0.005, "noise a");
        cr_assert(c.ratio_lo <= c.ratio && c.ratio <= c.ratio_hi);
        free(a);
        free(b);
    }
}

Test(stats, large_samples_small_shift_is_same)
{
    /* 1 % apart at 1 % noise on 5000 samples: Mann-Whitney calls it
     * significant beyond doubt, but it is under the 2 % minimum effect. */
    double *a = synth(5000, 100.0, spread_for(0.01), 21);
    double *b = synth(5000, 101.0, spread_for(0.01), 22);
    vyre_stats_compare_result c = compare(a, 5000, b, 5000);
    cr_assert(c.mw.p < 1e-16, "p = %g", c.mw.p);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SAME, "%s", vyre_stats_verdict_name(c.verdict));
    assert_near(c.threshold, 0.02, 0, "threshold is min_effect");
    free(a);
    free(b);
}

Test(stats, shift_at_low_noise_is_slower_at_high_noise_noisy)
{
    double *a = synth(500, 100.0, spread_for(0.01), 31);
    double *b = synth(500, 110.0, spread_for(0.01), 32);
    vyre_stats_compare_result c = compare(a, 500, b, 500);
    cr_assert_eq(c.verdict, VYRE_VERDICT_SLOWER, "%s", vyre_stats_verdict_name(c.verdict));
    cr_assert(c.ratio_lo > 1.02 && c.ratio_hi < 1.2, "[%g, %g]", c.ratio_lo, c.ratio_hi);
    vyre_stats_compare_result back = compare(b, 500, a, 500);
    cr_assert_eq(back.verdict, VYRE_VERDICT_FASTER, "%s", vyre_stats_verdict_name(back.verdict));
    /* Seeded: the same samples give the same interval. */
    vyre_stats_compare_result again = compare(a, 500, b, 500);
    cr_assert(again.ratio_lo == c.ratio_lo && again.ratio_hi == c.ratio_hi);
    free(a);
    free(b);

    a = synth(500, 100.0, spread_for(0.30), 33);
    b = synth(500, 110.0, spread_for(0.30), 34);
    c = compare(a, 500, b, 500);
    cr_assert_eq(c.verdict, VYRE_VERDICT_NOISY, "%s", vyre_stats_verdict_name(c.verdict));
    assert_near(c.noise_a, 0.30, 0.05, "noise a");
    free(a);
    free(b);
}

Test(stats, bootstrap_bounded_on_many_samples)
{
    /* 200000 samples each: thinned for the bootstrap, still correct. */
    double *a = synth(200000, 100.0, spread_for(0.01), 41);
    double *b = synth(200000, 95.0, spread_for(0.01), 42);
    vyre_stats_compare_result c = compare(a, 200000, b, 200000);
    cr_assert_eq(c.verdict, VYRE_VERDICT_FASTER, "%s", vyre_stats_verdict_name(c.verdict));
    cr_assert(c.ratio_lo < 0.95 + 0.01 && c.ratio_hi > 0.95 - 0.01, "[%g, %g]", c.ratio_lo,
              c.ratio_hi);
    free(a);
    free(b);
}

/* ---- robust noise ---- */

Test(stats, robust_noise_by_hand)
{
    /* Sorted 2 4 4 4 5 5 7 9: median 4.5, |x - 4.5| = 2.5 .5 .5 .5 .5 .5
     * 2.5 4.5, MAD 0.5; 1.4826 * 0.5 / 4.5 = 0.16473... */
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    assert_near(vyre__stats_robust_noise(x, 8), 1.4826 * 0.5 / 4.5, 1e-12, "robust noise");
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(x, 8, &s, NULL), 0);
    assert_near(s.robust_noise, 1.4826 * 0.5 / 4.5, 1e-12, "vyre_stats.robust_noise");
    cr_assert(isnan(vyre__stats_robust_noise(x, 1)), "n = 1 has no spread");
    cr_assert(isnan(vyre__stats_robust_noise(NULL, 0)));
    const double zero[] = {0, 0, 0};
    cr_assert(isnan(vyre__stats_robust_noise(zero, 3)), "a median of 0 has no relative spread");
    const double bad[] = {1, NAN, 2};
    cr_assert(isnan(vyre__stats_robust_noise(bad, 3)));
}

Test(stats, outliers_do_not_blow_up_the_robust_noise)
{
    /* 100 samples within 4-5 us and three 1 ms stalls: stddev / mean goes
     * far above 100 %, the robust spread stays near that of the clean
     * samples. */
    double x[103];
    for (size_t i = 0; i < 100; i++)
        x[i] = 4000 + (double)(i % 10) * 100;
    x[100] = x[101] = x[102] = 1e6;
    vyre_stats s;
    cr_assert_eq(vyre__stats_compute(x, 103, &s, NULL), 0);
    cr_assert_gt(s.rel_stddev, 1.0, "stddev / mean: %g", s.rel_stddev);
    double clean = vyre__stats_robust_noise(x, 100);
    cr_assert_lt(s.robust_noise, 0.1, "robust: %g", s.robust_noise);
    cr_assert_lt(fabs(s.robust_noise - clean), 0.02, "%g vs %g", s.robust_noise, clean);
}

Test(stats, stop_check_noise_uses_the_given_noise_and_minimums)
{
    vyre_stats_stop_rule rule = {10, 0.0, 0.02, 3.0, 0};
    vyre_stats_stop_decision d = vyre__stats_stop_check_noise(&rule, 5, 0.001, 1.0, 0.5);
    cr_assert_eq(d.stop, 0, "5 of 10 samples: the minimum holds whatever the noise");
    cr_assert_eq(d.reason, VYRE_STOP_MIN_SAMPLES_NOT_MET);
    d = vyre__stats_stop_check_noise(&rule, 10, 0.001, 1.0, 0.5);
    cr_assert_eq(d.stop, 1);
    cr_assert_eq(d.reason, VYRE_STOP_NOISE_OK);
    d = vyre__stats_stop_check_noise(&rule, 10, 0.05, 1.0, 0.5);
    cr_assert_eq(d.stop, 0);
    cr_assert_eq(d.reason, VYRE_STOP_NOISY);
    d = vyre__stats_stop_check_noise(&rule, 10, NAN, 1.0, 0.5);
    cr_assert_eq(d.stop, 0, "an unknown noise is never low enough");
    d = vyre__stats_stop_check_noise(&rule, 10, 0.05, 1.0, 3.0);
    cr_assert_eq(d.reason, VYRE_STOP_TIMEOUT);
    char buf[128];
    vyre__stats_stop_format(&d, &rule, buf, sizeof buf);
    cr_assert(strstr(buf, "timeout: noise 5.00% > 2.00%"), "%s", buf);
}

/* ---- rounds (issue 23) ------------------------------------------------------------ */

/* R rounds of m samples each: round r centred at center * (1 + off[r]),
 * spread `spread` uniform within; labels 0..R-1 into *round. */
static double *synth_rounds(size_t R, size_t m, double center, const double *off, double spread,
                            uint64_t seed, unsigned **round)
{
    double *x = malloc(R * m * sizeof *x);
    *round = malloc(R * m * sizeof **round);
    cr_assert(x && *round);
    uint64_t s = seed;
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < m; i++) {
            x[r * m + i] = center * (1.0 + off[r]) * (1.0 + spread * uniform(&s));
            (*round)[r * m + i] = (unsigned)r;
        }
    return x;
}

Test(stats, rounds_of_iid_data_keep_the_power_to_see_a_real_shift)
{
    static const double none[5] = {0, 0, 0, 0, 0};
    unsigned *ra, *rb, *rc2;
    double *a = synth_rounds(5, 40, 1000, none, 0.03, 11, &ra);
    double *b = synth_rounds(5, 40, 1100, none, 0.03, 12, &rb);
    double *c = synth_rounds(5, 40, 1000, none, 0.03, 13, &rc2);
    vyre_stats_compare_result r;
    cr_assert_eq(vyre__stats_compare_rounds(a, ra, 200, b, rb, 200, NULL, &r, NULL), 0);
    cr_assert_eq(r.hierarchical, 1);
    cr_assert_eq(r.rounds_a, 5);
    cr_assert_eq(r.rounds_b, 5);
    cr_assert_eq(r.verdict, VYRE_VERDICT_SLOWER, "10%% shift, i.i.d.: %s [%g, %g]",
                 vyre_stats_verdict_name(r.verdict), r.ratio_lo, r.ratio_hi);
    cr_assert_eq(vyre__stats_compare_rounds(a, ra, 200, c, rc2, 200, NULL, &r, NULL), 0);
    cr_assert_eq(r.verdict, VYRE_VERDICT_SAME, "A/A i.i.d.: %s",
                 vyre_stats_verdict_name(r.verdict));
    /* Without round labels it is today's comparison, to the bit. */
    vyre_stats_compare_result p, q;
    cr_assert_eq(vyre__stats_compare(a, 200, b, 200, NULL, &p, NULL), 0);
    cr_assert_eq(vyre__stats_compare_rounds(a, NULL, 200, b, NULL, 200, NULL, &q, NULL), 0);
    cr_assert_eq(q.hierarchical, 0);
    cr_assert(p.ratio_lo == q.ratio_lo && p.ratio_hi == q.ratio_hi && p.verdict == q.verdict);
    free(a);
    free(b);
    free(c);
    free(ra);
    free(rb);
    free(rc2);
}

Test(stats, a_shift_that_lives_between_rounds_widens_the_interval)
{
    /* Each round of a side sits at its own level (the machine drifted
     * between rounds), samples within a round agree to 0.3%. B's rounds
     * happen to sit 4% higher on the median: the samples-as-i.i.d.
     * bootstrap calls that SLOWER (its interval is the 200 samples'
     * rank noise, a few tenths of a percent); five rounds cannot tell a
     * 4% change from the drift they show. */
    static const double off_a[5] = {0.00, -0.03, 0.03, -0.01, 0.01};
    static const double off_b[5] = {0.02, 0.08, 0.00, 0.06, 0.04};
    unsigned *ra, *rb;
    double *a = synth_rounds(5, 40, 1000, off_a, 0.003, 21, &ra);
    double *b = synth_rounds(5, 40, 1000, off_b, 0.003, 22, &rb);
    vyre_stats_compare_result iid, hier;
    cr_assert_eq(vyre__stats_compare(a, 200, b, 200, NULL, &iid, NULL), 0);
    cr_assert_eq(iid.verdict, VYRE_VERDICT_SLOWER, "the i.i.d. view: %s [%g, %g]",
                 vyre_stats_verdict_name(iid.verdict), iid.ratio_lo, iid.ratio_hi);
    cr_assert_eq(vyre__stats_compare_rounds(a, ra, 200, b, rb, 200, NULL, &hier, NULL), 0);
    cr_assert_eq(hier.hierarchical, 1);
    cr_assert(hier.verdict == VYRE_VERDICT_SAME || hier.verdict == VYRE_VERDICT_DRIFT,
              "between-round shift: %s [%g, %g]", vyre_stats_verdict_name(hier.verdict),
              hier.ratio_lo, hier.ratio_hi);
    cr_assert_gt(hier.ratio_hi - hier.ratio_lo, 4 * (iid.ratio_hi - iid.ratio_lo),
                 "hierarchical [%g, %g] vs i.i.d. [%g, %g]", hier.ratio_lo, hier.ratio_hi,
                 iid.ratio_lo, iid.ratio_hi);
    /* The noise of a side whose rounds disagree is their spread. */
    size_t nr = 0;
    double noise = vyre__stats_round_noise(b, rb, 200, &nr);
    cr_assert_eq(nr, 5);
    cr_assert_geq(noise, vyre__stats_robust_noise(b, 200) - 1e-12);
    free(a);
    free(b);
    free(ra);
    free(rb);
}

Test(stats, round_noise_is_the_round_spread_when_rounds_disagree)
{
    /* Rounds at 1000, 1000, 1100, 1100, 1200 with no spread within: the
     * spread of the round medians, worked by hand: round medians
     * {1000,1000,1100,1100,1200}, their median 1100, deviations
     * {100,100,0,0,100}, MAD 100: 1.4826 * 100 / 1100. */
    static const double off[5] = {0.0, 0.0, 0.1, 0.1, 0.2};
    unsigned *r;
    double *x = synth_rounds(5, 4, 1000, off, 0.0, 1, &r);
    size_t nr = 0;
    assert_near(vyre__stats_round_noise(x, r, 20, &nr), 1.4826 * 100.0 / 1100.0, 1e-9, "noise");
    cr_assert_eq(nr, 5);
    free(x);
    free(r);
}

Test(stats, widen_by_the_reference_turns_machine_drift_into_drift)
{
    vyre_stats_compare_result r;
    memset(&r, 0, sizeof r);
    r.ratio = 1.20;
    r.ratio_lo = 1.18;
    r.ratio_hi = 1.22;
    r.threshold = 0.02;
    r.verdict = VYRE_VERDICT_SLOWER;
    vyre_stats_compare_result w = r;
    vyre__stats_compare_widen(&w, 1.0);
    cr_assert_eq(w.verdict, VYRE_VERDICT_SLOWER, "no drift: the verdict stands");
    w = r;
    vyre__stats_compare_widen(&w, 1.20); /* the reference is 20% slower too */
    cr_assert_eq(w.verdict, VYRE_VERDICT_DRIFT);
    cr_assert_eq(w.verdict_before_drift, VYRE_VERDICT_SLOWER);
    assert_near(w.drift, 1.20, 0, "drift");
    w = r;
    vyre__stats_compare_widen(&w, 1.0 / 0.8); /* the reference 20% faster */
    cr_assert_eq(w.verdict, VYRE_VERDICT_DRIFT, "drift either way widens the band");
    /* A change well beyond the drift is still a change. */
    w = r;
    w.ratio = 1.60;
    w.ratio_lo = 1.55;
    w.ratio_hi = 1.65;
    vyre__stats_compare_widen(&w, 1.20);
    cr_assert_eq(w.verdict, VYRE_VERDICT_SLOWER);
    w = r;
    w.verdict = VYRE_VERDICT_FASTER;
    w.ratio = 0.85;
    w.ratio_lo = 0.84;
    w.ratio_hi = 0.86;
    vyre__stats_compare_widen(&w, 1.20);
    cr_assert_eq(w.verdict, VYRE_VERDICT_DRIFT, "0.86 > 0.98 / 1.2");
    cr_assert_str_eq(vyre_stats_verdict_name(VYRE_VERDICT_DRIFT), "DRIFT");
}
