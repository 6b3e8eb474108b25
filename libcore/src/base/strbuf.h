/*
 * strbuf.h - a growable, always-terminated string (git's strbuf is the
 * model), for messages, paths and names built from input that must never
 * be cut to fit a fixed array. Not public API (vyre__ prefix).
 *
 * Ownership: the caller owns the vyre__strbuf (stack or embedded) and
 * initialises it with VYRE__STRBUF_INIT or vyre__strbuf_init; the buffer
 * inside is the strbuf's until vyre__strbuf_release frees it, or until
 * vyre__strbuf_detach hands it to the caller (who then frees it with
 * free()). sb->buf is never NULL: an empty strbuf points at a static ""
 * that must not be written, so sb->buf can always be passed where a C
 * string is read.
 *
 * Out of memory: an add that cannot grow the buffer leaves the content as
 * it was, returns VYRE_ENOMEM and sets sb->failed, so a caller may add
 * several pieces and check once (vyre__strbuf_failed) at the end.
 */
#ifndef VYRE_STRBUF_H
#define VYRE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "vyre/export.h"

extern char vyre__strbuf_empty[1];

typedef struct vyre__strbuf {
    char *buf;    /* len bytes then '\0'; vyre__strbuf_empty when nothing is allocated */
    size_t len;   /* bytes before the terminator */
    size_t alloc; /* bytes allocated at buf, 0 when buf is vyre__strbuf_empty */
    int failed;   /* an add ran out of memory (the content is what fitted before it) */
} vyre__strbuf;

#define VYRE__STRBUF_INIT                                                                          \
    {                                                                                              \
        vyre__strbuf_empty, 0, 0, 0                                                                \
    }

/* Sets sb empty; with hint > 0 allocates room for hint bytes up front
 * (returns VYRE_ENOMEM, sb still usable and empty, when that fails). */
int vyre__strbuf_init(vyre__strbuf *sb, size_t hint);

/* Frees the buffer and leaves sb empty and usable (as after _INIT). */
void vyre__strbuf_release(vyre__strbuf *sb);

/* Makes room for extra more bytes (plus the terminator). 0 or VYRE_ENOMEM. */
int vyre__strbuf_grow(vyre__strbuf *sb, size_t extra);

/* Appends len bytes of data (which need not be terminated). */
int vyre__strbuf_add(vyre__strbuf *sb, const void *data, size_t len);

/* Appends the C string s. */
int vyre__strbuf_adds(vyre__strbuf *sb, const char *s);

/* Appends printf-formatted text, whole, whatever its length. */
int vyre__strbuf_addf(vyre__strbuf *sb, const char *fmt, ...) VYRE_PRINTF(2, 3);
int vyre__strbuf_vaddf(vyre__strbuf *sb, const char *fmt, va_list ap) VYRE_PRINTF(2, 0);

/* Empties sb, keeping its allocation. */
void vyre__strbuf_reset(vyre__strbuf *sb);

/* Hands the buffer to the caller (free() it; never NULL: an empty strbuf
 * gives a fresh malloc'ed "", or NULL only when even that fails) and
 * leaves sb empty. *len (when non-NULL) receives its length. */
char *vyre__strbuf_detach(vyre__strbuf *sb, size_t *len);

/* Whether an add ran out of memory since _init or the last _reset. */
static inline int vyre__strbuf_failed(const vyre__strbuf *sb)
{
    return sb->failed;
}

#endif /* VYRE_STRBUF_H */
