/*
 * store_pg_internal.h - what the files of the PostgreSQL results store share
 * (store_pg.c, store_pg_error.c, store_pg_wait.c, store_pg_connect.c,
 * store_pg_stmt.c): the store and statement structs, their bounds, and
 * the calls one file makes into another. Private to libcore/src/bench;
 * see store_pg.c for how the store works.
 */
#ifndef VYRE_BENCH_STORE_PG_INTERNAL_H
#define VYRE_BENCH_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stdint.h>

#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store.h"
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
    uint64_t reconnect_ns;                 /* a dropped session is sought so long */
    int dead;                              /* the connection was dropped: its VYRE_E* code */
    uint64_t grace_end;                    /* after an interrupt: every wait ends by then */
    int grace_used;                        /* the one connect after an interrupt was made */
    vyre_error dead_err;                   /* why it was dropped */
    char server[300];                      /* "host:port", for messages */
    char shown[VYRE_RESULTS_LOCATION_MAX]; /* the URL, password masked */
    char *keys[16], *vals[16];             /* the connection's parameters, for a fresh connect */
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

/* ---- errors (store_pg_error.c) */

/* The first line of libpq's message, without "ERROR:  " or "FATAL:  ";
 * withheld whole when it holds any part of the password. */
void vyre__pg_first_line(PGconn *conn, const char *msg, char *buf, size_t size);
/* 1 when the statement that gave res found the session gone: libpq saw the
 * connection close, or the server sent FATAL (PANIC) before closing it, as
 * a restart does ("terminating connection due to administrator command")
 * while libpq may still call the connection good. */
int vyre__pg_session_gone(const pg_store *s, const PGresult *res);
/* Fills err for a failed statement (res may be NULL): a connection lost
 * is VYRE_EREMOTE, a server error is mapped by its SQLSTATE. */
int vyre__pg_fail(pg_store *s, const PGresult *res, const char *what, vyre_error *err);

/* ---- bounded waits (store_pg_wait.c) */

/* The interrupt flag rose during a wait that began before it: that wait
 * ends at once. A wait that begins after it (the caller winding down:
 * storing what it finished, marking its run) is bounded by the grace. */
int vyre__pg_interrupted(const pg_store *s);
/* The deadline of a wait that starts now: span_ns from now, cut to the
 * grace once the interrupt flag is up. */
uint64_t vyre__pg_deadline_in(pg_store *s, uint64_t span_ns);
/* Gives the connection up: the statement in flight cancelled (cancel), the
 * connection closed, the store dead with err's message (code, which the
 * caller filled in err). */
int vyre__pg_drop(pg_store *s, int code, int cancel, vyre_error *err);
/* Waits until conn's socket has `events` or the deadline passes (the
 * interrupt flag looked at every POLL_SLICE_MS): 0, or give_up's error. */
int vyre__pg_wait_socket(pg_store *s, PGconn *conn, short events, uint64_t deadline, int connecting,
                         const char *what, vyre_error *err);
/* Sends what libpq holds for the server, reading what comes meanwhile
 * (a server blocked on sending to us reads nothing more). */
int vyre__pg_flush_out(pg_store *s, uint64_t deadline, const char *what, vyre_error *err);
/* Waits until PQgetResult will not block: 0, or the error. */
int vyre__pg_await_result(pg_store *s, uint64_t deadline, const char *what, vyre_error *err);
/* PQexec (nparams < 0: several statements) or PQexecParams, bounded by the
 * statement deadline. *out is what PQexec would return (the first failure,
 * else the last result; NULL when the connection went), or NULL with the
 * error returned when the wait was given up. */
int vyre__pg_exec_bounded(pg_store *s, const char *sql, int nparams, const char *const *params,
                          PGresult **out, const char *what, vyre_error *err);
/* PQexec of sql expecting no rows: 0 or vyre__pg_fail. */
int vyre__pg_exec(pg_store *s, const char *sql, const char *what, vyre_error *err);

/* ---- connecting (store_pg_connect.c) */

/* volatile: a plain memset of memory about to be freed may be removed. */
void vyre__pg_wipe(char *z);
/* A new connection from the parameters kept in s: 0 or the error (s->conn
 * left for pq_close). */
int vyre__pg_connect_fresh(pg_store *s, vyre_error *err);
/* After an interrupt, one connection more for the grace period, so that
 * the caller can record how its work ended. */
void vyre__pg_revive_in_grace(pg_store *s);
/* The parameters of every connection (libpq's defaults that we change,
 * then the URL, whose values win; the password-file's password), kept in
 * s; 0 or VYRE_ENOMEM. */
int vyre__pg_keep_params(pg_store *s, const vyre__pg_url *u, vyre_error *err);
/* Checks the URL with libpq's own parser before anything is sent, so that
 * libpq never gets to echo a password in an error of its own: a URL it
 * cannot read is one error of ours (libpq's message, which echoes the
 * URL or the piece it choked on, shown only when the URL holds no
 * password), and so is a host holding '@' (a password's unencoded '@'
 * makes its tail the host). Also names the server for messages. */
int vyre__pg_check_url(pg_store *s, const vyre__pg_url *u, vyre_error *err);
/* The session, back after the server dropped it: PQreset (each attempt
 * bounded by connect_timeout), tried with a growing pause until
 * reconnect_ns have passed, and the session's settings again. 0 when it
 * is back. */
int vyre__pg_reconnect(pg_store *s);

/* ---- statements (store_pg_stmt.c) */

int vyre__pg_prepare(vyre__store *base, const char *sql, vyre__stmt **out, vyre_error *err);
void vyre__pg_bind_int64(vyre__stmt *st, int i, int64_t v);
void vyre__pg_bind_double(vyre__stmt *st, int i, double v);
void vyre__pg_bind_text(vyre__stmt *st, int i, const char *z, size_t len);
void vyre__pg_bind_null(vyre__stmt *st, int i);
/* Reads the results of the queued writes and leaves pipeline mode: 0, or
 * the first failure (err NULL: ignored, for a rollback). */
int vyre__pg_drain(pg_store *s, const char *what, vyre_error *err);
int vyre__pg_step(vyre__stmt *base, const char *what, vyre_error *err);
int vyre__pg_is_null(vyre__stmt *base, int i);
const char *vyre__pg_col_text(vyre__stmt *base, int i);
int64_t vyre__pg_col_int64(vyre__stmt *st, int i);
double vyre__pg_col_double(vyre__stmt *st, int i);
void vyre__pg_reset(vyre__stmt *base);
void vyre__pg_finalize(vyre__stmt *base);

#endif
