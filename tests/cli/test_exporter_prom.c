/*
 * test_exporter_prom.c - vyre-exporter against the real Prometheus.
 *
 * Starts, each on a loopback port: vyre-exporter (port 0: it picks one and
 * says which on stderr; the fake NVML with 8 GPUs), a live publishing
 * process (tests/schema/telemetry_publisher) and a Prometheus server
 * scraping the exporter every second (its port probed free just before).
 * Waits, polling with a deadline, until Prometheus's HTTP API
 * (/api/v1/query) returns the publisher's vyre_process_launches_total
 * series, then checks the exporter's own output with `promtool check
 * metrics` (clean: no lint problem either). Every process is stopped and
 * waited for (SIGTERM, then SIGKILL after a deadline); they also die with
 * the test (PR_SET_PDEATHSIG). HTTP is spoken over a raw socket.
 *
 * Needs Debian's `prometheus` package (prometheus and promtool in PATH).
 * Without it the test skips with that reason, except under CI=true, where
 * it fails: CI installs the package.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef VYRE_EXPORTER_BIN
#error "tests/CMakeLists.txt must define VYRE_EXPORTER_BIN"
#endif
#ifndef TELEMETRY_PUBLISHER_BIN
#error "tests/CMakeLists.txt must define TELEMETRY_PUBLISHER_BIN"
#endif

#define WAIT_MS 60000 /* Prometheus start + first scrapes, sanitized, loaded CI */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Finds prog in $PATH into out; 0 when found. */
static int which(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && snprintf(out, size, "%.*s/%s", (int)n, path, prog) < (int)size &&
            access(out, X_OK) == 0)
            return 0;
        path += n;
        if (*path == ':')
            path++;
    }
    return -1;
}

/* Starts argv with env_set applied ("NAME=value"), stdin from in_path
 * (NULL: /dev/null), stdout to out_fd and stderr to err_fd (-1:
 * /dev/null). The child dies with the test. */
static pid_t spawn(const char *const argv[], const char *const env_set[], const char *in_path,
                   int out_fd, int err_fd)
{
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid > 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (size_t i = 0; env_set && env_set[i]; i++) {
        char kv[1024];
        snprintf(kv, sizeof kv, "%s", env_set[i]);
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
    }
    char *args[16];
    size_t na = 0;
    for (; argv[na] && na < 15; na++)
        args[na] = strdup(argv[na]);
    args[na] = NULL;
    int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
    int null = open("/dev/null", O_WRONLY);
    dup2(in, 0);
    dup2(out_fd >= 0 ? out_fd : null, 1);
    dup2(err_fd >= 0 ? err_fd : null, 2);
    execv(args[0], args);
    _exit(127);
}

/* Stops pid: SIGTERM, then SIGKILL after 10 s. Returns its wait status. */
static int stop(pid_t pid)
{
    if (pid <= 0)
        return 0;
    kill(pid, SIGTERM);
    int st = 0;
    for (int64_t end = now_ms() + 10000; now_ms() < end;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return st;
}

/* GET path from 127.0.0.1:port over a raw socket (HTTP/1.0). Returns the
 * status code (0 when no answer) and the body in *body (malloc'ed). */
static int http_get(unsigned port, const char *path, char **body)
{
    *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%u\r\n\r\n", path, port);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return 0;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    int status = 0;
    char *hdr_end = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || !hdr_end) {
        free(buf);
        return 0;
    }
    *body = strdup(hdr_end + 4);
    free(buf);
    return status;
}

/* A loopback port free now (bound, read back, released). */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Reads a file whole into out (NUL-terminated, cut to size). */
static void slurp(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    size_t len = 0;
    char *s = tu_read_file(path, &len);
    if (s) {
        snprintf(out, size, "%s", s);
        free(s);
    }
}

static char g_dir[512];
static pid_t g_pub, g_exp, g_prom;

static void teardown(void)
{
    stop(g_prom);
    stop(g_exp);
    stop(g_pub);
    g_prom = g_exp = g_pub = 0;
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

TestSuite(exporter_prometheus, .fini = teardown);

Test(exporter_prometheus, prometheus_scrapes_a_live_process)
{
    char prom[1024], promtool[1024];
    if (which("prometheus", prom, sizeof prom) != 0 ||
        which("promtool", promtool, sizeof promtool) != 0) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0)
            cr_assert_fail(
                "prometheus/promtool not in PATH under CI=true: .ci/run installs Debian's "
                "'prometheus' package");
        cr_skip_test("prometheus or promtool not installed (Debian: apt-get install prometheus)");
    }
    tu_mkdtemp(g_dir, sizeof g_dir);
    char tel[600], cache[600], data[600], cfg[600], elog[600], plog[600], mfile[600], tout[600];
    snprintf(tel, sizeof tel, "%s/tel", g_dir);
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    snprintf(data, sizeof data, "%s/data", g_dir);
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", g_dir);
    snprintf(elog, sizeof elog, "%s/exporter.log", g_dir);
    snprintf(plog, sizeof plog, "%s/prometheus.log", g_dir);
    snprintf(mfile, sizeof mfile, "%s/metrics.txt", g_dir);
    snprintf(tout, sizeof tout, "%s/promtool.out", g_dir);
    cr_assert_eq(mkdir(tel, 0700), 0);

    char env_tel[700];
    snprintf(env_tel, sizeof env_tel, "VYRE_TELEMETRY_DIR=%s", tel);

    /* The live publisher: "ready" on stdout once its page is published. */
    int pp[2];
    cr_assert_eq(pipe(pp), 0);
    const char *pub_argv[] = {TELEMETRY_PUBLISHER_BIN, "300", NULL};
    const char *pub_env[] = {env_tel, NULL};
    g_pub = spawn(pub_argv, pub_env, NULL, pp[1], -1);
    close(pp[1]);
    char ready[16] = "";
    struct pollfd pfd = {.fd = pp[0], .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "publisher never said ready");
    cr_assert_gt(read(pp[0], ready, sizeof ready - 1), 0);
    close(pp[0]);
    cr_assert(strncmp(ready, "ready", 5) == 0, "publisher said '%s'", ready);

    /* The exporter, on a port it picks; it names it on stderr. */
    int efd = open(elog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(efd >= 0);
    const char *exp_argv[] = {
        VYRE_EXPORTER_BIN, "--web.listen-address", "127.0.0.1:0", "--cache-dir", cache, NULL};
    /* NVML lists the publisher on GPU 3 (1 MiB), and a process that
     * publishes no telemetry on GPU 5 (the test itself). */
    char env_procs[128];
    snprintf(env_procs, sizeof env_procs, "FAKENVML_PROCS=3:%d:1048576,5:%d:2097152", (int)g_pub,
             (int)getpid());
    const char *exp_env[] = {env_tel, "VYRE_NVML_LIBRARY=" FAKENVML_LIB, "FAKENVML_GPUS=8",
                             env_procs, NULL};
    g_exp = spawn(exp_argv, exp_env, NULL, -1, efd);
    close(efd);
    unsigned eport = 0;
    char log[8192];
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end && !eport; sleep_ms(20)) {
        slurp(elog, log, sizeof log);
        const char *p = strstr(log, "listening on 127.0.0.1:");
        if (p)
            eport = (unsigned)strtoul(p + strlen("listening on 127.0.0.1:"), NULL, 10);
        cr_assert_eq(waitpid(g_exp, NULL, WNOHANG), 0, "exporter exited: %s", log);
    }
    cr_assert_gt(eport, 0, "exporter never said its port: %s", log);

    /* Landing page, 404, and the metrics checked by promtool. */
    char *body = NULL;
    cr_assert_eq(http_get(eport, "/", &body), 200);
    cr_assert_not_null(strstr(body, "href=\"/metrics\""), "%s", body);
    free(body);
    cr_assert_eq(http_get(eport, "/nothing", &body), 404);
    free(body);
    cr_assert_eq(http_get(eport, "/metrics", &body), 200);
    tu_write_file(mfile, body, strlen(body));
    char want[64];
    snprintf(want, sizeof want, "vyre_process_launches_total{pid=\"%d\"", (int)g_pub);
    cr_assert_not_null(strstr(body, want), "%s", body);
    snprintf(want, sizeof want, "vyre_gpu_process_memory_used_bytes{gpu=\"5\",pid=\"%d\"",
             (int)getpid());
    cr_assert_not_null(strstr(body, want), "%s", body);
    free(body);
    int tfd = open(tout, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(tfd >= 0);
    const char *tool_argv[] = {promtool, "check", "metrics", NULL};
    pid_t tool = spawn(tool_argv, NULL, mfile, tfd, tfd);
    close(tfd);
    int st = 0;
    cr_assert_eq(waitpid(tool, &st, 0), tool);
    char tool_out[8192];
    slurp(tout, tool_out, sizeof tool_out);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool check metrics failed:\n%s",
              tool_out);
    cr_assert_str_eq(tool_out, "", "promtool check metrics is not clean:\n%s", tool_out);

    /* Prometheus, scraping the exporter every second. */
    unsigned pport = free_port();
    char yml[1024];
    int n = snprintf(yml, sizeof yml,
                     "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                     "scrape_configs:\n  - job_name: vyre\n    static_configs:\n"
                     "      - targets: ['127.0.0.1:%u']\n",
                     eport);
    tu_write_file(cfg, yml, (size_t)n);
    char a_cfg[700], a_data[700], a_listen[128];
    snprintf(a_cfg, sizeof a_cfg, "--config.file=%s", cfg);
    snprintf(a_data, sizeof a_data, "--storage.tsdb.path=%s", data);
    snprintf(a_listen, sizeof a_listen, "--web.listen-address=127.0.0.1:%u", pport);
    int plfd = open(plog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(plfd >= 0);
    const char *prom_argv[] = {prom, a_cfg, a_data, a_listen, NULL};
    g_prom = spawn(prom_argv, NULL, NULL, plfd, plfd);
    close(plfd);

    char query[256];
    snprintf(query, sizeof query,
             "/api/v1/query?query=vyre_process_launches_total%%7Bpid%%3D%%22%d%%22%%7D",
             (int)g_pub);
    char pid_json[64];
    snprintf(pid_json, sizeof pid_json, "\"pid\":\"%d\"", (int)g_pub);
    int found = 0;
    char last[4096] = "";
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end && !found; sleep_ms(250)) {
        cr_assert_eq(waitpid(g_prom, NULL, WNOHANG), 0, "prometheus exited: see %s", plog);
        int code = http_get(pport, query, &body);
        if (code == 200 && body && strstr(body, "\"status\":\"success\"") &&
            strstr(body, pid_json) && strstr(body, "\"job\":\"vyre\""))
            found = 1;
        if (body)
            snprintf(last, sizeof last, "%s", body);
        free(body);
    }
    if (!found) {
        slurp(plog, log, sizeof log);
        cr_assert_fail("Prometheus never returned the publisher's series; last answer: %s\n"
                       "prometheus log:\n%s",
                       last, log);
    }
    /* Its GPU memory, from NVML's process list, in the same scrapes. */
    snprintf(query, sizeof query,
             "/api/v1/query?query=vyre_gpu_process_memory_used_bytes%%7Bpid%%3D%%22%d%%22%%7D",
             (int)g_pub);
    cr_assert_eq(http_get(pport, query, &body), 200);
    cr_assert(body && strstr(body, pid_json) && strstr(body, "\"gpu\":\"3\"") &&
                  strstr(body, "\"1048576\""),
              "Prometheus has no GPU memory series for the publisher: %s", body ? body : "");
    free(body);
    /* The exporter stops cleanly on SIGTERM. */
    st = stop(g_exp);
    g_exp = 0;
    slurp(elog, log, sizeof log);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exporter exit status %d: %s", st, log);
}
