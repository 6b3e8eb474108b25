/*
 * perf_top.c - vyre-top's own CPU cost.
 *
 * Starts N processes (default 8) that publish telemetry through libcore's
 * writer API at about 100 Hz each (counters, an NVTX range, a kernel record
 * per tick), then runs `vyre-top --batch` against them for --seconds at a
 * 1 s refresh and again at 0.1 s (and --json at 1 s), and reports the
 * child's CPU time from wait4's rusage as a share of one core. The
 * target: <= 1% of one core at 1 s with 8 publishers.
 *
 * usage: perf_top [--seconds N] [--procs N] [--top PATH]
 *   --seconds N  length of each run (default 60)
 *   --procs N    publishing processes (default 8)
 *   --top PATH   the vyre-top binary (default: ../tools/vyre-top next to
 *                this program in the build tree, else $VYRE_TOP_BIN)
 *
 * Timings are printed, never judged: this is not a test.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfutil.h"
#include "vyre/cache.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

typedef struct run_result {
    double wall_s;
    double cpu_s;
    long frames;
    long maxrss_kb;
    int status;
} run_result;

static run_result run_top(const char *top, const char *mode, double delay, double seconds)
{
    run_result r = {0};
    char d[32], n[32];
    long frames = (long)(seconds / delay + 0.5);
    if (frames < 1)
        frames = 1;
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
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        execl(top, top, mode, "-d", d, "-n", n, (char *)NULL);
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
    r.maxrss_kb = ru.ru_maxrss;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return r;
}

static void report(const char *what, run_result r)
{
    if (r.status != 0) {
        printf("%-28s  failed (status %d)\n", what, r.status);
        return;
    }
    printf("%-28s  wall %7.2f s  cpu %7.3f s  %6.3f%% of one core  %7.1f us/refresh  "
           "maxrss %ld KiB\n",
           what, r.wall_s, r.cpu_s, 100.0 * r.cpu_s / r.wall_s, 1e6 * r.cpu_s / (double)r.frames,
           r.maxrss_kb);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double seconds = 60;
    int procs = 8;
    const char *given = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc) {
            procs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
            given = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: perf_top [--seconds N] [--procs N] [--top PATH]\n");
            return 0;
        } else {
            fprintf(stderr, "perf_top: error: unknown argument '%s'\ntry 'perf_top --help'\n",
                    argv[i]);
            return 2;
        }
    }
    if (!(seconds >= 1) || procs < 0 || procs > PERF_MAX_PUBLISHERS) {
        fprintf(stderr, "perf_top: error: --seconds must be >= 1 and --procs 0..%d\n",
                PERF_MAX_PUBLISHERS);
        return 2;
    }
    char top[PATH_MAX];
    if (!perf_find_file(top, sizeof top, given, "../tools/vyre-top", "VYRE_TOP_BIN", 1)) {
        fprintf(stderr, "perf_top: error: cannot find vyre-top\n"
                        "hint: build it (cmake --build), or pass --top PATH\n");
        return 2;
    }
    char dir[PATH_MAX];
    if (perf_scratch_env("top", dir, sizeof dir) != 0)
        return 2;

    if (perf_publishers_start(procs, 0) != 0)
        return 2;
    struct timespec settle = {0, 300 * 1000000L};
    nanosleep(&settle, NULL);

    printf("vyre-top overhead: %d publishing processes (~100 publishes/s each, 3 kernels and "
           "2 ranges a tick), %.0f s per run\n",
           procs, seconds);
    run_result r1 = run_top(top, "--batch", 1.0, seconds);
    report("--batch, refresh 1 s", r1);
    run_result r2 = run_top(top, "--batch", 0.1, seconds);
    report("--batch, refresh 0.1 s", r2);
    run_result r3 = run_top(top, "--json", 1.0, seconds);
    report("--json, refresh 1 s", r3);
    if (r1.status == 0 && r2.status == 0)
        printf("ratio 0.1 s / 1 s refresh: %.1fx CPU (target at 1 s: <= 1%% of one core: %s)\n",
               (r2.cpu_s / r2.wall_s) / (r1.cpu_s / r1.wall_s > 0 ? r1.cpu_s / r1.wall_s : 1e-9),
               100.0 * r1.cpu_s / r1.wall_s <= 1.0 ? "met" : "NOT met");
    perf_publishers_stop();
    perf_rm_tree(dir);
    return 0;
}
