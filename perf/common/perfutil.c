/*
 * perfutil.c - see perfutil.h.
 */
#include "perfutil.h"

#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vyre/cache.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

static pid_t g_pubs[PERF_MAX_PUBLISHERS];
static int g_npubs;

double perf_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double perf_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int perf_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double perf_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, perf_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int perf_find_file(char *out, size_t size, const char *given, const char *rel, const char *env,
                   int exec)
{
    int mode = exec ? X_OK : R_OK;
    if (given) {
        snprintf(out, size, "%s", given);
        return access(out, mode) == 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            int w = snprintf(out, size, "%s/%s", self, rel);
            if (w > 0 && (size_t)w < size && access(out, mode) == 0)
                return 1;
        }
    }
    const char *e = env ? getenv(env) : NULL;
    if (e && *e) {
        snprintf(out, size, "%s", e);
        return access(out, mode) == 0;
    }
    return 0;
}

int perf_scratch_env(const char *tag, char *dir, size_t size)
{
    const char *tmpdir = getenv("TMPDIR");
    char tel[PATH_MAX + 8], cache[PATH_MAX + 8];
    snprintf(dir, size, "%s/vyre-perf-%s-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp", tag);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(tel, sizeof tel, "%s/tel", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("VYRE_TELEMETRY_DIR", tel, 1);
    setenv("VYRE_PTX_CACHE_DIR", cache, 1);
    unsetenv("VYRE_TELEMETRY");
    vyre_cache *c = NULL;
    if (vyre_cache_open(cache, NULL, &c, NULL) == VYRE_OK)
        vyre_cache_close(c);
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void perf_rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void publish_forever(int id, unsigned flags)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The child's own page: a forked child gets one on its first call. */
    vyre_telemetry *t = vyre_telemetry_global(NULL);
    if (!t)
        _exit(10);
    char kname[3][32];
    for (int k = 0; k < 3; k++)
        snprintf(kname[k], sizeof kname[k], "bench_kernel_%d_%d", id, k);
    int device = flags & PERF_PUB_DEVICES ? id % 8 : 0;
    struct timespec tick = {0, 10 * 1000000L};
    for (uint64_t i = 0;; i++) {
        vyre_counter_add(VYRE_CTR_LAUNCHES, 3);
        if (flags & PERF_PUB_GRAPHS_COPIES)
            vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 1);
        vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
        if (flags & PERF_PUB_GRAPHS_COPIES)
            vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, 1u << 20);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, 1u << 18);
        vyre_counter_add(VYRE_CTR_CACHE_HITS, 1);
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
        vyre_nvtx_pop();
        vyre_nvtx_push(VYRE_RANGE_CACHE_LOOKUP);
        vyre_nvtx_pop();
        for (int k = 0; k < 3; k++) {
            vyre_telemetry_kernel_record r = {.name = kname[k],
                                              .grid = {128, 1, 1},
                                              .block = {256, 1, 1},
                                              .duration_ns = 10000u * (uint64_t)(k + 1),
                                              .end_ns = i,
                                              .device = device};
            vyre_telemetry_add_kernel(t, &r);
        }
        vyre_telemetry_publish(t);
        nanosleep(&tick, NULL);
    }
}

int perf_publishers_start(int n, unsigned flags)
{
    fflush(NULL);
    for (int i = 0; i < n && g_npubs < PERF_MAX_PUBLISHERS; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            perf_publishers_stop();
            return -1;
        }
        if (pid == 0)
            publish_forever(i, flags);
        g_pubs[g_npubs++] = pid;
    }
    return 0;
}

void perf_publishers_stop(void)
{
    for (int i = 0; i < g_npubs; i++) {
        kill(g_pubs[i], SIGKILL);
        waitpid(g_pubs[i], NULL, 0);
    }
    g_npubs = 0;
}
