/*
 * store_pg_connect.c - connecting the PostgreSQL store: the URL checked and
 * its parameters kept, the connection driven to the end within the
 * connect deadline, the session's settings, and the session sought again
 * after the server dropped it.
 */
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/store_pg_internal.h"
#include "bench/store_url.h"
#include "vyre/results.h"

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* libcore never prints */
}

/* volatile: a plain memset of memory about to be freed may be removed. */
void vyre__pg_wipe(char *z)
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
    vyre__pg_first_line(s->conn, raw, msg, sizeof msg);
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
    uint64_t deadline = vyre__pg_deadline_in(s, s->connect_ns);
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED || PQstatus(s->conn) == CONNECTION_BAD)
            return connect_fail(s, err);
        int rc = vyre__pg_wait_socket(s, s->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                                      deadline, 1, "connect to", err);
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
        return vyre__pg_fail(s, NULL, "set up a session on", err);
    return vyre__pg_exec(s, SESSION_SQL, "set up a session on", err);
}

/* A new connection from the parameters kept in s: 0 or the error (s->conn
 * left for pq_close). */
int vyre__pg_connect_fresh(pg_store *s, vyre_error *err)
{
    s->conn = PQconnectStartParams((const char *const *)s->keys, (const char *const *)s->vals, 1);
    if (!s->conn)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory connecting to '%s'", s->shown);
    int rc = connect_poll(s, 0, err);
    return rc ? rc : start_session(s, err);
}

/* After an interrupt, one connection more for the grace period, so that
 * the caller can record how its work ended. */
void vyre__pg_revive_in_grace(pg_store *s)
{
    if (s->conn || s->dead != VYRE_EINTR || s->grace_used || vyre__mono_ns() >= s->grace_end)
        return;
    s->grace_used = 1;
    vyre_error e = s->dead_err;
    if (vyre__pg_connect_fresh(s, NULL) == 0) {
        s->dead = 0;
        return;
    }
    vyre__pg_drop(s, VYRE_EINTR, 0, &e);
}

/* The parameters of every connection (libpq's defaults that we change,
 * then the URL, whose values win; the password-file's password), kept in
 * s; 0 or VYRE_ENOMEM. */
int vyre__pg_keep_params(pg_store *s, const vyre__pg_url *u, vyre_error *err)
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
int vyre__pg_check_url(pg_store *s, const vyre__pg_url *u, vyre_error *err)
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
        vyre__pg_first_line(NULL, msg ? msg : "", line, sizeof line);
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

/* The session, back after the server dropped it: PQreset (each attempt
 * bounded by connect_timeout), tried with a growing pause until
 * s->reconnect_ns have passed (the URL's reconnect=S, else
 * VYRE__PG_RECONNECT_S; 0: not tried), and the session's settings again.
 * 0 when it is back. */
int vyre__pg_reconnect(pg_store *s)
{
    if (!s->reconnect_ns)
        return -1;
    uint64_t end = vyre__mono_ns() + s->reconnect_ns;
    long pause_ms = 100;
    for (;;) {
        /* Each attempt bounded by the connect deadline; one given up (or
         * vyre__pg_interrupted) drops the store, which ends the search. */
        int rc = s->conn && PQresetStart(s->conn) ? connect_poll(s, 1, NULL) : VYRE_EREMOTE;
        if (!rc && start_session(s, NULL) == 0)
            return 0;
        if (!s->conn || vyre__pg_interrupted(s) || vyre__mono_ns() >= end)
            return -1;
        struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        pause_ms = pause_ms < 1000 ? pause_ms * 2 : 2000;
    }
}
