/*
 * perf_top_gpus.c - vyre-top's CPU time per frame on a busy GPU host
 * (issue 37, Deliver 4): 2 GPUs and 200 processes through the test
 * build's NVML fake, at a 1 s refresh, as a share of one core (goal: under
 * 1%), against a baseline of the same vyre-top with no GPU process.
 *
 * Three runs of `vyre-top --batch -d 1 -n N` (output to /dev/null), each
 * for --seconds, the child's CPU time from wait4's rusage:
 *   baseline   2 GPUs, no process on them
 *   many       2 GPUs, the fake's many-process option (FAKENVML_MANY_PROCS:
 *              pids 10000+j on GPU 0; most have no /proc entry)
 *   real       2 GPUs, --procs sleeping children of this program listed
 *              half on each GPU (every tenth on both), so /proc has each
 * and one `--batch -n 2` per setup whose "Processes (N)" says how many rows
 * vyre-top showed (libcore lists VYRE_GPU_MAX_PROCS processes a GPU).
 * With tmux on PATH, the real setup again with vyre-top interactive
 * (`vyre-top -d 1` in a 200x50 tmux pane), its CPU time read from
 * /proc/PID/stat over --seconds after a 5 s warm-up; --also CMD measures
 * another monitor the same way in the same setup (nvitop: docs/TOP.md).
 *
 * usage: perf_top_gpus [--seconds N] [--procs N] [--top PATH] [--nvml PATH]
 *                      [--also CMD]
 *   --seconds N  length of each run (default 60)
 *   --procs N    processes (default 200)
 *   --top PATH   the vyre-top binary (default: ../tools/vyre-top next to
 *                this program in the build tree, else $VYRE_TOP_BIN)
 *   --nvml PATH  the fake NVML (default: ../tests/libfakenvml.so next to
 *                this program, else $VYRE_FAKENVML_LIB)
 *   --also CMD   a shell command line of another monitor to measure in tmux
 *
 * Timings are printed, never judged: this is not a test. A sanitized or
 * Debug build measures the sanitizers: build with -DCMAKE_BUILD_TYPE=Release.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfutil.h"

#define MAX_PROCS 2000

typedef struct run_result {
    double wall_s;
    double cpu_s;
    long frames;
    int status;
} run_result;

static pid_t g_kids[MAX_PROCS];
static int g_nkids;

/* Runs `top --batch -d delay -n frames`, output to out (NULL: /dev/null). */
static run_result run_top(const char *top, double delay, long frames, const char *out)
{
    run_result r = {0};
    char d[32], n[32];
    snprintf(d, sizeof d, "%g", delay);
    snprintf(n, sizeof n, "%ld", frames);
    double t0 = perf_now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        r.status = -1;
        return r;
    }
    if (pid == 0) {
        int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600) : open("/dev/null", O_RDWR);
        if (fd >= 0)
            dup2(fd, 1);
        execl(top, top, "--batch", "--width=200", "-d", d, "-n", n, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    r.wall_s = perf_now_s() - t0;
    r.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    r.frames = frames + 1; /* plus the priming collection */
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

/* The rows the last frame of a short run showed ("Processes (N)"); -1
 * when the output has no such title. */
static long rows_shown(const char *top, const char *dir)
{
    char out[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/frame.txt", dir);
    run_result r = run_top(top, 0.3, 2, out);
    FILE *f = r.status == 0 ? fopen(out, "r") : NULL;
    long n = -1;
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Processes (");
        if (p)
            n = strtol(p + 11, NULL, 10);
    }
    if (f)
        fclose(f);
    unlink(out);
    return n;
}

static void report(const char *what, long rows, run_result r, const run_result *base)
{
    if (r.status != 0) {
        printf("%-10s  failed (status %d)\n", what, r.status);
        return;
    }
    double pct = 100.0 * r.cpu_s / r.wall_s;
    printf("%-10s  rows %4ld  wall %6.1f s  cpu %7.3f s  %6.3f%% of one core  %8.1f us/frame", what,
           rows, r.wall_s, r.cpu_s, pct, 1e6 * r.cpu_s / (double)r.frames);
    if (base && base->status == 0 && base->cpu_s > 0)
        printf("  %.2fx baseline", r.cpu_s / base->cpu_s * (base->wall_s / r.wall_s));
    printf("\n");
}

/* n children that sleep until killed (or this program dies). */
static int start_kids(int n)
{
    fflush(NULL);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return -1;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            prctl(PR_SET_NAME, "perf_gpu_proc");
            for (;;)
                pause();
        }
        g_kids[g_nkids++] = pid;
    }
    return 0;
}

static void stop_kids(void)
{
    for (int i = 0; i < g_nkids; i++)
        kill(g_kids[i], SIGKILL);
    for (int i = 0; i < g_nkids; i++)
        waitpid(g_kids[i], NULL, 0);
    g_nkids = 0;
}

/* FAKENVML_PROCS and FAKENVML_PROC_UTIL for the children: even ones on GPU
 * 0, odd ones on GPU 1, every tenth on both; 64 MiB + i MiB each. */
static int list_kids(void)
{
    size_t cap = (size_t)g_nkids * 64 + 64;
    char *procs = malloc(cap), *util = malloc(cap);
    if (!procs || !util) {
        free(procs);
        free(util);
        return -1;
    }
    size_t a = 0, b = 0;
    for (int i = 0; i < g_nkids; i++) {
        int gpu = i % 2, pid = (int)g_kids[i];
        unsigned long long bytes = (64ull + (unsigned)i) << 20;
        a += (size_t)snprintf(procs + a, cap - a, "%s%d:%d:%llu", a ? "," : "", gpu, pid, bytes);
        b += (size_t)snprintf(util + b, cap - b, "%s%d:%d:%d:1", b ? "," : "", gpu, pid, i % 100);
        if (i % 10 == 0) {
            a += (size_t)snprintf(procs + a, cap - a, ",%d:%d:%llu", 1 - gpu, pid, bytes);
            b += (size_t)snprintf(util + b, cap - b, ",%d:%d:%d:1", 1 - gpu, pid, i % 100);
        }
    }
    setenv("FAKENVML_PROCS", procs, 1);
    setenv("FAKENVML_PROC_UTIL", util, 1);
    free(procs);
    free(util);
    return 0;
}

/* CPU seconds (user + system) of pid from /proc/PID/stat; -1 when gone. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* tmux -L perf-top-gpus with the NULL-terminated args, output to out
 * (NULL: /dev/null); its exit status. */
static int tmux_run(const char *out, const char *const *args)
{
    const char *argv[16] = {"tmux", "-L", "perf-top-gpus", "-f", "/dev/null"};
    int n = 5;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600) : open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp("tmux", (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define TMUX(out, ...) tmux_run(out, (const char *const[]){__VA_ARGS__, NULL})

/* Runs cmd in a 200x50 tmux pane; after a 5 s warm-up, its CPU time over
 * seconds as a share of one core (-1 when it could not be measured). */
static double run_in_tmux(const char *cmd, const char *dir, double seconds)
{
    char line[4200], out[PATH_MAX + 16];
    snprintf(line, sizeof line, "exec %s", cmd);
    snprintf(out, sizeof out, "%s/tmux.out", dir);
    setenv("TMUX_TMPDIR", dir, 1);
    unsetenv("TMUX");
    if (TMUX(NULL, "new-session", "-d", "-s", "perf", "-x", "200", "-y", "50", line) != 0)
        return -1;
    struct timespec warm = {5, 0};
    nanosleep(&warm, NULL);
    double pct = -1;
    FILE *f = NULL;
    if (TMUX(out, "display-message", "-p", "-t", "perf", "#{pane_pid}") == 0 &&
        (f = fopen(out, "r")) != NULL) {
        long pid = 0;
        if (fscanf(f, "%ld", &pid) == 1 && pid > 0) {
            double c0 = proc_cpu_s((pid_t)pid), t0 = perf_now_s();
            struct timespec ts = {(time_t)seconds,
                                  (long)((seconds - (double)(time_t)seconds) * 1e9)};
            nanosleep(&ts, NULL);
            double c1 = proc_cpu_s((pid_t)pid), t1 = perf_now_s();
            if (c0 >= 0 && c1 >= c0)
                pct = 100.0 * (c1 - c0) / (t1 - t0);
        }
        fclose(f);
    }
    TMUX(NULL, "kill-server");
    unlink(out);
    return pct;
}

static void report_tmux(const char *what, double pct)
{
    if (pct < 0)
        printf("%-10s  could not be measured (did it start? is tmux on PATH?)\n", what);
    else
        printf("%-10s  %6.3f%% of one core  %8.1f us/frame (1 s refresh, tmux 200x50)\n", what, pct,
               pct * 1e4);
}

static int parse(int argc, char **argv, double *seconds, int *procs, const char **top,
                 const char **nvml, const char **also)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            *seconds = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc) {
            *procs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
            *top = argv[++i];
        } else if (strcmp(argv[i], "--nvml") == 0 && i + 1 < argc) {
            *nvml = argv[++i];
        } else if (strcmp(argv[i], "--also") == 0 && i + 1 < argc) {
            *also = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: perf_top_gpus [--seconds N] [--procs N] [--top PATH] [--nvml PATH] "
                   "[--also CMD]\n");
            exit(0);
        } else {
            fprintf(stderr,
                    "perf_top_gpus: error: unknown argument '%s'\n"
                    "try 'perf_top_gpus --help'\n",
                    argv[i]);
            return -1;
        }
    }
    if (!(*seconds >= 1) || *procs < 1 || *procs > MAX_PROCS) {
        fprintf(stderr, "perf_top_gpus: error: --seconds must be >= 1 and --procs 1..%d\n",
                MAX_PROCS);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double seconds = 60;
    int procs = 200;
    const char *given_top = NULL, *given_nvml = NULL, *also = NULL;
    if (parse(argc, argv, &seconds, &procs, &given_top, &given_nvml, &also) != 0)
        return 2;
    char top[PATH_MAX], nvml[PATH_MAX], dir[PATH_MAX];
    if (!perf_find_file(top, sizeof top, given_top, "../tools/vyre-top", "VYRE_TOP_BIN", 1)) {
        fprintf(stderr, "perf_top_gpus: error: cannot find vyre-top\n"
                        "hint: build it (cmake --build), or pass --top PATH\n");
        return 2;
    }
    if (!perf_find_file(nvml, sizeof nvml, given_nvml, "../tests/libfakenvml.so",
                        "VYRE_FAKENVML_LIB", 0)) {
        fprintf(stderr, "perf_top_gpus: error: cannot find the fake NVML (libfakenvml.so)\n"
                        "hint: build the tests (target fakenvml), or pass --nvml PATH\n");
        return 2;
    }
    if (perf_scratch_env("top-gpus", dir, sizeof dir) != 0)
        return 2;
    setenv("VYRE_NVML_LIBRARY", nvml, 1);
    setenv("FAKENVML_GPUS", "2", 1);
    unsetenv("FAKENVML_PROCS");
    unsetenv("FAKENVML_PROC_UTIL");
    unsetenv("FAKENVML_MANY_PROCS");
    long frames = (long)(seconds + 0.5);
    printf("vyre-top CPU per frame: 2 GPUs (fake NVML), refresh 1 s, %.0f s a run, --batch\n",
           seconds);

    long rows = rows_shown(top, dir);
    run_result base = run_top(top, 1.0, frames, NULL);
    report("baseline", rows, base, NULL);

    char many[16];
    snprintf(many, sizeof many, "%d", procs);
    setenv("FAKENVML_MANY_PROCS", many, 1);
    rows = rows_shown(top, dir);
    run_result rm = run_top(top, 1.0, frames, NULL);
    report("many", rows, rm, &base);
    unsetenv("FAKENVML_MANY_PROCS");

    int rc = 0;
    if (start_kids(procs) == 0 && list_kids() == 0) {
        rows = rows_shown(top, dir);
        run_result rr = run_top(top, 1.0, frames, NULL);
        report("real", rows, rr, &base);
        if (rr.status == 0)
            printf("goal at 1 s: under 1%% of one core: %s (%d processes, 2 GPUs)\n",
                   100.0 * rr.cpu_s / rr.wall_s < 1.0 ? "met" : "NOT met", procs);
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof cmd, "'%s' -d 1", top);
        report_tmux("vyre-top", run_in_tmux(cmd, dir, seconds));
        if (also)
            report_tmux("--also", run_in_tmux(also, dir, seconds));
    } else {
        rc = 2;
    }
    stop_kids();
    perf_rm_tree(dir);
    return rc;
}
