/*
 * test_grow.c - base/grow.c, the growable arrays' one growth rule: the
 * capacity doubles from the first size until n fits, a request that
 * already fits changes nothing, and one that cannot be met (an overflow)
 * leaves the array and its capacity as they were.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/internal.h"

Test(grow, doubles_from_the_first_size_until_n_fits)
{
    int64_t *v = NULL;
    size_t cap = 0;
    cr_assert_eq(vyre__grow(&v, &cap, 1, sizeof *v, 4), VYRE_OK);
    cr_assert_not_null(v);
    cr_assert_eq(cap, 4);
    v[3] = 42;
    cr_assert_eq(vyre__grow(&v, &cap, 4, sizeof *v, 4), VYRE_OK);
    cr_assert_eq(cap, 4, "4 fits in 4: nothing changes");
    cr_assert_eq(vyre__grow(&v, &cap, 5, sizeof *v, 4), VYRE_OK);
    cr_assert_eq(cap, 8);
    cr_assert_eq(vyre__grow(&v, &cap, 33, sizeof *v, 4), VYRE_OK);
    cr_assert_eq(cap, 64, "doubled until 33 fits");
    cr_assert_eq(v[3], 42, "the elements are kept");
    free(v);
}

Test(grow, an_impossible_size_changes_nothing)
{
    char *v = NULL;
    size_t cap = 0;
    cr_assert_eq(vyre__grow(&v, &cap, 10, 1, 0), VYRE_OK);
    cr_assert_eq(cap, 16, "first 0: from 1, doubled");
    char *before = v;
    cr_assert_eq(vyre__grow(&v, &cap, SIZE_MAX, 1, 16), VYRE_ENOMEM);
    cr_assert_eq(v, before);
    cr_assert_eq(cap, 16);
    cr_assert_eq(vyre__grow(&v, &cap, SIZE_MAX / 4, 8, 16), VYRE_ENOMEM, "bytes overflow");
    cr_assert_eq(cap, 16);
    free(v);
}
