/*
 * test_fsutil.c - base/fsutil.c: the bounded whole-file reader.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
