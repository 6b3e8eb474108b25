/*
 * index_row.c - one blob row between C and SQL (see index.h): the checks a
 * row passes before it is written, binding a row or a key to a statement,
 * and reading a row back.
 *
 * Guarantees: nothing reaches SQLite that does not fit its column (strings
 * terminated within their arrays, integers below 2^63), and a row read
 * back is either whole and in range or VYRE_ECORRUPT with the reindex hint
 * (a bad key, kind or over-long text), never silently cut.
 */
#include "cache/index.h"

#include <inttypes.h>
#include <string.h>

#include "base/internal.h"

static int check_u63(const vyre__index *idx, const char *name, uint64_t v, vyre_error *err)
{
    if (v <= (uint64_t)INT64_MAX)
        return VYRE_OK;
    return vyre__fail(err, VYRE_ERANGE, "pass a value below 2^63",
                      "%s %" PRIu64 " does not fit index '%s'", name, v, idx->path);
}

int vyre__index_check_row(const vyre__index *idx, const vyre__index_row *row, vyre_error *err)
{
    if (!memchr(row->arch, '\0', sizeof row->arch) ||
        !memchr(row->toolchain, '\0', sizeof row->toolchain) ||
        !memchr(row->source, '\0', sizeof row->source) ||
        !memchr(row->kernels, '\0', sizeof row->kernels))
        return vyre__fail(err, VYRE_EINVAL, "terminate arch and toolchain within their arrays",
                          "index row has an unterminated arch or toolchain string");
    int rc;
    if ((rc = check_u63(idx, "raw_size", row->raw_size, err)) ||
        (rc = check_u63(idx, "stored_size", row->stored_size, err)) ||
        (rc = check_u63(idx, "file_size", row->file_size, err)) ||
        (rc = check_u63(idx, "disk_size", row->disk_size, err)) ||
        (rc = check_u63(idx, "hits", row->hits, err)) ||
        (rc = check_u63(idx, "compile_ns", row->compile_ns, err)))
        return rc;
    return VYRE_OK;
}

void vyre__index_bind_row(sqlite3_stmt *st, const vyre__index_row *row)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&row->key, hex);
    sqlite3_bind_text(st, 1, hex, VYRE_KEY_HEX_LEN, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)row->kind);
    sqlite3_bind_text(st, 3, row->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, row->toolchain, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)row->raw_size);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)row->stored_size);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)row->file_size);
    sqlite3_bind_int64(st, 8, row->created_unix_ns);
    sqlite3_bind_int64(st, 9, row->last_access_unix_ns);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)row->hits);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)row->compile_ns);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)row->key_version);
    sqlite3_bind_text(st, 14, row->source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 15, (sqlite3_int64)row->n_kernels);
    sqlite3_bind_text(st, 16, row->kernels, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 17, (sqlite3_int64)row->disk_size);
}

static int read_text(vyre__index *idx, sqlite3_stmt *st, int col, char *out, size_t size,
                     vyre_error *err)
{
    const unsigned char *z = sqlite3_column_text(st, col);
    if (!z && sqlite3_errcode(idx->sql.db) == SQLITE_NOMEM)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading index '%s'", idx->path);
    if (vyre__strlcpy(out, z ? (const char *)z : "", size) >= size)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                       "index '%s' has an over-long %s '%s'", idx->path,
                                       sqlite3_column_name(st, col), (const char *)z));
    return VYRE_OK;
}

/* Reads a row in ROW_COLUMNS order from the current result of st. */
int vyre__index_read_row(vyre__index *idx, sqlite3_stmt *st, vyre__index_row *row, vyre_error *err)
{
    memset(row, 0, sizeof *row);
    const unsigned char *hex = sqlite3_column_text(st, 0);
    if (!hex || strlen((const char *)hex) != VYRE_KEY_HEX_LEN ||
        vyre_key_from_hex((const char *)hex, &row->key) != 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                       "index '%s' has a bad key '%s'", idx->path,
                                       hex ? (const char *)hex : "(null)"));
    sqlite3_int64 kind = sqlite3_column_int64(st, 1);
    if (kind < 0 || kind > (sqlite3_int64)UINT32_MAX)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                       "index '%s' has a bad kind %lld for key '%s'", idx->path,
                                       (long long)kind, (const char *)hex));
    row->kind = (uint32_t)kind;
    int rc;
    if ((rc = read_text(idx, st, 2, row->arch, sizeof row->arch, err)) ||
        (rc = read_text(idx, st, 3, row->toolchain, sizeof row->toolchain, err)))
        return rc;
    row->raw_size = (uint64_t)sqlite3_column_int64(st, 4);
    row->stored_size = (uint64_t)sqlite3_column_int64(st, 5);
    row->file_size = (uint64_t)sqlite3_column_int64(st, 6);
    sqlite3_int64 ds = sqlite3_column_int64(st, 15);
    row->disk_size = ds > 0 ? (uint64_t)ds : 0;
    row->created_unix_ns = sqlite3_column_int64(st, 7);
    row->last_access_unix_ns = sqlite3_column_int64(st, 8);
    row->hits = (uint64_t)sqlite3_column_int64(st, 9);
    row->compile_ns = (uint64_t)sqlite3_column_int64(st, 10);
    sqlite3_int64 kv = sqlite3_column_int64(st, 11), nk = sqlite3_column_int64(st, 13);
    row->key_version = kv < 0 || kv > (sqlite3_int64)UINT32_MAX ? 0 : (uint32_t)kv;
    row->n_kernels = nk < 0 || nk > (sqlite3_int64)UINT32_MAX ? 0 : (uint32_t)nk;
    if ((rc = read_text(idx, st, 12, row->source, sizeof row->source, err)) ||
        (rc = read_text(idx, st, 14, row->kernels, sizeof row->kernels, err)))
        return rc;
    return VYRE_OK;
}

void vyre__index_bind_key(sqlite3_stmt *st, int i, const vyre_key *key)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    sqlite3_bind_text(st, i, hex, VYRE_KEY_HEX_LEN, SQLITE_TRANSIENT);
}
