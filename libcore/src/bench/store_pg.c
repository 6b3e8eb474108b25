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
 * Nothing waits without a bound, and the bound is ours, not the
 * server's: every connect and every statement goes through libpq's
 * asynchronous calls (PQconnectStart/PQconnectPoll, PQsendQuery*,
 * PQconsumeInput/PQisBusy) and poll() with a wall-clock deadline taken
 * when it starts (VYRE__PG_CONNECT_S, VYRE__PG_STATEMENT_S; the URL's
 * timeout=S sets both, connect_timeout=N the connect's), so neither a
 * stuck backend, a silent server nor a flood of notices extends it. Past
 * the deadline the statement is cancelled (PQcancel, itself bounded: it
 * runs on a short-lived thread that is given CANCEL_WAIT_MS) and the
 * connection closed; the store is then dead and every later call fails
 * at once with the same error. The process's interrupt flag
 * (vyre_results_set_interrupt) ends a wait within POLL_SLICE_MS the same
 * way with VYRE_EINTR. Waits that begin once the flag is up (the caller
 * storing what it finished and marking its run interrupted) all end
 * within GRACE_NS of the first of them; a store dropped by the interrupt
 * gets one more connection in that time (else the run's next reader on
 * this host marks it interrupted).
 * statement_timeout, lock_timeout and idle_in_transaction_session_timeout
 * on the session, TCP keepalives and tcp_user_timeout stay as the
 * server's own bounds. A session the server dropped (a restart)
 * is sought again for up to 20 s (the URL's reconnect=S; 0: never):
 * between two transactions before the next one (pq_begin) or before a
 * read (exec_stmt); inside one, before its COMMIT was sent, the caller
 * does the transaction again once the session is back (pq_again,
 * vyre__results_tx). One dropped while its COMMIT was on the wire is
 * settled once the session is back: the server says whether it committed
 * (txid_status); rolled back, it is done again; when that cannot be told,
 * it ends with an error (it may have been written).
 * libpq's notices are dropped (libcore never prints). Parameters are sent
 * as text; the server infers their types from the statement, so the
 * portable SQL needs no casts.
 *
 * This file holds the transactions, the schema and the open; the errors
 * are store_pg_error.c's, the bounded waits store_pg_wait.c's, connecting
 * store_pg_connect.c's and the statements store_pg_stmt.c's (what they
 * share: store_pg_internal.h).
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store.h"
#include "bench/store_dialect.h"
#include "bench/store_pg_internal.h"
#include "bench/store_url.h"

/* ---- transactions ------------------------------------------------------------------ */

/* BEGIN. A session found gone here (the server restarted since the last
 * transaction) is sought again and BEGIN sent once more: nothing of this
 * transaction was sent yet, so nothing can be written twice. A session
 * lost inside a transaction is not: what it had sent is gone with it, and
 * the caller says so. */
static int pq_begin(vyre__store *base, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    s->lost_in_tx = 0;
    vyre__pg_revive_in_grace(s);
    PGresult *res = NULL;
    int rc = vyre__pg_exec_bounded(s, "BEGIN", -1, NULL, &res, what, err);
    if (!rc && (!res || PQresultStatus(res) != PGRES_COMMAND_OK) && vyre__pg_session_gone(s, res) &&
        vyre__pg_reconnect(s) == 0) {
        PQclear(res);
        res = NULL;
        rc = vyre__pg_exec_bounded(s, "BEGIN", -1, NULL, &res, what, err);
    }
    if (!rc)
        rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? VYRE_OK
                                                            : vyre__pg_fail(s, res, what, err);
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
    return lost && vyre__pg_reconnect(s) == 0;
}

/* Advisory locks of vyre's writers, two-key form: (LOCK_CLASS, key). The
 * schema lock (SCHEMA_LOCK) is in the one-key space, which never overlaps. */
#define LOCK_CLASS 1987670627 /* "vyrc" */

static int pq_lock_key(vyre__store *base, uint32_t key, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    int rc = vyre__pg_drain(s, what, err);
    if (rc)
        return rc;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d, %d)", LOCK_CLASS,
             (int32_t)key); /* int4 keys: the bits of key as signed */
    return vyre__pg_exec(s, sql, what, err);
}

static void pq_rollback(vyre__store *base)
{
    pg_store *s = (pg_store *)base;
    vyre__pg_drain(s, "roll back", NULL);
    s->in_tx = 0;
    PGresult *res = NULL;
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK &&
        PQtransactionStatus(s->conn) != PQTRANS_IDLE &&
        vyre__pg_exec_bounded(s, "ROLLBACK", -1, NULL, &res, "roll back", NULL) == 0)
        PQclear(res);
}

/* The open transaction's id (txid_current(), digits) into xid, asked
 * before COMMIT is sent so that a session lost while the COMMIT is on the
 * wire can be settled once it is back (commit_settle). 0, or the error (a
 * session lost here was lost inside the transaction: done again). */
static int tx_id(pg_store *s, char xid[static 24], const char *what, vyre_error *err)
{
    PGresult *res = NULL;
    int rc = vyre__pg_exec_bounded(s, "SELECT txid_current()", -1, NULL, &res, what, err);
    if (rc)
        return rc;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        rc = vyre__pg_fail(s, res, what, err);
    } else {
        const char *v = PQgetvalue(res, 0, 0);
        size_t n = strspn(v, "0123456789");
        if (n && !v[n] && n < 24)
            memcpy(xid, v, n + 1);
        else
            rc = vyre__fail(err, VYRE_EDB, "is it a PostgreSQL server (10 or later)?",
                            "cannot %s results database '%s': txid_current() is no number", what,
                            s->shown);
    }
    PQclear(res);
    return rc;
}

/* After a session lost while its COMMIT was on the wire: once the session
 * is back, the server says what became of the transaction (txid_status,
 * PostgreSQL 10 and later). 0: it committed; 1: it did not (rolled back
 * whole: the caller may do it again); -1: that cannot be told. CI saw a
 * server stopped between two points (pg_ctl stop -m fast) end a run with
 * "connection lost" here; a deferred trigger that ends the session at
 * COMMIT shows it every time (tests/cli/test_bench_pg.c). */
static int commit_settle(pg_store *s, const char *xid)
{
    if (vyre__pg_reconnect(s) != 0)
        return -1;
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT txid_status(%s)", xid);
    PGresult *res = NULL;
    int st = -1;
    if (vyre__pg_exec_bounded(s, sql, -1, NULL, &res, "read a transaction's fate", NULL) == 0 &&
        res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
        !PQgetisnull(res, 0, 0)) {
        const char *v = PQgetvalue(res, 0, 0);
        st = strcmp(v, "committed") == 0 ? 0 : strcmp(v, "aborted") == 0 ? 1 : -1;
    }
    PQclear(res);
    return st;
}

static int pq_commit(vyre__store *base, const char *what, vyre_error *err)
{
    pg_store *s = (pg_store *)base;
    char xid[24];
    int drc = vyre__pg_drain(s, what, err);
    if (!drc)
        drc = tx_id(s, xid, what, err);
    if (drc) {
        pq_rollback(base);
        return drc;
    }
    s->in_tx = 0;
    PGresult *res = NULL;
    int wrc = vyre__pg_exec_bounded(s, "COMMIT", -1, NULL, &res, what, err);
    if (wrc)
        return wrc; /* the wait was given up: the store is dropped */
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (t != PGRES_COMMAND_OK && vyre__pg_session_gone(s, res)) {
        /* Lost with the COMMIT on the wire: settled once the session is back. */
        int rc = vyre__pg_fail(s, res, what, err);
        PQclear(res);
        int st = commit_settle(s, xid);
        if (st == 0)
            return VYRE_OK;
        s->lost_in_tx = st == 1; /* rolled back whole: pq_again lets the caller redo it */
        return rc;
    }
    /* A transaction that failed earlier "commits" as ROLLBACK. */
    int rc = t == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0 ? VYRE_OK
             : t == PGRES_COMMAND_OK
                 ? vyre__fail(err, VYRE_EDB, NULL,
                              "cannot %s results database '%s': the transaction was rolled "
                              "back",
                              what, s->shown)
                 : vyre__pg_fail(s, res, what, err);
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
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(s->keys); i++) {
        if (s->vals[i] && strcmp(s->keys[i], "password") == 0)
            vyre__pg_wipe(s->vals[i]);
        free(s->keys[i]);
        free(s->vals[i]);
    }
    free(s);
}

static const vyre__store_ops k_ops = {
    .engine = "postgresql",
    .agg_open = "string_agg(DISTINCT ",
    .agg_close = ", ',')",
    .prepare = vyre__pg_prepare,
    .bind_int64 = vyre__pg_bind_int64,
    .bind_double = vyre__pg_bind_double,
    .bind_text = vyre__pg_bind_text,
    .bind_null = vyre__pg_bind_null,
    .step = vyre__pg_step,
    .is_null = vyre__pg_is_null,
    .col_int64 = vyre__pg_col_int64,
    .col_double = vyre__pg_col_double,
    .col_text = vyre__pg_col_text,
    .reset = vyre__pg_reset,
    .finalize = vyre__pg_finalize,
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
    PGresult *res = NULL;
    int wrc = vyre__pg_exec_bounded(s,
                                    "SELECT count(*) FILTER (WHERE tablename = 'meta'), count(*) "
                                    "FILTER (WHERE tablename IN ('runs', 'timings', 'points')) "
                                    "FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                                    -1, NULL, &res, "read", err);
    if (wrc)
        return wrc;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = vyre__pg_fail(s, res, "read", err);
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
    wrc = vyre__pg_exec_bounded(
        s,
        "SELECT (SELECT value FROM meta WHERE name = 'schema'), (SELECT value "
        "FROM meta WHERE name = 'schema_version')",
        -1, NULL, &res, "read", err);
    if (wrc)
        return wrc;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = vyre__pg_fail(s, res, "read", err);
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
        int rc = vyre__pg_exec(s, sql, "create the schema of", err);
        free(sql);
        if (rc)
            return rc;
    }
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO meta (name, value) VALUES ('schema_version', '%d') ON CONFLICT (name) "
             "DO UPDATE SET value = EXCLUDED.value",
             VYRE_RESULTS_SCHEMA_VERSION);
    int rc = vyre__pg_exec(s, sql, "create the schema of", err);
    if (!rc && v == 0) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta (name, value) VALUES ('created_ns', '%" PRId64 "')",
                 vyre__unix_ns());
        rc = vyre__pg_exec(s, sql, "create the schema of", err);
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
    rc = vyre__pg_exec(s, "BEGIN", "create the schema of", err);
    if (!rc)
        rc = vyre__pg_exec(s, SCHEMA_LOCK, "create the schema of", err);
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
    s->statement_ns = (uint64_t)(u->statement_s * 1e9);
    s->connect_ns = (uint64_t)(u->connect_s * 1e9);
    s->reconnect_ns = (uint64_t)(u->reconnect_s * 1e9);
    if (!rc)
        rc = vyre__pg_check_url(s, u, err);
    if (!rc)
        rc = vyre__pg_keep_params(s, u, err);
    vyre__pg_url_release(u);
    free(u);
    if (!rc)
        rc = vyre__pg_connect_fresh(s, err);
    if (!rc)
        rc = ensure_schema(s, err);
    if (rc) {
        pq_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return VYRE_OK;
}
