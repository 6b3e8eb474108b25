/*
 * index_hits.c - usage accounting (see index.h): hits and misses noted in
 * memory and written in batches.
 *
 * Guarantees: a hit writes nothing. Hits collect in a fixed-size table on
 * the handle (under idx->mu) and are written in one transaction per
 * VYRE_INDEX_HIT_BATCH hits, on vyre__index_flush and on close; a failed
 * flush keeps them pending and is not retried on every hit. The table never
 * grows: past its limit new keys' hits are dropped (statistics, never
 * data). A read-only index records no usage.
 */
#include "cache/index.h"

#include <string.h>

#include "base/internal.h"

/*
 * Pending hits: open addressing with linear probing over a fixed table.
 * A flush happens every VYRE_INDEX_HIT_BATCH hits, or as soon as
 * HIT_SLOTS_FLUSH distinct keys are pending, so the table stays under half
 * full. A flush costs about one row update per distinct key plus a commit
 * (some 100-200 us for tens of keys), so a large batch keeps a hit's share
 * of it to tens of nanoseconds. Only repeated flush failures can fill the
 * table; past HIT_SLOTS_MAX_USED keys new keys' hits are dropped (usage
 * statistics, never data).
 */
#define HIT_SLOTS_FLUSH    (INDEX_HIT_SLOTS / 2)
#define HIT_SLOTS_MAX_USED (INDEX_HIT_SLOTS / 4 * 3)

static size_t slot_hash(const vyre_key *key)
{
    /* Keys are SHA-256 digests, but tests and tools may hand in made-up
     * ones: mix all of it. */
    uint64_t h = 0;
    for (size_t i = 0; i < VYRE_KEY_BYTES; i += 8) {
        uint64_t w;
        memcpy(&w, key->bytes + i, 8);
        h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
        h ^= h >> 29;
    }
    return (size_t)(h & (INDEX_HIT_SLOTS - 1));
}

/* The slot of key, or a new one when create (NULL when absent, or when the
 * table is too full to take another key). */
struct index_hit_slot *vyre__index_slot_find(vyre__index *idx, const vyre_key *key, int create)
{
    size_t i = slot_hash(key);
    for (size_t probe = 0; probe < INDEX_HIT_SLOTS; probe++, i = (i + 1) & (INDEX_HIT_SLOTS - 1)) {
        struct index_hit_slot *s = &idx->slots[i];
        if (!s->used) {
            if (!create || idx->n_slots >= HIT_SLOTS_MAX_USED)
                return NULL;
            s->used = 1;
            s->key = *key;
            s->count = 0;
            s->last_ns = INT64_MIN;
            idx->n_slots++;
            return s;
        }
        if (memcmp(s->key.bytes, key->bytes, VYRE_KEY_BYTES) == 0)
            return s;
    }
    return NULL;
}

/* Writes every pending hit in one transaction; keeps them on failure. */
int vyre__index_flush_locked(vyre__index *idx, vyre_error *err)
{
    if (idx->n_slots == 0 && idx->pending_misses == 0) {
        idx->since_flush = 0;
        idx->flush_at = VYRE_INDEX_HIT_BATCH;
        return VYRE_OK;
    }
    int rc = vyre__sqlite_begin(&idx->sql, "record hits in", err);
    if (rc)
        return rc;
    if (idx->pending_misses) {
        /* The cache's lifetime miss count lives in meta, so that stats can
         * give a hit rate across processes. */
        sqlite3_stmt *ms = NULL;
        int src = sqlite3_prepare_v2(idx->sql.db,
                                     "INSERT INTO meta (name, value) VALUES ('misses', ?1) "
                                     "ON CONFLICT (name) DO UPDATE SET "
                                     "value = coalesce(value, 0) + excluded.value",
                                     -1, &ms, NULL);
        if (src == SQLITE_OK) {
            sqlite3_bind_int64(ms, 1,
                               idx->pending_misses > (uint64_t)INT64_MAX
                                   ? INT64_MAX
                                   : (sqlite3_int64)idx->pending_misses);
            src = sqlite3_step(ms);
        }
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_abort(&idx->sql, ms, src, "record misses in", err);
            sqlite3_finalize(ms);
            return rc;
        }
        sqlite3_finalize(ms);
    }
    sqlite3_stmt *st = idx->st[INDEX_ST_HIT];
    for (size_t i = 0; i < INDEX_HIT_SLOTS; i++) {
        const struct index_hit_slot *s = &idx->slots[i];
        if (!s->used)
            continue;
        vyre__index_bind_key(st, 1, &s->key);
        sqlite3_bind_int64(st, 2,
                           s->count > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)s->count);
        sqlite3_bind_int64(st, 3, s->last_ns);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            return vyre__sqlite_abort(&idx->sql, st, src, "record hits in", err);
        sqlite3_reset(st);
    }
    rc = vyre__sqlite_commit(&idx->sql, "record hits in", err);
    if (rc)
        return rc;
    memset(idx->slots, 0, sizeof idx->slots);
    idx->n_slots = 0;
    idx->pending_misses = 0;
    idx->slots_retry_at = 0;
    idx->since_flush = 0;
    idx->flush_at = VYRE_INDEX_HIT_BATCH;
    return VYRE_OK;
}

/* ---- hits ------------------------------------------------------------------ */

int vyre__index_note_hit(vyre__index *idx, const vyre_key *key, int64_t now_unix_ns,
                         vyre_error *err)
{
    if (!idx || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_note_hit");
    /* A read-only index records no usage (a read-only cache still serves
     * hits; it just cannot remember them). */
    if (idx->readonly)
        return VYRE_OK;
    int rc = VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    struct index_hit_slot *s = vyre__index_slot_find(idx, key, 1);
    if (s) {
        s->count++;
        if (now_unix_ns > s->last_ns)
            s->last_ns = now_unix_ns;
    }
    int due = ++idx->since_flush >= idx->flush_at ||
              (idx->n_slots >= HIT_SLOTS_FLUSH && idx->since_flush >= idx->slots_retry_at);
    if (due) {
        rc = vyre__index_flush_locked(idx, err);
        if (rc) {
            /* Do not retry (and wait out a busy lock) on every hit: try
             * again later; the hits stay pending meanwhile. */
            idx->flush_at = idx->since_flush + VYRE_INDEX_HIT_BATCH;
            idx->slots_retry_at = idx->since_flush + HIT_SLOTS_FLUSH;
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_note_miss(vyre__index *idx, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_note_miss");
    if (idx->readonly)
        return VYRE_OK;
    int rc = VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    idx->pending_misses++;
    if (++idx->since_flush >= idx->flush_at) {
        rc = vyre__index_flush_locked(idx, err);
        if (rc)
            idx->flush_at = idx->since_flush + VYRE_INDEX_HIT_BATCH;
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_misses(vyre__index *idx, uint64_t *misses, vyre_error *err)
{
    if (!idx || !misses)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_misses");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = 'misses'", -1,
                                 &st, NULL);
    int rc = VYRE_OK;
    uint64_t stored = 0;
    if (src == SQLITE_OK) {
        src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            sqlite3_int64 v = sqlite3_column_int64(st, 0);
            stored = v > 0 ? (uint64_t)v : 0;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read the miss count of", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read the miss count of", err);
    }
    sqlite3_finalize(st);
    *misses = stored + idx->pending_misses;
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_flush(vyre__index *idx, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_flush");
    if (idx->readonly)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = vyre__index_flush_locked(idx, err);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}
