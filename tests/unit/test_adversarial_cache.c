/*
 * test_adversarial_cache.c - nothing outside the cache is ever touched.
 * Each case plants one hostile entry in a real cache: a symlink
 * to a folder outside it (as blobs/, a shard, tmp/, quarantine/, a blob,
 * the index or its -wal/-journal), a FIFO or a socket where a blob belongs,
 * a 100 GB sparse "blob", an index that is a directory or another user's,
 * a blob that is a hard link to an outside file. Then every operation runs
 * on a fresh copy of that situation: verify reports the entry; verify
 * --repair, prune, clear and reindex remove only the entry (or the index
 * row) inside the cache; the outside folder stays byte-for-byte what it
 * was; every refusal carries a message and a hint; nothing hangs or
 * crashes. A last case swaps a shard for a symlink in a loop while repair,
 * prune and puts run, to show that the race is closed, not narrowed.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <sqlite3.h>

#include "cache/cache_internal.h"
#include "cache/blob_internal.h"
#include "cache/config_internal.h"
#include "testutil.h"
#include "vyre/cache.h"

#define N_BLOBS    6
#define BLOB_LEN   3000
#define SHARD      "ab" /* blobs 0..2 live in blobs/ab/ */
#define NOBODY     65534
#define HUNDRED_GB (UINT64_C(100) << 30)

static char g_dir[1024];  /* the test's temp directory */
static char g_root[1100]; /* <g_dir>/cache */
static char g_out[1100];  /* <g_dir>/outside: must never change */
static char g_hex[N_BLOBS][VYRE_KEY_HEX_LEN + 1];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_root, sizeof g_root, "%s/cache", g_dir);
    snprintf(g_out, sizeof g_out, "%s/outside", g_dir);
}

static void teardown(void)
{
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

TestSuite(adversarial_cache, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the cache and the outside folder ----------------------------------- */

static void key_of(vyre_key *k, uint64_t id)
{
    for (int i = 0; i < 4; i++) {
        uint64_t v = XXH64(&id, sizeof id, (uint64_t)i + 1);
        memcpy(k->bytes + 8 * i, &v, 8);
    }
    k->bytes[0] = id < 3 ? 0xab : (uint8_t)(0x10 + id); /* never 0xab for the others */
}

static void path_in(char *buf, size_t size, const char *rel)
{
    snprintf(buf, size, "%s/%s", g_root, rel);
}

static void blob_rel(char *buf, size_t size, int id)
{
    snprintf(buf, size, "blobs/%.2s/%s.vblob", g_hex[id], g_hex[id]);
}

static void blob_file(char *buf, size_t size, int id)
{
    char rel[128];
    blob_rel(rel, sizeof rel, id);
    path_in(buf, size, rel);
}

static vyre_cache *open_ok(unsigned flags)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(flags), &c, &e);
    cr_assert_eq(rc, 0, "open: %s: %s (hint: %s)", vyre_err_name(rc), e.message, e.hint);
    return c;
}

static void put_ok(vyre_cache *c, int id)
{
    vyre_key k;
    key_of(&k, (uint64_t)id);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = k;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0");
    uint8_t payload[BLOB_LEN];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + (size_t)id);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &e), 0, "put %d: %s", id,
                 e.message);
}

/* A fresh cache of N_BLOBS blobs (0..2 in blobs/ab/), closed. */
static void make_cache(void)
{
    tu_rm_rf(g_root);
    vyre_cache *c = open_ok(0);
    for (int id = 0; id < N_BLOBS; id++) {
        put_ok(c, id);
        vyre_key k;
        key_of(&k, (uint64_t)id);
        vyre_key_to_hex(&k, g_hex[id]);
    }
    vyre_cache_close(c);
}

static void mkdir_ok(const char *p)
{
    cr_assert_eq(mkdir(p, 0700), 0, "mkdir %s: %s", p, strerror(errno));
}

/* The outside folder, made once per test: what a careless walker would
 * take for cache content. A valid copy of blob 0 and a damaged file under
 * blob names (at its top, as a shard, and in ab/, as blobs/), a note two
 * hours old (tmp/ debris, if tmp/ were followed), a file a linked index
 * would point to. */
static void make_outside(void)
{
    char p[1400], src[1400];
    struct stat st;
    if (lstat(g_out, &st) == 0)
        return; /* made once per test */
    mkdir_ok(g_out);
    blob_file(src, sizeof src, 0);
    size_t len = 0;
    char *good = tu_read_file(src, &len);
    cr_assert_not_null(good);
    snprintf(p, sizeof p, "%s/%s.vblob", g_out, g_hex[0]);
    tu_write_file(p, good, len);
    snprintf(p, sizeof p, "%s/%s.vblob", g_out, g_hex[1]);
    tu_write_file(p, "not a blob at all", 17);
    snprintf(p, sizeof p, "%s/" SHARD, g_out);
    mkdir_ok(p);
    snprintf(p, sizeof p, "%s/" SHARD "/%s.vblob", g_out, g_hex[0]);
    tu_write_file(p, good, len);
    snprintf(p, sizeof p, "%s/" SHARD "/%s.vblob", g_out, g_hex[2]);
    tu_write_file(p, good, len / 2);
    free(good);
    snprintf(p, sizeof p, "%s/notes.txt", g_out);
    tu_write_file(p, "precious\n", 9);
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
    snprintf(p, sizeof p, "%s/db", g_out);
    tu_write_file(p, "SQLite format 3\0 but not really", 31);
}

/* Snapshot of a tree: "<rel path> <type> <size>\n<bytes>" per entry, in
 * name order (malloc'ed text, compared whole). */
typedef struct snap {
    char *buf;
    size_t len, cap;
} snap;

static void snap_add(snap *s, const void *p, size_t n)
{
    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2 + 4096;
        s->buf = realloc(s->buf, s->cap);
        cr_assert_not_null(s->buf);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void snap_tree(snap *s, const char *dir, const char *rel)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
    char *names[64];
    size_t n = 0;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        cr_assert_lt(n, 64);
        names[n++] = strdup(f->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; i < n; i++) {
        char p[2048], r[1024], line[1200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        snprintf(r, sizeof r, "%s%s", rel, names[i]);
        struct stat st;
        cr_assert_eq(lstat(p, &st), 0);
        int m = snprintf(line, sizeof line, "%s %o %jd\n", r, (unsigned)(st.st_mode & S_IFMT),
                         (intmax_t)st.st_size);
        snap_add(s, line, (size_t)m);
        if (S_ISDIR(st.st_mode)) {
            char r2[1100];
            snprintf(r2, sizeof r2, "%s/", r);
            snap_tree(s, p, r2);
        } else if (S_ISREG(st.st_mode)) {
            size_t len = 0;
            char *b = tu_read_file(p, &len);
            cr_assert_not_null(b);
            snap_add(s, b, len);
            free(b);
        }
        free(names[i]);
    }
}

static snap g_before;

static void outside_snapshot(void)
{
    free(g_before.buf);
    memset(&g_before, 0, sizeof g_before);
    snap_tree(&g_before, g_out, "");
}

static void expect_outside_unchanged(const char *after_what)
{
    snap now = {0};
    snap_tree(&now, g_out, "");
    cr_assert(now.len == g_before.len && memcmp(now.buf, g_before.buf, now.len) == 0,
              "%s changed the folder outside the cache:\nbefore:\n%.*s\nafter:\n%.*s", after_what,
              (int)g_before.len, g_before.buf, (int)now.len, now.buf);
    free(now.buf);
}

/* ---- what a case plants, and what the operations must do ---------------- */

typedef enum where {
    AT_LAYOUT, /* blobs/, tmp/, quarantine/: repaired by a real directory */
    AT_BLOBS,  /* a shard or a blob: repaired by its removal */
} where;

typedef struct adv_case {
    const char *what;
    const char *entry;  /* below the root */
    mode_t type;        /* what is planted there */
    const char *detail; /* verify's FOREIGN detail */
    where at;
    void (*plant)(const char *path);
    uint64_t indexed; /* blobs reindex finds once the entry is gone */
} adv_case;

static void plant_dir_link(const char *path)
{
    char aside[1200];
    snprintf(aside, sizeof aside, "%s/aside-%d", g_dir, rand());
    cr_assert_eq(rename(path, aside), 0, "rename %s: %s", path, strerror(errno));
    cr_assert_eq(symlink(g_out, path), 0);
}

static void plant_blob_link(const char *path)
{
    char target[1400];
    snprintf(target, sizeof target, "%s/%s.vblob", g_out, g_hex[0]);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(target, path), 0);
}

static void plant_fifo(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
}

static void plant_socket(const char *path)
{
    /* sun_path is short: bind a short name, then rename it into place. */
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int n = snprintf(a.sun_path, sizeof a.sun_path, "%s/s", g_dir);
    cr_assert(n > 0 && (size_t)n < sizeof a.sun_path, "temp dir path too long for a socket");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "bind: %s", strerror(errno));
    close(fd);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(rename(a.sun_path, path), 0);
}

static void plant_hard_link(const char *path)
{
    char target[1400];
    snprintf(target, sizeof target, "%s/%s.vblob", g_out, g_hex[0]);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(link(target, path), 0, "link: %s", strerror(errno));
}

static int g_problem_seen, g_problem_repaired;
static const adv_case *g_case;

static void on_problem(const vyre_cache_verify_problem *p, void *ctx)
{
    (void)ctx;
    char want[1400];
    path_in(want, sizeof want, g_case->entry);
    if (p->kind != VYRE_PROBLEM_FOREIGN || strcmp(p->path, want) != 0)
        return;
    g_problem_seen++;
    cr_assert_str_eq(p->detail, g_case->detail, "%s: detail", g_case->what);
    if (p->repaired) {
        g_problem_repaired++;
        cr_assert_not_null(p->action);
    }
}

/* The entry as planted (1), gone (0), or a real directory again (2). */
static int entry_state(const adv_case *k)
{
    char p[1400];
    path_in(p, sizeof p, k->entry);
    struct stat st;
    if (lstat(p, &st) != 0)
        return 0;
    if ((st.st_mode & S_IFMT) == k->type && (k->type != S_IFREG || st.st_nlink > 1))
        return 1;
    return S_ISDIR(st.st_mode) ? 2 : 3;
}

static void expect_entry_removed(const adv_case *k, const char *op)
{
    int s = entry_state(k);
    cr_assert_eq(s, k->at == AT_LAYOUT ? 2 : 0, "%s: after %s, '%s' is %s", k->what, op, k->entry,
                 s == 1   ? "still there"
                 : s == 0 ? "gone"
                          : "something else");
}

static int count_row(const vyre_cache_entry *e, void *ctx)
{
    (void)e;
    (*(size_t *)ctx)++;
    return 0;
}

static size_t rows_of(vyre_cache *c)
{
    size_t n = 0;
    cr_assert_eq(vyre_cache_foreach(c, count_row, &n, NULL), 0);
    return n;
}

/* The situation of case k on a fresh cache; returns the outside snapshot
 * taken after planting. */
static void fresh(const adv_case *k)
{
    make_cache();
    char p[1400];
    path_in(p, sizeof p, k->entry);
    k->plant(p);
    cr_assert_eq(entry_state(k), 1, "%s: not planted", k->what);
    outside_snapshot();
}

/* Runs verify, verify --repair, prune, clear and reindex, each on a fresh
 * copy of the case, with the expected outcome of each. */
static void run_foreign_case(const adv_case *k)
{
    make_cache();
    make_outside();
    g_case = k;
    vyre_error e;

    /* verify reports the entry and leaves it. */
    fresh(k);
    vyre_cache *c = open_ok(0);
    vyre_cache_verify_result r;
    g_problem_seen = g_problem_repaired = 0;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_verify(c, 0, &r, on_problem, NULL, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(g_problem_seen, 1, "%s: verify did not report '%s'", k->what, k->entry);
    cr_assert_geq(r.foreign, 1);
    cr_assert_eq(entry_state(k), 1, "%s: verify changed it", k->what);
    vyre_cache_close(c);
    expect_outside_unchanged("verify");

    /* verify --repair removes the entry itself; then the cache is clean. */
    fresh(k);
    c = open_ok(0);
    g_problem_seen = g_problem_repaired = 0;
    cr_assert_eq(vyre_cache_verify(c, 1, &r, on_problem, NULL, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(g_problem_repaired, 1, "%s: repair did not fix '%s'", k->what, k->entry);
    expect_entry_removed(k, "verify --repair");
    cr_assert_eq(vyre_cache_verify(c, 0, &r, NULL, NULL, NULL, NULL, &e), 0);
    cr_assert_eq(r.problems, 0, "%s: %" PRIu64 " problems after repair", k->what, r.problems);
    vyre_cache_close(c);
    expect_outside_unchanged("verify --repair");

    /* prune removes rows and the cache's own files, never the entry's target. */
    fresh(k);
    c = open_ok(0);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 0;
    vyre_cache_prune_result pr;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_prune(c, &o, &pr, NULL, NULL, &e), 0, "%s: prune: %s", k->what,
                 e.message);
    cr_assert_eq(rows_of(c), 0);
    vyre_cache_close(c);
    expect_outside_unchanged("prune");

    /* clear removes the entry itself. */
    fresh(k);
    c = open_ok(0);
    vyre_cache_clear_result cl;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_clear(c, &cl, &e), 0, "%s: clear: %s", k->what, e.message);
    expect_entry_removed(k, "clear");
    vyre_cache_close(c);
    expect_outside_unchanged("clear");

    /* reindex removes it too, and indexes only the cache's own blobs. */
    fresh(k);
    c = open_ok(VYRE_CACHE_NO_INDEX);
    vyre_cache_reindex_result rr;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), 0, "%s: reindex: %s", k->what,
                 e.message);
    expect_entry_removed(k, "reindex");
    cr_assert_eq(rr.indexed, k->indexed, "%s: reindex indexed %" PRIu64, k->what, rr.indexed);
    vyre_cache_close(c);
    expect_outside_unchanged("reindex");
}

/* ---- directories of the layout ------------------------------------------- */

Test(adversarial_cache, symlink_as_blobs_dir_is_reported_and_only_the_link_goes)
{
    adv_case k = {"blobs/ -> outside", "blobs", S_IFLNK, "symlink", AT_LAYOUT, plant_dir_link, 0};
    run_foreign_case(&k);
    /* Nothing is read through it: the valid copy in outside/ab/ is no hit,
     * and a put refuses to write through it, with a message and a hint. */
    fresh(&k);
    vyre_cache *c = open_ok(0);
    vyre_key key;
    key_of(&key, 0);
    vyre_blob *b = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_get(c, &key, &b, NULL, &e), VYRE_ENOENT);
    cr_assert_null(b);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = key;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, "x", 1, &e), VYRE_EUNSAFE);
    cr_assert_neq(strstr(e.message, "symlink"), NULL, "message: %s", e.message);
    cr_assert_str_neq(e.hint, "");
    vyre_cache_close(c);
    expect_outside_unchanged("get and put");
}

Test(adversarial_cache, symlink_as_shard_is_reported_and_only_the_link_goes)
{
    adv_case k = {"blobs/ab -> outside", "blobs/" SHARD, S_IFLNK, "symlink", AT_BLOBS,
                  plant_dir_link,        N_BLOBS - 3};
    run_foreign_case(&k);
    fresh(&k);
    vyre_cache *c = open_ok(0);
    vyre_key key;
    key_of(&key, 0);
    vyre_blob *b = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_get(c, &key, &b, NULL, &e), VYRE_ENOENT,
                 "the valid copy outside was loaded through the link");
    cr_assert_null(b);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = key;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, "x", 1, &e), VYRE_EUNSAFE);
    cr_assert_str_neq(e.message, "");
    cr_assert_str_neq(e.hint, "");
    vyre_cache_close(c);
    expect_outside_unchanged("get and put");
}

Test(adversarial_cache, symlink_as_tmp_dir_is_reported_and_only_the_link_goes)
{
    adv_case k = {"tmp/ -> outside", "tmp", S_IFLNK, "symlink", AT_LAYOUT, plant_dir_link, N_BLOBS};
    run_foreign_case(&k);
    /* A put does not create its temp file through the link. */
    fresh(&k);
    vyre_cache *c = open_ok(0);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    key_of(&h.key, 40);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, "x", 1, &e), VYRE_EUNSAFE);
    cr_assert_neq(strstr(e.message, "tmp"), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.hint, "repair"), NULL, "hint: %s", e.hint);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_REPAIR);
    vyre_cache_close(c);
    expect_outside_unchanged("put");
}

Test(adversarial_cache, symlink_as_quarantine_dir_is_reported_and_only_the_link_goes)
{
    adv_case k = {"quarantine/ -> outside", "quarantine", S_IFLNK, "symlink", AT_LAYOUT,
                  plant_dir_link,           N_BLOBS};
    run_foreign_case(&k);
    /* A rejected blob is not moved through the link. */
    fresh(&k);
    char p[1400];
    blob_file(p, sizeof p, 4);
    tu_write_file(p, "garbage", 7);
    vyre_cache *c = open_ok(0);
    vyre_key key;
    key_of(&key, 4);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &key, &b, NULL, NULL), VYRE_ENOENT);
    vyre_cache_close(c);
    expect_outside_unchanged("a rejected get");
}

/* ---- what sits where a blob belongs -------------------------------------- */

static void blob0_case(adv_case *k, char *entry, size_t size, const char *what, mode_t type,
                       const char *detail, void (*plant)(const char *))
{
    make_cache();
    blob_rel(entry, size, 0);
    adv_case v = {what, entry, type, detail, AT_BLOBS, plant, N_BLOBS - 1};
    *k = v;
}

/* A get of blob 0 is a miss (no hang, no crash) and says why. */
static void expect_get_rejects(const adv_case *k, vyre_blob_reject want)
{
    fresh(k);
    vyre_cache *c = open_ok(0);
    vyre_key key;
    key_of(&key, 0);
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    cr_assert_eq(vyre_cache_get(c, &key, &b, &why, NULL), VYRE_ENOENT, "%s: get", k->what);
    cr_assert_null(b);
    cr_assert_eq(why, want, "%s: rejected as %s", k->what, vyre_blob_reject_name(why));
    cr_assert_eq(entry_state(k), 0, "%s: still in blobs/ after the get", k->what);
    vyre_cache_close(c);
    expect_outside_unchanged("get");
}

Test(adversarial_cache, symlink_as_blob_is_reported_and_only_the_link_goes)
{
    adv_case k;
    char entry[128];
    blob0_case(&k, entry, sizeof entry, "blob -> outside", S_IFLNK, "symlink", plant_blob_link);
    make_outside();
    run_foreign_case(&k);
    expect_get_rejects(&k, VYRE_REJECT_NOT_REGULAR);
}

Test(adversarial_cache, fifo_as_blob_never_hangs_and_is_removed)
{
    adv_case k;
    char entry[128];
    blob0_case(&k, entry, sizeof entry, "FIFO as blob", S_IFIFO, "FIFO", plant_fifo);
    make_outside();
    run_foreign_case(&k);
    expect_get_rejects(&k, VYRE_REJECT_NOT_REGULAR);
}

Test(adversarial_cache, socket_as_blob_never_hangs_and_is_removed)
{
    adv_case k;
    char entry[128];
    blob0_case(&k, entry, sizeof entry, "socket as blob", S_IFSOCK, "socket", plant_socket);
    make_outside();
    run_foreign_case(&k);
    expect_get_rejects(&k, VYRE_REJECT_NOT_REGULAR);
}

Test(adversarial_cache, hard_link_to_outside_file_as_blob_is_unlinked_never_written)
{
    adv_case k;
    char entry[128];
    blob0_case(&k, entry, sizeof entry, "hard link as blob", S_IFREG, "hard link", plant_hard_link);
    make_outside();
    /* Its content is a valid blob 0: only the link count gives it away. */
    run_foreign_case(&k);
    expect_get_rejects(&k, VYRE_REJECT_NOT_REGULAR);
    char target[1400];
    snprintf(target, sizeof target, "%s/%s.vblob", g_out, g_hex[0]);
    struct stat st;
    cr_assert_eq(lstat(target, &st), 0);
    cr_assert_eq(st.st_nlink, 1, "the outside file still has a name in the cache");
}

/* A sparse file of 100 GB under a blob name: refused by its size, from
 * fstat, before any read (reading it would outlast the suite's timeout). */
Test(adversarial_cache, sparse_100_gb_blob_is_refused_by_size_without_reading)
{
    make_cache();
    char p[1400];
    blob_file(p, sizeof p, 0);
    int fd = open(p, O_WRONLY);
    cr_assert_geq(fd, 0);
    if (ftruncate(fd, (off_t)HUNDRED_GB) != 0) {
        int e = errno;
        close(fd);
        cr_skip_test("this filesystem cannot hold a 100 GB sparse file: %s", strerror(e));
    }
    close(fd);

    vyre_cache *c = open_ok(0);
    vyre_cache_verify_result r;
    vyre_error e;
    cr_assert_eq(vyre_cache_verify(c, 0, &r, NULL, NULL, NULL, NULL, &e), 0);
    cr_assert_eq(r.bad_blobs, 1);
    vyre_key key;
    key_of(&key, 0);
    vyre_blob_header h;
    uint64_t size = 0;
    vyre_blob_reject rj = VYRE_REJECT_NONE;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__blob_check_file(p, &key, &h, &size, &rj, &e), VYRE_ECORRUPT);
    cr_assert_eq(rj, VYRE_REJECT_TRAILING, "rejected as %s", vyre_blob_reject_name(rj));
    cr_assert_eq(size, HUNDRED_GB);
    cr_assert_neq(strstr(e.message, "larger than any blob"), NULL, "message: %s", e.message);
    cr_assert_str_neq(e.hint, "");
    cr_log_info("%s", e.message);

    vyre_blob *b = NULL;
    vyre_blob_reject got = VYRE_REJECT_NONE;
    cr_assert_eq(vyre_cache_get(c, &key, &b, &got, NULL), VYRE_ENOENT);
    cr_assert_eq(got, VYRE_REJECT_TRAILING);
    struct stat st;
    cr_assert_neq(lstat(p, &st), 0, "still in blobs/ after the get");
    cr_assert_eq(vyre_cache_verify(c, 1, &r, NULL, NULL, NULL, NULL, &e), 0);
    cr_assert_eq(vyre_cache_verify(c, 0, &r, NULL, NULL, NULL, NULL, &e), 0);
    cr_assert_eq(r.problems, 0);
    cr_assert_eq(vyre_cache_clear(c, NULL, NULL), 0);
    vyre_cache_close(c);
}

/* ---- the index ------------------------------------------------------------ */

static void expect_open_refused(const char *what, const char *name)
{
    static const unsigned modes[] = {0, VYRE_CACHE_READONLY};
    for (size_t i = 0; i < 2; i++) {
        vyre_cache *c = NULL;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(modes[i]), &c, &e);
        cr_assert_eq(rc, VYRE_EUNSAFE, "%s: open (flags %u) gave %s", what, modes[i],
                     vyre_err_name(rc));
        cr_assert_null(c);
        cr_assert_neq(strstr(e.message, name), NULL, "%s: message '%s' does not name '%s'", what,
                      e.message, name);
        cr_assert_str_neq(e.hint, "", "%s: no hint", what);
    }
}

/* The index entry name is planted; open refuses; reindex (which opens the
 * cache without the index) removes only the entry and rebuilds. */
static void run_index_case(const char *what, const char *name, void (*plant)(const char *))
{
    make_cache();
    make_outside();
    char p[1400];
    path_in(p, sizeof p, name);
    plant(p);
    outside_snapshot();
    expect_open_refused(what, name);
    vyre_cache *c = open_ok(VYRE_CACHE_NO_INDEX);
    vyre_cache_reindex_result rr;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), 0, "%s: reindex: %s", what, e.message);
    cr_assert_eq(rr.indexed, N_BLOBS);
    vyre_cache_close(c);
    struct stat st;
    cr_assert(lstat(p, &st) != 0 || (S_ISREG(st.st_mode) && st.st_uid == geteuid()),
              "%s: '%s' is still not the cache's own file", what, name);
    c = open_ok(0);
    cr_assert_eq(rows_of(c), N_BLOBS);
    vyre_cache_close(c);
    expect_outside_unchanged(what);
}

static void index_link(const char *path)
{
    char target[1400];
    snprintf(target, sizeof target, "%s/db", g_out);
    unlink(path);
    cr_assert_eq(symlink(target, path), 0);
}

Test(adversarial_cache, symlink_as_index_is_refused_and_reindex_replaces_the_link)
{
    run_index_case("index.sqlite3 -> outside", "index.sqlite3", index_link);
}

Test(adversarial_cache, symlink_as_index_wal_is_refused_and_reindex_replaces_the_link)
{
    run_index_case("index.sqlite3-wal -> outside", "index.sqlite3-wal", index_link);
}

Test(adversarial_cache, symlink_as_index_journal_is_refused_and_reindex_replaces_the_link)
{
    run_index_case("index.sqlite3-journal -> outside", "index.sqlite3-journal", index_link);
}

static void index_chown(const char *path)
{
    cr_assert_eq(chown(path, NOBODY, NOBODY), 0, "chown: %s", strerror(errno));
}

Test(adversarial_cache, index_owned_by_another_user_is_refused_and_reindex_replaces_it)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give the index to uid %d", NOBODY);
    run_index_case("index owned by nobody", "index.sqlite3", index_chown);
}

Test(adversarial_cache, index_that_is_a_directory_is_refused_and_kept)
{
    make_cache();
    char p[1400], inner[1500];
    path_in(p, sizeof p, "index.sqlite3");
    cr_assert_eq(unlink(p), 0);
    mkdir_ok(p);
    snprintf(inner, sizeof inner, "%s/someones-file", p);
    tu_write_file(inner, "keep me", 7);
    expect_open_refused("index is a directory", "index.sqlite3");
    vyre_cache *c = open_ok(VYRE_CACHE_NO_INDEX);
    vyre_cache_reindex_result rr;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), VYRE_EUNSAFE);
    cr_assert_neq(strstr(e.message, "directory"), NULL, "message: %s", e.message);
    cr_assert_str_neq(e.hint, "");
    vyre_cache_close(c);
    size_t len = 0;
    char *kept = tu_read_file(inner, &len);
    cr_assert_not_null(kept, "the directory's file is gone");
    cr_assert_eq(len, 7);
    free(kept);
}

/* ---- the race: a shard swapped for a symlink while repair and prune run -- */

static void swapper(const char *shard, const char *aside, int stop_fd)
{
    for (;;) {
        char c;
        if (read(stop_fd, &c, 1) != -1 || errno != EAGAIN)
            _exit(0);
        if (rename(shard, aside) != 0)
            continue;
        if (symlink(g_out, shard) == 0) {
            for (volatile int i = 0; i < 2000; i++) {
            }
            unlink(shard); /* unless repair already removed it */
        }
        if (rename(aside, shard) != 0)
            tu_rm_rf(aside); /* a put recreated the shard meanwhile */
    }
}

Test(adversarial_cache, shard_swapped_for_symlink_during_repair_and_prune_touches_nothing_outside)
{
    make_cache();
    make_outside();
    outside_snapshot();
    char shard[1400], aside[1200];
    path_in(shard, sizeof shard, "blobs/" SHARD);
    snprintf(aside, sizeof aside, "%s/shard-aside", g_dir);
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    cr_assert_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(pfd[1]);
        swapper(shard, aside, pfd[0]);
    }
    close(pfd[0]);

    vyre_cache *c = open_ok(0);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned rounds = 0;
    do {
        /* Puts put blobs back (or refuse to write through the link). */
        for (int id = 0; id < N_BLOBS; id++) {
            vyre_blob_header h;
            memset(&h, 0, sizeof h);
            key_of(&h.key, (uint64_t)id);
            h.kind = VYRE_BLOB_CUBIN;
            snprintf(h.arch, sizeof h.arch, "sm_90");
            vyre_error e;
            vyre_error_clear(&e);
            int rc = vyre_cache_put(c, &h, "payload", 7, &e);
            cr_assert(rc == 0 || (e.message[0] && e.hint[0]), "put: %s without a message/hint",
                      vyre_err_name(rc));
        }
        vyre_cache_verify_result r;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_cache_verify(c, 1, &r, NULL, NULL, NULL, NULL, &e);
        cr_assert_eq(rc, 0, "verify --repair: %s", e.message);
        vyre_cache_prune_opts o;
        vyre_cache_prune_opts_init(&o);
        o.max_bytes = rounds % 2 ? 0 : 2 * (VYRE_BLOB_HEADER_SIZE + 7);
        vyre_cache_prune_result pr;
        vyre_error_clear(&e);
        rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
        cr_assert(rc == 0 || (e.message[0] && e.hint[0]), "prune: %s without a message/hint",
                  vyre_err_name(rc));
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 3);
    vyre_cache_close(c);

    close(pfd[1]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "swapper status %d", status);
    cr_log_info("%u rounds of put, verify --repair and prune against the swapper", rounds);
    cr_assert_gt(rounds, 0);
    expect_outside_unchanged("repair and prune racing a shard swap");
}

/* ---- own only what is ours ------------------------------------------------ */

/* Files the user keeps where vyre looks: vyre must report them and leave
 * them, whatever their age (the audit saw 'debris tmp/thesis.tex:
 * removed', quarantine/incident.log expired by a seed's cleanup, and
 * 'clear --yes' remove blobs/ab/photo.jpg and blobs/photos/a.jpg and call
 * them 2 blobs). */
static const char *const g_users_files[] = {"tmp/thesis.tex", "quarantine/incident.log",
                                            "blobs/" SHARD "/photo.jpg", "blobs/photos/a.jpg"};
#define N_USERS_FILES (sizeof g_users_files / sizeof g_users_files[0])

static void plant_users_files(void)
{
    char p[1400];
    path_in(p, sizeof p, "blobs/photos");
    mkdir_ok(p);
    struct timespec old[2] = {{time(NULL) - 30 * 86400, 0}, {time(NULL) - 30 * 86400, 0}};
    for (size_t i = 0; i < N_USERS_FILES; i++) {
        path_in(p, sizeof p, g_users_files[i]);
        tu_write_file(p, "mine\n", 5);
        cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
    }
}

static void expect_users_files(const char *after)
{
    for (size_t i = 0; i < N_USERS_FILES; i++) {
        char p[1400];
        path_in(p, sizeof p, g_users_files[i]);
        size_t len = 0;
        char *b = tu_read_file(p, &len);
        cr_assert(b && len == 5 && memcmp(b, "mine\n", 5) == 0, "%s removed or changed '%s'", after,
                  g_users_files[i]);
        free(b);
    }
}

/* What verify names: the files, and the folder of the user's in blobs/
 * (not walked into: it is not a shard). */
static const char *const g_users_entries[] = {"tmp/thesis.tex", "quarantine/incident.log",
                                              "blobs/" SHARD "/photo.jpg", "blobs/photos"};

static size_t g_left_reported;

static void count_left(const vyre_cache_verify_problem *p, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < N_USERS_FILES; i++) {
        char want[1400];
        path_in(want, sizeof want, g_users_entries[i]);
        if (strcmp(p->path, want) == 0) {
            cr_assert_eq(p->kind, VYRE_PROBLEM_STRAY, "'%s' reported as %d", p->path, p->kind);
            cr_assert_eq(p->repaired, 0, "'%s' reported as repaired (%s)", p->path,
                         p->action ? p->action : "");
            g_left_reported++;
        }
    }
}

Test(adversarial_cache, files_vyre_did_not_write_are_reported_and_left_by_every_removal)
{
    make_cache();
    plant_users_files();
    /* And one real piece of vyre debris, which repair does remove. */
    char debris[1400];
    snprintf(debris, sizeof debris, "%s/tmp/%.16s.1234.1.0123456789abcdef.tmp", g_root, g_hex[3]);
    tu_write_file(debris, "x", 1);
    struct timespec old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, debris, old, 0), 0);

    vyre_cache *c = open_ok(0);
    vyre_cache_verify_result r;
    vyre_error e;
    vyre_error_clear(&e);
    g_left_reported = 0;
    cr_assert_eq(vyre_cache_verify(c, 1, &r, count_left, NULL, NULL, NULL, &e), 0, "%s", e.message);
    expect_users_files("verify --repair");
    cr_assert_eq(g_left_reported, N_USERS_FILES, "verify reported %zu of the user's files",
                 g_left_reported);
    cr_assert_eq(r.problems - r.repaired, N_USERS_FILES, "unrepaired: %" PRIu64,
                 r.problems - r.repaired);
    struct stat st;
    cr_assert_neq(lstat(debris, &st), 0, "vyre's own debris was not removed");

    /* Quarantine expiry in prune and in the automatic cleanup. */
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.quarantine_max_age_ns = INT64_C(1000000000);
    vyre_cache_prune_result pr;
    cr_assert_eq(vyre_cache_prune(c, &o, &pr, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(pr.quarantine_removed, 0);
    vyre_cache_close(c);
    vyre_config cf;
    cr_assert_eq(vyre_config_load(&cf, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cf.quarantine_max_age_ns = INT64_C(1000000000);
    cf.max_size = 1;
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = &cf;
    cr_assert_eq(vyre_cache_open(g_root, &oo, &c, &e), 0, "%s", e.message);
    vyre__cache_cleanup_result cres;
    cr_assert_eq(vyre__cache_cleanup(c, 1, &cres, &e), 0, "%s", e.message);
    cr_assert_eq(cres.quarantine_removed, 0);
    expect_users_files("cleanup");
    vyre_cache_close(c);

    /* clear counts and removes only vyre's blobs. */
    make_cache();
    plant_users_files();
    c = open_ok(0);
    vyre_cache_clear_result cl;
    cr_assert_eq(vyre_cache_clear(c, &cl, &e), 0, "%s", e.message);
    cr_assert_eq(cl.removed, N_BLOBS, "clear counted %" PRIu64 " blobs", cl.removed);
    expect_users_files("clear");
    vyre_cache_close(c);
}

static int expect_refused_not_a_cache(unsigned flags, const char *name)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(flags), &c, &e);
    cr_assert_eq(rc, VYRE_EUNSAFE, "flags %#x: got %s", flags, vyre_err_name(rc));
    cr_assert_null(c);
    cr_assert_neq(strstr(e.message, g_root), NULL, "message: %s", e.message);
    if (name)
        cr_assert_neq(strstr(e.message, name), NULL, "message: %s", e.message);
    cr_assert_str_neq(e.hint, "", "no hint");
    return (int)e.remedy;
}

Test(adversarial_cache, non_empty_directory_without_marker_is_refused_not_adopted)
{
    mkdir_ok(g_root);
    char p[1400];
    path_in(p, sizeof p, "thesis.tex");
    tu_write_file(p, "mine\n", 5);
    cr_assert_eq(expect_refused_not_a_cache(0, "thesis.tex"), VYRE_REMEDY_CACHE_ADOPT);
    expect_refused_not_a_cache(VYRE_CACHE_READONLY, "thesis.tex");
    path_in(p, sizeof p, "blobs");
    struct stat st;
    cr_assert_neq(lstat(p, &st), 0, "blobs/ was created in a directory that is not a cache");
    path_in(p, sizeof p, VYRE_CACHE_MARKER);
    cr_assert_neq(lstat(p, &st), 0, "the directory was adopted");
    /* Adopting checks the contents too. */
    expect_refused_not_a_cache(VYRE_CACHE_ADOPT, "thesis.tex");
}

Test(adversarial_cache, new_cache_carries_the_marker_with_the_key_format)
{
    mkdir_ok(g_root);
    char p[1400];
    path_in(p, sizeof p, "vyre.conf"); /* a group cache is set up before first use */
    tu_write_file(p, "max_size = 1G\n", 14);
    vyre_cache_close(open_ok(0));
    path_in(p, sizeof p, VYRE_CACHE_MARKER);
    size_t len = 0;
    char *m = tu_read_file(p, &len);
    cr_assert_not_null(m, "no marker in a new cache");
    cr_assert_eq(
        strncmp(m, VYRE_CACHE_MARKER_SIGNATURE "\n", strlen(VYRE_CACHE_MARKER_SIGNATURE) + 1), 0,
        "marker: %s", m);
    char want[64];
    snprintf(want, sizeof want, "\nkey_format %d\n", VYRE_KEY_VERSION);
    cr_assert_neq(strstr(m, want), NULL, "marker: %s", m);
    free(m);
}

Test(adversarial_cache, cache_of_the_previous_version_is_recognised_by_its_index)
{
    make_cache();
    char p[1400];
    path_in(p, sizeof p, VYRE_CACHE_MARKER);
    unlink(p); /* as the previous version left it */
    vyre_cache *c = open_ok(0);
    cr_assert_eq(rows_of(c), N_BLOBS);
    vyre_cache_close(c);
    struct stat st;
    cr_assert_eq(lstat(p, &st), 0, "the marker was not written on recognising the cache");

    /* The same with a file of the user's at its top: not recognised. */
    unlink(p);
    path_in(p, sizeof p, "notes.txt");
    tu_write_file(p, "mine\n", 5);
    expect_refused_not_a_cache(0, "notes.txt");
}

Test(adversarial_cache, cache_without_marker_or_index_is_adopted_only_on_request)
{
    make_cache();
    char p[1400];
    path_in(p, sizeof p, VYRE_CACHE_MARKER);
    unlink(p);
    static const char *const idx[] = {"index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"};
    for (size_t i = 0; i < 3; i++) {
        char q[1400];
        path_in(q, sizeof q, idx[i]);
        unlink(q);
    }
    cr_assert_eq(expect_refused_not_a_cache(0, NULL), VYRE_REMEDY_CACHE_ADOPT);
    vyre_cache *c = open_ok(VYRE_CACHE_ADOPT | VYRE_CACHE_NO_INDEX);
    vyre_cache_reindex_result rr;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(rr.indexed, N_BLOBS);
    vyre_cache_close(c);
    struct stat st;
    cr_assert_eq(lstat(p, &st), 0, "adopting wrote no marker");
    c = open_ok(0);
    cr_assert_eq(rows_of(c), N_BLOBS);
    vyre_cache_close(c);
}

/* A symlink on the way to the root that another user owns: whoever owns
 * it decides where the cache is, and a repair there deletes files there. */
Test(adversarial_cache, root_through_a_symlink_of_another_user_is_refused)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give a symlink to another user");
    make_cache();
    char link[1200], via[1400];
    snprintf(link, sizeof link, "%s/planted", g_dir);
    cr_assert_eq(symlink(g_root, link), 0);
    cr_assert_eq(lchown(link, 12345, 12345), 0, "lchown: %s", strerror(errno));
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(link, NULL, &c, &e);
    cr_assert_eq(rc, VYRE_EUNSAFE, "root symlink of uid 12345: got %s", vyre_err_name(rc));
    cr_assert_neq(strstr(e.message, link), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.message, "12345"), NULL, "message: %s", e.message);
    cr_assert_str_neq(e.hint, "");

    /* As a component further up. */
    char dirlink[1200];
    snprintf(dirlink, sizeof dirlink, "%s/up", g_dir);
    cr_assert_eq(symlink(g_dir, dirlink), 0);
    cr_assert_eq(lchown(dirlink, 12345, 12345), 0);
    snprintf(via, sizeof via, "%s/cache", dirlink);
    cr_assert_eq(vyre_cache_open(via, TU_OPEN_FLAGS(VYRE_CACHE_READONLY), &c, &e), VYRE_EUNSAFE);

    /* The user's own symlink is followed as before. */
    cr_assert_eq(lchown(link, geteuid(), getegid()), 0);
    cr_assert_eq(vyre_cache_open(link, NULL, &c, &e), 0, "%s", e.message);
    vyre_cache_close(c);
}

Test(adversarial_cache, lock_that_is_a_symlink_is_reported_and_repaired)
{
    make_cache();
    make_outside();
    char lock[1400], target[1400];
    path_in(lock, sizeof lock, "lock");
    snprintf(target, sizeof target, "%s/notes.txt", g_out);
    unlink(lock);
    cr_assert_eq(symlink(target, lock), 0);
    outside_snapshot();
    vyre_cache *c = open_ok(VYRE_CACHE_READONLY);
    vyre_cache_verify_result r;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_verify(c, 0, &r, NULL, NULL, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(r.foreign, 1, "verify did not report the lock symlink");
    vyre_cache_close(c);
    c = open_ok(0);
    cr_assert_eq(vyre_cache_verify(c, 1, &r, NULL, NULL, NULL, NULL, &e), 0, "repair: %s",
                 e.message);
    cr_assert_eq(r.repaired, r.problems);
    struct stat st;
    cr_assert_eq(lstat(lock, &st), 0);
    cr_assert(S_ISREG(st.st_mode), "lock is not a regular file after repair");
    put_ok(c, 0);
    vyre_cache_close(c);
    expect_outside_unchanged("repairing the lock");
}

Test(adversarial_cache, reindex_keeps_a_foreign_sqlite_file_named_like_the_index)
{
    make_cache();
    char p[1400];
    static const char *const idx[] = {"index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"};
    for (size_t i = 0; i < 3; i++) {
        path_in(p, sizeof p, idx[i]);
        unlink(p);
    }
    path_in(p, sizeof p, "index.sqlite3");
    /* Someone's database: a valid SQLite file of another application. */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(p, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "PRAGMA journal_mode=DELETE; CREATE TABLE notes(t TEXT);"
                              "INSERT INTO notes VALUES('precious');",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    size_t len = 0;
    char *orig = tu_read_file(p, &len);
    cr_assert_not_null(orig);

    vyre_cache *c = open_ok(VYRE_CACHE_NO_INDEX);
    vyre_cache_reindex_result rr;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(rr.indexed, N_BLOBS);
    vyre_cache_close(c);
    /* Kept aside, byte for byte. */
    DIR *d = opendir(g_root);
    cr_assert_not_null(d);
    struct dirent *f;
    int kept = 0;
    while ((f = readdir(d))) {
        if (strncmp(f->d_name, "index.sqlite3.foreign-", 22) != 0)
            continue;
        char q[1400];
        path_in(q, sizeof q, f->d_name);
        size_t l2 = 0;
        char *b = tu_read_file(q, &l2);
        kept += b && l2 == len && memcmp(b, orig, len) == 0;
        free(b);
    }
    closedir(d);
    free(orig);
    cr_assert_eq(kept, 1, "the foreign database was not kept aside");
    cr_assert_neq(strstr(rr.index_kept, "index.sqlite3.foreign-"), NULL, "index_kept: '%s'",
                  rr.index_kept);
}
