/*
 * test_monitor_busy_cli.c - vyre-top never waits on a busy cache index:
 * while another process holds index.sqlite3 locked, `vyre-top --batch -n 2
 * -d 0.2` prints its two frames at once and its cache panel says the cache
 * is busy (seen: the run took 29 s). The exporter's side is in
 * tests/unit/test_monitor_busy.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lockholder.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_dir[512], g_cache[600], g_tel[600];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_dir);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_dir);
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(g_cache, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e), 0, "%s",
                 e.message);
    vyre_cache_close(c);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(monitor_busy_cli, .init = setup, .fini = teardown);

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void run_top(tu_proc *p, const char *const *args)
{
    char cache_env[700], tel_env[700];
    snprintf(cache_env, sizeof cache_env, "VYRE_PTX_CACHE_DIR=%s", g_cache);
    snprintf(tel_env, sizeof tel_env, "VYRE_TELEMETRY_DIR=%s", g_tel);
    const char *env[] = {cache_env, tel_env, "VYRE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1",
                         NULL};
    tu_run_bin(p, VYRE_TOP_BIN, args, env, NULL);
}

Test(monitor_busy_cli, top_batch_says_cache_busy_and_does_not_wait)
{
    char index[700];
    snprintf(index, sizeof index, "%s/index.sqlite3", g_cache);
    tu_lockholder h;
    tu_lock_hold(&h, index);
    tu_proc p;
    uint64_t t0 = now_ms();
    run_top(&p, (const char *const[]){"--batch", "-n", "2", "-d", "0.2", "--width=160", NULL});
    uint64_t ms = now_ms() - t0;
    tu_lock_release(&h);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* Both frames say it (the first after a short wait, the second while
     * the read is still under way). */
    size_t busy = 0;
    for (const char *q = p.out; (q = strstr(q, "cache busy")); q++)
        busy++;
    cr_assert_eq(busy, 2, "%s", p.out);
    /* A hang detector, not a timing: the lock would have held it 10 s. */
    cr_assert_lt(ms, 5000, "vyre-top ran %llu ms", (unsigned long long)ms);
    tu_proc_free(&p);

    /* Without the lock, the figures. */
    run_top(&p, (const char *const[]){"--batch", "-n", "1", "-d", "0.1", "--width=160", NULL});
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_not_null(strstr(p.out, "entries 0  size 0B"), "%s", p.out);
    cr_assert_null(strstr(p.out, "cache busy"), "%s", p.out);
    tu_proc_free(&p);
}
