/*
 * results_internal.h - what the runs module (runs_*.c) needs of the
 * results database's connection: the results module owns the store (an
 * engine behind store.h's operations table), its schema steps and its
 * lock; the runs module owns what its tables mean. Not public API.
 *
 * Lock order: vyre__results_lock, then a transaction (begin, steps, commit
 * or rollback), then unlock. The connection is not safe without the lock.
 */
#ifndef VYRE_RESULTS_INTERNAL_H
#define VYRE_RESULTS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "bench/store.h"
#include "vyre/results.h"

/* Tuning (not API): how long a statement waits for another writer, the
 * pending rows that make vyre_results_writer_add flush, and the rows kept
 * while flushes fail. */
#define VYRE_RESULTS_BUSY_TIMEOUT_MS 10000
#define VYRE_RESULTS_BATCH           1024
#define VYRE_RESULTS_PENDING_MAX     65536

/* db/results_vN.sql in order: step v takes schema version v to v + 1, on
 * either engine (results.c). */
extern const char *const vyre__results_schema_steps[VYRE_RESULTS_SCHEMA_VERSION];

/* The store (owned by db). Use under vyre__results_lock only. */
vyre__store *vyre__results_store(vyre_results *db);

void vyre__results_lock(vyre_results *db);
void vyre__results_unlock(vyre_results *db);

/* A write transaction (SQLite: BEGIN IMMEDIATE, waiting for the write
 * lock up to the busy timeout; PostgreSQL: BEGIN), COMMIT (rolls back
 * when it fails), ROLLBACK. `what` completes "cannot <what> results
 * database '<where>'". */
int vyre__results_begin(vyre_results *db, const char *what, vyre_error *err);
/* Inside the write transaction: the store's lock_key (store.h). */
int vyre__results_lock_key(vyre_results *db, uint32_t key, const char *what, vyre_error *err);
int vyre__results_commit(vyre_results *db, const char *what, vyre_error *err);
void vyre__results_rollback(vyre_results *db);

/* A write transaction's statements (inside BEGIN; not committing). */
typedef int (*vyre__tx_fn)(vyre_results *db, void *arg, vyre_error *err);

/* One write transaction, whole: lock, BEGIN, fn, COMMIT (ROLLBACK when
 * fn fails), unlock. A server session lost before COMMIT was sent (a
 * restart mid-transaction: the server rolled it back, nothing of it was
 * written) is sought again and the transaction done once more from the
 * start, up to three times in all; fn must therefore leave nothing
 * behind in its caller's state that a second call would not redo. A
 * session lost while COMMIT was on the wire is not retried: the
 * transaction may have been written, and doing it again could write it
 * twice. */
int vyre__results_tx(vyre_results *db, const char *what, vyre__tx_fn fn, void *arg,
                     vyre_error *err);

/* Prepares sql (store.h's portable subset) on db's store. */
int vyre__results_prepare(vyre_results *db, const char *sql, vyre__stmt **st, vyre_error *err);

/* runs_secrets.c: a command line with every password masked (into buf,
 * cut to size), and the runs rows already stored masked the same way
 * (one write transaction, only when a row holds a secret): 0 or the
 * error (a read-only store cannot be cleaned; its reads are masked). */
void vyre__runs_mask_command_line(const char *in, char *buf, size_t size);
int vyre__runs_mask_stored(vyre_results *db, vyre_error *err);

/* The handle (vyre/results.h): its engine and the write transactions it
 * counted. Defined here so results.c (open, close, the activity writer) and
 * results_tx.c (transactions) share it. */
struct vyre_results {
    pthread_mutex_t mu;
    vyre__store *store; /* the engine: its connection, transactions and failures */
    /* Write transactions and the time they took, begin to commit or
     * rollback (vyre_results_write_stats); under mu. */
    int64_t tx_start_ns, tx_ns;
    uint64_t tx_count;
    char path[]; /* as opened; a URL with its password masked */
};

/* ---- not exported (vyre/results.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * Creates a timings writer on db. run_id > 0 fills timings.run_id (a bench
 * run); 0 leaves it NULL. Rows carry this host, this process id and the
 * time the writer was created (session_ns). Returns 0 and *out (free with
 * vyre_results_writer_free), VYRE_EINVAL or VYRE_ENOMEM.
 */
int vyre_results_writer_new(vyre_results *db, int64_t run_id, vyre_results_writer **out,
                            vyre_error *err);

/*
 * Queues n records as timings rows (kind NONE records are ignored). When
 * VYRE_RESULTS_BATCH or more rows are pending, flushes them (one
 * transaction). Records with a time or size above INT64_MAX are refused
 * as a whole call: VYRE_ERANGE, nothing queued. Past
 * VYRE_RESULTS_PENDING_MAX pending rows (flushes keep failing) new rows are
 * dropped and counted, and the call returns the flush error. Thread-safe.
 */
int vyre_results_writer_add(vyre_results_writer *w, const vyre_activity *recs, size_t n,
                            vyre_error *err);

/* Writes every pending row in one transaction. On failure the rows stay
 * pending for the next flush. Thread-safe. */
int vyre_results_writer_flush(vyre_results_writer *w, vyre_error *err);

/* A vyre_activity_sink_fn: `writer` is a vyre_results_writer. Errors go to
 * the writer's stats (last_error, last_message). Register with
 * vyre_cupti_add_sink(vyre_results_writer_sink, w, &err). */
void vyre_results_writer_sink(const vyre_activity *recs, size_t n, void *writer);

/* Copies the writer's statistics. Thread-safe. */
void vyre_results_writer_stats_get(vyre_results_writer *w, vyre_results_writer_stats *out);

/* Flushes what is pending, best effort (call vyre_results_writer_flush
 * first to see errors: rows that fail here are lost), and frees the
 * writer. Remove it from the CUPTI sinks first (vyre_cupti_remove_sink).
 * NULL is a no-op. */
void vyre_results_writer_free(vyre_results_writer *w);

#endif /* VYRE_RESULTS_INTERNAL_H */
