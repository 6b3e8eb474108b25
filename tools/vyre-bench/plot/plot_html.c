/*
 * plot_html.c - the HTML report of plot_runs: one self-contained page
 * (no script, no link, no font to fetch) with each run's facts (GPU,
 * driver, CUDA, git revision, command, date, host) and every chart as
 * inline SVG. Text from the database is escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plot_internal.h"

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void fact(FILE *f, const char *name, const char *value)
{
    fprintf(f, "<tr><th>%s</th><td>", name);
    esc(f, value && *value ? value : "-");
    fputs("</td></tr>\n", f);
}

static void when(int64_t ns, char *buf, size_t size)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (ns > 0 && gmtime_r(&t, &tm))
        strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
    else
        snprintf(buf, size, "-");
}

static void run_facts(FILE *f, const vyre_bench_run *r)
{
    char started[64], finished[64], pts[32];
    when(r->started_ns, started, sizeof started);
    when(r->finished_ns, finished, sizeof finished);
    snprintf(pts, sizeof pts, "%zu", r->npoints);
    fprintf(f, "<h2>run %lld</h2>\n<table class=\"facts\">\n", (long long)r->id);
    fact(f, "status", vyre_bench_run_status_name(r->status));
    fact(f, "points", pts);
    fact(f, "started", started);
    fact(f, "finished", finished);
    fact(f, "command", r->command_line);
    fact(f, "suites", r->suites);
    fact(f, "gpu", r->gpu_name);
    fact(f, "devices", r->devices);
    fact(f, "driver", r->driver);
    fact(f, "cuda", r->cuda_version);
    fact(f, "clocks", r->clocks);
    fact(f, "git", r->git_rev);
    fact(f, "host", r->host);
    fact(f, "vyre", r->vyre_version);
    if (r->message[0])
        fact(f, "message", r->message);
    fputs("</table>\n", f);
}

/* The largest SVG inlined: far above any chart gnuplot draws here. */
#define PLOT_SVG_MAX ((size_t)1 << 30)

/* The whole file at path into *out (malloc'ed, NUL-terminated; the
 * caller frees it) and *len. 0, else an errno value (EFBIG above
 * PLOT_SVG_MAX). */
static int read_svg(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    int e = buf ? 0 : ENOMEM;
    while (!e) {
        if (n == cap) {
            char *bigger = cap >= PLOT_SVG_MAX ? NULL : realloc(buf, 2 * cap + 1);
            if (!bigger) {
                e = cap >= PLOT_SVG_MAX ? EFBIG : ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            e = ferror(f) ? EIO : -1;
    }
    fclose(f);
    if (e != -1) {
        free(buf);
        return e;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Copies the SVG at path from its <svg element on. */
static int inline_svg(FILE *out, const char *path, const char *title, vyre_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int e = read_svg(path, &buf, &len);
    if (e == ENOMEM || e == EFBIG)
        return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
    if (e == EIO)
        return tool_set_error(err, VYRE_EIO, NULL, "plot: cannot read '%s': %s", path, strerror(e));
    if (e)
        return tool_set_error(err, VYRE_EIO, NULL, "plot: gnuplot wrote no '%s': %s", path,
                              strerror(e));
    const char *start = strstr(buf, "<svg");
    if (!start) {
        free(buf);
        return tool_set_error(err, VYRE_EIO, NULL, "plot: '%s' is not an SVG", path);
    }
    /* gnuplot titles every SVG "Gnuplot": the chart's own title reads
     * better as the tooltip and to a screen reader. */
    const char *gt = strstr(start, "<title>Gnuplot</title>");
    if (gt && title) {
        fwrite(start, 1, (size_t)(gt - start), out);
        fputs("<title>", out);
        esc(out, title);
        fputs("</title>", out);
        start = gt + strlen("<title>Gnuplot</title>");
    }
    fwrite(start, 1, len - (size_t)(start - buf), out);
    free(buf);
    return 0;
}

int plot_html_write(FILE *out, const plot_input *in, const plot_chart *charts,
                    char *const *svg_paths, size_t n, vyre_error *err)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
    fputs("vyre-bench", out);
    for (size_t r = 0; r < in->nruns; r++)
        fprintf(out, "%s run %lld", r ? "," : "", (long long)in->runs[r].run.id);
    fputs("</title>\n<style>\n"
          "body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}\n"
          "table.facts{border-collapse:collapse;margin-bottom:1em}\n"
          "table.facts th{text-align:left;padding:2px 1em 2px 0;color:#555;font-weight:normal;"
          "vertical-align:top}\n"
          "table.facts td{padding:2px 0;font-family:monospace}\n"
          "figure{margin:1.5em 0}\nfigure svg{max-width:100%;height:auto}\n"
          "figcaption{color:#555;font-size:90%}\n"
          "</style>\n</head>\n<body>\n<h1>vyre-bench",
          out);
    for (size_t r = 0; r < in->nruns; r++)
        fprintf(out, "%s run %lld", r ? "," : "", (long long)in->runs[r].run.id);
    fputs("</h1>\n", out);
    for (size_t r = 0; r < in->nruns; r++)
        run_facts(out, &in->runs[r].run);
    fprintf(out, "<h2>charts (%zu)</h2>\n", n);
    for (size_t i = 0; i < n; i++) {
        fputs("<figure>\n", out);
        int rc = inline_svg(out, svg_paths[i], charts[i].title, err);
        if (rc)
            return rc;
        fputs("<figcaption>", out);
        esc(out, charts[i].title);
        fputs("</figcaption>\n</figure>\n", out);
    }
    fputs("</body>\n</html>\n", out);
    return ferror(out) ? tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write the page") : 0;
}
