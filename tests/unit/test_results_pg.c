/*
 * test_results_pg.c - the results store on a real PostgreSQL server
 * (libcore/src/bench/store_pg.c, store_url.c, store_dialect.c): Debian's
 * server started by initdb in a temp folder on a loopback port this test
 * picks (tests/common/servers.c), stopped at the end. The same run
 * lifecycle as the local file, many writers at once, a server gone mid-run,
 * and one clear error each for a wrong password, an unreachable host and
 * a read-only role; passwords never shown; the dialect rules; the
 * results_db key refused from a file that is not the user's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/store_dialect.h"
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

static __attribute__((unused)) int64_t mono_ms(void)
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
    cr_assert_eq(vyre_bench_run_begin(db, &r, &e), 0, "%s", e.message);
    cr_assert_gt(r.id, 0);
    return r.id;
}

/* Adds a finished point with n samples around base; returns vyre_bench_point_finish's code. */
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
    int rc = vyre_bench_point_begin(db, &p, e);
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
    cr_assert_eq(vyre_stats_compute(x, n, &p.stats, e), 0);
    snprintf(p.stop, sizeof p.stop, "noise-ok");
    p.stop_reason = VYRE_STOP_NOISE_OK;
    p.rounds = 3;
    p.round_noise = 0.01;
    return vyre_bench_point_finish(db, &p, s, n, e);
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
    cr_assert_eq(vyre_bench_point_records(db, run, pts[0].id, k, 3, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_bench_run_finish(db, run, VYRE_RUN_DONE, NULL, &e), 0, "%s", e.message);
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
    vyre_bench_point_list_free(pts);
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
    cr_assert_eq(vyre_bench_compare_runs(db, run, run, NULL, &cmp, &nc, &e), 0, "%s", e.message);
    cr_assert_eq(nc, 2);
    vyre_bench_cmp_row_list_free(cmp);
    vyre_bench_kernel_row_list_free(kr);
    vyre_bench_sample_list_free(s);
    vyre_bench_point_list_free(pts);
    /* A failed run keeps only its row, as on a file. */
    int64_t bad = begin_run(db, NULL, "NVIDIA H200");
    cr_assert_eq(add_point(db, bad, 0, 10, 8, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_bench_run_finish(db, bad, VYRE_RUN_FAILED, "no GPU", &e), 0, "%s", e.message);
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
    vyre_bench_run_list_free(runs);
    vyre_results_close(db);
}
