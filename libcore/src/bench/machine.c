/*
 * machine.c - small facts about the machine a run describes: the datasheet
 * bandwidth of known GPUs and the git revision of the working directory.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/internal.h"
#include "bench/bench_internal.h"

/* ---- facts about the machine ----------------------------------------------------- */

double vyre_bench_peak_bandwidth(const char *gpu_name, const char **label)
{
    static const struct {
        const char *needle, *also, *label;
        double bps;
    } parts[] = {
        {"H200", NULL, "H200 (4.8 TB/s)", 4.8e12},
        {"H100", "PCIe", "H100 PCIe (2.0 TB/s)", 2.0e12},
        {"H100", NULL, "H100 SXM (3.35 TB/s)", 3.35e12},
    };
    if (label)
        *label = NULL;
    for (size_t i = 0; gpu_name && i < VYRE_ARRAY_SIZE(parts); i++) {
        if (!strstr(gpu_name, parts[i].needle))
            continue;
        if (parts[i].also && !strcasestr(gpu_name, parts[i].also))
            continue;
        if (label)
            *label = parts[i].label;
        return parts[i].bps;
    }
    return 0;
}

/* Runs argv (no shell) with stdout into buf; returns its exit status or -1. */
static int run_capture(char *const argv[], char *buf, size_t size)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        FILE *null = freopen("/dev/null", "w", stderr);
        (void)null;
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd[0], buf + got, got + 1 < size ? size - 1 - got : 0);
        if (r <= 0) {
            if (got + 1 >= size) { /* drain */
                char junk[256];
                while (read(fd[0], junk, sizeof junk) > 0)
                    continue;
            }
            break;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        continue;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void vyre_bench_git_rev(char *buf, size_t size)
{
    if (!buf || !size)
        return;
    buf[0] = '\0';
    char out[128];
    char a0[] = "git", a1[] = "rev-parse", a2[] = "--short=12", a3[] = "HEAD";
    char *rev[] = {a0, a1, a2, a3, NULL};
    if (run_capture(rev, out, sizeof out) != 0)
        return;
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0])
        return;
    char st[64];
    char b1[] = "status", b2[] = "--porcelain", b3[] = "--untracked-files=no";
    char *status[] = {a0, b1, b2, b3, NULL};
    int dirty = run_capture(status, st, sizeof st) == 0 && st[0];
    snprintf(buf, size, "%s%s", out, dirty ? "-dirty" : "");
}
