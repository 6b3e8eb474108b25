/*
 * cmd_compare.c - `vyre-bench compare RUN_A RUN_B`: every point of B
 * against the same point of A (the baseline) with a Mann-Whitney U test
 * and a minimum effect (vyre_stats_compare); FASTER, SLOWER or SAME per
 * point. Exit 1 when any point is SLOWER, so CI can gate on regressions.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "vyre/vyre.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench compare [--db PATH] [--alpha P] [--min-effect PCT] [--json]\n"
            "                          RUN_A RUN_B\n\n"
            "Compare run B against run A (the baseline), point by point, on their stored\n"
            "samples: Mann-Whitney U (two-sided) and the ratio of medians. A point is\n"
            "FASTER or SLOWER when p < alpha AND the medians differ by more than the\n"
            "minimum effect; otherwise SAME. Points only one run has are listed as such.\n\n"
            "  --alpha P          significance level (default 0.01)\n"
            "  --min-effect PCT   smallest change that counts, percent (default 2)\n"
            "  --json             one JSON document (schema_version %d) instead of the\n"
            "                     table; the exit status is the same\n\n"
            "exit status: 0 no point SLOWER, 1 some point SLOWER (gate CI on it),\n"
            "             2 usage or operational error\n",
            BENCH_COMPARE_JSON_SCHEMA_VERSION);
}

static int parse_num(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || v < 0)
        return vyre_cli_usage_error("compare", NULL, "bad value '%s' for %s", s, opt);
    *out = v;
    return 0;
}

static json_t *ns_or_null(int known, double ns)
{
    return known && isfinite(ns) ? json_integer((json_int_t)llround(ns)) : json_null();
}

static json_t *num_or_null(int known, double v)
{
    return known && isfinite(v) ? json_real(v) : json_null();
}

/* The comparison as one JSON document on stdout; returns the number of
 * SLOWER points (the exit status depends on it, as for the table). */
static size_t print_json(int64_t a, int64_t b, const vyre_stats_compare_opts *co,
                         const vyre_bench_cmp_row *rows, size_t n)
{
    size_t faster = 0, slower = 0, same = 0, unmatched = 0;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        const vyre_bench_point *p = r->has_a ? &r->a : &r->b;
        int both = r->has_a && r->has_b;
        const char *verdict = r->has_a ? "only_a" : "only_b";
        if (both) {
            verdict = r->cmp.verdict == VYRE_VERDICT_FASTER   ? "faster"
                      : r->cmp.verdict == VYRE_VERDICT_SLOWER ? "slower"
                                                              : "same";
            faster += r->cmp.verdict == VYRE_VERDICT_FASTER;
            slower += r->cmp.verdict == VYRE_VERDICT_SLOWER;
            same += r->cmp.verdict == VYRE_VERDICT_SAME;
        } else {
            unmatched++;
        }
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
        json_object_set_new(o, "median_ratio", num_or_null(both, r->cmp.ratio));
        json_object_set_new(o, "p_value", num_or_null(both, r->cmp.mw.p));
        json_object_set_new(o, "verdict", json_string(verdict));
        json_array_append_new(arr, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(BENCH_COMPARE_JSON_SCHEMA_VERSION));
    json_object_set_new(o, "baseline_run_id", json_integer(a));
    json_object_set_new(o, "run_id", json_integer(b));
    json_object_set_new(o, "test", json_string("mann-whitney-u"));
    json_object_set_new(o, "alpha", json_real(co->alpha));
    json_object_set_new(o, "min_effect_ratio", json_real(co->min_effect));
    json_object_set_new(o, "points", arr);
    json_object_set_new(o, "summary",
                        json_pack("{s:I, s:I, s:I, s:I}", "faster", (json_int_t)faster, "slower",
                                  (json_int_t)slower, "same", (json_int_t)same, "unmatched",
                                  (json_int_t)unmatched));
    bench_json_print(stdout, o);
    return slower;
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'D'},
        {"alpha", required_argument, NULL, 'a'},
        {"min-effect", required_argument, NULL, 'e'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db_path = NULL;
    vyre_stats_compare_opts co = VYRE_COMPARE_OPTS_DEFAULT;
    double pct = -1;
    int c, code = 0, json = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'D':
            db_path = optarg;
            break;
        case 'a':
            code = parse_num("--alpha", optarg, &co.alpha);
            break;
        case 'e':
            code = parse_num("--min-effect", optarg, &pct);
            if (!code)
                co.min_effect = pct / 100.0;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            usage(stdout);
            return VYRE_EXIT_OK;
        default:
            return vyre_cli_bad_option("compare", argv, optind, optopt, "h", opts);
        }
        if (code)
            return code;
    }
    if (argc - optind != 2)
        return vyre_cli_usage_error("compare", NULL, "give two runs: RUN_A (baseline) RUN_B");
    vyre_results *db = NULL;
    code = bench_open_db(db_path, &db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);
    int64_t a = 0, b = 0;
    vyre_bench_cmp_row *rows = NULL;
    size_t n = 0;
    if (vyre_bench_run_resolve(db, argv[optind], &a, &err) ||
        vyre_bench_run_resolve(db, argv[optind + 1], &b, &err) ||
        vyre_bench_compare_runs(db, a, b, &co, &rows, &n, &err)) {
        vyre_cli_report(&err);
        vyre_results_close(db);
        return VYRE_EXIT_ERROR;
    }
    if (json) {
        size_t slower = print_json(a, b, &co, rows, n);
        free(rows);
        vyre_results_close(db);
        return slower ? VYRE_EXIT_PROBLEMS : VYRE_EXIT_OK;
    }
    printf("run %" PRId64 " (baseline) vs run %" PRId64
           ": Mann-Whitney U, alpha %g, min effect %g%%\n\n",
           a, b, co.alpha, co.min_effect * 100);
    printf("| %-22s | %-22s | %-4s | %11s | %11s | %8s | %9s | %-7s |\n", "benchmark", "axes",
           "dev", "median A", "median B", "B/A", "p", "verdict");
    printf("|------------------------|------------------------|------|------------:|------------:|"
           "---------:|----------:|---------|\n");
    size_t faster = 0, slower = 0, same = 0, unmatched = 0;
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        const vyre_bench_point *p = r->has_a ? &r->a : &r->b;
        char dev[16], ma[24], mb[24], ratio[16], pv[16];
        bench_format_device(p, dev, sizeof dev);
        bench_format_ns(r->has_a ? r->a.stats.median : NAN, ma, sizeof ma);
        bench_format_ns(r->has_b ? r->b.stats.median : NAN, mb, sizeof mb);
        const char *verdict;
        if (r->has_a && r->has_b) {
            snprintf(ratio, sizeof ratio, "%.3fx", r->cmp.ratio);
            snprintf(pv, sizeof pv, "%.2g", r->cmp.mw.p);
            verdict = vyre_stats_verdict_name(r->cmp.verdict);
            faster += r->cmp.verdict == VYRE_VERDICT_FASTER;
            slower += r->cmp.verdict == VYRE_VERDICT_SLOWER;
            same += r->cmp.verdict == VYRE_VERDICT_SAME;
        } else {
            snprintf(ratio, sizeof ratio, "-");
            snprintf(pv, sizeof pv, "-");
            verdict = r->has_a ? "only A" : "only B";
            unmatched++;
        }
        printf("| %-22s | %-22s | %-4s | %11s | %11s | %8s | %9s | %-7s |\n", p->benchmark,
               p->axes[0] ? p->axes : "-", dev, ma, mb, ratio, pv, verdict);
    }
    printf("\n%zu faster, %zu slower, %zu same, %zu unmatched\n", faster, slower, same, unmatched);
    vyre_bench_cmp_row_list_free(rows);
    vyre_results_close(db);
    return slower ? VYRE_EXIT_PROBLEMS : VYRE_EXIT_OK;
}
