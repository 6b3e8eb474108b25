/*
 * test_telemetry_tracker.c - libcore's telemetry tracker on its own
 * (vyre_telemetry_tracker_*): first and later readings of a live page
 * (deltas, rates, kernels since the last reading), an invalid page, a page
 * naming another pid than its file, the page limit and the kernel scale.
 * How vyre-top and the exporter use it together: test_monitors_agree.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "vyre/telemetry.h"

static char g_dir[PATH_MAX], g_tel[PATH_MAX + 8];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_dir);
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_tel, 1), 0);
    unsetenv("VYRE_TELEMETRY");
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(telemetry_tracker, .init = setup, .fini = teardown);

static void add(vyre_telemetry *t, const char *name, int n)
{
    for (int i = 0; i < n; i++) {
        vyre_telemetry_kernel_record k = {.name = name, .duration_ns = 100};
        cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    }
}

static void publish_launches(vyre_telemetry *t, uint64_t launches)
{
    vyre_counters *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    c->v[VYRE_CTR_LAUNCHES] = launches;
    cr_assert_eq(vyre__telemetry_publish_snapshot(t, c), VYRE_OK);
    free(c);
}

Test(telemetry_tracker, follows_a_live_writer_across_updates)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    add(t, "a", 3);
    publish_launches(t, 100);
    vyre_telemetry_tracker *tr = NULL;
    cr_assert_eq(vyre_telemetry_tracker_new(NULL, 0, &tr, &e), VYRE_OK, "%s", e.message);
    vyre_telemetry_update u;
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(u.dir, g_tel, "NULL dir: vyre_telemetry_dir()");
    cr_assert_eq(u.nprocs, 1);
    cr_assert_eq(u.live, 1);
    const vyre_telemetry_proc *p = &u.procs[0];
    cr_assert_eq(p->pid, (int32_t)getpid());
    cr_assert_eq(p->first, 1);
    cr_assert(isnan(p->interval_s) && isnan(p->rate[VYRE_CTR_LAUNCHES]), "first: no rates");
    cr_assert_eq(p->delta[VYRE_CTR_LAUNCHES], 100, "first: since the writer started");
    cr_assert_eq(p->n_kernels, 3, "first: the whole ring");
    cr_assert_eq(p->kernels_new, 3);
    cr_assert_eq(p->newest_serial, 3);

    /* Second reading: only what happened since. */
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    add(t, "b", 2);
    publish_launches(t, 150);
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(u.nprocs, 1);
    p = &u.procs[0];
    cr_assert_eq(p->first, 0);
    cr_assert_gt(p->interval_s, 0);
    cr_assert_eq(p->delta[VYRE_CTR_LAUNCHES], 50);
    cr_assert_float_eq(p->rate[VYRE_CTR_LAUNCHES], 50 / p->interval_s, 1e-9);
    cr_assert_eq(p->n_kernels, 2);
    cr_assert_str_eq(p->kernels[0].name, "b");
    cr_assert_eq(p->kernels[0].serial, 4);
    cr_assert_eq(p->kernels_unseen, 0);

    /* Nothing new: the newest serial seen is carried forward. */
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(u.procs[0].n_kernels, 0);
    cr_assert_eq(u.procs[0].newest_serial, 5);
    cr_assert_eq(u.procs[0].delta[VYRE_CTR_LAUNCHES], 0);
    add(t, "c", 300); /* the ring keeps 256 */
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    p = &u.procs[0];
    cr_assert_eq(p->kernels_new, 300);
    cr_assert_eq(p->n_kernels, VYRE_TELEMETRY_RING_CAPACITY);
    cr_assert_eq(p->kernels_unseen, 300 - VYRE_TELEMETRY_RING_CAPACITY);
    cr_assert_float_eq(p->kernel_scale, 300.0 / VYRE_TELEMETRY_RING_CAPACITY, 1e-12);

    /* A counter going back (a hostile or broken writer): no delta, rate unknown. */
    publish_launches(t, 120);
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    p = &u.procs[0];
    cr_assert_eq(p->first, 0);
    cr_assert_eq(p->delta[VYRE_CTR_LAUNCHES], 0);
    cr_assert(isnan(p->rate[VYRE_CTR_LAUNCHES]), "a counter going back: rate unknown");

    vyre__telemetry_close(t);
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(u.nprocs, 0, "the page went with its writer");
    vyre_telemetry_tracker_free(tr);
}

static void put(const char *name, const void *data, size_t len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", g_tel, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0, "open(%s): %s", path, strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

Test(telemetry_tracker, invalid_pages_and_the_page_limit)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char own[PATH_MAX + 64];
    snprintf(own, sizeof own, "%s/%d.vtel", g_tel, (int)getpid());
    size_t len = 0;
    char *img = tu_read_file(own, &len);
    cr_assert_not_null(img);
    put("1.vtel", "garbage", 7); /* invalid */
    char name[64];
    snprintf(name, sizeof name, "%d.vtel", (int)getppid()); /* names our pid inside */
    put(name, img, len);

    vyre_telemetry_tracker *tr = NULL;
    cr_assert_eq(vyre_telemetry_tracker_new(g_tel, 0, &tr, &e), VYRE_OK);
    vyre_telemetry_update u;
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(u.invalid, 2, "garbage, and a page naming another pid than its file");
    cr_assert_eq(u.nprocs, 1);
    cr_assert_eq(u.procs[0].pid, (int32_t)getpid());
    vyre_telemetry_tracker_free(tr);

    cr_assert_eq(vyre_telemetry_tracker_new(g_tel, 1, &tr, &e), VYRE_OK);
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(u.skipped, 2, "pages past max_pages are not read");
    vyre_telemetry_tracker_free(tr);

    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/missing", g_dir);
    cr_assert_eq(vyre_telemetry_tracker_new(missing, 0, &tr, &e), VYRE_OK);
    cr_assert_eq(vyre_telemetry_tracker_update(tr, &u, &e), VYRE_OK,
                 "a missing directory: no pages");
    cr_assert_eq(u.nprocs, 0);
    vyre_telemetry_tracker_free(tr);
    vyre__telemetry_close(t);
    free(img);
}

Test(telemetry_tracker, kernel_scale)
{
    /* A ring that overflowed: each kept record stands for recorded/seen. */
    cr_assert_float_eq(vyre_telemetry_kernel_scale(4, 10), 2.5, 1e-12);
    cr_assert_float_eq(vyre_telemetry_kernel_scale(4, 4), 1.0, 1e-12, "no overflow: exact");
    cr_assert_float_eq(vyre_telemetry_kernel_scale(0, 10), 1.0, 1e-12, "nothing kept");
    cr_assert_float_eq(vyre_telemetry_kernel_scale(10, 4), 1.0, 1e-12, "never scaled down");
}
