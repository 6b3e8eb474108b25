/*
 * results.c - the results database and its timings writer (see
 * vyre/results.h; schema in db/results_v1.sql, embedded as vyre__sql_results_v1).
 *
 * The store is an engine behind store.h's operations table: a local SQLite
 * file (store_sqlite.c, the default: precious, never replaced, refused
 * files left byte-for-byte as they were) or a shared PostgreSQL server
 * (store_pg.c, a postgresql:// URL). This file owns what both share:
 *   - the schema steps (db/results_vN.sql, one list for both engines);
 *   - where the database is (--db, VYRE_RESULTS_DB, results_db, default);
 *   - the timings writer: rows collect in memory and go in one
 *     transaction per flush through one statement, never one transaction
 *     per record; a flush that fails (a server gone mid-run) rolls back
 *     whole and keeps its rows pending;
 *   - one connection per vyre_results, serialised by db->mu; a writer's
 *     queue has its own mutex, taken before db->mu (lock order: writer,
 *     then db).
 */
#include "cuda/cupti_internal.h"
#include "vyre/results.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store.h"
#include "bench/store_url.h"

/* db/results_v1.sql and db/results_v2.sql, embedded by cmake/EmbedSql.cmake. */
extern const char vyre__sql_results_v1[];
extern const char vyre__sql_results_v2[];
extern const char vyre__sql_results_v3[];
extern const char vyre__sql_results_v4[];
extern const char vyre__sql_results_v5[];
extern const char vyre__sql_results_v6[];
extern const char vyre__sql_results_v7[];
extern const char vyre__sql_results_v8[];

/*
 * Schema steps: vyre__results_schema_steps[v] takes schema version v to v + 1
 * (SQLite's PRAGMA user_version, PostgreSQL's meta 'schema_version'; the
 * PostgreSQL store runs each through store_dialect.c's rewrite).
 * Step 0 is db/results_v1.sql, the v1 schema; append a step (and bump
 * VYRE_RESULTS_SCHEMA_VERSION) for every later version, never edit an old
 * one. See the top of db/results_v1.sql for what a step may do.
 */
const char *const vyre__results_schema_steps[VYRE_RESULTS_SCHEMA_VERSION] = {
    vyre__sql_results_v1, /* 0 -> 1 */
    vyre__sql_results_v2, /* 1 -> 2: runs, points, samples (the bench) */
    vyre__sql_results_v3, /* 2 -> 3: runs.pid_start, runs.boot_id (stale runs) */
    /* Steps are ordered by this list, not by their file names; a step is
     * never renumbered once it has landed. */
    vyre__sql_results_v4, /* 3 -> 4: points.batch_ns, kernel_ns, block_timeouts (views) */
    vyre__sql_results_v5, /* 4 -> 5: samples.round, points.rounds, points.round_noise */
    vyre__sql_results_v6, /* 5 -> 6: points.variant (run --vs) */
    vyre__sql_results_v7, /* 6 -> 7: runs.git_ref (baseline selectors) */
    vyre__sql_results_v8, /* 7 -> 8: points.noise robust, rel_stddev stddev / mean */
};

static const char k_insert_sql[] =
    "INSERT INTO timings (run_id, host, pid, session_ns, kind, name, domain, start_ns, end_ns, "
    "duration_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, stream, device, bytes, "
    "copy_kind, correlation, payload, created_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
    "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)";

/* A queued row: the record and when it was queued. */
struct pending_row {
    vyre_activity a;
    int64_t created_ns;
};

struct vyre_results_writer {
    pthread_mutex_t mu;
    vyre_results *db;
    int64_t run_id; /* 0: NULL */
    int64_t pid;
    int64_t session_ns;
    char host[256];
    struct pending_row *rows;
    size_t n, cap;
    vyre_results_writer_stats st;
};

static void destroy(vyre_results *db)
{
    if (db->store)
        db->store->ops->close(db->store);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

/* The location vyre_results_open(NULL) takes into loc: see vyre/results.h. */
static int open_default(char *loc, size_t size, vyre_error *err)
{
    int is_default = 0;
    int rc = vyre_results_locate(loc, size, &is_default, err);
    if (rc || !is_default)
        return rc;
    char *slash = strrchr(loc, '/');
    *slash = '\0';
    rc = vyre__mkdirs(loc, 0700, err);
    *slash = '/';
    return rc;
}

/* "host=db password=..." (libpq's key=value form): one of libpq's
 * connection keywords then '=' at the start, and no '/'. Never a file to
 * create: its name would keep the password. */
static int looks_like_conninfo(const char *path)
{
    static const char *const keys[] = {"host",    "hostaddr", "port",           "dbname",
                                       "user",    "password", "passfile",       "service",
                                       "sslmode", "options",  "connect_timeout"};
    const char *p = path + strspn(path, " \t");
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
    if (!n || p[n + strspn(p + n, " \t")] != '=' || strchr(path, '/'))
        return 0;
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(keys); i++)
        if (strlen(keys[i]) == n && strncmp(p, keys[i], n) == 0)
            return 1;
    return 0;
}

int vyre_results_open(const char *path, vyre_results **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!out || (path && !*path))
        return vyre__fail(err, VYRE_EINVAL, "pass a path, or NULL for the default",
                          "bad arguments to open the results database");
    char def[VYRE_RESULTS_LOCATION_MAX];
    if (!path) {
        int rc = open_default(def, sizeof def, err);
        if (rc)
            return rc;
        path = def;
    }
    char shown[VYRE_RESULTS_LOCATION_MAX];
    vyre_results_mask(path, shown, sizeof shown);
    if (looks_like_conninfo(path))
        return vyre__fail(err, VYRE_EINVAL,
                          "write the server as a URL, postgresql://user@host:port/dbname (the "
                          "password in password-file=PATH or ~/.pgpass); a file whose name "
                          "holds '=' is named ./NAME",
                          "results database '%s' looks like a libpq key=value string, which "
                          "vyre does not take",
                          shown);
    size_t len = strlen(shown);
    vyre_results *db = calloc(1, sizeof *db + len + 1);
    if (!db)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening '%s'", shown);
    memcpy(db->path, shown, len + 1);
    if (pthread_mutex_init(&db->mu, NULL) != 0) {
        free(db);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create a mutex for '%s'", shown);
    }
    int rc = vyre_results_is_url(path) ? vyre__store_pg_open(path, &db->store, err)
                                       : vyre__store_sqlite_open(path, &db->store, err);
    if (rc) {
        destroy(db);
        return rc;
    }
    /* Rows an older vyre wrote with a password in them are masked now;
     * a store this role may only read keeps them (every read masks). */
    vyre__runs_mask_stored(db, NULL);
    *out = db;
    return VYRE_OK;
}

void vyre_results_close(vyre_results *db)
{
    if (db)
        destroy(db);
}

const char *vyre_results_path(const vyre_results *db)
{
    return db ? db->path : NULL;
}

const char *vyre_results_engine(const vyre_results *db)
{
    return db ? db->store->ops->engine : NULL;
}

void vyre_results_write_stats(vyre_results *db, uint64_t *transactions, int64_t *ns)
{
    uint64_t n = 0;
    int64_t t = 0;
    if (db) {
        pthread_mutex_lock(&db->mu);
        n = db->tx_count;
        t = db->tx_ns;
        pthread_mutex_unlock(&db->mu);
    }
    if (transactions)
        *transactions = n;
    if (ns)
        *ns = t;
}

/* ---- the timings writer ----------------------------------------------------- */

int vyre_results_writer_new(vyre_results *db, int64_t run_id, vyre_results_writer **out,
                            vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!db || !out || run_id < 0)
        return vyre__fail(err, VYRE_EINVAL, "pass an open database and a run id >= 0",
                          "bad arguments to create a timings writer");
    vyre_results_writer *w = calloc(1, sizeof *w);
    if (!w)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating a timings writer");
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create a mutex for a timings writer");
    }
    w->db = db;
    w->run_id = run_id;
    w->pid = (int64_t)getpid();
    w->session_ns = vyre__unix_ns();
    if (gethostname(w->host, sizeof w->host) != 0)
        vyre__strlcpy(w->host, "unknown", sizeof w->host);
    w->host[sizeof w->host - 1] = '\0';
    *out = w;
    return VYRE_OK;
}

static void bind_u32_or_null(vyre__stmt *st, int i, int applies, uint32_t v)
{
    if (applies)
        vyre__stmt_int64(st, i, (int64_t)v);
    else
        vyre__stmt_null(st, i);
}

static void bind_row(const vyre_results_writer *w, vyre__stmt *st, const struct pending_row *r)
{
    const vyre_activity *a = &r->a;
    int kernel = a->kind == VYRE_ACTIVITY_KERNEL;
    int copy = a->kind == VYRE_ACTIVITY_MEMCPY;
    int device_op = kernel || copy || a->kind == VYRE_ACTIVITY_MEMSET;
    int nvtx = a->kind == VYRE_ACTIVITY_MARKER || a->kind == VYRE_ACTIVITY_RANGE;
    if (w->run_id > 0)
        vyre__stmt_int64(st, 1, w->run_id);
    else
        vyre__stmt_null(st, 1);
    vyre__stmt_text(st, 2, w->host, strlen(w->host));
    vyre__stmt_int64(st, 3, w->pid);
    vyre__stmt_int64(st, 4, w->session_ns);
    const char *kind = vyre_activity_kind_name(a->kind);
    vyre__stmt_text(st, 5, kind, strlen(kind));
    vyre__stmt_text(st, 6, a->name, strnlen(a->name, sizeof a->name));
    if (nvtx)
        vyre__stmt_text(st, 7, a->domain, strnlen(a->domain, sizeof a->domain));
    else
        vyre__stmt_null(st, 7);
    vyre__stmt_int64(st, 8, (int64_t)a->start_ns);
    vyre__stmt_int64(st, 9, (int64_t)a->end_ns);
    vyre__stmt_int64(st, 10, a->end_ns > a->start_ns ? (int64_t)(a->end_ns - a->start_ns) : 0);
    for (int d = 0; d < 3; d++) {
        bind_u32_or_null(st, 11 + d, kernel, a->grid[d]);
        bind_u32_or_null(st, 14 + d, kernel, a->block[d]);
    }
    bind_u32_or_null(st, 17, device_op, a->stream_id);
    bind_u32_or_null(st, 18, device_op, a->device_id);
    if (copy || a->kind == VYRE_ACTIVITY_MEMSET)
        vyre__stmt_int64(st, 19, (int64_t)a->bytes);
    else
        vyre__stmt_null(st, 19);
    const char *ck = vyre_copy_kind_name(a->copy_kind);
    if (copy)
        vyre__stmt_text(st, 20, ck, strlen(ck));
    else
        vyre__stmt_null(st, 20);
    bind_u32_or_null(st, 21, a->correlation_id != 0, a->correlation_id);
    if (a->has_payload && a->payload <= (uint64_t)INT64_MAX)
        vyre__stmt_int64(st, 22, (int64_t)a->payload);
    else
        vyre__stmt_null(st, 22);
    vyre__stmt_int64(st, 23, r->created_ns);
}

/* flush_locked's transaction: every queued row, through one statement. */
static int flush_tx(vyre_results *db, void *arg, vyre_error *err)
{
    vyre_results_writer *w = arg;
    vyre__stmt *st = NULL;
    int rc = vyre__stmt_prepare(db->store, k_insert_sql, &st, err);
    for (size_t i = 0; !rc && i < w->n; i++) {
        bind_row(w, st, &w->rows[i]);
        int r = vyre__stmt_step(st, "write timings to", err);
        rc = r < 0 ? r : 0;
        vyre__stmt_reset(st);
    }
    vyre__stmt_finalize(st);
    return rc;
}

/* Under w->mu. One transaction per flush. */
static int flush_locked(vyre_results_writer *w, vyre_error *err)
{
    if (!w->n)
        return VYRE_OK;
    int rc = vyre__results_tx(w->db, "write timings to", flush_tx, w, err);
    if (rc) {
        w->st.flush_failures++;
        return rc;
    }
    w->st.rows_written += w->n;
    w->st.flushes++;
    w->n = 0;
    return VYRE_OK;
}

static int fits_i64(const vyre_activity *a)
{
    return a->start_ns <= (uint64_t)INT64_MAX && a->end_ns <= (uint64_t)INT64_MAX &&
           a->bytes <= (uint64_t)INT64_MAX;
}

static int add_locked(vyre_results_writer *w, const vyre_activity *recs, size_t n, vyre_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!fits_i64(&recs[i])) {
            w->st.rows_dropped += n;
            return vyre__fail(err, VYRE_ERANGE, "pass times and sizes below 2^63",
                              "timings record %zu ('%s') has a value above INT64_MAX", i,
                              recs[i].name);
        }
    int64_t now = vyre__unix_ns();
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == VYRE_ACTIVITY_NONE)
            continue;
        if (w->n == w->cap) {
            if (w->cap >= VYRE_RESULTS_PENDING_MAX) {
                w->st.rows_dropped++;
                continue;
            }
            size_t cap = w->cap ? w->cap * 2 : 256;
            if (cap > VYRE_RESULTS_PENDING_MAX)
                cap = VYRE_RESULTS_PENDING_MAX;
            struct pending_row *p = realloc(w->rows, cap * sizeof *p);
            if (!p) {
                w->st.rows_dropped += n - i;
                return vyre__fail(err, VYRE_ENOMEM, NULL,
                                  "out of memory queueing timings rows (%zu queued)", w->n);
            }
            w->rows = p;
            w->cap = cap;
        }
        w->rows[w->n].a = recs[i];
        w->rows[w->n].created_ns = now;
        w->n++;
        kept++;
    }
    w->st.rows_added += kept;
    if (w->n >= VYRE_RESULTS_BATCH)
        return flush_locked(w, err);
    return VYRE_OK;
}

int vyre_results_writer_add(vyre_results_writer *w, const vyre_activity *recs, size_t n,
                            vyre_error *err)
{
    if (!w || (!recs && n))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_writer_add: NULL argument");
    pthread_mutex_lock(&w->mu);
    int rc = add_locked(w, recs, n, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int vyre_results_writer_flush(vyre_results_writer *w, vyre_error *err)
{
    if (!w)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_writer_flush: NULL writer");
    pthread_mutex_lock(&w->mu);
    int rc = flush_locked(w, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void vyre_results_writer_sink(const vyre_activity *recs, size_t n, void *writer)
{
    vyre_results_writer *w = writer;
    if (!w || !recs)
        return;
    vyre_error e;
    vyre_error_clear(&e);
    pthread_mutex_lock(&w->mu);
    int rc = add_locked(w, recs, n, &e);
    if (rc) {
        w->st.last_error = rc;
        vyre__strlcpy(w->st.last_message, e.message, sizeof w->st.last_message);
    }
    pthread_mutex_unlock(&w->mu);
}

void vyre_results_writer_stats_get(vyre_results_writer *w, vyre_results_writer_stats *out)
{
    if (!out)
        return;
    if (!w) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    out->rows_pending = w->n;
    pthread_mutex_unlock(&w->mu);
}

void vyre_results_writer_free(vyre_results_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    flush_locked(w, NULL);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    free(w->rows);
    free(w);
}
