/*
 * test_monitor_busy.c - the monitors never wait on a busy cache index:
 * while another process holds index.sqlite3 locked, an exporter scrape
 * answers at once with the GPU and process series, vyre_cache_up 0 and
 * vyre_cache_busy 1 (seen: every scrape took 10.03 s, Prometheus's
 * default scrape timeout, and lost every series), and the figures come
 * back when the lock goes. vyre-top's side is in
 * tests/cli/test_monitor_busy_cli.c.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"
#include "lockholder.h"
#include "trace/telemetry_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_dir[PATH_MAX], g_tel[PATH_MAX + 8], g_cache[PATH_MAX + 8];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_dir);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_dir);
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_tel, 1), 0);
    unsetenv("VYRE_TELEMETRY");
    /* A cache with its index. */
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(g_cache, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e), 0, "%s",
                 e.message);
    vyre_cache_close(c);
}

static void teardown(void)
{
    unsetenv("VYRE_TELEMETRY_DIR");
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_GPUS");
    tu_rm_rf(g_dir);
}

TestSuite(monitor_busy, .init = setup, .fini = teardown);

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Asserts that doc has the line "<family>{dir="<cache>"} <value>". */
static void want_dir_sample(const char *doc, const char *family, int value)
{
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "%s{dir=\"%s\"} %d\n", family, g_cache, value);
    cr_assert_not_null(strstr(doc, want), "no '%s' in:\n%s", want, doc);
}

Test(monitor_busy, exporter_scrape_answers_while_the_index_is_locked)
{
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_GPUS", "1", 1);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 3);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);

    char index[PATH_MAX + 32];
    snprintf(index, sizeof index, "%s/index.sqlite3", g_cache);
    tu_lockholder h;
    tu_lock_hold(&h, index);
    exp_opts o = {
        .telemetry_dir = g_tel, .cache_dir = g_cache, .kernels_top_n = 5, .cache_refresh_s = 60};
    exporter *x = NULL;
    cr_assert_eq(exporter_new(&o, &x), 0);
    char pid_series[64];
    snprintf(pid_series, sizeof pid_series, "vyre_process_launches_total{pid=\"%d\"",
             (int)getpid());
    for (int i = 0; i < 3; i++) {
        char *doc = NULL;
        size_t len = 0;
        uint64_t t0 = now_ms();
        cr_assert_eq(exporter_scrape(x, &doc, &len), 0);
        uint64_t ms = now_ms() - t0;
        /* A hang detector, not a timing: the lock would have held it 10 s. */
        cr_assert_lt(ms, 5000, "scrape %d took %llu ms", i, (unsigned long long)ms);
        want_dir_sample(doc, "vyre_cache_busy", 1);
        want_dir_sample(doc, "vyre_cache_up", 0);
        cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 1\n"), "%s", doc);
        cr_assert_not_null(strstr(doc, "vyre_gpu_temperature_celsius{gpu=\"0\""), "%s", doc);
        cr_assert_not_null(strstr(doc, pid_series), "%s", doc);
        free(doc);
    }
    tu_lock_release(&h);
    exporter_free(x);

    /* The lock gone, a new exporter reads the figures. */
    cr_assert_eq(exporter_new(&o, &x), 0);
    char *doc = NULL;
    size_t len = 0;
    cr_assert_eq(exporter_scrape(x, &doc, &len), 0);
    want_dir_sample(doc, "vyre_cache_busy", 0);
    want_dir_sample(doc, "vyre_cache_up", 1);
    want_dir_sample(doc, "vyre_cache_entries", 0);
    free(doc);
    exporter_free(x);
    vyre__telemetry_close(t);
}
