/*
 * plot.c - plot_runs (vyre/plot.h): loads the runs, chooses the
 * charts (plot_charts.c), writes one gnuplot script for all of them into a
 * private temp directory, runs gnuplot once (no shell), and puts the
 * result in place: the SVG or PNG as drawn, or the HTML page
 * (plot_html.c) around the charts' SVGs. The temp directory is removed
 * whatever happens; the output is written under a temp name beside it and
 * renamed, so a failed plot never leaves half a file.
 *
 * It moved here from libcore (issue 24): the library measures and stores,
 * the tool draws. What it reads of the runs is libcore's public results
 * API; gnuplot is started with posix_spawn, its stderr kept in the temp
 * directory for the error message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot_internal.h"

#define GNUPLOT_HINT "install it: apt-get install gnuplot-nox"

int plot_format_of(const char *path, plot_format *out, vyre_error *err)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (dot && (!slash || dot > slash)) {
        if (strcasecmp(dot, ".svg") == 0) {
            *out = PLOT_SVG;
            return 0;
        }
        if (strcasecmp(dot, ".png") == 0) {
            *out = PLOT_PNG;
            return 0;
        }
        if (strcasecmp(dot, ".html") == 0 || strcasecmp(dot, ".htm") == 0) {
            *out = PLOT_HTML;
            return 0;
        }
    }
    return tool_set_error(err, VYRE_EINVAL, "name a file ending in .svg, .png or .html",
                          "cannot tell the format of '%s' from its extension", path ? path : "");
}

int plot_find_gnuplot(char *buf, size_t size, vyre_error *err)
{
    const char *path = secure_getenv("PATH"); /* gnuplot is run from it */
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0) {
            int len = snprintf(buf, size, "%.*s/gnuplot", (int)n, p);
            if (len < 0 || (size_t)len >= size)
                return tool_set_error(err, VYRE_ETOOBIG, NULL, "a $PATH entry is too long");
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return 0;
        }
        p += n;
        if (*p == ':')
            p++;
    }
    buf[0] = '\0';
    return tool_set_error(err, VYRE_ENOENT, GNUPLOT_HINT,
                          "plotting needs gnuplot, and there is none on $PATH");
}

/* ---- the temp directory ------------------------------------------------------- */

/* Removes the temp directory and what is in it: this module's files only
 * (the directory is its own, made by mkdtemp, mode 0700, flat). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            unlinkat(dirfd(d), de->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* ---- loading ------------------------------------------------------------------ */

static void release_input(plot_input *in)
{
    for (size_t r = 0; r < in->nruns; r++)
        vyre_free(in->runs[r].pts);
    free(in->runs);
    vyre_free(in->cmp);
    memset(in, 0, sizeof *in);
}

static int load_input(const plot_opts *o, plot_input *in, vyre_error *err)
{
    memset(in, 0, sizeof *in);
    in->db = o->db;
    in->runs = calloc(o->nruns, sizeof *in->runs);
    if (!in->runs)
        return tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
    for (size_t r = 0; r < o->nruns; r++) {
        plot_run_points *pr = &in->runs[r];
        int rc = vyre_bench_run_get(o->db, o->runs[r], &pr->run, err);
        if (!rc)
            rc = vyre_bench_points_get(o->db, o->runs[r], &pr->pts, &pr->npts, err);
        in->nruns = r + 1;
        if (rc)
            return rc;
        if (!pr->npts)
            return tool_set_error(
                err, VYRE_EINVAL, "plot a run that finished points ('vyre-bench runs')",
                "run %lld has no points to plot (it is %s)", (long long)o->runs[r],
                vyre_bench_run_status_name(pr->run.status));
        /* A median that is NULL or infinite in the database (a damaged or
         * hand-edited file) has no place on a chart, and gnuplot answers
         * such data with errors of its own: those points are left out and
         * counted (plot_result.skipped). */
        size_t kept = 0, had = pr->npts;
        for (size_t i = 0; i < had; i++) {
            if (isfinite(pr->pts[i].stats.median))
                pr->pts[kept++] = pr->pts[i];
            else
                in->skipped++;
        }
        pr->npts = kept;
        if (!kept)
            return tool_set_error(err, VYRE_EINVAL,
                                  "its results are damaged: measure it again, or plot another run",
                                  "run %lld has no point to plot: the median of each of its %zu "
                                  "point%s is unknown or infinite",
                                  (long long)o->runs[r], had, had == 1 ? "" : "s");
    }
    vyre_stats_compare_opts co = VYRE_COMPARE_OPTS_DEFAULT;
    if (o->compare)
        co = *o->compare;
    in->alpha = co.alpha;
    if (o->nruns == 2)
        return vyre_bench_compare_runs(o->db, o->runs, 1, o->runs[1], &co, &in->cmp, &in->ncmp,
                                       err);
    return 0;
}

/* ---- output ------------------------------------------------------------------- */

/* Writes `to` with fill(f, ctx), through `to`.tmp-<pid> and a rename:
 * readers never see half a file, and a failure leaves none. */
static int write_output(const char *to, int (*fill)(FILE *, void *), void *ctx, vyre_error *err)
{
    char tmp[4200];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp-%ld", to, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp)
        return tool_set_error(err, VYRE_ETOOBIG, NULL, "output path too long: '%s'", to);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return tool_set_error(err, vyre_errno_code(errno),
                              "check the directory exists and is writable", "cannot write '%s': %s",
                              to, strerror(errno));
    int rc = fill(f, ctx);
    if (!rc && ferror(f))
        rc = VYRE_EIO;
    if (fclose(f) && !rc)
        rc = VYRE_EIO;
    if (!rc && rename(tmp, to) != 0)
        rc = vyre_errno_code(errno);
    if (rc) {
        int e = errno;
        unlink(tmp);
        if (!err || !err->code)
            return tool_set_error(err, rc, NULL, "cannot write '%s': %s", to, strerror(e));
    }
    return rc;
}

static int copy_fill(FILE *out, void *ctx)
{
    FILE *in = fopen(ctx, "rb");
    if (!in)
        return VYRE_EIO;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) {
            fclose(in);
            return VYRE_EIO;
        }
    int bad = ferror(in);
    fclose(in);
    return bad ? VYRE_EIO : 0;
}

typedef struct html_ctx {
    const plot_input *in;
    const plot_chart *charts;
    char *const *paths;
    size_t n;
    vyre_error *err;
} html_ctx;

static int html_fill(FILE *out, void *ctx)
{
    html_ctx *h = ctx;
    return plot_html_write(out, h->in, h->charts, h->paths, h->n, h->err);
}

/* ---- the script ---------------------------------------------------------------- */

static int write_script(const char *script_path, const char *dir, plot_format fmt,
                        const plot_input *in, const plot_chart *charts, size_t n, vyre_error *err)
{
    FILE *f = fopen(script_path, "w");
    if (!f)
        return tool_set_error(err, vyre_errno_code(errno), NULL, "plot: cannot write '%s': %s",
                              script_path, strerror(errno));
    int rc = 0;
    const char *font = "font 'Sans,11'";
    if (fmt == PLOT_HTML) {
        for (size_t i = 0; i < n && !rc; i++) {
            fprintf(f, "set terminal svg size %d,%d %s background '#ffffff'\n", charts[i].width,
                    charts[i].height, font);
            fprintf(f, "set output '%s/c%zu.svg'\n", dir, i);
            rc = plot_chart_script(f, in, &charts[i], i, dir, err);
            fputs("unset output\n", f);
        }
    } else {
        size_t cols = n > 1 ? 2 : 1, rows = (n + cols - 1) / cols;
        int w = 0, h = 0;
        for (size_t i = 0; i < n; i++) {
            w = charts[i].width > w ? charts[i].width : w;
            h = charts[i].height > h ? charts[i].height : h;
        }
        if (fmt == PLOT_SVG)
            fprintf(f, "set terminal svg size %zu,%zu %s background '#ffffff'\n", w * cols,
                    h * rows, font);
        else
            fprintf(f, "set terminal pngcairo size %zu,%zu %s background '#ffffff'\n", w * cols,
                    h * rows, "font 'Sans,10'");
        fprintf(f, "set output '%s/out.%s'\n", dir, fmt == PLOT_SVG ? "svg" : "png");
        if (n > 1)
            fprintf(f, "set multiplot layout %zu,%zu\n", rows, cols);
        for (size_t i = 0; i < n && !rc; i++)
            rc = plot_chart_script(f, in, &charts[i], i, dir, err);
        if (n > 1)
            fputs("unset multiplot\n", f);
        fputs("unset output\n", f);
    }
    if (fclose(f) && !rc)
        rc = tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write '%s'", script_path);
    return rc;
}

extern char **environ;

/* Runs gnuplot on script (no shell, LC_ALL=C), its stderr into log (a
 * file of the temp directory). *status: its exit status, -1 when a signal
 * ended it. 0, or an error when it could not be started. */
static int spawn_gnuplot(const char *gnuplot, const char *script, const char *log, int *status,
                         vyre_error *err)
{
    size_t nenv = 0;
    while (environ && environ[nenv])
        nenv++;
    char **envp = calloc(nenv + 2, sizeof *envp);
    if (!envp)
        return tool_set_error(err, VYRE_ENOMEM, NULL, "cannot run '%s': out of memory", gnuplot);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "LC_ALL=", 7) != 0)
            envp[k++] = environ[i];
    static char lc_all[] = "LC_ALL=C";
    envp[k++] = lc_all;
    char *argv[] = {(char *)(uintptr_t)gnuplot, (char *)(uintptr_t)script, NULL};
    posix_spawn_file_actions_t fa;
    int e = posix_spawn_file_actions_init(&fa);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    if (!e)
        e = posix_spawn(&pid, gnuplot, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (e)
        return tool_set_error(err, vyre_errno_code(e), NULL, "cannot run '%s': %s", gnuplot,
                              strerror(e));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return tool_set_error(err, VYRE_EIO, NULL, "cannot wait for '%s': %s", gnuplot,
                                  strerror(errno));
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    return 0;
}

static int run_gnuplot(const char *gnuplot, const char *script, const char *dir, vyre_error *err)
{
    char logpath[1100];
    snprintf(logpath, sizeof logpath, "%s/gnuplot.log", dir);
    int status = -1;
    int rc = spawn_gnuplot(gnuplot, script, logpath, &status, err);
    if (rc)
        return rc;
    if (status == 0)
        return 0;
    char log[4096] = "";
    FILE *lf = fopen(logpath, "r");
    if (lf) {
        size_t got = fread(log, 1, sizeof log - 1, lf);
        log[got] = '\0';
        fclose(lf);
    }
    /* The first line that says what went wrong. */
    const char *line = log;
    for (const char *p = log; *p;) {
        size_t n = strcspn(p, "\n");
        if (memmem(p, n, "rror", 4) || memmem(p, n, "line ", 5)) {
            line = p;
            break;
        }
        p += n + (p[n] == '\n');
    }
    return tool_set_error(err, VYRE_EIO, "this is a bug in vyre's plot script; report it",
                          "gnuplot failed (exit %d): %.*s", status, (int)strcspn(line, "\n"), line);
}

int plot_draw(const char *gnuplot, const char *tmp_dir, plot_format fmt, const char *output,
              plot_script_fn script, void *ctx, vyre_error *err)
{
    if (fmt == PLOT_HTML)
        return tool_set_error(err, VYRE_EINVAL, NULL, "plot_draw: .svg or .png only");
    const char *tmp = tmp_dir && *tmp_dir ? tmp_dir : secure_getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/vyre-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (strchr(dir, '\''))
        return tool_set_error(err, VYRE_EINVAL, "set TMPDIR to a directory without quotes",
                              "the temp directory '%s' has a quote in its name", dir);
    if (!mkdtemp(dir))
        return tool_set_error(err, vyre_errno_code(errno), "set TMPDIR to a writable directory",
                              "cannot make a temp directory in '%s': %s",
                              tmp && *tmp ? tmp : "/tmp", strerror(errno));
    char path[1100], drawn[1100];
    snprintf(path, sizeof path, "%s/plot.gp", dir);
    snprintf(drawn, sizeof drawn, "%s/out.%s", dir, fmt == PLOT_SVG ? "svg" : "png");
    int rc = 0;
    FILE *f = fopen(path, "w");
    if (!f)
        rc = tool_set_error(err, vyre_errno_code(errno), NULL, "plot: cannot write '%s': %s", path,
                            strerror(errno));
    if (!rc) {
        if (fmt == PLOT_SVG)
            fputs("set terminal svg size 900,500 font 'Sans,11' background '#ffffff'\n", f);
        else
            fputs("set terminal pngcairo size 900,500 font 'Sans,10' background '#ffffff'\n", f);
        fprintf(f, "set output '%s'\n", drawn);
        rc = script(f, dir, ctx, err);
        fputs("unset output\n", f);
        if (fclose(f) && !rc)
            rc = tool_set_error(err, VYRE_EIO, NULL, "plot: cannot write '%s'", path);
    }
    if (!rc)
        rc = run_gnuplot(gnuplot, path, dir, err);
    if (!rc)
        rc = write_output(output, copy_fill, drawn, err);
    remove_dir(dir);
    return rc;
}

int plot_runs(const plot_opts *o, plot_result *res, vyre_error *err)
{
    if (res)
        memset(res, 0, sizeof *res);
    if (!o || !o->db || !o->runs || !o->nruns || !o->output)
        return tool_set_error(err, VYRE_EINVAL, NULL, "plot_runs: bad arguments");
    plot_format fmt = PLOT_SVG;
    int rc = plot_format_of(o->output, &fmt, err);
    if (rc)
        return rc;
    char gnuplot[4096];
    if (o->gnuplot)
        snprintf(gnuplot, sizeof gnuplot, "%s", o->gnuplot);
    else if ((rc = plot_find_gnuplot(gnuplot, sizeof gnuplot, err)))
        return rc;
    plot_input in;
    memset(&in, 0, sizeof in);
    rc = load_input(o, &in, err);
    if (rc) {
        release_input(&in);
        return rc;
    }
    plot_chart *charts = NULL;
    size_t n = 0;
    rc = plot_charts_choose(&in, &charts, &n, err);
    /* Two runs as one picture: their comparison is the chart. */
    if (!rc && in.cmp && fmt != PLOT_HTML)
        n = 1;
    const char *tmp = o->tmp_dir && *o->tmp_dir ? o->tmp_dir : secure_getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/vyre-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!rc && strchr(dir, '\''))
        rc = tool_set_error(err, VYRE_EINVAL, "set TMPDIR to a directory without quotes",
                            "the temp directory '%s' has a quote in its name", dir);
    if (!rc && !mkdtemp(dir))
        rc = tool_set_error(err, vyre_errno_code(errno), "set TMPDIR to a writable directory",
                            "cannot make a temp directory in '%s': %s", tmp && *tmp ? tmp : "/tmp",
                            strerror(errno));
    else if (!rc) {
        char script[1100];
        snprintf(script, sizeof script, "%s/plot.gp", dir);
        rc = write_script(script, dir, fmt, &in, charts, n, err);
        if (!rc)
            rc = run_gnuplot(gnuplot, script, dir, err);
        if (!rc && fmt == PLOT_HTML) {
            char **paths = calloc(n ? n : 1, sizeof *paths);
            for (size_t i = 0; paths && i < n; i++) {
                paths[i] = malloc(1100);
                if (paths[i])
                    snprintf(paths[i], 1100, "%s/c%zu.svg", dir, i);
            }
            html_ctx h = {&in, charts, paths, n, err};
            rc = paths ? write_output(o->output, html_fill, &h, err)
                       : tool_set_error(err, VYRE_ENOMEM, NULL, "plot: out of memory");
            for (size_t i = 0; paths && i < n; i++)
                free(paths[i]);
            free(paths);
        } else if (!rc) {
            char drawn[1100];
            snprintf(drawn, sizeof drawn, "%s/out.%s", dir, fmt == PLOT_SVG ? "svg" : "png");
            rc = write_output(o->output, copy_fill, drawn, err);
        }
        remove_dir(dir);
    }
    if (!rc && res) {
        res->ncharts = n;
        res->skipped = in.skipped;
    }
    free(charts);
    release_input(&in);
    return rc;
}
