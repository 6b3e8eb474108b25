/*
 * test_top_clean.c - vyre-top's cells go through the sanitiser: a name
 * with a C1 control, ESC or bad UTF-8 (from a telemetry page, /proc or
 * NVML) comes out of top_fmt_cell/top_fmt_row escaped and within its
 * width; clean names are unchanged.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "format.h"

Test(top_clean, cells_escape_controls_and_bad_utf8)
{
    char dst[64];
    top_fmt_cell(dst, 12,
                 "k\xc2\x9b"
                 "2J",
                 0);
    cr_assert_str_eq(dst, "k\\u009b2J   ");
    top_fmt_cell(dst, 8, "\x1b[31m", 1);
    cr_assert_str_eq(dst, "\\x1b[31m");
    top_fmt_cell(dst, 6, "a\xff", 1);
    cr_assert_str_eq(dst, " a\\xff");
    /* Cut to the width, never inside an escape; padded; the last cell
     * marks the cut (issue 37: an ellipsis, TOP_ELLIPSIS). */
    top_fmt_cell(dst, 5, "ab\x1b", 0);
    cr_assert_str_eq(dst, "ab  \x0e");
    top_fmt_cell(dst, 10, "alpha_kernel", 0);
    cr_assert_str_eq(dst, "alpha_ker\x0e");
}

Test(top_clean, rows_escape_every_cell)
{
    static const top_col cols[] = {{"PID", 5, 1, 0, 0}, {"NAME", 10, 0, 0, 1}};
    int w[2];
    top_cols_fit(cols, 2, 20, w);
    const char *const cells[] = {"42", "evil\xc2\x9d"
                                       "0;x"};
    char dst[32];
    top_fmt_row(cols, w, 2, cells, 20, dst);
    cr_assert_str_eq(dst, "   42 evil\\u009d0;x ");
    for (const char *p = dst; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "%s", dst);
}
