/*
 * results_tx.c - the results handle's transactions and statements for the
 * bench module's writers and readers (results_internal.h): begin, commit,
 * rollback with their time counted, a write transaction tried again when
 * the engine says the session came back, advisory key locks, prepared
 * statements. Below results.c, so that what open runs (the password
 * clean-up of old rows) can write through them without a call circle.
 */
#include "vyre/results.h"

#include <pthread.h>

#include "base/clock.h"
#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store.h"

vyre__store *vyre__results_store(vyre_results *db)
{
    return db->store;
}

void vyre__results_lock(vyre_results *db)
{
    pthread_mutex_lock(&db->mu);
}

void vyre__results_unlock(vyre_results *db)
{
    pthread_mutex_unlock(&db->mu);
}

int vyre__results_begin(vyre_results *db, const char *what, vyre_error *err)
{
    db->tx_start_ns = (int64_t)vyre__mono_ns();
    return db->store->ops->begin(db->store, what, err);
}

int vyre__results_lock_key(vyre_results *db, uint32_t key, const char *what, vyre_error *err)
{
    return db->store->ops->lock_key(db->store, key, what, err);
}

static void tx_done(vyre_results *db)
{
    db->tx_ns += (int64_t)vyre__mono_ns() - db->tx_start_ns;
    db->tx_count++;
}

int vyre__results_commit(vyre_results *db, const char *what, vyre_error *err)
{
    int rc = db->store->ops->commit(db->store, what, err);
    tx_done(db);
    return rc;
}

void vyre__results_rollback(vyre_results *db)
{
    db->store->ops->rollback(db->store);
    tx_done(db);
}

/* How many times one write transaction is tried (vyre__results_tx). */
#define TX_ATTEMPTS 3

/* vyre__results_tx's body, under db->mu. */
static int tx_locked(vyre_results *db, const char *what, vyre__tx_fn fn, void *arg, vyre_error *err)
{
    const vyre__store_ops *ops = db->store->ops;
    for (int attempt = 1;; attempt++) {
        int rc = vyre__results_begin(db, what, err);
        if (!rc) {
            rc = fn(db, arg, err);
            rc = rc ? (vyre__results_rollback(db), rc) : vyre__results_commit(db, what, err);
        }
        if (!rc || attempt == TX_ATTEMPTS || !ops->again || !ops->again(db->store))
            return rc;
    }
}

int vyre__results_tx(vyre_results *db, const char *what, vyre__tx_fn fn, void *arg, vyre_error *err)
{
    vyre__results_lock(db);
    int rc = tx_locked(db, what, fn, arg, err);
    vyre__results_unlock(db);
    return rc;
}

int vyre__results_prepare(vyre_results *db, const char *sql, vyre__stmt **st, vyre_error *err)
{
    return vyre__stmt_prepare(db->store, sql, st, err);
}
