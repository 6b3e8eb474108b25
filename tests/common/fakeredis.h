/*
 * fakeredis.h - a fake Redis server (a thread on a loopback port) for
 * what no real server does on demand: answer a GET with a bulk string it
 * trickles one byte at a time, or with a declared length of 2 GiB that it
 * then streams. It reads one command per connection (whatever it is),
 * answers it and closes.
 */
#ifndef VYRE_TEST_FAKEREDIS_H
#define VYRE_TEST_FAKEREDIS_H

#include <pthread.h>
#include <stddef.h>

typedef enum fake_redis_mode {
    FAKE_REDIS_TRICKLE = 1, /* "$100000\r\n", then one byte every 50 ms (10 s at most) */
    FAKE_REDIS_HUGE,        /* "$2147483647\r\n", then 64 MiB as fast as it goes, then close */
} fake_redis_mode;

typedef struct fake_redis {
    int listen_fd;
    int port;
    fake_redis_mode mode;
    pthread_t thread;
    volatile int stop;
    volatile size_t sent;     /* body bytes the kernel took, all connections */
    volatile int connections; /* accepted */
} fake_redis;

/* Starts it on a free loopback port (f->port). */
void fake_redis_start(fake_redis *f, fake_redis_mode mode);

/* Stops the thread and closes the port. */
void fake_redis_stop(fake_redis *f);

#endif /* VYRE_TEST_FAKEREDIS_H */
