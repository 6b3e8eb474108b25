/*
 * store_pg_stmt.c - the PostgreSQL store's statements (store.h's prepare,
 * bind, step, column and finalize calls): parameters sent as text, writes
 * queued in pipeline mode and drained in few round trips.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/store.h"
#include "bench/store_dialect.h"
#include "bench/store_pg_internal.h"

int vyre__pg_prepare(vyre__store *base, const char *sql, vyre__stmt **out, vyre_error *err)
{
    *out = NULL;
    pgst *st = calloc(1, sizeof *st);
    if (st)
        st->sql = vyre__pg_sql(sql, 0);
    if (!st || !st->sql) {
        free(st);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory preparing a statement");
    }
    st->base.ops = base->ops; /* the store's table (store_pg.c) */
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

void vyre__pg_bind_int64(vyre__stmt *st, int i, int64_t v)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%" PRId64, v);
    set_param(st, i, b, (size_t)n);
}

void vyre__pg_bind_double(vyre__stmt *st, int i, double v)
{
    char b[40];
    int n = snprintf(b, sizeof b, "%.17g", v); /* reads back to the same double */
    set_param(st, i, b, (size_t)n);
}

void vyre__pg_bind_text(vyre__stmt *st, int i, const char *z, size_t len)
{
    set_param(st, i, z ? z : "", len);
}

void vyre__pg_bind_null(vyre__stmt *st, int i)
{
    set_param(st, i, NULL, 0);
}

/* Reads the results of the queued writes and leaves pipeline mode: 0, or
 * the first failure (err NULL: ignored, for a rollback). */
int vyre__pg_drain(pg_store *s, const char *what, vyre_error *err)
{
    if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF)
        return VYRE_OK;
    int rc = VYRE_OK, nulls = 0;
    /* One deadline for the queued writes and their sync, wall clock. */
    uint64_t deadline = vyre__pg_deadline_in(s, s->statement_ns);
    if (!PQpipelineSync(s->conn))
        rc = vyre__pg_fail(s, NULL, what, err);
    else
        rc = vyre__pg_flush_out(s, deadline, what, err);
    while (s->conn && (!rc || PQstatus(s->conn) == CONNECTION_OK)) {
        int wrc = vyre__pg_await_result(s, deadline, what, rc ? NULL : err);
        if (wrc) {
            rc = rc ? rc : wrc;
            break;
        }
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
            rc = vyre__pg_fail(s, r, what, err);
        PQclear(r);
    }
    if (!rc && PQstatus(s->conn) != CONNECTION_OK)
        rc = vyre__pg_fail(s, NULL, what, err);
    s->queued = 0;
    if (s->conn)
        PQexitPipelineMode(s->conn);
    return rc;
}

/* Sends a write of a transaction without waiting for its result (its
 * failure comes with the next read, or at commit: the transaction fails
 * whole either way). */
static int queue_write(pgst *st, const char *what, vyre_error *err)
{
    pg_store *s = st->s;
    if (!s->conn || (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF && !PQenterPipelineMode(s->conn)))
        return vyre__pg_fail(s, NULL, what, err);
    if (!PQsendQueryParams(s->conn, st->sql, st->nparams, NULL, (const char *const *)st->params,
                           NULL, NULL, 0))
        return vyre__pg_fail(s, NULL, what, err);
    int rc = vyre__pg_flush_out(s, vyre__pg_deadline_in(s, s->statement_ns), what, err);
    if (rc)
        return rc;
    return ++s->queued >= PIPELINE_MAX ? vyre__pg_drain(s, what, err) : VYRE_OK;
}

/* PQexecParams of st. A read outside a transaction that finds the session
 * gone (the server restarted since the last statement) is sent again once
 * the session is back, as pq_begin does for a transaction. */
static int exec_stmt(pgst *st, const char *what, vyre_error *err)
{
    pg_store *s = st->s;
    const char *const *params = (const char *const *)st->params;
    int rc = vyre__pg_exec_bounded(s, st->sql, st->nparams, params, &st->res, what, err);
    ExecStatusType t = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
    if (!rc && t != PGRES_TUPLES_OK && st->read && !s->in_tx && vyre__pg_session_gone(s, st->res) &&
        vyre__pg_reconnect(s) == 0) {
        PQclear(st->res);
        st->res = NULL;
        rc = vyre__pg_exec_bounded(s, st->sql, st->nparams, params, &st->res, what, err);
    }
    return rc;
}

int vyre__pg_step(vyre__stmt *base, const char *what, vyre_error *err)
{
    pgst *st = (pgst *)base;
    if (!st->res && st->deferrable && st->s->in_tx)
        return queue_write(st, what, err);
    int rc = st->res ? VYRE_OK : vyre__pg_drain(st->s, what, err);
    if (rc)
        return rc;
    if (!st->res) {
        if ((rc = exec_stmt(st, what, err)))
            return rc;
        ExecStatusType t = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
        if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
            rc = vyre__pg_fail(st->s, st->res, what, err);
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

int vyre__pg_is_null(vyre__stmt *base, int i)
{
    pgst *st = (pgst *)base;
    return !valid(st, i) || PQgetisnull(st->res, st->row, i);
}

const char *vyre__pg_col_text(vyre__stmt *base, int i)
{
    pgst *st = (pgst *)base;
    return vyre__pg_is_null(base, i) ? NULL : PQgetvalue(st->res, st->row, i);
}

int64_t vyre__pg_col_int64(vyre__stmt *st, int i)
{
    const char *z = vyre__pg_col_text(st, i);
    return z ? (int64_t)strtoll(z, NULL, 10) : 0;
}

double vyre__pg_col_double(vyre__stmt *st, int i)
{
    const char *z = vyre__pg_col_text(st, i);
    return z ? strtod(z, NULL) : 0.0;
}

void vyre__pg_reset(vyre__stmt *base)
{
    pgst *st = (pgst *)base;
    PQclear(st->res);
    st->res = NULL;
    st->row = -1;
    st->nrows = 0;
}

void vyre__pg_finalize(vyre__stmt *base)
{
    pgst *st = (pgst *)base;
    vyre__pg_reset(base);
    for (int i = 0; i < MAX_PARAMS; i++)
        free(st->params[i]);
    free(st->sql);
    free(st);
}
