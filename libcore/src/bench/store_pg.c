/*
 * store_pg.c - the results store on a PostgreSQL server (store.h's
 * operations table over libpq, linked, not loaded at run time): many
 * machines write one history at once.
 *
 * Same schema (db/results_vN.sql through store_dialect.c's rules), same
 * transactions (every write of runs_db.c and every timings flush is one
 * BEGIN ... COMMIT: a server that dies mid-run loses the transaction in
 * flight whole, never half of it), same run states. The schema version is
 * meta's 'schema_version' row (PostgreSQL has no PRAGMA user_version);
 * creating or migrating takes a transaction-scoped advisory lock, so many
 * machines opening a new database at once create it once. A database
 * whose tables are already up to date is only read at open: a read-only
 * role can read runs.
 *
 * Nothing waits without a bound: connect_timeout (10 s unless the URL
 * sets one), statement_timeout, lock_timeout and
 * idle_in_transaction_session_timeout on the session, TCP keepalives and
 * tcp_user_timeout so a server that vanishes without closing the
 * connection is given up on. A session the server dropped (a restart)
 * is sought again for up to 20 s: between two transactions before the
 * next one (pq_begin) or before a read (exec_stmt); inside one, before
 * its COMMIT was sent, the caller does the transaction again once the
 * session is back (pq_again, vyre__results_tx). One dropped while its
 * COMMIT was on the wire ends with an error: it may have been written.
 * libpq's notices are dropped (libcore never prints). Parameters are sent
 * as text; the server infers their types from the statement, so the
 * portable SQL needs no casts.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store.h"
#include "bench/store_dialect.h"
#include "bench/store_url.h"

#define MAX_PARAMS 64 /* a points row copied whole has 36 */
#define SESSION_SQL                                                                                \
    "SET statement_timeout = '30s'; SET lock_timeout = '10s'; "                                    \
    "SET idle_in_transaction_session_timeout = '60s'; SET client_min_messages = warning"
/* pg_advisory_xact_lock key of schema changes: the application id ("vyrs"). */
#define SCHEMA_LOCK "SELECT pg_advisory_xact_lock(1987670643)"

typedef struct pg_store {
    vyre__store base;
    PGconn *conn;
    int in_tx;                             /* between begin and commit or rollback */
    int lost_in_tx;                        /* the session went away inside it, before COMMIT */
    int queued;                            /* writes sent in pipeline mode, results not read yet */
    char shown[VYRE_RESULTS_LOCATION_MAX]; /* the URL, password masked */
} pg_store;

/* Writes queued before their results are read: a point's samples go in a
 * few round trips, not one each (measured on loopback: a cache --quick
 * run's 24 write transactions took 0.76-0.85 s one statement a round
 * trip, against 0.14-0.18 s on a local SQLite file). */
#define PIPELINE_MAX 256

typedef struct pgst {
    vyre__stmt base;
    pg_store *s;
    char *sql;
    char *params[MAX_PARAMS];
    int nparams;
    PGresult *res;
    int row, nrows;
    int deferrable; /* an INSERT, UPDATE or DELETE without RETURNING */
    int read;       /* a SELECT: sent again as it is, it changes nothing */
} pgst;

/* ---- errors -------------------------------------------------------------------- */

/* The first line of libpq's message, without "ERROR:  " or "FATAL:  ". */
static void first_line(const char *msg, char *buf, size_t size)
{
    const char *m = msg ? msg : "";
    for (const char *pre = NULL; (pre = strstr(m, ":  ")) && pre - m < 10;)
        m = pre + 3;
    snprintf(buf, size, "%.*s", (int)strcspn(m, "\n"), m);
}

static int code_for_state(const char *state, const char **hint)
{
    static const struct {
        const char *state;
        int code;
        const char *hint;
    } k[] = {
        {"42501", VYRE_EPERM,
         "the role lacks a privilege on the vyre tables: grant it INSERT, UPDATE and DELETE on "
         "them (and USAGE on their sequences) to write, SELECT to read, or name another role in "
         "the URL"},
        {"25006", VYRE_EROFS, "the server is read-only (a standby): name the primary in the URL"},
        {"57014", VYRE_EBUSY, "a statement ran past statement_timeout: the server is overloaded"},
        {"55P03", VYRE_EBUSY, "another session held a lock past lock_timeout: retry"},
        {"53100", VYRE_ENOSPC, "the server's disk is full"},
        {"28P01", VYRE_EPERM, NULL},
        {"28000", VYRE_EPERM, NULL},
    };
    for (size_t i = 0; state && i < VYRE_ARRAY_SIZE(k); i++)
        if (strcmp(state, k[i].state) == 0) {
            *hint = k[i].hint;
            return k[i].code;
        }
    *hint = NULL;
    return VYRE_EDB;
}

/* Fills err for a failed statement (res may be NULL): a connection lost
 * is VYRE_EREMOTE, a server error is mapped by its SQLSTATE. */
static int pg_fail(pg_store *s, const PGresult *res, const char *what, vyre_error *err)
{
    char msg[512];
    first_line(res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                   : PQerrorMessage(s->conn),
               msg, sizeof msg);
    if (PQstatus(s->conn) == CONNECTION_BAD) {
        /* in_tx is cleared before COMMIT is sent: a session lost while the
         * COMMIT was on the wire leaves the transaction's fate unknown. */
        s->lost_in_tx = s->in_tx;
        return vyre__fail(err, VYRE_EREMOTE,
                          "the server went away: what was committed before is kept, the "
                          "transaction in flight was not written; check the server and retry",
                          "cannot %s results database '%s': connection lost: %s", what, s->shown,
                          msg);
    }
    const char *hint = NULL;
    int code = code_for_state(res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL, &hint);
    return vyre__fail(err, code, hint ? hint : "check the server's log for the statement",
                      "cannot %s results database '%s': %s", what, s->shown, msg);
}

/* PQexec of sql expecting no rows: 0 or pg_fail. */
static int pg_exec(pg_store *s, const char *sql, const char *what, vyre_error *err)
{
    PGresult *res = PQexec(s->conn, sql);
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    int rc = t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK ? VYRE_OK : pg_fail(s, res, what, err);
    PQclear(res);
    return rc;
}

/* ---- statements ------------------------------------------------------------------ */

static const vyre__store_ops k_ops;

static int pq_prepare(vyre__store *base, const char *sql, vyre__stmt **out, vyre_error *err)
{
    *out = NULL;
    pgst *st = calloc(1, sizeof *st);
    if (st)
        st->sql = vyre__pg_sql(sql, 0);
    if (!st || !st->sql) {
        free(st);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory preparing a statement");
    }
    st->base.ops = &k_ops;
    st->s = (pg_store *)base;
    st->row = -1;
    const char *q = st->sql + strspn(st->sql, " \t\n");
    st->deferrable = (strncmp(q, "INSERT", 6) == 0 || strncmp(q, "UPDATE", 6) == 0 ||
                      strncmp(q, "DELETE", 6) == 0) &&
                     !strstr(q, "RETURNING");
    st->read = strncmp(q, "SELECT", 6) == 0;
    *out = &st->base;
    return VYRE_OK;
}

/* Sets parameter i (1-based) to a copy of text (NULL: SQL NULL). */
static void set_param(vyre__stmt *base, int i, const char *z, size_t len)
{
    pgst *st = (pgst *)base;
    if (i < 1 || i > MAX_PARAMS)
        return;
    free(st->params[i - 1]);
    st->params[i - 1] = NULL;
    if (z) {
        st->params[i - 1] = malloc(len + 1);
        if (st->params[i - 1]) {
            memcpy(st->params[i - 1], z, len);
            st->params[i - 1][len] = '\0';
        }
    }
    if (i > st->nparams)
        st->nparams = i;
}

static void pq_bind_int64(vyre__stmt *st, int i, int64_t v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%" PRId64, v);
    set_param(st, i, b, (size_t)n);
}

static void pq_bind_double(vyre__stmt *st, int i, double v)
{
    char b[40];
    int n = snprintf(b, sizeof b, "%.17g", v); /* reads back to the same double */
    set_param(st, i, b, (size_t)n);
}

static void pq_bind_text(vyre__stmt *st, int i, const char *z, size_t len)
{
    set_param(st, i, z ? z : "", len);
}

static void pq_bind_null(vyre__stmt *st, int i)
{
    set_param(st, i, NULL, 0);
}

/* Reads the results of the queued writes and leaves pipeline mode: 0, or
 * the first failure (err NULL: ignored, for a rollback). */
static int drain(pg_store *s, const char *what, vyre_error *err)
{
    if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF)
        return VYRE_OK;
    int rc = VYRE_OK, nulls = 0;
    if (!PQpipelineSync(s->conn))
        rc = pg_fail(s, NULL, what, err);
    while (!rc || PQstatus(s->conn) == CONNECTION_OK) {
        PGresult *r = PQgetResult(s->conn);
        if (!r) {
            /* One NULL ends each query's results; more means nothing comes. */
            if (++nulls > s->queued + 1 || PQstatus(s->conn) != CONNECTION_OK)
                break;
            continue;
        }
        ExecStatusType t = PQresultStatus(r);
        if (t == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        if (!rc && t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK && t != PGRES_PIPELINE_ABORTED)
            rc = pg_fail(s, r, what, err);
        PQclear(r);
    }
    if (!rc && PQstatus(s->conn) != CONNECTION_OK)
        rc = pg_fail(s, NULL, what, err);
    s->queued = 0;
    PQexitPipelineMode(s->conn);
    return rc;
}

/* Sends a write of a transaction without waiting for its result (its
 * failure comes with the next read, or at commit: the transaction fails
 * whole either way). */
static int queue_write(pgst *st, const char *what, vyre_error *err)
{
    pg_store *s = st->s;
    if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF && !PQenterPipelineMode(s->conn))
        return pg_fail(s, NULL, what, err);
    if (!PQsendQueryParams(s->conn, st->sql, st->nparams, NULL, (const char *const *)st->params,
                           NULL, NULL, 0))
        return pg_fail(s, NULL, what, err);
    return ++s->queued >= PIPELINE_MAX ? drain(s, what, err) : VYRE_OK;
}

static int reconnect(pg_store *s);

/* PQexecParams of st. A read outside a transaction that finds the session
 * gone (the server restarted since the last statement) is sent again once
 * the session is back, as pq_begin does for a transaction. */
static PGresult *exec_stmt(pgst *st)
{
    pg_store *s = st->s;
    PGresult *res = PQexecParams(s->conn, st->sql, st->nparams, NULL,
                                 (const char *const *)st->params, NULL, NULL, 0);
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (t != PGRES_TUPLES_OK && st->read && !s->in_tx && PQstatus(s->conn) == CONNECTION_BAD &&
        reconnect(s) == 0) {
        PQclear(res);
        res = PQexecParams(s->conn, st->sql, st->nparams, NULL, (const char *const *)st->params,
                           NULL, NULL, 0);
    }
    return res;
}

static int pq_step(vyre__stmt *base, const char *what, vyre_error *err)
{
    pgst *st = (pgst *)base;
    if (!st->res && st->deferrable && st->s->in_tx)
        return queue_write(st, what, err);
    int rc = st->res ? VYRE_OK : drain(st->s, what, err);
    if (rc)
        return rc;
    if (!st->res) {
        st->res = exec_stmt(st);
        ExecStatusType t = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
        if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
            rc = pg_fail(st->s, st->res, what, err);
            PQclear(st->res);
            st->res = NULL;
            return rc;
        }
        st->nrows = t == PGRES_TUPLES_OK ? PQntuples(st->res) : 0;
        st->row = -1;
    }
    if (st->row + 1 >= st->nrows) {
        st->row = st->nrows;
        return 0;
    }
    st->row++;
    return 1;
}

static int valid(const pgst *st, int i)
{
    return st->res && st->row >= 0 && st->row < st->nrows && i >= 0 && i < PQnfields(st->res);
}

static int pq_is_null(vyre__stmt *base, int i)
{
    pgst *st = (pgst *)base;
    return !valid(st, i) || PQgetisnull(st->res, st->row, i);
}

static const char *pq_col_text(vyre__stmt *base, int i)
{
    pgst *st = (pgst *)base;
    return pq_is_null(base, i) ? NULL : PQgetvalue(st->res, st->row, i);
}

static int64_t pq_col_int64(vyre__stmt *st, int i)
{
    const char *z = pq_col_text(st, i);
    return z ? (int64_t)strtoll(z, NULL, 10) : 0;
}

static double pq_col_double(vyre__stmt *st, int i)
{
    const char *z = pq_col_text(st, i);
    return z ? strtod(z, NULL) : 0.0;
}

static void pq_reset(vyre__stmt *base)
{
    pgst *st = (pgst *)base;
    PQclear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
}

static void pq_finalize(vyre__stmt *base)
{
    pgst *st = (pgst *)base;
    pq_reset(base);
    for (int i = 0; i < MAX_PARAMS; i++)
        free(st->params[i]);
    free(st->sql);
    free(st);
}

/* ---- transactions ------------------------------------------------------------------ */

/* How long a session that went away is sought again (a server restart
 * takes a second or two; a failover longer). */
#define RECONNECT_NS (20ull * 1000000000ull)

/* The session, back after the server dropped it: PQreset (each attempt
 * bounded by connect_timeout), tried with a growing pause until
 * RECONNECT_NS have passed, and the session's settings again. 0 when it
 * is back. */
static int reconnect(pg_store *s)
{
    uint64_t end = vyre__mono_ns() + RECONNECT_NS;
    long pause_ms = 100;
    for (;;) {
        PQreset(s->conn);
        if (PQstatus(s->conn) == CONNECTION_OK) {
            PGresult *res = PQexec(s->conn, SESSION_SQL);
            int ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
            PQclear(res);
            if (ok)
                return 0;
        }
        if (vyre__mono_ns() >= end)
            return -1;
        struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        pause_ms = pause_ms < 1000 ? pause_ms * 2 : 2000;
    }
}

/* BEGIN. A session found gone here (the server restarted since the last
 * transaction) is sought again and BEGIN sent once more: nothing of this
 * transaction was sent yet, so nothing can be written twice. A session
 * lost inside a transaction is not: what it had sent is gone with it, and
 * the caller says so. */
static int pq_begin(vyre__store *base, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    s->lost_in_tx = 0;
    PGresult *res = PQexec(s->conn, "BEGIN");
    if ((!res || PQresultStatus(res) != PGRES_COMMAND_OK) && PQstatus(s->conn) == CONNECTION_BAD &&
        reconnect(s) == 0) {
        PQclear(res);
        res = PQexec(s->conn, "BEGIN");
    }
    int rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? VYRE_OK : pg_fail(s, res, what, err);
    PQclear(res);
    s->in_tx = !rc;
    return rc;
}

/* After a failed transaction: one the server dropped before COMMIT was
 * sent is gone whole (PostgreSQL rolls back a transaction whose session
 * ends), so once the session is back it can be done again. */
static int pq_again(vyre__store *base)
{
    pg_store *s = (pg_store *)base;
    int lost = s->lost_in_tx;
    s->lost_in_tx = 0;
    return lost && reconnect(s) == 0;
}

/* Advisory locks of vyre's writers, two-key form: (LOCK_CLASS, key). The
 * schema lock (SCHEMA_LOCK) is in the one-key space, which never overlaps. */
#define LOCK_CLASS 1987670627 /* "vyrc" */

static int pq_lock_key(vyre__store *base, uint32_t key, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    int rc = drain(s, what, err);
    if (rc)
        return rc;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d, %d)", LOCK_CLASS,
             (int32_t)key); /* int4 keys: the bits of key as signed */
    return pg_exec(s, sql, what, err);
}

static void pq_rollback(vyre__store *base)
{
    pg_store *s = (pg_store *)base;
    drain(s, "roll back", NULL);
    s->in_tx = 0;
    if (PQstatus(s->conn) == CONNECTION_OK && PQtransactionStatus(s->conn) != PQTRANS_IDLE)
        PQclear(PQexec(s->conn, "ROLLBACK"));
}

static int pq_commit(vyre__store *base, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    int drc = drain(s, what, err);
    if (drc) {
        pq_rollback(base);
        return drc;
    }
    s->in_tx = 0;
    PGresult *res = PQexec(s->conn, "COMMIT");
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    /* A transaction that failed earlier "commits" as ROLLBACK. */
    int rc = t == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0 ? VYRE_OK
             : t == PGRES_COMMAND_OK
                 ? vyre__fail(err, VYRE_EDB, NULL,
                              "cannot %s results database '%s': the transaction was rolled "
                              "back",
                              what, s->shown)
                 : pg_fail(s, res, what, err);
    PQclear(res);
    if (rc)
        pq_rollback(base);
    return rc;
}

static void pq_close(vyre__store *base)
{
    pg_store *s = (pg_store *)base;
    if (!s)
        return;
    PQfinish(s->conn);
    free(s);
}

static const vyre__store_ops k_ops = {
    .engine = "postgresql",
    .agg_open = "string_agg(DISTINCT ",
    .agg_close = ", ',')",
    .prepare = pq_prepare,
    .bind_int64 = pq_bind_int64,
    .bind_double = pq_bind_double,
    .bind_text = pq_bind_text,
    .bind_null = pq_bind_null,
    .step = pq_step,
    .is_null = pq_is_null,
    .col_int64 = pq_col_int64,
    .col_double = pq_col_double,
    .col_text = pq_col_text,
    .reset = pq_reset,
    .finalize = pq_finalize,
    .begin = pq_begin,
    .lock_key = pq_lock_key,
    .commit = pq_commit,
    .rollback = pq_rollback,
    .again = pq_again,
    .close = pq_close,
};

/* ---- the schema -------------------------------------------------------------------- */

/* The schema's state: *version 0 for an empty database; VYRE_ECORRUPT for
 * one with our table names but no vyre meta, VYRE_EVERSION for a newer
 * one. */
static int read_version(pg_store *s, int *version, vyre_error *err)
{
    *version = 0;
    /* pg_tables, not to_regclass: the catalog cache may still hold "no
     * such table" from before the lock was granted, a scan of the catalog
     * sees what committed meanwhile. */
    PGresult *res =
        PQexec(s->conn, "SELECT count(*) FILTER (WHERE tablename = 'meta'), count(*) "
                        "FILTER (WHERE tablename IN ('runs', 'timings', 'points')) "
                        "FROM pg_catalog.pg_tables WHERE schemaname = current_schema()");
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = pg_fail(s, res, "read", err);
        PQclear(res);
        return rc;
    }
    int meta = atoi(PQgetvalue(res, 0, 0)) > 0, ours = atoi(PQgetvalue(res, 0, 1)) > 0;
    PQclear(res);
    if (!meta && !ours)
        return VYRE_OK;
    const char *hint = "name another database (or a schema: options=-csearch_path=vyre) for "
                       "vyre's results; vyre never changes tables it did not create";
    if (!meta)
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "'%s' has tables named like vyre's but is not a vyre results database",
                          s->shown);
    res = PQexec(s->conn, "SELECT (SELECT value FROM meta WHERE name = 'schema'), (SELECT value "
                          "FROM meta WHERE name = 'schema_version')");
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = pg_fail(s, res, "read", err);
        PQclear(res);
        return rc;
    }
    int is_vyre = strcmp(PQgetvalue(res, 0, 0), "vyre results") == 0;
    *version = atoi(PQgetvalue(res, 0, 1));
    PQclear(res);
    if (!is_vyre || *version <= 0)
        return vyre__fail(err, VYRE_ECORRUPT, hint, "'%s' is not a vyre results database",
                          s->shown);
    if (*version > VYRE_RESULTS_SCHEMA_VERSION)
        return vyre__fail(err, VYRE_EVERSION, "use the vyre-tools release that wrote it (or newer)",
                          "results database '%s' has schema version %d, newer than the %d this "
                          "build supports",
                          s->shown, *version, VYRE_RESULTS_SCHEMA_VERSION);
    return VYRE_OK;
}

/* Runs the steps from version v, and records the new version. Inside the
 * caller's transaction. */
static int run_steps(pg_store *s, int v, vyre_error *err)
{
    for (int i = v; i < VYRE_RESULTS_SCHEMA_VERSION; i++) {
        char *sql = vyre__pg_sql(vyre__results_schema_steps[i], VYRE__PG_SCHEMA);
        if (!sql)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating the schema");
        int rc = pg_exec(s, sql, "create the schema of", err);
        free(sql);
        if (rc)
            return rc;
    }
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO meta (name, value) VALUES ('schema_version', '%d') ON CONFLICT (name) "
             "DO UPDATE SET value = EXCLUDED.value",
             VYRE_RESULTS_SCHEMA_VERSION);
    int rc = pg_exec(s, sql, "create the schema of", err);
    if (!rc && v == 0) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta (name, value) VALUES ('created_ns', '%" PRId64 "')",
                 vyre__unix_ns());
        rc = pg_exec(s, sql, "create the schema of", err);
    }
    return rc;
}

/* Creates or migrates the schema once, whoever else opens it at once. */
static int ensure_schema(pg_store *s, vyre_error *err)
{
    int v = 0;
    int rc = read_version(s, &v, err);
    if (rc || v == VYRE_RESULTS_SCHEMA_VERSION)
        return rc;
    rc = pg_exec(s, "BEGIN", "create the schema of", err);
    if (!rc)
        rc = pg_exec(s, SCHEMA_LOCK, "create the schema of", err);
    if (!rc)
        rc = read_version(s, &v, err); /* again, under the lock */
    if (!rc && v < VYRE_RESULTS_SCHEMA_VERSION)
        rc = run_steps(s, v, err);
    if (!rc)
        rc = pq_commit(&s->base, "create the schema of", err);
    else
        pq_rollback(&s->base);
    return rc;
}

/* ---- connecting ---------------------------------------------------------------------- */

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* libcore never prints */
}

static int connect_fail(pg_store *s, vyre_error *err)
{
    char msg[512];
    first_line(PQerrorMessage(s->conn), msg, sizeof msg);
    if (strstr(msg, "password authentication failed") || strstr(msg, "no password supplied") ||
        strstr(msg, "authentication failed"))
        return vyre__fail(err, VYRE_EPERM,
                          "check the password: the URL's, PGPASSFILE or ~/.pgpass (mode 0600), "
                          "or password-file=PATH (mode 0600)",
                          "cannot connect to results database '%s': %s", s->shown, msg);
    return vyre__fail(err, VYRE_EREMOTE,
                      "check the host and port, that the server runs and accepts TCP "
                      "connections from here (listen_addresses, pg_hba.conf); connect_timeout=N "
                      "in the URL bounds the wait",
                      "cannot connect to results database '%s': %s", s->shown, msg);
}

static void connect_params(const vyre__pg_url *u, const char **k, const char **v)
{
    size_t n = 0;
    /* Before dbname (the URL) so that the URL's own values win. */
    k[n] = "connect_timeout", v[n++] = "10";
    k[n] = "keepalives_idle", v[n++] = "10";
    k[n] = "keepalives_interval", v[n++] = "5";
    k[n] = "keepalives_count", v[n++] = "3";
    k[n] = "tcp_user_timeout", v[n++] = "30000";
    k[n] = "fallback_application_name", v[n++] = "vyre";
    k[n] = "dbname", v[n++] = u->url;
    if (u->password[0])
        k[n] = "password", v[n++] = u->password;
    k[n] = NULL, v[n] = NULL;
}

int vyre__store_pg_open(const char *url, vyre__store **out, vyre_error *err)
{
    *out = NULL;
    vyre__pg_url *u = calloc(1, sizeof *u);
    pg_store *s = calloc(1, sizeof *s);
    if (!u || !s) {
        free(u);
        free(s);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening a results database");
    }
    s->base.ops = &k_ops;
    int rc = vyre__pg_url_parse(url, u, err);
    vyre__strlcpy(s->shown, u->shown, sizeof s->shown);
    if (!rc) {
        const char *k[12], *v[12];
        connect_params(u, k, v);
        s->conn = PQconnectdbParams(k, v, 1);
        if (!s->conn)
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory connecting to '%s'", s->shown);
        else if (PQstatus(s->conn) != CONNECTION_OK)
            rc = connect_fail(s, err);
    }
    vyre__pg_url_release(u);
    free(u);
    if (!rc) {
        PQsetNoticeProcessor(s->conn, quiet, NULL);
        rc = pg_exec(s, SESSION_SQL, "set up a session on", err);
    }
    if (!rc)
        rc = ensure_schema(s, err);
    if (rc) {
        pq_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return VYRE_OK;
}
