/*
 * sqlutil.h - what the two SQLite stores (the cache index and the results
 * database) share: SQLite result codes mapped to vyre codes, and stepping a
 * statement with retries on SQLITE_BUSY (internal).
 */
#ifndef VYRE_SQLUTIL_H
#define VYRE_SQLUTIL_H

#include <sqlite3.h>

/* Maps a SQLite (extended) result code plus the OS errno SQLite saw to the
 * closest VYRE_E* code (full disk, read-only, corrupt, busy, ...). */
int vyre__sqlite_code(int rc, int sys_errno);

/*
 * Steps st, retrying SQLITE_BUSY until timeout_ms from now with a short
 * backoff. SQLite's busy handler already waits on most locks; this covers
 * the cases where it returns BUSY without waiting (WAL recovery, a lock
 * taken between checks). Only for statements that may be retried: BEGIN,
 * COMMIT and the first step of a read outside a transaction.
 */
int vyre__sqlite_step_retry(sqlite3_stmt *st, int timeout_ms);

#endif /* VYRE_SQLUTIL_H */
