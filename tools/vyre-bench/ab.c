/*
 * ab.c - the A/B half of `vyre-bench run ... --vs OTHER`: libcore measures
 * the sweep's kernel (A) and OTHER (B) in one process, their samples
 * alternating one by one behind the blocking kernel, and stores both as
 * variants of one run (vyre_bench_sweep.vs_path). Here the pairs are
 * compared, B against A, with vyre_bench_compare_runs of the run with
 * itself (the bootstrap over rounds; A's and B's samples of a round were
 * taken in turn, so they share the round's drift), and printed: B/A per
 * point with its interval and a verdict. Any SLOWER point: exit 1.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_cli.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "vyre/vyre.h"

int bench_ab_usage(const char *vs, const char *kernel, int dry_run)
{
    if (!vs)
        return TOOL_EXIT_OK;
    if (!kernel)
        return tool_usage_error(
            "run",
            "--vs compares two kernels of one sweep: give the first with --spec or as KERNEL",
            "--vs '%s' without a kernel to compare it with", vs);
    if (dry_run)
        return tool_usage_error("run", "check each kernel with its own --dry-run",
                                "--vs measures two kernels; --dry-run lists one sweep's points");
    return TOOL_EXIT_OK;
}

/* An A point with its B point. */
static int is_pair(const vyre_bench_cmp_row *r)
{
    return r->has_a && r->has_b && strcmp(r->a.variant, "A") == 0 && strcmp(r->b.variant, "B") == 0;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *pair_json(const vyre_bench_cmp_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "benchmark", json_string(r->a.benchmark));
    json_object_set_new(o, "axes", bench_json_axes(r->a.axes));
    json_object_set_new(o, "device", r->a.device >= 0 ? json_integer(r->a.device) : json_null());
    json_object_set_new(o, "mode", json_string(vyre_bench_mode_name(r->a.mode)));
    json_object_set_new(o, "a_point", json_integer(r->a.id));
    json_object_set_new(o, "b_point", json_integer(r->b.id));
    json_object_set_new(o, "median_a_ns", num_or_null(r->cmp.median_a));
    json_object_set_new(o, "median_b_ns", num_or_null(r->cmp.median_b));
    json_object_set_new(o, "ratio", num_or_null(r->cmp.ratio));
    json_object_set_new(o, "ci_low_ratio", num_or_null(r->cmp.ratio_lo));
    json_object_set_new(o, "ci_high_ratio", num_or_null(r->cmp.ratio_hi));
    json_object_set_new(o, "noise_a_ratio", num_or_null(r->cmp.noise_a));
    json_object_set_new(o, "noise_b_ratio", num_or_null(r->cmp.noise_b));
    json_object_set_new(o, "rounds", json_integer((json_int_t)r->cmp.rounds_a));
    char v[16];
    snprintf(v, sizeof v, "%s", vyre_stats_verdict_name(r->cmp.verdict));
    for (char *c = v; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    json_object_set_new(o, "verdict", json_string(v));
    return o;
}

static void print_pairs(FILE *out, const vyre_bench_cmp_row *rows, size_t n,
                        const vyre_stats_compare_opts *co)
{
    fprintf(out,
            "\nB/A (B = --vs, samples alternating A, B): bootstrap %g%% interval of the median "
            "ratio over rounds, min effect %g%%, max noise %g%%\n",
            (1 - co->alpha) * 100, co->min_effect * 100, co->max_noise * 100);
    fprintf(out, "| %-22s | %-22s | %-4s | %-4s | %11s | %11s | %7s | %-15s | %-7s |\n",
            "benchmark", "axes", "dev", "mode", "median A", "median B", "B/A", "interval",
            "verdict");
    fprintf(out, "|------------------------|------------------------|------|------|------------:|"
                 "------------:|--------:|-----------------|---------|\n");
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_cmp_row *r = &rows[i];
        if (!is_pair(r))
            continue;
        char dev[16], ma[24], mb[24], ratio[16], ci[40];
        bench_format_device(&r->a, dev, sizeof dev);
        bench_format_ns(r->a.stats.median, ma, sizeof ma);
        bench_format_ns(r->b.stats.median, mb, sizeof mb);
        snprintf(ratio, sizeof ratio, "%.3fx", r->cmp.ratio);
        snprintf(ci, sizeof ci, "[%.3f, %.3f]", r->cmp.ratio_lo, r->cmp.ratio_hi);
        char bench[TOOL_CLEAN_SIZE(sizeof r->a.benchmark)];
        char axes[TOOL_CLEAN_SIZE(sizeof r->a.axes)];
        fprintf(out, "| %-22s | %-22s | %-4s | %-4s | %11s | %11s | %7s | %-15s | %-7s |\n",
                tool_clean(r->a.benchmark, bench, sizeof bench),
                tool_clean(r->a.axes[0] ? r->a.axes : "-", axes, sizeof axes), dev,
                vyre_bench_mode_name(r->a.mode), ma, mb, ratio, ci,
                vyre_stats_verdict_name(r->cmp.verdict));
    }
}

int bench_ab_report(FILE *out, vyre_results *db, int64_t run_id, bench_format fmt, json_t **json)
{
    if (json)
        *json = NULL;
    vyre_stats_compare_opts co = VYRE_COMPARE_OPTS_DEFAULT;
    vyre_bench_cmp_row *rows = NULL;
    size_t n = 0;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_bench_compare_runs(db, &run_id, 1, run_id, &co, &rows, &n, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    size_t slower = 0, faster = 0, same = 0, other = 0;
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        if (!is_pair(&rows[i]))
            continue;
        vyre_stats_verdict v = rows[i].cmp.verdict;
        slower += v == VYRE_VERDICT_SLOWER;
        faster += v == VYRE_VERDICT_FASTER;
        same += v == VYRE_VERDICT_SAME;
        other += v != VYRE_VERDICT_SLOWER && v != VYRE_VERDICT_FASTER && v != VYRE_VERDICT_SAME;
        if (arr)
            json_array_append_new(arr, pair_json(&rows[i]));
    }
    if (fmt == BENCH_TABLE) {
        print_pairs(out, rows, n, &co);
        fprintf(out, "\nB vs A: %zu faster, %zu slower, %zu same, %zu noisy or drift\n", faster,
                slower, same, other);
    }
    if (json)
        *json = arr;
    vyre_free(rows);
    return slower ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
