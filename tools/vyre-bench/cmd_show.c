/*
 * cmd_show.c - `vyre-bench show RUN`: a run's facts and its points table,
 * with the kernels recorded per point.
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
#include "tool_rows.h"
#include "tool_sanitize.h"
#include "vyre/vyre.h"

const tool_opt bench_show_opts[] = {
    {'k', 0, "kernels", NULL, "also the CUPTI kernel records of each point", NULL},
    TOOL_ROWS_OPT_WIDE,
    TOOL_ROWS_OPT_WIDTH,
    TOOL_ROWS_OPT_CSV,
    TOOL_ROWS_OPT_MD,
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(
         BENCH_JSON_SCHEMA_VERSION) "): the run and its points",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench show [--db PATH] [--kernels] [--json | --csv | --md] [--wide]\n"
                 "                       [--width N] RUN\n\n"
                 "Show a run: where and how it ran, then its points: on a terminal a table\n"
                 "fitted to its width (columns dropped by priority, stop reasons as codes with\n"
                 "a legend), piped the full markdown table; --csv: the points' every field (as\n"
                 "export --csv). RUN is a run id, 'last' or 'last-N'\n"
                 "(the last done run, or the Nth done run before it: failed, interrupted and\n"
                 "running runs are skipped; name them by id).\n\n");
    tool_cmd_options_help(out, bench_show_opts);
    fprintf(out, "\nexit status: 0 shown, 2 usage or operational error (no such run)\n");
}

/* One line cut to width (> 0) with '~': the facts and the kernels'
 * lines fit --width as the table does (--wide shows them whole). */
static void put_fitted(const char *line, int width)
{
    size_t len = strlen(line);
    if (width > 0 && len > (size_t)width)
        printf("%.*s~\n", width - 1, line);
    else
        printf("%s\n", line);
}

/* One fact of the run; the value comes from the database: shown through
 * tool_clean. */
static void fact(const char *name, const char *value, int width)
{
    char clean[TOOL_CLEAN_SIZE(1024)], line[TOOL_CLEAN_SIZE(1024) + 32];
    snprintf(line, sizeof line, "%-13s %s", name,
             tool_clean(value && *value ? value : "-", clean, sizeof clean));
    put_fitted(line, width);
}

/* The run document (as `export --json` without samples), each point with
 * its kernel records when `kernels`. Returns an exit code. */
static int print_json(vyre_results *db, const vyre_bench_run *r, const vyre_bench_point *pts,
                      size_t n, int kernels)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *pj = bench_json_point(&pts[i]);
        json_array_append_new(arr, pj);
        if (!kernels)
            continue;
        vyre_error err;
        vyre_error_clear(&err);
        vyre_bench_kernel_row *k = NULL;
        size_t nk = 0;
        if (vyre_bench_kernels_get(db, pts[i].id, &k, &nk, &err)) {
            tool_report(&err);
            json_decref(arr);
            return TOOL_EXIT_ERROR;
        }
        json_t *ka = json_array();
        for (size_t j = 0; j < nk; j++) {
            json_t *ko = json_object();
            json_object_set_new(ko, "name", json_string(k[j].name));
            json_object_set_new(ko, "launches", json_integer((json_int_t)k[j].count));
            json_object_set_new(ko, "median_ns", json_integer((json_int_t)llround(k[j].median_ns)));
            json_object_set_new(ko, "total_ns", json_integer((json_int_t)llround(k[j].total_ns)));
            json_array_append_new(ka, ko);
        }
        free(k);
        json_object_set_new(pj, "kernels", ka);
    }
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(BENCH_JSON_SCHEMA_VERSION));
    json_object_set_new(o, "run", bench_json_run_info(r));
    json_object_set_new(o, "points", arr);
    tool_json_print(stdout, o);
    return TOOL_EXIT_OK;
}

/* The kernels recorded per point (--kernels), lines fitted to width. */
static int print_kernels(vyre_results *db, const vyre_bench_point *pts, size_t n, int width)
{
    vyre_error err;
    vyre_error_clear(&err);
    for (size_t i = 0; i < n; i++) {
        vyre_bench_kernel_row *k = NULL;
        size_t nk = 0;
        if (vyre_bench_kernels_get(db, pts[i].id, &k, &nk, &err)) {
            tool_report(&err);
            return TOOL_EXIT_ERROR;
        }
        char bench[TOOL_CLEAN_SIZE(sizeof pts->benchmark)], axes[TOOL_CLEAN_SIZE(sizeof pts->axes)];
        char line[sizeof bench + sizeof axes + 128];
        /* A point without records says so: CUPTI was off (--no-kernels, no
         * GPU, a host suite) or saw no launch; silence read as "none asked". */
        snprintf(line, sizeof line, "point %" PRId64 " %s%s%s: %s", pts[i].id,
                 tool_clean(pts[i].benchmark, bench, sizeof bench), pts[i].axes[0] ? " " : "",
                 tool_clean(pts[i].axes, axes, sizeof axes),
                 nk ? "kernels"
                    : "no kernel records (host point, --no-kernels, or no launch seen)");
        putchar('\n');
        put_fitted(line, width);
        for (size_t j = 0; j < nk; j++) {
            char med[24], name[TOOL_CLEAN_SIZE(sizeof k->name)];
            bench_format_ns(k[j].median_ns, med, sizeof med);
            /* bounded: a fixed-width column; cut to 40 after cleaning, so an escape is never split
             */
            snprintf(line, sizeof line, "  %-40.40s %6llu launches, median %s",
                     tool_clean(k[j].name, name, 41), (unsigned long long)k[j].count, med);
            put_fitted(line, width);
        }
        vyre_free(k);
    }
    return TOOL_EXIT_OK;
}

/* The run's facts, then its points in o's format (CSV: the points only). */
static int print_run(vyre_results *db, const vyre_bench_run *r, const vyre_bench_point *pts,
                     size_t n, const tool_rows_out *o, int kernels)
{
    if (o->fmt == TOOL_FMT_CSV) {
        bench_points_print(stdout, pts, n, TOOL_FMT_CSV, 0);
        return TOOL_EXIT_OK;
    }
    int w = o->width;
    char *summary = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&summary, &size);
    if (mem) {
        bench_run_summary(mem, r);
        fclose(mem);
        summary[strcspn(summary, "\n")] = '\0';
        put_fitted(summary, w);
        free(summary);
    }
    fact("command:", r->command_line, w);
    fact("suites:", r->suites, w);
    fact("gpu:", r->gpu_name, w);
    fact("uuid:", r->gpu_uuid, w);
    fact("devices:", r->devices, w);
    fact("driver:", r->driver, w);
    fact("cuda:", r->cuda_version, w);
    fact("clocks:", r->clocks, w);
    fact("git:", r->git_rev, w);
    fact("vyre:", r->vyre_version, w);
    if (r->message[0])
        fact("message:", r->message, w);
    if (n)
        putchar('\n');
    if (n && o->fmt == TOOL_FMT_MD && !o->md) { /* piped: run's markdown table */
        bench_table_header(stdout);
        for (size_t i = 0; i < n; i++)
            bench_table_row(stdout, &pts[i]);
    } else if (n) {
        bench_points_print(stdout, pts, n, o->fmt, w);
    }
    return kernels ? print_kernels(db, pts, n, w) : TOOL_EXIT_OK;
}

int cmd_show(int argc, char **argv)
{
    int kernels = 0, c, stop = 0;
    tool_rows_out o = {0};
    while ((c = tool_getopt_table("show", argc, argv, bench_show_opts, usage, &stop)) != -1) {
        if (c == TOOL_OPT_STOP)
            return stop;
        if (tool_rows_opt("show", c, optarg, &o) < 0)
            return TOOL_EXIT_ERROR;
        if (c == 'k')
            kernels = 1;
    }
    if (tool_rows_out_resolve("show", &o, TOOL_FMT_MD))
        return TOOL_EXIT_ERROR;
    vyre_results *db = NULL;
    vyre_bench_run r;
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    int code = bench_open_run("show", argc, argv, optind, &db, &r, &pts, &n);
    if (code)
        return code;
    if (o.fmt == TOOL_FMT_JSON)
        code = print_json(db, &r, pts, n, kernels);
    else
        code = print_run(db, &r, pts, n, &o, kernels);
    vyre_free(pts);
    vyre_results_close(db);
    return code;
}
