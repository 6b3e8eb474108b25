/*
 * remote_redis_tls.c - see remote_redis_tls.h.
 *
 * One TCP connection per remote, non-blocking from the start: connect
 * waits in poll() for at most the connect timeout (each address of the
 * name in turn, within the same budget); the TLS handshake and every
 * command then wait in poll() before each SSL_read/SSL_write that asked
 * for it (WANT_READ/WANT_WRITE), within the operation timeout, so a server
 * that accepts the TCP connection and never answers costs at most that.
 * Verification: SSL_VERIFY_PEER against the remote's ca-file, or the
 * system's CA store without one; the certificate must name the host
 * (SSL_set1_host, with SNI) or, for an IP literal, carry the address (an
 * IP SAN). OpenSSL's
 * per-thread error queue is cleared before each call so that errors left
 * by other users of OpenSSL in the thread (libcurl) are never reported as
 * ours. OpenSSL writes to the socket with write(), so SIGPIPE is blocked
 * in the calling thread around the TLS calls and a SIGPIPE they raised is
 * consumed: a server that went away is an error, never the death of the
 * process (libcurl does the same).
 */
#include "cache/remote_redis_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct vyre__tls_conn {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    redisReader *reader;
    uint32_t operation_ms;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct pipe_guard {
    sigset_t old;
    int was_pending;
} pipe_guard;

static void pipe_block(pipe_guard *g)
{
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

static void pipe_restore(const pipe_guard *g)
{
    int saved = errno;
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return 1;
        if (n == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* A TCP connection to one address within deadline: the fd or -1. */
static int connect_addr(const struct addrinfo *ai, int64_t deadline, char *why, size_t n)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        snprintf(why, n, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            snprintf(why, n, "connect: %s", strerror(errno));
            close(fd);
            return -1;
        }
        int w = wait_fd(fd, POLLOUT, deadline);
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (w <= 0) {
            snprintf(why, n, "connect: %s", w == 0 ? "timed out" : strerror(errno));
            close(fd);
            return -1;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
            snprintf(why, n, "connect: %s", strerror(soerr ? soerr : errno));
            close(fd);
            return -1;
        }
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int tcp_connect(const char *host, unsigned port, uint32_t connect_ms, char *why, size_t n)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g != 0) {
        snprintf(why, n, "cannot resolve '%s': %s", host, gai_strerror(g));
        return -1;
    }
    int64_t deadline = now_ms() + connect_ms;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0 && now_ms() < deadline; ai = ai->ai_next)
        fd = connect_addr(ai, deadline, why, n);
    if (fd < 0 && !why[0])
        snprintf(why, n, "connect: timed out");
    freeaddrinfo(res);
    return fd;
}

/* Why the last SSL call failed, into why. */
static void ssl_why(const vyre__tls_conn *c, const char *what, int ret, char *why, size_t n)
{
    int e = SSL_get_error(c->ssl, ret);
    long vr = SSL_get_verify_result(c->ssl);
    unsigned long q = ERR_peek_last_error();
    if (vr != X509_V_OK)
        snprintf(why, n, "%s: the server's certificate is refused: %s", what,
                 X509_verify_cert_error_string(vr));
    else if (q) {
        char buf[256];
        ERR_error_string_n(q, buf, sizeof buf);
        snprintf(why, n, "%s: %s", what, buf);
    } else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ret == 0))
        snprintf(why, n, "%s: the server closed the connection", what);
    else if (e == SSL_ERROR_SYSCALL)
        snprintf(why, n, "%s: %s", what, errno ? strerror(errno) : "I/O error");
    else
        snprintf(why, n, "%s: TLS error %d", what, e);
    ERR_clear_error();
}

/* Waits for what the last SSL call asked for: 0 to retry, -1 with why. */
static int ssl_wait(vyre__tls_conn *c, const char *what, int ret, int64_t deadline, char *why,
                    size_t n)
{
    int e = SSL_get_error(c->ssl, ret);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        ssl_why(c, what, ret, why, n);
        return -1;
    }
    int w = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
    if (w == 1)
        return 0;
    snprintf(why, n, "%s: %s", what, w == 0 ? "timed out" : strerror(errno));
    return -1;
}

static int is_ip_literal(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

int vyre__tls_connect(const char *host, unsigned port, const char *ca_file, uint32_t connect_ms,
                      uint32_t operation_ms, vyre__tls_conn **out, char *why, size_t why_size)
{
    *out = NULL;
    why[0] = '\0';
    vyre__tls_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    c->operation_ms = operation_ms;
    c->fd = tcp_connect(host, port, connect_ms, why, why_size);
    if (c->fd < 0) {
        free(c);
        return -1;
    }
    ERR_clear_error();
    c->ctx = SSL_CTX_new(TLS_client_method());
    c->reader = redisReaderCreate();
    if (!c->ctx || !c->reader) {
        snprintf(why, why_size, "cannot set up TLS (out of memory)");
        goto fail;
    }
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    /* The fleet's CA file replaces the system's store (as CURLOPT_CAINFO
     * does for https://): a private CA's store is trusted for exactly that. */
    if (!ca_file || !ca_file[0]) {
        if (SSL_CTX_set_default_verify_paths(c->ctx) != 1)
            ERR_clear_error(); /* no system CAs: every chain fails to verify */
    } else if (SSL_CTX_load_verify_locations(c->ctx, ca_file, NULL) != 1) {
        char buf[256];
        ERR_error_string_n(ERR_peek_last_error(), buf, sizeof buf);
        snprintf(why, why_size, "cannot load CA file '%s': %s", ca_file, buf);
        goto fail;
    }
    c->ssl = SSL_new(c->ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
        snprintf(why, why_size, "cannot set up TLS (out of memory)");
        goto fail;
    }
    int named;
    if (is_ip_literal(host))
        named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1;
    else
        named = SSL_set_tlsext_host_name(c->ssl, host) == 1 && SSL_set1_host(c->ssl, host) == 1;
    if (!named) {
        snprintf(why, why_size, "cannot set the name '%s' to verify", host);
        goto fail;
    }
    int64_t deadline = now_ms() + operation_ms;
    pipe_guard g;
    pipe_block(&g);
    int hs;
    for (;;) {
        ERR_clear_error();
        int ret = SSL_connect(c->ssl);
        if (ret == 1) {
            hs = 0;
            break;
        }
        if (ssl_wait(c, "TLS handshake", ret, deadline, why, why_size)) {
            hs = -1;
            break;
        }
    }
    pipe_restore(&g);
    if (hs)
        goto fail;
    *out = c;
    return 0;
fail:
    ERR_clear_error();
    vyre__tls_close(c);
    return -1;
}

static int write_all(vyre__tls_conn *c, const char *p, size_t len, int64_t deadline, char *why,
                     size_t n)
{
    while (len) {
        int chunk = len > INT32_MAX ? INT32_MAX : (int)len;
        ERR_clear_error();
        int ret = SSL_write(c->ssl, p, chunk);
        if (ret > 0) {
            p += ret;
            len -= (size_t)ret;
        } else if (ssl_wait(c, "sending", ret, deadline, why, n))
            return -1;
    }
    return 0;
}

static int command(vyre__tls_conn *c, int argc, const char **argv, const size_t *lens,
                   redisReply **reply, char *why, size_t why_size)
{
    *reply = NULL;
    why[0] = '\0';
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0 || !cmd) {
        snprintf(why, why_size, "cannot format the command (out of memory)");
        return -1;
    }
    int64_t deadline = now_ms() + c->operation_ms;
    int rc = write_all(c, cmd, (size_t)len, deadline, why, why_size);
    redisFreeCommand(cmd);
    if (rc)
        return -1;
    char buf[16384];
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
            snprintf(why, why_size, "bad reply: %s", c->reader->errstr);
            return -1;
        }
        if (r) {
            *reply = r;
            return 0;
        }
        ERR_clear_error();
        int ret = SSL_read(c->ssl, buf, sizeof buf);
        if (ret > 0) {
            if (redisReaderFeed(c->reader, buf, (size_t)ret) != REDIS_OK) {
                snprintf(why, why_size, "bad reply: %s", c->reader->errstr);
                return -1;
            }
        } else if (ssl_wait(c, "reading the reply", ret, deadline, why, why_size))
            return -1;
    }
}

int vyre__tls_command(vyre__tls_conn *c, int argc, const char **argv, const size_t *lens,
                      redisReply **reply, char *why, size_t why_size)
{
    pipe_guard g;
    pipe_block(&g);
    int rc = command(c, argc, argv, lens, reply, why, why_size);
    pipe_restore(&g);
    return rc;
}

void vyre__tls_close(vyre__tls_conn *c)
{
    if (!c)
        return;
    if (c->ssl)
        SSL_free(c->ssl);
    if (c->ctx)
        SSL_CTX_free(c->ctx);
    if (c->reader)
        redisReaderFree(c->reader);
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}
