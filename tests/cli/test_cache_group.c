/*
 * test_cache_group.c - a pipeline cache shared by a group (issue 12, point
 * 5), with two real users of one group: the test creates them (groupadd,
 * useradd), makes a setgid group-writable cache directory (chmod 2775), and
 * runs the library (forked children) and the real vyre-cachectl (exec'd)
 * as each user: A puts, B gets A's blob and puts another while A still has
 * the index open, both list, verify and prune. Every file and directory the
 * cache created must be group-readable and -writable (0664 / 2775), the
 * SQLite -wal and -shm included. The refusals: world-writable without the
 * sticky bit, another user's directory without the group setup, a group
 * directory of a group the user is not in, and a group directory opened
 * without a umask that allows group writes.
 *
 * Issue 22, point 1: a member who writes remote_storage with another
 * member's token file into the cache's vyre.conf gets nothing sent.
 *
 * Needs root (CI runs as root) and the shadow tools; skipped with the
 * reason otherwise. Users and group are removed again in .fini and, should
 * the worker exit first, at exit.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_bin[700];   /* vyre-cachectl copied where the test users may run it */
static char g_cache[700]; /* the group cache */
static char g_group[32], g_user_a[32], g_user_b[32], g_user_c[32];
static uid_t g_uid_a, g_uid_b, g_uid_c;
static gid_t g_gid, g_gid_c;
static int g_made_group, g_made_a, g_made_b, g_made_c;
static pid_t g_owner_pid;
static pid_t g_child; /* a test user's process still running, if any */

/* Runs a shadow tool quietly; its exit status. Retried a while: tests run
 * in parallel workers, and the tools fail while another holds the lock on
 * /etc/passwd. */
static int run_once(char *const argv[]);
static int run_quiet(char *const argv[])
{
    int rc = -1;
    for (int i = 0; i < 50 && rc != 0; i++) {
        if (i)
            usleep(100 * 1000);
        rc = run_once(argv);
    }
    return rc;
}

static int run_once(char *const argv[])
{
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
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *tool(const char *name)
{
    static char buf[4][64];
    static int n;
    const char *dirs[] = {"/usr/sbin", "/sbin", "/usr/bin"};
    for (size_t i = 0; i < 3; i++) {
        char *b = buf[n++ % 4];
        snprintf(b, 64, "%s/%s", dirs[i], name);
        if (access(b, X_OK) == 0)
            return b;
    }
    return NULL;
}

static void remove_accounts(void)
{
    if (getpid() != g_owner_pid)
        return; /* a forked child never removes its parent's accounts */
    if (g_child > 0) {
        /* userdel refuses a user with a running process. */
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = 0;
    }
    char *userdel = tool("userdel"), *groupdel = tool("groupdel");
    struct {
        int *made;
        char *name;
    } users[] = {{&g_made_a, g_user_a}, {&g_made_b, g_user_b}, {&g_made_c, g_user_c}};
    for (size_t i = 0; i < 3; i++) {
        if (*users[i].made && userdel) {
            run_quiet((char *const[]){userdel, users[i].name, NULL});
            *users[i].made = 0;
        }
    }
    if (g_made_group && groupdel) {
        run_quiet((char *const[]){groupdel, g_group, NULL});
        g_made_group = 0;
    }
}

static void add_user(char *name, char *group, int *made, uid_t *uid, gid_t *gid)
{
    char *useradd = tool("useradd");
    char m[] = "-M", nn[] = "-N", g[] = "-g", sh[] = "-s", f[] = "/bin/false";
    int rc = run_quiet((char *const[]){useradd, m, nn, g, group, sh, f, name, NULL});
    cr_assert_eq(rc, 0, "useradd %s failed (%d)", name, rc);
    *made = 1;
    struct passwd *pw = getpwnam(name);
    cr_assert_not_null(pw, "getpwnam(%s)", name);
    *uid = pw->pw_uid;
    if (gid)
        *gid = pw->pw_gid;
}

/* 1 when every directory above path lets others search it. */
static int reachable(const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = strrchr(p, '/'); s && s != p; s = strrchr(p, '/')) {
        *s = '\0';
        struct stat st;
        if (stat(p, &st) != 0 || !(st.st_mode & S_IXOTH))
            return 0;
    }
    return 1;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    size_t len = 0;
    char *data = tu_read_file(from, &len);
    cr_assert_not_null(data, "read %s", from);
    tu_write_file(to, data, len);
    free(data);
    cr_assert_eq(chmod(to, mode), 0);
}

/* Copies the shared libraries of bin that others may not read (a system
 * where, say, libm.so.6 is 0700) next to the copy in dir, which run_as
 * puts in LD_LIBRARY_PATH. */
static void copy_private_libs(const char *bin, const char *dir)
{
    char cmd[900];
    snprintf(cmd, sizeof cmd, "ldd '%s' 2>/dev/null", bin);
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *arrow = strstr(line, "=> /");
        if (!arrow)
            continue;
        char *path = arrow + 3, *end = strstr(path, " (");
        if (!end)
            continue;
        *end = '\0';
        struct stat st;
        if (stat(path, &st) != 0 || (st.st_mode & S_IROTH))
            continue;
        const char *base = strrchr(path, '/') + 1;
        char to[900];
        snprintf(to, sizeof to, "%s/%s", dir, base);
        copy_file(path, to, 0755);
    }
    pclose(f);
}

static void setup(void)
{
    g_owner_pid = getpid();
    if (geteuid() != 0)
        cr_skip_test("needs root to create the two test users (CI runs as root)");
    if (!tool("useradd") || !tool("userdel") || !tool("groupadd") || !tool("groupdel"))
        cr_skip_test("needs useradd, userdel, groupadd and groupdel (package passwd)");
    atexit(remove_accounts);

    tu_mkdtemp(g_tmp, sizeof g_tmp);
    if (!reachable(g_tmp)) {
        /* TMPDIR below a private directory: the users could not reach it. */
        tu_rm_rf(g_tmp);
        snprintf(g_tmp, sizeof g_tmp, "/tmp/vyre-group-XXXXXX");
        cr_assert_not_null(mkdtemp(g_tmp), "mkdtemp: %s", strerror(errno));
    }
    cr_assert_eq(chmod(g_tmp, 0755), 0);
    /* The build tree may be private (a 0700 home or work directory): the
     * users run a copy. vyre-cachectl links libvyrecore statically. */
    char bindir[600];
    snprintf(bindir, sizeof bindir, "%s/bin", g_tmp);
    cr_assert_eq(mkdir(bindir, 0755), 0);
    snprintf(g_bin, sizeof g_bin, "%s/vyre-cachectl", bindir);
    copy_file(VYRE_CACHECTL_BIN, g_bin, 0755);
    copy_private_libs(VYRE_CACHECTL_BIN, bindir);

    unsigned tag = (unsigned)getpid() % 100000;
    snprintf(g_group, sizeof g_group, "vyreg%u", tag);
    snprintf(g_user_a, sizeof g_user_a, "vyrea%u", tag);
    snprintf(g_user_b, sizeof g_user_b, "vyreb%u", tag);
    snprintf(g_user_c, sizeof g_user_c, "vyrec%u", tag);
    int rc = run_quiet((char *const[]){tool("groupadd"), g_group, NULL});
    cr_assert_eq(rc, 0, "groupadd %s failed (%d)", g_group, rc);
    g_made_group = 1;
    struct group *gr = getgrnam(g_group);
    cr_assert_not_null(gr);
    g_gid = gr->gr_gid;
    add_user(g_user_a, g_group, &g_made_a, &g_uid_a, NULL);
    add_user(g_user_b, g_group, &g_made_b, &g_uid_b, NULL);
    /* C is in another group (users, or the group of nobody). */
    struct group *other = getgrnam("users");
    if (!other)
        other = getgrnam("nogroup");
    cr_assert_not_null(other, "no 'users' or 'nogroup' group for the outsider");
    add_user(g_user_c, other->gr_name, &g_made_c, &g_uid_c, &g_gid_c);

    /* The team's cache: owned by A, group-writable, setgid. */
    snprintf(g_cache, sizeof g_cache, "%s/team-cache", g_tmp);
    cr_assert_eq(mkdir(g_cache, 0700), 0);
    cr_assert_eq(chown(g_cache, g_uid_a, g_gid), 0);
    cr_assert_eq(chmod(g_cache, 02775), 0);
}

static void teardown(void)
{
    remove_accounts();
    if (g_tmp[0])
        tu_rm_rf(g_tmp);
}

TestSuite(cache_group, .init = setup, .fini = teardown, .timeout = 120);

/* Drops to uid (primary group gid, supplementary groups: gid only), in a
 * child. */
static int become(uid_t uid, gid_t gid)
{
    if (setgroups(1, &gid) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
        return -1;
    return 0;
}

/* Runs vyre-cachectl as uid:gid with the args; umask NULL: VYRE_CACHE_UMASK
 * unset. */
static void run_as(tu_proc *p, uid_t uid, gid_t gid, const char *umask, const char *const *args)
{
    char out_path[600], err_path[600];
    snprintf(out_path, sizeof out_path, "%s/out.txt", g_tmp);
    snprintf(err_path, sizeof err_path, "%s/err.txt", g_tmp);
    int ofd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int efd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(ofd >= 0 && efd >= 0);
    char *argv[32];
    size_t n = 0;
    argv[n++] = g_bin;
    static char argbuf[31][800];
    for (size_t i = 0; args[i] && n < 31; i++) {
        snprintf(argbuf[n], sizeof argbuf[n], "%s", args[i]);
        argv[n] = argbuf[n];
        n++;
    }
    argv[n] = NULL;
    char um[64], home[600], path[] = "PATH=/usr/bin:/bin", libs[800];
    snprintf(libs, sizeof libs, "LD_LIBRARY_PATH=%s/bin", g_tmp);
    snprintf(um, sizeof um, "VYRE_CACHE_UMASK=%s", umask ? umask : "");
    snprintf(home, sizeof home, "HOME=%s/nohome", g_tmp);
    char *env[16];
    size_t m = 0;
    env[m++] = home;
    env[m++] = path;
    env[m++] = libs;
    if (umask)
        env[m++] = um;
    const char *pass[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
    char passed[3][512];
    for (size_t i = 0; i < 3; i++) {
        const char *v = getenv(pass[i]);
        if (v) {
            snprintf(passed[i], sizeof passed[i], "%s=%s", pass[i], v);
            env[m++] = passed[i];
        }
    }
    env[m] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(ofd, 1);
        dup2(efd, 2);
        if (become(uid, gid) != 0) {
            dprintf(2, "cannot become uid %u: %s\n", (unsigned)uid, strerror(errno));
            _exit(126);
        }
        execve(g_bin, argv, env);
        dprintf(2, "cannot run %s: %s\n", g_bin, strerror(errno));
        _exit(127);
    }
    close(ofd);
    close(efd);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    p->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    p->out = tu_read_file(out_path, NULL);
    p->err = tu_read_file(err_path, NULL);
    cr_assert(p->out && p->err);
}

#define AS(p, uid, gid, umask, ...)                                                                \
    run_as((p), (uid), (gid), (umask), (const char *const[]){__VA_ARGS__, NULL})

static vyre_key key_of(unsigned char b)
{
    vyre_key k;
    memset(&k, b, sizeof k);
    return k;
}

/* In a forked child as uid:gid: opens the cache with umask (-1: not set)
 * and puts the blob of key byte `put` (0: none) after getting `get` (0:
 * none; it must be a hit). hold_fd >= 0: then writes one byte to it and
 * waits for release_fd to close before closing the cache (so that another
 * user works while this one has the index open). Exit 0 on success, else
 * the step that failed, with the error on stderr. */
static pid_t lib_child(uid_t uid, gid_t gid, int umask, unsigned char get, unsigned char put,
                       int hold_fd, int release_fd, int close_fd1, int close_fd2)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The parent's ends: the release pipe must reach EOF when the parent
     * closes (or dies). */
    if (close_fd1 >= 0)
        close(close_fd1);
    if (close_fd2 >= 0)
        close(close_fd2);
    /* Never outlive the test's worker. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (become(uid, gid) != 0)
        _exit(10);
    vyre_cache_open_opts o;
    vyre_cache_open_opts_init(&o);
    o.umask = umask;
    vyre_cache *c = NULL;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_cache_open(g_cache, &o, &c, &err) != 0) {
        fprintf(stderr, "open as uid %u: %s (%s)\n", (unsigned)uid, err.message, err.hint);
        _exit(11);
    }
    if (get) {
        vyre_key k = key_of(get);
        vyre_blob *b = NULL;
        if (vyre_cache_get(c, &k, &b, NULL, &err) != 0) {
            fprintf(stderr, "get as uid %u: %s\n", (unsigned)uid, err.message);
            _exit(12);
        }
        vyre_blob_free(b);
    }
    if (put) {
        vyre_blob_header h;
        memset(&h, 0, sizeof h);
        h.key = key_of(put);
        h.kind = VYRE_BLOB_CUBIN;
        snprintf(h.arch, sizeof h.arch, "sm_90");
        snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0");
        char payload[500];
        memset(payload, put, sizeof payload);
        if (vyre_cache_put(c, &h, payload, sizeof payload, &err) != 0) {
            fprintf(stderr, "put as uid %u: %s\n", (unsigned)uid, err.message);
            _exit(13);
        }
        if (vyre__cache_flush(c, &err) != 0) {
            fprintf(stderr, "flush as uid %u: %s\n", (unsigned)uid, err.message);
            _exit(14);
        }
    }
    if (hold_fd >= 0) {
        char one = 1, buf;
        if (write(hold_fd, &one, 1) != 1)
            _exit(15);
        while (read(release_fd, &buf, 1) > 0) {
        }
    }
    vyre_cache_close(c);
    _exit(0);
}

static void wait_ok(pid_t pid, const char *what)
{
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (status %d)", what, st);
}

/* The mode (with setgid and sticky) and group of path; -1 when missing. */
static int mode_of(const char *rel, gid_t *gid)
{
    char p[900];
    snprintf(p, sizeof p, "%s/%s", g_cache, rel);
    struct stat st;
    if (lstat(p, &st) != 0)
        return -1;
    if (gid)
        *gid = st.st_gid;
    return (int)(st.st_mode & 07777);
}

static void assert_mode(const char *rel, int want)
{
    gid_t gid = 0;
    int m = mode_of(rel, &gid);
    cr_assert_eq(m, want, "%s: mode %04o, expected %04o", rel, (unsigned)m, (unsigned)want);
    cr_assert_eq(gid, g_gid, "%s: group %u, expected the cache's %u", rel, (unsigned)gid,
                 (unsigned)g_gid);
}

static void blob_rel(unsigned char b, char *out, size_t size)
{
    vyre_key k = key_of(b);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    snprintf(out, size, "blobs/%.2s/%s.vblob", hex, hex);
}

Test(cache_group, two_users_share_one_cache)
{
    gid_t gid_a = g_gid, gid_b = g_gid;
    /* A seeds; the index stays open while B works (B then uses A's -wal and
     * -shm, as two users' programs running at once would). */
    int hold[2], release[2];
    cr_assert_eq(pipe2(hold, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(release, O_CLOEXEC), 0);
    pid_t a = lib_child(g_uid_a, gid_a, 002, 0, 0xa1, hold[1], release[0], hold[0], release[1]);
    g_child = a;
    close(hold[1]);
    close(release[0]);
    char buf;
    cr_assert_eq(read(hold[0], &buf, 1), 1, "user A could not open and put (see stderr)");
    close(hold[0]);

    char rel_a[200], rel_b[200], shard_a[16];
    blob_rel(0xa1, rel_a, sizeof rel_a);
    blob_rel(0xb2, rel_b, sizeof rel_b);
    snprintf(shard_a, sizeof shard_a, "%.8s", rel_a);
    assert_mode(rel_a, 0664);
    assert_mode(shard_a, 02775);
    assert_mode("blobs", 02775);
    assert_mode("tmp", 02775);
    assert_mode("quarantine", 02775);
    assert_mode("index.sqlite3", 0664);
    assert_mode("lock", 0664);
    /* SQLite gives the -wal and -shm the database's mode (when the index
     * uses WAL; a filesystem without shared memory keeps a rollback
     * journal). */
    cr_log_info("index journal files while user A has the index open: -wal %s, -shm %s",
                mode_of("index.sqlite3-wal", NULL) >= 0 ? "present" : "absent",
                mode_of("index.sqlite3-shm", NULL) >= 0 ? "present" : "absent");
    if (mode_of("index.sqlite3-wal", NULL) >= 0)
        assert_mode("index.sqlite3-wal", 0664);
    if (mode_of("index.sqlite3-shm", NULL) >= 0)
        assert_mode("index.sqlite3-shm", 0664);

    /* B: a hit on A's blob, and a put of its own, A still connected. */
    wait_ok(lib_child(g_uid_b, gid_b, 002, 0xa1, 0xb2, -1, -1, release[1], -1),
            "user B's get and put");
    close(release[1]);
    g_child = 0;
    wait_ok(a, "user A");
    assert_mode(rel_b, 0664);
    char shard_b[16];
    snprintf(shard_b, sizeof shard_b, "%.8s", rel_b);
    assert_mode(shard_b, 02775);
    struct stat st;
    char p[900];
    snprintf(p, sizeof p, "%s/%s", g_cache, rel_b);
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_uid, g_uid_b, "B's blob belongs to B");

    /* Both list, verify, and see two entries, through the real tool. */
    const uid_t uids[] = {g_uid_a, g_uid_b};
    for (size_t i = 0; i < 2; i++) {
        tu_proc t;
        AS(&t, uids[i], g_gid, "002", "--cache-dir", g_cache, "verify");
        cr_assert_eq(t.exit_code, 0, "verify as user %zu: %s%s", i, t.out, t.err);
        tu_proc_free(&t);
        AS(&t, uids[i], g_gid, "002", "--cache-dir", g_cache, "-q", "ls");
        cr_assert_eq(t.exit_code, 0, "ls as user %zu: %s", i, t.err);
        int lines = 0;
        for (const char *q = t.out; *q; q++)
            lines += *q == '\n';
        cr_assert_eq(lines, 2, "ls as user %zu:\n%s", i, t.out);
        tu_proc_free(&t);
        AS(&t, uids[i], g_gid, "002", "--cache-dir", g_cache, "stats");
        cr_assert_eq(t.exit_code, 0, "stats as user %zu: %s", i, t.err);
        tu_proc_free(&t);
    }

    /* A prunes B's blob away (and its own), B verifies what is left. */
    tu_proc t;
    AS(&t, g_uid_a, g_gid, "002", "--cache-dir", g_cache, "prune", "--max-size", "1000B");
    cr_assert_eq(t.exit_code, 0, "prune as A: %s%s", t.out, t.err);
    tu_proc_free(&t);
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "prune", "--max-size", "0");
    cr_assert_eq(t.exit_code, 0, "prune as B: %s%s", t.out, t.err);
    tu_proc_free(&t);
    cr_assert_eq(mode_of(rel_a, NULL), -1, "A's blob should be pruned");
    cr_assert_eq(mode_of(rel_b, NULL), -1, "B's blob should be pruned");
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "verify", "--repair");
    cr_assert_eq(t.exit_code, 0, "verify as B: %s%s", t.out, t.err);
    tu_proc_free(&t);
    AS(&t, g_uid_a, g_gid, "002", "--cache-dir", g_cache, "reindex");
    cr_assert_eq(t.exit_code, 0, "reindex as A: %s%s", t.out, t.err);
    tu_proc_free(&t);
}

/* 1 when text holds needle. */
#define assert_has(text, needle)                                                                   \
    cr_assert(strstr((text), (needle)), "missing '%s' in:\n%s", (needle), (text))

Test(cache_group, refusals)
{
    tu_proc t;
    char msg[4096];

    /* In the group, but no umask that allows group writes: refused, and
     * told how. */
    AS(&t, g_uid_b, g_gid, NULL, "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    snprintf(msg, sizeof msg,
             "cache directory '%s' is set up for a group (mode 2775, group %u) but the cache's "
             "umask (not set) does not allow group writes",
             g_cache, (unsigned)g_gid);
    assert_has(t.err, msg);
    assert_has(t.err, "hint: put 'umask = 002' in ");
    tu_proc_free(&t);
    AS(&t, g_uid_b, g_gid, "022", "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    assert_has(t.err, "but the cache's umask (022) does not allow group writes");
    tu_proc_free(&t);

    /* Not in the group: another user's directory, refused. */
    AS(&t, g_uid_c, g_gid_c, "002", "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    snprintf(msg, sizeof msg, "and shared with group %u, which you (uid %u) are not in",
             (unsigned)g_gid, (unsigned)g_uid_c);
    assert_has(t.err, msg);
    assert_has(t.err, "chmod 2775");
    tu_proc_free(&t);

    /* World-writable without the sticky bit (and with setgid): refused
     * even with the group setup, by its owner too. */
    static const mode_t world[] = {0777, 02777, 03777};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(chmod(g_cache, world[i]), 0);
        AS(&t, g_uid_a, g_gid, "002", "--cache-dir", g_cache, "stats");
        cr_assert_eq(t.exit_code, 2, "mode %04o: %s", (unsigned)world[i], t.out);
        snprintf(msg, sizeof msg,
                 "cache directory '%s' is writable by group or others (mode %04o): refusing to "
                 "load blobs others could plant",
                 g_cache, (unsigned)world[i]);
        assert_has(t.err, msg);
        snprintf(msg, sizeof msg,
                 "hint: run 'chmod go-w %s' (vyre creates it 0700); to share the cache with a "
                 "group instead: 'chgrp GROUP %s && chmod 2775 %s', and 'umask = 002' in "
                 "%s/vyre.conf",
                 g_cache, g_cache, g_cache, g_cache);
        assert_has(t.err, msg);
        tu_proc_free(&t);
    }

    /* Another user's private directory (no group setup): refused for B,
     * umask or not. */
    cr_assert_eq(chmod(g_cache, 0755), 0);
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    snprintf(msg, sizeof msg, "cache directory '%s' is owned by uid %u, not by you (uid %u)",
             g_cache, (unsigned)g_uid_a, (unsigned)g_uid_b);
    assert_has(t.err, msg);
    assert_has(t.err, "chmod 2775");
    tu_proc_free(&t);
    /* Group-writable without setgid: refused too. */
    cr_assert_eq(chmod(g_cache, 0775), 0);
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    assert_has(t.err, "not by you");
    tu_proc_free(&t);

    /* A bad VYRE_CACHE_UMASK is a usage error. */
    cr_assert_eq(chmod(g_cache, 02775), 0);
    AS(&t, g_uid_a, g_gid, "8", "--cache-dir", g_cache, "stats");
    cr_assert_eq(t.exit_code, 2, "%s", t.out);
    assert_has(t.err, "VYRE_CACHE_UMASK: bad value '8' for umask");
    tu_proc_free(&t);
}

/* Issue 22, point 1: Mallory (A, in the group) writes remote_storage with
 * token-file= naming Alice's (B's) token into the shared vyre.conf; Alice
 * uses the cache. Before: her token went to A's listener as a bearer
 * token. Now the setting is refused, naming the file's owner, and the
 * listener gets nothing. */
Test(cache_group, a_members_vyre_conf_cannot_send_another_members_token)
{
    char bhome[600], token[700], conf[800], text[1600];
    snprintf(bhome, sizeof bhome, "%s/alice", g_tmp);
    cr_assert_eq(mkdir(bhome, 0700), 0);
    cr_assert_eq(chown(bhome, g_uid_b, g_gid), 0);
    snprintf(token, sizeof token, "%s/.vault-token", bhome);
    tu_write_file(token, "alices-s3cret-token\n", 20);
    cr_assert_eq(chmod(token, 0600), 0);
    cr_assert_eq(chown(token, g_uid_b, g_gid), 0);
    ts_fault f;
    memset(&f, 0, sizeof f);
    ts_fault_start(&f, TS_FAULT_STATUS_500);
    snprintf(conf, sizeof conf, "%s/vyre.conf", g_cache);
    snprintf(text, sizeof text,
             "umask = 002\nremote_storage = http://127.0.0.1:%d/vyre|token-file=%s\n", f.port,
             token);
    tu_write_file(conf, text, strlen(text));
    cr_assert_eq(chown(conf, g_uid_a, g_gid), 0);
    cr_assert_eq(chmod(conf, 0664), 0);

    tu_proc t;
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "remote", "check");
    cr_assert_eq(t.exit_code, 2, "%s%s", t.out, t.err);
    char want[1200];
    snprintf(want, sizeof want,
             "error: %s:2: remote_storage refused: the file is owned by '%s' (uid %u), not by "
             "you or root\n",
             conf, g_user_a, (unsigned)g_uid_a);
    cr_assert(strstr(t.err, want), "want '%s' in:\n%s", want, t.err);
    cr_assert_null(strstr(t.out, "s3cret"), "%s", t.out);
    cr_assert_null(strstr(t.err, "s3cret"), "%s", t.err);
    tu_proc_free(&t);
    cr_assert_eq(f.requests, 0, "A's listener got %d requests from B", f.requests);
    /* The same file, B's own: the store is contacted (the listener works,
     * so the zero above is the refusal's doing). */
    cr_assert_eq(chown(conf, g_uid_b, g_gid), 0);
    AS(&t, g_uid_b, g_gid, "002", "--cache-dir", g_cache, "remote", "check");
    tu_proc_free(&t);
    cr_assert_gt(f.requests, 0, "B's own file's store was not contacted");
    ts_fault_stop(&f);
}
