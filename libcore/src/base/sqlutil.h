/*
 * sqlutil.h - what the two SQLite stores (the cache index and the results
 * database) share: SQLite result codes mapped to vyre codes, and stepping a
 * statement with retries on SQLITE_BUSY (internal).
 */
#ifndef VYRE_SQLUTIL_H
#define VYRE_SQLUTIL_H

#include <sqlite3.h>
#include <stddef.h>

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

/*
 * Runs a one-row, one-column query (not cached: for open-time pragmas) and
 * stores the value as a number (num) and/or text (text, text_size); either
 * may be NULL. Returns SQLITE_OK, or the SQLite error (SQLITE_ERROR when
 * the query returned no row).
 */
int vyre__sqlite_query_value(sqlite3 *db, const char *sql, int timeout_ms, sqlite3_int64 *num,
                             char *text, size_t text_size);

/* What a store looks at before trusting a file: its schema version, its
 * application id (whose file it is) and how many objects it holds. */
typedef struct vyre__sqlite_schema {
    sqlite3_int64 user_version;
    sqlite3_int64 application_id;
    sqlite3_int64 objects; /* entries in sqlite_master */
} vyre__sqlite_schema;

/* Reads the three; reading the header is where a file that is not a
 * database fails. Returns SQLITE_OK or the SQLite error. */
int vyre__sqlite_read_schema(sqlite3 *db, int timeout_ms, vyre__sqlite_schema *s);

#endif /* VYRE_SQLUTIL_H */
