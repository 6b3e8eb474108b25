/*
 * compare_verdict.c - the verdict of a comparison as a whole
 * (vyre_bench_compare_summarize in vyre/bench.h): each point's verdict
 * counted, then PASS, FAIL or INCONCLUSIVE. A gate that judged nothing
 * must not pass quietly (issue 34: "0 faster, 0 slower, 3 same, 8 noisy",
 * exit 0): when more than a quarter of the points could not be judged
 * (NOISY, DRIFT, or only one run has them), nothing SLOWER among the rest
 * says little, and the comparison is INCONCLUSIVE. A quarter, because one
 * NOISY point in a suite of a dozen is the common case on a shared
 * machine and should not stop a gate, while most points unjudged is a
 * machine that could not measure. The references are left out: they set
 * the drift band of the others and their own verdict is DRIFT by design.
 */
#include <string.h>

#include "vyre/bench.h"

/* The verdict of a row that both runs have, for the count. */
static void count_verdict(vyre_bench_cmp_summary *s, const vyre_bench_cmp_row *r)
{
    s->faster += r->cmp.verdict == VYRE_VERDICT_FASTER;
    s->slower += r->cmp.verdict == VYRE_VERDICT_SLOWER;
    s->same += r->cmp.verdict == VYRE_VERDICT_SAME;
    s->noisy += r->cmp.verdict == VYRE_VERDICT_NOISY;
    s->drift += r->cmp.verdict == VYRE_VERDICT_DRIFT;
}

/* A point (no reference): judged or not, and why not. Returns 1 when it
 * is SLOWER. */
static int judge_point(vyre_bench_cmp_summary *s, const vyre_bench_cmp_row *r)
{
    s->points++;
    if (!(r->has_a && r->has_b)) {
        s->unjudged++;
        s->u_one_side++;
        return 0;
    }
    switch (r->cmp.verdict) {
    case VYRE_VERDICT_NOISY:
        s->unjudged++;
        s->u_noisy++;
        break;
    case VYRE_VERDICT_DRIFT:
        s->unjudged++;
        /* Beyond the band in time, held back by the clocks, not the
         * references: locked clocks help there, not an idle machine. */
        if (r->cycles_compared && r->cmp.verdict_before_drift != VYRE_VERDICT_SAME &&
            r->cycles.verdict != r->cmp.verdict_before_drift)
            s->u_cycles++;
        else
            s->u_drift++;
        break;
    case VYRE_VERDICT_SLOWER:
        return 1;
    case VYRE_VERDICT_FASTER:
    case VYRE_VERDICT_SAME:
        break;
    }
    return 0;
}

void vyre_bench_compare_summarize(const vyre_bench_cmp_row *rows, size_t n, int strict,
                                  vyre_bench_cmp_summary *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    size_t slower_points = 0;
    for (size_t i = 0; rows && i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        if (r->has_a && r->has_b)
            count_verdict(out, r);
        else
            out->unmatched++;
        if (!r->is_reference)
            slower_points += (size_t)judge_point(out, r);
    }
    if (slower_points)
        out->outcome = VYRE_OUTCOME_FAIL;
    else if (out->points == 0 || (strict && out->unjudged) ||
             (double)out->unjudged > VYRE_COMPARE_UNJUDGED_MAX * (double)out->points)
        out->outcome = VYRE_OUTCOME_INCONCLUSIVE;
    else
        out->outcome = VYRE_OUTCOME_PASS;
}

const char *vyre_bench_outcome_name(vyre_bench_outcome o)
{
    switch (o) {
    case VYRE_OUTCOME_FAIL:
        return "FAIL";
    case VYRE_OUTCOME_INCONCLUSIVE:
        return "INCONCLUSIVE";
    case VYRE_OUTCOME_PASS:
        break;
    }
    return "PASS";
}
