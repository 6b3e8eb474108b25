/*
 * test_sqlutil.c - what the two SQLite stores share (libcore/src/base/
 * sqlutil.c): the journal-mode choice by filesystem, and vyre__sqlite_open
 * with its transaction layer on a small store of the test's own: creation
 * and migration, the store's check before anything is written, read-only
 * opens, the journal mode, and the wording of failures; schema objects
 * the steps do not create refused at open, and a statement that runs away
 * stopped at the store's limit while a lock wait is not counted.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "base/internal.h"
#include "base/sqlutil.h"
#include "testutil.h"

static char g_dir[256];
static char g_path[320];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_path, sizeof g_path, "%s/toy.sqlite3", g_dir);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(sqlutil, .init = setup, .fini = teardown);

Test(sqlutil, journal_for_fstype_magic_numbers)
{
    static const long network[] = {
        0x6969,     /* NFS */
        0x517B,     /* smbfs */
        0xFF534D42, /* CIFS */
        0xFE534D42, /* SMB2 */
        0x65735546, /* FUSE */
        0x01021997, /* 9p */
        0x0BD00BD0, /* Lustre */
        0x00C36400, /* Ceph */
        0x47504653, /* GPFS */
        0x5346414F, /* AFS */
        0x6B414653, /* kAFS */
        0x7461636F, /* OCFS2 */
        0x01161970, /* GFS2 */
        0x19830326, /* BeeGFS */
    };
    for (size_t i = 0; i < sizeof network / sizeof network[0]; i++)
        cr_assert_eq(vyre__sqlite_journal_for_fstype(network[i]), VYRE__SQLITE_JOURNAL_ROLLBACK,
                     "0x%lx", network[i]);
    /* A 32-bit signed f_type sign-extends the 0xF... magics. */
    cr_assert_eq(vyre__sqlite_journal_for_fstype((long)(int32_t)0xFF534D42u),
                 VYRE__SQLITE_JOURNAL_ROLLBACK);
    cr_assert_eq(vyre__sqlite_journal_for_fstype((long)(int32_t)0xFE534D42u),
                 VYRE__SQLITE_JOURNAL_ROLLBACK);
    static const long local[] = {
        0xEF53,     /* ext2/3/4 */
        0x58465342, /* XFS */
        0x9123683E, /* Btrfs */
        0x01021994, /* tmpfs */
        0x794C7630, /* overlayfs */
        0x2FC12FC1, /* ZFS */
        0,
    };
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        cr_assert_eq(vyre__sqlite_journal_for_fstype(local[i]), VYRE__SQLITE_JOURNAL_WAL, "0x%lx",
                     local[i]);
}

Test(sqlutil, journal_for_path_follows_the_directory_filesystem)
{
    struct statfs sfs;
    cr_assert_eq(statfs(g_dir, &sfs), 0);
    cr_assert_eq(vyre__sqlite_journal_for_path(g_path),
                 vyre__sqlite_journal_for_fstype((long)sfs.f_type));
    /* A directory that cannot be looked at: the journal that works anywhere. */
    cr_assert_eq(vyre__sqlite_journal_for_path("/nonexistent-vyre-dir/x.sqlite3"),
                 VYRE__SQLITE_JOURNAL_ROLLBACK);
}

/* ---- a toy store ---------------------------------------------------------------- */

#define TOY_APP_ID 0x746f7921 /* "toy!" */

static const char *const k_steps[] = {
    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)", /* 0 -> 1 */
    "ALTER TABLE items ADD COLUMN size INTEGER NOT NULL DEFAULT 0",    /* 1 -> 2 */
};

static int g_migrated_calls;
static int g_migrated_in_tx;

static const char *toy_hint(int code)
{
    return code == VYRE_ECORRUPT ? "toy corrupt hint" : "toy hint";
}

static int toy_check(const vyre__sqlite *c, const vyre__sqlite_schema *s, vyre_error *err)
{
    if (s->application_id != 0 && s->application_id != TOY_APP_ID)
        return vyre__fail(err, VYRE_ECORRUPT, "not ours", "'%s' is not a toy store", c->path);
    if (s->user_version > 2)
        return vyre__fail(err, VYRE_EVERSION, "too new", "'%s' is too new", c->path);
    return VYRE_OK;
}

static int toy_migrated(vyre__sqlite *c, vyre_error *err)
{
    g_migrated_calls++;
    g_migrated_in_tx = !sqlite3_get_autocommit(c->db);
    return vyre__sqlite_exec(c, "INSERT INTO items (name) VALUES ('stamp')", "stamp", err);
}

static const vyre__sqlite_store k_toy = {
    .noun = "toy store",
    .hint_for = toy_hint,
    .corrupt_note = " (left alone)",
    .schema_note = "; left alone",
    .busy_timeout_ms = 2000,
    .statement_ms = 300,
    .schema_version = 2,
    .application_id = TOY_APP_ID,
    .steps = k_steps,
    .check = toy_check,
    .migrated = toy_migrated,
};

static sqlite3_int64 raw_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_int64 v = -1;
    cr_assert_eq(vyre__sqlite_query_value(db, sql, 1000, &v, NULL, 0), SQLITE_OK, "%s", sql);
    sqlite3_close(db);
    return v;
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

Test(sqlutil, open_creates_every_step_and_stamps_once)
{
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.journal, vyre__sqlite_journal_for_path(g_path));
    vyre__sqlite_close(&c);
    cr_assert_eq(g_migrated_calls, 1);
    cr_assert_eq(g_migrated_in_tx, 1, "the hook runs inside the migration transaction");
    cr_assert_eq(raw_int(g_path, "PRAGMA user_version"), 2);
    cr_assert_eq(raw_int(g_path, "PRAGMA application_id"), TOY_APP_ID);
    cr_assert_eq(raw_int(g_path, "SELECT count(*) FROM items WHERE size = 0"), 1);

    /* Up to date: nothing runs again. */
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), 0, "%s", e.message);
    vyre__sqlite_close(&c);
    cr_assert_eq(g_migrated_calls, 1);
}

Test(sqlutil, open_migrates_an_older_file_forward)
{
    raw_exec(g_path, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); "
                     "INSERT INTO items (name) VALUES ('old'); PRAGMA user_version=1; "
                     "PRAGMA application_id=1953462561");
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), 0, "%s", e.message);
    vyre__sqlite_close(&c);
    cr_assert_eq(raw_int(g_path, "PRAGMA user_version"), 2);
    cr_assert_eq(raw_int(g_path, "SELECT count(*) FROM items WHERE name = 'old' AND size = 0"), 1);
}

Test(sqlutil, a_refused_file_is_not_touched)
{
    raw_exec(g_path, "PRAGMA journal_mode=DELETE; CREATE TABLE other (x); "
                     "PRAGMA application_id=42");
    struct stat before, after;
    cr_assert_eq(stat(g_path, &before), 0);
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_ECORRUPT);
    cr_assert_null(c.db, "closed on failure");
    char want[400];
    snprintf(want, sizeof want, "'%s' is not a toy store", g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_eq(stat(g_path, &after), 0);
    cr_assert_eq(after.st_size, before.st_size);
    cr_assert_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    cr_assert_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    cr_assert_eq(raw_int(g_path, "PRAGMA user_version"), 0);
}

Test(sqlutil, readonly_never_creates_and_keeps_the_journal)
{
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, VYRE__SQLITE_READONLY, &e), VYRE_ENOENT);
    char want[400];
    snprintf(want, sizeof want, "cannot open toy store '%s': ", g_path);
    cr_assert_eq(strncmp(e.message, want, strlen(want)), 0, "%s", e.message);
    cr_assert_str_eq(e.hint, "toy hint");
    struct stat sb;
    cr_assert_neq(stat(g_path, &sb), 0, "read-only open created the file");

    raw_exec(g_path, "PRAGMA journal_mode=DELETE; CREATE TABLE items (id INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL); PRAGMA user_version=1");
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, VYRE__SQLITE_READONLY, &e), 0, "%s",
                 e.message);
    cr_assert_eq(c.journal, VYRE__SQLITE_JOURNAL_ROLLBACK);
    vyre__sqlite_close(&c);
    cr_assert_eq(raw_int(g_path, "PRAGMA user_version"), 1, "read-only open migrated");
}

Test(sqlutil, journal_at_create_keeps_an_existing_file_s_mode)
{
    raw_exec(g_path, "PRAGMA journal_mode=DELETE; CREATE TABLE items (id INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0); "
                     "PRAGMA user_version=2; PRAGMA application_id=1953462561");
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy,
                                   VYRE__SQLITE_JOURNAL_AT_CREATE | VYRE__SQLITE_DURABLE, &e),
                 0, "%s", e.message);
    cr_assert_eq(c.journal, VYRE__SQLITE_JOURNAL_ROLLBACK);
    sqlite3_int64 sync = -1;
    cr_assert_eq(vyre__sqlite_query_value(c.db, "PRAGMA synchronous", 1000, &sync, NULL, 0),
                 SQLITE_OK);
    cr_assert_eq(sync, 2, "DURABLE is synchronous=FULL");
    vyre__sqlite_close(&c);

    /* Without the flag the mode follows the filesystem. */
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.journal, vyre__sqlite_journal_for_path(g_path));
    vyre__sqlite_close(&c);
}

Test(sqlutil, transactions_and_failure_wording)
{
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__sqlite_begin(&c, "write to", &e), 0, "%s", e.message);
    cr_assert_eq(vyre__sqlite_exec(&c, "INSERT INTO items (name) VALUES ('a')", "write to", &e), 0);
    vyre__sqlite_rollback(&c);
    cr_assert(sqlite3_get_autocommit(c.db));
    cr_assert_eq(vyre__sqlite_begin(&c, "write to", &e), 0, "%s", e.message);
    cr_assert_eq(vyre__sqlite_exec(&c, "INSERT INTO items (name) VALUES ('b')", "write to", &e), 0);
    cr_assert_eq(vyre__sqlite_commit(&c, "write to", &e), 0, "%s", e.message);

    /* A statement that fails inside a transaction: message, hint, rollback. */
    sqlite3_stmt *st = NULL;
    cr_assert_eq(vyre__sqlite_prepare(&c, "INSERT INTO items (id, name) VALUES (?1, 'c')", &st, &e),
                 0, "%s", e.message);
    cr_assert_eq(vyre__sqlite_begin(&c, "write to", &e), 0);
    sqlite3_bind_int(st, 1, 1); /* id 1 is 'stamp': a constraint failure */
    int rc = sqlite3_step(st);
    cr_assert_eq(vyre__sqlite_abort(&c, st, rc, "write to", &e), VYRE_EDB);
    char want[400];
    snprintf(want, sizeof want,
             "cannot write to toy store '%s': UNIQUE constraint failed: items.id", g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "toy hint");
    cr_assert(sqlite3_get_autocommit(c.db), "rolled back");
    sqlite3_finalize(st);

    /* A statement the schema does not have: the store's schema note. */
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_prepare(&c, "SELECT nope FROM items", &st, &e), VYRE_ECORRUPT);
    snprintf(want, sizeof want,
             "toy store '%s' does not have the expected schema: no such column: nope; left alone",
             g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "toy corrupt hint");
    cr_assert_eq(raw_int(g_path, "SELECT count(*) FROM items"), 2, "stamp and 'b'");
    vyre__sqlite_close(&c);
}

Test(sqlutil, a_file_that_is_not_a_database_gets_the_corrupt_note)
{
    static const char junk[] = "this is not an SQLite database, not even close to one: junk";
    tu_write_file(g_path, junk, sizeof junk - 1);
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_ECORRUPT);
    char want[400];
    snprintf(want, sizeof want, "cannot read toy store '%s': file is not a database (left alone)",
             g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "toy corrupt hint");
}

/* ---- bounds --------------------------------------------------------------------- */

#include <pthread.h>
#include <time.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Counts to 10^8 on every insert: tens of seconds unbounded. */
#define RUNAWAY_TRIGGER                                                                            \
    "CREATE TRIGGER runaway AFTER INSERT ON items BEGIN SELECT count(*) FROM (WITH RECURSIVE "     \
    "r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 100000000) SELECT x FROM r); END"

Test(sqlutil, an_object_the_steps_do_not_create_is_refused_untouched)
{
    /* A version-1 file with a trigger: refused before the migration to 2. */
    raw_exec(g_path, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); "
                     "PRAGMA user_version=1; PRAGMA application_id=1953462561; " RUNAWAY_TRIGGER);
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_ECORRUPT, "%s", e.message);
    char want[600];
    snprintf(want, sizeof want,
             "toy store '%s' does not have the expected schema: it has the trigger 'runaway' on "
             "table 'items', which vyre did not create; left alone",
             g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "toy corrupt hint");
    cr_assert_eq(raw_int(g_path, "PRAGMA user_version"), 1, "not migrated");
    cr_assert_eq(g_migrated_calls, 0);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, VYRE__SQLITE_READONLY, &e), VYRE_ECORRUPT);

    /* Without it the same file opens and migrates; a later addition is
     * found by vyre__sqlite_check_objects. */
    raw_exec(g_path, "DROP TRIGGER runaway");
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre__sqlite_check_objects(&c, &e), VYRE_OK, "%s", e.message);
    raw_exec(g_path, "CREATE VIEW names AS SELECT name FROM items");
    cr_assert_eq(vyre__sqlite_check_objects(&c, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "it has the view 'names', which vyre did not create"), "%s",
              e.message);
    vyre__sqlite_close(&c);
}

Test(sqlutil, a_runaway_statement_is_stopped_at_the_store_limit)
{
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_OK, "%s", e.message);
    raw_exec(g_path, RUNAWAY_TRIGGER); /* after open: only the bound stands in its way */
    uint64_t t0 = now_ms();
    int rc = vyre__sqlite_exec(&c, "INSERT INTO items (name) VALUES ('x')", "write", &e);
    uint64_t ms = now_ms() - t0;
    cr_assert_eq(rc, VYRE_ECORRUPT, "%s: %s", vyre_err_name(rc), e.message);
    char want[600];
    snprintf(want, sizeof want,
             "cannot write toy store '%s': a statement ran for more than 300 ms and was stopped; "
             "the file may hold a trigger or view vyre did not create (left alone)",
             g_path);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "toy corrupt hint");
    cr_assert_lt(ms, 5000, "a hang detector: stopped after %llu ms", (unsigned long long)ms);
    /* The next statement gets its own budget. */
    cr_assert_eq(vyre__sqlite_exec(&c, "SELECT count(*) FROM items", "read", &e), VYRE_OK, "%s",
                 e.message);
    vyre__sqlite_close(&c);
}

static void *hold_lock(void *arg)
{
    /* Holds the write lock for 600 ms, twice the statement limit. */
    sqlite3 *db = arg;
    struct timespec ts = {0, 600 * 1000000};
    nanosleep(&ts, NULL);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    return NULL;
}

Test(sqlutil, waiting_for_a_lock_is_not_running)
{
    vyre__sqlite c;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__sqlite_open(&c, g_path, &k_toy, 0, &e), VYRE_OK, "%s", e.message);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(g_path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, hold_lock, db), 0);
    /* Waits about 600 ms in the busy handler (timeout 2 s), then runs. */
    cr_assert_eq(vyre__sqlite_exec(&c, "INSERT INTO items (name) VALUES ('y')", "write", &e),
                 VYRE_OK, "%s", e.message);
    pthread_join(t, NULL);
    sqlite3_close(db);
    vyre__sqlite_close(&c);
}
