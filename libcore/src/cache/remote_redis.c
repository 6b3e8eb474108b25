/*
 * remote_redis.c - the Redis transport of remote stores, through hiredis.
 *
 * GET and SET (with EX when the remote has an expiry) of one key; AUTH
 * (password, or user and password, or the token file's contents) and
 * SELECT on connect. One connection per remote, made on first use and
 * dropped after any error (hiredis leaves a context unusable after one),
 * so the next request reconnects. Bounded connect and command timeouts.
 * Replies are checked for their type: only a bulk string or nil is an
 * answer to GET, only a status "OK" to SET. A value larger than the
 * remote's max-object-size is refused (hiredis has read it by then: Redis
 * values are bounded by the server's proto-max-bulk-len).
 *
 * rediss:// goes through remote_redis_tls.c (this hiredis has no TLS):
 * the same commands, the same redisReply objects, the same checks.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "base/internal.h"
#include "cache/remote_internal.h"
#include "cache/remote_redis_tls.h"

static struct timeval ms_tv(uint32_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

static int is_tls(const vyre__remote *r)
{
    return r->info.scheme == VYRE_REMOTE_REDISS;
}

static void drop(vyre__remote *r)
{
    if (r->conn && is_tls(r))
        vyre__tls_close(r->conn);
    else if (r->conn)
        redisFree(r->conn);
    r->conn = NULL;
}

static int fail_ctx(vyre__remote *r, const char *what, const char *detail, vyre_error *err)
{
    int rc = vyre__fail(err, VYRE_EREMOTE,
                        "check that the Redis server runs and answers; vyre goes on without it",
                        "%s on remote store '%s' failed: %s", what, r->info.url, detail);
    drop(r);
    return rc;
}

/* One command; the reply (caller frees) or NULL with err filled. */
static redisReply *command(vyre__remote *r, const char *what, int argc, const char **argv,
                           const size_t *lens, vyre_error *err)
{
    redisReply *rep = NULL;
    if (is_tls(r)) {
        char why[VYRE_ERROR_MESSAGE_MAX / 2];
        if (vyre__tls_command(r->conn, argc, argv, lens, &rep, why, sizeof why)) {
            fail_ctx(r, what, why, err);
            return NULL;
        }
    } else {
        redisContext *c = r->conn;
        rep = redisCommandArgv(c, argc, argv, lens);
        if (!rep) {
            fail_ctx(r, what, c->errstr[0] ? c->errstr : "no reply", err);
            return NULL;
        }
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        char msg[256];
        snprintf(msg, sizeof msg, "server error '%.*s'", (int)(rep->len < 200 ? rep->len : 200),
                 rep->str ? rep->str : "");
        freeReplyObject(rep);
        vyre__fail(err, VYRE_EREMOTE,
                   strstr(msg, "NOAUTH") || strstr(msg, "WRONGPASS") ||
                           strstr(msg, "invalid password")
                       ? "check the password (redis://:password@host or '|token-file=')"
                       : "check the Redis server's configuration",
                   "%s on remote store '%s' failed: %s", what, r->info.url, msg);
        drop(r);
        return NULL;
    }
    return rep;
}

static int ok_status(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_STATUS && rep->str && strcmp(rep->str, "OK") == 0;
}

static int auth_select(vyre__remote *r, vyre_error *err);

static int connect_remote(vyre__remote *r, vyre_error *err)
{
    if (r->conn)
        return VYRE_OK;
    if (is_tls(r)) {
        char why[VYRE_ERROR_MESSAGE_MAX / 2];
        vyre__tls_conn *t = NULL;
        if (vyre__tls_connect(r->info.host, r->info.port, r->info.ca_file,
                              r->info.connect_timeout_ms, r->info.operation_timeout_ms, &t, why,
                              sizeof why))
            return vyre__fail(err, VYRE_EREMOTE,
                              strstr(why, "certificate")
                                  ? "the server's certificate is not trusted for this host: name "
                                    "its CA with '|ca-file=PATH', and connect by a name or "
                                    "address the certificate carries"
                                  : "check that the Redis server runs with TLS on that port; "
                                    "vyre goes on without it",
                              "connecting to remote store '%s' failed: %s", r->info.url, why);
        r->conn = t;
        return auth_select(r, err);
    }
    redisContext *c =
        redisConnectWithTimeout(r->info.host, (int)r->info.port, ms_tv(r->info.connect_timeout_ms));
    if (!c)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "hiredis cannot allocate a connection");
    r->conn = c;
    if (c->err)
        return fail_ctx(r, "connecting", c->errstr, err);
    if (redisSetTimeout(c, ms_tv(r->info.operation_timeout_ms)) != REDIS_OK)
        return fail_ctx(r, "setting the timeout", c->errstr, err);
    return auth_select(r, err);
}

/* AUTH and SELECT on a fresh connection, as the remote asks. */
static int auth_select(vyre__remote *r, vyre_error *err)
{
    const char *pw = r->info.has_password ? r->password : r->token[0] ? r->token : NULL;
    if (pw) {
        const char *argv[3];
        size_t lens[3];
        int argc = 0;
        argv[argc] = "AUTH";
        lens[argc++] = 4;
        if (r->info.has_user) {
            argv[argc] = r->user;
            lens[argc++] = strlen(r->user);
        }
        argv[argc] = pw;
        lens[argc++] = strlen(pw);
        redisReply *rep = command(r, "AUTH", argc, argv, lens, err);
        if (!rep)
            return VYRE_EREMOTE;
        int ok = ok_status(rep);
        freeReplyObject(rep);
        if (!ok)
            return fail_ctx(r, "AUTH", "unexpected reply", err);
    }
    if (r->info.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", r->info.db);
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, strlen(db)};
        redisReply *rep = command(r, "SELECT", 2, argv, lens, err);
        if (!rep)
            return VYRE_EREMOTE;
        int ok = ok_status(rep);
        freeReplyObject(rep);
        if (!ok)
            return fail_ctx(r, "SELECT", "unexpected reply", err);
    }
    return VYRE_OK;
}

int vyre__redis_get(vyre__remote *r, const char *name, uint8_t **buf, size_t *len, vyre_error *err)
{
    *buf = NULL;
    *len = 0;
    int rc = connect_remote(r, err);
    if (rc)
        return rc;
    const char *argv[2] = {"GET", name};
    size_t lens[2] = {3, strlen(name)};
    redisReply *rep = command(r, "GET", 2, argv, lens, err);
    if (!rep)
        return VYRE_EREMOTE;
    if (rep->type == REDIS_REPLY_NIL) {
        freeReplyObject(rep);
        return VYRE_ENOENT;
    }
    if (rep->type != REDIS_REPLY_STRING) {
        int type = rep->type;
        freeReplyObject(rep);
        return vyre__fail(err, VYRE_EREMOTE,
                          "the key holds something vyre did not write: delete it",
                          "GET '%s' on remote store '%s' answered a reply of type %d, not a string",
                          name, r->info.url, type);
    }
    size_t n = rep->len;
    if ((uint64_t)n > r->info.max_object_bytes) {
        freeReplyObject(rep);
        *len = n;
        return vyre__fail(
            err, VYRE_ETOOBIG, "raise '|max-object-size=BYTES' if blobs this large are expected",
            "object '%s' on remote store '%s' is %zu bytes, more than %" PRIu64 ": refused", name,
            r->info.url, n, r->info.max_object_bytes);
    }
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        freeReplyObject(rep);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes", n);
    }
    memcpy(b, rep->str, n);
    freeReplyObject(rep);
    *buf = b;
    *len = n;
    return VYRE_OK;
}

int vyre__redis_put(vyre__remote *r, const char *name, const void *buf, size_t len, vyre_error *err)
{
    int rc = connect_remote(r, err);
    if (rc)
        return rc;
    char ex[16];
    snprintf(ex, sizeof ex, "%" PRIu32, r->info.expiry_s);
    const char *argv[5] = {"SET", name, buf, "EX", ex};
    size_t lens[5] = {3, strlen(name), len, 2, strlen(ex)};
    redisReply *rep = command(r, "SET", r->info.expiry_s ? 5 : 3, argv, lens, err);
    if (!rep)
        return VYRE_EREMOTE;
    int ok = ok_status(rep);
    freeReplyObject(rep);
    if (!ok)
        return fail_ctx(r, "SET", "unexpected reply", err);
    return VYRE_OK;
}

void vyre__redis_close(vyre__remote *r)
{
    drop(r);
}
