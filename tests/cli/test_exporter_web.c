/*
 * test_exporter_web.c - vyre-exporter's web side as a fleet uses it: the
 * gzip content coding Prometheus asks for (Accept-Encoding: gzip), and
 *
 * the DCGM-compatible families (--collector.dcgm-compat) with the fake NVML,
 * and --web.config.file (TLS and basic auth) with a real Prometheus.
 *
 * The exporter runs on a loopback port of its choosing (it names it on
 * stderr); plain requests are HTTP/1.0 over a raw socket, read whole (the
 * gzip body holds NUL bytes, so it is kept with its length); requests over
 * TLS go through libcurl, which checks the certificate against the test's
 * throwaway CA.
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
#include <crypt.h>
#include <curl/curl.h>
#include <zlib.h>

#include "servers.h"
#include "testutil.h"

#ifndef FAKENVML_LIB
#error "tests/CMakeLists.txt must define FAKENVML_LIB"
#endif
#ifndef VYRE_EXPORTER_BIN
#error "tests/CMakeLists.txt must define VYRE_EXPORTER_BIN"
#endif

#define WAIT_MS 30000

static char g_dir[512];
static pid_t g_exp, g_prom;

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

static void stop_prometheus(void);

static void teardown(void)
{
    stop_prometheus();
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

/* ---- --web.config.file ------------------------------------------------- */

/* A bcrypt hash of password (cost 5: fast enough for a sanitized test). */
static const char *bcrypt_of(const char *password)
{
    static char hash[128];
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    struct crypt_data cd;
    memset(&cd, 0, sizeof cd);
    cr_assert_not_null(crypt_gensalt_rn("$2b$", 5, NULL, 0, salt, sizeof salt));
    const char *h = crypt_rn(password, salt, &cd, sizeof cd);
    cr_assert(h && strncmp(h, "$2b$05$", 7) == 0, "crypt_rn: %s", h ? h : "NULL");
    snprintf(hash, sizeof hash, "%s", h);
    return hash;
}

/* Runs the exporter with --web.config.file holding yml (written into the
 * test's folder as web.yml); it must stop at once with exit 2 and print
 * err_line then hint_line, exactly. */
static void refused(const char *yml, const char *err_line, const char *hint_line)
{
    char path[700];
    snprintf(path, sizeof path, "%s/web.yml", g_dir);
    tu_write_file(path, yml, strlen(yml));
    const char *args[] = {"--web.listen-address", "127.0.0.1:0",       "--no-gpu", "--no-cache",
                          "--no-cache-usage",     "--web.config.file", path,       NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_EXPORTER_BIN, args, NULL, NULL);
    char want[2048];
    snprintf(want, sizeof want, "vyre-exporter: error: web config '%s' %s\nhint: %s\n", path,
             err_line, hint_line);
    cr_assert_eq(p.exit_code, 2, "exit %d for:\n%s\nstderr: %s", p.exit_code, yml, p.err);
    cr_assert_str_eq(p.err, want, "for:\n%s", yml);
    cr_assert_str_eq(p.out, "");
    tu_proc_free(&p);
}

Test(exporter_web, a_bad_web_config_is_refused_with_its_line_and_a_hint)
{
    static const char tls_hint[] = "tls_server_config takes cert_file and key_file (PEM files, "
                                   "paths relative to the web config file)";
    static const char users_hint[] =
        "basic_auth_users maps each user name to a bcrypt hash of its password, e.g. from: "
        "htpasswd -nBC 10 '' | tr -d ':\\n'";
    static const char top_hint[] = "vyre-exporter reads tls_server_config (cert_file, key_file) "
                                   "and basic_auth_users of the exporter toolkit's web config";
    refused("basic_auth_users:\n  prometheus: $2y$10$abc\n",
            "line 2: basic_auth_users: the password of 'prometheus' is not a bcrypt hash",
            users_hint);
    refused("# a comment\nbasic_auth_user:\n  prometheus: x\n",
            "line 2: unknown key 'basic_auth_user'", top_hint);
    refused("http_server_config:\n  http2: false\n",
            "line 1: 'http_server_config' is not supported by vyre-exporter", top_hint);
    refused("tls_server_config:\n  cert_file: a.pem\n  key_file: a.key\n  min_version: TLS13\n",
            "line 4: tls_server_config: 'min_version' is not supported by vyre-exporter", tls_hint);
    refused("tls_server_config:\n  cert_file: a.pem\n",
            "line 2: tls_server_config needs both cert_file and key_file", tls_hint);
    refused(
        "tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n",
        tu_text("line 2: cannot read cert_file '%s/missing.pem': No such file or directory", g_dir),
        "paths are relative to the web config file's folder");
    refused("tls_server_config: [a, b]\n", "line 1: tls_server_config must be a mapping", tls_hint);
    refused("basic_auth_users:\n  a: [x\n",
            "line 3: not valid YAML: did not find expected ',' or ']'",
            "check the indentation and quoting near that line");
    /* A file that is not PEM, named relative to the config. */
    char junk[700];
    snprintf(junk, sizeof junk, "%s/junk.pem", g_dir);
    tu_write_file(junk, "not a certificate\n", 18);
    refused("tls_server_config:\n  cert_file: junk.pem\n  key_file: junk.pem\n",
            tu_text("line 2: cert_file '%s/junk.pem' is not a PEM file", g_dir),
            "give the PEM files a TLS server uses (openssl x509 -in FILE -text reads them)");
}

/* libcurl's header callback: keeps the WWW-Authenticate value. */
static size_t keep_www_auth(char *b, size_t size, size_t n, void *out)
{
    size_t len = size * n;
    static const char k[] = "www-authenticate:";
    if (len > sizeof k && strncasecmp(b, k, sizeof k - 1) == 0)
        snprintf(out, 256, "%.*s", (int)strcspn(b + sizeof k, "\r\n"), b + sizeof k);
    return len;
}

static size_t keep_body(char *b, size_t size, size_t n, void *out)
{
    size_t len = size * n;
    char *o = out;
    size_t have = strlen(o);
    if (have + len < 65536) {
        memcpy(o + have, b, len);
        o[have + len] = '\0';
    }
    return len;
}

/* GET url over TLS, the certificate checked against ca, with basic
 * credentials userpwd ("user:password"; NULL: none). The status, the
 * WWW-Authenticate value into www[256], the body's start into body[65536]. */
static long tls_get(const char *url, const char *ca, const char *userpwd, char *www, char *body)
{
    www[0] = body[0] = '\0';
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep_www_auth);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, www);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    if (userpwd) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERPWD, userpwd);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    cr_assert_eq(rc, CURLE_OK, "GET %s: %s", url, curl_easy_strerror(rc));
    return status;
}

/* Prometheus's instant query of expr (plain HTTP on port): the body. */
static char *prom_query(unsigned port, const char *expr)
{
    char enc[2048];
    size_t n = 0;
    for (const char *p = expr; *p && n + 4 < sizeof enc; p++) {
        unsigned char ch = (unsigned char)*p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-_.~", ch))
            enc[n++] = (char)ch;
        else
            n += (size_t)snprintf(enc + n, sizeof enc - n, "%%%02X", ch);
    }
    enc[n] = '\0';
    answer a = get(port, tu_text("/api/v1/query?query=%s", enc), "");
    char *body = a.status == 200 ? strdup(a.body) : strdup("");
    answer_free(&a);
    return body;
}

/* Occurrences of needle in s. */
static int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Starts Prometheus with the config text yml; returns its port. */
static unsigned start_prometheus(const char *prom, const char *yml)
{
    char cfg[700], data[700], plog[700];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", g_dir);
    snprintf(data, sizeof data, "--storage.tsdb.path=%s/data", g_dir);
    snprintf(plog, sizeof plog, "%s/prometheus.log", g_dir);
    tu_write_file(cfg, yml, strlen(yml));
    unsigned port = (unsigned)ts_free_port();
    char a_cfg[800], a_listen[64];
    snprintf(a_cfg, sizeof a_cfg, "--config.file=%s", cfg);
    snprintf(a_listen, sizeof a_listen, "--web.listen-address=127.0.0.1:%u", port);
    fflush(NULL);
    g_prom = fork();
    cr_assert_geq(g_prom, 0);
    if (g_prom == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        int lfd = open(plog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 0);
        dup2(lfd, 1);
        dup2(lfd, 2);
        execl(prom, prom, a_cfg, data, a_listen, (char *)NULL);
        _exit(127);
    }
    return port;
}

static void stop_prometheus(void)
{
    if (g_prom > 0) {
        kill(g_prom, SIGTERM);
        waitpid(g_prom, NULL, 0);
        g_prom = 0;
    }
}

/* Polls Prometheus with expr until its answer holds want (or WAIT_MS). */
static char *prom_wait(unsigned port, const char *expr, const char *want)
{
    char *body = NULL;
    for (int64_t end = now_ms() + 2 * WAIT_MS; now_ms() < end; sleep_ms(250)) {
        free(body);
        cr_assert_eq(waitpid(g_prom, NULL, WNOHANG), 0, "prometheus exited: see its log in %s",
                     g_dir);
        body = prom_query(port, expr);
        if (strstr(body, "\"status\":\"success\"") && strstr(body, want))
            return body;
    }
    cr_assert_fail("Prometheus never answered '%s' with '%s'; last: %s", expr, want, body);
    return body;
}

Test(exporter_web, prometheus_scrapes_over_tls_with_basic_auth, .timeout = 240)
{
    if (access("/usr/bin/prometheus", X_OK) != 0) {
        const char *ci = getenv("CI");
        cr_assert(!ci || strcmp(ci, "true") != 0,
                  "prometheus not installed under CI=true: .ci/run installs Debian's package");
        cr_skip_test("prometheus not installed (Debian: apt-get install prometheus)");
    }
    ts_tls_ca(g_dir, "ca");
    ts_tls_cert(g_dir, "ca", "server", "IP:127.0.0.1,DNS:localhost");
    char ca[700], web[700], yml[4096];
    snprintf(ca, sizeof ca, "%s/ca.pem", g_dir);
    snprintf(web, sizeof web, "%s/web.yml", g_dir);
    /* Paths relative to the web config; quoted hash, as htpasswd users write it. */
    int n = snprintf(yml, sizeof yml,
                     "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                     "basic_auth_users:\n  prometheus: '%s'\n",
                     bcrypt_of("s3cret pass"));
    tu_write_file(web, yml, (size_t)n);
    const char *args[] = {
        "--no-cache", "--no-cache-usage", "--collector.dcgm-compat", "--web.config.file", web,
        NULL};
    const char *env[] = {"VYRE_NVML_LIBRARY=" FAKENVML_LIB, "FAKENVML_GPUS=2", NULL};
    unsigned eport = start_exporter(args, env);
    char *log = tu_read_file(tu_text("%s/exporter.log", g_dir), NULL);
    cr_assert(log && strstr(log, " (TLS) (basic auth), metrics at /metrics"), "%s", log);
    free(log);

    /* Requests of our own: 401 with the challenge without credentials or
     * with wrong ones (twice: a bad password is never remembered), 200 with
     * the right ones (twice: the second from the cache). */
    static char body[65536];
    char www[256], url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%u/metrics", eport);
    cr_assert_eq(tls_get(url, ca, NULL, www, body), 401);
    cr_assert_str_eq(www, "Basic realm=\"vyre-exporter\", charset=\"UTF-8\"");
    cr_assert_str_eq(body, "Unauthorized\n");
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(tls_get(url, ca, "prometheus:s3cret", www, body), 401);
        cr_assert_eq(tls_get(url, ca, "nobody:s3cret pass", www, body), 401);
    }
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(tls_get(url, ca, "prometheus:s3cret pass", www, body), 200);
        cr_assert(strstr(body, "\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), "%.2000s", body);
    }
    snprintf(url, sizeof url, "https://127.0.0.1:%u/", eport);
    cr_assert_eq(tls_get(url, ca, NULL, www, body), 401, "the landing page is behind auth too");

    /* Prometheus: one job with the password, one without. */
    n = snprintf(yml, sizeof yml,
                 "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                 "scrape_configs:\n"
                 "  - job_name: vyre\n    scheme: https\n    tls_config:\n      ca_file: %s\n"
                 "    basic_auth:\n      username: prometheus\n      password: 's3cret pass'\n"
                 "    static_configs:\n      - targets: ['127.0.0.1:%u']\n"
                 "  - job_name: nopass\n    scheme: https\n    tls_config:\n      ca_file: %s\n"
                 "    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
                 ca, eport, ca, eport);
    cr_assert_lt(n, (int)sizeof yml);
    unsigned pport = start_prometheus("/usr/bin/prometheus", yml);
    cr_assert_eq(ts_wait_port((int)pport, 2 * WAIT_MS), 1, "Prometheus never listened: see %s",
                 g_dir);
    free(prom_wait(pport, "up{job=\"vyre\"} == 1", "\"job\":\"vyre\""));
    free(prom_wait(pport, "up{job=\"nopass\"} == 0", "\"job\":\"nopass\""));
    answer t = get(pport, "/api/v1/targets", "");
    cr_assert(strstr(t.body, "401 Unauthorized"), "no 401 in the nopass target: %s", t.body);
    answer_free(&t);

    /* The PromQL of dcgm-exporter's Grafana dashboard (12239), its
     * variables matching every host and GPU: a series per GPU. */
    static const char *const k_exprs[] = {
        "max(DCGM_FI_DEV_GPU_TEMP{Hostname=~\".*\", gpu=~\".*\"}) by (Hostname, gpu, uuid)",
        "max(DCGM_FI_DEV_POWER_USAGE{Hostname=~\".*\", gpu=~\".*\"}) by (Hostname, gpu, uuid)",
        "max(DCGM_FI_DEV_SM_CLOCK{Hostname=~\".*\", gpu=~\".*\"} * 1000000) by (Hostname, UUID, "
        "gpu)",
        "DCGM_FI_DEV_GPU_UTIL{Hostname=~\".*\", gpu=~\".*\"}",
        "DCGM_FI_DEV_FB_USED{Hostname=~\".*\", gpu=~\".*\"}",
    };
    for (size_t k = 0; k < sizeof k_exprs / sizeof k_exprs[0]; k++) {
        char *b = prom_wait(pport, k_exprs[k], "\"gpu\":\"1\"");
        cr_assert_eq(count_of(b, "\"metric\":"), 2, "%s: %s", k_exprs[k], b);
        cr_assert(strstr(b, "\"gpu\":\"0\""), "%s: %s", k_exprs[k], b);
        free(b);
    }
    char *b =
        prom_wait(pport, "sum(max(DCGM_FI_DEV_POWER_USAGE{Hostname=~\".*\"}) by (gpu))", "\"201\"");
    free(b);
    stop_prometheus();
}

/* PEM files that do not belong together pass the config's reading and are
 * refused when TLS starts: exit 2, with a hint, never a plain-HTTP server. */
Test(exporter_web, a_key_that_is_not_the_certificates_is_refused_at_start)
{
    ts_tls_ca(g_dir, "ca");
    ts_tls_cert(g_dir, "ca", "server", "IP:127.0.0.1");
    ts_tls_cert(g_dir, "ca", "other", "IP:127.0.0.1");
    char web[700];
    snprintf(web, sizeof web, "%s/web.yml", g_dir);
    const char yml[] = "tls_server_config:\n  cert_file: server.pem\n  key_file: other.key\n";
    tu_write_file(web, yml, sizeof yml - 1);
    /* --telemetry.dir: an existing folder, so that no warning comes first. */
    const char *args[] = {"--web.listen-address",
                          "127.0.0.1:0",
                          "--no-gpu",
                          "--no-cache",
                          "--no-cache-usage",
                          "--telemetry.dir",
                          g_dir,
                          "--web.config.file",
                          web,
                          NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_EXPORTER_BIN, args, NULL, NULL);
    cr_assert_eq(p.exit_code, 2, "exit %d: %s", p.exit_code, p.err);
    cr_assert_str_eq(
        p.err, "vyre-exporter: error: cannot start TLS on '127.0.0.1:0': libmicrohttpd (GnuTLS) "
               "refused the certificate or key\nhint: check that the web config's cert_file and "
               "key_file are PEM, unencrypted, and belong together (openssl x509 -noout -pubkey "
               "-in CERT and openssl pkey -pubout -in KEY print the same key)\n");
    tu_proc_free(&p);
}
