/*
 * output.c - printing points: the console table (valid markdown), CSV and
 * JSON, shared by `run`, `runs`, `show`, `compare` and `export`. JSON follows docs/JSON.md:
 * durations in whole ns, timestamps in Unix ns, ratios 0..1, axes as objects, null for unknown.
 *
 * Text from a results database reaches a terminal only through tool_clean
 * (tools/common/tool_sanitize.h): results files travel as CI artifacts, and a
 * name holding ESC would otherwise drive the reader's terminal. JSON is
 * escaped by jansson; CSV to a file or pipe is data and stays as stored.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool_json.h"
#include "tool_rows.h"
#include "tool_cli.h"
#include "cmds.h"
#include "tool_sanitize.h"
#include "vyre/vyre.h"

void bench_format_ns(double ns, char *buf, size_t size)
{
    tool_format_ns(ns, buf, size);
}

static void format_metric(const vyre_bench_point *p, char *buf, size_t size)
{
    char name[TOOL_CLEAN_SIZE(sizeof p->metric_name)];
    tool_clean(p->metric_name, name, sizeof name);
    /* A table cell: a long metric name is cut to the cell. */
    int n;
    if (!p->metric_name[0] || !isfinite(p->metric))
        n = snprintf(buf, size, "-");
    else if (fabs(p->metric) >= 100)
        n = snprintf(buf, size, "%.0f %s", p->metric, name);
    else
        n = snprintf(buf, size, "%.3g %s", p->metric, name);
    tool_mark_cut(buf, size, n);
}

void bench_format_device(const vyre_bench_point *p, char *buf, size_t size)
{
    if (p->device < 0)
        snprintf(buf, size, "host");
    else
        snprintf(buf, size, "%d", p->device);
}

/* The three views of a GPU point (README, "Which time to quote"): gpu is
 * the median of its event-timed samples, batch and kernel are stored
 * beside it; "-" where a view was not measured. */
static void format_views(const vyre_bench_point *p, char *gpu, char *batch, char *kernel,
                         size_t size)
{
    bench_format_ns(p->gpu_timer ? p->stats.median : NAN, gpu, size);
    bench_format_ns(p->batch_ns > 0 ? p->batch_ns : NAN, batch, size);
    bench_format_ns(p->kernel_ns > 0 ? p->kernel_ns : NAN, kernel, size);
}

void bench_table_header(FILE *out)
{
    fprintf(out,
            "| %-22s | %-22s | %-4s | %-4s | %6s | %11s | %11s | %11s | %11s | %11s | %11s | %6s | "
            "%4s | %3s | %-16s | %s |\n",
            "benchmark", "axes", "dev", "mode", "n", "median", "p5", "p95", "gpu", "batch",
            "kernel", "noise", "outl", "thr", "metric", "stop");
    fprintf(out, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------",
            "------------------------", "------", "------",
            "-------:", "------------:", "------------:", "------------:", "------------:",
            "------------:", "------------:", "-------:", "-----:", "----:", "------------------",
            "------");
}

const char *bench_label(const vyre_bench_point *p, char *buf, size_t size)
{
    char clean[TOOL_CLEAN_SIZE(sizeof p->benchmark)];
    tool_clean(p->benchmark, clean, sizeof clean);
    if (p->variant[0])
        snprintf(buf, size, "%s [%s]", clean, p->variant[0] == 'A' ? "A" : "B");
    else
        snprintf(buf, size, "%s", clean);
    return buf;
}

void bench_table_row(FILE *out, const vyre_bench_point *p)
{
    char med[24], p5[24], p95[24], noise[16], metric[48], dev[16], gpu[24], batch[24], kern[24];
    format_views(p, gpu, batch, kern, sizeof gpu);
    bench_format_ns(p->stats.median, med, sizeof med);
    bench_format_ns(p->stats.p5, p5, sizeof p5);
    bench_format_ns(p->stats.p95, p95, sizeof p95);
    /* The robust spread (1.4826 * MAD / median), the one the stopping rule
     * reads; stddev / mean stays in CSV, JSON and export. */
    if (isfinite(p->stats.robust_noise))
        snprintf(noise, sizeof noise, "%.2f%%", p->stats.robust_noise * 100);
    else
        snprintf(noise, sizeof noise, "-");
    format_metric(p, metric, sizeof metric);
    bench_format_device(p, dev, sizeof dev);
    char bench[TOOL_CLEAN_SIZE(sizeof p->benchmark)], axes[TOOL_CLEAN_SIZE(sizeof p->axes)];
    char stop[TOOL_CLEAN_SIZE(sizeof p->stop)], note[TOOL_CLEAN_SIZE(sizeof p->note)];
    fprintf(out,
            "| %-22s | %-22s | %-4s | %-4s | %6zu | %11s | %11s | %11s | %11s | %11s | %11s | %6s "
            "| %4zu | %3zu | %-16s | %s%s%s |\n",
            bench_label(p, bench, sizeof bench),
            tool_clean(p->axes[0] ? p->axes : "-", axes, sizeof axes), dev,
            vyre_bench_mode_name(p->mode), p->stats.n, med, p5, p95, gpu, batch, kern, noise,
            p->stats.n_outliers, p->n_throttled, metric, tool_clean(p->stop, stop, sizeof stop),
            p->note[0] ? "; " : "", tool_clean(p->note, note, sizeof note));
}

void bench_print_wrapped(FILE *out, const char *text, int width)
{
    /* Prose, not a table: broken at blanks so no line passes width
     * (width <= 0: as it is). A word longer than the width stays whole. */
    const char *s = text;
    while (*s) {
        size_t len = strcspn(s, "\n");
        while (width > 0 && len > (size_t)width) {
            size_t cut = (size_t)width;
            while (cut > 0 && s[cut] != ' ')
                cut--;
            if (cut == 0)
                break;
            fprintf(out, "%.*s\n", (int)cut, s);
            s += cut + 1;
            len -= cut + 1;
        }
        fprintf(out, "%.*s\n", (int)len, s);
        s += len;
        if (*s == '\n')
            s++;
    }
}

/* One field and its separator (tool_csv_text: on a terminal through
 * tool_clean, else the bytes as stored). */
static void csv_field(FILE *out, const char *s, int last, int tty)
{
    tool_csv_text(out, s, tty);
    fputc(last ? '\n' : ',', out);
}

static void csv_real(FILE *out, double v, int last)
{
    /* The JSON printer's shortest text that reads back as the same double
     * (2709244.725, not %.17g's 2709244.7250000001); a whole number
     * without JSON's ".0". */
    char num[48];
    if (isfinite(v)) {
        tool_json_format_real(num, sizeof num, v);
        size_t len = strlen(num);
        if (len > 2 && strcmp(num + len - 2, ".0") == 0)
            num[len - 2] = '\0';
        fputs(num, out);
    }
    fputc(last ? '\n' : ',', out);
}

static void csv_num(FILE *out, double v)
{
    csv_real(out, v, 0);
}

void bench_csv_header(FILE *out)
{
    fputs("run_id,point_id,seq,suite,benchmark,axes,device,mode,timer,n,min_ns,max_ns,mean_ns,"
          "median_ns,stddev_ns,rel_stddev,noise,p5_ns,p95_ns,mad_ns,outliers,throttled,wall_median_"
          "ns,"
          "bytes,items,metric_name,metric,stop_reason,stop,note,gpu_ns,batch_ns,kernel_ns,"
          "block_timeouts\n",
          out);
}

void bench_csv_row(FILE *out, const vyre_bench_point *p)
{
    const vyre_stats *s = &p->stats;
    int tty = isatty(fileno(out));
    fprintf(out, "%" PRId64 ",%" PRId64 ",%d,", p->run_id, p->id, p->seq);
    csv_field(out, p->suite, 0, tty);
    csv_field(out, p->benchmark, 0, tty);
    csv_field(out, p->axes, 0, tty);
    if (p->device >= 0)
        fprintf(out, "%d,", p->device);
    else
        fputc(',', out);
    fprintf(out, "%s,%s,%zu,", vyre_bench_mode_name(p->mode), p->gpu_timer ? "gpu" : "wall", s->n);
    csv_num(out, s->min);
    csv_num(out, s->max);
    csv_num(out, s->mean);
    csv_num(out, s->median);
    csv_num(out, s->stddev);
    /* stddev / mean under its own name; `noise` is the one figure the
     * tables show, the robust one (1.4826 MAD / median, or the rounds'). */
    csv_num(out, s->rel_stddev);
    csv_num(out, s->robust_noise);
    csv_num(out, s->p5);
    csv_num(out, s->p95);
    csv_num(out, s->mad);
    fprintf(out, "%zu,%zu,", s->n_outliers, p->n_throttled);
    csv_num(out, p->wall_median);
    csv_num(out, p->bytes > 0 ? p->bytes : NAN);
    csv_num(out, p->items);
    csv_field(out, p->metric_name, 0, tty);
    csv_num(out, p->metric_name[0] ? p->metric : NAN);
    csv_field(out, vyre_stats_stop_reason_name(p->stop_reason), 0, tty);
    csv_field(out, p->stop, 0, tty);
    csv_field(out, p->note, 0, tty);
    csv_num(out, p->gpu_timer ? s->median : NAN);
    csv_num(out, p->batch_ns > 0 ? p->batch_ns : NAN);
    csv_num(out, p->kernel_ns > 0 ? p->kernel_ns : NAN);
    fprintf(out, "%zu\n", p->n_block_timeouts);
}

static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* A duration or size as a whole number (rounded), or null when unknown. */
static json_t *int_or_null(double v)
{
    return isfinite(v) && fabs(v) < 9.2e18 ? json_integer((json_int_t)llround(v)) : json_null();
}

/* One axis value: a decimal integer, else a finite decimal number, else
 * the text ("sgemm", and "0x10" too: strtod would read it as hex). */
static json_t *axis_value(const char *v)
{
    char *end = NULL;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (*v && !*end && errno == 0)
        return json_integer((json_int_t)i);
    errno = 0;
    double d = strtod(v, &end);
    if (*v && !*end && errno == 0 && isfinite(d) && !strpbrk(v, "xX"))
        return json_real(d);
    return json_string(v);
}

json_t *bench_json_axes(const char *axes)
{
    json_t *o = json_object();
    char buf[sizeof((vyre_bench_point *)0)->axes];
    snprintf(buf, sizeof buf, "%s", axes);
    char *p = buf;
    while (*p) {
        size_t n = strcspn(p, " ");
        char *next = p + n + (p[n] != '\0');
        p[n] = '\0';
        char *eq = strchr(p, '=');
        if (eq) {
            *eq = '\0';
            json_object_set_new(o, p, axis_value(eq + 1));
        } else if (*p) {
            json_object_set_new(o, p, json_null()); /* a name without a value */
        }
        p = next;
    }
    return o;
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

json_t *bench_json_run_info(const vyre_bench_run *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(r->id));
    json_object_set_new(o, "status", json_string(vyre_bench_run_status_name(r->status)));
    json_object_set_new(o, "started_unix_ns", json_integer(r->started_ns));
    json_object_set_new(o, "finished_unix_ns",
                        r->finished_ns ? json_integer(r->finished_ns) : json_null());
    json_object_set_new(o, "point_count", json_integer((json_int_t)r->npoints));
    json_object_set_new(o, "suites", json_string(r->suites));
    json_object_set_new(o, "host", json_string(r->host));
    json_object_set_new(o, "pid", json_integer(r->pid));
    json_object_set_new(o, "gpu_name", str_or_null(r->gpu_name));
    json_object_set_new(o, "gpu_uuid", str_or_null(r->gpu_uuid));
    json_object_set_new(o, "devices", str_or_null(r->devices));
    json_object_set_new(o, "driver", str_or_null(r->driver));
    json_object_set_new(o, "cuda_version", str_or_null(r->cuda_version));
    json_object_set_new(o, "clocks", str_or_null(r->clocks));
    json_object_set_new(o, "git_rev", str_or_null(r->git_rev));
    json_object_set_new(o, "command_line", json_string(r->command_line));
    json_object_set_new(o, "vyre_version", json_string(r->vyre_version));
    json_object_set_new(o, "message", str_or_null(r->message));
    return o;
}

json_t *bench_json_point(const vyre_bench_point *p)
{
    const vyre_stats *s = &p->stats;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(p->id));
    json_object_set_new(o, "seq", json_integer(p->seq));
    json_object_set_new(o, "suite", json_string(p->suite));
    json_object_set_new(o, "benchmark", json_string(p->benchmark));
    json_object_set_new(o, "axes", bench_json_axes(p->axes));
    json_object_set_new(o, "device", p->device >= 0 ? json_integer(p->device) : json_null());
    json_object_set_new(o, "mode", json_string(vyre_bench_mode_name(p->mode)));
    json_object_set_new(o, "timer", json_string(p->gpu_timer ? "gpu" : "wall"));
    json_object_set_new(o, "n", json_integer((json_int_t)s->n));
    json_object_set_new(o, "min_ns", int_or_null(s->min));
    json_object_set_new(o, "max_ns", int_or_null(s->max));
    json_object_set_new(o, "mean_ns", int_or_null(s->mean));
    json_object_set_new(o, "median_ns", int_or_null(s->median));
    json_object_set_new(o, "stddev_ns", int_or_null(s->stddev));
    /* One noise figure, the tables' (robust: 1.4826 MAD / median, or the
     * rounds'); stddev / mean under its own name (schema_version 5). */
    json_object_set_new(o, "noise_ratio", real_or_null(s->robust_noise));
    json_object_set_new(o, "rel_stddev_ratio", real_or_null(s->rel_stddev));
    json_object_set_new(o, "p5_ns", int_or_null(s->p5));
    json_object_set_new(o, "p95_ns", int_or_null(s->p95));
    json_object_set_new(o, "mad_ns", int_or_null(s->mad));
    json_object_set_new(o, "outliers", json_integer((json_int_t)s->n_outliers));
    json_object_set_new(o, "throttled", json_integer((json_int_t)p->n_throttled));
    json_object_set_new(o, "wall_median_ns", int_or_null(p->wall_median));
    json_object_set_new(o, "bytes", p->bytes > 0 ? int_or_null(p->bytes) : json_null());
    json_object_set_new(o, "items", json_real(p->items));
    json_object_set_new(o, "metric_name", str_or_null(p->metric_name));
    json_object_set_new(o, "metric", p->metric_name[0] ? real_or_null(p->metric) : json_null());
    json_object_set_new(o, "stop_reason", json_string(vyre_stats_stop_reason_name(p->stop_reason)));
    json_object_set_new(o, "stop", json_string(p->stop));
    json_object_set_new(o, "note", str_or_null(p->note));
    /* The three views (README, "Which time to quote"); null: not measured. */
    json_object_set_new(o, "gpu_ns", p->gpu_timer ? int_or_null(s->median) : json_null());
    json_object_set_new(o, "batch_ns", p->batch_ns > 0 ? int_or_null(p->batch_ns) : json_null());
    json_object_set_new(o, "kernel_ns", p->kernel_ns > 0 ? int_or_null(p->kernel_ns) : json_null());
    json_object_set_new(o, "block_timeouts", json_integer((json_int_t)p->n_block_timeouts));
    /* An A/B run's (run --vs): "A" or "B"; null otherwise. */
    json_object_set_new(o, "variant", str_or_null(p->variant));
    return o;
}

int bench_json_run(FILE *out, vyre_results *db, const vyre_bench_run *run,
                   const vyre_bench_point *pts, size_t n, int with_samples)
{
    return bench_json_run_ab(out, db, run, pts, n, with_samples, NULL, NULL);
}

int bench_json_run_ab(FILE *out, vyre_results *db, const vyre_bench_run *run,
                      const vyre_bench_point *pts, size_t n, int with_samples, json_t *ab,
                      json_t *store)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *pj = bench_json_point(&pts[i]);
        if (with_samples) {
            vyre_error err;
            vyre_error_clear(&err);
            vyre_bench_sample *s = NULL;
            size_t ns = 0;
            if (vyre_bench_samples_get(db, pts[i].id, &s, &ns, &err)) {
                tool_report(&err);
                json_decref(pj);
                json_decref(arr);
                json_decref(ab);
                json_decref(store);
                return TOOL_EXIT_ERROR;
            }
            json_t *sa = json_array();
            for (size_t k = 0; k < ns; k++)
                json_array_append_new(
                    sa, json_pack("{s:o, s:o, s:o, s:b, s:b}", "value_ns", int_or_null(s[k].value),
                                  "wall_ns", int_or_null(s[k].wall), "sm_clock_hz",
                                  s[k].sm_clock_mhz
                                      ? json_integer((json_int_t)s[k].sm_clock_mhz * 1000000)
                                      : json_null(),
                                  "throttled", s[k].throttled, "outlier", s[k].outlier));
            vyre_free(s);
            json_object_set_new(pj, "samples", sa);
        }
        json_array_append_new(arr, pj);
    }
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(BENCH_JSON_SCHEMA_VERSION));
    json_object_set_new(o, "run", bench_json_run_info(run));
    json_object_set_new(o, "points", arr);
    if (ab)
        json_object_set_new(o, "ab", ab);
    if (store)
        json_object_set_new(o, "store", store);
    tool_json_print(out, o);
    return TOOL_EXIT_OK;
}

void bench_run_summary(FILE *out, const vyre_bench_run *r)
{
    char when[32] = "-";
    time_t t = (time_t)(r->started_ns / 1000000000);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    char host[TOOL_CLEAN_SIZE(sizeof r->host)], gpu[TOOL_CLEAN_SIZE(sizeof r->gpu_name)];
    fprintf(out, "run %" PRId64 " %s, %zu point%s, started %s on %s", r->id,
            vyre_bench_run_status_name(r->status), r->npoints, r->npoints == 1 ? "" : "s", when,
            tool_clean(r->host, host, sizeof host));
    if (r->gpu_name[0])
        fprintf(out, ", %s", tool_clean(r->gpu_name, gpu, sizeof gpu));
    fputc('\n', out);
}

int bench_csv_json_conflict(const char *sub)
{
    return tool_usage_error(sub, "give one of them: --csv for rows, --json for one document",
                            "--csv and --json cannot be combined");
}
