/*
 * units.c - sizes and durations as users type them (see vyre/units.h).
 */
#include "vyre/units.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

/* Splits "<digits>[.<digits>]<suffix>" and computes value * mult exactly
 * enough: the integer part is checked for overflow, the fraction is
 * truncated to nanounit precision. Returns 0, -1 (syntax) or -2 (range). */
static int scaled(const char *s, const char **suffix, uint64_t mult, uint64_t *out)
{
    const char *p = s;
    uint64_t ip = 0;
    int digits = 0, overflow = 0;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (ip > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            ip = ip * 10 + d;
        p++;
        digits++;
    }
    uint64_t frac = 0, scale = 1;
    if (*p == '.') {
        p++;
        int fd = 0;
        while (*p >= '0' && *p <= '9') {
            if (scale < UINT64_C(1000000000)) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
            p++;
            fd++;
        }
        if (fd == 0)
            return -1;
        digits += fd;
    }
    if (digits == 0)
        return -1;
    *suffix = p;
    if (overflow)
        return -2;
    if (mult == 0) {
        *out = ip; /* caller only wants the syntax checked */
        return 0;
    }
    if (ip > UINT64_MAX / mult)
        return -2;
    uint64_t v = ip * mult;
    /* frac/scale * mult, without overflow: mult <= 2^40 and frac < 1e9. */
    unsigned __int128 f = (unsigned __int128)frac * mult / scale;
    if (v > UINT64_MAX - (uint64_t)f)
        return -2;
    *out = v + (uint64_t)f;
    return 0;
}

static const struct {
    const char *name;
    uint64_t mult;
} g_size_units[] = {
    {"", 1},
    {"B", 1},
    {"K", UINT64_C(1) << 10},
    {"KiB", UINT64_C(1) << 10},
    {"KB", UINT64_C(1000)},
    {"M", UINT64_C(1) << 20},
    {"MiB", UINT64_C(1) << 20},
    {"MB", UINT64_C(1000000)},
    {"G", UINT64_C(1) << 30},
    {"GiB", UINT64_C(1) << 30},
    {"GB", UINT64_C(1000000000)},
    {"T", UINT64_C(1) << 40},
    {"TiB", UINT64_C(1) << 40},
    {"TB", UINT64_C(1000000000000)},
};

int vyre_parse_uint(const char *s, uint64_t *out)
{
    if (!s || !*s || !out)
        return VYRE_EINVAL;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return VYRE_EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return VYRE_ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return VYRE_OK;
}

int vyre_parse_size(const char *s, uint64_t *bytes, vyre_error *err)
{
    static const char hint[] = "write a size such as 500M, 2G, 1.5GiB or 750MB "
                               "(K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024; KB/MB/GB/TB "
                               "of 1000)";
    if (!s || !bytes)
        return vyre__fail(err, VYRE_EINVAL, hint, "missing size");
    const char *suffix = NULL;
    uint64_t unused;
    int rc = scaled(s, &suffix, 0, &unused);
    if (rc == -1)
        return vyre__fail(err, VYRE_EINVAL, hint, "'%s' is not a size", s);
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(g_size_units); i++) {
        if (strcmp(suffix, g_size_units[i].name) != 0)
            continue;
        if (rc == 0)
            rc = scaled(s, &suffix, g_size_units[i].mult, bytes);
        if (rc)
            return vyre__fail(err, VYRE_ERANGE, hint, "size '%s' is too large", s);
        return VYRE_OK;
    }
    return vyre__fail(err, VYRE_EINVAL, hint, "'%s' has an unknown size unit '%s'", s, suffix);
}

int vyre_parse_duration(const char *s, int64_t *ns, vyre_error *err)
{
    static const char hint[] = "write an age such as 90m, 12h, 30d or 2w "
                               "(units: s, m, h, d, w)";
    static const struct {
        char unit;
        uint64_t secs;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
    if (!s || !ns)
        return vyre__fail(err, VYRE_EINVAL, hint, "missing age");
    const char *suffix = NULL;
    uint64_t unused;
    int syn = scaled(s, &suffix, 0, &unused);
    if (syn == -1)
        return vyre__fail(err, VYRE_EINVAL, hint, "'%s' is not an age", s);
    if (suffix[0] == '\0')
        return vyre__fail(err, VYRE_EINVAL, hint, "age '%s' has no unit", s);
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(units); i++) {
        if (suffix[0] != units[i].unit || suffix[1] != '\0')
            continue;
        uint64_t v = 0;
        int rc = syn ? syn : scaled(s, &suffix, units[i].secs * UINT64_C(1000000000), &v);
        if (rc == -2 || (rc == 0 && v > (uint64_t)INT64_MAX))
            return vyre__fail(err, VYRE_ERANGE, hint, "age '%s' is too large", s);
        if (rc)
            return vyre__fail(err, VYRE_EINVAL, hint, "'%s' is not an age", s);
        *ns = (int64_t)v;
        return VYRE_OK;
    }
    return vyre__fail(err, VYRE_EINVAL, hint, "'%s' has an unknown age unit '%s'", s, suffix);
}

void vyre_format_size(uint64_t n, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%" PRIu64 " B", n);
        return;
    }
    double v = (double)n;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
}

void vyre_format_age(int64_t ns, char *buf, size_t size)
{
    if (ns < 0) {
        snprintf(buf, size, "-");
        return;
    }
    int64_t s = ns / 1000000000;
    if (s < 120)
        snprintf(buf, size, "%" PRId64 "s", s);
    else if (s < 2 * 3600)
        snprintf(buf, size, "%" PRId64 "m", s / 60);
    else if (s < 2 * 86400)
        snprintf(buf, size, "%" PRId64 "h", s / 3600);
    else if (s < 14 * 86400)
        snprintf(buf, size, "%" PRId64 "d", s / 86400);
    else
        snprintf(buf, size, "%" PRId64 "w", s / 604800);
}
