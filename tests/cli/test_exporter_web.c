/*
 * test_exporter_web.c - vyre-exporter's web side as a fleet uses it: the
 * gzip content coding Prometheus asks for (Accept-Encoding: gzip), and the
 * DCGM-compatible families (--collector.dcgm-compat) with the fake NVML.
 *
 * The exporter runs on a loopback port of its choosing (it names it on
 * stderr); requests are HTTP/1.0 over a raw socket, read whole (the gzip
 * body holds NUL bytes, so it is kept with its length).
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
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

#ifndef FAKENVML_LIB
#error "tests/CMakeLists.txt must define FAKENVML_LIB"
#endif
#ifndef VYRE_EXPORTER_BIN
#error "tests/CMakeLists.txt must define VYRE_EXPORTER_BIN"
#endif

#define WAIT_MS 30000

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

TestSuite(exporter_web, .init = setup, .fini = teardown, .timeout = 120);

/* Starts the exporter on 127.0.0.1 with the NULL-terminated extra args
 * and env ("NAME=value"); returns the port it names. */
static unsigned start_exporter(const char *const *args, const char *const *env)
{
    char tel[600], elog[600];
    snprintf(tel, sizeof tel, "%s/tel", g_dir);
    snprintf(elog, sizeof elog, "%s/exporter.log", g_dir);
    (void)mkdir(tel, 0700);
    fflush(NULL);
    g_exp = fork();
    cr_assert_geq(g_exp, 0);
    if (g_exp == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setenv("VYRE_TELEMETRY_DIR", tel, 1);
        for (size_t i = 0; env && env[i]; i++)
            putenv(strdup(env[i]));
        int null = open("/dev/null", O_RDWR);
        int efd = open(elog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 0);
        dup2(null, 1);
        dup2(efd, 2);
        char *argv[32];
        size_t n = 0;
        argv[n++] = strdup(VYRE_EXPORTER_BIN);
        argv[n++] = strdup("--web.listen-address");
        argv[n++] = strdup("127.0.0.1:0");
        for (size_t i = 0; args && args[i] && n < 31; i++)
            argv[n++] = strdup(args[i]);
        argv[n] = NULL;
        execv(argv[0], argv);
        _exit(127);
    }
    for (int64_t end = now_ms() + WAIT_MS; now_ms() < end; sleep_ms(20)) {
        char *log = tu_read_file(elog, NULL);
        const char *p = log ? strstr(log, "listening on 127.0.0.1:") : NULL;
        unsigned port = p ? (unsigned)strtoul(p + strlen("listening on 127.0.0.1:"), NULL, 10) : 0;
        int exited = waitpid(g_exp, NULL, WNOHANG) != 0;
        cr_assert(port || !exited, "the exporter exited: %s", log ? log : "");
        free(log);
        if (port)
            return port;
    }
    cr_assert_fail("the exporter never said its port");
    return 0;
}

/* One whole HTTP answer: its header block (NUL-terminated) and its body
 * (len bytes, may hold NULs). */
typedef struct answer {
    int status;
    char *head;
    char *body;
    size_t len;
} answer;

static void answer_free(answer *a)
{
    free(a->head);
    free(a->body);
    memset(a, 0, sizeof *a);
}

/* GET target with the extra header lines hdrs ("" or "Name: v\r\n...")
 * over a fresh connection, read until the server closes it (10 s). */
static answer get(unsigned port, const char *target, const char *hdrs)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s\r\n", target, hdrs);
    cr_assert_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    answer ans = {0};
    const char *end = strstr(buf, "\r\n\r\n");
    cr_assert_not_null(end, "no complete answer: %s", buf);
    cr_assert_eq(sscanf(buf, "HTTP/1.%*d %d", &ans.status), 1, "%s", buf);
    size_t hl = (size_t)(end - buf) + 2;
    ans.head = strndup(buf, hl);
    ans.len = len - hl - 2;
    ans.body = malloc(ans.len + 1);
    memcpy(ans.body, end + 4, ans.len);
    ans.body[ans.len] = '\0';
    free(buf);
    return ans;
}

/* The value of header name in an answer's header block (copied into out),
 * or NULL. */
static const char *header(const answer *a, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(a->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            snprintf(out, size, "%.*s", (int)strcspn(v, "\r"), v);
            return out;
        }
    }
    return NULL;
}

/* The gzip stream in[0..len) inflated (malloc'ed, NUL-terminated). */
static char *gunzip(const char *in, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK); /* gzip wrapper only */
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (z.total_out + 1 >= cap) {
            cap *= 2;
            out = realloc(out, cap);
            cr_assert_not_null(out);
        }
        z.next_out = (Bytef *)out + z.total_out;
        z.avail_out = (uInt)(cap - 1 - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
    } while (rc == Z_OK);
    cr_assert_eq(rc, Z_STREAM_END, "not a whole gzip stream (zlib %d)", rc);
    cr_assert_eq(z.avail_in, 0u, "bytes after the gzip stream");
    out[z.total_out] = '\0';
    inflateEnd(&z);
    return out;
}

/* The text without the exporter's own families (vyre_exporter_*: scrape
 * counts and durations change from one scrape to the next). */
static char *without_self(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(n + 1);
    cr_assert_not_null(out);
    size_t len = 0;
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        if (!strstr(tu_text("%.*s", (int)(l < 400 ? l : 400), p), "vyre_exporter_")) {
            memcpy(out + len, p, l);
            len += l;
            out[len++] = '\n';
        }
        p += l + (p[l] == '\n');
    }
    out[len] = '\0';
    return out;
}

Test(exporter_web, gzip_when_the_scraper_accepts_it)
{
    const char *args[] = {"--no-gpu", "--no-cache-usage", NULL};
    unsigned port = start_exporter(args, NULL);
    char v[256];

    answer plain = get(port, "/metrics", "");
    cr_assert_eq(plain.status, 200);
    cr_assert_null(header(&plain, "Content-Encoding", v, sizeof v), "plain answer coded '%s'", v);
    cr_assert_str_eq(header(&plain, "Vary", v, sizeof v) ? v : "", "Accept-Encoding");
    cr_assert(strstr(plain.body, "# TYPE vyre_gpu_monitor_up gauge"), "%s", plain.body);

    answer gz = get(port, "/metrics", "Accept-Encoding: gzip\r\n");
    cr_assert_eq(gz.status, 200);
    cr_assert_str_eq(header(&gz, "Content-Encoding", v, sizeof v) ? v : "", "gzip");
    cr_assert_str_eq(header(&gz, "Vary", v, sizeof v) ? v : "", "Accept-Encoding");
    cr_assert(gz.len > 18 && (unsigned char)gz.body[0] == 0x1f && (unsigned char)gz.body[1] == 0x8b,
              "not a gzip stream (%zu bytes)", gz.len);
    cr_assert_lt(gz.len, plain.len / 3, "gzip %zu bytes for %zu plain", gz.len, plain.len);
    char *text = gunzip(gz.body, gz.len);
    char *a = without_self(plain.body), *b = without_self(text);
    cr_assert_str_eq(b, a, "the gzipped scrape is not the plain one");
    cr_assert(strstr(text, "vyre_exporter_scrapes_total 2"), "%s", text);
    free(a);
    free(b);
    free(text);
    answer_free(&gz);

    /* Prometheus's own header, other spellings, and refusals. */
    static const struct {
        const char *ae;
        int gzip;
    } k_cases[] = {
        {"gzip", 1},
        {"GZIP", 1},
        {"deflate, gzip;q=0.5", 1},
        {"x-gzip", 1},
        {"*", 1},
        {"identity", 0},
        {"gzip;q=0", 0},
        {"*, gzip;q=0", 0},
        {"deflate", 0},
        {"gzipfoo", 0},
        {"br;q=1, *;q=0", 0},
        {"gzip; q=0.000", 0},
    };
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        answer x = get(port, "/metrics", tu_text("Accept-Encoding: %s\r\n", k_cases[i].ae));
        cr_assert_eq(x.status, 200);
        int coded = header(&x, "Content-Encoding", v, sizeof v) != NULL;
        cr_assert_eq(coded, k_cases[i].gzip, "Accept-Encoding '%s': gzip %d, want %d",
                     k_cases[i].ae, coded, k_cases[i].gzip);
        answer_free(&x);
    }
    answer_free(&plain);
}

/* GPU i's label set in the DCGM-compatible families, as dcgm-exporter
 * writes it, with the fake NVML's values. */
static const char *dcgm_labels(unsigned i)
{
    char host[256];
    cr_assert_eq(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = '\0';
    return tu_text("{gpu=\"%u\",UUID=\"GPU-00000000-0000-0000-0000-%012u\","
                   "pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%u\","
                   "modelName=\"NVIDIA Fake GPU %u\",Hostname=\"%s\","
                   "DCGM_FI_DRIVER_VERSION=\"580.00.01\"}",
                   i, i, 0x18 + i, i, i, host);
}

Test(exporter_web, dcgm_compat_families_have_dcgm_names_labels_and_values)
{
    const char *args[] = {"--no-cache", "--no-cache-usage", "--collector.dcgm-compat", NULL};
    const char *env[] = {"VYRE_NVML_LIBRARY=" FAKENVML_LIB, "FAKENVML_GPUS=2", NULL};
    unsigned port = start_exporter(args, env);
    answer a = get(port, "/metrics", "");
    cr_assert_eq(a.status, 200);
    static const struct {
        const char *name, *type;
    } k_types[] = {
        {"DCGM_FI_DEV_SM_CLOCK", "gauge"},
        {"DCGM_FI_DEV_MEM_CLOCK", "gauge"},
        {"DCGM_FI_DEV_GPU_TEMP", "gauge"},
        {"DCGM_FI_DEV_POWER_USAGE", "gauge"},
        {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"},
        {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"},
        {"DCGM_FI_DEV_GPU_UTIL", "gauge"},
        {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"},
        {"DCGM_FI_DEV_ENC_UTIL", "gauge"},
        {"DCGM_FI_DEV_DEC_UTIL", "gauge"},
        {"DCGM_FI_DEV_FB_FREE", "gauge"},
        {"DCGM_FI_DEV_FB_USED", "gauge"},
        {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"},
        {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"},
        {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"},
    };
    for (size_t k = 0; k < sizeof k_types / sizeof k_types[0]; k++) {
        const char *want = tu_text("\n# TYPE %s %s\n", k_types[k].name, k_types[k].type);
        cr_assert(strstr(a.body, want), "no '%s' in:\n%s", want + 1, a.body);
    }
    for (unsigned i = 0; i < 2; i++) {
        char l[512];
        snprintf(l, sizeof l, "%s", dcgm_labels(i));
        const struct {
            const char *name;
            unsigned long long v;
        } k_values[] = {
            {"DCGM_FI_DEV_SM_CLOCK", 1500 + i},
            {"DCGM_FI_DEV_MEM_CLOCK", 2619},
            {"DCGM_FI_DEV_GPU_TEMP", 40 + i},
            {"DCGM_FI_DEV_POWER_USAGE", 100 + i},
            {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 5000000000ull + 1000 * i},
            {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 11 + i},
            {"DCGM_FI_DEV_MEM_COPY_UTIL", 5 * (i + 1)},
            {"DCGM_FI_DEV_ENC_UTIL", 3 + i},
            {"DCGM_FI_DEV_DEC_UTIL", 7 + i},
            {"DCGM_FI_DEV_FB_FREE", 79 * 1024},
            {"DCGM_FI_DEV_FB_USED", (i + 1) * 1024},
            {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", i},
            {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 2 * i},
            {"DCGM_FI_DEV_ROW_REMAP_FAILURE", i == 1},
        };
        for (size_t k = 0; k < sizeof k_values / sizeof k_values[0]; k++) {
            const char *want = tu_text("\n%s%s %llu\n", k_values[k].name, l, k_values[k].v);
            cr_assert(strstr(a.body, want), "no '%s' in:\n%s", want + 1, a.body);
        }
        /* Utilisation moves with every NVML call in the fake: its series
         * is there, with 10*(i+1) or more. */
        const char *util = tu_text("\nDCGM_FI_DEV_GPU_UTIL%s ", l);
        const char *at = strstr(a.body, util);
        cr_assert(at, "no '%s' in:\n%s", util + 1, a.body);
        cr_assert_geq(strtol(at + strlen(util), NULL, 10), 10 * (i + 1));
    }
    answer_free(&a);
}

Test(exporter_web, no_dcgm_family_without_the_flag)
{
    const char *args[] = {"--no-cache", "--no-cache-usage", NULL};
    const char *env[] = {"VYRE_NVML_LIBRARY=" FAKENVML_LIB, "FAKENVML_GPUS=2", NULL};
    unsigned port = start_exporter(args, env);
    answer a = get(port, "/metrics", "");
    cr_assert_eq(a.status, 200);
    cr_assert(strstr(a.body, "vyre_gpu_sm_clock_hertz{gpu=\"1\""), "%s", a.body);
    cr_assert_null(strstr(a.body, "DCGM_"), "%s", a.body);
    answer_free(&a);
}
