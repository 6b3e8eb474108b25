/*
 * test_exporter_paths.c - vyre-exporter answers its own paths only (issue
 * 33, point 7: '/metrics%00' was served as '/metrics', libmicrohttpd
 * having decoded %00 into a NUL that ended the path). The path is
 * compared as the client sent it, never percent-decoded: the metrics at
 * the telemetry path exactly, with or without a query string (Prometheus
 * may send scrape parameters), the landing page at '/', 404 for anything
 * else, encoded spellings of the path included.
 *
 * The exporter runs on a loopback port it picks (no NVML, no cache, an
 * empty telemetry directory); each request is one raw HTTP/1.0 exchange
 * with a bounded wait, so the path reaches the server byte for byte.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

#include "testutil.h"

#ifndef VYRE_EXPORTER_BIN
#error "tests/CMakeLists.txt must define VYRE_EXPORTER_BIN"
#endif

#define WAIT_MS 30000 /* exporter start, sanitized build, loaded CI */

static char g_dir[512];
static pid_t g_exp;

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

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    tu_mkdtemp(g_dir, sizeof g_dir);
}

static void teardown(void)
{
    if (g_exp > 0) {
        kill(g_exp, SIGKILL);
        waitpid(g_exp, NULL, 0);
        g_exp = 0;
    }
    tu_rm_rf(g_dir);
}

TestSuite(exporter_paths, .init = setup, .fini = teardown, .timeout = 90);

/* Starts the exporter on 127.0.0.1, port of its choosing, its metrics at
 * path (NULL: the default); returns the port. */
static unsigned start_exporter(const char *path)
{
    char tel[600], elog[600];
    snprintf(tel, sizeof tel, "%s/tel", g_dir);
    snprintf(elog, sizeof elog, "%s/exporter.log", g_dir);
    cr_assert_eq(mkdir(tel, 0700), 0);
    fflush(NULL);
    g_exp = fork();
    cr_assert_geq(g_exp, 0);
    if (g_exp == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("VYRE_TELEMETRY_DIR", tel, 1);
        int null = open("/dev/null", O_RDWR);
        int efd = open(elog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 0);
        dup2(null, 1);
        dup2(efd, 2);
        char *argv[] = {strdup(VYRE_EXPORTER_BIN),
                        strdup("--web.listen-address"),
                        strdup("127.0.0.1:0"),
                        strdup("--no-gpu"),
                        strdup("--no-cache"),
                        strdup("--web.telemetry-path"),
                        strdup(path ? path : "/metrics"),
                        NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end; sleep_ms(20)) {
        char *log = tu_read_file(elog, NULL);
        const char *p = log ? strstr(log, "listening on 127.0.0.1:") : NULL;
        unsigned port = p ? (unsigned)strtoul(p + strlen("listening on 127.0.0.1:"), NULL, 10) : 0;
        free(log);
        if (port)
            return port;
        cr_assert_eq(waitpid(g_exp, NULL, WNOHANG), 0, "the exporter exited");
    }
    cr_assert_fail("the exporter never said its port");
    return 0;
}

/* "METHOD target HTTP/1.0" on a fresh connection; the status (0: no
 * answer within 10 s) and the start of the body. */
static int request(unsigned port, const char *method, const char *target, char *body, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    char req[512];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, target);
    cr_assert_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    return tu_http_answer(fd, 10000, body, size);
}

static void expect(unsigned port, const char *target, int status)
{
    char body[4096];
    int got = request(port, "GET", target, body, sizeof body);
    cr_assert_eq(got, status, "GET %s: %d, want %d: %s", target, got, status, body);
    if (status == 200 && strcmp(target, "/") != 0)
        cr_assert(strstr(body, "# TYPE "), "GET %s is not the metrics: %s", target, body);
    if (status == 404)
        cr_assert_str_eq(body, "not found\n", "GET %s", target);
}

Test(exporter_paths, only_the_telemetry_path_as_sent_serves_metrics)
{
    unsigned port = start_exporter(NULL);
    expect(port, "/metrics", 200);
    /* A query string is not part of the path (Prometheus' params). */
    expect(port, "/metrics?x", 200);
    expect(port, "/metrics?collect%5B%5D=cache", 200);
    expect(port, "/", 200);
    static const char *const others[] = {
        "/metrics%00",   "/metrics%00.txt", "/metrics%00?x", "/metrics/",   "/metrics//",
        "/metricsX",     "/metric",         "//metrics",     "/METRICS",    "/%6detrics",
        "/%6Detrics",    "/metrics%2f",     "/metrics%2F",   "/%2fmetrics", "/./metrics",
        "/x/../metrics", "/metrics%20",     "/metrics%3Fx",  "/%00",        "/nothing",
        "/%2e/metrics",  "/metrics%",       "/metrics%zz",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        expect(port, others[i], 404);
    char body[256];
    cr_assert_eq(request(port, "HEAD", "/metrics%00", body, sizeof body), 404);
    cr_assert_eq(request(port, "HEAD", "/metrics", body, sizeof body), 200);
}

Test(exporter_paths, a_custom_path_is_matched_the_same_way)
{
    unsigned port = start_exporter("/prom/vyre");
    expect(port, "/prom/vyre", 200);
    expect(port, "/prom/vyre?x=1", 200);
    expect(port, "/metrics", 404);
    expect(port, "/prom/vyre%00", 404);
    expect(port, "/prom%2fvyre", 404);
    expect(port, "/prom/vyre/", 404);
    expect(port, "/prom", 404);
}

/* A path a scraper would have to encode could never match: refused. */
Test(exporter_paths, a_path_that_needs_encoding_is_refused_at_start)
{
    static const char *const bad[] = {"/a%20b", "/a b", "/metrics?x", "/m#x", "/m\"x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_proc p;
        const char *const args[] = {"--web.listen-address", "127.0.0.1:0", "--no-gpu", "--no-cache",
                                    "--web.telemetry-path", bad[i],        NULL};
        tu_run_bin(&p, VYRE_EXPORTER_BIN, args, NULL, NULL);
        cr_assert_eq(p.exit_code, 2, "%s: %s", bad[i], p.err);
        char want[512];
        snprintf(want, sizeof want,
                 "vyre-exporter: error: invalid telemetry path '%s' (want "
                 "/NAME, e.g. /metrics, in letters, digits and - . _ ~ /: it is matched as sent, "
                 "never percent-decoded)\n",
                 bad[i]);
        cr_assert(strstr(p.err, want), "%s", p.err);
        tu_proc_free(&p);
    }
}
