/*
 * runs_compare.c - comparing the points of two runs (or of a pool of runs
 * against one) from the results database: matching points, loading their
 * samples and settling each row's verdict (see vyre/bench.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/runs_db.h"
#include "bench/stats_internal.h"
#include "vyre/bench.h"
#include "vyre/stats.h"

/* ---- compare ------------------------------------------------------------------ */

/* ab: an A/B run compared with itself, where an A point matches the B
 * point of the same place (and a shared reference matches itself); two
 * runs match variant with variant, A with A and B with B. */
static int same_point(const vyre_bench_point *a, const vyre_bench_point *b, int ab)
{
    return strcmp(a->suite, b->suite) == 0 && strcmp(a->benchmark, b->benchmark) == 0 &&
           strcmp(a->axes, b->axes) == 0 && a->device == b->device && a->mode == b->mode &&
           (ab || strcmp(a->variant, b->variant) == 0);
}

/* An A/B run compared with itself: side A keeps the points that are not
 * B's, side B those that are not A's (shared references on both). */
static int has_variants(const vyre_bench_point *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].variant[0])
            return 1;
    return 0;
}

static void keep_side(vyre_bench_point *p, size_t *n, const char *drop)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(p[i].variant, drop) != 0)
            p[k++] = p[i];
    *n = k;
}

/* A point's stored samples as the comparison needs them. */
struct side {
    double *v;   /* time, ns per item */
    double *cyc; /* time x SM clock (ns MHz): valid when clock > 0 */
    unsigned *round;
    size_t n;
    double clock; /* median SM clock of the samples, MHz; 0: unknown */
};

static void side_release(struct side *x)
{
    free(x->v);
    free(x->cyc);
    free(x->round);
    memset(x, 0, sizeof *x);
}

/* The samples of points ids[0..nids-1] (one per pooled run) as one side:
 * each point's rounds renumbered after the previous point's, so rounds of
 * different runs never merge. */
static int samples_pooled(vyre_results *db, const int64_t *ids, size_t nids,
                          vyre_bench_sample **out, size_t *n, vyre_error *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    unsigned base = 0;
    for (size_t k = 0; k < nids; k++) {
        vyre_bench_sample *s = NULL;
        size_t ns = 0;
        int rc = vyre_bench_samples_get(db, ids[k], &s, &ns, err);
        if (!rc && vyre__grow(out, &cap, *n + ns + 1, sizeof **out, 16))
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
        if (rc) {
            free(s);
            free(*out);
            *out = NULL;
            return rc;
        }
        unsigned top = base;
        for (size_t i = 0; i < ns; i++) {
            s[i].round += base;
            top = s[i].round + 1 > top ? s[i].round + 1 : top;
            (*out)[(*n)++] = s[i];
        }
        base = top;
        free(s);
    }
    return VYRE_OK;
}

static int side_load(vyre_results *db, const int64_t *ids, size_t nids, struct side *x,
                     vyre_error *err)
{
    memset(x, 0, sizeof *x);
    vyre_bench_sample *s = NULL;
    int rc = samples_pooled(db, ids, nids, &s, &x->n, err);
    if (rc)
        return rc;
    size_t m = x->n ? x->n : 1;
    x->v = malloc(m * sizeof *x->v);
    x->cyc = malloc(m * sizeof *x->cyc);
    x->round = malloc(m * sizeof *x->round);
    double *clk = malloc(m * sizeof *clk);
    if (!x->v || !x->cyc || !x->round || !clk) {
        free(s);
        free(clk);
        side_release(x);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    }
    size_t nclk = 0;
    for (size_t i = 0; i < x->n; i++) {
        x->v[i] = s[i].value;
        x->round[i] = s[i].round;
        if (s[i].sm_clock_mhz)
            clk[nclk++] = s[i].sm_clock_mhz;
    }
    /* Clocks only when every sample has one: a cycle count needs each. */
    if (x->n && nclk == x->n) {
        qsort(clk, nclk, sizeof *clk, vyre__runs_cmp_double);
        x->clock = vyre_stats_percentile_sorted(clk, nclk, 50);
        for (size_t i = 0; i < x->n; i++)
            x->cyc[i] = s[i].value * s[i].sm_clock_mhz;
    }
    free(clk);
    free(s);
    return VYRE_OK;
}

/* SM clocks of the two sides differing by more than this: compare in
 * cycles too (nvbench's compare does the same). */
#define CLOCK_DIFF 0.02

/* Row r: side A pooled from the points aids[0..naids-1] (r->a's first). */
static int compare_row(vyre_results *db, vyre_bench_cmp_row *r, const int64_t *aids, size_t naids,
                       const vyre_stats_compare_opts *opts, vyre_error *err)
{
    struct side x, y;
    int rc = side_load(db, aids, naids, &x, err);
    if (rc)
        return rc;
    if ((rc = side_load(db, &r->b.id, 1, &y, err))) {
        side_release(&x);
        return rc;
    }
    rc = vyre__stats_compare_rounds(x.v, x.round, x.n, y.v, y.round, y.n, opts, &r->cmp, err);
    r->clock_a_mhz = x.clock;
    r->clock_b_mhz = y.clock;
    if (!rc && x.clock > 0 && y.clock > 0 && fabs(y.clock / x.clock - 1.0) > CLOCK_DIFF) {
        r->cycles_compared = 1;
        rc = vyre__stats_compare_rounds(x.cyc, x.round, x.n, y.cyc, y.round, y.n, opts, &r->cycles,
                                        err);
    }
    side_release(&x);
    side_release(&y);
    return rc;
}

static int is_reference(const vyre_bench_point *p)
{
    return strcmp(p->suite, "reference") == 0;
}

/* Whether reference row ref speaks for point p: the host references for
 * wall-timer points, the GPU reference of the same device for GPU ones. */
static int reference_for(const vyre_bench_cmp_row *ref, const vyre_bench_point *p)
{
    if (!ref->has_a || !ref->has_b || !is_reference(&ref->a) || !isfinite(ref->cmp.ratio) ||
        !(ref->cmp.ratio > 0))
        return 0;
    if (ref->a.gpu_timer != p->gpu_timer)
        return 0;
    return !p->gpu_timer || ref->a.device == p->device;
}

/* The drift a reference's comparison establishes: its median ratio (1 /
 * the ratio below 1), unless the reference is NOISY (either side's noise
 * above max_noise). A NOISY reference that was quiet in one of the two
 * runs, or that moved in every round (its interval excludes 1), says the
 * machine changed between the runs by an amount that changed from round
 * to round: as much as its interval's far end from 1. One noisy in both
 * runs whose interval holds 1 establishes nothing: a noisy fsync on a VM
 * disk, 0.02x to 1.3x from run to run. Not the interval of a steady
 * reference: over 5 rounds one quiet round (a CPU hog not yet running) puts
 * 1 inside it, or its end nearest 1 near 1, while four rounds read 1.67x;
 * with a CPU hog taking one of two cores, reference.cpus read 1.673x
 * [1.029, 1.726] and 1.672x [0.988, 1.692], and cache points the hog slowed
 * 1.2-1.7x were SLOWER in A/A pairs (2 of 13).
 *
 * Measured with a hog on both cores of the 2-core CI machine (the busy
 * machine must never read FAIL): reference.cpus 4.98x [1.004, 5.75] NOISY,
 * cache.hit 2.96x; reference.cpus 1.94x [1.004, 8.34] NOISY, a cache.hit
 * point 3.1x [2.33, 4.14]; reference.cpus 1.33x [0.997, 4.54], its noise 9%
 * in A and 55% in B, and reference.cpu 1.04x [0.98, 1.44], while a 1 MiB
 * cache.hit read 5.1x [3.15, 5.61] (a short CPU loop fits in a time slice,
 * a 1.7 ms hit is preempted). Widened by the medians each was a FAIL. */
static double established_drift(const vyre_stats_compare_result *c, double max_noise)
{
    vyre_stats_verdict v = c->verdict == VYRE_VERDICT_DRIFT ? c->verdict_before_drift : c->verdict;
    if (!isfinite(c->ratio) || !(c->ratio > 0.0))
        return 1.0;
    if (v != VYRE_VERDICT_NOISY)
        return c->ratio >= 1.0 ? c->ratio : 1.0 / c->ratio;
    int moved = c->ratio_lo > 1.0 || c->ratio_hi < 1.0;
    int changed = c->noise_a <= max_noise || c->noise_b <= max_noise;
    if (!moved && !changed)
        return 1.0;
    double far = isfinite(c->ratio_hi) && c->ratio_hi > 1.0 ? c->ratio_hi : 1.0;
    if (c->ratio_lo > 0.0 && 1.0 / c->ratio_lo > far)
        far = 1.0 / c->ratio_lo;
    return far;
}

/* The final verdict of a matched row: the drift band of its timer kind,
 * then (clocks apart) agreement with the comparison in cycles. */
static void settle_row(vyre_bench_cmp_row *r, const vyre_bench_cmp_row *rows, size_t n,
                       double max_noise)
{
    const vyre_bench_point *p = &r->a;
    double drift = 1.0;
    r->ref_ratio = NAN;
    for (size_t i = 0; !is_reference(p) && i < n; i++) {
        if (!reference_for(&rows[i], p))
            continue;
        double d = established_drift(&rows[i].cmp, max_noise);
        if (d > drift || !isfinite(r->ref_ratio)) {
            drift = d > drift ? d : drift;
            r->ref_ratio = rows[i].cmp.ratio;
            vyre__strlcpy(r->reference, rows[i].a.benchmark, sizeof r->reference);
        }
    }
    vyre__stats_compare_widen(&r->cmp, drift);
    if (r->cycles_compared) {
        vyre__stats_compare_widen(&r->cycles, drift);
        if ((r->cmp.verdict == VYRE_VERDICT_SLOWER || r->cmp.verdict == VYRE_VERDICT_FASTER) &&
            r->cycles.verdict != r->cmp.verdict)
            r->cmp.verdict = VYRE_VERDICT_DRIFT;
    }
    /* A reference's own change is the machine's, never the code's. */
    if (is_reference(p) &&
        (r->cmp.verdict == VYRE_VERDICT_SLOWER || r->cmp.verdict == VYRE_VERDICT_FASTER))
        r->cmp.verdict = VYRE_VERDICT_DRIFT;
    r->is_reference = is_reference(p);
}

/* The points of the older pooled runs a[1..na-1] (a[0]'s are the rows'). */
typedef struct pool {
    vyre_bench_point *p[VYRE_RESULTS_POOL_MAX];
    size_t n[VYRE_RESULTS_POOL_MAX];
    size_t runs;
} pool;

static void pool_release(pool *pl)
{
    for (size_t k = 0; k < pl->runs; k++)
        free(pl->p[k]);
    memset(pl, 0, sizeof *pl);
}

static int pool_load(vyre_results *db, const int64_t *a, size_t na, pool *pl, vyre_error *err)
{
    memset(pl, 0, sizeof *pl);
    for (size_t k = 1; k < na; k++) {
        vyre_bench_run r;
        int rc = vyre_bench_run_get(db, a[k], &r, err);
        if (!rc)
            rc = vyre_bench_points_get(db, a[k], &pl->p[pl->runs], &pl->n[pl->runs], err);
        if (rc) {
            pool_release(pl);
            return rc;
        }
        pl->runs++;
    }
    return VYRE_OK;
}

/* Compares matched row r, side A pooled over a[0] and the pool's runs. */
static int compare_pooled_row(vyre_results *db, vyre_bench_cmp_row *r, const pool *pl,
                              const vyre_stats_compare_opts *opts, vyre_error *err)
{
    int64_t ids[VYRE_RESULTS_POOL_MAX];
    size_t m = 0;
    ids[m++] = r->a.id;
    for (size_t k = 0; k < pl->runs; k++)
        for (size_t j = 0; j < pl->n[k]; j++)
            if (same_point(&r->a, &pl->p[k][j], 0)) {
                ids[m++] = pl->p[k][j].id;
                break;
            }
    int rc = compare_row(db, r, ids, m, opts, err);
    if (!rc && pl->runs)
        r->a.stats.median = r->cmp.median_a; /* the pooled median, as compared */
    return rc;
}

/* The rows: a's points matched with b's, then the points only b has. */
static int match_rows(vyre_results *db, vyre_bench_point *pa, size_t na, vyre_bench_point *pb,
                      size_t nb, int ab, const pool *pl, const vyre_stats_compare_opts *opts,
                      vyre_bench_cmp_row *rows, size_t *nr, vyre_error *err)
{
    unsigned char *used = calloc(nb + 1, 1);
    if (!used)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    int rc = VYRE_OK;
    *nr = 0;
    for (size_t i = 0; !rc && i < na; i++) {
        vyre_bench_cmp_row *r = &rows[(*nr)++];
        r->a = pa[i];
        r->has_a = 1;
        r->ref_ratio = NAN;
        r->is_reference = is_reference(&pa[i]);
        for (size_t j = 0; j < nb; j++)
            if (!used[j] && same_point(&pa[i], &pb[j], ab)) {
                used[j] = 1;
                r->b = pb[j];
                r->has_b = 1;
                break;
            }
        if (r->has_b)
            rc = compare_pooled_row(db, r, pl, opts, err);
    }
    static const vyre_stats_compare_opts defaults = VYRE_COMPARE_OPTS_DEFAULT;
    const double max_noise = (opts ? opts : &defaults)->max_noise;
    for (size_t i = 0; !rc && i < *nr; i++)
        if (rows[i].has_a && rows[i].has_b)
            settle_row(&rows[i], rows, *nr, max_noise);
    for (size_t j = 0; !rc && j < nb; j++)
        if (!used[j]) {
            rows[*nr].b = pb[j];
            rows[*nr].ref_ratio = NAN;
            rows[*nr].is_reference = is_reference(&pb[j]);
            rows[(*nr)++].has_b = 1;
        }
    free(used);
    return rc;
}

int vyre_bench_compare_runs(vyre_results *db, const int64_t *a, size_t na, int64_t b,
                            const vyre_stats_compare_opts *opts, vyre_bench_cmp_row **out,
                            size_t *n, vyre_error *err)
{
    if (!db || !a || !out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_compare_runs: NULL argument");
    if (na < 1 || na > VYRE_RESULTS_POOL_MAX)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_compare_runs: %zu runs", na);
    *out = NULL;
    *n = 0;
    vyre_bench_run ra, rb;
    int rc;
    if ((rc = vyre_bench_run_get(db, a[0], &ra, err)) || (rc = vyre_bench_run_get(db, b, &rb, err)))
        return rc;
    vyre_bench_point *pa = NULL, *pb = NULL;
    size_t npa = 0, npb = 0;
    if ((rc = vyre_bench_points_get(db, a[0], &pa, &npa, err)) ||
        (rc = vyre_bench_points_get(db, b, &pb, &npb, err))) {
        free(pa);
        return rc;
    }
    int ab = na == 1 && a[0] == b && has_variants(pa, npa);
    if (ab) {
        keep_side(pa, &npa, "B");
        keep_side(pb, &npb, "A");
    }
    pool pl;
    vyre_bench_cmp_row *rows = calloc(npa + npb + 1, sizeof *rows);
    if (!rows)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory comparing runs");
    else
        rc = pool_load(db, a, na, &pl, err);
    size_t nr = 0;
    if (!rc) {
        rc = match_rows(db, pa, npa, pb, npb, ab, &pl, opts, rows, &nr, err);
        pool_release(&pl);
    }
    free(pa);
    free(pb);
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *n = nr;
    return VYRE_OK;
}
