/*
 * test_bench_rm.c - `vyre-bench rm`: runs removed with their points,
 * samples and kernel records in one transaction; a running run refused
 * (and then nothing removed); a run whose process died removed; --failed;
 * usage errors. Exact output and exit codes.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_internal.h"
#include "bench/stats_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_tmp[512];
static char g_db[600];
static char g_env_home[700], g_env_data[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_db, sizeof g_db, "%s/results.sqlite3", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_rm, .init = setup, .fini = teardown, .timeout = 60);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void bench(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home, g_env_data, "VYRE_CUDA_LIBRARY=/nonexistent", NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

static long long db_int(const char *sql)
{
    return tu_db_int(g_db, sql);
}

/* A run of two points of 5 samples and one kernel record each, finished
 * with status (RUNNING: left running, as process pid). */
static int64_t make_run(vyre_results *db, vyre_bench_run_status status, int64_t pid)
{
    vyre_bench_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.suites, sizeof r.suites, "launch");
    snprintf(r.host, sizeof r.host, "testhost");
    r.pid = pid;
    if (status == VYRE_RUN_RUNNING && pid)
        gethostname(r.host, sizeof r.host); /* judged alive or dead on this host */
    cr_assert_eq(vyre__bench_run_begin(db, &r, NULL), 0);
    for (int k = 0; k < 2; k++) {
        vyre_bench_point p;
        memset(&p, 0, sizeof p);
        p.run_id = r.id;
        p.seq = k;
        snprintf(p.suite, sizeof p.suite, "launch");
        snprintf(p.benchmark, sizeof p.benchmark, "launch.p%d", k);
        p.items = 1;
        p.device = -1;
        p.mode = VYRE_BENCH_HOST;
        cr_assert_eq(vyre__bench_point_begin(db, &p, NULL), 0);
        double x[5] = {1, 2, 3, 4, 5};
        vyre_bench_sample s[5];
        memset(s, 0, sizeof s);
        for (int i = 0; i < 5; i++)
            s[i].value = x[i];
        cr_assert_eq(vyre__stats_compute(x, 5, &p.stats, NULL), 0);
        cr_assert_eq(vyre__bench_point_finish(db, &p, s, 5, NULL), 0);
        vyre_activity a;
        memset(&a, 0, sizeof a);
        a.kind = VYRE_ACTIVITY_KERNEL;
        snprintf(a.name, sizeof a.name, "k%d", k);
        a.start_ns = 1;
        a.end_ns = 2;
        cr_assert_eq(vyre__bench_point_records(db, r.id, p.id, &a, 1, NULL), 0);
    }
    if (status != VYRE_RUN_RUNNING)
        cr_assert_eq(vyre__bench_run_finish(db, r.id, status, NULL, NULL), 0);
    return r.id;
}

static long long rows_of(int64_t run)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM runs WHERE id = %lld) + (SELECT count(*) FROM points "
             "WHERE run_id = %lld) + (SELECT count(*) FROM samples WHERE point_id IN (SELECT id "
             "FROM points WHERE run_id = %lld)) + (SELECT count(*) FROM timings WHERE run_id = "
             "%lld)",
             (long long)run, (long long)run, (long long)run, (long long)run);
    return db_int(sql);
}

/* The pid of a process that has ended. */
static int64_t dead_pid(void)
{
    pid_t c = fork();
    cr_assert_geq(c, 0);
    if (c == 0)
        _exit(0);
    int st;
    waitpid(c, &st, 0);
    return (int64_t)c;
}

Test(bench_rm, removes_runs_with_everything_they_hold)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    int64_t a = make_run(db, VYRE_RUN_DONE, 0), b = make_run(db, VYRE_RUN_DONE, 0),
            c = make_run(db, VYRE_RUN_INTERRUPTED, 0);
    vyre_results_close(db);
    cr_assert_eq(rows_of(a), 1 + 2 + 10 + 2);
    cr_assert_eq(rows_of(c), 1 + 2 + 10 + 2);

    tu_proc p;
    char ida[24], idc[24];
    snprintf(ida, sizeof ida, "%lld", (long long)a);
    snprintf(idc, sizeof idc, "%lld", (long long)c);
    /* 'last' is the last done run (b), not the interrupted c: name c by id. */
    bench(&p, ARGS("rm", "--db", g_db, ida, idc));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect_str_eq(p.err, "");
    char want[1024];
    snprintf(want, sizeof want, "removed run %lld done, 2 points, started ", (long long)a);
    cr_expect(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    snprintf(want, sizeof want, "\nremoved run %lld interrupted, 2 points, started ", (long long)c);
    cr_expect(strstr(p.out, want) != NULL, "%s", p.out);
    cr_expect(strstr(p.out, " on testhost\n") != NULL, "%s", p.out);
    tu_proc_free(&p);
    cr_expect_eq(rows_of(a), 0);
    cr_expect_eq(rows_of(c), 0);
    cr_expect_eq(rows_of(b), 15, "the run not named stays whole");

    /* Gone now: a clear error, nothing else touched. */
    bench(&p, ARGS("rm", "--db", g_db, ida));
    cr_expect_eq(p.exit_code, 2);
    cr_expect(strstr(p.err, "vyre-bench: error: no run") != NULL, "%s", p.err);
    cr_expect_str_eq(p.out, "");
    tu_proc_free(&p);
    cr_expect_eq(rows_of(b), 15);
}

Test(bench_rm, a_running_run_is_refused_and_nothing_goes)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    int64_t done = make_run(db, VYRE_RUN_DONE, 0);
    int64_t live = make_run(db, VYRE_RUN_RUNNING, (int64_t)getpid());
    int64_t dead = make_run(db, VYRE_RUN_RUNNING, dead_pid());
    vyre_results_close(db);
    char id_done[24], id_live[24], id_dead[24];
    snprintf(id_done, sizeof id_done, "%lld", (long long)done);
    snprintf(id_live, sizeof id_live, "%lld", (long long)live);
    snprintf(id_dead, sizeof id_dead, "%lld", (long long)dead);

    tu_proc p;
    bench(&p, ARGS("rm", "--db", g_db, id_done, id_live));
    cr_expect_eq(p.exit_code, 2);
    char host[256];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    char want[1024];
    snprintf(want, sizeof want,
             "vyre-bench: error: run %lld is running (pid %lld on %s): not removed\n"
             "hint: stop it first (Ctrl-C or kill its process), or wait for it to end\n",
             (long long)live, (long long)getpid(), host);
    cr_expect_str_eq(p.err, want);
    cr_expect_str_eq(p.out, "");
    tu_proc_free(&p);
    cr_expect_eq(rows_of(done), 15, "one transaction: the done run stays too");
    cr_expect_eq(rows_of(live), 15);

    /* A run whose process died is reaped (interrupted) and removed. */
    bench(&p, ARGS("rm", "--db", g_db, id_dead));
    cr_expect_eq(p.exit_code, 0, "%s", p.err);
    snprintf(want, sizeof want, "removed run %lld interrupted, 2 points, started ",
             (long long)dead);
    cr_expect(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    tu_proc_free(&p);
    cr_expect_eq(rows_of(dead), 0);
    cr_expect_eq(rows_of(live), 15);
}

Test(bench_rm, failed_runs)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    int64_t f1 = make_run(db, VYRE_RUN_FAILED, 0);
    int64_t ok = make_run(db, VYRE_RUN_DONE, 0);
    int64_t f2 = make_run(db, VYRE_RUN_FAILED, 0);
    vyre_results_close(db);
    tu_proc p;
    bench(&p, ARGS("rm", "--db", g_db, "--failed"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[1024];
    snprintf(want, sizeof want, "removed run %lld failed, 0 points, started ", (long long)f1);
    cr_expect(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    snprintf(want, sizeof want, "\nremoved run %lld failed, 0 points, started ", (long long)f2);
    cr_expect(strstr(p.out, want) != NULL, "%s", p.out);
    tu_proc_free(&p);
    cr_expect_eq(db_int("SELECT count(*) FROM runs WHERE status = 'failed'"), 0);
    cr_expect_eq(rows_of(ok), 15);

    bench(&p, ARGS("rm", "--db", g_db, "--failed"));
    cr_expect_eq(p.exit_code, 0);
    snprintf(want, sizeof want, "no failed runs in %s\n", g_db);
    cr_expect_str_eq(p.out, want);
    tu_proc_free(&p);

    /* --json: the removed runs as `runs --json` shows them. */
    bench(&p, ARGS("rm", "--db", g_db, "--failed", "--json"));
    cr_expect_eq(p.exit_code, 0);
    json_t *doc = json_loads(p.out, 0, NULL);
    cr_assert_not_null(doc, "%s", p.out);
    cr_expect_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    cr_expect_eq(json_array_size(json_object_get(doc, "removed")), 0);
    json_decref(doc);
    tu_proc_free(&p);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)ok);
    bench(&p, ARGS("rm", "--db", g_db, "--json", id));
    cr_expect_eq(p.exit_code, 0, "%s", p.err);
    doc = json_loads(p.out, 0, NULL);
    cr_assert_not_null(doc, "%s", p.out);
    json_t *r0 = json_array_get(json_object_get(doc, "removed"), 0);
    cr_expect_eq(json_integer_value(json_object_get(r0, "id")), ok);
    cr_expect_str_eq(json_string_value(json_object_get(r0, "status")), "done");
    cr_expect_eq(json_integer_value(json_object_get(r0, "point_count")), 2);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "db")), g_db);
    json_decref(doc);
    tu_proc_free(&p);
    cr_expect_eq(rows_of(ok), 0);
}

Test(bench_rm, usage_errors)
{
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_db, &db, NULL), 0);
    int64_t a = make_run(db, VYRE_RUN_DONE, 0);
    vyre_results_close(db);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)a);
    const struct {
        const char *const *args;
        const char *err;
    } cases[] = {
        {ARGS("rm"), "vyre-bench: error: which runs? nothing was removed\n"
                     "hint: give run ids, 'last', 'last-N', or --failed\n"
                     "try 'vyre-bench rm --help'\n"},
        {ARGS("rm", "--failed", "1"), "vyre-bench: error: --failed and run ids cannot be combined\n"
                                      "hint: give run ids, or --failed alone\n"
                                      "try 'vyre-bench rm --help'\n"},
    };
    tu_proc p;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bench(&p, cases[i].args);
        cr_expect_eq(p.exit_code, 2);
        cr_expect_str_eq(p.err, cases[i].err);
        tu_proc_free(&p);
    }
    bench(&p, ARGS("rm", "--db", g_db, id, "last"));
    cr_expect_eq(p.exit_code, 2);
    char want[256];
    snprintf(want, sizeof want,
             "vyre-bench: error: run %lld is named twice\nhint: name each run once\n",
             (long long)a);
    cr_expect_str_eq(p.err, want);
    tu_proc_free(&p);
    cr_expect_eq(rows_of(a), 15);
}
