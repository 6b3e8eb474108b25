/*
 * expo.c - see expo.h.
 */
#include "expo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPO_DEFAULT_LIMIT (64u << 20)

void expo_init(expo *e, size_t limit)
{
    memset(e, 0, sizeof *e);
    e->limit = limit ? limit : EXPO_DEFAULT_LIMIT;
}

void expo_free(expo *e)
{
    free(e->buf);
    e->buf = NULL;
    e->len = e->cap = 0;
}

/* Appends n bytes; 0, or -1 (nothing appended) past the limit or out of
 * memory. */
static int put(expo *e, const char *s, size_t n)
{
    if (e->len + n > e->limit) {
        e->truncated = 1;
        return -1;
    }
    if (e->len + n + 1 > e->cap) {
        size_t cap = e->cap ? e->cap : 4096;
        while (cap < e->len + n + 1)
            cap *= 2;
        char *nb = realloc(e->buf, cap);
        if (!nb) {
            e->truncated = 1;
            return -1;
        }
        e->buf = nb;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, s, n);
    e->len += n;
    e->buf[e->len] = '\0';
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        min = 0x80;
        c &= 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        min = 0x800;
        c &= 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return n;
}

size_t expo_escape_label(char *out, size_t size, const char *value)
{
    if (size == 0)
        return 0;
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)(value ? value : "");
    while (*s) {
        char esc[2];
        const char *piece;
        size_t n;
        if (*s == '\\' || *s == '"' || *s == '\n') {
            esc[0] = '\\';
            esc[1] = *s == '\n' ? 'n' : (char)*s;
            piece = esc;
            n = 2;
            s++;
        } else if ((n = utf8_len(s)) == 0) {
            piece = "?";
            n = 1;
            s++;
        } else {
            piece = (const char *)s;
            s += n;
        }
        if (o + n > size - 1)
            break;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return o;
}

const char *expo_format_value(char *out, size_t size, double v)
{
    if (isnan(v))
        snprintf(out, size, "NaN");
    else if (isinf(v))
        snprintf(out, size, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(out, size, "%.0f", v);
    else {
        /* The shortest of %.15g..%.17g that reads back exactly. */
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(out, size, "%.*g", prec, v);
            if (strtod(out, NULL) == v)
                break;
        }
    }
    return out;
}

int expo_family(expo *e, const char *name, const char *type, const char *help)
{
    for (size_t i = 0; i < e->nfamilies; i++) {
        if (strcmp(e->families[i], name) == 0) {
            e->skip = 1;
            return -1;
        }
    }
    e->skip = 0;
    if (e->nfamilies < EXPO_MAX_FAMILIES)
        e->families[e->nfamilies++] = name;
    /* HELP text: backslash and newline escaped. */
    char line[1024];
    size_t o = (size_t)snprintf(line, sizeof line, "# HELP %s ", name);
    for (const char *h = help; *h && o + 3 < sizeof line; h++) {
        if (*h == '\\' || *h == '\n') {
            line[o++] = '\\';
            line[o++] = *h == '\n' ? 'n' : '\\';
        } else {
            line[o++] = *h;
        }
    }
    line[o++] = '\n';
    if (put(e, line, o) != 0)
        return 0;
    int n = snprintf(line, sizeof line, "# TYPE %s %s\n", name, type);
    put(e, line, (size_t)n);
    return 0;
}

static void sample(expo *e, const char *metric, const expo_label *labels, size_t nlabels,
                   const expo_label *extra, const char *value)
{
    if (e->skip) {
        e->dropped++;
        return;
    }
    char line[4096];
    size_t o = 0, cap = sizeof line;
    size_t n = strlen(metric);
    if (n >= 256) {
        e->dropped++;
        return;
    }
    memcpy(line, metric, n);
    o = n;
    size_t total = nlabels + (extra ? 1 : 0);
    for (size_t i = 0; i < total; i++) {
        const expo_label *l = i < nlabels ? &labels[i] : extra;
        size_t ln = strlen(l->name);
        if (o + ln + 8 >= cap) {
            e->dropped++;
            return;
        }
        line[o++] = i == 0 ? '{' : ',';
        memcpy(line + o, l->name, ln);
        o += ln;
        line[o++] = '=';
        line[o++] = '"';
        /* Room for the closing quote, brace, value and newline. */
        size_t room = cap - o > 64 ? cap - o - 64 : 0;
        if (room < 2) {
            e->dropped++;
            return;
        }
        o += expo_escape_label(line + o, room, l->value);
        line[o++] = '"';
    }
    if (total)
        line[o++] = '}';
    line[o++] = ' ';
    size_t vn = strlen(value);
    memcpy(line + o, value, vn);
    o += vn;
    line[o++] = '\n';
    if (put(e, line, o) != 0)
        e->dropped++;
}

void expo_sample(expo *e, const char *metric, const expo_label *labels, size_t nlabels,
                 const expo_label *extra, double value)
{
    char v[64];
    sample(e, metric, labels, nlabels, extra, expo_format_value(v, sizeof v, value));
}

void expo_sample_u64(expo *e, const char *metric, const expo_label *labels, size_t nlabels,
                     const expo_label *extra, uint64_t value)
{
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)value);
    sample(e, metric, labels, nlabels, extra, v);
}
