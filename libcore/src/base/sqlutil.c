/*
 * sqlutil.c - see sqlutil.h.
 */
#include "base/sqlutil.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "base/clock.h"
#include "base/internal.h"
#include "vyre/error.h"

int vyre__sqlite_code(int rc, int sys_errno)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return VYRE_ENOSPC;
    case SQLITE_READONLY:
        return VYRE_EROFS;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return VYRE_ECORRUPT;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return VYRE_EBUSY;
    case SQLITE_NOMEM:
        return VYRE_ENOMEM;
    case SQLITE_IOERR:
        if (sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EFBIG)
            return VYRE_ENOSPC;
        return VYRE_EDB;
    case SQLITE_CANTOPEN:
        switch (sys_errno) {
        case EACCES:
        case EPERM:
            return VYRE_EPERM;
        case EROFS:
            return VYRE_EROFS;
        case ENOENT:
        case ENOTDIR:
            return VYRE_ENOENT;
        default:
            return VYRE_EDB;
        }
    default:
        return VYRE_EDB;
    }
}

static int64_t mono_ms(void)
{
    return (int64_t)(vyre__mono_ns() / 1000000u);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

int vyre__sqlite_step_retry(sqlite3_stmt *st, int timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    int wait = 1;
    for (;;) {
        int rc = sqlite3_step(st);
        if ((rc & 0xff) != SQLITE_BUSY || mono_ms() >= deadline)
            return rc;
        sqlite3_reset(st);
        nap_ms(wait);
        wait = wait < 32 ? wait * 2 : 50;
    }
}

int vyre__sqlite_query_value(sqlite3 *db, const char *sql, int timeout_ms, sqlite3_int64 *num,
                             char *text, size_t text_size)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = vyre__sqlite_step_retry(st, timeout_ms);
    if (rc == SQLITE_ROW) {
        if (num)
            *num = sqlite3_column_int64(st, 0);
        if (text) {
            const unsigned char *z = sqlite3_column_text(st, 0);
            vyre__strlcpy(text, z ? (const char *)z : "", text_size);
        }
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

int vyre__sqlite_read_schema(sqlite3 *db, int timeout_ms, vyre__sqlite_schema *s)
{
    int rc;
    if ((rc = vyre__sqlite_query_value(db, "PRAGMA user_version", timeout_ms, &s->user_version,
                                       NULL, 0)) ||
        (rc = vyre__sqlite_query_value(db, "PRAGMA application_id", timeout_ms, &s->application_id,
                                       NULL, 0)) ||
        (rc = vyre__sqlite_query_value(db, "SELECT count(*) FROM sqlite_master", timeout_ms,
                                       &s->objects, NULL, 0)))
        return rc;
    return SQLITE_OK;
}
