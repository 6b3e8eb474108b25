/*
 * store.h - the results store behind one operations table: the same SQL,
 * the same transactions and the same run states on SQLite (a local file,
 * store_sqlite.c) and on PostgreSQL (a shared server through libpq,
 * store_pg.c), as libcore/src/cache/remote/ puts HTTP and Redis behind one
 * table. Not public API.
 *
 * The table is statement-level, not a list of what the bench does: the
 * runs module (runs_db.c) and the timings writer (results.c) write their
 * SQL once, in the portable subset both engines read:
 *   - parameters are numbered "?N" (store_dialect.c turns them into
 *     PostgreSQL's "$N" outside literals and comments);
 *   - new ids come back through "INSERT ... RETURNING id", and "did an
 *     UPDATE hit a row" through "UPDATE ... RETURNING id" (SQLite >= 3.35),
 *     never through sqlite3_last_insert_rowid or sqlite3_changes;
 *   - no engine-only function: the one aggregate that differs (a distinct
 *     list joined with commas) is the ops table's agg_open/agg_close.
 * The schema itself is db/results_vN.sql, run as it is on SQLite and
 * through store_dialect.c's documented rewrite on PostgreSQL.
 *
 * A stmt belongs to the store that prepared it and is used under that
 * store's owner's lock (results_internal.h). step returns 1 for a row, 0
 * when done, or a negative VYRE_E* code with err filled (the store's
 * location in it, its password masked). Text columns returned by col_text
 * live until the next step, reset or finalize.
 */
#ifndef VYRE_BENCH_STORE_H
#define VYRE_BENCH_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

typedef struct vyre__store vyre__store;
typedef struct vyre__stmt vyre__stmt;

typedef struct vyre__store_ops {
    const char *engine; /* "sqlite", "postgresql" */
    /* A comma-joined list of distinct values: agg_open, a column, agg_close
     * ("group_concat(DISTINCT " x ")", "string_agg(DISTINCT " x ", ',')") */
    const char *agg_open, *agg_close;
    int (*prepare)(vyre__store *s, const char *sql, vyre__stmt **out, vyre_error *err);
    void (*bind_int64)(vyre__stmt *st, int i, int64_t v);
    void (*bind_double)(vyre__stmt *st, int i, double v);
    void (*bind_text)(vyre__stmt *st, int i, const char *z, size_t len);
    void (*bind_null)(vyre__stmt *st, int i);
    int (*step)(vyre__stmt *st, const char *what, vyre_error *err);
    int (*is_null)(vyre__stmt *st, int i);
    int64_t (*col_int64)(vyre__stmt *st, int i);
    double (*col_double)(vyre__stmt *st, int i);
    const char *(*col_text)(vyre__stmt *st, int i); /* NULL for NULL */
    void (*reset)(vyre__stmt *st);                  /* bindings are kept */
    void (*finalize)(vyre__stmt *st);               /* NULL is a no-op */
    /* A write transaction: SQLite's BEGIN IMMEDIATE (the write lock up
     * front), PostgreSQL's BEGIN. commit rolls back when it fails. */
    int (*begin)(vyre__store *s, const char *what, vyre_error *err);
    /* Inside a write transaction: waits (up to the store's lock timeout)
     * until no other session holds key, and holds it to the transaction's
     * end. PostgreSQL: a transaction-scoped advisory lock, so that two
     * clients checking "is it there yet?" before inserting are serialised
     * (READ COMMITTED lets both see nothing). SQLite: nothing to do, its
     * BEGIN IMMEDIATE already serialises every writer of the file. */
    int (*lock_key)(vyre__store *s, uint32_t key, const char *what, vyre_error *err);
    int (*commit)(vyre__store *s, const char *what, vyre_error *err);
    void (*rollback)(vyre__store *s);
    /* After a failed (rolled back) write transaction: 1 when it failed
     * because the session was lost before COMMIT was sent and the
     * session is back, so doing it again cannot write anything twice.
     * NULL: never (SQLite has no session to lose). */
    int (*again)(vyre__store *s);
    void (*close)(vyre__store *s);
} vyre__store_ops;

/* Every backend's store and statement start with these. */
struct vyre__store {
    const vyre__store_ops *ops;
};
struct vyre__stmt {
    const vyre__store_ops *ops;
};

/* Opens the SQLite file at path (results.c has checked the path) or the
 * PostgreSQL server at url (postgresql://...), creating or migrating the
 * schema. Free with s->ops->close. Errors as vyre_results_open. */
int vyre__store_sqlite_open(const char *path, vyre__store **out, vyre_error *err);
int vyre__store_pg_open(const char *url, vyre__store **out, vyre_error *err);

/* Short forms of the table's calls. */
static inline int vyre__stmt_prepare(vyre__store *s, const char *sql, vyre__stmt **out,
                                     vyre_error *err)
{
    return s->ops->prepare(s, sql, out, err);
}
static inline void vyre__stmt_int64(vyre__stmt *st, int i, int64_t v)
{
    st->ops->bind_int64(st, i, v);
}
static inline void vyre__stmt_double(vyre__stmt *st, int i, double v)
{
    st->ops->bind_double(st, i, v);
}
static inline void vyre__stmt_text(vyre__stmt *st, int i, const char *z, size_t len)
{
    st->ops->bind_text(st, i, z, len);
}
static inline void vyre__stmt_null(vyre__stmt *st, int i)
{
    st->ops->bind_null(st, i);
}
static inline int vyre__stmt_step(vyre__stmt *st, const char *what, vyre_error *err)
{
    return st->ops->step(st, what, err);
}
static inline int vyre__stmt_is_null(vyre__stmt *st, int i)
{
    return st->ops->is_null(st, i);
}
static inline int64_t vyre__stmt_col_int64(vyre__stmt *st, int i)
{
    return st->ops->col_int64(st, i);
}
static inline double vyre__stmt_col_double(vyre__stmt *st, int i)
{
    return st->ops->col_double(st, i);
}
static inline const char *vyre__stmt_col_text(vyre__stmt *st, int i)
{
    return st->ops->col_text(st, i);
}
static inline void vyre__stmt_reset(vyre__stmt *st)
{
    st->ops->reset(st);
}
static inline void vyre__stmt_finalize(vyre__stmt *st)
{
    if (st)
        st->ops->finalize(st);
}

#endif /* VYRE_BENCH_STORE_H */
