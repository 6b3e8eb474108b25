/*
 * units.c - sizes and durations as users type them (see vyre/units.h).
 */
#include "vyre/units.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

/* Splits "<digits>[.<digits>]<suffix>" and computes value * mult: the
 * integer part is checked for overflow; of the fraction, 18 digits are
 * kept (2^40 * 10^-18 is far below a byte), and the fractional bytes are
 * truncated, or rounded half up when round is set. *nonzero (may be NULL)
 * tells whether any digit was not 0, so that a caller can tell "0" from a
 * fraction that came to nothing. Returns 0, -1 (syntax) or -2 (range). */
static int scaled_ex(const char *s, const char **suffix, uint64_t mult, int round, uint64_t *out,
                     int *nonzero)
{
    const char *p = s;
    uint64_t ip = 0;
    int digits = 0, overflow = 0, nz = 0;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        nz |= d != 0;
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
            nz |= *p != '0';
            if (scale < UINT64_C(1000000000000000000)) {
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
    if (nonzero)
        *nonzero = nz;
    if (overflow)
        return -2;
    if (mult == 0) {
        *out = ip; /* caller only wants the syntax checked */
        return 0;
    }
    if (ip > UINT64_MAX / mult)
        return -2;
    uint64_t v = ip * mult;
    /* frac/scale * mult in 128 bits: frac < 10^18 and mult <= 2^40. */
    unsigned __int128 num = (unsigned __int128)frac * mult;
    unsigned __int128 f = num / scale;
    if (round && (num % scale) * 2 >= scale)
        f++;
    if (f > UINT64_MAX || v > UINT64_MAX - (uint64_t)f)
        return -2;
    *out = v + (uint64_t)f;
    return 0;
}

static int scaled(const char *s, const char **suffix, uint64_t mult, uint64_t *out)
{
    return scaled_ex(s, suffix, mult, 0, out, NULL);
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

int vyre_parse_cache_size(const char *s, uint64_t *bytes, vyre_error *err)
{
    /* ccache's rule: "max_size = 10" is 10 GiB. Before issue 22 a bare
     * number was bytes, and "max_size = 10" emptied the cache at the next
     * put; "0.4" truncated to 0, which means no limit. */
    static const char hint[] = "a size without a unit is GiB: write 5G, 500M, 1.5GiB or 750MB "
                               "(K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024; KB/MB/GB/TB "
                               "of 1000)";
    if (!s || !bytes)
        return vyre__fail(err, VYRE_EINVAL, hint, "missing size");
    const char *suffix = NULL;
    uint64_t unused;
    int nonzero = 0;
    int rc = scaled_ex(s, &suffix, 0, 0, &unused, &nonzero);
    if (rc == -1)
        return vyre__fail(err, VYRE_EINVAL, hint, "'%s' is not a size", s);
    uint64_t mult = 0;
    if (!*suffix) {
        mult = UINT64_C(1) << 30;
    } else {
        for (size_t i = 1; i < VYRE_ARRAY_SIZE(g_size_units) && !mult; i++)
            if (strcmp(suffix, g_size_units[i].name) == 0)
                mult = g_size_units[i].mult;
        if (!mult)
            return vyre__fail(err, VYRE_EINVAL, hint, "'%s' has an unknown size unit '%s'", s,
                              suffix);
    }
    uint64_t v = 0;
    if (rc == 0)
        rc = scaled_ex(s, &suffix, mult, 1, &v, NULL);
    if (rc)
        return vyre__fail(err, VYRE_ERANGE, hint, "size '%s' is too large", s);
    if (v == 0 && nonzero)
        return vyre__fail(err, VYRE_EINVAL, hint, "size '%s' is less than one byte", s);
    *bytes = v;
    return VYRE_OK;
}

int vyre_parse_percent(const char *s, double *ratio, vyre_error *err)
{
    /* One rule for every tool (issue 34): a bare number is a percent, as
     * nvbench's --max-noise takes it. compare once read a bare number
     * below 1 as a fraction, so "--max-noise 0.5" was 50 % there and
     * 0.5 % in run. */
    static const char hint[] = "write a percentage such as 0.5 or 0.5% (both are 0.5%: a bare "
                               "number is a percent, as nvbench's --max-noise)";
    if (!s || !ratio)
        return vyre__fail(err, VYRE_EINVAL, hint, "missing percentage");
    const char *suffix = NULL;
    uint64_t unused;
    int rc = scaled(s, &suffix, 0, &unused);
    if (rc == -1 || (suffix && suffix[0] && strcmp(suffix, "%") != 0))
        return vyre__fail(err, VYRE_EINVAL, hint, "'%s' is not a percentage", s);
    if (rc == -2)
        return vyre__fail(err, VYRE_ERANGE, hint, "percentage '%s' is too large", s);
    /* The digits read in the C locale whatever the process's is (strtod
     * would take "0,5" under de_DE and refuse "0.5"). */
    double ip = 0;
    uint64_t frac = 0, scale = 1;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++)
        ip = ip * 10 + (*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale < UINT64_C(1000000000000000000)) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
    *ratio = (ip + (double)frac / (double)scale) / 100.0;
    return VYRE_OK;
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

void vyre_format_duration_exact(int64_t ns, char *buf, size_t size)
{
    static const struct {
        char unit;
        int64_t ns;
    } units[] = {{'d', INT64_C(86400000000000)},
                 {'h', INT64_C(3600000000000)},
                 {'m', INT64_C(60000000000)},
                 {'s', INT64_C(1000000000)}};
    if (ns == 0) {
        snprintf(buf, size, "0");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ns % units[i].ns == 0) {
            snprintf(buf, size, "%" PRId64 "%c", ns / units[i].ns, units[i].unit);
            return;
        }
    /* Not whole seconds: exact, with nine decimals. */
    snprintf(buf, size, "%" PRId64 ".%09" PRId64 "s", ns / INT64_C(1000000000),
             ns % INT64_C(1000000000));
}

void vyre_format_duration(uint64_t ns, char *buf, size_t size)
{
    if (ns == 0)
        snprintf(buf, size, "0 s"); /* "0 ns" read as a measurement too small to show */
    else if (ns < 1000)
        snprintf(buf, size, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, size, "%.1f us", (double)ns / 1e3);
    else if (ns < UINT64_C(1000000000))
        snprintf(buf, size, "%.1f ms", (double)ns / 1e6);
    else if (ns < UINT64_C(120000000000))
        snprintf(buf, size, "%.2f s", (double)ns / 1e9);
    else
        vyre_format_age(ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ns, buf, size);
}

/* Levenshtein distance with one row; words over 64 bytes are never near
 * (base/internal.h). */
size_t vyre__edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *vyre_nearest_word(const char *word, const char *const *candidates, size_t n)
{
    if (!word || !candidates)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        size_t d = vyre__edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    size_t limit = strlen(word) / 3;
    if (limit < 2)
        limit = 2;
    return best_d <= limit ? best : NULL;
}
