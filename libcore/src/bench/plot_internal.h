/*
 * plot_internal.h - what the plot modules share (vyre/plot.h): the runs'
 * loaded points (plot.c), the charts chosen from them and their gnuplot
 * script and data (plot_charts.c), the HTML page (plot_html.c). Not public.
 */
#ifndef VYRE_PLOT_INTERNAL_H
#define VYRE_PLOT_INTERNAL_H

#include <stdio.h>

#include "vyre/plot.h"

/* One run and its points, read from the database. */
typedef struct vyre__plot_run {
    vyre_bench_run run;
    vyre_bench_point *pts;
    size_t npts;
} vyre__plot_run;

typedef struct vyre__plot_input {
    vyre_results *db;
    vyre__plot_run *runs;
    size_t nruns;
    vyre_bench_cmp_row *cmp; /* two runs: the comparison, else NULL */
    size_t ncmp;
    double alpha;   /* of the comparison's interval */
    size_t skipped; /* points left out: median NULL or infinite */
} vyre__plot_input;

typedef enum vyre__chart_kind {
    VYRE__CHART_COMPARE = 0,
    VYRE__CHART_SWEEP = 1,
    VYRE__CHART_DIST = 2,
} vyre__chart_kind;

/* One chart: which points it draws. */
typedef struct vyre__chart {
    vyre__chart_kind kind;
    const vyre_bench_point *first; /* a point of its group (benchmark, device, mode) */
    char axis[64];                 /* sweep: the axis along x */
    char axes[256];                /* dist: the point's axes */
    char title[512];
    int width, height; /* pixels, as drawn alone (HTML) */
} vyre__chart;

/* Chooses the charts of in (a compare chart first for two runs). *out is
 * malloc'ed (the caller frees it). */
int vyre__plot_charts(const vyre__plot_input *in, vyre__chart **out, size_t *n, vyre_error *err);

/*
 * Writes the commands that draw chart c into script, its data into files
 * under dir (names starting "d<index>"). Returns 0 or an error (a data
 * file that cannot be written, the samples that cannot be read).
 */
int vyre__plot_chart_script(FILE *script, const vyre__plot_input *in, const vyre__chart *c,
                            size_t index, const char *dir, vyre_error *err);

/* Writes s into f as a gnuplot single-quoted string ('' for a quote;
 * control characters as blanks). */
void vyre__plot_quote(FILE *f, const char *s);

/*
 * Writes the HTML page to out: the runs' facts, then each chart's SVG
 * (the files svg_paths[0..n-1], their XML prologue dropped) inline.
 */
int vyre__plot_html(FILE *out, const vyre__plot_input *in, const vyre__chart *charts,
                    char *const *svg_paths, size_t n, vyre_error *err);

#endif /* VYRE_PLOT_INTERNAL_H */
