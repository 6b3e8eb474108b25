/*
 * fakepg.c - see fakepg.h. One thread polls the listening socket and up to
 * MAX_CONNS connections; each connection is a small state machine over the
 * frontend protocol's first messages (no type byte until the startup is
 * done, then typed messages, which are only counted).
 */
#include "fakepg.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 16

typedef struct conn {
    int fd;
    int state; /* 0 startup, 1 ready, 2 a query came */
    unsigned char buf[1024];
    size_t n;
} conn;

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void send_all(int fd, const void *p, size_t n)
{
    (void)send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Typed message: type, int32 length, body. */
static void send_msg(int fd, char type, const void *body, size_t n)
{
    unsigned char m[512];
    m[0] = (unsigned char)type;
    put32(m + 1, (uint32_t)(n + 4));
    memcpy(m + 5, body, n);
    send_all(fd, m, n + 5);
}

/* AuthenticationOk, parameters, BackendKeyData, ReadyForQuery. */
static void send_ready(int fd)
{
    unsigned char ok[4] = {0}, key[8];
    send_msg(fd, 'R', ok, 4);
    static const char v[] = "server_version\0"
                            "15.0";
    send_msg(fd, 'S', v, sizeof v);
    static const char e[] = "client_encoding\0"
                            "UTF8";
    send_msg(fd, 'S', e, sizeof e);
    put32(key, 4242);
    put32(key + 4, 77);
    send_msg(fd, 'K', key, 8);
    send_msg(fd, 'Z', "I", 1);
}

/* The startup phase: SSL/GSS requests refused, cancels counted, the
 * startup packet answered (or not). 0: close the connection. */
static int startup(fake_pg *f, conn *c)
{
    while (c->state == 0 && c->n >= 8) {
        uint32_t len = get32(c->buf), code = get32(c->buf + 4);
        if (len < 8 || len > sizeof c->buf)
            return 0;
        if (c->n < len)
            return 1;
        if (code == 80877102) { /* CancelRequest */
            f->cancels++;
            return 0;
        }
        if (code == 80877103 || code == 80877104) /* SSLRequest, GSSENCRequest */
            send_all(c->fd, "N", 1);
        else if (f->mode == FAKE_PG_SILENT_STARTUP)
            c->state = 3; /* never answered */
        else {
            send_ready(c->fd);
            c->state = 1;
        }
        memmove(c->buf, c->buf + len, c->n - len);
        c->n -= len;
    }
    return 1;
}

static int on_input(fake_pg *f, conn *c)
{
    ssize_t r = recv(c->fd, c->buf + c->n, sizeof c->buf - c->n, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
        return 0;
    if (r < 0)
        return 1;
    c->n += (size_t)r;
    if (c->state == 0)
        return startup(f, c);
    if (c->state == 1) {
        f->queries++;
        c->state = 2;
    }
    c->n = 0; /* after the startup, what comes is only counted */
    return 1;
}

static void flood(fake_pg *f, conn *c)
{
    static const char body[] = "SNOTICE\0VNOTICE\0C00000\0Mflood\0";
    unsigned char m[64];
    m[0] = 'N';
    put32(m + 1, (uint32_t)(sizeof body + 4));
    memcpy(m + 5, body, sizeof body); /* the last '\0' ends the fields */
    for (int i = 0; i < 64; i++) {
        if (send(c->fd, m, sizeof body + 5, MSG_NOSIGNAL | MSG_DONTWAIT) <= 0)
            return;
        f->notices++;
    }
}

static void *fake_pg_main(void *p)
{
    fake_pg *f = p;
    conn cs[MAX_CONNS];
    size_t nc = 0;
    while (!f->stop) {
        struct pollfd pl[MAX_CONNS + 1];
        pl[0] = (struct pollfd){f->listen_fd, POLLIN, 0};
        for (size_t i = 0; i < nc; i++) {
            int flooding = f->mode == FAKE_PG_NOTICE_FLOOD && cs[i].state == 2;
            pl[i + 1] = (struct pollfd){cs[i].fd, (short)(POLLIN | (flooding ? POLLOUT : 0)), 0};
        }
        if (poll(pl, nc + 1, 50) <= 0)
            continue;
        for (size_t i = nc; i-- > 0;) {
            int keep = 1;
            if (pl[i + 1].revents & (POLLIN | POLLHUP | POLLERR))
                keep = on_input(f, &cs[i]);
            if (keep && (pl[i + 1].revents & POLLOUT))
                flood(f, &cs[i]);
            if (!keep) {
                close(cs[i].fd);
                cs[i] = cs[--nc];
            }
        }
        if ((pl[0].revents & POLLIN) && nc < MAX_CONNS) {
            int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                cs[nc++] = (conn){.fd = fd};
        }
    }
    for (size_t i = 0; i < nc; i++)
        close(cs[i].fd);
    return NULL;
}

void fake_pg_start(fake_pg *f, fake_pg_mode mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(f->listen_fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(f->listen_fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    cr_assert_eq(listen(f->listen_fd, 16), 0);
    cr_assert_eq(pthread_create(&f->thread, NULL, fake_pg_main, f), 0);
}

void fake_pg_stop(fake_pg *f)
{
    if (!f->port)
        return;
    f->stop = 1;
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
    f->port = 0;
}
