/*
 * test_sanitize.c - tools/common/tool_sanitize.c: control characters (C0, ESC,
 * DEL, C1), bidirectional overrides and every kind of invalid UTF-8 come
 * out escaped; clean text, multi-byte UTF-8 included, comes out byte for
 * byte; a short buffer cuts before a whole escape, never inside one.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_sanitize.h"

static void expect(const char *in, const char *want)
{
    char buf[256];
    cr_assert_str_eq(tool_clean(in, buf, sizeof buf), want, "cleaning \"%s\"", want);
    cr_assert_eq(tool_clean_is_clean(in), strcmp(in, want) == 0, "is_clean of \"%s\"", want);
}

Test(sanitize, control_characters_escaped)
{
    expect("\x1b[2J", "\\x1b[2J");
    expect("a\x07"
           "b",
           "a\\x07b");
    expect("tab\tnl\ncr\r", "tab\\x09nl\\x0acr\\x0d");
    expect("del\x7f", "del\\x7f");
    expect("\x01\x1f", "\\x01\\x1f");
    /* C1 controls in UTF-8: CSI (U+009B) and OSC (U+009D). */
    expect("\xc2\x9b"
           "31m",
           "\\u009b31m");
    expect("\xc2\x9d"
           "0;t\xc2\x9c",
           "\\u009d0;t\\u009c");
    /* Bidi overrides and isolates. */
    expect("abc\xe2\x80\xae"
           "fed",
           "abc\\u202efed");
    expect("\xe2\x81\xa6x\xe2\x81\xa9", "\\u2066x\\u2069");
}

Test(sanitize, invalid_utf8_escaped_byte_by_byte)
{
    expect("\xff", "\\xff");
    expect("a\x80z", "a\\x80z");                        /* stray continuation byte */
    expect("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
    expect("\xe0\x80\xaf", "\\xe0\\x80\\xaf");          /* overlong, three bytes */
    expect("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* a surrogate */
    expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    expect("cut\xe2\x82", "cut\\xe2\\x82");             /* sequence cut by the end */
    expect("\xe2\x82"
           "A",
           "\\xe2\\x82A");   /* cut by an ASCII byte */
    expect("\x9b", "\\x9b"); /* a raw 8-bit CSI */
}

Test(sanitize, clean_text_unchanged)
{
    const char *ok[] = {"",
                        "NVIDIA H100 80GB HBM3",
                        "kernel<float, 128>(int*)",
                        "back\\slash",
                        "caf\xc3\xa9",
                        "\xe6\x97\xa5\xe6\x9c\xac",
                        "\xf0\x9f\x98\x80 emoji",
                        "\xc2\xa0nbsp",
                        "\xef\xbf\xbd"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        expect(ok[i], ok[i]);
    char buf[8];
    cr_assert_str_eq(tool_clean(NULL, buf, sizeof buf), "");
}

Test(sanitize, short_buffer_cuts_before_a_whole_unit)
{
    char buf[8];
    /* "ab" + "\x1b" is 6 bytes: fits in 8 with the NUL; the next does not. */
    cr_assert_str_eq(tool_clean("ab\x1b\x1b", buf, sizeof buf), "ab\\x1b");
    /* A 3-byte character that does not fit is left out whole. */
    cr_assert_str_eq(tool_clean("abcde\xe6\x97\xa5", buf, sizeof buf), "abcde");
    char one[1];
    cr_assert_str_eq(tool_clean("\x1b", one, sizeof one), "");
    /* TOOL_CLEAN_SIZE is enough for the worst case. */
    char worst[65], big[TOOL_CLEAN_SIZE(64)];
    memset(worst, 0x1b, 64);
    worst[64] = '\0';
    cr_assert_eq(strlen(tool_clean(worst, big, sizeof big)), 64 * 4);
}

Test(sanitize, newline_kept_when_asked)
{
    char buf[64];
    cr_assert_str_eq(tool_clean_flags("a\nb\tc\x1b", TOOL_CLEAN_KEEP_NEWLINE, buf, sizeof buf),
                     "a\nb\tc\\x1b");
}

Test(sanitize, fputs_matches_clean)
{
    const char *in = "x\x1b[0m\xc2\x9b\xff\xe6\x97\xa5y";
    char want[128];
    tool_clean(in, want, sizeof want);
    char *got = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&got, &len);
    cr_assert_not_null(f);
    tool_clean_fputs(in, f);
    fclose(f);
    cr_assert_str_eq(got, want);
    free(got);
}

Test(sanitize, mask_keeps_the_width)
{
    const char in[] = "ok \x1b[2J \xc2\x9b"
                      "1m caf\xc3\xa9 \xff\xe6\x97\xa5";
    size_t n = sizeof in - 1;
    char out[sizeof in];
    cr_assert_eq(tool_clean_mask(in, n, out), 1 + 2 + 1);
    out[n] = '\0';
    cr_assert_str_eq(out, "ok ?[2J ??1m caf\xc3\xa9 ?\xe6\x97\xa5");
    /* Longer than one internal piece, a character across the boundary. */
    char big[200], got[200];
    memset(big, 'a', sizeof big);
    memcpy(big + 62, "\xe6\x97\xa5", 3);
    big[127] = 0x1b;
    big[190] = '\x7f';
    cr_assert_eq(tool_clean_mask(big, sizeof big, got), 2);
    cr_assert(memcmp(got + 62, "\xe6\x97\xa5", 3) == 0);
    cr_assert_eq(got[127], '?');
    cr_assert_eq(got[190], '?');
    cr_assert_eq(got[0], 'a');
    cr_assert_eq(got[199], 'a');
    /* A sequence cut by the end of the bytes given. */
    cr_assert_eq(tool_clean_mask("ab\xe6\x97", 4, got), 2);
    cr_assert(memcmp(got, "ab??", 4) == 0);
}
