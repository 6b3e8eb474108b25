/*
 * perf_exporter.c - what one vyre-exporter scrape costs.
 *
 * Starts N processes (default 8) that publish telemetry through libcore's
 * writer API at about 100 Hz each (counters, two NVTX ranges, three kernel
 * records per tick), then vyre-exporter on a loopback port it picks, with
 * the fake NVML listing 8 GPUs (tests/fakes/fakenvml.c) and a fresh empty
 * pipeline cache re-read at every scrape (--cache.refresh-interval 0: the
 * worst case). Measures, over --requests round trips each (median, p90):
 *   baseline  GET /         (the landing page: HTTP round trip, no work)
 *   scrape    GET /metrics  (everything the exporter does per scrape)
 * and prints the scrape time, its ratio to the baseline, the exporter's own
 * vyre_exporter_scrape_duration_seconds, the document's size, and the
 * exporter's CPU use while idle between scrapes (from /proc/<pid>/stat over
 * --idle seconds, as a share of one core). Targets (issue 13): a scrape
 * <= 5 ms, idle < 0.1% of a core.
 *
 * usage: perf_exporter [--procs N] [--requests N] [--idle S] [--exporter PATH]
 *                       [--nvml PATH]
 *   --exporter PATH  default: ../tools/vyre-exporter beside this program in
 *                    the build tree, else $VYRE_EXPORTER_BIN
 *   --nvml PATH      the fake NVML (default: ../tests/libfakenvml.so in the
 *                    build tree), listing 8 GPUs; "none" runs without GPUs,
 *                    "system" with the machine's own NVML (real GPUs)
 *   --dump PATH      write the last scrape's document to PATH
 *
 * Timings are printed, never judged: this is not a test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfutil.h"
#include "vyre/cache.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

/* One GET over a fresh loopback connection; returns the body length (-1
 * on failure) and, when body is not NULL, the body (malloc'ed). */
static long http_get(unsigned port, const char *path, char **body)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    static char *buf;
    static size_t cap;
    size_t len = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            buf = realloc(buf, cap);
            if (!buf)
                return -1;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    char *hdr = strstr(buf, "\r\n\r\n");
    if (!hdr || strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 9, "200", 3) != 0)
        return -1;
    if (body)
        *body = strdup(hdr + 4);
    return (long)(len - (size_t)(hdr + 4 - buf));
}

typedef struct timing {
    double median_ms, p90_ms;
    long bytes;
} timing;

static timing measure(unsigned port, const char *path, int n)
{
    timing t = {0};
    double *v = calloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++) {
        double t0 = perf_now_s();
        long b = http_get(port, path, NULL);
        v[i] = (perf_now_s() - t0) * 1e3;
        if (b < 0) {
            t.bytes = -1;
            break;
        }
        t.bytes = b;
    }
    qsort(v, (size_t)n, sizeof *v, perf_cmp_double);
    t.median_ms = v[n / 2];
    t.p90_ms = v[(n * 9) / 10];
    free(v);
    return t;
}

/* utime + stime of pid, seconds. */
static double cpu_of(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long ut = 0, st = 0;
    /* fields 14 and 15, counted from the state (field 3) after ')' */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct options {
    int procs, requests;
    double idle;
    const char *given, *nvml_given, *dump;
} options;

/* 0, or the exit status (help printed: -1 stands for 0). */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.procs = 8, .requests = 200, .idle = 10};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc) {
            o->procs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
            o->requests = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--idle") == 0 && i + 1 < argc) {
            o->idle = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--exporter") == 0 && i + 1 < argc) {
            o->given = argv[++i];
        } else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
            o->dump = argv[++i];
        } else if (strcmp(argv[i], "--nvml") == 0 && i + 1 < argc) {
            o->nvml_given = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: perf_exporter [--procs N] [--requests N] [--idle S] "
                   "[--exporter PATH] [--nvml PATH|none|system] [--dump PATH]\n");
            return -1;
        } else {
            fprintf(stderr,
                    "perf_exporter: error: unknown argument '%s'\ntry 'perf_exporter --help'\n",
                    argv[i]);
            return 2;
        }
    }
    if (o->procs < 0 || o->procs > PERF_MAX_PUBLISHERS || o->requests < 1 || !(o->idle >= 0)) {
        fprintf(stderr, "perf_exporter: error: --procs 0..%d, --requests >= 1, --idle >= 0\n",
                PERF_MAX_PUBLISHERS);
        return 2;
    }
    return 0;
}

/* Starts the exporter on a loopback port it picks, its stderr on a pipe
 * (*errfd) that names the port. The child pid, or -1 after perror. */
static pid_t start_exporter(const char *exporter, const char *nvml, int gpus, int real, int *errfd)
{
    int ep[2];
    if (pipe(ep) != 0) {
        perror("pipe");
        return -1;
    }
    pid_t xp = fork();
    if (xp == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (gpus && !real) {
            setenv("VYRE_NVML_LIBRARY", nvml, 1);
            setenv("FAKENVML_GPUS", "8", 1);
        }
        dup2(ep[1], 2);
        close(ep[0]);
        execl(exporter, exporter, "--web.listen-address", "127.0.0.1:0", "--cache.refresh-interval",
              "0", gpus ? (char *)NULL : "--no-gpu", (char *)NULL);
        _exit(127);
    }
    close(ep[1]);
    *errfd = ep[0];
    return xp;
}

/* The port the exporter says it listens on, 0 when it does not within
 * 10 s; what it wrote into line[size]. */
static unsigned exporter_port(int errfd, char *line, size_t size)
{
    unsigned port = 0;
    size_t got = 0;
    line[0] = '\0';
    struct pollfd pfd = {.fd = errfd, .events = POLLIN};
    while (!port && got + 1 < size && poll(&pfd, 1, 10000) == 1) {
        ssize_t r = read(errfd, line + got, size - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        line[got] = '\0';
        const char *p = strstr(line, "listening on 127.0.0.1:");
        if (p && strchr(p, ','))
            port = (unsigned)strtoul(p + strlen("listening on 127.0.0.1:"), NULL, 10);
    }
    return port;
}

/* Scrapes against the baseline, then the exporter's idle CPU. 0 or 2. */
static int measure_and_print(const options *o, unsigned port, pid_t xp, const char *gpu_text)
{
    printf("vyre-exporter scrape cost: %d publishing processes (~100 publishes/s each, 3 "
           "kernels and 2 ranges a tick), %s, cache re-read every scrape, %d requests each\n",
           o->procs, gpu_text, o->requests);
    /* Warm-up: the first scrape of a process sums its whole kernel ring. */
    for (int i = 0; i < 5; i++)
        http_get(port, "/metrics", NULL);
    timing base = measure(port, "/", o->requests);
    timing scrape = measure(port, "/metrics", o->requests);
    char *body = NULL;
    http_get(port, "/metrics", &body);
    double self_s = -1;
    int series = 0;
    if (body && o->dump) {
        FILE *f = fopen(o->dump, "w");
        if (f) {
            fputs(body, f);
            fclose(f);
        }
    }
    if (body) {
        const char *p = strstr(body, "\nvyre_exporter_scrape_duration_seconds ");
        if (p)
            self_s = strtod(p + strlen("\nvyre_exporter_scrape_duration_seconds "), NULL);
        for (const char *q = body; (q = strchr(q, '\n')) != NULL; q++)
            if (q[1] && q[1] != '#')
                series++;
        free(body);
    }
    if (base.bytes < 0 || scrape.bytes < 0) {
        fprintf(stderr, "perf_exporter: error: a request failed\n");
        return 2;
    }
    printf("  baseline GET /         median %.3f ms  p90 %.3f ms  (%ld bytes)\n", base.median_ms,
           base.p90_ms, base.bytes);
    printf("  scrape   GET /metrics  median %.3f ms  p90 %.3f ms  (%ld bytes, %d series)\n",
           scrape.median_ms, scrape.p90_ms, scrape.bytes, series);
    printf("  scrape / baseline      %.2fx\n", scrape.median_ms / base.median_ms);
    printf("  exporter's own vyre_exporter_scrape_duration_seconds: %.3f ms\n", self_s * 1e3);
    if (o->idle > 0) {
        double c0 = cpu_of(xp), t0 = perf_now_s();
        struct timespec ts = {(time_t)o->idle, (long)((o->idle - (double)(time_t)o->idle) * 1e9)};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
            ;
        double c1 = cpu_of(xp), t1 = perf_now_s();
        printf("  idle between scrapes   %.4f%% of a core over %.0f s (CPU %.3f s; clock "
               "tick %.0f ms)\n",
               100.0 * (c1 - c0) / (t1 - t0), t1 - t0, c1 - c0, 1e3 / (double)sysconf(_SC_CLK_TCK));
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    char exporter[PATH_MAX], nvml[PATH_MAX] = "";
    if (!perf_find_file(exporter, sizeof exporter, o.given, "../tools/vyre-exporter",
                        "VYRE_EXPORTER_BIN", 1)) {
        fprintf(stderr, "perf_exporter: error: cannot find vyre-exporter\n"
                        "hint: build it (cmake --build), or pass --exporter PATH\n");
        return 2;
    }
    int gpus = 0, real = o.nvml_given && strcmp(o.nvml_given, "system") == 0;
    if (real) {
        gpus = 1; /* whatever the machine has */
    } else if (!(o.nvml_given && strcmp(o.nvml_given, "none") == 0)) {
        if (perf_find_file(nvml, sizeof nvml, o.nvml_given, "../tests/libfakenvml.so", NULL, 0))
            gpus = 8;
        else
            fprintf(stderr, "perf_exporter: no fake NVML found (build the tests, or pass "
                            "--nvml PATH): running without GPUs\n");
    }
    char dir[PATH_MAX];
    if (perf_scratch_env("exporter", dir, sizeof dir) != 0)
        return 2;

    if (perf_publishers_start(o.procs, PERF_PUB_GRAPHS_COPIES | PERF_PUB_DEVICES) != 0)
        return 2;

    int errfd = -1;
    pid_t xp = start_exporter(exporter, nvml, gpus, real, &errfd);
    if (xp < 0) {
        perf_publishers_stop();
        return 2;
    }
    char line[512];
    unsigned port = exporter_port(errfd, line, sizeof line);
    if (!port) {
        fprintf(stderr, "perf_exporter: error: the exporter did not start: %s\n", line);
        rc = 2;
    } else {
        struct timespec settle = {0, 300 * 1000000L};
        nanosleep(&settle, NULL);
        char gpu_text[64];
        if (real)
            snprintf(gpu_text, sizeof gpu_text, "the system's NVML");
        else
            snprintf(gpu_text, sizeof gpu_text, "%d fake-NVML GPUs", gpus ? 8 : 0);
        rc = measure_and_print(&o, port, xp, gpu_text);
    }
    kill(xp, SIGTERM);
    waitpid(xp, NULL, 0);
    close(errfd);
    perf_publishers_stop();
    perf_rm_tree(dir);
    return rc;
}
