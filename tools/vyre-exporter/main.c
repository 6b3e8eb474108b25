/*
 * main.c - vyre-exporter: options, then serve until SIGINT or SIGTERM.
 *
 * exit status: 0 stopped by a signal, 2 usage or operational error (bad
 * option, bad web config, cannot listen).
 */
#include <errno.h>
#include <pthread.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool_cli.h"
#include "tool_opt.h"
#include "tool_util.h"
#include "exporter.h"
#include "server.h"
#include "webconfig.h"
#include "vyre/vyre.h"

enum {
    O_LISTEN = 256,
    O_PATH,
    O_TOPN,
    O_TELDIR,
    O_CACHEDIR,
    O_CACHEREF,
    O_USAGE,
    O_NOGPU,
    O_NOCACHE,
    O_NOUSAGE,
    O_DCGM,
    O_WEBCFG
};

/* The exporter's options, declared once (tools/common/tool_opt.h):
 * --help's OPTIONS, getopt's arrays and the completion come from here. */
static const tool_opt exp_opts_table[] = {
    {O_LISTEN, 0, "web.listen-address", "ADDR",
     "HOST:PORT, [IPV6]:PORT or :PORT (every address);\n"
     "port 0 picks a free one (default :" TOOL_STR(EXP_DEFAULT_PORT) ")",
     NULL},
    {O_PATH, 0, "web.telemetry-path", "PATH", "where the metrics are served (default /metrics)",
     NULL},
    {O_WEBCFG, 0, "web.config.file", "FILE",
     "TLS and basic auth, in the Prometheus exporter\n"
     "toolkit's YAML: tls_server_config (cert_file,\n"
     "key_file) and basic_auth_users (bcrypt hashes)",
     TOOL_OPT_FILE},
    {O_TOPN, 0, "kernels.top-n", "N",
     "kernel names exported per process, by GPU time,\n"
     "0 to " TOOL_STR(EXP_MAX_TOP_N) " (default " TOOL_STR(EXP_DEFAULT_TOP_N) ")",
     NULL},
    {O_TELDIR, 0, "telemetry.dir", "DIR",
     "telemetry pages (default $VYRE_TELEMETRY_DIR, else\n"
     "/dev/shm/vyre-<uid>)",
     TOOL_OPT_DIR},
    {O_CACHEDIR, 0, "cache-dir", "DIR",
     "pipeline cache root (default $VYRE_PTX_CACHE_DIR,\n"
     "else $XDG_CACHE_HOME/vyre/ptx-cache, else\n"
     "~/.cache/vyre/ptx-cache)",
     TOOL_OPT_DIR},
    {O_CACHEREF, 0, "cache.refresh-interval", "S",
     "re-read the cache at most every S seconds\n"
     "(default 5)",
     NULL},
    {O_USAGE, 0, "cache-usage-interval", "S",
     "measure the caches' sizes every S seconds, in a\n"
     "thread of their own, 1 to 86400 (default " TOOL_STR(EXP_DEFAULT_USAGE_S) ")",
     NULL},
    {O_NOGPU, 0, "no-gpu", NULL, "do not query NVML", NULL},
    {O_NOCACHE, 0, "no-cache", NULL, "no pipeline cache families", NULL},
    {O_NOUSAGE, 0, "no-cache-usage", NULL, "no vyre_cache_usage_ families", NULL},
    {O_DCGM, 0, "collector.dcgm-compat", NULL,
     "also the fields of dcgm-exporter's default\n"
     "counters, under its names and labels\n"
     "(DCGM_FI_DEV_GPU_UTIL{gpu,UUID,modelName,...})",
     NULL},
    {'h', 'h', "help", NULL, "this help", NULL},
    {'V', 'V', "version", NULL, "version", NULL},
    /* The spellings before the four tools agreed (vyre-cachectl's and
     * vyre-top's --cache-dir, one interval spelling): they still parse,
     * with a note, for one release. */
    {O_CACHEDIR, 0, "cache.dir", "DIR", NULL, NULL},
    {O_USAGE, 0, "cache-usage.interval", "S", NULL, NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-exporter [--web.listen-address ADDR] [--web.telemetry-path PATH]\n"
            "                     [--kernels.top-n N] [--telemetry.dir DIR] [--cache-dir DIR]\n"
            "                     [--cache.refresh-interval S] [--cache-usage-interval S]\n"
            "                     [--no-gpu] [--no-cache] [--no-cache-usage]\n"
            "                     [--collector.dcgm-compat] [--web.config.file FILE]\n"
            "\n"
            "Prometheus exporter: serves the GPUs (NVML) and every process NVML lists on\n"
            "them (memory, SM use, command, user), the processes that publish vyre\n"
            "telemetry (launches, copies, cache hits, NVTX range latency histograms, GPU\n"
            "time of their top kernels), the pipeline cache, the size of each cache of\n"
            "compiled GPU code (vyre's, the driver's JIT cache, Triton's, TorchInductor's)\n"
            "with its filesystem's free space, and its own scrape figures in the text\n"
            "exposition format.\n"
            "\n");
    tool_opt_help(out, exp_opts_table);
    fprintf(out, "\n"
                 "environment: VYRE_TELEMETRY_DIR, VYRE_PTX_CACHE_DIR, VYRE_NVML_LIBRARY;\n"
                 "             the caches' own: CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE,\n"
                 "             TRITON_CACHE_DIR, TRITON_HOME, TORCHINDUCTOR_CACHE_DIR\n"
                 "\n"
                 "exit status: 0 stopped by SIGINT or SIGTERM, 2 usage or operational error\n"
                 "             (bad option, bad web config, cannot listen)\n");
}

/* parse_args after --help or --version: exit 0. */
#define ARGS_DONE (-1)

/* --kernels.top-n N and --cache.refresh-interval S; 0 or the exit code. */
static int parse_top_n(const char *s, exp_opts *o)
{
    long v;
    if (tool_parse_long(s, 0, EXP_MAX_TOP_N, &v))
        return tool_usage_error(NULL, NULL, "invalid --kernels.top-n '%s' (0 to %d)", s,
                                EXP_MAX_TOP_N);
    o->kernels_top_n = (unsigned)v;
    return 0;
}

static int parse_refresh(const char *s, exp_opts *o)
{
    if (tool_parse_real(s, 0, 86400, &o->cache_refresh_s))
        return tool_usage_error(NULL, NULL,
                                "invalid --cache.refresh-interval '%s' (0 to 86400 seconds)", s);
    return 0;
}

/* The options into o, *listen, *path and *webcfg: 0 to serve, ARGS_DONE,
 * or the exit code. */
static int parse_args(int argc, char **argv, exp_opts *o, const char **listen, const char **path,
                      const char **webcfg)
{
    tool_opt_arrays g;
    if (tool_opt_getopt(exp_opts_table, &g) != 0)
        return TOOL_EXIT_ERROR;
    int c, code = 0, no_usage = 0;
    opterr = 0;
    int li = -1;
    while ((c = getopt_long(argc, argv, g.shorts, g.longs, &li)) != -1) {
        tool_opt_note_renamed(exp_opts_table, &g, li);
        li = -1;
        switch (c) {
        case O_LISTEN:
            *listen = optarg;
            break;
        case O_PATH:
            *path = optarg;
            break;
        case O_WEBCFG:
            *webcfg = optarg;
            break;
        case O_TOPN:
            code = parse_top_n(optarg, o);
            break;
        case O_TELDIR:
            o->telemetry_dir = optarg;
            break;
        case O_CACHEDIR:
            o->cache_dir = optarg;
            break;
        case O_CACHEREF:
            code = parse_refresh(optarg, o);
            break;
        case O_USAGE:
            code = tool_usage_interval_arg(optarg, "families", &o->usage_every_s);
            break;
        case O_NOUSAGE:
            no_usage = 1;
            break;
        case O_NOGPU:
            o->no_gpu = 1;
            break;
        case O_NOCACHE:
            o->no_cache = 1;
            break;
        case O_DCGM:
            o->dcgm_compat = 1;
            break;
        case 'h':
            usage(stdout);
            return ARGS_DONE;
        case 'V':
            printf("vyre-exporter %s (libvyrecore %s)\n", vyre_version(), vyre_version());
            return ARGS_DONE;
        default:
            return tool_bad_option(NULL, argv, optind, optopt, g.shorts, g.longs);
        }
        if (code)
            return code;
    }
    if (optind < argc)
        return tool_usage_error(NULL, "vyre-exporter takes options only",
                                "unexpected argument '%s'", argv[optind]);
    if (no_usage)
        o->usage_every_s = 0;
    return 0;
}

/* A telemetry directory that does not exist (or is no directory) exports
 * no process, and nothing else would say why: a typo in --telemetry.dir or
 * $VYRE_TELEMETRY_DIR looked like an idle machine. Warn once at start; the
 * exporter still serves (publishers create the directory on their first
 * page, so it may appear later and is then read). */
static void warn_telemetry_dir(const exp_opts *o)
{
    char dir[VYRE_TELEMETRY_PATH_MAX];
    const char *from = "--telemetry.dir";
    if (o->telemetry_dir) {
        tool_strlcpy(dir, o->telemetry_dir, sizeof dir);
    } else {
        vyre_error e;
        vyre_error_clear(&e);
        if (vyre_telemetry_dir(dir, sizeof dir, &e) != 0)
            return; /* the collector reports it on every scrape */
        const char *env = getenv("VYRE_TELEMETRY_DIR");
        from = env && *env ? "$VYRE_TELEMETRY_DIR" : "the default";
    }
    struct stat st;
    int rc = stat(dir, &st), why = rc == 0 ? 0 : errno;
    if (rc == 0 && S_ISDIR(st.st_mode))
        return;
    int missing = why == ENOENT || why == ENOTDIR;
    fprintf(stderr,
            "vyre-exporter: warning: telemetry directory '%s' (%s) %s: no process is exported "
            "until it holds pages\n",
            dir, from,
            missing ? "does not exist"
            : why   ? strerror(why)
                    : "is not a directory");
    fprintf(stderr, "hint: instrumented processes publish into $VYRE_TELEMETRY_DIR, else "
                    "/dev/shm/vyre-<uid>; give the exporter the same directory (--telemetry.dir "
                    "DIR) and run it as the same user\n");
}

int main(int argc, char **argv)
{
    tool_set_prog("vyre-exporter");
    if (tool_opt_wants_completion(argc, argv)) {
        tool_opt_complete(stdout, exp_opts_table);
        return TOOL_EXIT_OK;
    }
    char default_listen[16];
    snprintf(default_listen, sizeof default_listen, ":%d", EXP_DEFAULT_PORT);
    const char *listen = default_listen;
    const char *path = "/metrics";
    exp_opts o;
    memset(&o, 0, sizeof o);
    o.kernels_top_n = EXP_DEFAULT_TOP_N;
    o.cache_refresh_s = 5;
    o.usage_every_s = EXP_DEFAULT_USAGE_S;
    const char *webcfg = NULL;
    int code = parse_args(argc, argv, &o, &listen, &path, &webcfg);
    if (code)
        return code == ARGS_DONE ? TOOL_EXIT_OK : code;
    exp_web_config web;
    memset(&web, 0, sizeof web);
    if (webcfg) {
        char err[1024], hint[512];
        if (exp_web_config_load(webcfg, &web, err, sizeof err, hint, sizeof hint) != 0) {
            fprintf(stderr, "vyre-exporter: error: %s\n", err);
            if (hint[0])
                fprintf(stderr, "hint: %s\n", hint);
            exp_web_config_release(&web);
            return TOOL_EXIT_ERROR;
        }
    }

    /* SIGINT/SIGTERM are taken by sigwait below; block them first so the
     * server's thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    warn_telemetry_dir(&o);
    exporter *x = NULL;
    if (exporter_new(&o, &x) != 0) {
        fprintf(stderr, "vyre-exporter: error: out of memory\n");
        exp_web_config_release(&web);
        return TOOL_EXIT_ERROR;
    }
    char bound[300], err[512];
    exp_server *s = exp_server_start(x, listen, path, webcfg ? &web : NULL, bound, sizeof bound,
                                     err, sizeof err);
    if (!s) {
        fprintf(stderr, "vyre-exporter: error: %s\n", err);
        exporter_free(x);
        exp_web_config_release(&web);
        return TOOL_EXIT_ERROR;
    }
    fprintf(stderr, "vyre-exporter: listening on %s%s%s, metrics at %s\n", bound,
            web.cert_pem ? " (TLS)" : "", web.nusers ? " (basic auth)" : "", path);
    fflush(stderr);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    exp_server_stop(s);
    exporter_free(x);
    exp_web_config_release(&web);
    return TOOL_EXIT_OK;
}
