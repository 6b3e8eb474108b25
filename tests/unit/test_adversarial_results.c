/*
 * test_adversarial_results.c - the results database under attack: symlinks
 * and odd files where the database or SQLite's -wal, -journal and -shm files
 * go, a database another process keeps locked for 30 s, a read-only file or
 * directory, a full file system. Each case states its expected outcome and
 * checks that nothing outside its own temp folder changed and that nothing
 * already stored was lost.
 *
 * The busy cases wait for the real busy timeout (VYRE_RESULTS_BUSY_TIMEOUT_MS,
 * 10 s): the bound is what they check. The read-only cases need a user the
 * files are read-only for: as root (CI) a child drops to uid 65534, as
 * another user chmod is enough. The full file system is both RLIMIT_FSIZE
 * in a child (as the cache's tests do) and a real 1 MiB tmpfs, mounted in
 * the test process's own mount namespace (root only: CI runs as root; other
 * users see the test skipped with the reason).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/results_internal.h"
#include "testutil.h"
#include "vyre/bench.h"
#include "vyre/results.h"

#define NOBODY 65534
/* How far past the busy timeout a busy error may come: slack for a loaded,
 * sanitized CI machine, not a measurement. */
#define BUSY_MARGIN_MS 15000
#define LOCK_HOLD_MS   30000

static char g_dir[PATH_MAX];
static char g_db[PATH_MAX];
static char g_mnt[PATH_MAX]; /* a tmpfs this test process mounted, or "" */

static void join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < size, "path too long");
}

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    join(g_db, sizeof g_db, g_dir, "results.sqlite3");
}

static void teardown(void)
{
    /* The mount lives in this process's own namespace: detach it so that
     * the folder under it can go. */
    if (g_mnt[0])
        umount2(g_mnt, MNT_DETACH);
    g_mnt[0] = '\0';
    tu_rm_rf(g_dir);
}

TestSuite(adversarial_results, .init = setup, .fini = teardown);

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static vyre_activity kernel(int i)
{
    vyre_activity a;
    memset(&a, 0, sizeof a);
    a.kind = VYRE_ACTIVITY_KERNEL;
    snprintf(a.name, sizeof a.name, "adv_kernel_%d", i % 5);
    a.start_ns = 1000000u + (uint64_t)i * 100u;
    a.end_ns = a.start_ns + 50u;
    a.grid[0] = a.grid[1] = a.grid[2] = 1;
    a.block[0] = 64;
    a.block[1] = a.block[2] = 1;
    a.correlation_id = (uint32_t)i + 1;
    return a;
}

/* Opens path, stores n kernel rows, closes. */
static void store_rows(const char *path, int n)
{
    vyre_results *db = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_results_open(path, &db, &e), VYRE_OK, "%s", e.message);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, &e), VYRE_OK, "%s", e.message);
    for (int i = 0; i < n; i++) {
        vyre_activity a = kernel(i);
        cr_assert_eq(vyre_results_writer_add(w, &a, 1, &e), VYRE_OK, "%s", e.message);
    }
    cr_assert_eq(vyre_results_writer_flush(w, &e), VYRE_OK, "%s", e.message);
    vyre_results_writer_free(w);
    vyre_results_close(db);
}

/* One integer from a read-only raw connection. */
static long long raw_int(const char *path, const char *sql)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(raw, 5000);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(raw, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(raw));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(raw));
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return v;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(raw, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql,
                 msg ? msg : "");
    sqlite3_close(raw);
}

static int integrity_ok(const char *path)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    int ok = sqlite3_step(st) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return ok;
}

static void expect_error(int rc, const vyre_error *e, int code, const char *in_message)
{
    cr_assert_eq(rc, code, "got %s (%s), want %s", vyre_err_name(rc), e->message,
                 vyre_err_name(code));
    cr_assert_not_null(strstr(e->message, in_message), "message '%s' lacks '%s'", e->message,
                       in_message);
    cr_assert_neq(e->hint[0], '\0', "no hint with '%s'", e->message);
}

/* ---- symlinks and odd files --------------------------------------------- */

/* Expected: a database path that is a symlink (to a vyre database, or
 * dangling) is refused, EUNSAFE "is a symlink" with a hint; the target is
 * neither changed nor created. */
Test(adversarial_results, symlink_as_the_database_is_not_followed)
{
    char target[PATH_MAX], dangling[PATH_MAX];
    join(target, sizeof target, g_dir, "real.sqlite3");
    store_rows(target, 3);
    size_t len0 = 0, len1 = 0;
    char *before = tu_read_file(target, &len0);
    cr_assert_eq(symlink(target, g_db), 0);

    vyre_results *db = NULL;
    vyre_error e = {0};
    expect_error(vyre_results_open(g_db, &db, &e), &e, VYRE_EUNSAFE, "is a symlink");
    cr_assert_null(db);
    char *after = tu_read_file(target, &len1);
    cr_assert(len0 == len1 && memcmp(before, after, len0) == 0, "the target is unchanged");

    join(dangling, sizeof dangling, g_dir, "nowhere.sqlite3");
    cr_assert_eq(unlink(g_db), 0);
    cr_assert_eq(symlink(dangling, g_db), 0);
    expect_error(vyre_results_open(g_db, &db, &e), &e, VYRE_EUNSAFE, "is a symlink");
    cr_assert_neq(access(dangling, F_OK), 0, "the link's target was not created");
    free(before);
    free(after);
}

/* Expected: for each of -wal, -journal and -shm, a symlink in its place (to
 * a file of ours, or dangling) or a FIFO makes the open fail before SQLite
 * touches anything: EUNSAFE naming the file, a hint; the database, the
 * link's target and its absence are unchanged. */
Test(adversarial_results, symlink_or_fifo_as_a_sqlite_side_file_is_refused)
{
    store_rows(g_db, 5);
    static const char *const suffixes[] = {"-wal", "-journal", "-shm"};
    char victim[PATH_MAX], missing[PATH_MAX], side[PATH_MAX + 16];
    join(victim, sizeof victim, g_dir, "victim.txt");
    tu_write_file(victim, "precious", 8);
    join(missing, sizeof missing, g_dir, "missing");
    size_t len0 = 0;
    char *db_before = tu_read_file(g_db, &len0);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(side, sizeof side, "%s%s", g_db, suffixes[i]);
        const char *targets[] = {victim, missing};
        for (int t = 0; t < 2; t++) {
            cr_assert_eq(symlink(targets[t], side), 0);
            vyre_results *db = NULL;
            vyre_error e = {0};
            int rc = vyre_results_open(g_db, &db, &e);
            expect_error(rc, &e, VYRE_EUNSAFE, "is a symlink");
            cr_assert_not_null(strstr(e.message, suffixes[i]), "%s", e.message);
            cr_assert_eq(unlink(side), 0);
        }
        cr_assert_eq(mkfifo(side, 0600), 0);
        vyre_results *db = NULL;
        vyre_error e = {0};
        expect_error(vyre_results_open(g_db, &db, &e), &e, VYRE_EUNSAFE, "not a regular file");
        cr_assert_eq(unlink(side), 0);
    }
    size_t len = 0;
    char *v = tu_read_file(victim, &len);
    cr_assert(len == 8 && memcmp(v, "precious", 8) == 0, "the link target is unchanged");
    cr_assert_neq(access(missing, F_OK), 0, "the dangling target was not created");
    char *db_after = tu_read_file(g_db, &len);
    cr_assert(len == len0 && memcmp(db_before, db_after, len) == 0, "the database is unchanged");
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 5);
    free(v);
    free(db_before);
    free(db_after);
}

/* ---- locked by another process ------------------------------------------ */

/* Child: holds BEGIN EXCLUSIVE on path, says so on `ready`, and keeps it
 * until `release` is readable or LOCK_HOLD_MS pass. */
static int locker(const char *path, int ready, int release)
{
    sqlite3 *raw = NULL;
    if (sqlite3_open_v2(path, &raw, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        return 30;
    if (sqlite3_exec(raw, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK)
        return 31;
    if (sqlite3_exec(raw, "INSERT INTO meta (name, value) VALUES ('locker', 1)", NULL, NULL,
                     NULL) != SQLITE_OK)
        return 32;
    if (write(ready, "L", 1) != 1)
        return 33;
    struct pollfd p = {.fd = release, .events = POLLIN};
    while (poll(&p, 1, LOCK_HOLD_MS) < 0 && errno == EINTR)
        continue;
    if (sqlite3_exec(raw, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return 34;
    sqlite3_close(raw);
    return 0;
}

typedef struct lock_child {
    pid_t pid;
    int release; /* write end */
} lock_child;

static lock_child lock_db(const char *path)
{
    int ready[2], release[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(release), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(ready[0]);
        close(release[1]);
        _exit(locker(path, ready[1], release[0]));
    }
    close(ready[1]);
    close(release[0]);
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1, "the locking child did not take the lock");
    close(ready[0]);
    return (lock_child){pid, release[1]};
}

static void unlock_db(lock_child *l)
{
    cr_assert_eq(write(l->release, "R", 1), 1);
    close(l->release);
    int st = 0;
    cr_assert_eq(waitpid(l->pid, &st, 0), l->pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "locking child failed: status %d", st);
}

static void expect_bounded_busy(int rc, const vyre_error *e, int64_t waited_ms)
{
    expect_error(rc, e, VYRE_EBUSY, "waited 10000 ms for the lock");
    cr_assert_not_null(strstr(e->hint, "retry"), "%s", e->hint);
    /* It waited for the lock, and no longer than its bound. */
    cr_assert_geq(waited_ms, VYRE_RESULTS_BUSY_TIMEOUT_MS - 500, "gave up after %lld ms",
                  (long long)waited_ms);
    cr_assert_leq(waited_ms, VYRE_RESULTS_BUSY_TIMEOUT_MS + BUSY_MARGIN_MS, "waited %lld ms",
                  (long long)waited_ms);
}

/* Expected (WAL, the local default): the database opens (readers are not
 * blocked), a flush gives EBUSY after the bounded wait with the wait in
 * the message and a hint; the rows stay pending and are written once the
 * lock is released; nothing stored before is lost. */
Test(adversarial_results, locked_for_30s_insert_fails_busy_within_the_bound)
{
    store_rows(g_db, 4);
    lock_child l = lock_db(g_db);
    vyre_results *db = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_results_open(g_db, &db, &e), VYRE_OK, "%s", e.message);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, &e), VYRE_OK, "%s", e.message);
    vyre_activity a = kernel(100);
    cr_assert_eq(vyre_results_writer_add(w, &a, 1, &e), VYRE_OK, "%s", e.message);
    int64_t t0 = mono_ms();
    int rc = vyre_results_writer_flush(w, &e);
    expect_bounded_busy(rc, &e, mono_ms() - t0);
    vyre_results_writer_stats st;
    vyre_results_writer_stats_get(w, &st);
    cr_assert_eq(st.rows_pending, 1, "the row is kept for the next flush");

    unlock_db(&l);
    cr_assert_eq(vyre_results_writer_flush(w, &e), VYRE_OK, "%s", e.message);
    vyre_results_writer_free(w);
    vyre_results_close(db);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 5);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM meta WHERE name = 'locker'"), 1);
    cr_assert(integrity_ok(g_db));
}

/* Expected (rollback journal, as on network file systems, where an
 * exclusive lock also blocks readers): the open itself gives EBUSY after
 * the bounded wait, message and hint; the file is unchanged by it. */
Test(adversarial_results, locked_for_30s_open_fails_busy_within_the_bound)
{
    store_rows(g_db, 4);
    raw_exec(g_db, "PRAGMA journal_mode=DELETE");
    lock_child l = lock_db(g_db);
    vyre_results *db = NULL;
    vyre_error e = {0};
    int64_t t0 = mono_ms();
    int rc = vyre_results_open(g_db, &db, &e);
    expect_bounded_busy(rc, &e, mono_ms() - t0);
    cr_assert_null(db);
    unlock_db(&l);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 4);
    cr_assert(integrity_ok(g_db));
}

/* Expected: `vyre-bench run` on a database locked for 30 s stops after the
 * bounded wait with exit 2, "vyre-bench: error: ... waited 10000 ms for the
 * lock" and a hint; nothing of the run is stored. */
Test(adversarial_results, locked_for_30s_vyre_bench_exits_2_with_a_hint)
{
    if (access(VYRE_BENCH_BIN, X_OK) != 0)
        cr_skip_test("vyre-bench is not built (%s); build all targets", VYRE_BENCH_BIN);
    store_rows(g_db, 2);
    lock_child l = lock_db(g_db);
    char home[PATH_MAX + 8], tmp[PATH_MAX + 8], xdg[PATH_MAX + 32], data[PATH_MAX + 32];
    snprintf(home, sizeof home, "HOME=%s", g_dir);
    snprintf(tmp, sizeof tmp, "TMPDIR=%s", g_dir);
    snprintf(xdg, sizeof xdg, "XDG_CACHE_HOME=%s/xdg", g_dir);
    snprintf(data, sizeof data, "XDG_DATA_HOME=%s/data", g_dir);
    const char *env[] = {home,
                         tmp,
                         xdg,
                         data,
                         "VYRE_CUDA_LIBRARY=/nonexistent",
                         "VYRE_NVML_LIBRARY=/nonexistent",
                         "NVTX_INJECTION64_PATH",
                         NULL};
    const char *args[] = {VYRE_BENCH_BIN,  "run", "--suite",    "cache", "--db", g_db,
                          "--min-samples", "3",   "--min-time", "0",     "-q",   NULL};
    char *argv[sizeof args / sizeof args[0]];
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++)
        argv[i] = args[i] ? strdup(args[i]) : NULL;
    tu_proc p;
    int64_t t0 = mono_ms();
    tu_run(&p, argv, env);
    int64_t waited = mono_ms() - t0;
    for (size_t i = 0; argv[i]; i++)
        free(argv[i]);
    cr_assert_eq(p.exit_code, 2, "exit %d; stderr: %s", p.exit_code, p.err);
    cr_assert_not_null(strstr(p.err, "vyre-bench: error: "), "%s", p.err);
    cr_assert_not_null(strstr(p.err, "waited 10000 ms for the lock"), "%s", p.err);
    cr_assert_not_null(strstr(p.err, "hint: "), "%s", p.err);
    cr_assert_leq(waited, VYRE_RESULTS_BUSY_TIMEOUT_MS + BUSY_MARGIN_MS, "took %lld ms",
                  (long long)waited);
    tu_proc_free(&p);
    unlock_db(&l);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM runs"), 0, "no run row was stored");
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 2);
}

/* ---- read-only file or directory ---------------------------------------- */

enum { RO_OK = 0, RO_SETUID = 40, RO_FILE, RO_FILE_MSG, RO_DIR_NEW, RO_DIR_MSG, RO_DIR_OLD };

/* Opens and writes in the read-only places; returns RO_OK when each failed
 * as expected, else the step that did not (its detail on stderr). */
static int readonly_cases(const char *ro_file_db, const char *ro_dir)
{
    vyre_error e;
    vyre_error_clear(&e);
    /* A read-only file of a writable directory: reading works, writing is
     * EROFS with a hint. */
    vyre_results *db = NULL;
    int rc = vyre_results_open(ro_file_db, &db, &e);
    if (rc == VYRE_OK) {
        vyre_results_writer *w = NULL;
        vyre_activity a = kernel(7);
        if (vyre_results_writer_new(db, 0, &w, &e) == VYRE_OK &&
            vyre_results_writer_add(w, &a, 1, &e) == VYRE_OK)
            rc = vyre_results_writer_flush(w, &e);
        vyre_results_writer_free(w);
        vyre_results_close(db);
    }
    if (rc != VYRE_EROFS) {
        fprintf(stderr, "read-only file: %s: %s\n", vyre_err_name(rc), e.message);
        return RO_FILE;
    }
    if (!strstr(e.message, ro_file_db) || !strstr(e.message, "read-only for uid") ||
        !strstr(e.hint, "writable")) {
        fprintf(stderr, "read-only file: message '%s' hint '%s'\n", e.message, e.hint);
        return RO_FILE_MSG;
    }
    /* A new database in a read-only directory. */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/new.sqlite3", ro_dir);
    vyre_error_clear(&e);
    rc = vyre_results_open(path, &db, &e);
    if (rc != VYRE_EPERM && rc != VYRE_EROFS) {
        fprintf(stderr, "read-only dir, new file: %s: %s\n", vyre_err_name(rc), e.message);
        if (rc == VYRE_OK)
            vyre_results_close(db);
        return RO_DIR_NEW;
    }
    if (!strstr(e.message, path) || !strstr(e.message, "is not writable") ||
        !strstr(e.hint, "writable directory")) {
        fprintf(stderr, "read-only dir: message '%s' hint '%s'\n", e.message, e.hint);
        return RO_DIR_MSG;
    }
    /* A writable database in a read-only directory, where SQLite cannot
     * create its -wal, -shm or -journal file: EROFS, on the open or on the
     * first write, with the path and a hint. */
    snprintf(path, sizeof path, "%s/old.sqlite3", ro_dir);
    vyre_error_clear(&e);
    rc = vyre_results_open(path, &db, &e);
    if (rc == VYRE_OK) {
        vyre_results_writer *w = NULL;
        vyre_activity a = kernel(8);
        if (vyre_results_writer_new(db, 0, &w, &e) == VYRE_OK &&
            vyre_results_writer_add(w, &a, 1, &e) == VYRE_OK)
            rc = vyre_results_writer_flush(w, &e);
        vyre_results_writer_free(w);
        vyre_results_close(db);
    }
    if (rc != VYRE_EROFS || !strstr(e.message, path) || !strstr(e.hint, "writable")) {
        fprintf(stderr, "read-only dir, old file: %s: '%s' hint '%s'\n", vyre_err_name(rc),
                e.message, e.hint);
        return RO_DIR_OLD;
    }
    return RO_OK;
}

/* Expected: a read-only database file opens (reading works) and fails
 * writes with EROFS, the path and "read-only for uid" in the message, a
 * hint to make it writable; a read-only directory fails a new database
 * with EPERM ("directory ... is not writable") before SQLite runs, and an
 * existing one with EROFS; no row stored before is lost, no file appears. */
Test(adversarial_results, readonly_file_and_directory_fail_with_a_message)
{
    char rw_dir[PATH_MAX], ro_dir[PATH_MAX], ro_file_db[PATH_MAX], old_db[PATH_MAX];
    join(rw_dir, sizeof rw_dir, g_dir, "rw");
    join(ro_dir, sizeof ro_dir, g_dir, "ro");
    cr_assert_eq(mkdir(rw_dir, 0755), 0);
    cr_assert_eq(mkdir(ro_dir, 0755), 0);
    join(ro_file_db, sizeof ro_file_db, rw_dir, "results.sqlite3");
    join(old_db, sizeof old_db, ro_dir, "old.sqlite3");
    store_rows(ro_file_db, 3);
    store_rows(old_db, 3);
    cr_assert_eq(chmod(ro_file_db, 0444), 0);
    cr_assert_eq(chmod(g_dir, 0755), 0);

    int code;
    if (geteuid() == 0) {
        /* Read-only for nobody: the directory rw and the old database are
         * nobody's, the rest root's. */
        cr_assert_eq(chown(rw_dir, NOBODY, NOBODY), 0);
        cr_assert_eq(chown(old_db, NOBODY, NOBODY), 0);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
                _exit(RO_SETUID);
            _exit(readonly_cases(ro_file_db, ro_dir));
        }
        int st = 0;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    } else {
        cr_assert_eq(chmod(ro_dir, 0555), 0);
        code = readonly_cases(ro_file_db, ro_dir);
        cr_assert_eq(chmod(ro_dir, 0755), 0);
    }
    cr_assert_eq(code, RO_OK, "read-only case failed at step %d (see stderr)", code);
    cr_assert_eq(raw_int(ro_file_db, "SELECT count(*) FROM timings"), 3);
    cr_assert_eq(raw_int(old_db, "SELECT count(*) FROM timings"), 3);
    char path[PATH_MAX];
    join(path, sizeof path, ro_dir, "new.sqlite3");
    cr_assert_neq(access(path, F_OK), 0, "nothing was created in the read-only directory");
}

/* ---- full file system ---------------------------------------------------- */

enum { FULL_OK = 0, FULL_RLIMIT = 50, FULL_OPEN, FULL_CODE, FULL_MSG };

#define FULL_ROWS 20000

/* Child: files may not grow past `limit`; SIGXFSZ is ignored so a write
 * fails with EFBIG instead of killing the process. */
static int full_child(const char *path, rlim_t limit)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return FULL_RLIMIT;
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_results_open(path, &db, &e);
    if (rc) {
        fprintf(stderr, "full: open: %s: %s\n", vyre_err_name(rc), e.message);
        return FULL_OPEN;
    }
    vyre_results_writer *w = NULL;
    if (vyre_results_writer_new(db, 0, &w, &e) != VYRE_OK)
        return FULL_OPEN;
    for (int i = 0; i < FULL_ROWS && rc == VYRE_OK; i++) {
        vyre_activity a = kernel(1000 + i);
        rc = vyre_results_writer_add(w, &a, 1, &e);
    }
    if (rc == VYRE_OK)
        rc = vyre_results_writer_flush(w, &e);
    vyre_results_writer_free(w);
    vyre_results_close(db);
    if (rc != VYRE_ENOSPC) {
        fprintf(stderr, "full: %s: %s\n", vyre_err_name(rc), e.message);
        return FULL_CODE;
    }
    if (!strstr(e.message, g_db) || !strstr(e.hint, "free space")) {
        fprintf(stderr, "full: message '%s' hint '%s'\n", e.message, e.hint);
        return FULL_MSG;
    }
    return FULL_OK;
}

/* Expected: with no room to grow (RLIMIT_FSIZE a little past the file),
 * storing many rows fails with ENOSPC, the path in the message and a hint
 * to free space; every row stored before is still there and the database
 * passes integrity_check. */
Test(adversarial_results, full_file_system_fails_cleanly_and_loses_nothing)
{
    store_rows(g_db, 10);
    struct stat sb;
    cr_assert_eq(stat(g_db, &sb), 0);
    rlim_t limit = (rlim_t)sb.st_size + (64 << 10);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(full_child(g_db, limit));
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == FULL_OK, "full-disk child: status %d", st);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 10, "stored rows are kept");
    cr_assert(integrity_ok(g_db));
    /* And the database takes rows again once there is room. */
    store_rows(g_db, 1);
    cr_assert_eq(raw_int(g_db, "SELECT count(*) FROM timings"), 11);
}

/* Expected: on a real, small file system (a 1 MiB tmpfs) that fills up
 * while rows are stored, the write fails with ENOSPC naming the database
 * with a hint to free space, within a bounded number of rows (no endless
 * retry); the rows stored before are all there and the database passes
 * integrity_check; once space is freed it takes rows again. */
Test(adversarial_results, full_tmpfs_fails_cleanly_and_loses_nothing)
{
    if (geteuid() != 0)
        cr_skip_test("mounting a tmpfs needs root (CI runs as root)");
    /* A mount namespace of this test process only, private so that nothing
     * propagates to the machine's own mounts. */
    if (unshare(CLONE_NEWNS) != 0)
        cr_skip_test("no mount namespace here (%s): cannot mount a tmpfs", strerror(errno));
    cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "%s", strerror(errno));
    join(g_mnt, sizeof g_mnt, g_dir, "small");
    cr_assert_eq(mkdir(g_mnt, 0700), 0);
    if (mount("tmpfs", g_mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") != 0) {
        int e = errno;
        g_mnt[0] = '\0';
        cr_skip_test("cannot mount a tmpfs here: %s", strerror(e));
    }
    char db_path[PATH_MAX];
    join(db_path, sizeof db_path, g_mnt, "results.sqlite3");
    store_rows(db_path, 10);

    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(db_path, &db, &e), VYRE_OK, "%s", e.message);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, &e), VYRE_OK, "%s", e.message);
    /* 1 MiB holds a few thousand rows: 200000 is far past full. */
    int rc = VYRE_OK, i;
    for (i = 0; i < 200000 && rc == VYRE_OK; i++) {
        vyre_activity a = kernel(1000 + i);
        rc = vyre_results_writer_add(w, &a, 1, &e);
    }
    if (rc == VYRE_OK)
        rc = vyre_results_writer_flush(w, &e);
    vyre_results_writer_free(w);
    vyre_results_close(db);
    expect_error(rc, &e, VYRE_ENOSPC, db_path);
    cr_assert_not_null(strstr(e.hint, "free space"), "hint '%s'", e.hint);
    cr_assert_lt(i, 200000, "the writer never noticed the full file system");

    long long kept = raw_int(db_path, "SELECT count(*) FROM timings");
    cr_assert_geq(kept, 10, "stored rows are kept (%lld)", kept);
    cr_assert(integrity_ok(db_path));

    /* Room again: the WAL and any leftovers go when the last connection
     * closes; a fresh open stores a row. */
    store_rows(db_path, 1);
    cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM timings"), kept + 1);
}
