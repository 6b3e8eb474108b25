/*
 * stats_internal.h - the statistics module's calls that only libcore and
 * its tests use (not exported; SQLite keeps its SQLITE_TEST hooks in
 * sqliteInt.h the same way): the Welford accumulator's steps and the
 * stopping rule checked against it. Tests reach them through
 * vyrecore_internal.
 */
#ifndef VYRE_BENCH_STATS_INTERNAL_H
#define VYRE_BENCH_STATS_INTERNAL_H

#include "vyre/stats.h"

void vyre__stats_running_push(vyre_stats_running *r, double x);
/* Sample standard deviation (NAN for n < 2) and stddev / mean (NAN for
 * n < 2 or mean <= 0). */
double vyre__stats_running_stddev(const vyre_stats_running *r);
double vyre__stats_running_noise(const vyre_stats_running *r);

/*
 * Decides whether to stop after the samples summarised by acc, measured_s
 * being their total measured time in seconds and elapsed_s the wall time
 * since the point started. Criteria met together report the best news:
 * NOISE_OK (or MINIMUMS_MET) before TIMEOUT before MAX_SAMPLES. A TIMEOUT
 * may come with fewer than min_samples samples: the decision's n says so.
 */
vyre_stats_stop_decision vyre__stats_stop_check(const vyre_stats_stop_rule *rule,
                                                const vyre_stats_running *acc, double measured_s,
                                                double elapsed_s);

/* 1.4826 * MAD / median of x[0..n-1] (not modified): the robust relative
 * spread. NAN for n < 2, a median <= 0, a non-finite sample or out of
 * memory. O(n) (selection, not a sort): the stop rule calls it while a
 * point samples. Thread-safe. */
double vyre__stats_robust_noise(const double *x, size_t n);

/* The same from a sample's n, median and unscaled MAD (a stored point's
 * figures): 1.4826 * mad / median, NAN for n < 2 or a median <= 0. */
double vyre__stats_robust_noise_of(size_t n, double median, double mad);

/* Computes every field of out from x[0..n-1] (not modified). Returns 0,
 * VYRE_EINVAL (n == 0, a non-finite sample) or VYRE_ENOMEM. */
int vyre__stats_compute(const double *x, size_t n, vyre_stats *out, vyre_error *err);

/*
 * Flags outliers of x[0..n-1] with factor k (> 0): flags[i] = 1 when x[i]
 * is one, else 0 (flags may be NULL to only count). *count receives the
 * number flagged. Returns 0, VYRE_EINVAL or VYRE_ENOMEM.
 */
int vyre__stats_outliers(const double *x, size_t n, double k, unsigned char *flags, size_t *count,
                         vyre_error *err);

/*
 * Decides whether to stop after n samples whose noise is given by the
 * caller, measured_s being their total measured time in seconds and
 * elapsed_s the wall time since the point started: measuring loops pass
 * vyre__stats_robust_noise() of the samples so far (NAN while unknown, which
 * never counts as low enough). Criteria met together report the best news:
 * NOISE_OK (or MINIMUMS_MET) before TIMEOUT before MAX_SAMPLES. A TIMEOUT
 * may come with fewer than min_samples samples: the decision's n says so.
 */
vyre_stats_stop_decision vyre__stats_stop_check_noise(const vyre_stats_stop_rule *rule, size_t n,
                                                      double noise, double measured_s,
                                                      double elapsed_s);

/*
 * One line for progress output and the results table, e.g.
 *   "noise-ok: 0.31% <= 0.50% after 112 samples, 0.52 s"
 *   "timeout: noise 2.10% > 0.50% after 5000 samples, 15.0 s"
 *   "min-samples: 4 of 10"
 * With d->noise NAN the figure is left out ("timeout: noise > 0.50% after
 * 5000 samples, 15.0 s"): the text stored with a point, whose one noise
 * figure is its robust noise over every sample and round.
 * Returns the length needed, like snprintf.
 */
size_t vyre__stats_stop_format(const vyre_stats_stop_decision *d, const vyre_stats_stop_rule *rule,
                               char *buf, size_t size);

/* Returns 0, VYRE_EINVAL (an empty sample, a non-finite value) or
 * VYRE_ENOMEM. */
int vyre__stats_mann_whitney(const double *a, size_t n1, const double *b, size_t n2,
                             vyre_stats_mann_whitney_result *out, vyre_error *err);

/*
 * Compares sample sets a (the baseline, e.g. RUN_A) and b (the candidate)
 * of the same point, lower being better (times). opts NULL means the
 * defaults. For n1 n2 above 2^20 the Hodges-Lehmann shift is computed on
 * both samples thinned to 1024 evenly spaced order statistics each (8 MiB
 * of differences at most), and hl_approx is set. The verdict follows the
 * rules above vyre_stats_compare_opts. A zero median_a gives ratio NAN and
 * verdict SAME. Returns 0, VYRE_EINVAL (empty sample, non-finite value,
 * alpha outside (0, 1), negative min_effect, max_noise not above 0) or
 * VYRE_ENOMEM.
 */
int vyre__stats_compare(const double *a, size_t n1, const double *b, size_t n2,
                        const vyre_stats_compare_opts *opts, vyre_stats_compare_result *out,
                        vyre_error *err);

/*
 * The same comparison for samples taken in rounds (round[i] is the round
 * of x[i]; any unsigned labels). Samples of one round are taken back to
 * back and are correlated; rounds are spread over the run, so drift during
 * a run shows up between them. When both sides have at least 2 rounds:
 *
 * - the interval of median(b) / median(a) comes from a hierarchical
 *   bootstrap: each resample draws as many rounds as the side has, with
 *   replacement, then within each drawn round as many samples as it has,
 *   with replacement, and takes the median of all drawn samples (each
 *   round thinned to at most VYRE_COMPARE_BOOT_MAX / rounds evenly spaced
 *   order statistics first). Assumptions: rounds are exchangeable (drift
 *   is slow against a round, not a trend the run's order aliases), and
 *   samples within a round are exchangeable. With i.i.d. data it is wider
 *   than the plain bootstrap by about sqrt(2) at most; with rounds that
 *   disagree, the spread between them is in the interval.
 * - a side's noise is max(robust noise of all its samples, 1.4826 * MAD
 *   of its round medians / its median): the spread of one sample, or of
 *   one round when the rounds disagree more.
 *
 * With fewer rounds on either side it is vyre__stats_compare. Returns what
 * vyre__stats_compare returns.
 */
int vyre__stats_compare_rounds(const double *a, const unsigned *round_a, size_t n1, const double *b,
                               const unsigned *round_b, size_t n2,
                               const vyre_stats_compare_opts *opts, vyre_stats_compare_result *out,
                               vyre_error *err);

/* The noise of a sample set taken in rounds, as vyre__stats_compare_rounds
 * defines it (NAN as vyre__stats_robust_noise). *nrounds (may be NULL)
 * gets the number of distinct rounds. */
double vyre__stats_round_noise(const double *x, const unsigned *round, size_t n, size_t *nrounds);

/*
 * Widens the SAME band of a finished comparison by the machine's drift
 * between the two runs: drift = max(q, 1 / q) >= 1 for q the ratio of a
 * fixed reference measured in both runs (1 or NAN: none). A SLOWER point
 * stays SLOWER only when its interval lies above (1 + t) * drift, a
 * FASTER one only below (1 - t) / drift; otherwise it becomes DRIFT (the
 * change is no larger than the machine's own). Sets r->drift and
 * r->verdict_before_drift. Why widen, not divide by the reference: a
 * CPU loop or an fsync does not scale like every point (a memcpy, a
 * cache store), so dividing would invent changes as often as it removes
 * them; widening only withholds verdicts the machine cannot support.
 */
void vyre__stats_compare_widen(vyre_stats_compare_result *r, double drift);

#endif /* VYRE_BENCH_STATS_INTERNAL_H */
