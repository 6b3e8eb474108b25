/*
 * strbuf.c - a growable, always-terminated string (see strbuf.h).
 */
#include "base/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

/* What an empty strbuf points at: read as "", never written (the only
 * write, the terminator in _reset, is skipped while alloc is 0). */
char vyre__strbuf_empty[1];

int vyre__strbuf_init(vyre__strbuf *sb, size_t hint)
{
    sb->buf = vyre__strbuf_empty;
    sb->len = 0;
    sb->alloc = 0;
    sb->failed = 0;
    return hint ? vyre__strbuf_grow(sb, hint) : VYRE_OK;
}

void vyre__strbuf_release(vyre__strbuf *sb)
{
    if (sb->alloc)
        free(sb->buf);
    vyre__strbuf_init(sb, 0);
}

int vyre__strbuf_grow(vyre__strbuf *sb, size_t extra)
{
    if (extra > SIZE_MAX - 1 - sb->len) {
        sb->failed = 1;
        return VYRE_ENOMEM;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->alloc)
        return VYRE_OK;
    size_t n = sb->alloc ? sb->alloc : 64;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    char *p = realloc(sb->alloc ? sb->buf : NULL, n);
    if (!p) {
        sb->failed = 1;
        return VYRE_ENOMEM;
    }
    if (!sb->alloc)
        p[0] = '\0';
    sb->buf = p;
    sb->alloc = n;
    return VYRE_OK;
}

int vyre__strbuf_add(vyre__strbuf *sb, const void *data, size_t len)
{
    if (!len)
        return VYRE_OK;
    /* data may lie inside sb's buffer, which growing may move. */
    const char *d = data;
    int inside = sb->alloc && d >= sb->buf && d < sb->buf + sb->alloc;
    size_t at = inside ? (size_t)(d - sb->buf) : 0;
    int rc = vyre__strbuf_grow(sb, len);
    if (rc)
        return rc;
    memmove(sb->buf + sb->len, inside ? sb->buf + at : d, len);
    sb->len += len;
    sb->buf[sb->len] = '\0';
    return VYRE_OK;
}

int vyre__strbuf_adds(vyre__strbuf *sb, const char *s)
{
    return vyre__strbuf_add(sb, s, strlen(s));
}

int vyre__strbuf_vaddf(vyre__strbuf *sb, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    size_t room = sb->alloc ? sb->alloc - sb->len : 0;
    int n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
    if (n < 0) {
        va_end(again);
        if (sb->alloc)
            sb->buf[sb->len] = '\0';
        return VYRE_EINVAL;
    }
    if ((size_t)n >= room) {
        int rc = vyre__strbuf_grow(sb, (size_t)n);
        if (rc) {
            va_end(again);
            if (sb->alloc)
                sb->buf[sb->len] = '\0';
            return rc;
        }
        vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    sb->len += (size_t)n;
    return VYRE_OK;
}

int vyre__strbuf_addf(vyre__strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vyre__strbuf_vaddf(sb, fmt, ap);
    va_end(ap);
    return rc;
}

void vyre__strbuf_reset(vyre__strbuf *sb)
{
    sb->len = 0;
    sb->failed = 0;
    if (sb->alloc)
        sb->buf[0] = '\0';
}

char *vyre__strbuf_detach(vyre__strbuf *sb, size_t *len)
{
    char *out = sb->alloc ? sb->buf : calloc(1, 1);
    if (len)
        *len = out ? sb->len : 0;
    vyre__strbuf_init(sb, 0);
    return out;
}
