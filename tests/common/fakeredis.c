/*
 * fakeredis.c - see fakeredis.h.
 */
#include "fakeredis.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "servers.h"

/* Serves one connection: reads a command (whatever it is), answers it. */
static void fake_redis_serve(fake_redis *f, int fd)
{
    char req[4096];
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 2000) <= 0 || recv(fd, req, sizeof req, 0) <= 0)
        return;
    const char *head = f->mode == FAKE_REDIS_TRICKLE ? "$100000\r\n" : "$2147483647\r\n";
    if (send(fd, head, strlen(head), MSG_NOSIGNAL) != (ssize_t)strlen(head))
        return;
    if (f->mode == FAKE_REDIS_TRICKLE) {
        for (int i = 0; i < 200 && !f->stop; i++) {
            if (send(fd, "x", 1, MSG_NOSIGNAL) != 1)
                return;
            f->sent += 1;
            struct timespec ts = {0, 50 * 1000000};
            nanosleep(&ts, NULL);
        }
        return;
    }
    static char chunk[65536];
    memset(chunk, 'z', sizeof chunk);
    while (f->sent < (size_t)64 << 20 && !f->stop) {
        ssize_t w = send(fd, chunk, sizeof chunk, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        f->sent += (size_t)w;
    }
}

static void *fake_redis_main(void *arg)
{
    fake_redis *f = arg;
    while (!f->stop) {
        struct pollfd pl = {f->listen_fd, POLLIN, 0};
        if (poll(&pl, 1, 50) <= 0)
            continue;
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        f->connections++;
        fake_redis_serve(f, fd);
        close(fd);
    }
    return NULL;
}

void fake_redis_start(fake_redis *f, fake_redis_mode mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->listen_fd = ts_silent_listen(&f->port);
    cr_assert_eq(pthread_create(&f->thread, NULL, fake_redis_main, f), 0);
}

void fake_redis_stop(fake_redis *f)
{
    f->stop = 1;
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}
