/*
 * index_blobs.c - the blob rows (see index.h): insert or replace, get,
 * delete, the walk in least-recently-used order, the rebuild of every row
 * (reindex) and the totals.
 *
 * Guarantees: every write is one BEGIN IMMEDIATE transaction, so a rebuild
 * or a batch delete is all or nothing (prune's deletes take only rows still
 * as prune read them); a get includes hits still pending in
 * memory; the LRU walk never holds the lock while it calls back, so the
 * callback may delete the rows it is shown.
 */
#include "cache/index.h"

#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

/* Rows fetched per lock hold in foreach_lru. */
#define LRU_PAGE_ROWS 256

/* ---- rows: single-row operations ----------------------------------------- */

int vyre__index_upsert(vyre__index *idx, const vyre__index_row *row, vyre_error *err)
{
    if (!idx || !row)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_upsert");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    int rc = vyre__index_check_row(idx, row, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&idx->mu);
    rc = vyre__sqlite_begin(&idx->sql, "write to", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[INDEX_ST_UPSERT];
        vyre__index_bind_row(st, row);
        sqlite3_bind_int(st, 12, row->hits == 0 && row->last_access_unix_ns == 0);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_abort(&idx->sql, st, src, "write to", err);
        } else {
            sqlite3_reset(st);
            rc = vyre__sqlite_commit(&idx->sql, "write to", err);
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_delete(vyre__index *idx, const vyre_key *key, vyre_error *err)
{
    if (!key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL key to vyre__index_delete");
    return vyre__index_delete_many(idx, key, 1, err);
}

int vyre__index_get(vyre__index *idx, const vyre_key *key, vyre__index_row *row, vyre_error *err)
{
    if (!idx || !key || !row)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_get");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = idx->st[INDEX_ST_GET];
    vyre__index_bind_key(st, 1, key);
    int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    int rc;
    if (src == SQLITE_ROW) {
        rc = vyre__index_read_row(idx, st, row, err);
    } else if (src == SQLITE_DONE) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(key, hex);
        rc =
            vyre__fail(err, VYRE_ENOENT, NULL, "no row for key '%s' in index '%s'", hex, idx->path);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_reset(st);
    if (!rc) {
        const struct index_hit_slot *s = vyre__index_slot_find(idx, key, 0);
        if (s) {
            row->hits += s->count;
            if (s->last_ns > row->last_access_unix_ns)
                row->last_access_unix_ns = s->last_ns;
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* ---- iteration and bulk operations ------------------------------------------ */

/*
 * Pages through the LRU order LRU_PAGE_ROWS rows at a time, keyed on the
 * last row seen, and calls fn without holding the lock: fn may call back
 * into the index (prune deletes the rows it is shown). A row changed by
 * another writer during the walk is seen at its old or its new place.
 */
int vyre__index_foreach_lru(vyre__index *idx, vyre__index_row_fn fn, void *ctx, vyre_error *err)
{
    if (!idx || !fn)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_foreach_lru");
    int rc = vyre__index_flush(idx, err);
    if (rc)
        return rc;
    vyre__index_row *rows = malloc(LRU_PAGE_ROWS * sizeof *rows);
    if (!rows)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading index '%s'", idx->path);
    int64_t after_access = INT64_MIN, after_created = INT64_MIN;
    char after_key[VYRE_KEY_HEX_LEN + 1] = ""; /* sorts before every key */
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&idx->mu);
        sqlite3_stmt *st = idx->st[INDEX_ST_LRU_PAGE];
        sqlite3_bind_int64(st, 1, after_access);
        sqlite3_bind_int64(st, 2, after_created);
        sqlite3_bind_text(st, 3, after_key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, LRU_PAGE_ROWS);
        int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
        while (src == SQLITE_ROW && n < LRU_PAGE_ROWS) {
            if ((rc = vyre__index_read_row(idx, st, &rows[n], err)))
                break;
            n++;
            src = sqlite3_step(st);
        }
        if (!rc && src != SQLITE_DONE)
            rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
        sqlite3_reset(st);
        pthread_mutex_unlock(&idx->mu);
        if (rc)
            break;
        for (size_t i = 0; i < n && !rc; i++)
            rc = fn(&rows[i], ctx);
        if (rc || n < LRU_PAGE_ROWS)
            break;
        after_access = rows[n - 1].last_access_unix_ns;
        after_created = rows[n - 1].created_unix_ns;
        vyre_key_to_hex(&rows[n - 1].key, after_key);
    }
    free(rows);
    return rc;
}

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, VYRE_KEY_BYTES);
}

/* Deletes, inside the open transaction, every row whose key is not in
 * sorted[0..n). */
static int delete_others(vyre__index *idx, const vyre_key *sorted, size_t n, vyre_error *err)
{
    vyre_key *stale = NULL;
    size_t n_stale = 0, cap = 0;
    sqlite3_stmt *st = idx->st[INDEX_ST_KEYS];
    int src, rc = VYRE_OK;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        vyre_key k;
        const unsigned char *hex = sqlite3_column_text(st, 0);
        if (!hex || vyre_key_from_hex((const char *)hex, &k) != 0) {
            rc = vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                              vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                         "index '%s' has a bad key '%s'", idx->path,
                                         hex ? (const char *)hex : "(null)"));
            break;
        }
        if (n && bsearch(&k, sorted, n, sizeof *sorted, key_cmp))
            continue;
        if (vyre__grow(&stale, &cap, n_stale + 1, sizeof *stale, 64)) {
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory rebuilding index '%s'",
                            idx->path);
            break;
        }
        stale[n_stale++] = k;
    }
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
    sqlite3_reset(st);
    sqlite3_stmt *del = idx->st[INDEX_ST_DELETE];
    for (size_t i = 0; !rc && i < n_stale; i++) {
        vyre__index_bind_key(del, 1, &stale[i]);
        src = sqlite3_step(del);
        if (src != SQLITE_DONE)
            rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
        sqlite3_reset(del);
    }
    free(stale);
    return rc;
}

int vyre__index_replace_all(vyre__index *idx, const vyre__index_row *rows, size_t n,
                            vyre_error *err)
{
    if (!idx || (n && !rows))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_replace_all");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = vyre__index_check_row(idx, &rows[i], err)))
            return rc;
    vyre_key *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory rebuilding index '%s'", idx->path);
    for (size_t i = 0; i < n; i++)
        sorted[i] = rows[i].key;
    qsort(sorted, n, sizeof *sorted, key_cmp);

    pthread_mutex_lock(&idx->mu);
    rc = vyre__sqlite_begin(&idx->sql, "rebuild", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[INDEX_ST_REINDEX_UPSERT];
        for (size_t i = 0; i < n && !rc; i++) {
            vyre__index_bind_row(st, &rows[i]);
            int src = sqlite3_step(st);
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
            sqlite3_reset(st);
        }
        if (!rc)
            rc = delete_others(idx, sorted, n, err);
        if (rc)
            vyre__sqlite_rollback(&idx->sql);
        else
            rc = vyre__sqlite_commit(&idx->sql, "rebuild", err);
    }
    pthread_mutex_unlock(&idx->mu);
    free(sorted);
    return rc;
}

int vyre__index_delete_many(vyre__index *idx, const vyre_key *keys, size_t n, vyre_error *err)
{
    if (!idx || (n && !keys))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_delete_many");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    if (n == 0)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = vyre__sqlite_begin(&idx->sql, "delete from", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[INDEX_ST_DELETE];
        for (size_t i = 0; i < n && !rc; i++) {
            vyre__index_bind_key(st, 1, &keys[i]);
            int src = sqlite3_step(st);
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_abort(&idx->sql, st, src, "delete from", err);
            else
                sqlite3_reset(st);
        }
        if (!rc)
            rc = vyre__sqlite_commit(&idx->sql, "delete from", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* Whether the row of key is there (CHANGED) or not (ABSENT), after a
 * guarded delete took nothing; inside the open transaction. */
static int row_outcome(vyre__index *idx, const vyre_key *key, unsigned char *out, vyre_error *err)
{
    sqlite3_stmt *st = idx->st[INDEX_ST_GET];
    vyre__index_bind_key(st, 1, key);
    int src = sqlite3_step(st);
    sqlite3_reset(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return vyre__sqlite_fail(&idx->sql, src, "delete from", err);
    *out = src == SQLITE_ROW ? VYRE__INDEX_ROW_CHANGED : VYRE__INDEX_ROW_ABSENT;
    return VYRE_OK;
}

/* The guarded deletes of vyre__index_delete_unchanged, inside its
 * transaction (st prepared, idx->mu held). */
static int delete_guarded(vyre__index *idx, sqlite3_stmt *st, const vyre__index_row *const *rows,
                          size_t n, unsigned char *out, vyre_error *err)
{
    for (size_t i = 0; i < n; i++) {
        vyre__index_bind_key(st, 1, &rows[i]->key);
        sqlite3_bind_int64(st, 2, rows[i]->created_unix_ns);
        sqlite3_bind_int64(st, 3, rows[i]->last_access_unix_ns);
        int src = sqlite3_step(st);
        sqlite3_reset(st);
        if (src != SQLITE_DONE)
            return vyre__sqlite_fail(&idx->sql, src, "delete from", err);
        out[i] = VYRE__INDEX_ROW_DELETED;
        int rc =
            sqlite3_changes(idx->sql.db) ? VYRE_OK : row_outcome(idx, &rows[i]->key, &out[i], err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

int vyre__index_delete_unchanged(vyre__index *idx, const vyre__index_row *const *rows, size_t n,
                                 unsigned char *out, vyre_error *err)
{
    if (!idx || (n && (!rows || !out)))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_delete_unchanged");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    if (n == 0)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    /* Prepared per call (once per batch of rows), not kept with the
     * handle's statements: only prune runs it. */
    sqlite3_stmt *st = NULL;
    int rc = vyre__sqlite_prepare(&idx->sql,
                                  "DELETE FROM blobs WHERE key = ?1 AND created_ns = ?2 "
                                  "AND last_access_ns = ?3",
                                  &st, err);
    if (!rc)
        rc = vyre__sqlite_begin(&idx->sql, "delete from", err);
    if (!rc) {
        rc = delete_guarded(idx, st, rows, n, out, err);
        if (rc)
            vyre__sqlite_rollback(&idx->sql);
        else
            rc = vyre__sqlite_commit(&idx->sql, "delete from", err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_totals(vyre__index *idx, uint64_t *rows, uint64_t *bytes, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_totals");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = idx->st[INDEX_ST_TOTALS];
    int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    int rc = VYRE_OK;
    if (src == SQLITE_ROW) {
        if (rows)
            *rows = (uint64_t)sqlite3_column_int64(st, 0);
        if (bytes)
            *bytes = (uint64_t)sqlite3_column_int64(st, 1);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src == SQLITE_DONE ? SQLITE_ERROR : src, "read", err);
    }
    sqlite3_reset(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}
