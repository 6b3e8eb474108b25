/*
 * lockholder.h - holds a SQLite database locked from another process, as
 * a long writer does: a child process opens it with
 * PRAGMA locking_mode=EXCLUSIVE (no shared-memory WAL index: every other
 * connection, reader or writer, waits) and BEGIN EXCLUSIVE, and keeps the
 * lock until released. For the tests of what must not wait on a busy
 * index (the monitors) and what must wait within a bound.
 */
#ifndef VYRE_TEST_LOCKHOLDER_H
#define VYRE_TEST_LOCKHOLDER_H

#include <sys/types.h>

typedef struct tu_lockholder {
    pid_t pid;
    int release_fd; /* closing it lets the child go */
} tu_lockholder;

/* Returns once the child holds the lock on path (asserts on failure). */
void tu_lock_hold(tu_lockholder *h, const char *path);

/* Releases the lock and reaps the child. */
void tu_lock_release(tu_lockholder *h);

#endif /* VYRE_TEST_LOCKHOLDER_H */
