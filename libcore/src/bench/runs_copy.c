/*
 * runs_copy.c - one run copied from one results store to another (push to
 * a shared server, pull from it; vyre_results_copy_run in vyre/results.h):
 * the runs row with its states and facts as they were (host, start time,
 * pid, GPU, driver, git revision, ...), its points, their samples and the
 * run's kernel records, each row to a new id of the target.
 *
 * A run's identity is (host, started_ns, pid): a run the target already
 * holds is not copied again, so pushing the same runs twice changes
 * nothing. The copy is one transaction of the target: it is there whole
 * or not at all. Values go through the store's typed binds (a REAL as a
 * double, never through text), so a copy reads back bit for bit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/internal.h"
#include "bench/results_internal.h"
#include "vyre/bench.h"

/* Columns copied as they are, with their type: i int64, r real, t text;
 * m text with every password masked (runs_secrets.c): push and pull never
 * carry one, whatever the source holds. */
typedef struct column_set {
    const char *names; /* "a, b, c" */
    const char *types; /* "iit" */
} column_set;

static const column_set k_runs = {
    "started_ns, finished_ns, status, suites, host, pid, gpu_name, gpu_uuid, devices, driver, "
    "cuda_version, clocks, git_rev, command_line, vyre_version, message, pid_start, boot_id",
    "iittti"
    "tttttttmtt"
    "it"}; /* command_line is 'm': masked as it is copied */
static const column_set k_points = {
    "seq, suite, benchmark, axes, device, mode, unit, timer, n, min, max, mean, median, stddev, "
    "rel_stddev, p5, p95, mad, n_outliers, n_throttled, wall_median, bytes, items, metric_name, "
    "metric, stop_reason, stop, note, created_ns, batch_ns, kernel_ns, block_timeouts, rounds, "
    "round_noise, variant, noise",
    "ittti"
    "tttirrrrrrrrrii"
    "rrrtr"
    "tttirrii"
    "rtr"};
static const column_set k_samples = {"seq, value, wall, sm_clock_mhz, throttled, outlier, round",
                                     "irriiii"};
static const column_set k_timings = {
    "host, pid, session_ns, kind, name, domain, start_ns, end_ns, duration_ns, grid_x, grid_y, "
    "grid_z, block_x, block_y, block_z, stream, device, bytes, copy_kind, correlation, payload, "
    "created_ns",
    "tiitttiiiiiiiiiiiitiii"};

/* Binds column i (0-based) of src's row as parameter p of dst. */
static void copy_value(vyre__stmt *src, int i, char type, vyre__stmt *dst, int p)
{
    if (vyre__stmt_is_null(src, i)) {
        vyre__stmt_null(dst, p);
    } else if (type == 'i') {
        vyre__stmt_int64(dst, p, vyre__stmt_col_int64(src, i));
    } else if (type == 'r') {
        vyre__stmt_double(dst, p, vyre__stmt_col_double(src, i));
    } else if (type == 'm') {
        char line[4096];
        vyre__runs_mask_command_line(vyre__stmt_col_text(src, i), line, sizeof line);
        vyre__stmt_text(dst, p, line, strlen(line));
    } else {
        const char *z = vyre__stmt_col_text(src, i);
        vyre__stmt_text(dst, p, z ? z : "", z ? strlen(z) : 0);
    }
}

/* "INSERT INTO table (fixed..., cols) VALUES (?1, ..., ?N)[ RETURNING id]" */
static int insert_sql(char *buf, size_t size, const char *table, const char *fixed, int nfixed,
                      const column_set *c, int returning)
{
    int n = nfixed + (int)strlen(c->types);
    size_t o =
        (size_t)snprintf(buf, size, "INSERT INTO %s (%s%s) VALUES (", table, fixed, c->names);
    for (int i = 1; i <= n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s?%d", i > 1 ? ", " : "", i);
    if (o < size)
        o += (size_t)snprintf(buf + o, size - o, ")%s", returning ? " RETURNING id" : "");
    return o < size ? VYRE_OK : VYRE_ETOOBIG;
}

/* A copy in progress: both stores, the target's ids of the run. */
typedef struct copy {
    vyre_results *from, *to;
    int64_t src_run, dst_run;
    vyre_error *err;
} copy;

/* Copies the rows of `table` where `where` (?1 = key) of from, to rows of
 * to whose first nfixed columns are `fixed` bound to fixed_vals (NULL for
 * 0: SQL NULL). With returning, *new_id is the last new row's id. */
static int copy_rows(copy *c, const char *table, const column_set *cols, const char *where,
                     int64_t key, const char *fixed, int nfixed, const int64_t *fixed_vals,
                     int64_t *new_id)
{
    char sel[1024], ins[2048];
    snprintf(sel, sizeof sel, "SELECT %s FROM %s WHERE %s ORDER BY rowid_order", cols->names, table,
             where);
    /* Portable: order by the table's own key, named per table below. */
    char *ord = strstr(sel, "rowid_order");
    snprintf(ord, sizeof sel - (size_t)(ord - sel), "%s",
             strcmp(table, "samples") == 0 ? "seq" : "id");
    if (insert_sql(ins, sizeof ins, table, fixed, nfixed, cols, new_id != NULL))
        return vyre__fail(c->err, VYRE_ETOOBIG, NULL, "copy statement too long");
    vyre__stmt *r = NULL, *w = NULL;
    int rc = vyre__results_prepare(c->from, sel, &r, c->err);
    if (!rc)
        rc = vyre__results_prepare(c->to, ins, &w, c->err);
    if (!rc)
        vyre__stmt_int64(r, 1, key);
    int s;
    while (!rc && (s = vyre__stmt_step(r, "read", c->err)) == 1) {
        for (int i = 0; i < nfixed; i++)
            if (fixed_vals[i])
                vyre__stmt_int64(w, i + 1, fixed_vals[i]);
            else
                vyre__stmt_null(w, i + 1);
        for (int i = 0; cols->types[i]; i++)
            copy_value(r, i, cols->types[i], w, nfixed + i + 1);
        int ws = vyre__stmt_step(w, "copy a run to", c->err);
        if (ws < 0)
            rc = ws;
        else if (ws == 1 && new_id)
            *new_id = vyre__stmt_col_int64(w, 0);
        vyre__stmt_reset(w);
    }
    if (!rc && s < 0)
        rc = s;
    vyre__stmt_finalize(r);
    vyre__stmt_finalize(w);
    return rc;
}

/* Each point of the run with its samples and kernel records, then the
 * run's records that belong to no point. */
static int copy_points(copy *c)
{
    vyre__stmt *st = NULL;
    int rc = vyre__results_prepare(c->from, "SELECT id FROM points WHERE run_id = ?1 ORDER BY id",
                                   &st, c->err);
    int64_t *ids = NULL;
    size_t n = 0, cap = 0;
    if (!rc)
        vyre__stmt_int64(st, 1, c->src_run);
    int s;
    while (!rc && (s = vyre__stmt_step(st, "read", c->err)) == 1) {
        if (vyre__grow(&ids, &cap, n + 1, sizeof *ids, 64)) {
            rc = vyre__fail(c->err, VYRE_ENOMEM, NULL, "out of memory copying a run");
            break;
        }
        ids[n++] = vyre__stmt_col_int64(st, 0);
    }
    if (!rc && s < 0)
        rc = s;
    vyre__stmt_finalize(st);
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t np = 0, run_only[1] = {c->dst_run};
        rc = copy_rows(c, "points", &k_points, "id = ?1", ids[i], "run_id, ", 1, run_only, &np);
        int64_t pt_only[1] = {np}, both[2] = {c->dst_run, np};
        if (!rc)
            rc = copy_rows(c, "samples", &k_samples, "point_id = ?1", ids[i], "point_id, ", 1,
                           pt_only, NULL);
        if (!rc)
            rc = copy_rows(c, "timings", &k_timings, "point_id = ?1", ids[i], "run_id, point_id, ",
                           2, both, NULL);
    }
    free(ids);
    int64_t loose[2] = {c->dst_run, 0};
    if (!rc)
        rc = copy_rows(c, "timings", &k_timings, "run_id = ?1 AND point_id IS NULL", c->src_run,
                       "run_id, point_id, ", 2, loose, NULL);
    return rc;
}

/* The target's id of the run with this identity, 0 when it has none. */
static int find_run(vyre_results *db, const vyre_bench_run *r, int64_t *id, vyre_error *err)
{
    *id = 0;
    vyre__stmt *st = NULL;
    int rc = vyre__results_prepare(
        db, "SELECT id FROM runs WHERE host = ?1 AND started_ns = ?2 AND pid = ?3", &st, err);
    if (!rc) {
        vyre__stmt_text(st, 1, r->host, strlen(r->host));
        vyre__stmt_int64(st, 2, r->started_ns);
        vyre__stmt_int64(st, 3, r->pid);
        int s = vyre__stmt_step(st, "read", err);
        if (s == 1)
            *id = vyre__stmt_col_int64(st, 0);
        rc = s < 0 ? s : VYRE_OK;
    }
    vyre__stmt_finalize(st);
    return rc;
}

/* The lock key of a run's identity (host, started_ns, pid): two runs
 * sharing one only wait for each other. */
static uint32_t identity_key(const vyre_bench_run *r)
{
    char id[sizeof r->host + 48];
    int n = snprintf(id, sizeof id, "%s|%" PRId64 "|%" PRId64, r->host, r->started_ns, r->pid);
    return XXH32(id, n > 0 && (size_t)n < sizeof id ? (size_t)n : strlen(id), 0);
}

/* A copy's transaction on the target. */
typedef struct copy_job {
    copy *c;
    const vyre_bench_run *r;
    int64_t found; /* the target's id of the run when it had it already */
} copy_job;

/* Under the source's lock, inside the target's write transaction
 * (vyre__results_tx: done again whole when a server cut it before its
 * COMMIT). */
static int copy_tx(vyre_results *to, void *arg, vyre_error *err)
{
    copy_job *j = arg;
    copy *c = j->c;
    j->found = 0;
    /* Looked up inside the write transaction, under a lock on the run's
     * identity: on a file the transaction serialises two copies of the
     * same run; on a server (READ COMMITTED) two clients both found
     * nothing and both inserted, so two machines pushing at once stored
     * the run twice. */
    int rc = vyre__results_lock_key(to, identity_key(j->r), "copy a run to", err);
    if (!rc)
        rc = find_run(to, j->r, &j->found, err);
    if (rc || j->found)
        return rc; /* there already: nothing written, the lock ends with the transaction */
    rc = copy_rows(c, "runs", &k_runs, "id = ?1", c->src_run, "", 0, NULL, &c->dst_run);
    return rc ? rc : copy_points(c);
}

int vyre_results_copy_run(vyre_results *from, int64_t run_id, vyre_results *to, int64_t *new_id,
                          int *existed, vyre_error *err)
{
    if (!from || !to || from == to || !new_id)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_copy_run: bad arguments");
    *new_id = 0;
    vyre_bench_run r;
    int rc = vyre_bench_run_get(from, run_id, &r, err);
    if (rc)
        return rc;
    if (r.status == VYRE_RUN_RUNNING)
        return vyre__fail(err, VYRE_EBUSY, "copy it once it has ended",
                          "run %" PRId64 " is still running (pid %" PRId64 " on %s): not copied",
                          run_id, r.pid, r.host);
    copy c = {from, to, run_id, 0, err};
    copy_job j = {&c, &r, 0};
    vyre__results_lock(from);
    rc = vyre__results_tx(to, "copy a run to", copy_tx, &j, err);
    vyre__results_unlock(from);
    if (!rc)
        *new_id = j.found ? j.found : c.dst_run;
    if (existed)
        *existed = !rc && j.found;
    return rc;
}
