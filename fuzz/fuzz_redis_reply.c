/*
 * fuzz_redis_reply.c - libFuzzer target for the Redis reply reader
 * (libcore/src/cache/remote/resp.c's framing and redis_conn.c's
 * read loop), which takes whatever a remote store's server sends.
 *
 * Input: the first byte picks the limit on declared bulk lengths (0, 16,
 * 4096 or 65536 bytes: the remote's max-object-size), the rest is the
 * server's answer.
 *
 * Invariants checked:
 *   - no crash, no read past the input (ASan), no undefined behaviour;
 *   - vyre__resp_frame: COMPLETE ends inside the input, at a reply of
 *     bulk strings within the limit that hiredis's reader takes as one
 *     reply (or refuses) without waiting for more or finding a second,
 *     and that frames the same alone;
 *     TOOBIG declares more than the limit; PARTIAL input stays PARTIAL
 *     when cut shorter;
 *   - the read loop, fed the answer through a socketpair and then the end
 *     of the stream: a reply, or -2 with a declared length above the
 *     limit, or -1 with a reason; never more buffered than the limit
 *     allows (ASan's allocation limit catches a runaway buffer).
 */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache/remote/redis_conn.h"
#include "cache/remote/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t limits[4] = {0, 16, 4096, 65536};

static void check_frame(const char *buf, size_t len, uint64_t max)
{
    size_t end = 0;
    uint64_t decl = 0;
    vyre__resp_status st = vyre__resp_frame(buf, len, max, &end, &decl);
    if (st == VYRE__RESP_COMPLETE) {
        if (end == 0 || end > len || decl > max)
            abort();
        size_t end2 = 0;
        uint64_t decl2 = 0;
        if (vyre__resp_frame(buf, end, max, &end2, &decl2) != VYRE__RESP_COMPLETE || end2 != end ||
            decl2 != decl)
            abort();
        redisReader *r = redisReaderCreate();
        void *reply = NULL;
        if (!r)
            return;
        /* hiredis may refuse what the framing let through (it checks the
         * digits of an integer reply, the framing does not), but it must
         * never wait for more, nor find a second reply in the bytes. */
        if (redisReaderFeed(r, buf, end) == REDIS_OK &&
            redisReaderGetReply(r, &reply) == REDIS_OK) {
            if (!reply)
                abort(); /* framed as whole, hiredis waits for more */
            freeReplyObject(reply);
            reply = NULL;
            if (redisReaderGetReply(r, &reply) != REDIS_OK || reply)
                abort(); /* a second reply in the framed bytes */
        }
        redisReaderFree(r);
    } else if (st == VYRE__RESP_TOOBIG) {
        if (decl <= max)
            abort();
    } else if (st == VYRE__RESP_PARTIAL) {
        if (vyre__resp_frame(buf, len / 2, max, &end, &decl) != VYRE__RESP_PARTIAL)
            abort();
    } else if (st != VYRE__RESP_BAD || end > len) {
        abort();
    }
}

static void check_read_loop(const char *buf, size_t len, uint64_t max)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    vyre__rconn *c = NULL;
    if (write(sv[1], buf, len) != (ssize_t)len || shutdown(sv[1], SHUT_WR) != 0 ||
        vyre__rconn_adopt(sv[0], &c) != 0) {
        close(sv[0]);
        close(sv[1]);
        return;
    }
    const char *argv[2] = {"GET", "vyre:x"};
    size_t lens[2] = {3, 6};
    redisReply *reply = NULL;
    uint64_t decl = 0;
    char why[256];
    int rc = vyre__rconn_command(c, 2, argv, lens, vyre__rconn_now_ms() + 5000, max, &reply, &decl,
                                 why, sizeof why);
    if (rc == 0) {
        if (!reply)
            abort();
        if (reply->type == REDIS_REPLY_STRING && (uint64_t)reply->len > max)
            abort();
        freeReplyObject(reply);
    } else if (rc == -2) {
        if (reply || decl <= max)
            abort();
    } else if (rc != -1 || reply || !why[0]) {
        abort();
    }
    vyre__rconn_close(c); /* closes sv[0] */
    close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    uint64_t max = limits[data[0] & 3];
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    check_frame(buf, len, max);
    check_read_loop(buf, len, max);
    return 0;
}
