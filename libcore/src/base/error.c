/*
 * error.c - error code table and error detail helpers.
 *
 * Owns the mapping from VYRE_E* codes to text (generated from VYRE_ERRNO_MAP)
 * and the internal helper every module uses to fill a vyre_error.
 */
#include "vyre/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

const char *vyre_strerror(int code)
{
    if (code == VYRE_OK)
        return "success";
    switch (code) {
#define VYRE__ERR_STR(name, val, desc)                                                             \
    case (val):                                                                                    \
        return (desc);
        VYRE_ERRNO_MAP(VYRE__ERR_STR)
#undef VYRE__ERR_STR
    default:
        return "unknown error";
    }
}

const char *vyre_err_name(int code)
{
    if (code == VYRE_OK)
        return "VYRE_OK";
    switch (code) {
#define VYRE__ERR_NAME(name, val, desc)                                                            \
    case (val):                                                                                    \
        return "VYRE_" #name;
        VYRE_ERRNO_MAP(VYRE__ERR_NAME)
#undef VYRE__ERR_NAME
    default:
        return "VYRE_E?";
    }
}

void vyre_error_clear(vyre_error *err)
{
    if (!err)
        return;
    err->code = VYRE_OK;
    err->message[0] = '\0';
    err->hint[0] = '\0';
    err->remedy = VYRE_REMEDY_NONE;
}

int vyre__fail(vyre_error *err, int code, const char *hint, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (n < 0)
        err->message[0] = '\0';
    vyre__strlcpy(err->hint, hint ? hint : "", sizeof err->hint);
    err->remedy = VYRE_REMEDY_NONE;
    return code;
}

int vyre__remedy(vyre_error *err, vyre_remedy remedy, int code)
{
    if (err)
        err->remedy = remedy;
    return code;
}

size_t vyre__strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);
    if (size) {
        size_t n = len < size - 1 ? len : size - 1;
        memcpy(dst, src, n);
        dst[n] = '\0';
    }
    return len;
}

int vyre_errno_code(int errnum)
{
    return vyre__errno_code(errnum);
}

int vyre__errno_code(int e)
{
    switch (e) {
    case 0:
        return VYRE_OK;
    case ENOMEM:
        return VYRE_ENOMEM;
    case ENOENT:
    case ENOTDIR:
        return VYRE_ENOENT;
    case EEXIST:
        return VYRE_EEXIST;
    case EACCES:
    case EPERM:
        return VYRE_EPERM;
    case EROFS:
        return VYRE_EROFS;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return VYRE_ENOSPC;
    case EBUSY:
        return VYRE_EBUSY;
    case EINVAL:
        return VYRE_EINVAL;
    default:
        return VYRE_EIO;
    }
}

void vyre_free(void *p)
{
    free(p);
}
