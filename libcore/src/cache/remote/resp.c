/*
 * resp.c - see resp.h.
 *
 * The scan starts from the first byte every time it is called (the
 * transport calls it after each read): it walks the header lines and
 * jumps over bulk bodies, so a large body costs one comparison per call,
 * and the line and element bounds keep a reply made of many small parts
 * cheap to rescan.
 */
#include "cache/remote/resp.h"

/* The "\r\n" ending the line that starts at pos: 1 and *eol at its '\r';
 * 0 when not there yet; -1 when the line is longer than the bound. */
static int line_end(const char *buf, size_t len, size_t pos, size_t *eol)
{
    size_t lim = len;
    if (lim - pos > (size_t)VYRE__RESP_LINE_MAX + 2)
        lim = pos + VYRE__RESP_LINE_MAX + 2;
    for (size_t i = pos; i + 1 < lim; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n') {
            *eol = i;
            return 1;
        }
    }
    return lim - pos >= (size_t)VYRE__RESP_LINE_MAX + 2 ? -1 : 0;
}

/* A length as Redis writes it: "-1" (nil) or 0..INT64_MAX in decimal
 * digits, nothing else. 0 and *out, or -1. */
static int parse_len(const char *p, size_t n, int64_t *out)
{
    if (n == 2 && p[0] == '-' && p[1] == '1') {
        *out = -1;
        return 0;
    }
    if (n == 0 || n > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}

vyre__resp_status vyre__resp_frame(const char *buf, size_t len, uint64_t max_bulk, size_t *end,
                                   uint64_t *declared)
{
    /* pending[d]: elements still to come at nesting level d; level 0 is
     * the reply itself, one element. */
    uint64_t pending[VYRE__RESP_DEPTH_MAX + 1];
    int depth = 0;
    pending[0] = 1;
    size_t pos = 0;
    uint64_t total = 0, elements = 0;
    *end = 0;
    *declared = 0;
    while (depth >= 0) {
        if (pending[depth] == 0) {
            depth--;
            continue;
        }
        pending[depth]--;
        if (pos >= len)
            return VYRE__RESP_PARTIAL;
        size_t eol = 0;
        int le = line_end(buf, len, pos + 1, &eol);
        if (le == 0)
            return VYRE__RESP_PARTIAL;
        *end = pos;
        if (le < 0)
            return VYRE__RESP_BAD;
        size_t next = eol + 2;
        int64_t n = 0;
        char type = buf[pos];
        if (type == '+' || type == '-' || type == ':') {
            pos = next;
            continue;
        }
        if ((type != '$' && type != '*') || parse_len(buf + pos + 1, eol - pos - 1, &n))
            return VYRE__RESP_BAD;
        if (n < 0) { /* nil bulk string or nil array */
            pos = next;
        } else if (type == '$') {
            uint64_t u = (uint64_t)n;
            if (u > max_bulk - total) { /* total <= max_bulk: no overflow */
                *declared = u > UINT64_MAX - total ? UINT64_MAX : total + u;
                return VYRE__RESP_TOOBIG;
            }
            total += u;
            if (len - next < u + 2)
                return VYRE__RESP_PARTIAL;
            if (buf[next + u] != '\r' || buf[next + u + 1] != '\n') {
                *end = next + (size_t)u;
                return VYRE__RESP_BAD;
            }
            pos = next + (size_t)u + 2;
        } else {
            if ((uint64_t)n > VYRE__RESP_ELEMENTS_MAX - elements || depth == VYRE__RESP_DEPTH_MAX)
                return VYRE__RESP_BAD;
            elements += (uint64_t)n;
            pending[++depth] = (uint64_t)n;
            pos = next;
        }
    }
    *end = pos;
    *declared = total;
    return VYRE__RESP_COMPLETE;
}
