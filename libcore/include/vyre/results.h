/*
 * vyre/results.h - the results database: timings captured by CUPTI and
 * benchmark runs (vyre/bench.h: runs, points, samples), kept in a local
 * SQLite file or in a PostgreSQL server a fleet shares.
 *
 * This header is part of libvyrecore's public API.
 *
 * Where it is (vyre_results_locate): the location the caller names (the
 * tools' --db), else VYRE_RESULTS_DB, else results_db of the user's
 * vyre.conf (vyre/config.h; refused from a file owned by anybody but the
 * user or root, since it makes the tool send the user's password to that
 * server), else $XDG_DATA_HOME/vyre/results.sqlite3, else
 * $HOME/.local/share/vyre/results.sqlite3.
 *
 * A location that starts with postgresql:// or postgres:// is a
 * PostgreSQL server (libpq's URL: postgresql://user@host:port/db?params).
 * It has the same schema (db/results_vN.sql through a documented rewrite,
 * see libcore/src/bench/store_dialect.c), the same transactions (one per
 * flush, per point, per run state change: a server that dies mid-run
 * leaves nothing half-written) and the same run states. Credentials come
 * from the URL, PGPASSFILE / ~/.pgpass, or a password-file=PATH parameter
 * (the file must be the user's and mode 0600, else it is refused); they
 * are never shown: vyre_results_path and every message carry the location
 * masked (vyre_results_mask). TLS is libpq's sslmode parameter
 * (sslmode=verify-full&sslrootcert=PATH checks the server's certificate
 * and name). Every wait on the server is bounded on our side, whatever the
 * server does: each connect by 10 s (the URL's connect_timeout=N, else
 * its timeout=S), each statement by 60 s of wall clock from send to
 * result (the URL's timeout=S, vyre's own parameter, taken out before
 * libpq sees the URL); past it the statement is cancelled, the connection
 * closed and the call fails with VYRE_EREMOTE naming the server
 * (host:port). statement_timeout and lock_timeout on the session, and TCP
 * keepalives and tcp_user_timeout, stay as the server's own bounds.
 * A session the server dropped (a restart) is sought again for 20 s (the
 * URL's reconnect=S, vyre's own; reconnect=0: never) before a call fails.
 * A location in any case of the scheme (POSTGRESQL://) is a URL.
 *
 * A local file's schema is db/results_v1.sql and its steps, versioned through PRAGMA user_version
 * with schema is db/results_v1.sql and its steps, versioned through PRAGMA user_version with
 * forward migrations only. The file is PRECIOUS: nothing in libcore ever
 * deletes, truncates, replaces or "repairs" it, and runs in it go only
 * when a user names them (vyre_bench_runs_delete, `vyre-bench rm`). A file that is not a vyre
 * results database, is damaged, or was written by a newer vyre is an error
 * with a hint, and is left exactly as it was.
 *
 * Timings are written by a writer that batches rows in memory and inserts
 * them with one prepared statement in one transaction per flush. A writer
 * is also a CUPTI sink (vyre_results_writer_sink), so capture can feed it
 * directly.
 */
#ifndef VYRE_RESULTS_H
#define VYRE_RESULTS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cupti.h"
#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_RESULTS_SCHEMA_VERSION 8          /* one per k_schema_steps entry (results.c) */
#define VYRE_RESULTS_APPLICATION_ID 0x76797273 /* PRAGMA application_id: "vyrs" */

typedef struct vyre_results vyre_results;
typedef struct vyre_results_writer vyre_results_writer;

#define VYRE_RESULTS_LOCATION_MAX 4096 /* a path or URL, at most */

/* 1 when location names a PostgreSQL server (postgresql:// or
 * postgres://), else 0 (a file path). */
VYRE_EXTERN int vyre_results_is_url(const char *location);

/* Copies location into buf with any password masked ("user:***@",
 * "password=***"); a path is copied as it is. Never fails: cut to size. */
VYRE_EXTERN void vyre_results_mask(const char *location, char *buf, size_t size);

/* The process's interrupt flag, set by the front end's SIGINT/SIGTERM
 * handler (libcore installs no handler of its own; NULL: none, the
 * default). When *flag becomes nonzero during a wait on a PostgreSQL
 * server, the wait ends within 0.1 s (at once when the signal interrupts
 * poll()): the statement in flight is cancelled, the connection closed,
 * and the call fails with VYRE_EINTR. Waits that begin once the flag is
 * up (the caller storing what it finished, marking its run interrupted)
 * all end within 0.5 s of the first of them, and a store the interrupt
 * dropped gets one more connection in that time; past it, calls fail
 * with VYRE_EINTR. Process-wide; set it before opening a database. */
VYRE_EXTERN void vyre_results_set_interrupt(const volatile sig_atomic_t *flag);

/* Where vyre_results_open(NULL) goes: VYRE_RESULTS_DB, else results_db
 * of the user's vyre.conf, else the default path. *is_default (may be
 * NULL) is 1 for the default path. Returns 0, VYRE_EENV, VYRE_ETOOBIG, or
 * VYRE_ECONFIG / VYRE_EUNSAFE when results_db is badly set (a file that
 * is not the user's or root's may not set it). Creates nothing. */
VYRE_EXTERN int vyre_results_locate(char *buf, size_t size, int *is_default, vyre_error *err);

/*
 * Opens the results database at path, a file or a postgresql:// URL (NULL:
 * vyre_results_locate's; the default path's directory is created, mode
 * 0700, when missing), creating the schema in a
 * new or empty file and migrating an older one. Several processes may have
 * it open at once: writes take the lock up front (BEGIN IMMEDIATE) and wait
 * up to VYRE_RESULTS_BUSY_TIMEOUT_MS for it.
 *
 * Returns 0 and *out (free with vyre_results_close); VYRE_ECORRUPT when the
 * file is not an SQLite database, is another program's database, or is
 * damaged (the file is not modified); VYRE_EVERSION when its schema is
 * newer than this build; VYRE_EUNSAFE when the path, or its -wal, -journal
 * or -shm file, is a symlink (never followed) or not a regular file;
 * VYRE_EPERM, VYRE_EROFS, VYRE_ENOENT, VYRE_ENOSPC, VYRE_EBUSY (another
 * process held the lock past the busy timeout), VYRE_EDB, VYRE_EENV
 * (default path), VYRE_ENOMEM. A server: VYRE_EREMOTE (unreachable, or
 * gone), VYRE_EPERM (authentication failed; a role that may not create
 * the schema), VYRE_EUNSAFE (a password-file readable by others),
 * VYRE_EINVAL (a bad URL), VYRE_ECORRUPT, VYRE_EVERSION as for a file.
 * The handle may be used from several threads.
 */
VYRE_EXTERN int vyre_results_open(const char *path, vyre_results **out, vyre_error *err);

/* Closes the database. Free every writer of it first. NULL is a no-op. */
VYRE_EXTERN void vyre_results_close(vyre_results *db);

/* The path or URL the database was opened with, its password masked
 * (owned by db). */
VYRE_EXTERN const char *vyre_results_path(const vyre_results *db);

/* "sqlite" or "postgresql" (static). */
VYRE_EXTERN const char *vyre_results_engine(const vyre_results *db);

/* The write transactions db has run since it was opened (runs, points,
 * kernel records, timings flushes; failed ones too) and the time they
 * took from begin to commit or rollback, ns: the store's own overhead in
 * a run. Either pointer may be NULL. Thread-safe. */
VYRE_EXTERN void vyre_results_write_stats(vyre_results *db, uint64_t *transactions, int64_t *ns);

/*
 * Copies run run_id of `from` to `to` (push to a shared server, pull from
 * it): the run with its states and facts as they were, its points,
 * samples and kernel records, under new ids of `to`, in one transaction
 * of `to`. A run's identity is (host, started_ns, pid): when `to` already
 * holds it, nothing is written, *existed is 1 and *new_id is its id there
 * (so copying twice is harmless). Returns 0 and *new_id; VYRE_ENOENT (no
 * such run), VYRE_EBUSY (the run is still running), VYRE_EINVAL (from ==
 * to), or either store's errors. existed may be NULL.
 */
VYRE_EXTERN int vyre_results_copy_run(vyre_results *from, int64_t run_id, vyre_results *to,
                                      int64_t *new_id, int *existed, vyre_error *err);

/* Records the git branch or tag of run run_id (runs.git_ref; "" or NULL:
 * unknown). Returns 0, VYRE_ENOENT or the store's errors. */
VYRE_EXTERN int vyre_results_run_set_ref(vyre_results *db, int64_t run_id, const char *ref,
                                         vyre_error *err);

/*
 * Picks a done run by what it ran on: selector is blank-separated words,
 * each KEY=VALUE, then one of `last` (the newest matching done run) or
 * `last-N` (the Nth before it). Keys: gpu (a part of the GPU's name, any
 * case: gpu=H200), driver and cuda (a prefix of the driver and CUDA
 * versions), host (the host name), branch or tag (the git branch or tag
 * recorded with the run), rev (a prefix of the git revision). Newest is
 * by start time, so runs pushed from many machines order as they ran.
 * Returns 0 and *id; VYRE_EINVAL (a bad selector, with the word in
 * quotes, or `last:K`, which names several runs: vyre_results_select_pool),
 * VYRE_ENOENT (nothing matches), or the store's errors.
 */
VYRE_EXTERN int vyre_results_select_run(vyre_results *db, const char *selector, int64_t *id,
                                        vyre_error *err);

/* The most runs a `last:K` selector pools. */
#define VYRE_RESULTS_POOL_MAX 64

/*
 * As vyre_results_select_run, and the selector may end with `last:K`
 * (K from 1 to VYRE_RESULTS_POOL_MAX): the K newest matching done runs,
 * newest first, whose rounds a baseline pools (vyre_bench_compare_runs),
 * run candidate (the one compared; 0: none) never among them, so a gate
 * run on main does not count itself among main's last K. *asked is K (1
 * for `last` and `last-N`, which give one run, as vyre_results_select_run
 * does; when that run is candidate, the matching run before it, so a
 * baseline is never the run compared); *n is how many matched, from 1 to
 * *asked: fewer than K runs matching is not an error (the caller says
 * so). Returns 0, VYRE_EINVAL (a bad selector or K out of range),
 * VYRE_ENOENT (nothing matches, or only candidate does) or the store's
 * errors.
 */
VYRE_EXTERN int vyre_results_select_pool(vyre_results *db, const char *selector, int64_t candidate,
                                         int64_t ids[VYRE_RESULTS_POOL_MAX], size_t *n,
                                         size_t *asked, vyre_error *err);

/* One point of a benchmark's history: a done run's point and the facts
 * of the run. */
typedef struct vyre_results_history_row {
    int64_t run_id;
    int64_t started_ns; /* Unix ns */
    char host[256];
    char gpu_name[256];
    char git_ref[128]; /* branch or tag; "" unknown */
    char git_rev[64];
    char axes[256];
    double median_ns; /* NAN when not stored */
    double noise;     /* robust noise of the point, a fraction; NAN unknown */
} vyre_results_history_row;

/*
 * The median of benchmark over time, oldest run first, across every done
 * run of db (many machines' in a shared store): one row per finished point
 * of the benchmark, only those of axes when axes is not NULL, of the runs
 * filter matches (KEY=VALUE words as vyre_results_select_run takes,
 * without last; NULL or "": all). Returns 0 and *out (free with
 * vyre_free), VYRE_EINVAL for a bad filter, or the
 * store's errors. An unknown benchmark is 0 rows.
 */
VYRE_EXTERN int vyre_results_history(vyre_results *db, const char *benchmark, const char *axes,
                                     const char *filter, vyre_results_history_row **out, size_t *n,
                                     vyre_error *err);

/* What vyre_results_history returned is freed with vyre_free. */

/* What a writer has done. */
typedef struct vyre_results_writer_stats {
    uint64_t rows_added;     /* accepted by add (or the sink) */
    uint64_t rows_written;   /* committed to the database */
    uint64_t rows_pending;   /* accepted, not yet committed */
    uint64_t rows_dropped;   /* refused (values out of range) or over PENDING_MAX */
    uint64_t flushes;        /* transactions committed */
    uint64_t flush_failures; /* flushes that failed (rows kept pending) */
    int last_error;          /* code of the last failure seen by the sink path, 0 if none */
    char last_message[VYRE_ERROR_MESSAGE_MAX];
} vyre_results_writer_stats;

#ifdef __cplusplus
}
#endif

#endif /* VYRE_RESULTS_H */
