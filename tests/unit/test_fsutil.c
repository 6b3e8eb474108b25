/*
 * test_fsutil.c - base/fsutil.c: the bounded whole-file reader, and the
 * walk that refuses another user's symlink on the way to a path.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "testutil.h"

static char g_tmp[512];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(fsutil, .init = setup, .fini = teardown);

/* A file of n bytes ('a' + i % 26) at g_tmp/name; its path into path. */
static void make_file(const char *name, size_t n, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", g_tmp, name);
    char *data = malloc(n ? n : 1);
    cr_assert_not_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (char)('a' + i % 26);
    tu_write_file(path, data, n);
    free(data);
}

Test(fsutil, read_file_whole_and_terminated)
{
    /* Sizes around the reader's first buffer and its doublings. */
    static const size_t sizes[] = {0, 1, 4094, 4095, 4096, 4097, 8191, 8192, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char path[700];
        make_file("f", sizes[k], path, sizeof path);
        char *buf = NULL;
        size_t len = 7;
        vyre_error err;
        vyre_error_clear(&err);
        cr_assert_eq(vyre__read_file(path, sizes[k], &buf, &len, &err), VYRE_OK, "%zu: %s",
                     sizes[k], err.message);
        cr_assert_eq(len, sizes[k]);
        cr_assert_eq(buf[len], '\0');
        for (size_t i = 0; i < len; i++)
            cr_assert_eq(buf[i], (char)('a' + i % 26), "byte %zu of %zu", i, len);
        free(buf);
    }
}

Test(fsutil, read_file_refuses_more_than_max)
{
    static const size_t sizes[] = {1, 4095, 4096, 4097, 8193, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char path[700];
        make_file("f", sizes[k], path, sizeof path);
        char untouched[] = "untouched";
        char *buf = untouched;
        size_t len = 7;
        vyre_error err;
        vyre_error_clear(&err);
        cr_assert_eq(vyre__read_file(path, sizes[k] - 1, &buf, &len, &err), VYRE_ETOOBIG, "%zu",
                     sizes[k]);
        cr_assert_eq(buf, untouched);
        cr_assert_eq(len, 7);
        cr_assert(strstr(err.message, path), "%s", err.message);
    }
}

Test(fsutil, read_file_missing_and_directory)
{
    char path[700];
    snprintf(path, sizeof path, "%s/none", g_tmp);
    char *buf = NULL;
    size_t len = 0;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre__read_file(path, 100, &buf, &len, &err), VYRE_ENOENT);
    cr_assert_eq(errno, ENOENT);
    cr_assert(strstr(err.message, "cannot read '"), "%s", err.message);
    cr_assert_null(buf);
    /* A directory is refused before a read is tried (test_nonregular.c). */
    vyre_error_clear(&err);
    cr_assert_eq(vyre__read_file(g_tmp, 100, &buf, &len, &err), VYRE_EINVAL);
    cr_assert_eq(errno, EISDIR);
    cr_assert_null(buf);
}

/* vyre__path_check_links: whoever owns a link on the way decides where a
 * path leads; only the user's and root's links are followed. */
Test(fsutil, path_check_links_refuses_another_users_link_anywhere_on_the_way)
{
    char real[600], own[600], theirs[600], via[700], bad[600];
    snprintf(real, sizeof real, "%s/real", g_tmp);
    cr_assert_eq(mkdir(real, 0700), 0);
    snprintf(own, sizeof own, "%s/own", g_tmp);
    cr_assert_eq(symlink("real", own), 0);
    uid_t owner = 0;
    cr_assert_eq(vyre__path_check_links(own, geteuid(), bad, sizeof bad, &owner), 0);
    /* A missing component ends the walk: nothing past it is followed. */
    snprintf(via, sizeof via, "%s/real/not/yet", g_tmp);
    cr_assert_eq(vyre__path_check_links(via, geteuid(), bad, sizeof bad, &owner), 0);
    if (geteuid() != 0)
        cr_skip_test("needs root to give a link to another user");
    snprintf(theirs, sizeof theirs, "%s/theirs", g_tmp);
    cr_assert_eq(symlink(own, theirs), 0); /* theirs -> own -> real */
    cr_assert_eq(lchown(theirs, 4242, 4242), 0);
    snprintf(via, sizeof via, "%s/theirs/x/../sub", g_tmp);
    cr_assert_eq(vyre__path_check_links(via, geteuid(), bad, sizeof bad, &owner), 1);
    cr_assert_str_eq(bad, theirs);
    cr_assert_eq(owner, 4242);
    /* Behind one of the user's own links, as a component of its target. */
    char hop[600];
    snprintf(hop, sizeof hop, "%s/hop", g_tmp);
    cr_assert_eq(symlink(theirs, hop), 0);
    cr_assert_eq(vyre__path_check_links(hop, geteuid(), bad, sizeof bad, &owner), 1);
    cr_assert_str_eq(bad, theirs);
    /* A loop is ELOOP, not a hang. */
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/loop-a", g_tmp);
    snprintf(b, sizeof b, "%s/loop-b", g_tmp);
    cr_assert_eq(symlink(b, a), 0);
    cr_assert_eq(symlink(a, b), 0);
    errno = 0;
    cr_assert_eq(vyre__path_check_links(a, geteuid(), bad, sizeof bad, &owner), -1);
    cr_assert_eq(errno, ELOOP);
}

/* tu_rm_rf (tests/common/testutil.c) removes links, never changes what
 * they name: it chmod()ed every entry 0700, following links, and a test's
 * link to "/" left / at 0700 (every later test run as another user failed). */
Test(fsutil, test_cleanup_never_changes_the_mode_of_what_a_link_names)
{
    char outside[600], inner[600], link1[700], link2[700];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    tu_write_file(outside, "x", 1);
    cr_assert_eq(chmod(outside, 0644), 0);
    snprintf(inner, sizeof inner, "%s/inner", g_tmp);
    cr_assert_eq(mkdir(inner, 0755), 0);
    snprintf(link1, sizeof link1, "%s/to-file", inner);
    snprintf(link2, sizeof link2, "%s/to-dir", inner);
    cr_assert_eq(symlink(outside, link1), 0);
    cr_assert_eq(symlink(g_tmp, link2), 0);
    cr_assert_eq(chmod(g_tmp, 0755), 0);
    tu_rm_rf(inner);
    struct stat st;
    cr_assert_eq(lstat(inner, &st), -1, "removed");
    cr_assert_eq(stat(outside, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0644, "the link's target kept its mode: %o",
                 st.st_mode & 07777);
    cr_assert_eq(stat(g_tmp, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0755, "the linked directory kept its mode: %o",
                 st.st_mode & 07777);
}
