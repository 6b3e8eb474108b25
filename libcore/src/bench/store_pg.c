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
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* How often a wait looks at the interrupt flag (a signal also ends poll
 * early), how long a cancel request and the after-interrupt grace get. */
#define POLL_SLICE_MS  100
#define CANCEL_WAIT_MS 300
#define GRACE_NS       (500ull * 1000000ull)

typedef struct pg_store {
    vyre__store base;
    PGconn *conn;                          /* NULL once dropped (a deadline or an interrupt) */
    int in_tx;                             /* between begin and commit or rollback */
    int lost_in_tx;                        /* the session went away inside it, before COMMIT */
    int queued;                            /* writes sent in pipeline mode, results not read yet */
    uint64_t statement_ns, connect_ns;     /* the client-side deadlines */
    int dead;                              /* the connection was dropped: its VYRE_E* code */
    uint64_t grace_end;                    /* after an interrupt: every wait ends by then */
    int grace_used;                        /* the one connect after an interrupt was made */
    vyre_error dead_err;                   /* why it was dropped */
    char server[300];                      /* "host:port", for messages */
    char shown[VYRE_RESULTS_LOCATION_MAX]; /* the URL, password masked */
    char *keys[16], *vals[16];             /* the connection's parameters, for a fresh connect */
} pg_store;

/* Set by the front end (vyre_results_set_interrupt); read in waits. */
static const volatile sig_atomic_t *g_interrupt;

void vyre_results_set_interrupt(const volatile sig_atomic_t *flag)
{
    g_interrupt = flag;
}

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

/* Whether msg holds any piece of secret PIECE bytes long (all of a
 * shorter one): libpq echoes parts of what it was given, split where it
 * split them ('@', '%', ':'). check_url already keeps libpq's parse
 * errors and a password split into the host from being shown; this is
 * the last line. Shorter pieces would withhold libpq's own words
 * ("password authentication failed" holds "assw"). */
#define PIECE 6
static int holds_part_of(const char *msg, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0, len = n < PIECE ? n : PIECE;
    for (size_t i = 0; len && i + len <= n; i++) {
        char piece[PIECE + 1];
        memcpy(piece, secret + i, len);
        piece[len] = '\0';
        if (strstr(msg, piece))
            return 1;
    }
    return 0;
}

/* The first line of libpq's message, without "ERROR:  " or "FATAL:  ";
 * withheld whole when it holds any part of the password. */
static void first_line(PGconn *conn, const char *msg, char *buf, size_t size)
{
    const char *m = msg ? msg : "";
    for (const char *pre = NULL; (pre = strstr(m, ":  ")) && pre - m < 10;)
        m = pre + 3;
    snprintf(buf, size, "%.*s", (int)strcspn(m, "\n"), m);
    if (conn && holds_part_of(buf, PQpass(conn)))
        snprintf(buf, size, "libpq's message is not shown: it held part of the password");
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

/* 1 when the statement that gave res found the session gone: libpq saw the
 * connection close, or the server sent FATAL (PANIC) before closing it, as
 * a restart does ("terminating connection due to administrator command")
 * while libpq may still call the connection good. */
static int session_gone(const pg_store *s, const PGresult *res)
{
    if (!s->conn)
        return 0;
    if (PQstatus(s->conn) == CONNECTION_BAD)
        return 1;
    const char *sev = res ? PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED) : NULL;
    return sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0);
}

/* Fills err for a failed statement (res may be NULL): a connection lost
 * is VYRE_EREMOTE, a server error is mapped by its SQLSTATE. */
static int pg_fail(pg_store *s, const PGresult *res, const char *what, vyre_error *err)
{
    char msg[512];
    if (!s->conn)
        return vyre__fail(err, s->dead, s->dead_err.hint, "%s", s->dead_err.message);
    first_line(s->conn,
               res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                   : PQerrorMessage(s->conn),
               msg, sizeof msg);
    /* A FATAL error ends the session: read without waiting, libpq may not
     * have seen the server close it yet. */
    if (session_gone(s, res)) {
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

/* ---- bounded waits -------------------------------------------------------------- */

/* A cancel request on its own thread: PQcancel connects to the server
 * and waits for it to close, which a silent server never does. The
 * caller waits CANCEL_WAIT_MS for it, then leaves it to finish (or not)
 * on its own; whoever of the two comes last frees the job. */
typedef struct cancel_job {
    PGcancel *cancel;
    pthread_mutex_t mu;
    int done, abandoned;
    int pipe[2];
} cancel_job;

static void cancel_job_free(cancel_job *j)
{
    PQfreeCancel(j->cancel);
    close(j->pipe[0]);
    close(j->pipe[1]);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static void *cancel_main(void *arg)
{
    cancel_job *j = arg;
    char buf[256];
    PQcancel(j->cancel, buf, sizeof buf);
    pthread_mutex_lock(&j->mu);
    j->done = 1;
    int abandoned = j->abandoned;
    if (!abandoned && write(j->pipe[1], "x", 1) < 0) {
        /* the waiter's poll ends at its timeout instead */
    }
    pthread_mutex_unlock(&j->mu);
    if (abandoned)
        cancel_job_free(j);
    return NULL;
}

/* Asks the server to cancel conn's statement, waiting CANCEL_WAIT_MS at most. */
static void cancel_bounded(PGconn *conn)
{
    cancel_job *j = calloc(1, sizeof *j);
    if (!j)
        return;
    j->cancel = PQgetCancel(conn);
    if (!j->cancel || pipe2(j->pipe, O_CLOEXEC) != 0 || pthread_mutex_init(&j->mu, NULL) != 0) {
        PQfreeCancel(j->cancel);
        free(j);
        return;
    }
    /* The thread takes no signal: the front end's handlers run on its own. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int started = pthread_create(&t, NULL, cancel_main, j) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        cancel_job_free(j);
        return;
    }
    pthread_detach(t);
    struct pollfd p = {.fd = j->pipe[0], .events = POLLIN};
    (void)poll(&p, 1, CANCEL_WAIT_MS); /* a signal cuts it short: we are leaving */
    pthread_mutex_lock(&j->mu);
    int done = j->done;
    j->abandoned = !done;
    pthread_mutex_unlock(&j->mu);
    if (done)
        cancel_job_free(j);
}

/* The interrupt flag rose during a wait that began before it: that wait
 * ends at once. A wait that begins after it (the caller winding down:
 * storing what it finished, marking its run) is bounded by the grace. */
static int interrupted(const pg_store *s)
{
    return g_interrupt && *g_interrupt && !s->grace_end;
}

/* The deadline of a wait that starts now: span_ns from now, cut to the
 * grace once the interrupt flag is up. */
static uint64_t deadline_in(pg_store *s, uint64_t span_ns)
{
    uint64_t now = vyre__mono_ns(), d = now + span_ns;
    if (g_interrupt && *g_interrupt && !s->grace_end)
        s->grace_end = now + GRACE_NS;
    return s->grace_end && d > s->grace_end ? s->grace_end : d;
}

/* Gives the connection up: the statement in flight cancelled (cancel), the
 * connection closed, the store dead with err's message (code, which the
 * caller filled in err). */
static int drop(pg_store *s, int code, int cancel, vyre_error *err)
{
    if (s->conn && cancel)
        cancel_bounded(s->conn);
    PQfinish(s->conn);
    s->conn = NULL;
    s->in_tx = 0;
    s->lost_in_tx = 0;
    s->queued = 0;
    s->dead = code;
    if (err)
        s->dead_err = *err;
    if (code == VYRE_EINTR && !s->grace_end)
        s->grace_end = vyre__mono_ns() + GRACE_NS;
    return code;
}

/* Past the deadline or interrupted, in a wait for `what`: the error, and
 * the connection dropped. */
static int give_up(pg_store *s, int connecting, const char *what, vyre_error *err)
{
    vyre_error e;
    vyre_error_clear(&e);
    int code = VYRE_EREMOTE;
    if (interrupted(s) || s->grace_end) {
        code = vyre__fail(&e, VYRE_EINTR,
                          "the statement in flight was cancelled and the connection closed: "
                          "nothing of the transaction in flight was written",
                          "stopped waiting for results database '%s' (%s)", s->shown, s->server);
    } else if (connecting) {
        vyre__fail(&e, VYRE_EREMOTE,
                   "check that the server runs and answers there; connect_timeout=N or "
                   "timeout=S in the URL sets the wait",
                   "cannot connect to results database '%s': no answer from %s within %.3g s",
                   s->shown, s->server, (double)s->connect_ns / 1e9);
    } else {
        vyre__fail(&e, VYRE_EREMOTE,
                   "the statement was cancelled and the connection closed; look for a stuck "
                   "backend or a lock held by another session (pg_stat_activity) and retry; "
                   "timeout=S in the URL sets the wait",
                   "cannot %s results database '%s': the server %s did not answer within %.3g s",
                   what, s->shown, s->server, (double)s->statement_ns / 1e9);
    }
    if (err)
        *err = e;
    return drop(s, code, !connecting, &e);
}

/* Waits until conn's socket has `events` or the deadline passes (the
 * interrupt flag looked at every POLL_SLICE_MS): 0, or give_up's error. */
static int wait_socket(pg_store *s, PGconn *conn, short events, uint64_t deadline, int connecting,
                       const char *what, vyre_error *err)
{
    for (;;) {
        uint64_t now = vyre__mono_ns();
        if (interrupted(s) || now >= deadline)
            return give_up(s, connecting, what, err);
        uint64_t left_ms = (deadline - now) / 1000000 + 1;
        struct pollfd p = {.fd = PQsocket(conn), .events = events};
        if (p.fd < 0)
            return VYRE_OK; /* libpq says what went wrong at the next call */
        int n = poll(&p, 1, left_ms < POLL_SLICE_MS ? (int)left_ms : POLL_SLICE_MS);
        if (n > 0)
            return VYRE_OK;
        if (n < 0 && errno != EINTR)
            return VYRE_OK; /* as above */
    }
}

/* Sends what libpq holds for the server, reading what comes meanwhile
 * (a server blocked on sending to us reads nothing more). */
static int flush_out(pg_store *s, uint64_t deadline, const char *what, vyre_error *err)
{
    for (;;) {
        int f = PQflush(s->conn);
        if (f == 0)
            return VYRE_OK;
        if (f < 0)
            return pg_fail(s, NULL, what, err);
        int rc = wait_socket(s, s->conn, POLLIN | POLLOUT, deadline, 0, what, err);
        if (rc)
            return rc;
        if (!PQconsumeInput(s->conn))
            return pg_fail(s, NULL, what, err);
    }
}

/* Waits until PQgetResult will not block: 0, or the error. */
static int await_result(pg_store *s, uint64_t deadline, const char *what, vyre_error *err)
{
    while (PQisBusy(s->conn)) {
        int rc = wait_socket(s, s->conn, POLLIN, deadline, 0, what, err);
        if (rc)
            return rc;
        if (!PQconsumeInput(s->conn))
            return VYRE_OK; /* lost: PQgetResult says so */
    }
    return VYRE_OK;
}

static int is_failure(const PGresult *r)
{
    ExecStatusType t = PQresultStatus(r);
    return t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK && t != PGRES_EMPTY_QUERY;
}

/* PQexec (nparams < 0: several statements) or PQexecParams, bounded by the
 * statement deadline. *out is what PQexec would return (the first failure,
 * else the last result; NULL when the connection went), or NULL with the
 * error returned when the wait was given up. */
static int exec_bounded(pg_store *s, const char *sql, int nparams, const char *const *params,
                        PGresult **out, const char *what, vyre_error *err)
{
    *out = NULL;
    if (!s->conn)
        return pg_fail(s, NULL, what, err);
    uint64_t deadline = deadline_in(s, s->statement_ns);
    int sent = nparams < 0 ? PQsendQuery(s->conn, sql)
                           : PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (!sent)
        return VYRE_OK; /* *out NULL: the caller's pg_fail reads PQerrorMessage */
    int rc = flush_out(s, deadline, what, err);
    PGresult *keep = NULL;
    while (!rc) {
        rc = await_result(s, deadline, what, err);
        PGresult *r = rc ? NULL : PQgetResult(s->conn);
        if (!r)
            break;
        if (keep && is_failure(keep)) {
            PQclear(r);
        } else {
            PQclear(keep);
            keep = r;
        }
    }
    if (rc) {
        PQclear(keep);
        return rc;
    }
    *out = keep;
    return VYRE_OK;
}

/* PQexec of sql expecting no rows: 0 or pg_fail. */
static int pg_exec(pg_store *s, const char *sql, const char *what, vyre_error *err)
{
    PGresult *res = NULL;
    int wrc = exec_bounded(s, sql, -1, NULL, &res, what, err);
    if (wrc)
        return wrc;
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
    /* One deadline for the queued writes and their sync, wall clock. */
    uint64_t deadline = deadline_in(s, s->statement_ns);
    if (!PQpipelineSync(s->conn))
        rc = pg_fail(s, NULL, what, err);
    else
        rc = flush_out(s, deadline, what, err);
    while (s->conn && (!rc || PQstatus(s->conn) == CONNECTION_OK)) {
        int wrc = await_result(s, deadline, what, rc ? NULL : err);
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
            rc = pg_fail(s, r, what, err);
        PQclear(r);
    }
    if (!rc && PQstatus(s->conn) != CONNECTION_OK)
        rc = pg_fail(s, NULL, what, err);
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
        return pg_fail(s, NULL, what, err);
    if (!PQsendQueryParams(s->conn, st->sql, st->nparams, NULL, (const char *const *)st->params,
                           NULL, NULL, 0))
        return pg_fail(s, NULL, what, err);
    int rc = flush_out(s, deadline_in(s, s->statement_ns), what, err);
    if (rc)
        return rc;
    return ++s->queued >= PIPELINE_MAX ? drain(s, what, err) : VYRE_OK;
}

static int reconnect(pg_store *s);
static int connect_poll(pg_store *s, int reset, vyre_error *err);
static int start_session(pg_store *s, vyre_error *err);
static void revive_in_grace(pg_store *s);
static void wipe(char *z);

/* PQexecParams of st. A read outside a transaction that finds the session
 * gone (the server restarted since the last statement) is sent again once
 * the session is back, as pq_begin does for a transaction. */
static int exec_stmt(pgst *st, const char *what, vyre_error *err)
{
    pg_store *s = st->s;
    const char *const *params = (const char *const *)st->params;
    int rc = exec_bounded(s, st->sql, st->nparams, params, &st->res, what, err);
    ExecStatusType t = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
    if (!rc && t != PGRES_TUPLES_OK && st->read && !s->in_tx && session_gone(s, st->res) &&
        reconnect(s) == 0) {
        PQclear(st->res);
        st->res = NULL;
        rc = exec_bounded(s, st->sql, st->nparams, params, &st->res, what, err);
    }
    return rc;
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
        if ((rc = exec_stmt(st, what, err)))
            return rc;
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
        /* Each attempt bounded by the connect deadline; one given up (or
         * interrupted) drops the store, which ends the search. */
        int rc = s->conn && PQresetStart(s->conn) ? connect_poll(s, 1, NULL) : VYRE_EREMOTE;
        if (!rc && start_session(s, NULL) == 0)
            return 0;
        if (!s->conn || interrupted(s) || vyre__mono_ns() >= end)
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
    revive_in_grace(s);
    PGresult *res = NULL;
    int rc = exec_bounded(s, "BEGIN", -1, NULL, &res, what, err);
    if (!rc && (!res || PQresultStatus(res) != PGRES_COMMAND_OK) && session_gone(s, res) &&
        reconnect(s) == 0) {
        PQclear(res);
        res = NULL;
        rc = exec_bounded(s, "BEGIN", -1, NULL, &res, what, err);
    }
    if (!rc)
        rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? VYRE_OK : pg_fail(s, res, what, err);
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
    PGresult *res = NULL;
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK &&
        PQtransactionStatus(s->conn) != PQTRANS_IDLE &&
        exec_bounded(s, "ROLLBACK", -1, NULL, &res, "roll back", NULL) == 0)
        PQclear(res);
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
    PGresult *res = NULL;
    int wrc = exec_bounded(s, "COMMIT", -1, NULL, &res, what, err);
    if (wrc)
        return wrc; /* dropped: the server rolls back unless COMMIT had arrived */
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
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(s->keys); i++) {
        if (s->vals[i] && strcmp(s->keys[i], "password") == 0)
            wipe(s->vals[i]);
        free(s->keys[i]);
        free(s->vals[i]);
    }
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
    PGresult *res = NULL;
    int wrc = exec_bounded(s,
                           "SELECT count(*) FILTER (WHERE tablename = 'meta'), count(*) "
                           "FILTER (WHERE tablename IN ('runs', 'timings', 'points')) "
                           "FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                           -1, NULL, &res, "read", err);
    if (wrc)
        return wrc;
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
    wrc = exec_bounded(s,
                       "SELECT (SELECT value FROM meta WHERE name = 'schema'), (SELECT value "
                       "FROM meta WHERE name = 'schema_version')",
                       -1, NULL, &res, "read", err);
    if (wrc)
        return wrc;
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

/* volatile: a plain memset of memory about to be freed may be removed. */
static void wipe(char *z)
{
    volatile char *p = z;
    for (size_t i = 0; z && z[i]; i++)
        p[i] = 0;
}

static int connect_fail(pg_store *s, vyre_error *err)
{
    char msg[512];
    const char *raw = PQerrorMessage(s->conn);
    int auth = strstr(raw, "password authentication failed") ||
               strstr(raw, "no password supplied") || strstr(raw, "authentication failed");
    first_line(s->conn, raw, msg, sizeof msg);
    if (auth)
        return vyre__fail(err, VYRE_EPERM,
                          "check the password: the URL's, PGPASSFILE or ~/.pgpass (mode 0600), "
                          "or password-file=PATH (mode 0600)",
                          "cannot connect to results database '%s': %s", s->shown, msg);
    return vyre__fail(err, VYRE_EREMOTE,
                      "check the host and port, that the server runs and accepts TCP "
                      "connections from here (listen_addresses, pg_hba.conf); connect_timeout=N "
                      "or timeout=S in the URL bounds the wait",
                      "cannot connect to results database '%s' (%s): %s", s->shown, s->server, msg);
}

/* Drives PQconnectPoll (PQresetPoll: reset) to the end, bounded by the
 * connect deadline: 0, connect_fail's error, or give_up's. */
static int connect_poll(pg_store *s, int reset, vyre_error *err)
{
    uint64_t deadline = deadline_in(s, s->connect_ns);
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED || PQstatus(s->conn) == CONNECTION_BAD)
            return connect_fail(s, err);
        int rc = wait_socket(s, s->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline,
                             1, "connect to", err);
        if (rc)
            return rc;
        st = reset ? PQresetPoll(s->conn) : PQconnectPoll(s->conn);
    }
    return VYRE_OK;
}

/* The session's settings, on a connection just made. */
static int start_session(pg_store *s, vyre_error *err)
{
    PQsetNoticeProcessor(s->conn, quiet, NULL);
    if (PQsetnonblocking(s->conn, 1) != 0)
        return pg_fail(s, NULL, "set up a session on", err);
    return pg_exec(s, SESSION_SQL, "set up a session on", err);
}

/* A new connection from the parameters kept in s: 0 or the error (s->conn
 * left for pq_close). */
static int connect_fresh(pg_store *s, vyre_error *err)
{
    s->conn = PQconnectStartParams((const char *const *)s->keys, (const char *const *)s->vals, 1);
    if (!s->conn)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory connecting to '%s'", s->shown);
    int rc = connect_poll(s, 0, err);
    return rc ? rc : start_session(s, err);
}

/* After an interrupt, one connection more for the grace period, so that
 * the caller can record how its work ended. */
static void revive_in_grace(pg_store *s)
{
    if (s->conn || s->dead != VYRE_EINTR || s->grace_used || vyre__mono_ns() >= s->grace_end)
        return;
    s->grace_used = 1;
    vyre_error e = s->dead_err;
    if (connect_fresh(s, NULL) == 0) {
        s->dead = 0;
        return;
    }
    drop(s, VYRE_EINTR, 0, &e);
}

/* The parameters of every connection (libpq's defaults that we change,
 * then the URL, whose values win; the password-file's password), kept in
 * s; 0 or VYRE_ENOMEM. */
static int keep_params(pg_store *s, const vyre__pg_url *u, vyre_error *err)
{
    const char *k[] = {"connect_timeout",  "keepalives_idle",  "keepalives_interval",
                       "keepalives_count", "tcp_user_timeout", "fallback_application_name",
                       "dbname",           "password"};
    const char *v[] = {"10", "10", "5", "3", "30000", "vyre", u->url, u->password};
    size_t n = u->password[0] ? VYRE_ARRAY_SIZE(k) : VYRE_ARRAY_SIZE(k) - 1;
    for (size_t i = 0; i < n; i++) {
        s->keys[i] = strdup(k[i]);
        s->vals[i] = strdup(v[i]);
        if (!s->keys[i] || !s->vals[i])
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory connecting to '%s'", s->shown);
    }
    return VYRE_OK;
}

/* The value of option key in libpq's parse, or NULL. */
static const char *option(const PQconninfoOption *o, const char *key)
{
    for (; o && o->keyword; o++)
        if (strcmp(o->keyword, key) == 0)
            return o->val && o->val[0] ? o->val : NULL;
    return NULL;
}

/* Whether the URL's user info password (as vyre_results_mask reads it:
 * from the first ':' to the last '@' before the query) holds an '@' or a
 * '/', which libpq splits at. */
static int unencoded_in_password(const char *url)
{
    const char *auth = strstr(url, "://") + 3;
    size_t q = strcspn(auth, "?#");
    const char *first_at = memchr(auth, '@', q);
    const char *colon = first_at ? memchr(auth, ':', (size_t)(first_at - auth)) : NULL;
    if (!colon)
        return 0;
    const char *last_at = first_at;
    for (const char *a = first_at; a; a = memchr(a + 1, '@', (size_t)(auth + q - a - 1)))
        last_at = a;
    return last_at != first_at || memchr(colon, '/', (size_t)(first_at - colon)) != NULL;
}

/* Checks the URL with libpq's own parser before anything is sent, so that
 * libpq never gets to echo a password in an error of its own: a URL it
 * cannot read is one error of ours (libpq's message, which echoes the
 * URL or the piece it choked on, shown only when the URL holds no
 * password), and so is a host holding '@' (a password's unencoded '@'
 * makes its tail the host). Also names the server for messages. */
static int check_url(pg_store *s, const vyre__pg_url *u, vyre_error *err)
{
    char masked[VYRE_RESULTS_LOCATION_MAX];
    vyre_results_mask(u->url, masked, sizeof masked);
    int secret = strcmp(masked, u->url) != 0;
    const char *hint = "percent-encode what is special in a URL ('%' as %25, '@' as %40, '/' as "
                       "%2F, ':' as %3A, '[' as %5B), or keep the password out of the URL: "
                       "password-file=PATH or ~/.pgpass";
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(u->url, &msg);
    if (!o) {
        char line[512];
        first_line(NULL, msg ? msg : "", line, sizeof line);
        PQfreemem(msg);
        if (secret)
            return vyre__fail(err, VYRE_EINVAL, hint,
                              "results database '%s' is not a URL libpq can read (its message "
                              "is not shown: it would show the password)",
                              s->shown);
        return vyre__fail(err, VYRE_EINVAL, hint,
                          "results database '%s' is not a URL libpq can "
                          "read: %s",
                          s->shown, line);
    }
    const char *host = option(o, "host"), *addr = option(o, "hostaddr");
    const char *port = option(o, "port");
    int at = (host && strchr(host, '@')) || (addr && strchr(addr, '@'));
    snprintf(s->server, sizeof s->server, "%s:%s",
             addr   ? addr
             : host ? host
                    : "localhost",
             port ? port : "5432");
    PQconninfoFree(o);
    if (at || unencoded_in_password(u->url)) {
        snprintf(s->server, sizeof s->server, "?");
        return vyre__fail(err, VYRE_EINVAL, hint,
                          "results database '%s': the password in its user info holds an "
                          "unencoded '@' or '/' (libpq would read part of it as the host)",
                          s->shown);
    }
    return VYRE_OK;
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
    if (!rc)
        rc = check_url(s, u, err);
    if (!rc)
        rc = keep_params(s, u, err);
    vyre__pg_url_release(u);
    free(u);
    if (!rc)
        rc = connect_fresh(s, err);
    if (!rc)
        rc = ensure_schema(s, err);
    if (rc) {
        pq_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return VYRE_OK;
}
