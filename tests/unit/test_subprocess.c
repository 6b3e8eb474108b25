/*
 * test_subprocess.c - base/subprocess.c: what the child writes comes back
 * (cut to fit, the rest drained), its exit status, the environment it
 * gets, a descriptor other than stdout, and a program that cannot start.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/subprocess.h"

static int sh(const char *script, const char *const *env_set, int fd, char *buf, size_t size,
              int *status, vyre_error *e)
{
    char a0[] = "sh", a1[] = "-c";
    char *argv[] = {a0, a1, (char *)(uintptr_t)script, NULL};
    vyre__subprocess sp = {"/bin/sh", argv, env_set, fd, 0, 0};
    return vyre__subprocess_run(&sp, buf, size, status, e);
}

Test(subprocess, captures_stdout_and_exit_status)
{
    char buf[64];
    int status = 99;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(
        sh("printf 'hello\\n'; echo noise >&2; exit 3", NULL, 1, buf, sizeof buf, &status, &e),
        VYRE_OK, "%s", e.message);
    cr_assert_str_eq(buf, "hello\n");
    cr_assert_eq(status, 3);
}

Test(subprocess, output_is_cut_to_fit_and_the_rest_drained)
{
    char buf[8];
    int status = 99;
    /* 200 KB: more than a pipe holds, so the child would block (and the
     * call hang) if the rest were not read. */
    cr_assert_eq(sh("i=0; while [ $i -lt 20000 ]; do printf 0123456789; i=$((i+1)); done", NULL, 1,
                    buf, sizeof buf, &status, NULL),
                 VYRE_OK);
    cr_assert_str_eq(buf, "0123456");
    cr_assert_eq(status, 0);
}

Test(subprocess, env_set_replaces_and_adds)
{
    cr_assert_eq(setenv("VYRE_TEST_SP_A", "parent", 1), 0);
    cr_assert_eq(setenv("VYRE_TEST_SP_KEEP", "kept", 1), 0);
    static const char *const env_set[] = {"VYRE_TEST_SP_A=child", "VYRE_TEST_SP_B=new", NULL};
    char buf[128];
    int status = 99;
    cr_assert_eq(sh("printf '%s %s %s' \"$VYRE_TEST_SP_A\" \"$VYRE_TEST_SP_B\" "
                    "\"$VYRE_TEST_SP_KEEP\"",
                    env_set, 1, buf, sizeof buf, &status, NULL),
                 VYRE_OK);
    cr_assert_str_eq(buf, "child new kept");
    cr_assert_str_eq(getenv("VYRE_TEST_SP_A"), "parent", "the parent's environment is untouched");
}

Test(subprocess, reads_another_descriptor)
{
    char buf[64];
    int status = 99;
    cr_assert_eq(sh("printf on-stdout; printf on-fd3 >&3", NULL, 3, buf, sizeof buf, &status, NULL),
                 VYRE_OK);
    cr_assert_str_eq(buf, "on-fd3");
    cr_assert_eq(status, 0);
}

Test(subprocess, killed_by_a_signal_is_status_minus_one)
{
    char buf[16];
    int status = 99;
    cr_assert_eq(sh("kill -9 $$", NULL, 1, buf, sizeof buf, &status, NULL), VYRE_OK);
    cr_assert_eq(status, -1);
    cr_assert_str_empty(buf);
}

Test(subprocess, a_missing_program_is_an_error_naming_it)
{
    char a0[] = "nope";
    char *argv[] = {a0, NULL};
    vyre__subprocess sp = {"/nonexistent/vyre-test-program", argv, NULL, 1, 0, 0};
    char buf[16];
    int status = 99;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__subprocess_run(&sp, buf, sizeof buf, &status, &e), VYRE_ENOENT);
    cr_assert_str_eq(e.message, "cannot run '/nonexistent/vyre-test-program': No such file or "
                                "directory");
    cr_assert_str_eq(e.hint, "check the path");
    cr_assert_eq(status, -1);
    vyre__subprocess bad = {NULL, argv, NULL, 1, 0, 0};
    cr_assert_eq(vyre__subprocess_run(&bad, buf, sizeof buf, &status, NULL), VYRE_EINVAL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A child that outlives timeout_ms is killed and reaped, and the call says
 * so; what it wrote before is kept. The bound asked for is 200 ms: the
 * call must come back long before the child's own 30 s. */
Test(subprocess, a_child_past_its_time_is_killed)
{
    char a0[] = "sh", a1[] = "-c", a2[] = "echo started; exec sleep 30";
    char *argv[] = {a0, a1, a2, NULL};
    vyre__subprocess sp = {"/bin/sh", argv, NULL, 1, 200, 0};
    char buf[64];
    int status = 99;
    vyre_error e;
    vyre_error_clear(&e);
    double t0 = now_s();
    cr_assert_eq(vyre__subprocess_run(&sp, buf, sizeof buf, &status, &e), VYRE_EIO);
    double took = now_s() - t0;
    cr_assert_lt(took, 10.0, "took %.1f s: the child was not killed", took);
    cr_assert_str_eq(e.message, "'/bin/sh' did not finish in 200 ms");
    cr_assert_str_eq(buf, "started\n");
    /* In time: the limit changes nothing. */
    char b2[] = "echo done";
    argv[2] = b2;
    cr_assert_eq(vyre__subprocess_run(&sp, buf, sizeof buf, &status, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(buf, "done\n");
    cr_assert_eq(status, 0);
}

/* null_stderr: what the child says on stderr goes nowhere;
 * asked through a script that reports what fd 2 is. */
Test(subprocess, stderr_can_be_silenced)
{
    char a0[] = "sh", a1[] = "-c", a2[] = "readlink /proc/self/fd/2";
    char *argv[] = {a0, a1, a2, NULL};
    vyre__subprocess sp = {"/bin/sh", argv, NULL, 1, 0, 1};
    char buf[128];
    int status = 99;
    vyre_error e;
    cr_assert_eq(vyre__subprocess_run(&sp, buf, sizeof buf, &status, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(buf, "/dev/null\n");
}
