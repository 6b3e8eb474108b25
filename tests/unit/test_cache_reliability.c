/*
 * test_cache_reliability.c - the cache's guarantees under real failure, with
 * real processes and real files (no mocks):
 *   - writers SIGKILLed at random instants leave at most debris in tmp/;
 *   - several processes get, put, prune and verify one cache at once;
 *   - every kind of damaged file is a miss, quarantined, never a crash;
 *   - a lost or garbage index is rebuilt from the blobs;
 *   - a read-only cache serves gets, and a full disk changes nothing;
 *   - prune and put running at once.
 * Children report through their exit status (and stderr for detail); they
 * never call Criterion's assertions and always leave through _exit().
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache/blob_internal.h"
#include "testutil.h"
#include "cache/cache_internal.h"
#include "vyre/cache.h"

#define NS_PER_S INT64_C(1000000000)
#define NOBODY   65534

static char g_dir[1024];  /* the test's temp directory */
static char g_root[1100]; /* <g_dir>/cache */

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_root, sizeof g_root, "%s/cache", g_dir);
}

/* Handles the test body opened, closed by teardown when an assertion ends
 * the test early (so that a failure reports the failure, not a leak). */
static vyre_cache *g_open[4];

static void teardown(void)
{
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++) {
        vyre_cache_close(g_open[i]);
        g_open[i] = NULL;
    }
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

/* ---- helpers ------------------------------------------------------------ */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void key_of(vyre_key *k, uint64_t id)
{
    for (int i = 0; i < 4; i++) {
        uint64_t v = XXH64(&id, sizeof id, (uint64_t)i + 1);
        memcpy(k->bytes + 8 * i, &v, 8);
    }
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = XXH64(&seed, sizeof seed, 0x5eed) | 1;
    for (size_t i = 0; i < len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
    }
}

/* Payload sizes derived from the id, so any process can check any read. */
static size_t big_len(uint64_t id)
{
    return ((size_t)64 << 10) + (size_t)(XXH64(&id, sizeof id, 7) % ((1u << 20) - (64u << 10) + 1));
}

static size_t small_len(uint64_t id)
{
    return 1024 + (size_t)(XXH64(&id, sizeof id, 11) % (63u * 1024 + 1));
}

/* The payload of id: len bytes from the seed id, malloc'ed (NULL on OOM). */
static uint8_t *payload_of(uint64_t id, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    if (p)
        fill(p, len, id);
    return p;
}

/* 1 when b is exactly id's payload of len bytes (and says so in its header). */
static int blob_is(const vyre_blob *b, const vyre_key *k, uint64_t id, size_t len)
{
    if (b->size != len || b->header.stored_size != len ||
        memcmp(b->header.key.bytes, k->bytes, VYRE_KEY_BYTES) != 0)
        return 0;
    uint8_t *want = payload_of(id, len);
    int ok = want && memcmp(b->payload, want, len) == 0;
    free(want);
    return ok;
}

static vyre_blob_header header_of(const vyre_key *k, uint64_t id)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = *k;
    h.kind = 1 + (uint32_t)(id % 3);
    snprintf(h.arch, sizeof h.arch, "sm_%u", 70 + (unsigned)(id % 4) * 10);
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.%u;driver-13000", (unsigned)(id % 2));
    h.compile_ns = 1000 * (id + 1);
    return h;
}

/* Puts id's payload of len bytes. Returns the vyre code. */
static int put_id(vyre_cache *c, uint64_t id, size_t len, vyre_error *e)
{
    vyre_key k;
    key_of(&k, id);
    vyre_blob_header h = header_of(&k, id);
    uint8_t *p = payload_of(id, len);
    if (!p)
        return VYRE_ENOMEM;
    int rc = vyre_cache_put(c, &h, p, len, e);
    free(p);
    return rc;
}

/* Gets id: 0 for a miss or the exact payload, 1 for a wrong payload, 2 for
 * an error (detail on stderr, tagged with who). *hit says which. */
static int check_get(vyre_cache *c, uint64_t id, size_t len, const char *who, int *hit)
{
    vyre_key k;
    key_of(&k, id);
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_get(c, &k, &b, &why, &e);
    if (hit)
        *hit = rc == 0;
    if (rc == VYRE_ENOENT) {
        if (why != VYRE_REJECT_NONE) {
            fprintf(stderr, "%s: id %" PRIu64 " rejected (%s): %s\n", who, id,
                    vyre_blob_reject_name(why), e.message);
            return 1;
        }
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "%s: get id %" PRIu64 ": %s: %s\n", who, id, vyre_err_name(rc), e.message);
        return 2;
    }
    int ok = blob_is(b, &k, id, len);
    if (!ok)
        fprintf(stderr, "%s: id %" PRIu64 ": wrong payload (%zu bytes, want %zu)\n", who, id,
                b->size, len);
    vyre_blob_free(b);
    return ok ? 0 : 1;
}

static vyre_cache *open_ok(unsigned flags)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(flags), &c, &e);
    cr_assert_eq(rc, 0, "open: %s: %s (hint: %s)", vyre_err_name(rc), e.message, e.hint);
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++)
        if (!g_open[i]) {
            g_open[i] = c;
            return c;
        }
    vyre_cache_close(c);
    cr_assert_fail("too many open handles in one test");
    return NULL;
}

static void close_ok(vyre_cache *c)
{
    for (size_t i = 0; i < sizeof g_open / sizeof g_open[0]; i++)
        if (g_open[i] == c)
            g_open[i] = NULL;
    vyre_cache_close(c);
}

static void sub(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_root, name);
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *f;
    while ((f = readdir(d)))
        if (strcmp(f->d_name, ".") != 0 && strcmp(f->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* Sets the mtime of every file in dir back by two hours (to make in-flight
 * temp files count as debris). Returns how many. */
static size_t age_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir '%s': %s", dir, strerror(errno));
    size_t n = 0;
    struct timespec ts[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        cr_assert_eq(utimensat(dirfd(d), f->d_name, ts, AT_SYMLINK_NOFOLLOW), 0);
        n++;
    }
    closedir(d);
    return n;
}

static void on_problem(const vyre_cache_verify_problem *p, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "verify: problem %d (%s) at '%s'%s%s\n", (int)p->kind,
            vyre_blob_reject_name(p->reject), p->path, p->action ? ": " : "",
            p->action ? p->action : "");
}

static vyre_cache_verify_result verify_ok(vyre_cache *c, int repair)
{
    vyre_cache_verify_result r;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_verify(c, repair, &r, on_problem, NULL, NULL, NULL, &e);
    cr_assert_eq(rc, 0, "verify: %s: %s", vyre_err_name(rc), e.message);
    return r;
}

static void expect_clean(const vyre_cache_verify_result *r)
{
    cr_assert_eq(r->problems, 0,
                 "verify: %" PRIu64 " problems: bad %" PRIu64 ", rows without file %" PRIu64
                 ", files without row %" PRIu64 ", mismatches %" PRIu64 ", debris %" PRIu64
                 ", stray %" PRIu64,
                 r->problems, r->bad_blobs, r->rows_without_file, r->files_without_row,
                 r->row_mismatches, r->debris, r->stray);
}

static int wait_status(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- a. writers killed at random instants -------------------------------- */

#define KILL_POOL       96
#define KILL_ITERATIONS 300

/* Writer child: announces each id on fd (2 bytes) before putting it, and
 * writes 0xffff once it is ready. Runs until killed. */
static void killed_writer(int fd, unsigned seed)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "writer: open: %s\n", e.message);
        _exit(30);
    }
    uint16_t ready = 0xffff;
    if (write(fd, &ready, sizeof ready) != (ssize_t)sizeof ready)
        _exit(31);
    for (unsigned j = 0;; j++) {
        uint16_t id = (uint16_t)((seed * 7u + j * 13u) % KILL_POOL);
        if (write(fd, &id, sizeof id) != (ssize_t)sizeof id)
            _exit(31);
        int rc = put_id(c, id, big_len(id), &e);
        if (rc != 0) {
            fprintf(stderr, "writer: put %u: %s: %s\n", id, vyre_err_name(rc), e.message);
            _exit(32);
        }
    }
}

/* Reader child: checks the whole pool over and over until fd hangs up. */
static void pool_reader(int stop_fd)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "reader: open: %s\n", e.message);
        _exit(40);
    }
    uint64_t hits = 0;
    for (;;) {
        for (uint64_t id = 0; id < KILL_POOL; id++) {
            int hit = 0;
            int r = check_get(c, id, big_len(id), "reader", &hit);
            if (r)
                _exit(40 + r);
            hits += (uint64_t)hit;
        }
        struct pollfd p = {stop_fd, POLLIN, 0};
        if (poll(&p, 1, 0) > 0)
            break;
    }
    vyre_cache_close(c);
    if (hits == 0) {
        fprintf(stderr, "reader: not a single hit\n");
        _exit(43);
    }
    _exit(0);
}

Test(reliability, writers_killed_at_random_leave_only_tmp_debris, .init = setup, .fini = teardown,
     .timeout = 120)
{
    close_ok(open_ok(0)); /* create the layout and index */
    int stop[2];
    cr_assert_eq(pipe(stop), 0);
    fflush(NULL);
    pid_t reader = fork();
    cr_assert(reader >= 0);
    if (reader == 0) {
        close(stop[1]);
        pool_reader(stop[0]);
    }
    close(stop[0]);

    /* The parent reads files only: no SQLite connection lives across the
     * forks below. */
    vyre_cache *c = open_ok(VYRE_CACHE_NO_INDEX | VYRE_CACHE_NO_HIT_TRACK);
    srand(12345);
    int attempted[KILL_POOL] = {0};
    uint64_t hits = 0, announced = 0;
    for (unsigned it = 0; it < KILL_ITERATIONS; it++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        fflush(NULL);
        pid_t w = fork();
        cr_assert(w >= 0);
        if (w == 0) {
            close(fds[0]);
            killed_writer(fds[1], it);
        }
        close(fds[1]);
        uint16_t msg = 0;
        cr_assert_eq(read(fds[0], &msg, sizeof msg), (ssize_t)sizeof msg, "writer never ready");
        cr_assert_eq(msg, 0xffff);
        struct timespec d = {0, (long)(rand() % 3001) * 1000};
        nanosleep(&d, NULL);
        kill(w, SIGKILL);
        int st = wait_status(w);
        cr_assert_eq(st, 128 + SIGKILL, "writer ended with %d before the kill", st);
        int seen[KILL_POOL] = {0};
        while (read(fds[0], &msg, sizeof msg) == (ssize_t)sizeof msg) {
            cr_assert_lt(msg, KILL_POOL);
            seen[msg] = attempted[msg] = 1;
            announced++;
        }
        close(fds[0]);
        for (uint64_t id = 0; id < KILL_POOL; id++) {
            if (!seen[id])
                continue;
            int hit = 0;
            cr_assert_eq(check_get(c, id, big_len(id), "parent", &hit), 0,
                         "iteration %u: bad read of id %" PRIu64, it, id);
            hits += (uint64_t)hit;
        }
    }
    close(stop[1]);
    int rs = wait_status(reader);
    cr_assert_eq(rs, 0, "reader failed with %d", rs);
    cr_assert_gt(announced, 0);
    cr_assert_gt(hits, 0, "no put ever completed: the kills were too early to test anything");

    /* Every id ever attempted is a miss or exact; nothing was rejected. */
    for (uint64_t id = 0; id < KILL_POOL; id++)
        if (attempted[id])
            cr_assert_eq(check_get(c, id, big_len(id), "final", NULL), 0);
    close_ok(c);
    char q[1200], tmp[1200];
    sub(q, sizeof q, "quarantine");
    sub(tmp, sizeof tmp, "tmp");
    cr_assert_eq(count_entries(q), 0, "files were quarantined: a reader saw a bad blob");

    /* The index survived the kills. Young temp files are in flight, not
     * problems; aged, they are debris, and only debris. */
    c = open_ok(0);
    vyre_cache_verify_result young = verify_ok(c, 0);
    size_t n_tmp = count_entries(tmp);
    cr_assert_eq(young.tmp_in_flight, n_tmp);
    cr_assert_eq(young.debris, 0);
    size_t aged = age_files(tmp);
    cr_log_info("kill test: %u kills, %" PRIu64 " ids announced, %" PRIu64
                " hits, %zu temp files left, %" PRIu64 " blobs without a row",
                KILL_ITERATIONS, announced, hits, aged, young.files_without_row);
    cr_assert_gt(aged, 0, "no kill landed inside a store: the test did not test anything");
    vyre_cache_verify_result first = verify_ok(c, 0);
    cr_assert_eq(first.debris, aged);
    cr_assert_eq(first.tmp_in_flight, 0);
    cr_assert_eq(first.bad_blobs, 0);
    cr_assert_eq(first.stray, 0);
    cr_assert_eq(first.rows_without_file, 0);
    cr_assert_eq(first.row_mismatches, 0);
    cr_assert_eq(first.repaired, 0, "verify without repair repaired something");
    cr_assert_eq(count_entries(tmp), aged, "verify without repair removed something");

    vyre_cache_verify_result r = verify_ok(c, 1);
    cr_assert_eq(r.debris, aged);
    cr_assert_eq(r.repaired, r.problems, "repair left problems");
    cr_assert_eq(count_entries(tmp), 0);
    r = verify_ok(c, 0);
    expect_clean(&r);
    cr_assert_eq(r.tmp_in_flight, 0);

    /* Checked last so that everything above runs even when it fails.
     * KNOWN LIBCORE BUG (cache_io.c, vyre_cache_put): a writer killed after
     * vyre__blob_store's rename and before vyre__index_upsert leaves a valid
     * blob without an index row, which verify counts as a problem
     * (FILE_WITHOUT_ROW): more than debris in tmp/, against DESIGN.md's
     * "a writer killed at any instant leaves at most debris in tmp/". */
    cr_assert_eq(first.files_without_row, 0,
                 "%" PRIu64 " blobs without a row: a writer killed between the rename and "
                 "the index upsert left more than debris in tmp/",
                 first.files_without_row);
    cr_assert_eq(first.problems, aged, "problems other than debris");
    cr_assert_eq(young.problems, 0, "in-flight temp files or other problems reported");
    close_ok(c);
}

/* ---- b. mixed concurrent processes ---------------------------------------- */

#define MIX_POOL  48
#define MIX_PROCS 4
#define MIX_MS    4000

/* Exit codes of a mixed worker. */
enum {
    MIX_OK = 0,
    MIX_EOPEN = 50,
    MIX_EBADREAD,
    MIX_EGET,
    MIX_EPUT,
    MIX_EPRUNE,
    MIX_EVERIFY,
    MIX_EPROBLEMS,
};

static int mixed_worker(unsigned seed)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "worker %u: open: %s\n", seed, e.message);
        return MIX_EOPEN;
    }
    char who[32];
    snprintf(who, sizeof who, "worker %u", seed);
    srand(seed);
    int64_t end = now_ns() + (int64_t)MIX_MS * 1000000;
    int status = MIX_OK;
    unsigned ops[4] = {0};
    while (status == MIX_OK && now_ns() < end) {
        int r = rand() % 100;
        uint64_t id = (uint64_t)(rand() % MIX_POOL);
        if (r < 60) {
            int g = check_get(c, id, small_len(id), who, NULL);
            status = g == 1 ? MIX_EBADREAD : g == 2 ? MIX_EGET : MIX_OK;
            ops[0]++;
        } else if (r < 90) {
            int rc = put_id(c, id, small_len(id), &e);
            if (rc) {
                fprintf(stderr, "%s: put: %s: %s\n", who, vyre_err_name(rc), e.message);
                status = MIX_EPUT;
            }
            ops[1]++;
        } else if (r < 95) {
            vyre_cache_prune_opts o;
            vyre_cache_prune_opts_init(&o);
            o.max_bytes = (uint64_t)(256 + rand() % 1024) << 10;
            vyre_cache_prune_result pr;
            int rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
            if (rc) {
                fprintf(stderr, "%s: prune: %s: %s\n", who, vyre_err_name(rc), e.message);
                status = MIX_EPRUNE;
            }
            ops[2]++;
        } else {
            vyre_cache_verify_result vr;
            int rc = vyre_cache_verify(c, rand() % 2, &vr, on_problem, NULL, NULL, NULL, &e);
            if (rc) {
                fprintf(stderr, "%s: verify: %s: %s\n", who, vyre_err_name(rc), e.message);
                status = MIX_EVERIFY;
            } else if (vr.problems) {
                fprintf(stderr, "%s: verify found %" PRIu64 " problems\n", who, vr.problems);
                status = MIX_EPROBLEMS;
            }
            ops[3]++;
        }
    }
    vyre_cache_close(c);
    fprintf(stderr, "%s: %u gets, %u puts, %u prunes, %u verifies\n", who, ops[0], ops[1], ops[2],
            ops[3]);
    return status;
}

Test(reliability, processes_get_put_prune_verify_at_once, .init = setup, .fini = teardown,
     .timeout = 120)
{
    close_ok(open_ok(0));
    pid_t pids[MIX_PROCS];
    fflush(NULL);
    for (unsigned i = 0; i < MIX_PROCS; i++) {
        pids[i] = fork();
        cr_assert(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(mixed_worker(i + 1));
    }
    int failed = 0;
    for (unsigned i = 0; i < MIX_PROCS; i++) {
        int st = wait_status(pids[i]);
        if (st != 0) {
            cr_log_error("worker %u exited with %d", i + 1, st);
            failed++;
        }
    }
    cr_assert_eq(failed, 0, "%d workers failed (see stderr)", failed);

    vyre_cache *c = open_ok(0);
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    cr_assert_eq(r.quarantined, 0, "a blob was rejected during the run");
    uint64_t present = 0;
    for (uint64_t id = 0; id < MIX_POOL; id++) {
        int hit = 0;
        cr_assert_eq(check_get(c, id, small_len(id), "final", &hit), 0);
        present += (uint64_t)hit;
    }
    cr_assert_gt(present, 0);
    close_ok(c);
}

/* ---- c. corruption matrix ------------------------------------------------- */

#define CORRUPT_ID  77
#define CORRUPT_LEN 4096

typedef struct corrupt_ctx {
    vyre_cache *c;
    vyre_key key;
    char path[VYRE_CACHE_PATH_MAX];
    char qdir[1200];
    uint8_t *orig; /* the good file */
    size_t orig_len;
    unsigned cases;
} corrupt_ctx;

/* Removes whatever is in quarantine/ (one entry expected), checking its type. */
static void empty_quarantine(corrupt_ctx *x, const char *what, mode_t want_type)
{
    DIR *d = opendir(x->qdir);
    cr_assert_not_null(d);
    struct dirent *f;
    size_t n = 0;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&x->key, hex);
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        n++;
        cr_assert_eq(strncmp(f->d_name, hex, VYRE_KEY_HEX_LEN), 0, "%s: quarantined as '%s'", what,
                     f->d_name);
        struct stat st;
        cr_assert_eq(fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert_eq(st.st_mode & S_IFMT, want_type, "%s: quarantined entry of type %o", what,
                     (unsigned)(st.st_mode & S_IFMT));
        cr_assert_eq(unlinkat(dirfd(d), f->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0), 0);
    }
    closedir(d);
    cr_assert_eq(n, 1, "%s: %zu entries in quarantine/, want 1", what, n);
}

/* Expects a get of the key to be a miss that quarantined what is at path. */
static void expect_rejected(corrupt_ctx *x, const char *what, vyre_blob_reject want,
                            mode_t want_type)
{
    vyre_blob *b = (vyre_blob *)&b;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_get(x->c, &x->key, &b, &why, &e);
    cr_assert_eq(rc, VYRE_ENOENT, "%s: got %s (%s)", what, vyre_err_name(rc), e.message);
    cr_assert_null(b, "%s: a blob came back", what);
    cr_assert_neq(why, VYRE_REJECT_NONE, "%s: not reported as rejected", what);
    if (want != VYRE_REJECT_NONE)
        cr_assert_eq(why, want, "%s: rejected as %s, want %s", what, vyre_blob_reject_name(why),
                     vyre_blob_reject_name(want));
    struct stat st;
    cr_assert_neq(lstat(x->path, &st), 0, "%s: still in blobs/", what);
    empty_quarantine(x, what, want_type);
    x->cases++;
}

static void plant(corrupt_ctx *x, const uint8_t *data, size_t len)
{
    unlink(x->path);
    tu_write_file(x->path, data, len);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the header checksum of a header in buf. */
static void reseal(uint8_t *buf)
{
    put_le64(buf + 248, XXH3_64bits(buf, 248));
}

Test(reliability, corrupt_files_are_misses_and_quarantined, .init = setup, .fini = teardown,
     .timeout = 120)
{
    corrupt_ctx x;
    memset(&x, 0, sizeof x);
    x.c = open_ok(0);
    key_of(&x.key, CORRUPT_ID);
    vyre_error e;
    cr_assert_eq(put_id(x.c, CORRUPT_ID, CORRUPT_LEN, &e), 0);
    cr_assert_eq(vyre_blob_path(g_root, &x.key, x.path, sizeof x.path, NULL), 0);
    sub(x.qdir, sizeof x.qdir, "quarantine");
    x.orig = (uint8_t *)tu_read_file(x.path, &x.orig_len);
    cr_assert_not_null(x.orig);
    cr_assert_eq(x.orig_len, VYRE_BLOB_HEADER_SIZE + CORRUPT_LEN);
    uint8_t *buf = malloc(x.orig_len + 64);
    cr_assert_not_null(buf);
    char what[128];

    /* Truncation at every header offset (0: the zero-length file) and at
     * several payload offsets. */
    static const size_t payload_cuts[] = {0, 1, CORRUPT_LEN / 2, CORRUPT_LEN - 1};
    for (size_t n = 0; n < VYRE_BLOB_HEADER_SIZE + 4; n++) {
        size_t len = n < VYRE_BLOB_HEADER_SIZE
                         ? n
                         : VYRE_BLOB_HEADER_SIZE + payload_cuts[n - VYRE_BLOB_HEADER_SIZE];
        plant(&x, x.orig, len);
        snprintf(what, sizeof what, "truncated to %zu bytes", len);
        expect_rejected(&x, what, VYRE_REJECT_TRUNCATED, S_IFREG);
    }

    /* One bit flipped in every header byte: the magic says "not a blob",
     * the format version says "another version", and the header checksum
     * catches the rest (itself included). */
    for (size_t i = 0; i < VYRE_BLOB_HEADER_SIZE; i++) {
        memcpy(buf, x.orig, x.orig_len);
        buf[i] ^= (uint8_t)(1u << (i % 8));
        plant(&x, buf, x.orig_len);
        snprintf(what, sizeof what, "bit %zu of header byte %zu flipped", i % 8, i);
        vyre_blob_reject want = i < 8    ? VYRE_REJECT_BAD_MAGIC
                                : i < 12 ? VYRE_REJECT_VERSION
                                         : VYRE_REJECT_HEADER_SUM;
        expect_rejected(&x, what, want, S_IFREG);
    }

    /* Bit flips in random payload bytes (first and last included). */
    srand(4242);
    for (int t = 0; t < 40; t++) {
        size_t off = t == 0 ? 0 : t == 1 ? CORRUPT_LEN - 1 : (size_t)rand() % CORRUPT_LEN;
        memcpy(buf, x.orig, x.orig_len);
        buf[VYRE_BLOB_HEADER_SIZE + off] ^= (uint8_t)(1u << (rand() % 8));
        plant(&x, buf, x.orig_len);
        snprintf(what, sizeof what, "payload byte %zu flipped", off);
        expect_rejected(&x, what, VYRE_REJECT_PAYLOAD_SUM, S_IFREG);
    }

    /* Wrong magic: an ELF file of the right size. */
    memcpy(buf, x.orig, x.orig_len);
    memcpy(buf,
           "\x7f"
           "ELF\x02\x01\x01\x00",
           8);
    plant(&x, buf, x.orig_len);
    expect_rejected(&x, "ELF magic", VYRE_REJECT_BAD_MAGIC, S_IFREG);
    plant(&x, (const uint8_t *)"hello\n", 6);
    expect_rejected(&x, "a text file", VYRE_REJECT_BAD_MAGIC, S_IFREG);

    /* Trailing bytes after the declared payload. */
    memcpy(buf, x.orig, x.orig_len);
    memset(buf + x.orig_len, 0, 64);
    plant(&x, buf, x.orig_len + 64);
    expect_rejected(&x, "64 trailing bytes", VYRE_REJECT_TRAILING, S_IFREG);

    /* Absurd declared sizes, header checksum recomputed so that only the
     * size check can catch them (raw_size follows, as v1 requires). */
    static const uint64_t absurd[] = {UINT64_C(1) << 63, VYRE_BLOB_MAX_PAYLOAD + 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        memcpy(buf, x.orig, x.orig_len);
        put_le64(buf + 136, absurd[i]);
        put_le64(buf + 144, absurd[i]);
        reseal(buf);
        plant(&x, buf, x.orig_len);
        snprintf(what, sizeof what, "declared size %" PRIu64, absurd[i]);
        expect_rejected(&x, what, VYRE_REJECT_BAD_FIELD, S_IFREG);
    }
    /* Plausible sizes that disagree with the file. */
    memcpy(buf, x.orig, x.orig_len);
    put_le64(buf + 136, CORRUPT_LEN + 1);
    put_le64(buf + 144, CORRUPT_LEN + 1);
    reseal(buf);
    plant(&x, buf, x.orig_len);
    expect_rejected(&x, "declared one byte longer", VYRE_REJECT_TRUNCATED, S_IFREG);
    memcpy(buf, x.orig, x.orig_len);
    put_le64(buf + 136, CORRUPT_LEN - 1);
    put_le64(buf + 144, CORRUPT_LEN - 1);
    reseal(buf);
    plant(&x, buf, x.orig_len);
    expect_rejected(&x, "declared one byte shorter", VYRE_REJECT_TRAILING, S_IFREG);

    /* A valid blob of another key under this key's name. */
    {
        vyre_key other;
        key_of(&other, CORRUPT_ID + 1);
        cr_assert_eq(put_id(x.c, CORRUPT_ID + 1, CORRUPT_LEN, &e), 0);
        char opath[VYRE_CACHE_PATH_MAX];
        cr_assert_eq(vyre_blob_path(g_root, &other, opath, sizeof opath, NULL), 0);
        size_t olen = 0;
        char *ob = tu_read_file(opath, &olen);
        cr_assert_not_null(ob);
        plant(&x, (const uint8_t *)ob, olen);
        free(ob);
        expect_rejected(&x, "another key's blob", VYRE_REJECT_KEY_MISMATCH, S_IFREG);
    }

    /* Large files (beyond the read-whole path): garbage, and a valid-looking
     * header over a damaged 2 MiB payload. */
    {
        size_t big = (size_t)2 << 20;
        uint8_t *g = malloc(VYRE_BLOB_HEADER_SIZE + big);
        cr_assert_not_null(g);
        fill(g, VYRE_BLOB_HEADER_SIZE + big, 99);
        plant(&x, g, VYRE_BLOB_HEADER_SIZE + big);
        expect_rejected(&x, "2 MiB of garbage", VYRE_REJECT_BAD_MAGIC, S_IFREG);
        memcpy(g, x.orig, VYRE_BLOB_HEADER_SIZE);
        put_le64(g + 136, big);
        put_le64(g + 144, big);
        reseal(g);
        plant(&x, g, VYRE_BLOB_HEADER_SIZE + big);
        expect_rejected(&x, "2 MiB payload with a wrong checksum", VYRE_REJECT_PAYLOAD_SUM,
                        S_IFREG);
        plant(&x, g, VYRE_BLOB_HEADER_SIZE + big / 2);
        expect_rejected(&x, "2 MiB payload cut in half", VYRE_REJECT_TRUNCATED, S_IFREG);
        free(g);
    }

    /* A directory where the blob should be. */
    unlink(x.path);
    cr_assert_eq(mkdir(x.path, 0700), 0);
    expect_rejected(&x, "a directory", VYRE_REJECT_NOT_REGULAR, S_IFDIR);

    /* A FIFO: must not hang the loader. */
    cr_assert_eq(mkfifo(x.path, 0600), 0);
    expect_rejected(&x, "a FIFO", VYRE_REJECT_NOT_REGULAR, S_IFIFO);

    /* A symlink to a valid copy of the very blob: following it would be a
     * hit, so only O_NOFOLLOW makes this a miss. The target is untouched. */
    char target[1200];
    snprintf(target, sizeof target, "%s/target.vblob", g_dir);
    tu_write_file(target, x.orig, x.orig_len);
    cr_assert_eq(symlink(target, x.path), 0);
    expect_rejected(&x, "a symlink", VYRE_REJECT_NOT_REGULAR, S_IFLNK);
    size_t tlen = 0;
    char *t = tu_read_file(target, &tlen);
    cr_assert_not_null(t, "the symlink's target is gone");
    cr_assert_eq(tlen, x.orig_len);
    cr_assert_eq(memcmp(t, x.orig, tlen), 0, "the symlink's target was modified");
    free(t);

    /* Every case was counted, and the cache still works. */
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(x.c, &st, NULL), 0);
    cr_assert_eq(st.session_rejects, x.cases);
    cr_log_info("corruption matrix: %u cases", x.cases);
    plant(&x, x.orig, x.orig_len);
    cr_assert_eq(check_get(x.c, CORRUPT_ID, CORRUPT_LEN, "after", NULL), 0);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(x.c, &x.key, &b, NULL, NULL), 0);
    vyre_blob_free(b);
    free(buf);
    free(x.orig);
    close_ok(x.c);
}

/* ---- d. lost or garbage index ------------------------------------------- */

#define INDEX_N 12

typedef struct rows {
    vyre_cache_entry v[64];
    size_t n;
} rows;

static int collect(const vyre_cache_entry *e, void *ctx)
{
    rows *r = ctx;
    if (r->n == 64)
        return 1;
    r->v[r->n++] = *e;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return memcmp(((const vyre_cache_entry *)a)->key.bytes,
                  ((const vyre_cache_entry *)b)->key.bytes, VYRE_KEY_BYTES);
}

static void snapshot(vyre_cache *c, rows *r)
{
    memset(r, 0, sizeof *r);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_foreach(c, collect, r, &e);
    cr_assert_eq(rc, 0, "foreach: %s: %s", vyre_err_name(rc), e.message);
    qsort(r->v, r->n, sizeof r->v[0], cmp_entry);
}

/* Same blobs described the same way (usage columns aside). */
static void expect_same_rows(const rows *a, const rows *b)
{
    cr_assert_eq(a->n, b->n, "%zu rows before, %zu after", a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const vyre_cache_entry *x = &a->v[i], *y = &b->v[i];
        cr_assert_eq(memcmp(x->key.bytes, y->key.bytes, VYRE_KEY_BYTES), 0, "row %zu key", i);
        cr_assert_eq(x->kind, y->kind, "row %zu kind", i);
        cr_assert_str_eq(x->arch, y->arch, "row %zu arch", i);
        cr_assert_str_eq(x->toolchain, y->toolchain, "row %zu toolchain", i);
        cr_assert_eq(x->raw_size, y->raw_size, "row %zu raw_size", i);
        cr_assert_eq(x->stored_size, y->stored_size, "row %zu stored_size", i);
        cr_assert_eq(x->file_size, y->file_size, "row %zu file_size", i);
        cr_assert_eq(x->created_unix_ns, y->created_unix_ns, "row %zu created", i);
        cr_assert_eq(x->compile_ns, y->compile_ns, "row %zu compile_ns", i);
    }
}

static void fill_index_test_cache(rows *before)
{
    vyre_cache *c = open_ok(0);
    vyre_error e;
    for (uint64_t id = 0; id < INDEX_N; id++)
        cr_assert_eq(put_id(c, id, small_len(id), &e), 0);
    for (uint64_t id = 0; id < INDEX_N; id += 3)
        cr_assert_eq(check_get(c, id, small_len(id), "fill", NULL), 0);
    snapshot(c, before);
    cr_assert_eq(before->n, INDEX_N);
    close_ok(c);
}

static void remove_index_files(void)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 4; i++) {
        char p[1300];
        snprintf(p, sizeof p, "%s/index.sqlite3%s", g_root, suffix[i]);
        unlink(p);
    }
}

static void reindex_ok(vyre_cache *c, uint64_t want)
{
    vyre_cache_reindex_result r;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_reindex(c, &r, NULL, NULL, &e);
    cr_assert_eq(rc, 0, "reindex: %s: %s", vyre_err_name(rc), e.message);
    cr_assert_eq(r.scanned, want);
    cr_assert_eq(r.indexed, want);
    cr_assert_eq(r.quarantined, 0);
}

Test(reliability, garbage_index_is_ecorrupt_and_reindex_restores_rows, .init = setup,
     .fini = teardown)
{
    rows before, after;
    fill_index_test_cache(&before);
    remove_index_files();
    char p[1300];
    snprintf(p, sizeof p, "%s/index.sqlite3", g_root);
    uint8_t garbage[16384];
    fill(garbage, sizeof garbage, 1234);
    tu_write_file(p, garbage, sizeof garbage);

    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, NULL, &c, &e);
    cr_assert_eq(rc, VYRE_ECORRUPT, "open on a garbage index: %s", vyre_err_name(rc));
    cr_assert_null(c);
    cr_assert_neq(strstr(e.hint, "rebuild the index"), NULL, "hint: %s", e.hint);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_REINDEX);

    c = open_ok(VYRE_CACHE_NO_INDEX);
    /* Gets work on the files alone. */
    cr_assert_eq(check_get(c, 1, small_len(1), "no-index", NULL), 0);
    reindex_ok(c, INDEX_N);
    snapshot(c, &after);
    expect_same_rows(&before, &after);
    close_ok(c);

    /* And a normal open sees the rebuilt index. */
    c = open_ok(0);
    snapshot(c, &after);
    expect_same_rows(&before, &after);
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    close_ok(c);
}

/* KNOWN LIBCORE BUG (cache_verify.c, vyre_cache_verify): with an empty index,
 * rows.v is NULL and qsort(NULL, 0, ...) trips UBSan's nonnull check, so
 * the first verify below aborts the test under VYRE_SANITIZE=undefined.
 * Fix: sort only when rows.n > 0. */
Test(reliability, deleted_index_is_rebuilt_by_reindex, .init = setup, .fini = teardown)
{
    rows before, after;
    fill_index_test_cache(&before);
    remove_index_files();
    vyre_cache *c = open_ok(0);
    snapshot(c, &after);
    cr_assert_eq(after.n, 0, "a new index starts empty");
    /* Nothing was lost: the blobs still load, and verify sees them. */
    for (uint64_t id = 0; id < INDEX_N; id++) {
        int hit = 0;
        cr_assert_eq(check_get(c, id, small_len(id), "no-rows", &hit), 0);
        cr_assert(hit, "id %" PRIu64 " lost with the index", id);
    }
    vyre_cache_verify_result r = verify_ok(c, 0);
    cr_assert_eq(r.files_without_row, INDEX_N);
    reindex_ok(c, INDEX_N);
    snapshot(c, &after);
    expect_same_rows(&before, &after);
    r = verify_ok(c, 0);
    expect_clean(&r);
    close_ok(c);
}

/* ---- e. read-only cache and full disk ------------------------------------ */

/* Makes path readable and traversable by everyone (directories 0755, files
 * 0644), recursively. */
static void open_up(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    if (!S_ISDIR(st.st_mode)) {
        cr_assert_eq(chmod(path, 0644), 0);
        return;
    }
    cr_assert_eq(chmod(path, 0755), 0);
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", path, f->d_name);
        open_up(p);
    }
    closedir(d);
}

enum {
    RO_OK = 0,
    RO_EPRIV = 60,
    RO_EOPEN,
    RO_NOT_READONLY,
    RO_EGET,
    RO_EPUT_CODE,
    RO_EPUT_MESSAGE,
    RO_EMISS,
    RO_EPRUNE,
};

/* Child, as nobody: the root-owned 0755 cache is safe but not writable. */
static int readonly_child(void)
{
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0 ||
        geteuid() != NOBODY)
        return RO_EPRIV;
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, NULL, &c, &e);
    if (rc != 0) {
        fprintf(stderr, "nobody: open: %s: %s (hint: %s)\n", vyre_err_name(rc), e.message, e.hint);
        return RO_EOPEN;
    }
    if (!vyre__cache_is_readonly(c))
        return RO_NOT_READONLY;
    if (check_get(c, 1, small_len(1), "nobody", NULL) != 0)
        return RO_EGET;
    int hit = 0;
    if (check_get(c, 1, small_len(1), "nobody", &hit) != 0 || !hit)
        return RO_EGET;
    vyre_error_clear(&e);
    rc = put_id(c, 2, small_len(2), &e);
    if (rc != VYRE_EROFS) {
        fprintf(stderr, "nobody: put: %s: %s\n", vyre_err_name(rc), e.message);
        return RO_EPUT_CODE;
    }
    if (!strstr(e.message, "read-only") || !strstr(e.message, g_root) || !e.hint[0]) {
        fprintf(stderr, "nobody: put message: '%s' hint: '%s'\n", e.message, e.hint);
        return RO_EPUT_MESSAGE;
    }
    if (check_get(c, 2, small_len(2), "nobody", &hit) != 0 || hit)
        return RO_EMISS;
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 0;
    vyre_cache_prune_result pr;
    if (vyre_cache_prune(c, &o, &pr, NULL, NULL, NULL) != VYRE_EROFS)
        return RO_EPRUNE;
    vyre_cache_close(c);
    return RO_OK;
}

/* KNOWN LIBCORE BUG (cache_open.c, vyre_cache_open / index_open.c): a WAL index that
 * nobody may write (no -shm to map, no right to create one) fails to open
 * with VYRE_EROFS, and the open fails instead of falling back to files only
 * as it does for a missing index; the child then exits with RO_EOPEN. */
Test(reliability, readonly_cache_serves_gets_and_refuses_puts, .init = setup, .fini = teardown)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to drop to uid %d", NOBODY);
    vyre_cache *c = open_ok(0);
    vyre_error e;
    cr_assert_eq(put_id(c, 1, small_len(1), &e), 0);
    close_ok(c);
    /* Root-owned, 0755 all the way down: safe (owner root) and read-only
     * for nobody. */
    cr_assert_eq(chmod(g_dir, 0755), 0);
    open_up(g_root);

    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(readonly_child());
    int st = wait_status(pid);
    cr_assert_eq(st, RO_OK, "read-only child failed with %d", st);

    /* Nothing was written by the child. */
    char tmp[1200];
    sub(tmp, sizeof tmp, "tmp");
    cr_assert_eq(count_entries(tmp), 0);
    vyre_key k2;
    key_of(&k2, 2);
    char p2[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_blob_path(g_root, &k2, p2, sizeof p2, NULL), 0);
    cr_assert_neq(access(p2, F_OK), 0);
}

/* One file of the cache tree (index files and the lock aside). */
typedef struct tree_ent {
    char path[640];
    uint64_t size;
    uint64_t sum;
} tree_ent;

typedef struct tree {
    tree_ent v[64];
    size_t n;
} tree;

static void tree_walk(tree *t, const char *dir, const char *rel)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir '%s'", dir);
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        if (!*rel &&
            (strncmp(f->d_name, "index.sqlite3", 13) == 0 || strcmp(f->d_name, "lock") == 0))
            continue;
        char p[2048], r[600];
        snprintf(p, sizeof p, "%s/%s", dir, f->d_name);
        snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", f->d_name);
        struct stat st;
        cr_assert_eq(lstat(p, &st), 0);
        cr_assert_lt(t->n, 64);
        tree_ent *e = &t->v[t->n++];
        memset(e, 0, sizeof *e);
        snprintf(e->path, sizeof e->path, "%s%s", r, S_ISDIR(st.st_mode) ? "/" : "");
        if (S_ISDIR(st.st_mode)) {
            tree_walk(t, p, r);
        } else {
            size_t len = 0;
            char *data = tu_read_file(p, &len);
            cr_assert_not_null(data);
            e->size = len;
            e->sum = XXH64(data, len, 0);
            free(data);
        }
    }
    closedir(d);
}

static int cmp_tree(const void *a, const void *b)
{
    return strcmp(((const tree_ent *)a)->path, ((const tree_ent *)b)->path);
}

static void tree_of(tree *t)
{
    memset(t, 0, sizeof *t);
    tree_walk(t, g_root, "");
    qsort(t->v, t->n, sizeof t->v[0], cmp_tree);
}

enum { FULL_OK = 0, FULL_ERLIMIT = 70, FULL_EOPEN, FULL_NEW, FULL_OVER, FULL_MSG, FULL_OLD };

#define FULL_LIMIT ((rlim_t)64 << 10)
#define FULL_LEN   ((size_t)256 << 10)

/* Child: files may not grow past 64 KiB, and SIGXFSZ is ignored so the
 * write fails with EFBIG instead of killing the process. */
static int full_disk_child(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {FULL_LIMIT, FULL_LIMIT};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return FULL_ERLIMIT;
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(VYRE_CACHE_NO_HIT_TRACK), &c, &e);
    if (rc) {
        fprintf(stderr, "full: open: %s: %s\n", vyre_err_name(rc), e.message);
        return FULL_EOPEN;
    }
    /* A new key, then an overwrite of the stored one, both too big. */
    vyre_error_clear(&e);
    rc = put_id(c, 2, FULL_LEN, &e);
    if (rc != VYRE_ENOSPC) {
        fprintf(stderr, "full: put new: %s: %s\n", vyre_err_name(rc), e.message);
        return FULL_NEW;
    }
    if (!e.message[0] || !e.hint[0]) {
        fprintf(stderr, "full: message '%s' hint '%s'\n", e.message, e.hint);
        return FULL_MSG;
    }
    vyre_error_clear(&e);
    rc = put_id(c, 1, FULL_LEN, &e);
    if (rc != VYRE_ENOSPC) {
        fprintf(stderr, "full: put over: %s: %s\n", vyre_err_name(rc), e.message);
        return FULL_OVER;
    }
    int hit = 0;
    if (check_get(c, 1, small_len(1), "full", &hit) != 0 || !hit)
        return FULL_OLD;
    vyre_cache_close(c);
    return FULL_OK;
}

Test(reliability, full_disk_fails_cleanly_and_changes_nothing, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(0);
    vyre_error e;
    cr_assert_eq(put_id(c, 1, small_len(1), &e), 0);
    cr_assert_lt(small_len(1), (size_t)FULL_LIMIT - VYRE_BLOB_HEADER_SIZE);
    rows before, after;
    snapshot(c, &before);
    close_ok(c);
    tree t0, t1;
    tree_of(&t0);

    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(full_disk_child());
    int st = wait_status(pid);
    cr_assert_eq(st, FULL_OK, "full-disk child failed with %d", st);

    tree_of(&t1);
    cr_assert_eq(t1.n, t0.n, "%zu files before, %zu after", t0.n, t1.n);
    for (size_t i = 0; i < t0.n; i++) {
        cr_assert_str_eq(t1.v[i].path, t0.v[i].path);
        cr_assert_eq(t1.v[i].size, t0.v[i].size, "'%s' changed size", t0.v[i].path);
        cr_assert_eq(t1.v[i].sum, t0.v[i].sum, "'%s' changed", t0.v[i].path);
    }
    char tmp[1200];
    sub(tmp, sizeof tmp, "tmp");
    cr_assert_eq(count_entries(tmp), 0, "temp files left behind");
    c = open_ok(0);
    snapshot(c, &after);
    expect_same_rows(&before, &after);
    for (size_t i = 0; i < before.n; i++) {
        cr_assert_eq(after.v[i].hits, before.v[i].hits);
        cr_assert_eq(after.v[i].last_access_unix_ns, before.v[i].last_access_unix_ns);
    }
    int hit = 0;
    cr_assert_eq(check_get(c, 1, small_len(1), "after", &hit), 0);
    cr_assert(hit);
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    close_ok(c);
}

/* ---- f. prune while another process stores -------------------------------- */

#define PRUNE_MS    2500
#define PRUNE_LIMIT ((uint64_t)1 << 20)

static int storing_child(void)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "storer: open: %s\n", e.message);
        return 80;
    }
    int64_t end = now_ns() + (int64_t)PRUNE_MS * 1000000;
    uint64_t id = 0;
    while (now_ns() < end) {
        int rc = put_id(c, id, small_len(id), &e);
        if (rc) {
            fprintf(stderr, "storer: put %" PRIu64 ": %s: %s\n", id, vyre_err_name(rc), e.message);
            return 81;
        }
        id++;
    }
    vyre_cache_close(c);
    fprintf(stderr, "storer: %" PRIu64 " puts\n", id);
    return id > 0 ? 0 : 82;
}

Test(reliability, prune_while_another_process_stores, .init = setup, .fini = teardown,
     .timeout = 120)
{
    close_ok(open_ok(0));
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(storing_child());

    vyre_cache *c = open_ok(0);
    uint64_t prunes = 0, removed = 0;
    int st = -1;
    for (;;) {
        int done = waitpid(pid, &st, WNOHANG) == pid;
        vyre_cache_prune_opts o;
        vyre_cache_prune_opts_init(&o);
        o.max_bytes = PRUNE_LIMIT;
        vyre_cache_prune_result r;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_cache_prune(c, &o, &r, NULL, NULL, &e);
        if (rc) {
            if (!done)
                kill(pid, SIGKILL);
            cr_assert_fail("prune: %s: %s", vyre_err_name(rc), e.message);
        }
        prunes++;
        removed += r.removed;
        if (done)
            break;
        struct timespec d = {0, 2000000};
        nanosleep(&d, NULL);
    }
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "storer failed (status %d)", st);
    cr_assert_gt(removed, 0, "prune never had anything to do: the test tested nothing");
    cr_log_info("prune vs put: %" PRIu64 " prunes removed %" PRIu64 " blobs", prunes, removed);

    vyre_cache_stats s;
    cr_assert_eq(vyre_cache_stats_get(c, &s, NULL), 0);
    cr_assert_leq(s.bytes, PRUNE_LIMIT);
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    cr_assert_eq(r.quarantined, 0);
    cr_assert_eq(r.blobs_checked, s.entries);
    close_ok(c);
}

/* ---- g. removals killed at every step ------------------------------------- */

/* Prune, clear and the automatic cleanup move files and delete rows; a
 * process killed between any two of those steps, or an index that will
 * not take the deletion, must leave no index row without its blob (rows
 * whose file a removal had moved into tmp/ count as that removal's debris,
 * as verify counts a killed put's; blobs a prune left without rows after
 * its commit are valid blobs the repair indexes again). The test hook
 * (cache_internal.h) stops a child at its n-th step, for every n until
 * one runs to the end.
 * Timeouts stay at 120 s like the rest of the suite: with a longer one
 * (240 s, 600 s) overlapping others under Criterion's -j2, its runner
 * leaked 96 bytes at exit, which LeakSanitizer turns into a failed
 * binary (seen with Criterion 2.4, ASan build; -j1 was clean). */

#define STEP_BLOBS 6

typedef enum removal_op { OP_PRUNE, OP_CLEAR, OP_CLEANUP } removal_op;

static const char *const op_names[] = {"prune", "clear", "cleanup"};

static int g_kill_at, g_steps_seen;

static void kill_at_step(const char *what, void *ctx)
{
    (void)what;
    (void)ctx;
    if (++g_steps_seen == g_kill_at)
        raise(SIGKILL);
}

/* A fresh cache of STEP_BLOBS small blobs, every handle closed. */
static void make_step_cache(void)
{
    tu_rm_rf(g_root);
    vyre_cache *c = open_ok(0);
    vyre_error e;
    for (uint64_t id = 0; id < STEP_BLOBS; id++)
        cr_assert_eq(put_id(c, id, small_len(id), &e), 0, "put: %s", e.message);
    close_ok(c);
}

/* Child: runs op, killed by the hook at its kill_at-th step. Exits 0 when
 * the operation ran to its end, 90 + n on an error. */
static int removal_child(removal_op op, int kill_at)
{
    g_kill_at = kill_at;
    g_steps_seen = 0;
    vyre__cache_set_step_hook(kill_at_step, NULL);
    vyre_config cf;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_config_load(&cf, g_root, NULL, 0, 0, &e) != 0)
        return 90;
    cf.max_size = 1; /* cleanup: everything goes */
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = &cf;
    vyre_cache *c = NULL;
    if (vyre_cache_open(g_root, &oo, &c, &e) != 0) {
        fprintf(stderr, "step child: open: %s\n", e.message);
        return 91;
    }
    int rc = 0;
    if (op == OP_PRUNE) {
        vyre_cache_prune_opts o;
        vyre_cache_prune_opts_init(&o);
        o.all = 1;
        vyre_cache_prune_result pr;
        rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
    } else if (op == OP_CLEAR) {
        vyre_cache_clear_result cl;
        rc = vyre_cache_clear(c, &cl, &e);
    } else {
        vyre__cache_cleanup_result cr;
        rc = vyre__cache_cleanup(c, 1, &cr, &e);
    }
    if (rc) {
        fprintf(stderr, "step child: %s: %s\n", op_names[op], e.message);
        return 92;
    }
    vyre_cache_close(c);
    return g_steps_seen > 0 ? 0 : 93;
}

/* Rows whose blob is neither in blobs/ nor, as a removal's debris, in tmp/
 * (verify's count), after a kill; then a repair leaves the cache clean. */
static void expect_consistent_after_kill(removal_op op, int n)
{
    vyre_cache *c = open_ok(0);
    vyre_cache_verify_result r = verify_ok(c, 0);
    cr_assert_eq(r.rows_without_file, 0,
                 "%s killed at step %d: %" PRIu64 " index rows without their blob", op_names[op], n,
                 r.rows_without_file);
    cr_assert_eq(r.bad_blobs + r.stray + r.foreign, 0, "%s killed at step %d: damage", op_names[op],
                 n);
    char tmp[1200];
    sub(tmp, sizeof tmp, "tmp");
    age_files(tmp);
    r = verify_ok(c, 1);
    cr_assert_eq(r.repaired, r.problems, "%s killed at step %d: repair left problems", op_names[op],
                 n);
    r = verify_ok(c, 0);
    expect_clean(&r);
    close_ok(c);
}

static void kill_at_every_step(removal_op op)
{
    int n;
    for (n = 1; n < 200; n++) {
        make_step_cache();
        fflush(NULL);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0)
            _exit(removal_child(op, n));
        int st = wait_status(pid);
        if (st == 0)
            break; /* ran to its end: every step was tried */
        cr_assert_eq(st, 128 + SIGKILL, "%s child at step %d exited with %d", op_names[op], n, st);
        expect_consistent_after_kill(op, n);
    }
    cr_log_info("%s: killed at each of %d steps", op_names[op], n - 1);
    cr_assert_geq(n - 1, STEP_BLOBS, "%s took fewer steps than blobs: the hook was not reached",
                  op_names[op]);
    /* Every removal commits once and unlinks each blob: a kill before the
     * commit and one before each unlink, at least. */
    cr_assert_geq(n - 1, STEP_BLOBS + 1, "%s: %d steps, fewer than a commit and an unlink a blob",
                  op_names[op], n - 1);
}

Test(reliability, prune_killed_at_every_step_leaves_no_row_without_file, .init = setup,
     .fini = teardown, .timeout = 120)
{
    kill_at_every_step(OP_PRUNE);
}

Test(reliability, clear_killed_at_every_step_leaves_no_row_without_file, .init = setup,
     .fini = teardown, .timeout = 120)
{
    kill_at_every_step(OP_CLEAR);
}

Test(reliability, cleanup_killed_at_every_step_leaves_no_row_without_file, .init = setup,
     .fini = teardown, .timeout = 120)
{
    kill_at_every_step(OP_CLEANUP);
}

/* The random-kill version: a pruner killed at a random instant, 60
 * times (the audit's 150-round run saw 7 rounds end with 5 to 238 rows
 * without files; before the fix this test failed 16 of 60 rounds). The
 * pool is topped up between rounds. */
#define RKILL_ROUNDS 60
#define RKILL_POOL   64

static int prune_all_child(void)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0)
        return 70;
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.all = 1;
    vyre_cache_prune_result pr;
    int rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
    vyre_cache_close(c);
    return rc ? 71 : 0;
}

Test(reliability, prune_killed_at_random_leaves_no_row_without_file, .init = setup,
     .fini = teardown, .timeout = 120)
{
    srand(4242);
    uint64_t killed = 0, bad_rounds = 0;
    for (int round = 0; round < RKILL_ROUNDS; round++) {
        vyre_cache *c = open_ok(0);
        vyre_error e;
        for (uint64_t id = 0; id < RKILL_POOL; id++) {
            vyre_key k;
            key_of(&k, id);
            char p[VYRE_CACHE_PATH_MAX];
            vyre_blob_path(g_root, &k, p, sizeof p, NULL);
            struct stat st;
            if (stat(p, &st) != 0)
                cr_assert_eq(put_id(c, id, 512, &e), 0, "put: %s", e.message);
        }
        close_ok(c);
        fflush(NULL);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0)
            _exit(prune_all_child());
        struct timespec d = {0, (long)(2000 + rand() % 20000) * 1000};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        int st = wait_status(pid);
        cr_assert(st == 0 || st == 128 + SIGKILL, "pruner exited with %d", st);
        killed += st != 0;
        c = open_ok(0);
        vyre_cache_verify_result r = verify_ok(c, 0);
        if (r.rows_without_file) {
            bad_rounds++;
            cr_log_error("round %d: %" PRIu64 " rows without files", round, r.rows_without_file);
        }
        /* Clean up for the next round: age the debris away. */
        char tmp[1200];
        sub(tmp, sizeof tmp, "tmp");
        age_files(tmp);
        verify_ok(c, 1);
        close_ok(c);
    }
    cr_log_info("random prune kills: %" PRIu64 " of %d rounds killed mid-prune", killed,
                RKILL_ROUNDS);
    cr_assert_gt(killed, 0, "no kill landed: the test tested nothing");
    cr_assert_eq(bad_rounds, 0, "%" PRIu64 " of %d rounds left rows without files", bad_rounds,
                 RKILL_ROUNDS);
}

/* Files of the step cache still in blobs/ (regular files only). */
static size_t blob_files(void)
{
    size_t n = 0;
    for (uint64_t id = 0; id < STEP_BLOBS; id++) {
        vyre_key k;
        key_of(&k, id);
        char p[VYRE_CACHE_PATH_MAX];
        vyre_blob_path(g_root, &k, p, sizeof p, NULL);
        struct stat st;
        n += stat(p, &st) == 0 && S_ISREG(st.st_mode);
    }
    return n;
}

/* An index another process holds locked past the busy timeout: prune
 * fails with a message that says nothing was removed, and removes
 * nothing (the audit saw every blob deleted, then "database is locked"). */
Test(reliability, prune_with_locked_index_fails_and_deletes_nothing, .init = setup,
     .fini = teardown, .timeout = 120)
{
    make_step_cache();
    char idx[1200];
    sub(idx, sizeof idx, "index.sqlite3");
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(idx, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    vyre_cache *c = open_ok(0);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.all = 1;
    vyre_cache_prune_result pr;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    cr_assert_neq(rc, 0, "prune succeeded on a locked index");
    cr_assert_neq(strstr(e.message, "nothing was removed"), NULL, "message: %s", e.message);
    cr_assert_eq(blob_files(), STEP_BLOBS, "prune deleted blobs it could not unindex");
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    close_ok(c);
}

enum { IDX_RO_OK = 0, IDX_RO_EPRIV = 100, IDX_RO_EOPEN, IDX_RO_PRUNED, IDX_RO_MESSAGE };

static int readonly_index_child(void)
{
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
        return IDX_RO_EPRIV;
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "nobody: open: %s\n", e.message);
        return IDX_RO_EOPEN;
    }
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.all = 1;
    vyre_cache_prune_result pr;
    vyre_error_clear(&e);
    int rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
    vyre_cache_close(c);
    if (rc == 0)
        return IDX_RO_PRUNED;
    if (!strstr(e.message, "nothing was removed")) {
        fprintf(stderr, "nobody: prune: %s\n", e.message);
        return IDX_RO_MESSAGE;
    }
    return IDX_RO_OK;
}

/* index.sqlite3 mode 0444 in a cache its user may otherwise write. */
Test(reliability, prune_with_readonly_index_file_fails_and_deletes_nothing, .init = setup,
     .fini = teardown, .timeout = 120)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to drop to uid %d", NOBODY);
    make_step_cache();
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "chown -R %d:%d '%s'", NOBODY, NOBODY, g_root);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(chmod(g_dir, 0755), 0);
    char idx[1200];
    sub(idx, sizeof idx, "index.sqlite3");
    cr_assert_eq(chmod(idx, 0444), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(readonly_index_child());
    int st = wait_status(pid);
    cr_assert_eq(blob_files(), STEP_BLOBS, "prune deleted blobs it could not unindex");
    cr_assert_eq(st, IDX_RO_OK, "child exited with %d", st);
}

/* ---- h. prune's order: rows out first, then the files ---------------------- */

/* Prune deletes the rows in one commit, then unlinks the blobs. Killed in
 * between, its victims are blobs without rows: valid blobs a get still
 * serves, which reindex (how 0) and verify --repair (how 1) index again,
 * and the next prune removes. Never a row without its blob. */
static void kill_at_first_unlink(const char *what, void *ctx)
{
    (void)ctx;
    if (strcmp(what, "unlink") == 0)
        raise(SIGKILL);
}

static int prune_killed_at_first_unlink_child(void)
{
    vyre__cache_set_step_hook(kill_at_first_unlink, NULL);
    return prune_all_child();
}

static void index_again(vyre_cache *c, int how)
{
    if (how == 0) {
        reindex_ok(c, STEP_BLOBS);
        return;
    }
    vyre_cache_verify_result r = verify_ok(c, 1);
    cr_assert_eq(r.files_without_row, STEP_BLOBS);
    cr_assert_eq(r.repaired, STEP_BLOBS, "verify --repair indexed %" PRIu64, r.repaired);
}

Test(reliability, prune_killed_after_its_commit_leaves_blobs_that_get_indexed_again, .init = setup,
     .fini = teardown, .timeout = 120)
{
    for (int how = 0; how < 2; how++) {
        make_step_cache();
        fflush(NULL);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0)
            _exit(prune_killed_at_first_unlink_child());
        cr_assert_eq(wait_status(pid), 128 + SIGKILL, "the prune was not killed at its unlink");
        vyre_cache *c = open_ok(0);
        vyre_cache_verify_result r = verify_ok(c, 0);
        cr_assert_eq(r.rows_without_file, 0);
        cr_assert_eq(r.files_without_row, STEP_BLOBS, "the rows did not go first");
        cr_assert_eq(r.problems, STEP_BLOBS);
        cr_assert_eq(blob_files(), STEP_BLOBS);
        for (uint64_t id = 0; id < STEP_BLOBS; id++) {
            int hit = 0;
            cr_assert_eq(check_get(c, id, small_len(id), "after the kill", &hit), 0);
            cr_assert(hit, "blob %" PRIu64 " without its row is not served", id);
        }
        index_again(c, how);
        r = verify_ok(c, 0);
        expect_clean(&r);
        vyre_cache_stats s;
        cr_assert_eq(vyre_cache_stats_get(c, &s, NULL), 0);
        cr_assert_eq(s.entries, STEP_BLOBS);
        vyre_cache_prune_opts o;
        vyre_cache_prune_opts_init(&o);
        o.all = 1;
        vyre_cache_prune_result pr;
        cr_assert_eq(vyre_cache_prune(c, &o, &pr, NULL, NULL, NULL), 0);
        cr_assert_eq(pr.removed, STEP_BLOBS);
        cr_assert_eq(blob_files(), 0, "the next prune left blobs");
        r = verify_ok(c, 0);
        expect_clean(&r);
        close_ok(c);
    }
}

/* Another process puts a key again, and hits another, after prune read
 * the index and before it takes the lock (the step hook stands in for
 * that process, with its own handle): both rows changed since the scan,
 * so both blobs stay, with their rows; the rest go. Before, prune deleted
 * the fresh blob and the one just used. */
static vyre_cache *g_other;
static int g_other_rc = -1;

static void put_and_hit_before_the_lock(const char *what, void *ctx)
{
    (void)ctx;
    if (strcmp(what, "lock") != 0 || g_other_rc != -1)
        return;
    vyre_error e;
    int hit = 0;
    g_other_rc = put_id(g_other, 1, small_len(1) + 8, &e);
    if (!g_other_rc)
        g_other_rc = check_get(g_other, 2, small_len(2), "other", &hit) || !hit;
    if (!g_other_rc)
        g_other_rc = vyre__cache_flush(g_other, &e);
}

Test(reliability, prune_keeps_a_blob_put_or_hit_since_its_scan, .init = setup, .fini = teardown,
     .timeout = 120)
{
    make_step_cache();
    vyre_cache *c = open_ok(0);
    g_other = open_ok(0);
    g_other_rc = -1;
    vyre__cache_set_step_hook(put_and_hit_before_the_lock, NULL);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.all = 1;
    vyre_cache_prune_result pr;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_prune(c, &o, &pr, NULL, NULL, &e);
    vyre__cache_set_step_hook(NULL, NULL);
    cr_assert_eq(rc, 0, "prune: %s", e.message);
    cr_assert_eq(g_other_rc, 0, "the other handle's put and hit failed");
    cr_assert_eq(pr.removed, STEP_BLOBS - 2);
    cr_assert_eq(pr.kept, 2);
    for (uint64_t id = 0; id < STEP_BLOBS; id++) {
        int hit = 0;
        size_t len = id == 1 ? small_len(1) + 8 : small_len(id);
        cr_assert_eq(check_get(c, id, len, "after prune", &hit), 0);
        cr_assert_eq(hit, id == 1 || id == 2, "blob %" PRIu64 ": hit %d", id, hit);
    }
    vyre_cache_verify_result r = verify_ok(c, 0);
    expect_clean(&r);
    cr_assert_eq(r.blobs_checked, 2);
    close_ok(g_other);
    close_ok(c);
}
