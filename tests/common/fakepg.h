/*
 * fakepg.h - a fake PostgreSQL server (a thread on a loopback port) for
 * what no real server does on demand: never answer the startup, complete
 * the startup (trust authentication) and then never answer a query, or
 * answer a query with an endless flood of NoticeResponse messages. It
 * answers SSL and GSS encryption requests with 'N' and counts cancel
 * requests (then closes them, as the postmaster does).
 */
#ifndef VYRE_TEST_FAKEPG_H
#define VYRE_TEST_FAKEPG_H

#include <pthread.h>

typedef enum fake_pg_mode {
    FAKE_PG_SILENT_STARTUP = 1, /* reads the startup packet, never answers */
    FAKE_PG_SILENT_QUERY,       /* authentication ok, ready; then silent */
    FAKE_PG_NOTICE_FLOOD,       /* ready; a query gets notices, forever */
} fake_pg_mode;

typedef struct fake_pg {
    int listen_fd;
    int port;
    fake_pg_mode mode;
    pthread_t thread;
    volatile int stop;
    volatile int queries;  /* sessions that sent a query */
    volatile int cancels;  /* cancel requests received */
    volatile long notices; /* NoticeResponse messages sent */
} fake_pg;

/* Starts it on a free loopback port (f->port). */
void fake_pg_start(fake_pg *f, fake_pg_mode mode);

/* Stops the thread, closes every connection and the port. */
void fake_pg_stop(fake_pg *f);

#endif /* VYRE_TEST_FAKEPG_H */
