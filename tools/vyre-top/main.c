/*
 * main.c - vyre-top: options, then either the interactive loop (collect,
 * compose, draw, read keys) or the --batch / --json loop.
 *
 * exit status: 0 success, 2 usage or operational error (bad option, no
 * terminal for the interactive view, write error).
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "tool_cli.h"
#include "tool_opt.h"
#include "tool_util.h"
#include "collect.h"
#include "draw.h"
#include "terminate.h"
#include "view.h"
#include "vyre/vyre.h"

/* vyre-top's options, declared once: getopt's arrays, the OPTIONS of
 * --help and the completion all come from here (tool_opt.h). */
/* Long-only options (keys past any short letter). */
enum { OPT_JSON = 256, OPT_NO_GPU, OPT_USAGE_EVERY, OPT_NO_USAGE, OPT_CACHE_DIR };

static const tool_opt top_opts[] = {
    {'d', 'd', "delay", "SECONDS", "refresh interval, 0.1 to 3600 (default 1)", "0.1 0.5 1 2 5"},
    {'n', 'n', "iterations", "N", "stop after N refreshes", NULL},
    {'C', 'C', "no-color", NULL, "monochrome (also when NO_COLOR is set and not empty)", NULL},
    {'b', 'b', "batch", NULL, "print text frames instead of the screen (like top -b)", NULL},
    {'w', 'w', "width", "COLS", "width of --batch frames (default $COLUMNS, else 160)",
     "80 120 160 200"},
    {OPT_JSON, 0, "json", NULL, "print one JSON object per refresh (schema_version 5)", NULL},
    {OPT_NO_GPU, 0, "no-gpu", NULL, "do not query NVML", NULL},
    {OPT_USAGE_EVERY, 0, "cache-usage-interval", "SECONDS",
     "measure the sizes of the caches (vyre's, the driver's\n"
     "JIT cache, Triton's, TorchInductor's) and how full\n"
     "their filesystems are every SECONDS, 1 to 86400\n"
     "(default 30)",
     "30 60 300"},
    {OPT_NO_USAGE, 0, "no-cache-usage", NULL, "do not measure them (--json: cache_usage null)",
     NULL},
    {OPT_CACHE_DIR, 0, "cache-dir", "DIR",
     "the pipeline cache to show (default $VYRE_PTX_CACHE_DIR,\n"
     "else $XDG_CACHE_HOME/vyre/ptx-cache), as vyre-cachectl's\n"
     "and vyre-exporter's --cache-dir",
     TOOL_OPT_DIR},
    {'h', 'h', "help", NULL, "this help", NULL},
    {'V', 'V', "version", NULL, "version", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: vyre-top [-d SECONDS] [-n N] [-C] [--batch [--width COLS] | --json]\n"
        "                [--cache-usage-interval SECONDS | --no-cache-usage] [--cache-dir DIR]\n\n"
        "Live view of the GPUs (NVML), every process on them (GPU memory, SM%%, CPU%%,\n"
        "resident memory, user, command), and for those that publish vyre telemetry\n"
        "their launches, copies and cache hits, NVTX range latencies, the kernels\n"
        "taking GPU time, the pipeline cache's health, and the size of each cache of\n"
        "compiled GPU code with its filesystem's fill (red: over its limit, or the\n"
        "filesystem at least 90%% full).\n\n");
    tool_opt_help(out, top_opts);
    fprintf(out, "\n"
                 "keys: q quit, Tab/arrows panel and row, s/F6 sort, / filter, p pause,\n"
                 "      k SIGTERM to the selected process (asks y/N; only your own unless\n"
                 "      root), +/- refresh interval, h or ? help\n\n"
                 "environment: VYRE_TELEMETRY_DIR (where processes publish), VYRE_PTX_CACHE_DIR,\n"
                 "             VYRE_NVML_LIBRARY, NO_COLOR; the caches' own: CUDA_CACHE_PATH,\n"
                 "             CUDA_CACHE_MAXSIZE, TRITON_CACHE_DIR, TRITON_HOME,\n"
                 "             TORCHINDUCTOR_CACHE_DIR\n\n"
                 "Processes appear when they link libvyrecore (vyre-bench does) or when any CUDA\n"
                 "program runs with the injection library:\n"
                 "  CUDA_INJECTION64_PATH=<prefix>/lib/libvyre-inject.so python train.py\n"
                 "(VYRE_INJECT=kernels adds kernel names; see the README)\n\n"
                 "exit status: 0 success, 2 usage or operational error\n");
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int parse_delay(const char *s, double *out)
{
    if (tool_parse_real(s, TOP_DELAY_MIN - 1e-9, TOP_DELAY_MAX, out))
        return tool_usage_error(NULL, "give seconds from 0.1 to 3600, e.g. '-d 0.5'",
                                "invalid refresh interval '%s'", s);
    return 0;
}

static int parse_count(const char *s, long lo, long hi, const char *what, long *out)
{
    if (tool_parse_long(s, lo, hi, out))
        return tool_usage_error(NULL, NULL, "invalid %s '%s' (from %ld to %ld)", what, s, lo, hi);
    return 0;
}

/* Sizes are measured far less often than frames: a scan of a big Triton
 * cache takes seconds, and a filesystem filling is a matter of minutes. */
#define TOP_USAGE_DEFAULT_S 30.0

static uint64_t delay_ns(double s)
{
    return (uint64_t)llround(s * 1e9);
}

static int run_batch(top_collector *c, top_ui *ui, long n, int json, int width)
{
    top_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return TOOL_EXIT_ERROR;
    /* The first reading only primes the rates: every printed frame is
     * one interval after the previous reading. */
    top_collect(c, s);
    uint64_t next = tool_mono_ns();
    int rc = TOOL_EXIT_OK;
    for (long i = 0; n == 0 || i < n; i++) {
        next += delay_ns(ui->delay_s);
        sleep_until(next);
        top_snapshot_release(s);
        top_collect(c, s);
        int w = json ? top_batch_json(stdout, s) : top_batch_frame(stdout, s, ui, width);
        if (w != 0) {
            fprintf(stderr, "vyre-top: error: cannot write the output: %s\n", strerror(errno));
            rc = TOOL_EXIT_ERROR;
            break;
        }
    }
    top_snapshot_release(s);
    free(s);
    return rc;
}

static void redraw(const top_snapshot *s, top_ui *ui)
{
    int rows, cols;
    top_draw_size(&rows, &cols);
    top_grid g;
    if (top_view_compose(s, ui, rows, cols, 0, &g) == 0) {
        top_draw_frame(&g, ui->mono);
        top_grid_release(&g);
    }
}

static int run_screen(top_collector *c, top_ui *ui, long n)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return tool_usage_error(NULL, "use --batch or --json for output to a pipe or file",
                                "the interactive view needs a terminal");
    top_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return TOOL_EXIT_ERROR;
    if (top_draw_init(ui->mono) != 0) {
        free(s);
        return TOOL_EXIT_ERROR;
    }
    top_collect(c, s);
    long frames = 1;
    uint64_t next = tool_mono_ns() + delay_ns(ui->delay_s);
    redraw(s, ui);
    for (;;) {
        uint64_t now = tool_mono_ns();
        int wait_ms = now >= next ? 0 : (int)((next - now + 999999) / 1000000);
        struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
        int pr = poll(&pfd, 1, wait_ms);
        if (pr < 0 && errno != EINTR)
            break;
        unsigned what = 0;
        int key;
        /* After EINTR (SIGWINCH) curses reports KEY_RESIZE through getch. */
        while ((key = top_draw_key()) != -1) {
            unsigned k = top_ui_key(ui, key);
            if (k & TOP_UI_KILL)
                top_signal(NULL, ui->kill_pid, ui->kill_start, ui->kill_sig, ui->msg,
                           sizeof ui->msg);
            what |= k;
        }
        if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
            break; /* the terminal went away */
        if (what & TOP_UI_QUIT)
            break;
        if (what & TOP_UI_DELAY)
            next = s->mono_ns + delay_ns(ui->delay_s);
        now = tool_mono_ns();
        if (now >= next) {
            next = now + delay_ns(ui->delay_s);
            if (!ui->paused) {
                top_snapshot_release(s);
                top_collect(c, s);
                frames++;
                what |= TOP_UI_REDRAW;
            }
        }
        if (what & (TOP_UI_REDRAW | TOP_UI_RESIZE))
            redraw(s, ui);
        if (n > 0 && frames >= n && !ui->paused)
            break;
    }
    top_draw_end();
    top_snapshot_release(s);
    free(s);
    return TOOL_EXIT_OK;
}

int main(int argc, char **argv)
{
    tool_set_prog("vyre-top");
    setlocale(LC_ALL, "");
    if (tool_opt_wants_completion(argc, argv)) {
        tool_opt_complete(stdout, top_opts);
        return TOOL_EXIT_OK;
    }
    tool_opt_arrays g;
    if (tool_opt_getopt(top_opts, &g) != 0)
        return TOOL_EXIT_ERROR;
    double delay = 1.0, usage_s = TOP_USAGE_DEFAULT_S;
    long n = 0, width = 0;
    int batch = 0, json = 0, mono = 0, no_gpu = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (parse_delay(optarg, &delay))
                return TOOL_EXIT_ERROR;
            break;
        case 'n':
            if (parse_count(optarg, 1, 1000000000L, "iteration count", &n))
                return TOOL_EXIT_ERROR;
            break;
        case 'w':
            if (parse_count(optarg, 20, 1000, "width", &width))
                return TOOL_EXIT_ERROR;
            break;
        case 'C':
            mono = 1;
            break;
        case 'b':
            batch = 1;
            break;
        case OPT_JSON:
            json = 1;
            break;
        case OPT_NO_GPU:
            no_gpu = 1;
            break;
        case OPT_USAGE_EVERY:
            if (tool_usage_interval_arg(optarg, "sizes", &usage_s))
                return TOOL_EXIT_ERROR;
            break;
        case OPT_CACHE_DIR:
            /* The collector resolves the root as every tool does, from
             * the environment: --cache-dir is VYRE_PTX_CACHE_DIR for this
             * process (and the vyre caches it measures). */
            if (!*optarg)
                return tool_usage_error(
                    NULL, "name a directory, e.g. --cache-dir ~/.cache/vyre/ptx-cache",
                    "--cache-dir is empty");
            if (setenv("VYRE_PTX_CACHE_DIR", optarg, 1) != 0)
                return tool_usage_error(NULL, NULL, "cannot set --cache-dir: %s", strerror(errno));
            break;
        case OPT_NO_USAGE:
            usage_s = 0;
            break;
        case 'h':
            usage(stdout);
            return TOOL_EXIT_OK;
        case 'V':
            printf("vyre-top %s (libvyrecore %s)\n", vyre_version(), vyre_version());
            return TOOL_EXIT_OK;
        default:
            return tool_bad_option(NULL, argv, optind, optopt, g.shorts, g.longs);
        }
    }
    if (optind < argc)
        return tool_usage_error(NULL, NULL, "unexpected argument '%s'", argv[optind]);
    if (batch && json)
        return tool_usage_error(NULL, NULL, "--batch and --json cannot be combined");
    if (width && !batch)
        return tool_usage_error(NULL, NULL, "--width applies to --batch only");
    if (!width) {
        const char *cols = getenv("COLUMNS");
        char *end = NULL;
        long v = cols ? strtol(cols, &end, 10) : 0;
        width = cols && *cols && !*end && v >= 20 && v <= 1000 ? v : 160;
    }

    top_collect_opts co = {0};
    co.no_gpu = no_gpu;
    co.usage_every_s = usage_s; /* 0: --no-cache-usage (cache_usage null in --json) */
    top_collector *col = NULL;
    if (top_collector_new(&co, &col) != 0) {
        fprintf(stderr, "vyre-top: error: out of memory\n");
        return TOOL_EXIT_ERROR;
    }
    top_ui ui;
    top_ui_init(&ui, delay);
    ui.mono = mono;
    top_ui_apply_env(&ui, getenv("NO_COLOR"));
    int rc = batch || json ? run_batch(col, &ui, n, json, (int)width) : run_screen(col, &ui, n);
    top_collector_free(col);
    return rc;
}
