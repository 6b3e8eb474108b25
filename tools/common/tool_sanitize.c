/*
 * tool_sanitize.c - see tool_sanitize.h. One decoder walks the string a unit at a
 * time (an ASCII byte, a whole UTF-8 character, or one bad byte) and says
 * whether the unit is copied or escaped; the three entry points only
 * differ in where the output goes.
 */
#include "tool_sanitize.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at p (2 to 4) with its code point in
 * *cp, or 0 when the bytes at p are not one (RFC 3629: no overlong form,
 * no surrogate, nothing above U+10FFFF). Reads no byte past a NUL. */
static size_t utf8_seq(const unsigned char *p, unsigned *cp)
{
    unsigned b = p[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (b >= 0xc2 && b <= 0xdf) {
        n = 2;
        *cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
        n = 3;
        *cp = b & 0x0f;
        if (b == 0xe0)
            lo = 0xa0; /* overlong below U+0800 */
        else if (b == 0xed)
            hi = 0x9f; /* surrogates U+D800-U+DFFF */
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4;
        *cp = b & 0x07;
        if (b == 0xf0)
            lo = 0x90; /* overlong below U+10000 */
        else if (b == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        unsigned c = p[i];
        if (c < lo || c > hi) /* also stops at the NUL */
            return 0;
        lo = 0x80;
        hi = 0xbf;
        *cp = (*cp << 6) | (c & 0x3f);
    }
    return n;
}

/* Code points shown escaped although valid: C1 controls, and the
 * bidirectional embeddings, overrides and isolates (they reorder the
 * rest of the line: "Trojan Source"). */
static int cp_hostile(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* The unit at p (not at the NUL): returns how many input bytes it takes;
 * fills esc (NUL-terminated, at most 6 characters) when it is shown
 * escaped, else leaves esc empty and the unit is copied as it is. */
static size_t unit(const unsigned char *p, int flags, char esc[8])
{
    static const char hex[] = "0123456789abcdef";
    unsigned b = p[0], cp = 0;
    esc[0] = '\0';
    if (b < 0x80) {
        int keep = b >= 0x20 && b != 0x7f;
        if ((flags & TOOL_CLEAN_KEEP_NEWLINE) && (b == '\n' || b == '\t'))
            keep = 1;
        if (!keep) {
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[b >> 4];
            esc[3] = hex[b & 15];
            esc[4] = '\0';
        }
        return 1;
    }
    size_t n = utf8_seq(p, &cp);
    if (n == 0) { /* one bad byte; resynchronise on the next */
        esc[0] = '\\';
        esc[1] = 'x';
        esc[2] = hex[b >> 4];
        esc[3] = hex[b & 15];
        esc[4] = '\0';
        return 1;
    }
    if (cp_hostile(cp)) {
        esc[0] = '\\';
        esc[1] = 'u';
        for (int i = 0; i < 4; i++)
            esc[2 + i] = hex[(cp >> (12 - 4 * i)) & 15];
        esc[6] = '\0';
    }
    return n;
}

const char *tool_clean_flags(const char *s, int flags, char *buf, size_t size)
{
    size_t len = 0;
    if (!s)
        s = "";
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        char esc[8];
        size_t n = unit(p, flags, esc);
        const char *piece = esc[0] ? esc : (const char *)p;
        size_t plen = esc[0] ? strlen(esc) : n;
        if (len + plen >= size)
            break; /* cut before a whole unit, never inside one */
        memcpy(buf + len, piece, plen);
        len += plen;
        p += n;
    }
    buf[len] = '\0';
    return buf;
}

const char *tool_clean(const char *s, char *buf, size_t size)
{
    return tool_clean_flags(s, 0, buf, size);
}

void tool_clean_fputs(const char *s, FILE *out)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        char esc[8];
        size_t n = unit(p, 0, esc);
        if (esc[0])
            fputs(esc, out);
        else
            fwrite(p, 1, n, out);
        p += n;
    }
}

size_t tool_clean_mask(const char *s, size_t n, char *dst)
{
    /* unit() reads at most up to a NUL: decode from a NUL-terminated copy
     * of the bytes, in pieces (a unit is at most 4 bytes: pieces overlap
     * by 3 so none is cut). */
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, replaced = 0;
    while (i < n) {
        unsigned char tmp[64 + 1];
        size_t len = n - i < 64 ? n - i : 64;
        memcpy(tmp, p + i, len);
        tmp[len] = '\0';
        size_t j = 0;
        while (j < len && (j < 61 || len < 64)) {
            char esc[8];
            size_t u = tmp[j] ? unit(tmp + j, 0, esc) : 1;
            if (esc[0] || !tmp[j]) {
                memset(dst + i + j, '?', u);
                replaced += u;
            } else {
                memcpy(dst + i + j, tmp + j, u);
            }
            j += u;
        }
        i += j;
    }
    return replaced;
}

int tool_clean_is_clean(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        char esc[8];
        p += unit(p, 0, esc);
        if (esc[0])
            return 0;
    }
    return 1;
}
