/*
 * runs_db.c - the runs of vyre-bench in the results database (see
 * vyre/bench.h; schema db/results_v2.sql and db/results_v3.sql): a run
 * begun, updated and finished, dead runs reaped, runs deleted. Its points
 * are written by runs_points.c, read back by runs_read.c and compared by
 * runs_compare.c; what the four share is in runs_db.h.
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/runs_db.h"
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
    vyre__runs_bind_str(st, 1, r->suites);
    vyre__runs_bind_str(st, 2, r->host);
    vyre__stmt_int64(st, 3, r->pid);
    vyre__runs_bind_text_or_null(st, 4, r->gpu_name);
    vyre__runs_bind_text_or_null(st, 5, r->gpu_uuid);
    vyre__runs_bind_text_or_null(st, 6, r->devices);
    vyre__runs_bind_text_or_null(st, 7, r->driver);
    vyre__runs_bind_text_or_null(st, 8, r->cuda_version);
    vyre__runs_bind_text_or_null(st, 9, r->clocks);
    vyre__runs_bind_text_or_null(st, 10, r->git_rev);
    char line[sizeof r->command_line];
    vyre__runs_mask_command_line(r->command_line, line, sizeof line);
    vyre__runs_bind_str(st, 11, line); /* never a password (runs_secrets.c) */
    vyre__runs_bind_str(st, 12, r->vyre_version);
    vyre__runs_bind_text_or_null(st, 13, r->message);
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
    int rc = vyre__runs_prep(
        db,
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
        vyre__runs_bind_text_or_null(st, 16, boot);
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
    int rc = vyre__runs_prep(
        db,
        "UPDATE runs SET suites = ?1, host = ?2, pid = ?3, gpu_name = ?4, gpu_uuid = ?5, "
        "devices = ?6, driver = ?7, cuda_version = ?8, clocks = ?9, git_rev = ?10, "
        "command_line = ?11, vyre_version = ?12, message = ?13 WHERE id = ?14",
        &st, err);
    if (!rc) {
        bind_run_fields(st, run);
        vyre__stmt_int64(st, 14, run->id);
        rc = vyre__runs_step_done(st, "update a run in", err);
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
    rc = vyre__runs_exec_id(db, sql, run_id, "finish a run in", err);
    if (!rc) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM timings WHERE point_id IN (SELECT id FROM points WHERE run_id = "
                 "?1%s)",
                 scope);
        rc = vyre__runs_exec_id(db, sql, run_id, "finish a run in", err);
    }
    if (!rc && status == VYRE_RUN_FAILED)
        rc = vyre__runs_exec_id(db, "DELETE FROM timings WHERE run_id = ?1", run_id,
                                "finish a run in", err);
    if (!rc) {
        snprintf(sql, sizeof sql, "DELETE FROM points WHERE run_id = ?1%s", scope);
        rc = vyre__runs_exec_id(db, sql, run_id, "finish a run in", err);
    }
    if (!rc) {
        vyre__stmt *st = NULL;
        rc = vyre__runs_prep(
            db,
            "UPDATE runs SET status = ?2, finished_ns = ?3, message = coalesce(?4, message) "
            "WHERE id = ?1 RETURNING id",
            &st, err);
        if (!rc) {
            vyre__stmt_int64(st, 1, run_id);
            vyre__runs_bind_str(st, 2, vyre_bench_run_status_name(status));
            vyre__stmt_int64(st, 3, vyre__unix_ns());
            vyre__runs_bind_text_or_null(st, 4, e->message);
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
    int rc = vyre__runs_prep(
        db,
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

/* Deletes run id and everything of it, inside the caller's transaction;
 * refuses a running run. */
static int delete_one(vyre_results *db, int64_t id, vyre_error *err)
{
    vyre__stmt *st = NULL;
    int rc = vyre__runs_prep(db, "SELECT status, host, pid FROM runs WHERE id = ?1", &st, err);
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
        rc = vyre__runs_exec_id(db, sql[i], id, "remove a run from", err);
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
    vyre__runs_reap_quietly(db);
    id_list l = {ids, n};
    return vyre__results_tx(db, "remove runs from", delete_tx, &l, err);
}
