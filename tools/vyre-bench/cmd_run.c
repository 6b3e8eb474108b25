/*
 * cmd_run.c - `vyre-bench run`: built-in suites and user sweeps, measured
 * by libcore (vyre/bench.h), stored in the results database, printed as a
 * markdown table, CSV or JSON.
 */
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "tool_util.h"
#include "cmds.h"
#include "run_triton.h"
#include "vyre/vyre.h"

#define MAX_SUITES  8
#define MAX_DEVICES 16

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_signal; /* the first stopping signal */

/* SIGINT (Ctrl-C), SIGTERM (kill, a service manager) and SIGHUP (the
 * terminal closed) all end the run the same way: the point in progress is
 * dropped, finished points are kept, the run is marked interrupted. */
static void on_stop_signal(int sig)
{
    if (!g_signal)
        g_signal = sig;
    g_stop = 1;
    /* The same signal a second time is the default action: the user insists. */
    signal(sig, SIG_DFL);
}

static const int k_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSTOP_SIGNALS (sizeof k_stop_signals / sizeof k_stop_signals[0])

static const char *signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT";
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench run [--suite NAME]... [options]\n"
            "       vyre-bench run KERNEL.cu|.ptx --entry NAME -a AXIS=VALUES... [options]\n"
            "       vyre-bench run --spec FILE.json [-a AXIS=VALUES]... [options]\n"
            "       vyre-bench run --triton NAME|KEY [-a PARAM=VALUES]... [options]\n"
            "       vyre-bench run --spec FILE.json|KERNEL --entry NAME ... --vs OTHER.cu|.ptx\n\n"
            "Measure the built-in suites (all of them when none is named; without a GPU\n"
            "only 'cache', saying which were skipped and why) or a sweep of your kernel.\n"
            "Results go to the results database; each point is printed as it finishes.\n\n"
            "suites:\n"
            "  launch     stream launch host cost, launch+sync round trip, graph replay\n"
            "  memcpy     H2D/D2H pageable and pinned, D2D, over sizes\n"
            "  bandwidth  a streaming kernel vs the D2D copy and the datasheet peak\n"
            "  compile    cold NVRTC, cold PTX JIT, warm driver JIT, vyre cache hit, cubin load\n"
            "  cache      pipeline cache store/hit/verify/prune throughput (no GPU)\n\n"
            "sweeps: the kernel takes (float *out, const float *in, int N); axis N is the\n"
            "element count, BLOCK (default 256) the block size, grid = ceil(N / BLOCK).\n"
            "A spec's \"args\" binds anything else: typed buffers and fills, scalars,\n"
            "null pointers; with \"version\": 2, grids in blocks of expressions, block\n"
            "from .reqntid, shared memory, bytes/flops (docs/MEASUREMENT.md;\n"
            "examples/bench/).\n\n");
    tool_cmd_options_help(out, bench_run_opts);
    fprintf(out,
            "\nexit status: 0 done (--dry-run: the sweep is sound), 2 usage or operational error "
            "(the run is marked failed),\n"
            "             1 --vs: a point of OTHER is SLOWER than the kernel's,\n"
            "             3 no NVIDIA driver or GPU for a GPU suite you named,\n"
            "             130 interrupted (Ctrl-C, SIGTERM or SIGHUP; finished points are\n"
            "             kept)\n");
}

/* ---- progress and printing ------------------------------------------------- */

typedef struct run_out {
    bench_format fmt;
    int progress; /* stderr is a terminal and -q is off */
    int drawn;
    uint64_t start_ns;
    size_t npoints;         /* printed so far */
    size_t ntimeouts;       /* of them, stopped by the timeout before the noise target */
    int width;              /* bench_table_width(): 0 markdown rows, else the terminal
                               table, one a suite */
    vyre_bench_point *held; /* every point, printed once the run is over */
    size_t nheld, capheld;
} run_out;

static void progress_clear(run_out *o)
{
    if (o->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        o->drawn = 0;
    }
}

static void on_progress(size_t done, size_t total, const char *what, void *ctx)
{
    run_out *o = ctx;
    if (!o->progress)
        return;
    char eta[32] = "";
    double secs = (double)(tool_mono_ns() - o->start_ns) / 1e9;
    if (done > 0 && total > done) {
        char age[16];
        vyre_format_age((int64_t)(secs / (double)done * (double)(total - done) * 1e9), age,
                        sizeof age);
        snprintf(eta, sizeof eta, ", ETA %s", age);
    }
    /* Progress counts point-rounds; GPU references are not in the total. */
    fprintf(stderr, "\rpoint %zu of %zu: %s%s\033[K", done < total ? done + 1 : total, total, what,
            eta);
    fflush(stderr);
    o->drawn = 1;
}

/* Prints every held point: the terminal table one suite at a time,
 * markdown or CSV rows. */
static void flush_held(run_out *o)
{
    size_t i = 0;
    if (o->nheld && o->fmt == BENCH_CSV)
        bench_csv_header(stdout);
    else if (o->nheld && !o->width)
        bench_table_header(stdout);
    while (i < o->nheld) {
        size_t j = i + 1;
        while (j < o->nheld && strcmp(o->held[j].suite, o->held[i].suite) == 0)
            j++;
        if (o->fmt == BENCH_TABLE && o->width) {
            if (i)
                putchar('\n');
            bench_term_table(stdout, o->held + i, j - i, o->width);
        } else {
            for (size_t k = i; k < j; k++)
                (o->fmt == BENCH_CSV ? bench_csv_row : bench_table_row)(stdout, o->held + k);
        }
        i = j;
    }
    fflush(stdout);
    o->nheld = 0;
}

/* The kernel view and what it adds to a point's note are stored by the
 * CUPTI pass, which runs after every point was timed and handed to
 * on_point: take both from the database before the points are printed
 * (rows printed as they came showed "-" in the kernel column). */
static void refresh_views(run_out *o, vyre_results *db, int64_t run_id)
{
    vyre_bench_point *pts = NULL;
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    if (!o->nheld || run_id <= 0 || vyre_bench_points_get(db, run_id, &pts, &n, &e))
        return; /* the rows as timed: a failed read is not the run's failure */
    for (size_t i = 0, j = 0; i < o->nheld; i++) {
        for (size_t k = 0; k < n && pts[j].id != o->held[i].id; k++)
            j = (j + 1) % n;
        if (n && pts[j].id == o->held[i].id) {
            o->held[i].kernel_ns = pts[j].kernel_ns;
            memcpy(o->held[i].note, pts[j].note, sizeof o->held[i].note);
        }
    }
    vyre_free(pts);
}

static void hold_point(run_out *o, const vyre_bench_point *p)
{
    if (o->nheld == o->capheld) {
        size_t cap = o->capheld ? o->capheld * 2 : 16;
        vyre_bench_point *np = realloc(o->held, cap * sizeof *np);
        if (!np) {
            fprintf(stderr, "%s: error: out of memory\n", tool_prog());
            return;
        }
        o->held = np;
        o->capheld = cap;
    }
    o->held[o->nheld++] = *p;
}

/* Points come once their last round is measured; the CUPTI pass of the
 * run comes after all of them, so they are held and printed at the end. */
static void on_point(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n, void *ctx)
{
    (void)s;
    (void)n;
    run_out *o = ctx;
    progress_clear(o);
    o->npoints++;
    if (p->stop_reason == VYRE_STOP_TIMEOUT)
        o->ntimeouts++;
    if (o->fmt != BENCH_JSON)
        hold_point(o, p);
}

/* ---- option parsing --------------------------------------------------------- */

static int parse_double(const char *opt, const char *s, double lo, double *out)
{
    if (tool_parse_real(s, lo, DBL_MAX, out))
        return tool_usage_error("run", NULL, "bad value '%s' for %s: expected a number >= %g", s,
                                opt, lo);
    return 0;
}

static int parse_devices(const char *s, int *devs, size_t *n, int *all)
{
    *n = 0;
    *all = 0;
    if (strcmp(s, "all") == 0) {
        *all = 1;
        return 0;
    }
    const char *p = s;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1023 || (*end && *end != ',') || *n >= MAX_DEVICES)
            return tool_usage_error("run", "write ordinals such as 0,1, or all",
                                    "bad device list '%s'", s);
        for (size_t i = 0; i < *n; i++)
            if (devs[i] == (int)v)
                return tool_usage_error("run", NULL, "device %ld is listed twice in '%s'", v, s);
        devs[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return tool_usage_error("run", "write ordinals such as 0,1, or all",
                                    "bad device list '%s'", s);
    }
    if (!*n)
        return tool_usage_error("run", "write ordinals such as 0,1, or all", "bad device list '%s'",
                                s);
    return 0;
}

static int add_suites(const char *arg, const char **suites, size_t *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const vyre_bench_suite_def *d = vyre_bench_suite_find(tok);
        if (!d) {
            size_t ns = 0;
            const vyre_bench_suite_def *all = vyre_bench_suites(&ns);
            const char *names[8];
            for (size_t i = 0; i < ns && i < 8; i++)
                names[i] = all[i].name;
            const char *near = tool_nearest(tok, names, ns);
            char hint[128];
            if (near)
                snprintf(hint, sizeof hint, "did you mean '%s'?", near);
            else
                snprintf(hint, sizeof hint,
                         "the suites are: launch, memcpy, bandwidth, compile, cache");
            return tool_usage_error("run", hint, "unknown suite '%s'", tok);
        }
        size_t i = 0;
        while (i < *n && strcmp(suites[i], d->name) != 0)
            i++;
        if (i == *n && *n < MAX_SUITES)
            suites[(*n)++] = d->name;
    }
    return 0;
}

/* The command line the run records: each argument with its passwords
 * masked (a --db URL's, a password= value), so none is ever stored;
 * libcore masks what it writes again. */
static void join_argv(int argc, char **argv, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "vyre-bench");
    for (int i = 0; i < argc && len < size; i++) {
        char arg[VYRE_RESULTS_LOCATION_MAX];
        vyre_results_mask(argv[i], arg, sizeof arg);
        len += (size_t)snprintf(buf + len, size - len, " %s", arg);
    }
}

/* ---- the run ---------------------------------------------------------------- */

typedef struct run_plan {
    const char *suites[MAX_SUITES];
    size_t nsuites;
    int explicit_suites;
    const char *kernel;
    const char *entry;
    const char *spec_path;
    const char *arch;
    const char *vs; /* --vs: the B kernel of an A/B run */
    int dry_run;
    vyre_sweep_spec spec;
    int have_spec;
    vyre_axes axes;
    int devs[MAX_DEVICES];
    size_t ndevs;
    int all_devs;
    int quiet;
    int wide, width;     /* --wide, --width N */
    bench_triton triton; /* --triton and its options (run_triton.c) */
} run_plan;

/* Records the git ref the working tree is on as the run ends (runs.git_ref,
 * db/results_v7.sql); a failure only warns: the run is stored. */
static void record_ref(vyre_results *db, int64_t run_id)
{
    vyre_bench_git gs;
    vyre_bench_git_state(NULL, &gs, NULL);
    const char *ref = gs.ref;
    vyre_error e;
    vyre_error_clear(&e);
    if (run_id > 0 && ref[0] && vyre_results_run_set_ref(db, run_id, ref, &e))
        fprintf(stderr, "%s: warning: the run's git branch was not recorded: %s\n", tool_prog(),
                e.message);
}

static int exit_for(int rc)
{
    return rc == VYRE_ENODRIVER || rc == VYRE_ENODEV ? TOOL_EXIT_NODRIVER : TOOL_EXIT_ERROR;
}

static void on_skip(const char *suites, const vyre_error *why, void *ctx)
{
    progress_clear(ctx);
    fprintf(stderr, "%s: note: skipped the GPU suites %s: %s\n", tool_prog(), suites, why->message);
    tool_hints(why);
}

/* The run's end on stdout (JSON document, or the table's last lines) and
 * stderr; returns the exit code. */
/* One closing warning when most points stopped at the timeout instead of
 * reaching the noise target (as hyperfine warns about outliers): their
 * medians are less settled than the table suggests, and the user can act. */
static void warn_timeouts(const run_out *o, const vyre_stats_stop_rule *rule)
{
    if (!o->npoints || o->ntimeouts * 2 <= o->npoints)
        return;
    fprintf(stderr,
            "%s: warning: %zu of %zu points stopped at the %.3g s timeout before their noise "
            "fell to %.2f%%; their medians are less settled than usual\n"
            "hint: an idle machine, a longer --min-time or --timeout, or pinned GPU clocks "
            "(nvidia-smi --lock-gpu-clocks) help\n",
            tool_prog(), o->ntimeouts, o->npoints, rule->timeout_s, rule->max_noise * 100.0);
}

static int report_done(vyre_results *db, const vyre_bench_run_result *res, bench_format fmt, int ab)
{
    int code = TOOL_EXIT_OK, ab_code = TOOL_EXIT_OK;
    json_t *abj = NULL;
    if (ab && !res->interrupted)
        ab_code = bench_ab_report(stdout, db, res->run_id, fmt, fmt == BENCH_JSON ? &abj : NULL);
    if (fmt == BENCH_JSON) {
        vyre_error e;
        vyre_error_clear(&e);
        vyre_bench_point *pts = NULL;
        size_t np = 0;
        vyre_bench_run r;
        if (vyre_bench_run_get(db, res->run_id, &r, &e) ||
            vyre_bench_points_get(db, res->run_id, &pts, &np, &e)) {
            tool_report(&e);
            code = TOOL_EXIT_ERROR;
        } else {
            uint64_t ntx = 0;
            int64_t tx_ns = 0;
            vyre_results_write_stats(db, &ntx, &tx_ns);
            json_t *store =
                json_pack("{s:s, s:I, s:I}", "engine", vyre_results_engine(db),
                          "write_transactions", (json_int_t)ntx, "write_ns", (json_int_t)tx_ns);
            code = bench_json_run_ab(stdout, db, &r, pts, np, 0, abj, store);
            abj = NULL;
        }
        vyre_free(pts);
    }
    json_decref(abj);
    if (!code && fmt == BENCH_TABLE) {
        if (res->skipped[0])
            printf("\nskipped: %s (%s)\n", res->skipped, res->skip_reason.message);
        printf("%srun %lld %s, %zu point%s stored in %s\n", res->skipped[0] ? "" : "\n",
               (long long)res->run_id, res->interrupted ? "interrupted" : "done", res->npoints,
               res->npoints == 1 ? "" : "s", vyre_results_path(db));
    }
    if (res->interrupted) {
        fprintf(stderr, "%s: interrupted (%s): run %lld keeps the %zu point%s finished\n",
                tool_prog(), signal_name(g_signal), (long long)res->run_id, res->npoints,
                res->npoints == 1 ? "" : "s");
        if (!code)
            code = 130;
    }
    return code ? code : ab_code;
}

/* The run publishes a telemetry page for vyre-top and the exporter from
 * libcore's GPU paths. libcore only records why it cannot (a telemetry
 * directory another user owns, a full /dev/shm, a bad VYRE_TELEMETRY_DIR):
 * open the page up front and say so once, rather than run unseen.
 * VYRE_TELEMETRY=0 (off on purpose) is no error and says nothing. */
static void warn_unpublished(void)
{
    vyre_error e;
    if (vyre_telemetry_global(&e) || !e.code)
        return;
    fprintf(stderr,
            "%s: warning: not publishing telemetry (vyre-top and vyre-exporter will not see "
            "this run): %s\n",
            tool_prog(), e.message[0] ? e.message : vyre_strerror(e.code));
    tool_hints(&e);
}

/* Once per run, when the SM clock moved: kernel times follow it. */
static void note_clocks(const vyre_bench_run_result *res)
{
    fprintf(stderr,
            "%s: note: the SM clock moved between %u and %u MHz during the run: GPU times "
            "follow it, and compare falls back to clock cycles\n",
            tool_prog(), res->clock_min_mhz, res->clock_max_mhz);
    fprintf(stderr,
            "hint: lock the clocks for comparable runs: sudo nvidia-smi --lock-gpu-clocks=%u,%u "
            "(undo: sudo nvidia-smi --reset-gpu-clocks)\n",
            res->clock_max_mhz, res->clock_max_mhz);
}

/* A wait on the results server that SIGINT/SIGTERM/SIGHUP ended: the
 * statement was cancelled (libcore, through vyre_results_set_interrupt). */
static int report_interrupted_wait(const vyre_error *err, int64_t run_id)
{
    fprintf(stderr, "%s: interrupted (%s): %s\n", tool_prog(), signal_name(g_signal), err->message);
    tool_hints(err);
    if (run_id > 0)
        fprintf(stderr,
                "hint: run %lld keeps the points finished and is marked interrupted (when the "
                "server could not take that in time, by its next reader on this host)\n",
                (long long)run_id);
    return 130;
}

static int execute(run_plan *pl, bench_format fmt, vyre_bench_run_opts *o, const char *cmdline)
{
    /* The stop signals are ours from before the database is opened: a
     * connect or a statement the server never answers ends at once too. */
    struct sigaction sa, old[NSTOP_SIGNALS];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSTOP_SIGNALS; i++)
        sigaction(k_stop_signals[i], &sa, &old[i]);
    vyre_results_set_interrupt(&g_stop);
    vyre_results *db = NULL;
    vyre_error oerr;
    vyre_error_clear(&oerr);
    int orc = vyre_results_open(g_tool.db, &db, &oerr);
    int code = orc == VYRE_EINTR ? report_interrupted_wait(&oerr, 0)
               : orc             ? (tool_report(&oerr), TOOL_EXIT_ERROR)
                                 : TOOL_EXIT_OK;
    if (code) {
        for (size_t i = 0; i < NSTOP_SIGNALS; i++)
            sigaction(k_stop_signals[i], &old[i], NULL);
        return code;
    }
    /* The revision of the working directory ("abc1234", "-dirty" appended
     * when modified); none when it is not a checkout or git is missing or
     * hangs: the run is stored all the same. */
    vyre_bench_git gs;
    vyre_bench_git_state(NULL, &gs, NULL);
    char rev[VYRE_BENCH_GIT_REV_MAX + 8];
    snprintf(rev, sizeof rev, "%s%s", gs.rev, gs.rev[0] && gs.dirty ? "-dirty" : "");
    vyre_bench_sweep sw;
    memset(&sw, 0, sizeof sw);
    if (pl->kernel) {
        sw.path = pl->kernel;
        sw.entry = pl->entry;
        sw.axes = &pl->axes;
        sw.spec_json = pl->have_spec ? pl->spec.json : NULL;
        sw.spec_origin = pl->spec_path;
        sw.arch = pl->arch;
        sw.vs_path = pl->vs;
        o->sweep = &sw;
    }
    run_out out;
    memset(&out, 0, sizeof out);
    out.fmt = fmt;
    out.progress = !pl->quiet && isatty(STDERR_FILENO);
    out.start_ns = tool_mono_ns();
    out.width = bench_table_width(pl->wide, pl->width);
    o->db = db;
    o->suites = pl->suites;
    o->nsuites = pl->nsuites;
    o->explicit_suites = pl->explicit_suites;
    o->devices = pl->devs;
    o->ndevices = pl->all_devs ? 0 : pl->ndevs;
    o->all_devices = pl->all_devs;
    o->stop = &g_stop;
    o->command_line = cmdline;
    o->git_rev = rev;
    o->on_point = on_point;
    o->on_progress = on_progress;
    o->on_skip = on_skip;
    o->cb_ctx = &out;
    warn_unpublished();
    vyre_bench_run_result res;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_bench_run_suites(o, &res, &err);
    if (!rc)
        record_ref(db, res.run_id);
    for (size_t i = 0; i < NSTOP_SIGNALS; i++)
        sigaction(k_stop_signals[i], &old[i], NULL);
    progress_clear(&out);
    refresh_views(&out, db, res.run_id);
    flush_held(&out);
    free(out.held);
    if (!rc && !res.interrupted)
        warn_timeouts(&out, &o->rule);
    if (!rc && res.clocks_unlocked)
        note_clocks(&res);

    if (rc == VYRE_EINTR) {
        code = report_interrupted_wait(&err, res.run_id);
    } else if (rc) {
        /* A server gone mid-run fails the write and the end of the run
         * alike: one error says it (the run stays on the server as it was,
         * and its next reader from this host marks it interrupted). */
        if (rc == VYRE_EREMOTE && res.finish_error.code == VYRE_EREMOTE)
            snprintf(err.hint, sizeof err.hint,
                     "the server went away: the points written before are kept, the point in "
                     "flight was not written, and the run shows as interrupted once the server "
                     "is back; check the server and run again");
        tool_report(&err);
        if (res.finish_error.code && !(rc == VYRE_EREMOTE && res.finish_error.code == VYRE_EREMOTE))
            tool_report(&res.finish_error);
        if (res.compile_log && *res.compile_log)
            fprintf(stderr, "compiler log:\n%s%s", res.compile_log,
                    res.compile_log[strlen(res.compile_log) - 1] == '\n' ? "" : "\n");
        code = exit_for(rc);
    } else {
        code = report_done(db, &res, fmt, pl->vs != NULL);
    }
    vyre_bench_run_result_release(&res);
    vyre_results_close(db);
    return code;
}

/* "1,1,1" → "1"; "128,2,1" → "128x2"; "4x8x2". */
static void format_dims(const unsigned d[3], char *buf, size_t size)
{
    if (d[2] != 1)
        snprintf(buf, size, "%ux%ux%u", d[0], d[1], d[2]);
    else if (d[1] != 1)
        snprintf(buf, size, "%ux%u", d[0], d[1]);
    else
        snprintf(buf, size, "%u", d[0]);
}

/* "12.0 MiB", or "-" for 0 when zero_dash. */
static void format_bytes(double b, int zero_dash, char *buf, size_t size)
{
    if (zero_dash && b <= 0)
        snprintf(buf, size, "-");
    else
        vyre_format_size((uint64_t)b, buf, size);
}

/* "34.4 G" (SI), or "-" for 0. */
static void format_count(double v, char *buf, size_t size)
{
    static const char *const units[] = {"", " K", " M", " G", " T", " P", " E"};
    size_t u = 0;
    if (v <= 0) {
        snprintf(buf, size, "-");
        return;
    }
    while (v >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1000;
        u++;
    }
    snprintf(buf, size, u ? "%.1f%s" : "%.0f%s", v, units[u]);
}

/* --dry-run: the sweep planned without a GPU; exit 0, or 2 with the
 * error (and the compiler log). */
static int dry_run(run_plan *pl)
{
    vyre_bench_sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.path = pl->kernel;
    sw.entry = pl->entry;
    sw.axes = &pl->axes;
    sw.spec_json = pl->have_spec ? pl->spec.json : NULL;
    sw.spec_origin = pl->spec_path;
    sw.arch = pl->arch;
    vyre_bench_sweep_plan plan;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_bench_sweep_plan_make(&sw, &plan, &err);
    if (rc) {
        tool_report(&err);
        if (plan.compile_log && *plan.compile_log)
            fprintf(stderr, "compiler log:\n%s%s", plan.compile_log,
                    plan.compile_log[strlen(plan.compile_log) - 1] == '\n' ? "" : "\n");
        vyre_bench_sweep_plan_release(&plan);
        return TOOL_EXIT_ERROR;
    }
    char cubin[32];
    vyre_format_size(plan.cubin_bytes, cubin, sizeof cubin);
    printf("kernel %s (%s), entry %s, %zu parameter%s, spec version %d\n"
           "compiled for %s (%s): cubin %s\n\n",
           pl->kernel, plan.source_kind, pl->entry, plan.nparams, plan.nparams == 1 ? "" : "s",
           plan.version, plan.arch, plan.arch_origin, cubin);
    if (plan.launch)
        printf("launch: %s (cuLaunchKernelEx)\n\n", plan.launch);
    printf("| point | axes | grid | block | shared | memory | bytes/launch | flops/launch |\n"
           "|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < plan.npoints; i++) {
        const vyre_bench_sweep_plan_point *p = &plan.points[i];
        char grid[48], block[48], shared[32], mem[32], bytes[32], flops[32];
        format_dims(p->grid, grid, sizeof grid);
        format_dims(p->block, block, sizeof block);
        format_bytes(p->shared_bytes, 1, shared, sizeof shared);
        format_bytes(p->memory_bytes, 0, mem, sizeof mem);
        format_bytes(p->bytes, 1, bytes, sizeof bytes);
        format_count(p->flops, flops, sizeof flops);
        printf("| %zu | %s | %s | %s | %s | %s | %s | %s |\n", i + 1, p->axes[0] ? p->axes : "-",
               grid, block, shared, mem, bytes, flops);
    }
    printf("\ndry run: %zu point%s would run; nothing was launched\n", plan.npoints,
           plan.npoints == 1 ? "" : "s");
    vyre_bench_sweep_plan_release(&plan);
    return TOOL_EXIT_OK;
}

/* The stopping rule: the defaults, --quick, then the options given (-1:
 * not given; max_noise a ratio, 0.005 for 0.5 %). */
static vyre_stats_stop_rule make_rule(int quick, double min_samples, double min_time,
                                      double max_noise, double timeout)
{
    vyre_stats_stop_rule rule = VYRE_STOP_RULE_DEFAULT;
    /* --quick shortens time, not the sample minimum: fewer than 10 samples
     * give a median and a spread too rough to compare. */
    if (quick) {
        rule.min_time_s = 0.05;
        rule.max_noise = 0.02;
        rule.timeout_s = 3.0;
    }
    if (min_samples >= 1)
        rule.min_samples = (size_t)min_samples;
    if (min_time >= 0)
        rule.min_time_s = min_time;
    if (max_noise >= 0)
        rule.max_noise = max_noise;
    if (timeout >= 0)
        rule.timeout_s = timeout;
    return rule;
}

/* What the options say beyond the plan: the stopping rule's figures (-1:
 * not given), the mode, the output and the -a axes until the spec's are in. */
typedef struct run_args {
    double min_samples, min_time, max_noise, timeout, rounds;
    int quick, kernels, mode; /* mode: 0 hot, 1 cold, 2 both */
    int csv;                  /* --csv (--json is the shared g_tool.json) */
    const char *axis_args[VYRE_AXES_MAX];
    size_t naxis_args;
} run_args;

/* The values of --mode. */
static int parse_mode(const char *s, int *mode)
{
    static const char *const names[] = {"hot", "cold", "both"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *mode = i;
            return TOOL_EXIT_OK;
        }
    return tool_usage_error("run", "use hot, cold or both", "bad mode '%s'", s);
}

/* The options about what runs: suites, the kernel, its axes and spec. -1
 * when c is not one of them, else an exit code. */
static int plan_option(int c, const char *arg, run_plan *pl, run_args *a)
{
    switch (c) {
    case 's':
        pl->explicit_suites = 1;
        return add_suites(arg, pl->suites, &pl->nsuites);
    case 'a':
        if (a->naxis_args >= VYRE_AXES_MAX)
            return tool_usage_error("run", NULL, "more than %d axes", VYRE_AXES_MAX);
        a->axis_args[a->naxis_args++] = arg;
        return TOOL_EXIT_OK;
    case 'e':
        pl->entry = arg;
        return TOOL_EXIT_OK;
    case 'S':
        pl->spec_path = arg;
        return TOOL_EXIT_OK;
    case 'A':
        pl->arch = arg;
        if (!vyre_compile_arch_valid(arg))
            return tool_usage_error(
                "run", "write an architecture such as sm_90, sm_90a (Triton's) or sm_100f",
                "bad --arch '%s'", arg);
        return TOOL_EXIT_OK;
    case 'R':
        pl->dry_run = 1;
        return TOOL_EXIT_OK;
    case 'V':
        pl->vs = arg;
        return TOOL_EXIT_OK;
    case 'd':
        return parse_devices(arg, pl->devs, &pl->ndevs, &pl->all_devs);
    default:
        return bench_triton_option(c, arg, &pl->triton);
    }
}

/* The options about how it is measured and printed; an exit code. */
static int measure_option(int c, const char *arg, run_plan *pl, run_args *a,
                          vyre_bench_run_opts *ro)
{
    int code = TOOL_EXIT_OK;
    switch (c) {
    case 'm':
        return parse_mode(arg, &a->mode);
    case 'n':
        return parse_double("--min-samples", arg, 1, &a->min_samples);
    case 't':
        return parse_double("--min-time", arg, 0, &a->min_time);
    case 'N':
        /* A bare number is a percent, as everywhere (tool_percent_arg). */
        return tool_percent_arg("run", "--max-noise", arg, &a->max_noise);
    case 'T':
        return parse_double("--timeout", arg, 0, &a->timeout);
    case 'r':
        code = parse_double("--rounds", arg, 1, &a->rounds);
        if (!code && (a->rounds != floor(a->rounds) || a->rounds > VYRE_BENCH_ROUNDS_MAX))
            code = tool_usage_error("run", "give a whole number from 1 to 100, such as 5",
                                    "bad value '%s' for --rounds", arg);
        return code;
    case 'Q':
        a->quick = 1;
        break;
    case 'K':
        a->kernels = 0;
        break;
    case 'B':
        ro->no_blocking_kernel = 1;
        break;
    case 'c':
        a->csv = 1;
        break;
    case 'q':
        pl->quiet = 1;
        break;
    case 'W': /* --wide (long only: -w is --width, as in every listing) */
        pl->wide = 1;
        break;
    case 'w':
        return bench_parse_width("run", arg, &pl->width);
    }
    return code;
}

/* parse_run_args after --help: nothing more to do, exit 0. */
#define RUN_HELP_SHOWN (-1)

/* Parses argv into pl, a and ro: TOOL_EXIT_OK to go on, RUN_HELP_SHOWN,
 * else the exit code. The kernel operand is taken too. */
static int parse_run_args(int argc, char **argv, run_plan *pl, run_args *a, vyre_bench_run_opts *ro)
{
    int c, code = 0;
    while ((c = tool_getopt_table("run", argc, argv, bench_run_opts, usage, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code ? code : RUN_HELP_SHOWN;
        code = plan_option(c, optarg, pl, a);
        if (code < 0)
            code = measure_option(c, optarg, pl, a, ro);
        if (code)
            return code;
    }
    if (a->csv && g_tool.json)
        return bench_csv_json_conflict("run");
    if (optind < argc)
        pl->kernel = argv[optind++];
    if (optind < argc)
        return tool_usage_error("run", NULL, "unexpected argument '%s'", argv[optind]);
    return TOOL_EXIT_OK;
}

/* --spec, or --triton's inferred spec: its kernel, entry and axes fill what
 * the command line left out (-a overrides the spec's axes). An exit code. */
static int load_spec(run_plan *pl, run_args *a)
{
    vyre_error err;
    vyre_error_clear(&err);
    int code = pl->triton.any
                   ? bench_triton_spec(&pl->triton, a->axis_args, &a->naxis_args,
                                       pl->kernel || pl->spec_path, pl->dry_run, &pl->spec)
                   : TOOL_EXIT_OK;
    if (code)
        return code;
    if (pl->triton.any)
        pl->spec_path = pl->triton.origin;
    else if (vyre_sweep_spec_load(&pl->spec, pl->spec_path, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    pl->have_spec = 1;
    if (!pl->kernel)
        pl->kernel = pl->spec.kernel_path;
    if (!pl->entry)
        pl->entry = pl->spec.entry;
    if (!pl->kernel)
        return tool_usage_error("run", "name it in the spec (\"kernel\") or on the command line",
                                "spec '%s' names no kernel", pl->spec_path);
    /* The spec's axes move over as parsed (an array's text is JSON, not -a
     * syntax); -a axes replace them by name (add_axes). */
    vyre_axes_release(&pl->axes);
    pl->axes = pl->spec.axes;
    vyre_axes_init(&pl->spec.axes);
    return TOOL_EXIT_OK;
}

/* Whether -a argument i names an axis an earlier -a named ("N=1,2"). */
static int axis_repeated(const run_args *a, size_t i)
{
    size_t len = strcspn(a->axis_args[i], "=");
    for (size_t k = 0; k < i; k++)
        if (strncmp(a->axis_args[k], a->axis_args[i], len) == 0 && a->axis_args[k][len] == '=')
            return 1;
    return 0;
}

/* The -a axes into the plan: with a spec, each overrides the spec's axis
 * of its name (nvbench's -a: "-a N=1M" runs only N=1M); an axis the spec
 * lacks, or one -a gives twice, is an error. An exit code. */
static int add_axes(run_plan *pl, const run_args *a)
{
    vyre_error err;
    vyre_error_clear(&err);
    for (size_t i = 0; i < a->naxis_args; i++) {
        const char *arg = a->axis_args[i];
        if (pl->have_spec && axis_repeated(a, i))
            return tool_usage_error("run", "give each axis once; list several values as N=1,2,3",
                                    "axis '%.*s' is given twice", (int)strcspn(arg, "="), arg);
        if (pl->have_spec ? vyre_axes_override(&pl->axes, arg, &err)
                          : vyre_axes_add(&pl->axes, arg, &err)) {
            tool_report(&err);
            fprintf(stderr, "try '%s run --help'\n", tool_prog());
            return TOOL_EXIT_ERROR;
        }
    }
    return TOOL_EXIT_OK;
}

/* What the options mean together: a kernel has an entry, -a/--entry/--arch/
 * --dry-run need a kernel, no kernel and no suite means every suite, --vs
 * needs a kernel. An exit code. */
static int check_plan(run_plan *pl, const run_args *a)
{
    if (pl->kernel && !pl->entry)
        return tool_usage_error("run", "name the kernel's extern \"C\" function",
                                "a kernel needs --entry NAME");
    if (!pl->kernel && (a->naxis_args || pl->entry))
        return tool_usage_error(
            "run", "give the kernel file: vyre-bench run KERNEL.cu --entry NAME -a ...",
            "%s without a kernel", pl->entry ? "--entry" : "-a");
    if (!pl->kernel && !pl->nsuites) {
        size_t ns = 0;
        const vyre_bench_suite_def *all = vyre_bench_suites(&ns);
        for (size_t i = 0; i < ns && i < MAX_SUITES; i++)
            pl->suites[pl->nsuites++] = all[i].name;
    }
    if ((pl->arch || pl->dry_run) && !pl->kernel)
        return tool_usage_error("run", "give a kernel or --spec: they apply to sweeps",
                                "%s without a kernel", pl->arch ? "--arch" : "--dry-run");
    return bench_ab_usage(pl->vs, pl->kernel, pl->dry_run);
}

/* The run itself (or the dry run) once the plan holds. */
static int start(run_plan *pl, const run_args *a, vyre_bench_run_opts *ro, const char *cmdline)
{
    bench_format fmt = a->csv ? BENCH_CSV : g_tool.json ? BENCH_JSON : BENCH_TABLE;
    if (pl->dry_run) {
        if (fmt != BENCH_TABLE)
            return tool_usage_error("run", "leave out --csv/--json: a dry run lists points",
                                    "--dry-run prints no %s", fmt == BENCH_CSV ? "CSV" : "JSON");
        return dry_run(pl);
    }
    ro->rule = make_rule(a->quick, a->min_samples, a->min_time, a->max_noise, a->timeout);
    ro->rounds = a->rounds >= 1 ? (unsigned)a->rounds : 0;
    ro->quick = a->quick;
    ro->cold = a->mode;
    ro->kernels = a->kernels;
    ro->tmp_dir = getenv("TMPDIR");
    return execute(pl, fmt, ro, cmdline);
}

int cmd_run(int argc, char **argv)
{
    run_plan pl;
    memset(&pl, 0, sizeof pl);
    vyre_axes_init(&pl.axes);
    pl.devs[0] = 0;
    pl.ndevs = 1;
    vyre_bench_run_opts ro;
    memset(&ro, 0, sizeof ro);
    run_args a = {.min_samples = -1,
                  .min_time = -1,
                  .max_noise = -1,
                  .timeout = -1,
                  .rounds = -1,
                  .kernels = 1};
    /* Before getopt_long permutes argv. */
    char cmdline[1024];
    join_argv(argc, argv, cmdline, sizeof cmdline);
    int code = parse_run_args(argc, argv, &pl, &a, &ro);
    if (!code && (pl.spec_path || pl.triton.any))
        code = load_spec(&pl, &a);
    if (!code)
        code = add_axes(&pl, &a);
    if (!code)
        code = check_plan(&pl, &a);
    if (!code)
        code = start(&pl, &a, &ro, cmdline);
    if (pl.have_spec)
        vyre_sweep_spec_release(&pl.spec);
    vyre_axes_release(&pl.axes);
    return code == RUN_HELP_SHOWN ? TOOL_EXIT_OK : code;
}
