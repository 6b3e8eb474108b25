/*
 * test_tool_util.c - tools/common/tool_util.c: tool_set_error fills a
 * vyre_error as libcore's vyre__fail does, and like every vyre_error
 * argument the error is optional (the plot modules pass NULL where the
 * caller does not want the detail).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tool_util.h"

Test(tool_util, set_error_fills_message_hint_and_code_and_clears_the_rest)
{
    vyre_error e;
    memset(&e, 0x5a, sizeof e);
    e.remedy = VYRE_REMEDY_CACHE_LIST;
    cr_assert_eq(tool_set_error(&e, VYRE_ENOENT, "make it", "no file '%s'", "x.svg"), VYRE_ENOENT);
    cr_assert_str_eq(e.message, "no file 'x.svg'");
    cr_assert_str_eq(e.hint, "make it");
    cr_assert_eq(e.code, VYRE_ENOENT);
    cr_assert_eq(e.remedy, VYRE_REMEDY_NONE, "no remedy left from an earlier error");
    cr_assert_eq(tool_set_error(&e, VYRE_EIO, NULL, "io"), VYRE_EIO);
    cr_assert_str_eq(e.hint, "");
}

Test(tool_util, set_error_without_an_error_returns_the_code)
{
    cr_assert_eq(tool_set_error(NULL, VYRE_ENOMEM, NULL, "out of memory"), VYRE_ENOMEM);
}
