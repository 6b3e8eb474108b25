/*
 * test_inductor_swap.c - prune, clear and verify --repair of a
 * TorchInductor cache while another process swaps the cache directory for
 * a symlink to a decoy folder (issue 33, point 1), in hundreds of rounds;
 * no file of the decoy is ever touched.
 *
 * Two decoys. One is another user's (uid 65534 when the test runs as
 * root) and, where no other user can be made, writable by others: not a
 * cache vyre may change, refused when a scan meets it. The other is the
 * user's own and passes every check, but holds, under the very names the
 * cache's entries have, what must not go (a folder where the cache has a
 * kernel file, a sound autotune result where the cache has a broken one):
 * a scan that meets it finds nothing to remove, so only working relative
 * to the one descriptor the scan opened keeps a removal or a move from
 * landing in it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "vyre/vyre.h"

#define ROUNDS    300
#define MIN_SWAPS 100
#define OLD_S     7200

static char g_tmp[512];
static char g_cache[600];
static char g_real[600];
static char g_decoy[600];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_real, sizeof g_real, "%s/cache.real", g_tmp);
    snprintf(g_decoy, sizeof g_decoy, "%s/decoy", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(inductor_swap, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the decoy: a folder of someone's files shaped like a cache -------- */

static struct timespec g_old[2];
static int age_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    cr_assert_eq(utimensat(AT_FDCWD, path, g_old, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
    return 0;
}

static void put_at(const char *root, const char *rel, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char cmd[1400];
    struct stat st;
    if (stat(p, &st) != 0) {
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
        cr_assert_eq(system(cmd), 0);
    }
    *slash = '/';
    tu_write_file(p, text, strlen(text));
}

/* 1: the cache gets the same names every round (the second decoy holds
 * them). */
static int g_fixed;

static void make_others_decoy(void)
{
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/inductor/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, g_decoy);
    put_at(g_decoy, "go/main.py", "package main\n");
    put_at(g_decoy, "bt/thesis.txt", "chapter one\n");
    put_at(g_decoy, "zz/czzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.py", "import os\n");
    time_t now = time(NULL);
    g_old[0] = g_old[1] = (struct timespec){now - OLD_S, 0};
    cr_assert_eq(nftw(g_decoy, age_one, 16, FTW_PHYS), 0);
    /* Not a folder vyre may change: another user's where the test can
     * make one, and writable by others in any case. */
    if (geteuid() == 0)
        cr_assert_eq(chown(g_decoy, 65534, 65534), 0);
    cr_assert_eq(chmod(g_decoy, 0757), 0);
    g_old[0] = g_old[1] = (struct timespec){now - OLD_S, 0};
    cr_assert_eq(utimensat(AT_FDCWD, g_decoy, g_old, 0), 0);
}

/* Every inode under the decoy: path, type, size, mtime, one line each
 * (nftw's order is readdir's, stable while nothing changes). */
static char *g_list;
static size_t g_len, g_cap;
static int list_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)flag, (void)f;
    char line[1400];
    int n = snprintf(line, sizeof line, "%s %o %lld %lld.%09ld\n", path + strlen(g_decoy),
                     (unsigned)st->st_mode, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
                     st->st_mtim.tv_nsec);
    if (g_len + (size_t)n + 1 > g_cap) {
        g_cap = (g_cap + (size_t)n + 1) * 2;
        g_list = realloc(g_list, g_cap);
        cr_assert(g_list);
    }
    memcpy(g_list + g_len, line, (size_t)n + 1);
    g_len += (size_t)n;
    return 0;
}

static char *snapshot(void)
{
    g_list = NULL;
    g_len = g_cap = 0;
    cr_assert_eq(nftw(g_decoy, list_one, 16, FTW_PHYS), 0);
    return g_list;
}

/* ---- the real cache, filled through a descriptor the test holds -------- */

static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";

/* A kernel name as Inductor makes it: 'c', 51 base32 characters, in the
 * folder named by the first two. */
static void kernel_name(unsigned round, unsigned k, char bucket[3], char name[64])
{
    name[0] = 'c';
    for (int i = 1; i <= 51; i++)
        name[i] = b32[(round * 7 + k * 13 + (unsigned)i * (i < 3 ? 1 : 5)) % 32];
    memcpy(name + 52, ".py", 4);
    bucket[0] = name[1], bucket[1] = name[2], bucket[2] = '\0';
}

static void write_old(int dir, const char *name, const char *text)
{
    int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    cr_assert(fd >= 0, "%s: %s", name, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    struct timespec t[2] = {{time(NULL) - OLD_S, 0}, {time(NULL) - OLD_S, 0}};
    cr_assert_eq(futimens(fd, t), 0);
    close(fd);
}

static int bucket_at(int root, const char *bucket)
{
    if (mkdirat(root, bucket, 0700) != 0)
        cr_assert_eq(errno, EEXIST);
    int fd = openat(root, bucket, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cr_assert(fd >= 0);
    return fd;
}

/* Three old kernels and a broken autotune result (verify --repair moves
 * it), written through root, wherever the path points meanwhile. */
static void fill(int root, unsigned round)
{
    round = g_fixed ? 0 : round;
    for (unsigned k = 0; k < 3; k++) {
        char bucket[3], name[64];
        kernel_name(round, k, bucket, name);
        int b = bucket_at(root, bucket);
        write_old(b, name, "import triton\n");
        if (k == 0) {
            char best[80];
            snprintf(best, sizeof best, "%064x.best_config", round);
            write_old(b, best, "{\"num_warps\": ");
        }
        close(b);
    }
}

/* The user's own decoy: round 0's names, each a folder of someone's file
 * where the cache has a kernel, and a sound autotune result where the
 * cache has a broken one, written just now (so that prune, which goes by
 * age, leaves it when a scan meets the decoy itself). */
static void make_own_decoy(void)
{
    cr_assert_eq(mkdir(g_decoy, 0700), 0);
    for (unsigned k = 0; k < 3; k++) {
        char bucket[3], name[64], rel[128];
        kernel_name(0, k, bucket, name);
        snprintf(rel, sizeof rel, "%s/%s/thesis.txt", bucket, name);
        put_at(g_decoy, rel, "chapter one\n");
        if (k == 0) {
            snprintf(rel, sizeof rel, "%s/%064x.best_config", bucket, 0u);
            put_at(g_decoy, rel, "{\"num_warps\": 4, \"num_stages\": 1, \"configs_hash\": \"a\"}");
        }
    }
    put_at(g_decoy, "go/main.py", "package main\n");
    time_t now = time(NULL);
    g_old[0] = g_old[1] = (struct timespec){now - OLD_S, 0};
    cr_assert_eq(nftw(g_decoy, age_one, 16, FTW_PHYS), 0);
    char bucket[3], name[64], best[1024];
    kernel_name(0, 0, bucket, name);
    snprintf(best, sizeof best, "%s/%s/%064x.best_config", g_decoy, bucket, 0u);
    cr_assert_eq(utimensat(AT_FDCWD, best, NULL, 0), 0);
}

/* ---- the swapper -------------------------------------------------------- */

typedef struct shared {
    volatile int stop;
    volatile long swaps;
} shared;

/* Swaps the cache for a symlink to the decoy and back until told to stop;
 * leaves the real cache in place. */
static int swapper(shared *s)
{
    while (!s->stop) {
        if (rename(g_cache, g_real) != 0)
            return 1;
        if (symlink(g_decoy, g_cache) != 0)
            return 2;
        for (volatile int i = 0; i < 2000; i++)
            ;
        if (unlink(g_cache) != 0 || rename(g_real, g_cache) != 0)
            return 3;
        s->swaps++;
        for (volatile int i = 0; i < 2000; i++)
            ;
    }
    return 0;
}

/* ---- the commands under test, each as the tool runs it ----------------- */

static int open_scan(vyre_inductor_cache *c, vyre_error *err)
{
    return vyre_inductor_cache_scan(g_cache, VYRE_INDUCTOR_SCAN_WRITE, c, err);
}

static int quarantine(const vyre_inductor_cache *c, const char *path, vyre_error *err)
{
    return vyre_inductor_quarantine(c, path, err);
}

/* One of prune, clear, verify --repair; the number of entries it removed
 * or moved (an error is an outcome too: the cache was a symlink then,
 * counted in *refused when the decoy was refused). */
static unsigned long one_round(unsigned round, unsigned *refused)
{
    vyre_inductor_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = open_scan(&c, &err);
    if (rc) {
        *refused += rc == VYRE_EUNSAFE;
        return 0;
    }
    unsigned long done = 0;
    if (round % 3 == 2) {
        vyre_inductor_report r;
        if (vyre_inductor_verify(&c, 0, &r, &err) == 0) {
            for (size_t i = 0; i < r.n_problems; i++)
                if (r.problems[i].entry_bad && quarantine(&c, r.problems[i].entry, &err) == 0)
                    done++;
            vyre_inductor_report_release(&r);
        }
    } else {
        vyre_inductor_prune_opts o = {.all = round % 3 == 1,
                                      .max_age_ns = INT64_C(3600) * 1000000000};
        vyre_inductor_prune_result res;
        vyre_inductor_prune(&c, &o, NULL, NULL, &res, &err);
        done = (unsigned long)res.removed;
    }
    vyre_inductor_cache_release(&c);
    return done;
}

/* Runs the rounds against the decoy made; checks it is untouched.
 * *refused_out: the scans that met the decoy and were refused. */
static void swap_rounds(unsigned *refused_out)
{
    char *before = snapshot();
    cr_assert_eq(mkdir(g_cache, 0700), 0);
    int root = open(g_cache, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert(root >= 0);
    shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert(s != MAP_FAILED);
    s->stop = 0, s->swaps = 0;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(swapper(s));
    unsigned long done = 0;
    unsigned refused = 0;
    time_t until = time(NULL) + 60;
    unsigned round;
    for (round = 0; (round < ROUNDS || s->swaps < MIN_SWAPS) && time(NULL) < until; round++) {
        fill(root, round);
        done += one_round(round, &refused);
    }
    s->stop = 1;
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the swapper failed (%d)",
              WEXITSTATUS(status));
    cr_log_info("%u rounds, %ld swaps, %lu entries removed or moved, %u scans refused the decoy",
                round, s->swaps, done, refused);
    cr_assert_geq(s->swaps, MIN_SWAPS, "the cache was swapped only %ld times", s->swaps);
    cr_assert_gt(done, 0, "no round removed anything: the test tested nothing");
    char *after = snapshot();
    int same = !strcmp(after, before);
    if (!same)
        cr_log_error("the decoy changed:\nbefore:\n%s\nafter:\n%s", before, after);
    free(before);
    free(after);
    cr_assert(same, "a file outside the cache was touched");
    struct stat st;
    cr_assert_eq(lstat(g_cache, &st), 0);
    cr_assert(S_ISDIR(st.st_mode), "the swapper left the symlink in place");
    close(root);
    munmap(s, sizeof *s);
    *refused_out = refused;
}

Test(inductor_swap, prune_clear_and_repair_never_touch_another_users_folder_swapped_in)
{
    make_others_decoy();
    unsigned refused;
    swap_rounds(&refused);
}

Test(inductor_swap, prune_clear_and_repair_work_from_one_descriptor_not_the_path)
{
    g_fixed = 1;
    make_own_decoy();
    unsigned refused;
    swap_rounds(&refused);
    cr_assert_eq(refused, 0, "the user's own folder passes the check: only the descriptor held");
}
