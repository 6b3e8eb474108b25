/*
 * index_meta.c - the index's meta table (see index.h): named counters,
 * the total size kept by triggers, and zeroing the statistics.
 *
 * Guarantees: counters are added in one transaction (a read-only index:
 * no-op); zeroing writes pending last-use times first, so LRU order
 * survives it, and resets hits and misses together.
 */
#include "cache/index.h"

#include "base/internal.h"

/* One integer from meta (*found 0 when the row is absent). Lock held. */
static int meta_int_locked(vyre__index *idx, const char *name, sqlite3_int64 *v, int *found,
                           vyre_error *err)
{
    sqlite3_stmt *st = NULL;
    *found = 0;
    int src =
        sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = ?1", -1, &st, NULL);
    int rc = VYRE_OK;
    if (src == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
        if (src == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            *found = 1;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int vyre__index_total_bytes(vyre__index *idx, uint64_t *bytes, vyre_error *err)
{
    if (!idx || !bytes)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_total_bytes");
    /* Before schema 5 the kept total summed apparent sizes: sum instead. */
    if (idx->schema < 5)
        return vyre__index_totals(idx, NULL, bytes, err);
    pthread_mutex_lock(&idx->mu);
    sqlite3_int64 v = 0;
    int found = 0;
    int rc = meta_int_locked(idx, "total_bytes", &v, &found, err);
    pthread_mutex_unlock(&idx->mu);
    if (rc)
        return rc;
    if (!found)
        return vyre__index_totals(idx, NULL, bytes, err);
    *bytes = v > 0 ? (uint64_t)v : 0;
    return VYRE_OK;
}

int vyre__index_stats_zeroed(vyre__index *idx, int64_t *ns, vyre_error *err)
{
    if (!idx || !ns)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_stats_zeroed");
    pthread_mutex_lock(&idx->mu);
    sqlite3_int64 v = 0;
    int found = 0;
    int rc = meta_int_locked(idx, "stats_zeroed_ns", &v, &found, err);
    pthread_mutex_unlock(&idx->mu);
    *ns = found ? (int64_t)v : 0;
    return rc;
}

int vyre__index_zero_stats(vyre__index *idx, int64_t now_unix_ns, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_zero_stats");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    pthread_mutex_lock(&idx->mu);
    /* Pending last-use times still count for LRU: write them, then zero. */
    int rc = vyre__index_flush_locked(idx, err);
    if (!rc)
        rc = vyre__sqlite_begin(&idx->sql, "zero the statistics of", err);
    if (!rc) {
        static const char *const sql[] = {
            "UPDATE blobs SET hits = 0 WHERE hits <> 0",
            "INSERT INTO meta (name, value) VALUES ('misses', 0) "
            "ON CONFLICT (name) DO UPDATE SET value = 0",
            "INSERT INTO meta (name, value) VALUES ('stats_zeroed_ns', ?1) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        };
        for (size_t i = 0; i < VYRE_ARRAY_SIZE(sql) && !rc; i++) {
            sqlite3_stmt *st = NULL;
            int src = sqlite3_prepare_v2(idx->sql.db, sql[i], -1, &st, NULL);
            if (src == SQLITE_OK) {
                if (i == 2)
                    sqlite3_bind_int64(st, 1, now_unix_ns);
                src = sqlite3_step(st);
            }
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_abort(&idx->sql, st, src, "zero the statistics of", err);
            sqlite3_finalize(st);
        }
        if (!rc)
            rc = vyre__sqlite_commit(&idx->sql, "zero the statistics of", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* ---- named counters in meta ---------------------------------------------- */

int vyre__index_counters_add(vyre__index *idx, const char *const *names, const uint64_t *deltas,
                             size_t n, vyre_error *err)
{
    if (!idx || (n && (!names || !deltas)))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_counters_add");
    if (idx->readonly || !n)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = vyre__sqlite_begin(&idx->sql, "record counters in", err);
    sqlite3_stmt *st = NULL;
    if (rc == VYRE_OK) {
        int src = sqlite3_prepare_v2(idx->sql.db,
                                     "INSERT INTO meta (name, value) VALUES (?1, ?2) "
                                     "ON CONFLICT (name) DO UPDATE SET "
                                     "value = coalesce(value, 0) + excluded.value",
                                     -1, &st, NULL);
        for (size_t i = 0; src == SQLITE_OK && i < n; i++) {
            if (!deltas[i])
                continue;
            sqlite3_bind_text(st, 1, names[i], -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(
                st, 2, deltas[i] > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)deltas[i]);
            src = sqlite3_step(st);
            if (src == SQLITE_DONE) {
                sqlite3_reset(st);
                src = SQLITE_OK;
            }
        }
        if (src != SQLITE_OK)
            rc = vyre__sqlite_abort(&idx->sql, st, src, "record counters in", err);
        sqlite3_finalize(st);
        if (rc == VYRE_OK)
            rc = vyre__sqlite_commit(&idx->sql, "record counters in", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_counter_get(vyre__index *idx, const char *name, uint64_t *value, vyre_error *err)
{
    if (!idx || !name || !value)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_counter_get");
    *value = 0;
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = VYRE_OK;
    int src =
        sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = ?1", -1, &st, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            sqlite3_int64 v = sqlite3_column_int64(st, 0);
            *value = v > 0 ? (uint64_t)v : 0;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read a counter of", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read a counter of", err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}
