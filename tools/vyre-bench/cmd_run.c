/*
 * cmd_run.c - `vyre-bench run`: built-in suites and user sweeps, measured
 * by libcore (vyre/bench.h), stored in the results database, printed as a
 * markdown table, CSV or JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmds.h"
#include "vyre/vyre.h"

#define MAX_SUITES  8
#define MAX_DEVICES 16

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
    (void)sig;
    g_stop = 1;
    /* A second Ctrl-C is the default action: the user insists. */
    signal(SIGINT, SIG_DFL);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-bench run [--suite NAME]... [options]\n"
            "       vyre-bench run KERNEL.cu|.ptx --entry NAME -a AXIS=VALUES... [options]\n"
            "       vyre-bench run --spec FILE.json [-a AXIS=VALUES]... [options]\n\n"
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
            "A spec's \"args\" binds anything else (see README).\n"
            "  -a, --axis NAME=VALUES   1024:64M:x4 (geometric), 0:100:+25, 128,256 (list)\n"
            "  --entry NAME             kernel entry point\n"
            "  --spec FILE              JSON sweep spec (kernel, entry, axes, args)\n"
            "  --mode hot|cold|both     L2 warm, or flushed before each sample (default hot)\n\n"
            "measurement (nvbench's stopping rule; defaults in brackets):\n"
            "  --min-samples N [10]  --min-time S [0.5]  --max-noise PCT [0.5]  --timeout S [15]\n"
            "  --quick                 5 samples, 0.05 s, 2%%, 3 s; fewer sizes\n"
            "  --no-kernels            skip the CUPTI pass that records kernels per point\n"
            "  --devices LIST|all      CUDA ordinals, e.g. 0,1 (default 0)\n\n"
            "output:\n"
            "  --db PATH   results database (default $XDG_DATA_HOME/vyre/results.sqlite3)\n"
            "  --csv       CSV rows instead of the table\n"
            "  --json      one JSON document (schema_version 2) at the end\n"
            "  -q          no progress line\n\n"
            "exit status: 0 done, 2 usage or operational error (the run is marked failed),\n"
            "             3 no NVIDIA driver or GPU for a GPU suite you named,\n"
            "             130 interrupted (Ctrl-C; finished points are kept)\n");
}

/* ---- progress and printing ------------------------------------------------- */

typedef struct run_out {
    bench_format fmt;
    int progress; /* stderr is a terminal and -q is off */
    int drawn;
    int header_done;
    uint64_t start_ns;
} run_out;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
    double secs = (double)(mono_ns() - o->start_ns) / 1e9;
    if (done > 0 && total > done) {
        char age[16];
        vyre_format_age((int64_t)(secs / (double)done * (double)(total - done) * 1e9), age,
                        sizeof age);
        snprintf(eta, sizeof eta, ", ETA %s", age);
    }
    fprintf(stderr, "\rpoint %zu of %zu: %s%s\033[K", done + 1, total, what, eta);
    fflush(stderr);
    o->drawn = 1;
}

static void on_point(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n, void *ctx)
{
    (void)s;
    (void)n;
    run_out *o = ctx;
    progress_clear(o);
    if (o->fmt == BENCH_JSON)
        return;
    if (!o->header_done) {
        if (o->fmt == BENCH_CSV)
            bench_csv_header(stdout);
        else
            bench_table_header(stdout);
        o->header_done = 1;
    }
    if (o->fmt == BENCH_CSV)
        bench_csv_row(stdout, p);
    else
        bench_table_row(stdout, p);
    fflush(stdout);
}

/* ---- option parsing --------------------------------------------------------- */

static int parse_double(const char *opt, const char *s, double lo, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < lo)
        return vyre_cli_usage_error("run", NULL, "bad value '%s' for %s: expected a number >= %g",
                                    s, opt, lo);
    *out = v;
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
            return vyre_cli_usage_error("run", "write ordinals such as 0,1, or all",
                                        "bad device list '%s'", s);
        for (size_t i = 0; i < *n; i++)
            if (devs[i] == (int)v)
                return vyre_cli_usage_error("run", NULL, "device %ld is listed twice in '%s'", v,
                                            s);
        devs[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return vyre_cli_usage_error("run", "write ordinals such as 0,1, or all",
                                        "bad device list '%s'", s);
    }
    if (!*n)
        return vyre_cli_usage_error("run", "write ordinals such as 0,1, or all",
                                    "bad device list '%s'", s);
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
            const char *near = vyre_cli_nearest(tok, names, ns);
            char hint[128];
            if (near)
                snprintf(hint, sizeof hint, "did you mean '%s'?", near);
            else
                snprintf(hint, sizeof hint,
                         "the suites are: launch, memcpy, bandwidth, compile, cache");
            return vyre_cli_usage_error("run", hint, "unknown suite '%s'", tok);
        }
        size_t i = 0;
        while (i < *n && strcmp(suites[i], d->name) != 0)
            i++;
        if (i == *n && *n < MAX_SUITES)
            suites[(*n)++] = d->name;
    }
    return 0;
}

static void join_argv(int argc, char **argv, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "vyre-bench");
    for (int i = 0; i < argc && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, " %s", argv[i]);
}

/* ---- the run ---------------------------------------------------------------- */

typedef struct run_plan {
    const char *suites[MAX_SUITES];
    size_t nsuites;
    int explicit_suites;
    const char *kernel;
    const char *entry;
    const char *spec_path;
    vyre_sweep_spec spec;
    int have_spec;
    vyre_axes axes;
    const char *db_path;
    int devs[MAX_DEVICES];
    size_t ndevs;
    int all_devs;
    int quiet;
} run_plan;

/* Ends the run as failed with err's message; returns the exit code. */
static int fail_run(vyre_results *db, int64_t run_id, const vyre_error *err, int code)
{
    vyre_cli_report(err);
    vyre_error e2;
    vyre_error_clear(&e2);
    if (run_id > 0 && vyre_bench_run_finish(db, run_id, VYRE_RUN_FAILED, err->message, &e2))
        vyre_cli_report(&e2);
    return code;
}

static int exit_for(int rc)
{
    return rc == VYRE_ENODRIVER || rc == VYRE_ENODEV ? VYRE_EXIT_NODRIVER : VYRE_EXIT_ERROR;
}

static int execute(run_plan *pl, bench_format fmt, vyre_bench_env *env, const char *cmdline)
{
    vyre_results *db = NULL;
    int code = bench_open_db(pl->db_path, &db);
    if (code)
        return code;
    vyre_error err;
    vyre_error_clear(&err);

    vyre_bench_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.command_line, sizeof run.command_line, "%s", cmdline);
    vyre_bench_git_rev(run.git_rev, sizeof run.git_rev);
    snprintf(run.cuda_version, sizeof run.cuda_version, "%s", vyre_cuda_toolkit_version());
    size_t len = 0;
    run.suites[0] = '\0';
    for (size_t i = 0; i < pl->nsuites; i++)
        len += (size_t)snprintf(run.suites + len, sizeof run.suites - len, "%s%s", i ? "," : "",
                                pl->suites[i]);
    if (pl->kernel)
        snprintf(run.suites + len, sizeof run.suites - len, "%ssweep:%s:%s", len ? "," : "",
                 pl->kernel, pl->entry);
    int rc = vyre_bench_run_begin(db, &run, &err);
    if (rc) {
        vyre_cli_report(&err);
        vyre_results_close(db);
        return VYRE_EXIT_ERROR;
    }
    env->db = db;
    env->run_id = run.id;

    /* The GPU, when anything needs one. */
    int need_gpu = pl->kernel != NULL;
    for (size_t i = 0; i < pl->nsuites; i++)
        need_gpu |= vyre_bench_suite_find(pl->suites[i])->needs_gpu;
    int gpu_rc = -1;
    vyre_error gpu_err;
    vyre_error_clear(&gpu_err);
    vyre_gpu_monitor *mon = NULL;
    char arch[16] = "";
    if (need_gpu) {
        int count = 0;
        gpu_rc = vyre_cuda_device_count(&count, &gpu_err);
        if (gpu_rc == 0 && count == 0) {
            gpu_rc = VYRE_ENODEV;
            snprintf(gpu_err.message, sizeof gpu_err.message, "the NVIDIA driver reports no GPU");
            snprintf(gpu_err.hint, sizeof gpu_err.hint,
                     "check nvidia-smi and CUDA_VISIBLE_DEVICES");
        }
        if (gpu_rc == 0 && pl->all_devs) {
            pl->ndevs = 0;
            for (int d = 0; d < count && d < MAX_DEVICES; d++)
                pl->devs[pl->ndevs++] = d;
        }
        for (size_t i = 0; gpu_rc == 0 && i < pl->ndevs; i++)
            if (pl->devs[i] >= count) {
                gpu_rc = VYRE_ENODEV;
                snprintf(gpu_err.message, sizeof gpu_err.message,
                         "no device %d: the driver sees %d GPU%s", pl->devs[i], count,
                         count == 1 ? "" : "s");
                snprintf(gpu_err.hint, sizeof gpu_err.hint, "list them with 'vyre-bench devices'");
            }
        if (gpu_rc == 0) {
            if (vyre_gpu_monitor_open(&mon, NULL) != 0)
                mon = NULL;
            gpu_rc = vyre_bench_run_describe(&run, pl->devs, pl->ndevs, mon, &gpu_err);
        }
        if (gpu_rc == 0) {
            vyre_device_info di;
            if (vyre_cuda_device_info(pl->devs[0], &di, NULL) == 0)
                snprintf(arch, sizeof arch, "%s", di.arch);
        }
    }

    /* A sweep is checked (and compiled) before anything is measured. */
    vyre_bench_sweep sw;
    memset(&sw, 0, sizeof sw);
    if (pl->kernel) {
        sw.path = pl->kernel;
        sw.entry = pl->entry;
        sw.axes = &pl->axes;
        sw.spec_json = pl->have_spec ? pl->spec.json : NULL;
        sw.arch = arch[0] ? arch : "sm_90";
        char *log = NULL;
        rc = vyre_bench_sweep_check(&sw, &log, &err);
        if (rc) {
            code = fail_run(db, run.id, &err, VYRE_EXIT_ERROR);
            if (log && *log)
                fprintf(stderr, "compiler log:\n%s%s", log,
                        log[strlen(log) - 1] == '\n' ? "" : "\n");
            free(log);
            vyre_gpu_monitor_close(mon);
            vyre_results_close(db);
            return code;
        }
        free(log);
    }

    /* What runs, what is skipped. */
    const char *todo[MAX_SUITES];
    size_t ntodo = 0;
    char skipped[128] = "";
    size_t slen = 0;
    for (size_t i = 0; i < pl->nsuites; i++) {
        const vyre_bench_suite_def *d = vyre_bench_suite_find(pl->suites[i]);
        if (d->needs_gpu && gpu_rc != 0) {
            if (pl->explicit_suites) {
                code = fail_run(db, run.id, &gpu_err, exit_for(gpu_rc));
                vyre_gpu_monitor_close(mon);
                vyre_results_close(db);
                return code;
            }
            slen += (size_t)snprintf(skipped + slen, sizeof skipped - slen, "%s%s",
                                     slen ? ", " : "", d->name);
            continue;
        }
        todo[ntodo++] = d->name;
    }
    if (pl->kernel && gpu_rc != 0) {
        code = fail_run(db, run.id, &gpu_err, exit_for(gpu_rc));
        vyre_gpu_monitor_close(mon);
        vyre_results_close(db);
        return code;
    }
    if (skipped[0]) {
        snprintf(run.message, sizeof run.message, "skipped GPU suites %s: %.300s", skipped,
                 gpu_err.message);
        fprintf(stderr, "%s: note: skipped the GPU suites %s: %s\n", vyre_cli_prog(), skipped,
                gpu_err.message);
        if (gpu_err.hint[0])
            fprintf(stderr, "hint: %s\n", gpu_err.hint);
    }
    if (need_gpu || skipped[0]) {
        snprintf(run.devices, sizeof run.devices, "%s", gpu_rc == 0 ? run.devices : "");
        if ((rc = vyre_bench_run_update(db, &run, &err))) {
            code = fail_run(db, run.id, &err, VYRE_EXIT_ERROR);
            vyre_gpu_monitor_close(mon);
            vyre_results_close(db);
            return code;
        }
    }

    env->devices = pl->devs;
    env->ndevices = pl->ndevs;
    env->mon = mon;
    env->stop = &g_stop;
    env->total = 0;
    for (size_t i = 0; i < ntodo; i++)
        env->total += vyre_bench_suite_points(todo[i], env);
    if (pl->kernel)
        env->total += vyre_bench_sweep_points(&sw, env);

    run_out out;
    memset(&out, 0, sizeof out);
    out.fmt = fmt;
    out.progress = !pl->quiet && isatty(STDERR_FILENO);
    out.start_ns = mono_ns();
    env->on_point = on_point;
    env->on_progress = on_progress;
    env->cb_ctx = &out;

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);

    rc = 0;
    for (size_t i = 0; !rc && !env->interrupted && !g_stop && i < ntodo; i++)
        rc = vyre_bench_suite_run(todo[i], env, &err);
    if (!rc && !env->interrupted && !g_stop && pl->kernel)
        rc = vyre_bench_sweep_run(&sw, env, &err);
    sigaction(SIGINT, &old, NULL);
    progress_clear(&out);

    int interrupted = env->interrupted || g_stop;
    if (rc) {
        code = fail_run(db, run.id, &err, exit_for(rc));
    } else {
        vyre_error e2;
        vyre_error_clear(&e2);
        vyre_run_status st = interrupted ? VYRE_RUN_INTERRUPTED : VYRE_RUN_DONE;
        if (vyre_bench_run_finish(db, run.id, st, run.message[0] ? run.message : NULL, &e2)) {
            vyre_cli_report(&e2);
            code = VYRE_EXIT_ERROR;
        } else if (fmt == BENCH_JSON) {
            vyre_bench_point *pts = NULL;
            size_t np = 0;
            vyre_bench_run r2;
            if (vyre_bench_run_get(db, run.id, &r2, &e2) ||
                vyre_bench_points_get(db, run.id, &pts, &np, &e2)) {
                vyre_cli_report(&e2);
                code = VYRE_EXIT_ERROR;
            } else {
                code = bench_json_run(stdout, db, &r2, pts, np, 0);
            }
            free(pts);
        }
        if (!code && fmt == BENCH_TABLE) {
            if (skipped[0])
                printf("\nskipped: %s (%s)\n", skipped, gpu_err.message);
            printf("%srun %lld %s, %zu point%s stored in %s\n", skipped[0] ? "" : "\n",
                   (long long)run.id, interrupted ? "interrupted" : "done", env->done,
                   env->done == 1 ? "" : "s", vyre_results_path(db));
        }
        if (interrupted) {
            fprintf(stderr, "%s: interrupted: run %lld keeps the %zu point%s finished\n",
                    vyre_cli_prog(), (long long)run.id, env->done, env->done == 1 ? "" : "s");
            if (!code)
                code = 130;
        }
    }
    vyre_gpu_monitor_close(mon);
    vyre_results_close(db);
    return code;
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"suite", required_argument, NULL, 's'},    {"axis", required_argument, NULL, 'a'},
        {"entry", required_argument, NULL, 'e'},    {"spec", required_argument, NULL, 'S'},
        {"mode", required_argument, NULL, 'm'},     {"min-samples", required_argument, NULL, 'n'},
        {"min-time", required_argument, NULL, 't'}, {"max-noise", required_argument, NULL, 'N'},
        {"timeout", required_argument, NULL, 'T'},  {"quick", no_argument, NULL, 'Q'},
        {"no-kernels", no_argument, NULL, 'K'},     {"devices", required_argument, NULL, 'd'},
        {"db", required_argument, NULL, 'D'},       {"csv", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},           {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    run_plan pl;
    memset(&pl, 0, sizeof pl);
    vyre_axes_init(&pl.axes);
    pl.devs[0] = 0;
    pl.ndevs = 1;
    vyre_bench_env env;
    memset(&env, 0, sizeof env);
    vyre_stop_rule rule = VYRE_STOP_RULE_DEFAULT;
    double min_samples = -1, min_time = -1, max_noise = -1, timeout = -1;
    int quick = 0, kernels = 1, mode = 0;
    bench_format fmt = BENCH_TABLE;
    const char *axis_args[VYRE_AXES_MAX];
    size_t naxis_args = 0;
    int c, code = 0;
    /* Before getopt_long permutes argv. */
    char cmdline[1024];
    join_argv(argc, argv, cmdline, sizeof cmdline);
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hqa:s:", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            pl.explicit_suites = 1;
            code = add_suites(optarg, pl.suites, &pl.nsuites);
            break;
        case 'a':
            if (naxis_args < VYRE_AXES_MAX)
                axis_args[naxis_args++] = optarg;
            else
                code = vyre_cli_usage_error("run", NULL, "more than %d axes", VYRE_AXES_MAX);
            break;
        case 'e':
            pl.entry = optarg;
            break;
        case 'S':
            pl.spec_path = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "hot") == 0)
                mode = 0;
            else if (strcmp(optarg, "cold") == 0)
                mode = 1;
            else if (strcmp(optarg, "both") == 0)
                mode = 2;
            else
                code =
                    vyre_cli_usage_error("run", "use hot, cold or both", "bad mode '%s'", optarg);
            break;
        case 'n':
            code = parse_double("--min-samples", optarg, 1, &min_samples);
            break;
        case 't':
            code = parse_double("--min-time", optarg, 0, &min_time);
            break;
        case 'N':
            code = parse_double("--max-noise", optarg, 0, &max_noise);
            break;
        case 'T':
            code = parse_double("--timeout", optarg, 0, &timeout);
            break;
        case 'Q':
            quick = 1;
            break;
        case 'K':
            kernels = 0;
            break;
        case 'd':
            code = parse_devices(optarg, pl.devs, &pl.ndevs, &pl.all_devs);
            break;
        case 'D':
            pl.db_path = optarg;
            break;
        case 'c':
        case 'j':
            if (fmt != BENCH_TABLE && fmt != (c == 'c' ? BENCH_CSV : BENCH_JSON)) {
                code = bench_csv_json_conflict("run");
                break;
            }
            fmt = c == 'c' ? BENCH_CSV : BENCH_JSON;
            break;
        case 'q':
            pl.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return VYRE_EXIT_OK;
        default:
            return vyre_cli_bad_option("run", argv, optind, optopt, "hqa:s:", opts);
        }
        if (code)
            goto out;
    }
    if (optind < argc)
        pl.kernel = argv[optind++];
    if (optind < argc) {
        code = vyre_cli_usage_error("run", NULL, "unexpected argument '%s'", argv[optind]);
        goto out;
    }
    vyre_error err;
    vyre_error_clear(&err);
    if (pl.spec_path) {
        if (vyre_sweep_spec_load(&pl.spec, pl.spec_path, &err)) {
            vyre_cli_report(&err);
            code = VYRE_EXIT_ERROR;
            goto out;
        }
        pl.have_spec = 1;
        if (!pl.kernel)
            pl.kernel = pl.spec.kernel_path;
        if (!pl.entry)
            pl.entry = pl.spec.entry;
        if (!pl.kernel) {
            code = vyre_cli_usage_error("run",
                                        "name it in the spec (\"kernel\") or on the command line",
                                        "spec '%s' names no kernel", pl.spec_path);
            goto out;
        }
        for (size_t i = 0; i < pl.spec.axes.n; i++) {
            const vyre_axis *a = &pl.spec.axes.axis[i];
            if (vyre_axes_add_values(&pl.axes, a->name, a->text, &err)) {
                vyre_cli_report(&err);
                code = VYRE_EXIT_ERROR;
                goto out;
            }
        }
    }
    for (size_t i = 0; i < naxis_args; i++)
        if (vyre_axes_add(&pl.axes, axis_args[i], &err)) {
            vyre_cli_report(&err);
            fprintf(stderr, "try '%s run --help'\n", vyre_cli_prog());
            code = VYRE_EXIT_ERROR;
            goto out;
        }
    if (pl.kernel && !pl.entry) {
        code = vyre_cli_usage_error("run", "name the kernel's extern \"C\" function",
                                    "a kernel needs --entry NAME");
        goto out;
    }
    if (!pl.kernel && (naxis_args || pl.entry)) {
        code = vyre_cli_usage_error(
            "run", "give the kernel file: vyre-bench run KERNEL.cu --entry NAME -a ...",
            "%s without a kernel", pl.entry ? "--entry" : "-a");
        goto out;
    }
    if (!pl.kernel && !pl.nsuites) {
        size_t ns = 0;
        const vyre_bench_suite_def *all = vyre_bench_suites(&ns);
        for (size_t i = 0; i < ns && i < MAX_SUITES; i++)
            pl.suites[pl.nsuites++] = all[i].name;
    }
    if (quick) {
        rule.min_samples = 5;
        rule.min_time_s = 0.05;
        rule.max_noise = 0.02;
        rule.timeout_s = 3.0;
    }
    if (min_samples >= 1)
        rule.min_samples = (size_t)min_samples;
    if (min_time >= 0)
        rule.min_time_s = min_time;
    if (max_noise >= 0)
        rule.max_noise = max_noise / 100.0;
    if (timeout >= 0)
        rule.timeout_s = timeout;
    env.rule = rule;
    env.quick = quick;
    env.cold = mode;
    env.kernels = kernels;
    env.self_exe = "/proc/self/exe";
    env.jit_child_cmd = BENCH_JIT_CHILD_CMD;
    env.tmp_dir = getenv("TMPDIR");
    code = execute(&pl, fmt, &env, cmdline);
out:
    if (pl.have_spec)
        vyre_sweep_spec_release(&pl.spec);
    vyre_axes_release(&pl.axes);
    return code;
}

int cmd_jit_cold(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: vyre-bench %s FILE.ptx (internal)\n", BENCH_JIT_CHILD_CMD);
        return VYRE_EXIT_ERROR;
    }
    uint64_t ns = 0;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_bench_jit_cold_child(argv[1], &ns, &err);
    if (rc) {
        vyre_cli_report(&err);
        return vyre_cli_exit_code(rc);
    }
    printf("%llu\n", (unsigned long long)ns);
    return VYRE_EXIT_OK;
}
