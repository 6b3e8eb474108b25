/*
 * runs_history.c - one benchmark's median over time, across runs and
 * machines (vyre_results_history in vyre/results.h): what `vyre-bench
 * history` prints, so that a slow creep shows. One query over the done
 * runs' finished points, oldest first, filtered by the same KEY=VALUE
 * terms as a baseline selector; points.benchmark is indexed
 * (db/results_v7.sql). The noise is points.noise, the point's robust noise
 * as run, show and compare print it (db/results_v8.sql; until then the
 * column held stddev / mean, which history showed as noise).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/runs_select.h"

static void col_copy(vyre__stmt *st, int i, char *buf, size_t size)
{
    const char *z = vyre__stmt_col_text(st, i);
    vyre__strlcpy(buf, z ? z : "", size);
}

static void read_row(vyre__stmt *st, vyre_results_history_row *r)
{
    memset(r, 0, sizeof *r);
    r->run_id = vyre__stmt_col_int64(st, 0);
    r->started_ns = vyre__stmt_col_int64(st, 1);
    col_copy(st, 2, r->host, sizeof r->host);
    col_copy(st, 3, r->gpu_name, sizeof r->gpu_name);
    col_copy(st, 4, r->git_ref, sizeof r->git_ref);
    col_copy(st, 5, r->git_rev, sizeof r->git_rev);
    col_copy(st, 6, r->axes, sizeof r->axes);
    r->median_ns = vyre__stmt_is_null(st, 7) ? NAN : vyre__stmt_col_double(st, 7);
    r->noise = vyre__stmt_is_null(st, 8) ? NAN : vyre__stmt_col_double(st, 8);
}

/* Steps st, appending rows to *out. */
static int read_rows(vyre__stmt *st, vyre_results_history_row **out, size_t *n, vyre_error *err)
{
    size_t cap = 0;
    int s;
    while ((s = vyre__stmt_step(st, "read", err)) == 1) {
        if (vyre__grow(out, &cap, *n + 1, sizeof **out, 64))
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading the history");
        read_row(st, &(*out)[(*n)++]);
    }
    return s < 0 ? s : VYRE_OK;
}

int vyre_results_history(vyre_results *db, const char *benchmark, const char *axes,
                         const char *filter, vyre_results_history_row **out, size_t *n,
                         vyre_error *err)
{
    if (!db || !benchmark || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_history: NULL argument");
    *out = NULL;
    *n = 0;
    vyre__select f;
    int rc = vyre__select_parse(filter ? filter : "", 0, &f, err);
    if (rc)
        return rc;
    char sql[2048];
    size_t o = (size_t)snprintf(
        sql, sizeof sql,
        "SELECT r.id, r.started_ns, r.host, r.gpu_name, r.git_ref, r.git_rev, p.axes, p.median, "
        "p.noise FROM points p JOIN runs r ON r.id = p.run_id WHERE r.status = 'done' AND p.n > "
        "0 AND p.benchmark = ?1%s",
        axes ? " AND p.axes = ?2" : "");
    /* Numbered without gaps: PostgreSQL cannot type a parameter no
     * statement names. */
    int first = axes ? 3 : 2;
    o = vyre__select_sql(&f, first, sql, sizeof sql, o);
    if (o < sizeof sql)
        o += (size_t)snprintf(sql + o, sizeof sql - o, " ORDER BY r.started_ns, r.id, p.seq");
    if (o >= sizeof sql)
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "history query too long");
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    rc = vyre__results_prepare(db, sql, &st, err);
    if (!rc) {
        vyre__stmt_text(st, 1, benchmark, strlen(benchmark));
        if (axes)
            vyre__stmt_text(st, 2, axes, strlen(axes));
        vyre__select_bind(&f, first, st);
        rc = read_rows(st, out, n, err);
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
