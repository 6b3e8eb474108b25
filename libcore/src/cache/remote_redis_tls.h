/*
 * remote_redis_tls.h - the TLS transport of rediss:// remote stores
 * (internal).
 *
 * Debian's hiredis (0.14) has no TLS, so the connection is made here: a TCP
 * connect bounded by the connect timeout, an OpenSSL client (TLS 1.2 or
 * later, the peer verified against the remote's CA file or the system's CAs,
 * its name or IP address checked), and Redis commands formatted and replies
 * parsed by hiredis itself (redisFormatCommandArgv, redisReader), so a reply
 * is the same redisReply a plain connection gives. Every read and write is
 * bounded by the operation timeout.
 */
#ifndef VYRE_REMOTE_REDIS_TLS_H
#define VYRE_REMOTE_REDIS_TLS_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vyre__tls_conn vyre__tls_conn;

/* Connects to host:port, verifies the server against ca_file (NULL or ""
 * for the system's CA store). 0 and *out, or -1 with why filled (and *out NULL). */
int vyre__tls_connect(const char *host, unsigned port, const char *ca_file, uint32_t connect_ms,
                      uint32_t operation_ms, vyre__tls_conn **out, char *why, size_t why_size);

/* Sends one command and reads its reply (the caller frees it with
 * freeReplyObject). -1 with why filled on any failure: the connection is
 * unusable then (vyre__tls_close it). */
int vyre__tls_command(vyre__tls_conn *c, int argc, const char **argv, const size_t *lens,
                      redisReply **reply, char *why, size_t why_size);

/* Closes and frees (NULL is a no-op). */
void vyre__tls_close(vyre__tls_conn *c);

#endif /* VYRE_REMOTE_REDIS_TLS_H */
