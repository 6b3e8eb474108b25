/*
 * test_foreign.c - what the Triton and Inductor readers share: removing a
 * group of another tool's cache (rename to a vyre trash name, then remove,
 * never through a link) and locating TorchInductor's cache as PyTorch does.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/foreign/foreign_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_tmp[512];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

static void put(const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
    tu_write_file(p, text, strlen(text));
}

static int exists(const char *rel)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
    return lstat(p, &st) == 0;
}

TestSuite(foreign, .init = setup, .fini = teardown);

Test(foreign, a_group_is_renamed_then_removed_and_links_are_not_followed)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/cache", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/cache/G", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/cache/G/sub", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    put("cache/G/k.cubin", "12345");
    put("cache/G/sub/x", "abc");
    put("outside", "keep me");
    char link[1024], target[1024];
    snprintf(target, sizeof target, "%s/outside", g_tmp);
    snprintf(link, sizeof link, "%s/cache/G/link", g_tmp);
    cr_assert_eq(symlink(target, link), 0);

    /* On disk, as du counts: G, sub, the two files and the link itself. */
    snprintf(p, sizeof p, "%s/cache/G", g_tmp);
    uint64_t on_disk = tu_disk_bytes(p);
    snprintf(p, sizeof p, "%s/cache", g_tmp);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0);
    unsigned long long bytes = 0;
    vyre_error err = {0};
    cr_assert_eq(vyre__foreign_remove_group(fd, "G", &bytes, &err), 0, "%s", err.message);
    close(fd);
    cr_assert_eq(bytes, on_disk, "what G took on disk, not the link's target: %llu", bytes);
    cr_assert(!exists("cache/G"));
    cr_assert(exists("outside"), "the link's target must survive");
    DIR *d = opendir(p);
    int left = 0;
    for (struct dirent *de; (de = readdir(d));)
        left += de->d_name[0] != '.' || vyre__foreign_is_trash(de->d_name);
    closedir(d);
    cr_assert_eq(left, 0, "no trash left behind");
}

Test(foreign, only_plain_directory_names_are_trashed)
{
    put("file", "x");
    char p[1024], trash[256];
    snprintf(p, sizeof p, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/ln", g_tmp);
    cr_assert_eq(symlink("outside", p), 0);
    int fd = open(g_tmp, O_RDONLY | O_DIRECTORY);
    vyre_error err = {0};
    cr_assert_eq(vyre__foreign_trash_rename(fd, "file", trash, sizeof trash, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_trash_rename(fd, "ln", trash, sizeof trash, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_trash_rename(fd, "../x", trash, sizeof trash, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_trash_rename(fd, "..", trash, sizeof trash, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_trash_rename(fd, "gone", trash, sizeof trash, &err), VYRE_ENOENT);
    cr_assert_eq(vyre__foreign_trash_rename(fd, "outside", trash, sizeof trash, &err), 0);
    cr_assert(vyre__foreign_is_trash(trash), "%s", trash);
    cr_assert(exists(trash) && !exists("outside") && exists("ln") && exists("file"));
    close(fd);
}

Test(foreign, a_tree_deeper_than_the_bound_is_left_with_an_error)
{
    char p[2048];
    int n = snprintf(p, sizeof p, "%s/deep", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    for (int i = 0; i < VYRE__FOREIGN_MAX_DEPTH + 2; i++) {
        n += snprintf(p + n, sizeof p - (size_t)n, "/d");
        cr_assert_eq(mkdir(p, 0700), 0);
    }
    int fd = open(g_tmp, O_RDONLY | O_DIRECTORY);
    vyre_error err = {0};
    cr_assert_eq(vyre__foreign_remove_tree(fd, "deep", NULL, &err), VYRE_ETOOBIG);
    cr_assert(strstr(err.message, "deeper"), "%s", err.message);
    close(fd);
}

Test(foreign, inductor_cache_is_found_as_pytorch_finds_it)
{
    static const char *const vars[] = {
        "TORCHINDUCTOR_CACHE_DIR", "TMPDIR", "TEMP", "TMP", "LOGNAME", "USER", "LNAME", "USERNAME"};
    tu_env saved;
    tu_env_save(&saved, vars, sizeof vars / sizeof *vars);
    char out[1024], want[1024];
    const char *src = NULL;
    vyre_error err = {0};

    setenv("TORCHINDUCTOR_CACHE_DIR", "/some/where", 1);
    cr_assert_eq(vyre_inductor_cache_dir(out, sizeof out, &src, &err), 0);
    cr_assert_str_eq(out, "/some/where");
    cr_assert_str_eq(src, "TORCHINDUCTOR_CACHE_DIR");
    unsetenv("TORCHINDUCTOR_CACHE_DIR");

    /* TMPDIR naming a directory wins; the user's name is sanitized. */
    setenv("TMPDIR", g_tmp, 1);
    setenv("USER", "dom\\ain:bob", 1);
    cr_assert_eq(vyre_inductor_cache_dir(out, sizeof out, &src, &err), 0);
    snprintf(want, sizeof want, "%s/torchinductor_dom_ain_bob", g_tmp);
    cr_assert_str_eq(out, want);
    cr_assert_str_eq(src, "default");

    /* LOGNAME comes before USER; a TMPDIR that is not a directory is passed over. */
    setenv("LOGNAME", "alice", 1);
    setenv("TMPDIR", "/nonexistent/vyre-test", 1);
    setenv("TEMP", g_tmp, 1);
    cr_assert_eq(vyre_inductor_cache_dir(out, sizeof out, &src, &err), 0);
    snprintf(want, sizeof want, "%s/torchinductor_alice", g_tmp);
    cr_assert_str_eq(out, want);

    cr_assert_eq(vyre_inductor_cache_dir(out, 8, &src, &err), VYRE_ETOOBIG);
    tu_env_restore(&saved);
}
