/*
 * test_top_kill.c - `k` in a real terminal run by a user who is not root
 * (issue 37, Shown by: "`k` offers the signals and refuses a process of
 * another user"). The test makes a throwaway user (useradd, as
 * test_cache_group.c does), runs vyre-top as that user in tmux (setpriv),
 * and lists two processes through the test build's NVML fake: victim_proc,
 * the test's own (root's), and own_proc, the throwaway user's. For each
 * signal (TERM, INT, KILL) `k` asks which, and refuses root's process,
 * which must still be alive after; own_proc, the control, is signalled.
 *
 * Needs root (CI runs as root), tmux, useradd/userdel and setpriv; skipped
 * with the reason otherwise. The user is removed in .fini and, should the
 * worker exit first, at exit.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
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

static char g_tmp[512], g_sock[128], g_tmux[4096];
static char g_user[32];
static uid_t g_uid;
static gid_t g_gid;
static int g_made_user, g_tmux_started;
static pid_t g_owner_pid, g_victim, g_own;
static char g_procs[160];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the throwaway user ------------------------------------------------ */

static char g_useradd[64], g_userdel[64], g_setpriv[64];

/* The path of a system tool into out (64 bytes); 1 when found. */
static int sbin(const char *name, char *out)
{
    const char *dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(out, 64, "%s/%s", dirs[i], name);
        if (access(out, X_OK) == 0)
            return 1;
    }
    return 0;
}

/* Runs a shadow tool quietly; its exit status. Retried a while: another
 * test worker may hold the lock on /etc/passwd. */
static int run_quiet(char *const argv[])
{
    int rc = -1;
    for (int i = 0; i < 50 && rc != 0; i++) {
        if (i)
            sleep_ms(100);
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_RDWR);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            execv(argv[0], argv);
            _exit(127);
        }
        int st = 0;
        rc = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    return rc;
}

static void reap(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

static void remove_user(void)
{
    if (getpid() != g_owner_pid)
        return;   /* a forked child never removes its parent's user */
    reap(&g_own); /* userdel refuses a user with a running process */
    if (g_made_user)
        run_quiet((char *const[]){g_userdel, g_user, NULL});
    g_made_user = 0;
}

/* ---- tmux --------------------------------------------------------------- */

static char *tmux_v(int *code, const char *const *args)
{
    return tu_tmux_run(g_tmux, g_sock, g_tmp, code, args);
}

#define TMUX(...)        tmux_v(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define TMUX_RC(rc, ...) tmux_v(rc, (const char *const[]){__VA_ARGS__, NULL})

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
        int code = 0;
        last = TMUX_RC(&code, "capture-pane", "-p", "-t", "top");
        int ok = code == 0 && last;
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

/* ---- the processes -------------------------------------------------------- */

/* sleep(1) named name (a link to it: the kernel names a process after the
 * file it ran), as uid/gid when as_user. */
static pid_t start_sleeper(const char *name, int as_user)
{
    char link[700];
    snprintf(link, sizeof link, "%s/bin/%s", g_tmp, name);
    cr_assert_eq(symlink("/bin/sleep", link), 0, "symlink: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (as_user && (setgroups(0, NULL) != 0 || setgid(g_gid) != 0 || setuid(g_uid) != 0))
            _exit(126);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* after setuid, which clears it */
        execl(link, name, "infinity", (char *)NULL);
        _exit(127);
    }
    char path[64], want[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    snprintf(want, sizeof want, "%s\n", name);
    for (int waited = 0;; waited += 10) {
        char *comm = tu_read_file(path, NULL);
        int ok = comm && strcmp(comm, want) == 0;
        free(comm);
        if (ok)
            break;
        cr_assert_lt(waited, WAIT_MS, "%s did not start", name);
        sleep_ms(10);
    }
    return pid;
}

/* 1 while pid runs (not exited, not a zombie). */
static int alive(pid_t pid)
{
    if (waitpid(pid, NULL, WNOHANG) != 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *st = tu_read_file(path, NULL);
    const char *end = st ? strrchr(st, ')') : NULL;
    int ok = end && end[1] == ' ' && end[2] != 'Z';
    free(st);
    return ok;
}

static void copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *data = tu_read_file(from, &len);
    cr_assert_not_null(data, "read %s", from);
    tu_write_file(to, data, len);
    free(data);
    cr_assert_eq(chmod(to, 0755), 0);
}

static void setup(void)
{
    g_owner_pid = getpid();
    if (geteuid() != 0)
        cr_skip_test("needs root to make a throwaway user for vyre-top to run as (CI runs as "
                     "root)");
    if (!tu_tmux_find(g_tmux, sizeof g_tmux))
        cr_skip_test("tmux is not installed (PATH has no tmux): the terminal tests need it");
    if (!sbin("useradd", g_useradd) || !sbin("userdel", g_userdel) || !sbin("setpriv", g_setpriv))
        cr_skip_test("needs useradd, userdel and setpriv (shadow, util-linux)");
    atexit(remove_user);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    cr_assert_eq(chmod(g_tmp, 0711), 0);
    snprintf(g_user, sizeof g_user, "vyretk%d", (int)getpid() % 1000000);
    char m[] = "-M", nn[] = "-N", sh[] = "-s", f[] = "/bin/false";
    cr_assert_eq(run_quiet((char *const[]){g_useradd, m, nn, sh, f, g_user, NULL}), 0,
                 "useradd %s failed", g_user);
    g_made_user = 1;
    struct passwd *pw = getpwnam(g_user);
    cr_assert_not_null(pw, "getpwnam(%s)", g_user);
    g_uid = pw->pw_uid;
    g_gid = pw->pw_gid;
    /* vyre-top and the fake NVML where the user may run them; its home,
     * caches and telemetry directory its own. */
    char p[900];
    snprintf(p, sizeof p, "%s/bin", g_tmp);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/bin/vyre-top", g_tmp);
    copy_file(VYRE_TOP_BIN, p);
    snprintf(p, sizeof p, "%s/bin/libfakenvml.so", g_tmp);
    copy_file(FAKENVML_LIB, p);
    setenv("VYRE_NVML_LIBRARY", p, 1);
    snprintf(p, sizeof p, "%s/home", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    cr_assert_eq(chown(p, g_uid, g_gid), 0);
    setenv("HOME", p, 1);
    static const char *const sub[][2] = {{"XDG_CACHE_HOME", "cache"},
                                         {"XDG_DATA_HOME", "data"},
                                         {"XDG_CONFIG_HOME", "config"},
                                         {"VYRE_TELEMETRY_DIR", "tel"}};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        snprintf(p, sizeof p, "%s/home/%s", g_tmp, sub[i][1]);
        setenv(sub[i][0], p, 1);
    }
    unsetenv("VYRE_PTX_CACHE_DIR");
    unsetenv("VYRE_TELEMETRY");
    unsetenv("TMUX");
    unsetenv("COLUMNS");
    snprintf(p, sizeof p, "%s/tmux", g_tmp);
    mkdir(p, 0700);
    setenv("TMUX_TMPDIR", p, 1);
    snprintf(g_sock, sizeof g_sock, "vyre-top-kill-%d", (int)getpid());
    setenv("FAKENVML_GPUS", "1", 1);
    g_victim = start_sleeper("victim_proc", 0);
    g_own = start_sleeper("own_proc", 1);
    snprintf(g_procs, sizeof g_procs, "FAKENVML_PROCS=0:%d:536870912,0:%d:268435456", (int)g_victim,
             (int)g_own);
    putenv(g_procs);
}

static void teardown(void)
{
    if (g_tmux_started)
        free(TMUX("kill-server"));
    g_tmux_started = 0;
    reap(&g_victim);
    remove_user();
    tu_rm_rf(g_tmp);
}

TestSuite(top_kill, .init = setup, .fini = teardown, .timeout = 300);

/* vyre-top as the throwaway user, in a tmux pane of cols x rows. */
static void start_top_as_user(int cols, int rows)
{
    char cmd[4096], x[16], y[16];
    snprintf(cmd, sizeof cmd,
             "'%s' --reuid=%u --regid=%u --clear-groups -- '%s/bin/vyre-top' -d 0.3 -n 2000; "
             "echo \"exit=$?\" > '%s/exit'",
             g_setpriv, (unsigned)g_uid, (unsigned)g_gid, g_tmp, g_tmp);
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

/* Shows only the processes matching text (the filter prompt). */
static void filter(const char *text)
{
    keys("/");
    free(TMUX("send-keys", "-t", "top", "-l", text));
    keys("Enter");
}

Test(top_kill, k_offers_the_signals_and_refuses_another_users_process)
{
    start_top_as_user(200, 30);
    char victim[16], own[16];
    snprintf(victim, sizeof victim, "%d", (int)g_victim);
    snprintf(own, sizeof own, "%d", (int)g_own);
    free(WAIT_FOR("both processes", "Processes (2)", "victim_proc", "own_proc", g_user));
    filter("victim_proc");
    free(WAIT_FOR("the victim alone", "Processes (1 of 2, filter 'victim_proc')"));
    /* Each signal: offered, chosen, refused; the process lives on. */
    static const char *const choice[][2] = {{"t", "SIGTERM"}, {"i", "SIGINT"}, {"K", "SIGKILL"}};
    char prompt[128], refusal[200];
    snprintf(prompt, sizeof prompt, "Send which signal to %s (victim_proc)? t TERM  i INT  K KILL",
             victim);
    snprintf(refusal, sizeof refusal,
             "not sent: process %s belongs to root; vyre-top signals only your own processes "
             "unless run as root",
             victim);
    for (size_t i = 0; i < sizeof choice / sizeof choice[0]; i++) {
        keys("k");
        free(WAIT_FOR("the signal question", prompt));
        keys(choice[i][0]);
        free(WAIT_FOR(choice[i][1], refusal));
        sleep_ms(300);
        cr_assert(alive(g_victim), "%s refused, yet victim_proc is gone", choice[i][1]);
        keys("x"); /* clears the message */
    }
    /* The control: the user's own process is signalled (so the refusal
     * above is vyre-top's rule, not a terminal that failed to deliver). */
    keys("Escape");
    filter("own_proc");
    free(WAIT_FOR("the user's own process", "Processes (1 of 2, filter 'own_proc')"));
    keys("k");
    snprintf(prompt, sizeof prompt, "Send which signal to %s (own_proc)? t TERM  i INT  K KILL",
             own);
    free(WAIT_FOR("the signal question", prompt));
    keys("t");
    char sent[96];
    snprintf(sent, sizeof sent, "sent SIGTERM to %s (own_proc)", own);
    free(WAIT_FOR("the signal sent", sent));
    int st = 0;
    for (int waited = 0; waitpid(g_own, &st, WNOHANG) == 0; waited += 20) {
        cr_assert_lt(waited, WAIT_MS, "own_proc did not end");
        sleep_ms(20);
    }
    g_own = 0;
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "own_proc ended by SIGTERM");
    cr_assert(alive(g_victim));
    /* Quit; the pane's shell says how vyre-top ended. */
    keys("q");
    char path[700];
    snprintf(path, sizeof path, "%s/exit", g_tmp);
    for (int waited = 0;; waited += 50) {
        char *s = tu_read_file(path, NULL);
        int done = s && strchr(s, '\n');
        if (done)
            cr_assert_str_eq(s, "exit=0\n");
        free(s);
        if (done)
            break;
        cr_assert_lt(waited, WAIT_MS, "vyre-top did not quit");
        sleep_ms(50);
    }
}

#endif /* FAKENVML_LIB */
