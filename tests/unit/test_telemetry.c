/*
 * test_telemetry.c - the telemetry page: writer and reader in separate
 * processes, torn-read stress, hostile pages, reap, enable/disable and
 * directory safety. No GPU needed.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/counters_internal.h"
#include "trace/telemetry_internal.h"
#include "tel_v1.h"
#include "testutil.h"
#include "vyre/telemetry.h"

#define PAGE_SIZE_CUR sizeof(vyre__tel_page)

static char g_dir[PATH_MAX];

/* A fresh telemetry directory in $VYRE_TELEMETRY_DIR, telemetry on. */
static void setup_dir(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_dir, 1), 0);
    unsetenv("VYRE_TELEMETRY");
}

static void teardown_dir(void)
{
    tu_rm_rf(g_dir);
}

static void page_path(char *buf, size_t size, const char *dir, long pid, const char *suffix)
{
    int n = snprintf(buf, size, "%s/%ld.vtel%s", dir, pid, suffix);
    cr_assert(n > 0 && (size_t)n < size);
}

static void join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < size, "path too long");
}

static void own_exe(char *out, size_t size)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    cr_assert(n > 0);
    buf[n] = '\0';
    const char *base = strrchr(buf, '/');
    int w = snprintf(out, size, "%s", base ? base + 1 : buf);
    cr_assert(w > 0, "cannot format the executable name");
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int wait_child(pid_t pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_mode(const char *path, const void *data, size_t len, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    cr_assert(fd >= 0, "open(%s): %s", path, strerror(errno));
    cr_assert_eq(fchmod(fd, mode), 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    cr_assert_eq(close(fd), 0);
}

static int is_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

/* ---- writer basics ---------------------------------------------------- */

Test(telemetry, page_is_0600_in_a_0700_directory_and_holds_our_identity, .init = setup_dir,
     .fini = teardown_dir)
{
    char sub[PATH_MAX], path[PATH_MAX], exe[VYRE_TELEMETRY_EXE_MAX];
    join(sub, sizeof sub, g_dir, "nested/tel");
    setenv("VYRE_TELEMETRY_DIR", sub, 1);
    umask(0); /* the modes must not depend on the umask */

    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    cr_assert_not_null(t);
    page_path(path, sizeof path, sub, (long)getpid(), "");

    struct stat st;
    cr_assert_eq(stat(sub, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0700, "dir mode %o", st.st_mode & 07777);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0600, "page mode %o", st.st_mode & 07777);
    cr_assert_eq(st.st_uid, geteuid());
    cr_assert_eq((size_t)st.st_size, PAGE_SIZE_CUR);
    page_path(path, sizeof path, sub, (long)getpid(), ".tmp");
    cr_assert_neq(access(path, F_OK), 0, "the tmp name is gone once the page is public");
    page_path(path, sizeof path, sub, (long)getpid(), "");

    static vyre_telemetry_snapshot s;
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_OK, "%s", e.message);
    own_exe(exe, sizeof exe);
    uint64_t start;
    cr_assert_eq(vyre__telemetry_start_time(0, &start), VYRE_OK);
    cr_assert_eq(s.layout_version, VYRE_TELEMETRY_LAYOUT_VERSION);
    cr_assert_eq(s.pid, getpid());
    cr_assert_eq(s.uid, geteuid());
    cr_assert_eq(s.start_time, start);
    cr_assert_gt(s.start_time, 0);
    cr_assert_str_eq(s.exe, exe);
    cr_assert_gt(strlen(s.cmdline), 0);
    cr_assert_eq(s.publish_count, 0, "nothing published yet");
    cr_assert_eq(s.n_counters, VYRE_CTR_COUNT);
    cr_assert_eq(s.n_ranges, VYRE_RANGE_COUNT);
    cr_assert_eq(s.n_kernels, 0);

    /* One page per process. */
    vyre_telemetry *t2 = NULL;
    cr_assert_eq(vyre__telemetry_open(&t2, &e), VYRE_EEXIST);
    cr_assert_null(t2);
    cr_assert_str_neq(e.hint, "");

    vyre__telemetry_close(t);
    cr_assert_neq(access(path, F_OK), 0, "close unlinks the page");
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_ENOENT);
    vyre__telemetry_close(NULL);

    /* After close a new page may be opened. */
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre__telemetry_close(t);
}

Test(telemetry, publish_and_kernels_round_trip, .init = setup_dir, .fini = teardown_dir)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_counter_add(VYRE_CTR_H2D_BYTES, 4096);
    vyre_range_record(VYRE_RANGE_CACHE_LOOKUP, 1500);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);

    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    vyre_telemetry_kernel_record k = {.name = "saxpy",
                                      .grid = {64, 2, 1},
                                      .block = {256, 1, 1},
                                      .stream_id = 7,
                                      .duration_ns = 1234,
                                      .end_ns = 99999,
                                      .device = 1};
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    k.name = longname;
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    k.name = NULL;
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    cr_assert_eq(vyre_telemetry_add_kernel(t, NULL), VYRE_EINVAL);

    char path[PATH_MAX];
    page_path(path, sizeof path, g_dir, (long)getpid(), "");
    static vyre_telemetry_snapshot s;
    vyre_counters c;
    vyre_counters_snapshot(&c);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.publish_count, 1);
    cr_assert_gt(s.publish_ns, 0);
    cr_assert_leq(s.publish_ns, now_ns());
    cr_assert_eq(s.counters.v[VYRE_CTR_H2D_BYTES], c.v[VYRE_CTR_H2D_BYTES]);
    cr_assert_geq(s.counters.v[VYRE_CTR_H2D_BYTES], 4096);
    cr_assert_eq(memcmp(&s.counters.ranges, &c.ranges, sizeof c.ranges), 0);
    cr_assert_geq(s.counters.ranges[VYRE_RANGE_CACHE_LOOKUP].count, 1);

    cr_assert_eq(s.kernels_total, 3);
    cr_assert_eq(s.n_kernels, 3);
    cr_assert_eq(s.kernels[0].serial, 1);
    cr_assert_str_eq(s.kernels[0].name, "saxpy");
    cr_assert_eq(s.kernels[0].grid[0], 64);
    cr_assert_eq(s.kernels[0].grid[1], 2);
    cr_assert_eq(s.kernels[0].block[0], 256);
    cr_assert_eq(s.kernels[0].stream_id, 7);
    cr_assert_eq(s.kernels[0].duration_ns, 1234);
    cr_assert_eq(s.kernels[0].end_ns, 99999);
    cr_assert_eq(s.kernels[0].device, 1);
    cr_assert_eq(strlen(s.kernels[1].name), VYRE_TELEMETRY_KERNEL_NAME_MAX - 1, "truncated");
    cr_assert_eq(s.kernels[2].serial, 3);
    cr_assert_str_eq(s.kernels[2].name, "");
    vyre__telemetry_close(t);
}

/* ---- writer and reader in separate processes ------------------------- */

#define CROSS_N 3000

Test(telemetry, another_process_sees_monotonic_counters_and_its_identity, .init = setup_dir,
     .fini = teardown_dir)
{
    int ready[2], go[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        vyre_telemetry *t = NULL;
        if (vyre__telemetry_open(&t, NULL) != VYRE_OK || !t)
            _exit(10);
        vyre_counters c;
        vyre_counters_snapshot(&c);
        uint64_t base = c.v[VYRE_CTR_LAUNCHES];
        if (vyre_telemetry_publish(t) != VYRE_OK)
            _exit(11);
        if (write(ready[1], &base, sizeof base) != (ssize_t)sizeof base)
            _exit(12);
        for (int i = 1; i <= CROSS_N; i++) {
            vyre_counter_add(VYRE_CTR_LAUNCHES, 1);
            vyre_counter_add(VYRE_CTR_H2D_BYTES, 100);
            if (i % 10 == 0) {
                char name[32];
                snprintf(name, sizeof name, "kernel_%d", i / 10);
                vyre_telemetry_kernel_record k = {.name = name, .grid = {(uint32_t)i, 1, 1}};
                if (vyre_telemetry_add_kernel(t, &k) != VYRE_OK)
                    _exit(13);
            }
            if (vyre_telemetry_publish(t) != VYRE_OK)
                _exit(14);
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        char done = 'd';
        if (write(ready[1], &done, 1) != 1)
            _exit(15);
        char b;
        if (read(go[0], &b, 1) != 1) /* until the parent has read the end */
            _exit(16);
        vyre__telemetry_close(t);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    uint64_t base;
    cr_assert_eq(read(ready[0], &base, sizeof base), (ssize_t)sizeof base);

    char path[PATH_MAX], exe[VYRE_TELEMETRY_EXE_MAX];
    page_path(path, sizeof path, g_dir, (long)pid, "");
    own_exe(exe, sizeof exe);
    static vyre_telemetry_snapshot s;
    vyre_error e = {0};
    uint64_t prev = 0, prev_count = 0, prev_kernels = 0;
    int reads = 0, changes = 0, done = 0;
    while (!done) {
        struct pollfd p = {.fd = ready[0], .events = POLLIN};
        if (poll(&p, 1, 0) == 1) {
            char d;
            cr_assert_eq(read(ready[0], &d, 1), 1);
            done = 1; /* one last read below sees the final publish */
        }
        int rc = vyre__telemetry_read(path, &s, &e);
        if (rc == VYRE_EBUSY)
            continue;
        cr_assert_eq(rc, VYRE_OK, "%s", e.message);
        reads++;
        cr_assert_eq(s.pid, pid);
        cr_assert_str_eq(s.exe, exe);
        uint64_t v = s.counters.v[VYRE_CTR_LAUNCHES];
        cr_assert_geq(v, prev, "launches went back: %" PRIu64 " after %" PRIu64, v, prev);
        cr_assert_geq(s.publish_count, prev_count);
        cr_assert_geq(s.kernels_total, prev_kernels);
        cr_assert_geq(v, base);
        cr_assert_leq(v, base + CROSS_N);
        changes += v != prev;
        prev = v;
        prev_count = s.publish_count;
        prev_kernels = s.kernels_total;
        for (uint32_t i = 0; i < s.n_kernels; i++) {
            char want[32];
            snprintf(want, sizeof want, "kernel_%" PRIu64, s.kernels[i].serial);
            cr_assert_str_eq(s.kernels[i].name, want);
            cr_assert_eq(s.kernels[i].grid[0], s.kernels[i].serial * 10);
            if (i)
                cr_assert_eq(s.kernels[i].serial, s.kernels[i - 1].serial + 1);
        }
    }
    cr_assert_eq(prev, base + CROSS_N, "the final publish is seen");
    cr_assert_eq(prev_count, CROSS_N + 1);
    cr_assert_eq(s.kernels_total, CROSS_N / 10);
    cr_assert_eq(s.n_kernels, VYRE_TELEMETRY_RING_CAPACITY);
    cr_assert_eq(s.kernels[0].serial, CROSS_N / 10 - VYRE_TELEMETRY_RING_CAPACITY + 1);
    cr_assert_gt(changes, 10, "the reader ran while the writer published (%d changes)", changes);
    cr_assert_eq(write(go[1], "g", 1), 1);
    cr_assert_eq(wait_child(pid), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_ENOENT, "the child's close unlinked it");
}

/* ---- torn reads ------------------------------------------------------ */

static void fill_counters(vyre_counters *c, uint64_t k)
{
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        c->v[i] = k;
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        c->ranges[r].count = c->ranges[r].total_ns = c->ranges[r].max_ns = k;
        for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
            c->ranges[r].buckets[b] = k;
    }
}

/* Every value of the snapshot equals v[0]; returns the first index that
 * differs, -1 when consistent. */
static int torn_at(const vyre_telemetry_snapshot *s)
{
    uint64_t k = s->counters.v[0];
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        if (s->counters.v[i] != k)
            return i;
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        const vyre_range_hist *h = &s->counters.ranges[r];
        if (h->count != k || h->total_ns != k || h->max_ns != k)
            return 1000 + r;
        for (int b = 0; b < VYRE_HIST_BUCKETS; b++)
            if (h->buckets[b] != k)
                return 1000 + r;
    }
    return -1;
}

/* Kernel serial k carries k in every field and "k<k>" padded with the last
 * digit to the full name length. */
static void kernel_name(char *out, uint64_t k)
{
    int n = snprintf(out, VYRE_TELEMETRY_KERNEL_NAME_MAX, "k%" PRIu64, k);
    memset(out + n, out[n - 1], VYRE_TELEMETRY_KERNEL_NAME_MAX - 1 - (size_t)n);
    out[VYRE_TELEMETRY_KERNEL_NAME_MAX - 1] = '\0';
}

static void torn_writer(int stop_fd)
{
    vyre_telemetry *t = NULL;
    if (vyre__telemetry_open(&t, NULL) != VYRE_OK || !t)
        _exit(10);
    static vyre_counters c;
    unsigned seed = 12345;
    uint64_t deadline = now_ns() + UINT64_C(60000000000);
    for (uint64_t k = 1;; k++) {
        fill_counters(&c, k);
        if (vyre__telemetry_publish_snapshot(t, &c) != VYRE_OK)
            _exit(11);
        char name[VYRE_TELEMETRY_KERNEL_NAME_MAX];
        kernel_name(name, k);
        uint32_t w = (uint32_t)k;
        vyre_telemetry_kernel_record rec = {.name = name,
                                            .grid = {w, w, w},
                                            .block = {w, w, w},
                                            .stream_id = k,
                                            .duration_ns = k,
                                            .end_ns = k,
                                            .device = (int32_t)(k & 0x7fffffff)};
        if (vyre_telemetry_add_kernel(t, &rec) != VYRE_OK)
            _exit(12);
        /* Mostly back to back, sometimes a short spin, so reads overlap
         * writes at every offset; now and then a real pause, so that on an
         * oversubscribed CI machine the reader is not starved of windows
         * (a real writer publishes at most every 10 ms). */
        unsigned r = (unsigned)rand_r(&seed);
        unsigned spin = r % 4 == 0 ? (unsigned)rand_r(&seed) % 2000 : 0;
        for (volatile unsigned i = 0; i < spin; i++)
            ;
        if (r % 16 == 1) {
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
        if (k % 256 == 0) {
            struct pollfd p = {.fd = stop_fd, .events = POLLIN};
            if (poll(&p, 1, 0) != 0 || now_ns() > deadline)
                break;
        }
    }
    vyre__telemetry_close(t);
    _exit(0);
}

#define TORN_READS     5000
#define TORN_MIN_READS 400
#define TORN_SECONDS   6

Test(telemetry, torn_read_stress_every_snapshot_is_consistent, .init = setup_dir,
     .fini = teardown_dir, .timeout = 300)
{
    int stop[2];
    cr_assert_eq(pipe(stop), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(stop[1]);
        torn_writer(stop[0]);
    }
    close(stop[0]);
    char path[PATH_MAX];
    page_path(path, sizeof path, g_dir, (long)pid, "");
    static vyre_telemetry_snapshot s;
    vyre_error e = {0};
    /* Wait for the page and its first publish. */
    for (int i = 0; i < 10000; i++) {
        if (vyre__telemetry_read(path, &s, NULL) == VYRE_OK && s.publish_count > 0)
            break;
        usleep(1000);
    }
    cr_assert_gt(s.publish_count, 0, "the writer never published");

    int ok = 0, busy = 0, reads = 0;
    uint64_t prev = 0, distinct = 0, kernels_seen = 0;
    /* Bounded in time as well as in count: under ASan on a loaded 2-core CI
     * box 5000 full-ring reads take half a minute. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < TORN_READS; i++, reads++) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (reads >= TORN_MIN_READS && t1.tv_sec - t0.tv_sec >= TORN_SECONDS)
            break;
        int rc = vyre__telemetry_read(path, &s, &e);
        if (rc == VYRE_EBUSY) {
            busy++;
            continue;
        }
        cr_assert_eq(rc, VYRE_OK, "%s", e.message);
        ok++;
        int at = torn_at(&s);
        cr_assert_eq(at, -1, "torn snapshot: field %d is %" PRIu64 ", counter 0 is %" PRIu64, at,
                     at < 1000 ? s.counters.v[at] : s.counters.ranges[at - 1000].count,
                     s.counters.v[0]);
        cr_assert_eq(s.publish_count, s.counters.v[0], "publish_count is under the seqlock too");
        cr_assert_geq(s.counters.v[0], prev);
        distinct += s.counters.v[0] != prev;
        prev = s.counters.v[0];
        for (uint32_t j = 0; j < s.n_kernels; j++) {
            const vyre_telemetry_kernel *k = &s.kernels[j];
            uint64_t n = k->serial;
            char want[VYRE_TELEMETRY_KERNEL_NAME_MAX];
            kernel_name(want, n);
            cr_assert(k->end_ns == n && k->duration_ns == n && k->stream_id == n &&
                          k->device == (int32_t)(n & 0x7fffffff),
                      "torn kernel %" PRIu64, n);
            for (int d = 0; d < 3; d++)
                cr_assert(k->grid[d] == (uint32_t)n && k->block[d] == (uint32_t)n,
                          "torn kernel %" PRIu64 " dims", n);
            cr_assert_str_eq(k->name, want, "torn kernel name at serial %" PRIu64, n);
            if (j)
                cr_assert_gt(n, s.kernels[j - 1].serial);
        }
        kernels_seen += s.n_kernels;
    }
    cr_assert_eq(write(stop[1], "s", 1), 1);
    close(stop[1]);
    cr_assert_eq(wait_child(pid), 0);
    cr_log_info("torn-read stress: %d consistent reads, %d busy, %" PRIu64
                " distinct publishes seen, %" PRIu64 " kernels checked, writer reached %" PRIu64,
                ok, busy, distinct, kernels_seen, prev);
    cr_assert_geq(ok, reads / 2, "too many busy reads: %d of %d", busy, reads);
    cr_assert_gt(distinct, (uint64_t)(reads / 20), "the writer must publish during the reads");
}

/* ---- hostile pages ---------------------------------------------------- */

/* A valid page image written by the real writer: 3 kernels, one publish. */
static unsigned char *good_page(void)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    for (int i = 0; i < 3; i++) {
        vyre_telemetry_kernel_record k = {
            .name = "reduce", .grid = {1, 1, 1}, .block = {128, 1, 1}};
        cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    }
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    char path[PATH_MAX];
    page_path(path, sizeof path, g_dir, (long)getpid(), "");
    size_t len;
    unsigned char *img = (unsigned char *)tu_read_file(path, &len);
    cr_assert_not_null(img);
    cr_assert_eq(len, PAGE_SIZE_CUR);
    vyre__telemetry_close(t);
    return img;
}

static vyre__tel_header *hdr(unsigned char *img)
{
    return (vyre__tel_header *)(void *)img;
}

static vyre__tel_slot *slot(unsigned char *img, int i)
{
    return &((vyre__tel_page *)(void *)img)->ring[i];
}

static void hostile_path(char *out, size_t size)
{
    join(out, size, g_dir, "hostile/999.vtel");
}

/* Writes img (len bytes, mode 0600) as a page and reads it back. */
static int read_image(const unsigned char *img, size_t len, vyre_telemetry_snapshot *s,
                      vyre_error *e)
{
    char path[PATH_MAX];
    hostile_path(path, sizeof path);
    write_mode(path, img, len, 0600);
    return vyre__telemetry_read(path, s, e);
}

static void expect(const unsigned char *img, size_t len, int code, const char *what,
                   const char *in_message)
{
    static vyre_telemetry_snapshot s;
    vyre_error e = {0};
    memset(&s, 0xa5, sizeof s);
    int rc = read_image(img, len, &s, &e);
    cr_assert_eq(rc, code, "%s: got %s (%s), want %s", what, vyre_err_name(rc), e.message,
                 vyre_err_name(code));
    if (code != VYRE_OK) {
        cr_assert_eq(e.code, code, "%s", what);
        cr_assert_not_null(strstr(e.message, in_message), "%s: message '%s' lacks '%s'", what,
                           e.message, in_message);
        cr_assert_neq(e.hint[0], '\0', "%s: no hint", what);
        cr_assert(is_zero(&s, sizeof s), "%s: snapshot not zeroed on failure", what);
    }
}

/* Applies `mutate` to a fresh copy of the good image and checks the code. */
#define HOSTILE(good, code, msg, ...)                                                              \
    do {                                                                                           \
        unsigned char *img_ = malloc(PAGE_SIZE_CUR);                                               \
        memcpy(img_, (good), PAGE_SIZE_CUR);                                                       \
        vyre__tel_header *h_ = hdr(img_);                                                          \
        (void)h_;                                                                                  \
        __VA_ARGS__;                                                                               \
        expect(img_, PAGE_SIZE_CUR, (code), #__VA_ARGS__, (msg));                                  \
        free(img_);                                                                                \
    } while (0)

static void hostile_setup(void)
{
    setup_dir();
    char sub[PATH_MAX];
    join(sub, sizeof sub, g_dir, "hostile");
    cr_assert_eq(mkdir(sub, 0700), 0);
}

Test(telemetry, hostile_page_contents_give_the_right_error, .init = hostile_setup,
     .fini = teardown_dir)
{
    unsigned char *good = good_page();
    expect(good, PAGE_SIZE_CUR, VYRE_OK, "the good page", "");

    HOSTILE(good, VYRE_ECORRUPT, "bad magic", h_->magic[0] ^= 0x20);
    HOSTILE(good, VYRE_EVERSION, "layout version 4", h_->version = 4);
    HOSTILE(good, VYRE_EVERSION, "layout version 0", h_->version = 0);
    HOSTILE(good, VYRE_ECORRUPT, "declares sizes", h_->header_size = 12351);
    HOSTILE(good, VYRE_ECORRUPT, "declares sizes", h_->total_size = PAGE_SIZE_CUR + 1);
    HOSTILE(good, VYRE_ECORRUPT, "declares sizes", h_->ring_capacity = 512);
    HOSTILE(good, VYRE_ECORRUPT, "declares sizes", h_->ring_capacity = 0);
    HOSTILE(good, VYRE_ECORRUPT, "declares sizes", h_->ring_slot_size = 8);
    HOSTILE(good, VYRE_ECORRUPT, "out of range", h_->n_counters = VYRE__TEL_COUNTERS_CAP + 1);
    HOSTILE(good, VYRE_ECORRUPT, "out of range", h_->n_ranges = UINT32_MAX);
    HOSTILE(good, VYRE_ECORRUPT, "out of range", h_->counters_capacity = 1000);
    HOSTILE(good, VYRE_ECORRUPT, "out of range", h_->hist_buckets = 41);
    HOSTILE(good, VYRE_ECORRUPT, "has pid 0", h_->pid = 0);
    HOSTILE(good, VYRE_ECORRUPT, "has pid -5", h_->pid = -5);
    HOSTILE(good, VYRE_ECORRUPT, "claims uid 12345", h_->uid = 12345);
    HOSTILE(good, VYRE_ECORRUPT, "unterminated exe", memset(h_->exe, 'A', sizeof h_->exe));
    HOSTILE(good, VYRE_ECORRUPT, "unterminated exe", memset(h_->cmdline, 'A', sizeof h_->cmdline));
    HOSTILE(good, VYRE_ECORRUPT, "ring head 256",
            atomic_store(&h_->ring_head, VYRE_TELEMETRY_RING_CAPACITY));
    HOSTILE(good, VYRE_ECORRUPT, "ring head 4294967295", atomic_store(&h_->ring_head, UINT32_MAX));
    HOSTILE(good, VYRE_ECORRUPT, "kernel name in ring slot 1 is unterminated", {
        uint64_t w;
        memset(&w, 'B', sizeof w);
        for (int i = 0; i < VYRE__TEL_NAME_WORDS; i++)
            atomic_store(&slot(img_, 1)->name[i], w);
    });
    HOSTILE(good, VYRE_ECORRUPT, "ring slot 0 claims kernel 300",
            atomic_store(&slot(img_, 0)->seq, 600));
    HOSTILE(good, VYRE_ECORRUPT, "ring slot 200 claims kernel 1",
            atomic_store(&slot(img_, 200)->seq, 2));
    /* A writer that died mid-publish leaves seq odd: busy, never a hang. */
    HOSTILE(good, VYRE_EBUSY, "changed during every one of", atomic_fetch_add(&h_->seq, 1));

    /* Tolerated: a slot stuck mid-write is skipped; fewer counters than ours
     * (an older writer) read as zeros; control characters are defused. */
    static vyre_telemetry_snapshot s;
    vyre_error e = {0};
    unsigned char *img = malloc(PAGE_SIZE_CUR);
    memcpy(img, good, PAGE_SIZE_CUR);
    atomic_store(&slot(img, 1)->seq, 3);
    hdr(img)->n_counters = 2;
    atomic_store(&hdr(img)->counters[5], 77);
    memcpy(hdr(img)->exe, "a\x1b[2J\tb", 8);
    cr_assert_eq(read_image(img, PAGE_SIZE_CUR, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.n_kernels, 2);
    cr_assert_eq(s.kernels[0].serial, 1);
    cr_assert_eq(s.kernels[1].serial, 3);
    cr_assert_eq(s.n_counters, 2);
    cr_assert_eq(s.counters.v[5], 0);
    cr_assert_str_eq(s.exe, "a?[2J?b");
    free(img);

    /* Sizes: short, empty, longer than declared. */
    expect(good, 0, VYRE_ECORRUPT, "empty file", "too short");
    expect(good, 8, VYRE_ECORRUPT, "8 bytes", "too short");
    expect(good, 15, VYRE_ECORRUPT, "15 bytes", "too short");
    expect(good, 16, VYRE_ECORRUPT, "prefix only", "is 16 bytes");
    expect(good, PAGE_SIZE_CUR / 2, VYRE_ECORRUPT, "half a page", "bytes; layout version 3");
    expect(good, PAGE_SIZE_CUR - 1, VYRE_ECORRUPT, "one byte short", "bytes; layout version 3");
    unsigned char *big = calloc(1, PAGE_SIZE_CUR + 4096);
    memcpy(big, good, PAGE_SIZE_CUR);
    expect(big, PAGE_SIZE_CUR + 4096, VYRE_ECORRUPT, "longer than declared",
           "bytes; layout version 3");
    hdr(big)->total_size = PAGE_SIZE_CUR + 4096; /* declared to match: still not version 2 */
    expect(big, PAGE_SIZE_CUR + 4096, VYRE_ECORRUPT, "declared longer", "bytes; layout version 3");
    hdr(big)->version = 7; /* a future, bigger layout: a version error, not corruption */
    expect(big, PAGE_SIZE_CUR + 4096, VYRE_EVERSION, "future version", "layout version 7");
    free(big);
    free(good);
}

Test(telemetry, hostile_files_symlink_directory_fifo_mode_owner, .init = hostile_setup,
     .fini = teardown_dir)
{
    unsigned char *good = good_page();
    char path[PATH_MAX], target[PATH_MAX];
    hostile_path(path, sizeof path);
    join(target, sizeof target, g_dir, "real.vtel");
    write_mode(target, good, PAGE_SIZE_CUR, 0600);
    static vyre_telemetry_snapshot s;
    vyre_error e = {0};

    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_ENOENT);
    cr_assert_eq(vyre__telemetry_read(target, &s, &e), VYRE_OK, "%s", e.message);

    cr_assert_eq(symlink(target, path), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "is a symlink"), "%s", e.message);
    cr_assert_eq(unlink(path), 0);

    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "not a regular file"), "%s", e.message);
    cr_assert_eq(rmdir(path), 0);

    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE,
                 "a FIFO neither hangs nor reads");
    cr_assert_eq(unlink(path), 0);

    write_mode(path, good, PAGE_SIZE_CUR, 0666);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "writable by group or others (mode 0666)"), "%s",
                       e.message);
    cr_assert_eq(chmod(path, 0620), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE);
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_OK, "%s", e.message);

    if (geteuid() != 0) {
        free(good);
        cr_skip_test("needs root to chown a page to another user");
    }
    cr_assert_eq(chown(path, 12345, 12345), 0);
    cr_assert_eq(vyre__telemetry_read(path, &s, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "belongs to uid 12345"), "%s", e.message);
    cr_assert_str_neq(e.hint, "");
    free(good);
}

Test(telemetry, random_mutations_never_crash, .init = hostile_setup, .fini = teardown_dir)
{
    unsigned char *good = good_page();
    unsigned char *img = malloc(PAGE_SIZE_CUR);
    static vyre_telemetry_snapshot s;
    unsigned seed = 4242;
    int codes[64] = {0};
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(img, good, PAGE_SIZE_CUR);
        int n = 1 + rand_r(&seed) % 8;
        for (int j = 0; j < n; j++) {
            /* Mostly the header, where the checks are; sometimes the ring. */
            size_t off = rand_r(&seed) % 4 ? (size_t)rand_r(&seed) % sizeof(vyre__tel_header)
                                           : (size_t)rand_r(&seed) % PAGE_SIZE_CUR;
            if (rand_r(&seed) % 2)
                img[off] = (unsigned char)rand_r(&seed);
            else
                img[off] ^= (unsigned char)(1u << (rand_r(&seed) % 8));
        }
        if (iter % 50 == 0) /* sometimes random content behind a valid prefix */
            for (size_t o = 16; o < PAGE_SIZE_CUR; o++)
                img[o] = (unsigned char)rand_r(&seed);
        size_t len = iter % 7 == 0 ? (size_t)rand_r(&seed) % (PAGE_SIZE_CUR + 100) : PAGE_SIZE_CUR;
        unsigned char *buf = img;
        if (len > PAGE_SIZE_CUR) {
            buf = calloc(1, len);
            memcpy(buf, img, PAGE_SIZE_CUR);
        }
        vyre_error e = {0};
        int rc = read_image(buf, len, &s, &e);
        if (buf != img)
            free(buf);
        cr_assert(rc == VYRE_OK || rc == VYRE_ECORRUPT || rc == VYRE_EVERSION || rc == VYRE_EBUSY,
                  "iteration %d: unexpected %s: %s", iter, vyre_err_name(rc), e.message);
        codes[-rc]++;
        if (rc == VYRE_OK) {
            cr_assert_not_null(memchr(s.exe, '\0', sizeof s.exe));
            cr_assert_not_null(memchr(s.cmdline, '\0', sizeof s.cmdline));
            cr_assert_leq(s.n_kernels, VYRE_TELEMETRY_RING_CAPACITY);
            for (uint32_t k = 0; k < s.n_kernels; k++)
                cr_assert_not_null(memchr(s.kernels[k].name, '\0', sizeof s.kernels[k].name));
        }
    }
    cr_assert_gt(codes[0], 0, "some mutations are harmless");
    cr_assert_gt(codes[-VYRE_ECORRUPT], 0, "some are caught");
    free(img);
    free(good);
}

/* ---- list and reap ---------------------------------------------------- */

Test(telemetry, list_enumerates_pid_pages_only, .init = setup_dir, .fini = teardown_dir)
{
    const char *names[] = {"123.vtel", "45.vtel",  "7.vtel.tmp",     "abc.vtel",         "0.vtel",
                           "012.vtel", "5.vtel.x", "-3.vtel",        "99999999999.vtel", "8vtel",
                           ".vtel",    "6.VTEL",   "2147483647.vtel"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        join(path, sizeof path, g_dir, names[i]);
        write_mode(path, "x", 1, 0600);
    }
    vyre_telemetry_entry *v = NULL;
    size_t n = 99;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_list(g_dir, &v, &n, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(n, 3);
    cr_assert_eq(v[0].pid, 45);
    cr_assert_eq(v[1].pid, 123);
    cr_assert_eq(v[2].pid, INT32_MAX);
    join(path, sizeof path, g_dir, "45.vtel");
    cr_assert_str_eq(v[0].path, path);
    vyre_free(v);
    vyre_free(NULL);

    /* NULL: $VYRE_TELEMETRY_DIR. */
    cr_assert_eq(vyre__telemetry_list(NULL, &v, &n, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(n, 3);
    vyre_free(v);

    /* No directory yet: nobody published; an empty list. */
    join(path, sizeof path, g_dir, "none");
    cr_assert_eq(vyre__telemetry_list(path, &v, &n, &e), VYRE_OK);
    cr_assert_eq(n, 0);
    cr_assert_null(v);

    cr_assert_eq(chmod(g_dir, 0777), 0);
    cr_assert_eq(vyre__telemetry_list(g_dir, &v, &n, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "writable by group or others"), "%s", e.message);
    cr_assert_eq(chmod(g_dir, 0700), 0);
}

Test(telemetry, reap_removes_dead_and_reused_pids_and_keeps_live_ones, .init = setup_dir,
     .fini = teardown_dir)
{
    /* A child that dies without closing its page. */
    pid_t dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0) {
        vyre_telemetry *t = NULL;
        if (vyre__telemetry_open(&t, NULL) != VYRE_OK || !t)
            _exit(10);
        _exit(0); /* no close, no destructors: the page stays behind */
    }
    cr_assert_eq(wait_child(dead), 0);
    char dead_page[PATH_MAX];
    page_path(dead_page, sizeof dead_page, g_dir, (long)dead, "");
    cr_assert_eq(access(dead_page, F_OK), 0, "the dead child's page is left over");

    /* Our own page, live. */
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char own[PATH_MAX];
    page_path(own, sizeof own, g_dir, (long)getpid(), "");
    size_t len;
    unsigned char *img = (unsigned char *)tu_read_file(own, &len);
    cr_assert_eq(len, PAGE_SIZE_CUR);

    /* The parent process is alive: a page with its real start time stays,
     * and so does its in-flight tmp file. */
    pid_t live = getppid();
    uint64_t live_start;
    cr_assert_eq(vyre__telemetry_start_time(live, &live_start), VYRE_OK);
    char live_page[PATH_MAX], live_tmp[PATH_MAX], reused[PATH_MAX], dead_tmp[PATH_MAX];
    hdr(img)->pid = live;
    hdr(img)->start_time = live_start;
    page_path(live_page, sizeof live_page, g_dir, (long)live, "");
    write_mode(live_page, img, len, 0600);
    page_path(live_tmp, sizeof live_tmp, g_dir, (long)live, ".tmp");
    write_mode(live_tmp, img, len, 0600);

    /* Pid 1 is alive, but this page's start time is not its: pid reused. */
    uint64_t init_start;
    cr_assert_eq(vyre__telemetry_start_time(1, &init_start), VYRE_OK);
    hdr(img)->pid = 1;
    hdr(img)->start_time = init_start + 12345;
    page_path(reused, sizeof reused, g_dir, 1, "");
    write_mode(reused, img, len, 0600);

    /* A tmp file of the dead child. */
    page_path(dead_tmp, sizeof dead_tmp, g_dir, (long)dead, ".tmp");
    write_mode(dead_tmp, "x", 1, 0600);

    /* Not a page of ours: kept whatever its pid. */
    char junk[PATH_MAX];
    join(junk, sizeof junk, g_dir, "notes.txt");
    write_mode(junk, "x", 1, 0600);

    size_t removed = 99;
    cr_assert_eq(vyre_telemetry_reap(g_dir, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 3);
    cr_assert_neq(access(dead_page, F_OK), 0, "dead child's page removed");
    cr_assert_neq(access(dead_tmp, F_OK), 0, "dead child's tmp removed");
    cr_assert_neq(access(reused, F_OK), 0, "reused pid's page removed");
    cr_assert_eq(access(own, F_OK), 0, "our page kept");
    cr_assert_eq(access(live_page, F_OK), 0, "live page kept");
    cr_assert_eq(access(live_tmp, F_OK), 0, "live tmp kept");
    cr_assert_eq(access(junk, F_OK), 0);

    cr_assert_eq(vyre_telemetry_reap(g_dir, &removed, &e), VYRE_OK);
    cr_assert_eq(removed, 0, "nothing left to reap");
    cr_assert_eq(vyre_telemetry_reap(NULL, NULL, &e), VYRE_OK);

    /* A dead pid's page owned by someone else is not ours to remove. */
    if (geteuid() == 0) {
        write_mode(dead_page, img, len, 0600);
        cr_assert_eq(chown(dead_page, 12345, 12345), 0);
        cr_assert_eq(vyre_telemetry_reap(g_dir, &removed, &e), VYRE_OK);
        cr_assert_eq(removed, 0);
        cr_assert_eq(access(dead_page, F_OK), 0);
    }
    free(img);
    vyre__telemetry_close(t);
}

/* Our own PID namespace, as the writer records it. */
static void own_ns(uint64_t *dev, uint64_t *ino)
{
    struct stat st;
    cr_assert_eq(stat("/proc/self/ns/pid", &st), 0, "%s", strerror(errno));
    *dev = (uint64_t)st.st_dev;
    *ino = (uint64_t)st.st_ino;
}

/* Issue 22, seen 10: a publisher in another PID namespace (`unshare --pid
 * --fork`, a container with --ipc=host) shares the directory. Its pid 1 is
 * not ours: host pid 1 exists with another start time, so the page looked
 * "pid reused" and was unlinked while its process ran. A page recording
 * another namespace is foreign: never stale, never reaped, whatever its
 * pid says here; the namespace is read back, and older layouts (which do
 * not record it) keep the old judgement. */
Test(telemetry, a_page_of_another_pid_namespace_is_foreign_and_never_reaped, .init = setup_dir,
     .fini = teardown_dir)
{
    uint64_t ns_dev, ns_ino;
    own_ns(&ns_dev, &ns_ino);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char own[PATH_MAX];
    page_path(own, sizeof own, g_dir, (long)getpid(), "");
    size_t len;
    unsigned char *img = (unsigned char *)tu_read_file(own, &len);
    cr_assert_eq(len, PAGE_SIZE_CUR);
    cr_assert_eq(hdr(img)->version, 3);
    cr_assert_eq(hdr(img)->pid_ns_dev, ns_dev, "the writer records its namespace");
    cr_assert_eq(hdr(img)->pid_ns_ino, ns_ino);

    static vyre_telemetry_snapshot s;
    cr_assert_eq(vyre__telemetry_read(own, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.pid_ns_ino, ns_ino);
    cr_assert_eq(vyre_telemetry_foreign(&s), 0, "our own page is not foreign");

    /* Pid 1 of another namespace: here pid 1 is alive with another start
     * time, which for a page of ours means "pid reused". */
    uint64_t init_start;
    cr_assert_eq(vyre__telemetry_start_time(1, &init_start), VYRE_OK);
    hdr(img)->pid = 1;
    hdr(img)->start_time = init_start + 12345;
    hdr(img)->pid_ns_ino = ns_ino + 1;
    char one[PATH_MAX];
    page_path(one, sizeof one, g_dir, 1, "");
    write_mode(one, img, len, 0600);

    /* A pid that is dead here, in another namespace too; and its tmp. */
    pid_t dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0)
        _exit(0);
    cr_assert_eq(wait_child(dead), 0);
    hdr(img)->pid = dead;
    char dead_page[PATH_MAX], dead_tmp[PATH_MAX];
    page_path(dead_page, sizeof dead_page, g_dir, (long)dead, "");
    page_path(dead_tmp, sizeof dead_tmp, g_dir, (long)dead, ".tmp");
    write_mode(dead_page, img, len, 0600);
    write_mode(dead_tmp, img, len, 0600);

    size_t removed = 99;
    cr_assert_eq(vyre_telemetry_reap(g_dir, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(access(one, F_OK), 0, "the foreign pid 1 page was unlinked");
    cr_assert_eq(access(dead_page, F_OK), 0, "the foreign dead-pid page was unlinked");
    cr_assert_eq(access(dead_tmp, F_OK), 0, "the foreign tmp was unlinked");
    cr_assert_eq(removed, 0);

    cr_assert_eq(vyre__telemetry_read(one, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.pid, 1);
    cr_assert_eq(s.pid_ns_ino, ns_ino + 1);
    cr_assert_eq(vyre_telemetry_foreign(&s), 1);
    cr_assert_eq(vyre_telemetry_stale(&s), 0, "a foreign page is never stale");
    cr_assert_eq(vyre__telemetry_read(dead_page, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre_telemetry_foreign(&s), 1);
    cr_assert_eq(vyre_telemetry_stale(&s), 0);
    /* Same inode on another nsfs device: still another namespace. */
    s.pid_ns_ino = ns_ino;
    s.pid_ns_dev = ns_dev + 1;
    cr_assert_eq(vyre_telemetry_foreign(&s), 1);
    cr_assert_eq(vyre_telemetry_foreign(NULL), 0);

    /* A layout 2 page does not record a namespace (those bytes were
     * reserved): whatever is in them, it is judged as before, so the
     * reused pid 1 page goes. */
    hdr(img)->version = 2;
    hdr(img)->pid = 1;
    write_mode(one, img, len, 0600);
    cr_assert_eq(vyre__telemetry_read(one, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.layout_version, 2);
    cr_assert_eq(s.pid_ns_ino, 0);
    cr_assert_eq(s.pid_ns_dev, 0);
    cr_assert_eq(vyre_telemetry_foreign(&s), 0);
    cr_assert_eq(vyre_telemetry_stale(&s), 1);
    cr_assert_eq(vyre_telemetry_reap(g_dir, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 1);
    cr_assert_neq(access(one, F_OK), 0, "a reused pid's layout 2 page is reaped");
    cr_assert_eq(access(dead_page, F_OK), 0);

    free(img);
    vyre__telemetry_close(t);
}

/* The writer never replaces a page of another namespace that holds our
 * pid's name: that process may be alive. It says so instead. */
Test(telemetry, a_foreign_page_under_our_pid_is_not_replaced, .init = setup_dir,
     .fini = teardown_dir)
{
    uint64_t ns_dev, ns_ino;
    own_ns(&ns_dev, &ns_ino);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char own[PATH_MAX];
    page_path(own, sizeof own, g_dir, (long)getpid(), "");
    size_t len;
    unsigned char *img = (unsigned char *)tu_read_file(own, &len);
    vyre__telemetry_close(t);

    hdr(img)->pid_ns_ino = ns_ino + 1;
    write_mode(own, img, len, 0600);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EEXIST, "%s", e.message);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "another PID namespace"), "%s", e.message);
    cr_assert_not_null(strstr(e.message, own), "%s", e.message);
    cr_assert_not_null(strstr(e.hint, "VYRE_TELEMETRY_DIR"), "%s", e.hint);
    size_t got;
    unsigned char *after = (unsigned char *)tu_read_file(own, &got);
    cr_assert_eq(got, len);
    cr_assert_eq(memcmp(after, img, len), 0, "the foreign page is untouched");
    free(after);

    /* Ours after all (same namespace): a stale page of ours, replaced. */
    hdr(img)->pid_ns_ino = ns_ino;
    hdr(img)->start_time += 1;
    write_mode(own, img, len, 0600);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre__telemetry_close(t);
    free(img);
}

/* ---- enable, directory, global, fork ---------------------------------- */

Test(telemetry, vyre_telemetry_0_disables_publishing, .init = setup_dir, .fini = teardown_dir)
{
    setenv("VYRE_TELEMETRY", "0", 1);
    vyre_telemetry *t = (vyre_telemetry *)&t; /* must be overwritten */
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK);
    cr_assert_null(t);
    vyre_telemetry_kernel_record k = {.name = "x"};
    cr_assert_eq(vyre_telemetry_publish(NULL), VYRE_OK);
    cr_assert_eq(vyre_telemetry_maybe_publish(NULL, now_ns()), 0);
    cr_assert_eq(vyre_telemetry_add_kernel(NULL, &k), VYRE_OK);
    vyre__telemetry_close(NULL);
    cr_assert_null(vyre_telemetry_global(&e));
    cr_assert_eq(e.code, 0);
    vyre_telemetry_entry *v;
    size_t n;
    cr_assert_eq(vyre__telemetry_list(g_dir, &v, &n, &e), VYRE_OK);
    cr_assert_eq(n, 0, "no page was created");

    setenv("VYRE_TELEMETRY", "yes", 1);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EENV);
    cr_assert_not_null(strstr(e.message, "'yes'"), "%s", e.message);
    cr_assert_not_null(strstr(e.hint, "VYRE_TELEMETRY=0"), "%s", e.hint);
    setenv("VYRE_TELEMETRY", "1", 1);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    cr_assert_not_null(t);
    vyre__telemetry_close(t);
}

Test(telemetry, unsafe_or_empty_directory_is_refused, .init = setup_dir, .fini = teardown_dir)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    char buf[PATH_MAX];

    setenv("VYRE_TELEMETRY_DIR", "", 1);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EENV);
    cr_assert_not_null(strstr(e.message, "empty"), "%s", e.message);
    cr_assert_not_null(strstr(e.hint, "unset VYRE_TELEMETRY_DIR"), "%s", e.hint);
    cr_assert_eq(vyre_telemetry_dir(buf, sizeof buf, &e), VYRE_EENV);

    setenv("VYRE_TELEMETRY_DIR", "relative/dir", 1);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EENV);
    cr_assert_not_null(strstr(e.message, "'relative/dir'"), "%s", e.message);

    unsetenv("VYRE_TELEMETRY_DIR");
    cr_assert_eq(vyre_telemetry_dir(buf, sizeof buf, &e), VYRE_OK);
    char want[64];
    snprintf(want, sizeof want, "/dev/shm/vyre-%u", (unsigned)geteuid());
    cr_assert_str_eq(buf, want);
    cr_assert_eq(vyre_telemetry_dir(buf, 4, &e), VYRE_ETOOBIG);

    setenv("VYRE_TELEMETRY_DIR", g_dir, 1);
    cr_assert_eq(chmod(g_dir, 0770), 0);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "mode 0770"), "%s", e.message);
    cr_assert_not_null(strstr(e.hint, "chmod go-w"), "%s", e.hint);
    cr_assert_eq(chmod(g_dir, 0700), 0);

    char file[PATH_MAX];
    join(file, sizeof file, g_dir, "file");
    write_mode(file, "x", 1, 0600);
    setenv("VYRE_TELEMETRY_DIR", file, 1);
    cr_assert_neq(vyre__telemetry_open(&t, &e), VYRE_OK, "a file is not a directory");
    cr_assert_null(t);

    if (geteuid() != 0)
        cr_skip_test("needs root to chown the directory to another user");
    char other[PATH_MAX];
    join(other, sizeof other, g_dir, "other");
    cr_assert_eq(mkdir(other, 0700), 0);
    cr_assert_eq(chown(other, 12345, 12345), 0);
    setenv("VYRE_TELEMETRY_DIR", other, 1);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "owned by uid 12345"), "%s", e.message);
    cr_assert_eq(vyre_telemetry_reap(other, NULL, &e), VYRE_EUNSAFE);
}

/* Issue 22, seen 2: a page whose file system runs out of room. The page
 * used to be sized with ftruncate (sparse), so opening worked and the first
 * store into an unbacked block killed the process with SIGBUS. Now its
 * storage is reserved before it is mapped: opening fails with the reason,
 * nothing is left in the directory, and the global page is simply off. */
Test(telemetry, a_full_file_system_means_not_publishing_never_sigbus, .init = setup_dir,
     .fini = teardown_dir)
{
    char mnt[PATH_MAX], tel[PATH_MAX], why[512];
    join(mnt, sizeof mnt, g_dir, "mnt");
    cr_assert_eq(mkdir(mnt, 0700), 0);
    if (tu_tel_full_tmpfs(mnt, why, sizeof why) != 0)
        cr_skip_test("cannot mount a small tmpfs here: %s", why);
    join(tel, sizeof tel, mnt, "tel");
    setenv("VYRE_TELEMETRY_DIR", tel, 1);

    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    int rc = vyre__telemetry_open(&t, &e);
    if (rc == VYRE_OK) {
        /* Before the fix: SIGBUS here (the test crashes). */
        vyre_telemetry_publish(t);
        vyre__telemetry_close(t);
        cr_assert_fail("a page was opened on a full file system");
    }
    cr_assert_eq(rc, VYRE_ENOSPC, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "cannot reserve"), "%s", e.message);
    cr_assert_not_null(strstr(e.message, tel), "names the directory: %s", e.message);
    cr_assert_not_null(strstr(e.hint, "VYRE_TELEMETRY=0"), "%s", e.hint);
    DIR *d = opendir(tel);
    cr_assert_not_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        cr_assert(de->d_name[0] == '.', "left behind: %s", de->d_name);
    closedir(d);

    /* The process-wide page: off, with the reason kept for the front end. */
    vyre_error ge = {0};
    cr_assert_null(vyre_telemetry_global(&ge));
    cr_assert_eq(ge.code, VYRE_ENOSPC);
    cr_assert_not_null(strstr(ge.message, "cannot reserve"), "%s", ge.message);
    cr_assert_eq(vyre_telemetry_publish(vyre_telemetry_global(NULL)), VYRE_OK);
    cr_assert_eq(umount2(mnt, MNT_DETACH), 0, "%s", strerror(errno));
}

Test(telemetry, stale_page_under_our_pid_is_replaced, .init = setup_dir, .fini = teardown_dir)
{
    char page[PATH_MAX], tmp[PATH_MAX];
    page_path(page, sizeof page, g_dir, (long)getpid(), "");
    page_path(tmp, sizeof tmp, g_dir, (long)getpid(), ".tmp");
    write_mode(page, "stale", 5, 0600);
    write_mode(tmp, "stale", 5, 0600);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    static vyre_telemetry_snapshot s;
    cr_assert_eq(vyre__telemetry_read(page, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.pid, getpid());
    cr_assert_neq(access(tmp, F_OK), 0);
    vyre__telemetry_close(t);

    /* Something that is not a page of ours is never replaced. */
    cr_assert_eq(mkdir(page, 0700), 0);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_null(t);
    cr_assert_neq(access(tmp, F_OK), 0, "the tmp file is cleaned up on failure");
}

static vyre_telemetry *g_shared;
static _Atomic int g_published;

static void *race_publish(void *arg)
{
    uint64_t now = *(const uint64_t *)arg;
    int rc = vyre_telemetry_maybe_publish(g_shared, now);
    if (rc == 1)
        atomic_fetch_add(&g_published, 1);
    for (int i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof name, "k%d", i);
        vyre_telemetry_kernel_record k = {.name = name};
        vyre_telemetry_add_kernel(g_shared, &k);
    }
    return NULL;
}

Test(telemetry, global_page_and_rate_limited_publish, .init = setup_dir, .fini = teardown_dir)
{
    vyre_error e = {0};
    vyre_telemetry *g = vyre_telemetry_global(&e);
    cr_assert_not_null(g, "global: %d %s", e.code, e.message);
    e.code = -1;
    cr_assert_eq(vyre_telemetry_global(&e), g, "one page per process");
    cr_assert_eq(e.code, 0);
    char page[PATH_MAX];
    page_path(page, sizeof page, g_dir, (long)getpid(), "");
    cr_assert_eq(access(page, F_OK), 0);
    vyre_telemetry *t = NULL;
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EEXIST, "the global page is this process's");

    const uint64_t base = UINT64_C(5000000000), iv = VYRE_TELEMETRY_PUBLISH_INTERVAL_NS;
    cr_assert_eq(vyre_telemetry_maybe_publish(g, base), 1);
    cr_assert_eq(vyre_telemetry_maybe_publish(g, base + 1), 0);
    cr_assert_eq(vyre_telemetry_maybe_publish(g, base + iv - 1), 0);
    cr_assert_eq(vyre_telemetry_maybe_publish(g, base - 1000), 0, "an older clock reading");
    cr_assert_eq(vyre_telemetry_maybe_publish(g, base + iv), 1);

    /* Eight threads past the interval at once: exactly one publishes. Each
     * then adds 1000 kernels concurrently. */
    g_shared = g;
    uint64_t now = base + 3 * iv;
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, race_publish, &now), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&g_published), 1);

    static vyre_telemetry_snapshot s;
    cr_assert_eq(vyre__telemetry_read(page, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.publish_count, 3);
    cr_assert_eq(s.kernels_total, 8000);
    cr_assert_eq(s.n_kernels, VYRE_TELEMETRY_RING_CAPACITY);
    for (uint32_t i = 0; i < s.n_kernels; i++) {
        cr_assert_eq(s.kernels[i].serial, 8000 - VYRE_TELEMETRY_RING_CAPACITY + 1 + i);
        cr_assert_eq(s.kernels[i].name[0], 'k');
    }
}

Test(telemetry, a_forked_child_leaves_the_parents_page_alone, .init = setup_dir,
     .fini = teardown_dir)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    vyre_telemetry *g = vyre_telemetry_global(NULL);
    cr_assert_null(g, "open() already holds this process's page");
    char page[PATH_MAX];
    page_path(page, sizeof page, g_dir, (long)getpid(), "");

    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* The inherited handle is inert: no writes into the parent's page,
         * no unlink. The child may open its own page. */
        vyre_telemetry_kernel_record k = {.name = "child"};
        if (vyre_telemetry_publish(t) != VYRE_OK || vyre_telemetry_add_kernel(t, &k) != VYRE_OK)
            _exit(10);
        if (vyre_telemetry_maybe_publish(t, UINT64_C(1) << 62) != 0)
            _exit(11);
        vyre__telemetry_close(t);
        if (access(page, F_OK) != 0)
            _exit(12);
        vyre_telemetry *c = NULL;
        if (vyre__telemetry_open(&c, NULL) != VYRE_OK || !c)
            _exit(13);
        vyre__telemetry_close(c);
        vyre_telemetry *cg = vyre_telemetry_global(NULL);
        if (!cg)
            _exit(14);
        _exit(0);
    }
    cr_assert_eq(wait_child(pid), 0);
    static vyre_telemetry_snapshot s;
    cr_assert_eq(vyre__telemetry_read(page, &s, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(s.publish_count, 1, "the child did not publish into our page");
    cr_assert_eq(s.kernels_total, 0);
    vyre__telemetry_close(t);
}

Test(telemetry, a_version_1_page_is_still_read_and_reported_as_such, .init = hostile_setup,
     .fini = teardown_dir)
{
    unsigned char *good = good_page();
    vyre__tel_v1_page *v1 = tu_tel_v1_page(good);
    static vyre_telemetry_snapshot s, cur;
    vyre_error e = {0};
    cr_assert_eq(read_image(good, PAGE_SIZE_CUR, &cur, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(cur.layout_version, VYRE_TELEMETRY_LAYOUT_VERSION);

    cr_assert_eq(read_image((const unsigned char *)v1, sizeof *v1, &s, &e), VYRE_OK, "%s",
                 e.message);
    cr_assert_eq(s.layout_version, 1);
    cr_assert_eq(s.pid, cur.pid);
    cr_assert_str_eq(s.exe, cur.exe);
    cr_assert_eq(s.n_kernels, 3);
    cr_assert_eq(s.n_kernels, cur.n_kernels);
    cr_assert_str_eq(s.kernels[2].name, "reduce");
    cr_assert_eq(s.counters.v[0], cur.counters.v[0]);
    const vyre_range_hist *h = &s.counters.ranges[0];
    cr_assert_eq(h->count, 10);
    cr_assert_eq(h->max_ns, 12950);
    uint64_t n = 0;
    for (int b = 0; b < VYRE_HIST_BUCKETS; b++) {
        n += h->buckets[b];
        if (h->buckets[b])
            cr_assert(vyre__hist_bucket_lo(b) >= 8192 && vyre__hist_bucket_lo(b) < 16384,
                      "bucket %d outside the log2 bucket", b);
    }
    cr_assert_eq(n, 10, "every v1 sample lands in a v2 bucket");
    uint64_t p50 = vyre_range_hist_quantile(h, 0.5);
    cr_assert(p50 >= 8192 && p50 <= 12950, "p50 %llu", (unsigned long long)p50);
    cr_assert_eq(vyre_range_hist_quantile(h, 1.0), 12950);

    /* The parser (fuzzer path) reads it the same way. */
    memset(&s, 0, sizeof s);
    cr_assert_eq(vyre__telemetry_parse("v1", v1, sizeof *v1, getuid(), &s, &e), VYRE_OK, "%s",
                 e.message);
    cr_assert_eq(s.layout_version, 1);
    cr_assert_eq(s.counters.ranges[0].count, 10);

    /* Hostile version 1 pages are still refused. */
    expect((const unsigned char *)v1, sizeof *v1 - 1, VYRE_ECORRUPT, "short v1",
           "layout version 1 pages are");
    unsigned char *big = calloc(1, PAGE_SIZE_CUR);
    cr_assert_not_null(big);
    memcpy(big, v1, sizeof *v1);
    expect(big, PAGE_SIZE_CUR, VYRE_ECORRUPT, "v1 at the v2 size", "layout version 1 pages are");
    free(big);
    v1->h.header_size = 12351;
    expect((const unsigned char *)v1, sizeof *v1, VYRE_ECORRUPT, "v1 bad header size",
           "declares sizes");
    v1->h.header_size = sizeof(vyre__tel_v1_header);
    v1->h.hist_buckets = 41;
    expect((const unsigned char *)v1, sizeof *v1, VYRE_ECORRUPT, "v1 bad buckets", "out of range");
    free(v1);
    free(good);
}
