/*
 * results_internal.h - what the runs module (runs_db.c) needs of the
 * results database's connection: the results module owns the file, its
 * schema steps and its lock; runs_db.c owns what its tables mean.
 * Not public API.
 *
 * Lock order: vyre__results_lock, then a transaction (begin, steps, commit
 * or rollback), then unlock. The connection is not safe without the lock.
 */
#ifndef VYRE_RESULTS_INTERNAL_H
#define VYRE_RESULTS_INTERNAL_H

#include <sqlite3.h>

#include "vyre/results.h"

/* Tuning (not API): how long a statement waits for another writer, the
 * pending rows that make vyre_results_writer_add flush, and the rows kept
 * while flushes fail. */
#define VYRE_RESULTS_BUSY_TIMEOUT_MS 10000
#define VYRE_RESULTS_BATCH           1024
#define VYRE_RESULTS_PENDING_MAX     65536

/* The connection (owned by db). Use under vyre__results_lock only. */
sqlite3 *vyre__results_sqlite(vyre_results *db);

void vyre__results_lock(vyre_results *db);
void vyre__results_unlock(vyre_results *db);

/* BEGIN IMMEDIATE (waits for the write lock up to the busy timeout),
 * COMMIT (rolls back when it fails), ROLLBACK. `what` completes "cannot
 * <what> results database '<path>'". */
int vyre__results_begin(vyre_results *db, const char *what, vyre_error *err);
int vyre__results_commit(vyre_results *db, const char *what, vyre_error *err);
void vyre__results_rollback(vyre_results *db);

/* Fills err from an SQLite result code with the path, a vyre code and a
 * hint; returns the vyre code. */
int vyre__results_fail(vyre_results *db, int sqlite_rc, const char *what, vyre_error *err);

/* sqlite3_step, retrying SQLITE_BUSY up to the busy timeout. */
int vyre__results_step(sqlite3_stmt *st);

#endif /* VYRE_RESULTS_INTERNAL_H */
