/*
 * test_cache.c - the pipeline cache facade (vyre/cache.h) on real files:
 * get/put round trips, atomic overwrite seen from another process, the
 * directory layout and root resolution, the ownership/permission checks,
 * version rejects, stats, prune (size/LRU, age, arch, stale toolchain, dry
 * run), find_prefix and clear. Each test gets a fresh temp directory.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache/cache_internal.h"
#include "cache/config_internal.h"
#include "testutil.h"
#include "vyre/cache.h"

#define NS_PER_S INT64_C(1000000000)
#define DAY_NS   (INT64_C(86400) * NS_PER_S)

static char g_dir[1024];  /* the test's temp directory */
static char g_root[1100]; /* <g_dir>/cache */

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_root, sizeof g_root, "%s/cache", g_dir);
}

static void teardown(void)
{
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

/* A key derived from id (distinct ids give distinct keys). */
static void key_of(vyre_key *k, uint64_t id)
{
    for (int i = 0; i < 4; i++) {
        uint64_t v = XXH64(&id, sizeof id, (uint64_t)i + 1);
        memcpy(k->bytes + 8 * i, &v, 8);
    }
}

/* Deterministic pseudo-random bytes from seed. */
static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = XXH64(&seed, sizeof seed, 0x5eed) | 1;
    size_t i = 0;
    for (; i < len; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
    }
}

static uint8_t *payload_new(size_t len, uint64_t seed)
{
    uint8_t *p = malloc(len ? len : 1);
    cr_assert_not_null(p);
    fill(p, len, seed);
    return p;
}

static vyre_cache *open_ok(const char *root, unsigned flags)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(root, TU_OPEN_FLAGS(flags), &c, &e);
    cr_assert_eq(rc, 0, "open '%s': %s: %s (hint: %s)", root, vyre_err_name(rc), e.message, e.hint);
    cr_assert_not_null(c);
    return c;
}

static vyre_blob_header header(const vyre_key *k, uint32_t kind, const char *arch,
                               const char *toolchain, uint64_t compile_ns, int64_t created)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = *k;
    h.kind = kind;
    snprintf(h.arch, sizeof h.arch, "%s", arch);
    snprintf(h.toolchain, sizeof h.toolchain, "%s", toolchain);
    h.compile_ns = compile_ns;
    h.created_unix_ns = created;
    return h;
}

/* Puts a payload of len bytes made from seed under key; returns the header
 * as stored. */
static vyre_blob_header put_full(vyre_cache *c, const vyre_key *k, uint32_t kind, const char *arch,
                                 const char *toolchain, uint64_t compile_ns, int64_t created,
                                 size_t len, uint64_t seed)
{
    vyre_blob_header h = header(k, kind, arch, toolchain, compile_ns, created);
    uint8_t *p = payload_new(len, seed);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_put(c, &h, p, len, &e);
    free(p);
    cr_assert_eq(rc, 0, "put: %s: %s (hint: %s)", vyre_err_name(rc), e.message, e.hint);
    return h;
}

static vyre_blob_header put_simple(vyre_cache *c, uint64_t id, size_t len)
{
    vyre_key k;
    key_of(&k, id);
    return put_full(c, &k, VYRE_BLOB_CUBIN, "sm_90", "nvrtc-13.0;driver-13000", 1000, 0, len, id);
}

/* Asserts that key loads and holds len bytes made from seed. */
static void expect_hit(vyre_cache *c, const vyre_key *k, size_t len, uint64_t seed)
{
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_COUNT;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_get(c, k, &b, &why, &e);
    cr_assert_eq(rc, 0, "get: %s: %s", vyre_err_name(rc), e.message);
    cr_assert_not_null(b);
    cr_assert_eq(why, VYRE_REJECT_NONE);
    cr_assert_eq(b->size, len);
    cr_assert_eq(memcmp(b->header.key.bytes, k->bytes, VYRE_KEY_BYTES), 0);
    uint8_t *want = payload_new(len, seed);
    cr_assert_eq(memcmp(b->payload, want, len), 0, "payload differs");
    free(want);
    vyre_blob_free(b);
}

static void expect_miss(vyre_cache *c, const vyre_key *k)
{
    vyre_blob *b = (vyre_blob *)&b; /* poison: must be reset to NULL */
    vyre_blob_reject why = VYRE_REJECT_COUNT;
    int rc = vyre_cache_get(c, k, &b, &why, NULL);
    cr_assert_eq(rc, VYRE_ENOENT, "expected a miss, got %s", vyre_err_name(rc));
    cr_assert_null(b);
    cr_assert_eq(why, VYRE_REJECT_NONE);
}

static void blob_path(const vyre_key *k, char *buf, size_t size)
{
    cr_assert_eq(vyre_blob_path(g_root, k, buf, size, NULL), 0);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The blob of k's bytes on disk as du counts them (st_blocks * 512),
 * measured on the filesystem the test runs on. */
static uint64_t disk_of(const vyre_key *k)
{
    char path[VYRE_CACHE_PATH_MAX];
    blob_path(k, path, sizeof path);
    return tu_disk_bytes(path);
}

/* Number of entries in dir (not . and ..); first name into first. */
static size_t count_entries(const char *dir, char *first, size_t fsize)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        if (n == 0 && first)
            snprintf(first, fsize, "%s", f->d_name);
        n++;
    }
    closedir(d);
    return n;
}

static void sub(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_root, name);
}

/* Number of rows in the index. */
static int count_row(const vyre_cache_entry *e, void *ctx)
{
    (void)e;
    (*(size_t *)ctx)++;
    return 0;
}

static size_t row_count(vyre_cache *c)
{
    size_t n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_foreach(c, count_row, &n, &e);
    cr_assert_eq(rc, 0, "foreach: %s: %s", vyre_err_name(rc), e.message);
    return n;
}

/* Rewrites the header of the blob file at path through edit(), then
 * recomputes the header checksum (XXH3-64 of bytes [0,248), little-endian
 * at 248) so that only the edited field can be what a loader rejects. */
static void edit_header(const char *path, void (*edit)(uint8_t *hdr, void *ctx), void *ctx)
{
    size_t len = 0;
    char *buf = tu_read_file(path, &len);
    cr_assert_not_null(buf, "cannot read '%s'", path);
    cr_assert_geq(len, (size_t)VYRE_BLOB_HEADER_SIZE);
    uint8_t *h = (uint8_t *)buf;
    edit(h, ctx);
    uint64_t sum = XXH3_64bits(h, 248);
    for (int i = 0; i < 8; i++)
        h[248 + i] = (uint8_t)(sum >> (8 * i));
    tu_write_file(path, buf, len);
    free(buf);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void set_format_version(uint8_t *h, void *ctx)
{
    put_le32(h + 8, *(uint32_t *)ctx);
}

static void set_key_version(uint8_t *h, void *ctx)
{
    put_le32(h + 12, *(uint32_t *)ctx);
}

/* ---- get / put ---------------------------------------------------------- */

Test(cache, miss_returns_enoent_and_no_blob, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key k;
    key_of(&k, 1);
    expect_miss(c, &k);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.session_misses, 1);
    cr_assert_eq(st.session_hits, 0);
    cr_assert_eq(st.entries, 0);
    vyre_cache_close(c);
}

Test(cache, store_then_load_round_trips_bytes_and_header, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key k;
    key_of(&k, 7);
    int64_t before = now_ns();
    vyre_blob_header h =
        put_full(c, &k, VYRE_BLOB_PTX, "sm_90a", "nvrtc-13.0;driver-13000", 123456789, 0, 5000, 7);
    int64_t after = now_ns();
    /* put fills in what it computed. */
    cr_assert_eq(h.format_version, VYRE_BLOB_FORMAT_VERSION);
    cr_assert_eq(h.key_version, VYRE_KEY_VERSION);
    cr_assert_eq(h.stored_size, 5000);
    cr_assert_eq(h.raw_size, 5000);
    cr_assert(h.created_unix_ns >= before && h.created_unix_ns <= after);

    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, NULL), 0);
    cr_assert_eq(b->size, 5000);
    uint8_t *want = payload_new(5000, 7);
    cr_assert_eq(memcmp(b->payload, want, 5000), 0);
    free(want);
    const vyre_blob_header *g = &b->header;
    cr_assert_eq(g->format_version, VYRE_BLOB_FORMAT_VERSION);
    cr_assert_eq(g->key_version, VYRE_KEY_VERSION);
    cr_assert_eq(memcmp(g->key.bytes, k.bytes, VYRE_KEY_BYTES), 0);
    cr_assert_eq(g->kind, VYRE_BLOB_PTX);
    cr_assert_eq(g->flags, 0);
    cr_assert_str_eq(g->arch, "sm_90a");
    cr_assert_str_eq(g->toolchain, "nvrtc-13.0;driver-13000");
    cr_assert_eq(g->raw_size, 5000);
    cr_assert_eq(g->stored_size, 5000);
    cr_assert_eq(g->created_unix_ns, h.created_unix_ns);
    cr_assert_eq(g->compile_ns, 123456789);
    cr_assert_eq(memcmp(g->payload_xxh128, h.payload_xxh128, 16), 0);
    vyre_blob_free(b);

    /* An explicit creation time is kept; an empty payload round-trips. */
    vyre_key k2;
    key_of(&k2, 8);
    vyre_blob_header h2 =
        put_full(c, &k2, VYRE_BLOB_FATBIN, "sm_80", "", 0, INT64_C(1700000000) * NS_PER_S, 0, 8);
    cr_assert_eq(h2.created_unix_ns, INT64_C(1700000000) * NS_PER_S);
    cr_assert_eq(vyre_cache_get(c, &k2, &b, NULL, NULL), 0);
    cr_assert_eq(b->size, 0);
    cr_assert_eq(b->header.created_unix_ns, INT64_C(1700000000) * NS_PER_S);
    cr_assert_eq(b->header.kind, VYRE_BLOB_FATBIN);
    cr_assert_str_eq(b->header.toolchain, "");
    vyre_blob_free(b);

    /* The file is where the layout says, header + payload bytes long. */
    char path[VYRE_CACHE_PATH_MAX];
    blob_path(&k, path, sizeof path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "no file at '%s'", path);
    cr_assert_eq(st.st_size, VYRE_BLOB_HEADER_SIZE + 5000);
    vyre_cache_close(c);
}

Test(cache, fresh_handle_sees_what_an_old_one_stored, .init = setup, .fini = teardown)
{
    vyre_cache *old = open_ok(g_root, 0);
    vyre_cache *fresh = open_ok(g_root, 0); /* opened before the put */
    vyre_key k;
    key_of(&k, 3);
    put_simple(old, 3, 777);
    expect_hit(fresh, &k, 777, 3);
    cr_assert_eq(row_count(fresh), 1);
    vyre_cache_close(fresh);
    vyre_cache_close(old);

    vyre_cache *later = open_ok(g_root, 0);
    expect_hit(later, &k, 777, 3);
    vyre_cache_entry e;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    cr_assert_eq(vyre_cache_find_prefix(later, hex, &e, NULL), 0);
    cr_assert_eq(e.stored_size, 777);
    cr_assert_eq(e.file_size, VYRE_BLOB_HEADER_SIZE + 777);
    vyre_cache_close(later);
}

Test(cache, distinct_keys_give_distinct_paths_and_contents, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key a, b;
    key_of(&a, 100);
    key_of(&b, 101);
    put_simple(c, 100, 4096);
    put_simple(c, 101, 4096);
    char pa[VYRE_CACHE_PATH_MAX], pb[VYRE_CACHE_PATH_MAX];
    blob_path(&a, pa, sizeof pa);
    blob_path(&b, pb, sizeof pb);
    cr_assert_str_neq(pa, pb);
    size_t la = 0, lb = 0;
    char *fa = tu_read_file(pa, &la);
    char *fb = tu_read_file(pb, &lb);
    cr_assert_not_null(fa);
    cr_assert_not_null(fb);
    cr_assert_eq(la, lb);
    cr_assert_neq(memcmp(fa + VYRE_BLOB_HEADER_SIZE, fb + VYRE_BLOB_HEADER_SIZE, la - 256), 0);
    free(fa);
    free(fb);
    expect_hit(c, &a, 4096, 100);
    expect_hit(c, &b, 4096, 101);
    cr_assert_eq(row_count(c), 2);
    vyre_cache_close(c);
}

/* Version v of the payload for the overwrite test: its first 8 bytes say v,
 * and its size changes with v so a mix of two versions cannot pass. */
static size_t version_len(uint64_t v)
{
    return 4096 + (size_t)(v % 7) * 40000;
}

static uint8_t *version_payload(uint64_t v)
{
    size_t len = version_len(v);
    uint8_t *p = payload_new(len, v);
    memcpy(p, &v, sizeof v);
    return p;
}

/* Reader child: gets the key in a loop for ms milliseconds. Exit 0 when
 * every read was one complete version and several versions were seen. */
static int overwrite_reader(const vyre_key *k, int ms)
{
    vyre_cache *c = NULL;
    vyre_error e;
    if (vyre_cache_open(g_root, NULL, &c, &e) != 0) {
        fprintf(stderr, "reader: open: %s\n", e.message);
        return 20;
    }
    int64_t end = now_ns() + (int64_t)ms * 1000000;
    uint64_t reads = 0, distinct = 0, last = UINT64_MAX;
    int status = 0;
    while (status == 0 && now_ns() < end) {
        vyre_blob *b = NULL;
        vyre_blob_reject why = VYRE_REJECT_NONE;
        int rc = vyre_cache_get(c, k, &b, &why, &e);
        if (rc != 0) {
            /* A rename replaces the name atomically: never a miss. */
            fprintf(stderr, "reader: get: %s (%s): %s\n", vyre_err_name(rc),
                    vyre_blob_reject_name(why), e.message);
            status = 21;
            break;
        }
        uint64_t v = 0;
        if (b->size >= sizeof v)
            memcpy(&v, b->payload, sizeof v);
        uint8_t *want = version_payload(v);
        if (b->size != version_len(v) || memcmp(b->payload, want, b->size) != 0) {
            fprintf(stderr, "reader: torn read: %zu bytes, version %" PRIu64 "\n", b->size, v);
            status = 22;
        }
        free(want);
        vyre_blob_free(b);
        reads++;
        if (v != last) {
            distinct++;
            last = v;
        }
    }
    vyre_cache_close(c);
    if (status == 0 && distinct < 3) {
        fprintf(stderr, "reader: only %" PRIu64 " versions in %" PRIu64 " reads\n", distinct,
                reads);
        status = 23;
    }
    return status;
}

Test(cache, overwriting_a_key_is_atomic_for_readers, .init = setup, .fini = teardown, .timeout = 60)
{
    vyre_key k;
    key_of(&k, 42);
    vyre_cache *c = open_ok(g_root, 0);
    uint8_t *p0 = version_payload(0);
    vyre_blob_header h = header(&k, VYRE_BLOB_CUBIN, "sm_90", "tc", 1, 0);
    cr_assert_eq(vyre_cache_put(c, &h, p0, version_len(0), NULL), 0);
    free(p0);
    vyre_cache_close(c); /* no SQLite handle crosses the fork */

    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(overwrite_reader(&k, 1500));

    c = open_ok(g_root, 0);
    uint64_t v = 1;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        uint8_t *p = version_payload(v);
        h = header(&k, VYRE_BLOB_CUBIN, "sm_90", "tc", 1, 0);
        vyre_error e;
        int rc = vyre_cache_put(c, &h, p, version_len(v), &e);
        free(p);
        if (rc != 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("put of version %" PRIu64 ": %s: %s", v, vyre_err_name(rc), e.message);
        }
        v++;
    }
    cr_assert(WIFEXITED(status), "reader died (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 0, "reader failed with %d after %" PRIu64 " puts",
                 WEXITSTATUS(status), v - 1);
    cr_assert_gt(v, 3);
    /* Nothing was rejected on the way, and the last version is what stays. */
    char q[VYRE_CACHE_PATH_MAX];
    sub(q, sizeof q, "quarantine");
    cr_assert_eq(count_entries(q, NULL, 0), 0);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, NULL), 0);
    uint64_t got = 0;
    memcpy(&got, b->payload, sizeof got);
    cr_assert_eq(got, v - 1);
    vyre_blob_free(b);
    cr_assert_eq(row_count(c), 1);
    vyre_cache_close(c);
}

/* ---- layout and root resolution ---------------------------------------- */

static void expect_dir_0700(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "'%s' missing", path);
    cr_assert(S_ISDIR(st.st_mode), "'%s' is not a directory", path);
    cr_assert_eq(st.st_mode & 07777, 0700, "'%s' has mode %04o", path,
                 (unsigned)(st.st_mode & 07777));
}

Test(cache, missing_nested_directory_is_created_0700, .init = setup, .fini = teardown)
{
    umask(022);
    char a[1200], ab[1200], root[1200];
    snprintf(a, sizeof a, "%s/a", g_dir);
    snprintf(ab, sizeof ab, "%s/a/b", g_dir);
    snprintf(root, sizeof root, "%s/a/b/c", g_dir);
    vyre_cache *c = open_ok(root, 0);
    cr_assert_str_eq(vyre_cache_root(c), root);
    cr_assert_eq(vyre__cache_is_readonly(c), 0);
    expect_dir_0700(a);
    expect_dir_0700(ab);
    expect_dir_0700(root);
    static const char *const subs[] = {"blobs", "tmp", "quarantine"};
    for (size_t i = 0; i < 3; i++) {
        char p[1300];
        snprintf(p, sizeof p, "%s/%s", root, subs[i]);
        expect_dir_0700(p);
    }
    /* The directory is usable straight away. */
    vyre_key k;
    key_of(&k, 5);
    vyre_blob_header h = header(&k, VYRE_BLOB_CUBIN, "sm_90", "tc", 0, 0);
    cr_assert_eq(vyre_cache_put(c, &h, "abc", 3, NULL), 0);
    vyre_cache_close(c);
}

Test(cache, readonly_open_of_a_missing_root_creates_nothing, .init = setup, .fini = teardown)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_open(g_root, TU_OPEN_FLAGS(VYRE_CACHE_READONLY), &c, &e), VYRE_ENOENT);
    cr_assert_null(c);
    cr_assert_neq(strstr(e.message, g_root), NULL, "message '%s' does not name the root",
                  e.message);
    cr_assert_eq(exists(g_root), 0);
}

Test(cache, readonly_flag_allows_get_and_refuses_put, .init = setup, .fini = teardown)
{
    vyre_cache *w = open_ok(g_root, 0);
    put_simple(w, 1, 100);
    vyre_cache_close(w);
    vyre_cache *c = open_ok(g_root, VYRE_CACHE_READONLY);
    cr_assert_eq(vyre__cache_is_readonly(c), 1);
    vyre_key k;
    key_of(&k, 1);
    expect_hit(c, &k, 100, 1);
    vyre_key k2;
    key_of(&k2, 2);
    vyre_blob_header h = header(&k2, VYRE_BLOB_CUBIN, "sm_90", "tc", 0, 0);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, "x", 1, &e), VYRE_EROFS);
    cr_assert_neq(strstr(e.message, "read-only"), NULL, "message: %s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    char path[VYRE_CACHE_PATH_MAX];
    blob_path(&k2, path, sizeof path);
    cr_assert_eq(exists(path), 0);
    vyre_cache_close(c);
}

Test(cache, root_from_empty_ptx_cache_dir_is_eenv_with_hint, .init = setup, .fini = teardown)
{
    setenv("VYRE_PTX_CACHE_DIR", "", 1);
    setenv("XDG_CACHE_HOME", g_dir, 1);
    setenv("HOME", g_dir, 1);
    char buf[VYRE_CACHE_PATH_MAX];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, &e), VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert_neq(strstr(e.message, "VYRE_PTX_CACHE_DIR"), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.hint, "VYRE_PTX_CACHE_DIR"), NULL, "hint: %s", e.hint);
    /* open(NULL) resolves the same way. */
    vyre_cache *c = NULL;
    cr_assert_eq(vyre_cache_open(NULL, NULL, &c, NULL), VYRE_EENV);
    cr_assert_null(c);
}

Test(cache, root_from_ptx_cache_dir, .init = setup, .fini = teardown)
{
    setenv("VYRE_PTX_CACHE_DIR", g_root, 1);
    char buf[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, NULL), 0);
    cr_assert_str_eq(buf, g_root);
    cr_assert_eq(exists(g_root), 0, "default_root must touch nothing");
    vyre_cache *c = open_ok(NULL, 0);
    cr_assert_str_eq(vyre_cache_root(c), g_root);
    char blobs[1200];
    sub(blobs, sizeof blobs, "blobs");
    cr_assert(exists(blobs));
    vyre_cache_close(c);
}

Test(cache, root_from_xdg_cache_home, .init = setup, .fini = teardown)
{
    unsetenv("VYRE_PTX_CACHE_DIR");
    char xdg[1200], home[1200], want[1300];
    snprintf(xdg, sizeof xdg, "%s/xdg", g_dir);
    snprintf(home, sizeof home, "%s/home", g_dir);
    snprintf(want, sizeof want, "%s/vyre/ptx-cache", xdg);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    char buf[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, NULL), 0);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(exists(xdg), 0, "default_root must touch nothing");
}

Test(cache, root_from_home, .init = setup, .fini = teardown)
{
    unsetenv("VYRE_PTX_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    char home[1200], want[1300];
    snprintf(home, sizeof home, "%s/home", g_dir);
    snprintf(want, sizeof want, "%s/.cache/vyre/ptx-cache", home);
    setenv("HOME", home, 1);
    char buf[VYRE_CACHE_PATH_MAX];
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, NULL), 0);
    cr_assert_str_eq(buf, want);
    /* A relative XDG_CACHE_HOME is ignored (XDG base directory spec). */
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, NULL), 0);
    cr_assert_str_eq(buf, want);
}

Test(cache, root_without_xdg_or_home_is_eenv, .init = setup, .fini = teardown)
{
    unsetenv("VYRE_PTX_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    char buf[VYRE_CACHE_PATH_MAX];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_default_root(buf, sizeof buf, &e), VYRE_EENV);
    cr_assert_neq(strstr(e.message, "HOME"), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.hint, "VYRE_PTX_CACHE_DIR"), NULL, "hint: %s", e.hint);
    vyre_cache *c = NULL;
    cr_assert_eq(vyre_cache_open(NULL, NULL, &c, NULL), VYRE_EENV);
    cr_assert_null(c);
}

static void expect_unsafe_mode(mode_t mode)
{
    cr_assert_eq(mkdir(g_root, 0700), 0);
    cr_assert_eq(chmod(g_root, mode), 0);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, NULL, &c, &e);
    cr_assert_eq(rc, VYRE_EUNSAFE, "mode %04o: got %s", (unsigned)mode, vyre_err_name(rc));
    cr_assert_null(c);
    cr_assert_neq(strstr(e.message, g_root), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.hint, "chmod"), NULL, "hint: %s", e.hint);
    /* Refused before anything was created inside. */
    char blobs[1200];
    sub(blobs, sizeof blobs, "blobs");
    cr_assert_eq(exists(blobs), 0);
}

Test(cache, root_writable_by_others_is_unsafe, .init = setup, .fini = teardown)
{
    expect_unsafe_mode(0777);
}

Test(cache, root_writable_by_group_is_unsafe, .init = setup, .fini = teardown)
{
    expect_unsafe_mode(0770);
}

Test(cache, root_owned_by_another_user_is_unsafe, .init = setup, .fini = teardown)
{
    cr_assert_eq(mkdir(g_root, 0700), 0);
    if (geteuid() != 0)
        cr_skip_test("needs root to chown the directory to another user");
    cr_assert_eq(chown(g_root, 12345, 12345), 0, "chown: %s", strerror(errno));
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, NULL, &c, &e);
    cr_assert_eq(rc, VYRE_EUNSAFE, "got %s", vyre_err_name(rc));
    cr_assert_null(c);
    cr_assert_neq(strstr(e.message, "12345"), NULL, "message: %s", e.message);
    cr_assert_neq(strstr(e.hint, "chown"), NULL, "hint: %s", e.hint);
    /* Read-only opens are refused too: the point is not to load such blobs. */
    cr_assert_eq(vyre_cache_open(g_root, TU_OPEN_FLAGS(VYRE_CACHE_READONLY), &c, NULL),
                 VYRE_EUNSAFE);
}

/* ---- rejects ------------------------------------------------------------ */

static void expect_version_reject(void (*edit)(uint8_t *, void *), uint32_t value)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key k;
    key_of(&k, 9);
    put_simple(c, 9, 2000);
    char path[VYRE_CACHE_PATH_MAX];
    blob_path(&k, path, sizeof path);
    edit_header(path, edit, &value);

    vyre_blob *b = (vyre_blob *)&b;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    int rc = vyre_cache_get(c, &k, &b, &why, NULL);
    cr_assert_eq(rc, VYRE_ENOENT, "got %s", vyre_err_name(rc));
    cr_assert_null(b);
    cr_assert_eq(why, VYRE_REJECT_VERSION, "why: %s", vyre_blob_reject_name(why));
    cr_assert_eq(exists(path), 0, "rejected blob still in blobs/");
    char q[1200], name[512], hex[VYRE_KEY_HEX_LEN + 1];
    sub(q, sizeof q, "quarantine");
    cr_assert_eq(count_entries(q, name, sizeof name), 1);
    vyre_key_to_hex(&k, hex);
    cr_assert_eq(strncmp(name, hex, VYRE_KEY_HEX_LEN), 0, "quarantined as '%s'", name);
    /* Its row went with it, and the next get is a plain miss. */
    cr_assert_eq(row_count(c), 0);
    expect_miss(c, &k);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.session_rejects, 1);
    cr_assert_eq(st.quarantined, 1);
    /* A new store of the key works again. */
    put_simple(c, 9, 2000);
    expect_hit(c, &k, 2000, 9);
    vyre_cache_close(c);
}

Test(cache, entry_of_another_format_version_is_rejected, .init = setup, .fini = teardown)
{
    expect_version_reject(set_format_version, VYRE_BLOB_FORMAT_VERSION + 1);
}

Test(cache, entry_of_another_key_version_is_rejected, .init = setup, .fini = teardown)
{
    expect_version_reject(set_key_version, VYRE_KEY_VERSION + 1);
}

Test(cache, entry_of_key_version_zero_is_rejected, .init = setup, .fini = teardown)
{
    expect_version_reject(set_key_version, 0);
}

/* ---- stats -------------------------------------------------------------- */

static const vyre_cache_bucket *find_bucket(const vyre_cache_bucket *b, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(b[i].name, name) == 0)
            return &b[i];
    return NULL;
}

static void get_n(vyre_cache *c, const vyre_key *k, int n)
{
    for (int i = 0; i < n; i++) {
        vyre_blob *b = NULL;
        cr_assert_eq(vyre_cache_get(c, k, &b, NULL, NULL), 0);
        vyre_blob_free(b);
    }
}

Test(cache, stats_after_puts_and_gets, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    int64_t now = now_ns();
    vyre_key k[5];
    for (int i = 0; i < 5; i++)
        key_of(&k[i], 200 + (uint64_t)i);
    put_full(c, &k[0], VYRE_BLOB_CUBIN, "sm_90", "tc", 1000000, 0, 1000, 1);
    put_full(c, &k[1], VYRE_BLOB_CUBIN, "sm_90", "tc", 2000000, 0, 2000, 2);
    put_full(c, &k[2], VYRE_BLOB_CUBIN, "sm_90", "tc", 3000000, 0, 3000, 3);
    put_full(c, &k[3], VYRE_BLOB_PTX, "sm_80", "tc", 500000, now - 40 * DAY_NS, 500, 4);
    put_full(c, &k[4], VYRE_BLOB_PTX, "sm_80", "tc", 500000, now - 2 * DAY_NS, 700, 5);
    get_n(c, &k[0], 3);
    get_n(c, &k[1], 1);
    get_n(c, &k[3], 2);
    vyre_key missing;
    key_of(&missing, 999);
    expect_miss(c, &missing);
    cr_assert_eq(vyre__cache_flush(c, NULL), 0);

    vyre_cache_stats st;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_stats_get(c, &st, &e), 0, "stats: %s", e.message);
    const uint64_t H = VYRE_BLOB_HEADER_SIZE;
    cr_assert_eq(st.entries, 5);
    /* Sizes on disk, as du counts; the apparent sizes beside. */
    uint64_t d[5];
    for (int i = 0; i < 5; i++)
        d[i] = disk_of(&k[i]);
    cr_assert_eq(st.bytes, d[0] + d[1] + d[2] + d[3] + d[4]);
    cr_assert_eq(st.apparent_bytes, 5 * H + 7200);
    cr_assert_str_eq(st.by_kind[VYRE_BLOB_CUBIN].name, "cubin");
    cr_assert_eq(st.by_kind[VYRE_BLOB_CUBIN].entries, 3);
    cr_assert_eq(st.by_kind[VYRE_BLOB_CUBIN].bytes, d[0] + d[1] + d[2]);
    cr_assert_str_eq(st.by_kind[VYRE_BLOB_PTX].name, "ptx");
    cr_assert_eq(st.by_kind[VYRE_BLOB_PTX].entries, 2);
    cr_assert_eq(st.by_kind[VYRE_BLOB_PTX].bytes, d[3] + d[4]);
    cr_assert_eq(st.by_kind[VYRE_BLOB_FATBIN].entries, 0);
    cr_assert_eq(st.by_kind[0].entries, 0);
    cr_assert_eq(st.n_arch, 2);
    const vyre_cache_bucket *a90 = find_bucket(st.by_arch, st.n_arch, "sm_90");
    const vyre_cache_bucket *a80 = find_bucket(st.by_arch, st.n_arch, "sm_80");
    cr_assert_not_null(a90);
    cr_assert_not_null(a80);
    cr_assert_eq(a90->entries, 3);
    cr_assert_eq(a90->bytes, d[0] + d[1] + d[2]);
    cr_assert_eq(a80->entries, 2);
    cr_assert_eq(a80->bytes, d[3] + d[4]);
    /* Age by creation: three new, one 2 days old (< 7d), one 40 days old. */
    cr_assert_eq(st.by_age[0].entries, 3);
    cr_assert_eq(st.by_age[1].entries, 0);
    cr_assert_eq(st.by_age[2].entries, 1);
    cr_assert_eq(st.by_age[2].bytes, d[4]);
    cr_assert_eq(st.by_age[3].entries, 0);
    cr_assert_eq(st.by_age[4].entries, 1);
    cr_assert_eq(st.by_age[4].bytes, d[3]);
    cr_assert_eq(st.hits, 6);
    cr_assert_eq(st.misses, 1);
    cr_assert_eq(st.compile_ns_saved, 3 * 1000000 + 1 * 2000000 + 2 * 500000);
    cr_assert_eq(st.session_hits, 6);
    cr_assert_eq(st.session_misses, 1);
    cr_assert_eq(st.session_rejects, 0);
    cr_assert_eq(st.quarantined, 0);
    cr_assert_eq(st.tmp_files, 0);
    cr_assert_eq(st.debris, 0);
    vyre_cache_close(c);

    /* Usage survives the handle: close flushed it into the index. */
    c = open_ok(g_root, 0);
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.entries, 5);
    cr_assert_eq(st.hits, 6);
    cr_assert_eq(st.misses, 1);
    cr_assert_eq(st.session_hits, 0);
    vyre_cache_close(c);
}

Test(cache, stats_count_tmp_debris_and_quarantine, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    char p[1300];
    snprintf(p, sizeof p, "%s/tmp/young.tmp", g_root);
    tu_write_file(p, "abc", 3);
    snprintf(p, sizeof p, "%s/tmp/old.tmp", g_root);
    tu_write_file(p, "abcd", 4);
    struct timespec ts[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
    snprintf(p, sizeof p, "%s/quarantine/x.vblob.bad-magic.1", g_root);
    tu_write_file(p, "12345", 5);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.tmp_files, 2);
    cr_assert_eq(st.debris, 1);
    cr_assert_eq(st.quarantined, 1);
    cr_assert_eq(st.quarantine_bytes, tu_disk_bytes(p), "its 5 bytes take a block on disk");
    vyre_cache_close(c);
}

/* ---- prune -------------------------------------------------------------- */

typedef struct pruned {
    vyre_key keys[64];
    char reasons[64][32];
    size_t n;
} pruned;

static void on_prune(const vyre_cache_entry *e, const char *reason, void *ctx)
{
    pruned *p = ctx;
    cr_assert_lt(p->n, 64);
    p->keys[p->n] = e->key;
    snprintf(p->reasons[p->n], sizeof p->reasons[p->n], "%s", reason ? reason : "(null)");
    p->n++;
}

static int pruned_has(const pruned *p, const vyre_key *k)
{
    for (size_t i = 0; i < p->n; i++)
        if (memcmp(p->keys[i].bytes, k->bytes, VYRE_KEY_BYTES) == 0)
            return 1;
    return 0;
}

static void prune_ok(vyre_cache *c, const vyre_cache_prune_opts *o, vyre_cache_prune_result *r,
                     pruned *p)
{
    memset(p, 0, sizeof *p);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_prune(c, o, r, on_prune, p, &e);
    cr_assert_eq(rc, 0, "prune: %s: %s", vyre_err_name(rc), e.message);
}

static void expect_present(const vyre_key *k, int present)
{
    char path[VYRE_CACHE_PATH_MAX];
    blob_path(k, path, sizeof path);
    cr_assert_eq(exists(path), present, "'%s' should %s", path,
                 present ? "still be there" : "be gone");
}

Test(cache, prune_by_size_removes_least_recently_used_first, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    int64_t base = now_ns() - 600 * NS_PER_S;
    vyre_key k[6];
    for (int i = 0; i < 6; i++) {
        key_of(&k[i], 300 + (uint64_t)i);
        put_full(c, &k[i], VYRE_BLOB_CUBIN, "sm_90", "tc", 0, base + i * NS_PER_S, 10000,
                 (uint64_t)i);
    }
    /* The two oldest are used now: they become the most recently used. */
    get_n(c, &k[0], 1);
    get_n(c, &k[1], 1);
    /* Each blob's bytes on disk (all the same size): what the limit counts. */
    const uint64_t F = disk_of(&k[0]);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 3 * F;
    vyre_cache_prune_result r;
    pruned p;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.examined, 6);
    cr_assert_eq(r.removed, 3);
    cr_assert_eq(r.removed_bytes, 3 * F);
    cr_assert_eq(r.kept, 3);
    cr_assert_eq(r.kept_bytes, 3 * F);
    cr_assert_eq(r.target_reached, 1);
    cr_assert_eq(p.n, 3);
    /* Never used, oldest first: 2, 3, 4 go; 5 (newer), 0 and 1 (used) stay. */
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(memcmp(p.keys[i].bytes, k[2 + i].bytes, VYRE_KEY_BYTES), 0,
                     "victim %d is not entry %d", i, 2 + i);
        cr_assert_str_eq(p.reasons[i], "size");
    }
    for (int i = 0; i < 6; i++)
        expect_present(&k[i], i == 0 || i == 1 || i == 5);
    cr_assert_eq(row_count(c), 3);
    expect_hit(c, &k[0], 10000, 0);
    expect_hit(c, &k[5], 10000, 5);
    expect_miss(c, &k[3]);

    /* Already under the limit: nothing more goes. */
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 0);
    cr_assert_eq(r.kept, 3);
    cr_assert_eq(r.target_reached, 1);
    vyre_cache_close(c);
}

Test(cache, prune_by_age_removes_entries_unused_for_longer, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    int64_t old = now_ns() - 3 * DAY_NS;
    vyre_key k[4];
    for (int i = 0; i < 4; i++) {
        key_of(&k[i], 400 + (uint64_t)i);
        put_full(c, &k[i], VYRE_BLOB_CUBIN, "sm_90", "tc", 0, i < 3 ? old : 0, 100, (uint64_t)i);
    }
    get_n(c, &k[2], 1); /* created long ago but used now */
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_age_ns = DAY_NS;
    vyre_cache_prune_result r;
    pruned p;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 2);
    cr_assert_eq(r.kept, 2);
    cr_assert_eq(p.n, 2);
    for (size_t i = 0; i < p.n; i++)
        cr_assert_str_eq(p.reasons[i], "age");
    cr_assert(pruned_has(&p, &k[0]) && pruned_has(&p, &k[1]));
    for (int i = 0; i < 4; i++)
        expect_present(&k[i], i >= 2);
    cr_assert_eq(row_count(c), 2);
    vyre_cache_close(c);
}

Test(cache, prune_by_arch, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key k[4];
    for (int i = 0; i < 4; i++) {
        key_of(&k[i], 500 + (uint64_t)i);
        put_full(c, &k[i], VYRE_BLOB_CUBIN, i % 2 ? "sm_80" : "sm_90", "tc", 0, 0, 100,
                 (uint64_t)i);
    }
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.arch = "sm_80";
    vyre_cache_prune_result r;
    pruned p;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 2);
    cr_assert_eq(r.kept, 2);
    cr_assert(pruned_has(&p, &k[1]) && pruned_has(&p, &k[3]));
    for (size_t i = 0; i < p.n; i++)
        cr_assert_str_eq(p.reasons[i], "arch");
    for (int i = 0; i < 4; i++)
        expect_present(&k[i], i % 2 == 0);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.n_arch, 1);
    cr_assert_str_eq(st.by_arch[0].name, "sm_90");
    vyre_cache_close(c);
}

Test(cache, prune_by_stale_toolchain, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key k[4];
    for (int i = 0; i < 4; i++) {
        key_of(&k[i], 600 + (uint64_t)i);
        put_full(c, &k[i], VYRE_BLOB_CUBIN, "sm_90", i < 2 ? "nvrtc-12.4" : "nvrtc-13.0", 0, 0, 100,
                 (uint64_t)i);
    }
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.stale_toolchain = 1;
    vyre_cache_prune_result r;
    vyre_error e;
    vyre_error_clear(&e);
    /* Without a keep list the cache refuses: it does not ask the compiler. */
    cr_assert_eq(vyre_cache_prune(c, &o, &r, NULL, NULL, &e), VYRE_EINVAL);
    cr_assert_neq(e.hint[0], '\0');
    expect_present(&k[0], 1);
    const char *keep[] = {"nvrtc-13.0"};
    o.keep_toolchains = keep;
    o.n_keep_toolchains = 1;
    pruned p;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 2);
    cr_assert(pruned_has(&p, &k[0]) && pruned_has(&p, &k[1]));
    for (size_t i = 0; i < p.n; i++)
        cr_assert_str_eq(p.reasons[i], "stale-toolchain");
    for (int i = 0; i < 4; i++)
        expect_present(&k[i], i >= 2);
    vyre_cache_close(c);
}

Test(cache, prune_dry_run_removes_nothing_and_reports_the_same_set, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    int64_t base = now_ns() - 5 * DAY_NS;
    vyre_key k[8];
    for (int i = 0; i < 8; i++) {
        key_of(&k[i], 700 + (uint64_t)i);
        put_full(c, &k[i], VYRE_BLOB_CUBIN, i == 7 ? "sm_75" : "sm_90", "tc", 0, i < 2 ? base : 0,
                 1000 + 100 * (size_t)i, (uint64_t)i);
    }
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 4 * disk_of(&k[0]); /* the smallest blob, on disk */
    o.max_age_ns = DAY_NS;
    o.arch = "sm_75";
    o.dry_run = 1;
    vyre_cache_prune_result dry, real;
    pruned pd, pr;
    prune_ok(c, &o, &dry, &pd);
    cr_assert_gt(dry.removed, 3);
    cr_assert_lt(dry.removed, 8);
    cr_assert_eq(pd.n, dry.removed);
    for (int i = 0; i < 8; i++)
        expect_present(&k[i], 1);
    cr_assert_eq(row_count(c), 8);

    o.dry_run = 0;
    prune_ok(c, &o, &real, &pr);
    cr_assert_eq(real.examined, dry.examined);
    cr_assert_eq(real.removed, dry.removed);
    cr_assert_eq(real.removed_bytes, dry.removed_bytes);
    cr_assert_eq(real.kept, dry.kept);
    cr_assert_eq(real.kept_bytes, dry.kept_bytes);
    cr_assert_eq(real.target_reached, dry.target_reached);
    cr_assert_eq(pr.n, pd.n);
    for (size_t i = 0; i < pd.n; i++) {
        cr_assert_eq(memcmp(pr.keys[i].bytes, pd.keys[i].bytes, VYRE_KEY_BYTES), 0);
        cr_assert_str_eq(pr.reasons[i], pd.reasons[i]);
    }
    for (int i = 0; i < 8; i++)
        expect_present(&k[i], !pruned_has(&pd, &k[i]));
    cr_assert_eq(row_count(c), 8 - pd.n);
    vyre_cache_close(c);
}

/* max_bytes 0 is a reachable target: every entry goes. target_reached is 0
 * only when removals fail; through the options alone the target can always
 * be reached, because every entry may be removed. */
Test(cache, prune_to_zero_bytes_removes_everything, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    for (uint64_t i = 0; i < 5; i++)
        put_simple(c, 800 + i, 300);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 0;
    vyre_cache_prune_result r;
    pruned p;
    o.dry_run = 1;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 5);
    cr_assert_eq(r.target_reached, 1);
    o.dry_run = 0;
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 5);
    cr_assert_eq(r.kept, 0);
    cr_assert_eq(r.kept_bytes, 0);
    cr_assert_eq(r.target_reached, 1);
    cr_assert_eq(row_count(c), 0);
    for (uint64_t i = 0; i < 5; i++) {
        vyre_key k;
        key_of(&k, 800 + i);
        expect_present(&k, 0);
    }
    /* Default options remove nothing. */
    put_simple(c, 900, 10);
    vyre_cache_prune_opts_init(&o);
    prune_ok(c, &o, &r, &p);
    cr_assert_eq(r.removed, 0);
    cr_assert_eq(r.kept, 1);
    cr_assert_eq(r.target_reached, 1);
    vyre_cache_close(c);
}

Test(cache, prune_on_readonly_handle_is_erofs_unless_dry_run, .init = setup, .fini = teardown)
{
    vyre_cache *w = open_ok(g_root, 0);
    put_simple(w, 1, 10);
    vyre_cache_close(w);
    vyre_cache *c = open_ok(g_root, VYRE_CACHE_READONLY);
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 0;
    vyre_cache_prune_result r;
    cr_assert_eq(vyre_cache_prune(c, &o, &r, NULL, NULL, NULL), VYRE_EROFS);
    o.dry_run = 1;
    cr_assert_eq(vyre_cache_prune(c, &o, &r, NULL, NULL, NULL), 0);
    cr_assert_eq(r.removed, 1);
    vyre_key k;
    key_of(&k, 1);
    expect_present(&k, 1);
    vyre_cache_close(c);
}

/* ---- find_prefix -------------------------------------------------------- */

static void key_with_prefix(vyre_key *k, uint64_t id, const uint8_t *prefix, size_t n)
{
    key_of(k, id);
    memcpy(k->bytes, prefix, n);
}

Test(cache, find_prefix_unique_ambiguous_none_and_bad, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    vyre_key a, b, d;
    key_with_prefix(&a, 1, (const uint8_t *)"\xab\xcd\x01", 3);
    key_with_prefix(&b, 2, (const uint8_t *)"\xab\xcd\x02", 3);
    key_with_prefix(&d, 3, (const uint8_t *)"\x12\x34\x56", 3);
    put_full(c, &a, VYRE_BLOB_CUBIN, "sm_90", "tc", 0, 0, 10, 1);
    put_full(c, &b, VYRE_BLOB_PTX, "sm_80", "tc", 0, 0, 20, 2);
    put_full(c, &d, VYRE_BLOB_CUBIN, "sm_90", "tc", 0, 0, 30, 3);

    vyre_cache_entry e;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_cache_find_prefix(c, "abcd", &e, &err), VYRE_EAMBIGUOUS);
    char ha[VYRE_KEY_HEX_LEN + 1], hb[VYRE_KEY_HEX_LEN + 1], hd[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&a, ha);
    vyre_key_to_hex(&b, hb);
    vyre_key_to_hex(&d, hd);
    char sa[17], sb[17];
    snprintf(sa, sizeof sa, "%.16s", ha);
    snprintf(sb, sizeof sb, "%.16s", hb);
    cr_assert_neq(strstr(err.message, sa), NULL, "message lacks '%s': %s", sa, err.message);
    cr_assert_neq(strstr(err.message, sb), NULL, "message lacks '%s': %s", sb, err.message);
    cr_assert_neq(strstr(err.message, "abcd"), NULL);
    cr_assert_neq(err.hint[0], '\0');
    cr_assert_eq(err.remedy, VYRE_REMEDY_NONE);

    vyre_error_clear(&err);
    cr_assert_eq(vyre_cache_find_prefix(c, "ffff", &e, &err), VYRE_ENOENT);
    cr_assert_str_eq(err.message, "no blob with a key starting 'ffff'");
    cr_assert_str_eq(err.hint, "", "the listing command is the front end's to name");
    cr_assert_eq(err.remedy, VYRE_REMEDY_CACHE_LIST);

    memset(&e, 0, sizeof e);
    cr_assert_eq(vyre_cache_find_prefix(c, "abcd01", &e, NULL), 0);
    cr_assert_eq(memcmp(e.key.bytes, a.bytes, VYRE_KEY_BYTES), 0);
    cr_assert_eq(e.kind, VYRE_BLOB_CUBIN);
    cr_assert_eq(e.stored_size, 10);
    cr_assert_eq(vyre_cache_find_prefix(c, "ABCD02", &e, NULL), 0, "upper case is accepted");
    cr_assert_eq(memcmp(e.key.bytes, b.bytes, VYRE_KEY_BYTES), 0);
    cr_assert_str_eq(e.arch, "sm_80");
    cr_assert_eq(vyre_cache_find_prefix(c, hd, &e, NULL), 0, "a whole key is a prefix");
    cr_assert_eq(memcmp(e.key.bytes, d.bytes, VYRE_KEY_BYTES), 0);

    vyre_error_clear(&err);
    cr_assert_eq(vyre_cache_find_prefix(c, "ffff", &e, &err), VYRE_ENOENT);
    cr_assert_neq(strstr(err.message, "ffff"), NULL, "message: %s", err.message);

    static const char *const bad[] = {"", "abc", "abcg", "ab cd", "-abcd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(vyre_cache_find_prefix(c, bad[i], &e, NULL), VYRE_EINVAL, "'%s'", bad[i]);
    char too_long[VYRE_KEY_HEX_LEN + 2];
    snprintf(too_long, sizeof too_long, "%s0", hd);
    cr_assert_eq(vyre_cache_find_prefix(c, too_long, &e, NULL), VYRE_EINVAL);
    vyre_cache_close(c);
}

/* ---- clear -------------------------------------------------------------- */

Test(cache, clear_removes_blobs_rows_debris_and_quarantine, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    uint64_t on_disk = 0;
    for (uint64_t i = 0; i < 3; i++) {
        put_simple(c, 1000 + i, 100 * (size_t)(i + 1));
        vyre_key k;
        key_of(&k, 1000 + i);
        on_disk += disk_of(&k);
    }
    char p[1300];
    /* (vyre's names: clear leaves anything else, see
     * adversarial_cache/files_vyre_did_not_write_are_reported_and_left...) */
    snprintf(p, sizeof p, "%s/tmp/0123456789abcdef.1.2.0123456789abcdef.tmp", g_root);
    tu_write_file(p, "x", 1);
    snprintf(p, sizeof p, "%s/quarantine/%064d.vblob.truncated.1", g_root, 0);
    tu_write_file(p, "y", 1);
    vyre_cache_clear_result cl;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_clear(c, &cl, &e), 0, "clear: %s", e.message);
    cr_assert_eq(cl.removed, 3);
    cr_assert_eq(cl.removed_bytes, on_disk, "bytes on disk, not the 3 * %d + 600 apparent",
                 VYRE_BLOB_HEADER_SIZE);
    char d[1200];
    sub(d, sizeof d, "blobs");
    cr_assert_eq(count_entries(d, NULL, 0), 0);
    sub(d, sizeof d, "tmp");
    cr_assert_eq(count_entries(d, NULL, 0), 0);
    sub(d, sizeof d, "quarantine");
    cr_assert_eq(count_entries(d, NULL, 0), 0);
    cr_assert_eq(row_count(c), 0);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.entries, 0);
    cr_assert_eq(st.bytes, 0);
    for (uint64_t i = 0; i < 3; i++) {
        vyre_key k;
        key_of(&k, 1000 + i);
        expect_miss(c, &k);
    }
    /* The cache works after a clear. */
    put_simple(c, 1000, 100);
    vyre_key k;
    key_of(&k, 1000);
    expect_hit(c, &k, 100, 1000);
    vyre_cache_close(c);
}

/* Every file the cache creates takes the cache's umask, not the process's:
 * cleanup.lock made 0644 in a group cache (process umask 022, cache umask
 * 002) kept other members from updating its time, so their puts ran a
 * cleanup every time. */
Test(cache, cleanup_lock_and_marker_take_the_cache_umask, .init = setup, .fini = teardown)
{
    umask(022);
    vyre_config cf;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_config_load(&cf, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cf.max_age_ns = 30 * DAY_NS; /* a put then makes cleanup.lock */
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = &cf;
    oo.umask = 002;
    vyre_cache *c = NULL;
    cr_assert_eq(vyre_cache_open(g_root, &oo, &c, &e), 0, "%s", e.message);
    put_simple(c, 1, 100);
    vyre__cache_cleanup_result r;
    cr_assert_eq(vyre__cache_cleanup(c, 1, &r, &e), 0, "%s", e.message);
    vyre_cache_close(c);
    static const char *const files[] = {VYRE_CACHE_CLEANUP_LOCK, "lock", VYRE_CACHE_MARKER,
                                        "index.sqlite3"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[1300];
        snprintf(p, sizeof p, "%s/%s", g_root, files[i]);
        struct stat st;
        cr_assert_eq(lstat(p, &st), 0, "'%s' missing", files[i]);
        cr_assert_eq(st.st_mode & 0777, 0664, "'%s' is %04o, want 0664 (cache umask 002)", files[i],
                     (unsigned)(st.st_mode & 0777));
    }
}

/* libcore names no front end: a group cache opened without a umask that
 * lets the group write is refused with a hint about the setting itself and
 * the configuration remedy; the front end names its command. */
Test(cache, group_umask_refusal_names_no_front_end, .init = setup, .fini = teardown)
{
    cr_assert_eq(mkdir(g_root, 0700), 0);
    cr_assert_eq(chmod(g_root, 02770), 0, "%s", strerror(errno));
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_open(g_root, &oo, &c, &e), VYRE_EUNSAFE, "%s", e.message);
    cr_assert(strstr(e.message, "does not allow group writes"), "%s", e.message);
    cr_assert(strstr(e.hint, "'umask = 002'"), "%s", e.hint);
    cr_assert_null(strstr(e.hint, "cachectl"), "libcore names a front end: %s", e.hint);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_CONFIG);
}

/* ---- sizes on disk (issue 35) ------------------------------------------- */

/* The blob files under blobs/ and their bytes on disk, as du counts them
 * (st_blocks * 512 from lstat). */
static uint64_t blobs_on_disk(size_t *n)
{
    char dir[1200];
    sub(dir, sizeof dir, "blobs");
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    uint64_t sum = 0;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char shard[1500];
        snprintf(shard, sizeof shard, "%s/%s", dir, e->d_name);
        DIR *s = opendir(shard);
        cr_assert(s, "%s", shard);
        for (struct dirent *f; (f = readdir(s));) {
            if (!strstr(f->d_name, ".vblob"))
                continue;
            char p[1800];
            snprintf(p, sizeof p, "%s/%s", shard, f->d_name);
            sum += tu_disk_bytes(p);
            (*n)++;
        }
        closedir(s);
    }
    closedir(d);
    return sum;
}

/* A cache of 200 blobs of 100 bytes, pruned to a size, holds at most that
 * size on disk: counted by their apparent size (about 400 bytes each with
 * the header), a prune to half the cache removed nothing. */
Test(cache, a_cache_pruned_to_a_size_holds_at_most_that_size_on_disk, .init = setup,
     .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    int64_t base = now_ns() - 3600 * NS_PER_S;
    for (int i = 0; i < 200; i++) {
        vyre_key k;
        key_of(&k, 5000 + (uint64_t)i);
        put_full(c, &k, VYRE_BLOB_CUBIN, "sm_90", "tc", 0, base + i * NS_PER_S, 100, (uint64_t)i);
    }
    size_t n;
    uint64_t before = blobs_on_disk(&n);
    cr_assert_eq(n, 200);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.bytes, before, "stats count what du counts");
    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = before / 2;
    vyre_cache_prune_result r;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_prune(c, &o, &r, NULL, NULL, &e), 0, "%s", e.message);
    uint64_t after = blobs_on_disk(&n);
    cr_assert_leq(after, o.max_bytes, "pruned to %llu bytes, the blobs take %llu on disk",
                  (unsigned long long)o.max_bytes, (unsigned long long)after);
    cr_assert_gt(r.removed, 0);
    cr_assert_eq(r.kept, n);
    cr_assert_eq(r.kept_bytes, after, "the report says what is on disk");
    cr_assert_eq(r.removed_bytes, before - after);
    vyre_cache_close(c);
}

/* The index's disk_size column (schema 5) is filled by put and, for a row
 * that lost it (an index migrated from schema 4 holds an estimate), by a
 * reindex, from lstat. */
Test(cache, reindex_fills_each_rows_size_on_disk, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    for (uint64_t i = 0; i < 5; i++)
        put_simple(c, 6000 + i, 100 + 3000 * (size_t)i);
    vyre_cache_close(c);
    size_t n;
    uint64_t on_disk = blobs_on_disk(&n);
    char idx[1200];
    sub(idx, sizeof idx, "index.sqlite3");
    cr_assert_eq(tu_db_int(idx, "SELECT sum(disk_size) FROM blobs"), (long long)on_disk);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(idx, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE blobs SET disk_size = 1", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    c = open_ok(g_root, 0);
    vyre_cache_reindex_result rr;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_reindex(c, &rr, NULL, NULL, &e), 0, "%s", e.message);
    cr_assert_eq(rr.bytes, on_disk);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.bytes, on_disk);
    vyre_cache_close(c);
    cr_assert_eq(tu_db_int(idx, "SELECT sum(disk_size) FROM blobs"), (long long)on_disk);
}

/* A blob's size on disk can change under an unchanged file (delayed
 * allocation settling, preallocation dropped): it is no problem for verify
 * (four processes putting and verifying at once saw "row rewritten" for
 * it), and a repair refreshes the row's figure quietly. */
Test(cache, verify_takes_a_changed_size_on_disk_as_no_problem, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    for (uint64_t i = 0; i < 3; i++)
        put_simple(c, 7000 + i, 100 + 5000 * (size_t)i);
    vyre_cache_close(c);
    size_t n;
    uint64_t on_disk = blobs_on_disk(&n);
    char idx[1200];
    sub(idx, sizeof idx, "index.sqlite3");
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(idx, &db), SQLITE_OK);
    cr_assert_eq(
        sqlite3_exec(db, "UPDATE blobs SET disk_size = disk_size + 4096", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    c = open_ok(g_root, 0);
    for (int repair = 0; repair < 2; repair++) {
        vyre_cache_verify_result r;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cache_verify(c, repair, &r, NULL, NULL, NULL, NULL, &e), 0, "%s",
                     e.message);
        cr_assert_eq(r.problems, 0, "repair %d: %llu problems (%llu mismatched rows)", repair,
                     (unsigned long long)r.problems, (unsigned long long)r.row_mismatches);
    }
    vyre_cache_close(c);
    cr_assert_eq(tu_db_int(idx, "SELECT sum(disk_size) FROM blobs"), (long long)on_disk,
                 "the repair refreshed each row's size on disk");
}

/* ---- verify in parallel ---------------------------------------------------- */

#define PROBLEM_LINE 4400

typedef struct problem_lines {
    char (*v)[PROBLEM_LINE];
    size_t n, cap;
} problem_lines;

/* Verify's problems as "<path> <action>" lines, in the order reported. */
static void note_problem(const vyre_cache_verify_problem *p, void *ctx)
{
    problem_lines *l = ctx;
    cr_assert_lt(l->n, l->cap);
    snprintf(l->v[l->n++], PROBLEM_LINE, "%s %s", p->path, p->action ? p->action : "-");
}

/* Every file under blobs/<shard>/, in the order readdir lists the shards
 * and their files: a sequential scan's order. */
static size_t listed_blobs(char (*out)[PROBLEM_LINE], size_t max)
{
    char dir[1200];
    sub(dir, sizeof dir, "blobs");
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char shard[1500];
        snprintf(shard, sizeof shard, "%s/%s", dir, e->d_name);
        DIR *s = opendir(shard);
        cr_assert(s, "%s", shard);
        for (struct dirent *f; (f = readdir(s));) {
            if (f->d_name[0] == '.')
                continue;
            cr_assert_lt(n, max);
            snprintf(out[n++], PROBLEM_LINE, "%s/%s", shard, f->d_name);
        }
        closedir(s);
    }
    closedir(d);
    return n;
}

/* Damages the blob file at path: a payload byte flipped at off from the
 * end, or (cut) its last byte cut off. */
static void damage(const char *path, size_t off, int cut)
{
    size_t len = 0;
    char *b = tu_read_file(path, &len);
    cr_assert_not_null(b);
    cr_assert_gt(len, VYRE_BLOB_HEADER_SIZE + off);
    if (cut)
        len--;
    else
        b[len - 1 - off] ^= 0x10;
    tu_write_file(path, b, len);
    free(b);
}

/* Verify checks the blob files on several threads; what it reports,
 * repairs and in what order is a sequential scan's, run after run. */
Test(cache, verify_reports_in_list_order_whatever_the_threads, .init = setup, .fini = teardown,
     .timeout = 240)
{
    enum { N = 400 };
    vyre_cache *c = open_ok(g_root, 0);
    for (uint64_t i = 0; i < N; i++)
        put_simple(c, 9000 + i, 100 + (size_t)(i % 7) * 300);
    put_simple(c, 9000 + N, (size_t)3 << 20); /* streamed, not read whole */
    vyre_cache_close(c);
    char(*files)[PROBLEM_LINE] = calloc(N + 1, PROBLEM_LINE);
    problem_lines want = {calloc(N + 1, PROBLEM_LINE), 0, N + 1};
    cr_assert(files && want.v);
    size_t n = listed_blobs(files, N + 1), bad = 0;
    cr_assert_eq(n, N + 1);
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        free(tu_read_file(files[i], &len));
        int large = len > ((size_t)1 << 20);
        if (!large && i % 23 != 5)
            continue;
        damage(files[i], large ? (size_t)1 << 20 : 0, !large && i % 2);
        snprintf(want.v[want.n++], PROBLEM_LINE, "%s -", files[i]);
        bad++;
    }
    c = open_ok(g_root, 0);
    for (int run = 0; run < 4; run++) {
        int repair = run == 2;
        problem_lines got = {calloc(N + 1, PROBLEM_LINE), 0, N + 1};
        cr_assert_not_null(got.v);
        vyre_cache_verify_result r;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cache_verify(c, repair, &r, note_problem, &got, NULL, NULL, &e), 0, "%s",
                     e.message);
        cr_assert_eq(r.blobs_checked, run < 3 ? N + 1 : N + 1 - bad);
        if (run == 3) {
            cr_assert_eq(r.problems, 0, "the repair left %llu problems",
                         (unsigned long long)r.problems);
        } else {
            cr_assert_eq(r.bad_blobs, bad);
            cr_assert_eq(got.n, want.n, "run %d: %zu problems, %zu damaged files", run, got.n,
                         want.n);
            for (size_t i = 0; i < got.n; i++) {
                char line[PROBLEM_LINE + 16];
                snprintf(line, sizeof line, "%.*s%s", (int)strlen(want.v[i]) - 1, want.v[i],
                         repair ? "quarantined" : "-");
                cr_assert_str_eq(got.v[i], line, "run %d, problem %zu", run, i);
            }
        }
        free(got.v);
    }
    vyre_cache_close(c);
    free(want.v);
    free(files);
}

/* A shard's names that are not "<64 lowercase hex>.vblob" of that shard
 * (another shard's name, upper case, a letter beyond f) are strays: never
 * checked as blobs, reported, and only what looks like vyre's name moved. */
Test(cache, verify_tells_a_blob_name_from_names_vyre_never_writes, .init = setup, .fini = teardown)
{
    vyre_cache *c = open_ok(g_root, 0);
    put_simple(c, 4242, 300);
    vyre_key k;
    key_of(&k, 4242);
    char path[VYRE_CACHE_PATH_MAX], hex[VYRE_KEY_HEX_LEN + 1];
    cr_assert_eq(vyre_blob_path(g_root, &k, path, sizeof path, NULL), 0);
    vyre_key_to_hex(&k, hex);
    size_t len = 0;
    char *blob = tu_read_file(path, &len);
    cr_assert_not_null(blob);
    char names[3][VYRE_KEY_HEX_LEN + 8];
    snprintf(names[0], sizeof names[0], "%s.vblob", hex);
    names[0][0] = names[0][0] == 'f' ? '0' : 'f'; /* another shard's name */
    snprintf(names[1], sizeof names[1], "%s.vblob", hex);
    for (int i = 2; i < VYRE_KEY_HEX_LEN; i++) /* upper case */
        if (names[1][i] >= 'a' && names[1][i] <= 'f')
            names[1][i] = (char)(names[1][i] - 'a' + 'A');
    cr_assert_neq(strcmp(names[1], names[0]), 0);
    snprintf(names[2], sizeof names[2], "%s.vblob", hex);
    names[2][VYRE_KEY_HEX_LEN - 1] = 'g';
    char *slash = strrchr(path, '/');
    for (int i = 0; i < 3; i++) {
        char p[VYRE_CACHE_PATH_MAX + 80];
        snprintf(p, sizeof p, "%.*s/%s", (int)(slash - path), path, names[i]);
        tu_write_file(p, blob, len);
    }
    free(blob);
    for (int repair = 0; repair < 2; repair++) {
        vyre_cache_verify_result r;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cache_verify(c, repair, &r, NULL, NULL, NULL, NULL, &e), 0, "%s",
                     e.message);
        cr_assert_eq(r.blobs_checked, 1, "only the blob's own name is checked");
        cr_assert_eq(r.bad_blobs, 0);
        cr_assert_eq(r.stray, 3, "repair %d: %llu strays", repair, (unsigned long long)r.stray);
    }
    vyre_cache_verify_result r;
    cr_assert_eq(vyre_cache_verify(c, 0, &r, NULL, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(r.stray, 2, "the misplaced blob name was moved, the others left");
    vyre_cache_close(c);
}
