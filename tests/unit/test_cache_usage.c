/*
 * test_cache_usage.c - measuring a cache directory and locating the four
 * caches (vyre/usage.h).
 *
 * Trees are built in a fresh temp directory with known sizes, counts and
 * times, so every figure is checked exactly; the environment the locating
 * reads is set per test and restored by the fixture.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "testutil.h"
#include "vyre/usage.h"

static const char *const g_vars[] = {
    "HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "VYRE_PTX_CACHE_DIR",
    "VYRE_CACHE_MAX_SIZE",
    "VYRE_CACHE_TRITON_MAX_SIZE",
    "VYRE_CACHE_INDUCTOR_MAX_SIZE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "TRITON_CACHE_DIR",
    "TRITON_HOME",
    "TORCHINDUCTOR_CACHE_DIR",
    "TMPDIR",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];

static void us_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void us_teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(cache_usage, .init = us_setup, .fini = us_teardown);

static void path(char *buf, size_t size, const char *rel)
{
    int n = snprintf(buf, size, "%s/%s", g_tmp, rel);
    cr_assert(n > 0 && (size_t)n < size);
}

static void mkd(const char *rel)
{
    char p[1024];
    path(p, sizeof p, rel);
    cr_assert_eq(mkdir(p, 0700), 0, "%s: %s", p, strerror(errno));
}

/* A file of n bytes with mtime t (Unix seconds). */
static void mkf(const char *rel, size_t n, time_t t)
{
    char p[1024];
    path(p, sizeof p, rel);
    char *data = calloc(1, n ? n : 1);
    cr_assert_not_null(data);
    tu_write_file(p, data, n);
    free(data);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static void set_mtime(const char *rel, time_t t)
{
    char p[1024];
    path(p, sizeof p, rel);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/*
 * c/           the cache measured
 *   a/ f1 (100 B)  f2 (23 B)
 *   b/ c/ f3 (1000 B, the newest)
 *   f0 (7 B)
 *   out -> ../outside (a link to a directory with a 5000-byte file)
 * 8 entries, 1130 bytes.
 */
static void make_tree(char *root, size_t size)
{
    mkd("c");
    mkd("c/a");
    mkd("c/b");
    mkd("c/b/c");
    mkd("outside");
    mkf("c/a/f1", 100, 1700000000);
    mkf("c/a/f2", 23, 1700000000);
    mkf("c/b/c/f3", 1000, 1750000000);
    mkf("c/f0", 7, 1700000000);
    mkf("outside/big", 5000, 1800000000);
    char link[1024];
    path(link, sizeof link, "c/out");
    cr_assert_eq(symlink("../outside", link), 0);
    set_mtime("c/out", 1600000000);
    set_mtime("c/a", 1600000000);
    set_mtime("c/b", 1600000000);
    set_mtime("c/b/c", 1600000000);
    path(root, size, "c");
}

Test(cache_usage, counts_exactly_and_never_follows_a_link)
{
    char root[1024];
    make_tree(root, sizeof root);
    vyre_usage u;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_usage_measure(root, 0, 0, &u, &e), 0, "%s", e.message);
    cr_assert_eq(u.exists, 1);
    cr_assert_eq(u.files, 8, "files %llu", (unsigned long long)u.files);
    /* On disk, as du -s counts (the link's own blocks, not its target's). */
    cr_assert_eq(u.bytes, tu_disk_bytes(root), "bytes %llu (%llu: the link was followed?)",
                 (unsigned long long)u.bytes, (unsigned long long)tu_disk_bytes(root));
    cr_assert_eq(u.bytes, tu_du_sk(root) * 1024);
    cr_assert_eq(u.apparent_bytes, 1130, "apparent bytes %llu (5000 more: the link was followed)",
                 (unsigned long long)u.apparent_bytes);
    cr_assert_eq(u.skipped, 0);
    cr_assert_eq(u.partial, 0);
    cr_assert_eq(u.newest_mtime_ns, INT64_C(1750000000) * 1000000000);
}

Test(cache_usage, filesystem_figures_are_statvfs_of_the_directory)
{
    char root[1024];
    make_tree(root, sizeof root);
    vyre_usage u;
    cr_assert_eq(vyre_usage_measure(root, 0, 0, &u, NULL), 0);
    struct statvfs sv;
    cr_assert_eq(statvfs(root, &sv), 0);
    cr_assert_eq(u.fs_valid, 1);
    cr_assert_eq(u.fs_size_bytes, (uint64_t)sv.f_blocks * sv.f_frsize);
    cr_assert_eq(u.fs_files, (uint64_t)sv.f_files);
    cr_assert(u.fs_avail_bytes <= u.fs_free_bytes && u.fs_free_bytes <= u.fs_size_bytes);
    double pct = vyre_usage_fs_full_pct(&u);
    cr_assert(pct >= 0 && pct <= 100, "%g", pct);
}

Test(cache_usage, full_percent_is_dfs)
{
    /* df: used = size - free; Use% = used / (used + avail). */
    vyre_usage u = {.fs_valid = 1,
                    .fs_size_bytes = 1000,
                    .fs_free_bytes = 100,
                    .fs_avail_bytes = 50,
                    .fs_files = 200,
                    .fs_avail_files = 20};
    cr_assert_float_eq(vyre_usage_fs_full_pct(&u), 100.0 * 900 / 950, 1e-9);
    cr_assert_float_eq(vyre_usage_inodes_full_pct(&u), 90.0, 1e-9);
    u.fs_files = 0; /* btrfs reports no inodes */
    cr_assert_eq(vyre_usage_inodes_full_pct(&u), -1);
    u.fs_valid = 0;
    cr_assert_eq(vyre_usage_fs_full_pct(&u), -1);
}

Test(cache_usage, stops_at_the_entry_bound_and_says_partial)
{
    mkd("c");
    for (int i = 0; i < 20; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "c/f%02d", i);
        mkf(rel, 10, 1700000000);
    }
    char root[1024];
    path(root, sizeof root, "c");
    vyre_usage u;
    cr_assert_eq(vyre_usage_measure(root, 5, 0, &u, NULL), 0);
    cr_assert_eq(u.partial, 1);
    cr_assert_eq(u.files, 5);
    cr_assert_eq(u.apparent_bytes, 50);
    char f0[1024];
    path(f0, sizeof f0, "c/f00");
    struct stat rst;
    cr_assert_eq(stat(root, &rst), 0);
    cr_assert_eq(u.bytes, (uint64_t)rst.st_blocks * 512 + 5 * tu_disk_bytes(f0));
    cr_assert_eq(vyre_usage_measure(root, 20, 0, &u, NULL), 0);
    cr_assert_eq(u.partial, 1, "the bound reached is a partial figure");
    cr_assert_eq(vyre_usage_measure(root, 21, 0, &u, NULL), 0);
    cr_assert_eq(u.partial, 0);
    cr_assert_eq(u.files, 20);
}

Test(cache_usage, too_deep_is_skipped_not_walked)
{
    char rel[2048] = "c";
    mkd(rel);
    for (int i = 0; i <= VYRE_USAGE_MAX_DEPTH + 1; i++) {
        size_t n = strlen(rel);
        snprintf(rel + n, sizeof rel - n, "/d");
        mkd(rel);
    }
    char root[1024];
    path(root, sizeof root, "c");
    vyre_usage u;
    cr_assert_eq(vyre_usage_measure(root, 0, 0, &u, NULL), 0);
    /* Directories at depths 0..MAX_DEPTH are walked; the one below the
     * deepest walked is counted, not opened: one skipped. */
    cr_assert_eq(u.files, VYRE_USAGE_MAX_DEPTH + 1, "%llu", (unsigned long long)u.files);
    cr_assert_eq(u.skipped, 1);
}

Test(cache_usage, an_unreadable_subtree_is_skipped)
{
    if (geteuid() == 0)
        cr_skip_test("root reads a mode-000 directory: run as a user to see the skip");
    mkd("c");
    mkd("c/locked");
    mkf("c/locked/x", 10, 1700000000);
    mkf("c/y", 3, 1700000000);
    char locked[1024], root[1024];
    path(locked, sizeof locked, "c/locked");
    path(root, sizeof root, "c");
    cr_assert_eq(chmod(locked, 0), 0);
    vyre_usage u;
    int rc = vyre_usage_measure(root, 0, 0, &u, NULL);
    chmod(locked, 0700);
    cr_assert_eq(rc, 0);
    cr_assert_eq(u.files, 2);
    cr_assert_eq(u.bytes, 3);
    cr_assert_eq(u.skipped, 1);
}

Test(cache_usage, missing_directory_is_empty_on_its_parents_filesystem)
{
    char root[1024];
    path(root, sizeof root, "not/made/yet");
    vyre_usage u;
    cr_assert_eq(vyre_usage_measure(root, 0, 0, &u, NULL), 0);
    cr_assert_eq(u.exists, 0);
    cr_assert_eq(u.files, 0);
    cr_assert_eq(u.fs_valid, 1, "the filesystem of the nearest parent");
}

Test(cache_usage, bad_arguments)
{
    vyre_usage u;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_usage_measure("", 0, 0, &u, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_usage_measure(NULL, 0, 0, &u, &e), VYRE_EINVAL);
    mkf("file", 4, 1700000000);
    char p[1024];
    path(p, sizeof p, "file");
    cr_assert_eq(vyre_usage_measure(p, 0, 0, &u, &e), VYRE_EEXIST);
    cr_assert(strstr(e.message, p), "%s", e.message);
    cr_assert(e.hint[0]);
}

/* ---- locating ---------------------------------------------------------- */

static void env_in_tmp(const char *var, const char *rel)
{
    char p[1024];
    path(p, sizeof p, rel);
    setenv(var, p, 1);
}

static void clear_cache_vars(void)
{
    for (size_t i = 0; i < NVARS; i++)
        unsetenv(g_vars[i]);
    env_in_tmp("HOME", "home");
    env_in_tmp("XDG_CONFIG_HOME", "config");
    env_in_tmp("TMPDIR", "");
}

Test(cache_usage, caches_from_their_variables)
{
    clear_cache_vars();
    env_in_tmp("VYRE_PTX_CACHE_DIR", "v");
    env_in_tmp("CUDA_CACHE_PATH", "j");
    env_in_tmp("TRITON_CACHE_DIR", "t");
    env_in_tmp("TORCHINDUCTOR_CACHE_DIR", "i");
    setenv("CUDA_CACHE_MAXSIZE", "4294967296", 1);
    setenv("VYRE_CACHE_MAX_SIZE", "2G", 1);
    setenv("VYRE_CACHE_TRITON_MAX_SIZE", "3G", 1);
    vyre_usage_cache c[VYRE_USAGE_N_CACHES];
    cr_assert_eq(vyre_usage_caches(NULL, c), 0);
    static const char *const names[] = {"vyre", "cuda_jit", "triton", "inductor"};
    static const char *const rel[] = {"v", "j", "t", "i"};
    static const char *const from[] = {"VYRE_PTX_CACHE_DIR", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR",
                                       "TORCHINDUCTOR_CACHE_DIR"};
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        char want[1024];
        path(want, sizeof want, rel[i]);
        cr_assert_eq(c[i].id, i);
        cr_assert_str_eq(c[i].name, names[i]);
        cr_assert_eq(c[i].located, 1, "%s: %s", names[i], c[i].error.message);
        cr_assert_str_eq(c[i].path, want);
        cr_assert_str_eq(c[i].path_from, from[i]);
    }
    cr_assert_eq(c[VYRE_USAGE_VYRE].limit_bytes, UINT64_C(2) << 30);
    cr_assert(strstr(c[VYRE_USAGE_VYRE].limit_from, "VYRE_CACHE_MAX_SIZE"), "%s",
              c[VYRE_USAGE_VYRE].limit_from);
    cr_assert_eq(c[VYRE_USAGE_CUDA_JIT].limit_bytes, UINT64_C(4) << 30);
    cr_assert_str_eq(c[VYRE_USAGE_CUDA_JIT].limit_from, "CUDA_CACHE_MAXSIZE");
    /* Triton's and Inductor's limits are vyre's keys (issue 26: the
     * exporter and vyre-top showed "no limit" though one was set). */
    cr_assert_eq(c[VYRE_USAGE_TRITON].limit_bytes, UINT64_C(3) << 30);
    cr_assert(
        strstr(c[VYRE_USAGE_TRITON].limit_from, "triton_max_size, env VYRE_CACHE_TRITON_MAX_SIZE"),
        "%s", c[VYRE_USAGE_TRITON].limit_from);
    cr_assert_eq(c[VYRE_USAGE_INDUCTOR].limit_bytes, 0);
    cr_assert(strstr(c[VYRE_USAGE_INDUCTOR].limit_from, "none (inductor_max_size 0"), "%s",
              c[VYRE_USAGE_INDUCTOR].limit_from);
}

Test(cache_usage, caches_by_default)
{
    clear_cache_vars();
    env_in_tmp("XDG_CACHE_HOME", "xdg");
    vyre_usage_cache c[VYRE_USAGE_N_CACHES];
    cr_assert_eq(vyre_usage_caches(NULL, c), 0);
    char want[1024];
    path(want, sizeof want, "xdg/vyre/ptx-cache");
    cr_assert_str_eq(c[VYRE_USAGE_VYRE].path, want);
    cr_assert_str_eq(c[VYRE_USAGE_VYRE].path_from, "XDG_CACHE_HOME");
    cr_assert_eq(c[VYRE_USAGE_VYRE].limit_bytes, UINT64_C(5) << 30);
    cr_assert_str_eq(c[VYRE_USAGE_VYRE].limit_from, "max_size, default");
    path(want, sizeof want, "xdg/vyre/cuda-jit");
    cr_assert_str_eq(c[VYRE_USAGE_CUDA_JIT].path, want);
    cr_assert_str_eq(c[VYRE_USAGE_CUDA_JIT].path_from, "XDG_CACHE_HOME");
    cr_assert_eq(c[VYRE_USAGE_CUDA_JIT].limit_bytes, UINT64_C(1) << 30);
    path(want, sizeof want, "home/.triton/cache");
    cr_assert_str_eq(c[VYRE_USAGE_TRITON].path, want);
    cr_assert_str_eq(c[VYRE_USAGE_TRITON].path_from, "HOME");
    cr_assert(strstr(c[VYRE_USAGE_INDUCTOR].path, "/torchinductor_"), "%s",
              c[VYRE_USAGE_INDUCTOR].path);
    cr_assert_str_eq(c[VYRE_USAGE_INDUCTOR].path_from, "default");
    /* The caller's root wins, and says so. */
    path(want, sizeof want, "mine");
    cr_assert_eq(vyre_usage_caches(want, c), 0);
    cr_assert_str_eq(c[VYRE_USAGE_VYRE].path, want);
    cr_assert_str_eq(c[VYRE_USAGE_VYRE].path_from, "caller");
}

Test(cache_usage, a_bad_variable_spoils_only_its_cache)
{
    clear_cache_vars();
    setenv("CUDA_CACHE_MAXSIZE", "lots", 1);
    vyre_usage_cache c[VYRE_USAGE_N_CACHES];
    cr_assert_eq(vyre_usage_caches(NULL, c), 0);
    cr_assert_eq(c[VYRE_USAGE_CUDA_JIT].located, 0);
    cr_assert_eq(c[VYRE_USAGE_CUDA_JIT].error.code, VYRE_EENV);
    cr_assert(strstr(c[VYRE_USAGE_CUDA_JIT].error.message, "lots"), "%s",
              c[VYRE_USAGE_CUDA_JIT].error.message);
    cr_assert_eq(c[VYRE_USAGE_VYRE].located, 1);
    cr_assert_eq(c[VYRE_USAGE_TRITON].located, 1);
    cr_assert_eq(c[VYRE_USAGE_INDUCTOR].located, 1);
    cr_assert_eq(vyre_usage_caches(NULL, NULL), VYRE_EINVAL);
}

/* The time bound: 20000 entries cannot be looked at in 1 ms (that would be
 * 50 ns a stat; a local stat takes about a microsecond), so the walk stops
 * early and says so. */
Test(cache_usage, stops_at_the_time_bound_and_says_partial, .timeout = 120)
{
    mkd("c");
    char root[1024];
    path(root, sizeof root, "c");
    for (int d = 0; d < 20; d++) {
        char rel[64];
        snprintf(rel, sizeof rel, "c/d%02d", d);
        mkd(rel);
        for (int i = 0; i < 1000; i++) {
            char p[1100];
            snprintf(p, sizeof p, "%s/d%02d/f%04d", root, d, i);
            int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
            cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
            close(fd);
        }
    }
    vyre_usage u;
    cr_assert_eq(vyre_usage_measure(root, 0, 1, &u, NULL), 0);
    cr_assert_eq(u.partial, 1, "files %llu", (unsigned long long)u.files);
    cr_assert_lt(u.files, 20020);
    cr_assert_eq(vyre_usage_measure(root, 0, 0, &u, NULL), 0);
    cr_assert_eq(u.partial, 0);
    cr_assert_eq(u.files, 20020);
}
