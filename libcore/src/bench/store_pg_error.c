/*
 * store_pg_error.c - the PostgreSQL store's errors in vyre's words: a server
 * message's first line with any piece of a secret masked, its SQLSTATE as
 * a VYRE_E* code and hint, and whether the session went away.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "bench/store_pg_internal.h"

/* Whether msg holds any piece of secret PIECE bytes long (all of a
 * shorter one): libpq echoes parts of what it was given, split where it
 * split them ('@', '%', ':'). vyre__pg_check_url already keeps libpq's parse
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
void vyre__pg_first_line(PGconn *conn, const char *msg, char *buf, size_t size)
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
int vyre__pg_session_gone(const pg_store *s, const PGresult *res)
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
int vyre__pg_fail(pg_store *s, const PGresult *res, const char *what, vyre_error *err)
{
    char msg[512];
    if (!s->conn)
        return vyre__fail(err, s->dead, s->dead_err.hint, "%s", s->dead_err.message);
    vyre__pg_first_line(s->conn,
                        res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
                                                            : PQerrorMessage(s->conn),
                        msg, sizeof msg);
    /* A FATAL error ends the session: read without waiting, libpq may not
     * have seen the server close it yet. */
    if (vyre__pg_session_gone(s, res)) {
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
