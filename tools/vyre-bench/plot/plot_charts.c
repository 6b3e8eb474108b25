/*
 * plot_charts.c - which charts a set of runs gets, and each chart as
 * gnuplot commands and data files (vyre/plot.h says what is drawn).
 *
 * Every chart starts by undoing what any chart sets, so charts can follow
 * one another in one script, in one multiplot or each to its own output.
 * Strings from the database reach the script only through
 * plot_quote (single-quoted, quotes doubled, control characters
 * blanked), and all text is drawn noenhanced: "of_d2d" is not a subscript.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

#define MAX_SERIES 12

static const char *const k_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                       "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
#define NCOLORS (sizeof k_colors / sizeof k_colors[0])

void plot_quote(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '\'')
            fputs("''", f);
        else
            fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, f);
    }
    fputc('\'', f);
}

/* ---- axes text ("N=1024 BLOCK=128") ----------------------------------------- */

/* The value of axis `name` in axes into buf; 0 when the point has none. */
static int axis_get(const char *axes, const char *name, char *buf, size_t size)
{
    size_t nl = strlen(name);
    for (const char *p = axes; *p;) {
        size_t tl = strcspn(p, " ");
        if (tl > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t vl = tl - nl - 1;
            if (vl >= size)
                vl = size - 1;
            memcpy(buf, p + nl + 1, vl);
            buf[vl] = '\0';
            return 1;
        }
        p += tl;
        while (*p == ' ')
            p++;
    }
    return 0;
}

/* axes without the token of axis `name`. */
static void axes_without(const char *axes, const char *name, char *buf, size_t size)
{
    size_t nl = strlen(name), len = 0;
    buf[0] = '\0';
    for (const char *p = axes; *p;) {
        size_t tl = strcspn(p, " ");
        if (!(tl > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') && len + tl + 2 < size) {
            if (len)
                buf[len++] = ' ';
            memcpy(buf + len, p, tl);
            len += tl;
            buf[len] = '\0';
        }
        p += tl;
        while (*p == ' ')
            p++;
    }
}

static int parse_num(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || strpbrk(s, "xX"))
        return 0;
    *out = v;
    return 1;
}

static int same_group(const vyre_bench_point *a, const vyre_bench_point *b)
{
    return strcmp(a->suite, b->suite) == 0 && strcmp(a->benchmark, b->benchmark) == 0 &&
           a->device == b->device && a->mode == b->mode;
}

/* ---- choosing the charts ---------------------------------------------------- */

typedef struct chart_list {
    plot_chart *v;
    size_t n, cap;
} chart_list;

static plot_chart *chart_add(chart_list *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        plot_chart *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        l->v = nv;
        l->cap = cap;
    }
    plot_chart *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static void group_name(const vyre_bench_point *p, char *buf, size_t size)
{
    if (p->device >= 0)
        snprintf(buf, size, "%s (device %d, %s)", p->benchmark, p->device,
                 vyre_bench_mode_name(p->mode));
    else
        snprintf(buf, size, "%s (%s)", p->benchmark, vyre_bench_mode_name(p->mode));
}

/* Has a point before (r, i) in the group of p already been seen? */
static int group_seen(const plot_input *in, size_t r, size_t i)
{
    const vyre_bench_point *p = &in->runs[r].pts[i];
    for (size_t rr = 0; rr <= r; rr++)
        for (size_t k = 0; k < (rr == r ? i : in->runs[rr].npts); k++)
            if (same_group(&in->runs[rr].pts[k], p))
                return 1;
    return 0;
}

/* The distinct numeric values of axis `name` in the group of g. */
static size_t distinct_values(const plot_input *in, const vyre_bench_point *g, const char *name)
{
    double seen[64];
    size_t n = 0;
    for (size_t r = 0; r < in->nruns; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            const vyre_bench_point *p = &in->runs[r].pts[i];
            char val[64];
            double v;
            if (!same_group(p, g) || !axis_get(p->axes, name, val, sizeof val) ||
                !parse_num(val, &v))
                continue;
            size_t k = 0;
            while (k < n && seen[k] != v)
                k++;
            if (k == n && n < 64)
                seen[n++] = v;
        }
    return n;
}

static int add_group_charts(const plot_input *in, const vyre_bench_point *g, chart_list *l)
{
    char gname[200];
    group_name(g, gname, sizeof gname);
    size_t before = l->n;
    /* Every axis name any point of the group has, in first-seen order. */
    char names[8][64];
    size_t nnames = 0;
    for (size_t r = 0; r < in->nruns; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            const vyre_bench_point *p = &in->runs[r].pts[i];
            if (!same_group(p, g))
                continue;
            for (const char *s = p->axes; *s;) {
                size_t tl = strcspn(s, " ");
                size_t nl = strcspn(s, "=");
                if (nl < tl && nl < 64) {
                    size_t k = 0;
                    while (k < nnames && !(strlen(names[k]) == nl && !strncmp(names[k], s, nl)))
                        k++;
                    if (k == nnames && nnames < 8) {
                        memcpy(names[nnames], s, nl);
                        names[nnames++][nl] = '\0';
                    }
                }
                s += tl;
                while (*s == ' ')
                    s++;
            }
        }
    for (size_t k = 0; k < nnames; k++) {
        if (distinct_values(in, g, names[k]) < 2)
            continue;
        plot_chart *c = chart_add(l);
        if (!c)
            return VYRE_ENOMEM;
        c->kind = PLOT_CHART_SWEEP;
        c->first = g;
        snprintf(c->axis, sizeof c->axis, "%s", names[k]);
        snprintf(c->title, sizeof c->title, "%s: median against %s, band p5-p95", gname, names[k]);
        c->width = 760;
        c->height = 440;
    }
    if (l->n > before)
        return 0;
    /* No sweep: each point's sample distribution. */
    for (size_t r = 0; r < in->nruns; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            const vyre_bench_point *p = &in->runs[r].pts[i];
            if (!same_group(p, g))
                continue;
            int dup = 0;
            for (size_t k = before; k < l->n && !dup; k++)
                dup = strcmp(l->v[k].axes, p->axes) == 0;
            if (dup)
                continue;
            plot_chart *c = chart_add(l);
            if (!c)
                return VYRE_ENOMEM;
            c->kind = PLOT_CHART_DIST;
            c->first = g;
            snprintf(c->axes, sizeof c->axes, "%s", p->axes);
            snprintf(c->title, sizeof c->title, "%s%s%s: samples", gname, p->axes[0] ? " " : "",
                     p->axes);
            c->width = 760;
            c->height = 400;
        }
    return 0;
}

int plot_charts_choose(const plot_input *in, plot_chart **out, size_t *n, vyre_error *err)
{
    chart_list l = {NULL, 0, 0};
    *out = NULL;
    *n = 0;
    if (in->cmp) {
        plot_chart *c = chart_add(&l);
        if (!c)
            return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
        c->kind = PLOT_CHART_COMPARE;
        size_t rows = 0;
        for (size_t i = 0; i < in->ncmp; i++)
            rows += in->cmp[i].has_a && in->cmp[i].has_b;
        snprintf(c->title, sizeof c->title,
                 "run %lld against run %lld (baseline): median ratio with its %g%% interval",
                 (long long)in->runs[1].run.id, (long long)in->runs[0].run.id,
                 (1 - in->alpha) * 100);
        c->width = 900;
        c->height = 150 + 26 * (int)(rows ? rows : 1);
    }
    for (size_t r = 0; r < in->nruns; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            if (group_seen(in, r, i))
                continue;
            if (add_group_charts(in, &in->runs[r].pts[i], &l)) {
                free(l.v);
                return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
            }
        }
    *out = l.v;
    *n = l.n;
    return 0;
}

/* ---- drawing ---------------------------------------------------------------- */

typedef struct time_unit {
    const char *name;
    double scale;
} time_unit;

/* The unit in which a typical value v (ns) reads between 1 and 1000. */
static time_unit unit_for(double v)
{
    if (v >= 1e9)
        return (time_unit){"s", 1e9};
    if (v >= 1e6)
        return (time_unit){"ms", 1e6};
    if (v >= 1e3)
        return (time_unit){"us", 1e3};
    return (time_unit){"ns", 1};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Undoes every setting a chart may make. */
static void chart_prologue(FILE *f, const plot_chart *c)
{
    fputs("unset logscale\nunset arrow\nunset label\nunset object\nunset title\n"
          "set xtics autofreq\nset ytics autofreq\nset xrange [*:*]\nset yrange [*:*] noreverse\n"
          "set format x '%g'\nset format y '%g'\nset key default\n"
          "set key outside right top vertical noenhanced nobox\n"
          "set grid back lc rgb '#e0e0e0'\nset border lc rgb '#444444'\n"
          "set datafile separator whitespace\nset style fill solid 1 noborder\n"
          "set tics noenhanced\nset xlabel noenhanced\nset ylabel noenhanced\n"
          "set xtics nomirror\nset ytics nomirror\nset border 3\n",
          f);
    fputs("set title noenhanced ", f);
    plot_quote(f, c->title);
    fputc('\n', f);
}

/* A run cut short (Ctrl-C, a dead process) plots only the points it
 * finished: each chart says so in red under its title, and multi-run
 * series names carry "(interrupted)". */
static void mark_interrupted(FILE *f, const plot_input *in)
{
    char text[300];
    size_t len = 0;
    for (size_t r = 0; r < in->nruns; r++) {
        if (in->runs[r].run.status != VYRE_RUN_INTERRUPTED || len >= sizeof text)
            continue;
        int k = snprintf(text + len, sizeof text - len, "%s%lld", len ? ", " : "run ",
                         (long long)in->runs[r].run.id);
        len = k < 0 ? len : len + (size_t)k >= sizeof text ? sizeof text - 1 : len + (size_t)k;
    }
    if (len)
        fprintf(f,
                "set label '%s interrupted: its unfinished points are missing' at graph 0.01, "
                "graph 0.97 left tc rgb '#d62728' front\n",
                text);
}

static const char *interrupted_tag(const plot_run_points *r)
{
    return r->run.status == VYRE_RUN_INTERRUPTED ? " (interrupted)" : "";
}

static FILE *data_file(const char *dir, size_t index, size_t part, char *path, size_t size,
                       vyre_error *err)
{
    snprintf(path, size, "%s/d%zu_%zu.dat", dir, index, part);
    FILE *f = fopen(path, "w");
    if (!f)
        tool_set_error(err, vyre_errno_code(errno), NULL, "plot: cannot write '%s': %s", path,
                       strerror(errno));
    return f;
}

static int close_data(FILE *f, const char *path, vyre_error *err)
{
    int bad = ferror(f);
    if (fclose(f) || bad)
        return tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write '%s'", path);
    return 0;
}

/* A tic label for an axis value: 4K, 64K, 1M for powers of two from 1024,
 * else the number. */
static void tic_label(double v, char *buf, size_t size)
{
    double l2 = log2(v);
    if (v >= 1024 && l2 == floor(l2)) {
        static const char *const suf[] = {"K", "M", "G", "T"};
        int e = (int)l2 / 10;
        if (e > 4)
            e = 4;
        snprintf(buf, size, "%g%s", v / pow(1024, e), suf[e - 1]);
    } else {
        snprintf(buf, size, "%g", v);
    }
}

typedef struct xy {
    double x, med, lo, hi;
} xy;

static int cmp_xy(const void *a, const void *b)
{
    return cmp_double(&((const xy *)a)->x, &((const xy *)b)->x);
}

typedef struct series {
    char label[300];
    xy *v;
    size_t n;
} series;

/* Tics at the measured values xs[0..n-1] (every k-th when there are many)
 * and an x range with some room around [xlo, xhi]. Sorts xs. */
static void x_tics(FILE *f, double *xs, size_t n, double xlo, double xhi)
{
    if (!n)
        return;
    qsort(xs, n, sizeof *xs, cmp_double);
    size_t step = (n + 9) / 10;
    fputs("set xtics (", f);
    for (size_t k = 0; k < n; k += step) {
        char lab[32];
        tic_label(xs[k], lab, sizeof lab);
        fprintf(f, "%s'%s' %.17g", k ? ", " : "", lab, xs[k]);
    }
    fputs(")\n", f);
    if (xlo < xhi && !(xlo > 0 && xhi / xlo >= 8)) {
        double pad = (xhi - xlo) * 0.04;
        fprintf(f, "set xrange [%.17g:%.17g]\n", xlo - pad, xhi + pad);
    } else if (xlo > 0 && xlo < xhi) {
        fprintf(f, "set xrange [%.17g:%.17g]\n", xlo / 1.15, xhi * 1.15);
    }
}

static int sweep_script(FILE *f, const plot_input *in, const plot_chart *c, size_t index,
                        const char *dir, vyre_error *err)
{
    series ss[MAX_SERIES];
    size_t ns = 0;
    size_t total = 0;
    for (size_t r = 0; r < in->nruns; r++)
        total += in->runs[r].npts;
    double *meds = malloc((total ? total : 1) * sizeof *meds);
    double *xs = malloc((total ? total : 1) * sizeof *xs);
    if (!meds || !xs) {
        free(meds);
        free(xs);
        return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
    }
    size_t nmeds = 0, nxs = 0;
    int rc = 0;
    double ylo = INFINITY, yhi = 0, xlo = INFINITY, xhi = -INFINITY;
    for (size_t r = 0; r < in->nruns && !rc; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            const vyre_bench_point *p = &in->runs[r].pts[i];
            char val[64], rest[256], label[300];
            double x;
            if (!same_group(p, c->first) || !axis_get(p->axes, c->axis, val, sizeof val) ||
                !parse_num(val, &x) || !isfinite(p->stats.median))
                continue;
            axes_without(p->axes, c->axis, rest, sizeof rest);
            if (in->nruns > 1)
                snprintf(label, sizeof label, "run %lld%s%s%s", (long long)in->runs[r].run.id,
                         interrupted_tag(&in->runs[r]), rest[0] ? " " : "", rest);
            else
                snprintf(label, sizeof label, "%s", rest[0] ? rest : "median");
            size_t s = 0;
            while (s < ns && strcmp(ss[s].label, label) != 0)
                s++;
            if (s == ns) {
                if (ns == MAX_SERIES)
                    continue;
                memset(&ss[s], 0, sizeof ss[s]);
                snprintf(ss[s].label, sizeof ss[s].label, "%s", label);
                ss[s].v = calloc(total, sizeof(xy)); /* a run named twice: twice its points */
                if (!ss[s].v) {
                    rc = tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
                    break;
                }
                ns++;
            }
            double lo = isfinite(p->stats.p5) ? p->stats.p5 : p->stats.median;
            double hi = isfinite(p->stats.p95) ? p->stats.p95 : p->stats.median;
            ss[s].v[ss[s].n++] = (xy){x, p->stats.median, lo, hi};
            meds[nmeds++] = p->stats.median;
            int known = 0;
            for (size_t k = 0; k < nxs && !known; k++)
                known = xs[k] == x;
            if (!known)
                xs[nxs++] = x;
            ylo = fmin(ylo, lo);
            yhi = fmax(yhi, hi);
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
        }
    time_unit u = {"ns", 1};
    if (nmeds) {
        qsort(meds, nmeds, sizeof *meds, cmp_double);
        u = unit_for(meds[nmeds / 2]);
    }
    chart_prologue(f, c);
    mark_interrupted(f, in);
    fprintf(f, "set xlabel ");
    plot_quote(f, c->axis);
    fprintf(f, "\nset ylabel 'median time (%s)'\n", u.name);
    if (xlo > 0 && xhi / xlo >= 8)
        fputs("set logscale x 2\n", f);
    if (ylo > 0 && yhi / ylo >= 30)
        fputs("set logscale y 10\n", f);
    x_tics(f, xs, nxs, xlo, xhi);
    if (ns <= 1) /* one line: the title says what it is */
        fputs("unset key\n", f);
    fputs("plot ", f);
    for (size_t s = 0; s < ns && !rc; s++) {
        char path[1200];
        FILE *d = data_file(dir, index, s, path, sizeof path, err);
        if (!d) {
            rc = VYRE_EIO;
            break;
        }
        qsort(ss[s].v, ss[s].n, sizeof(xy), cmp_xy);
        for (size_t k = 0; k < ss[s].n; k++)
            fprintf(d, "%.17g %.17g %.17g %.17g\n", ss[s].v[k].x, ss[s].v[k].med / u.scale,
                    ss[s].v[k].lo / u.scale, ss[s].v[k].hi / u.scale);
        rc = close_data(d, path, err);
        const char *col = k_colors[s % NCOLORS];
        fprintf(f,
                "%s'%s' using 1:3:4 with filledcurves fc rgb '%s' fs transparent solid 0.18 "
                "notitle, \\\n  '%s' using 1:2 with linespoints lc rgb '%s' lw 2 pt 7 ps 0.7 "
                "title ",
                s ? ", \\\n  " : "", path, col, path, col);
        plot_quote(f, ss[s].label);
    }
    fputc('\n', f);
    for (size_t s = 0; s < ns; s++)
        free(ss[s].v);
    free(meds);
    free(xs);
    return rc;
}

/* The histogram of s[0..n-1] over [lo, hi] in nbins bins of width bw
 * (values outside are left out; hi falls in the last bin). */
static void bin_counts(const vyre_bench_sample *s, size_t n, double lo, double hi, double bw,
                       size_t nbins, size_t *count)
{
    for (size_t j = 0; j < n; j++) {
        double x = s[j].value;
        if (!isfinite(x) || x < lo || x > hi)
            continue;
        size_t b = (size_t)((x - lo) / bw);
        count[b < nbins ? b : nbins - 1]++;
    }
}

/* A distribution chart's samples (one set a run) and its histogram's
 * range and bins. */
typedef struct dist_data {
    vyre_bench_sample *sv[MAX_SERIES];
    size_t sn[MAX_SERIES];
    long long ids[MAX_SERIES];
    const char *tags[MAX_SERIES]; /* " (interrupted)" or "" */
    size_t nsets;
    int share; /* sets of unequal sizes: each bar is its share of its set */
    double lo, hi, bw, med;
    size_t nbins, cut; /* cut: samples above the range, left out */
    time_unit u;
} dist_data;

/* The range: every sample, or up to the 99th percentile when the tail
 * would squeeze the rest into a few bins. Sets lo, hi, med, cut, u, nbins
 * and bw. */
static int dist_range(dist_data *dd, vyre_error *err)
{
    size_t all = 0;
    for (size_t k = 0; k < dd->nsets; k++)
        all += dd->sn[k];
    double *v = malloc((all ? all : 1) * sizeof *v);
    if (!v)
        return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
    size_t nv = 0;
    for (size_t k = 0; k < dd->nsets; k++)
        for (size_t j = 0; j < dd->sn[k]; j++)
            if (isfinite(dd->sv[k][j].value))
                v[nv++] = dd->sv[k][j].value;
    dd->lo = 0, dd->hi = 1, dd->med = 0, dd->cut = 0;
    if (nv) {
        qsort(v, nv, sizeof *v, cmp_double);
        dd->lo = v[0];
        dd->hi = v[nv - 1];
        dd->med = vyre_stats_percentile_sorted(v, nv, 50);
        double p99 = vyre_stats_percentile_sorted(v, nv, 99);
        if (nv >= 50 && dd->hi - dd->lo > 4 * (p99 - dd->lo) && p99 > dd->lo) {
            dd->hi = p99;
            for (size_t j = 0; j < nv; j++)
                dd->cut += v[j] > dd->hi;
        }
    }
    free(v);
    dd->u = unit_for(dd->med);
    size_t per = dd->nsets ? all / dd->nsets : 0;
    size_t nbins = (size_t)ceil(sqrt((double)(per ? per : 1)));
    dd->nbins = nbins < 8 ? 8 : nbins > 60 ? 60 : nbins;
    if (dd->hi <= dd->lo) {
        double w = dd->lo > 0 ? dd->lo * 0.01 : 1;
        dd->lo -= w;
        dd->hi += w;
    }
    dd->bw = (dd->hi - dd->lo) / (double)dd->nbins;
    return 0;
}

/* Each set's median as a dashed line; *top: the tallest bar. */
static int dist_medians(FILE *f, const dist_data *dd, size_t *top, vyre_error *err)
{
    *top = 0;
    for (size_t k = 0; k < dd->nsets; k++) {
        size_t *count = calloc(dd->nbins, sizeof *count);
        if (count)
            bin_counts(dd->sv[k], dd->sn[k], dd->lo, dd->hi, dd->bw, dd->nbins, count);
        for (size_t b = 0; count && b < dd->nbins; b++)
            *top = count[b] > *top ? count[b] : *top;
        free(count);
        double m = 0;
        double *one = malloc((dd->sn[k] ? dd->sn[k] : 1) * sizeof *one);
        if (!one)
            return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
        for (size_t j = 0; j < dd->sn[k]; j++)
            one[j] = dd->sv[k][j].value;
        qsort(one, dd->sn[k], sizeof *one, cmp_double);
        if (dd->sn[k])
            m = vyre_stats_percentile_sorted(one, dd->sn[k], 50);
        free(one);
        fprintf(f,
                "set arrow from first %.17g, graph 0 to first %.17g, graph 1 nohead dt 2 lw 2 lc "
                "rgb '%s'\n",
                m / dd->u.scale, m / dd->u.scale, k_colors[k % NCOLORS]);
    }
    return 0;
}

/* The title (a key only for several runs) and whole-number tics up to top. */
static void dist_title(FILE *f, const plot_chart *c, const dist_data *dd, size_t top)
{
    char title[700];
    if (dd->nsets == 1) { /* one histogram: no key, the title says it all */
        char med_s[32];
        snprintf(med_s, sizeof med_s, "%.4g %s", dd->med / dd->u.scale, dd->u.name);
        snprintf(title, sizeof title, "%s (%zu; median %s, dashed)", c->title, dd->sn[0], med_s);
        fputs("unset key\nset title ", f);
        plot_quote(f, title);
        fputc('\n', f);
    }
    if (dd->nsets > 1) {
        snprintf(title, sizeof title, "%s (medians dashed)", c->title);
        fputs("set title ", f);
        plot_quote(f, title);
        fputc('\n', f);
    }
    if (top && !dd->share) { /* whole numbers: a step of 1, 2 or 5 times a power of ten */
        size_t step = 1;
        for (size_t mag = 1; step * 6 < top; mag *= 10)
            step = top <= 2 * mag * 6 ? 2 * mag : top <= 5 * mag * 6 ? 5 * mag : 10 * mag;
        fprintf(f, "set ytics 0, %zu\nset yrange [0:%zu]\n", step, top + (top + 9) / 10);
    }
}

/* The plot command: one histogram a set, its bins in a data file. */
static int dist_plot(FILE *f, const dist_data *dd, size_t index, const char *dir, vyre_error *err)
{
    int rc = 0;
    fputs("plot ", f);
    for (size_t k = 0; k < dd->nsets && !rc; k++) {
        char path[1200];
        FILE *d = data_file(dir, index, k, path, sizeof path, err);
        if (!d) {
            rc = VYRE_EIO;
            break;
        }
        size_t *count = calloc(dd->nbins, sizeof *count);
        if (!count) {
            fclose(d);
            rc = tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
            break;
        }
        bin_counts(dd->sv[k], dd->sn[k], dd->lo, dd->hi, dd->bw, dd->nbins, count);
        for (size_t b = 0; b < dd->nbins; b++)
            if (dd->share)
                fprintf(d, "%.17g %.17g\n", (dd->lo + ((double)b + 0.5) * dd->bw) / dd->u.scale,
                        dd->sn[k] ? (double)count[b] / (double)dd->sn[k] : 0.0);
            else
                fprintf(d, "%.17g %zu\n", (dd->lo + ((double)b + 0.5) * dd->bw) / dd->u.scale,
                        count[b]);
        free(count);
        rc = close_data(d, path, err);
        char title[200];
        if (dd->nsets > 1)
            snprintf(title, sizeof title, "run %lld%s (%zu)", dd->ids[k], dd->tags[k], dd->sn[k]);
        else
            snprintf(title, sizeof title, "%zu samples, median dashed", dd->sn[k]);
        fprintf(f, "%s'%s' using 1:2:(%.17g) with boxes lc rgb '%s' title ", k ? ", \\\n  " : "",
                path, dd->bw / dd->u.scale, k_colors[k % NCOLORS]);
        plot_quote(f, title);
    }
    if (!dd->nsets)
        fputs("NaN notitle", f);
    fputc('\n', f);
    return rc;
}

static int dist_script(FILE *f, const plot_input *in, const plot_chart *c, size_t index,
                       const char *dir, vyre_error *err)
{
    dist_data dd;
    memset(&dd, 0, sizeof dd);
    int rc = 0;
    for (size_t r = 0; r < in->nruns && dd.nsets < MAX_SERIES && !rc; r++)
        for (size_t i = 0; i < in->runs[r].npts; i++) {
            const vyre_bench_point *p = &in->runs[r].pts[i];
            if (!same_group(p, c->first) || strcmp(p->axes, c->axes) != 0)
                continue;
            rc = vyre_bench_samples_get(in->db, p->id, &dd.sv[dd.nsets], &dd.sn[dd.nsets], err);
            dd.tags[dd.nsets] = interrupted_tag(&in->runs[r]);
            dd.ids[dd.nsets++] = (long long)in->runs[r].run.id;
            break;
        }
    if (!rc)
        rc = dist_range(&dd, err);
    /* Raw counts would make the run with more samples look taller: with
     * unequal counts each bar is its share of its run's samples. */
    for (size_t k = 1; k < dd.nsets; k++)
        dd.share |= dd.sn[k] != dd.sn[0];
    if (!rc) {
        chart_prologue(f, c);
        mark_interrupted(f, in);
        fprintf(f, "set xlabel 'sample time (%s)'\nset ylabel '%s'\n", dd.u.name,
                dd.share ? "fraction of the run samples (normalised: unequal counts)" : "samples");
        fprintf(f,
                "set xrange [%.17g:%.17g]\nset yrange [0:*]\nset style fill transparent solid "
                "0.45 border\n",
                (dd.lo - dd.bw) / dd.u.scale, (dd.hi + dd.bw) / dd.u.scale);
        if (dd.cut)
            fprintf(f,
                    "set label '%zu slowest sample%s (above p99) not shown' at graph 0.98, graph "
                    "0.95 right\n",
                    dd.cut, dd.cut == 1 ? "" : "s");
    }
    size_t top = 0;
    if (!rc)
        rc = dist_medians(f, &dd, &top, err);
    if (!rc) {
        dist_title(f, c, &dd, top);
        rc = dist_plot(f, &dd, index, dir, err);
    }
    for (size_t k = 0; k < dd.nsets; k++)
        vyre_free(dd.sv[k]);
    return rc;
}

static int compare_script(FILE *f, const plot_input *in, const plot_chart *c, size_t index,
                          const char *dir, vyre_error *err)
{
    static const struct {
        vyre_stats_verdict v;
        const char *color;
    } k_verdict[] = {{VYRE_VERDICT_FASTER, "#2ca02c"},
                     {VYRE_VERDICT_SLOWER, "#d62728"},
                     {VYRE_VERDICT_SAME, "#7f7f7f"},
                     {VYRE_VERDICT_NOISY, "#ff7f0e"}};
    char path[1200];
    FILE *d = data_file(dir, index, 0, path, sizeof path, err);
    if (!d)
        return VYRE_EIO;
    int seen[4] = {0};
    size_t rows = 0;
    double xlo = 1, xhi = 1;
    for (size_t i = 0; i < in->ncmp; i++) {
        const vyre_bench_cmp_row *r = &in->cmp[i];
        if (!r->has_a || !r->has_b || !isfinite(r->cmp.ratio) || !(r->cmp.ratio > 0))
            continue;
        /* A log axis: every end must be above 0. */
        double lo =
            isfinite(r->cmp.ratio_lo) && r->cmp.ratio_lo > 0 ? r->cmp.ratio_lo : r->cmp.ratio;
        double hi = isfinite(r->cmp.ratio_hi) ? r->cmp.ratio_hi : r->cmp.ratio;
        size_t k = 0;
        while (k < 3 && k_verdict[k].v != r->cmp.verdict)
            k++;
        seen[k] = 1;
        char label[400];
        snprintf(label, sizeof label, "%s%s%s", r->a.benchmark, r->a.axes[0] ? " " : "", r->a.axes);
        for (char *p = label; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        fprintf(d, "%s\t%zu\t%.17g\t%.17g\t%.17g\t%ld\n", label, rows, r->cmp.ratio, lo, hi,
                strtol(k_verdict[k].color + 1, NULL, 16));
        xlo = fmin(xlo, lo);
        xhi = fmax(xhi, hi);
        rows++;
    }
    int rc = close_data(d, path, err);
    if (rc)
        return rc;
    chart_prologue(f, c);
    mark_interrupted(f, in);
    /* A log ratio axis: 2x slower and 2x faster lie as far from 1, and one
     * 4.6x point no longer squashes the 0.95-1.1 ones onto the 1.0 line.
     * The padding is a factor for the same reason. */
    double pad = pow(xhi / xlo, 0.08) * 1.01;
    fprintf(f,
            "set datafile separator '\\t'\nset xlabel 'median ratio B/A, log scale (below 1: B "
            "is faster)'\n"
            "set logscale x 2\nset format x '%%gx'\nset mxtics default\n"
            "set yrange [%g:-0.7]\nset xrange [%.6g:%.6g]\nset grid noytics\n"
            "set key outside right top vertical nobox\n"
            "set arrow from first 1, graph 0 to first 1, graph 1 nohead dt 2 lc rgb '#444444'\n",
            rows ? (double)rows - 0.3 : 0.3, xlo / pad, xhi * pad);
    if (!rows)
        fputs("set label 'no point is in both runs' at graph 0.5, graph 0.5 center\n"
              "set ytics ('' 0)\n",
              f);
    fputs("plot ", f);
    if (rows)
        fprintf(f,
                "'%s' using 3:2:4:5:6:ytic(1) with xerrorbars lc rgb variable pt 7 ps 1 lw 2 "
                "notitle",
                path);
    else
        fputs("NaN notitle", f);
    for (size_t k = 0; k < 4; k++)
        if (seen[k])
            fprintf(f, ", \\\n  keyentry with points pt 7 ps 1 lc rgb '%s' title '%s'",
                    k_verdict[k].color, vyre_stats_verdict_name(k_verdict[k].v));
    fputc('\n', f);
    return 0;
}

int plot_chart_script(FILE *script, const plot_input *in, const plot_chart *c, size_t index,
                      const char *dir, vyre_error *err)
{
    switch (c->kind) {
    case PLOT_CHART_COMPARE:
        return compare_script(script, in, c, index, dir, err);
    case PLOT_CHART_SWEEP:
        return sweep_script(script, in, c, index, dir, err);
    case PLOT_CHART_DIST:
        return dist_script(script, in, c, index, dir, err);
    }
    return tool_set_error(err, VYRE_EINVAL, NULL, "plot: unknown chart kind %d", (int)c->kind);
}
