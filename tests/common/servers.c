/*
 * servers.c - see servers.h.
 */
#include "servers.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define VYRE_TS_ARRAY_MAX(a) (sizeof(a) / sizeof((a)[0]))

#define TS_MAX 16
static pid_t g_pids[TS_MAX];
static pid_t g_owner;

static void kill_all(void)
{
    if (getpid() != g_owner)
        return;
    for (int i = 0; i < TS_MAX; i++)
        if (g_pids[i] > 0) {
            kill(g_pids[i], SIGKILL);
            waitpid(g_pids[i], NULL, 0);
            g_pids[i] = 0;
        }
}

static void remember(pid_t pid)
{
    if (g_owner != getpid()) {
        memset(g_pids, 0, sizeof g_pids);
        g_owner = getpid();
        atexit(kill_all);
    }
    for (int i = 0; i < TS_MAX; i++)
        if (g_pids[i] == 0) {
            g_pids[i] = pid;
            return;
        }
    cr_assert_fail("more than %d test servers", TS_MAX);
}

static void forget(pid_t pid)
{
    for (int i = 0; i < TS_MAX; i++)
        if (g_pids[i] == pid)
            g_pids[i] = 0;
}

int ts_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "bind: %s", strerror(errno));
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

int ts_wait_port(int port, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return 1;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* The program's path, or NULL: $PATH, then the sbin directories. */
static const char *find_program(const char *name, char *buf, size_t size)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin:/usr/local/sbin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, size, "%s/%s", d, name);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

static const char *need_program(const char *name, char *buf, size_t size)
{
    const char *p = find_program(name, buf, size);
    if (p)
        return p;
    const char *ci = getenv("CI");
    if (ci && strcmp(ci, "true") == 0)
        cr_assert_fail("%s is not installed, and CI must run the remote-store tests with it "
                       "(.ci/run installs nginx, redis-server and openssl)",
                       name);
    cr_skip_test("%s is not installed: install nginx, redis-server and openssl to run the "
                 "remote-store tests (CI=true makes this a failure)",
                 name);
    return NULL;
}

static pid_t spawn(const char *const argv[], const char *log)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        FILE *f = freopen(log, "w", stdout);
        (void)f;
        dup2(STDOUT_FILENO, STDERR_FILENO);
        char *v[32];
        size_t n = 0;
        for (; argv[n] && n < 31; n++)
            v[n] = strdup(argv[n]);
        v[n] = NULL;
        execv(v[0], v);
        _exit(127);
    }
    remember(pid);
    return pid;
}

static void started_or_fail(ts_server *s, const char *what, const char *log)
{
    if (ts_wait_port(s->port, 10000))
        return;
    char *out = tu_read_file(log, NULL);
    cr_assert_fail("%s did not start on port %d: %s", what, s->port, out ? out : "(no log)");
}

/* nginx with GET and WebDAV PUT; over TLS with cert and key unless NULL. */
static void nginx_start(ts_server *s, const char *cert, const char *key)
{
    char bin[1024];
    const char *nginx = need_program("nginx", bin, sizeof bin);
    memset(s, 0, sizeof *s);
    tu_mkdtemp(s->dir, sizeof s->dir);
    snprintf(s->root, sizeof s->root, "%s/www", s->dir);
    cr_assert_eq(mkdir(s->root, 0700), 0);
    char body_tmp[1200], conf[1200], log[1200];
    snprintf(body_tmp, sizeof body_tmp, "%s/body", s->dir);
    snprintf(conf, sizeof conf, "%s/nginx.conf", s->dir);
    snprintf(log, sizeof log, "%s/nginx.out", s->dir);
    s->port = ts_free_port();
    char tls[3000] = "";
    if (cert) {
        int t = snprintf(tls, sizeof tls,
                         "    ssl_certificate %s;\n"
                         "    ssl_certificate_key %s;\n",
                         cert, key);
        cr_assert(t > 0 && (size_t)t < sizeof tls, "certificate paths too long");
    }
    char text[12288];
    int n = snprintf(text, sizeof text,
                     "%s"
                     "daemon off;\n"
                     "master_process off;\n"
                     "pid %s/nginx.pid;\n"
                     "error_log %s/error.log warn;\n"
                     "events { worker_connections 256; }\n"
                     "http {\n"
                     "  access_log off;\n"
                     "  client_body_temp_path %s;\n"
                     "  proxy_temp_path %s/proxy;\n"
                     "  fastcgi_temp_path %s/fastcgi;\n"
                     "  uwsgi_temp_path %s/uwsgi;\n"
                     "  scgi_temp_path %s/scgi;\n"
                     "  client_max_body_size 64m;\n"
                     "  server {\n"
                     "    listen 127.0.0.1:%d%s;\n"
                     "%s"
                     "    location / {\n"
                     "      root %s;\n"
                     "      dav_methods PUT;\n"
                     "      create_full_put_path on;\n"
                     "      dav_access user:rw;\n"
                     "    }\n"
                     "  }\n"
                     "}\n",
                     geteuid() == 0 ? "user root;\n" : "", s->dir, s->dir, body_tmp, s->dir, s->dir,
                     s->dir, s->dir, s->port, cert ? " ssl" : "", tls, s->root);
    cr_assert(n > 0 && (size_t)n < sizeof text);
    tu_write_file(conf, text, (size_t)n);
    const char *const argv[] = {nginx, "-e", log, "-c", conf, "-p", s->dir, NULL};
    s->pid = spawn(argv, log);
    started_or_fail(s, cert ? "nginx (TLS)" : "nginx", log);
}

void ts_nginx_start(ts_server *s)
{
    nginx_start(s, NULL, NULL);
}

void ts_nginx_tls_start(ts_server *s, const char *cert, const char *key)
{
    cr_assert(cert && key, "ts_nginx_tls_start needs a certificate and its key");
    nginx_start(s, cert, key);
}

/* ---- throwaway certificates ------------------------------------------------ */

/* Runs openssl with args (argv[0] is filled in), asserting success. */
static void openssl_run(const char *openssl, const char **args)
{
    char *argv[40];
    size_t n = 0;
    argv[n++] = strdup(openssl);
    for (size_t i = 0; args[i]; i++) {
        cr_assert_lt(n, VYRE_TS_ARRAY_MAX(argv) - 1);
        argv[n++] = strdup(args[i]);
    }
    argv[n] = NULL;
    tu_proc p;
    /* No user or system configuration changes what is made. */
    const char *const env[] = {"OPENSSL_CONF=/dev/null", NULL};
    tu_run(&p, argv, env);
    cr_assert_eq(p.exit_code, 0, "openssl %s failed (%d): %s%s", args[0], p.exit_code, p.out,
                 p.err);
    tu_proc_free(&p);
    for (size_t i = 0; i < n; i++)
        free(argv[i]);
}

static void path_in(char *out, size_t size, const char *dir, const char *name, const char *ext)
{
    int n = snprintf(out, size, "%s/%s%s", dir, name, ext);
    cr_assert(n > 0 && (size_t)n < size, "path too long: %s/%s%s", dir, name, ext);
}

void ts_tls_ca(const char *dir, const char *name)
{
    char bin[1024];
    const char *openssl = need_program("openssl", bin, sizeof bin);
    char cnf[1200], key[1200], pem[1200];
    path_in(cnf, sizeof cnf, dir, name, ".cnf");
    path_in(key, sizeof key, dir, name, ".key");
    path_in(pem, sizeof pem, dir, name, ".pem");
    char text[512];
    int n = snprintf(text, sizeof text,
                     "[req]\n"
                     "distinguished_name = dn\n"
                     "prompt = no\n"
                     "x509_extensions = v3_ca\n"
                     "[dn]\n"
                     "CN = vyre test CA %s\n"
                     "[v3_ca]\n"
                     "basicConstraints = critical,CA:TRUE\n"
                     "keyUsage = critical,keyCertSign,cRLSign\n"
                     "subjectKeyIdentifier = hash\n",
                     name);
    cr_assert(n > 0 && (size_t)n < sizeof text);
    tu_write_file(cnf, text, (size_t)n);
    const char *args[] = {"req",     "-x509",   "-config",  cnf,
                          "-newkey", "ec",      "-pkeyopt", "ec_paramgen_curve:prime256v1",
                          "-nodes",  "-keyout", key,        "-out",
                          pem,       "-days",   "2",        "-sha256",
                          NULL};
    openssl_run(openssl, args);
}

void ts_tls_cert(const char *dir, const char *ca, const char *name, const char *san)
{
    char bin[1024];
    const char *openssl = need_program("openssl", bin, sizeof bin);
    char cnf[1200], key[1200], csr[1200], pem[1200], ca_key[1200], ca_pem[1200];
    path_in(cnf, sizeof cnf, dir, name, ".cnf");
    path_in(key, sizeof key, dir, name, ".key");
    path_in(csr, sizeof csr, dir, name, ".csr");
    path_in(pem, sizeof pem, dir, name, ".pem");
    path_in(ca_key, sizeof ca_key, dir, ca, ".key");
    path_in(ca_pem, sizeof ca_pem, dir, ca, ".pem");
    char text[1024];
    int n = snprintf(text, sizeof text,
                     "[req]\n"
                     "distinguished_name = dn\n"
                     "prompt = no\n"
                     "[dn]\n"
                     "CN = vyre test server %s\n"
                     "[v3_srv]\n"
                     "basicConstraints = critical,CA:FALSE\n"
                     "keyUsage = critical,digitalSignature\n"
                     "extendedKeyUsage = serverAuth\n"
                     "subjectAltName = %s\n"
                     "subjectKeyIdentifier = hash\n"
                     "authorityKeyIdentifier = keyid\n",
                     name, san);
    cr_assert(n > 0 && (size_t)n < sizeof text);
    tu_write_file(cnf, text, (size_t)n);
    const char *req[] = {"req",     "-new",    "-config",  cnf,
                         "-newkey", "ec",      "-pkeyopt", "ec_paramgen_curve:prime256v1",
                         "-nodes",  "-keyout", key,        "-out",
                         csr,       NULL};
    openssl_run(openssl, req);
    const char *sign[] = {"x509", "-req",        "-in",    csr,     "-CA", ca_pem,    "-CAkey",
                          ca_key, "-set_serial", "2",      "-days", "2",   "-sha256", "-extfile",
                          cnf,    "-extensions", "v3_srv", "-out",  pem,   NULL};
    openssl_run(openssl, sign);
}

void ts_redis_start(ts_server *s)
{
    char bin[1024];
    const char *redis = need_program("redis-server", bin, sizeof bin);
    memset(s, 0, sizeof *s);
    tu_mkdtemp(s->dir, sizeof s->dir);
    s->port = ts_free_port();
    char port[16], log[1200];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/redis.out", s->dir);
    const char *const argv[] = {redis, "--port",       port, "--bind", "127.0.0.1", "--save",
                                "",    "--appendonly", "no", "--dir",  s->dir,      NULL};
    s->pid = spawn(argv, log);
    started_or_fail(s, "redis-server", log);
}

void ts_redis_tls_start(ts_server *s, const char *cert, const char *key, const char *ca,
                        const char *password)
{
    char bin[1024];
    const char *redis = need_program("redis-server", bin, sizeof bin);
    memset(s, 0, sizeof *s);
    tu_mkdtemp(s->dir, sizeof s->dir);
    s->port = ts_free_port();
    char port[16], log[1200];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/redis.out", s->dir);
    const char *argv[32] = {redis,       "--port",
                            "0",         "--tls-port",
                            port,        "--tls-cert-file",
                            cert,        "--tls-key-file",
                            key,         "--tls-ca-cert-file",
                            ca,          "--tls-auth-clients",
                            "no",        "--bind",
                            "127.0.0.1", "--save",
                            "",          "--appendonly",
                            "no",        "--dir",
                            s->dir,      NULL};
    if (password) {
        size_t n = 0;
        while (argv[n])
            n++;
        argv[n++] = "--requirepass";
        argv[n++] = password;
        argv[n] = NULL;
    }
    s->pid = spawn(argv, log);
    started_or_fail(s, "redis-server (TLS)", log);
}

/* ---- PostgreSQL ------------------------------------------------------------ */

/* The newest Debian server's bin directory, or skip (fail under CI). */
static void pg_bindir(char *buf, size_t size)
{
    glob_t g;
    int found = glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (found) {
        /* Versions sort as numbers: 9.6 < 15 < 16. */
        const char *best = g.gl_pathv[0];
        for (size_t i = 1; i < g.gl_pathc; i++)
            if (atoi(g.gl_pathv[i] + strlen("/usr/lib/postgresql/")) >
                atoi(best + strlen("/usr/lib/postgresql/")))
                best = g.gl_pathv[i];
        snprintf(buf, size, "%.*s", (int)(strrchr(best, '/') - best), best);
    }
    globfree(&g);
    if (found)
        return;
    const char *ci = getenv("CI");
    if (ci && strcmp(ci, "true") == 0)
        cr_assert_fail("PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin), and CI "
                       "must run the results-store tests with it (.ci/run installs postgresql)");
    cr_skip_test("PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin): install "
                 "postgresql to run the results-store tests (CI=true makes this a failure)");
}

/* How the cluster's owner is made under root (postgres refuses root):
 * nobody, or, where nobody cannot reach the server's files (a machine
 * whose / is 0700), uid 1000 of a user namespace that maps it to root's
 * files, so postgres runs unprivileged and still reads them. */
static int g_pg_userns = -1;

/* Whether nobody can run bin at all: its libraries may be out of its
 * reach even where the binary is not (seen: / or libm.so.6 mode 0700). */
static int nobody_can_run(const char *bin)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        char *argv[] = {strdup(bin), strdup("--version"), NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int write_proc(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* In the child: become the cluster's owner (see g_pg_userns). */
static void pg_drop_root(void)
{
    if (geteuid() != 0)
        return;
    if (!g_pg_userns) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            _exit(126);
        return;
    }
    if (unshare(CLONE_NEWUSER) != 0 || write_proc("/proc/self/setgroups", "deny") != 0 ||
        write_proc("/proc/self/uid_map", "1000 0 1") != 0 ||
        write_proc("/proc/self/gid_map", "1000 0 1") != 0)
        _exit(125);
}

/* Runs argv as the cluster's owner, waiting for it when wait is set;
 * returns its pid or exit status. */
static int pg_spawn(const char *const argv[], const char *log, int wait)
{
    char *v[40];
    size_t n = 0;
    for (; argv[n] && n < VYRE_TS_ARRAY_MAX(v) - 1; n++)
        v[n] = strdup(argv[n]);
    v[n] = NULL;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        pg_drop_root();
        /* A change of user clears the parent-death signal: set it again,
         * or a test killed by its timeout leaves its server running (seen:
         * 19 orphaned postgres, their folders kept). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        FILE *f = freopen(log, "a", stdout);
        (void)f;
        dup2(STDOUT_FILENO, STDERR_FILENO);
        execv(v[0], v);
        _exit(127);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    if (!wait) {
        remember(pid);
        return pid;
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Sets g_pg_userns under root, once per process. */
static void pg_choose_owner(const char *bindir)
{
    if (geteuid() != 0 || g_pg_userns >= 0)
        return;
    char initdb[1200];
    snprintf(initdb, sizeof initdb, "%s/initdb", bindir);
    g_pg_userns = !nobody_can_run(initdb);
}

static void pg_initdb(ts_server *s, const char *bindir, const char *log)
{
    char initdb[1200], data[1200], pw[1200];
    snprintf(initdb, sizeof initdb, "%s/initdb", bindir);
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(pw, sizeof pw, "%s/pw", s->dir);
    tu_write_file(pw, TS_PG_PASSWORD "\n", strlen(TS_PG_PASSWORD) + 1);
    pg_choose_owner(bindir);
    if (geteuid() == 0 && !g_pg_userns) {
        cr_assert_eq(chown(s->dir, 65534, 65534), 0, "chown: %s", strerror(errno));
        cr_assert_eq(chown(pw, 65534, 65534), 0);
    }
    const char *const argv[] = {initdb, "-D",       data,        "-U",
                                "vyre", "--pwfile", pw,          "--auth=scram-sha-256",
                                "-E",   "UTF8",     "--no-sync", "--no-instructions",
                                NULL};
    int rc = pg_spawn(argv, log, 1);
    if (rc != 0) {
        char *out = tu_read_file(log, NULL);
        cr_assert_fail("initdb failed (%d): %s", rc, out ? out : "(no log)");
    }
}

/* Waits until the server accepts a session (it refuses them while it
 * starts up, after the port is open). */
static void pg_wait_ready(const ts_server *s, const char *log)
{
    for (int i = 0; i < 500; i++) {
        if (PQping(s->root) == PQPING_OK)
            return;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    char *out = tu_read_file(log, NULL);
    cr_assert_fail("postgres did not start on port %d: %s", s->port, out ? out : "(no log)");
}

/* Starts postgres on s's cluster and port. */
static void pg_run(ts_server *s, const char *bindir)
{
    char log[1200], postgres[1200], data[1200], port[16];
    snprintf(log, sizeof log, "%s/postgres.out", s->dir);
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(postgres, sizeof postgres, "%s/postgres", bindir);
    snprintf(data, sizeof data, "%s/data", s->dir);
    const char *const argv[] = {postgres,
                                "-D",
                                data,
                                "-p",
                                port,
                                "-k",
                                s->dir,
                                "-c",
                                "listen_addresses=127.0.0.1",
                                "-c",
                                "fsync=off",
                                "-c",
                                "full_page_writes=off",
                                "-c",
                                "max_connections=40",
                                "-c",
                                "shared_buffers=16MB",
                                NULL};
    s->pid = pg_spawn(argv, log, 0);
    snprintf(s->root, sizeof s->root, "postgresql://vyre:%s@127.0.0.1:%d/postgres", TS_PG_PASSWORD,
             s->port);
    started_or_fail(s, "postgres", log);
    pg_wait_ready(s, log);
}

/*
 * One initdb per test binary's run, not per test: initdb costs seconds of
 * a busy machine (and most of a PostgreSQL test's setup), a copy of the
 * cluster it made a fraction of that. The runner makes an empty folder
 * before the first test (TS_PG_TEMPLATE_ENV names it to the test
 * processes) and removes it after the last; the first test that starts a
 * server runs initdb there under a lock, and every test copies that
 * cluster (cp -a: owner and modes kept) into its own folder. Each test
 * still has its own server and cluster, as isolated as before; without
 * the folder (a test process not started by the runner) initdb runs per
 * test as it did.
 */
#define TS_PG_TEMPLATE_ENV "VYRE_TS_PG_TEMPLATE"
static char g_pg_template[1024];

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(g_pg_template, sizeof g_pg_template, "%s/vyre-test-pg-XXXXXX",
                     tmp && *tmp ? tmp : "/tmp");
    if (n <= 0 || (size_t)n >= sizeof g_pg_template || !mkdtemp(g_pg_template)) {
        g_pg_template[0] = '\0';
        return;
    }
    setenv(TS_PG_TEMPLATE_ENV, g_pg_template, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    if (g_pg_template[0])
        tu_rm_rf(g_pg_template);
    g_pg_template[0] = '\0';
}

/* Runs argv (fork/exec, no shell) and returns its exit status. */
static int run_quiet(char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* s's cluster (s->dir/data) as a copy of the run's template, made first
 * when no test has made it yet; 0 when there is no template folder. */
static int pg_from_template(ts_server *s, const char *bindir, const char *log)
{
    const char *dir = getenv(TS_PG_TEMPLATE_ENV);
    struct stat st;
    if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    char lock[1200], ready[1200], data[1200];
    snprintf(lock, sizeof lock, "%s/lock", dir);
    snprintf(ready, sizeof ready, "%s/ready", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    cr_assert(fd >= 0, "open '%s': %s", lock, strerror(errno));
    cr_assert_eq(flock(fd, LOCK_EX), 0, "flock '%s': %s", lock, strerror(errno));
    if (access(ready, F_OK) != 0) {
        ts_server t;
        memset(&t, 0, sizeof t);
        snprintf(t.dir, sizeof t.dir, "%s", dir);
        tu_rm_rf(data); /* a test that died half-way through initdb */
        pg_initdb(&t, bindir, log);
        tu_write_file(ready, "", 0);
    }
    close(fd); /* the template is only read from here on */
    pg_choose_owner(bindir);
    if (geteuid() == 0 && !g_pg_userns)
        cr_assert_eq(chown(s->dir, 65534, 65534), 0, "chown: %s", strerror(errno));
    char to[1200];
    snprintf(to, sizeof to, "%s/data", s->dir);
    char cp[] = "/bin/cp", opt[] = "-a";
    char *argv[] = {cp, opt, data, to, NULL};
    int rc = run_quiet(argv);
    cr_assert_eq(rc, 0, "cp -a '%s' '%s' failed (%d)", data, to, rc);
    return 1;
}

void ts_postgres_start(ts_server *s)
{
    char bindir[1024], log[1200];
    pg_bindir(bindir, sizeof bindir);
    memset(s, 0, sizeof *s);
    tu_mkdtemp(s->dir, sizeof s->dir);
    snprintf(log, sizeof log, "%s/postgres.out", s->dir);
    if (!pg_from_template(s, bindir, log))
        pg_initdb(s, bindir, log);
    s->port = ts_free_port();
    pg_run(s, bindir);
}

void ts_postgres_restart(ts_server *s)
{
    char bindir[1024];
    pg_bindir(bindir, sizeof bindir);
    cr_assert_eq(s->pid, 0, "restart a stopped server");
    pg_run(s, bindir);
}

void ts_postgres_exec(const ts_server *s, const char *db, const char *sql)
{
    char url[1200];
    snprintf(url, sizeof url, "postgresql://vyre:%s@127.0.0.1:%d/%s", TS_PG_PASSWORD, s->port,
             db ? db : "postgres");
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType t = PQresultStatus(r);
    cr_assert(t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK, "'%s': %s", sql,
              PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

char *ts_postgres_dump(const ts_server *s, const char *db, const char *out_path)
{
    char bindir[1024], pg_dump[1100], port[16];
    pg_bindir(bindir, sizeof bindir);
    snprintf(pg_dump, sizeof pg_dump, "%s/pg_dump", bindir);
    snprintf(port, sizeof port, "%d", s->port);
    const char *argv[] = {
        pg_dump,  "-h",         "127.0.0.1",          "-p", port, "-U", "vyre", "-f",
        out_path, "--no-owner", db ? db : "postgres", NULL};
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setenv("PGPASSWORD", TS_PG_PASSWORD, 1);
        char *v[16];
        size_t n = 0;
        for (; argv[n] && n < 15; n++)
            v[n] = strdup(argv[n]);
        v[n] = NULL;
        execv(v[0], v);
        _exit(127);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pg_dump failed (%d)", st);
    char *text = tu_read_file(out_path, NULL);
    cr_assert_not_null(text, "pg_dump wrote nothing");
    return text;
}

void ts_postgres_stop(ts_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGINT); /* fast shutdown: sessions are cut */
    for (int i = 0; i < 500; i++) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            forget(s->pid);
            s->pid = 0;
            return;
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    ts_server_stop(s);
}

int ts_silent_listen(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(fd, 16), 0, "listen: %s", strerror(errno));
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

void ts_server_stop(ts_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 250; i++) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            forget(s->pid);
            s->pid = 0;
            return;
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    forget(s->pid);
    s->pid = 0;
}

/* ---- the fault server ---------------------------------------------------- */

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

/* Reads until the end of the request's head (and the body of a PUT, when
 * Content-Length says so). 0 when the peer went away. */
static int read_request(int fd, volatile int *stop)
{
    char buf[8192];
    size_t len = 0;
    while (!*stop) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0)
            return 0;
        len += (size_t)r;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end) {
            char *cl = strcasestr(buf, "content-length:");
            size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;
            size_t have = len - (size_t)(end + 4 - buf);
            while (have < want && !*stop) {
                char sink[8192];
                r = recv(fd, sink, sizeof sink, 0);
                if (r <= 0)
                    return 0;
                have += (size_t)r;
            }
            return 1;
        }
        if (len == sizeof buf - 1)
            return 0;
    }
    return 0;
}

static void *fault_main(void *p)
{
    ts_fault *f = p;
    while (!f->stop) {
        struct pollfd pl = {f->listen_fd, POLLIN, 0};
        if (poll(&pl, 1, 50) <= 0)
            continue;
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        while (!f->stop && read_request(fd, &f->stop)) {
            f->requests++;
            char head[256];
            if (f->mode == TS_FAULT_SHORT_BODY) {
                const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n";
                write_all(fd, h, strlen(h));
                char body[100];
                memset(body, 'x', sizeof body);
                write_all(fd, body, sizeof body);
                break;
            } else if (f->mode == TS_FAULT_STALL) {
                while (!f->stop) {
                    struct pollfd q = {fd, POLLIN, 0};
                    if (poll(&q, 1, 50) > 0) {
                        char sink[256];
                        if (recv(fd, sink, sizeof sink, 0) <= 0)
                            break;
                    }
                }
                break;
            } else if (f->mode == TS_FAULT_HUGE) {
                const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n";
                write_all(fd, h, strlen(h));
                char body[65536];
                memset(body, 'y', sizeof body);
                for (int i = 0; i < 16384 && !f->stop; i++) {
                    ssize_t w = send(fd, body, sizeof body, MSG_NOSIGNAL);
                    if (w <= 0)
                        break;
                }
                break;
            } else if (f->mode == TS_FAULT_STATUS_500) {
                const char *h = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
                write_all(fd, h, strlen(h));
            } else {
                int n = snprintf(head, sizeof head,
                                 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", f->body_len);
                write_all(fd, head, (size_t)n);
                write_all(fd, f->body, f->body_len);
            }
        }
        close(fd);
    }
    return NULL;
}

void ts_fault_start(ts_fault *f, ts_fault_mode mode)
{
    f->mode = mode;
    f->stop = 0;
    f->requests = 0;
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(f->listen_fd >= 0);
    int one = 1;
    setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(f->listen_fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    cr_assert_eq(listen(f->listen_fd, 16), 0);
    cr_assert_eq(pthread_create(&f->thread, NULL, fault_main, f), 0);
}

void ts_fault_stop(ts_fault *f)
{
    f->stop = 1;
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}
