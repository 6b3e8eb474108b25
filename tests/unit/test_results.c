/*
 * test_results.c - the results database (libcore/src/bench/results.c, schema
 * db/results_v1.sql): schema creation and reopening, version refusal, the
 * default path, batching of timings rows (proved from a second
 * connection), row contents, and foreign, damaged or newer files refused
 * and left byte-for-byte as they were.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/results_internal.h"
#include "bench/store_url.h"
#include "testutil.h"
#include "vyre/cupti.h"
#include "vyre/results.h"

static char g_dir[512];
static char g_path[600];
static char *g_saved_xdg, *g_saved_home;

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_path, sizeof g_path, "%s/results.sqlite3", g_dir);
    const char *x = getenv("XDG_DATA_HOME"), *h = getenv("HOME");
    g_saved_xdg = x ? strdup(x) : NULL;
    g_saved_home = h ? strdup(h) : NULL;
}

static void teardown(void)
{
    if (g_saved_xdg)
        setenv("XDG_DATA_HOME", g_saved_xdg, 1);
    else
        unsetenv("XDG_DATA_HOME");
    if (g_saved_home)
        setenv("HOME", g_saved_home, 1);
    else
        unsetenv("HOME");
    free(g_saved_xdg);
    free(g_saved_home);
    tu_rm_rf(g_dir);
}

TestSuite(results, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ------------------------------------------------------------------ */

static vyre_results *open_ok(const char *path)
{
    vyre_results *db = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_results_open(path, &db, &e);
    cr_assert_eq(rc, 0, "open '%s': %s: %s (hint: %s)", path ? path : "(default)",
                 vyre_err_name(rc), e.message, e.hint);
    cr_assert_not_null(db);
    return db;
}

/* A second, independent connection, as another process would have. */
static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                 SQLITE_OK);
    return db;
}

static long long raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static long long count_rows(const char *path)
{
    sqlite3 *db = raw_open(path);
    long long n = raw_int(db, "SELECT count(*) FROM timings");
    sqlite3_close(db);
    return n;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = raw_open(path);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

static vyre_activity kernel(int i)
{
    vyre_activity a;
    memset(&a, 0, sizeof a);
    a.kind = VYRE_ACTIVITY_KERNEL;
    snprintf(a.name, sizeof a.name, "kernel_%d", i % 7);
    a.start_ns = 1000000u + (uint64_t)i * 100u;
    a.end_ns = a.start_ns + 40u + (uint64_t)(i % 5);
    a.grid[0] = 64;
    a.grid[1] = 2;
    a.grid[2] = 1;
    a.block[0] = 128;
    a.block[1] = 1;
    a.block[2] = 1;
    a.stream_id = 7;
    a.device_id = 0;
    a.correlation_id = (uint32_t)i + 1;
    return a;
}

/* The file's exact bytes, to prove a refused file was not touched. */
static char *snapshot(const char *path, size_t *len)
{
    char *data = tu_read_file(path, len);
    cr_assert_not_null(data, "cannot read '%s'", path);
    return data;
}

static void expect_untouched(const char *path, const char *before, size_t before_len)
{
    size_t len = 0;
    char *now = snapshot(path, &len);
    cr_assert_eq(len, before_len, "'%s' changed size: %zu -> %zu", path, before_len, len);
    cr_assert_eq(memcmp(now, before, len), 0, "'%s' was modified", path);
    free(now);
    char side[700];
    snprintf(side, sizeof side, "%s-wal", path);
    cr_assert_neq(access(side, F_OK), 0, "'%s' was left behind", side);
    snprintf(side, sizeof side, "%s-journal", path);
    cr_assert_neq(access(side, F_OK), 0, "'%s' was left behind", side);
}

/* ---- schema --------------------------------------------------------------------- */

Test(results, creates_schema_v1)
{
    vyre_results *db = open_ok(g_path);
    cr_assert_str_eq(vyre_results_path(db), g_path);
    vyre_results_close(db);

    sqlite3 *raw = raw_open(g_path);
    cr_assert_eq(raw_int(raw, "PRAGMA user_version"), VYRE_RESULTS_SCHEMA_VERSION);
    cr_assert_eq(raw_int(raw, "PRAGMA application_id"), VYRE_RESULTS_APPLICATION_ID);
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                              "name IN ('timings', 'meta')"),
                 2);
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM meta WHERE name = 'schema' AND "
                              "value = 'vyre results'"),
                 1);
    cr_assert_gt(raw_int(raw, "SELECT value FROM meta WHERE name = 'created_ns'"), 0);
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM timings"), 0);
    /* The kind column is constrained. */
    cr_assert_neq(sqlite3_exec(raw,
                               "INSERT INTO timings (host, pid, session_ns, kind, name, start_ns, "
                               "end_ns, duration_ns, created_ns) VALUES ('h', 1, 1, 'bogus', "
                               "'n', 0, 0, 0, 0)",
                               NULL, NULL, NULL),
                  SQLITE_OK);
    sqlite3_close(raw);
}

Test(results, reopening_keeps_rows_and_schema)
{
    vyre_results *db = open_ok(g_path);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, NULL), 0);
    vyre_activity a = kernel(1);
    cr_assert_eq(vyre_results_writer_add(w, &a, 1, NULL), 0);
    cr_assert_eq(vyre_results_writer_flush(w, NULL), 0);
    vyre_results_writer_free(w);
    vyre_results_close(db);

    db = open_ok(g_path);
    vyre_results_close(db);
    cr_assert_eq(count_rows(g_path), 1);
    sqlite3 *raw = raw_open(g_path);
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM meta WHERE name = 'created_ns'"), 1);
    sqlite3_close(raw);
}

Test(results, newer_schema_is_refused_untouched)
{
    vyre_results *db = open_ok(g_path);
    vyre_results_close(db);
    char newer[96];
    snprintf(newer, sizeof newer, "PRAGMA journal_mode=DELETE; PRAGMA user_version=%d",
             VYRE_RESULTS_SCHEMA_VERSION + 1);
    raw_exec(g_path, newer);
    size_t len = 0;
    char *before = snapshot(g_path, &len);

    vyre_error e;
    vyre_error_clear(&e);
    db = NULL;
    cr_assert_eq(vyre_results_open(g_path, &db, &e), VYRE_EVERSION);
    cr_assert_null(db);
    char want[64];
    snprintf(want, sizeof want, "schema version %d, newer than the %d",
             VYRE_RESULTS_SCHEMA_VERSION + 1, VYRE_RESULTS_SCHEMA_VERSION);
    cr_assert(strstr(e.message, want), "%s", e.message);
    cr_assert(strstr(e.message, g_path), "%s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    expect_untouched(g_path, before, len);
    free(before);
}

Test(results, garbage_file_is_refused_untouched)
{
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 131u + 17u);
    tu_write_file(g_path, junk, sizeof junk);
    vyre_error e;
    vyre_error_clear(&e);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_path, &db, &e), VYRE_ECORRUPT);
    cr_assert_null(db);
    cr_assert(strstr(e.message, g_path), "%s", e.message);
    cr_assert(strstr(e.message, "left as it is"), "%s", e.message);
    cr_assert(strstr(e.hint, "never replaces"), "%s", e.hint);
    expect_untouched(g_path, junk, sizeof junk);
}

Test(results, truncated_database_is_refused_untouched)
{
    /* A real results file cut to its first page and a half. */
    vyre_results *db = open_ok(g_path);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, NULL), 0);
    static vyre_activity many[2000];
    for (int i = 0; i < 2000; i++)
        many[i] = kernel(i);
    cr_assert_eq(vyre_results_writer_add(w, many, 2000, NULL), 0);
    vyre_results_writer_free(w);
    vyre_results_close(db);
    raw_exec(g_path, "PRAGMA journal_mode=DELETE");
    size_t len = 0;
    char *full = snapshot(g_path, &len);
    cr_assert_gt(len, 16384u);
    size_t cut = 4096 + 2048;
    tu_write_file(g_path, full, cut);
    free(full);
    char *before = snapshot(g_path, &len);

    vyre_error e;
    vyre_error_clear(&e);
    db = NULL;
    int rc = vyre_results_open(g_path, &db, &e);
    if (rc == 0) {
        /* Opening reads only the header and schema page; the damage shows
         * when the table is written to. Either way the file is not replaced. */
        vyre_results_writer *w2 = NULL;
        cr_assert_eq(vyre_results_writer_new(db, 0, &w2, NULL), 0);
        vyre_activity a = kernel(9);
        cr_assert_eq(vyre_results_writer_add(w2, &a, 1, NULL), 0);
        rc = vyre_results_writer_flush(w2, &e);
        vyre_results_writer_free(w2);
        vyre_results_close(db);
    }
    cr_assert_eq(rc, VYRE_ECORRUPT, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert(strstr(e.hint, "never replaces"), "%s", e.hint);
    size_t after_len = 0;
    char *after = snapshot(g_path, &after_len);
    cr_assert_geq(after_len, (size_t)4096, "the file was truncated further");
    cr_assert_eq(memcmp(after, before, 4096), 0, "the header page was rewritten");
    free(after);
    free(before);
}

Test(results, foreign_databases_are_refused_untouched)
{
    /* Someone else's SQLite file with tables and no user_version. */
    raw_exec(g_path, "PRAGMA journal_mode=DELETE; CREATE TABLE notes (x); "
                     "INSERT INTO notes VALUES ('keep me')");
    size_t len = 0;
    char *before = snapshot(g_path, &len);
    vyre_error e;
    vyre_error_clear(&e);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_path, &db, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "not a vyre results database"), "%s", e.message);
    expect_untouched(g_path, before, len);
    free(before);

    /* The pipeline cache's index: a vyre file, but not this one. */
    char other[700];
    snprintf(other, sizeof other, "%s/index.sqlite3", g_dir);
    raw_exec(other, "PRAGMA journal_mode=DELETE; CREATE TABLE blobs (key); "
                    "PRAGMA user_version=1; PRAGMA application_id=1987670629");
    char *before2 = snapshot(other, &len);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_open(other, &db, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "application_id 0x76797265"), "%s", e.message);
    expect_untouched(other, before2, len);
    free(before2);
}

Test(results, a_directory_is_not_a_database)
{
    vyre_error e;
    vyre_error_clear(&e);
    vyre_results *db = NULL;
    cr_assert_eq(vyre_results_open(g_dir, &db, &e), VYRE_EEXIST);
    cr_assert(strstr(e.message, "not a regular file"), "%s", e.message);
    cr_assert_eq(vyre_results_open("", &db, &e), VYRE_EINVAL);
}

/* ---- default path ------------------------------------------------------------------ */

Test(results, default_path_follows_xdg_then_home)
{
    char xdg[700], want[800], got[1024];
    snprintf(xdg, sizeof xdg, "%s/data", g_dir);
    setenv("XDG_DATA_HOME", xdg, 1);
    cr_assert_eq(vyre__results_default_path(got, sizeof got, NULL), 0);
    snprintf(want, sizeof want, "%s/vyre/results.sqlite3", xdg);
    cr_assert_str_eq(got, want);

    vyre_results *db = open_ok(NULL);
    cr_assert_str_eq(vyre_results_path(db), want);
    vyre_results_close(db);
    struct stat st;
    cr_assert_eq(stat(want, &st), 0);
    char dir[800];
    snprintf(dir, sizeof dir, "%s/vyre", xdg);
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "mode %o", st.st_mode & 0777);

    unsetenv("XDG_DATA_HOME");
    setenv("HOME", g_dir, 1);
    cr_assert_eq(vyre__results_default_path(got, sizeof got, NULL), 0);
    snprintf(want, sizeof want, "%s/.local/share/vyre/results.sqlite3", g_dir);
    cr_assert_str_eq(got, want);

    unsetenv("HOME");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__results_default_path(got, sizeof got, &e), VYRE_EENV);
    cr_assert(strstr(e.hint, "XDG_DATA_HOME"), "%s", e.hint);
}

/* ---- the timings writer ---------------------------------------------------------------- */

Test(results, rows_are_batched_one_transaction_per_flush)
{
    vyre_results *db = open_ok(g_path);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, NULL), 0);

    /* Below the batch size nothing is written... */
    vyre_activity few[10];
    for (int i = 0; i < 10; i++)
        few[i] = kernel(i);
    cr_assert_eq(vyre_results_writer_add(w, few, 10, NULL), 0);
    cr_assert_eq(count_rows(g_path), 0, "rows were written before a flush");
    vyre_results_writer_stats s;
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.rows_added, 10u);
    cr_assert_eq(s.rows_pending, 10u);
    cr_assert_eq(s.flushes, 0u);

    /* ... one flush writes them all, in one transaction. */
    cr_assert_eq(vyre_results_writer_flush(w, NULL), 0);
    cr_assert_eq(count_rows(g_path), 10);
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.flushes, 1u);
    cr_assert_eq(s.rows_written, 10u);
    cr_assert_eq(s.rows_pending, 0u);
    cr_assert_eq(vyre_results_writer_flush(w, NULL), 0, "an empty flush is a no-op");
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.flushes, 1u);

    /* Reaching the batch size flushes by itself, once per add call. */
    static vyre_activity many[VYRE_RESULTS_BATCH + 500];
    for (int i = 0; i < VYRE_RESULTS_BATCH + 500; i++)
        many[i] = kernel(i);
    cr_assert_eq(vyre_results_writer_add(w, many, VYRE_RESULTS_BATCH - 1, NULL), 0);
    cr_assert_eq(count_rows(g_path), 10);
    cr_assert_eq(vyre_results_writer_add(w, many + VYRE_RESULTS_BATCH - 1, 501, NULL), 0);
    cr_assert_eq(count_rows(g_path), 10 + VYRE_RESULTS_BATCH + 500);
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.flushes, 2u);
    cr_assert_eq(s.rows_pending, 0u);

    /* The sink path queues the same way; free flushes what is left. */
    vyre_results_writer_sink(few, 3, w);
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.rows_pending, 3u);
    cr_assert_eq(s.last_error, 0);
    vyre_results_writer_free(w);
    cr_assert_eq(count_rows(g_path), 10 + VYRE_RESULTS_BATCH + 500 + 3);
    vyre_results_close(db);
}

Test(results, rows_hold_the_record)
{
    vyre_results *db = open_ok(g_path);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 12, &w, NULL), 0);
    vyre_activity recs[3];
    recs[0] = kernel(3);
    memset(&recs[1], 0, sizeof recs[1]);
    recs[1].kind = VYRE_ACTIVITY_MEMCPY;
    snprintf(recs[1].name, sizeof recs[1].name, "memcpy_htod");
    recs[1].copy_kind = VYRE_COPY_HTOD;
    recs[1].bytes = 1u << 20;
    recs[1].start_ns = 500;
    recs[1].end_ns = 900;
    recs[1].stream_id = 2;
    memset(&recs[2], 0, sizeof recs[2]);
    recs[2].kind = VYRE_ACTIVITY_RANGE;
    snprintf(recs[2].name, sizeof recs[2].name, "vyre.cuda.pipeline.compile");
    snprintf(recs[2].domain, sizeof recs[2].domain, "vyre");
    recs[2].start_ns = 100;
    recs[2].end_ns = 5000;
    recs[2].payload = 77;
    recs[2].has_payload = 1;
    cr_assert_eq(vyre_results_writer_add(w, recs, 3, NULL), 0);
    cr_assert_eq(vyre_results_writer_flush(w, NULL), 0);
    vyre_results_writer_free(w);
    vyre_results_close(db);

    sqlite3 *raw = raw_open(g_path);
    char host[256] = "";
    gethostname(host, sizeof host);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM timings WHERE kind = 'kernel' AND name = 'kernel_3' AND "
             "run_id = 12 AND pid = %d AND host = '%s' AND start_ns = 1000300 AND "
             "duration_ns = 43 AND grid_x = 64 AND grid_y = 2 AND grid_z = 1 AND block_x = 128 "
             "AND block_y = 1 AND block_z = 1 AND stream = 7 AND device = 0 AND bytes IS NULL "
             "AND domain IS NULL AND correlation = 4 AND session_ns > 0 AND created_ns > 0",
             (int)getpid(), host);
    cr_assert_eq(raw_int(raw, sql), 1, "kernel row");
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM timings WHERE kind = 'memcpy' AND "
                              "name = 'memcpy_htod' AND copy_kind = 'htod' AND "
                              "bytes = 1048576 AND duration_ns = 400 AND stream = 2 AND "
                              "grid_x IS NULL"),
                 1, "memcpy row");
    cr_assert_eq(raw_int(raw, "SELECT count(*) FROM timings WHERE kind = 'range' AND "
                              "name = 'vyre.cuda.pipeline.compile' AND domain = 'vyre' AND "
                              "duration_ns = 4900 AND payload = 77 AND stream IS NULL"),
                 1, "range row");
    sqlite3_close(raw);
}

Test(results, out_of_range_values_are_refused)
{
    vyre_results *db = open_ok(g_path);
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(db, 0, &w, NULL), 0);
    vyre_activity recs[2] = {kernel(1), kernel(2)};
    recs[1].end_ns = UINT64_MAX;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_writer_add(w, recs, 2, &e), VYRE_ERANGE);
    cr_assert(strstr(e.message, "kernel_2"), "%s", e.message);
    vyre_results_writer_stats s;
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.rows_pending, 0u, "nothing of a refused call is queued");
    cr_assert_eq(s.rows_dropped, 2u);
    /* The sink path reports through the stats. */
    vyre_results_writer_sink(recs, 2, w);
    vyre_results_writer_stats_get(w, &s);
    cr_assert_eq(s.last_error, VYRE_ERANGE);
    cr_assert(strstr(s.last_message, "INT64_MAX"), "%s", s.last_message);
    /* An end before the start stores a zero duration, not a negative one. */
    recs[1] = kernel(5);
    recs[1].end_ns = recs[1].start_ns - 1;
    cr_assert_eq(vyre_results_writer_add(w, &recs[1], 1, NULL), 0);
    cr_assert_eq(vyre_results_writer_flush(w, NULL), 0);
    vyre_results_writer_free(w);
    vyre_results_close(db);
    sqlite3 *raw = raw_open(g_path);
    cr_assert_eq(raw_int(raw, "SELECT duration_ns FROM timings"), 0);
    sqlite3_close(raw);
}

Test(results, bad_writer_arguments)
{
    vyre_results_writer *w = NULL;
    cr_assert_eq(vyre_results_writer_new(NULL, 0, &w, NULL), VYRE_EINVAL);
    vyre_results *db = open_ok(g_path);
    cr_assert_eq(vyre_results_writer_new(db, -1, &w, NULL), VYRE_EINVAL);
    cr_assert_null(w);
    cr_assert_eq(vyre_results_writer_add(NULL, NULL, 0, NULL), VYRE_EINVAL);
    vyre_results_writer_free(NULL);
    vyre_results_close(NULL);
    vyre_results_close(db);
}
