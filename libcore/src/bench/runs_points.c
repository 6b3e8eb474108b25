/*
 * runs_points.c - the points of a vyre-bench run in the results database: a point,
 * its samples and kernel records, written in one transaction each, and the
 * kernel view and traced time kept beside them (see runs_db.c for the rules
 * every write follows).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/runs_db.h"
#include "bench/stats_internal.h"
#include "cuda/cupti_internal.h"
#include "vyre/bench.h"
#include "vyre/stats.h"

/* ---- points ------------------------------------------------------------------- */

static int point_begin_tx(vyre_results *db, void *arg, vyre_error *err)
{
    vyre_bench_point *p = arg;
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "INSERT INTO points (run_id, seq, suite, benchmark, axes, device, mode, unit, timer, "
        "n, stop_reason, stop, created_ns, variant) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'ns', "
        "?8, 0, 'running', '', ?9, ?10) RETURNING id",
        &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, p->run_id);
        vyre__stmt_int64(st, 2, p->seq);
        vyre__runs_bind_str(st, 3, p->suite);
        vyre__runs_bind_str(st, 4, p->benchmark);
        vyre__runs_bind_str(st, 5, p->axes);
        if (p->device >= 0)
            vyre__stmt_int64(st, 6, p->device);
        else
            vyre__stmt_null(st, 6);
        vyre__runs_bind_str(st, 7, vyre_bench_mode_name(p->mode));
        vyre__runs_bind_str(st, 8, p->gpu_timer ? "gpu" : "wall");
        vyre__stmt_int64(st, 9, vyre__unix_ns());
        vyre__runs_bind_text_or_null(st, 10, p->variant);
        rc = vyre__stmt_step(st, "write a point to", err);
        if (rc == 1)
            p->id = vyre__stmt_col_int64(st, 0);
        rc = rc < 0 ? rc : VYRE_OK;
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__bench_point_begin(vyre_results *db, vyre_bench_point *p, vyre_error *err)
{
    if (!db || !p || p->run_id <= 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_point_begin: bad arguments");
    return vyre__results_tx(db, "write a point to", point_begin_tx, p, err);
}

/* vyre__bench_point_finish's arguments. */
typedef struct {
    const vyre_bench_point *p;
    const vyre_bench_sample *samples;
    size_t n;
} point_end;

static int point_finish_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const point_end *e = arg;
    const vyre_bench_point *p = e->p;
    const vyre_bench_sample *samples = e->samples;
    size_t n = e->n;
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "UPDATE points SET n = ?2, min = ?3, max = ?4, mean = ?5, median = ?6, stddev = ?7, "
        "rel_stddev = ?8, p5 = ?9, p95 = ?10, mad = ?11, n_outliers = ?12, n_throttled = ?13, "
        "wall_median = ?14, bytes = ?15, items = ?16, metric_name = ?17, metric = ?18, "
        "stop_reason = ?19, stop = ?20, note = ?21, mode = ?22, timer = ?23, batch_ns = ?24, "
        "block_timeouts = ?25, rounds = ?26, round_noise = ?27, noise = ?28 WHERE id = ?1 "
        "RETURNING id",
        &st, err);
    if (!rc) {
        const vyre_stats *s = &p->stats;
        vyre__stmt_int64(st, 1, p->id);
        vyre__stmt_int64(st, 2, (int64_t)s->n);
        vyre__runs_bind_real_or_null(st, 3, s->min);
        vyre__runs_bind_real_or_null(st, 4, s->max);
        vyre__runs_bind_real_or_null(st, 5, s->mean);
        vyre__runs_bind_real_or_null(st, 6, s->median);
        vyre__runs_bind_real_or_null(st, 7, s->stddev);
        vyre__runs_bind_real_or_null(st, 8, s->rel_stddev);
        vyre__runs_bind_real_or_null(st, 9, s->p5);
        vyre__runs_bind_real_or_null(st, 10, s->p95);
        vyre__runs_bind_real_or_null(st, 11, s->mad);
        vyre__stmt_int64(st, 12, (int64_t)s->n_outliers);
        vyre__stmt_int64(st, 13, (int64_t)p->n_throttled);
        vyre__runs_bind_real_or_null(st, 14, p->wall_median);
        if (p->bytes > 0)
            vyre__stmt_double(st, 15, p->bytes);
        else
            vyre__stmt_null(st, 15);
        vyre__stmt_double(st, 16, p->items >= 1 ? p->items : 1);
        vyre__runs_bind_text_or_null(st, 17, p->metric_name);
        if (p->metric_name[0])
            vyre__runs_bind_real_or_null(st, 18, p->metric);
        else
            vyre__stmt_null(st, 18);
        vyre__runs_bind_str(st, 19, vyre_stats_stop_reason_name(p->stop_reason));
        vyre__runs_bind_str(st, 20, p->stop);
        vyre__runs_bind_text_or_null(st, 21, p->note);
        vyre__runs_bind_str(st, 22, vyre_bench_mode_name(p->mode));
        vyre__runs_bind_str(st, 23, p->gpu_timer ? "gpu" : "wall");
        if (p->batch_ns > 0)
            vyre__runs_bind_real_or_null(st, 24, p->batch_ns);
        else
            vyre__stmt_null(st, 24);
        vyre__stmt_int64(st, 25, (int64_t)p->n_block_timeouts);
        if (p->rounds)
            vyre__stmt_int64(st, 26, (int)p->rounds);
        else
            vyre__stmt_null(st, 26);
        vyre__runs_bind_real_or_null(st, 27, p->rounds >= 2 ? p->round_noise : NAN);
        vyre__runs_bind_real_or_null(st, 28, vyre__runs_point_noise(p));
        rc = vyre__stmt_step(st, "write a point to", err);
        if (rc == 0)
            rc = vyre__fail(err, VYRE_ENOENT, "reserve it with vyre__bench_point_begin",
                            "no point %" PRId64 " in '%s'", p->id, vyre_results_path(db));
        else if (rc == 1)
            rc = VYRE_OK;
    }
    vyre__stmt_finalize(st);
    st = NULL;
    if (!rc)
        rc = vyre__runs_prep(
            db,
            "INSERT INTO samples (point_id, seq, value, wall, sm_clock_mhz, throttled, "
            "outlier, round) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &st, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const vyre_bench_sample *x = &samples[i];
        vyre__stmt_int64(st, 1, p->id);
        vyre__stmt_int64(st, 2, (int64_t)i);
        vyre__stmt_double(st, 3, x->value);
        vyre__runs_bind_real_or_null(st, 4, x->wall);
        if (x->sm_clock_mhz)
            vyre__stmt_int64(st, 5, (int)x->sm_clock_mhz);
        else
            vyre__stmt_null(st, 5);
        vyre__stmt_int64(st, 6, x->throttled);
        vyre__stmt_int64(st, 7, x->outlier);
        vyre__stmt_int64(st, 8, (int64_t)x->round);
        rc = vyre__runs_step_done(st, "write samples to", err);
        vyre__stmt_reset(st);
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__bench_point_finish(vyre_results *db, const vyre_bench_point *p,
                             const vyre_bench_sample *samples, size_t n, vyre_error *err)
{
    if (!db || !p || p->id <= 0 || (!samples && n) || n == 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_point_finish: bad arguments");
    point_end e = {p, samples, n};
    return vyre__results_tx(db, "write a point to", point_finish_tx, &e, err);
}

/* ---- the kernel view ------------------------------------------------------------ */

/* The median duration of the point's main kernel: of the kernel records
 * stored with it, the name with the most total time (a pass may launch
 * helpers too). 0 when it has none. Inside the caller's lock. */
static int kernel_view(vyre_results *db, int64_t point_id, double *med, vyre_error *err)
{
    *med = 0;
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "SELECT duration_ns FROM timings WHERE point_id = ?1 AND kind = 'kernel' AND "
        "name = (SELECT name FROM timings WHERE point_id = ?1 AND kind = 'kernel' "
        "GROUP BY name ORDER BY sum(duration_ns) DESC, name LIMIT 1) "
        "ORDER BY duration_ns",
        &st, err);
    double *v = NULL;
    size_t nv = 0, cap = 0;
    int s = 0;
    if (!rc) {
        vyre__stmt_int64(st, 1, point_id);
        while ((s = vyre__stmt_step(st, "read", err)) == 1) {
            if (vyre__grow(&v, &cap, nv + 1, sizeof *v, 16)) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading kernels");
                break;
            }
            v[nv++] = (double)vyre__stmt_col_int64(st, 0);
        }
        if (!rc && s < 0)
            rc = s;
    }
    vyre__stmt_finalize(st);
    if (!rc && nv)
        *med = vyre_stats_percentile_sorted(v, nv, 50);
    free(v);
    return rc;
}

int vyre__bench_views_disagree(double gpu_ns, double kernel_ns)
{
    if (!(gpu_ns > 0) || !(kernel_ns > 0) || !isfinite(gpu_ns) || !isfinite(kernel_ns))
        return 0;
    return fabs(gpu_ns - kernel_ns) > 0.05 * kernel_ns + 1000.0;
}

/* Stores the kernel view of point_id from the records of its kernel pass
 * (inside the caller's transaction) and, when the point's event time
 * (hot, GPU timer) disagrees with it, says so in the point's note. Cold
 * points are left alone: their kernel pass flushes L2 before each launch
 * as their samples do, but a cold sample keeps the event pair's own cost
 * (about 2 us, README), which the kernel view never has. */
static int store_kernel_view(vyre_results *db, int64_t point_id, vyre_error *err)
{
    double kns = 0;
    int rc = kernel_view(db, point_id, &kns, err);
    if (rc || !(kns > 0))
        return rc;
    vyre__stmt *st = NULL;
    rc =
        vyre__runs_prep(db, "SELECT median, timer, mode, note FROM points WHERE id = ?1", &st, err);
    double gpu = NAN;
    char note[sizeof((vyre_bench_point *)0)->note] = "";
    if (!rc) {
        vyre__stmt_int64(st, 1, point_id);
        int s = vyre__stmt_step(st, "read", err);
        if (s < 0)
            rc = s;
        if (s == 1) {
            const char *timer = vyre__stmt_col_text(st, 1);
            const char *mode = vyre__stmt_col_text(st, 2);
            if (timer && strcmp(timer, "gpu") == 0 && mode && strcmp(mode, "hot") == 0)
                gpu = vyre__runs_col_real(st, 0);
            vyre__runs_col_text(st, 3, note, sizeof note);
        }
    }
    vyre__stmt_finalize(st);
    st = NULL;
    /* Once: a second pass for the same point replaces the figure, not the words. */
    if (!rc && vyre__bench_views_disagree(gpu, kns) && !strstr(note, "(CUPTI)")) {
        size_t len = strlen(note);
        snprintf(note + len, sizeof note - len,
                 "%sgpu %.2f us vs kernel %.2f us (CUPTI): more than 5%% + 1 us apart",
                 len ? "; " : "", gpu / 1e3, kns / 1e3);
    }
    if (!rc)
        rc = vyre__runs_prep(db, "UPDATE points SET kernel_ns = ?2, note = ?3 WHERE id = ?1", &st,
                             err);
    if (!rc) {
        vyre__stmt_int64(st, 1, point_id);
        vyre__stmt_double(st, 2, kns);
        vyre__runs_bind_text_or_null(st, 3, note);
        rc = vyre__runs_step_done(st, "write kernel records to", err);
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__bench_traced_note(double traced_ns, double batch_ns, char *buf, size_t size)
{
    if (!(traced_ns > 0) || !(batch_ns > 0) || !isfinite(traced_ns) || !isfinite(batch_ns) ||
        traced_ns <= batch_ns * 1.02)
        return 0;
    snprintf(buf, size,
             "kernel is a traced time: CUPTI's tracing slowed the launches %.1f%% (%.2f us vs "
             "batch %.2f us)",
             (traced_ns / batch_ns - 1) * 100, traced_ns / 1e3, batch_ns / 1e3);
    return 1;
}

typedef struct {
    int64_t point_id;
    double traced_ns;
} traced;

static int traced_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const traced *t = arg;
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(db, "SELECT batch_ns, note FROM points WHERE id = ?1", &st, err);
    double batch = 0;
    char note[sizeof((vyre_bench_point *)0)->note] = "";
    if (!rc) {
        vyre__stmt_int64(st, 1, t->point_id);
        int s = vyre__stmt_step(st, "read", err);
        if (s < 0)
            rc = s;
        if (s == 1) {
            batch = vyre__stmt_is_null(st, 0) ? 0 : vyre__runs_col_real(st, 0);
            vyre__runs_col_text(st, 1, note, sizeof note);
        }
    }
    vyre__stmt_finalize(st);
    st = NULL;
    char text[160];
    /* Once: a second pass for the same point keeps the words it has. */
    if (rc || !vyre__bench_traced_note(t->traced_ns, batch, text, sizeof text) ||
        strstr(note, "CUPTI's tracing"))
        return rc;
    size_t len = strlen(note);
    snprintf(note + len, sizeof note - len, "%s%s", len ? "; " : "", text);
    rc = vyre__runs_prep(db, "UPDATE points SET note = ?2 WHERE id = ?1", &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, t->point_id);
        vyre__runs_bind_text_or_null(st, 2, note);
        rc = vyre__runs_step_done(st, "write the traced time to", err);
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__bench_point_traced(vyre_results *db, int64_t point_id, double traced_ns, vyre_error *err)
{
    if (!db || point_id <= 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_point_traced: bad arguments");
    traced t = {point_id, traced_ns};
    return vyre__results_tx(db, "write the traced time to", traced_tx, &t, err);
}

/* vyre__bench_point_records's arguments, the host and the time. */
typedef struct {
    int64_t run_id, point_id;
    const vyre_activity *recs;
    size_t n;
    int64_t now;
    char host[256];
} records;

static int records_tx(vyre_results *db, void *arg, vyre_error *err);

int vyre__bench_point_records(vyre_results *db, int64_t run_id, int64_t point_id,
                              const vyre_activity *recs, size_t n, vyre_error *err)
{
    if (!db || run_id <= 0 || point_id <= 0 || (!recs && n))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_point_records: bad arguments");
    if (!n)
        return VYRE_OK;
    records r = {run_id, point_id, recs, n, vyre__unix_ns(), ""};
    if (gethostname(r.host, sizeof r.host) != 0)
        vyre__strlcpy(r.host, "unknown", sizeof r.host);
    r.host[sizeof r.host - 1] = '\0';
    return vyre__results_tx(db, "write kernel records to", records_tx, &r, err);
}

static int records_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const records *r = arg;
    int64_t run_id = r->run_id, point_id = r->point_id, now = r->now;
    const vyre_activity *recs = r->recs;
    const char *host = r->host;
    size_t n = r->n;
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(
        db,
        "INSERT INTO timings (run_id, point_id, host, pid, session_ns, kind, name, domain, "
        "start_ns, end_ns, duration_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
        "stream, device, correlation, payload, created_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
        "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
        &st, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const vyre_activity *a = &recs[i];
        if (a->kind == VYRE_ACTIVITY_NONE || a->start_ns > (uint64_t)INT64_MAX ||
            a->end_ns > (uint64_t)INT64_MAX)
            continue;
        int kernel = a->kind == VYRE_ACTIVITY_KERNEL;
        vyre__stmt_int64(st, 1, run_id);
        vyre__stmt_int64(st, 2, point_id);
        vyre__runs_bind_str(st, 3, host);
        vyre__stmt_int64(st, 4, (int64_t)getpid());
        vyre__stmt_int64(st, 5, now);
        vyre__runs_bind_str(st, 6, vyre_activity_kind_name(a->kind));
        vyre__stmt_text(st, 7, a->name, strnlen(a->name, sizeof a->name));
        if (a->kind == VYRE_ACTIVITY_RANGE || a->kind == VYRE_ACTIVITY_MARKER)
            vyre__stmt_text(st, 8, a->domain, strnlen(a->domain, sizeof a->domain));
        else
            vyre__stmt_null(st, 8);
        vyre__stmt_int64(st, 9, (int64_t)a->start_ns);
        vyre__stmt_int64(st, 10, (int64_t)a->end_ns);
        vyre__stmt_int64(st, 11, a->end_ns > a->start_ns ? (int64_t)(a->end_ns - a->start_ns) : 0);
        for (int d = 0; d < 3; d++) {
            if (kernel) {
                vyre__stmt_int64(st, 12 + d, a->grid[d]);
                vyre__stmt_int64(st, 15 + d, a->block[d]);
            } else {
                vyre__stmt_null(st, 12 + d);
                vyre__stmt_null(st, 15 + d);
            }
        }
        if (kernel) {
            vyre__stmt_int64(st, 18, a->stream_id);
            vyre__stmt_int64(st, 19, a->device_id);
        } else {
            vyre__stmt_null(st, 18);
            vyre__stmt_null(st, 19);
        }
        if (a->correlation_id)
            vyre__stmt_int64(st, 20, a->correlation_id);
        else
            vyre__stmt_null(st, 20);
        if (a->has_payload && a->payload <= (uint64_t)INT64_MAX)
            vyre__stmt_int64(st, 21, (int64_t)a->payload);
        else
            vyre__stmt_null(st, 21);
        vyre__stmt_int64(st, 22, now);
        rc = vyre__runs_step_done(st, "write kernel records to", err);
        vyre__stmt_reset(st);
    }
    vyre__stmt_finalize(st);
    if (!rc)
        rc = store_kernel_view(db, point_id, err);
    return rc;
}
