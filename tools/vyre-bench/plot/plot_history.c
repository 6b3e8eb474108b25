/*
 * plot_history.c - `vyre-bench plot --history BENCHMARK`: one benchmark's
 * median over time across the runs of a (shared) results store, one line
 * per GPU model, so that a slow creep on one model shows beside the
 * others (issue 27). The rows are vyre_results_history's (oldest first);
 * GPU names are other machines' text: quoted for gnuplot by plot_quote and
 * drawn noenhanced.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

/* The chart's data: the rows and the line each belongs to. */
typedef struct history_ctx {
    const plot_history_opts *o;
    const vyre_results_history_row *rows;
    size_t n;
    int *line;                                                 /* per row: its line, -1 left out */
    const vyre_results_history_row *first[PLOT_HISTORY_LINES]; /* a row of each line */
    size_t nlines;
    int by_axes; /* the points have several axes: a line per GPU model and axes */
    double scale;
    const char *unit;
    int64_t t0, t1; /* the first and last start drawn, Unix ns */
} history_ctx;

static int same_line(const history_ctx *h, const vyre_results_history_row *a,
                     const vyre_results_history_row *b)
{
    return strcmp(a->gpu_name, b->gpu_name) == 0 && (!h->by_axes || strcmp(a->axes, b->axes) == 0);
}

/* Assigns every row with a finite median its line; counts the rest. */
static int assign_lines(history_ctx *h, plot_result *res, vyre_error *err)
{
    for (size_t i = 1; i < h->n && !h->by_axes; i++)
        h->by_axes = strcmp(h->rows[i].axes, h->rows[0].axes) != 0;
    double top = 0;
    int64_t counted = -1; /* the rows of a run are adjacent (oldest first) */
    for (size_t i = 0; i < h->n; i++) {
        const vyre_results_history_row *r = &h->rows[i];
        h->line[i] = -1;
        if (!isfinite(r->median_ns) || r->median_ns < 0) {
            res->skipped++;
            continue;
        }
        size_t k = 0;
        while (k < h->nlines && !same_line(h, h->first[k], r))
            k++;
        if (k == PLOT_HISTORY_LINES)
            return tool_set_error(err, VYRE_EINVAL,
                                  "narrow it with --axes (one point of each run) or --filter "
                                  "(e.g. 'gpu=H200')",
                                  "the history of '%s' has more than %d lines (GPU models%s)",
                                  h->o->benchmark, PLOT_HISTORY_LINES, h->by_axes ? " x axes" : "");
        if (k == h->nlines)
            h->first[h->nlines++] = r;
        h->line[i] = (int)k;
        h->t0 = res->points && h->t0 < r->started_ns ? h->t0 : r->started_ns;
        h->t1 = res->points && h->t1 > r->started_ns ? h->t1 : r->started_ns;
        top = r->median_ns > top ? r->median_ns : top;
        res->points++;
        if (r->run_id != counted)
            res->runs++;
        counted = r->run_id;
    }
    if (!res->points)
        return tool_set_error(err, VYRE_EINVAL, "the runs stored no median for it",
                              "no point of '%s' has a finite median to plot", h->o->benchmark);
    h->scale = top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : top >= 1e3 ? 1e3 : 1;
    h->unit = top >= 1e9 ? "s" : top >= 1e6 ? "ms" : top >= 1e3 ? "us" : "ns";
    res->lines = h->nlines;
    return 0;
}

/* Line k's data, "seconds median" per row, oldest first. */
static int write_line_data(const history_ctx *h, size_t k, const char *path, vyre_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write '%s'", path);
    for (size_t i = 0; i < h->n; i++)
        if (h->line[i] == (int)k)
            fprintf(f, "%.3f %.9g\n", (double)h->rows[i].started_ns / 1e9,
                    h->rows[i].median_ns / h->scale);
    if (fclose(f))
        return tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write '%s'", path);
    return 0;
}

static int history_script(FILE *f, const char *dir, void *ctx, vyre_error *err)
{
    const history_ctx *h = ctx;
    fputs("set termoption noenhanced\nset grid\nset key outside right top vertical noenhanced "
          "nobox\nset xdata time\nset timefmt '%s'\nset format x \"%Y-%m-%d\\n%H:%M\"\n"
          "set xlabel 'run started (UTC)'\nset yrange [0:*]\n",
          f);
    fprintf(f, "set ylabel 'median time (%s)'\n", h->unit);
    /* About six dated tics: gnuplot's own choice overlaps two-line dates. */
    double span = (double)(h->t1 - h->t0) / 1e9;
    if (span >= 6)
        fprintf(f, "set xtics %.0f\n", ceil(span / 6));
    char title[1024];
    snprintf(title, sizeof title, "%s%s%s: median over time, one line per GPU model",
             h->o->benchmark, h->o->axes && *h->o->axes ? " " : "", h->o->axes ? h->o->axes : "");
    fputs("set title ", f);
    plot_quote(f, title);
    fputs("\nplot ", f);
    for (size_t k = 0; k < h->nlines; k++) {
        char path[1100], name[600];
        snprintf(path, sizeof path, "%s/h%zu.dat", dir, k);
        int rc = write_line_data(h, k, path, err);
        if (rc)
            return rc;
        const vyre_results_history_row *r = h->first[k];
        snprintf(name, sizeof name, "%s%s%s", r->gpu_name[0] ? r->gpu_name : "no GPU",
                 h->by_axes ? " " : "", h->by_axes ? (r->axes[0] ? r->axes : "-") : "");
        fprintf(f, "%s'%s' using 1:2 with linespoints pt 7 ps 0.6 title ", k ? ", \\\n  " : "",
                path);
        plot_quote(f, name);
    }
    fputc('\n', f);
    return 0;
}

int plot_history(const plot_history_opts *o, plot_result *res, vyre_error *err)
{
    plot_result ignored;
    res = res ? res : &ignored;
    memset(res, 0, sizeof *res);
    if (!o || !o->db || !o->benchmark || !o->output)
        return tool_set_error(err, VYRE_EINVAL, NULL, "plot_history: bad arguments");
    plot_format fmt = PLOT_SVG;
    int rc = plot_format_of(o->output, &fmt, err);
    if (!rc && fmt == PLOT_HTML)
        rc = tool_set_error(err, VYRE_EINVAL, "write -o FILE.svg or -o FILE.png",
                            "a history is drawn as .svg or .png, not '%s'", o->output);
    char gnuplot[4096];
    if (!rc && o->gnuplot)
        snprintf(gnuplot, sizeof gnuplot, "%s", o->gnuplot);
    else if (!rc)
        rc = plot_find_gnuplot(gnuplot, sizeof gnuplot, err);
    if (rc)
        return rc;
    history_ctx h;
    memset(&h, 0, sizeof h);
    h.o = o;
    vyre_results_history_row *rows = NULL;
    rc = vyre_results_history(o->db, o->benchmark, o->axes, o->filter, &rows, &h.n, err);
    if (!rc && !h.n)
        rc = tool_set_error(err, VYRE_ENOENT,
                            "check the name with 'vyre-bench show last' and the --axes and "
                            "--filter given",
                            "no done run has a point of '%s'%s", o->benchmark,
                            o->axes || o->filter ? " that matches" : "");
    h.rows = rows;
    h.line = rc ? NULL : calloc(h.n, sizeof *h.line);
    if (!rc && !h.line)
        rc = tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
    if (!rc)
        rc = assign_lines(&h, res, err);
    if (!rc)
        rc = plot_draw(gnuplot, o->tmp_dir, fmt, o->output, history_script, &h, err);
    if (!rc)
        res->ncharts = 1;
    free(h.line);
    vyre_free(rows);
    return rc;
}
