/*
 * test_error.c - the error code table and vyre_error detail.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "base/internal.h"
#include "vyre/error.h"

Test(error, codes_are_negative_unique_and_named)
{
    static const int codes[] = {
#define X(name, val, desc) val,
        VYRE_ERRNO_MAP(X)
#undef X
    };
    size_t n = sizeof codes / sizeof codes[0];
    cr_assert_gt(n, 20);
    for (size_t i = 0; i < n; i++) {
        cr_assert_lt(codes[i], 0);
        cr_assert_str_neq(vyre_strerror(codes[i]), "unknown error");
        cr_assert_eq(strncmp(vyre_err_name(codes[i]), "VYRE_E", 6), 0);
        cr_assert_str_neq(vyre_err_name(codes[i]), "VYRE_E?");
        for (size_t j = i + 1; j < n; j++)
            cr_assert_neq(codes[i], codes[j], "duplicate code %d", codes[i]);
    }
}

Test(error, append_only_numbering_is_stable)
{
    /* Stored results and scripts hold these numbers: they never move. */
    cr_assert_eq(VYRE_EINVAL, -1);
    cr_assert_eq(VYRE_ENODRIVER, -3);
    cr_assert_eq(VYRE_EENV, -6);
    cr_assert_eq(VYRE_ECORRUPT, -11);
    cr_assert_str_eq(vyre_err_name(VYRE_ENODRIVER), "VYRE_ENODRIVER");
    cr_assert_str_eq(vyre_strerror(VYRE_ENODRIVER), "no NVIDIA driver found");
}

Test(error, ok_and_unknown)
{
    cr_assert_str_eq(vyre_err_name(0), "VYRE_OK");
    cr_assert_str_eq(vyre_strerror(0), "success");
    cr_assert_str_eq(vyre_strerror(-9999), "unknown error");
    cr_assert_str_eq(vyre_err_name(12345), "VYRE_E?");
}

Test(error, fail_fills_detail_and_returns_code)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__fail(&e, VYRE_EENV, "set it right", "bad value '%s'", "x");
    cr_assert_eq(rc, VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert_str_eq(e.message, "bad value 'x'");
    cr_assert_str_eq(e.hint, "set it right");
    cr_assert_eq(vyre__fail(NULL, VYRE_EIO, NULL, "ignored"), VYRE_EIO);
    vyre__fail(&e, VYRE_EIO, NULL, "no hint");
    cr_assert_str_eq(e.hint, "");
}

Test(error, remedy_is_set_with_its_failure_and_reset_by_the_next)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(e.remedy, VYRE_REMEDY_NONE);
    int rc = vyre__remedy(&e, VYRE_REMEDY_CACHE_REINDEX,
                          vyre__fail(&e, VYRE_ENOENT, NULL, "no index in '%s'", "x"));
    cr_assert_eq(rc, VYRE_ENOENT);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_REINDEX);
    cr_assert_str_eq(e.message, "no index in 'x'");
    /* A later failure into the same detail must not inherit it. */
    vyre__fail(&e, VYRE_EIO, "retry", "read failed");
    cr_assert_eq(e.remedy, VYRE_REMEDY_NONE);
    vyre__remedy(&e, VYRE_REMEDY_DEVICES, VYRE_ENODEV);
    vyre_error_clear(&e);
    cr_assert_eq(e.remedy, VYRE_REMEDY_NONE);
    cr_assert_eq(vyre__remedy(NULL, VYRE_REMEDY_DEVICES, VYRE_ENODEV), VYRE_ENODEV);
}

Test(error, long_messages_are_truncated_not_overflowed)
{
    char big[4000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    vyre_error e;
    vyre__fail(&e, VYRE_EIO, big, "%s", big);
    cr_assert_eq(strlen(e.message), sizeof e.message - 1);
    cr_assert_eq(strlen(e.hint), sizeof e.hint - 1);
}

/* The public errno mapping front ends use (the plot code had a copy of its
 * own before): the codes libcore's own calls give for the same errno. */
Test(error, errno_codes_map_as_libcores_own)
{
    cr_assert_eq(vyre_errno_code(0), VYRE_OK);
    cr_assert_eq(vyre_errno_code(ENOENT), VYRE_ENOENT);
    cr_assert_eq(vyre_errno_code(ENOTDIR), VYRE_ENOENT);
    cr_assert_eq(vyre_errno_code(EACCES), VYRE_EPERM);
    cr_assert_eq(vyre_errno_code(EDQUOT), VYRE_ENOSPC);
    cr_assert_eq(vyre_errno_code(EROFS), VYRE_EROFS);
    cr_assert_eq(vyre_errno_code(ENOMEM), VYRE_ENOMEM);
    cr_assert_eq(vyre_errno_code(EXDEV), VYRE_EIO, "no closer code");
}
