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

#endif /* VYRE_BENCH_STATS_INTERNAL_H */
