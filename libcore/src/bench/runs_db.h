/*
 * runs_db.h - what the files of the runs database (runs_db.c, runs_points.c,
 * runs_read.c, runs_compare.c) share: small statement helpers over
 * store.h and the list growth the readers use. Private to libcore/src/bench.
 */
#ifndef VYRE_BENCH_RUNS_DB_H
#define VYRE_BENCH_RUNS_DB_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/stats_internal.h"
#include "vyre/bench.h"

static inline int vyre__runs_prep(vyre_results *db, const char *sql, vyre__stmt **st,
                                  vyre_error *err)
{
    return vyre__results_prepare(db, sql, st, err);
}

static inline void vyre__runs_bind_str(vyre__stmt *st, int i, const char *s)
{
    vyre__stmt_text(st, i, s, strlen(s));
}

static inline void vyre__runs_bind_text_or_null(vyre__stmt *st, int i, const char *s)
{
    if (s && *s)
        vyre__stmt_text(st, i, s, strlen(s));
    else
        vyre__stmt_null(st, i);
}

static inline void vyre__runs_bind_real_or_null(vyre__stmt *st, int i, double v)
{
    if (isfinite(v))
        vyre__stmt_double(st, i, v);
    else
        vyre__stmt_null(st, i);
}

static inline void vyre__runs_col_text(vyre__stmt *st, int i, char *buf, size_t size)
{
    const char *z = vyre__stmt_col_text(st, i);
    vyre__strlcpy(buf, z ? z : "", size);
}

static inline double vyre__runs_col_real(vyre__stmt *st, int i)
{
    return vyre__stmt_is_null(st, i) ? NAN : vyre__stmt_col_double(st, i);
}

/* Runs one prepared write statement to completion. */
static inline int vyre__runs_step_done(vyre__stmt *st, const char *what, vyre_error *err)
{
    int rc = vyre__stmt_step(st, what, err);
    return rc < 0 ? rc : VYRE_OK;
}

/* Executes sql (with ?1 = id) inside the caller's transaction. */
static inline int vyre__runs_exec_id(vyre_results *db, const char *sql, int64_t id,
                                     const char *what, vyre_error *err)
{
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(db, sql, &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, id);
        rc = vyre__runs_step_done(st, what, err);
    }
    vyre__stmt_finalize(st);
    return rc;
}

static inline int vyre__runs_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Readers turn dead 'running' rows into 'interrupted' before they look, so
 * that `runs` and `show` never report a run as running when nothing runs
 * it. Best effort: a read-only or busy database is read as it is. */
static inline void vyre__runs_reap_quietly(vyre_results *db)
{
    vyre_error ignored;
    vyre_error_clear(&ignored);
    (void)vyre__bench_runs_reap(db, NULL, &ignored);
}

/* A point's one noise figure, the one every `noise` shows and points.noise
 * holds (db/results_v8.sql): with 2 rounds or more the rounds' noise
 * (vyre__stats_round_noise: the samples' robust spread or the round
 * medians', the larger), else the samples' 1.4826 * mad / median. */
static inline double vyre__runs_point_noise(const vyre_bench_point *p)
{
    if (p->rounds >= 2 && isfinite(p->round_noise))
        return p->round_noise;
    return vyre__stats_robust_noise_of(p->stats.n, p->stats.median, p->stats.mad);
}

#endif
