/*
 * test_top_clean.c - `vyre-top --batch` prints names from telemetry pages
 * through the sanitiser: a publishing process whose command line holds a
 * C1 CSI, and one whose kernel name holds a C1 CSI and a bad UTF-8 byte,
 * are shown escaped ("\u009b", "\xff"); no such byte reaches stdout raw. (C0 controls and DEL are
 * already replaced by the page reader and the /proc reader.)
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "vyre/counters.h"
#include "vyre/telemetry.h"

#ifndef VYRE_TOP_BIN
#error "tests/CMakeLists.txt must define VYRE_TOP_BIN"
#endif
#ifndef TELEMETRY_PUBLISHER_BIN
#error "tests/CMakeLists.txt must define TELEMETRY_PUBLISHER_BIN"
#endif

#define WAIT_MS 30000 /* sanitized builds on a loaded CI machine */

static char g_tmp[512], g_tel[600];
static pid_t g_pub, g_pub2;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_tmp);
    char buf[700];
    setenv("HOME", g_tmp, 1);
    snprintf(buf, sizeof buf, "%s/xdg-cache", g_tmp);
    setenv("XDG_CACHE_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/xdg-config", g_tmp);
    setenv("XDG_CONFIG_HOME", buf, 1);
    snprintf(buf, sizeof buf, "%s/ptx-cache", g_tmp);
    setenv("VYRE_PTX_CACHE_DIR", buf, 1);
    setenv("VYRE_TELEMETRY_DIR", g_tel, 1);
    unsetenv("VYRE_TELEMETRY");
    unsetenv("COLUMNS");
}

static void teardown(void)
{
    pid_t *pubs[] = {&g_pub, &g_pub2};
    for (int i = 0; i < 2; i++)
        if (*pubs[i] > 0) {
            kill(*pubs[i], SIGKILL);
            waitpid(*pubs[i], NULL, 0);
            *pubs[i] = 0;
        }
    tu_rm_rf(g_tmp);
}

TestSuite(top_clean, .init = setup, .fini = teardown, .timeout = 120);

static const char k_kernel[] = "evil\xc2\x9b"
                               "2J\xff";

/* The first publisher: publishes a hostile kernel
 * name every 10 ms until killed. */
static void publish_forever(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    vyre_telemetry *t = NULL;
    if (vyre__telemetry_open(&t, NULL) != VYRE_OK || !t)
        _exit(10);
    for (uint64_t i = 0;; i++) {
        vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
        vyre_telemetry_kernel_record k = {.name = k_kernel,
                                          .grid = {1, 1, 1},
                                          .block = {32, 1, 1},
                                          .stream_id = 1,
                                          .duration_ns = 50000,
                                          .end_ns = i * 1000000u,
                                          .device = 0};
        vyre_telemetry_add_kernel(t, &k);
        vyre_telemetry_publish(t);
        sleep_ms(10);
    }
}

/* Waits until the page of pid has published. */
static void wait_page(pid_t pid)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%d.vtel", g_tel, (int)pid);
    for (int waited = 0;; waited += 20) {
        static vyre_telemetry_snapshot s;
        if (vyre__telemetry_read(path, &s, NULL) == VYRE_OK && s.publish_count > 0)
            return;
        cr_assert_lt(waited, WAIT_MS, "helper process %d did not publish", (int)pid);
        sleep_ms(20);
    }
}

Test(top_clean, batch_shows_hostile_names_escaped)
{
    fflush(NULL);
    g_pub = fork();
    cr_assert_geq(g_pub, 0, "fork: %s", strerror(errno));
    if (g_pub == 0)
        publish_forever();
    /* The second: the schema publisher run with a hostile argv[0], so its
     * command line holds a C1 CSI. */
    g_pub2 = fork();
    cr_assert_geq(g_pub2, 0, "fork: %s", strerror(errno));
    if (g_pub2 == 0) {
        char a0[] = "pub\xc2\x9b"
                    "1m",
             secs[] = "120";
        char *const av[] = {a0, secs, NULL};
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv(TELEMETRY_PUBLISHER_BIN, av);
        _exit(127);
    }
    wait_page(g_pub);
    wait_page(g_pub2);
    /* Two frames: the second has the kernels of its interval. */
    char bin[] = VYRE_TOP_BIN, a1[] = "--batch", a2[] = "-n", a3[] = "2", a4[] = "-d", a5[] = "0.3",
         a6[] = "--width=200";
    char *const argv[] = {bin, a1, a2, a3, a4, a5, a6, NULL};
    tu_proc p;
    tu_run(&p, argv, NULL);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    for (const unsigned char *s = (const unsigned char *)p.out; *s; s++)
        cr_assert(!(*s == 0xff || *s == 0x1b || (s[0] == 0xc2 && s[1] == 0x9b)),
                  "a raw control or bad byte 0x%02x at offset %zu:\n%s", *s,
                  (size_t)(s - (const unsigned char *)p.out), p.out);
    cr_assert(strstr(p.out, "evil\\u009b2J\\xff"), "the kernel name, escaped:\n%s", p.out);
    cr_assert(strstr(p.out, " pub\\u009b1m 120"), "the command line, escaped:\n%s", p.out);
    tu_proc_free(&p);
}
