/*
 * redis_conn.c - see redis_conn.h.
 *
 * One TCP connection per remote, non-blocking from the start: connect
 * waits in poll() for at most the connect timeout (each address of the
 * name in turn, within the same budget). For rediss:// an OpenSSL client
 * then does the handshake. Every wait after that (handshake, sending,
 * reading) is a poll() against one deadline the caller gives for the
 * whole command, checked again after every read that returned data: a
 * server that trickles a byte at a time is stopped at the deadline as
 * surely as one that never answers (hiredis's own blocking context
 * re-arms its timeout on every read: seen running a 10 s timeout past
 * 200 s).
 *
 * A reply is received into a buffer of our own and framed by
 * vyre__resp_frame after each read; hiredis's redisReader parses it only
 * once it is whole and within bounds. A bulk string declared longer than
 * the caller's max_bulk is refused from its header, before its body is
 * read (hiredis would buffer a declared 2 GiB as it arrives).
 *
 * TLS verification: SSL_VERIFY_PEER against the remote's ca-file, or the
 * system's CA store without one; the certificate must name the host
 * (SSL_set1_host, with SNI) or, for an IP literal, carry the address (an
 * IP SAN). OpenSSL's per-thread error queue is cleared before each call
 * so that errors left by other users of OpenSSL in the thread (libcurl)
 * are never reported as ours. OpenSSL writes to the socket with write(),
 * so SIGPIPE is blocked in the calling thread around the TLS calls and a
 * SIGPIPE they raised is consumed: a server that went away is an error,
 * never the death of the process (libcurl does the same). Plain
 * connections send with MSG_NOSIGNAL.
 */
#include "cache/remote/redis_conn.h"

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

#include "base/clock.h"
#include "cache/remote/resp.h"

/* Reads go into the reply buffer this many bytes at a time at least. */
#define READ_CHUNK 16384
/* A reply buffer larger than this is freed once its reply is parsed, so
 * an idle connection keeps no object-sized buffer. */
#define KEEP_BUFFER_MAX 65536

struct vyre__rconn {
    int fd;
    SSL_CTX *ctx; /* NULL on a plain connection */
    SSL *ssl;
    redisReader *reader;
    char *in; /* the reply being received: in[0..in_len) */
    size_t in_len, in_cap;
};

/* libcore's one clock (base/clock.h), in ms for the deadlines here. */
static int64_t now_ms(void)
{
    return (int64_t)(vyre__mono_ns() / 1000000u);
}

int64_t vyre__rconn_now_ms(void)
{
    return now_ms();
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
static void ssl_why(const vyre__rconn *c, const char *what, int ret, char *why, size_t n)
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
static int ssl_wait(vyre__rconn *c, const char *what, int ret, int64_t deadline, char *why,
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

/* The TLS client on c->fd, verified for host, handshake within deadline. */
static int tls_setup(vyre__rconn *c, const char *host, const char *ca_file, int64_t deadline,
                     char *why, size_t why_size)
{
    ERR_clear_error();
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx) {
        snprintf(why, why_size, "cannot set up TLS (out of memory)");
        return -1;
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
        return -1;
    }
    c->ssl = SSL_new(c->ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
        snprintf(why, why_size, "cannot set up TLS (out of memory)");
        return -1;
    }
    /* SSL_set_tlsext_host_name is a macro that casts the name to void *
     * (clang's -Wcast-qual sees the const dropped): it gets a copy. A DNS
     * name is at most 253 characters. */
    char sni[256];
    int named = snprintf(sni, sizeof sni, "%s", host) < (int)sizeof sni;
    if (named && is_ip_literal(host))
        named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1;
    else if (named)
        named = SSL_set_tlsext_host_name(c->ssl, sni) == 1 && SSL_set1_host(c->ssl, host) == 1;
    if (!named) {
        snprintf(why, why_size, "cannot set the name '%s' to verify", host);
        return -1;
    }
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
    return hs;
}

int vyre__rconn_open(const char *host, unsigned port, int tls, const char *ca_file,
                     uint32_t connect_ms, int64_t deadline_ms, vyre__rconn **out, char *why,
                     size_t why_size)
{
    *out = NULL;
    why[0] = '\0';
    vyre__rconn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    c->fd = tcp_connect(host, port, connect_ms, why, why_size);
    if (c->fd < 0) {
        free(c);
        return -1;
    }
    c->reader = redisReaderCreate();
    if (!c->reader) {
        snprintf(why, why_size, "cannot set up the connection (out of memory)");
        goto fail;
    }
    if (tls && tls_setup(c, host, ca_file, deadline_ms, why, why_size))
        goto fail;
    *out = c;
    return 0;
fail:
    ERR_clear_error();
    vyre__rconn_close(c);
    return -1;
}

int vyre__rconn_adopt(int fd, vyre__rconn **out)
{
    *out = NULL;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -1;
    vyre__rconn *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->reader = redisReaderCreate();
    if (!c->reader) {
        free(c);
        return -1;
    }
    c->fd = fd;
    *out = c;
    return 0;
}

static int write_all(vyre__rconn *c, const char *p, size_t len, int64_t deadline, char *why,
                     size_t n)
{
    while (len) {
        if (now_ms() >= deadline) {
            snprintf(why, n, "sending: timed out");
            return -1;
        }
        if (c->ssl) {
            int chunk = len > INT32_MAX ? INT32_MAX : (int)len;
            ERR_clear_error();
            int ret = SSL_write(c->ssl, p, chunk);
            if (ret > 0) {
                p += ret;
                len -= (size_t)ret;
            } else if (ssl_wait(c, "sending", ret, deadline, why, n))
                return -1;
            continue;
        }
        ssize_t w = send(c->fd, p, len, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            len -= (size_t)w;
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(why, n, "sending: %s", strerror(errno));
            return -1;
        } else if (w < 0 && errno != EINTR) {
            int r = wait_fd(c->fd, POLLOUT, deadline);
            if (r <= 0) {
                snprintf(why, n, "sending: %s", r == 0 ? "timed out" : strerror(errno));
                return -1;
            }
        }
    }
    return 0;
}

/* Reads what has arrived (waiting until deadline for something) into
 * buf: the byte count, or -1 with why. */
static ssize_t read_some(vyre__rconn *c, char *buf, size_t cap, int64_t deadline, char *why,
                         size_t n)
{
    const char *what = "reading the reply";
    for (;;) {
        if (now_ms() >= deadline) {
            snprintf(why, n, "%s: timed out", what);
            return -1;
        }
        if (c->ssl) {
            ERR_clear_error();
            int ret = SSL_read(c->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
            if (ret > 0)
                return ret;
            if (ssl_wait(c, what, ret, deadline, why, n))
                return -1;
            continue;
        }
        ssize_t r = recv(c->fd, buf, cap, 0);
        if (r > 0)
            return r;
        if (r == 0) {
            snprintf(why, n, "%s: the server closed the connection", what);
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            snprintf(why, n, "%s: %s", what, strerror(errno));
            return -1;
        }
        int w = wait_fd(c->fd, POLLIN, deadline);
        if (w <= 0) {
            snprintf(why, n, "%s: %s", what, w == 0 ? "timed out" : strerror(errno));
            return -1;
        }
    }
}

/* Room for READ_CHUNK more bytes in c->in. 0, or -1 with why. */
static int reserve(vyre__rconn *c, char *why, size_t n)
{
    if (c->in_cap - c->in_len >= READ_CHUNK)
        return 0;
    size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
    if (cap < c->in_len + READ_CHUNK)
        cap = c->in_len + READ_CHUNK;
    char *p = realloc(c->in, cap);
    if (!p) {
        snprintf(why, n, "cannot allocate %zu bytes for the reply", cap);
        return -1;
    }
    c->in = p;
    c->in_cap = cap;
    return 0;
}

/* The whole reply c->in[0..len) through hiredis. */
static int parse_reply(vyre__rconn *c, size_t len, redisReply **reply, char *why, size_t n)
{
    void *r = NULL;
    int ok = redisReaderFeed(c->reader, c->in, len) == REDIS_OK &&
             redisReaderGetReply(c->reader, &r) == REDIS_OK;
    if (c->in_cap > KEEP_BUFFER_MAX) {
        free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
    c->in_len = 0;
    if (!ok || !r) {
        if (r)
            freeReplyObject(r);
        snprintf(why, n, "bad reply: %s", ok ? "incomplete" : c->reader->errstr);
        return -1;
    }
    *reply = r;
    return 0;
}

/* Receives one reply within deadline: 0, -1 (why), or -2 (too big). */
static int read_reply(vyre__rconn *c, int64_t deadline, uint64_t max_bulk, redisReply **reply,
                      uint64_t *declared, char *why, size_t n)
{
    c->in_len = 0;
    for (;;) {
        if (reserve(c, why, n))
            return -1;
        ssize_t got = read_some(c, c->in + c->in_len, c->in_cap - c->in_len, deadline, why, n);
        if (got < 0)
            return -1;
        c->in_len += (size_t)got;
        size_t end = 0;
        switch (vyre__resp_frame(c->in, c->in_len, max_bulk, &end, declared)) {
        case VYRE__RESP_PARTIAL:
            continue;
        case VYRE__RESP_TOOBIG:
            return -2;
        case VYRE__RESP_BAD:
            snprintf(why, n, "bad reply: not the Redis protocol at byte %zu", end);
            return -1;
        case VYRE__RESP_COMPLETE:
            if (end != c->in_len) {
                /* Nothing vyre sends is answered twice: the stream is lost. */
                snprintf(why, n, "bad reply: %zu bytes more than one reply", c->in_len - end);
                return -1;
            }
            return parse_reply(c, end, reply, why, n);
        }
    }
}

int vyre__rconn_command(vyre__rconn *c, int argc, const char **argv, const size_t *lens,
                        int64_t deadline_ms, uint64_t max_bulk, redisReply **reply,
                        uint64_t *declared, char *why, size_t why_size)
{
    *reply = NULL;
    *declared = 0;
    why[0] = '\0';
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0 || !cmd) {
        snprintf(why, why_size, "cannot format the command (out of memory)");
        return -1;
    }
    pipe_guard g;
    if (c->ssl)
        pipe_block(&g);
    int rc = write_all(c, cmd, (size_t)len, deadline_ms, why, why_size);
    redisFreeCommand(cmd);
    if (rc == 0)
        rc = read_reply(c, deadline_ms, max_bulk, reply, declared, why, why_size);
    if (c->ssl)
        pipe_restore(&g);
    return rc;
}

void vyre__rconn_close(vyre__rconn *c)
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
    free(c->in);
    free(c);
}
