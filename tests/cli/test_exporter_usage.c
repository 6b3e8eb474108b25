/*
 * test_exporter_usage.c - the vyre_cache_usage_ families of a real
 * vyre-exporter on a loopback port it picks (port 0; it names it on
 * stderr), scraped over a raw socket.
 *
 * Each cache is a temp directory with known contents, named to the
 * exporter as users name them (--cache-dir, CUDA_CACHE_PATH,
 * TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR), so every byte and file
 * count is checked exactly; a link inside the Triton cache points at a
 * large file outside it, which must not count. The sizes are measured by a
 * thread on --cache-usage-interval, never by a scrape: with an hour's
 * interval a file added after the first round does not show, however many
 * scrapes follow; with a second's interval it shows within a deadline.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

#define WAIT_MS 30000 /* start, and a round of scans, sanitized on a loaded machine */

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

static void teardown(void)
{
    if (g_exp > 0) {
        kill(g_exp, SIGTERM);
        waitpid(g_exp, NULL, 0);
    }
    g_exp = 0;
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

TestSuite(exporter_usage, .fini = teardown, .timeout = 120);

static void at(char *buf, size_t size, const char *rel)
{
    int n = snprintf(buf, size, "%s/%s", g_dir, rel);
    cr_assert(n > 0 && (size_t)n < size);
}

static void mkd(const char *rel)
{
    char p[1024];
    at(p, sizeof p, rel);
    cr_assert_eq(mkdir(p, 0700), 0, "%s: %s", p, strerror(errno));
}

static void mkf(const char *rel, size_t n)
{
    char p[1024];
    at(p, sizeof p, rel);
    char *data = calloc(1, n ? n : 1);
    cr_assert_not_null(data);
    tu_write_file(p, data, n);
    free(data);
}

/*
 * Sizes below are apparent; the metric counts blocks on disk, as du -s
 * does (bytes_line measures them with lstat):
 * j/ index (10 B), a/ b (300 B)                 3 files, 310 bytes
 * t/ KEY1/ k.cubin (1000 B) k.json (50 B),
 *    KEY2/ x.ptx (20 B) l -> ../../big          6 files, 1070 bytes
 * i/ ab/ k.py (77 B)                            2 files, 77 bytes
 * v/ not created: vyre's cache                  0, 0
 * big (4096 B): outside every cache
 */
static void make_caches(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    mkd("j");
    mkd("j/a");
    mkf("j/index", 10);
    mkf("j/a/b", 300);
    mkd("t");
    mkd("t/KEY1");
    mkd("t/KEY2");
    mkf("t/KEY1/k.cubin", 1000);
    mkf("t/KEY1/k.json", 50);
    mkf("t/KEY2/x.ptx", 20);
    mkf("big", 4096);
    char link[1024];
    at(link, sizeof link, "t/KEY2/l");
    cr_assert_eq(symlink("../../big", link), 0);
    mkd("i");
    mkd("i/ab");
    mkf("i/ab/k.py", 77);
    mkd("config");
}

/* The line vyre_cache_usage_bytes should show for the cache in rel: its
 * bytes on disk as du -s counts them (the root's own blocks, a link's own,
 * never what it points to). */
static const char *bytes_line(const char *cache, const char *rel)
{
    char p[1024];
    at(p, sizeof p, rel);
    return tu_text("vyre_cache_usage_bytes{cache=\"%s\"} %llu", cache,
                   (unsigned long long)tu_disk_bytes(p));
}

/* Starts the exporter with extra arguments (NULL-terminated, at most 4)
 * and the caches' variables; returns its port. */
static unsigned start(const char *const *extra)
{
    char log[1024], v[1024];
    at(log, sizeof log, "exporter.log");
    at(v, sizeof v, "v");
    int efd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(efd >= 0);
    g_exp = fork();
    cr_assert(g_exp >= 0);
    if (g_exp == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        static const char *const vars[][2] = {
            {"CUDA_CACHE_PATH", "j"},         {"TRITON_CACHE_DIR", "t"},
            {"TORCHINDUCTOR_CACHE_DIR", "i"}, {"XDG_CONFIG_HOME", "config"},
            {"VYRE_TELEMETRY_DIR", "tel"},
        };
        for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
            char p[1024];
            at(p, sizeof p, vars[k][1]);
            setenv(vars[k][0], p, 1);
        }
        setenv("CUDA_CACHE_MAXSIZE", "2147483648", 1);
        setenv("VYRE_CACHE_MAX_SIZE", "3G", 1);
        unsetenv("VYRE_PTX_CACHE_DIR");
        const char *argv[16] = {
            VYRE_EXPORTER_BIN, "--web.listen-address", "127.0.0.1:0", "--cache-dir", v, "--no-gpu"};
        size_t n = 6;
        for (size_t k = 0; extra && extra[k] && n < 15; k++)
            argv[n++] = extra[k];
        argv[n] = NULL;
        char *args[16];
        for (size_t k = 0; k <= n; k++)
            args[k] = argv[k] ? strdup(argv[k]) : NULL;
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(efd, 2);
        execv(args[0], args);
        _exit(127);
    }
    close(efd);
    unsigned port = 0;
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end && !port; sleep_ms(20)) {
        char *text = tu_read_file(log, NULL);
        const char *p = text ? strstr(text, "listening on 127.0.0.1:") : NULL;
        if (p)
            port = (unsigned)strtoul(p + strlen("listening on 127.0.0.1:"), NULL, 10);
        cr_assert_eq(waitpid(g_exp, NULL, WNOHANG), 0, "exporter exited: %s", text ? text : "");
        free(text);
    }
    cr_assert_gt(port, 0, "the exporter never said its port");
    return port;
}

/* GET /metrics from 127.0.0.1:port; the body (malloc'ed). */
static char *scrape(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "%s", strerror(errno));
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    cr_assert_eq(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (ssize_t r; (r = read(fd, buf + len, cap - len - 1)) > 0;) {
        len += (size_t)r;
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    close(fd);
    buf[len] = '\0';
    cr_assert(strncmp(buf, "HTTP/1.", 7) == 0 && strstr(buf, " 200 "), "%.200s", buf);
    return buf;
}

static void has(const char *doc, const char *line)
{
    cr_assert(tu_has_line(doc, line), "no line '%s' in:\n%s", line, doc);
}

static void has_not(const char *doc, const char *text)
{
    cr_assert_null(strstr(doc, text), "'%s' should not be in:\n%s", text, doc);
}

Test(exporter_usage, exact_sizes_limits_and_locations)
{
    make_caches();
    unsigned port = start(NULL);
    char *doc = scrape(port);
    has(doc, "vyre_cache_usage_scans_total 1");
    has(doc, "# TYPE vyre_cache_usage_bytes gauge");
    has(doc, "vyre_cache_usage_bytes{cache=\"vyre\"} 0");
    has(doc, bytes_line("cuda_jit", "j"));
    has(doc, bytes_line("triton", "t"));
    has(doc, bytes_line("inductor", "i"));
    has(doc, "vyre_cache_usage_files{cache=\"vyre\"} 0");
    has(doc, "vyre_cache_usage_files{cache=\"cuda_jit\"} 3");
    has(doc, "vyre_cache_usage_files{cache=\"triton\"} 6");
    has(doc, "vyre_cache_usage_files{cache=\"inductor\"} 2");
    has(doc, "vyre_cache_usage_exists{cache=\"vyre\"} 0");
    has(doc, "vyre_cache_usage_exists{cache=\"triton\"} 1");
    has(doc, "vyre_cache_usage_limit_bytes{cache=\"vyre\"} 3221225472");
    has(doc, "vyre_cache_usage_limit_bytes{cache=\"cuda_jit\"} 2147483648");
    has_not(doc, "vyre_cache_usage_limit_bytes{cache=\"triton\"}");
    has_not(doc, "vyre_cache_usage_limit_bytes{cache=\"inductor\"}");
    for (int i = 0; i < 4; i++) {
        static const char *const names[] = {"vyre", "cuda_jit", "triton", "inductor"};
        char want[256];
        snprintf(want, sizeof want, "vyre_cache_usage_up{cache=\"%s\"} 1", names[i]);
        has(doc, want);
        snprintf(want, sizeof want, "vyre_cache_usage_scan_partial{cache=\"%s\"} 0", names[i]);
        has(doc, want);
        snprintf(want, sizeof want, "vyre_cache_usage_filesystem_avail_bytes{cache=\"%s\"} ",
                 names[i]);
        cr_assert_not_null(strstr(doc, want), "%s", want);
        snprintf(want, sizeof want, "vyre_cache_usage_scan_duration_seconds{cache=\"%s\"} ",
                 names[i]);
        cr_assert_not_null(strstr(doc, want), "%s", want);
    }
    char want[1200], p[1024];
    at(p, sizeof p, "t");
    snprintf(want, sizeof want,
             "vyre_cache_usage_info{cache=\"triton\",path=\"%s\",from=\"TRITON_CACHE_DIR\"} 1", p);
    has(doc, want);
    at(p, sizeof p, "v");
    snprintf(want, sizeof want,
             "vyre_cache_usage_info{cache=\"vyre\",path=\"%s\",from=\"caller\"} 1", p);
    has(doc, want);
    has(doc, "vyre_exporter_scrape_errors_total{collector=\"cache_usage\"} 0");
    free(doc);
}

Test(exporter_usage, measured_by_the_thread_not_by_a_scrape)
{
    make_caches();
    const char *slow[] = {"--cache-usage-interval", "3600", NULL};
    unsigned port = start(slow);
    char *doc = scrape(port);
    char before[256];
    snprintf(before, sizeof before, "%s", bytes_line("triton", "t"));
    has(doc, before);
    free(doc);
    mkf("t/KEY2/new.cubin", 500);
    for (int i = 0; i < 5; i++) {
        doc = scrape(port);
        has(doc, before);
        has(doc, "vyre_cache_usage_scans_total 1");
        free(doc);
    }
    kill(g_exp, SIGTERM);
    waitpid(g_exp, NULL, 0);
    g_exp = 0;

    /* Every second: the new file shows within the deadline. */
    const char *fast[] = {"--cache-usage-interval", "1", NULL};
    port = start(fast);
    mkf("t/KEY2/newer.cubin", 1000);
    char after[256];
    snprintf(after, sizeof after, "%s", bytes_line("triton", "t"));
    int seen = 0;
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end && !seen; sleep_ms(200)) {
        doc = scrape(port);
        seen = tu_has_line(doc, after);
        free(doc);
    }
    cr_assert(seen, "the Triton cache's new files never showed");
}

Test(exporter_usage, a_cache_that_cannot_be_read_is_down_and_counted)
{
    make_caches();
    /* Triton's variable names a file. */
    char t[1024];
    at(t, sizeof t, "t");
    tu_rm_rf(t);
    mkf("t", 5);
    unsigned port = start(NULL);
    char *doc = scrape(port);
    has(doc, "vyre_cache_usage_up{cache=\"triton\"} 0");
    has_not(doc, "vyre_cache_usage_bytes{cache=\"triton\"}");
    has(doc, bytes_line("inductor", "i"));
    has(doc, "vyre_exporter_scrape_errors_total{collector=\"cache_usage\"} 1");
    free(doc);
}

Test(exporter_usage, turned_off)
{
    make_caches();
    const char *off[] = {"--no-cache-usage", NULL};
    unsigned port = start(off);
    char *doc = scrape(port);
    has_not(doc, "vyre_cache_usage_");
    has(doc, "vyre_exporter_scrape_errors_total{collector=\"cache_usage\"} 0");
    free(doc);
}

Test(exporter_usage, a_bad_interval_is_refused)
{
    static const char *const bad[] = {"0.5", "0", "x", "", "86401"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[] = {"--cache-usage-interval", bad[i], NULL};
        tu_proc p;
        tu_run_bin(&p, VYRE_EXPORTER_BIN, args, NULL, NULL);
        char want[256];
        snprintf(want, sizeof want, "vyre-exporter: error: invalid --cache-usage-interval '%s'",
                 bad[i]);
        cr_assert_eq(p.exit_code, 2, "'%s': %s", bad[i], p.err);
        cr_assert(tu_has_line(p.err, want), "stderr: %s", p.err);
        cr_assert(strstr(p.err, "hint: give seconds from 1 to 86400"), "stderr: %s", p.err);
        tu_proc_free(&p);
    }
}
