/*
 * test_blob_hit.c - the cache hit's one pass over a blob: the payload is
 * read in chunks and each chunk hashed as it arrives (blob_load.c), with a
 * streaming XXH3-128 (checksum.c).
 *
 * The streaming digest equals the one-shot digest for every build, size
 * and chunking; hits at sizes around the chunk boundaries give back the
 * exact bytes; a damaged byte anywhere (first chunk, a later chunk, the
 * payload's last byte, the kernel-name table) is a miss and quarantined;
 * and a blob truncated or rewritten while it is being hit, again and
 * again, gives either a correct hit or a miss: never a signal, never other
 * bytes. A handle keeps the shard directories it hit in open: a shard
 * removed and made anew still hits, a bad file in a kept directory that
 * is no longer the shard never gets the good file at the blob's path
 * quarantined, and a shard replaced by a symlink is a miss.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/blob_internal.h"
#include "cache/checksum.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"

#define PATHSZ 4096

static char g_root[PATHSZ];

static void setup(void)
{
    tu_mkdtemp(g_root, sizeof g_root);
}

static void teardown(void)
{
    if (g_root[0])
        tu_rm_rf(g_root);
}

TestSuite(blob_hit, .init = setup, .fini = teardown);

static vyre_key key_of(unsigned seed)
{
    vyre_key k;
    for (int i = 0; i < VYRE_KEY_BYTES; i++)
        k.bytes[i] = (uint8_t)(seed * 131u + (unsigned)i * 7u + 3u);
    return k;
}

static uint8_t *payload_of(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    cr_assert(p);
    uint32_t x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (uint8_t)(x >> 24);
    }
    return p;
}

static vyre_cache *open_cache(void)
{
    char root[PATHSZ + 16];
    snprintf(root, sizeof root, "%s/cache", g_root);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e);
    cr_assert_eq(rc, 0, "open: %s", e.message);
    return c;
}

/* Stores n bytes under key k, with a kernel-name table when names. */
static void put(vyre_cache *c, vyre_key k, const uint8_t *p, size_t n, int names)
{
    static const char table[] = "first_kernel\0second\0";
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = k;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "test");
    if (names) {
        h.n_kernels = 2;
        h.kernels_size = sizeof table - 1;
        h.kernels = table;
    }
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, p, n, &e), 0, "put: %s", e.message);
}

static void blob_file(vyre_cache *c, vyre_key k, char *path)
{
    cr_assert_eq(vyre_blob_path(vyre_cache_root(c), &k, path, PATHSZ, NULL), 0);
}

/* ---- streaming XXH3-128 ---------------------------------------------------- */

Test(blob_hit, stream_digest_equals_one_shot_for_every_build_size_and_chunking)
{
    static const size_t sizes[] = {0,   1,   16,   17,   128,        129,
                                   240, 241, 1024, 4096, 65536 + 13, ((size_t)1 << 20) + 7};
    static const size_t chunks[] = {1, 7, 64, 255, 4096, 65536 + 3, SIZE_MAX};
    size_t max = ((size_t)1 << 20) + 7;
    uint8_t *p = payload_of(max, 11);
    int builds = 0;
    for (int v = 0; v < 3; v++) {
        vyre__xxh3_stream st;
        if (vyre__xxh3_stream_reset_variant(&st, v) != 0)
            continue; /* this CPU lacks the build */
        builds++;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint64_t want[2];
            cr_assert_eq(vyre__xxh3_128_variant(0, p, sizes[s], want), 0);
            for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
                size_t ch = chunks[ci];
                if (ch == 1 && sizes[s] > 4096)
                    continue; /* a million one-byte updates say nothing more */
                cr_assert_eq(vyre__xxh3_stream_reset_variant(&st, v), 0);
                for (size_t off = 0; off < sizes[s];) {
                    size_t n = sizes[s] - off < ch ? sizes[s] - off : ch;
                    vyre__xxh3_stream_update(&st, p + off, n);
                    off += n;
                }
                uint64_t got[2];
                vyre__xxh3_stream_digest(&st, got);
                cr_assert(got[0] == want[0] && got[1] == want[1],
                          "build %d, %zu bytes in chunks of %zu: digest differs", v, sizes[s], ch);
            }
        }
        /* The automatic choice too (by CPU and expected size). */
        vyre__xxh3_stream_reset(&st, max);
        vyre__xxh3_stream_update(&st, p, max / 3);
        vyre__xxh3_stream_update(&st, p + max / 3, max - max / 3);
        uint64_t want[2], got[2];
        vyre__xxh3_128(p, max, want);
        vyre__xxh3_stream_digest(&st, got);
        cr_assert(got[0] == want[0] && got[1] == want[1]);
    }
    cr_assert_geq(builds, 1, "the library build is always there");
    free(p);
}

/* ---- hits around the chunk boundaries ------------------------------------ */

Test(blob_hit, hits_give_back_the_exact_bytes_at_every_size)
{
    /* Around the 256 KiB read chunk, the 1 MiB whole-file bound (beyond it
     * the header is read first), and a payload that spans several chunks
     * past that bound; with and without a kernel-name table. */
    const size_t K = 1024;
    const size_t sizes[] = {0,           1,           4096,     256 * K - 1,  256 * K,
                            256 * K + 1, 512 * K + 3, 1024 * K, 1024 * K + 1, 2048 * K + 5};
    vyre_cache *c = open_cache();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int names = 0; names < 2; names++) {
            vyre_key k = key_of((unsigned)(s * 2 + (size_t)names) + 1);
            uint8_t *p = payload_of(sizes[s], (unsigned)s + 5);
            put(c, k, p, sizes[s], names);
            vyre_blob *b = NULL;
            vyre_error e;
            vyre_error_clear(&e);
            cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &e), 0, "%zu bytes: %s", sizes[s],
                         e.message);
            cr_assert_eq(b->size, sizes[s]);
            cr_assert(sizes[s] == 0 || memcmp(b->payload, p, sizes[s]) == 0,
                      "%zu bytes: other bytes came back", sizes[s]);
            if (names) {
                cr_assert_eq(b->header.n_kernels, 2);
                cr_assert_not_null(b->header.kernels);
                cr_assert_str_eq(b->header.kernels, "first_kernel");
                cr_assert_str_eq(b->header.kernels + 13, "second");
            } else {
                cr_assert_eq(b->header.kernels_size, 0);
            }
            vyre_blob_free(b);
            free(p);
        }
    vyre_cache_close(c);
}

/* Flips the byte at off of the file at path. */
static void flip(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, off), 1);
    b ^= 0x40;
    cr_assert_eq(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static size_t count_quarantined(vyre_cache *c)
{
    char q[PATHSZ + 16];
    snprintf(q, sizeof q, "%s/quarantine", vyre_cache_root(c));
    size_t n = 0;
    char cmd[PATHSZ + 64];
    snprintf(cmd, sizeof cmd, "ls -1 '%s' | wc -l", q);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    if (fscanf(f, "%zu", &n) != 1)
        n = 0;
    pclose(f);
    return n;
}

Test(blob_hit, a_damaged_byte_anywhere_is_a_quarantined_miss)
{
    /* Payloads in one chunk, across several chunks of the whole-file path,
     * and past the whole-file bound; the byte is in the first chunk, a
     * later chunk, the payload's last byte, or the kernel-name table. */
    const size_t K = 1024, H = VYRE_BLOB_HEADER_SIZE;
    const struct {
        size_t size;
        size_t at; /* offset in the file */
        vyre_blob_reject why;
    } cases[] = {
        {4096, H + 10, VYRE_REJECT_PAYLOAD_SUM},
        {4096, H + 4095, VYRE_REJECT_PAYLOAD_SUM},
        {600 * K, H + 100, VYRE_REJECT_PAYLOAD_SUM},
        {600 * K, H + 300 * K, VYRE_REJECT_PAYLOAD_SUM},
        {600 * K, H + 600 * K - 1, VYRE_REJECT_PAYLOAD_SUM},
        {600 * K, H + 600 * K + 2, VYRE_REJECT_PAYLOAD_SUM}, /* kernel-name table */
        {1536 * K, H + 5, VYRE_REJECT_PAYLOAD_SUM},
        {1536 * K, H + 1536 * K - 1, VYRE_REJECT_PAYLOAD_SUM},
        {1536 * K, H + 1536 * K + 1, VYRE_REJECT_PAYLOAD_SUM}, /* kernel-name table */
    };
    vyre_cache *c = open_cache();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_key k = key_of(100 + (unsigned)i);
        uint8_t *p = payload_of(cases[i].size, (unsigned)i);
        put(c, k, p, cases[i].size, 1);
        char path[PATHSZ];
        blob_file(c, k, path);
        flip(path, (off_t)cases[i].at);
        size_t before = count_quarantined(c);
        vyre_blob *b = NULL;
        vyre_blob_reject why = VYRE_REJECT_NONE;
        cr_assert_eq(vyre_cache_get(c, &k, &b, &why, NULL), VYRE_ENOENT,
                     "case %zu: a damaged blob was a hit", i);
        cr_assert_null(b);
        cr_assert_eq(why, cases[i].why, "case %zu: why %s", i, vyre_blob_reject_name(why));
        struct stat st;
        cr_assert_neq(stat(path, &st), 0, "case %zu: the damaged file is still in place", i);
        cr_assert_eq(count_quarantined(c), before + 1, "case %zu: not quarantined", i);
        free(p);
    }
    vyre_cache_close(c);
}

/* ---- a blob truncated or rewritten while it is hit ----------------------- */

/* The child: until killed (or its parent is gone, or 30 s have passed),
 * truncates or rewrites the blob file at path in place (by name: once the
 * parent quarantines it, a new file takes its place), and puts the good
 * bytes back every fourth step. */
static void hammer(const char *path, const uint8_t *good, size_t n, pid_t parent)
{
    /* A parent stopped by a failed assertion must not leave us running. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        return;
    uint32_t x = (uint32_t)getpid();
    uint8_t junk[4096];
    time_t stop = time(NULL) + 30;
    for (unsigned round = 0; time(NULL) < stop; round++) {
        x = x * 1664525u + 1013904223u;
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            usleep(100);
            continue;
        }
        switch (round % 4) {
        case 0: /* the good bytes, whole */
            (void)pwrite(fd, good, n, 0);
            (void)ftruncate(fd, (off_t)n);
            break;
        case 1: /* garbage over part of the good payload, in place */
            memset(junk, (int)(x & 0xff), sizeof junk);
            (void)pwrite(fd, junk, sizeof junk, (off_t)(VYRE_BLOB_HEADER_SIZE + x % (n / 2)));
            break;
        case 2: /* cut short anywhere, even inside the header */
            (void)ftruncate(fd, (off_t)(x % n));
            break;
        default: /* the good bytes back, in two halves (a torn rewrite) */
            (void)pwrite(fd, good, n / 2, 0);
            (void)pwrite(fd, good + n / 2, n - n / 2, (off_t)(n / 2));
            (void)ftruncate(fd, (off_t)n);
            break;
        }
        close(fd);
        /* Each state lasts a moment, so that whole hits see it too; the
         * good one longest, so that hits are not rare on a busy machine. */
        usleep(round % 4 == 0 ? 2000 : 200 + x % 300);
    }
}

/* Hits the blob of n bytes under key k for ms milliseconds while a child
 * truncates and rewrites its file: every get is the stored bytes or a
 * miss. */
static void hit_while_rewritten(vyre_cache *c, vyre_key k, size_t n, long ms)
{
    uint8_t *p = payload_of(n, (unsigned)n);
    put(c, k, p, n, 1);
    char path[PATHSZ];
    blob_file(c, k, path);
    size_t flen = 0;
    uint8_t *good = (uint8_t *)tu_read_file(path, &flen);
    cr_assert_not_null(good);
    cr_assert_eq(flen, VYRE_BLOB_HEADER_SIZE + n + 20);

    pid_t parent = getpid(), pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        hammer(path, good, flen, parent);
        _exit(0);
    }
    unsigned long hits = 0, misses = 0;
    long elapsed = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        vyre_blob *b = NULL;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_cache_get(c, &k, &b, NULL, &e);
        if (rc == 0) {
            /* A hit is the stored bytes, exactly. */
            cr_assert_eq(b->size, n);
            cr_assert(memcmp(b->payload, p, n) == 0, "a hit handed back other bytes (%zu)", n);
            cr_assert_eq(b->header.kernels_size, 20);
            hits++;
            vyre_blob_free(b);
        } else {
            cr_assert_eq(rc, VYRE_ENOENT, "a changing blob must be a miss, got %d: %s", rc,
                         e.message);
            cr_assert_null(b);
            misses++;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
        /* At least ms; on a machine too busy to have seen both states by
         * then, on until it has (at most 20 s): the hammer's good state is
         * 2 ms in every few, a busy CI machine may skip past a few. */
    } while (elapsed < ms || ((!hits || !misses) && elapsed < 20000));
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child died on its own");
    cr_log_info("%zu bytes under a rewriting writer: %lu hits, %lu misses", n, hits, misses);
    /* Both happened: the writer's states were seen (a hit while the file is
     * good, a miss while it is cut short or damaged). */
    cr_assert_gt(hits, 0, "no hit in %ld ms (%lu misses)", ms, misses);
    cr_assert_gt(misses, 0, "no miss in %ld ms (%lu hits)", ms, hits);

    /* Once the writer is gone and the good file is back, it is a hit. */
    tu_write_file(path, good, flen);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, NULL), 0);
    cr_assert(memcmp(b->payload, p, n) == 0);
    vyre_blob_free(b);
    free(good);
    free(p);
}

Test(blob_hit, a_blob_truncated_or_rewritten_while_hit_is_a_miss_never_a_signal, .timeout = 60)
{
    vyre_cache *c = open_cache();
    /* Read in one read(), then hashed. */
    hit_while_rewritten(c, key_of(7), ((size_t)200 << 10) + 77, 900);
    /* Larger than a whole read: read in chunks, each hashed as it comes,
     * so that the file also changes between the reads of one hit. */
    hit_while_rewritten(c, key_of(8), ((size_t)1600 << 10) + 77, 900);
    vyre_cache_close(c);
}

/* ---- kept shard directories ------------------------------------------------ */

/* A handle keeps each shard directory it hit in open (blob_load.c,
 * vyre__blob_shards); what it answers must stay what the blob's path in
 * the cache holds, whatever happens to the directory it kept. */

static void shard_dir(vyre_cache *c, vyre_key k, char *dir)
{
    blob_file(c, k, dir);
    *strrchr(dir, '/') = '\0';
}

static void assert_hit(vyre_cache *c, vyre_key k, const uint8_t *p, size_t n, const char *what)
{
    vyre_blob *b = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &e), 0, "%s: %s", what, e.message);
    cr_assert_eq(b->size, n, "%s", what);
    cr_assert(memcmp(b->payload, p, n) == 0, "%s: other bytes came back", what);
    vyre_blob_free(b);
}

static void assert_miss(vyre_cache *c, vyre_key k, const char *what)
{
    vyre_blob *b = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &e), VYRE_ENOENT, "%s: %s", what, e.message);
    cr_assert_null(b, "%s", what);
}

Test(blob_hit, a_shard_removed_and_made_anew_under_an_open_handle_still_hits)
{
    vyre_cache *c = open_cache(), *other = open_cache();
    vyre_key k = key_of(21), k2 = key_of(21);
    k2.bytes[VYRE_KEY_BYTES - 1] ^= 1; /* the same shard (the first byte) */
    uint8_t *p = payload_of(5000, 21);
    put(c, k, p, 5000, 0);
    assert_hit(c, k, p, 5000, "first hit"); /* c keeps the shard open */
    char path[PATHSZ], dir[PATHSZ];
    blob_file(c, k, path);
    shard_dir(c, k, dir);
    /* Emptied and removed (as verify removes an empty shard), then made
     * anew by another handle's store. */
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(rmdir(dir), 0, "rmdir %s: %s", dir, strerror(errno));
    assert_miss(c, k, "no shard");
    put(other, k, p, 5000, 0);
    assert_hit(c, k, p, 5000, "the shard made anew");
    put(other, k2, p, 5000, 0);
    assert_hit(c, k2, p, 5000, "another blob of the shard made anew");
    vyre_cache_close(other);
    vyre_cache_close(c);
    free(p);
}

Test(blob_hit, a_bad_blob_in_a_kept_shard_moved_away_never_quarantines_the_good_one)
{
    vyre_cache *c = open_cache(), *other = open_cache();
    vyre_key k = key_of(22);
    uint8_t *p = payload_of(6000, 22);
    put(c, k, p, 6000, 0);
    assert_hit(c, k, p, 6000, "first hit"); /* c keeps the shard open */
    char path[PATHSZ], dir[PATHSZ], moved[PATHSZ + 16], moved_file[2 * PATHSZ];
    blob_file(c, k, path);
    shard_dir(c, k, dir);
    snprintf(moved, sizeof moved, "%s/moved", g_root);
    snprintf(moved_file, sizeof moved_file, "%s/%s", moved, strrchr(path, '/') + 1);
    /* The kept directory goes elsewhere, its blob is damaged there, and a
     * good blob takes the blob's path in a new shard directory. */
    cr_assert_eq(rename(dir, moved), 0, "rename: %s", strerror(errno));
    flip(moved_file, VYRE_BLOB_HEADER_SIZE + 10);
    put(other, k, p, 6000, 0);
    size_t before = count_quarantined(c);
    /* The damaged file is found through the kept directory and rejected;
     * the file at the blob's path is checked again, and is the answer. */
    assert_hit(c, k, p, 6000, "the good blob at the blob's path");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the good blob was moved away");
    cr_assert_eq(stat(moved_file, &st), 0, "the file outside the cache was touched");
    cr_assert_eq(count_quarantined(c), before, "something was quarantined");
    assert_hit(c, k, p, 6000, "again");
    vyre_cache_close(other);
    vyre_cache_close(c);
    free(p);
}

Test(blob_hit, a_kept_shard_replaced_by_a_symlink_is_never_followed)
{
    vyre_cache *c = open_cache();
    vyre_key k = key_of(23);
    uint8_t *p = payload_of(7000, 23);
    put(c, k, p, 7000, 0);
    assert_hit(c, k, p, 7000, "first hit"); /* c keeps the shard open */
    char path[PATHSZ], dir[PATHSZ], elsewhere[PATHSZ + 16], copy[2 * PATHSZ];
    blob_file(c, k, path);
    shard_dir(c, k, dir);
    size_t n = 0;
    uint8_t *good = (uint8_t *)tu_read_file(path, &n);
    cr_assert_not_null(good);
    /* The same good blob, in a directory outside the cache that a symlink
     * now stands in for the shard. */
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", g_root);
    cr_assert_eq(mkdir(elsewhere, 0700), 0);
    snprintf(copy, sizeof copy, "%s/%s", elsewhere, strrchr(path, '/') + 1);
    tu_write_file(copy, good, n);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(rmdir(dir), 0);
    cr_assert_eq(symlink(elsewhere, dir), 0);
    assert_miss(c, k, "a shard that is a symlink");
    assert_miss(c, k, "again");
    size_t m = 0;
    uint8_t *still = (uint8_t *)tu_read_file(copy, &m);
    cr_assert(still && m == n && memcmp(still, good, n) == 0, "the file elsewhere was touched");
    free(still);
    free(good);
    vyre_cache_close(c);
    free(p);
}

/* Descriptors this process has open. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

enum { SHARED_KEYS = 48, SHARED_SIZE = 3000 };

typedef struct hitter {
    vyre_cache *c;
    const uint8_t *p;
    int bad; /* gets that were not the stored bytes */
} hitter;

static void *hit_all(void *arg)
{
    hitter *h = arg;
    for (int round = 0; round < 20; round++)
        for (unsigned i = 0; i < SHARED_KEYS; i++) {
            vyre_key k = key_of(100 + i);
            vyre_blob *b = NULL;
            if (vyre_cache_get(h->c, &k, &b, NULL, NULL) != 0 || b->size != SHARED_SIZE ||
                memcmp(b->payload, h->p, SHARED_SIZE) != 0)
                h->bad++;
            vyre_blob_free(b);
        }
    return NULL;
}

Test(blob_hit, threads_share_one_handles_kept_shards_and_close_gives_them_back)
{
    int before = count_fds();
    vyre_cache *c = open_cache();
    uint8_t *p = payload_of(SHARED_SIZE, 99);
    for (unsigned i = 0; i < SHARED_KEYS; i++)
        put(c, key_of(100 + i), p, SHARED_SIZE, 0); /* as many shards */
    /* Four threads reach every shard at once: each shard is kept once. */
    enum { T = 4 };
    pthread_t t[T];
    hitter h[T];
    for (int i = 0; i < T; i++) {
        h[i] = (hitter){c, p, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, hit_all, &h[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        cr_assert_eq(h[i].bad, 0, "thread %d: %d gets were not the stored bytes", i, h[i].bad);
    }
    cr_assert_leq(count_fds(), before + SHARED_KEYS + 8, "more than one descriptor per shard");
    vyre_cache_close(c);
    cr_assert_eq(count_fds(), before, "descriptors left open after close");
    free(p);
}

/* A library keeps few of its host program's descriptors: hits in more
 * shards than VYRE__BLOB_SHARDS_KEPT_MAX keep that many directories open,
 * no more, and the hits past it are still right. */
Test(blob_hit, a_handle_keeps_at_most_the_bounded_number_of_shard_directories)
{
    vyre_cache *c = open_cache();
    uint8_t *p = payload_of(SHARED_SIZE, 98);
    char dirs[SHARED_KEYS][PATHSZ];
    unsigned distinct = 0;
    for (unsigned i = 0; i < SHARED_KEYS; i++) {
        put(c, key_of(100 + i), p, SHARED_SIZE, 0);
        shard_dir(c, key_of(100 + i), dirs[i]);
        unsigned j = 0;
        while (j < i && strcmp(dirs[j], dirs[i]) != 0)
            j++;
        distinct += j == i;
    }
    cr_assert_gt(distinct, VYRE__BLOB_SHARDS_KEPT_MAX, "the keys reach only %u shards", distinct);
    int before = count_fds();
    for (int round = 0; round < 2; round++)
        for (unsigned i = 0; i < SHARED_KEYS; i++)
            assert_hit(c, key_of(100 + i), p, SHARED_SIZE, "a hit past the kept bound");
    cr_assert_leq(count_fds(), before + VYRE__BLOB_SHARDS_KEPT_MAX,
                  "more shard directories kept than the bound (%d open, %d before)", count_fds(),
                  before);
    vyre_cache_close(c);
    free(p);
}
