/*
 * plot_internal.h - what the plot modules share (plot.h): the runs'
 * loaded points (plot.c), the charts chosen from them and their gnuplot
 * script and data (plot_charts.c) and the HTML page (plot_html.c). Their
 * errors are filled by tools/common's tool_set_error, errno values mapped
 * by libcore's vyre_errno_code. Only plot/ includes it.
 */
#ifndef VYRE_BENCH_PLOT_INTERNAL_H
#define VYRE_BENCH_PLOT_INTERNAL_H

#include <stdio.h>

#include "plot.h"
#include "tool_util.h" /* tool_set_error: the plot modules' errors */

/* One run and its points, read from the database. */
typedef struct plot_run_points {
    vyre_bench_run run;
    vyre_bench_point *pts;
    size_t npts;
} plot_run_points;

typedef struct plot_input {
    vyre_results *db;
    plot_run_points *runs;
    size_t nruns;
    vyre_bench_cmp_row *cmp; /* two runs: the comparison, else NULL */
    size_t ncmp;
    double alpha;   /* of the comparison's interval */
    size_t skipped; /* points left out: median NULL or infinite */
} plot_input;

typedef enum plot_chart_kind {
    PLOT_CHART_COMPARE = 0,
    PLOT_CHART_SWEEP = 1,
    PLOT_CHART_DIST = 2,
} plot_chart_kind;

/* One chart: which points it draws. */
typedef struct plot_chart {
    plot_chart_kind kind;
    const vyre_bench_point *first; /* a point of its group (benchmark, device, mode) */
    char axis[64];                 /* sweep: the axis along x */
    char axes[256];                /* dist: the point's axes */
    char title[512];
    int width, height; /* pixels, as drawn alone (HTML) */
} plot_chart;

/* Chooses the charts of in (a compare chart first for two runs). *out is
 * malloc'ed (the caller frees it). */
int plot_charts_choose(const plot_input *in, plot_chart **out, size_t *n, vyre_error *err);

/*
 * Writes the commands that draw chart c into script, its data into files
 * under dir (names starting "d<index>"). Returns 0 or an error (a data
 * file that cannot be written, the samples that cannot be read).
 */
int plot_chart_script(FILE *script, const plot_input *in, const plot_chart *c, size_t index,
                      const char *dir, vyre_error *err);

/* Writes s into f as a gnuplot single-quoted string ('' for a quote;
 * control characters as blanks). */
void plot_quote(FILE *f, const char *s);

/*
 * Writes the HTML page to out: the runs' facts, then each chart's SVG
 * (the files svg_paths[0..n-1], their XML prologue dropped) inline.
 */
int plot_html_write(FILE *out, const plot_input *in, const plot_chart *charts,
                    char *const *svg_paths, size_t n, vyre_error *err);

/* Writes the commands of one chart (terminal and output already set) into
 * script; its data files go under dir. */
typedef int (*plot_script_fn)(FILE *script, const char *dir, void *ctx, vyre_error *err);

/*
 * One chart drawn by gnuplot into output (.svg or .png, fmt; 900 x 500):
 * a private temp directory under tmp_dir (NULL: $TMPDIR, else /tmp), the
 * script from script(ctx), gnuplot run on it, the picture copied to
 * output through a temp name, the directory removed. 0 or an error.
 */
int plot_draw(const char *gnuplot, const char *tmp_dir, plot_format fmt, const char *output,
              plot_script_fn script, void *ctx, vyre_error *err);

#endif /* VYRE_BENCH_PLOT_INTERNAL_H */
