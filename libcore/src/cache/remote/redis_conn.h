/*
 * redis_conn.h - the connection of redis:// and rediss:// remote
 * stores (internal).
 *
 * A TCP connection bounded by the connect timeout, for rediss:// an
 * OpenSSL client (TLS 1.2 or later, the peer verified against the remote's
 * CA file or the system's CAs, its name or IP address checked; Debian's
 * hiredis 0.14 has no TLS), and Redis commands formatted and replies parsed
 * by hiredis itself (redisFormatCommandArgv, redisReader), so a reply is
 * the redisReply hiredis's own client would give. What hiredis's blocking
 * client does not give, this does: one deadline for a whole command (not a
 * timeout per read), and replies bounded before they are read
 * (resp.h).
 */
#ifndef VYRE_REMOTE_REDIS_CONN_H
#define VYRE_REMOTE_REDIS_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vyre__rconn vyre__rconn;

/* The clock deadlines are read against (CLOCK_MONOTONIC, milliseconds). */
int64_t vyre__rconn_now_ms(void);

/* Connects to host:port within connect_ms; with tls, does the handshake
 * by deadline_ms (vyre__rconn_now_ms's clock), verifying the server
 * against ca_file (NULL or "" for the system's CA store). 0 and *out, or
 * -1 with why filled (and *out NULL). */
int vyre__rconn_open(const char *host, unsigned port, int tls, const char *ca_file,
                     uint32_t connect_ms, int64_t deadline_ms, vyre__rconn **out, char *why,
                     size_t why_size);

/* A plain connection over fd, a connected stream socket (made
 * non-blocking; closed with the connection): for the fuzzer and tests,
 * which feed replies through a socketpair. 0 and *out, or -1 (fd left
 * open). */
int vyre__rconn_adopt(int fd, vyre__rconn **out);

/* Sends one command and reads its reply (the caller frees it with
 * freeReplyObject), all by deadline_ms. The reply's bulk strings may
 * declare max_bulk bytes in all. 0 on success; -2 when they declare more
 * (*declared says how much; the body was not read); -1 with why filled on
 * any other failure. After a failure the connection is unusable
 * (vyre__rconn_close it). */
int vyre__rconn_command(vyre__rconn *c, int argc, const char **argv, const size_t *lens,
                        int64_t deadline_ms, uint64_t max_bulk, redisReply **reply,
                        uint64_t *declared, char *why, size_t why_size);

/* Closes and frees (NULL is a no-op). */
void vyre__rconn_close(vyre__rconn *c);

#endif /* VYRE_REMOTE_REDIS_CONN_H */
