/*
 * testutil.c - see testutil.h.
 */
#include "testutil.h"

#include "vyre/key.h"
#include "vyre/units.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Every directory tu_mkdtemp made in this process, removed again at exit.
 * A suite's .fini removes its directory on the normal path, but
 * cr_skip_test() exits the test's worker process without running .fini
 * (every GPU test on a machine without a GPU), and a fixture may stop
 * half-way; the exit handler catches those. It runs only in the process
 * that made the directories: a forked child that calls exit() leaves its
 * parent's directories alone.
 */
#define TU_DIRS_MAX 64
static char *g_dirs[TU_DIRS_MAX];
static size_t g_n_dirs;
static pid_t g_dirs_pid;

static void rm_dirs_at_exit(void)
{
    if (getpid() != g_dirs_pid)
        return;
    for (size_t i = 0; i < g_n_dirs; i++) {
        tu_rm_rf(g_dirs[i]);
        free(g_dirs[i]);
        g_dirs[i] = NULL;
    }
    g_n_dirs = 0;
}

static void remember_dir(const char *path)
{
    if (g_dirs_pid != getpid()) {
        /* First directory of this process (a forked child inherits the
         * parent's list: those are not its to remove). */
        static int registered;
        if (!registered)
            cr_assert_eq(atexit(rm_dirs_at_exit), 0, "atexit");
        registered = 1;
        for (size_t i = 0; i < g_n_dirs; i++)
            free(g_dirs[i]);
        g_n_dirs = 0;
        g_dirs_pid = getpid();
    }
    cr_assert_lt(g_n_dirs, TU_DIRS_MAX, "more than %d temp directories in one test", TU_DIRS_MAX);
    g_dirs[g_n_dirs] = strdup(path);
    cr_assert_not_null(g_dirs[g_n_dirs]);
    g_n_dirs++;
}

static void mkdtemp_in(char *buf, size_t size, const char *tmp)
{
    int n = snprintf(buf, size, "%s/vyre-test-XXXXXX", tmp);
    cr_assert(n > 0 && (size_t)n < size, "temp path too long");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp(%s): %s", buf, strerror(errno));
    remember_dir(buf);
}

void tu_mkdtemp(char *buf, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    mkdtemp_in(buf, size, tmp && *tmp ? tmp : "/tmp");
}

#define TU_MEM_DIR     "/dev/shm"
#define TU_MEM_NEEDED  (2ull << 30)
#define TU_TMPFS_MAGIC 0x01021994 /* linux/magic.h */

void tu_mkdtemp_mem(char *buf, size_t size)
{
    /* Two bench runs at once (Criterion's jobs) peak near 700 MB there; a
     * container's 64 MB /dev/shm would fail them, so it is not used. */
    struct statfs fs;
    if (statfs(TU_MEM_DIR, &fs) == 0 && fs.f_type == TU_TMPFS_MAGIC &&
        (unsigned long long)fs.f_bavail * (unsigned long long)fs.f_bsize >= TU_MEM_NEEDED &&
        access(TU_MEM_DIR, W_OK | X_OK) == 0) {
        mkdtemp_in(buf, size, TU_MEM_DIR);
        return;
    }
    tu_mkdtemp(buf, size);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    /* Never chmod a link: chmod follows it, and a test's link to "/" or a
     * system file made / mode 0700 on cleanup, after which every test that
     * runs a program as another user failed ("libc.so.6: Permission
     * denied"). */
    if (flag != FTW_SL && flag != FTW_SLN)
        chmod(path, 0700);
    return remove(path);
}

void tu_rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        while (c < *len + n + 1)
            c *= 2;
        *buf = realloc(*buf, c);
        cr_assert_not_null(*buf);
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

void tu_run(tu_proc *p, char *const argv[], const char *const env_set[])
{
    int out[2], err[2];
    cr_assert(pipe(out) == 0 && pipe(err) == 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        for (size_t i = 0; env_set && env_set[i]; i++) {
            const char *eq = strchr(env_set[i], '=');
            if (eq) {
                char name[256];
                size_t nl = (size_t)(eq - env_set[i]);
                if (nl >= sizeof name)
                    _exit(126);
                memcpy(name, env_set[i], nl);
                name[nl] = '\0';
                setenv(name, eq + 1, 1);
            } else {
                unsetenv(env_set[i]);
            }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    memset(p, 0, sizeof *p);
    size_t olen = 0, ocap = 0, elen = 0, ecap = 0;
    append(&p->out, &olen, &ocap, "", 0);
    append(&p->err, &elen, &ecap, "", 0);
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(&p->out, &olen, &ocap, buf, (size_t)n);
            } else {
                append(&p->err, &elen, &ecap, buf, (size_t)n);
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    p->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void tu_run_bin(tu_proc *p, const char *bin, const char *const *args, const char *const *env,
                const char *const *extra)
{
    char *argv[TU_ARGS_MAX + 1];
    size_t n = 0;
    argv[n++] = strdup(bin);
    for (size_t i = 0; args && args[i]; i++) {
        cr_assert_lt(n, TU_ARGS_MAX, "too many arguments for tu_run_bin");
        argv[n++] = strdup(args[i]);
    }
    argv[n] = NULL;
    const char *envs[TU_ENV_SET_MAX + 1];
    size_t m = 0;
    for (size_t i = 0; env && env[i]; i++) {
        cr_assert_lt(m, TU_ENV_SET_MAX, "too many environment changes for tu_run_bin");
        envs[m++] = env[i];
    }
    for (size_t i = 0; extra && extra[i]; i++) {
        cr_assert_lt(m, TU_ENV_SET_MAX, "too many environment changes for tu_run_bin");
        envs[m++] = extra[i];
    }
    envs[m] = NULL;
    tu_run(p, argv, envs);
    for (size_t i = 0; i < n; i++)
        free(argv[i]);
}

int tu_has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

int tu_count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

long long tu_db_int(const char *path, const char *sql)
{
    sqlite3 *raw = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "%s", path);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(raw, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(raw));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return v;
}

void tu_proc_free(tu_proc *p)
{
    free(p->out);
    free(p->err);
    p->out = p->err = NULL;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    char chunk[8192];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
        append(&buf, &n, &cap, chunk, r);
    fclose(f);
    if (!buf)
        append(&buf, &n, &cap, "", 0);
    if (len)
        *len = n;
    return buf;
}

void tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "fopen(%s): %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

void tu_env_save(tu_env *e, const char *const *names, size_t n)
{
    cr_assert_leq(n, TU_ENV_MAX, "too many variables to save");
    e->names = names;
    e->n = n;
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        e->was_set[i] = v != NULL;
        e->saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
}

void tu_env_restore(tu_env *e)
{
    for (size_t i = 0; i < e->n; i++) {
        if (e->was_set[i])
            setenv(e->names[i], e->saved[i], 1);
        else
            unsetenv(e->names[i]);
        free(e->saved[i]);
        e->saved[i] = NULL;
    }
    e->n = 0;
}

/* LeakSanitizer reads this at exit; one definition for every test binary.
 * - libcupti 13.0 keeps a few small allocations for the process's lifetime
 *   (seen from cuLaunchKernel and cuMemcpy*Async under capture): CUPTI's,
 *   not ours.
 * - Criterion 2.4.1's runner process (not a test: tests run in BoxFort
 *   workers, which carry BXFI_MAP in their environment) sometimes leaks a
 *   48-byte timeout request from its own timer code (calloc at
 *   libcriterion.so.3+0x1a332, seen under load), which failed whole suites
 *   that had passed every test. That suppression is the runner's only: a
 *   leak in a worker, where the tests run, is still reported (checked with
 *   a deliberately leaking test). */
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void)
{
    return getenv("BXFI_MAP") ? "leak:libcupti.so\n" : "leak:libcupti.so\nleak:libcriterion.so\n";
}

void tu_copy_tree(const char *src, const char *dst)
{
    cr_assert_eq(mkdir(dst, 0700), 0, "%s", dst);
    DIR *d = opendir(src);
    cr_assert(d, "%s", src);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char s[1300], t[1300];
        snprintf(s, sizeof s, "%s/%s", src, e->d_name);
        snprintf(t, sizeof t, "%s/%s", dst, e->d_name);
        struct stat st;
        cr_assert_eq(stat(s, &st), 0, "%s", s);
        if (S_ISDIR(st.st_mode)) {
            tu_copy_tree(s, t);
            continue;
        }
        size_t len;
        char *data = tu_read_file(s, &len);
        cr_assert(data, "%s", s);
        tu_write_file(t, data, len);
        free(data);
    }
    closedir(d);
}

static struct timespec g_age_times[2];

static int age_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    cr_assert_eq(utimensat(AT_FDCWD, path, g_age_times, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
    return 0;
}

void tu_age_tree(const char *path, int64_t seconds)
{
    clock_gettime(CLOCK_REALTIME, &g_age_times[0]);
    g_age_times[0].tv_sec -= (time_t)seconds;
    g_age_times[1] = g_age_times[0];
    /* Depth first: a folder's times are set after its entries'. */
    cr_assert_eq(nftw(path, age_one, 16, FTW_PHYS | FTW_DEPTH), 0, "%s", path);
}

uint64_t tu_disk_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    uint64_t sum = (uint64_t)st.st_blocks * 512;
    if (!S_ISDIR(st.st_mode))
        return sum;
    DIR *d = opendir(path);
    cr_assert(d, "%s", path);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        sum += tu_disk_bytes(p);
    }
    closedir(d);
    return sum;
}

uint64_t tu_du_sk(const char *path)
{
    tu_proc p;
    /* Through sh, so that du is found on PATH. */
    char sh[] = "/bin/sh", c[] = "-c", script[] = "exec du -sk \"$1\"", name[] = "sh";
    char *const argv[] = {sh, c, script, name, (char *)(uintptr_t)path, NULL};
    tu_run(&p, argv, NULL);
    cr_assert_eq(p.exit_code, 0, "du -sk '%s': %s", path, p.err);
    char *end = NULL;
    unsigned long long kib = strtoull(p.out, &end, 10);
    cr_assert(end && end != p.out && (*end == '\t' || *end == ' '), "du -sk '%s' said '%s'", path,
              p.out);
    tu_proc_free(&p);
    return (uint64_t)kib;
}

const char *tu_size_text(uint64_t bytes)
{
    static char buf[8][32];
    static unsigned next;
    char *s = buf[next++ % 8];
    vyre_format_size(bytes, s, sizeof buf[0]);
    return s;
}

const char *tu_text(const char *fmt, ...)
{
    static char buf[8][512];
    static unsigned next;
    char *s = buf[next++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof buf[0], fmt, ap);
    va_end(ap);
    return s;
}

uint64_t tu_blobs_disk(const char *cache)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/blobs", cache);
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    uint64_t sum = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char shard[1400];
        struct stat st;
        snprintf(shard, sizeof shard, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || lstat(shard, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        DIR *sd = opendir(shard);
        cr_assert(sd, "%s", shard);
        for (struct dirent *f; (f = readdir(sd));) {
            size_t n = strlen(f->d_name);
            if (n != VYRE_KEY_HEX_LEN + 6 || strcmp(f->d_name + VYRE_KEY_HEX_LEN, ".vblob"))
                continue;
            char p[1800];
            snprintf(p, sizeof p, "%s/%s", shard, f->d_name);
            sum += tu_disk_bytes(p);
        }
        closedir(sd);
    }
    closedir(d);
    return sum;
}

int tu_http_answer(int fd, int ms, char *body, size_t size)
{
    char buf[65536];
    size_t len = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - t0.tv_sec) * 1000L + (now.tv_nsec - t0.tv_nsec) / 1000000L;
        int left = (int)(ms - spent);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf - 1)
            break;
    }
    close(fd);
    buf[len] = '\0';
    body[0] = '\0';
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return 0;
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, size, "%s", b ? b + 4 : "");
    return status;
}
