/*
 * index_inputs.c - the inputs each key was computed from (schema 4; see
 * index.h), which vyre_key_explain compares.
 *
 * Guarantees: inputs are read back exactly as written or reported as damage
 * (VYRE_ECORRUPT with the reindex hint), never cut; an index of an older
 * schema opened read-only simply has none recorded.
 */
#include "cache/index.h"

#include <inttypes.h>
#include <string.h>

#include "base/internal.h"

int vyre__index_set_inputs(vyre__index *idx, const vyre_key *key, const vyre_key_inputs *in,
                           vyre_error *err)
{
    if (!idx || !key || !in || in->options_len > sizeof in->options)
        return vyre__fail(err, VYRE_EINVAL, NULL, "bad argument to vyre__index_set_inputs");
    if (idx->readonly)
        return vyre__index_fail_readonly(idx, err);
    if (in->features > (uint64_t)INT64_MAX)
        return vyre__fail(err, VYRE_ERANGE, NULL, "features 0x%" PRIx64 " do not fit the index",
                          in->features);
    static const char sql[] =
        "UPDATE blobs SET inputs = 1, backend = ?2, features = ?3, n_options = ?4, options = ?5, "
        "entry = ?6, source_kind = ?7, source_sha256 = ?8 WHERE key = ?1";
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = vyre__sqlite_begin(&idx->sql, "write to", err);
    if (!rc) {
        int src = sqlite3_prepare_v2(idx->sql.db, sql, -1, &st, NULL);
        if (src == SQLITE_OK) {
            vyre__index_bind_key(st, 1, key);
            sqlite3_bind_text(st, 2, in->backend, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)in->features);
            sqlite3_bind_int64(st, 4, in->n_options);
            sqlite3_bind_blob(st, 5, in->options, (int)in->options_len, SQLITE_STATIC);
            sqlite3_bind_text(st, 6, in->entry, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 7, in->source_kind);
            sqlite3_bind_text(st, 8, in->source_sha256, -1, SQLITE_STATIC);
            src = sqlite3_step(st);
        }
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "write to", err);
            vyre__sqlite_rollback(&idx->sql);
        } else {
            rc = vyre__sqlite_commit(&idx->sql, "write to", err);
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* Copies column col of st (text or blob) into out[size]; 0, or -1 when it
 * does not fit (a damaged or foreign row). */
static int column_bytes(sqlite3_stmt *st, int col, char *out, size_t size, uint32_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (n < 0 || (size_t)n >= size)
        return -1;
    if (n)
        memcpy(out, p, (size_t)n);
    out[n] = '\0';
    if (len)
        *len = (uint32_t)n;
    return 0;
}

/* The input columns of the row st stands on into *out; 0 or -1 (bad). */
static int read_inputs(sqlite3_stmt *st, vyre_key_inputs *out, int *recorded)
{
    *recorded = sqlite3_column_int(st, 0) == 1;
    if (!*recorded)
        return 0;
    sqlite3_int64 features = sqlite3_column_int64(st, 2), n = sqlite3_column_int64(st, 3);
    sqlite3_int64 kind = sqlite3_column_int64(st, 6), kv = sqlite3_column_int64(st, 8);
    if (features < 0 || n < 0 || n > VYRE_KEY_OPTIONS_MAX || kind < 0 || kind > UINT32_MAX ||
        kv < 0 || kv > UINT32_MAX)
        return -1;
    out->features = (uint64_t)features;
    out->n_options = (uint32_t)n;
    out->source_kind = (uint32_t)kind;
    out->key_version = (uint32_t)kv;
    if (column_bytes(st, 1, out->backend, sizeof out->backend, NULL) ||
        column_bytes(st, 4, out->options, sizeof out->options, &out->options_len) ||
        column_bytes(st, 5, out->entry, sizeof out->entry, NULL) ||
        column_bytes(st, 7, out->source_sha256, sizeof out->source_sha256, NULL) ||
        column_bytes(st, 9, out->toolchain, sizeof out->toolchain, NULL) ||
        column_bytes(st, 10, out->arch, sizeof out->arch, NULL))
        return -1;
    /* The options are n NUL-terminated strings, exactly. */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < out->options_len; i++)
        seen += out->options[i] == '\0';
    return seen == out->n_options &&
                   (out->options_len == 0 || out->options[out->options_len - 1] == '\0')
               ? 0
               : -1;
}

int vyre__index_get_inputs(vyre__index *idx, const vyre_key *key, vyre_key_inputs *out,
                           int *recorded, vyre_error *err)
{
    if (!idx || !key || !out || !recorded)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_get_inputs");
    memset(out, 0, sizeof *out);
    *recorded = 0;
    if (idx->schema < 4)
        return VYRE_OK; /* an older index opened read-only: nothing recorded */
    static const char sql[] = "SELECT inputs, backend, features, n_options, options, entry, "
                              "source_kind, source_sha256, key_version, toolchain, arch "
                              "FROM blobs WHERE key = ?1";
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = VYRE_OK;
    int src = sqlite3_prepare_v2(idx->sql.db, sql, -1, &st, NULL);
    if (src == SQLITE_OK) {
        vyre__index_bind_key(st, 1, key);
        src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    }
    if (src == SQLITE_ROW) {
        if (read_inputs(st, out, recorded))
            rc = vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                              vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                         "index '%s' has damaged inputs for key '%s'", idx->path,
                                         hex));
    } else if (src == SQLITE_DONE) {
        rc =
            vyre__fail(err, VYRE_ENOENT, NULL, "no row for key '%s' in index '%s'", hex, idx->path);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    if (rc || !*recorded)
        memset(out, 0, sizeof *out);
    return rc;
}
