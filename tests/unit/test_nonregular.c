/*
 * test_nonregular.c - the shared file reader (vyre__read_file, which
 * reads sweep specs, their "kernel" and the bench's PTX) refuses what is
 * not a regular file without blocking: a FIFO with no writer blocked the
 * open forever, a FIFO with a slow writer the read. A directory and a
 * device get the same clear refusal.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "testutil.h"

static char g_dir[512];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(nonregular, .init = setup, .fini = teardown);

/* vyre__read_file of path in a child with an alarm: the child's exit
 * code is 0 on success, 10 + the code's magnitude on failure with err
 * filled, and SIGALRM (128 + 14) when it blocked. */
static int read_in_child(const char *path, char *msg, size_t size)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        alarm(5);
        char *buf = NULL;
        size_t len = 0;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre__read_file(path, 1 << 20, &buf, &len, &e);
        free(buf);
        char out[1200];
        int n = snprintf(out, sizeof out, "%s\nhint: %s", e.message, e.hint);
        if (write(fds[1], out, (size_t)n) != n)
            _exit(2);
        _exit(rc ? 10 - rc : 0);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], msg, size - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(nonregular, read_file_refuses_a_fifo_without_blocking)
{
    char fifo[600], msg[1200], want[1400];
    snprintf(fifo, sizeof fifo, "%s/kernel.ptx", g_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int code = read_in_child(fifo, msg, sizeof msg);
    cr_assert_eq(code, 10 - VYRE_EINVAL, "exit %d (142: it blocked): %s", code, msg);
    snprintf(want, sizeof want,
             "cannot read '%s': it is a FIFO, not a regular file\n"
             "hint: give a regular file (vyre reads no FIFO, device or directory: it could wait "
             "forever)",
             fifo);
    cr_assert_str_eq(msg, want);
}

Test(nonregular, read_file_refuses_a_directory_and_a_device)
{
    char msg[1200];
    int code = read_in_child(g_dir, msg, sizeof msg);
    cr_assert_eq(code, 10 - VYRE_EINVAL, "exit %d: %s", code, msg);
    cr_assert(strstr(msg, "it is a directory, not a regular file"), "%s", msg);
    code = read_in_child("/dev/zero", msg, sizeof msg);
    cr_assert_eq(code, 10 - VYRE_EINVAL, "exit %d: %s", code, msg);
    cr_assert(strstr(msg, "it is a device, not a regular file"), "%s", msg);
    /* A regular file still reads, and a symlink to one. */
    char file[600], link[600];
    snprintf(file, sizeof file, "%s/k.cu", g_dir);
    snprintf(link, sizeof link, "%s/link.cu", g_dir);
    tu_write_file(file, "x", 1);
    cr_assert_eq(symlink(file, link), 0);
    cr_assert_eq(read_in_child(file, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(read_in_child(link, msg, sizeof msg), 0, "%s", msg);
}
