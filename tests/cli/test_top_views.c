/*
 * test_top_views.c - vyre-top in tmux as a new nvitop user tries it (issue
 * 37): two fake GPUs (the test build's NVML fake), one process on both,
 * long cache paths, at 80x24 and 200x50.
 *
 * The process is a sleeping child of this test named two_gpu_proc (so /proc
 * has real figures for it), started with CUDA_VISIBLE_DEVICES=1,0; NVML
 * lists it on GPU 0 and GPU 1 with a different memory and SM% on each. Every wait is a poll with a
 * deadline. Skipped with a reason when tmux is not installed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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

#include "testutil.h"
#include "tutmux.h"

#ifndef VYRE_TOP_BIN
#error "tests/CMakeLists.txt must define VYRE_TOP_BIN"
#endif

#ifdef FAKENVML_LIB

#define WAIT_MS 30000 /* generous: sanitized builds on a loaded CI machine */

static char g_tmp[512];
static char g_sock[128];
static char g_tmux[4096];
static char g_procs[160], g_util[160];
static pid_t g_child;
static int g_tmux_started;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- tmux ---------------------------------------------------------------- */

static int find_tmux(void)
{
    return tu_tmux_find(g_tmux, sizeof g_tmux);
}

/* tmux on our socket; output through a file (a server started by the
 * first call would hold a pipe open for its whole life). */
static char *tmux_v(int *code, const char *const *args)
{
    return tu_tmux_run(g_tmux, g_sock, g_tmp, code, args);
}

#define TMUX(...)        tmux_v(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define TMUX_RC(rc, ...) tmux_v(rc, (const char *const[]){__VA_ARGS__, NULL})

static char *capture(void)
{
    int code = 0;
    char *out = TMUX_RC(&code, "capture-pane", "-p", "-t", "top");
    if (code != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void keys(const char *k)
{
    free(TMUX("send-keys", "-t", "top", k));
}

/* Polls the screen until it holds every string of want (NULL-ended);
 * fails with the last screen. Returns the screen (caller frees). */
static char *wait_for(const char *const *want, const char *what)
{
    char *last = NULL;
    for (int waited = 0; waited <= WAIT_MS; waited += 100) {
        free(last);
        last = capture();
        int ok = last != NULL;
        for (int i = 0; ok && want[i]; i++)
            ok = strstr(last, want[i]) != NULL;
        if (ok)
            return last;
        sleep_ms(100);
    }
    cr_assert_fail("timed out waiting for %s; screen:\n%s", what, last ? last : "(no pane)");
    return NULL;
}

#define WAIT_FOR(what, ...) wait_for((const char *const[]){__VA_ARGS__, NULL}, what)

static void start_top(int cols, int rows)
{
    if (!find_tmux())
        cr_skip_test("tmux is not installed (PATH has no tmux): the terminal tests need it");
    char cmd[4096], x[16], y[16];
    snprintf(cmd, sizeof cmd, "'%s' -d 0.3 -n 2000; echo \"exit=$?\" > '%s/exit'", VYRE_TOP_BIN,
             g_tmp);
    snprintf(x, sizeof x, "%d", cols);
    snprintf(y, sizeof y, "%d", rows);
    int code = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        free(TMUX_RC(&code, "new-session", "-d", "-s", "top", "-x", x, "-y", y, cmd));
        if (code == 0)
            break;
        free(TMUX("kill-server"));
        sleep_ms(200);
    }
    cr_assert_eq(code, 0, "tmux new-session failed 3 times");
    g_tmux_started = 1;
}

static void quit_top(void)
{
    keys("q");
    char path[700];
    snprintf(path, sizeof path, "%s/exit", g_tmp);
    for (int waited = 0; waited <= WAIT_MS; waited += 50) {
        char *s = tu_read_file(path, NULL);
        int done = s && strchr(s, '\n');
        if (done)
            cr_assert_str_eq(s, "exit=0\n");
        free(s);
        if (done)
            return;
        sleep_ms(50);
    }
    cr_assert_fail("vyre-top did not quit");
}

/* ---- the process on two GPUs ----------------------------------------------- */

static void start_child(void)
{
    /* sleep(1) under the name two_gpu_proc (a link: the kernel names a
     * process after the file it ran), started with CUDA_VISIBLE_DEVICES
     * set, which the detail view reads back from its /proc/PID/environ. */
    char link[700];
    snprintf(link, sizeof link, "%s/two_gpu_proc", g_tmp);
    cr_assert_eq(symlink("/bin/sleep", link), 0, "symlink: %s", strerror(errno));
    fflush(NULL);
    g_child = fork();
    cr_assert_geq(g_child, 0, "fork: %s", strerror(errno));
    if (g_child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *const env[] = {(char *)(uintptr_t) "CUDA_VISIBLE_DEVICES=1,0", NULL};
        execle(link, "two_gpu_proc", "infinity", (char *)NULL, env);
        _exit(127);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)g_child);
    for (int waited = 0;; waited += 10) {
        char *comm = tu_read_file(path, NULL);
        int ok = comm && strcmp(comm, "two_gpu_proc\n") == 0;
        free(comm);
        if (ok)
            break;
        cr_assert_lt(waited, WAIT_MS, "the child did not rename itself");
        sleep_ms(10);
    }
    /* 512 MiB and 20% on GPU 0, 1 GiB and 37% on GPU 1. */
    snprintf(g_procs, sizeof g_procs, "FAKENVML_PROCS=0:%d:536870912,1:%d:1073741824", (int)g_child,
             (int)g_child);
    snprintf(g_util, sizeof g_util, "FAKENVML_PROC_UTIL=0:%d:20:1,1:%d:37:5", (int)g_child,
             (int)g_child);
    putenv(g_procs);
    putenv(g_util);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_sock, sizeof g_sock, "vyre-top-views-%d", (int)getpid());
    char buf[900];
    setenv("HOME", g_tmp, 1);
    /* A long cache path: shown whole where the row has room. */
    snprintf(buf, sizeof buf, "%s/xdg-cache-with-a-rather-long-directory-name-for-the-test", g_tmp);
    setenv("XDG_CACHE_HOME", buf, 1);
    unsetenv("VYRE_PTX_CACHE_DIR");
    snprintf(buf, sizeof buf, "%s/xdg-data", g_tmp);
    setenv("XDG_DATA_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/xdg-config", g_tmp);
    setenv("XDG_CONFIG_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/tmux", g_tmp);
    mkdir(buf, 0700);
    setenv("TMUX_TMPDIR", buf, 1);
    snprintf(buf, sizeof buf, "%s/tel", g_tmp);
    setenv("VYRE_TELEMETRY_DIR", buf, 1);
    unsetenv("VYRE_TELEMETRY");
    unsetenv("TMUX");
    unsetenv("COLUMNS");
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_GPUS", "2", 1);
    g_tmux_started = 0;
    start_child();
}

static void teardown(void)
{
    if (g_tmux_started)
        free(TMUX("kill-server"));
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = 0;
    }
    tu_rm_rf(g_tmp);
}

TestSuite(top_views, .init = setup, .fini = teardown, .timeout = 300);

/* The rows of the screen whose first word is pid. */
static int rows_of(const char *screen, int pid, char rows[][512], int max)
{
    char pat[16];
    snprintf(pat, sizeof pat, "%d ", pid);
    int n = 0;
    for (const char *p = screen; p && *p && n < max;) {
        size_t len = strcspn(p, "\n");
        const char *t = p + strspn(p, " >");
        if (strncmp(t, pat, strlen(pat)) == 0 && (size_t)(t - p) < len)
            snprintf(rows[n++], 512, "%.*s", (int)len, p);
        p += len;
        if (*p == '\n')
            p++;
    }
    return n;
}

static int words(const char *row, char w[][64], int max)
{
    int n = 0;
    for (const char *p = row; *p && n < max;) {
        p += strspn(p, " >");
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        snprintf(w[n++], 64, "%.*s", (int)len, p);
        p += len;
    }
    return n;
}

/* Issue 37 point 2: two rows, each with its GPU's memory and SM%; the
 * process's own columns on the first. */
static void check_two_rows(const char *screen, int min_first_words)
{
    char rows[4][512], a[24][64], b[24][64];
    cr_assert_eq(rows_of(screen, (int)g_child, rows, 4), 2, "two rows:\n%s", screen);
    int na = words(rows[0], a, 24), nb = words(rows[1], b, 24);
    cr_assert_geq(na, min_first_words, "%s", rows[0]);
    cr_assert_str_eq(a[2], "two_gpu_proc", "%s", rows[0]);
    cr_assert_str_eq(a[3], "0");
    cr_assert_str_eq(a[4], "20.0%");
    cr_assert_str_eq(a[5], "512M");
    cr_assert_str_eq(a[6], "0.0%", "its CPU%% on the first row: %s", rows[0]);
    cr_assert_eq(nb, 5, "PID NAME GPU SM%% MEM only: '%s'", rows[1]);
    cr_assert_str_eq(b[1], "two_gpu_proc");
    cr_assert_str_eq(b[2], "1");
    cr_assert_str_eq(b[3], "37.0%");
    cr_assert_str_eq(b[4], "1.00G");
}

Test(top_views, a_process_on_two_gpus_is_two_rows)
{
    tu_proc p;
    char *argv[] = {(char *)(uintptr_t)VYRE_TOP_BIN,   (char *)(uintptr_t) "--batch",
                    (char *)(uintptr_t) "-n",          (char *)(uintptr_t) "1",
                    (char *)(uintptr_t) "-d",          (char *)(uintptr_t) "0.3",
                    (char *)(uintptr_t) "--width=160", NULL};
    tu_run(&p, argv, NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    check_two_rows(p.out, 8);
    tu_proc_free(&p);

    start_top(200, 50);
    /* The first frame has no CPU% yet (no previous sample): wait for one
     * that has. */
    char *s = NULL;
    for (int waited = 0; waited <= WAIT_MS; waited += 100) {
        free(s);
        s = WAIT_FOR("the two rows", "two_gpu_proc", "37.0%", "20.0%");
        char rows[4][512], a[24][64];
        if (rows_of(s, (int)g_child, rows, 4) == 2 && words(rows[0], a, 24) > 6 &&
            strcmp(a[6], "-") != 0)
            break;
        sleep_ms(100);
    }
    check_two_rows(s, 8);
    free(s);
    /* Enter: the detail view of the selected process (the only one). */
    keys("Enter");
    free(WAIT_FOR("the detail view", "two_gpu_proc", "GPU 0: memory 512M, SM 20.0%",
                  "GPU 1: memory 1.00G, SM 37.0%", "no vyre telemetry",
                  "  CUDA_VISIBLE_DEVICES 1,0", "  started  20", " ago)"));
    /* Each GPU's history under it: memory and SM% sparklines. */
    s = WAIT_FOR("the histories", "    memory ", "  SM ");
    const char *g0 = strstr(s, "GPU 0: memory 512M"), *g1 = strstr(s, "GPU 1: memory 1.00G");
    cr_assert(g0 && g1, "%s", s);
    const char *h0 = strstr(g0, "\n    memory "), *h1 = strstr(g1, "\n    memory ");
    cr_assert(h0 && h0 < g1 && h1, "a history row under each GPU:\n%s", s);
    free(s);
    keys("x");
    free(WAIT_FOR("the panels again", "Processes (1)"));
    /* t: the tree, this test's process (the child's parent, not on a GPU)
     * above it; t again: the flat list. */
    keys("t");
    s = WAIT_FOR("the tree", "`-two_gpu_proc");
    char rows[4][512];
    cr_assert_eq(rows_of(s, (int)getpid(), rows, 4), 1, "the parent's row:\n%s", s);
    cr_assert_lt(strstr(s, rows[0]), strstr(s, "`-two_gpu_proc"), "parent first:\n%s", s);
    free(s);
    keys("t");
    free(WAIT_FOR("the flat list", "Processes (1)"));
    /* k offers the signals. */
    char prompt[96];
    snprintf(prompt, sizeof prompt, "Send which signal to %d (two_gpu_proc)? t TERM  i INT  K KILL",
             (int)g_child);
    keys("k");
    free(WAIT_FOR("the signal question", prompt));
    keys("n");
    free(WAIT_FOR("nothing sent", "signal not sent"));
    quit_top();
}

#endif /* FAKENVML_LIB */
