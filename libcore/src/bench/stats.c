/*
 * stats.c - sample statistics, stopping rules and the Mann-Whitney
 * comparison (see vyre/stats.h for the definitions, which are the
 * contract: stored results and CI gates depend on them).
 */
#include "vyre/stats.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/stats_internal.h"

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static int check_samples(const double *x, size_t n, const char *what, vyre_error *err)
{
    if (n == 0 || !x)
        return vyre__fail(err, VYRE_EINVAL, "measure at least one sample", "%s has no samples",
                          what);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return vyre__fail(err, VYRE_EINVAL, "samples must be finite numbers",
                              "sample %zu of %s is '%g', not a finite number", i, what, x[i]);
    return VYRE_OK;
}

/* 1.4826 * MAD estimates the standard deviation of normal data. */
#define MAD_TO_SIGMA 1.4826

/* A sorted heap copy of x, or NULL. */
static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc(n * sizeof *s);
    if (!s)
        return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

double vyre_stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    if (p <= 0.0)
        return sorted[0];
    if (p >= 100.0)
        return sorted[n - 1];
    double h = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

static double median_sorted(const double *s, size_t n)
{
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

/*
 * Median and robust scale of x: MAD (unscaled) and the scale the outlier
 * test divides by (1.4826 MAD, else 1.253314 mean absolute deviation, else
 * 0). sorted is x sorted; scratch has room for n doubles.
 */
static void robust(const double *x, const double *sorted, size_t n, double *scratch, double *median,
                   double *mad, double *scale)
{
    double med = median_sorted(sorted, n);
    double sum_dev = 0.0;
    for (size_t i = 0; i < n; i++) {
        scratch[i] = fabs(x[i] - med);
        sum_dev += scratch[i];
    }
    qsort(scratch, n, sizeof *scratch, cmp_double);
    *median = med;
    *mad = median_sorted(scratch, n);
    if (*mad > 0.0)
        *scale = 1.4826 * *mad;
    else
        *scale = 1.253314 * (sum_dev / (double)n);
}

static size_t flag_outliers(const double *x, size_t n, double med, double scale, double k,
                            unsigned char *flags)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        int out = scale > 0.0 && fabs(x[i] - med) > k * scale;
        if (flags)
            flags[i] = (unsigned char)out;
        count += (size_t)out;
    }
    return count;
}

int vyre__stats_compute(const double *x, size_t n, vyre_stats *out, vyre_error *err)
{
    int rc = check_samples(x, n, "the sample set", err);
    if (rc)
        return rc;
    double *s = sorted_copy(x, n);
    double *scratch = malloc(n * sizeof *scratch);
    if (!s || !scratch) {
        free(s);
        free(scratch);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for %zu samples", n);
    }
    vyre_stats st;
    memset(&st, 0, sizeof st);
    st.n = n;
    st.min = s[0];
    st.max = s[n - 1];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    st.mean = sum / (double)n;
    if (n >= 2) {
        /* Two passes: no cancellation from sum-of-squares. */
        double ss = 0.0;
        for (size_t i = 0; i < n; i++)
            ss += (x[i] - st.mean) * (x[i] - st.mean);
        st.stddev = sqrt(ss / (double)(n - 1));
        st.rel_stddev = st.mean > 0.0 ? st.stddev / st.mean : NAN;
    } else {
        st.stddev = NAN;
        st.rel_stddev = NAN;
    }
    st.p5 = vyre_stats_percentile_sorted(s, n, 5.0);
    st.p95 = vyre_stats_percentile_sorted(s, n, 95.0);
    double scale;
    robust(x, s, n, scratch, &st.median, &st.mad, &scale);
    st.n_outliers = flag_outliers(x, n, st.median, scale, VYRE_OUTLIER_K_DEFAULT, NULL);
    st.robust_noise = vyre__stats_robust_noise_of(n, st.median, st.mad);
    free(s);
    free(scratch);
    *out = st;
    return VYRE_OK;
}

int vyre__stats_outliers(const double *x, size_t n, double k, unsigned char *flags, size_t *count,
                         vyre_error *err)
{
    if (!(k > 0.0) || !isfinite(k))
        return vyre__fail(err, VYRE_EINVAL, "use a factor such as 3 (the usual choice) or 3.5",
                          "outlier factor '%g' must be above 0", k);
    int rc = check_samples(x, n, "the sample set", err);
    if (rc)
        return rc;
    double *s = sorted_copy(x, n);
    double *scratch = malloc(n * sizeof *scratch);
    if (!s || !scratch) {
        free(s);
        free(scratch);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for %zu samples", n);
    }
    double med, mad, scale;
    robust(x, s, n, scratch, &med, &mad, &scale);
    size_t c = flag_outliers(x, n, med, scale, k, flags);
    if (count)
        *count = c;
    free(s);
    free(scratch);
    return VYRE_OK;
}

/* ---- Running statistics ------------------------------------------------ */

void vyre__stats_running_push(vyre_stats_running *r, double x)
{
    r->n++;
    if (r->n == 1) {
        r->min = r->max = x;
    } else {
        r->min = x < r->min ? x : r->min;
        r->max = x > r->max ? x : r->max;
    }
    double d = x - r->mean;
    r->mean += d / (double)r->n;
    r->m2 += d * (x - r->mean);
    r->sum += x;
}

double vyre__stats_running_stddev(const vyre_stats_running *r)
{
    if (r->n < 2)
        return NAN;
    return sqrt((r->m2 > 0.0 ? r->m2 : 0.0) / (double)(r->n - 1));
}

double vyre__stats_running_noise(const vyre_stats_running *r)
{
    if (r->n < 2 || !(r->mean > 0.0))
        return NAN;
    return vyre__stats_running_stddev(r) / r->mean;
}

/* ---- Stopping rule ------------------------------------------------------ */

double vyre__stats_robust_noise_of(size_t n, double median, double mad)
{
    return n >= 2 && median > 0.0 ? MAD_TO_SIGMA * mad / median : NAN;
}

static double median_select(double *v, size_t n);

double vyre__stats_robust_noise(const double *x, size_t n)
{
    if (!x || n < 2)
        return NAN;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return NAN;
    double *v = malloc(n * sizeof *v);
    if (!v)
        return NAN;
    memcpy(v, x, n * sizeof *v);
    double med = median_select(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(v[i] - med);
    double mad = median_select(v, n);
    free(v);
    return vyre__stats_robust_noise_of(n, med, mad);
}

vyre_stats_stop_decision vyre__stats_stop_check(const vyre_stats_stop_rule *rule,
                                                const vyre_stats_running *acc, double measured_s,
                                                double elapsed_s)
{
    return vyre__stats_stop_check_noise(rule, acc->n, vyre__stats_running_noise(acc), measured_s,
                                        elapsed_s);
}

vyre_stats_stop_decision vyre__stats_stop_check_noise(const vyre_stats_stop_rule *rule, size_t n,
                                                      double noise, double measured_s,
                                                      double elapsed_s)
{
    vyre_stats_stop_decision d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.noise = noise;
    d.measured_s = measured_s;
    d.elapsed_s = elapsed_s;

    int samples_ok = n >= rule->min_samples;
    int time_ok = measured_s >= rule->min_time_s;
    if (samples_ok && time_ok) {
        if (!(rule->max_noise > 0.0)) {
            d.stop = 1;
            d.reason = VYRE_STOP_MINIMUMS_MET;
            return d;
        }
        /* NAN (n < 2) compares false: never "noise ok" on one sample. */
        if (d.noise <= rule->max_noise) {
            d.stop = 1;
            d.reason = VYRE_STOP_NOISE_OK;
            return d;
        }
    }
    if (rule->timeout_s > 0.0 && elapsed_s >= rule->timeout_s) {
        d.stop = 1;
        d.reason = VYRE_STOP_TIMEOUT;
        return d;
    }
    if (rule->max_samples > 0 && n >= rule->max_samples) {
        d.stop = 1;
        d.reason = VYRE_STOP_MAX_SAMPLES;
        return d;
    }
    d.reason = !samples_ok ? VYRE_STOP_MIN_SAMPLES_NOT_MET
               : !time_ok  ? VYRE_STOP_MIN_TIME_NOT_MET
                           : VYRE_STOP_NOISY;
    return d;
}

const char *vyre_stats_stop_reason_name(vyre_stats_stop_reason reason)
{
    switch (reason) {
    case VYRE_STOP_MIN_SAMPLES_NOT_MET:
        return "min-samples";
    case VYRE_STOP_MIN_TIME_NOT_MET:
        return "min-time";
    case VYRE_STOP_NOISY:
        return "noisy";
    case VYRE_STOP_NOISE_OK:
        return "noise-ok";
    case VYRE_STOP_MINIMUMS_MET:
        return "minimums-met";
    case VYRE_STOP_TIMEOUT:
        return "timeout";
    case VYRE_STOP_MAX_SAMPLES:
        return "max-samples";
    }
    return "?";
}

static void fmt_pct(double v, char *buf, size_t size)
{
    if (isnan(v))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.2f%%", v * 100.0);
}

static size_t stop_format_without_noise(const vyre_stats_stop_decision *d,
                                        const vyre_stats_stop_rule *rule, const char *name,
                                        const char *max, char *buf, size_t size)
{
    int n;
    switch (d->reason) {
    case VYRE_STOP_NOISE_OK:
        n = snprintf(buf, size, "%s: noise <= %s after %zu samples, %.2f s", name, max, d->n,
                     d->measured_s);
        break;
    case VYRE_STOP_MINIMUMS_MET:
        n = snprintf(buf, size, "%s: %zu samples, %.2f s", name, d->n, d->measured_s);
        break;
    case VYRE_STOP_TIMEOUT:
        if (d->n < rule->min_samples)
            n = snprintf(buf, size, "%s: %zu of %zu samples after %.1f s", name, d->n,
                         rule->min_samples, d->elapsed_s);
        else if (d->measured_s < rule->min_time_s)
            n = snprintf(buf, size, "%s: %.2f s of %.2f s measured after %.1f s", name,
                         d->measured_s, rule->min_time_s, d->elapsed_s);
        else
            n = snprintf(buf, size, "%s: noise > %s after %zu samples, %.1f s", name, max, d->n,
                         d->elapsed_s);
        break;
    default:
        n = snprintf(buf, size, "%s: %zu samples", name, d->n);
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t vyre__stats_stop_format(const vyre_stats_stop_decision *d, const vyre_stats_stop_rule *rule,
                               char *buf, size_t size)
{
    char noise[32], max[32];
    fmt_pct(d->noise, noise, sizeof noise);
    fmt_pct(rule->max_noise, max, sizeof max);
    const char *name = vyre_stats_stop_reason_name(d->reason);
    int n;
    /* Without a figure (noise NAN) the text names the threshold only: a
     * stored point's noise is its own column (issue 25: one row showed
     * 11.31% there and "noise 11.26%" here, the stop check's figure). */
    if (isnan(d->noise) && d->stop)
        return stop_format_without_noise(d, rule, name, max, buf, size);
    switch (d->reason) {
    case VYRE_STOP_MIN_SAMPLES_NOT_MET:
        n = snprintf(buf, size, "%s: %zu of %zu", name, d->n, rule->min_samples);
        break;
    case VYRE_STOP_MIN_TIME_NOT_MET:
        n = snprintf(buf, size, "%s: %.2f s of %.2f s", name, d->measured_s, rule->min_time_s);
        break;
    case VYRE_STOP_NOISY:
        n = snprintf(buf, size, "%s: %s > %s after %zu samples", name, noise, max, d->n);
        break;
    case VYRE_STOP_NOISE_OK:
        n = snprintf(buf, size, "%s: %s <= %s after %zu samples, %.2f s", name, noise, max, d->n,
                     d->measured_s);
        break;
    case VYRE_STOP_MINIMUMS_MET:
        n = snprintf(buf, size, "%s: %zu samples, %.2f s, noise %s", name, d->n, d->measured_s,
                     noise);
        break;
    case VYRE_STOP_TIMEOUT:
        if (d->n < rule->min_samples)
            n = snprintf(buf, size, "%s: %zu of %zu samples after %.1f s", name, d->n,
                         rule->min_samples, d->elapsed_s);
        else if (d->measured_s < rule->min_time_s)
            n = snprintf(buf, size, "%s: %.2f s of %.2f s measured after %.1f s", name,
                         d->measured_s, rule->min_time_s, d->elapsed_s);
        else
            n = snprintf(buf, size, "%s: noise %s > %s after %zu samples, %.1f s", name, noise, max,
                         d->n, d->elapsed_s);
        break;
    case VYRE_STOP_MAX_SAMPLES:
    default:
        n = snprintf(buf, size, "%s: %zu samples, noise %s", name, d->n, noise);
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

/* ---- Mann-Whitney U ------------------------------------------------------ */

typedef struct ranked {
    double v;
    int group; /* 0: a, 1: b */
} ranked;

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    return (a->v > b->v) - (a->v < b->v);
}

/* Largest N for the exact null distribution: the counts are integers up to
 * C(50, 25) ~ 1.3e14, exact in a double. */
#define MW_EXACT_MAX_N 50

/*
 * P(U <= u) under the null for sample sizes m and n, from the coefficients
 * of the Gaussian binomial [m+n choose m]_q, built one factor
 * (1 - q^(n+i)) / (1 - q^i) at a time; every intermediate is a polynomial
 * with integer coefficients.
 */
static double mw_exact_cdf(size_t m, size_t n, double u)
{
    if (m > n) {
        size_t t = m;
        m = n;
        n = t;
    }
    size_t deg_max = m * n;
    double c[MW_EXACT_MAX_N * MW_EXACT_MAX_N / 4 + MW_EXACT_MAX_N + 2];
    memset(c, 0, sizeof c);
    c[0] = 1.0;
    size_t deg = 0;
    for (size_t i = 1; i <= m; i++) {
        /* Multiply by (1 - q^(n+i)), then divide by (1 - q^i) over the whole
         * product, so that the quotient's top coefficients cancel to 0. */
        size_t sh = n + i, top = deg + sh;
        for (size_t k = top; k >= sh; k--)
            c[k] -= c[k - sh];
        for (size_t k = i; k <= top; k++)
            c[k] += c[k - i];
        deg += n;
    }
    double total = 0.0, below = 0.0;
    for (size_t k = 0; k <= deg_max; k++) {
        total += c[k];
        if ((double)k <= u + 1e-9)
            below += c[k];
    }
    return below / total;
}

int vyre__stats_mann_whitney(const double *a, size_t n1, const double *b, size_t n2,
                             vyre_stats_mann_whitney_result *out, vyre_error *err)
{
    int rc = check_samples(a, n1, "the first sample set", err);
    if (rc == 0)
        rc = check_samples(b, n2, "the second sample set", err);
    if (rc)
        return rc;
    if (n2 > SIZE_MAX / sizeof(ranked) - n1)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "too many samples to rank (%zu and %zu)", n1, n2);
    size_t N = n1 + n2;
    ranked *r = malloc(N * sizeof *r);
    if (!r)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for %zu samples", N);
    for (size_t i = 0; i < n1; i++)
        r[i] = (ranked){a[i], 0};
    for (size_t j = 0; j < n2; j++)
        r[n1 + j] = (ranked){b[j], 1};
    qsort(r, N, sizeof *r, cmp_ranked);

    double r1 = 0.0, ties = 0.0;
    for (size_t i = 0; i < N;) {
        size_t j = i;
        while (j + 1 < N && r[j + 1].v == r[i].v)
            j++;
        double t = (double)(j - i + 1);
        double mid = ((double)i + (double)j) / 2.0 + 1.0; /* ranks are 1-based */
        for (size_t k = i; k <= j; k++)
            if (r[k].group == 0)
                r1 += mid;
        ties += t * t * t - t;
        i = j + 1;
    }
    free(r);

    vyre_stats_mann_whitney_result mw;
    memset(&mw, 0, sizeof mw);
    double dn1 = (double)n1, dn2 = (double)n2, dN = (double)N;
    mw.n1 = n1;
    mw.n2 = n2;
    mw.u1 = r1 - dn1 * (dn1 + 1.0) / 2.0;
    mw.u2 = dn1 * dn2 - mw.u1;
    mw.u = mw.u1 < mw.u2 ? mw.u1 : mw.u2;
    double var = dn1 * dn2 / 12.0 * ((dN + 1.0) - ties / (dN * (dN - 1.0)));
    double d = mw.u1 - dn1 * dn2 / 2.0;
    if (var <= 0.0) {
        mw.z = 0.0;
        mw.p = 1.0;
    } else {
        double ad = fabs(d) > 0.5 ? fabs(d) - 0.5 : 0.0;
        mw.z = (d < 0 ? -ad : ad) / sqrt(var);
        mw.p = erfc(fabs(mw.z) / sqrt(2.0));
        if (ties == 0.0 && N <= MW_EXACT_MAX_N) {
            double p = 2.0 * mw_exact_cdf(n1, n2, mw.u);
            mw.p = p < 1.0 ? p : 1.0;
            mw.exact = 1;
        }
    }
    *out = mw;
    return VYRE_OK;
}

/* ---- Comparison --------------------------------------------------------- */

#define HL_MAX_PAIRS ((size_t)1 << 20)
#define HL_THIN      1024

/* Quickselect: reorders v so that v[k] is the k-th smallest, everything
 * before it <= and everything after it >=. Median-of-three pivots. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (hi > lo) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo]) {
            double t = v[mid];
            v[mid] = v[lo];
            v[lo] = t;
        }
        if (v[hi] < v[lo]) {
            double t = v[hi];
            v[hi] = v[lo];
            v[lo] = t;
        }
        if (v[hi] < v[mid]) {
            double t = v[hi];
            v[hi] = v[mid];
            v[mid] = t;
        }
        double pivot = v[mid];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

static double median_select(double *v, size_t n)
{
    double upper = select_kth(v, n, n / 2);
    if (n % 2)
        return upper;
    double lower = v[0];
    for (size_t i = 1; i < n / 2; i++)
        lower = v[i] > lower ? v[i] : lower;
    return (lower + upper) / 2.0;
}

/* Evenly spaced order statistics of sorted s (n > m) into t[0..m-1]. */
static void thin(const double *s, size_t n, double *t, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        double pos = (double)j * (double)(n - 1) / (double)(m - 1);
        t[j] = s[(size_t)floor(pos + 0.5)];
    }
}

/* splitmix64: a small, well-mixed generator; seeded with a constant so a
 * comparison of the same samples always gives the same interval. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Median of a resample (with replacement) of s[0..n-1], using buf[n]. */
static double resample_median(const double *s, size_t n, double *buf, uint64_t *state)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = s[splitmix64(state) % n];
    return median_select(buf, n);
}

/* Percentile bootstrap interval at level 1 - alpha of median(b)/median(a),
 * from sorted sa, sb (thinned to VYRE_COMPARE_BOOT_MAX). 0 or VYRE_ENOMEM. */
static int bootstrap_ratio(const double *sa, size_t n1, const double *sb, size_t n2, double alpha,
                           double *lo, double *hi)
{
    size_t m1 = n1 > VYRE_COMPARE_BOOT_MAX ? VYRE_COMPARE_BOOT_MAX : n1;
    size_t m2 = n2 > VYRE_COMPARE_BOOT_MAX ? VYRE_COMPARE_BOOT_MAX : n2;
    double *ta = malloc(m1 * sizeof *ta);
    double *tb = malloc(m2 * sizeof *tb);
    double *buf = malloc((m1 > m2 ? m1 : m2) * sizeof *buf);
    double *r = malloc(VYRE_COMPARE_RESAMPLES * sizeof *r);
    if (!ta || !tb || !buf || !r) {
        free(ta);
        free(tb);
        free(buf);
        free(r);
        return VYRE_ENOMEM;
    }
    if (m1 < n1)
        thin(sa, n1, ta, m1);
    else
        memcpy(ta, sa, n1 * sizeof *ta);
    if (m2 < n2)
        thin(sb, n2, tb, m2);
    else
        memcpy(tb, sb, n2 * sizeof *tb);
    uint64_t state = 0x7672652d626f6f74ULL;
    size_t k = 0;
    for (size_t i = 0; i < VYRE_COMPARE_RESAMPLES; i++) {
        double ma = resample_median(ta, m1, buf, &state);
        double mb = resample_median(tb, m2, buf, &state);
        if (ma != 0.0)
            r[k++] = mb / ma;
    }
    if (k == 0) {
        *lo = *hi = NAN;
    } else {
        qsort(r, k, sizeof *r, cmp_double);
        *lo = vyre_stats_percentile_sorted(r, k, 100.0 * alpha / 2.0);
        *hi = vyre_stats_percentile_sorted(r, k, 100.0 * (1.0 - alpha / 2.0));
    }
    free(ta);
    free(tb);
    free(buf);
    free(r);
    return VYRE_OK;
}

/* The verdict from c's interval, noise and threshold (vyre/stats.h). */
static void decide(vyre_stats_compare_result *c, const vyre_stats_compare_opts *opts)
{
    c->threshold = opts->min_effect;
    if (c->noise_a > c->threshold)
        c->threshold = c->noise_a;
    if (c->noise_b > c->threshold)
        c->threshold = c->noise_b;
    c->verdict = VYRE_VERDICT_SAME;
    if (!isfinite(c->ratio) || !isfinite(c->ratio_lo) || !isfinite(c->ratio_hi))
        c->verdict = VYRE_VERDICT_SAME;
    else if (!(c->noise_a <= opts->max_noise) || !(c->noise_b <= opts->max_noise))
        c->verdict = VYRE_VERDICT_NOISY;
    else if (c->ratio_lo > 1.0 + c->threshold)
        c->verdict = VYRE_VERDICT_SLOWER;
    else if (c->ratio_hi < 1.0 - c->threshold)
        c->verdict = VYRE_VERDICT_FASTER;
    c->verdict_before_drift = c->verdict;
}

int vyre__stats_compare(const double *a, size_t n1, const double *b, size_t n2,
                        const vyre_stats_compare_opts *opts, vyre_stats_compare_result *out,
                        vyre_error *err)
{
    static const vyre_stats_compare_opts defaults = VYRE_COMPARE_OPTS_DEFAULT;
    if (!opts)
        opts = &defaults;
    if (!(opts->alpha > 0.0 && opts->alpha < 1.0))
        return vyre__fail(err, VYRE_EINVAL, "use a significance level such as 0.01 or 0.05",
                          "significance level '%g' is not between 0 and 1", opts->alpha);
    if (!(opts->min_effect >= 0.0) || !isfinite(opts->min_effect))
        return vyre__fail(err, VYRE_EINVAL, "use a minimum change such as 0.02 (2 %)",
                          "minimum change '%g' is negative", opts->min_effect);
    if (!(opts->max_noise > 0.0) || !isfinite(opts->max_noise))
        return vyre__fail(err, VYRE_EINVAL, "use a noise limit such as 0.10 (10 %)",
                          "noise limit '%g' is not above 0", opts->max_noise);
    vyre_stats_compare_result c;
    memset(&c, 0, sizeof c);
    int rc = vyre__stats_mann_whitney(a, n1, b, n2, &c.mw, err);
    if (rc)
        return rc;

    double *sa = sorted_copy(a, n1);
    double *sb = sorted_copy(b, n2);
    int approx = n1 * n2 > HL_MAX_PAIRS || (n1 && n2 > SIZE_MAX / n1);
    size_t m1 = approx && n1 > HL_THIN ? HL_THIN : n1;
    size_t m2 = approx && n2 > HL_THIN ? HL_THIN : n2;
    double *ta = m1 < n1 ? malloc(m1 * sizeof *ta) : NULL;
    double *tb = m2 < n2 ? malloc(m2 * sizeof *tb) : NULL;
    double *diff = malloc(m1 * m2 * sizeof *diff);
    if (!sa || !sb || !diff || (m1 < n1 && !ta) || (m2 < n2 && !tb)) {
        free(sa);
        free(sb);
        free(ta);
        free(tb);
        free(diff);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing %zu and %zu samples", n1,
                          n2);
    }
    c.median_a = median_sorted(sa, n1);
    c.median_b = median_sorted(sb, n2);
    c.ratio = c.median_a != 0.0 ? c.median_b / c.median_a : NAN;
    const double *pa = sa, *pb = sb;
    if (ta) {
        thin(sa, n1, ta, m1);
        pa = ta;
    }
    if (tb) {
        thin(sb, n2, tb, m2);
        pb = tb;
    }
    for (size_t i = 0; i < m1; i++)
        for (size_t j = 0; j < m2; j++)
            diff[i * m2 + j] = pb[j] - pa[i];
    c.hl_shift = median_select(diff, m1 * m2);
    c.hl_approx = ta || tb;
    free(ta);
    free(tb);
    free(diff);
    c.ratio_lo = c.ratio_hi = NAN;
    if (isfinite(c.ratio) &&
        bootstrap_ratio(sa, n1, sb, n2, opts->alpha, &c.ratio_lo, &c.ratio_hi)) {
        free(sa);
        free(sb);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing %zu and %zu samples", n1,
                          n2);
    }
    free(sa);
    free(sb);

    c.noise_a = vyre__stats_robust_noise(a, n1);
    c.noise_b = vyre__stats_robust_noise(b, n2);
    c.rounds_a = c.rounds_b = 1;
    c.drift = 1.0;
    decide(&c, opts);
    *out = c;
    return VYRE_OK;
}

/* ---- rounds ------------------------------------------------------------------ */

/* A side split by round: round r's samples sorted at v[off[r]..off[r+1]). */
struct rounds {
    size_t nr;
    double *v;
    size_t *off;
};

struct tagged {
    unsigned round;
    double v;
};

static int cmp_tagged(const void *pa, const void *pb)
{
    const struct tagged *a = pa, *b = pb;
    if (a->round != b->round)
        return (a->round > b->round) - (a->round < b->round);
    return (a->v > b->v) - (a->v < b->v);
}

static void rounds_release(struct rounds *r)
{
    free(r->v);
    free(r->off);
    memset(r, 0, sizeof *r);
}

/* Groups x by round label, ascending, each round sorted. */
static int rounds_split(const double *x, const unsigned *round, size_t n, struct rounds *r)
{
    memset(r, 0, sizeof *r);
    struct tagged *t = malloc(n * sizeof *t);
    r->v = malloc(n * sizeof *r->v);
    r->off = malloc((n + 1) * sizeof *r->off);
    if (!t || !r->v || !r->off) {
        free(t);
        rounds_release(r);
        return VYRE_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        t[i].round = round[i];
        t[i].v = x[i];
    }
    qsort(t, n, sizeof *t, cmp_tagged);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || t[i].round != t[i - 1].round)
            r->off[r->nr++] = i;
        r->v[i] = t[i].v;
    }
    r->off[r->nr] = n;
    free(t);
    return VYRE_OK;
}

/* 1.4826 MAD of the round medians / median, from a split side. */
static double between_rounds(const struct rounds *r, double median)
{
    if (r->nr < 2 || !(median > 0))
        return NAN;
    double *m = malloc(r->nr * sizeof *m);
    if (!m)
        return NAN;
    for (size_t k = 0; k < r->nr; k++)
        m[k] = median_sorted(r->v + r->off[k], r->off[k + 1] - r->off[k]);
    double med = median_select(m, r->nr);
    for (size_t k = 0; k < r->nr; k++)
        m[k] = fabs(m[k] - med);
    double mad = median_select(m, r->nr);
    free(m);
    return MAD_TO_SIGMA * mad / median;
}

double vyre__stats_round_noise(const double *x, const unsigned *round, size_t n, size_t *nrounds)
{
    if (nrounds)
        *nrounds = 0;
    double within = vyre__stats_robust_noise(x, n);
    if (!round || n == 0)
        return within;
    struct rounds r;
    if (rounds_split(x, round, n, &r))
        return NAN;
    if (nrounds)
        *nrounds = r.nr;
    double *s = sorted_copy(x, n);
    double between = s ? between_rounds(&r, median_sorted(s, n)) : NAN;
    free(s);
    rounds_release(&r);
    return isfinite(between) && !(between <= within) ? between : within;
}

/* One side thinned for the bootstrap: every round to at most cap evenly
 * spaced order statistics, into t (room for n), offsets into toff. */
static void rounds_thin(const struct rounds *r, size_t cap, double *t, size_t *toff)
{
    size_t at = 0;
    for (size_t k = 0; k < r->nr; k++) {
        size_t len = r->off[k + 1] - r->off[k];
        size_t m = len > cap ? cap : len;
        toff[k] = at;
        if (m < len)
            thin(r->v + r->off[k], len, t + at, m);
        else
            memcpy(t + at, r->v + r->off[k], len * sizeof *t);
        at += m;
    }
    toff[r->nr] = at;
}

/* Median of one hierarchical resample of a thinned side (buf: room for
 * nr * the largest round). */
static double resample_rounds(const double *t, const size_t *toff, size_t nr, double *buf,
                              uint64_t *state)
{
    size_t k = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t j = (size_t)(splitmix64(state) % nr);
        size_t len = toff[j + 1] - toff[j];
        for (size_t q = 0; q < len; q++)
            buf[k++] = t[toff[j] + (size_t)(splitmix64(state) % len)];
    }
    return median_select(buf, k);
}

static size_t largest_round(const size_t *toff, size_t nr)
{
    size_t big = 0;
    for (size_t k = 0; k < nr; k++)
        if (toff[k + 1] - toff[k] > big)
            big = toff[k + 1] - toff[k];
    return big;
}

/* The hierarchical bootstrap interval of median(b) / median(a). */
static int bootstrap_rounds(const struct rounds *ra, const struct rounds *rb, double alpha,
                            double *lo, double *hi)
{
    size_t ca = VYRE_COMPARE_BOOT_MAX / ra->nr, cb = VYRE_COMPARE_BOOT_MAX / rb->nr;
    size_t na = ra->off[ra->nr], nb = rb->off[rb->nr];
    double *ta = malloc(na * sizeof *ta), *tb = malloc(nb * sizeof *tb);
    size_t *oa = malloc((ra->nr + 1) * sizeof *oa), *ob = malloc((rb->nr + 1) * sizeof *ob);
    double *r = malloc(VYRE_COMPARE_RESAMPLES * sizeof *r);
    double *buf = NULL;
    int rc = VYRE_ENOMEM;
    if (!ta || !tb || !oa || !ob || !r)
        goto out;
    rounds_thin(ra, ca ? ca : 1, ta, oa);
    rounds_thin(rb, cb ? cb : 1, tb, ob);
    size_t ba = largest_round(oa, ra->nr) * ra->nr, bb = largest_round(ob, rb->nr) * rb->nr;
    buf = malloc((ba > bb ? ba : bb) * sizeof *buf);
    if (!buf)
        goto out;
    uint64_t state = 0x7672652d726f756eULL;
    size_t k = 0;
    for (size_t i = 0; i < VYRE_COMPARE_RESAMPLES; i++) {
        double ma = resample_rounds(ta, oa, ra->nr, buf, &state);
        double mb = resample_rounds(tb, ob, rb->nr, buf, &state);
        if (ma != 0.0)
            r[k++] = mb / ma;
    }
    *lo = *hi = NAN;
    if (k) {
        qsort(r, k, sizeof *r, cmp_double);
        *lo = vyre_stats_percentile_sorted(r, k, 100.0 * alpha / 2.0);
        *hi = vyre_stats_percentile_sorted(r, k, 100.0 * (1.0 - alpha / 2.0));
    }
    rc = VYRE_OK;
out:
    free(ta);
    free(tb);
    free(oa);
    free(ob);
    free(r);
    free(buf);
    return rc;
}

int vyre__stats_compare_rounds(const double *a, const unsigned *round_a, size_t n1, const double *b,
                               const unsigned *round_b, size_t n2,
                               const vyre_stats_compare_opts *opts, vyre_stats_compare_result *out,
                               vyre_error *err)
{
    static const vyre_stats_compare_opts defaults = VYRE_COMPARE_OPTS_DEFAULT;
    if (!opts)
        opts = &defaults;
    vyre_stats_compare_result c;
    int rc = vyre__stats_compare(a, n1, b, n2, opts, &c, err);
    if (rc || !round_a || !round_b)
        goto done;
    struct rounds ra, rb;
    if (rounds_split(a, round_a, n1, &ra))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing rounds");
    if (rounds_split(b, round_b, n2, &rb)) {
        rounds_release(&ra);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing rounds");
    }
    c.rounds_a = ra.nr;
    c.rounds_b = rb.nr;
    if (ra.nr >= 2 && rb.nr >= 2) {
        double ba = between_rounds(&ra, c.median_a), bb = between_rounds(&rb, c.median_b);
        if (isfinite(ba) && !(ba <= c.noise_a))
            c.noise_a = ba;
        if (isfinite(bb) && !(bb <= c.noise_b))
            c.noise_b = bb;
        if (isfinite(c.ratio))
            rc = bootstrap_rounds(&ra, &rb, opts->alpha, &c.ratio_lo, &c.ratio_hi);
        c.hierarchical = 1;
        decide(&c, opts);
    }
    rounds_release(&ra);
    rounds_release(&rb);
    if (rc)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing %zu and %zu samples", n1,
                          n2);
done:
    if (!rc)
        *out = c;
    return rc;
}

void vyre__stats_compare_widen(vyre_stats_compare_result *r, double drift)
{
    if (!r)
        return;
    r->verdict_before_drift = r->verdict;
    r->drift = isfinite(drift) && drift > 1.0 ? drift : 1.0;
    if (r->verdict == VYRE_VERDICT_SLOWER && !(r->ratio_lo > (1.0 + r->threshold) * r->drift))
        r->verdict = VYRE_VERDICT_DRIFT;
    else if (r->verdict == VYRE_VERDICT_FASTER && !(r->ratio_hi < (1.0 - r->threshold) / r->drift))
        r->verdict = VYRE_VERDICT_DRIFT;
}

const char *vyre_stats_verdict_name(vyre_stats_verdict v)
{
    switch (v) {
    case VYRE_VERDICT_SAME:
        return "SAME";
    case VYRE_VERDICT_FASTER:
        return "FASTER";
    case VYRE_VERDICT_SLOWER:
        return "SLOWER";
    case VYRE_VERDICT_NOISY:
        return "NOISY";
    case VYRE_VERDICT_DRIFT:
        return "DRIFT";
    }
    return "?";
}
