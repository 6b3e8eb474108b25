/*
 * test_top_usage.c - vyre-top's rows of the caches' sizes: the text of one
 * row (top_fmt_usage) for each case a user meets (under, over and without
 * a limit, a filesystem nearly full of bytes or of inodes, a partial scan,
 * a directory not created yet, a cache that cannot be measured), and which
 * rows are warnings.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "tool_usagesnap.h"

#define GIB (UINT64_C(1) << 30)

/* A measured cache on a 100 GiB filesystem with avail_gib free. */
static tool_usage_fig fig(const char *name, const char *path, const char *from, uint64_t bytes,
                          uint64_t files, uint64_t limit, uint64_t avail_gib)
{
    tool_usage_fig f;
    memset(&f, 0, sizeof f);
    f.where.name = name;
    f.where.located = 1;
    snprintf(f.where.path, sizeof f.where.path, "%s", path);
    f.where.path_from = from;
    f.where.limit_bytes = limit;
    f.state = TOOL_USAGE_OK;
    f.u.exists = 1;
    f.u.bytes = bytes;
    f.u.files = files;
    f.u.fs_valid = 1;
    f.u.fs_size_bytes = 100 * GIB;
    f.u.fs_free_bytes = f.u.fs_avail_bytes = avail_gib * GIB;
    f.u.fs_files = 1000000;
    f.u.fs_avail_files = 900000;
    return f;
}

Test(top_usage, full_filesystem_is_a_warning)
{
    tool_usage_fig f = fig("triton", "/home/u/.triton/cache", "HOME", 1258291, 84000, 0, 9);
    char buf[1024];
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 1);
    cr_assert_str_eq(buf, "triton    1.20M  84.0k files  no limit             fs 91% full, "
                          "9.00G free    /home/u/.triton/cache (HOME)");
    f.u.fs_free_bytes = f.u.fs_avail_bytes = 11 * GIB; /* 89%: not yet */
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 0, "%s", buf);
    cr_assert(strstr(buf, "fs 89% full, 11.0G free"), "%s", buf);
}

Test(top_usage, under_and_over_the_limit)
{
    tool_usage_fig f = fig("vyre", "/c/vyre", "XDG_CACHE_HOME", GIB, 7, 5 * GIB, 50);
    char buf[1024];
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "vyre      1.00G      7 files  limit 5.00G (20%)    fs 50% full, "
                          "50.0G free    /c/vyre (XDG_CACHE_HOME)");
    f.u.bytes = 6 * GIB;
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 1);
    cr_assert(strstr(buf, "  OVER its 5.00G limit fs 50% full"), "%s", buf);
}

Test(top_usage, partial_scan_and_inodes)
{
    tool_usage_fig f = fig("inductor", "/tmp/torchinductor_u", "default", 3 * GIB, 2000000, 0, 50);
    f.u.partial = 1;
    f.u.fs_avail_files = 40000; /* 96% of the inodes used, 50% of the bytes */
    char buf[1024];
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 1);
    cr_assert_str_eq(buf, "inductor >3.00G  >2.0M files  no limit             fs 96% full "
                          "(inodes), 50.0G free /tmp/torchinductor_u (default)");
}

Test(top_usage, not_created_and_not_measurable)
{
    tool_usage_fig f = fig("cuda_jit", "/c/cuda-jit", "CUDA_CACHE_PATH", 0, 0, GIB, 50);
    f.u.exists = 0;
    char buf[1024];
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "cuda_jit not created yet                  fs 50% full, 50.0G free    "
                          "/c/cuda-jit (CUDA_CACHE_PATH)");
    f.state = TOOL_USAGE_ERROR;
    snprintf(f.msg, sizeof f.msg, "'/c/cuda-jit' is not a directory; hint: point it elsewhere");
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 1);
    cr_assert_str_eq(buf, "cuda_jit cannot measure: '/c/cuda-jit' is not a directory; hint: "
                          "point it elsewhere");
    /* No filesystem figures: "fs -", no warning from them. */
    f = fig("triton", "/t", "TRITON_CACHE_DIR", 10, 1, 0, 50);
    f.u.fs_valid = 0;
    cr_assert_eq(top_fmt_usage(&f, buf, sizeof buf), 0);
    cr_assert(strstr(buf, "  fs -  "), "%s", buf);
}

Test(top_usage, warn_rule_is_the_monitors_own)
{
    tool_usage_fig f = fig("vyre", "/v", "HOME", 10, 1, 100, 10); /* 90% exactly */
    cr_assert_eq(tool_usage_warn(&f), 1);
    f.u.fs_free_bytes = f.u.fs_avail_bytes = 11 * GIB;
    cr_assert_eq(tool_usage_warn(&f), 0);
    f.u.bytes = 101;
    cr_assert_eq(tool_usage_warn(&f), 1, "over its limit");
    f.state = TOOL_USAGE_ERROR;
    cr_assert_eq(tool_usage_warn(&f), 0, "no figures, no claim");
}

Test(top_usage, a_path_is_shown_through_the_sanitiser)
{
    tool_usage_fig f = fig("triton", "/t/\x1b[2Jevil\n", "TRITON_CACHE_DIR", 10, 1, 0, 50);
    char buf[1024];
    top_fmt_usage(&f, buf, sizeof buf);
    cr_assert_null(strchr(buf, '\x1b'), "%s", buf);
    cr_assert_null(strchr(buf, '\n'), "%s", buf);
    cr_assert(strstr(buf, "evil"), "%s", buf);
}
