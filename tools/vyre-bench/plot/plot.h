/*
 * plot.h - vyre-bench's charts of stored benchmark runs, drawn by gnuplot
 * (`vyre-bench plot`). Owned by the tool, not libcore: it reads the runs
 * through libvyrecore's public results API (vyre/bench.h, vyre/results.h)
 * and nothing else of the library.
 *
 * What is drawn, from the runs' points in the results database:
 * - a sweep (points of one benchmark, device and mode that differ in a
 *   numeric axis): the median against that axis, one line per value of the
 *   other axes (and per run), with the p5-p95 band; the axis is
 *   logarithmic when its values are geometric (all above 0, spanning 8x
 *   or more), the time axis when the band spans 30x or more;
 * - a point that is no sweep's: a histogram of its samples, median dashed;
 * - two runs: first a chart of each matched point's median ratio B/A with
 *   its bootstrap interval (vyre_bench_compare_runs), coloured by verdict.
 *
 * gnuplot (the Debian package gnuplot-nox) is run as a child process: no
 * shell, the script and the data in a private temp directory that is
 * removed afterwards. Only plotting needs it. Nothing here prints: errors
 * go into the caller's vyre_error, as libcore's do.
 */
#ifndef VYRE_BENCH_PLOT_H
#define VYRE_BENCH_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/bench.h"
#include "vyre/error.h"
#include "vyre/results.h"
#include "vyre/stats.h"

typedef enum plot_format {
    PLOT_SVG = 0,  /* every chart in one SVG (a grid of charts) */
    PLOT_PNG = 1,  /* the same as a PNG */
    PLOT_HTML = 2, /* one self-contained page: the runs' facts, every chart inline as SVG */
} plot_format;

/* The format named by the extension of path: .svg, .png, .html or .htm
 * (any case). VYRE_EINVAL for anything else, with a hint naming them. */
int plot_format_of(const char *path, plot_format *out, vyre_error *err);

/* The first executable "gnuplot" in the directories of $PATH, into buf.
 * VYRE_ENOENT when there is none (hint: apt-get install gnuplot-nox),
 * VYRE_ETOOBIG when the path does not fit. */
int plot_find_gnuplot(char *buf, size_t size, vyre_error *err);

typedef struct plot_opts {
    vyre_results *db;
    const int64_t *runs; /* run ids, at least one; two: the first is the baseline */
    size_t nruns;
    const char *output;                     /* the file to write (its format from the extension) */
    const char *gnuplot;                    /* NULL: plot_find_gnuplot */
    const char *tmp_dir;                    /* NULL: $TMPDIR, else /tmp */
    const vyre_stats_compare_opts *compare; /* two runs; NULL: defaults */
} plot_opts;

typedef struct plot_result {
    size_t ncharts; /* charts drawn */
    size_t skipped; /* points left out: their median is unknown (NULL) or infinite */
    size_t lines;   /* plot_history: lines drawn (GPU models) */
    size_t points;  /* plot_history: points drawn */
    size_t runs;    /* plot_history: the runs they come from */
} plot_result;

/*
 * Draws the charts of o->runs into o->output, replacing it (written beside
 * it under a temp name, then renamed). A point whose median is NULL or
 * infinite in the database is left out and counted in res->skipped.
 * Returns 0; VYRE_EINVAL (no run, a bad extension, a run with no points
 * or none with a finite median); VYRE_ENOENT (no gnuplot, no such
 * run); VYRE_EIO (gnuplot failed: the message quotes its first error
 * line); VYRE_EDB, VYRE_ENOMEM, and file errors of the output.
 */
int plot_runs(const plot_opts *o, plot_result *res, vyre_error *err);

/* The most lines of a history chart. */
#define PLOT_HISTORY_LINES 24

typedef struct plot_history_opts {
    vyre_results *db;
    const char *benchmark; /* e.g. launch.stream */
    const char *axes;      /* NULL: every point's; else only these axes */
    const char *filter;    /* NULL, or KEY=VALUE words (vyre_results_history) */
    const char *output;    /* .svg or .png */
    const char *gnuplot;   /* NULL: plot_find_gnuplot */
    const char *tmp_dir;   /* NULL: $TMPDIR, else /tmp */
} plot_history_opts;

/*
 * Draws a benchmark's history (vyre_results_history: every matching done
 * run's points, every machine's) into o->output: the median against the
 * run's start time (UTC), one line per GPU model (a run without one:
 * "no GPU"), and per axes too when the points have several (narrow with
 * o->axes). Returns 0; VYRE_EINVAL (.html, a bad filter, no point with a
 * finite median, more than PLOT_HISTORY_LINES lines); VYRE_ENOENT (no
 * point matches, no gnuplot); the store's and gnuplot's errors.
 */
int plot_history(const plot_history_opts *o, plot_result *res, vyre_error *err);

#endif /* VYRE_BENCH_PLOT_H */
