/*
 * internal.h - helpers shared between libcore's modules. Not public API:
 * nothing here is exported from the shared library (vyre__ prefix).
 *
 * The base subsystem (libcore/src/base/) owns what every other one stands
 * on: error codes and detail (error.c, and vyre__fail here), sizes and
 * durations as users type them (units.c), the launch-path clock (clock.h),
 * filesystem helpers and XDG directories (fsutil.h), the SQLite open-time
 * checks shared by the cache index and the results database (sqlutil.h),
 * growable strings for text built from input (strbuf.h), running a program
 * (subprocess.h), and the versions baked in at build time (version.c). It is the bottom
 * layer (base < trace < cache < cuda < bench; docs/DESIGN.md): it includes
 * and calls nothing of libcore outside base/ and the public headers of what
 * it implements.
 */
#ifndef VYRE_INTERNAL_H
#define VYRE_INTERNAL_H

#include <errno.h>
#include <stddef.h>

#include "vyre/error.h"
#include "vyre/export.h"

/* Fills err (when non-NULL) with code, a printf-formatted message and a
 * hint (may be NULL), and returns code so callers can write
 * `return vyre__fail(err, VYRE_EINVAL, "...", "bad '%s'", x);`. */
int vyre__fail(vyre_error *err, int code, const char *hint, const char *fmt, ...) VYRE_PRINTF(4, 5);

/* Sets err->remedy (when err is non-NULL; vyre__fail resets it) and
 * returns code: `return vyre__remedy(err, VYRE_REMEDY_X, vyre__fail(...));`. */
int vyre__remedy(vyre_error *err, vyre_remedy remedy, int code);

/* Bounded copy that always terminates (when size > 0); returns strlen(src),
 * so truncation is `ret >= size`. */
size_t vyre__strlcpy(char *dst, const char *src, size_t size);

/* Makes the array at *array (a T *, *cap elements of elem bytes) hold at
 * least n: its capacity doubles from first (grow.c). VYRE_OK, or
 * VYRE_ENOMEM with the array and *cap unchanged. */
int vyre__grow(void *array, size_t *cap, size_t n, size_t elem, size_t first);

/* Levenshtein distance between a and b; (size_t)-1 when either is over
 * 64 bytes (never "near"). units.c. */
size_t vyre__edit_distance(const char *a, const char *b);

/* The value of one hex digit (either case), or -1. */
static inline int vyre__hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Maps an errno value to the closest VYRE_E* code. */
int vyre__errno_code(int e);

#define VYRE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif /* VYRE_INTERNAL_H */
