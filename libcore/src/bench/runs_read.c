/*
 * runs_read.c - reading runs, points, samples and kernel rows back from the
 * results database (see vyre/bench.h), and freeing the lists it returns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/runs_db.h"
#include "vyre/bench.h"
#include "vyre/stats.h"

static vyre_bench_run_status status_from(const char *s)
{
    if (!s)
        return VYRE_RUN_RUNNING;
    if (strcmp(s, "done") == 0)
        return VYRE_RUN_DONE;
    if (strcmp(s, "failed") == 0)
        return VYRE_RUN_FAILED;
    if (strcmp(s, "interrupted") == 0)
        return VYRE_RUN_INTERRUPTED;
    return VYRE_RUN_RUNNING;
}

static vyre_bench_mode mode_from(const char *s)
{
    if (s && strcmp(s, "cold") == 0)
        return VYRE_BENCH_COLD;
    if (s && strcmp(s, "host") == 0)
        return VYRE_BENCH_HOST;
    return VYRE_BENCH_HOT;
}

static vyre_stats_stop_reason reason_from(const char *s)
{
    for (int r = VYRE_STOP_MIN_SAMPLES_NOT_MET; r <= VYRE_STOP_MAX_SAMPLES; r++)
        if (s && strcmp(s, vyre_stats_stop_reason_name((vyre_stats_stop_reason)r)) == 0)
            return (vyre_stats_stop_reason)r;
    return VYRE_STOP_MIN_SAMPLES_NOT_MET;
}

/* ---- reading --------------------------------------------------------------- */

#define RUN_COLUMNS                                                                                \
    "r.id, r.started_ns, r.finished_ns, r.status, r.suites, r.host, r.pid, r.gpu_name, "           \
    "r.gpu_uuid, r.devices, r.driver, r.cuda_version, r.clocks, r.git_rev, r.command_line, "       \
    "r.vyre_version, r.message, (SELECT count(*) FROM points p WHERE p.run_id = r.id AND p.n > "   \
    "0), "                                                                                         \
    "(SELECT ',' || %sp.suite%s || ',' FROM points p WHERE p.run_id = r.id)"

/* Prepares "SELECT <the run's columns> FROM runs r <tail>": the list of
 * suites that ran is the one aggregate the engines spell differently. */
static int prep_runs(vyre_results *db, const char *tail, vyre__stmt **st, vyre_error *err)
{
    const vyre__store_ops *ops = vyre__results_store(db)->ops;
    char sql[1024];
    if ((size_t)snprintf(sql, sizeof sql, "SELECT " RUN_COLUMNS " FROM runs r %s", ops->agg_open,
                         ops->agg_close, tail) >= sizeof sql)
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "run query too long");
    return vyre__runs_prep(db, sql, st, err);
}

/* Keeps, of the requested suites ("launch,cache,sweep:F:E"), those that
 * have a point (",cache,sweep,"): without a GPU only cache runs, and a list
 * of every suite asked for would say otherwise. A run with no point at all
 * keeps the list it asked for (its status says what happened). */
static void keep_suites_that_ran(char *suites, const char *ran)
{
    if (!ran || !*suites)
        return;
    char out[sizeof((vyre_bench_run *)0)->suites];
    size_t len = 0;
    for (const char *s = suites; *s;) {
        size_t item = strcspn(s, ","), name = strcspn(s, ",:");
        if (name > item)
            name = item;
        char key[80];
        if (name + 3 <= sizeof key) {
            snprintf(key, sizeof key, ",%.*s,", (int)name, s);
            if (strstr(ran, key) && len + item + 2 <= sizeof out)
                len += (size_t)snprintf(out + len, sizeof out - len, "%s%.*s", len ? "," : "",
                                        (int)item, s);
        }
        s += item;
        if (*s == ',')
            s++;
    }
    out[len] = '\0';
    if (len)
        memcpy(suites, out, len + 1);
}

static void read_run(vyre__stmt *st, vyre_bench_run *r)
{
    memset(r, 0, sizeof *r);
    r->id = vyre__stmt_col_int64(st, 0);
    r->started_ns = vyre__stmt_col_int64(st, 1);
    r->finished_ns = vyre__stmt_col_int64(st, 2);
    r->status = status_from(vyre__stmt_col_text(st, 3));
    vyre__runs_col_text(st, 4, r->suites, sizeof r->suites);
    vyre__runs_col_text(st, 5, r->host, sizeof r->host);
    r->pid = vyre__stmt_col_int64(st, 6);
    vyre__runs_col_text(st, 7, r->gpu_name, sizeof r->gpu_name);
    vyre__runs_col_text(st, 8, r->gpu_uuid, sizeof r->gpu_uuid);
    vyre__runs_col_text(st, 9, r->devices, sizeof r->devices);
    vyre__runs_col_text(st, 10, r->driver, sizeof r->driver);
    vyre__runs_col_text(st, 11, r->cuda_version, sizeof r->cuda_version);
    vyre__runs_col_text(st, 12, r->clocks, sizeof r->clocks);
    vyre__runs_col_text(st, 13, r->git_rev, sizeof r->git_rev);
    char line[sizeof r->command_line];
    vyre__runs_col_text(st, 14, line, sizeof line);
    vyre__runs_mask_command_line(line, r->command_line, sizeof r->command_line);
    vyre__runs_col_text(st, 15, r->vyre_version, sizeof r->vyre_version);
    vyre__runs_col_text(st, 16, r->message, sizeof r->message);
    r->npoints = (size_t)vyre__stmt_col_int64(st, 17);
    keep_suites_that_ran(r->suites, vyre__stmt_col_text(st, 18));
}

/* Steps st (prepared and bound, or rc != 0 when preparing failed) and
 * appends one element of elem bytes per row, filled by read. Finalizes st
 * and releases db's lock; on failure frees *out and zeroes *n. */
typedef void (*row_reader)(vyre__stmt *st, void *elem);

static int read_list(vyre_results *db, vyre__stmt *st, int rc, size_t elem, row_reader read,
                     void **out, size_t *n, const char *what, vyre_error *err)
{
    size_t cap = 0;
    if (!rc) {
        int s;
        while ((s = vyre__stmt_step(st, "read", err)) == 1) {
            if (vyre__grow(out, &cap, *n + 1, elem, 16)) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading %s", what);
                break;
            }
            read(st, (char *)*out + elem * (*n)++);
        }
        if (!rc && s < 0)
            rc = s;
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

static void read_run_row(vyre__stmt *st, void *elem)
{
    read_run(st, elem);
}

static void read_sample_row(vyre__stmt *st, void *elem)
{
    vyre_bench_sample *x = elem;
    x->value = vyre__stmt_col_double(st, 0);
    x->wall = vyre__runs_col_real(st, 1);
    x->sm_clock_mhz = (unsigned)(int)vyre__stmt_col_int64(st, 2);
    x->throttled = (unsigned char)(int)vyre__stmt_col_int64(st, 3);
    x->outlier = (unsigned char)(int)vyre__stmt_col_int64(st, 4);
    x->round = (unsigned)vyre__stmt_col_int64(st, 5);
}

int vyre_bench_runs_list(vyre_results *db, size_t limit, vyre_bench_run **out, size_t *n,
                         vyre_error *err)
{
    if (!db || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_runs_list: NULL argument");
    *out = NULL;
    *n = 0;
    vyre__runs_reap_quietly(db);
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = prep_runs(db, "ORDER BY r.id DESC LIMIT ?1", &st, err);
    /* No limit: the largest one (PostgreSQL refuses SQLite's -1). */
    if (!rc)
        vyre__stmt_int64(st, 1, limit && limit < (size_t)INT64_MAX ? (int64_t)limit : INT64_MAX);
    return read_list(db, st, rc, sizeof **out, read_run_row, (void **)out, n, "runs", err);
}

int vyre_bench_run_get(vyre_results *db, int64_t id, vyre_bench_run *out, vyre_error *err)
{
    if (!db || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_run_get: NULL argument");
    vyre__runs_reap_quietly(db);
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = prep_runs(db, "WHERE r.id = ?1", &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, id);
        int s = vyre__stmt_step(st, "read", err);
        if (s == 1)
            read_run(st, out);
        else if (s == 0)
            rc = vyre__remedy(err, VYRE_REMEDY_BENCH_RUNS,
                              vyre__fail(err, VYRE_ENOENT, NULL, "no run %" PRId64 " in '%s'", id,
                                         vyre_results_path(db)));
        else
            rc = s;
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    return rc;
}

int vyre_bench_run_resolve(vyre_results *db, const char *ref, int64_t *id, vyre_error *err)
{
    if (!db || !ref || !id)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_run_resolve: NULL argument");
    vyre__runs_reap_quietly(db);
    long long back = -1;
    char *end = NULL;
    if (strcmp(ref, "last") == 0) {
        back = 0;
    } else if (strncmp(ref, "last-", 5) == 0 && ref[5] >= '0' && ref[5] <= '9') {
        back = strtoll(ref + 5, &end, 10);
        if (*end || back < 0)
            back = -2;
    } else if (ref[0] >= '1' && ref[0] <= '9') {
        long long v = strtoll(ref, &end, 10);
        if (*end || v <= 0)
            return vyre__fail(err, VYRE_EINVAL, "name a run by its id, 'last' or 'last-N'",
                              "bad run '%s'", ref);
        vyre_bench_run r;
        int rc = vyre_bench_run_get(db, (int64_t)v, &r, err);
        if (!rc)
            *id = r.id;
        return rc;
    }
    if (back < 0)
        return vyre__fail(err, VYRE_EINVAL, "name a run by its id, 'last' or 'last-N'",
                          "bad run '%s'", ref);
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    /* 'last' is the last *done* run: a run that failed (no GPU, a typo in a
     * spec), was interrupted or is still running is never the baseline a
     * CI recipe (`compare last-1 last`) picks by accident (issue 25). */
    int rc = vyre__runs_prep(
        db, "SELECT id FROM runs WHERE status = 'done' ORDER BY id DESC LIMIT 1 OFFSET ?1", &st,
        err);
    if (!rc) {
        vyre__stmt_int64(st, 1, back);
        int s = vyre__stmt_step(st, "read", err);
        if (s == 1)
            *id = vyre__stmt_col_int64(st, 0);
        else if (s == 0)
            rc = vyre__remedy(err, VYRE_REMEDY_BENCH_RUNS,
                              vyre__fail(err, VYRE_ENOENT, NULL, "no done run '%s' in '%s'", ref,
                                         vyre_results_path(db)));
        else
            rc = s;
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    return rc;
}

#define POINT_COLUMNS                                                                              \
    "id, run_id, seq, suite, benchmark, axes, device, mode, timer, n, min, max, mean, median, "    \
    "stddev, rel_stddev, p5, p95, mad, n_outliers, n_throttled, wall_median, bytes, items, "       \
    "metric_name, metric, stop_reason, stop, note, batch_ns, kernel_ns, block_timeouts, rounds, "  \
    "round_noise, variant"

static void read_point(vyre__stmt *st, vyre_bench_point *p)
{
    memset(p, 0, sizeof *p);
    p->id = vyre__stmt_col_int64(st, 0);
    p->run_id = vyre__stmt_col_int64(st, 1);
    p->seq = (int)vyre__stmt_col_int64(st, 2);
    vyre__runs_col_text(st, 3, p->suite, sizeof p->suite);
    vyre__runs_col_text(st, 4, p->benchmark, sizeof p->benchmark);
    vyre__runs_col_text(st, 5, p->axes, sizeof p->axes);
    p->device = vyre__stmt_is_null(st, 6) ? -1 : (int)vyre__stmt_col_int64(st, 6);
    p->mode = mode_from(vyre__stmt_col_text(st, 7));
    const char *timer = vyre__stmt_col_text(st, 8);
    p->gpu_timer = timer && strcmp(timer, "gpu") == 0;
    vyre_stats *s = &p->stats;
    s->n = (size_t)vyre__stmt_col_int64(st, 9);
    s->min = vyre__runs_col_real(st, 10);
    s->max = vyre__runs_col_real(st, 11);
    s->mean = vyre__runs_col_real(st, 12);
    s->median = vyre__runs_col_real(st, 13);
    s->stddev = vyre__runs_col_real(st, 14);
    s->rel_stddev = vyre__runs_col_real(st, 15);
    s->p5 = vyre__runs_col_real(st, 16);
    s->p95 = vyre__runs_col_real(st, 17);
    s->mad = vyre__runs_col_real(st, 18);
    s->n_outliers = (size_t)vyre__stmt_col_int64(st, 19);
    p->n_throttled = (size_t)vyre__stmt_col_int64(st, 20);
    p->wall_median = vyre__runs_col_real(st, 21);
    p->bytes = vyre__stmt_is_null(st, 22) ? 0 : vyre__stmt_col_double(st, 22);
    p->items = vyre__stmt_is_null(st, 23) ? 1 : vyre__stmt_col_double(st, 23);
    vyre__runs_col_text(st, 24, p->metric_name, sizeof p->metric_name);
    p->metric = vyre__runs_col_real(st, 25);
    p->stop_reason = reason_from(vyre__stmt_col_text(st, 26));
    vyre__runs_col_text(st, 27, p->stop, sizeof p->stop);
    vyre__runs_col_text(st, 28, p->note, sizeof p->note);
    /* NULL (not measured, or a row from before v4) reads as 0. */
    p->batch_ns = vyre__stmt_is_null(st, 29) ? 0 : vyre__stmt_col_double(st, 29);
    p->kernel_ns = vyre__stmt_is_null(st, 30) ? 0 : vyre__stmt_col_double(st, 30);
    p->n_block_timeouts = (size_t)vyre__stmt_col_int64(st, 31);
    p->rounds = (unsigned)vyre__stmt_col_int64(st, 32);
    p->round_noise = vyre__runs_col_real(st, 33);
    vyre__runs_col_text(st, 34, p->variant, sizeof p->variant); /* NULL: "" */
    /* The figure points.noise holds, derived again as it was written. */
    s->robust_noise = vyre__runs_point_noise(p);
}

static void read_point_row(vyre__stmt *st, void *elem)
{
    read_point(st, elem);
}

int vyre_bench_points_get(vyre_results *db, int64_t run_id, vyre_bench_point **out, size_t *n,
                          vyre_error *err)
{
    if (!db || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_points_get: NULL argument");
    *out = NULL;
    *n = 0;
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db, "SELECT " POINT_COLUMNS " FROM points WHERE run_id = ?1 AND n > 0 ORDER BY seq", &st,
        err);
    if (!rc)
        vyre__stmt_int64(st, 1, run_id);
    return read_list(db, st, rc, sizeof **out, read_point_row, (void **)out, n, "points", err);
}

int vyre_bench_samples_get(vyre_results *db, int64_t point_id, vyre_bench_sample **out, size_t *n,
                           vyre_error *err)
{
    if (!db || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_samples_get: NULL argument");
    *out = NULL;
    *n = 0;
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "SELECT value, wall, sm_clock_mhz, throttled, outlier, round FROM samples WHERE "
        "point_id = ?1 ORDER BY seq",
        &st, err);
    if (!rc)
        vyre__stmt_int64(st, 1, point_id);
    return read_list(db, st, rc, sizeof **out, read_sample_row, (void **)out, n, "samples", err);
}

int vyre_bench_kernels_get(vyre_results *db, int64_t point_id, vyre_bench_kernel_row **out,
                           size_t *n, vyre_error *err)
{
    if (!db || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_kernels_get: NULL argument");
    *out = NULL;
    *n = 0;
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "SELECT name, duration_ns FROM timings WHERE point_id = ?1 AND kind = 'kernel' "
        "ORDER BY name",
        &st, err);
    size_t cap = 0, vcap = 0, nv = 0;
    double *v = NULL;
    if (!rc) {
        vyre__stmt_int64(st, 1, point_id);
        int s;
        char cur[VYRE_ACTIVITY_NAME_MAX] = "";
        for (;;) {
            s = vyre__stmt_step(st, "read", err);
            const char *name = s == 1 ? vyre__stmt_col_text(st, 0) : NULL;
            if ((s != 1 || strcmp(name ? name : "", cur) != 0) && nv) {
                vyre_bench_kernel_row *k = &(*out)[*n - 1];
                qsort(v, nv, sizeof *v, vyre__runs_cmp_double);
                k->median_ns = vyre_stats_percentile_sorted(v, nv, 50);
                nv = 0;
            }
            if (s != 1)
                break;
            if (strcmp(name ? name : "", cur) != 0 || !*n) {
                if (vyre__grow(out, &cap, *n + 1, sizeof **out, 16)) {
                    rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading kernels");
                    break;
                }
                vyre_bench_kernel_row *k = &(*out)[(*n)++];
                memset(k, 0, sizeof *k);
                vyre__strlcpy(k->name, name ? name : "", sizeof k->name);
                vyre__strlcpy(cur, k->name, sizeof cur);
            }
            vyre_bench_kernel_row *k = &(*out)[*n - 1];
            double d = (double)vyre__stmt_col_int64(st, 1);
            k->count++;
            k->total_ns += d;
            if (vyre__grow(&v, &vcap, nv + 1, sizeof *v, 16)) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading kernels");
                break;
            }
            v[nv++] = d;
        }
        if (!rc && s < 0)
            rc = s;
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    free(v);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
