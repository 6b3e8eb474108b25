/*
 * test_bounded_cli.c - nothing a user hands the tools makes them wait
 * forever or run foreign code:
 *   - a FIFO given to `vyre-cachectl seed` or as a sweep spec's "kernel"
 *     is refused at once (seen: blocked forever in open), and one inside
 *     a directory given to seed is passed over;
 *   - an index with a trigger vyre did not create (the reported
 *     `CREATE TRIGGER evil AFTER INSERT ON blobs BEGIN <recursive CTE>
 *     END` hung every put) is refused by seed and reported by verify,
 *     naming the trigger, and reindex replaces it.
 * Each run is under an alarm, so a regression fails instead of hanging.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char g_dir[512];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(bounded_cli, .init = setup, .fini = teardown);

#define RUN_ALARM_S 20

/* Runs bin with args (NULL-terminated) under an alarm of RUN_ALARM_S s:
 * stdout and stderr into p (malloc'ed), exit code, or 128 + the signal
 * (142: the alarm, it blocked). */
static void run_alarm(tu_proc *p, const char *bin, const char *const *args)
{
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/.out", g_dir);
    snprintf(err, sizeof err, "%s/.err", g_dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char *argv[32];
        int n = 0;
        argv[n++] = strdup(bin); /* the child execs or exits: not freed */
        for (; args[n - 1] && n < 31; n++)
            argv[n] = strdup(args[n - 1]);
        argv[n] = NULL;
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || dup2(in, 0) < 0)
            _exit(127);
        unsetenv("VYRE_REMOTE_CACHE");
        alarm(RUN_ALARM_S); /* kept across exec */
        execv(bin, argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    p->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    size_t len = 0;
    p->out = tu_read_file(out, &len);
    p->err = tu_read_file(err, &len);
    cr_assert(p->out && p->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A stand-in cubin: seed stores a .cubin as is, no compiler needed. */
static void write_cubin(const char *path, char tag)
{
    char cubin[] = "\x7f"
                   "ELF\x02\x01\x01\x00 a stand-in cubin ?";
    cubin[sizeof cubin - 2] = tag;
    tu_write_file(path, cubin, sizeof cubin - 1);
}

Test(bounded_cli, seed_refuses_a_fifo_at_once)
{
    char cache[600], fifo[600], dir[600], inner[700], good[700];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    snprintf(fifo, sizeof fifo, "%s/k.ptx", g_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    tu_proc p;
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "seed", fifo, "--arch", "sm_90"));
    cr_assert_eq(p.exit_code, 2, "exit %d (142: it blocked)\n%s%s", p.exit_code, p.out, p.err);
    cr_assert(strstr(p.err, "it is a FIFO, not a regular file"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: give a regular file"), "%s", p.err);
    tu_proc_free(&p);

    /* Inside a directory: the walk takes regular files only, so the FIFO
     * is passed over and the cubin beside it seeded. */
    snprintf(dir, sizeof dir, "%s/mods", g_dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(inner, sizeof inner, "%s/a.cubin", dir);
    snprintf(good, sizeof good, "%s/b.cubin", dir);
    cr_assert_eq(mkfifo(inner, 0600), 0);
    write_cubin(good, 'b');
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "seed", dir, "--arch", "sm_90"));
    cr_assert_eq(p.exit_code, 0, "exit %d (142: it blocked)\n%s%s", p.exit_code, p.out, p.err);
    cr_assert(tu_has_line(p.out, "Seeded 1 module (0 kernels), already present 0, failed 0"), "%s",
              p.out);
    tu_proc_free(&p);
}

Test(bounded_cli, a_spec_kernel_that_is_a_fifo_is_refused_at_once)
{
    char fifo[600], spec[600];
    snprintf(fifo, sizeof fifo, "%s/k.cu", g_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(spec, sizeof spec, "%s/spec.json", g_dir);
    const char text[] = "{\"kernel\": \"k.cu\", \"entry\": \"f\", \"axes\": {\"N\": 1024},\n"
                        " \"args\": [{\"float\": 1}, {\"buffer\": \"N\"}, {\"int\": \"N\"}],\n"
                        " \"grid\": \"N\", \"block\": 256}\n";
    tu_write_file(spec, text, sizeof text - 1);
    char home[600];
    snprintf(home, sizeof home, "%s/home", g_dir);
    cr_assert_eq(mkdir(home, 0700), 0);
    setenv("HOME", home, 1);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("XDG_DATA_HOME");
    setenv("VYRE_CUDA_LIBRARY", "/nonexistent", 1);
    setenv("VYRE_NVML_LIBRARY", "/nonexistent", 1);
    tu_proc p;
    run_alarm(&p, VYRE_BENCH_BIN, ARGS("run", "--spec", spec, "--dry-run"));
    cr_assert_eq(p.exit_code, 2, "exit %d (142: it blocked)\n%s%s", p.exit_code, p.out, p.err);
    char want[800];
    snprintf(want, sizeof want, "cannot read '%s': it is a FIFO, not a regular file", fifo);
    cr_assert(strstr(p.err, want), "%s", p.err);
    tu_proc_free(&p);
}

/* Counts to 10^8 on every insert into blobs. */
#define EVIL_TRIGGER                                                                               \
    "CREATE TRIGGER evil AFTER INSERT ON blobs BEGIN SELECT count(*) FROM (WITH RECURSIVE "        \
    "r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 100000000) SELECT x FROM r); END"

Test(bounded_cli, an_index_with_a_foreign_trigger_is_refused_and_reported)
{
    char cache[600], a[600], b[600], index[700];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    snprintf(a, sizeof a, "%s/a.cubin", g_dir);
    snprintf(b, sizeof b, "%s/b.cubin", g_dir);
    snprintf(index, sizeof index, "%s/index.sqlite3", cache);
    write_cubin(a, 'a');
    write_cubin(b, 'b');
    tu_proc p;
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "seed", a, "--arch", "sm_90"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(index, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, EVIL_TRIGGER, NULL, NULL, NULL), SQLITE_OK, "%s",
                 sqlite3_errmsg(db));
    sqlite3_close(db);

    char want[1400];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: index '%s' does not have the expected schema: it has the "
             "trigger 'evil' on table 'blobs', which vyre did not create\n",
             index);
    /* A put is refused, not run for minutes. */
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "seed", b, "--arch", "sm_90"));
    cr_assert_eq(p.exit_code, 2, "exit %d (142: it hung)\n%s%s", p.exit_code, p.out, p.err);
    cr_assert(strstr(p.err, want), "%s", p.err);
    cr_assert(strstr(p.err, "vyre-cachectl reindex"), "%s", p.err);
    tu_proc_free(&p);
    /* verify names it. */
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "verify"));
    cr_assert_neq(p.exit_code, 0, "verify said clean:\n%s", p.out);
    cr_assert(strstr(p.err, want) || strstr(p.out, "trigger 'evil'"), "%s%s", p.out, p.err);
    tu_proc_free(&p);
    /* reindex rebuilds it from the blobs; the seed then goes through. */
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "reindex"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "seed", b, "--arch", "sm_90"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
    run_alarm(&p, VYRE_CACHECTL_BIN, ARGS("--cache-dir", cache, "verify"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
}
