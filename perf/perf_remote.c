/*
 * perf_remote.c - the remote stores of the pipeline cache, end to end,
 * against a local hit and a cold compile of the same real kernel, on real
 * servers started here on loopback ports (nginx with WebDAV PUT,
 * redis-server). Prints ratios; never pass/fail.
 *
 *   cold     vyre_compile_through_cache on an empty cache, no remote: PTX to
 *            cubin through nvJitLink, then the durable local put
 *   local    the same call on a warm cache: open, validate, checksum, cubin
 *            in memory
 *   remote   the same call on an empty cache whose remote holds the blob:
 *            fetch, full validation, local put, cubin in memory; and the
 *            same on a read-only local cache (fetch and validation only:
 *            the local put is the durable one, fsyncs included)
 *   wb       vyre_cache_put of a new cubin with write-back to the remote,
 *            against the same put with no remote (the extra cost a compile
 *            pays for sharing)
 *
 * The kernel: a tiled SGEMM (the bench suites' own) compiled to PTX by
 * NVRTC here, or any PTX given with --ptx FILE --entry NAME (a Triton
 * kernel, say). Architecture sm_90.
 *
 * usage: perf_remote [--quick] [--ptx FILE --entry NAME]
 */
#include <arpa/inet.h>
#include <errno.h>
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

#include "perfutil.h"
#include "vyre/vyre.h"

#define ARCH "sm_90"

static char g_tmp[1024];
static pid_t g_servers[2];

static void cleanup(void)
{
    for (int i = 0; i < 2; i++)
        if (g_servers[i] > 0) {
            kill(g_servers[i], SIGTERM);
            waitpid(g_servers[i], NULL, 0);
            g_servers[i] = 0;
        }
    if (g_tmp[0]) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "perf_remote: could not remove %s\n", g_tmp);
        g_tmp[0] = '\0';
    }
}

static void die(const char *what, const vyre_error *e)
{
    fprintf(stderr, "perf_remote: %s: %s\n", what, e ? e->message : strerror(errno));
    cleanup();
    exit(2);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        die("a free port", NULL);
    close(fd);
    return ntohs(a.sin_port);
}

static int wait_port(int port)
{
    for (int i = 0; i < 500; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return 1;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int find_program(const char *name, char *buf, size_t size)
{
    static const char *const dirs[] = {"/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin",
                                       "/usr/local/bin"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(buf, size, "%s/%s", dirs[i], name);
        if (access(buf, X_OK) == 0)
            return 1;
    }
    return 0;
}

static pid_t spawn(const char *const argv[])
{
    fflush(stdout); /* the child must not write our buffered output again */
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork", NULL);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        char *v[16];
        size_t n = 0;
        for (; argv[n] && n < 15; n++)
            v[n] = strdup(argv[n]);
        v[n] = NULL;
        execv(v[0], v);
        _exit(127);
    }
    return pid;
}

/* nginx with WebDAV PUT under <tmp>/nginx; 0 when not installed. */
static int start_nginx(void)
{
    char bin[512];
    if (!find_program("nginx", bin, sizeof bin))
        return 0;
    char dir[1200], conf[1300], text[4096], log[1300];
    snprintf(dir, sizeof dir, "%s/nginx", g_tmp);
    mkdir(dir, 0700);
    snprintf(text, sizeof text, "%s/www", dir);
    mkdir(text, 0700);
    int port = free_port();
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    snprintf(log, sizeof log, "%s/error.log", dir);
    int n = snprintf(text, sizeof text,
                     "%sdaemon off;\nmaster_process off;\npid %s/nginx.pid;\nerror_log %s;\n"
                     "events { worker_connections 256; }\n"
                     "http { access_log off; client_body_temp_path %s/body;\n"
                     "  proxy_temp_path %s/p; fastcgi_temp_path %s/f; uwsgi_temp_path %s/u;\n"
                     "  scgi_temp_path %s/s; client_max_body_size 64m;\n"
                     "  server { listen 127.0.0.1:%d; location / { root %s/www;\n"
                     "    dav_methods PUT; create_full_put_path on; dav_access user:rw; } } }\n",
                     geteuid() == 0 ? "user root;\n" : "", dir, log, dir, dir, dir, dir, dir, port,
                     dir);
    FILE *f = fopen(conf, "w");
    if (!f || fwrite(text, 1, (size_t)n, f) != (size_t)n || fclose(f))
        die(conf, NULL);
    const char *argv[] = {bin, "-e", log, "-c", conf, "-p", dir, NULL};
    g_servers[0] = spawn(argv);
    if (!wait_port(port))
        die("nginx did not start", NULL);
    return port;
}

static int start_redis(void)
{
    char bin[512];
    if (!find_program("redis-server", bin, sizeof bin))
        return 0;
    int port = free_port();
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    const char *argv[] = {bin, "--port",       p,    "--bind", "127.0.0.1", "--save",
                          "",  "--appendonly", "no", "--dir",  g_tmp,       NULL};
    g_servers[1] = spawn(argv);
    if (!wait_port(port))
        die("redis-server did not start", NULL);
    return port;
}

static vyre_cache *open_flags(const char *name, int round, const char *remotes, unsigned flags)
{
    char root[1400];
    snprintf(root, sizeof root, "%s/%s-%d", g_tmp, name, round);
    vyre_cache *c = NULL;
    vyre_error e;
    /* The defaults and the remotes given: no file or variable of this
     * machine adds a remote. */
    vyre_config *cfg = vyre_config_new();
    if (!cfg)
        die("out of memory", NULL);
    if (remotes && vyre_config_set(cfg, "remote_storage", remotes, &e))
        die("remotes", &e);
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.flags = flags;
    oo.config = cfg;
    if (vyre_cache_open(root, &oo, &c, &e))
        die("open", &e);
    vyre_config_free(cfg);
    return c;
}

static vyre_cache *open_at(const char *name, int round, const char *remotes)
{
    return open_flags(name, round, remotes, 0);
}

/* One vyre_compile_through_cache, timed; checks where the cubin came from. */
static double timed_get(vyre_cache *c, const vyre_compile_request *req, int want_hit)
{
    vyre_blob *b = NULL;
    int hit = 0;
    vyre_error e;
    double t0 = perf_now_s();
    if (vyre_compile_through_cache(c, req, NULL, NULL, 0, &b, &hit, &e))
        die("compile through the cache", &e);
    double dt = perf_now_s() - t0;
    if (hit != want_hit || !b || b->size == 0)
        die(want_hit ? "expected a hit" : "expected a compile", NULL);
    vyre_blob_free(b);
    return dt;
}

/* Median seconds of `rounds` remote hits: an empty local cache each time. */
static double remote_hits(const char *tag, const char *remotes, const vyre_compile_request *req,
                          int rounds, int readonly, size_t *from_remote)
{
    double v[64];
    for (int r = 0; r < rounds; r++) {
        if (readonly)
            vyre_cache_close(open_at(tag, r, NULL)); /* an empty cache to open read-only */
        vyre_cache *c = open_flags(tag, r, remotes, readonly ? VYRE_CACHE_READONLY : 0);
        v[r] = timed_get(c, req, 1);
        vyre_remote_stats st;
        vyre_cache_remote_get(c, 0, 0, NULL, &st, NULL);
        *from_remote += st.hits;
        vyre_cache_close(c);
    }
    return perf_median(v, rounds);
}

/* One put of a new blob (key from i and seed) through c: seconds. */
static double timed_put(vyre_cache *c, const vyre_compile_result *res, int i, unsigned seed)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    for (int b = 0; b < VYRE_KEY_BYTES; b++)
        h.key.bytes[b] = (uint8_t)(b * 37 + i * 11 + (int)seed * 101);
    memcpy(h.key.bytes, &i, sizeof i);
    memcpy(h.key.bytes + 4, &seed, sizeof seed);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "%s", res->arch);
    snprintf(h.toolchain, sizeof h.toolchain, "%s", res->toolchain);
    h.compile_ns = res->compile_ns;
    vyre_error e;
    double t0 = perf_now_s();
    if (vyre_cache_put(c, &h, res->cubin, res->size, &e))
        die("put", &e);
    return perf_now_s() - t0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die(path, NULL);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* What the remote rows share: the request, the rounds and the baselines,
 * and the two stores (port 0: not installed, skipped). */
typedef struct remote_ctx {
    const vyre_compile_request *req;
    const vyre_compile_result *res;
    int rounds, nputs;
    double t_local, t_cold;
    int ports[2];
    char specs[2][256];
} remote_ctx;

/* Seeds each store from one cache, then times hits through it. */
static void remote_hit_rows(const remote_ctx *x)
{
    static const char *const names[2] = {"nginx (HTTP, WebDAV PUT)", "redis"};
    vyre_error e;
    for (int s = 0; s < 2; s++) {
        if (!x->ports[s]) {
            printf("%-34s skipped: %s is not installed\n", names[s], s ? "redis-server" : "nginx");
            continue;
        }
        /* Seed the store: one machine compiles and writes back. */
        vyre_cache *seed = open_at(s ? "seed-redis" : "seed-nginx", 0, x->specs[s]);
        vyre_blob *b = NULL;
        int hit = 0;
        if (vyre_compile_through_cache(seed, x->req, NULL, NULL, 0, &b, &hit, &e))
            die("seed", &e);
        vyre_blob_free(b);
        vyre_remote_stats st;
        vyre_cache_remote_get(seed, 0, 0, NULL, &st, NULL);
        if (st.puts != 1)
            die("the seed was not written back", NULL);
        vyre_cache_close(seed);
        for (int ro = 0; ro < 2; ro++) {
            size_t got = 0;
            char tag[64], label[64];
            snprintf(tag, sizeof tag, "remote-%s-%d", s ? "redis" : "nginx", ro);
            double t = remote_hits(tag, x->specs[s], x->req, x->rounds, ro, &got);
            if (got != (size_t)x->rounds)
                die("not every round was a remote hit", NULL);
            snprintf(label, sizeof label, "remote hit, %s%s", s ? "redis" : "nginx",
                     ro ? " (fetch+check)" : "");
            printf("%-34s %12.1f %14.2f %14.4f\n", label, t * 1e6, t / x->t_local, t / x->t_cold);
        }
    }
}

/* Puts with and without write-back interleaved, so that drift in the
 * disk's fsync latency falls on all of them alike. */
static void write_back_rows(const remote_ctx *x)
{
    double t_wb[2] = {0, 0}, t_put = 0;
    vyre_cache *pc[3] = {open_at("put-plain", 0, NULL), NULL, NULL};
    for (int s = 0; s < 2; s++)
        if (x->ports[s])
            pc[s + 1] = open_at(s ? "wb-redis" : "wb-nginx", 0, x->specs[s]);
    static double tp[3][256];
    for (int i = 0; i < x->nputs; i++)
        for (int k = 0; k < 3; k++)
            if (pc[k])
                tp[k][i] = timed_put(pc[k], x->res, i, 1000u + (unsigned)k);
    t_put = perf_median(tp[0], x->nputs);
    for (int s = 0; s < 2; s++)
        if (pc[s + 1]) {
            t_wb[s] = perf_median(tp[s + 1], x->nputs);
            vyre_remote_stats st;
            vyre_cache_remote_get(pc[s + 1], 0, 0, NULL, &st, NULL);
            if (st.puts != (uint64_t)x->nputs)
                die("a write-back failed", NULL);
        }
    for (int k = 0; k < 3; k++)
        vyre_cache_close(pc[k]);
    printf("\nwrite-back on a put of this cubin (durable local put = 1.00):\n");
    printf("%-34s %12s %14s %22s\n", "path", "median_us", "vs_local_put", "extra_vs_cold_compile");
    printf("%-34s %12.1f %14.2f %22s\n", "local put, no remote", t_put * 1e6, 1.0, "-");
    for (int s = 0; s < 2; s++)
        if (x->ports[s]) {
            char label[64];
            snprintf(label, sizeof label, "local put + write-back, %s", s ? "redis" : "nginx");
            printf("%-34s %12.1f %14.2f %22.4f\n", label, t_wb[s] * 1e6, t_wb[s] / t_put,
                   (t_wb[s] - t_put) / x->t_cold);
        }
}

int main(int argc, char **argv)
{
    int quick = 0;
    const char *ptx_file = NULL, *entry = "sgemm_tiled";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--ptx") == 0 && i + 1 < argc)
            ptx_file = argv[++i];
        else if (strcmp(argv[i], "--entry") == 0 && i + 1 < argc)
            entry = argv[++i];
        else {
            fprintf(stderr, "usage: perf_remote [--quick] [--ptx FILE --entry NAME]\n");
            return 2;
        }
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/vyre-perf-remote-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_tmp))
        die("mkdtemp", NULL);

    /* The kernel as PTX. */
    vyre_error e;
    char *ptx = NULL;
    size_t ptx_len = 0;
    vyre_nvrtc_output out;
    memset(&out, 0, sizeof out);
    if (ptx_file) {
        ptx = read_file(ptx_file, &ptx_len);
    } else {
        /* The compile suite's SGEMM, the first of libcore's bench kernels. */
        size_t nkernels = 0;
        const vyre_bench_kernel *sgemm = vyre_bench_kernels(&nkernels);
        if (vyre_nvrtc_compile(sgemm->src, strlen(sgemm->src), "sgemm.cu", ARCH, NULL, 0, 0, &out,
                               &e)) {
            printf("perf_remote: skipped: NVRTC cannot compile here: %s\n", e.message);
            cleanup();
            return 0;
        }
        ptx = out.data;
        ptx_len = out.size;
    }
    vyre_compile_request req = {VYRE_SOURCE_PTX, ptx, ptx_len, ARCH, entry, NULL, 0};
    int rounds = quick ? 3 : 21, nputs = quick ? 10 : 60;

    /* Cold compiles: an empty cache, no remote. */
    double cold[64];
    for (int r = 0; r < rounds; r++) {
        vyre_cache *c = open_at("cold", r, NULL);
        cold[r] = timed_get(c, &req, 0);
        vyre_cache_close(c);
    }
    double t_cold = perf_median(cold, rounds);
    vyre_compile_result res;
    if (vyre_compile_cubin(&req, NULL, &res, &e))
        die("compile", &e);

    /* Local hits on the first cold cache. */
    double local[256];
    vyre_cache *warm = open_at("cold", 0, NULL);
    for (int i = 0; i < nputs; i++)
        local[i] = timed_get(warm, &req, 1);
    vyre_cache_close(warm);
    double t_local = perf_median(local, nputs);

    printf("kernel: %s, PTX %zu bytes, cubin %zu bytes (%s, %s)\n",
           ptx_file ? ptx_file : "tiled SGEMM (NVRTC here)", ptx_len, res.size, res.arch,
           res.toolchain);
    printf("%-34s %12s %14s %14s\n", "path", "median_us", "vs_local_hit", "vs_cold_compile");
    printf("%-34s %12.1f %14.2f %14.4f\n", "cold compile (nvJitLink + put)", t_cold * 1e6,
           t_cold / t_local, 1.0);
    printf("%-34s %12.1f %14.2f %14.4f\n", "local hit", t_local * 1e6, 1.0, t_local / t_cold);

    remote_ctx x = {.req = &req,
                    .res = &res,
                    .rounds = rounds,
                    .nputs = nputs,
                    .t_local = t_local,
                    .t_cold = t_cold};
    x.ports[0] = start_nginx();
    x.ports[1] = start_redis();
    snprintf(x.specs[0], sizeof x.specs[0], "http://127.0.0.1:%d/fleet", x.ports[0]);
    snprintf(x.specs[1], sizeof x.specs[1], "redis://127.0.0.1:%d", x.ports[1]);
    remote_hit_rows(&x);
    write_back_rows(&x);
    vyre_compile_result_release(&res);
    if (ptx_file)
        free(ptx);
    else
        vyre_nvrtc_output_release(&out);
    cleanup();
    return 0;
}
