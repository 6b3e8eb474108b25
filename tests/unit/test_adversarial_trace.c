/*
 * test_adversarial_trace.c - telemetry pages under attack: a directory or a
 * page belonging to another user, pages truncated and extended while a
 * reader loops, FIFOs, sockets and symlinks where a page or the directory
 * is expected. Each case states its expected outcome; every case checks
 * that nothing outside its own temp folder changed and that nothing hung or
 * crashed (a crash is a failed test; a hang ends at ctest's timeout).
 *
 * Cases that need another user (chown) run as root, as CI does, with uid
 * and gid 65534 (nobody); elsewhere they skip with that reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"
#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "vyre/telemetry.h"

#define NOBODY    65534
#define PAGE_SIZE sizeof(vyre__tel_page)

static char g_dir[PATH_MAX]; /* the test's folder */
static char g_tel[PATH_MAX]; /* g_dir/tel: VYRE_TELEMETRY_DIR */
static vyre_telemetry_snapshot g_snap;

static void join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < size, "path too long");
}

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    join(g_tel, sizeof g_tel, g_dir, "tel");
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_tel, 1), 0);
    unsetenv("VYRE_TELEMETRY");
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

/* No Criterion .timeout here or in adversarial_results: with suite timeouts
 * on both, libcriterion 2.4.1's runner leaked 48 bytes (LeakSanitizer fails
 * test_unit) when their tests overlapped others under -j2. */
TestSuite(adversarial_telemetry, .init = setup, .fini = teardown);

static void need_root(void)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give a file to another user (uid %d); CI runs as root", NOBODY);
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    cr_assert(fd >= 0, "open(%s): %s", path, strerror(errno));
    cr_assert_eq(fchmod(fd, mode), 0);
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    cr_assert_eq(close(fd), 0);
}

/* A valid page image made by the real writer (2 kernels, one publish),
 * with its pid and uid set as asked. The caller frees it. */
static unsigned char *good_image(int32_t pid, uint32_t uid)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    for (int i = 0; i < 2; i++) {
        vyre_telemetry_kernel_record k = {.name = "gemm", .grid = {8, 1, 1}, .block = {256, 1, 1}};
        cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    }
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    char path[PATH_MAX], name[64];
    snprintf(name, sizeof name, "%d.vtel", (int)getpid());
    join(path, sizeof path, g_tel, name);
    size_t len = 0;
    unsigned char *img = (unsigned char *)tu_read_file(path, &len);
    cr_assert_not_null(img);
    cr_assert_eq(len, PAGE_SIZE);
    vyre__telemetry_close(t);
    cr_assert_neq(access(path, F_OK), 0, "close removed our page");
    ((vyre__tel_header *)(void *)img)->pid = pid;
    ((vyre__tel_header *)(void *)img)->uid = uid;
    return img;
}

/* Reads path and checks the code, that the message names the problem and
 * that a hint comes with it. */
static void expect_read(const char *path, int code, const char *in_message)
{
    vyre_error e = {0};
    memset(&g_snap, 0x5a, sizeof g_snap);
    int rc = vyre__telemetry_read(path, &g_snap, &e);
    cr_assert_eq(rc, code, "read '%s': got %s (%s), want %s", path, vyre_err_name(rc), e.message,
                 vyre_err_name(code));
    if (code == VYRE_OK)
        return;
    cr_assert_not_null(strstr(e.message, in_message), "message '%s' lacks '%s'", e.message,
                       in_message);
    cr_assert_neq(e.hint[0], '\0', "no hint with '%s'", e.message);
    cr_assert_eq(g_snap.pid, 0, "the snapshot is zeroed on failure");
}

static size_t count_entries(const char *dir)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    unsigned long n = 0;
    cr_assert_eq(fscanf(p, "%lu", &n), 1);
    pclose(p);
    return n;
}

/* ---- the directory belongs to someone else ----------------------------- */

/* Expected: a publisher refuses it (EUNSAFE, "owned by uid 65534", a hint to
 * remove it, not to chown it) and creates nothing in it; the reader reports
 * it (list and reap EUNSAFE) and reads none of its pages, even a valid one
 * of ours; nothing in it is removed. */
Test(adversarial_telemetry, directory_precreated_by_another_user_is_refused)
{
    need_root();
    char other[PATH_MAX], page[PATH_MAX];
    join(other, sizeof other, g_dir, "planted");
    cr_assert_eq(mkdir(other, 0700), 0);
    unsigned char *img = good_image(1, 0);
    join(page, sizeof page, other, "1.vtel");
    write_file(page, img, PAGE_SIZE, 0600); /* ours, valid: the directory decides */
    cr_assert_eq(chown(other, NOBODY, NOBODY), 0);
    setenv("VYRE_TELEMETRY_DIR", other, 1);

    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "owned by uid 65534, not by you"), "%s", e.message);
    cr_assert_not_null(strstr(e.hint, "remove it"), "%s", e.hint);
    cr_assert_eq(count_entries(other), 1, "the publisher created nothing there");

    vyre_telemetry_entry *v = NULL;
    size_t n = 0;
    cr_assert_eq(vyre__telemetry_list(other, &v, &n, &e), VYRE_EUNSAFE);
    cr_assert_null(v);
    cr_assert_eq(n, 0);
    cr_assert_not_null(strstr(e.message, "owned by uid 65534"), "%s", e.message);
    expect_read(page, VYRE_EUNSAFE, "owned by uid 65534");
    size_t removed = 99;
    cr_assert_eq(vyre_telemetry_reap(other, &removed, &e), VYRE_EUNSAFE);
    cr_assert_eq(removed, 0);
    cr_assert_eq(access(page, F_OK), 0, "reap removed nothing");

    /* The global page fails the same way and remembers why. */
    cr_assert_null(vyre_telemetry_global(&e));
    cr_assert_eq(e.code, VYRE_EUNSAFE);
    free(img);
}

/* Expected: a directory of ours that others may write is refused; root's
 * sticky directories (as /dev/shm) are accepted, since others can add files
 * there but not remove or rename ours; another user's sticky directory is
 * refused. */
Test(adversarial_telemetry, writable_and_sticky_directories)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(chmod(g_tel, 0777), 0);
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "writable by group or others (mode 0777)"), "%s",
                       e.message);
    cr_assert_not_null(strstr(e.hint, "chmod go-w"), "%s", e.hint);
    cr_assert_eq(count_entries(g_tel), 0);

    need_root();
    cr_assert_eq(chmod(g_tel, 01777), 0); /* root's, sticky */
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char page[PATH_MAX], name[64];
    snprintf(name, sizeof name, "%d.vtel", (int)getpid());
    join(page, sizeof page, g_tel, name);
    expect_read(page, VYRE_OK, "");
    cr_assert_eq(g_snap.pid, getpid());
    vyre__telemetry_close(t);

    cr_assert_eq(chown(g_tel, NOBODY, NOBODY), 0); /* nobody's, sticky */
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "owned by uid 65534"), "%s", e.message);
}

/* ---- a page belongs to someone else ------------------------------------- */

/* Decision (documented in vyre/telemetry.h): a page is read only by its
 * owner. A page of uid 65534 whose layout validates, its header uid
 * matching the file's owner, is still refused: a valid layout says nothing
 * about who wrote the numbers. Expected: EUNSAFE "belongs to uid 65534", a
 * hint; the same bytes parse cleanly (so the refusal is about the owner);
 * list shows the name, reap leaves it. */
Test(adversarial_telemetry, page_owned_by_another_user_is_not_trusted)
{
    need_root();
    unsigned char *img = good_image(1, NOBODY);
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_parse("image", img, PAGE_SIZE, NOBODY, &g_snap, &e), VYRE_OK,
                 "the layout validates: %s", e.message);
    cr_assert_eq(g_snap.uid, NOBODY);
    cr_assert_eq(g_snap.n_kernels, 2);

    char page[PATH_MAX];
    join(page, sizeof page, g_tel, "1.vtel");
    write_file(page, img, PAGE_SIZE, 0600);
    cr_assert_eq(chown(page, NOBODY, NOBODY), 0);
    expect_read(page, VYRE_EUNSAFE, "belongs to uid 65534, not to you");

    vyre_telemetry_entry *v = NULL;
    size_t n = 0;
    cr_assert_eq(vyre__telemetry_list(g_tel, &v, &n, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0].pid, 1);
    vyre_free(v);
    size_t removed = 99;
    cr_assert_eq(vyre_telemetry_reap(g_tel, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 0);
    cr_assert_eq(access(page, F_OK), 0);
    free(img);
}

/* ---- a page resized while it is read ------------------------------------ */

#define RESIZE_MS 1000

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Child: for RESIZE_MS, shrinks the page (to nothing, half, one byte short),
 * grows it past its size, and puts the good image back, in a loop. */
static int resizer(const char *path, const unsigned char *img)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 20;
    const off_t sizes[] = {0, (off_t)PAGE_SIZE / 2, (off_t)PAGE_SIZE - 1, (off_t)PAGE_SIZE + 4096};
    int64_t end = mono_ms() + RESIZE_MS;
    unsigned long rounds = 0;
    while (mono_ms() < end) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            if (ftruncate(fd, sizes[i]) != 0)
                return 21;
            if (ftruncate(fd, (off_t)PAGE_SIZE) != 0 ||
                pwrite(fd, img, PAGE_SIZE, 0) != (ssize_t)PAGE_SIZE)
                return 22;
        }
        rounds++;
    }
    close(fd);
    return rounds > 0 ? 0 : 23;
}

/* Expected: every read is OK or an error with a message: ECORRUPT (short,
 * resized, zeroed), or EVERSION/EBUSY for a prefix or sequence number
 * caught half rewritten; never SIGBUS, never a hang. An OK read during the
 * race may hold whatever bytes were there (the resizer does not keep the
 * seqlock protocol), so only its safety is checked. Once the resizing
 * stops the page reads cleanly again. */
Test(adversarial_telemetry, page_truncated_and_extended_while_a_reader_loops)
{
    unsigned char *img = good_image(1, (uint32_t)geteuid());
    char page[PATH_MAX];
    join(page, sizeof page, g_tel, "1.vtel");
    write_file(page, img, PAGE_SIZE, 0600);
    expect_read(page, VYRE_OK, "");

    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(resizer(page, img));

    int counts[64] = {0};
    long reads = 0;
    int status = 0;
    for (;;) {
        vyre_error e = {0};
        int rc = vyre__telemetry_read(page, &g_snap, &e);
        cr_assert(rc == VYRE_OK || rc == VYRE_ECORRUPT || rc == VYRE_EVERSION || rc == VYRE_EBUSY,
                  "read %ld: unexpected %s: %s", reads, vyre_err_name(rc), e.message);
        if (rc != VYRE_OK)
            cr_assert_neq(e.message[0], '\0');
        else
            cr_assert(memchr(g_snap.exe, '\0', sizeof g_snap.exe) &&
                          memchr(g_snap.cmdline, '\0', sizeof g_snap.cmdline) &&
                          g_snap.n_kernels <= VYRE_TELEMETRY_RING_CAPACITY,
                      "an OK read is bounded");
        counts[-rc]++;
        reads++;
        pid_t w = waitpid(pid, &status, WNOHANG);
        cr_assert_geq(w, 0);
        if (w == pid)
            break;
    }
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "resizer failed: status %d", status);
    cr_log_info("resize race: %ld reads: %d ok, %d corrupt, %d version, %d busy", reads, counts[0],
                counts[-VYRE_ECORRUPT], counts[-VYRE_EVERSION], counts[-VYRE_EBUSY]);
    cr_assert_gt(reads, 0);
    expect_read(page, VYRE_OK, "");
    cr_assert_eq(g_snap.n_kernels, 2);
    free(img);
}

/* ---- FIFO, socket and symlink in place of a page ------------------------ */

/* Expected: a FIFO named as a page is refused at once (EUNSAFE, "not a
 * regular file") by a reader and by a publisher whose page name it takes;
 * reap leaves it. */
Test(adversarial_telemetry, fifo_as_a_page_never_hangs)
{
    char page[PATH_MAX], name[64];
    join(page, sizeof page, g_tel, "77.vtel");
    cr_assert_eq(mkfifo(page, 0600), 0);
    expect_read(page, VYRE_EUNSAFE, "not a regular file");
    size_t removed = 99;
    vyre_error e = {0};
    cr_assert_eq(vyre_telemetry_reap(g_tel, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 0);

    snprintf(name, sizeof name, "%d.vtel", (int)getpid());
    join(page, sizeof page, g_tel, name);
    cr_assert_eq(mkfifo(page, 0600), 0);
    vyre_telemetry *t = NULL;
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "not a page of yours"), "%s", e.message);
    struct stat st;
    cr_assert_eq(lstat(page, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "the FIFO is left as it was");
    cr_assert_eq(count_entries(g_tel), 2, "no temp file left behind");
}

/* Expected: a listening socket named as a page is refused at once
 * (EUNSAFE, "not a regular file"); reap leaves it. */
Test(adversarial_telemetry, socket_as_a_page_never_hangs)
{
    char page[PATH_MAX];
    join(page, sizeof page, g_tel, "78.vtel");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(page) >= sizeof sa.sun_path)
        cr_skip_test("temp path '%s' is too long for a socket address (%zu bytes max)", page,
                     sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, page, strlen(page) + 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(s, 0);
    cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0, "bind: %s", strerror(errno));
    cr_assert_eq(listen(s, 1), 0);
    expect_read(page, VYRE_EUNSAFE, "not a regular file");
    size_t removed = 99;
    vyre_error e = {0};
    cr_assert_eq(vyre_telemetry_reap(g_tel, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 0);
    struct stat st;
    cr_assert_eq(lstat(page, &st), 0);
    cr_assert(S_ISSOCK(st.st_mode));
    close(s);
}

/* Expected: a symlink named as a page, pointing at a valid page of ours, is
 * refused (EUNSAFE, "is a symlink"); a publisher whose page name it takes
 * refuses to replace it; the target is never read, written or removed. */
Test(adversarial_telemetry, symlink_as_a_page_is_not_followed)
{
    unsigned char *img = good_image(1, (uint32_t)geteuid());
    char target[PATH_MAX], page[PATH_MAX], name[64];
    join(target, sizeof target, g_dir, "target.vtel");
    write_file(target, img, PAGE_SIZE, 0600);
    join(page, sizeof page, g_tel, "1.vtel");
    cr_assert_eq(symlink(target, page), 0);
    expect_read(page, VYRE_EUNSAFE, "is a symlink");

    snprintf(name, sizeof name, "%d.vtel", (int)getpid());
    join(page, sizeof page, g_tel, name);
    cr_assert_eq(symlink(target, page), 0);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "not a page of yours"), "%s", e.message);
    size_t removed = 99;
    cr_assert_eq(vyre_telemetry_reap(g_tel, &removed, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(removed, 0);

    size_t len = 0;
    char *now = tu_read_file(target, &len);
    cr_assert_not_null(now);
    cr_assert_eq(len, PAGE_SIZE);
    cr_assert_eq(memcmp(now, img, PAGE_SIZE), 0, "the target is unchanged");
    cr_assert_eq(count_entries(g_tel), 2, "only the two symlinks");
    free(now);
    free(img);
}

/* Expected: VYRE_TELEMETRY_DIR naming a symlink to a directory of ours is
 * refused (EUNSAFE, "is a symlink") by publisher and reader alike, and
 * nothing is created in, read from or removed from the target. */
Test(adversarial_telemetry, symlink_as_the_directory_is_not_followed)
{
    unsigned char *img = good_image(1, (uint32_t)geteuid());
    char real[PATH_MAX], link[PATH_MAX], page[PATH_MAX], via[PATH_MAX];
    join(real, sizeof real, g_dir, "real");
    cr_assert_eq(mkdir(real, 0700), 0);
    join(page, sizeof page, real, "1.vtel");
    write_file(page, img, PAGE_SIZE, 0600);
    join(link, sizeof link, g_dir, "link");
    cr_assert_eq(symlink(real, link), 0);
    setenv("VYRE_TELEMETRY_DIR", link, 1);

    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_EUNSAFE);
    cr_assert_null(t);
    cr_assert_not_null(strstr(e.message, "is a symlink"), "%s", e.message);
    cr_assert_neq(e.hint[0], '\0');

    vyre_telemetry_entry *v = NULL;
    size_t n = 0;
    cr_assert_eq(vyre__telemetry_list(NULL, &v, &n, &e), VYRE_EUNSAFE);
    cr_assert_eq(n, 0);
    join(via, sizeof via, link, "1.vtel");
    expect_read(via, VYRE_EUNSAFE, "is a symlink");
    cr_assert_eq(vyre_telemetry_reap(link, NULL, &e), VYRE_EUNSAFE);

    cr_assert_eq(count_entries(real), 1, "nothing created or removed in the target");
    expect_read(page, VYRE_OK, "");
    free(img);
}

/* ---- a writer in another PID namespace --------------------------------- */

/* Expected (issue 22, seen 10): pages written in another PID namespace
 * (a container sharing /dev/shm) carry pids that are not ours. One claims
 * our parent's pid with our parent's real start time: read as ours it is
 * a live process of ours and used to be exported as our parent, NVML's GPU
 * of that pid and all. Another is pid 1 with another start time: read as
 * ours it is "pid reused" and used to count as a stale page and a scrape
 * error. The exporter exports neither (their pid would name the wrong
 * process, or none) and counts them as
 * vyre_exporter_telemetry_pages{state="foreign"}, not as errors; neither
 * page is removed. */
Test(adversarial_telemetry, exporter_skips_and_counts_pages_of_another_pid_namespace)
{
    pid_t parent = getppid();
    uint64_t parent_start = 0, init_start = 0;
    cr_assert_eq(vyre__telemetry_start_time(parent, &parent_start), VYRE_OK);
    cr_assert_eq(vyre__telemetry_start_time(1, &init_start), VYRE_OK);
    unsigned char *img = good_image(parent, (uint32_t)geteuid());
    vyre__tel_header *h = (vyre__tel_header *)(void *)img;
    cr_assert_neq(h->pid_ns_ino, 0, "the writer records its PID namespace");
    h->pid_ns_ino += 1;
    h->start_time = parent_start;
    char far_parent[PATH_MAX], far_init[PATH_MAX], name[64];
    snprintf(name, sizeof name, "%d.vtel", (int)parent);
    join(far_parent, sizeof far_parent, g_tel, name);
    write_file(far_parent, img, PAGE_SIZE, 0600);
    h->pid = 1;
    h->start_time = init_start + 777;
    join(far_init, sizeof far_init, g_tel, "1.vtel");
    write_file(far_init, img, PAGE_SIZE, 0600);

    exp_opts o = {.telemetry_dir = g_tel, .no_gpu = 1, .no_cache = 1, .kernels_top_n = 20};
    exporter *x = NULL;
    cr_assert_eq(exporter_new(&o, &x), 0);
    char *doc = NULL;
    size_t len = 0;
    for (int i = 0; i < 2; i++) {
        free(doc);
        doc = NULL;
        cr_assert_eq(exporter_scrape(x, &doc, &len), 0);
    }
    exporter_free(x);
    cr_assert_not_null(doc);
    char want[64];
    snprintf(want, sizeof want, "pid=\"%d\"", (int)parent);
    cr_assert_null(strstr(doc, want), "a foreign page exported as our parent:\n%s", doc);
    cr_assert_null(strstr(doc, "pid=\"1\""), "a foreign page exported as pid 1:\n%s", doc);
    cr_assert_not_null(strstr(doc, "vyre_exporter_telemetry_pages{state=\"foreign\"} 2\n"), "%s",
                       doc);
    cr_assert_not_null(strstr(doc, "vyre_exporter_telemetry_pages{state=\"stale\"} 0\n"), "%s",
                       doc);
    cr_assert_not_null(
        strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"telemetry\"} 0\n"),
        "not errors:\n%s", doc);
    cr_assert_eq(access(far_parent, F_OK), 0);
    cr_assert_eq(access(far_init, F_OK), 0);
    free(doc);
    free(img);
}
