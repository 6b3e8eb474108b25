/*
 * test_units.c - sizes and durations as users type them.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vyre/units.h"

Test(units, sizes_accepted)
{
    static const struct {
        const char *in;
        uint64_t want;
    } cases[] = {
        {"0", 0},
        {"17", 17},
        {"17B", 17},
        {"500M", UINT64_C(500) << 20},
        {"2G", UINT64_C(2) << 30},
        {"1.5GiB", UINT64_C(3) << 29},
        {"1.5G", UINT64_C(3) << 29},
        {"750MB", UINT64_C(750000000)},
        {"4K", 4096},
        {"4KB", 4000},
        {"0.5K", 512},
        {"1T", UINT64_C(1) << 40},
        {"2TB", UINT64_C(2000000000000)},
        {"16777215T", UINT64_C(16777215) << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 1;
        vyre_error e;
        cr_assert_eq(vyre_parse_size(cases[i].in, &v, &e), 0, "'%s': %s", cases[i].in, e.message);
        cr_assert_eq(v, cases[i].want, "'%s' gave %llu", cases[i].in, (unsigned long long)v);
    }
}

Test(units, sizes_rejected_with_hint)
{
    static const struct {
        const char *in;
        int code;
        const char *msg;
    } cases[] = {
        {"10QB", VYRE_EINVAL, "'10QB' has an unknown size unit 'QB'"},
        {"-3G", VYRE_EINVAL, "'-3G' is not a size"},
        {"1e99G", VYRE_EINVAL, "'1e99G' has an unknown size unit 'e99G'"},
        {"", VYRE_EINVAL, "'' is not a size"},
        {"G", VYRE_EINVAL, "'G' is not a size"},
        {" 5M", VYRE_EINVAL, "' 5M' is not a size"},
        {"5 M", VYRE_EINVAL, "'5 M' has an unknown size unit ' M'"},
        {"5.M", VYRE_EINVAL, "'5.M' is not a size"},
        {"16777216T", VYRE_ERANGE, "size '16777216T' is too large"},
        {"18446744073709551616", VYRE_ERANGE, "size '18446744073709551616' is too large"},
        {"99999999999999999999999G", VYRE_ERANGE, "size '99999999999999999999999G' is too large"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 7;
        vyre_error e;
        cr_assert_eq(vyre_parse_size(cases[i].in, &v, &e), cases[i].code, "'%s'", cases[i].in);
        cr_assert_str_eq(e.message, cases[i].msg);
        cr_assert_neq(e.hint[0], '\0');
        cr_assert_eq(v, 7, "output written on failure for '%s'", cases[i].in);
    }
}

Test(units, plain_decimal_counts)
{
    uint64_t v = 7;
    cr_assert_eq(vyre_parse_uint("0", &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(vyre_parse_uint("4294967296", &v), 0);
    cr_assert_eq(v, UINT64_C(4294967296));
    cr_assert_eq(vyre_parse_uint("18446744073709551615", &v), 0);
    cr_assert_eq(v, UINT64_MAX);
    v = 7;
    cr_assert_eq(vyre_parse_uint("18446744073709551616", &v), VYRE_ERANGE);
    cr_assert_eq(vyre_parse_uint("", &v), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_uint(NULL, &v), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_uint("4G", &v), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_uint("-1", &v), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_uint(" 1", &v), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_uint("1x99999999999999999999", &v), VYRE_EINVAL);
    cr_assert_eq(v, 7, "untouched on failure");
}

Test(units, durations)
{
    int64_t ns = 0;
    cr_assert_eq(vyre_parse_duration("90m", &ns, NULL), 0);
    cr_assert_eq(ns, INT64_C(90) * 60 * 1000000000);
    cr_assert_eq(vyre_parse_duration("12h", &ns, NULL), 0);
    cr_assert_eq(ns, INT64_C(12) * 3600 * 1000000000);
    cr_assert_eq(vyre_parse_duration("30d", &ns, NULL), 0);
    cr_assert_eq(ns, INT64_C(30) * 86400 * 1000000000);
    cr_assert_eq(vyre_parse_duration("1.5h", &ns, NULL), 0);
    cr_assert_eq(ns, INT64_C(5400) * 1000000000);
    cr_assert_eq(vyre_parse_duration("2w", &ns, NULL), 0);
    cr_assert_eq(ns, INT64_C(14) * 86400 * 1000000000);
    vyre_error e;
    cr_assert_eq(vyre_parse_duration("-3d", &ns, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "'-3d' is not an age");
    cr_assert_eq(vyre_parse_duration("30", &ns, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "age '30' has no unit");
    cr_assert_eq(vyre_parse_duration("3y", &ns, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "'3y' has an unknown age unit 'y'");
    cr_assert_eq(vyre_parse_duration("3dd", &ns, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_parse_duration("99999999999w", &ns, &e), VYRE_ERANGE);
    cr_assert_str_eq(e.message, "age '99999999999w' is too large");
}

Test(units, formatting)
{
    char b[32];
    vyre_format_size(17, b, sizeof b);
    cr_assert_str_eq(b, "17 B");
    vyre_format_size(1536, b, sizeof b);
    cr_assert_str_eq(b, "1.5 KiB");
    vyre_format_size(UINT64_C(3) << 29, b, sizeof b);
    cr_assert_str_eq(b, "1.5 GiB");
    vyre_format_age(INT64_C(45) * 1000000000, b, sizeof b);
    cr_assert_str_eq(b, "45s");
    vyre_format_age(INT64_C(3) * 3600 * 1000000000, b, sizeof b);
    cr_assert_str_eq(b, "3h");
    vyre_format_age(INT64_C(4) * 86400 * 1000000000, b, sizeof b);
    cr_assert_str_eq(b, "4d");
    vyre_format_age(-1, b, sizeof b);
    cr_assert_str_eq(b, "-");
}

/* Issue 25, point 6: a configured age prints as it was written (30d, not
 * the 4w of the rounded short age), and a zero duration is "0 s". */
Test(units, exact_durations_print_as_written)
{
    static const struct {
        const char *in, *out;
    } cases[] = {{"30d", "30d"}, {"45d", "45d"}, {"7d", "7d"},    {"2w", "14d"},
                 {"36h", "36h"}, {"90m", "90m"}, {"1.5h", "90m"}, {"45s", "45s"},
                 {"1h", "1h"},   {"0s", "0"},    {"0d", "0"}};
    char b[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -1;
        cr_assert_eq(vyre_parse_duration(cases[i].in, &ns, NULL), 0, "%s", cases[i].in);
        vyre_format_duration_exact(ns, b, sizeof b);
        cr_assert_str_eq(b, cases[i].out, "%s", cases[i].in);
        /* What it prints reads back to the same duration (a configuration
         * value reads "0" as off, vyre_parse_duration wants a unit). */
        if (ns == 0)
            continue;
        int64_t back = -1;
        cr_assert_eq(vyre_parse_duration(b, &back, NULL), 0, "%s", b);
        cr_assert_eq(back, ns, "%s", b);
    }
    vyre_format_duration_exact(1500000000, b, sizeof b);
    cr_assert_str_eq(b, "1.500000000s");
}

Test(units, durations_for_people_zero_is_0_s)
{
    static const struct {
        uint64_t ns;
        const char *out;
    } cases[] = {{0, "0 s"},
                 {850, "850 ns"},
                 {12300, "12.3 us"},
                 {20000000, "20.0 ms"},
                 {UINT64_C(4560000000), "4.56 s"},
                 {UINT64_C(3) * 3600 * 1000000000, "3h"}};
    char b[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_format_duration(cases[i].ns, b, sizeof b);
        cr_assert_str_eq(b, cases[i].out);
    }
}

/* Issue 22, point 3: a cache size as ccache writes it. A bare number is
 * GiB ("max_size = 10" was 10 bytes and emptied the cache), fractions round
 * to the nearest byte, and a value that is not zero never becomes 0
 * ("0.4" and "0.0000001K" were 0: no limit). */
Test(units, cache_sizes_bare_number_is_gib_and_fractions_round)
{
    static const struct {
        const char *in;
        uint64_t want;
    } cases[] = {
        {"0", 0},
        {"0G", 0},
        {"0.0", 0},
        {"10", UINT64_C(10) << 30},
        {"0.4", UINT64_C(429496730)}, /* 0.4 * 2^30 = 429496729.6, rounded */
        {"1.5", UINT64_C(3) << 29},
        {"17B", 17},
        {"500M", UINT64_C(500) << 20},
        {"0.1K", 102},  /* 102.4 */
        {"0.0006K", 1}, /* 0.6144 rounds up to one byte */
        {"2.5B", 3},    /* half up */
        {"750MB", UINT64_C(750000000)},
        {"0.000000000001T", 1}, /* 1.0995 bytes: a 12th decimal still counts */
        {"16777215T", UINT64_C(16777215) << 40},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 1;
        vyre_error e;
        cr_assert_eq(vyre_parse_cache_size(cases[i].in, &v, &e), 0, "'%s': %s", cases[i].in,
                     e.message);
        cr_assert_eq(v, cases[i].want, "'%s' gave %llu", cases[i].in, (unsigned long long)v);
    }
    static const struct {
        const char *in;
        int code;
        const char *msg;
    } bad[] = {
        {"0.0000001K", VYRE_EINVAL, "size '0.0000001K' is less than one byte"},
        {"0.4B", VYRE_EINVAL, "size '0.4B' is less than one byte"},
        {"0.0000000001", VYRE_EINVAL, "size '0.0000000001' is less than one byte"},
        {"17179869184", VYRE_ERANGE, "size '17179869184' is too large"}, /* 2^34 GiB */
        {"10X", VYRE_EINVAL, "'10X' has an unknown size unit 'X'"},
        {"-1", VYRE_EINVAL, "'-1' is not a size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        vyre_error e;
        cr_assert_eq(vyre_parse_cache_size(bad[i].in, &v, &e), bad[i].code, "'%s'", bad[i].in);
        cr_assert_str_eq(e.message, bad[i].msg);
        cr_assert(strstr(e.hint, "a size without a unit is GiB"), "%s", e.hint);
        cr_assert_eq(v, 7, "output written on failure for '%s'", bad[i].in);
    }
}

/* Issue 34: one rule for every share option; a bare number is a percent
 * (nvbench's), so "0.5" and "0.5%" are the same 0.005. */
Test(units, percent_bare_and_suffixed_agree)
{
    static const struct {
        const char *in;
        double want;
    } cases[] = {
        {"0.5", 0.005}, {"0.5%", 0.005}, {"10", 0.10},  {"10%", 0.10}, {"0", 0.0},
        {"0%", 0.0},    {"100", 1.0},    {"250%", 2.5}, {"1", 0.01},   {"12.25%", 0.1225},
        {"0.1", 0.001}, {".5", 0.005},   {"007", 0.07},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double r = -1;
        vyre_error e = {0};
        cr_assert_eq(vyre_parse_percent(cases[i].in, &r, &e), 0, "'%s': %s", cases[i].in,
                     e.message);
        cr_assert_float_eq(r, cases[i].want, 1e-15, "'%s' -> %.17g", cases[i].in, r);
    }
    double a = 0, b = 0;
    cr_assert_eq(vyre_parse_percent("0.5", &a, NULL), 0);
    cr_assert_eq(vyre_parse_percent("0.5%", &b, NULL), 0);
    cr_assert(a == b, "0.5 gives %.17g, 0.5%% %.17g", a, b);
}

Test(units, percent_refused_with_value_and_hint)
{
    static const char *const bad[] = {
        "",   "%",   "-1",   "+5", "1e2", "0.5%%", "5 %", " 5",
        "5x", "abc", "0x10", "5.", "nan", "inf",   "1,5", "50%x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double r = 42;
        vyre_error e = {0};
        cr_assert_eq(vyre_parse_percent(bad[i], &r, &e), VYRE_EINVAL, "'%s' accepted", bad[i]);
        cr_assert(r == 42, "'%s' wrote %g on failure", bad[i], r);
        char want[64];
        snprintf(want, sizeof want, "'%s' is not a percentage", bad[i]);
        cr_assert_str_eq(e.message, want);
        cr_assert(strstr(e.hint, "0.5 or 0.5%") && strstr(e.hint, "a bare number is a percent"),
                  "hint: %s", e.hint);
    }
    vyre_error e = {0};
    double r = 0;
    cr_assert_eq(vyre_parse_percent("99999999999999999999999", &r, &e), VYRE_ERANGE);
    cr_assert_str_eq(e.message, "percentage '99999999999999999999999' is too large");
    cr_assert_eq(vyre_parse_percent(NULL, &r, &e), VYRE_EINVAL);
}
