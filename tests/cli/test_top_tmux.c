/*
 * test_top_tmux.c - the real vyre-top binary in a real terminal (tmux), and
 * its --batch and --json output.
 *
 * Two helper processes, forked here, publish telemetry through libcore's
 * writer API (vyre__telemetry_open, vyre_counter_add, vyre_nvtx_push/pop,
 * vyre_telemetry_add_kernel, vyre_telemetry_publish) into a fresh
 * VYRE_TELEMETRY_DIR: "alpha" launches slowly and records
 * vyre.cuda.pipeline.dispatch ranges and alpha_kernel; "beta" launches fast
 * and records vyre.cache.lookup ranges and beta_kernel. vyre-top runs in a
 * tmux session on a private socket (-L) at a given size; the test sends keys
 * with send-keys and polls capture-pane until the screen shows what it must
 * (no fixed sleeps: every wait is a poll with a deadline).
 *
 * Skipped with a reason when tmux is not installed. Needs no GPU: without
 * NVML the GPU panel says so and the rest must work.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tel_v1.h"
#include "servers.h"
#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "tutmux.h"
#include "vyre/cache.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"
#include "vyre/version.h"

#ifndef VYRE_TOP_BIN
#error "tests/CMakeLists.txt must define VYRE_TOP_BIN"
#endif

#define WAIT_MS 30000 /* generous: sanitized builds on a loaded CI machine */

static char g_tmp[512];
static char g_tel[600];
static char g_cache[600];
static char g_sock[128];
static char g_tmux[4096];
static pid_t g_pub[2];
static int g_tmux_started;

/* ---- publishers ---------------------------------------------------------- */

typedef struct pub_spec {
    const char *kernel;
    vyre_range_id range;
    uint64_t launches; /* per iteration (every 10 ms) */
    uint64_t graphs;   /* graph launches per iteration */
} pub_spec;

static const pub_spec g_specs[2] = {
    {"alpha_kernel", VYRE_RANGE_PIPELINE_DISPATCH, 1, 0},
    {"beta_kernel", VYRE_RANGE_CACHE_LOOKUP, 50, 1},
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

/* The body of a helper process: publishes until killed (or orphaned). */
static void publish_forever(const pub_spec *sp)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    vyre_telemetry *t = NULL;
    if (vyre__telemetry_open(&t, NULL) != VYRE_OK || !t)
        _exit(10);
    for (uint64_t i = 0;; i++) {
        vyre_counter_add(VYRE_CTR_LAUNCHES, sp->launches);
        vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, sp->graphs);
        vyre_counter_add(VYRE_CTR_D2D_BYTES, 1u << 18);
        vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, 1u << 20);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, 1u << 19);
        vyre_counter_add(VYRE_CTR_CACHE_HITS, 3);
        vyre_counter_add(VYRE_CTR_CACHE_MISSES, 1);
        vyre_counter_add(VYRE_CTR_COMPILE_NS_SAVED, 1000000);
        vyre_nvtx_push(sp->range);
        spin_us(50);
        vyre_nvtx_pop();
        vyre_telemetry_kernel_record k = {.name = sp->kernel,
                                          .grid = {64, 2, 1},
                                          .block = {256, 1, 1},
                                          .stream_id = 1,
                                          .duration_ns = 50000,
                                          .end_ns = i * 1000000u,
                                          .device = 0};
        vyre_telemetry_add_kernel(t, &k);
        vyre_telemetry_publish(t);
        sleep_ms(10);
    }
}

static void start_publishers(void)
{
    fflush(NULL);
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
        if (pid == 0)
            publish_forever(&g_specs[i]);
        g_pub[i] = pid;
    }
    /* Both pages exist and have published before vyre-top starts. */
    for (int waited = 0;; waited += 20) {
        int ok = 0;
        for (int i = 0; i < 2; i++) {
            char path[700];
            snprintf(path, sizeof path, "%s/%d.vtel", g_tel, (int)g_pub[i]);
            static vyre_telemetry_snapshot s;
            if (vyre__telemetry_read(path, &s, NULL) == VYRE_OK && s.publish_count > 0)
                ok++;
        }
        if (ok == 2)
            break;
        cr_assert_lt(waited, WAIT_MS, "the helper processes did not publish");
        sleep_ms(20);
    }
}

static void stop_publishers(void)
{
    for (int i = 0; i < 2; i++) {
        if (g_pub[i] > 0) {
            kill(g_pub[i], SIGKILL);
            waitpid(g_pub[i], NULL, 0);
            g_pub[i] = 0;
        }
    }
}

/* ---- tmux ------------------------------------------------------------------ */

static int find_tmux(void)
{
    return tu_tmux_find(g_tmux, sizeof g_tmux);
}

/* Runs tmux on our socket with the NULL-terminated arguments; returns its
 * output (caller frees) and sets *code (may be NULL) to its exit code.
 * Output goes through a file, not a pipe: the tmux server that the first
 * call starts inherits the client's descriptors and would hold a pipe open
 * for its whole life. */
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

static void keys_literal(const char *k)
{
    free(TMUX("send-keys", "-t", "top", "-l", k));
}

typedef int (*screen_pred)(const char *screen, const void *ctx);

/* Polls the screen until pred holds; fails with the last screen. Returns
 * the screen (caller frees). */
static char *wait_screen(screen_pred pred, const void *ctx, const char *what)
{
    char *last = NULL;
    for (int waited = 0; waited <= WAIT_MS; waited += 100) {
        free(last);
        last = capture();
        if (last && pred(last, ctx))
            return last;
        sleep_ms(100);
    }
    cr_assert_fail("timed out waiting for %s; screen:\n%s", what, last ? last : "(no pane)");
    return NULL;
}

static int has_all(const char *screen, const void *ctx)
{
    const char *const *words = ctx;
    for (size_t i = 0; words[i]; i++)
        if (!strstr(screen, words[i]))
            return 0;
    return 1;
}

static int lacks(const char *screen, const void *ctx)
{
    return strstr(screen, (const char *)ctx) == NULL;
}

static void pid_str(char *buf, size_t n, int i)
{
    snprintf(buf, n, "%d", (int)g_pub[i]);
}

/* The row of process pid in the table: "<pid> " not preceded by a digit
 * (pids are right-aligned), then the user, then `name` on the same line.
 * Points at the pid. */
static const char *pid_row(const char *screen, int pid, const char *name)
{
    char pat[32];
    snprintf(pat, sizeof pat, "%d ", pid);
    for (const char *p = screen; (p = strstr(p, pat)); p++) {
        if (p != screen && p[-1] >= '0' && p[-1] <= '9')
            continue;
        size_t len = strcspn(p, "\n");
        const char *n = memmem(p, len, name, strlen(name));
        if (n && n > p + strlen(pat))
            return p;
    }
    return NULL;
}

static const char *proc_row(const char *screen, int i)
{
    return pid_row(screen, (int)g_pub[i], " test_cli");
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/ptx-cache", g_tmp);
    snprintf(g_sock, sizeof g_sock, "vyre-top-test-%d", (int)getpid());
    char buf[700];
    setenv("HOME", g_tmp, 1);
    snprintf(buf, sizeof buf, "%s/xdg-cache", g_tmp);
    setenv("XDG_CACHE_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/xdg-data", g_tmp);
    setenv("XDG_DATA_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/xdg-config", g_tmp);
    setenv("XDG_CONFIG_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/tmux", g_tmp);
    mkdir(buf, 0700);
    setenv("TMUX_TMPDIR", buf, 1);
    setenv("VYRE_TELEMETRY_DIR", g_tel, 1);
    setenv("VYRE_PTX_CACHE_DIR", g_cache, 1);
    unsetenv("VYRE_TELEMETRY");
    unsetenv("TMUX");
    unsetenv("COLUMNS");
    g_tmux_started = 0;
}

static void teardown(void)
{
    if (g_tmux_started)
        free(TMUX("kill-server"));
    stop_publishers();
    tu_rm_rf(g_tmp);
}

TestSuite(top_tmux, .init = setup, .fini = teardown, .timeout = 300);

/* Starts vyre-top in a detached session of cols x rows; its exit status
 * goes to <tmp>/exit when it ends. -n 2000 (10 minutes) bounds its life
 * should this test be killed before its teardown kills the tmux server. */
static void start_top(int cols, int rows)
{
    if (!find_tmux())
        cr_skip_test("tmux is not installed (PATH has no tmux): the terminal tests need it");
    char cmd[4096], x[16], y[16];
    snprintf(cmd, sizeof cmd, "'%s' -d 0.3 -n 2000; echo \"exit=$?\" > '%s/exit'", VYRE_TOP_BIN,
             g_tmp);
    snprintf(x, sizeof x, "%d", cols);
    snprintf(y, sizeof y, "%d", rows);
    /* A tmux server starting on a loaded machine has been seen to exit
     * before the client attached ("server exited unexpectedly", once in
     * many CI runs): the session is asked for again, up to 3 times, each
     * time on a fresh server. */
    int code = 0;
    char last[512] = "";
    for (int attempt = 0; attempt < 3; attempt++) {
        char *out = TMUX_RC(&code, "new-session", "-d", "-s", "top", "-x", x, "-y", y, cmd);
        snprintf(last, sizeof last, "%s", out ? out : "");
        free(out);
        if (code == 0)
            break;
        free(TMUX("kill-server"));
        sleep_ms(200);
    }
    cr_assert_eq(code, 0, "tmux new-session failed 3 times (exit %d): %s", code, last);
    g_tmux_started = 1;
}

static char *read_exit(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/exit", g_tmp);
    for (int waited = 0; waited <= WAIT_MS; waited += 50) {
        char *s = tu_read_file(path, NULL);
        if (s && strchr(s, '\n'))
            return s;
        free(s);
        sleep_ms(50);
    }
    return NULL;
}

/* The pid whose text is not inside the other's, so a filter on it hides
 * the other process. */
static int unique_pid_index(void)
{
    char a[16], b[16];
    pid_str(a, sizeof a, 0);
    pid_str(b, sizeof b, 1);
    return strstr(b, a) ? 1 : 0;
}

/* The widest line in cells: UTF-8 continuation bytes (of the ellipsis
 * that marks cut text, issue 37) take none. */
static int max_line_len(const char *screen)
{
    int best = 0, cur = 0;
    for (const char *p = screen; *p; p++) {
        if (*p == '\n') {
            best = cur > best ? cur : best;
            cur = 0;
        } else if (((unsigned char)*p & 0xc0) != 0x80) {
            cur++;
        }
    }
    return cur > best ? cur : best;
}

static int wider_than_80(const char *screen, const void *ctx)
{
    return has_all(screen, ctx) && max_line_len(screen) > 80;
}

static int at_most_20_cols(const char *screen, const void *ctx)
{
    (void)ctx;
    return max_line_len(screen) <= 20 && strstr(screen, "Processes") != NULL;
}

static void check_shows_both(void)
{
    char pa[16], pb[16];
    pid_str(pa, sizeof pa, 0);
    pid_str(pb, sizeof pb, 1);
    const char *want[] = {"vyre-top",
                          "no NVIDIA GPU monitor",
                          "Processes (2)",
                          pa,
                          pb,
                          "test_cli",
                          "vyre.cuda.pipeline.dispatch",
                          "vyre.cache.lookup",
                          "alpha_kernel",
                          "beta_kernel",
                          "Pipeline cache",
                          NULL};
    const char *gpu_ok[] = {"GPUs (", NULL};
    char *s = wait_screen(has_all, want + 2, "both processes, their ranges and kernels");
    cr_assert(proc_row(s, 0) && proc_row(s, 1), "process rows:\n%s", s);
    /* Without NVML (CI) the GPU panel says so; with it, it lists GPUs. */
    cr_assert(strstr(s, want[1]) || has_all(s, gpu_ok), "GPU panel:\n%s", s);
    free(s);
}

Test(top_tmux, screen_80x24_shows_publishers_and_reacts_to_keys)
{
    start_publishers();
    start_top(80, 24);
    check_shows_both();

    /* Default sort: launches/s, beta (50 a tick) above alpha (1 a tick). */
    char *s = wait_screen(has_all, (const char *[]){"sort: launches/s", NULL}, "default sort");
    const char *ra = proc_row(s, 0), *rb = proc_row(s, 1);
    cr_assert(ra && rb && rb < ra, "beta must be listed first by launches/s:\n%s", s);
    free(s);
    /* s cycles through the orders whose column 80 columns show (issue 37:
     * DISP/s, H2D, D2H and HIT% are hidden there): gpu mem, then pid. */
    keys("s");
    free(wait_screen(has_all, (const char *[]){"sort: gpu mem", NULL}, "sort gpu mem"));
    keys("s");
    s = wait_screen(has_all, (const char *[]){"sort: pid", NULL}, "sort by pid");
    ra = proc_row(s, 0);
    rb = proc_row(s, 1);
    cr_assert(ra && rb);
    cr_assert((g_pub[0] < g_pub[1]) == (ra < rb), "pid order:\n%s", s);
    free(s);
    /* r reverses it. */
    keys("r");
    s = wait_screen(has_all, (const char *[]){"sort: pid reversed", NULL}, "reversed pid order");
    ra = proc_row(s, 0);
    rb = proc_row(s, 1);
    cr_assert(ra && rb);
    cr_assert((g_pub[0] < g_pub[1]) == (ra > rb), "reversed pid order:\n%s", s);
    free(s);
    keys("r");
    free(wait_screen(lacks, "reversed", "pid order again"));

    /* Filter: '/', the pid, Enter shows one process and only its ranges and
     * kernels. */
    int keep = unique_pid_index(), other = 1 - keep;
    char pk[16];
    pid_str(pk, sizeof pk, keep);
    keys("/");
    free(wait_screen(has_all, (const char *[]){"Filter:", NULL}, "the filter prompt"));
    keys_literal(pk);
    keys("Enter");
    s = wait_screen(has_all, (const char *[]){"Processes (1 of 2", NULL}, "the filtered list");
    cr_assert(proc_row(s, keep) && !proc_row(s, other), "filter '%s':\n%s", pk, s);
    free(s);
    const char *other_kernel = g_specs[other].kernel;
    s = wait_screen(lacks, other_kernel, "the other process's kernel to disappear");
    cr_assert(strstr(s, g_specs[keep].kernel), "kept kernel:\n%s", s);
    free(s);
    /* Esc clears the filter. */
    keys("Escape");
    free(wait_screen(has_all, (const char *[]){"Processes (2)", NULL}, "the filter cleared"));

    /* Help, then any key closes it. */
    keys("h");
    free(wait_screen(has_all, (const char *[]){"vyre-top keys", "filter processes", NULL},
                     "the help overlay"));
    /* At 80x24 it scrolls: every line is reachable (issue 37). */
    free(wait_screen(has_all, (const char *[]){"-- lines 1-", NULL}, "the scroll line"));
    keys("NPage");
    keys("NPage");
    free(wait_screen(has_all, (const char *[]){"a scan stopped at its bound", NULL},
                     "the help's last line"));
    keys("x");
    free(wait_screen(lacks, "vyre-top keys", "the help to close"));

    /* Resize to 200x60: wide layout with more columns; then 20x5. */
    free(TMUX("resize-window", "-t", "top", "-x", "200", "-y", "60"));
    s = wait_screen(wider_than_80, (const char *[]){"COMMAND", "GPU MEM", NULL},
                    "the 200-column layout");
    free(s);
    free(TMUX("resize-window", "-t", "top", "-x", "20", "-y", "5"));
    free(wait_screen(at_most_20_cols, NULL, "the 20x5 layout"));
    free(TMUX("resize-window", "-t", "top", "-x", "80", "-y", "24"));
    check_shows_both();

    /* p pauses, q quits with status 0 and the session ends. */
    keys("p");
    free(wait_screen(has_all, (const char *[]){"[PAUSED]", NULL}, "paused"));
    keys("q");
    char *ex = read_exit();
    cr_assert_not_null(ex, "vyre-top did not exit after q");
    cr_assert_str_eq(ex, "exit=0\n");
    free(ex);
    int code = 0;
    for (int waited = 0; waited < WAIT_MS; waited += 50) {
        free(TMUX_RC(&code, "has-session", "-t", "top"));
        if (code != 0)
            break;
        sleep_ms(50);
    }
    cr_assert_neq(code, 0, "the tmux session must end when vyre-top quits");
}

/* Issue 37: panels stack where the height holds them all (nothing cut),
 * and sit side by side from 160 columns where it does not: 200x20. */
Test(top_tmux, screen_200x60_shows_publishers_side_by_side)
{
    start_publishers();
    start_top(200, 20);
    check_shows_both();
    char *s = wait_screen(has_all, (const char *[]){"COMMAND", "GPU MEM", "NVTX ranges", NULL},
                          "the wide layout");
    /* From 160 columns ranges and kernels sit on the same rows. */
    int side_by_side = 0;
    for (const char *line = s; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(n < 511 ? n : 511), line);
        if (strstr(buf, "NVTX ranges") && strstr(buf, "Kernels"))
            side_by_side = 1;
        line = nl ? nl + 1 : NULL;
    }
    cr_assert(side_by_side, "ranges and kernels side by side:\n%s", s);
    free(s);
    /* Tab moves the focus: the focused title is marked with '>'. */
    keys("Tab");
    free(wait_screen(has_all, (const char *[]){"> NVTX ranges", NULL}, "focus on the ranges"));
    keys("q");
    char *ex = read_exit();
    cr_assert_not_null(ex);
    cr_assert_str_eq(ex, "exit=0\n");
    free(ex);
}

/* ---- --batch and --json ----------------------------------------------------- */

static void run_top(tu_proc *p, const char *a0, const char *a1, const char *a2, const char *a3,
                    const char *a4, const char *a5)
{
    char *argv[10];
    int n = 0;
    argv[n++] = strdup(VYRE_TOP_BIN);
    const char *rest[] = {a0, a1, a2, a3, a4, a5};
    for (int i = 0; i < 6 && rest[i]; i++)
        argv[n++] = strdup(rest[i]);
    argv[n] = NULL;
    tu_run(p, argv, NULL);
    for (int i = 0; i < n; i++)
        free(argv[i]);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

Test(top_tmux, batch_prints_n_frames_with_both_processes)
{
    start_publishers();
    tu_proc p;
    run_top(&p, "--batch", "-n", "2", "-d", "0.3", "--width=120");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    char head[64];
    snprintf(head, sizeof head, "vyre-top %s - ", vyre_version());
    cr_assert_eq(count(p.out, head), 2, "two frames:\n%s", p.out);
    cr_assert(strncmp(p.out, head, strlen(head)) == 0, "a frame starts with its header");
    char *second = strstr(p.out + 1, head);
    cr_assert_not_null(second);
    char *first = strndup(p.out, (size_t)(second - p.out));
    cr_assert_not_null(first);
    for (int frame = 0; frame < 2; frame++) {
        const char *f = frame ? second : first;
        for (int i = 0; i < 2; i++) {
            cr_assert(proc_row(f, i), "frame %d lacks pid %d:\n%s", frame, (int)g_pub[i], f);
            cr_assert(strstr(f, g_specs[i].kernel), "frame %d lacks %s", frame, g_specs[i].kernel);
        }
        cr_assert(strstr(f, "vyre.cuda.pipeline.dispatch") && strstr(f, "vyre.cache.lookup"));
        cr_assert(strstr(f, "  PID USER     NAME"), "column header:\n%s", f);
    }
    free(first);
    /* Frames are cut to the width. */
    for (const char *line = p.out; *line;) {
        size_t n = strcspn(line, "\n");
        cr_assert_leq(n, 120, "line wider than --width: %.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
    /* 3 hits per miss in both: 75.0% in every row. */
    cr_assert_geq(count(second, "75.0%"), 2, "hit rate:\n%s", second);
    tu_proc_free(&p);
}

/* A publisher built against an older libvyrecore writes page layout 1:
 * vyre-top reads it, marks its row "[v1]" (its quantiles are coarse), and
 * --json says layout_version 1 for it and the current one for the other. */
Test(top_tmux, a_version_1_page_is_read_and_marked)
{
    start_publishers();
    /* Stop alpha between two publishes (its seqlock even), then put a
     * layout 1 page made from its own page in its place. */
    char path[700], tmp[720];
    snprintf(path, sizeof path, "%s/%d.vtel", g_tel, (int)g_pub[0]);
    snprintf(tmp, sizeof tmp, "%s.v1", path);
    unsigned char *cur = malloc(sizeof(vyre__tel_page));
    cr_assert_not_null(cur);
    for (int waited = 0;; waited += 5) {
        cr_assert_eq(kill(g_pub[0], SIGSTOP), 0);
        int st;
        cr_assert_eq(waitpid(g_pub[0], &st, WUNTRACED), g_pub[0]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        ssize_t n = pread(fd, cur, sizeof(vyre__tel_page), 0);
        close(fd);
        cr_assert_eq(n, (ssize_t)sizeof(vyre__tel_page));
        const vyre__tel_page *pg = (const vyre__tel_page *)(const void *)cur;
        if ((atomic_load(&pg->h.seq) & 1) == 0)
            break;
        cr_assert_lt(waited, WAIT_MS, "alpha never stopped between publishes");
        kill(g_pub[0], SIGCONT);
        sleep_ms(5);
    }
    vyre__tel_v1_page *v1 = tu_tel_v1_page(cur);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", tmp, strerror(errno));
    cr_assert_eq(write(fd, v1, sizeof *v1), (ssize_t)sizeof *v1);
    close(fd);
    cr_assert_eq(rename(tmp, path), 0, "rename: %s", strerror(errno));
    free(v1);
    free(cur);

    tu_proc p;
    run_top(&p, "--batch", "-n", "1", "-d", "0.1", "--width=200");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    const char *old = proc_row(p.out, 0), *now = proc_row(p.out, 1);
    cr_assert(old && now, "both rows:\n%s", p.out);
    size_t old_len = strcspn(old, "\n"), now_len = strcspn(now, "\n");
    cr_assert(memmem(old, old_len, "[v1]", 4), "the layout 1 row is marked:\n%s", p.out);
    cr_assert_null(memmem(now, now_len, "[v", 2), "the current row is not:\n%s", p.out);
    tu_proc_free(&p);

    run_top(&p, "--json", "-n", "1", "-d", "0.1", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    json_error_t je;
    json_t *root = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(root, "json: %s\n%s", je.text, p.out);
    json_t *procs = json_object_get(root, "processes");
    cr_assert(json_is_array(procs));
    int seen = 0;
    size_t i;
    json_t *o;
    json_array_foreach(procs, i, o)
    {
        json_int_t pid = json_integer_value(json_object_get(o, "pid"));
        json_int_t lv = json_integer_value(json_object_get(o, "layout_version"));
        if (pid == g_pub[0]) {
            cr_assert_eq(lv, 1);
            seen |= 1;
        } else if (pid == g_pub[1]) {
            cr_assert_eq(lv, VYRE_TELEMETRY_LAYOUT_VERSION);
            seen |= 2;
        }
    }
    cr_assert_eq(seen, 3, "both processes in --json:\n%s", p.out);
    json_decref(root);
    tu_proc_free(&p);
}

static json_t *field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert_not_null(v, "missing key '%s'", key);
    return v;
}

static double num(json_t *o, const char *key)
{
    json_t *v = field(o, key);
    cr_assert(json_is_number(v), "'%s' must be a plain number", key);
    return json_number_value(v);
}

static json_t *find_named(json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    return NULL;
}

static void check_json_line(const char *line, int cache_exists)
{
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    cr_assert_not_null(o, "bad JSON (%s): %s", je.text, line);
    cr_assert_eq(num(o, "schema_version"), 5);
    cr_assert(json_is_integer(field(o, "interval_ns")), "durations are whole ns");
    cr_assert_gt(num(o, "interval_ns"), 0.2e9);
    cr_assert(json_is_integer(field(o, "time_unix_ns")));
    cr_assert_gt(num(o, "time_unix_ns"), 1.6e18);
    json_t *mon = field(o, "gpu_monitor");
    cr_assert(json_is_boolean(field(mon, "available")));
    if (!json_is_true(field(mon, "available"))) {
        cr_assert(json_is_string(field(mon, "error")));
        cr_assert_eq(json_array_size(field(o, "gpus")), 0);
    }
    json_t *tel = field(o, "telemetry");
    cr_assert_str_eq(json_string_value(field(tel, "dir")), g_tel);
    cr_assert(json_is_null(field(tel, "error")));

    json_t *procs = field(o, "processes");
    cr_assert_eq(json_array_size(procs), 2, "%s", line);
    for (int i = 0; i < 2; i++) {
        json_t *p = NULL, *v;
        size_t k;
        json_array_foreach(procs, k, v)
        {
            if (json_integer_value(json_object_get(v, "pid")) == g_pub[i])
                p = v;
        }
        cr_assert_not_null(p, "pid %d missing: %s", (int)g_pub[i], line);
        cr_assert_str_eq(json_string_value(field(p, "name")), "test_cli");
        cr_assert(json_is_true(field(p, "published")));
        double l = num(p, "launches_per_s");
        /* ~100 ticks a second: generous bounds for a loaded machine. */
        cr_assert(l > 0 && l < 200.0 * (double)g_specs[i].launches, "launches_per_s %g", l);
        cr_assert_gt(num(p, "dispatches_per_s"), 0);
        cr_assert_gt(num(p, "h2d_bytes_per_s"), 0);
        double h2d = num(p, "h2d_bytes_per_s"), d2h = num(p, "d2h_bytes_per_s");
        cr_assert(d2h > 0 && d2h < h2d, "d2h %g < h2d %g", d2h, h2d);
        /* 1 MiB up and 512 KiB down each tick: bytes, not MB. */
        cr_assert_float_eq(h2d / d2h, 2.0, 0.5, "h2d %g d2h %g", h2d, d2h);
        /* 256 KiB device to device each tick. */
        double d2d = num(p, "d2d_bytes_per_s");
        cr_assert_float_eq(h2d / d2d, 4.0, 1.0, "h2d %g d2d %g", h2d, d2d);
        /* Graph launches have their own rate: beta launches one a tick,
         * alpha none (0, known: not null). */
        double gr = num(p, "graph_launches_per_s");
        if (g_specs[i].graphs)
            cr_assert(gr > 0 && gr < 200.0, "graph_launches_per_s %g", gr);
        else
            cr_assert_eq(gr, 0.0, "graph_launches_per_s %g", gr);
        cr_assert_eq(num(p, "graph_launches") > 0, g_specs[i].graphs > 0);
        cr_assert(json_is_true(field(p, "telemetry")));
        cr_assert_gt(h2d, 1e6, "bytes per second, not MB per second: %g", h2d);
        cr_assert_float_eq(num(p, "cache_hit_ratio"), 0.75, 1e-9);
        /* Whole ns: 1 ms saved per tick. */
        json_t *saved = field(p, "compile_time_saved_ns");
        cr_assert(json_is_integer(saved), "compile_time_saved_ns is whole ns");
        cr_assert_gt(json_integer_value(saved), 0);
        cr_assert_eq(json_integer_value(saved) % 1000000, 0, "%lld",
                     (long long)json_integer_value(saved));
        cr_assert_geq(num(p, "launches"), num(p, "dispatches") * (double)g_specs[i].launches);
        cr_assert(json_is_null(field(p, "gpu_mem_bytes")) ||
                  json_is_integer(field(p, "gpu_mem_bytes")));
        cr_assert_eq(json_integer_value(field(p, "device")), 0, "device of its kernels");

        json_t *r = find_named(field(p, "ranges"), vyre_nvtx_range(g_specs[i].range)->name);
        cr_assert_not_null(r, "range of pid %d: %s", (int)g_pub[i], line);
        cr_assert_eq(json_array_size(field(p, "ranges")), 1, "only its own range");
        double p50 = num(r, "p50_ns"), p99 = num(r, "p99_ns"), mx = num(r, "max_ns");
        cr_assert(p50 >= 50000 / 2 && p50 <= p99 && p99 <= mx, "%g %g %g", p50, p99, mx);
        cr_assert_gt(num(r, "count_per_s"), 0);
        cr_assert_gt(num(r, "count"), 0);

        json_t *ks = field(p, "kernels");
        cr_assert_eq(json_array_size(ks), 1, "%s", line);
        json_t *kr = find_named(ks, g_specs[i].kernel);
        cr_assert_not_null(kr);
        cr_assert_gt(num(kr, "calls_per_s"), 0);
        cr_assert_float_eq(num(kr, "gpu_time_share_ratio"), 1.0, 1e-9);
        cr_assert(json_is_integer(field(kr, "mean_ns")));
        cr_assert_eq(num(kr, "mean_ns"), 50000);
        cr_assert_eq(num(kr, "max_ns"), 50000);
        json_t *grid = field(kr, "grid"), *block = field(kr, "block");
        cr_assert_eq(json_integer_value(json_array_get(grid, 0)), 64);
        cr_assert_eq(json_integer_value(json_array_get(grid, 1)), 2);
        cr_assert_eq(json_integer_value(json_array_get(grid, 2)), 1);
        cr_assert_eq(json_integer_value(json_array_get(block, 0)), 256);
        cr_assert_eq(json_integer_value(json_array_get(block, 1)), 1);
    }
    /* Aggregates over both. */
    cr_assert_eq(json_array_size(field(o, "ranges")), 2);
    json_t *ks = field(o, "kernels");
    cr_assert_eq(json_array_size(ks), 2);
    double share = 0;
    size_t k;
    json_t *v;
    json_array_foreach(ks, k, v) share += num(v, "gpu_time_share_ratio");
    cr_assert_float_eq(share, 1.0, 1e-9);

    json_t *c = field(o, "cache");
    cr_assert_str_eq(json_string_value(field(c, "root")), g_cache);
    if (cache_exists) {
        cr_assert_str_eq(json_string_value(field(c, "state")), "ok");
        cr_assert_eq(num(c, "entries"), 0);
        cr_assert_eq(num(c, "bytes"), 0);
        cr_assert(json_is_null(field(c, "hit_ratio")), "no lookups: unknown, not 0");
        cr_assert_eq(num(c, "compile_time_saved_ns"), 0);
        cr_assert(json_is_integer(field(c, "age_ns")));
        cr_assert_eq(num(c, "debris"), 0);
        cr_assert_eq(num(c, "quarantined"), 0);
    } else {
        cr_assert_str_eq(json_string_value(field(c, "state")), "missing");
        cr_assert(json_is_null(field(c, "entries")));
        cr_assert(json_is_null(field(c, "hit_ratio")));
        cr_assert(json_is_null(field(c, "compile_time_saved_ns")));
    }
    json_decref(o);
}

Test(top_tmux, json_prints_one_object_per_interval_field_by_field)
{
    start_publishers();
    tu_proc p;
    run_top(&p, "--json", "-n", "2", "-d", "0.3", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert_eq(count(p.out, "\n"), 2, "two lines:\n%s", p.out);
    char *second = strchr(p.out, '\n') + 1;
    second[-1] = '\0';
    check_json_line(p.out, 0);
    second[strlen(second) - 1] = '\0';
    check_json_line(second, 0);
    tu_proc_free(&p);

    /* With a cache (read-only open: it must stay unchanged). */
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &e), VYRE_OK, "%s", e.message);
    vyre_cache_close(c);
    run_top(&p, "--json", "-n", "1", "-d", "0.3", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    p.out[strcspn(p.out, "\n")] = '\0';
    check_json_line(p.out, 1);
    tu_proc_free(&p);
}

/* The cache panel lists the remote stores of $VYRE_REMOTE_CACHE with the
 * counters the cache's index holds for them (a write-back to a port where
 * nothing listens: one error). */
Test(top_tmux, cache_panel_shows_remote_stores)
{
    char spec[128];
    int port = ts_free_port();
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/fleet", port);
    setenv("VYRE_REMOTE_CACHE", spec, 1);
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &e), VYRE_OK, "%s", e.message);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    memset(h.key.bytes, 0x5a, sizeof h.key.bytes);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "test");
    static const char payload[] = "a stand-in cubin";
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &e), VYRE_OK, "%s", e.message);
    vyre_cache_close(c);

    tu_proc p;
    run_top(&p, "--batch", "-n", "1", "-d", "0.1", "--width=200");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    char want[256];
    snprintf(want, sizeof want,
             "remote %s  hits 0  misses 0  errors 1  rejected 0  read 0B  written 0B", spec);
    cr_assert(strstr(p.out, want), "no '%s' in:\n%s", want, p.out);
    tu_proc_free(&p);
    run_top(&p, "--json", "-n", "1", "-d", "0.1", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(o, "%s", je.text);
    json_t *r = json_array_get(json_object_get(json_object_get(o, "cache"), "remotes"), 0);
    cr_assert_not_null(r, "%s", p.out);
    cr_assert_str_eq(json_string_value(json_object_get(r, "url")), spec);
    cr_assert_eq(json_integer_value(json_object_get(r, "put_errors")), 1);
    cr_assert_eq(json_integer_value(json_object_get(r, "puts")), 0);
    json_decref(o);
    tu_proc_free(&p);
    unsetenv("VYRE_REMOTE_CACHE");
}

Test(top_tmux, empty_states_and_usage_errors)
{
    tu_proc p;
    run_top(&p, "--batch", "-n", "1", "-d", "0.1", "--width=100");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert(strstr(p.out, "no instrumented process: run vyre-bench, or link libvyrecore"), "%s",
              p.out);
    cr_assert(strstr(p.out, "no pipeline cache at "), "%s", p.out);
    tu_proc_free(&p);

    run_top(&p, "-d", "0", NULL, NULL, NULL, NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-top: error: invalid refresh interval '0'\n"
                            "hint: give seconds from 0.1 to 3600, e.g. '-d 0.5'\n"
                            "try 'vyre-top --help'\n");
    tu_proc_free(&p);

    run_top(&p, "--jsn", NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "unknown option '--jsn'") && strstr(p.err, "did you mean '--json'?"),
              "%s", p.err);
    tu_proc_free(&p);

    /* No terminal (stdin is /dev/null here): the screen refuses politely. */
    run_top(&p, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-top: error: the interactive view needs a terminal\n"
                            "hint: use --batch or --json for output to a pipe or file\n"
                            "try 'vyre-top --help'\n");
    tu_proc_free(&p);

    run_top(&p, "--help", NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strstr(p.out, "usage: vyre-top"));
    tu_proc_free(&p);
}

/* ---- the GPU panel, through the fake NVML ------------------------------------ */

#ifdef FAKENVML_LIB
/* Environment for vyre-top with two fake GPUs: alpha on GPU 0 holding
 * 1 GiB, beta on GPU 1 with unknown memory, power unsupported. */
static void fake_nvml_env(char procs[128])
{
    snprintf(procs, 128, "FAKENVML_PROCS=0:%d:1073741824,1:%d:-", (int)g_pub[0], (int)g_pub[1]);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_UNSUPPORTED", "power", 1);
    putenv(procs);
}

static double jnum_at(json_t *o, const char *key)
{
    return num(o, key);
}

Test(top_tmux, gpu_panel_and_json_from_nvml)
{
    start_publishers();
    static char procs[128];
    fake_nvml_env(procs);

    tu_proc p;
    run_top(&p, "--json", "-n", "2", "-d", "0.3", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    char *second = strchr(p.out, '\n');
    cr_assert_not_null(second);
    json_error_t je;
    json_t *o = json_loads(second + 1, 0, &je);
    cr_assert_not_null(o, "%s: %s", je.text, second + 1);
    json_t *mon = field(o, "gpu_monitor");
    cr_assert(json_is_true(field(mon, "available")), "%s", second + 1);
    cr_assert(json_is_null(field(mon, "error")));
    cr_assert_str_eq(json_string_value(field(mon, "driver_version")), "580.00.01");
    cr_assert_eq(jnum_at(mon, "gpus_total"), 2);
    json_t *gpus = field(o, "gpus");
    cr_assert_eq(json_array_size(gpus), 2);
    for (int i = 0; i < 2; i++) {
        json_t *g = json_array_get(gpus, (size_t)i);
        char name[64];
        snprintf(name, sizeof name, "NVIDIA Fake GPU %d", i);
        cr_assert_eq(jnum_at(g, "index"), i);
        cr_assert_str_eq(json_string_value(field(g, "name")), name);
        cr_assert_eq(jnum_at(g, "mem_total_bytes"), (double)((80ull + (unsigned)i) << 30));
        cr_assert_eq(jnum_at(g, "mem_used_bytes"), (double)((1ull + (unsigned)i) << 30));
        /* Base units: Hz, and utilisation as a fraction 0..1. */
        cr_assert_eq(jnum_at(g, "sm_clock_hz"), (1500.0 + i) * 1e6);
        cr_assert_eq(jnum_at(g, "mem_clock_hz"), 2619e6);
        cr_assert_eq(jnum_at(g, "sm_clock_max_hz"), 1980e6);
        cr_assert_eq(jnum_at(g, "temperature_c"), 40 + i);
        double util = jnum_at(g, "util_gpu_ratio");
        cr_assert(util >= 0.1 && util <= 1.0, "util %g", util);
        cr_assert_float_eq(jnum_at(g, "util_mem_ratio"), 0.05 * (i + 1), 1e-12);
        cr_assert(json_is_null(field(g, "power_w")), "unsupported power is null, not 0");
        cr_assert_float_eq(jnum_at(g, "power_limit_w"), 700.0, 1e-9);
        cr_assert_str_eq(json_string_value(field(g, "throttle")), i ? "idle" : "power,thermal");
    }
    json_t *procs_j = field(o, "processes");
    size_t k;
    json_t *v;
    int seen = 0;
    json_array_foreach(procs_j, k, v)
    {
        json_int_t pid = json_integer_value(field(v, "pid"));
        if (pid == g_pub[0]) {
            cr_assert_eq(jnum_at(v, "gpu_mem_bytes"), 1073741824.0);
            cr_assert_eq(jnum_at(v, "device"), 0);
            seen++;
        } else if (pid == g_pub[1]) {
            cr_assert(json_is_null(field(v, "gpu_mem_bytes")), "NVML could not tell: null");
            cr_assert_eq(jnum_at(v, "device"), 1, "NVML's GPU for the process");
            seen++;
        }
    }
    cr_assert_eq(seen, 2);
    json_decref(o);
    tu_proc_free(&p);

    /* The screen: one stats line and one history line per GPU; unknown
     * power is '-'; the processes show their GPU memory. */
    start_top(120, 30);
    char *s =
        wait_screen(has_all,
                    (const char *[]){"GPUs (2)", "NVIDIA Fake GPU 0", "NVIDIA Fake GPU 1",
                                     "    util ", "  mem ", "  power", "-/700W", "1.00G", NULL},
                    "the GPU panel");
    /* Three histories per GPU: utilisation, memory, power. */
    cr_assert_eq(count(s, "    util "), 2, "%s", s);
    cr_assert_eq(count(s, "  power"), 2, "%s", s);
    free(s);
    keys("q");
    char *ex = read_exit();
    cr_assert_not_null(ex);
    cr_assert_str_eq(ex, "exit=0\n");
    free(ex);
}

/* ---- every GPU process, and `k` ------------------------------------------------ */

static pid_t g_victim;

/* A process that publishes no telemetry, as a PyTorch job would be: a
 * sleeping child named victim_proc (so /proc has real data for it). */
static void start_victim(void)
{
    fflush(NULL);
    g_victim = fork();
    cr_assert_geq(g_victim, 0, "fork: %s", strerror(errno));
    if (g_victim == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NAME, "victim_proc");
        for (;;)
            pause();
    }
    /* Its name is set before vyre-top looks. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)g_victim);
    for (int waited = 0;; waited += 10) {
        char *comm = tu_read_file(path, NULL);
        int ok = comm && strcmp(comm, "victim_proc\n") == 0;
        free(comm);
        if (ok)
            break;
        cr_assert_lt(waited, WAIT_MS, "the child did not rename itself");
        sleep_ms(10);
    }
}

static void stop_victim(void)
{
    if (g_victim > 0) {
        kill(g_victim, SIGKILL);
        waitpid(g_victim, NULL, 0);
        g_victim = 0;
    }
}

/* Words of a --batch row, split at spaces. */
static int row_words(const char *row, char words[][64], int max)
{
    int n = 0;
    size_t len = strcspn(row, "\n");
    for (size_t i = 0; i < len && n < max;) {
        while (i < len && row[i] == ' ')
            i++;
        size_t j = i;
        while (j < len && row[j] != ' ')
            j++;
        if (j > i) {
            snprintf(words[n++], 64, "%.*s", (int)(j - i), row + i);
        }
        i = j;
    }
    return n;
}

Test(top_tmux, gpu_processes_without_telemetry_are_listed)
{
    start_publishers();
    start_victim();
    /* NVML lists alpha (with telemetry) and the victim (without) on GPU 0,
     * with GPU memory and SM utilisation. */
    static char procs[128], util[128];
    snprintf(procs, sizeof procs, "FAKENVML_PROCS=0:%d:1073741824,0:%d:536870912", (int)g_pub[0],
             (int)g_victim);
    snprintf(util, sizeof util, "FAKENVML_PROC_UTIL=0:%d:20:1,0:%d:37:5", (int)g_pub[0],
             (int)g_victim);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    putenv(procs);
    putenv(util);

    tu_proc p;
    run_top(&p, "--json", "-n", "1", "-d", "0.3", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    json_error_t je;
    json_t *o = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(o, "%s: %s", je.text, p.out);
    json_t *arr = field(o, "processes");
    size_t k;
    json_t *v;
    int seen = 0;
    json_array_foreach(arr, k, v)
    {
        json_int_t pid = json_integer_value(field(v, "pid"));
        if (pid == g_victim) {
            seen |= 1;
            cr_assert(json_is_false(field(v, "telemetry")));
            cr_assert_str_eq(json_string_value(field(v, "name")), "victim_proc");
            /* Its argv is this test's (a fork), NULs as spaces. */
            size_t clen = 0;
            char *self = tu_read_file("/proc/self/cmdline", &clen);
            cr_assert_not_null(self);
            while (clen > 0 && self[clen - 1] == '\0')
                clen--;
            for (size_t c = 0; c < clen; c++)
                if (self[c] == '\0')
                    self[c] = ' ';
            self[clen] = '\0';
            cr_assert_str_eq(json_string_value(field(v, "cmdline")), self);
            free(self);
            cr_assert_eq(num(v, "gpu_mem_bytes"), 536870912.0);
            cr_assert_float_eq(num(v, "sm_util_ratio"), 0.37, 1e-12);
            cr_assert_eq(num(v, "device"), 0);
            cr_assert_gt(num(v, "rss_bytes"), 0);
            cr_assert_eq(num(v, "uid"), (double)getuid());
            cr_assert(json_is_string(field(v, "user")));
            /* No telemetry: vyre's figures are unknown, not 0. */
            cr_assert(json_is_null(field(v, "launches_per_s")));
            cr_assert(json_is_null(field(v, "launches")));
            cr_assert(json_is_null(field(v, "layout_version")));
            cr_assert_eq(json_array_size(field(v, "kernels")), 0);
        } else if (pid == g_pub[0]) {
            seen |= 2;
            cr_assert(json_is_true(field(v, "telemetry")), "merged by pid: one row");
            cr_assert_float_eq(num(v, "sm_util_ratio"), 0.20, 1e-12);
            cr_assert_eq(num(v, "gpu_mem_bytes"), 1073741824.0);
            cr_assert(json_is_integer(field(v, "launches")), "its vyre columns kept");
            cr_assert_gt(json_array_size(field(v, "kernels")), 0);
        } else if (pid == g_pub[1]) {
            seen |= 4;
            cr_assert(json_is_null(field(v, "sm_util_ratio")), "not on a GPU: unknown");
        }
    }
    cr_assert_eq(seen, 7, "%s", p.out);
    json_t *gp = field(json_array_get(field(o, "gpus"), 0), "processes");
    json_array_foreach(gp, k, v)
    {
        cr_assert_str_eq(json_string_value(field(v, "type")), "compute");
    }
    cr_assert_eq(json_array_size(gp), 2);
    cr_assert_eq(json_array_size(arr), 3, "one row each:\n%s", p.out);
    json_decref(o);
    tu_proc_free(&p);

    run_top(&p, "--batch", "-n", "1", "-d", "0.3", "--width=160");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    const char *row = pid_row(p.out, (int)g_victim, " victim_proc ");
    cr_assert_not_null(row, "%s", p.out);
    char w[20][64];
    int n = row_words(row, w, 20);
    /* PID USER NAME GPU SM% GPU-MEM CPU% RSS LAUNCH/s GRAPH/s DISP/s H2D
     * D2H D2D HIT% SAVED COMMAND... */
    cr_assert_geq(n, 17, "%s", p.out);
    cr_assert_str_eq(w[2], "victim_proc");
    cr_assert_str_eq(w[3], "0");
    cr_assert_str_eq(w[4], "37.0%");
    cr_assert_str_eq(w[5], "512M");
    cr_assert_str_eq(w[6], "0.0%", "a sleeping process uses no CPU");
    cr_assert_neq(strcmp(w[7], "-"), 0, "its RSS is known");
    for (int i = 8; i <= 15; i++)
        cr_assert_str_eq(w[i], "-", "vyre column %d of a process without telemetry:\n%s", i, p.out);
    const char *alpha = proc_row(p.out, 0);
    cr_assert_not_null(alpha, "%s", p.out);
    n = row_words(alpha, w, 20);
    cr_assert_str_eq(w[4], "20.0%");
    cr_assert_str_eq(w[5], "1.00G");
    cr_assert_neq(strcmp(w[8], "-"), 0, "alpha's launches/s is known");
    tu_proc_free(&p);
    stop_victim();
}

static int victim_state(void)
{
    int st = 0;
    pid_t r = waitpid(g_victim, &st, WNOHANG);
    if (r == 0)
        return 0; /* alive */
    g_victim = 0;
    return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

Test(top_tmux, k_asks_then_sends_sigterm)
{
    start_victim();
    static char procs[128];
    snprintf(procs, sizeof procs, "FAKENVML_PROCS=0:%d:536870912", (int)g_victim);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    putenv(procs);
    start_top(120, 30);
    char prompt[96], kept[96], sent[96];
    /* Issue 37: k asks which signal (t TERM, i INT, K KILL). */
    snprintf(prompt, sizeof prompt, "Send which signal to %d (victim_proc)? t TERM  i INT  K KILL",
             (int)g_victim);
    snprintf(kept, sizeof kept, "signal not sent to %d", (int)g_victim);
    snprintf(sent, sizeof sent, "sent SIGTERM to %d (victim_proc)", (int)g_victim);
    free(wait_screen(has_all, (const char *[]){"victim_proc", "Processes (1)", NULL},
                     "the GPU process"));
    /* The help names the key and its limits. */
    keys("h");
    free(wait_screen(has_all, (const char *[]){"send a signal to the selected process", NULL},
                     "k in the help"));
    keys("x");
    free(wait_screen(lacks, "vyre-top keys", "the help to close"));
    /* k, then n: nothing happens. */
    keys("k");
    free(wait_screen(has_all, (const char *[]){prompt, NULL}, "the question"));
    keys("n");
    free(wait_screen(has_all, (const char *[]){kept, NULL}, "the cancellation"));
    sleep_ms(300);
    cr_assert_eq(victim_state(), 0, "n must not signal the process");
    /* k, then t: SIGTERM. */
    keys("k");
    free(wait_screen(has_all, (const char *[]){prompt, NULL}, "the question again"));
    keys("t");
    free(wait_screen(has_all, (const char *[]){sent, NULL}, "the confirmation"));
    int sig = 0;
    for (int waited = 0; waited <= WAIT_MS && (sig = victim_state()) == 0; waited += 20)
        sleep_ms(20);
    cr_assert_eq(sig, SIGTERM, "the process must end by SIGTERM (got %d)", sig);
    keys("q");
    char *ex = read_exit();
    cr_assert_not_null(ex);
    cr_assert_str_eq(ex, "exit=0\n");
    free(ex);
}
#endif

/* ---- NO_COLOR ---------------------------------------------------------------- */

/* 1 when the screen (capture-pane -e) sets a foreground or background
 * colour: an SGR parameter 30-37, 38, 40-47, 48, 90-97 or 100-107 (39 and
 * 49 only restore the defaults). */
static int has_colour(const char *screen)
{
    for (const char *p = screen; (p = strstr(p, "\033["));) {
        p += 2;
        while (*p && *p != 'm' && ((*p >= '0' && *p <= '9') || *p == ';')) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            p = end;
            if ((v >= 30 && v <= 38) || (v >= 40 && v <= 48) || (v >= 90 && v <= 97) ||
                (v >= 100 && v <= 107))
                return 1;
            if (*p == ';')
                p++;
        }
    }
    return 0;
}

static char *capture_attrs(void)
{
    int code = 0;
    char *out = TMUX_RC(&code, "capture-pane", "-e", "-p", "-t", "top");
    cr_assert_eq(code, 0);
    return out;
}

Test(top_tmux, no_color_turns_colour_off)
{
    start_publishers();
    /* With colour (the control: the check can see colour). */
    unsetenv("NO_COLOR");
    start_top(100, 30);
    check_shows_both();
    char *s = capture_attrs();
    cr_assert(has_colour(s), "colour expected without NO_COLOR:\n%s", s);
    free(s);
    free(TMUX("kill-server"));
    g_tmux_started = 0;
    char exit_path[700];
    snprintf(exit_path, sizeof exit_path, "%s/exit", g_tmp);
    unlink(exit_path);
    /* NO_COLOR=1: attributes (reverse, bold) but no colour. */
    setenv("NO_COLOR", "1", 1);
    start_top(100, 30);
    check_shows_both();
    s = capture_attrs();
    cr_assert_not(has_colour(s), "NO_COLOR=1 still coloured:\n%s", s);
    cr_assert(strstr(s, "\033[7m") || strstr(s, ";7m") || strstr(s, "[1;7m"),
              "the header is still reverse video:\n%s", s);
    free(s);
    keys("q");
    char *ex = read_exit();
    cr_assert_not_null(ex);
    cr_assert_str_eq(ex, "exit=0\n");
    free(ex);
}

/* ---- the caches' sizes ------------------------------------------------------ */

/* Triton's, Inductor's and the driver's caches as temp dirs of known
 * contents, named as users name them; vyre's (VYRE_PTX_CACHE_DIR) a real
 * cache whose index alone is over a 1 KiB max_size. */
static void make_foreign_caches(void)
{
    char p[800];
    static const char *const dirs[] = {"t", "t/KEY1", "i", "i/ab", "j"};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        snprintf(p, sizeof p, "%s/%s", g_tmp, dirs[k]);
        cr_assert_eq(mkdir(p, 0700), 0, "%s: %s", p, strerror(errno));
    }
    static const struct {
        const char *rel;
        size_t n;
    } files[] = {
        {"t/KEY1/k.cubin", 600}, {"t/KEY1/k.json", 50}, {"i/ab/k.py", 77}, {"j/index", 10}};
    char zeros[1000] = {0};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(p, sizeof p, "%s/%s", g_tmp, files[k].rel);
        tu_write_file(p, zeros, files[k].n);
    }
    static const char *const vars[][2] = {
        {"TRITON_CACHE_DIR", "t"}, {"TORCHINDUCTOR_CACHE_DIR", "i"}, {"CUDA_CACHE_PATH", "j"}};
    for (size_t k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", g_tmp, vars[k][1]);
        setenv(vars[k][0], p, 1);
    }
    setenv("CUDA_CACHE_MAXSIZE", "2147483648", 1);
    setenv("VYRE_CACHE_MAX_SIZE", "1K", 1);
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &e), VYRE_OK, "%s", e.message);
    vyre_cache_close(c);
}

/* vyre-top's byte format (tools/vyre-top/format.c: "650B", "12.0K") of
 * the bytes on disk of g_tmp/rel, as du -s counts them (what the panel
 * shows), in one of tu_text's buffers. */
static const char *top_disk(const char *rel)
{
    char p[800];
    snprintf(p, sizeof p, "%s/%s", g_tmp, rel);
    uint64_t b = tu_disk_bytes(p);
    static const char units[] = "BKMGTPE";
    double v = (double)b;
    int u = 0;
    while (v >= 1023.95 && u < 6) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        return tu_text("%lluB", (unsigned long long)b);
    return tu_text(v < 9.995 ? "%.2f%c" : v < 99.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* The start of the panel's line for a cache: name, size on disk, files. */
static const char *usage_head(const char *name, const char *rel, const char *files)
{
    return tu_text("%-8s %6s %12s", name, top_disk(rel), files);
}

static void unset_foreign_caches(void)
{
    static const char *const vars[] = {"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
                                       "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE",
                                       "VYRE_CACHE_MAX_SIZE"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++)
        unsetenv(vars[k]);
}

Test(top_tmux, batch_frames_show_each_caches_size_limit_and_fill)
{
    make_foreign_caches();
    tu_proc p;
    run_top(&p, "--batch", "-n", "1", "-d", "0.1", "--width=250");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    char want[1200];
    cr_assert(strstr(p.out, "Pipeline cache; cache sizes every 30.0s"), "%s", p.out);
    snprintf(want, sizeof want, "\n%s  no limit ", usage_head("triton", "t", "3 files"));
    cr_assert(strstr(p.out, want), "no '%s' in:\n%s", want + 1, p.out);
    snprintf(want, sizeof want, "%s/t (TRITON_CACHE_DIR)\n", g_tmp);
    cr_assert(strstr(p.out, want), "no '%s' in:\n%s", want, p.out);
    cr_assert(strstr(p.out, tu_text("\n%s  no limit ", usage_head("inductor", "i", "2 files"))),
              "%s", p.out);
    cr_assert(
        strstr(p.out, tu_text("\n%s  limit 2.00G (0%%) ", usage_head("cuda_jit", "j", "1 files"))),
        "%s", p.out);
    snprintf(want, sizeof want, "%s/j (CUDA_CACHE_PATH)\n", g_tmp);
    cr_assert(strstr(p.out, want), "no '%s' in:\n%s", want, p.out);
    /* vyre's cache: its index alone is over the 1 KiB max_size. */
    cr_assert(strstr(p.out, "OVER its 1.00K limit"), "%s", p.out);
    snprintf(want, sizeof want, "%s (VYRE_PTX_CACHE_DIR)\n", g_cache);
    cr_assert(strstr(p.out, want), "no '%s' in:\n%s", want, p.out);
    cr_assert(strstr(p.out, " full, "), "the filesystem's fill: %s", p.out);
    tu_proc_free(&p);

    /* --no-cache-usage: none of it. */
    run_top(&p, "--batch", "-n", "1", "-d", "0.1", "--no-cache-usage");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert_null(strstr(p.out, "cache sizes"), "%s", p.out);
    cr_assert_null(strstr(p.out, "TRITON_CACHE_DIR"), "%s", p.out);
    tu_proc_free(&p);

    /* A bad interval: one message, the hint, exit 2. */
    static const char *const bad[] = {"0", "0.5", "x", "86401"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        run_top(&p, "--batch", "--cache-usage-interval", bad[k], NULL, NULL, NULL);
        snprintf(want, sizeof want, "vyre-top: error: invalid --cache-usage-interval '%s'", bad[k]);
        cr_assert_eq(p.exit_code, 2, "'%s': %s", bad[k], p.err);
        cr_assert(tu_has_line(p.err, want), "stderr: %s", p.err);
        cr_assert(strstr(p.err, "hint: give seconds from 1 to 86400"), "stderr: %s", p.err);
        tu_proc_free(&p);
    }
    unset_foreign_caches();
}

/* The cache at index i of --json's cache_usage.caches, checked to be `name`. */
static json_t *usage_row(json_t *root, size_t i, const char *name, const char *out)
{
    json_t *u = json_object_get(root, "cache_usage");
    cr_assert(json_is_object(u), "no cache_usage object in:\n%s", out);
    json_t *c = json_array_get(json_object_get(u, "caches"), i);
    cr_assert(json_is_object(c), "no cache_usage.caches[%zu] in:\n%s", i, out);
    cr_assert_str_eq(json_string_value(json_object_get(c, "name")), name);
    return c;
}

static json_int_t jint_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "'%s' is not an integer", key);
    return json_integer_value(v);
}

Test(top_tmux, json_carries_each_caches_size_limit_and_fill)
{
    make_foreign_caches();
    tu_proc p;
    run_top(&p, "--json", "-n", "1", "-d", "0.1", NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    json_error_t je;
    json_t *root = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(root, "json: %s\n%s", je.text, p.out);
    json_t *u = json_object_get(root, "cache_usage");
    cr_assert(json_is_object(u), "no cache_usage object in:\n%s", p.out);
    cr_assert_eq(jint_of(u, "interval_ns"), INT64_C(30000000000));
    cr_assert_eq(json_array_size(json_object_get(u, "caches")), 4, "%s", p.out);
    char want[800];
    /* Triton's: 600 + 50 bytes, the group folder and two files; no limit. */
    json_t *t = usage_row(root, 2, "triton", p.out);
    snprintf(want, sizeof want, "%s/t", g_tmp);
    cr_assert_str_eq(json_string_value(json_object_get(t, "path")), want);
    cr_assert_str_eq(json_string_value(json_object_get(t, "path_from")), "TRITON_CACHE_DIR");
    cr_assert(json_is_true(json_object_get(t, "exists")));
    cr_assert_eq(jint_of(t, "bytes"), (json_int_t)tu_disk_bytes(want), "on disk, as du -s counts");
    cr_assert_eq(jint_of(t, "files"), 3);
    cr_assert(json_is_null(json_object_get(t, "limit_bytes")));
    cr_assert(json_is_null(json_object_get(t, "fill_ratio")));
    cr_assert(json_is_null(json_object_get(t, "error")));
    json_t *fs = json_object_get(t, "fs_full_ratio");
    cr_assert(json_is_real(fs) && json_real_value(fs) > 0 && json_real_value(fs) <= 1,
              "fs_full_ratio: %s", p.out);
    cr_assert_gt(jint_of(t, "fs_size_bytes"), 0);
    json_t *i = usage_row(root, 3, "inductor", p.out);
    snprintf(want, sizeof want, "%s/i", g_tmp);
    cr_assert_eq(jint_of(i, "bytes"), (json_int_t)tu_disk_bytes(want));
    cr_assert_str_eq(json_string_value(json_object_get(i, "path_from")), "TORCHINDUCTOR_CACHE_DIR");
    json_t *j = usage_row(root, 1, "cuda_jit", p.out);
    snprintf(want, sizeof want, "%s/j", g_tmp);
    cr_assert_eq(jint_of(j, "bytes"), (json_int_t)tu_disk_bytes(want));
    cr_assert_eq(jint_of(j, "limit_bytes"), INT64_C(2147483648));
    cr_assert_str_eq(json_string_value(json_object_get(j, "limit_from")), "CUDA_CACHE_MAXSIZE");
    /* vyre's: its index alone is over the 1 KiB max_size. */
    json_t *v = usage_row(root, 0, "vyre", p.out);
    cr_assert_str_eq(json_string_value(json_object_get(v, "path")), g_cache);
    cr_assert_eq(jint_of(v, "limit_bytes"), 1024);
    cr_assert_gt(json_real_value(json_object_get(v, "fill_ratio")), 1.0, "%s", p.out);
    cr_assert(json_is_true(json_object_get(v, "over_limit")));
    cr_assert(json_is_true(json_object_get(v, "warn")));
    json_decref(root);
    tu_proc_free(&p);

    /* --no-cache-usage: not measured, so null (the key stays: docs/JSON.md rule 5). */
    run_top(&p, "--json", "-n", "1", "-d", "0.1", "--no-cache-usage");
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    root = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(root, "json: %s\n%s", je.text, p.out);
    u = json_object_get(root, "cache_usage");
    cr_assert(u && json_is_null(u), "cache_usage with --no-cache-usage:\n%s", p.out);
    json_decref(root);
    tu_proc_free(&p);
    unset_foreign_caches();
}

static int shows_triton(const char *screen, const void *ctx)
{
    return strstr(screen, (const char *)ctx) != NULL;
}

/* Sizes are re-measured on their own slow interval, not every frame: with
 * an hour's interval a new file does not show however many frames pass;
 * with a second's it shows. */
Test(top_tmux, cache_sizes_refresh_on_their_own_interval)
{
    make_foreign_caches();
    if (!find_tmux())
        cr_skip_test("tmux is not installed (PATH has no tmux): the terminal tests need it");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' -d 0.3 -n 2000 --cache-usage-interval 3600", VYRE_TOP_BIN);
    free(TMUX("new-session", "-d", "-s", "top", "-x", "250", "-y", "60", cmd));
    g_tmux_started = 1;
    char head[128];
    snprintf(head, sizeof head, "%s", usage_head("triton", "t", "3 files"));
    free(wait_screen(shows_triton, head, "the Triton cache's size"));
    char p[800];
    snprintf(p, sizeof p, "%s/t/KEY1/k.ptx", g_tmp);
    char zeros[200] = {0};
    tu_write_file(p, zeros, sizeof zeros);
    /* Frames go on (the clock in the header moves); the size stays. */
    char *before = capture();
    cr_assert_not_null(before);
    sleep_ms(2000);
    char *after = wait_screen(shows_triton, head, "the same size");
    cr_assert_null(strstr(after, usage_head("triton", "t", "4 files")), "%s", after);
    size_t hl = strcspn(before, "\n");
    cr_assert(strncmp(before, after, hl) != 0, "frames must have gone on (the header's clock):\n%s",
              after);
    free(before);
    free(after);
    free(TMUX("kill-session", "-t", "top"));

    snprintf(cmd, sizeof cmd, "'%s' -d 0.3 -n 2000 --cache-usage-interval 1", VYRE_TOP_BIN);
    free(TMUX("new-session", "-d", "-s", "top2", "-x", "250", "-y", "60", cmd));
    snprintf(p, sizeof p, "%s/t/KEY1/k.llir", g_tmp);
    tu_write_file(p, zeros, 100);
    char now_head[128];
    snprintf(now_head, sizeof now_head, "%s", usage_head("triton", "t", "5 files"));
    char *s = NULL;
    for (int waited = 0; waited <= WAIT_MS; waited += 100) {
        free(s);
        int code = 0;
        s = TMUX_RC(&code, "capture-pane", "-p", "-t", "top2");
        if (code == 0 && strstr(s, now_head))
            break;
        sleep_ms(100);
    }
    cr_assert(s && strstr(s, now_head), "the new files never showed:\n%s", s ? s : "");
    free(s);
    unset_foreign_caches();
}
