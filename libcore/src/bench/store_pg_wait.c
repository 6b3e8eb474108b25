/*
 * store_pg_wait.c - every wait of the PostgreSQL store, bounded by our own
 * deadline (see store_pg.c): poll() on the socket, cancel on a short-lived
 * thread, the interrupt flag and its grace, and a store dropped past the
 * deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/store_pg_internal.h"

/* Set by the front end (vyre_results_set_interrupt); read in waits. */
static const volatile sig_atomic_t *g_interrupt;

void vyre_results_set_interrupt(const volatile sig_atomic_t *flag)
{
    g_interrupt = flag;
}

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
int vyre__pg_interrupted(const pg_store *s)
{
    return g_interrupt && *g_interrupt && !s->grace_end;
}

/* The deadline of a wait that starts now: span_ns from now, cut to the
 * grace once the interrupt flag is up. */
uint64_t vyre__pg_deadline_in(pg_store *s, uint64_t span_ns)
{
    uint64_t now = vyre__mono_ns(), d = now + span_ns;
    if (g_interrupt && *g_interrupt && !s->grace_end)
        s->grace_end = now + GRACE_NS;
    return s->grace_end && d > s->grace_end ? s->grace_end : d;
}

/* Gives the connection up: the statement in flight cancelled (cancel), the
 * connection closed, the store dead with err's message (code, which the
 * caller filled in err). */
int vyre__pg_drop(pg_store *s, int code, int cancel, vyre_error *err)
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

/* Past the deadline or vyre__pg_interrupted, in a wait for `what`: the error, and
 * the connection dropped. */
static int give_up(pg_store *s, int connecting, const char *what, vyre_error *err)
{
    vyre_error e;
    vyre_error_clear(&e);
    int code = VYRE_EREMOTE;
    if (vyre__pg_interrupted(s) || s->grace_end) {
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
    return vyre__pg_drop(s, code, !connecting, &e);
}

/* Waits until conn's socket has `events` or the deadline passes (the
 * interrupt flag looked at every POLL_SLICE_MS): 0, or give_up's error. */
int vyre__pg_wait_socket(pg_store *s, PGconn *conn, short events, uint64_t deadline, int connecting,
                         const char *what, vyre_error *err)
{
    for (;;) {
        uint64_t now = vyre__mono_ns();
        if (vyre__pg_interrupted(s) || now >= deadline)
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
int vyre__pg_flush_out(pg_store *s, uint64_t deadline, const char *what, vyre_error *err)
{
    for (;;) {
        int f = PQflush(s->conn);
        if (f == 0)
            return VYRE_OK;
        if (f < 0)
            return vyre__pg_fail(s, NULL, what, err);
        int rc = vyre__pg_wait_socket(s, s->conn, POLLIN | POLLOUT, deadline, 0, what, err);
        if (rc)
            return rc;
        if (!PQconsumeInput(s->conn))
            return vyre__pg_fail(s, NULL, what, err);
    }
}

/* Waits until PQgetResult will not block: 0, or the error. */
int vyre__pg_await_result(pg_store *s, uint64_t deadline, const char *what, vyre_error *err)
{
    while (PQisBusy(s->conn)) {
        int rc = vyre__pg_wait_socket(s, s->conn, POLLIN, deadline, 0, what, err);
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
int vyre__pg_exec_bounded(pg_store *s, const char *sql, int nparams, const char *const *params,
                          PGresult **out, const char *what, vyre_error *err)
{
    *out = NULL;
    if (!s->conn)
        return vyre__pg_fail(s, NULL, what, err);
    uint64_t deadline = vyre__pg_deadline_in(s, s->statement_ns);
    int sent = nparams < 0 ? PQsendQuery(s->conn, sql)
                           : PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (!sent)
        return VYRE_OK; /* *out NULL: the caller's vyre__pg_fail reads PQerrorMessage */
    int rc = vyre__pg_flush_out(s, deadline, what, err);
    PGresult *keep = NULL;
    while (!rc) {
        rc = vyre__pg_await_result(s, deadline, what, err);
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

/* PQexec of sql expecting no rows: 0 or vyre__pg_fail. */
int vyre__pg_exec(pg_store *s, const char *sql, const char *what, vyre_error *err)
{
    PGresult *res = NULL;
    int wrc = vyre__pg_exec_bounded(s, sql, -1, NULL, &res, what, err);
    if (wrc)
        return wrc;
    ExecStatusType t = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    int rc =
        t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK ? VYRE_OK : vyre__pg_fail(s, res, what, err);
    PQclear(res);
    return rc;
}
