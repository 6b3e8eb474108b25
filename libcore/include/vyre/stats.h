/*
 * vyre/stats.h - sample statistics, stopping rules and run-to-run
 * comparison for benchmarks.
 *
 * This header is part of libvyrecore's public API.
 *
 * Definitions (all documented here so that stored results mean one thing):
 *
 * - median: the middle value, or the mean of the two middle values.
 * - percentile p (0..100): linear interpolation between order statistics,
 *   h = (n - 1) * p / 100, x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] -
 *   x[floor(h)]) on the sorted samples (Hyndman & Fan type 7, the default of
 *   R's quantile() and NumPy's percentile()). p50 is the median.
 * - stddev: the sample standard deviation (divisor n - 1); NAN for n < 2.
 * - rel_stddev: stddev / mean, the relative standard deviation nvbench
 *   reports; NAN for n < 2 or a mean <= 0. Kept under this name in the
 *   stored facts (points.rel_stddev), CSV (rel_stddev) and JSON
 *   (rel_stddev_ratio); a few outliers drive it, so nothing decides or
 *   displays on it, and nothing calls it noise.
 * - robust noise: 1.4826 * MAD / median, the relative spread the stopping
 *   rule and every figure named `noise` use (points.noise, the tables,
 *   `history`, CSV `noise`, JSON `noise_ratio`) (1.4826 * MAD estimates the standard
 *   deviation of normal data, so on clean data it reads like stddev / mean,
 *   but up to half the samples can be outliers without moving it much);
 *   NAN for n < 2 or a median <= 0.
 * - MAD: median absolute deviation from the median, unscaled.
 * - outlier: |x - median| > k * 1.4826 * MAD (k = 3 by default; 1.4826 makes
 *   MAD estimate the standard deviation of normal data). When MAD is 0 (more
 *   than half the samples equal), the scale falls back to 1.253314 * the mean
 *   absolute deviation from the median (Iglewicz and Hoaglin's modified
 *   z-score); when that is 0 too, every sample equals the median and none is
 *   an outlier.
 *
 * Samples must be finite; functions that take samples reject NaN and
 * infinities with VYRE_EINVAL. Nothing here keeps state between calls;
 * every function is thread-safe on distinct outputs.
 */
#ifndef VYRE_STATS_H
#define VYRE_STATS_H

#include <stddef.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_OUTLIER_K_DEFAULT 3.0

/* Summary of one sample set; units are those of the samples. */
typedef struct vyre_stats {
    size_t n;
    double min, max, mean, median;
    double stddev;     /* sample, NAN for n < 2 */
    double rel_stddev; /* stddev / mean, NAN when undefined */
    double p5, p95;
    double mad;          /* unscaled */
    size_t n_outliers;   /* with k = VYRE_OUTLIER_K_DEFAULT */
    double robust_noise; /* 1.4826 * mad / median, NAN when undefined */
} vyre_stats;

/* Percentile p (0..100, type 7 above) of sorted[0..n-1], ascending. n > 0. */
VYRE_EXTERN double vyre_stats_percentile_sorted(const double *sorted, size_t n, double p);

/* ---- Running statistics ------------------------------------------------ */

/* Welford accumulator for measuring loops: O(1) per sample, so a stopping
 * rule can be checked after every sample. Zero-initialise or use
 * VYRE_RUNNING_INIT. */
typedef struct vyre_stats_running {
    size_t n;
    double mean, m2, sum, min, max;
} vyre_stats_running;

#define VYRE_RUNNING_INIT                                                                          \
    {                                                                                              \
        0, 0.0, 0.0, 0.0, 0.0, 0.0                                                                 \
    }

/* Its push, stddev and noise are libcore's (bench/stats_internal.h). */

/* ---- Stopping rule ------------------------------------------------------ */

/*
 * When to stop measuring a point, after nvbench: keep sampling until at
 * least min_samples samples AND min_time_s of measured time (the sum of the
 * sample times, not wall time) are in, and then until the noise is at most
 * max_noise; stop anyway once timeout_s of wall time has passed since the
 * point started, or once max_samples samples are in. A zero or negative
 * max_noise disables the noise criterion (stop as soon as the minimums are
 * met); a zero timeout_s or max_samples disables that limit.
 */
typedef struct vyre_stats_stop_rule {
    size_t min_samples;
    double min_time_s;
    double max_noise; /* robust noise (1.4826 * MAD / median), 0.005 = 0.5 % */
    double timeout_s;
    size_t max_samples;
} vyre_stats_stop_rule;

/* nvbench's defaults: 10 samples, 0.5 s, 0.5 % noise, 15 s timeout; and a
 * cap of one million samples so that memory stays bounded. */
#define VYRE_STOP_RULE_DEFAULT                                                                     \
    {                                                                                              \
        10, 0.5, 0.005, 15.0, 1000000                                                              \
    }

typedef enum vyre_stats_stop_reason {
    /* keep going */
    VYRE_STOP_MIN_SAMPLES_NOT_MET = 0,
    VYRE_STOP_MIN_TIME_NOT_MET = 1,
    VYRE_STOP_NOISY = 2, /* minimums met, noise above max_noise */
    /* stop */
    VYRE_STOP_NOISE_OK = 3,     /* minimums met and noise at most max_noise */
    VYRE_STOP_MINIMUMS_MET = 4, /* minimums met, noise criterion disabled */
    VYRE_STOP_TIMEOUT = 5,      /* timeout_s of wall time passed first */
    VYRE_STOP_MAX_SAMPLES = 6,  /* max_samples reached first */
} vyre_stats_stop_reason;

typedef struct vyre_stats_stop_decision {
    int stop; /* 1: stop measuring this point */
    vyre_stats_stop_reason reason;
    size_t n;
    double noise;      /* at decision time, NAN when undefined */
    double measured_s; /* as passed in */
    double elapsed_s;  /* as passed in */
} vyre_stats_stop_decision;

/* "min-samples", "min-time", "noisy", "noise-ok", "minimums-met",
 * "timeout", "max-samples"; "?" for others. Static strings. */
VYRE_EXTERN const char *vyre_stats_stop_reason_name(vyre_stats_stop_reason reason);

/* ---- Comparison --------------------------------------------------------- */

/*
 * Mann-Whitney U test of a against b, two-sided.
 *
 * u1 = R1 - n1 (n1 + 1) / 2 where R1 is the rank sum of a (mid-ranks for
 * ties): the number of pairs with a_i > b_j, ties counting 1/2. u2 = n1 n2 -
 * u1, u = min(u1, u2). z = (u1 - n1 n2 / 2 -+ 1/2) / sigma with the
 * continuity correction taken toward zero and the tie-corrected
 * sigma^2 = n1 n2 / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))), N = n1 + n2;
 * z < 0 means a tends to be smaller. p = erfc(|z| / sqrt 2) from the normal
 * approximation, except with no ties and N <= 50, where p is exact: 2 P(U <=
 * u) from the null distribution (counted with the q-binomial recurrence,
 * capped at 1); `exact` says which. All values tied: z = 0, p = 1.
 */
typedef struct vyre_stats_mann_whitney_result {
    size_t n1, n2;
    double u1, u2, u;
    double z;
    double p;
    int exact;
} vyre_stats_mann_whitney_result;

typedef enum vyre_stats_verdict {
    VYRE_VERDICT_SAME = 0,
    VYRE_VERDICT_FASTER = 1, /* b takes less time than a */
    VYRE_VERDICT_SLOWER = 2, /* b takes more time than a */
    VYRE_VERDICT_NOISY = 3,  /* a side's noise is above max_noise: no verdict */
    VYRE_VERDICT_DRIFT = 4,  /* beyond the noise, but within the machine's own drift between the
                                runs (vyre__stats_compare_widen) or not seen in clock cycles: no
                                verdict on the code */
} vyre_stats_verdict;

/*
 * Verdict thresholds. For each side the robust noise (vyre__stats_robust_noise)
 * is measured; when either is above max_noise (0.10 = 10 %) the point is
 * NOISY and gets no verdict. Otherwise the ratio of medians b / a gets a
 * bootstrap confidence interval at level 1 - alpha (percentile method,
 * VYRE_COMPARE_RESAMPLES resamples of both sides, seeded, so the same samples
 * always give the same interval), and the point is SLOWER only when the
 * whole interval is above 1 + t, FASTER only when it is below 1 - t, where
 * t = max(min_effect, noise_a, noise_b); otherwise SAME, which means "no
 * change beyond the noise was found", not proof of equality. The
 * Mann-Whitney p is reported but does not decide: with thousands of
 * samples it calls any difference significant.
 */
typedef struct vyre_stats_compare_opts {
    double alpha;
    double min_effect;
    double max_noise;
} vyre_stats_compare_opts;

#define VYRE_COMPARE_OPTS_DEFAULT                                                                  \
    {                                                                                              \
        0.01, 0.02, 0.10                                                                           \
    }

/* Bootstrap resamples per comparison; each side is thinned to at most
 * VYRE_COMPARE_BOOT_MAX evenly spaced order statistics first, so the cost
 * is bounded whatever the sample count. */
#define VYRE_COMPARE_RESAMPLES 2000
#define VYRE_COMPARE_BOOT_MAX  2048

typedef struct vyre_stats_compare_result {
    vyre_stats_mann_whitney_result mw;
    double median_a, median_b;
    double ratio;    /* median_b / median_a; NAN when median_a is 0 */
    double hl_shift; /* Hodges-Lehmann: median of all b_j - a_i */
    int hl_approx;   /* 1 when computed on thinned samples (n1 n2 > 2^20) */
    vyre_stats_verdict verdict;
    double noise_a, noise_b;   /* vyre__stats_robust_noise of each side */
    double ratio_lo, ratio_hi; /* bootstrap interval of ratio; NAN when ratio is */
    double threshold;          /* t = max(min_effect, noise_a, noise_b) */
    /* vyre__stats_compare_rounds: rounds per side (1 for vyre__stats_compare)
     * and whether the interval came from the hierarchical bootstrap. */
    size_t rounds_a, rounds_b;
    int hierarchical;
    /* vyre__stats_compare_widen: the drift factor applied (1: none) and
     * the verdict before it. */
    double drift;
    vyre_stats_verdict verdict_before_drift;
} vyre_stats_compare_result;

/* "SAME", "FASTER", "SLOWER", "NOISY", "DRIFT"; "?" for others. */
VYRE_EXTERN const char *vyre_stats_verdict_name(vyre_stats_verdict v);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_STATS_H */
