/*
 * test_results_pg.c - the results store on a real PostgreSQL server
 * (libcore/src/bench/store_pg.c, store_url.c, store_dialect.c): Debian's
 * server started by initdb in a temp folder on a loopback port this test
 * picks (tests/common/servers.c), stopped at the end. The same run
 * lifecycle as the local file, many writers at once, a server gone mid-run,
 * a session the server ended sought again,
 * and one clear error each for a wrong password, an unreachable host and
 * a read-only role; passwords never shown; the dialect rules; the
 * results_db key refused from a file that is not the user's. Issue 33: no
 * piece of a password in any bad URL form's message, in a stored command
 * line (written, already stored, pushed or pulled); a stopped backend, a
 * silent or notice-flooding fake server (tests/common/fakepg.c) and the
 * interrupt flag each end a wait within its deadline.
 */
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/stats_internal.h"
#include "bench/store_dialect.h"
#include "bench/store_url.h"
#include "fakepg.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/config.h"

static char g_dir[512];
static ts_server g_pg;

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    memset(&g_pg, 0, sizeof g_pg);
}

static void teardown(void)
{
    ts_postgres_stop(&g_pg);
    if (g_pg.dir[0])
        tu_rm_rf(g_pg.dir);
    tu_rm_rf(g_dir);
}

TestSuite(results_pg, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(results_dialect, .timeout = 30);

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The superuser's URL of database db. */
static void url_of(char *buf, size_t size, const char *user_pw, const char *db)
{
    snprintf(buf, size, "postgresql://%s@127.0.0.1:%d/%s", user_pw, g_pg.port, db);
}

static vyre_results *open_ok(const char *url)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_results_open(url, &db, &e);
    cr_assert_eq(rc, 0, "open: %s (%s)", e.message, e.hint);
    return db;
}

static int64_t begin_run(vyre_results *db, const char *host, const char *gpu)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.command_line, sizeof r.command_line, "vyre-bench run --suite launch");
    snprintf(r.gpu_name, sizeof r.gpu_name, "%s", gpu);
    if (host)
        snprintf(r.host, sizeof r.host, "%s", host);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), 0, "%s", e.message);
    cr_assert_gt(r.id, 0);
    return r.id;
}

/* Adds a finished point with n samples around base; returns vyre__bench_point_finish's code. */
static int add_point(vyre_results *db, int64_t run, int seq, double base, size_t n, vyre_error *e)
{
    vyre_bench_point p;
    memset(&p, 0, sizeof p);
    p.run_id = run;
    p.seq = seq;
    snprintf(p.suite, sizeof p.suite, "launch");
    snprintf(p.benchmark, sizeof p.benchmark, "launch.stream");
    snprintf(p.axes, sizeof p.axes, "N=%d", 1024 << seq);
    p.device = 0;
    p.gpu_timer = 1;
    p.items = 1;
    int rc = vyre__bench_point_begin(db, &p, e);
    if (rc)
        return rc;
    double x[64];
    vyre_bench_sample s[64];
    memset(s, 0, sizeof s);
    for (size_t i = 0; i < n && i < 64; i++) {
        x[i] = base + (double)(i % 7);
        s[i].value = x[i];
        s[i].wall = x[i] + 0.25;
        s[i].sm_clock_mhz = 1980;
        s[i].round = (unsigned)(i % 3);
    }
    cr_assert_eq(vyre__stats_compute(x, n, &p.stats, e), 0);
    snprintf(p.stop, sizeof p.stop, "noise-ok");
    p.stop_reason = VYRE_STOP_NOISE_OK;
    p.rounds = 3;
    p.round_noise = 0.01;
    return vyre__bench_point_finish(db, &p, s, n, e);
}

/* ---- the dialect rules (no server) -------------------------------------------------- */

Test(results_dialect, parameters_become_dollars_outside_literals_and_comments)
{
    char *s = vyre__pg_sql("SELECT '?1', \"?2\" FROM t WHERE a = ?1 AND b = ?12 -- ?3 'x\n"
                           "AND c = ?3",
                           0);
    cr_assert_str_eq(s, "SELECT '?1', \"?2\" FROM t WHERE a = $1 AND b = $12 -- ?3 'x\n"
                        "AND c = $3");
    free(s);
    s = vyre__pg_sql("CREATE TABLE x (id INTEGER PRIMARY KEY)", 0);
    cr_assert_str_eq(s, "CREATE TABLE x (id INTEGER PRIMARY KEY)", "no DDL rules without the flag");
    free(s);
}

Test(results_dialect, schema_types_follow_the_documented_rules)
{
    char *s = vyre__pg_sql("CREATE TABLE t (\n"
                           "    id    INTEGER PRIMARY KEY, -- it's the rowid\n"
                           "    n     INTEGER NOT NULL CHECK (n IN (1, 2)),\n"
                           "    v     REAL,\n"
                           "    REALM TEXT,\n"
                           "    value\n"
                           ") WITHOUT ROWID;\n"
                           "INSERT INTO t (REALM) VALUES ('INTEGER REAL');",
                           VYRE__PG_SCHEMA);
    cr_assert_str_eq(s,
                     "CREATE TABLE t (\n"
                     "    id    BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, -- it's the "
                     "rowid\n"
                     "    n     BIGINT NOT NULL CHECK (n IN (1, 2)),\n"
                     "    v     DOUBLE PRECISION,\n"
                     "    REALM TEXT,\n"
                     "    value TEXT\n"
                     ") ;\n"
                     "INSERT INTO t (REALM) VALUES ('INTEGER REAL');");
    free(s);
}

Test(results_dialect, locations_are_shown_with_passwords_masked)
{
    char b[256];
    vyre_results_mask("postgresql://bob:s3cr@t@db.lan:5432/vyre?sslmode=verify-full&password=xyz",
                      b, sizeof b);
    cr_assert_str_eq(b, "postgresql://bob:***@db.lan:5432/vyre?sslmode=verify-full&password=***");
    vyre_results_mask("postgres://bob@db.lan/vyre", b, sizeof b);
    cr_assert_str_eq(b, "postgres://bob@db.lan/vyre");
    vyre_results_mask("/home/bob/r:x@y.sqlite3", b, sizeof b);
    cr_assert_str_eq(b, "/home/bob/r:x@y.sqlite3", "a path is not a URL");
    cr_assert(vyre_results_is_url("postgresql://h/d"));
    cr_assert(!vyre_results_is_url("results.sqlite3"));
}

/* vyre's own URL parameters, timeout=S and reconnect=S: read into the
 * deadlines and taken out of what libpq sees; a bad value is one error
 * naming the URL with the range in its hint. */
Test(results_dialect, timeout_and_reconnect_are_read_and_taken_out_of_the_url)
{
    vyre__pg_url u;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__pg_url_parse("postgresql://h/db", &u, &e), 0, "%s", e.message);
    cr_assert(u.statement_s == VYRE__PG_STATEMENT_S && u.connect_s == VYRE__PG_CONNECT_S);
    cr_assert(u.reconnect_s == VYRE__PG_RECONNECT_S, "%g", u.reconnect_s);
    cr_assert_eq(
        vyre__pg_url_parse("postgresql://h/db?sslmode=disable&reconnect=0&timeout=2.5", &u, &e), 0,
        "%s", e.message);
    cr_assert(u.reconnect_s == 0 && u.statement_s == 2.5 && u.connect_s == 2.5);
    cr_assert_str_eq(u.url, "postgresql://h/db?sslmode=disable");
    cr_assert_eq(vyre__pg_url_parse("postgresql://h/db?reconnect=120", &u, &e), 0, "%s", e.message);
    cr_assert(u.reconnect_s == 120);
    cr_assert_str_eq(u.url, "postgresql://h/db");
    static const char *const bad[] = {
        "reconnect=-1", "reconnect=x", "reconnect=", "reconnect=1e6", "timeout=0", "timeout=abc"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char url[128];
        snprintf(url, sizeof url, "postgresql://bob:pw@h/db?%s", bad[i]);
        cr_assert_eq(vyre__pg_url_parse(url, &u, &e), VYRE_EINVAL, "%s", bad[i]);
        cr_assert(strstr(e.message, "postgresql://bob:***@h/db"), "%s", e.message);
        cr_assert(strstr(e.hint, "86400"), "%s: %s", bad[i], e.hint);
        vyre__pg_url_release(&u);
    }
}

/* ---- a real server -------------------------------------------------------------------- */

Test(results_pg, a_run_is_written_and_read_back_as_on_a_file)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *db = open_ok(url);
    cr_assert_str_eq(vyre_results_engine(db), "postgresql");
    cr_assert(!strstr(vyre_results_path(db), TS_PG_PASSWORD), "path shows the password: %s",
              vyre_results_path(db));
    int64_t run = begin_run(db, NULL, "NVIDIA H200");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(add_point(db, run, 0, 1000, 40, &e), 0, "%s", e.message);
    cr_assert_eq(add_point(db, run, 1, 2000, 40, &e), 0, "%s", e.message);
    vyre_activity k[3];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 3; i++) {
        k[i].kind = VYRE_ACTIVITY_KERNEL;
        snprintf(k[i].name, sizeof k[i].name, "spin_kernel");
        k[i].start_ns = 100 + (uint64_t)i * 1000;
        k[i].end_ns = k[i].start_ns + 900 + (uint64_t)i;
    }
    vyre_bench_point *pts = NULL;
    size_t np = 0;
    cr_assert_eq(vyre_bench_points_get(db, run, &pts, &np, &e), 0, "%s", e.message);
    cr_assert_eq(np, 2);
    cr_assert_eq(vyre__bench_point_records(db, run, pts[0].id, k, 3, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
    /* A writer's rows: one transaction per flush. */
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, run, &w, &e), 0);
    cr_assert_eq(vyre_results_writer_add(w, k, 3, &e), 0);
    cr_assert_eq(vyre_results_writer_flush(w, &e), 0, "%s", e.message);
    vyre_results_writer_free(w);

    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, &e), 0, "%s", e.message);
    cr_assert_eq(r.status, VYRE_RUN_DONE);
    cr_assert_str_eq(r.gpu_name, "NVIDIA H200");
    cr_assert_str_eq(r.suites, "launch");
    cr_assert_eq(r.npoints, 2);
    int64_t last = 0;
    cr_assert_eq(vyre_bench_run_resolve(db, "last", &last, &e), 0, "%s", e.message);
    cr_assert_eq(last, run);
    vyre_free(pts);
    cr_assert_eq(vyre_bench_points_get(db, run, &pts, &np, &e), 0, "%s", e.message);
    cr_assert_eq(pts[0].rounds, 3);
    cr_assert_float_eq(pts[0].kernel_ns, 901, 1e-9);
    cr_assert_float_eq(pts[1].stats.median, 2003, 1e-9);
    vyre_bench_sample *s = NULL;
    size_t ns = 0;
    cr_assert_eq(vyre_bench_samples_get(db, pts[1].id, &s, &ns, &e), 0, "%s", e.message);
    cr_assert_eq(ns, 40);
    cr_assert_float_eq(s[5].wall, 2005.25, 1e-9);
    cr_assert_eq(s[5].sm_clock_mhz, 1980);
    cr_assert_eq(s[5].round, 2);
    vyre_bench_kernel_row *kr = NULL;
    size_t nk = 0;
    cr_assert_eq(vyre_bench_kernels_get(db, pts[0].id, &kr, &nk, &e), 0, "%s", e.message);
    cr_assert_eq(nk, 1);
    cr_assert_eq(kr[0].count, 3);
    vyre_bench_cmp_row *cmp = NULL;
    size_t nc = 0;
    cr_assert_eq(vyre_bench_compare_runs(db, &run, 1, run, NULL, &cmp, &nc, &e), 0, "%s",
                 e.message);
    cr_assert_eq(nc, 2);
    vyre_free(cmp);
    vyre_free(kr);
    vyre_free(s);
    vyre_free(pts);
    /* A failed run keeps only its row, as on a file. */
    int64_t bad = begin_run(db, NULL, "NVIDIA H200");
    cr_assert_eq(add_point(db, bad, 0, 10, 8, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__bench_run_finish(db, bad, VYRE_RUN_FAILED, "no GPU", &e), 0, "%s",
                 e.message);
    cr_assert_eq(vyre_bench_run_get(db, bad, &r, &e), 0);
    cr_assert_eq(r.status, VYRE_RUN_FAILED);
    cr_assert_eq(r.npoints, 0);
    cr_assert_eq(vyre_bench_runs_delete(db, &bad, 1, &e), 0, "%s", e.message);
    vyre_results_close(db);
    /* Opened again: the schema is there, nothing is redone. */
    db = open_ok(url);
    vyre_bench_run *runs = NULL;
    size_t nr = 0;
    cr_assert_eq(vyre_bench_runs_list(db, 0, &runs, &nr, &e), 0, "%s", e.message);
    cr_assert_eq(nr, 1);
    vyre_free(runs);
    vyre_results_close(db);
}

/* Writes one run of three points as `host` in a child process: 0 on success. */
static int child_writes_a_run(const char *url, const char *host)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_results_open(url, &db, &e) != 0) {
        fprintf(stderr, "child open: %s\n", e.message);
        return 1;
    }
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.command_line, sizeof r.command_line, "test");
    snprintf(r.host, sizeof r.host, "%s", host);
    int rc = vyre__bench_run_begin(db, &r, &e);
    for (int i = 0; !rc && i < 3; i++)
        rc = add_point(db, r.id, i, 100 * (i + 1), 32, &e);
    if (!rc)
        rc = vyre__bench_run_finish(db, r.id, VYRE_RUN_DONE, NULL, &e);
    if (rc)
        fprintf(stderr, "child %s: %s\n", host, e.message);
    vyre_results_close(db);
    return rc ? 1 : 0;
}

Test(results_pg, four_processes_write_runs_at_once_into_a_new_database)
{
    ts_postgres_start(&g_pg);
    ts_postgres_exec(&g_pg, NULL, "CREATE DATABASE fleet");
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "fleet");
    /* All four create the schema at once: one of them does, under the lock. */
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        fflush(NULL);
        pids[i] = fork();
        cr_assert_geq(pids[i], 0);
        if (pids[i] == 0) {
            char host[32];
            snprintf(host, sizeof host, "runner-%d", i);
            _exit(child_writes_a_run(url, host));
        }
    }
    for (int i = 0; i < 4; i++) {
        int st = 0;
        cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", i);
    }
    vyre_results *db = open_ok(url);
    vyre_bench_run *runs = NULL;
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_runs_list(db, 0, &runs, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(runs[i].status, VYRE_RUN_DONE);
        cr_assert_eq(runs[i].npoints, 3, "run of %s", runs[i].host);
        vyre_bench_point *p = NULL;
        size_t np = 0;
        cr_assert_eq(vyre_bench_points_get(db, runs[i].id, &p, &np, &e), 0);
        for (size_t j = 0; j < np; j++) {
            vyre_bench_sample *s = NULL;
            size_t ns = 0;
            cr_assert_eq(vyre_bench_samples_get(db, p[j].id, &s, &ns, &e), 0);
            cr_assert_eq(ns, 32);
            vyre_free(s);
        }
        vyre_free(p);
    }
    vyre_free(runs);
    vyre_results_close(db);
}

/* Opens url expecting the code; returns how long it took (ms), with the
 * error in *e. */
static int64_t open_fails(const char *url, int code, vyre_error *e)
{
    vyre_results *db = NULL;
    vyre_error_clear(e);
    int64_t t0 = mono_ms();
    int rc = vyre_results_open(url, &db, e);
    int64_t took = mono_ms() - t0;
    cr_assert_eq(rc, code, "open '%s': %s: %s", url, vyre_err_name(rc), e->message);
    cr_assert_null(db);
    cr_assert_neq(e->hint[0], '\0', "no hint for '%s'", e->message);
    return took;
}

Test(results_pg, wrong_password_is_one_clear_error_that_never_shows_it)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:Wr0ngSecret", "postgres");
    vyre_error e;
    open_fails(url, VYRE_EPERM, &e);
    cr_assert(strstr(e.message, "password authentication failed"), "%s", e.message);
    cr_assert(strstr(e.message, "vyre:***@127.0.0.1"), "%s", e.message);
    cr_assert(!strstr(e.message, "Wr0ngSecret") && !strstr(e.hint, "Wr0ngSecret"), "%s", e.message);
    cr_assert(strstr(e.hint, "pgpass"), "%s", e.hint);
}

Test(results_pg, unreachable_hosts_fail_within_the_connect_timeout)
{
    /* A port nothing listens on: refused at once. */
    char url[512];
    snprintf(url, sizeof url, "postgresql://vyre@127.0.0.1:%d/postgres", ts_free_port());
    vyre_error e;
    open_fails(url, VYRE_EREMOTE, &e);
    cr_assert(strstr(e.message, "cannot connect to results database"), "%s", e.message);
    /* A server that completes the handshake and never answers: the
     * URL's connect_timeout bounds the wait. */
    int port = 0;
    int fd = ts_silent_listen(&port);
    snprintf(url, sizeof url, "postgresql://vyre@127.0.0.1:%d/postgres?connect_timeout=2", port);
    int64_t took = open_fails(url, VYRE_EREMOTE, &e);
    close(fd);
    cr_assert_lt(took, 10000, "waited %lld ms past a 2 s connect_timeout", (long long)took);
    cr_assert(strstr(e.hint, "connect_timeout"), "%s", e.hint);
}

Test(results_pg, a_read_only_role_reads_and_gets_one_clear_error_on_write)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *db = open_ok(url); /* creates the schema */
    begin_run(db, NULL, "NVIDIA H200");
    vyre_results_close(db);
    ts_postgres_exec(&g_pg, NULL,
                     "CREATE ROLE reader LOGIN PASSWORD 'rpw'; "
                     "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader");
    url_of(url, sizeof url, "reader:rpw", "postgres");
    db = open_ok(url);
    vyre_bench_run *runs = NULL;
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_runs_list(db, 0, &runs, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 1);
    vyre_free(runs);
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    cr_assert_eq(vyre__bench_run_begin(db, &r, &e), VYRE_EPERM, "%s", e.message);
    cr_assert(strstr(e.message, "cannot start a run in results database "
                                "'postgresql://reader:***@127.0.0.1"),
              "%s", e.message);
    cr_assert(strstr(e.message, "permission denied"), "%s", e.message);
    cr_assert(strstr(e.hint, "grant it INSERT"), "%s", e.hint);
    vyre_results_close(db);
    /* On an empty database the role cannot create the schema: one error too. */
    ts_postgres_exec(&g_pg, NULL, "CREATE DATABASE empty");
    ts_postgres_exec(&g_pg, "empty", "REVOKE CREATE ON SCHEMA public FROM PUBLIC");
    url_of(url, sizeof url, "reader:rpw", "empty");
    open_fails(url, VYRE_EPERM, &e);
    cr_assert(strstr(e.message, "cannot create the schema of results database"), "%s", e.message);
}

Test(results_pg, password_file_must_be_private)
{
    ts_postgres_start(&g_pg);
    char pw[700], url[1200];
    snprintf(pw, sizeof pw, "%s/pgpw", g_dir);
    tu_write_file(pw, TS_PG_PASSWORD "\n", strlen(TS_PG_PASSWORD) + 1);
    cr_assert_eq(chmod(pw, 0644), 0);
    snprintf(url, sizeof url, "postgresql://vyre@127.0.0.1:%d/postgres?password-file=%s", g_pg.port,
             pw);
    vyre_error e;
    open_fails(url, VYRE_EUNSAFE, &e);
    cr_assert(strstr(e.message, "has mode 0644"), "%s", e.message);
    cr_assert(strstr(e.hint, "chmod 600"), "%s", e.hint);
    cr_assert_eq(chmod(pw, 0600), 0);
    vyre_results *db = open_ok(url);
    cr_assert(!strstr(vyre_results_path(db), TS_PG_PASSWORD));
    vyre_results_close(db);
    /* With other parameters around it, and libpq's own ones kept. */
    snprintf(url, sizeof url,
             "postgresql://vyre@127.0.0.1:%d/postgres?connect_timeout=5&password-file=%s&"
             "application_name=t",
             g_pg.port, pw);
    db = open_ok(url);
    vyre_results_close(db);
}

Test(results_pg, the_default_location_comes_from_VYRE_RESULTS_DB)
{
    ts_postgres_start(&g_pg);
    char url[512], xdg[700];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    snprintf(xdg, sizeof xdg, "%s/config", g_dir);
    setenv("XDG_CONFIG_HOME", xdg, 1);
    setenv("VYRE_RESULTS_DB", url, 1);
    char where[VYRE_RESULTS_LOCATION_MAX];
    int is_default = 1;
    cr_assert_eq(vyre_results_locate(where, sizeof where, &is_default, NULL), 0);
    cr_assert_str_eq(where, url);
    cr_assert_eq(is_default, 0);
    vyre_results *db = open_ok(NULL);
    cr_assert_str_eq(vyre_results_engine(db), "postgresql");
    vyre_results_close(db);
    unsetenv("VYRE_RESULTS_DB");
}

Test(results_pg, results_db_from_a_file_another_user_owns_is_refused)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give the file to another user (CI runs as root)");
    char xdg[700], conf[800];
    snprintf(xdg, sizeof xdg, "%s/config", g_dir);
    snprintf(conf, sizeof conf, "%s/vyre", xdg);
    cr_assert_eq(mkdir(xdg, 0755), 0);
    cr_assert_eq(mkdir(conf, 0755), 0);
    snprintf(conf, sizeof conf, "%s/vyre/vyre.conf", xdg);
    tu_write_file(conf, "results_db = postgresql://me@evil.example/steal\n", 49);
    setenv("XDG_CONFIG_HOME", xdg, 1);
    unsetenv("VYRE_RESULTS_DB");
    char where[VYRE_RESULTS_LOCATION_MAX];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_locate(where, sizeof where, NULL, &e), 0, "own file: %s", e.message);
    cr_assert_str_eq(where, "postgresql://me@evil.example/steal");
    cr_assert_eq(chown(conf, 65534, 65534), 0);
    cr_assert_eq(vyre_results_locate(where, sizeof where, NULL, &e), VYRE_EUNSAFE);
    cr_assert(strstr(e.message, "results_db refused: the file is owned by"), "%s", e.message);
    cr_assert(strstr(e.hint, "VYRE_RESULTS_DB"), "%s", e.hint);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(NULL, &db, &e), VYRE_EUNSAFE, "open went on: %s", e.message);
}

/* Ends every session vyre holds on the server (pg_terminate_backend,
 * waiting up to 30 s for each to be gone), as a restart would. */
static void end_vyre_sessions(void)
{
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 30000)), "
                            "count(*) FROM pg_stat_activity WHERE application_name = 'vyre' AND "
                            "pid <> pg_backend_pid()");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    int ended = atoi(PQgetvalue(r, 0, 0)), held = atoi(PQgetvalue(r, 0, 1));
    PQclear(r);
    PQfinish(c);
    cr_assert(held == 1 && ended == 1, "vyre held %d sessions, %d ended", held, ended);
}

/* A session the server ended between two statements (an administrator's
 * pg_terminate_backend; a restart looks the same to the client): the
 * next read is sent again once the session is back, and so is the next
 * write transaction; the store reads and writes as before. */
Test(results_pg, a_session_the_server_ended_is_sought_again_for_a_read_and_a_write)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *db = open_ok(url);
    vyre_error e;
    vyre_error_clear(&e);
    int64_t run = begin_run(db, NULL, "NVIDIA H200");
    cr_assert_eq(add_point(db, run, 0, 500, 48, &e), 0, "%s", e.message);
    end_vyre_sessions();
    vyre_bench_point *p = NULL;
    size_t np = 0;
    cr_assert_eq(vyre_bench_points_get(db, run, &p, &np, &e), 0, "read: %s", e.message);
    cr_assert_eq(np, 1);
    vyre_free(p);
    end_vyre_sessions();
    cr_assert_eq(add_point(db, run, 1, 700, 48, &e), 0, "write: %s", e.message);
    cr_assert_eq(vyre_bench_points_get(db, run, &p, &np, &e), 0, "%s", e.message);
    cr_assert_eq(np, 2);
    vyre_free(p);
    vyre_results_close(db);
}

/* The child of the test below: a run, one point, then (once the server is
 * gone) a second point and the end of the run, which both fail. Exits
 * with 0 when they failed as a lost connection should. */
static int child_loses_the_server(const char *url, int ready_fd, int go_fd)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_results_open(url, &db, &e) != 0)
        return 10;
    int64_t run = begin_run(db, NULL, "NVIDIA H200");
    if (add_point(db, run, 0, 500, 48, &e) != 0)
        return 11;
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
        return 12;
    int rc = add_point(db, run, 1, 700, 48, &e);
    if (rc != VYRE_EREMOTE || !strstr(e.message, "connection lost")) {
        fprintf(stderr, "second point: %s: %s\n", vyre_err_name(rc), e.message);
        return 13;
    }
    rc = vyre__bench_run_finish(db, run, VYRE_RUN_INTERRUPTED, "server gone", &e);
    if (rc != VYRE_EREMOTE)
        return 14;
    vyre_results_close(db);
    return 0;
}

Test(results_pg, a_server_stopped_mid_run_leaves_the_run_interrupted_and_nothing_half_written)
{
    ts_postgres_start(&g_pg);
    char url[512];
    /* A server gone for longer than the session is sought (reconnect=1;
     * 20 s by default, which a_session_the_server_ended_... relies on). */
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres?reconnect=1");
    vyre_results_close(open_ok(url));
    int ready[2], go[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(child_loses_the_server(url, ready[1], go[0]));
    char c;
    cr_assert_eq(read(ready[0], &c, 1), 1, "the child never wrote its first point");
    ts_postgres_stop(&g_pg);
    cr_assert_eq(write(go[1], "g", 1), 1);
    int64_t t0 = mono_ms();
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    int64_t took = mono_ms() - t0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child step %d",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    /* Two calls each sought the session for reconnect=1 s, not the default
     * 20 s each (40 s). */
    cr_assert_lt(took, 15000, "the failed point and run end took %lld ms with reconnect=1",
                 (long long)took);
    cr_log_info("a server gone for good: the child's two calls failed after %lld ms (reconnect=1)",
                (long long)took);
    ts_postgres_restart(&g_pg);
    vyre_results *db = open_ok(url);
    vyre_bench_run *runs = NULL;
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    /* Its process is gone: the first reader marks it interrupted. */
    cr_assert_eq(vyre_bench_runs_list(db, 0, &runs, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 1);
    cr_assert_eq(runs[0].status, VYRE_RUN_INTERRUPTED, "%s",
                 vyre_bench_run_status_name(runs[0].status));
    cr_assert_eq(runs[0].npoints, 1);
    vyre_bench_point *p = NULL;
    size_t np = 0;
    cr_assert_eq(vyre_bench_points_get(db, runs[0].id, &p, &np, &e), 0);
    cr_assert_eq(np, 1);
    vyre_bench_sample *s = NULL;
    size_t ns = 0;
    cr_assert_eq(vyre_bench_samples_get(db, p[0].id, &s, &ns, &e), 0);
    cr_assert_eq(ns, 48, "the finished point has all its samples");
    vyre_free(s);
    vyre_free(p);
    vyre_free(runs);
    vyre_results_close(db);
    /* Nothing of the second point: no row at all, finished or not. */
    ts_postgres_exec(&g_pg, NULL,
                     "DO $$ BEGIN IF (SELECT count(*) FROM points) <> 1 OR (SELECT count(*) FROM "
                     "samples) <> 48 THEN RAISE EXCEPTION 'half-written rows'; END IF; END $$");
}

Test(results_pg, a_write_that_fails_in_the_pipeline_rolls_its_point_back_whole)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results_close(open_ok(url));
    /* May write runs and points, not samples: the samples of a point are
     * sent without waiting for each result, and their failure must still
     * undo the point's row. */
    ts_postgres_exec(&g_pg, NULL,
                     "CREATE ROLE half LOGIN PASSWORD 'hpw'; "
                     "GRANT SELECT, INSERT, UPDATE ON runs, points TO half; "
                     "GRANT SELECT ON samples, timings, meta TO half; "
                     "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO half");
    url_of(url, sizeof url, "half:hpw", "postgres");
    vyre_results *db = open_ok(url);
    int64_t run = begin_run(db, NULL, "NVIDIA H200");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(add_point(db, run, 0, 300, 40, &e), VYRE_EPERM, "%s", e.message);
    cr_assert(strstr(e.message, "permission denied for table samples"), "%s", e.message);
    vyre_bench_run r;
    cr_assert_eq(vyre_bench_run_get(db, run, &r, &e), 0, "%s", e.message);
    cr_assert_eq(r.npoints, 0, "the point's update was committed without its samples");
    /* The connection is usable after the failed pipeline. */
    cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_INTERRUPTED, NULL, &e), VYRE_EPERM);
    cr_assert_eq(vyre_bench_run_get(db, run, &r, &e), 0, "%s", e.message);
    vyre_results_close(db);
}

/* A local file of one "machine": two done runs as host, on gpu. */
static void machine(const char *path, const char *host, const char *gpu)
{
    vyre_results *db = open_ok(path);
    vyre_error e;
    vyre_error_clear(&e);
    for (int k = 0; k < 2; k++) {
        int64_t run = begin_run(db, host, gpu);
        cr_assert_eq(add_point(db, run, 0, 1000 + 100 * k, 20, &e), 0, "%s", e.message);
        cr_assert_eq(add_point(db, run, 1, 3000 + 100 * k, 24, &e), 0, "%s", e.message);
        vyre_bench_point *p = NULL;
        size_t np = 0;
        cr_assert_eq(vyre_bench_points_get(db, run, &p, &np, &e), 0);
        vyre_activity a;
        memset(&a, 0, sizeof a);
        a.kind = VYRE_ACTIVITY_KERNEL;
        snprintf(a.name, sizeof a.name, "k_%s", host);
        a.start_ns = 10;
        a.end_ns = 1234;
        a.grid[0] = 7;
        cr_assert_eq(vyre__bench_point_records(db, run, p[1].id, &a, 1, &e), 0, "%s", e.message);
        vyre_free(p);
        cr_assert_eq(vyre__bench_run_finish(db, run, VYRE_RUN_DONE, NULL, &e), 0);
    }
    vyre_results_close(db);
}

/* The runs of db, newest first (the caller frees). */
static vyre_bench_run *runs_of(vyre_results *db, size_t *n)
{
    vyre_bench_run *r = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_bench_runs_list(db, 0, &r, n, &e), 0, "%s", e.message);
    return r;
}

/* Every point, sample and kernel record of run a in x equals run b's in y. */
static void same_run(vyre_results *x, int64_t a, vyre_results *y, int64_t b)
{
    vyre_bench_run ra, rb;
    cr_assert_eq(vyre_bench_run_get(x, a, &ra, NULL), 0);
    cr_assert_eq(vyre_bench_run_get(y, b, &rb, NULL), 0);
    cr_assert_str_eq(ra.host, rb.host);
    cr_assert_str_eq(ra.gpu_name, rb.gpu_name);
    cr_assert_eq(ra.started_ns, rb.started_ns);
    cr_assert_eq(ra.finished_ns, rb.finished_ns);
    cr_assert_eq(ra.pid, rb.pid);
    cr_assert_eq(ra.status, rb.status);
    vyre_bench_point *pa = NULL, *pb = NULL;
    size_t na = 0, nb = 0;
    cr_assert_eq(vyre_bench_points_get(x, a, &pa, &na, NULL), 0);
    cr_assert_eq(vyre_bench_points_get(y, b, &pb, &nb, NULL), 0);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(memcmp(&pa[i].stats.median, &pb[i].stats.median, sizeof(double)), 0,
                     "median not bit for bit");
        cr_assert_eq(pa[i].stats.n, pb[i].stats.n);
        cr_assert_eq(pa[i].rounds, pb[i].rounds);
        cr_assert_str_eq(pa[i].axes, pb[i].axes);
        vyre_bench_sample *sa = NULL, *sb = NULL;
        size_t nsa = 0, nsb = 0;
        cr_assert_eq(vyre_bench_samples_get(x, pa[i].id, &sa, &nsa, NULL), 0);
        cr_assert_eq(vyre_bench_samples_get(y, pb[i].id, &sb, &nsb, NULL), 0);
        cr_assert_eq(nsa, nsb);
        for (size_t k = 0; k < nsa; k++) {
            cr_assert_eq(memcmp(&sa[k].wall, &sb[k].wall, sizeof(double)), 0);
            cr_assert_eq(sa[k].round, sb[k].round);
        }
        vyre_free(sa);
        vyre_free(sb);
        vyre_bench_kernel_row *ka = NULL, *kb = NULL;
        size_t nka = 0, nkb = 0;
        cr_assert_eq(vyre_bench_kernels_get(x, pa[i].id, &ka, &nka, NULL), 0);
        cr_assert_eq(vyre_bench_kernels_get(y, pb[i].id, &kb, &nkb, NULL), 0);
        cr_assert_eq(nka, nkb);
        for (size_t k = 0; k < nka; k++) {
            cr_assert_str_eq(ka[k].name, kb[k].name);
            cr_assert_float_eq(ka[k].median_ns, kb[k].median_ns, 0);
        }
        vyre_free(ka);
        vyre_free(kb);
    }
    vyre_free(pa);
    vyre_free(pb);
}

Test(results_pg, two_machines_push_their_runs_once_and_pull_them_back_whole)
{
    ts_postgres_start(&g_pg);
    char a_path[700], b_path[700], c_path[700], url[512];
    snprintf(a_path, sizeof a_path, "%s/a.sqlite3", g_dir);
    snprintf(b_path, sizeof b_path, "%s/b.sqlite3", g_dir);
    snprintf(c_path, sizeof c_path, "%s/c.sqlite3", g_dir);
    machine(a_path, "gpu-a", "NVIDIA H100 80GB HBM3");
    machine(b_path, "gpu-b", "NVIDIA H200");
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *a = open_ok(a_path), *b = open_ok(b_path), *pg = open_ok(url);
    vyre_error e;
    vyre_error_clear(&e);
    int64_t ids[4];
    for (int pass = 0; pass < 2; pass++)
        for (int64_t r = 1; r <= 2; r++) {
            int existed = -1;
            cr_assert_eq(vyre_results_copy_run(a, r, pg, &ids[r - 1], &existed, &e), 0, "%s",
                         e.message);
            cr_assert_eq(existed, pass, "push %d of run %lld", pass, (long long)r);
            cr_assert_eq(vyre_results_copy_run(b, r, pg, &ids[r + 1], &existed, &e), 0, "%s",
                         e.message);
            cr_assert_eq(existed, pass);
        }
    size_t n = 0;
    vyre_bench_run *r = runs_of(pg, &n);
    cr_assert_eq(n, 4, "pushing twice copied twice");
    vyre_free(r);
    same_run(a, 2, pg, ids[1]);
    same_run(b, 1, pg, ids[2]);
    /* Pulled into a third file: the same again, ids of its own. */
    vyre_results *c = open_ok(c_path);
    int64_t back = 0;
    cr_assert_eq(vyre_results_copy_run(pg, ids[3], c, &back, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(back, 1);
    same_run(b, 2, c, back);
    /* A running run is refused; an unknown one too. */
    int64_t live = begin_run(a, NULL, "NVIDIA H100 80GB HBM3");
    cr_assert_eq(vyre_results_copy_run(a, live, pg, &back, NULL, &e), VYRE_EBUSY);
    cr_assert(strstr(e.message, "is still running"), "%s", e.message);
    cr_assert_eq(vyre_results_copy_run(a, 99, pg, &back, NULL, &e), VYRE_ENOENT);
    vyre_results_close(a);
    vyre_results_close(b);
    vyre_results_close(c);
    vyre_results_close(pg);
}

/* The selectors on one store: machine a's and b's runs pushed into it. */
static void check_selectors(vyre_results *db, const int64_t *ids)
{
    vyre_error e;
    vyre_error_clear(&e);
    int64_t id = 0;
    cr_assert_eq(vyre_results_select_run(db, "gpu=H200 last", &id, &e), 0, "%s", e.message);
    cr_assert_eq(id, ids[3], "newest H200 run");
    cr_assert_eq(vyre_results_select_run(db, "  gpu=h100   last-1 ", &id, &e), 0, "%s", e.message);
    cr_assert_eq(id, ids[0], "older H100 run, any case");
    cr_assert_eq(vyre_results_select_run(db, "host=gpu-a gpu=H200 last", &id, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no done run matches 'host=gpu-a gpu=H200 last'"), "%s", e.message);
    cr_assert_eq(vyre_results_run_set_ref(db, ids[2], "main", &e), 0, "%s", e.message);
    cr_assert_eq(vyre_results_select_run(db, "gpu=H200 branch=main last", &id, &e), 0, "%s",
                 e.message);
    cr_assert_eq(id, ids[2], "the H200 run of main, not the newer one of no branch");
    cr_assert_eq(vyre_results_select_run(db, "gpu=H_00 last", &id, &e), VYRE_ENOENT,
                 "'_' is a character, not a wildcard");
    cr_assert_eq(vyre_results_select_run(db, "gpu=H200 last:5", &id, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_results_select_run(db, "gpu=H200", &id, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_results_select_run(db, "colour=red last", &id, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "'colour=red'"), "%s", e.message);
    cr_assert_eq(vyre_results_select_run(db, "last gpu=H200", &id, &e), VYRE_EINVAL);
}

Test(results_pg, a_baseline_is_chosen_by_gpu_model_and_branch_on_both_engines)
{
    ts_postgres_start(&g_pg);
    char a_path[700], b_path[700], all_path[700], url[512];
    snprintf(a_path, sizeof a_path, "%s/a.sqlite3", g_dir);
    snprintf(b_path, sizeof b_path, "%s/b.sqlite3", g_dir);
    snprintf(all_path, sizeof all_path, "%s/all.sqlite3", g_dir);
    machine(a_path, "gpu-a", "NVIDIA H100 80GB HBM3");
    machine(b_path, "gpu-b", "NVIDIA H200");
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *a = open_ok(a_path), *b = open_ok(b_path);
    vyre_results *stores[2] = {open_ok(url), open_ok(all_path)};
    for (int s = 0; s < 2; s++) {
        int64_t ids[4];
        vyre_error e;
        vyre_error_clear(&e);
        /* b's runs started after a's: newest is b's second. */
        for (int64_t r = 1; r <= 2; r++)
            cr_assert_eq(vyre_results_copy_run(a, r, stores[s], &ids[r - 1], NULL, &e), 0, "%s",
                         e.message);
        for (int64_t r = 1; r <= 2; r++)
            cr_assert_eq(vyre_results_copy_run(b, r, stores[s], &ids[r + 1], NULL, &e), 0, "%s",
                         e.message);
        check_selectors(stores[s], ids);
        vyre_results_history_row *h = NULL;
        size_t nh = 0;
        cr_assert_eq(
            vyre_results_history(stores[s], "launch.stream", NULL, "gpu=H200", &h, &nh, &e), 0,
            "%s", e.message);
        cr_assert_eq(nh, 4, "two H200 runs of two points");
        vyre_free(h);
        cr_assert_eq(vyre_results_history(stores[s], "launch.stream", "N=2048", NULL, &h, &nh, &e),
                     0, "%s", e.message);
        cr_assert_eq(nh, 4, "one point of each of the four runs");
        for (size_t i = 1; i < nh; i++)
            cr_assert_leq(h[i - 1].started_ns, h[i].started_ns, "oldest first");
        cr_assert_str_eq(h[0].host, "gpu-a");
        cr_assert_str_eq(h[3].gpu_name, "NVIDIA H200");
        cr_assert_str_eq(h[2].git_ref, "main");
        cr_assert_float_eq(h[3].median_ns, 3102.5, 1e-9); /* 3100 + median of i % 7, i < 24 */
        vyre_free(h);
        cr_assert_eq(
            vyre_results_history(stores[s], "launch.stream", NULL, "gpu=H200 last", &h, &nh, &e),
            VYRE_EINVAL, "a filter has no 'last'");
        vyre_results_close(stores[s]);
    }
    vyre_results_close(a);
    vyre_results_close(b);
    /* The Grafana view of docs/RESULTS.md, as written there, on the server's runs. */
    char *readme = tu_read_file(VYRE_TEST_SOURCE_DIR "/../docs/RESULTS.md", NULL);
    cr_assert_not_null(readme);
    char *view = strstr(readme, "```sql\nCREATE VIEW vyre_point_medians");
    cr_assert_not_null(view, "docs/RESULTS.md lost its Grafana view");
    view += strlen("```sql\n");
    char *end = strstr(view, "```");
    cr_assert_not_null(end);
    *end = '\0';
    ts_postgres_exec(&g_pg, NULL, view);
    free(readme);
    ts_postgres_exec(&g_pg, NULL,
                     "DO $$ BEGIN IF (SELECT count(*) FROM vyre_point_medians WHERE gpu_name = "
                     "'NVIDIA H200' AND \"time\" > now() - interval '1 hour' AND median_ns > 0) "
                     "<> 4 THEN RAISE EXCEPTION 'view'; END IF; END $$");
}

/* ---- issue 33: no password stored or shown, every wait bounded ------------------------ */

/* No piece of secret (4 bytes, or all of a shorter one) in text. */
static void no_piece_of(const char *text, const char *secret, const char *what)
{
    size_t n = strlen(secret), len = n < 4 ? n : 4;
    for (size_t i = 0; i + len <= n; i++) {
        char piece[5];
        memcpy(piece, secret + i, len);
        piece[len] = '\0';
        cr_assert(!strstr(text, piece), "%s shows '%s' of the password: %s", what, piece, text);
    }
}

Test(results_dialect, every_form_of_password_is_masked)
{
    char b[512];
    vyre_results_mask("POSTGRESQL://bob:pw@h/db", b, sizeof b);
    cr_assert_str_eq(b, "POSTGRESQL://bob:***@h/db");
    cr_assert(vyre_results_is_url("PostgreS://h/d"), "any case of the scheme is a URL");
    vyre_results_mask("host=h port=5 password=pw dbname=d", b, sizeof b);
    cr_assert_str_eq(b, "host=h port=5 password=*** dbname=d");
    vyre_results_mask("host=h password = 'p w\\'x' dbname=d", b, sizeof b);
    cr_assert_str_eq(b, "host=h password = *** dbname=d");
    vyre_results_mask("postgresql://h/db?sslpassword=k&PASSWORD=pw&sslmode=require", b, sizeof b);
    cr_assert_str_eq(b, "postgresql://h/db?sslpassword=***&PASSWORD=***&sslmode=require");
    vyre_results_mask("postgresql://bob:p/w@h/db", b, sizeof b);
    cr_assert_str_eq(b, "postgresql://bob:***@h/db", "an unencoded '/' in the password");
    vyre_results_mask("postgresql://bob:S3c@ret%ZZPW@h:5/db", b, sizeof b);
    cr_assert_str_eq(b, "postgresql://bob:***@h:5/db");
    /* Free text (a command line): a URL ends at a blank. */
    vyre__mask_secrets(
        "vyre-bench run --db Postgres://u:S3cret@h/d -q PGPASSWORD=x2 password='a b' x", b,
        sizeof b);
    cr_assert_str_eq(b, "vyre-bench run --db Postgres://u:***@h/d -q PGPASSWORD=*** "
                        "password=*** x");
}

/* Each bad URL form the audit found libpq echoing (or vyre, for a key=value
 * string) fails with a message and hint holding no piece of the password. */
Test(results_pg, no_bad_url_form_shows_any_piece_of_its_password)
{
    ts_postgres_start(&g_pg);
    /* PORT is the server's port. */
    static const struct {
        const char *before, *after, *password;
        int code;
    } k[] = {
        {"postgresql://vyre:S3cret%ZZPW@127.0.0.1:", "/postgres", "S3cret%ZZPW", VYRE_EINVAL},
        {"postgresql://vyre:S3cret%00PW@127.0.0.1:", "/postgres", "S3cret%00PW", VYRE_EINVAL},
        {"postgresql://vyre:S3cretPW@[127.0.0.1:", "/postgres", "S3cretPW", VYRE_EINVAL},
        {"postgresql://vyre:S3c@retPW@127.0.0.1:", "/postgres", "S3c@retPW", VYRE_EINVAL},
        {"postgresql://vyre:S3c/retPW@127.0.0.1:", "/postgres", "S3c/retPW", VYRE_EINVAL},
        {"POSTGRESQL://vyre:S3cretPW@127.0.0.1:", "/postgres", "S3cretPW", VYRE_EPERM},
        {"postgresql://vyre@127.0.0.1:", "/postgres?password=S3cret%ZZPW", "S3cret%ZZPW",
         VYRE_EINVAL},
        {"host=127.0.0.1 port=", " password=S3cretPW dbname=postgres", "S3cretPW", VYRE_EINVAL},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char url[512];
        snprintf(url, sizeof url, "%s%d%s", k[i].before, g_pg.port, k[i].after);
        vyre_error e;
        open_fails(url, k[i].code, &e);
        no_piece_of(e.message, k[i].password, url);
        no_piece_of(e.hint, k[i].password, url);
        cr_assert(strstr(e.message, "***"), "the location is shown masked: %s", e.message);
    }
    /* The capital scheme was a URL: it reached the server. */
    char url[512];
    snprintf(url, sizeof url, "%s%d%s", k[5].before, g_pg.port, k[5].after);
    vyre_error e;
    open_fails(url, VYRE_EPERM, &e);
    cr_assert(strstr(e.message, "password authentication failed"), "%s", e.message);
}

/* The password never reaches runs.command_line: masked when written, and
 * rows an older vyre wrote are masked when the store is opened. */
static long pg_count(const char *sql)
{
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

Test(results_pg, command_lines_never_keep_a_password_on_either_engine)
{
    ts_postgres_start(&g_pg);
    char url[512], file[600];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    snprintf(file, sizeof file, "%s/r.sqlite3", g_dir);
    const char *line = "vyre-bench run --db postgresql://vyre:" TS_PG_PASSWORD
                       "@127.0.0.1/postgres password=" TS_PG_PASSWORD;
    for (int engine = 0; engine < 2; engine++) {
        const char *where = engine ? url : file;
        vyre_results *db = open_ok(where);
        vyre_bench_run run;
        memset(&run, 0, sizeof run);
        snprintf(run.command_line, sizeof run.command_line, "%s", line);
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre__bench_run_begin(db, &run, &e), 0, "%s", e.message);
        vyre_bench_run got;
        cr_assert_eq(vyre_bench_run_get(db, run.id, &got, &e), 0, "%s", e.message);
        cr_assert_str_eq(got.command_line, "vyre-bench run --db postgresql://vyre:***@127.0.0.1/"
                                           "postgres password=***");
        vyre_results_close(db);
    }
    cr_assert_eq(
        pg_count("SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"), 0);
    cr_assert_eq(
        tu_db_int(file, "SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"),
        0);

    /* Rows an older vyre wrote: masked at the next open. */
    char plant[700];
    snprintf(plant, sizeof plant, "UPDATE runs SET command_line = '%s'", line);
    ts_postgres_exec(&g_pg, NULL, plant);
    cr_assert_eq(
        pg_count("SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"), 1);
    vyre_results_close(open_ok(url));
    cr_assert_eq(
        pg_count("SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"), 0,
        "the open masked the stored row");
    cr_assert_eq(pg_count("SELECT count(*) FROM runs WHERE command_line LIKE '%vyre:***@%'"), 1);
    sqlite3 *s = NULL;
    cr_assert_eq(sqlite3_open(file, &s), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(s, plant, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    vyre_results_close(open_ok(file));
    cr_assert_eq(
        tu_db_int(file, "SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"),
        0, "the open masked the stored row");
}

/* A backend stopped (SIGSTOP) in the middle of a session: the next
 * statement ends within the URL's timeout=2 with the server named, and
 * the store stays given up (every later call fails at once). */
static pid_t g_stopped;

static void continue_stopped(void)
{
    if (g_stopped > 0)
        kill(g_stopped, SIGCONT);
    g_stopped = 0;
}

static void teardown_stopped(void)
{
    continue_stopped();
    teardown();
}

Test(results_pg, a_stopped_backend_ends_the_statement_within_the_deadline, .fini = teardown_stopped)
{
    ts_postgres_start(&g_pg);
    char url[512];
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres?timeout=2");
    vyre_results *db = open_ok(url);
    int64_t run = begin_run(db, NULL, "NVIDIA H200");
    g_stopped = (pid_t)pg_count("SELECT pid FROM pg_stat_activity WHERE application_name = 'vyre' "
                                "AND pid <> pg_backend_pid()");
    cr_assert_gt(g_stopped, 0);
    cr_assert_eq(kill(g_stopped, SIGSTOP), 0);
    vyre_error e;
    vyre_error_clear(&e);
    int64_t t0 = mono_ms();
    int rc = add_point(db, run, 0, 500, 48, &e);
    int64_t took = mono_ms() - t0;
    cr_assert_eq(rc, VYRE_EREMOTE, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert(took >= 1900 && took < 5000, "took %lld ms for a 2 s deadline", (long long)took);
    char server[64];
    snprintf(server, sizeof server, "127.0.0.1:%d did not answer within 2 s", g_pg.port);
    cr_assert(strstr(e.message, server), "%s", e.message);
    cr_assert(strstr(e.hint, "timeout=S"), "%s", e.hint);
    cr_assert(!strstr(e.message, TS_PG_PASSWORD), "%s", e.message);
    t0 = mono_ms();
    rc = vyre__bench_run_finish(db, run, VYRE_RUN_DONE, NULL, &e);
    cr_assert_eq(rc, VYRE_EREMOTE);
    cr_assert_lt(mono_ms() - t0, 500, "a given-up store fails at once");
    cr_log_info("a stopped backend: the statement ended after %lld ms (deadline 2 s)",
                (long long)took);
    vyre_results_close(db);
    continue_stopped();
}

/* A fake server: silent from the start (the connect deadline), silent
 * after the startup, or flooding notices (the statement deadline, a
 * cancel request sent each time). */
Test(results_pg, a_silent_or_flooding_server_ends_within_the_deadline)
{
    static const fake_pg_mode modes[] = {FAKE_PG_SILENT_STARTUP, FAKE_PG_SILENT_QUERY,
                                         FAKE_PG_NOTICE_FLOOD};
    for (size_t i = 0; i < 3; i++) {
        fake_pg f;
        fake_pg_start(&f, modes[i]);
        char url[512];
        snprintf(url, sizeof url,
                 "postgresql://vyre@127.0.0.1:%d/postgres?sslmode=disable&gssencmode=disable&"
                 "timeout=2",
                 f.port);
        vyre_error e;
        int64_t took = open_fails(url, VYRE_EREMOTE, &e);
        cr_assert(took >= 1900 && took < 5000, "mode %d: took %lld ms for a 2 s deadline",
                  (int)modes[i], (long long)took);
        char server[64];
        snprintf(server, sizeof server, "127.0.0.1:%d", f.port);
        cr_assert(strstr(e.message, server), "%s", e.message);
        cr_assert(strstr(e.message, "within 2 s"), "%s", e.message);
        if (modes[i] != FAKE_PG_SILENT_STARTUP) {
            for (int w = 0; w < 100 && !f.cancels; w++)
                usleep(10000);
            cr_assert_geq(f.cancels, 1, "mode %d: no cancel request", (int)modes[i]);
        }
        if (modes[i] == FAKE_PG_NOTICE_FLOOD)
            cr_assert_gt(f.notices, 100, "the server flooded");
        cr_log_info("fake server mode %d: ended after %lld ms (deadline 2 s), %ld notices",
                    (int)modes[i], (long long)took, (long)f.notices);
        fake_pg_stop(&f);
    }
}

/* The front end's interrupt flag ends a wait at once, with VYRE_EINTR. */
static volatile sig_atomic_t g_flag;

static void *raise_flag(void *arg)
{
    (void)arg;
    usleep(300000);
    g_flag = 1;
    return NULL;
}

Test(results_pg, the_interrupt_flag_ends_a_wait_at_once)
{
    fake_pg f;
    fake_pg_start(&f, FAKE_PG_SILENT_QUERY);
    char url[512];
    snprintf(url, sizeof url,
             "postgresql://vyre@127.0.0.1:%d/postgres?sslmode=disable&gssencmode=disable", f.port);
    g_flag = 0;
    vyre_results_set_interrupt(&g_flag);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, raise_flag, NULL), 0);
    vyre_error e;
    int64_t took = open_fails(url, VYRE_EINTR, &e);
    pthread_join(t, NULL);
    vyre_results_set_interrupt(NULL);
    cr_assert(took < 1300, "took %lld ms, the flag rose at 300", (long long)took);
    cr_assert(strstr(e.message, "stopped waiting for results database"), "%s", e.message);
    for (int w = 0; w < 100 && !f.cancels; w++)
        usleep(10000);
    cr_assert_geq(f.cancels, 1, "no cancel request");
    fake_pg_stop(&f);
}

/* push and pull mask what they copy, whatever the source holds (a row
 * planted while the source is open, so the open's masking has passed). */
Test(results_pg, push_and_pull_never_copy_a_password)
{
    ts_postgres_start(&g_pg);
    char a_path[700], c_path[700], url[512];
    snprintf(a_path, sizeof a_path, "%s/a.sqlite3", g_dir);
    snprintf(c_path, sizeof c_path, "%s/c.sqlite3", g_dir);
    machine(a_path, "gpu-a", "NVIDIA H100 80GB HBM3");
    url_of(url, sizeof url, "vyre:" TS_PG_PASSWORD, "postgres");
    vyre_results *a = open_ok(a_path), *pg = open_ok(url), *c = open_ok(c_path);
    const char *plant = "UPDATE runs SET command_line = 'vyre-bench run --db "
                        "postgres://vyre:" TS_PG_PASSWORD "@h/db PGPASSWORD=" TS_PG_PASSWORD "'";
    sqlite3 *s = NULL;
    cr_assert_eq(sqlite3_open(a_path, &s), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(s, plant, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(s);
    vyre_error e;
    vyre_error_clear(&e);
    int64_t id = 0;
    cr_assert_eq(vyre_results_copy_run(a, 1, pg, &id, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(
        pg_count("SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD "%'"), 0,
        "push copied the password");
    cr_assert_eq(pg_count("SELECT count(*) FROM runs WHERE command_line = 'vyre-bench run --db "
                          "postgres://vyre:***@h/db PGPASSWORD=***'"),
                 1);
    ts_postgres_exec(&g_pg, NULL, plant);
    int64_t back = 0;
    cr_assert_eq(vyre_results_copy_run(pg, id, c, &back, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(tu_db_int(c_path,
                           "SELECT count(*) FROM runs WHERE command_line LIKE '%" TS_PG_PASSWORD
                           "%'"),
                 0, "pull copied the password");
    cr_assert_eq(tu_db_int(c_path, "SELECT count(*) FROM runs"), 1);
    vyre_results_close(c);
    vyre_results_close(pg);
    vyre_results_close(a);
}
