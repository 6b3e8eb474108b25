/*
 * sqlutil.h - what the two SQLite stores (the cache index and the results
 * database) share (internal): one way to open a store's file (pragmas,
 * schema check, journal mode, migration), one transaction layer (BEGIN
 * IMMEDIATE, COMMIT, ROLLBACK with busy handling), one way to word an
 * SQLite failure, and the small helpers under them.
 *
 * Journal mode: WAL on local disks, the rollback journal on network and
 * cluster filesystems (statfs), where WAL's shared-memory file does not
 * work across hosts. Writes run under BEGIN IMMEDIATE: the write lock is
 * taken up front, so two processes never deadlock upgrading a read lock,
 * and a busy lock is waited for (SQLite's busy timeout, then our own retry
 * until the same deadline) instead of surfacing SQLITE_BUSY.
 *
 * Nothing runs without a bound: a progress handler stops any statement
 * that keeps the SQLite VM busy longer than the store's statement limit
 * (time spent waiting for a lock does not count), and open refuses a file
 * whose schema objects (tables, indexes, triggers, views) are not exactly
 * those the store's own steps create: anyone who can write the file could
 * otherwise add a trigger that runs on every insert (a recursive CTE in
 * one hung every put forever).
 */
#ifndef VYRE_SQLUTIL_H
#define VYRE_SQLUTIL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

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

/* ---- journal mode -------------------------------------------------------- */

enum vyre__sqlite_journal { VYRE__SQLITE_JOURNAL_WAL = 1, VYRE__SQLITE_JOURNAL_ROLLBACK = 2 };

/* The journal mode for a filesystem of statfs() type f_type:
 * VYRE__SQLITE_JOURNAL_ROLLBACK on network and cluster filesystems (NFS,
 * SMB/CIFS, FUSE, 9p, Lustre, Ceph, GPFS, ...), VYRE__SQLITE_JOURNAL_WAL
 * otherwise. */
int vyre__sqlite_journal_for_fstype(long f_type);

/* The journal mode for a database file at path, from the filesystem of the
 * directory holding it; the rollback journal when that cannot be told (it
 * works everywhere, WAL does not). */
int vyre__sqlite_journal_for_path(const char *path);

/* ---- a store's connection --------------------------------------------------- */

typedef struct vyre__sqlite vyre__sqlite;

/* What one kind of store is: its words, its schema and its rules. */
typedef struct vyre__sqlite_store {
    const char *noun;                  /* "index": "cannot open index '<path>': ..." */
    const char *(*hint_for)(int code); /* the hint for a VYRE_E* code (may return NULL) */
    /* Optional: the front end's command that helps with a failure of this
     * code (a damaged index: rebuild it), attached as err->remedy. */
    vyre_remedy (*remedy_for)(int code);
    const char *corrupt_note; /* appended to VYRE_ECORRUPT failures, or NULL */
    const char *schema_note;  /* appended to "does not have the expected schema: <why>" */
    int busy_timeout_ms;
    /* VM time one statement may run before it is stopped (0: the default,
     * VYRE__SQLITE_STATEMENT_MS). */
    int statement_ms;
    int schema_version;           /* PRAGMA user_version this build writes */
    sqlite3_int64 application_id; /* PRAGMA application_id of the store's files */
    /* steps[v] takes user_version v to v + 1 (schema_version entries). All
     * pending steps run in one BEGIN IMMEDIATE transaction with the
     * user_version update, so another process sees the old schema or the
     * new one, never a mixture. */
    const char *const *steps;
    /* The store's rules for a file it found (foreign, too new, ...); runs
     * before anything is written, and again under the write lock before a
     * migration. Fills err and returns its code to refuse. */
    int (*check)(const vyre__sqlite *c, const vyre__sqlite_schema *s, vyre_error *err);
    /* Optional: runs inside the migration transaction after the steps. */
    int (*migrated)(vyre__sqlite *c, vyre_error *err);
} vyre__sqlite_store;

/* vyre__sqlite_open flags. */
enum {
    VYRE__SQLITE_READONLY = 1,          /* never creates, migrates or changes the journal mode */
    VYRE__SQLITE_JOURNAL_AT_CREATE = 2, /* choose the journal mode for a new file only */
    VYRE__SQLITE_DURABLE = 4,           /* synchronous=FULL; else NORMAL in WAL (may lose the last
                                           transactions on power loss, never corrupts) */
};

/* The statement limit of a store that sets none. Generous: a legitimate
 * statement of either store runs for milliseconds. */
#define VYRE__SQLITE_STATEMENT_MS 30000

/* An open store. Fields are read-only to the store's module. The
 * connection's progress handler points at it: it must not move while
 * open. */
struct vyre__sqlite {
    sqlite3 *db;
    sqlite3_stmt *st_begin, *st_commit, *st_rollback;
    const vyre__sqlite_store *store;
    const char *path; /* the caller's string: must outlive the connection */
    unsigned flags;
    int journal; /* enum vyre__sqlite_journal in force */
    /* The statement bound (sqlutil.c's progress handler): VM time of the
     * statement running, when the handler last ran, and whether it
     * stopped the last statement. */
    int64_t run_ms, last_ms;
    int stopped;
};

/*
 * Opens path as a store: a connection (SQLITE_OPEN_NOMUTEX: the store
 * serialises its calls), extended result codes, the busy timeout, the
 * statement bound, defensive mode with untrusted schema and cell checks
 * (the file may be damaged or foreign), then reads the schema state (where
 * a file that is not a database fails) and runs store->check and the
 * schema-object check (VYRE_ECORRUPT naming the first object the steps
 * for the file's version do not create, or the first they create that is
 * missing; SQLite's own sqlite_stat tables of ANALYZE are allowed) before
 * anything is written,
 * sets the journal mode, and creates or migrates the schema (unless
 * READONLY). On failure c is closed and err says why (messages as
 * vyre__sqlite_fail); a refused file is left as it was.
 */
int vyre__sqlite_open(vyre__sqlite *c, const char *path, const vyre__sqlite_store *store,
                      unsigned flags, vyre_error *err);

/* The schema-object check of open, again (verify runs it: another
 * process may have changed the file since): 0, or VYRE_ECORRUPT with err
 * naming the object. */
int vyre__sqlite_check_objects(vyre__sqlite *c, vyre_error *err);

/* Finalises the transaction statements and closes; a closed or zeroed c is
 * a no-op. Finalise the store's own statements first. */
void vyre__sqlite_close(vyre__sqlite *c);

/* Fills err for SQLite result rc on c ("cannot <what> <noun> '<path>':
 * <SQLite's message>", with the wait for a busy lock or the store's
 * corrupt note) with the store's hint, and returns the VYRE_E* code. Call
 * it before another SQLite call overwrites the message. */
int vyre__sqlite_fail(const vyre__sqlite *c, int rc, const char *what, vyre_error *err);

/* sqlite3_exec of sql; failures as vyre__sqlite_fail(what). */
int vyre__sqlite_exec(vyre__sqlite *c, const char *sql, const char *what, vyre_error *err);

/* Prepares a statement kept for the connection's life. SQLITE_ERROR ("no
 * such table/column") means the file is not of our schema: VYRE_ECORRUPT. */
int vyre__sqlite_prepare(vyre__sqlite *c, const char *sql, sqlite3_stmt **st, vyre_error *err);

/* BEGIN IMMEDIATE, waiting for the write lock up to the busy timeout. */
int vyre__sqlite_begin(vyre__sqlite *c, const char *what, vyre_error *err);

/* COMMIT; when it fails, rolls back and fails. */
int vyre__sqlite_commit(vyre__sqlite *c, const char *what, vyre_error *err);

/* ROLLBACK, unless SQLite already rolled back (FULL, IOERR, ...). */
void vyre__sqlite_rollback(vyre__sqlite *c);

/* Fails with rc from statement st inside a transaction: fills err, resets
 * st and rolls the transaction back. */
int vyre__sqlite_abort(vyre__sqlite *c, sqlite3_stmt *st, int rc, const char *what,
                       vyre_error *err);

#endif /* VYRE_SQLUTIL_H */
