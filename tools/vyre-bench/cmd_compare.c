/*
 * cmd_compare.c - `vyre-bench compare RUN_A RUN_B`: every point of B
 * against the same point of A (the baseline): a bootstrap interval of the
 * median ratio against the noise (vyre_bench_compare_runs: a hierarchical
 * bootstrap over the rounds, the SAME band widened by the drift of the
 * fixed references, clock cycles when the SM clocks differ); FASTER,
 * SLOWER, SAME, NOISY or DRIFT per point, then one verdict for the whole
 * (vyre_bench_compare_summarize): PASS, FAIL (a point SLOWER) or
 * INCONCLUSIVE (exit 4: too much could not be judged). A gate that cannot
 * pass by accident: PASS only when both runs are done, every point matched,
 * none is SLOWER and at most a quarter could not be judged; never a run
 * against itself; one that a drifting machine cannot fail: DRIFT never
 * fails it, it only withholds the PASS.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "tool_rows.h"
#include "vyre/vyre.h"

/* The exit status of an INCONCLUSIVE comparison: apart from 0 (PASS), 1
 * (FAIL), 2 (usage, operational) and 3 (vyre-bench's "no driver"). */
#define COMPARE_EXIT_INCONCLUSIVE 4

const tool_opt bench_compare_opts[] = {
    {'B', 0, "baseline", "SELECTOR",
     "run A is the newest done run that matches: KEY=VALUE\n"
     "words then 'last' or 'last-N'; keys gpu (part of the\n"
     "GPU's name), driver, cuda (version prefixes), host,\n"
     "branch or tag (recorded at run time), rev (a git\n"
     "revision prefix): 'gpu=H200 branch=main last'. With\n"
     "'last:K' (K 1 to " TOOL_STR(
         VYRE_RESULTS_POOL_MAX) ") the baseline pools the K newest\n"
                                "matching runs: each point's samples of them all, each\n"
                                "run's rounds kept apart, so drift from run to run is\n"
                                "noise between rounds (RUN_B itself is never pooled);\n"
                                "fewer matching: those, with a note; the head names\n"
                                "the runs pooled",
     NULL},
    {'a', 0, "alpha", "PCT",
     "100% - the interval's confidence level, 0.1 to 50\n"
     "(default 1: a 99% interval)",
     "1 5"},
    {'e', 0, "min-effect", "PCT", "smallest change that counts (default 2)", "1 2 5"},
    {'n', 0, "max-noise", "PCT",
     "noise above which a point is NOISY (default 10)\n"
     "(a bare number is a percent, as in run and nvbench's:\n"
     "5 and 5% are both 5%, 0.5 is 0.5%)",
     "5 10 20"},
    {'s', 0, "strict", NULL,
     "INCONCLUSIVE (exit 4) when any point could not be\n"
     "judged, not only more than a quarter",
     NULL},
    {'m', 0, "allow-missing", NULL, "points only one run has do not stop the comparison", NULL},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(
         BENCH_COMPARE_JSON_SCHEMA_VERSION) ") instead of the\n"
                                            "table; the exit status is the same",
     NULL},
    TOOL_ROWS_OPT_CSV,
    TOOL_ROWS_OPT_MD,
    TOOL_ROWS_OPT_WIDE,
    TOOL_ROWS_OPT_WIDTH,
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench compare [--db PATH] [--alpha PCT] [--min-effect PCT]\n"
            "                          [--max-noise PCT] [--strict] [--allow-missing]\n"
            "                          [--json | --csv | --md] [--wide] [--width N] RUN_A RUN_B\n"
            "       vyre-bench compare [options] [RUN_B]\n"
            "       vyre-bench compare [options] --baseline SELECTOR RUN_B\n\n"
            "Compare run B against run A (the baseline), point by point, on their stored\n"
            "samples. Each side's noise is 1.4826 MAD / median (of the round medians\n"
            "when the rounds disagree more); the ratio of medians B/A gets a\n"
            "%d-resample bootstrap interval at level 1 - alpha that resamples rounds,\n"
            "then samples within them. A point is SLOWER (FASTER) only when the whole\n"
            "interval lies above (below) 1 +- t, where t = max(min effect, noise A,\n"
            "noise B), and beyond the machine's drift: the band is widened by d, the\n"
            "drift a fixed reference of the point's timer shows\n"
            "(reference.cpu, .cpus and .fsync for host points, reference.gpu for GPU\n"
            "ones: its median ratio unless it is NOISY), and where the SM clocks differ by more "
            "than 2%% the verdict must\n"
            "hold in clock cycles too. A change beyond 1 +- t that fails either is\n"
            "DRIFT; NOISY when either side's noise is above the noise limit; otherwise\n"
            "SAME. The Mann-Whitney U p is shown too. RUN is a run id, 'last' or\n"
            "'last-N' (the last done run, or the Nth done run before it), or a selector\n"
            "as --baseline takes ('host=ci-7 last': in a shared store, 'last' alone is\n"
            "whichever machine's run ended last). A run is never its own baseline: a\n"
            "baseline named by 'last', 'last-N' or a selector that is RUN_B itself is\n"
            "the matching done run before it (none: an error). RUN_B alone ('last',\n"
            "'last-N' or a selector) is compared with the done run before it, and no\n"
            "run at all means 'last': 'compare' and 'compare last' are\n"
            "'compare last-1 last'.\n\n"
            "The comparison ends with a verdict (the table's last line, --json's\n"
            "verdict): FAIL when a point is SLOWER; INCONCLUSIVE when none is but more\n"
            "than a quarter of the points (the references aside) could not be judged:\n"
            "NOISY, DRIFT, or only in one run (--allow-missing); PASS otherwise. A line\n"
            "on stderr says what could not be judged and what helps (more rounds,\n"
            "--min-time, an idle machine, locked clocks, a pooled baseline).\n\n",
            VYRE_COMPARE_RESAMPLES);
    tool_cmd_options_help(out, bench_compare_opts);
    fprintf(out, "\n"
                 "exit status: 0 PASS: both runs done, every point matched, none SLOWER,\n"
                 "               at most a quarter not judged (none with --strict)\n"
                 "             1 FAIL: some point SLOWER\n"
                 "             2 usage error, or no comparison possible: no run to compare,\n"
                 "               a run failed, was interrupted or is still running, or\n"
                 "               points are missing\n"
                 "             4 INCONCLUSIVE: none SLOWER, but too many points not judged\n");
}

/* p for people: "<1e-16" below what a double separates from 1. */
static void format_p(double p, char *buf, size_t size)
{
    if (p < 1e-16)
        snprintf(buf, size, "<1e-16");
    else
        snprintf(buf, size, "%.2g", p);
}

static const char *verdict_json(vyre_stats_verdict v)
{
    switch (v) {
    case VYRE_VERDICT_FASTER:
        return "faster";
    case VYRE_VERDICT_SLOWER:
        return "slower";
    case VYRE_VERDICT_NOISY:
        return "noisy";
    case VYRE_VERDICT_DRIFT:
        return "drift";
    case VYRE_VERDICT_SAME:
        break;
    }
    return "same";
}

/* Both runs must be done: a failed, interrupted or still running run has
 * missing or partial points, and comparing them would pass by accident. */
static int check_run_done(vyre_results *db, int64_t id, const char *which)
{
    vyre_bench_run r;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_bench_run_get(db, id, &r, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    if (r.status == VYRE_RUN_DONE)
        return 0;
    fprintf(stderr, "%s: error: cannot compare: %s run %" PRId64 " is '%s', not 'done'\n",
            tool_prog(), which, id, vyre_bench_run_status_name(r.status));
    fprintf(stderr, "hint: %s\n",
            r.status == VYRE_RUN_RUNNING
                ? "wait for it to finish; a run whose process died stays 'running': "
                  "measure again with 'vyre-bench run'"
                : "measure again with 'vyre-bench run' and compare the finished run");
    return TOOL_EXIT_ERROR;
}

/* --alpha in percent (tool_percent_arg's rule, as --max-noise): from 0.1,
 * where the 2.5th of VYRE_COMPARE_RESAMPLES resampled ratios is still one
 * resample into each tail (so the retired spelling 0.01, now 0.01%, is
 * refused rather than read as a 99.99% interval), to 50. */
static int parse_alpha(const char *s, double *out)
{
    double r = 0;
    int code = tool_percent_arg("compare", "--alpha", s, &r);
    if (!code && !(r * VYRE_COMPARE_RESAMPLES / 2 >= 1 && r <= 0.5))
        code = tool_usage_error("compare",
                                "--alpha is in percent, as --max-noise: 1 or 1% for a 99% "
                                "interval, 5 for 95%; from 0.1 to 50",
                                "bad value for --alpha: '%s' is not from 0.1%% to 50%%", s);
    if (!code)
        *out = r;
    return code;
}

static json_t *ns_or_null(int known, double ns)
{
    return known && isfinite(ns) ? json_integer((json_int_t)llround(ns)) : json_null();
}

static json_t *num_or_null(int known, double v)
{
    return known && isfinite(v) ? json_real(v) : json_null();
}

/* The cycle comparison of a row as JSON, or null. */
static json_t *cycles_json(const vyre_bench_cmp_row *r)
{
    if (!(r->has_a && r->has_b && r->cycles_compared))
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "median_ratio", num_or_null(1, r->cycles.ratio));
    json_object_set_new(o, "ci_low_ratio", num_or_null(1, r->cycles.ratio_lo));
    json_object_set_new(o, "ci_high_ratio", num_or_null(1, r->cycles.ratio_hi));
    json_object_set_new(o, "verdict", json_string(verdict_json(r->cycles.verdict)));
    return o;
}

/* The round, drift and clock fields of a row (schema_version 3). */
static void row_json_rounds(json_t *o, const vyre_bench_cmp_row *r)
{
    int both = r->has_a && r->has_b;
    json_object_set_new(o, "is_reference", json_boolean(r->is_reference));
    json_object_set_new(o, "rounds_a",
                        both ? json_integer((json_int_t)r->cmp.rounds_a) : json_null());
    json_object_set_new(o, "rounds_b",
                        both ? json_integer((json_int_t)r->cmp.rounds_b) : json_null());
    json_object_set_new(o, "reference",
                        both && r->reference[0] ? json_string(r->reference) : json_null());
    json_object_set_new(o, "reference_ratio", num_or_null(both, r->ref_ratio));
    json_object_set_new(o, "drift_ratio", num_or_null(both, r->cmp.drift));
    json_object_set_new(o, "verdict_before_drift",
                        both ? json_string(verdict_json(r->cmp.verdict_before_drift))
                             : json_null());
    /* Base units (docs/JSON.md): Hz, whole. */
    json_object_set_new(o, "clock_a_hz",
                        ns_or_null(both && r->clock_a_mhz > 0, r->clock_a_mhz * 1e6));
    json_object_set_new(o, "clock_b_hz",
                        ns_or_null(both && r->clock_b_mhz > 0, r->clock_b_mhz * 1e6));
    json_object_set_new(o, "cycles", cycles_json(r));
}

/* One line per reference both runs measured: the machine's drift (broken
 * at blanks to fit width, when > 0). */
static void print_references(const vyre_bench_cmp_row *rows, size_t n, int width)
{
    char line[2048];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        if (!r->is_reference || !r->has_a || !r->has_b || len >= sizeof line)
            continue;
        char dev[16], name[TOOL_CLEAN_SIZE(sizeof r->a.benchmark)];
        bench_format_device(&r->a, dev, sizeof dev);
        int k =
            snprintf(line + len, sizeof line - len, "%s %s%s%s B/A %.3fx [%.3f, %.3f]",
                     len ? "," : "machine drift (references):",
                     tool_clean(r->a.benchmark, name, sizeof name), r->a.device >= 0 ? " dev " : "",
                     r->a.device >= 0 ? dev : "", r->cmp.ratio, r->cmp.ratio_lo, r->cmp.ratio_hi);
        len = k < 0 ? len : len + (size_t)k < sizeof line ? len + (size_t)k : sizeof line - 1;
    }
    if (len) {
        bench_print_wrapped(stdout, line, width);
        bench_print_wrapped(stdout,
                            "the SAME band of each point is widened by its timer's reference "
                            "drift",
                            width);
    } else {
        bench_print_wrapped(stdout,
                            "no reference measured in both runs: no drift widening (runs before "
                            "rounds, or a GPU run without reference.gpu)",
                            width);
    }
    putchar('\n');
}

/* The summary object of --json: the counts, then the comparison's
 * verdict and what it rests on (schema_version 4). */
static json_t *summary_json(const vyre_bench_cmp_summary *t, int strict)
{
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "faster", (json_int_t)t->faster, "slower",
                  (json_int_t)t->slower, "same", (json_int_t)t->same, "noisy", (json_int_t)t->noisy,
                  "drift", (json_int_t)t->drift, "unmatched", (json_int_t)t->unmatched);
    json_object_set_new(o, "points", json_integer((json_int_t)t->points));
    json_object_set_new(o, "unjudged", json_integer((json_int_t)t->unjudged));
    json_object_set_new(o, "unjudged_max_ratio",
                        json_real(strict ? 0.0 : VYRE_COMPARE_UNJUDGED_MAX));
    return o;
}

/* The comparison as one JSON document on stdout (the exit status follows
 * its verdict, as for the table). */
static void print_json(const int64_t *a, size_t na, int64_t b, const vyre_stats_compare_opts *co,
                       const vyre_bench_cmp_row *rows, size_t n, const vyre_bench_cmp_summary *t,
                       int strict)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        const vyre_bench_point *p = r->has_a ? &r->a : &r->b;
        int both = r->has_a && r->has_b;
        const char *verdict = r->has_a ? "only_a" : "only_b";
        if (both)
            verdict = verdict_json(r->cmp.verdict);
        json_t *o = json_object();
        json_object_set_new(o, "suite", json_string(p->suite));
        json_object_set_new(o, "benchmark", json_string(p->benchmark));
        json_object_set_new(o, "axes", bench_json_axes(p->axes));
        json_object_set_new(o, "device", p->device >= 0 ? json_integer(p->device) : json_null());
        json_object_set_new(o, "mode", json_string(vyre_bench_mode_name(p->mode)));
        json_object_set_new(o, "point_a_id", r->has_a ? json_integer(r->a.id) : json_null());
        json_object_set_new(o, "point_b_id", r->has_b ? json_integer(r->b.id) : json_null());
        json_object_set_new(o, "median_a_ns", ns_or_null(r->has_a, r->a.stats.median));
        json_object_set_new(o, "median_b_ns", ns_or_null(r->has_b, r->b.stats.median));
        json_object_set_new(o, "noise_a_ratio", num_or_null(both, r->cmp.noise_a));
        json_object_set_new(o, "noise_b_ratio", num_or_null(both, r->cmp.noise_b));
        json_object_set_new(o, "median_ratio", num_or_null(both, r->cmp.ratio));
        json_object_set_new(o, "ci_low_ratio", num_or_null(both, r->cmp.ratio_lo));
        json_object_set_new(o, "ci_high_ratio", num_or_null(both, r->cmp.ratio_hi));
        json_object_set_new(o, "threshold_ratio", num_or_null(both, r->cmp.threshold));
        json_object_set_new(o, "p_value", num_or_null(both, r->cmp.mw.p));
        json_object_set_new(o, "verdict", json_string(verdict));
        row_json_rounds(o, r);
        json_array_append_new(arr, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(BENCH_COMPARE_JSON_SCHEMA_VERSION));
    json_object_set_new(o, "baseline_run_id", json_integer(a[0]));
    json_t *pooled = json_array();
    for (size_t k = 0; k < na; k++)
        json_array_append_new(pooled, json_integer(a[k]));
    json_object_set_new(o, "baseline_run_ids", pooled);
    json_object_set_new(o, "run_id", json_integer(b));
    json_object_set_new(o, "test", json_string("hierarchical-bootstrap-median-ratio"));
    json_object_set_new(o, "alpha", json_real(co->alpha));
    json_object_set_new(o, "resamples", json_integer(VYRE_COMPARE_RESAMPLES));
    json_object_set_new(o, "min_effect_ratio", json_real(co->min_effect));
    json_object_set_new(o, "max_noise_ratio", json_real(co->max_noise));
    json_object_set_new(o, "points", arr);
    json_object_set_new(o, "summary", summary_json(t, strict));
    char verdict[16];
    snprintf(verdict, sizeof verdict, "%s", vyre_bench_outcome_name(t->outcome));
    for (char *c = verdict; *c; c++)
        *c = (char)(*c - 'A' + 'a');
    json_object_set_new(o, "verdict", json_string(verdict));
    tool_json_print(stdout, o);
}

/* The points' columns: CSV's (the --json points' fields) in order; the
 * table's in k_cmp_order, dropped by priority, larger first: p, dev,
 * noise B, noise A, median B, median A, interval, axes. */
/* clang-format off */
enum {
    C_SUITE, C_BENCH, C_AXES, C_DEV, C_MODE, C_MA, C_MB, C_NA, C_NB, C_RATIO, C_LO, C_HI, C_T, C_P,
    C_VERDICT, NCMP
};
/* clang-format on */
#define D TOOL_ROWS_DATA
static const tool_rows_col k_cmp_cols[NCMP] = {
    [C_SUITE] = {"suite", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [C_BENCH] = {"benchmark", "benchmark", TOOL_ROWS_TEXT, 0, 14, 0, NULL},
    [C_AXES] = {"axes", "axes", TOOL_ROWS_TEXT, 1, 10, 0, NULL},
    [C_DEV] = {"device", "dev", TOOL_ROWS_INT, 6, 0, 0, NULL, 1},
    [C_MODE] = {"mode", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL},
    [C_MA] = {"median_a_ns", "median A", TOOL_ROWS_TIME, 3, 0, 0, NULL},
    [C_MB] = {"median_b_ns", "median B", TOOL_ROWS_TIME, 3, 0, 0, NULL},
    [C_NA] = {"noise_a_ratio", "noise A", TOOL_ROWS_RATIO, 4, 0, 1, NULL},
    [C_NB] = {"noise_b_ratio", "noise B", TOOL_ROWS_RATIO, 4, 0, 1, NULL},
    [C_RATIO] = {"median_ratio", "B/A", TOOL_ROWS_REAL, 0, 0, 0, NULL},
    [C_LO] = {"ci_low_ratio", "interval", TOOL_ROWS_REAL, 2, 0, 0, NULL, 1},
    [C_HI] = {"ci_high_ratio", NULL, TOOL_ROWS_REAL, D, 0, 0, NULL},
    [C_T] = {"threshold_ratio", NULL, TOOL_ROWS_REAL, D, 0, 0, NULL},
    [C_P] = {"p_value", "p", TOOL_ROWS_REAL, 7, 0, 0, NULL},
    [C_VERDICT] = {"verdict", "verdict", TOOL_ROWS_TEXT, 0, 0, 0, NULL},
};
#undef D
static const size_t k_cmp_order[] = {C_BENCH, C_AXES,  C_DEV, C_MA, C_NA,     C_MB,
                                     C_NB,    C_RATIO, C_LO,  C_P,  C_VERDICT};

/* One point's row: the values, and what the table shows for them. */
static void add_cmp_row(tool_rows *t, const vyre_bench_cmp_row *r)
{
    const vyre_bench_point *p = r->has_a ? &r->a : &r->b;
    int both = r->has_a && r->has_b;
    char buf[TOOL_CLEAN_SIZE(sizeof p->benchmark) + 8];
    tool_rows_add(t);
    tool_rows_text(t, C_SUITE, p->suite);
    tool_rows_text(t, C_BENCH, p->benchmark);
    tool_rows_shown(t, C_BENCH, bench_label(p, buf, sizeof buf));
    tool_rows_text(t, C_AXES, p->axes);
    if (p->device >= 0)
        tool_rows_int(t, C_DEV, p->device);
    else
        tool_rows_shown(t, C_DEV, "host");
    tool_rows_text(t, C_MODE, vyre_bench_mode_name(p->mode));
    tool_rows_real(t, C_MA, r->has_a ? r->a.stats.median : NAN);
    tool_rows_real(t, C_MB, r->has_b ? r->b.stats.median : NAN);
    tool_rows_text(t, C_VERDICT, r->has_a ? "only_a" : "only_b");
    tool_rows_shown(t, C_VERDICT, r->has_a ? "only A" : "only B");
    if (!both)
        return;
    tool_rows_real(t, C_NA, r->cmp.noise_a);
    tool_rows_real(t, C_NB, r->cmp.noise_b);
    tool_rows_real(t, C_RATIO, r->cmp.ratio);
    snprintf(buf, sizeof buf, "%.3fx", r->cmp.ratio);
    tool_rows_shown(t, C_RATIO, buf);
    tool_rows_real(t, C_LO, r->cmp.ratio_lo);
    snprintf(buf, sizeof buf, "[%.3f, %.3f]", r->cmp.ratio_lo, r->cmp.ratio_hi);
    tool_rows_shown(t, C_LO, buf);
    tool_rows_real(t, C_HI, r->cmp.ratio_hi);
    tool_rows_real(t, C_T, r->cmp.threshold);
    tool_rows_real(t, C_P, r->cmp.mw.p);
    format_p(r->cmp.mw.p, buf, sizeof buf);
    tool_rows_shown(t, C_P, buf);
    tool_rows_text(t, C_VERDICT, verdict_json(r->cmp.verdict));
    tool_rows_shown(t, C_VERDICT, vyre_stats_verdict_name(r->cmp.verdict));
}

/* The points in fmt (table or markdown fitted to width, or CSV). */
static void print_points(const vyre_bench_cmp_row *rows, size_t n, tool_rows_fmt fmt, int width)
{
    tool_rows *t = tool_rows_new(k_cmp_cols, NCMP);
    tool_rows_order(t, k_cmp_order, sizeof k_cmp_order / sizeof k_cmp_order[0]);
    for (size_t i = 0; i < n; i++)
        add_cmp_row(t, &rows[i]);
    tool_rows_print(stdout, t, fmt, width, NULL, "points");
    tool_rows_free(t);
}

/* What could not be judged, as "8 NOISY, 1 DRIFT" (size: at least 128). */
static void format_unjudged(const vyre_bench_cmp_summary *t, char *buf, size_t size)
{
    const struct {
        size_t n;
        const char *what;
    } parts[] = {{t->u_noisy, "NOISY"},
                 {t->u_drift, "DRIFT"},
                 {t->u_cycles, "DRIFT in clock cycles"},
                 {t->u_one_side, "only in one run"}};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && len < size; i++) {
        if (!parts[i].n)
            continue;
        int w =
            snprintf(buf + len, size - len, "%s%zu %s", len ? ", " : "", parts[i].n, parts[i].what);
        len = w < 0 ? size : len + (size_t)w;
    }
}

/* The tally line and the comparison's verdict under the table. */
static void print_tally(const vyre_bench_cmp_summary *t, int width)
{
    printf("\n%zu faster, %zu slower, %zu same, %zu noisy, %zu drift, %zu unmatched\n", t->faster,
           t->slower, t->same, t->noisy, t->drift, t->unmatched);
    char why[256], line[512];
    format_unjudged(t, why, sizeof why);
    if (t->outcome == VYRE_OUTCOME_FAIL)
        snprintf(line, sizeof line, "verdict: FAIL (%zu point%s SLOWER)", t->slower,
                 t->slower == 1 ? "" : "s");
    else if (t->points == 0)
        snprintf(line, sizeof line, "verdict: INCONCLUSIVE (no point compared)");
    else
        snprintf(line, sizeof line, "verdict: %s (%zu of %zu points judged%s%s%s)",
                 vyre_bench_outcome_name(t->outcome), t->points - t->unjudged, t->points,
                 t->unjudged ? "; not judged: " : "", why, t->unjudged ? "" : ", none SLOWER");
    bench_print_wrapped(stdout, line, width);
}

/* What helps judge the points t could not: one line on stderr (PASS with
 * a few unjudged: a note; INCONCLUSIVE: the reason for exit 4). */
static void report_unjudged(const vyre_bench_cmp_summary *t, int strict)
{
    if (t->outcome == VYRE_OUTCOME_FAIL || (t->outcome == VYRE_OUTCOME_PASS && !t->unjudged))
        return;
    if (t->points == 0) {
        fprintf(stderr,
                "%s: inconclusive: no point compared: the runs have no points in common "
                "but the references; compare runs of the same suites\n",
                tool_prog());
        return;
    }
    char why[256], helps[512] = "";
    format_unjudged(t, why, sizeof why);
    size_t len = 0;
    const char *remedy[] = {
        t->u_noisy ? "more rounds (--rounds) or a longer --min-time, on an idle machine" : NULL,
        t->u_drift ? "an idle machine between the runs, or a pooled baseline (--baseline "
                     "'... last:5')"
                   : NULL,
        t->u_cycles ? "locked clocks (nvidia-smi --lock-gpu-clocks)" : NULL,
        t->u_one_side ? "runs of the same suites and axes" : NULL};
    for (size_t i = 0; i < sizeof remedy / sizeof remedy[0] && len < sizeof helps; i++) {
        if (!remedy[i])
            continue;
        int w = snprintf(helps + len, sizeof helps - len, "%s%s", len ? "; " : "", remedy[i]);
        len = w < 0 ? sizeof helps : len + (size_t)w;
    }
    int over = t->outcome == VYRE_OUTCOME_INCONCLUSIVE;
    fprintf(stderr, "%s: %s: %zu of %zu points could not be judged (%s)%s; what helps: %s\n",
            tool_prog(), over ? "inconclusive" : "note", t->unjudged, t->points, why,
            !over    ? ", a quarter at most is allowed"
            : strict ? ", --strict allows none"
                     : ", more than a quarter",
            helps);
}

/* The table: the rule used, the references, a row per point and the
 * tally; fmt the table or markdown, fitted to width (0: every column). */
static void print_table(const int64_t *pa, size_t na, int64_t b, const vyre_stats_compare_opts *co,
                        const vyre_bench_cmp_row *rows, size_t n, const vyre_bench_cmp_summary *t,
                        tool_rows_fmt fmt, int width)
{
    int64_t a = pa[0];
    char head[1536], runs[1024] = "";
    size_t len = 0;
    for (size_t k = 0; na > 1 && k < na && len < sizeof runs; k++) {
        int w = snprintf(runs + len, sizeof runs - len, "%s%" PRId64, k ? ", " : "runs ", pa[k]);
        len = w < 0 ? sizeof runs : len + (size_t)w;
    }
    if (na > 1)
        snprintf(head, sizeof head,
                 "%s (baseline: the rounds of these %zu runs pooled) vs run %" PRId64, runs, na, b);
    else
        snprintf(head, sizeof head, "run %" PRId64 " (baseline) vs run %" PRId64, a, b);
    len = strlen(head);
    snprintf(head + len, sizeof head - len,
             ": bootstrap %g%% interval of the median ratio over rounds, min effect %g%%, max "
             "noise %g%%",
             (1 - co->alpha) * 100, co->min_effect * 100, co->max_noise * 100);
    bench_print_wrapped(stdout, head, width);
    for (size_t i = 0; a == b && i < n; i++)
        if (rows[i].has_b && strcmp(rows[i].b.variant, "B") == 0) {
            printf("run %" PRId64 ": variant B against variant A of its points (run --vs)\n", a);
            break;
        }
    print_references(rows, n, width);
    print_points(rows, n, fmt, width);
    print_tally(t, width);
}

/* The options; 0 to go on, COMPARE_HELP_SHOWN, or the exit code. */
#define COMPARE_HELP_SHOWN (-1)
typedef struct compare_args {
    int strict, allow_missing;
    tool_rows_out out;         /* --csv, --md, --wide, --width */
    const char *baseline;      /* --baseline SELECTOR, or NULL */
    const char *ref_a, *ref_b; /* the operands; ref_a NULL with --baseline */
    int implicit;              /* RUN_A not given: the run before RUN_B ('compare last') */
} compare_args;

/* 'last' or 'last-N': N; -1 for anything else (an id, a selector). */
static long long last_back(const char *ref)
{
    if (strcmp(ref, "last") == 0)
        return 0;
    if (strncmp(ref, "last-", 5) != 0 || ref[5] < '0' || ref[5] > '9')
        return -1;
    char *end = NULL;
    long long v = strtoll(ref + 5, &end, 10);
    return *end || v < 0 ? -1 : v;
}

/* The operands: RUN_A RUN_B; or RUN_B alone, 'last', 'last-N' or a
 * selector, whose baseline is the run before it ('compare last' is
 * 'compare last-1 last', as hyperfine and nvbench users expect); or none,
 * 'compare last'. */
static int compare_operands(int n, char **ops, compare_args *ca)
{
    if (ca->baseline) {
        ca->ref_b = ops[0];
        return 0;
    }
    if (n == 2) {
        ca->ref_a = ops[0];
        ca->ref_b = ops[1];
        return 0;
    }
    if (n > 2 || (n == 1 && last_back(ops[0]) < 0 && !strchr(ops[0], '=')))
        return tool_usage_error("compare",
                                "one run alone is compared with the done run before it only as "
                                "'last', 'last-N' or a selector: 'compare last' is "
                                "'compare last-1 last'",
                                "give two runs: RUN_A (baseline) RUN_B");
    ca->ref_b = ca->ref_a = n ? ops[0] : "last";
    ca->implicit = 1;
    return 0;
}

static int parse_compare_args(int argc, char **argv, vyre_stats_compare_opts *co, compare_args *ca)
{
    double ratio = -1;
    int c, code = 0;
    while ((c = tool_getopt_table("compare", argc, argv, bench_compare_opts, usage, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code ? code : COMPARE_HELP_SHOWN;
        switch (c) {
        case 'a':
            code = parse_alpha(optarg, &co->alpha);
            break;
        case 'e':
            code = tool_percent_arg("compare", "--min-effect", optarg, &co->min_effect);
            break;
        case 'n':
            code = tool_percent_arg("compare", "--max-noise", optarg, &ratio);
            if (!code && ratio <= 0)
                code = tool_usage_error("compare", "give a percentage above 0, such as 10%",
                                        "bad value '%s' for --max-noise", optarg);
            if (!code)
                co->max_noise = ratio;
            break;
        case 's':
            ca->strict = 1;
            break;
        case 'm':
            ca->allow_missing = 1;
            break;
        default:
            if (tool_rows_opt("compare", c, optarg, &ca->out) < 0)
                code = TOOL_EXIT_ERROR;
            break;
        case 'B':
            ca->baseline = optarg;
            break;
        }
        if (code)
            return code;
    }
    if (tool_rows_out_resolve("compare", &ca->out, TOOL_FMT_MD))
        return TOOL_EXIT_ERROR;
    if (ca->baseline && argc - optind != 1)
        return tool_usage_error("compare", NULL,
                                "with --baseline, give one run: RUN_B (the one compared)");
    return compare_operands(argc - optind, argv + optind, ca);
}

/* A point only one run has, without --allow-missing: the error. */
static int report_missing(const vyre_bench_cmp_row *rows, size_t n, size_t unmatched, int64_t a,
                          int64_t b)
{
    size_t i = 0;
    while (i + 1 < n && rows[i].has_a && rows[i].has_b)
        i++;
    const vyre_bench_cmp_row *missing = &rows[i];
    const vyre_bench_point *p = missing->has_a ? &missing->a : &missing->b;
    char bench[TOOL_CLEAN_SIZE(sizeof p->benchmark)], axes[TOOL_CLEAN_SIZE(sizeof p->axes)];
    fprintf(stderr,
            "%s: error: cannot compare: %zu point%s only one run has, first '%s%s%s' only in "
            "run %" PRId64 "\n",
            tool_prog(), unmatched, unmatched == 1 ? "" : "s",
            tool_clean(p->benchmark, bench, sizeof bench), p->axes[0] ? " " : "",
            tool_clean(p->axes, axes, sizeof axes), missing->has_a ? a : b);
    fprintf(stderr, "hint: compare runs of the same suites and axes, or pass "
                    "--allow-missing to compare the points both have\n");
    return TOOL_EXIT_ERROR;
}

/* The baseline of --baseline: one run, or the newest K matching with
 * last:K. Fewer than K matching is no error: the runs that exist are
 * pooled and a note on stderr says how many (the table's head names them). */
static int resolve_baseline(vyre_results *db, const char *sel, int64_t b, int64_t *ids, size_t *n,
                            vyre_error *err)
{
    size_t asked = 0;
    int rc = vyre_results_select_pool(db, sel, b, ids, n, &asked, err);
    if (!rc && *n < asked) {
        char clean[TOOL_CLEAN_SIZE(512)];
        fprintf(stderr, "%s: note: only %zu done run%s match%s '%s': pooling %s of %zu asked\n",
                tool_prog(), *n, *n == 1 ? "" : "s", *n == 1 ? "es" : "",
                tool_clean(sel, clean, sizeof clean), *n == 1 ? "that one" : "those", asked);
    }
    return rc;
}

/* RUN_B: an id, 'last', 'last-N', or a selector ("host=ci-7 last": in a
 * store many machines write, 'last' alone is anybody's). No done run at
 * all for 'compare' or 'compare last': says so. 0 or the exit code. */
static int resolve_candidate(vyre_results *db, const compare_args *ca, int64_t *b)
{
    vyre_error err;
    vyre_error_clear(&err);
    const char *ref = ca->ref_b;
    int rc = strchr(ref, '=') ? vyre_results_select_run(db, ref, b, &err)
                              : vyre_bench_run_resolve(db, ref, b, &err);
    if (rc == VYRE_ENOENT && ca->implicit && strcmp(ref, "last") == 0) {
        char path[TOOL_CLEAN_SIZE(VYRE_RESULTS_LOCATION_MAX)];
        fprintf(stderr, "%s: error: nothing to compare: no done run in '%s'\n", tool_prog(),
                tool_clean(vyre_results_path(db), path, sizeof path));
        fprintf(stderr, "hint: measure a baseline and a candidate first ('vyre-bench run', "
                        "twice); a run that failed or was interrupted never counts\n");
        return TOOL_EXIT_ERROR;
    }
    if (rc)
        tool_report(&err);
    return rc ? TOOL_EXIT_ERROR : 0;
}

/* 'last' / 'last-N' as RUN_A named b itself: the done run before b, so
 * that a run is never its own baseline (issue 33: a gate that cannot
 * fail). None: says so. 0 or the exit code. */
static int step_back(vyre_results *db, const compare_args *ca, long long back, int64_t b,
                     int64_t *a)
{
    char prev[32];
    snprintf(prev, sizeof prev, "last-%lld", back + 1);
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_bench_run_resolve(db, prev, a, &err);
    if (rc != VYRE_ENOENT) {
        if (rc)
            tool_report(&err);
        return rc ? TOOL_EXIT_ERROR : 0;
    }
    char path[TOOL_CLEAN_SIZE(VYRE_RESULTS_LOCATION_MAX)];
    tool_clean(vyre_results_path(db), path, sizeof path);
    if (ca->implicit)
        fprintf(stderr,
                "%s: error: nothing to compare: no done run before run %" PRId64 " in '%s'\n"
                "hint: measure again ('vyre-bench run') and compare the two runs\n",
                tool_prog(), b, path);
    else
        fprintf(stderr,
                "%s: error: cannot compare: baseline '%s' is run %" PRId64
                ", the run compared, and no done run before it is in '%s'\n"
                "hint: a run is never its own baseline: measure the baseline first, or name "
                "it by id\n",
                tool_prog(), ca->ref_a, b, path);
    return TOOL_EXIT_ERROR;
}

/* The baseline: --baseline's selector or a selector RUN_A (a pool with
 * last:K), else an id, 'last' or 'last-N'; never b itself when named by
 * 'last' or a selector. 0 or the exit code. */
static int resolve_reference(vyre_results *db, const compare_args *ca, int64_t b, int64_t *pool,
                             size_t *na)
{
    vyre_error err;
    vyre_error_clear(&err);
    const char *ref = ca->baseline ? ca->baseline : ca->ref_a;
    *na = 1;
    if (ca->baseline || strchr(ref, '=')) {
        if (resolve_baseline(db, ref, b, pool, na, &err)) {
            tool_report(&err);
            return TOOL_EXIT_ERROR;
        }
        return 0;
    }
    if (vyre_bench_run_resolve(db, ref, &pool[0], &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    long long back = last_back(ref);
    return pool[0] == b && back >= 0 ? step_back(db, ca, back, b, &pool[0]) : 0;
}

/* A run compared with itself (two equal ids) is a gate that cannot fail,
 * unless it is an A/B run (run --vs), whose B points meet their A points. */
static int check_not_itself(const vyre_bench_cmp_row *rows, size_t n, int64_t a, int64_t b,
                            size_t na)
{
    if (a != b || na != 1)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].has_a && rows[i].has_b && strcmp(rows[i].a.variant, "A") == 0 &&
            strcmp(rows[i].b.variant, "B") == 0)
            return 0;
    fprintf(stderr, "%s: error: cannot compare run %" PRId64 " with itself\n", tool_prog(), a);
    fprintf(stderr, "hint: a run is never its own baseline: name an earlier run ('compare last' "
                    "compares the last two); 'compare RUN RUN' is for a run measured with --vs\n");
    return TOOL_EXIT_ERROR;
}

/* The rows of pool against b, checked: both runs done, not a run against
 * itself, every point matched (or --allow-missing). 0 or the exit code. */
static int compare_checked(vyre_results *db, const compare_args *ca, const int64_t *pool, size_t na,
                           int64_t b, const vyre_stats_compare_opts *co, vyre_bench_cmp_row **rows,
                           size_t *n)
{
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_bench_compare_runs(db, pool, na, b, co, rows, n, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    int code = check_run_done(db, pool[0], "baseline");
    if (!code)
        code = check_run_done(db, b, "candidate");
    if (!code)
        code = check_not_itself(*rows, *n, pool[0], b, na);
    size_t unmatched = 0;
    for (size_t i = 0; !code && i < *n; i++)
        unmatched += !((*rows)[i].has_a && (*rows)[i].has_b);
    if (!code && unmatched && !ca->allow_missing)
        code = report_missing(*rows, *n, unmatched, pool[0], b);
    return code;
}

int cmd_compare(int argc, char **argv)
{
    vyre_stats_compare_opts co = VYRE_COMPARE_OPTS_DEFAULT;
    compare_args ca;
    memset(&ca, 0, sizeof ca);
    int code = parse_compare_args(argc, argv, &co, &ca);
    if (code)
        return code == COMPARE_HELP_SHOWN ? TOOL_EXIT_OK : code;
    vyre_results *db = NULL;
    code = bench_open_db_existing(&db);
    if (code)
        return code;
    int64_t pool[VYRE_RESULTS_POOL_MAX] = {0}, b = 0;
    size_t na = 1;
    vyre_bench_cmp_row *rows = NULL;
    size_t n = 0;
    code = resolve_candidate(db, &ca, &b);
    if (!code)
        code = resolve_reference(db, &ca, b, pool, &na);
    if (!code)
        code = compare_checked(db, &ca, pool, na, b, &co, &rows, &n);
    if (code) {
        vyre_free(rows);
        vyre_results_close(db);
        return code;
    }
    vyre_bench_cmp_summary t;
    vyre_bench_compare_summarize(rows, n, ca.strict, &t);
    if (ca.out.fmt == TOOL_FMT_JSON)
        print_json(pool, na, b, &co, rows, n, &t, ca.strict);
    else if (ca.out.fmt == TOOL_FMT_CSV)
        print_points(rows, n, TOOL_FMT_CSV, 0);
    else
        print_table(pool, na, b, &co, rows, n, &t, ca.out.fmt, ca.out.width);
    report_unjudged(&t, ca.strict);
    vyre_free(rows);
    vyre_results_close(db);
    return t.outcome == VYRE_OUTCOME_FAIL           ? TOOL_EXIT_PROBLEMS
           : t.outcome == VYRE_OUTCOME_INCONCLUSIVE ? COMPARE_EXIT_INCONCLUSIVE
                                                    : TOOL_EXIT_OK;
}
