/*
 * redis.c - the Redis transport of remote stores.
 *
 * GET, SET (with EX when the remote has an expiry) and EXISTS of one key,
 * behind vyre__redis_ops; AUTH
 * (password, or user and password, or the token file's contents) and
 * SELECT on connect. One connection per remote, made on first use and
 * dropped after any error, so the next request reconnects. The connection
 * (redis_conn.c: plain TCP or TLS, hiredis framing the protocol)
 * gives every command one deadline: connecting is bounded by the connect
 * timeout, AUTH and SELECT share one operation timeout, and each GET or
 * SET gets one of its own, however the server spreads its bytes. Replies
 * are checked for their type: only a bulk string or nil is an answer to
 * GET, only a status "OK" to SET, only an integer to EXISTS. A value declared larger than the
 * remote's max-object-size is refused from its length, before its body is
 * read; the connection is dropped then, the body unread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/remote/remote_internal.h"
#include "cache/remote/redis_conn.h"

/* What an answer to AUTH, SELECT or SET may declare in bulk strings: they
 * answer with a status, so anything long is not a Redis server's. */
#define SMALL_REPLY_MAX 4096

static void drop(vyre__remote *r)
{
    vyre__rconn_close(r->conn);
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

/* One command by deadline; the reply (caller frees) or NULL with err
 * filled. A reply declaring more than max_bulk bytes is VYRE_ETOOBIG
 * (*declared says how much) when what is "GET", a failure otherwise. */
static redisReply *command(vyre__remote *r, const char *what, int argc, const char **argv,
                           const size_t *lens, int64_t deadline, uint64_t max_bulk,
                           uint64_t *declared, vyre_error *err)
{
    redisReply *rep = NULL;
    char why[VYRE_ERROR_MESSAGE_MAX / 2];
    uint64_t decl = 0;
    int rc = vyre__rconn_command(r->conn, argc, argv, lens, deadline, max_bulk, &rep, &decl, why,
                                 sizeof why);
    if (declared)
        *declared = decl;
    if (rc == -2 && declared) {
        drop(r); /* the body is still coming: the stream is lost */
        return NULL;
    }
    if (rc) {
        if (rc == -2)
            snprintf(why, sizeof why, "the reply declares %" PRIu64 " bytes", decl);
        fail_ctx(r, what, why, err);
        return NULL;
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

static int64_t deadline_of(const vyre__remote *r)
{
    return vyre__rconn_now_ms() + (int64_t)r->info.operation_timeout_ms;
}

static int ok_status(const redisReply *rep)
{
    return rep->type == REDIS_REPLY_STATUS && rep->str && strcmp(rep->str, "OK") == 0;
}

static int auth_select(vyre__remote *r, int64_t deadline, vyre_error *err);

static int connect_remote(vyre__remote *r, vyre_error *err)
{
    if (r->conn)
        return VYRE_OK;
    int tls = r->info.scheme == VYRE_REMOTE_REDISS;
    char why[VYRE_ERROR_MESSAGE_MAX / 2];
    vyre__rconn *c = NULL;
    /* The handshake, AUTH and SELECT share one operation timeout. */
    int64_t deadline = deadline_of(r);
    if (vyre__rconn_open(r->info.host, r->info.port, tls, r->info.ca_file,
                         r->info.connect_timeout_ms, deadline, &c, why, sizeof why))
        return vyre__fail(err, VYRE_EREMOTE,
                          strstr(why, "certificate")
                              ? "the server's certificate is not trusted for this host: name "
                                "its CA with '|ca-file=PATH', and connect by a name or "
                                "address the certificate carries"
                          : tls ? "check that the Redis server runs with TLS on that port; "
                                  "vyre goes on without it"
                                : "check that the Redis server runs and answers; vyre goes on "
                                  "without it",
                          "connecting to remote store '%s' failed: %s", r->info.url, why);
    r->conn = c;
    return auth_select(r, deadline, err);
}

/* AUTH and SELECT on a fresh connection, as the remote asks. */
static int auth_select(vyre__remote *r, int64_t deadline, vyre_error *err)
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
        redisReply *rep =
            command(r, "AUTH", argc, argv, lens, deadline, SMALL_REPLY_MAX, NULL, err);
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
        redisReply *rep = command(r, "SELECT", 2, argv, lens, deadline, SMALL_REPLY_MAX, NULL, err);
        if (!rep)
            return VYRE_EREMOTE;
        int ok = ok_status(rep);
        freeReplyObject(rep);
        if (!ok)
            return fail_ctx(r, "SELECT", "unexpected reply", err);
    }
    return VYRE_OK;
}

static int redis_get(vyre__remote *r, const char *name, uint8_t **buf, size_t *len, vyre_error *err)
{
    *buf = NULL;
    *len = 0;
    int rc = connect_remote(r, err);
    if (rc)
        return rc;
    const char *argv[2] = {"GET", name};
    size_t lens[2] = {3, strlen(name)};
    uint64_t declared = 0;
    redisReply *rep =
        command(r, "GET", 2, argv, lens, deadline_of(r), r->info.max_object_bytes, &declared, err);
    if (!rep && declared > r->info.max_object_bytes) {
        *len = declared > SIZE_MAX ? SIZE_MAX : (size_t)declared;
        return vyre__fail(err, VYRE_ETOOBIG,
                          "raise '|max-object-size=BYTES' if blobs this large are expected",
                          "object '%s' on remote store '%s' declares %" PRIu64
                          " bytes, more than %" PRIu64 ": refused unread",
                          name, r->info.url, declared, r->info.max_object_bytes);
    }
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
    size_t n = rep->len; /* within max_object_bytes: framed before it was read */
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

static int redis_put(vyre__remote *r, const char *name, const void *buf, size_t len,
                     vyre_error *err)
{
    int rc = connect_remote(r, err);
    if (rc)
        return rc;
    char ex[16];
    snprintf(ex, sizeof ex, "%" PRIu32, r->info.expiry_s);
    const char *argv[5] = {"SET", name, buf, "EX", ex};
    size_t lens[5] = {3, strlen(name), len, 2, strlen(ex)};
    redisReply *rep = command(r, "SET", r->info.expiry_s ? 5 : 3, argv, lens, deadline_of(r),
                              SMALL_REPLY_MAX, NULL, err);
    if (!rep)
        return VYRE_EREMOTE;
    int ok = ok_status(rep);
    freeReplyObject(rep);
    if (!ok)
        return fail_ctx(r, "SET", "unexpected reply", err);
    return VYRE_OK;
}

/* EXISTS name: an integer, 1 when it is there. */
static int redis_head(vyre__remote *r, const char *name, vyre_error *err)
{
    int rc = connect_remote(r, err);
    if (rc)
        return rc;
    const char *argv[2] = {"EXISTS", name};
    size_t lens[2] = {6, strlen(name)};
    /* Bounded as a GET's reply, not as a status: a server that answers
     * with a value it trickles is then stopped by the operation timeout, as
     * the probe's GET of old was ("timed out", tests/cli/test_cachectl_remote.c). */
    redisReply *rep =
        command(r, "EXISTS", 2, argv, lens, deadline_of(r), r->info.max_object_bytes, NULL, err);
    if (!rep)
        return VYRE_EREMOTE;
    int type = rep->type;
    long long n = rep->integer;
    freeReplyObject(rep);
    if (type != REDIS_REPLY_INTEGER)
        return fail_ctx(r, "EXISTS", "unexpected reply", err);
    return n > 0 ? VYRE_OK : VYRE_ENOENT;
}

static void redis_close(vyre__remote *r)
{
    drop(r);
}

/* "vyre:<64 hex>": one key per blob, the whole file as its value. */
static void redis_object_name(const vyre_key *key, char *out, size_t size)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    snprintf(out, size, "%s%s", VYRE_REMOTE_REDIS_PREFIX, hex);
}

const vyre__remote_ops vyre__redis_ops = {
    .get = redis_get,
    .put = redis_put,
    .head = redis_head,
    .close = redis_close,
    .object_name = redis_object_name,
    .check_name = VYRE_REMOTE_REDIS_PREFIX "check",
};
