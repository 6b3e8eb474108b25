/*
 * test_compare_verdict.c - vyre_bench_compare_summarize: the verdict of a
 * comparison as a whole from its rows (issue 34): FAIL on any SLOWER
 * point, INCONCLUSIVE past a quarter of the points unjudged (any, strict;
 * none compared), PASS otherwise; references never counted.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "vyre/vyre.h"

#define MAXROWS 16

static vyre_bench_cmp_row g_rows[MAXROWS];

/* rows from a string, one letter each: s SAME, f FASTER, S SLOWER, n
 * NOISY, d DRIFT, a only A, b only B, r a reference (DRIFT). */
static size_t rows_of(const char *spec)
{
    size_t n = strlen(spec);
    cr_assert_leq(n, MAXROWS);
    memset(g_rows, 0, sizeof g_rows);
    for (size_t i = 0; i < n; i++) {
        vyre_bench_cmp_row *r = &g_rows[i];
        r->has_a = spec[i] != 'b';
        r->has_b = spec[i] != 'a';
        r->is_reference = spec[i] == 'r';
        r->cmp.verdict = spec[i] == 'f'                     ? VYRE_VERDICT_FASTER
                         : spec[i] == 'S'                   ? VYRE_VERDICT_SLOWER
                         : spec[i] == 'n'                   ? VYRE_VERDICT_NOISY
                         : spec[i] == 'd' || spec[i] == 'r' ? VYRE_VERDICT_DRIFT
                                                            : VYRE_VERDICT_SAME;
    }
    return n;
}

static vyre_bench_outcome outcome(const char *spec, int strict, vyre_bench_cmp_summary *s)
{
    size_t n = rows_of(spec);
    vyre_bench_compare_summarize(g_rows, n, strict, s);
    return s->outcome;
}

Test(compare_verdict, slower_fails_whatever_else)
{
    vyre_bench_cmp_summary s;
    cr_assert_eq(outcome("sssS", 0, &s), VYRE_OUTCOME_FAIL);
    cr_assert_eq(outcome("nnnS", 0, &s), VYRE_OUTCOME_FAIL);
    cr_assert_eq(outcome("nnnS", 1, &s), VYRE_OUTCOME_FAIL);
    cr_assert_eq(s.slower, 1);
    cr_assert_str_eq(vyre_bench_outcome_name(s.outcome), "FAIL");
}

Test(compare_verdict, a_quarter_unjudged_passes_more_is_inconclusive)
{
    vyre_bench_cmp_summary s;
    cr_assert_eq(outcome("ssssssnn", 0, &s), VYRE_OUTCOME_PASS); /* 2 of 8 */
    cr_assert_eq(s.points, 8);
    cr_assert_eq(s.unjudged, 2);
    cr_assert_eq(outcome("sssssnnn", 0, &s), VYRE_OUTCOME_INCONCLUSIVE); /* 3 of 8 */
    cr_assert_eq(outcome("sssssdna", 0, &s), VYRE_OUTCOME_INCONCLUSIVE);
    cr_assert_eq(s.u_noisy, 1);
    cr_assert_eq(s.u_drift, 1);
    cr_assert_eq(s.u_one_side, 1);
    cr_assert_eq(s.unmatched, 1);
    cr_assert_str_eq(vyre_bench_outcome_name(s.outcome), "INCONCLUSIVE");
    cr_assert_eq(outcome("fffb", 0, &s), VYRE_OUTCOME_PASS); /* 1 of 4 */
    cr_assert_str_eq(vyre_bench_outcome_name(s.outcome), "PASS");
}

Test(compare_verdict, strict_allows_none)
{
    vyre_bench_cmp_summary s;
    cr_assert_eq(outcome("sssssssn", 1, &s), VYRE_OUTCOME_INCONCLUSIVE);
    cr_assert_eq(outcome("ssssssss", 1, &s), VYRE_OUTCOME_PASS);
}

Test(compare_verdict, references_are_never_judged)
{
    vyre_bench_cmp_summary s;
    cr_assert_eq(outcome("rrrss", 0, &s), VYRE_OUTCOME_PASS);
    cr_assert_eq(s.points, 2);
    cr_assert_eq(s.drift, 3, "the tally line still counts every row");
    cr_assert_eq(outcome("rrr", 0, &s), VYRE_OUTCOME_INCONCLUSIVE, "no point compared");
    cr_assert_eq(outcome("", 0, &s), VYRE_OUTCOME_INCONCLUSIVE);
    vyre_bench_compare_summarize(NULL, 0, 0, &s);
    cr_assert_eq(s.outcome, VYRE_OUTCOME_INCONCLUSIVE);
}
