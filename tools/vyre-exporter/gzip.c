/*
 * gzip.c - see gzip.h. Level 1 (Z_BEST_SPEED): a scrape takes about a
 * millisecond, and the exposition text is repetitive enough that the
 * fastest level already shrinks it several times over; a higher level
 * would cost more CPU than the whole scrape for a few percent less.
 */
#include "gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* The q-value of one Accept-Encoding element from p (just past its
 * coding name) to end: 1 when it has none, 0 for a malformed one. */
static double q_of(const char *p, const char *end)
{
    for (;;) {
        p = memchr(p, ';', (size_t)(end - p));
        if (!p)
            return 1;
        p++;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p < 2 || (*p != 'q' && *p != 'Q') || p[1] != '=')
            continue;
        p += 2;
        const char *stop = memchr(p, ';', (size_t)(end - p));
        size_t n = (size_t)((stop ? stop : end) - p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        char num[16];
        if (n == 0 || n >= sizeof num)
            return 0;
        memcpy(num, p, n);
        num[n] = '\0';
        char *rest = NULL;
        double q = strtod(num, &rest);
        return *rest || !(q >= 0) || q > 1 ? 0 : q;
    }
}

int exp_accepts_gzip(const char *ae)
{
    if (!ae)
        return 0;
    double gzip_q = -1, star_q = -1; /* -1: not listed */
    for (const char *p = ae; *p;) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        const char *end = p + strcspn(p, ",");
        size_t n = strcspn(p, ";, \t");
        if (n > (size_t)(end - p))
            n = (size_t)(end - p);
        double q = q_of(p + n, end);
        if ((n == 4 && strncasecmp(p, "gzip", 4) == 0) ||
            (n == 6 && strncasecmp(p, "x-gzip", 6) == 0))
            gzip_q = q > gzip_q ? q : gzip_q;
        else if (n == 1 && *p == '*')
            star_q = q;
        p = end;
    }
    return gzip_q >= 0 ? gzip_q > 0 : star_q > 0;
}

int exp_gzip(const char *in, size_t len, char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (len > UINT32_MAX)
        return -1; /* zlib counts in uInt; a scrape is far smaller */
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 15 + 16: deflate inside the gzip header and trailer. */
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&z, (uLong)len);
    char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH); /* deflateBound: one call finishes */
    size_t done = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = done;
    return 0;
}
