/*
 * runs_db.c - runs, points, samples and kernel records of vyre-bench in
 * the results database (see vyre/bench.h; schema db/results_v2.sql and
 * db/results_v3.sql).
 *
 * Every write is one BEGIN IMMEDIATE transaction under the results
 * handle's lock (results_internal.h): a point and all its samples appear
 * together or not at all, and a failed run's cleanup and status change
 * are one step, so a reader never sees a failed run with half its points.
 * Statements are prepared per call: a run writes a few rows a second, and
 * preparing keeps this module free of state on the shared handle. The SQL
 * is store.h's portable subset, so the same code runs on a local SQLite
 * file and on a shared PostgreSQL server: new ids come back through
 * RETURNING, never through an engine's last-rowid call.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/stats_internal.h"
#include "vyre/bench.h"
#include "vyre/version.h"

const char *vyre_bench_run_status_name(vyre_bench_run_status s)
{
    switch (s) {
    case VYRE_RUN_RUNNING:
        return "running";
    case VYRE_RUN_DONE:
        return "done";
    case VYRE_RUN_FAILED:
        return "failed";
    case VYRE_RUN_INTERRUPTED:
        return "interrupted";
    }
    return "?";
}

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

const char *vyre_bench_mode_name(vyre_bench_mode m)
{
    switch (m) {
    case VYRE_BENCH_HOT:
        return "hot";
    case VYRE_BENCH_COLD:
        return "cold";
    case VYRE_BENCH_HOST:
        return "host";
    }
    return "?";
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

/* ---- small statement helpers ------------------------------------------------ */

static int prep(vyre_results *db, const char *sql, vyre__stmt **st, vyre_error *err)
{
    return vyre__results_prepare(db, sql, st, err);
}

static void bind_str(vyre__stmt *st, int i, const char *s)
{
    vyre__stmt_text(st, i, s, strlen(s));
}

static void bind_text_or_null(vyre__stmt *st, int i, const char *s)
{
    if (s && *s)
        vyre__stmt_text(st, i, s, strlen(s));
    else
        vyre__stmt_null(st, i);
}

static void bind_real_or_null(vyre__stmt *st, int i, double v)
{
    if (isfinite(v))
        vyre__stmt_double(st, i, v);
    else
        vyre__stmt_null(st, i);
}

static void col_text(vyre__stmt *st, int i, char *buf, size_t size)
{
    const char *z = vyre__stmt_col_text(st, i);
    vyre__strlcpy(buf, z ? z : "", size);
}

static double col_real(vyre__stmt *st, int i)
{
    return vyre__stmt_is_null(st, i) ? NAN : vyre__stmt_col_double(st, i);
}

/* Runs one prepared write statement to completion. */
static int step_done(vyre__stmt *st, const char *what, vyre_error *err)
{
    int rc = vyre__stmt_step(st, what, err);
    return rc < 0 ? rc : VYRE_OK;
}

/* Executes sql (with ?1 = id) inside the caller's transaction. */
static int exec_id(vyre_results *db, const char *sql, int64_t id, const char *what, vyre_error *err)
{
    vyre__stmt *st = NULL;
    int rc = prep(db, sql, &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, id);
        rc = step_done(st, what, err);
    }
    vyre__stmt_finalize(st);
    return rc;
}

/* ---- runs --------------------------------------------------------------------- */

/* Field 22 of /proc/<pid>/stat (starttime, clock ticks since boot), or -1
 * when the process does not exist or the file cannot be read. The command
 * name (field 2) may hold spaces and parentheses: fields are counted from
 * the last ')'. */
static int64_t proc_start_time(int64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%" PRId64 "/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    /* p is at the space before field 3; each step moves it to the space
     * before the next field, ending before field 22 (starttime). */
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(p + 1, &end, 10);
    return errno || end == p + 1 ? -1 : (int64_t)v;
}

/* The kernel's boot id (a UUID), "" when unknown. */
static void boot_id(char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (!fgets(buf, (int)size, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

static void bind_run_fields(vyre__stmt *st, const vyre_bench_run *r)
{
    bind_str(st, 1, r->suites);
    bind_str(st, 2, r->host);
    vyre__stmt_int64(st, 3, r->pid);
    bind_text_or_null(st, 4, r->gpu_name);
    bind_text_or_null(st, 5, r->gpu_uuid);
    bind_text_or_null(st, 6, r->devices);
    bind_text_or_null(st, 7, r->driver);
    bind_text_or_null(st, 8, r->cuda_version);
    bind_text_or_null(st, 9, r->clocks);
    bind_text_or_null(st, 10, r->git_rev);
    char line[sizeof r->command_line];
    vyre__runs_mask_command_line(r->command_line, line, sizeof line);
    bind_str(st, 11, line); /* never a password (runs_secrets.c) */
    bind_str(st, 12, r->vyre_version);
    bind_text_or_null(st, 13, r->message);
}

static int run_begin_tx(vyre_results *db, void *arg, vyre_error *err);

int vyre__bench_run_begin(vyre_results *db, vyre_bench_run *run, vyre_error *err)
{
    if (!db || !run)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_run_begin: NULL argument");
    if (!run->host[0] && gethostname(run->host, sizeof run->host) != 0)
        vyre__strlcpy(run->host, "unknown", sizeof run->host);
    run->host[sizeof run->host - 1] = '\0';
    if (!run->pid)
        run->pid = (int64_t)getpid();
    if (!run->vyre_version[0])
        vyre__strlcpy(run->vyre_version, vyre_version(), sizeof run->vyre_version);
    run->started_ns = vyre__unix_ns();
    run->finished_ns = 0;
    run->status = VYRE_RUN_RUNNING;
    return vyre__results_tx(db, "start a run in", run_begin_tx, run, err);
}

static int run_begin_tx(vyre_results *db, void *arg, vyre_error *err)
{
    vyre_bench_run *run = arg;
    vyre__stmt *st = NULL;
    int rc =
        prep(db,
             "INSERT INTO runs (suites, host, pid, gpu_name, gpu_uuid, devices, driver, "
             "cuda_version, clocks, git_rev, command_line, vyre_version, message, started_ns, "
             "pid_start, boot_id, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
             "?12, ?13, ?14, ?15, ?16, 'running') RETURNING id",
             &st, err);
    if (!rc) {
        bind_run_fields(st, run);
        vyre__stmt_int64(st, 14, run->started_ns);
        int64_t start = proc_start_time(run->pid);
        if (start >= 0)
            vyre__stmt_int64(st, 15, start);
        else
            vyre__stmt_null(st, 15);
        char boot[64];
        boot_id(boot, sizeof boot);
        bind_text_or_null(st, 16, boot);
        rc = vyre__stmt_step(st, "start a run in", err);
        if (rc == 1)
            run->id = vyre__stmt_col_int64(st, 0);
        rc = rc < 0 ? rc : VYRE_OK;
    }
    vyre__stmt_finalize(st);
    return rc;
}

/* A run read by a transaction (its pointer through vyre__tx_fn's arg). */
typedef struct {
    const vyre_bench_run *run;
} run_arg;

static int run_update_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const vyre_bench_run *run = ((const run_arg *)arg)->run;
    vyre__stmt *st = NULL;
    int rc = prep(db,
                  "UPDATE runs SET suites = ?1, host = ?2, pid = ?3, gpu_name = ?4, gpu_uuid = ?5, "
                  "devices = ?6, driver = ?7, cuda_version = ?8, clocks = ?9, git_rev = ?10, "
                  "command_line = ?11, vyre_version = ?12, message = ?13 WHERE id = ?14",
                  &st, err);
    if (!rc) {
        bind_run_fields(st, run);
        vyre__stmt_int64(st, 14, run->id);
        rc = step_done(st, "update a run in", err);
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__bench_run_update(vyre_results *db, const vyre_bench_run *run, vyre_error *err)
{
    if (!db || !run || run->id <= 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_run_update: bad arguments");
    run_arg a = {run};
    return vyre__results_tx(db, "update a run in", run_update_tx, &a, err);
}

/* vyre__bench_run_finish's arguments. */
typedef struct {
    int64_t run_id;
    vyre_bench_run_status status;
    const char *message;
} run_end;

static int run_finish_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const run_end *e = arg;
    int64_t run_id = e->run_id;
    vyre_bench_run_status status = e->status;
    int rc;
    /* Unfinished points (n = 0) go in every case; a failed run keeps
     * nothing but its row. */
    const char *scope = status == VYRE_RUN_FAILED ? "" : " AND n = 0";
    char sql[256];
    snprintf(sql, sizeof sql,
             "DELETE FROM samples WHERE point_id IN (SELECT id FROM points WHERE run_id = ?1%s)",
             scope);
    rc = exec_id(db, sql, run_id, "finish a run in", err);
    if (!rc) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM timings WHERE point_id IN (SELECT id FROM points WHERE run_id = "
                 "?1%s)",
                 scope);
        rc = exec_id(db, sql, run_id, "finish a run in", err);
    }
    if (!rc && status == VYRE_RUN_FAILED)
        rc = exec_id(db, "DELETE FROM timings WHERE run_id = ?1", run_id, "finish a run in", err);
    if (!rc) {
        snprintf(sql, sizeof sql, "DELETE FROM points WHERE run_id = ?1%s", scope);
        rc = exec_id(db, sql, run_id, "finish a run in", err);
    }
    if (!rc) {
        vyre__stmt *st = NULL;
        rc = prep(db,
                  "UPDATE runs SET status = ?2, finished_ns = ?3, message = coalesce(?4, message) "
                  "WHERE id = ?1 RETURNING id",
                  &st, err);
        if (!rc) {
            vyre__stmt_int64(st, 1, run_id);
            bind_str(st, 2, vyre_bench_run_status_name(status));
            vyre__stmt_int64(st, 3, vyre__unix_ns());
            bind_text_or_null(st, 4, e->message);
            rc = vyre__stmt_step(st, "finish a run in", err);
            if (rc == 0)
                rc = vyre__fail(err, VYRE_ENOENT, NULL, "no run %" PRId64 " in '%s'", run_id,
                                vyre_results_path(db));
            else if (rc == 1)
                rc = VYRE_OK;
        }
        vyre__stmt_finalize(st);
    }
    return rc;
}

int vyre__bench_run_finish(vyre_results *db, int64_t run_id, vyre_bench_run_status status,
                           const char *message, vyre_error *err)
{
    if (!db || run_id <= 0 || status == VYRE_RUN_RUNNING)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_run_finish: bad arguments");
    run_end e = {run_id, status, message};
    return vyre__results_tx(db, "finish a run in", run_finish_tx, &e, err);
}

/* A 'running' row written on this host whose process is gone: the pid no
 * longer exists, it is another process now (other start time), or the
 * machine rebooted since (other boot id). Rows of other hosts cannot be
 * judged and stay as they are. */
static int run_is_stale(vyre__stmt *st, const char *host, const char *boot)
{
    const char *h = vyre__stmt_col_text(st, 1);
    if (!h || strcmp(h, host) != 0)
        return 0;
    int64_t pid = vyre__stmt_col_int64(st, 2);
    const char *b = vyre__stmt_col_text(st, 4);
    if (b && *boot && strcmp(b, boot) != 0)
        return 1;
    if (pid <= 0)
        return 1;
    int64_t now = proc_start_time(pid);
    if (now < 0)
        return !(kill((pid_t)pid, 0) == 0 || errno == EPERM);
    return !vyre__stmt_is_null(st, 3) && vyre__stmt_col_int64(st, 3) != now;
}

int vyre__bench_runs_reap(vyre_results *db, size_t *nreaped, vyre_error *err)
{
    if (nreaped)
        *nreaped = 0;
    if (!db)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_runs_reap: NULL argument");
    char host[256], boot[64];
    if (gethostname(host, sizeof host) != 0)
        vyre__strlcpy(host, "unknown", sizeof host);
    host[sizeof host - 1] = '\0';
    boot_id(boot, sizeof boot);
    int64_t ids[64];
    size_t n = 0;
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    int rc = prep(db,
                  "SELECT id, host, pid, pid_start, boot_id FROM runs WHERE status = 'running' "
                  "ORDER BY id",
                  &st, err);
    if (!rc) {
        int s;
        while (n < VYRE_ARRAY_SIZE(ids) && (s = vyre__stmt_step(st, "read", err)) == 1)
            if (run_is_stale(st, host, boot))
                ids[n++] = vyre__stmt_col_int64(st, 0);
        if (s < 0)
            rc = s;
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    for (size_t i = 0; !rc && i < n; i++) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "its process ended without finishing it (killed, or its terminal closed); "
                 "the points it finished are kept");
        rc = vyre__bench_run_finish(db, ids[i], VYRE_RUN_INTERRUPTED, msg, err);
        if (!rc && nreaped)
            (*nreaped)++;
    }
    return rc;
}

static void reap_quietly(vyre_results *db);

/* Deletes run id and everything of it, inside the caller's transaction;
 * refuses a running run. */
static int delete_one(vyre_results *db, int64_t id, vyre_error *err)
{
    vyre__stmt *st = NULL;
    int rc = prep(db, "SELECT status, host, pid FROM runs WHERE id = ?1", &st, err);
    if (rc)
        return rc;
    vyre__stmt_int64(st, 1, id);
    int s = vyre__stmt_step(st, "remove a run from", err);
    if (s == 1) {
        const char *status = vyre__stmt_col_text(st, 0);
        if (status && strcmp(status, "running") == 0) {
            const char *host = vyre__stmt_col_text(st, 1);
            rc = vyre__fail(err, VYRE_EBUSY,
                            "stop it first (Ctrl-C or kill its process), or wait for it to end",
                            "run %" PRId64 " is running (pid %" PRId64 " on %s): not removed", id,
                            (int64_t)vyre__stmt_col_int64(st, 2), host ? host : "?");
        }
    } else if (s == 0) {
        rc = vyre__remedy(err, VYRE_REMEDY_BENCH_RUNS,
                          vyre__fail(err, VYRE_ENOENT, NULL, "no run %" PRId64 " in '%s'", id,
                                     vyre_results_path(db)));
    } else {
        rc = s;
    }
    vyre__stmt_finalize(st);
    static const char *const sql[] = {
        "DELETE FROM samples WHERE point_id IN (SELECT id FROM points WHERE run_id = ?1)",
        "DELETE FROM timings WHERE run_id = ?1 OR point_id IN (SELECT id FROM points WHERE "
        "run_id = ?1)",
        "DELETE FROM points WHERE run_id = ?1",
        "DELETE FROM runs WHERE id = ?1",
    };
    for (size_t i = 0; !rc && i < VYRE_ARRAY_SIZE(sql); i++)
        rc = exec_id(db, sql[i], id, "remove a run from", err);
    return rc;
}

/* vyre_bench_runs_delete's runs. */
typedef struct {
    const int64_t *ids;
    size_t n;
} id_list;

static int delete_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const id_list *l = arg;
    int rc = VYRE_OK;
    for (size_t i = 0; !rc && i < l->n; i++)
        rc = delete_one(db, l->ids[i], err);
    return rc;
}

int vyre_bench_runs_delete(vyre_results *db, const int64_t *ids, size_t n, vyre_error *err)
{
    if (!db || (n && !ids))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_runs_delete: NULL argument");
    reap_quietly(db);
    id_list l = {ids, n};
    return vyre__results_tx(db, "remove runs from", delete_tx, &l, err);
}

/* ---- points ------------------------------------------------------------------- */

static int point_begin_tx(vyre_results *db, void *arg, vyre_error *err)
{
    vyre_bench_point *p = arg;
    vyre__stmt *st = NULL;
    int rc =
        prep(db,
             "INSERT INTO points (run_id, seq, suite, benchmark, axes, device, mode, unit, timer, "
             "n, stop_reason, stop, created_ns, variant) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'ns', "
             "?8, 0, 'running', '', ?9, ?10) RETURNING id",
             &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, p->run_id);
        vyre__stmt_int64(st, 2, p->seq);
        bind_str(st, 3, p->suite);
        bind_str(st, 4, p->benchmark);
        bind_str(st, 5, p->axes);
        if (p->device >= 0)
            vyre__stmt_int64(st, 6, p->device);
        else
            vyre__stmt_null(st, 6);
        bind_str(st, 7, vyre_bench_mode_name(p->mode));
        bind_str(st, 8, p->gpu_timer ? "gpu" : "wall");
        vyre__stmt_int64(st, 9, vyre__unix_ns());
        bind_text_or_null(st, 10, p->variant);
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

/* A point's one noise figure, the one every `noise` shows and points.noise
 * holds (db/results_v8.sql): with 2 rounds or more the rounds' noise
 * (vyre__stats_round_noise: the samples' robust spread or the round
 * medians', the larger), else the samples' 1.4826 * mad / median. */
static double point_noise(const vyre_bench_point *p)
{
    if (p->rounds >= 2 && isfinite(p->round_noise))
        return p->round_noise;
    return vyre__stats_robust_noise_of(p->stats.n, p->stats.median, p->stats.mad);
}

static int point_finish_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const point_end *e = arg;
    const vyre_bench_point *p = e->p;
    const vyre_bench_sample *samples = e->samples;
    size_t n = e->n;
    vyre__stmt *st = NULL;
    int rc =
        prep(db,
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
        bind_real_or_null(st, 3, s->min);
        bind_real_or_null(st, 4, s->max);
        bind_real_or_null(st, 5, s->mean);
        bind_real_or_null(st, 6, s->median);
        bind_real_or_null(st, 7, s->stddev);
        bind_real_or_null(st, 8, s->rel_stddev);
        bind_real_or_null(st, 9, s->p5);
        bind_real_or_null(st, 10, s->p95);
        bind_real_or_null(st, 11, s->mad);
        vyre__stmt_int64(st, 12, (int64_t)s->n_outliers);
        vyre__stmt_int64(st, 13, (int64_t)p->n_throttled);
        bind_real_or_null(st, 14, p->wall_median);
        if (p->bytes > 0)
            vyre__stmt_double(st, 15, p->bytes);
        else
            vyre__stmt_null(st, 15);
        vyre__stmt_double(st, 16, p->items >= 1 ? p->items : 1);
        bind_text_or_null(st, 17, p->metric_name);
        if (p->metric_name[0])
            bind_real_or_null(st, 18, p->metric);
        else
            vyre__stmt_null(st, 18);
        bind_str(st, 19, vyre_stats_stop_reason_name(p->stop_reason));
        bind_str(st, 20, p->stop);
        bind_text_or_null(st, 21, p->note);
        bind_str(st, 22, vyre_bench_mode_name(p->mode));
        bind_str(st, 23, p->gpu_timer ? "gpu" : "wall");
        if (p->batch_ns > 0)
            bind_real_or_null(st, 24, p->batch_ns);
        else
            vyre__stmt_null(st, 24);
        vyre__stmt_int64(st, 25, (int64_t)p->n_block_timeouts);
        if (p->rounds)
            vyre__stmt_int64(st, 26, (int)p->rounds);
        else
            vyre__stmt_null(st, 26);
        bind_real_or_null(st, 27, p->rounds >= 2 ? p->round_noise : NAN);
        bind_real_or_null(st, 28, point_noise(p));
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
        rc = prep(db,
                  "INSERT INTO samples (point_id, seq, value, wall, sm_clock_mhz, throttled, "
                  "outlier, round) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                  &st, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const vyre_bench_sample *x = &samples[i];
        vyre__stmt_int64(st, 1, p->id);
        vyre__stmt_int64(st, 2, (int64_t)i);
        vyre__stmt_double(st, 3, x->value);
        bind_real_or_null(st, 4, x->wall);
        if (x->sm_clock_mhz)
            vyre__stmt_int64(st, 5, (int)x->sm_clock_mhz);
        else
            vyre__stmt_null(st, 5);
        vyre__stmt_int64(st, 6, x->throttled);
        vyre__stmt_int64(st, 7, x->outlier);
        vyre__stmt_int64(st, 8, (int64_t)x->round);
        rc = step_done(st, "write samples to", err);
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

static int grow(void **arr, size_t *cap, size_t need, size_t elem);

/* The median duration of the point's main kernel: of the kernel records
 * stored with it, the name with the most total time (a pass may launch
 * helpers too). 0 when it has none. Inside the caller's lock. */
static int kernel_view(vyre_results *db, int64_t point_id, double *med, vyre_error *err)
{
    *med = 0;
    vyre__stmt *st = NULL;
    int rc = prep(db,
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
            if (grow((void **)&v, &cap, nv + 1, sizeof *v)) {
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
    rc = prep(db, "SELECT median, timer, mode, note FROM points WHERE id = ?1", &st, err);
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
                gpu = col_real(st, 0);
            col_text(st, 3, note, sizeof note);
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
        rc = prep(db, "UPDATE points SET kernel_ns = ?2, note = ?3 WHERE id = ?1", &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, point_id);
        vyre__stmt_double(st, 2, kns);
        bind_text_or_null(st, 3, note);
        rc = step_done(st, "write kernel records to", err);
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
    int rc = prep(db, "SELECT batch_ns, note FROM points WHERE id = ?1", &st, err);
    double batch = 0;
    char note[sizeof((vyre_bench_point *)0)->note] = "";
    if (!rc) {
        vyre__stmt_int64(st, 1, t->point_id);
        int s = vyre__stmt_step(st, "read", err);
        if (s < 0)
            rc = s;
        if (s == 1) {
            batch = vyre__stmt_is_null(st, 0) ? 0 : col_real(st, 0);
            col_text(st, 1, note, sizeof note);
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
    rc = prep(db, "UPDATE points SET note = ?2 WHERE id = ?1", &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, t->point_id);
        bind_text_or_null(st, 2, note);
        rc = step_done(st, "write the traced time to", err);
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
    int rc =
        prep(db,
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
        bind_str(st, 3, host);
        vyre__stmt_int64(st, 4, (int64_t)getpid());
        vyre__stmt_int64(st, 5, now);
        bind_str(st, 6, vyre_activity_kind_name(a->kind));
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
        rc = step_done(st, "write kernel records to", err);
        vyre__stmt_reset(st);
    }
    vyre__stmt_finalize(st);
    if (!rc)
        rc = store_kernel_view(db, point_id, err);
    return rc;
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
    return prep(db, sql, st, err);
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
    col_text(st, 4, r->suites, sizeof r->suites);
    col_text(st, 5, r->host, sizeof r->host);
    r->pid = vyre__stmt_col_int64(st, 6);
    col_text(st, 7, r->gpu_name, sizeof r->gpu_name);
    col_text(st, 8, r->gpu_uuid, sizeof r->gpu_uuid);
    col_text(st, 9, r->devices, sizeof r->devices);
    col_text(st, 10, r->driver, sizeof r->driver);
    col_text(st, 11, r->cuda_version, sizeof r->cuda_version);
    col_text(st, 12, r->clocks, sizeof r->clocks);
    col_text(st, 13, r->git_rev, sizeof r->git_rev);
    char line[sizeof r->command_line];
    col_text(st, 14, line, sizeof line);
    vyre__runs_mask_command_line(line, r->command_line, sizeof r->command_line);
    col_text(st, 15, r->vyre_version, sizeof r->vyre_version);
    col_text(st, 16, r->message, sizeof r->message);
    r->npoints = (size_t)vyre__stmt_col_int64(st, 17);
    keep_suites_that_ran(r->suites, vyre__stmt_col_text(st, 18));
}

/* Grows *arr (of elem bytes) to hold at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
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
            if (grow(out, &cap, *n + 1, elem)) {
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

/* Readers turn dead 'running' rows into 'interrupted' before they look, so
 * that `runs` and `show` never report a run as running when nothing runs
 * it. Best effort: a read-only or busy database is read as it is. */
static void reap_quietly(vyre_results *db)
{
    vyre_error ignored;
    vyre_error_clear(&ignored);
    (void)vyre__bench_runs_reap(db, NULL, &ignored);
}

static void read_run_row(vyre__stmt *st, void *elem)
{
    read_run(st, elem);
}

static void read_sample_row(vyre__stmt *st, void *elem)
{
    vyre_bench_sample *x = elem;
    x->value = vyre__stmt_col_double(st, 0);
    x->wall = col_real(st, 1);
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
    reap_quietly(db);
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
    reap_quietly(db);
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
    reap_quietly(db);
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
    int rc =
        prep(db, "SELECT id FROM runs WHERE status = 'done' ORDER BY id DESC LIMIT 1 OFFSET ?1",
             &st, err);
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
    col_text(st, 3, p->suite, sizeof p->suite);
    col_text(st, 4, p->benchmark, sizeof p->benchmark);
    col_text(st, 5, p->axes, sizeof p->axes);
    p->device = vyre__stmt_is_null(st, 6) ? -1 : (int)vyre__stmt_col_int64(st, 6);
    p->mode = mode_from(vyre__stmt_col_text(st, 7));
    const char *timer = vyre__stmt_col_text(st, 8);
    p->gpu_timer = timer && strcmp(timer, "gpu") == 0;
    vyre_stats *s = &p->stats;
    s->n = (size_t)vyre__stmt_col_int64(st, 9);
    s->min = col_real(st, 10);
    s->max = col_real(st, 11);
    s->mean = col_real(st, 12);
    s->median = col_real(st, 13);
    s->stddev = col_real(st, 14);
    s->rel_stddev = col_real(st, 15);
    s->p5 = col_real(st, 16);
    s->p95 = col_real(st, 17);
    s->mad = col_real(st, 18);
    s->n_outliers = (size_t)vyre__stmt_col_int64(st, 19);
    p->n_throttled = (size_t)vyre__stmt_col_int64(st, 20);
    p->wall_median = col_real(st, 21);
    p->bytes = vyre__stmt_is_null(st, 22) ? 0 : vyre__stmt_col_double(st, 22);
    p->items = vyre__stmt_is_null(st, 23) ? 1 : vyre__stmt_col_double(st, 23);
    col_text(st, 24, p->metric_name, sizeof p->metric_name);
    p->metric = col_real(st, 25);
    p->stop_reason = reason_from(vyre__stmt_col_text(st, 26));
    col_text(st, 27, p->stop, sizeof p->stop);
    col_text(st, 28, p->note, sizeof p->note);
    /* NULL (not measured, or a row from before v4) reads as 0. */
    p->batch_ns = vyre__stmt_is_null(st, 29) ? 0 : vyre__stmt_col_double(st, 29);
    p->kernel_ns = vyre__stmt_is_null(st, 30) ? 0 : vyre__stmt_col_double(st, 30);
    p->n_block_timeouts = (size_t)vyre__stmt_col_int64(st, 31);
    p->rounds = (unsigned)vyre__stmt_col_int64(st, 32);
    p->round_noise = col_real(st, 33);
    col_text(st, 34, p->variant, sizeof p->variant); /* NULL: "" */
    /* The figure points.noise holds, derived again as it was written. */
    s->robust_noise = point_noise(p);
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
    int rc =
        prep(db, "SELECT " POINT_COLUMNS " FROM points WHERE run_id = ?1 AND n > 0 ORDER BY seq",
             &st, err);
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
    int rc = prep(db,
                  "SELECT value, wall, sm_clock_mhz, throttled, outlier, round FROM samples WHERE "
                  "point_id = ?1 ORDER BY seq",
                  &st, err);
    if (!rc)
        vyre__stmt_int64(st, 1, point_id);
    return read_list(db, st, rc, sizeof **out, read_sample_row, (void **)out, n, "samples", err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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
    int rc = prep(db,
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
                qsort(v, nv, sizeof *v, cmp_double);
                k->median_ns = vyre_stats_percentile_sorted(v, nv, 50);
                nv = 0;
            }
            if (s != 1)
                break;
            if (strcmp(name ? name : "", cur) != 0 || !*n) {
                if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
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
            if (grow((void **)&v, &vcap, nv + 1, sizeof *v)) {
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

/* ---- compare ------------------------------------------------------------------ */

/* ab: an A/B run compared with itself, where an A point matches the B
 * point of the same place (and a shared reference matches itself); two
 * runs match variant with variant, A with A and B with B. */
static int same_point(const vyre_bench_point *a, const vyre_bench_point *b, int ab)
{
    return strcmp(a->suite, b->suite) == 0 && strcmp(a->benchmark, b->benchmark) == 0 &&
           strcmp(a->axes, b->axes) == 0 && a->device == b->device && a->mode == b->mode &&
           (ab || strcmp(a->variant, b->variant) == 0);
}

/* An A/B run compared with itself: side A keeps the points that are not
 * B's, side B those that are not A's (shared references on both). */
static int has_variants(const vyre_bench_point *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].variant[0])
            return 1;
    return 0;
}

static void keep_side(vyre_bench_point *p, size_t *n, const char *drop)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(p[i].variant, drop) != 0)
            p[k++] = p[i];
    *n = k;
}

/* A point's stored samples as the comparison needs them. */
struct side {
    double *v;   /* time, ns per item */
    double *cyc; /* time x SM clock (ns MHz): valid when clock > 0 */
    unsigned *round;
    size_t n;
    double clock; /* median SM clock of the samples, MHz; 0: unknown */
};

static void side_release(struct side *x)
{
    free(x->v);
    free(x->cyc);
    free(x->round);
    memset(x, 0, sizeof *x);
}

/* The samples of points ids[0..nids-1] (one per pooled run) as one side:
 * each point's rounds renumbered after the previous point's, so rounds of
 * different runs never merge. */
static int samples_pooled(vyre_results *db, const int64_t *ids, size_t nids,
                          vyre_bench_sample **out, size_t *n, vyre_error *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    unsigned base = 0;
    for (size_t k = 0; k < nids; k++) {
        vyre_bench_sample *s = NULL;
        size_t ns = 0;
        int rc = vyre_bench_samples_get(db, ids[k], &s, &ns, err);
        if (!rc && grow((void **)out, &cap, *n + ns + 1, sizeof **out))
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
        if (rc) {
            free(s);
            free(*out);
            *out = NULL;
            return rc;
        }
        unsigned top = base;
        for (size_t i = 0; i < ns; i++) {
            s[i].round += base;
            top = s[i].round + 1 > top ? s[i].round + 1 : top;
            (*out)[(*n)++] = s[i];
        }
        base = top;
        free(s);
    }
    return VYRE_OK;
}

static int side_load(vyre_results *db, const int64_t *ids, size_t nids, struct side *x,
                     vyre_error *err)
{
    memset(x, 0, sizeof *x);
    vyre_bench_sample *s = NULL;
    int rc = samples_pooled(db, ids, nids, &s, &x->n, err);
    if (rc)
        return rc;
    size_t m = x->n ? x->n : 1;
    x->v = malloc(m * sizeof *x->v);
    x->cyc = malloc(m * sizeof *x->cyc);
    x->round = malloc(m * sizeof *x->round);
    double *clk = malloc(m * sizeof *clk);
    if (!x->v || !x->cyc || !x->round || !clk) {
        free(s);
        free(clk);
        side_release(x);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    }
    size_t nclk = 0;
    for (size_t i = 0; i < x->n; i++) {
        x->v[i] = s[i].value;
        x->round[i] = s[i].round;
        if (s[i].sm_clock_mhz)
            clk[nclk++] = s[i].sm_clock_mhz;
    }
    /* Clocks only when every sample has one: a cycle count needs each. */
    if (x->n && nclk == x->n) {
        qsort(clk, nclk, sizeof *clk, cmp_double);
        x->clock = vyre_stats_percentile_sorted(clk, nclk, 50);
        for (size_t i = 0; i < x->n; i++)
            x->cyc[i] = s[i].value * s[i].sm_clock_mhz;
    }
    free(clk);
    free(s);
    return VYRE_OK;
}

/* SM clocks of the two sides differing by more than this: compare in
 * cycles too (nvbench's compare does the same). */
#define CLOCK_DIFF 0.02

/* Row r: side A pooled from the points aids[0..naids-1] (r->a's first). */
static int compare_row(vyre_results *db, vyre_bench_cmp_row *r, const int64_t *aids, size_t naids,
                       const vyre_stats_compare_opts *opts, vyre_error *err)
{
    struct side x, y;
    int rc = side_load(db, aids, naids, &x, err);
    if (rc)
        return rc;
    if ((rc = side_load(db, &r->b.id, 1, &y, err))) {
        side_release(&x);
        return rc;
    }
    rc = vyre__stats_compare_rounds(x.v, x.round, x.n, y.v, y.round, y.n, opts, &r->cmp, err);
    r->clock_a_mhz = x.clock;
    r->clock_b_mhz = y.clock;
    if (!rc && x.clock > 0 && y.clock > 0 && fabs(y.clock / x.clock - 1.0) > CLOCK_DIFF) {
        r->cycles_compared = 1;
        rc = vyre__stats_compare_rounds(x.cyc, x.round, x.n, y.cyc, y.round, y.n, opts, &r->cycles,
                                        err);
    }
    side_release(&x);
    side_release(&y);
    return rc;
}

static int is_reference(const vyre_bench_point *p)
{
    return strcmp(p->suite, "reference") == 0;
}

/* Whether reference row ref speaks for point p: the host references for
 * wall-timer points, the GPU reference of the same device for GPU ones. */
static int reference_for(const vyre_bench_cmp_row *ref, const vyre_bench_point *p)
{
    if (!ref->has_a || !ref->has_b || !is_reference(&ref->a) || !isfinite(ref->cmp.ratio) ||
        !(ref->cmp.ratio > 0))
        return 0;
    if (ref->a.gpu_timer != p->gpu_timer)
        return 0;
    return !p->gpu_timer || ref->a.device == p->device;
}

/* The drift a reference's comparison establishes: its median ratio (1 /
 * the ratio below 1), unless the reference is NOISY (either side's noise
 * above --max-noise): a noisy fsync on a busy disk, 0.02x to 1.3x from run
 * to run, establishes nothing. Not its interval: over 5 rounds one quiet
 * round (a CPU hog not yet running) puts 1 inside it, or its end nearest 1
 * near 1, while four rounds read 1.67x; with a CPU hog taking one of two
 * cores, reference.cpus read 1.673x [1.029, 1.726] and 1.672x [0.988,
 * 1.692], and cache points the hog slowed 1.2-1.7x were SLOWER in A/A
 * pairs (2 of 13). */
static double established_drift(const vyre_stats_compare_result *c)
{
    vyre_stats_verdict v = c->verdict == VYRE_VERDICT_DRIFT ? c->verdict_before_drift : c->verdict;
    if (v == VYRE_VERDICT_NOISY || !isfinite(c->ratio) || !(c->ratio > 0.0))
        return 1.0;
    return c->ratio >= 1.0 ? c->ratio : 1.0 / c->ratio;
}

/* The final verdict of a matched row: the drift band of its timer kind,
 * then (clocks apart) agreement with the comparison in cycles. */
static void settle_row(vyre_bench_cmp_row *r, const vyre_bench_cmp_row *rows, size_t n)
{
    const vyre_bench_point *p = &r->a;
    double drift = 1.0;
    r->ref_ratio = NAN;
    for (size_t i = 0; !is_reference(p) && i < n; i++) {
        if (!reference_for(&rows[i], p))
            continue;
        double d = established_drift(&rows[i].cmp);
        if (d > drift || !isfinite(r->ref_ratio)) {
            drift = d > drift ? d : drift;
            r->ref_ratio = rows[i].cmp.ratio;
            vyre__strlcpy(r->reference, rows[i].a.benchmark, sizeof r->reference);
        }
    }
    vyre__stats_compare_widen(&r->cmp, drift);
    if (r->cycles_compared) {
        vyre__stats_compare_widen(&r->cycles, drift);
        if ((r->cmp.verdict == VYRE_VERDICT_SLOWER || r->cmp.verdict == VYRE_VERDICT_FASTER) &&
            r->cycles.verdict != r->cmp.verdict)
            r->cmp.verdict = VYRE_VERDICT_DRIFT;
    }
    /* A reference's own change is the machine's, never the code's. */
    if (is_reference(p) &&
        (r->cmp.verdict == VYRE_VERDICT_SLOWER || r->cmp.verdict == VYRE_VERDICT_FASTER))
        r->cmp.verdict = VYRE_VERDICT_DRIFT;
    r->is_reference = is_reference(p);
}

/* The points of the older pooled runs a[1..na-1] (a[0]'s are the rows'). */
typedef struct pool {
    vyre_bench_point *p[VYRE_RESULTS_POOL_MAX];
    size_t n[VYRE_RESULTS_POOL_MAX];
    size_t runs;
} pool;

static void pool_release(pool *pl)
{
    for (size_t k = 0; k < pl->runs; k++)
        free(pl->p[k]);
    memset(pl, 0, sizeof *pl);
}

static int pool_load(vyre_results *db, const int64_t *a, size_t na, pool *pl, vyre_error *err)
{
    memset(pl, 0, sizeof *pl);
    for (size_t k = 1; k < na; k++) {
        vyre_bench_run r;
        int rc = vyre_bench_run_get(db, a[k], &r, err);
        if (!rc)
            rc = vyre_bench_points_get(db, a[k], &pl->p[pl->runs], &pl->n[pl->runs], err);
        if (rc) {
            pool_release(pl);
            return rc;
        }
        pl->runs++;
    }
    return VYRE_OK;
}

/* Compares matched row r, side A pooled over a[0] and the pool's runs. */
static int compare_pooled_row(vyre_results *db, vyre_bench_cmp_row *r, const pool *pl,
                              const vyre_stats_compare_opts *opts, vyre_error *err)
{
    int64_t ids[VYRE_RESULTS_POOL_MAX];
    size_t m = 0;
    ids[m++] = r->a.id;
    for (size_t k = 0; k < pl->runs; k++)
        for (size_t j = 0; j < pl->n[k]; j++)
            if (same_point(&r->a, &pl->p[k][j], 0)) {
                ids[m++] = pl->p[k][j].id;
                break;
            }
    int rc = compare_row(db, r, ids, m, opts, err);
    if (!rc && pl->runs)
        r->a.stats.median = r->cmp.median_a; /* the pooled median, as compared */
    return rc;
}

/* The rows: a's points matched with b's, then the points only b has. */
static int match_rows(vyre_results *db, vyre_bench_point *pa, size_t na, vyre_bench_point *pb,
                      size_t nb, int ab, const pool *pl, const vyre_stats_compare_opts *opts,
                      vyre_bench_cmp_row *rows, size_t *nr, vyre_error *err)
{
    unsigned char *used = calloc(nb + 1, 1);
    if (!used)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    int rc = VYRE_OK;
    *nr = 0;
    for (size_t i = 0; !rc && i < na; i++) {
        vyre_bench_cmp_row *r = &rows[(*nr)++];
        r->a = pa[i];
        r->has_a = 1;
        r->ref_ratio = NAN;
        r->is_reference = is_reference(&pa[i]);
        for (size_t j = 0; j < nb; j++)
            if (!used[j] && same_point(&pa[i], &pb[j], ab)) {
                used[j] = 1;
                r->b = pb[j];
                r->has_b = 1;
                break;
            }
        if (r->has_b)
            rc = compare_pooled_row(db, r, pl, opts, err);
    }
    for (size_t i = 0; !rc && i < *nr; i++)
        if (rows[i].has_a && rows[i].has_b)
            settle_row(&rows[i], rows, *nr);
    for (size_t j = 0; !rc && j < nb; j++)
        if (!used[j]) {
            rows[*nr].b = pb[j];
            rows[*nr].ref_ratio = NAN;
            rows[*nr].is_reference = is_reference(&pb[j]);
            rows[(*nr)++].has_b = 1;
        }
    free(used);
    return rc;
}

int vyre_bench_compare_pooled(vyre_results *db, const int64_t *a, size_t na, int64_t b,
                              const vyre_stats_compare_opts *opts, vyre_bench_cmp_row **out,
                              size_t *n, vyre_error *err)
{
    if (!db || !a || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_compare_runs: NULL argument");
    if (na < 1 || na > VYRE_RESULTS_POOL_MAX)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_compare_pooled: %zu runs", na);
    *out = NULL;
    *n = 0;
    vyre_bench_run ra, rb;
    int rc;
    if ((rc = vyre_bench_run_get(db, a[0], &ra, err)) || (rc = vyre_bench_run_get(db, b, &rb, err)))
        return rc;
    vyre_bench_point *pa = NULL, *pb = NULL;
    size_t npa = 0, npb = 0;
    if ((rc = vyre_bench_points_get(db, a[0], &pa, &npa, err)) ||
        (rc = vyre_bench_points_get(db, b, &pb, &npb, err))) {
        free(pa);
        return rc;
    }
    int ab = na == 1 && a[0] == b && has_variants(pa, npa);
    if (ab) {
        keep_side(pa, &npa, "B");
        keep_side(pb, &npb, "A");
    }
    pool pl;
    vyre_bench_cmp_row *rows = calloc(npa + npb + 1, sizeof *rows);
    if (!rows)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    else
        rc = pool_load(db, a, na, &pl, err);
    size_t nr = 0;
    if (!rc) {
        rc = match_rows(db, pa, npa, pb, npb, ab, &pl, opts, rows, &nr, err);
        pool_release(&pl);
    }
    free(pa);
    free(pb);
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *n = nr;
    return VYRE_OK;
}

int vyre_bench_compare_runs(vyre_results *db, int64_t a, int64_t b,
                            const vyre_stats_compare_opts *opts, vyre_bench_cmp_row **out,
                            size_t *n, vyre_error *err)
{
    if (!db || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_compare_runs: NULL argument");
    return vyre_bench_compare_pooled(db, &a, 1, b, opts, out, n, err);
}

/* ---- freeing what the readers return --------------------------------------------- */

void vyre_bench_run_list_free(vyre_bench_run *runs)
{
    free(runs);
}

void vyre_bench_point_list_free(vyre_bench_point *points)
{
    free(points);
}

void vyre_bench_sample_list_free(vyre_bench_sample *samples)
{
    free(samples);
}

void vyre_bench_kernel_row_list_free(vyre_bench_kernel_row *rows)
{
    free(rows);
}

void vyre_bench_cmp_row_list_free(vyre_bench_cmp_row *rows)
{
    free(rows);
}
