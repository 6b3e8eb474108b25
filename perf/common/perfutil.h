/*
 * perfutil.h - what the perf/ programs share: a monotonic clock, medians,
 * finding a sibling binary in the build tree, removing a scratch tree, and
 * processes that publish telemetry through libcore's writer API. Public
 * libvyrecore headers only, as any program built against the installed
 * library. Perf programs print and exit; so may these helpers' callers.
 */
#ifndef VYRE_PERF_PERFUTIL_H
#define VYRE_PERF_PERFUTIL_H

#include <stddef.h>

/* CLOCK_MONOTONIC in seconds. */
double perf_now_s(void);

/* This thread's CPU time (user + system) in seconds: what a measured loop
 * cost, without the time it waited for a CPU on a busy machine. */
double perf_cpu_s(void);

/* qsort comparator for doubles, ascending. */
int perf_cmp_double(const void *a, const void *b);

/* The median of v[n] (n > 0); sorts v. */
double perf_median(double *v, int n);

/* A file into out[size]: given when not NULL, else rel relative to this
 * program's directory, else $env (when env is not NULL and set). 1 when the
 * result is there and readable (executable with exec), else 0. */
int perf_find_file(char *out, size_t size, const char *given, const char *rel, const char *env,
                   int exec);

/* A scratch directory for the telemetry and cache of a run: makes
 * $TMPDIR/vyre-perf-<tag>-XXXXXX (/tmp without TMPDIR) into dir[size],
 * points VYRE_TELEMETRY_DIR at dir/tel and VYRE_PTX_CACHE_DIR at dir/cache
 * (created empty, so that its stats are read too) and unsets
 * VYRE_TELEMETRY. 0, or -1 after perror. */
int perf_scratch_env(const char *tag, char *dir, size_t size);

/* Removes dir and everything below it, never following a link. */
void perf_rm_tree(const char *dir);

/* What the publishers count besides launches, dispatches, copied bytes,
 * cache hits, two NVTX ranges and three kernel records a tick. */
enum {
    PERF_PUB_GRAPHS_COPIES = 1, /* graph launches and H2D copies too */
    PERF_PUB_DEVICES = 2,       /* kernel records on device id % 8, not 0 */
};

/* Forks n processes that each publish a telemetry page at about 100 Hz
 * until perf_publishers_stop (or this process dies: PR_SET_PDEATHSIG).
 * flags: BENCH_PUB_*. 0, or -1 after perror with none left running. At
 * most PERF_MAX_PUBLISHERS in all. */
#define PERF_MAX_PUBLISHERS 64
int perf_publishers_start(int n, unsigned flags);

/* Kills and reaps every publisher started. */
void perf_publishers_stop(void);

#endif /* VYRE_PERF_PERFUTIL_H */
