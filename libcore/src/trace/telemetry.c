/*
 * telemetry.c - the per-process telemetry page: writer (publish, kernel
 * ring) and reader (list, validated consistent read, reap).
 *
 * Guarantees. The writer never aborts and never reads back from the shared
 * page what it uses for indexing (its sequence numbers and ring position are
 * kept privately), so a page scribbled on by someone else cannot make it
 * write out of bounds. The reader trusts nothing in a page or around it:
 * the directory must pass open_dir's checks, the page is opened relative to
 * it without following a symlink or blocking on a FIFO, and must be a
 * regular file of ours (an owner's page only: another user's page is
 * refused even when its layout validates) that nobody else may write. It is
 * never mapped: it is copied with pread (see "reader" below), so a page
 * truncated or extended while it is read is an error, never SIGBUS. Sizes
 * are checked before anything else, every field is read once before it is
 * validated and used, strings must be terminated within their field, and
 * each mutable part is checked with its seqlock.
 *
 * Seqlock protocol (Boehm, "Can seqlocks get along with programming language
 * memory models?", 2012). Writer: seq = s+1 (relaxed); release fence; data
 * stores (relaxed); seq = s+2 (release). Reader: s1 = seq (acquire); data
 * loads (relaxed); acquire fence; s2 = seq (relaxed); the copy is good when
 * s1 == s2 and s1 is even. The release fence orders the odd store before any
 * data store, so a reader that saw any datum of a later publish also sees
 * seq move. Ring slots use the same protocol with seq = 2 * serial.
 */
#include "vyre/telemetry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "trace/telemetry_internal.h"
#include "trace/telemetry_v1.h"

/* Reader retries of the published part before VYRE_EBUSY: the first spin,
 * the rest yield the CPU, then sleep, so a writer stuck odd (it died
 * mid-publish) costs a reader about 10 ms. */
#define READ_TRIES  200
#define READ_SPINS  16
#define READ_YIELDS 64
#define SLOT_TRIES  16

static const char TEL_MAGIC[8] = VYRE__TEL_MAGIC;

/* The layouts this reader knows: 1 (its own frozen copy, telemetry_v1.h),
 * 2 (the current one without the PID namespace) and the current one. */
static int known_version(uint32_t v)
{
    return v == 1 || v == 2 || v == VYRE_TELEMETRY_LAYOUT_VERSION;
}

struct vyre_telemetry {
    vyre__tel_page *page;
    char path[VYRE_TELEMETRY_PATH_MAX];
    dev_t dev; /* of the page file, so close unlinks only our own */
    ino_t ino;
    unsigned fork_gen; /* g_fork_gen when opened: inert in a forked child */
    pthread_mutex_t publish_lock;
    pthread_mutex_t ring_lock;
    uint64_t seq;           /* under publish_lock: the page's seq */
    uint64_t publish_count; /* under publish_lock */
    uint64_t ring_count;    /* under ring_lock: kernels added */
    _Atomic uint64_t last_publish_ns;
};

/* Process-wide state. g_lock serializes open, close and global resolution,
 * and is held across fork (pthread_atfork) so a child never inherits it
 * locked. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static atomic_uint g_fork_gen;
static int g_open_pages;          /* under g_lock: pages open in ... */
static unsigned g_open_pages_gen; /* ... this fork generation */
static _Atomic(vyre_telemetry *) g_global;
static atomic_uint g_global_done; /* fork gen + 1 once resolved */
static int g_global_code;         /* under g_lock */
static vyre_error g_global_err;   /* under g_lock */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g_lock);
}

static void atfork_child(void)
{
    atomic_fetch_add_explicit(&g_fork_gen, 1, memory_order_acq_rel);
    pthread_mutex_unlock(&g_lock);
}

static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static unsigned fork_gen(void)
{
    return atomic_load_explicit(&g_fork_gen, memory_order_acquire);
}

static int usable(const vyre_telemetry *t)
{
    return t && t->fork_gen == fork_gen();
}

/* ---- directory ------------------------------------------------------- */

/* VYRE_TELEMETRY_DIR through secure_getenv: a set-user/group-ID program
 * never writes its page where its caller's environment says. (VYRE_TELEMETRY
 * stays getenv: it can only turn publishing off.) */
static int resolve_dir(char *out, size_t size, int *is_default, vyre_error *err)
{
    const char *env = secure_getenv("VYRE_TELEMETRY_DIR");
    if (env) {
        *is_default = 0;
        if (!*env)
            return vyre__fail(err, VYRE_EENV,
                              "unset VYRE_TELEMETRY_DIR to use /dev/shm/vyre-<uid>, or set it to "
                              "an absolute directory",
                              "VYRE_TELEMETRY_DIR is set but empty");
        if (env[0] != '/')
            return vyre__fail(err, VYRE_EENV, "set VYRE_TELEMETRY_DIR to an absolute path",
                              "VYRE_TELEMETRY_DIR '%s' is not an absolute path", env);
        if (vyre__strlcpy(out, env, size) >= size)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter VYRE_TELEMETRY_DIR",
                              "VYRE_TELEMETRY_DIR is too long (%zu bytes)", strlen(env));
        return VYRE_OK;
    }
    *is_default = 1;
    int n = snprintf(out, size, "/dev/shm/vyre-%u", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= size)
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "telemetry directory path does not fit");
    return VYRE_OK;
}

int vyre_telemetry_dir(char *out, size_t size, vyre_error *err)
{
    if (!out || size == 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_dir: NULL or empty buffer");
    int is_default;
    return resolve_dir(out, size, &is_default, err);
}

/* Whether a directory with this owner and mode may hold our pages: ours and
 * writable by nobody else, or root's with the sticky bit (as /dev/shm and
 * /tmp), where others may add files but not remove or rename ours. Every
 * page in it is still checked on its own (owner, type, mode). */
static int dir_trusted(const struct stat *st)
{
    if (st->st_uid == geteuid())
        return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
    return st->st_uid == 0 && (st->st_mode & S_ISVTX);
}

/* Opens dir (creating it 0700 when `create`) and checks it is a directory we
 * may trust (dir_trusted). The last component is never followed when it is
 * a symlink: whoever could plant the link could point it at a directory of
 * theirs. VYRE_ENOENT when missing. */
static int open_dir(const char *dir, int is_default, int create, int *dfd, vyre_error *err)
{
    *dfd = -1;
    if (create) {
        if (is_default) {
            if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
                int e = errno;
                return vyre__fail(err, vyre__errno_code(e),
                                  "set VYRE_TELEMETRY_DIR to a writable directory, or "
                                  "VYRE_TELEMETRY=0 to turn telemetry off",
                                  "cannot create telemetry directory '%s': %s", dir, strerror(e));
            }
        } else {
            int rc = vyre__mkdirs(dir, 0700, err);
            if (rc)
                return rc;
        }
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat lst;
        if (e == ELOOP || (e == ENOTDIR && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)))
            return vyre__fail(err, VYRE_EUNSAFE,
                              is_default ? "remove the symlink; vyre creates the directory itself"
                                         : "remove the symlink, or set VYRE_TELEMETRY_DIR to the "
                                           "real directory",
                              "telemetry directory '%s' is a symlink", dir);
        if (e == ENOTDIR)
            return vyre__fail(err, VYRE_EEXIST,
                              "remove the file or set VYRE_TELEMETRY_DIR to a directory",
                              "telemetry directory '%s' is not a directory", dir);
        return vyre__fail(err, vyre__errno_code(e), "check VYRE_TELEMETRY_DIR",
                          "cannot open telemetry directory '%s': %s", dir, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat '%s': %s", dir, strerror(e));
    }
    if (dir_trusted(&st)) {
        *dfd = fd;
        return VYRE_OK;
    }
    close(fd);
    if (st.st_uid != geteuid()) {
        /* Someone else made it, perhaps to read or feed our telemetry: it is
         * not ours to chmod or to empty. */
        return vyre__fail(err, VYRE_EUNSAFE,
                          "it is not yours: remove it as its owner or as root (someone may "
                          "have planted it), or set VYRE_TELEMETRY_DIR to a directory of your "
                          "own",
                          "telemetry directory '%s' is owned by uid %u, not by you (uid %u)", dir,
                          (unsigned)st.st_uid, (unsigned)geteuid());
    }
    char hint[VYRE_ERROR_HINT_MAX];
    if (snprintf(hint, sizeof hint, "run 'chmod go-w %s' (vyre creates it 0700)", dir) < 0)
        hint[0] = '\0';
    return vyre__fail(err, VYRE_EUNSAFE, hint,
                      "telemetry directory '%s' is writable by group or others (mode %04o)", dir,
                      (unsigned)(st.st_mode & 07777));
}

/* ---- process identity ------------------------------------------------ */

int vyre__telemetry_start_time(int pid, uint64_t *ticks)
{
    char path[64], buf[2048];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vyre__errno_code(errno);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return VYRE_EIO;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and ')', so fields
     * are counted from the last ')'. Field 3 (state) follows it. */
    const char *p = strrchr(buf, ')');
    if (!p)
        return VYRE_ECORRUPT;
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return VYRE_ECORRUPT;
        if (field == 22) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (errno || end == p)
                return VYRE_ECORRUPT;
            *ticks = (uint64_t)v;
            return VYRE_OK;
        }
        while (*p && *p != ' ')
            p++;
    }
    return VYRE_ECORRUPT;
}

static void read_exe(char *out, size_t size)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = '\0';
    if (n > 0) {
        buf[n] = '\0';
        const char *base = strrchr(buf, '/');
        vyre__strlcpy(out, base ? base + 1 : buf, size);
        return;
    }
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        vyre__strlcpy(out, buf, size);
    }
}

static void read_cmdline(char *out, size_t size)
{
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* The calling process's PID namespace: device and inode of
 * /proc/self/ns/pid (namespaces(7): the pair identifies it). Both 0 when
 * /proc cannot tell. */
static void own_pid_ns(uint64_t *dev, uint64_t *ino)
{
    struct stat st;
    *dev = *ino = 0;
    if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != 0) {
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
    }
}

/* Whether a page recording the namespace (dev, ino) is foreign to the
 * caller: recorded, and not provably the caller's. */
static int ns_foreign(uint64_t dev, uint64_t ino)
{
    if (ino == 0)
        return 0; /* layouts 1 and 2, or a writer without /proc: unknown */
    uint64_t my_dev, my_ino;
    own_pid_ns(&my_dev, &my_ino);
    return my_ino == 0 || my_ino != ino || my_dev != dev;
}

int vyre_telemetry_foreign(const vyre_telemetry_snapshot *s)
{
    return s && ns_foreign(s->pid_ns_dev, s->pid_ns_ino);
}

/* What a page file says about its writer, from its identity part (written
 * before the page gets its name; a tmp file may still be all zero). */
typedef struct page_id {
    int valid; /* a known magic and layout */
    int32_t pid;
    uint64_t start_time;
    int foreign; /* it records another PID namespace (ns_foreign) */
} page_id;

static void read_id(int dfd, const char *name, page_id *id)
{
    memset(id, 0, sizeof *id);
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return;
    unsigned char buf[offsetof(vyre__tel_header, reserved1)];
    ssize_t got = pread(fd, buf, sizeof buf, 0);
    close(fd);
    if (got != (ssize_t)sizeof buf || memcmp(buf, TEL_MAGIC, sizeof TEL_MAGIC) != 0)
        return;
    uint32_t version;
    memcpy(&version, buf + offsetof(vyre__tel_header, version), sizeof version);
    if (!known_version(version))
        return;
    id->valid = 1;
    memcpy(&id->pid, buf + offsetof(vyre__tel_header, pid), sizeof id->pid);
    memcpy(&id->start_time, buf + offsetof(vyre__tel_header, start_time), sizeof id->start_time);
    if (version >= 3) { /* before, these bytes were reserved */
        uint64_t dev, ino;
        memcpy(&dev, buf + offsetof(vyre__tel_header, pid_ns_dev), sizeof dev);
        memcpy(&ino, buf + offsetof(vyre__tel_header, pid_ns_ino), sizeof ino);
        id->foreign = ns_foreign(dev, ino);
    }
}

/* ---- writer ---------------------------------------------------------- */

/* Creates "<pid>.vtel.tmp" exclusively (a leftover one is stale: no other
 * live process has our pid, and opens in this process are serialized). */
static int create_tmp(int dfd, const char *dir, const char *tmp, vyre_error *err)
{
    for (int attempt = 0;; attempt++) {
        int fd =
            openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd >= 0)
            return fd;
        int e = errno;
        if (e == EEXIST && attempt == 0 && unlinkat(dfd, tmp, 0) == 0)
            continue;
        return vyre__fail(err, vyre__errno_code(e),
                          "set VYRE_TELEMETRY_DIR to a writable directory, or VYRE_TELEMETRY=0",
                          "cannot create telemetry page '%s/%s': %s", dir, tmp, strerror(e));
    }
}

/* Gives the filled tmp file its public name. A page already there under our
 * pid is stale (pid reuse, or this process before exec: no page is open in
 * this process) and is replaced, if it is ours to replace. */
static int publish_name(int dfd, const char *dir, const char *tmp, const char *name,
                        vyre_error *err)
{
    for (int attempt = 0;; attempt++) {
        if (linkat(dfd, tmp, dfd, name, 0) == 0)
            return VYRE_OK;
        int e = errno;
        if (e == EEXIST && attempt == 0) {
            struct stat st;
            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                (!S_ISREG(st.st_mode) || st.st_uid != geteuid()))
                return vyre__fail(err, VYRE_EUNSAFE, "remove it; only vyre writes pages there",
                                  "'%s/%s' is in the way and is not a page of yours", dir, name);
            /* Our pid in another PID namespace (a container sharing the
             * directory) may well be alive: not ours to replace. */
            page_id id;
            read_id(dfd, name, &id);
            if (id.foreign)
                return vyre__fail(err, VYRE_EEXIST,
                                  "give each PID namespace (container) its own telemetry "
                                  "directory (VYRE_TELEMETRY_DIR, or a private /dev/shm); remove "
                                  "the page if its process is gone",
                                  "telemetry page '%s/%s' belongs to a process with the same pid "
                                  "in another PID namespace",
                                  dir, name);
            if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
                continue;
            e = errno;
        }
        return vyre__fail(err, vyre__errno_code(e),
                          "set VYRE_TELEMETRY_DIR to a writable directory",
                          "cannot create telemetry page '%s/%s': %s", dir, name, strerror(e));
    }
}

/*
 * Gives the page file every block it will ever use before it is mapped. A
 * sparse file (ftruncate) maps fine, and then the first store into a block
 * the file system cannot supply kills the host program with SIGBUS: a full
 * /dev/shm (Docker's default is 64 MB and PyTorch DataLoader workers fill
 * it) took libvyre-inject's host down that way. posix_fallocate fails
 * instead (ENOSPC; EDQUOT over a quota; EFBIG past RLIMIT_FSIZE), and where
 * the file system has no fallocate, glibc writes every block, which
 * reserves it as well. On failure the caller publishes nothing.
 */
static int reserve(int fd, const char *dir, const char *tmp, vyre_error *err)
{
    int e;
    do
        e = posix_fallocate(fd, 0, (off_t)sizeof(vyre__tel_page));
    while (e == EINTR);
    if (e == 0)
        return VYRE_OK;
    return vyre__fail(err, vyre__errno_code(e),
                      "free space in the telemetry directory's file system (often /dev/shm), set "
                      "VYRE_TELEMETRY_DIR to another directory, or VYRE_TELEMETRY=0 to turn "
                      "telemetry off",
                      "cannot reserve %zu bytes for telemetry page '%s/%s': %s",
                      sizeof(vyre__tel_page), dir, tmp, strerror(e));
}

static void fill_identity(vyre__tel_header *h, int32_t pid, uint64_t start)
{
    memcpy(h->magic, TEL_MAGIC, sizeof h->magic);
    h->version = VYRE_TELEMETRY_LAYOUT_VERSION;
    h->header_size = (uint32_t)sizeof(vyre__tel_header);
    h->total_size = sizeof(vyre__tel_page);
    h->ring_capacity = VYRE_TELEMETRY_RING_CAPACITY;
    h->ring_slot_size = (uint32_t)sizeof(vyre__tel_slot);
    h->counters_capacity = VYRE__TEL_COUNTERS_CAP;
    h->n_counters = VYRE_CTR_COUNT;
    h->ranges_capacity = VYRE__TEL_RANGES_CAP;
    h->n_ranges = VYRE_RANGE_COUNT;
    h->hist_buckets = VYRE__TEL_HIST_BUCKETS;
    h->pid = pid;
    h->uid = (uint32_t)geteuid();
    h->start_time = start;
    h->created_ns = (uint64_t)vyre__unix_ns();
    own_pid_ns(&h->pid_ns_dev, &h->pid_ns_ino);
    read_exe(h->exe, sizeof h->exe);
    read_cmdline(h->cmdline, sizeof h->cmdline);
}

/* Opens this process's page; g_lock held. */
static int open_locked(vyre_telemetry **out, vyre_error *err)
{
    const char *env = getenv("VYRE_TELEMETRY");
    if (env && strcmp(env, "0") == 0)
        return VYRE_OK;
    if (env && *env && strcmp(env, "1") != 0)
        return vyre__fail(err, VYRE_EENV,
                          "set VYRE_TELEMETRY=0 to turn publishing off, or 1 (the default) for on",
                          "VYRE_TELEMETRY has an unknown value '%s'", env);
    unsigned gen = fork_gen();
    if (g_open_pages_gen == gen && g_open_pages > 0)
        return vyre__fail(err, VYRE_EEXIST,
                          "use vyre_telemetry_global() to share the process's page",
                          "this process (pid %d) already has a telemetry page open", (int)getpid());

    char dir[VYRE_TELEMETRY_PATH_MAX];
    int is_default, dfd, rc;
    if ((rc = resolve_dir(dir, sizeof dir, &is_default, err)))
        return rc;
    if ((rc = open_dir(dir, is_default, 1, &dfd, err)))
        return rc;

    vyre_telemetry *t = calloc(1, sizeof *t);
    if (!t) {
        close(dfd);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening the telemetry page");
    }
    int32_t pid = (int32_t)getpid();
    uint64_t start = 0; /* unknown without /proc: reap then relies on kill() alone */
    (void)vyre__telemetry_start_time(0, &start);
    char tmp[64], name[64];
    snprintf(tmp, sizeof tmp, "%d.vtel.tmp", (int)pid);
    snprintf(name, sizeof name, "%d.vtel", (int)pid);
    if ((rc = vyre__path_join(t->path, sizeof t->path, dir, name, err))) {
        close(dfd);
        free(t);
        return rc;
    }

    void *map = MAP_FAILED;
    struct stat st;
    int fd = create_tmp(dfd, dir, tmp, err);
    if (fd < 0) {
        rc = fd;
        goto fail;
    }
    /* The creation mode went through the umask; the page is exactly 0600. */
    if (fchmod(fd, 0600) != 0) {
        int e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), "set VYRE_TELEMETRY_DIR to a local directory",
                        "cannot set the mode of telemetry page '%s/%s': %s", dir, tmp, strerror(e));
        goto fail;
    }
    if ((rc = reserve(fd, dir, tmp, err)))
        goto fail;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat telemetry page '%s/%s': %s",
                        dir, tmp, strerror(e));
        goto fail;
    }
    /* Made here with O_EXCL | O_NOFOLLOW, so this holds unless the file
     * system lies; a page that is not exactly this is never published. */
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600) {
        rc = vyre__fail(err, VYRE_EUNSAFE, "set VYRE_TELEMETRY_DIR to a local directory of yours",
                        "telemetry page '%s/%s' is not a 0600 regular file of uid %u after "
                        "creation (mode %04o, uid %u)",
                        dir, tmp, (unsigned)geteuid(), (unsigned)(st.st_mode & 07777),
                        (unsigned)st.st_uid);
        goto fail;
    }
    map = mmap(NULL, sizeof(vyre__tel_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), "set VYRE_TELEMETRY=0 to turn telemetry off",
                        "cannot map telemetry page '%s/%s': %s", dir, tmp, strerror(e));
        goto fail;
    }
    t->page = map;
    fill_identity(&t->page->h, pid, start);
    if ((rc = publish_name(dfd, dir, tmp, name, err)))
        goto fail;
    unlinkat(dfd, tmp, 0);
    close(fd);
    close(dfd);

    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->fork_gen = gen;
    pthread_mutex_init(&t->publish_lock, NULL);
    pthread_mutex_init(&t->ring_lock, NULL);
    if (g_open_pages_gen != gen) {
        g_open_pages_gen = gen;
        g_open_pages = 0;
    }
    g_open_pages++;
    *out = t;
    return VYRE_OK;

fail:
    if (map != MAP_FAILED)
        munmap(map, sizeof(vyre__tel_page));
    if (fd >= 0) {
        close(fd);
        unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    free(t);
    return rc;
}

int vyre_telemetry_open(vyre_telemetry **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_open: NULL out");
    *out = NULL;
    pthread_once(&g_atfork_once, register_atfork);
    pthread_mutex_lock(&g_lock);
    int rc = open_locked(out, err);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

static void store_counters(vyre__tel_header *h, const vyre_counters *c)
{
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        atomic_store_explicit(&h->counters[i], c->v[i], memory_order_relaxed);
    for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
        const vyre_range_hist *src = &c->ranges[r];
        vyre__tel_hist *dst = &h->ranges[r];
        atomic_store_explicit(&dst->count, src->count, memory_order_relaxed);
        atomic_store_explicit(&dst->total_ns, src->total_ns, memory_order_relaxed);
        atomic_store_explicit(&dst->max_ns, src->max_ns, memory_order_relaxed);
        for (int b = 0; b < VYRE__TEL_HIST_BUCKETS; b++)
            atomic_store_explicit(&dst->buckets[b], src->buckets[b], memory_order_relaxed);
    }
}

int vyre__telemetry_publish_snapshot(vyre_telemetry *t, const vyre_counters *c)
{
    if (!usable(t))
        return VYRE_OK;
    if (!c)
        return VYRE_EINVAL;
    uint64_t now = vyre__mono_ns();
    vyre__tel_header *h = &t->page->h;
    pthread_mutex_lock(&t->publish_lock);
    uint64_t s = t->seq;
    atomic_store_explicit(&h->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&h->publish_ns, now, memory_order_relaxed);
    atomic_store_explicit(&h->publish_count, ++t->publish_count, memory_order_relaxed);
    store_counters(h, c);
    atomic_store_explicit(&h->seq, s + 2, memory_order_release);
    t->seq = s + 2;
    pthread_mutex_unlock(&t->publish_lock);
    return VYRE_OK;
}

int vyre_telemetry_publish(vyre_telemetry *t)
{
    if (!usable(t))
        return VYRE_OK;
    /* On the heap: with log-linear histograms a snapshot is tens of KiB,
     * too much for the stack of whatever thread launches (this runs at
     * most every 10 ms from the launch path). */
    vyre_counters *c = malloc(sizeof *c);
    if (!c)
        return VYRE_ENOMEM;
    vyre_counters_snapshot(c);
    int rc = vyre__telemetry_publish_snapshot(t, c);
    free(c);
    return rc;
}

int vyre_telemetry_maybe_publish(vyre_telemetry *t, uint64_t now_ns)
{
    if (!usable(t))
        return 0;
    uint64_t last = atomic_load_explicit(&t->last_publish_ns, memory_order_relaxed);
    /* A thread with an older clock reading than the last publisher's
     * (now_ns < last) has nothing to add either. */
    if (last != 0 && now_ns < last + VYRE_TELEMETRY_PUBLISH_INTERVAL_NS)
        return 0;
    uint64_t stamp = now_ns ? now_ns : 1;
    if (!atomic_compare_exchange_strong_explicit(&t->last_publish_ns, &last, stamp,
                                                 memory_order_relaxed, memory_order_relaxed))
        return 0; /* another thread won this interval */
    int rc = vyre_telemetry_publish(t);
    return rc < 0 ? rc : 1;
}

int vyre_telemetry_add_kernel(vyre_telemetry *t, const vyre_telemetry_kernel_record *k)
{
    if (!t)
        return VYRE_OK;
    if (!k)
        return VYRE_EINVAL;
    if (!usable(t))
        return VYRE_OK;
    uint64_t words[VYRE__TEL_NAME_WORDS] = {0};
    if (k->name)
        memcpy(words, k->name, strnlen(k->name, VYRE_TELEMETRY_KERNEL_NAME_MAX - 1));

    pthread_mutex_lock(&t->ring_lock);
    uint64_t serial = t->ring_count + 1;
    uint32_t idx = (uint32_t)(t->ring_count % VYRE_TELEMETRY_RING_CAPACITY);
    vyre__tel_slot *s = &t->page->ring[idx];
    atomic_store_explicit(&s->seq, 2 * serial - 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->end_ns, k->end_ns, memory_order_relaxed);
    atomic_store_explicit(&s->duration_ns, k->duration_ns, memory_order_relaxed);
    atomic_store_explicit(&s->stream_id, k->stream_id, memory_order_relaxed);
    for (int i = 0; i < 3; i++) {
        atomic_store_explicit(&s->grid[i], k->grid[i], memory_order_relaxed);
        atomic_store_explicit(&s->block[i], k->block[i], memory_order_relaxed);
    }
    atomic_store_explicit(&s->device, k->device, memory_order_relaxed);
    for (int i = 0; i < VYRE__TEL_NAME_WORDS; i++)
        atomic_store_explicit(&s->name[i], words[i], memory_order_relaxed);
    atomic_store_explicit(&s->seq, 2 * serial, memory_order_release);
    atomic_store_explicit(&t->page->h.ring_head, (idx + 1) % VYRE_TELEMETRY_RING_CAPACITY,
                          memory_order_relaxed);
    atomic_store_explicit(&t->page->h.ring_count, serial, memory_order_release);
    t->ring_count = serial;
    pthread_mutex_unlock(&t->ring_lock);
    return VYRE_OK;
}

/* Unlinks t's page if the name still holds our file. */
static void unlink_page(const vyre_telemetry *t)
{
    struct stat st;
    if (lstat(t->path, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino)
        unlink(t->path);
}

static void release(vyre_telemetry *t)
{
    munmap(t->page, sizeof(vyre__tel_page));
    pthread_mutex_destroy(&t->publish_lock);
    pthread_mutex_destroy(&t->ring_lock);
    free(t);
}

void vyre_telemetry_close(vyre_telemetry *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&g_lock);
    if (usable(t)) {
        unlink_page(t);
        if (g_open_pages_gen == t->fork_gen && g_open_pages > 0)
            g_open_pages--;
    }
    pthread_mutex_unlock(&g_lock);
    release(t);
}

vyre_telemetry *vyre_telemetry_global(void)
{
    unsigned gen = fork_gen();
    if (atomic_load_explicit(&g_global_done, memory_order_acquire) == gen + 1)
        return atomic_load_explicit(&g_global, memory_order_relaxed);
    pthread_once(&g_atfork_once, register_atfork);
    pthread_mutex_lock(&g_lock);
    gen = fork_gen(); /* stable while g_lock is held */
    if (atomic_load_explicit(&g_global_done, memory_order_relaxed) != gen + 1) {
        vyre_telemetry *old = atomic_load_explicit(&g_global, memory_order_relaxed);
        if (old && old->fork_gen != gen) /* inherited from the parent: keep its page */
            release(old);
        vyre_telemetry *t = NULL;
        vyre_error_clear(&g_global_err);
        g_global_code = open_locked(&t, &g_global_err);
        atomic_store_explicit(&g_global, t, memory_order_relaxed);
        atomic_store_explicit(&g_global_done, gen + 1, memory_order_release);
    }
    vyre_telemetry *t = atomic_load_explicit(&g_global, memory_order_relaxed);
    pthread_mutex_unlock(&g_lock);
    return t;
}

int vyre_telemetry_global_error(vyre_error *err)
{
    pthread_mutex_lock(&g_lock);
    int code = g_global_code;
    if (err && code)
        *err = g_global_err;
    pthread_mutex_unlock(&g_lock);
    return code;
}

/* The global page goes away with a normal exit (or dlclose); it is only
 * unlinked, not unmapped, since other threads may still publish into it. */
__attribute__((destructor)) static void global_at_exit(void)
{
    vyre_telemetry *t = atomic_load_explicit(&g_global, memory_order_acquire);
    if (usable(t))
        unlink_page(t);
}

/* ---- reader ---------------------------------------------------------- */

static void backoff(int attempt)
{
    if (attempt < READ_SPINS)
        return;
    if (attempt < READ_YIELDS) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
}

/* A field of `size` bytes must hold a NUL; control characters are then
 * replaced so the text is safe to print. */
static int bounded_text(char *s, size_t size)
{
    char *nul = memchr(s, '\0', size);
    if (!nul)
        return 0;
    for (char *p = s; p < nul; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return 1;
}

/*
 * The reader never maps a page. It copies the file with pread(2) into
 * private memory, three times in a row: copy A opens the seqlock (its
 * sequence numbers), copy B is the data, copy C closes it. Each pread
 * completes before the next starts, so this is the protocol above with the
 * loads done by the kernel: a part is good when its sequence number is the
 * same, and even, in A and C. A file truncated while it is read gives a
 * short read (an error), never SIGBUS, and nothing the writer does can
 * change bytes the reader has already copied.
 */
typedef struct page_src {
    int fd;                      /* the page file, or -1: img */
    const vyre__tel_page *img;   /* a page image (vyre__telemetry_parse) */
    vyre__tel_page *buf;         /* 3 copies (file), NULL (img) */
    const vyre__tel_page *cp[3]; /* A, B, C */
    int tries;                   /* of a busy part: READ_TRIES for a file, 1 for an image */
    int slot_tries;
} page_src;

/* Copies bytes [off, off + len) of the page into A, B and C in turn. */
static int snap3(page_src *src, size_t off, size_t len)
{
    if (src->fd < 0)
        return VYRE_OK; /* an image does not change */
    for (int i = 0; i < 3; i++) {
        unsigned char *dst = (unsigned char *)&src->buf[i] + off;
        size_t done = 0;
        while (done < len) {
            ssize_t n = pread(src->fd, dst + done, len - done, (off_t)(off + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return vyre__errno_code(errno);
            if (n == 0)
                return VYRE_ECORRUPT; /* the file shrank */
            done += (size_t)n;
        }
        atomic_thread_fence(memory_order_acquire);
    }
    return VYRE_OK;
}

static uint64_t seq_of(const _Atomic uint64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}

/* Copies the published part (counters, histograms) from B when A and C
 * agree on an even seq; VYRE_EBUSY when they never did. */
static int copy_published(page_src *src, uint32_t n_counters, uint32_t n_ranges,
                          vyre_telemetry_snapshot *out)
{
    uint32_t nc = n_counters < VYRE_CTR_COUNT ? n_counters : VYRE_CTR_COUNT;
    uint32_t nr = n_ranges < VYRE_RANGE_COUNT ? n_ranges : VYRE_RANGE_COUNT;
    for (int attempt = 0; attempt < src->tries; attempt++) {
        if (attempt) {
            backoff(attempt);
            int rc = snap3(src, 0, sizeof(vyre__tel_header));
            if (rc)
                return rc;
        }
        uint64_t s1 = seq_of(&src->cp[0]->h.seq), s2 = seq_of(&src->cp[2]->h.seq);
        if (s1 != s2 || (s1 & 1))
            continue;
        const vyre__tel_header *h = &src->cp[1]->h;
        out->publish_ns = seq_of(&h->publish_ns);
        out->publish_count = seq_of(&h->publish_count);
        for (uint32_t i = 0; i < nc; i++)
            out->counters.v[i] = seq_of(&h->counters[i]);
        for (uint32_t r = 0; r < nr; r++) {
            const vyre__tel_hist *from = &h->ranges[r];
            vyre_range_hist *dst = &out->counters.ranges[r];
            dst->count = seq_of(&from->count);
            dst->total_ns = seq_of(&from->total_ns);
            dst->max_ns = seq_of(&from->max_ns);
            for (int b = 0; b < VYRE__TEL_HIST_BUCKETS; b++)
                dst->buckets[b] = seq_of(&from->buckets[b]);
        }
        return VYRE_OK;
    }
    return VYRE_EBUSY;
}

/* Copies ring slot i into *k: 1 when it holds a complete kernel, 0 when it
 * is empty or was being rewritten through every try, or a negative code
 * when the file could not be read again. */
static int copy_slot(page_src *src, uint32_t i, vyre_telemetry_kernel *k)
{
    for (int attempt = 0; attempt < src->slot_tries; attempt++) {
        if (attempt) {
            backoff(attempt);
            int rc = snap3(src, offsetof(vyre__tel_page, ring) + i * sizeof(vyre__tel_slot),
                           sizeof(vyre__tel_slot));
            if (rc)
                return rc;
        }
        uint64_t s1 = seq_of(&src->cp[0]->ring[i].seq), s2 = seq_of(&src->cp[2]->ring[i].seq);
        if (s1 == 0 && s2 == 0)
            return 0;
        if (s1 != s2 || (s1 & 1))
            continue;
        const vyre__tel_slot *s = &src->cp[1]->ring[i];
        uint64_t words[VYRE__TEL_NAME_WORDS];
        k->end_ns = seq_of(&s->end_ns);
        k->duration_ns = seq_of(&s->duration_ns);
        k->stream_id = seq_of(&s->stream_id);
        for (int d = 0; d < 3; d++) {
            k->grid[d] = atomic_load_explicit(&s->grid[d], memory_order_relaxed);
            k->block[d] = atomic_load_explicit(&s->block[d], memory_order_relaxed);
        }
        k->device = atomic_load_explicit(&s->device, memory_order_relaxed);
        for (int w = 0; w < VYRE__TEL_NAME_WORDS; w++)
            words[w] = seq_of(&s->name[w]);
        memcpy(k->name, words, sizeof k->name);
        k->serial = s1 / 2;
        return 1;
    }
    return 0;
}

static int by_serial(const void *a, const void *b)
{
    uint64_t x = ((const vyre_telemetry_kernel *)a)->serial;
    uint64_t y = ((const vyre_telemetry_kernel *)b)->serial;
    return x < y ? -1 : x > y;
}

static int shrank(const char *path, int rc, vyre_error *err)
{
    if (rc == VYRE_ECORRUPT)
        return vyre__fail(err, VYRE_ECORRUPT, "remove it, or let a reap remove it",
                          "telemetry page '%s' shrank while it was read", path);
    return vyre__fail(err, rc, NULL, "cannot read telemetry page '%s': %s", path,
                      vyre_strerror(rc));
}

/* Validates the copied page and fills out. The identity part is written
 * before a page gets its name, so it is read from B alone; every field is
 * read once into a local (or out) before it is checked and used. */
static int read_copies(const char *path, page_src *src, uint32_t owner,
                       vyre_telemetry_snapshot *out, vyre_error *err)
{
    const vyre__tel_header *h = &src->cp[1]->h;
    const char *hint = "the page is damaged or was not written by vyre: remove it, or let a "
                       "reap remove it once its process has exited";
    uint32_t header_size = h->header_size, ring_cap = h->ring_capacity;
    uint32_t slot_size = h->ring_slot_size, ctr_cap = h->counters_capacity;
    uint32_t n_counters = h->n_counters, rng_cap = h->ranges_capacity;
    uint32_t n_ranges = h->n_ranges, buckets = h->hist_buckets;
    uint64_t total = h->total_size;
    if (header_size != sizeof(vyre__tel_header) || slot_size != sizeof(vyre__tel_slot) ||
        ring_cap != VYRE_TELEMETRY_RING_CAPACITY || total != sizeof(vyre__tel_page))
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "telemetry page '%s' declares sizes header %u, slot %u x %u, total "
                          "%llu; version %d has %zu, %zu x %d, %zu",
                          path, header_size, slot_size, ring_cap, (unsigned long long)total,
                          VYRE_TELEMETRY_LAYOUT_VERSION, sizeof(vyre__tel_header),
                          sizeof(vyre__tel_slot), VYRE_TELEMETRY_RING_CAPACITY,
                          sizeof(vyre__tel_page));
    if (ctr_cap != VYRE__TEL_COUNTERS_CAP || rng_cap != VYRE__TEL_RANGES_CAP ||
        n_counters > ctr_cap || n_ranges > rng_cap || buckets != VYRE__TEL_HIST_BUCKETS)
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "telemetry page '%s' has %u of %u counters, %u of %u ranges, %u "
                          "buckets: out of range",
                          path, n_counters, ctr_cap, n_ranges, rng_cap, buckets);
    out->pid = h->pid;
    out->uid = h->uid;
    out->start_time = h->start_time;
    out->created_ns = h->created_ns;
    out->pid_ns_dev = h->pid_ns_dev;
    out->pid_ns_ino = h->pid_ns_ino;
    if (out->pid <= 0)
        return vyre__fail(err, VYRE_ECORRUPT, hint, "telemetry page '%s' has pid %d", path,
                          (int)out->pid);
    if (out->uid != owner)
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "telemetry page '%s' claims uid %u but the file belongs to uid %u", path,
                          out->uid, (unsigned)owner);
    memcpy(out->exe, h->exe, sizeof out->exe);
    memcpy(out->cmdline, h->cmdline, sizeof out->cmdline);
    if (!bounded_text(out->exe, sizeof out->exe) ||
        !bounded_text(out->cmdline, sizeof out->cmdline)) {
        out->exe[0] = out->cmdline[0] = '\0';
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "telemetry page '%s' has an unterminated exe name or command line", path);
    }
    out->n_counters = n_counters;
    out->n_ranges = n_ranges;
    int rc = copy_published(src, n_counters, n_ranges, out);
    if (rc == VYRE_EBUSY)
        return vyre__fail(err, VYRE_EBUSY,
                          "try again; a page that stays busy belongs to a process that died "
                          "while publishing and is removed by the next reap",
                          "telemetry page '%s' (pid %d) changed during every one of %d reads", path,
                          (int)out->pid, src->tries);
    if (rc)
        return shrank(path, rc, err);

    /* Ring bookkeeping from B, whose header copy may be older than the
     * slots: kernels_total below takes the newer of the two. */
    h = &src->cp[1]->h;
    uint64_t count = seq_of(&h->ring_count);
    uint32_t head = atomic_load_explicit(&h->ring_head, memory_order_relaxed);
    if (head >= VYRE_TELEMETRY_RING_CAPACITY)
        return vyre__fail(err, VYRE_ECORRUPT, hint,
                          "telemetry page '%s' has ring head %u, beyond its %d slots", path, head,
                          VYRE_TELEMETRY_RING_CAPACITY);
    uint32_t n = 0;
    uint64_t newest = 0;
    for (uint32_t i = 0; i < VYRE_TELEMETRY_RING_CAPACITY; i++) {
        vyre_telemetry_kernel *k = &out->kernels[n];
        int got = copy_slot(src, i, k);
        if (got < 0)
            return shrank(path, got, err);
        if (!got)
            continue;
        if ((k->serial - 1) % VYRE_TELEMETRY_RING_CAPACITY != i)
            return vyre__fail(err, VYRE_ECORRUPT, hint,
                              "telemetry page '%s': ring slot %u claims kernel %llu, which "
                              "belongs in slot %llu",
                              path, i, (unsigned long long)k->serial,
                              (unsigned long long)((k->serial - 1) % VYRE_TELEMETRY_RING_CAPACITY));
        if (!bounded_text(k->name, sizeof k->name))
            return vyre__fail(err, VYRE_ECORRUPT, hint,
                              "telemetry page '%s': the kernel name in ring slot %u is "
                              "unterminated",
                              path, i);
        if (k->serial > newest)
            newest = k->serial;
        n++;
    }
    qsort(out->kernels, n, sizeof out->kernels[0], by_serial);
    out->n_kernels = n;
    out->kernels_total = count > newest ? count : newest;
    return VYRE_OK;
}

/* Stamps a good copy with the layout it was read from. Layouts before 3
 * have no PID namespace: the bytes it now occupies were reserved, so
 * whatever is there says nothing. */
static void set_version(vyre_telemetry_snapshot *out, uint32_t version)
{
    out->layout_version = version;
    if (version < 3)
        out->pid_ns_dev = out->pid_ns_ino = 0;
}

/* Checks the first 16 bytes (magic, version) and the file size: what tells
 * a page this vyre reads (the current layout or an older one, *version
 * says which) from anything else before its content is trusted. */
static int check_prefix(const char *path, const unsigned char *prefix, uint64_t size,
                        uint32_t *version_out, vyre_error *err)
{
    uint32_t version;
    memcpy(&version, prefix + 8, sizeof version);
    if (memcmp(prefix, TEL_MAGIC, sizeof TEL_MAGIC) != 0)
        return vyre__fail(err, VYRE_ECORRUPT, "remove it; it is not a vyre telemetry page",
                          "telemetry page '%s' has a bad magic number", path);
    if (!known_version(version))
        return vyre__fail(
            err, VYRE_EVERSION,
            "the process uses another vyre version: read it with a matching vyre build",
            "telemetry page '%s' has layout version %u; this vyre reads versions 1 to %d", path,
            version, VYRE_TELEMETRY_LAYOUT_VERSION);
    size_t want = version == 1 ? sizeof(vyre__tel_v1_page) : sizeof(vyre__tel_page);
    if (size != want)
        return vyre__fail(err, VYRE_ECORRUPT, "remove it, or let a reap remove it",
                          "telemetry page '%s' is %llu bytes; layout version %u pages are %zu",
                          path, (unsigned long long)size, version, want);
    *version_out = version;
    return VYRE_OK;
}

static uint64_t load_u64(const _Atomic uint64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}

static void store_u64(_Atomic uint64_t *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_relaxed);
}

void vyre__telemetry_v1_upgrade(const vyre__tel_v1_page *in, vyre__tel_page *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out, in, offsetof(vyre__tel_header, ranges));
    if (in->h.header_size == sizeof(vyre__tel_v1_header))
        out->h.header_size = sizeof(vyre__tel_header);
    if (in->h.total_size == sizeof(vyre__tel_v1_page))
        out->h.total_size = sizeof(vyre__tel_page);
    if (in->h.hist_buckets == VYRE__TEL_V1_HIST_BUCKETS)
        out->h.hist_buckets = VYRE__TEL_HIST_BUCKETS;
    out->h.pid_ns_dev = out->h.pid_ns_ino = 0; /* reserved bytes in version 1 */
    for (int r = 0; r < VYRE__TEL_RANGES_CAP; r++) {
        const vyre__tel_v1_hist *a = &in->h.ranges[r];
        vyre__tel_hist *b = &out->h.ranges[r];
        store_u64(&b->count, load_u64(&a->count));
        store_u64(&b->total_ns, load_u64(&a->total_ns));
        store_u64(&b->max_ns, load_u64(&a->max_ns));
        for (int k = 0; k < VYRE__TEL_V1_HIST_BUCKETS; k++) {
            uint64_t c = load_u64(&a->buckets[k]);
            if (c == 0)
                continue;
            uint64_t lo = k == 0 ? 0 : UINT64_C(1) << k;
            int first = vyre_hist_bucket_of(lo);
            int last = vyre_hist_bucket_of((UINT64_C(2) << k) - 1);
            uint64_t span = (uint64_t)(last - first + 1);
            for (int j = first; j <= last; j++) {
                uint64_t share = c / span + ((uint64_t)(j - first) < c % span);
                store_u64(&b->buckets[j], load_u64(&b->buckets[j]) + share);
            }
        }
    }
    store_u64(&out->h.ring_count, load_u64(&in->h.ring_count));
    atomic_store_explicit(&out->h.ring_head,
                          atomic_load_explicit(&in->h.ring_head, memory_order_relaxed),
                          memory_order_relaxed);
    memcpy(out->ring, in->ring, sizeof out->ring);
}

#define PREFIX_LEN 16

static int too_short(const char *path, uint64_t size, vyre_error *err)
{
    return vyre__fail(err, VYRE_ECORRUPT, "remove it, or let a reap remove it",
                      "telemetry page '%s' is too short (%llu bytes) to hold a header", path,
                      (unsigned long long)size);
}

int vyre__telemetry_parse(const char *name, const void *img, size_t len, uint32_t owner,
                          vyre_telemetry_snapshot *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__telemetry_parse: NULL snapshot");
    memset(out, 0, sizeof *out);
    if (!name || (!img && len) || ((uintptr_t)img % _Alignof(vyre__tel_page)) != 0)
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "vyre__telemetry_parse: NULL name or image, or a misaligned image");
    if (len < PREFIX_LEN)
        return too_short(name, len, err);
    uint32_t version = 0;
    int rc = check_prefix(name, img, len, &version, err);
    if (rc)
        return rc;
    vyre__tel_page *up = NULL;
    if (version == 1) {
        up = malloc(sizeof *up);
        if (!up)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", name);
        vyre__telemetry_v1_upgrade(img, up);
        img = up;
    }
    page_src src = {.fd = -1, .img = img, .tries = 1, .slot_tries = 1};
    src.cp[0] = src.cp[1] = src.cp[2] = img;
    rc = read_copies(name, &src, owner, out, err);
    free(up);
    if (rc)
        memset(out, 0, sizeof *out);
    else
        set_version(out, version);
    return rc;
}

/* Splits path into its directory (dir, "." or "/") and last component. */
static int split_path(const char *path, char *dir, size_t size, const char **name, vyre_error *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        vyre__strlcpy(dir, ".", size);
        *name = path;
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= size)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path",
                              "telemetry page path too long: '%s'", path);
        memcpy(dir, path, n);
        dir[n] = '\0';
        *name = slash + 1;
    }
    if (!**name || strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0)
        return vyre__fail(err, VYRE_EINVAL, "pass the path of a page file",
                          "'%s' names a directory, not a telemetry page", path);
    return VYRE_OK;
}

/* Opens the page `path` for reading: its directory must pass open_dir's
 * checks, the page itself is opened relative to it, never through a
 * symlink, never blocking (a FIFO planted under a page's name), and must be
 * a regular file of ours that nobody else may write. */
static int open_page(const char *path, int *fd_out, struct stat *st, vyre_error *err)
{
    char dir[VYRE_TELEMETRY_PATH_MAX];
    const char *name = NULL;
    int rc = split_path(path, dir, sizeof dir, &name, err);
    if (rc)
        return rc;
    int dfd;
    vyre_error derr;
    rc = open_dir(dir, 0, 0, &dfd, &derr);
    if (rc == VYRE_ENOENT)
        return vyre__fail(err, VYRE_ENOENT, NULL,
                          "telemetry page '%s' is gone (its directory is missing)", path);
    if (rc) {
        if (err)
            *err = derr;
        return rc;
    }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int e = errno;
    if (fd < 0 && e == ENXIO) /* a socket */
        rc = vyre__fail(err, VYRE_EUNSAFE, "remove it; only vyre writes pages there",
                        "telemetry page '%s' is not a regular file", path);
    close(dfd);
    if (rc)
        return rc;
    if (fd < 0) {
        if (e == ELOOP)
            return vyre__fail(err, VYRE_EUNSAFE, "remove it; vyre never writes symlinks there",
                              "telemetry page '%s' is a symlink", path);
        if (e == ENOENT)
            return vyre__fail(err, VYRE_ENOENT, NULL,
                              "telemetry page '%s' is gone (the process exited)", path);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot open telemetry page '%s': %s",
                          path, strerror(e));
    }
    if (fstat(fd, st) != 0) {
        e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat telemetry page '%s': %s", path,
                        strerror(e));
    } else if (!S_ISREG(st->st_mode)) {
        rc = vyre__fail(err, VYRE_EUNSAFE, "remove it; only vyre writes pages there",
                        "telemetry page '%s' is not a regular file", path);
    } else if (st->st_uid != geteuid()) {
        /* Not trusted even when its layout validates: a valid layout says
         * nothing about who wrote the numbers in it. */
        rc = vyre__fail(err, VYRE_EUNSAFE,
                        "pages are read only by their owner; read it as that user",
                        "telemetry page '%s' belongs to uid %u, not to you (uid %u)", path,
                        (unsigned)st->st_uid, (unsigned)geteuid());
    } else if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        rc = vyre__fail(err, VYRE_EUNSAFE, "vyre writes pages 0600; remove this one",
                        "telemetry page '%s' is writable by group or others (mode %04o)", path,
                        (unsigned)(st->st_mode & 07777));
    }
    if (rc) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return VYRE_OK;
}

/* A version 1 page: three whole copies, each rewritten as the current
 * layout, then the same checks as a current page with no partial re-reads
 * (those would land at the current offsets); a busy page is copied again as
 * a whole. */
static int read_v1(const char *path, page_src *src, uint32_t owner, vyre_telemetry_snapshot *out,
                   vyre_error *err)
{
    vyre__tel_v1_page *raw = malloc(sizeof *raw);
    if (!raw)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", path);
    int tries = src->tries, rc = VYRE_EBUSY;
    src->tries = src->slot_tries = 1;
    for (int attempt = 0; attempt < tries && rc == VYRE_EBUSY; attempt++) {
        if (attempt)
            backoff(attempt);
        rc = snap3(src, 0, sizeof *raw);
        if (rc) {
            rc = shrank(path, rc, err);
            break;
        }
        for (int i = 0; i < 3; i++) {
            memcpy(raw, &src->buf[i], sizeof *raw);
            vyre__telemetry_v1_upgrade(raw, &src->buf[i]);
        }
        rc = read_copies(path, src, owner, out, err);
    }
    free(raw);
    return rc;
}

int vyre_telemetry_read(const char *path, vyre_telemetry_snapshot *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_read: NULL snapshot");
    memset(out, 0, sizeof *out);
    if (!path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_read: NULL path");
    int fd;
    struct stat st;
    int rc = open_page(path, &fd, &st, err);
    if (rc)
        return rc;
    unsigned char prefix[PREFIX_LEN];
    ssize_t got = st.st_size < PREFIX_LEN ? 0 : pread(fd, prefix, sizeof prefix, 0);
    if (got != (ssize_t)sizeof prefix)
        rc = too_short(path, (uint64_t)st.st_size, err);
    uint32_t version = 0;
    if (got == (ssize_t)sizeof prefix)
        rc = check_prefix(path, prefix, (uint64_t)st.st_size, &version, err);
    page_src src = {.fd = fd, .tries = READ_TRIES, .slot_tries = SLOT_TRIES};
    if (!rc) {
        src.buf = malloc(3 * sizeof *src.buf);
        if (!src.buf)
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", path);
    }
    if (!rc) {
        for (int i = 0; i < 3; i++)
            src.cp[i] = &src.buf[i];
    }
    if (!rc && version == 1) {
        rc = read_v1(path, &src, (uint32_t)st.st_uid, out, err);
    } else if (!rc) {
        rc = snap3(&src, 0, sizeof(vyre__tel_page));
        if (rc)
            rc = shrank(path, rc, err);
        if (!rc)
            rc = read_copies(path, &src, (uint32_t)st.st_uid, out, err);
    }
    if (!rc)
        set_version(out, version);
    /* A page resized while it was copied is no longer a page of its version. */
    struct stat again;
    if (!rc && (fstat(fd, &again) != 0 || again.st_size != st.st_size))
        rc = vyre__fail(err, VYRE_ECORRUPT, "remove it, or let a reap remove it",
                        "telemetry page '%s' changed size while it was read", path);
    free(src.buf);
    close(fd);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

/* "<pid>.vtel" (tmp 0) or "<pid>.vtel.tmp" (tmp 1), pid canonical decimal. */
static int parse_name(const char *name, int32_t *pid, int *tmp)
{
    if (name[0] < '1' || name[0] > '9')
        return 0;
    char *end;
    errno = 0;
    long v = strtol(name, &end, 10);
    if (errno || v <= 0 || v > INT32_MAX)
        return 0;
    if (strcmp(end, ".vtel") == 0)
        *tmp = 0;
    else if (strcmp(end, ".vtel.tmp") == 0)
        *tmp = 1;
    else
        return 0;
    *pid = (int32_t)v;
    return 1;
}

static int by_pid(const void *a, const void *b)
{
    int32_t x = ((const vyre_telemetry_entry *)a)->pid;
    int32_t y = ((const vyre_telemetry_entry *)b)->pid;
    return x < y ? -1 : x > y;
}

/* Opens dir (NULL: the default) for reading; *dfd -1 when it is missing. */
static int open_reader_dir(const char *dir, char *buf, size_t size, int *dfd, vyre_error *err)
{
    int is_default = 0, rc;
    if (!dir) {
        if ((rc = resolve_dir(buf, size, &is_default, err)))
            return rc;
    } else if (vyre__strlcpy(buf, dir, size) >= size) {
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path",
                          "telemetry directory path too long: '%s'", dir);
    }
    vyre_error e;
    rc = open_dir(buf, is_default, 0, dfd, &e);
    if (rc == VYRE_ENOENT)
        return VYRE_OK; /* no process has published yet */
    if (rc && err)
        *err = e;
    return rc;
}

int vyre_telemetry_list(const char *dir, vyre_telemetry_entry **out, size_t *n, vyre_error *err)
{
    if (!out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_list: NULL out or n");
    *out = NULL;
    *n = 0;
    char path[VYRE_TELEMETRY_PATH_MAX];
    int dfd = -1, rc;
    if ((rc = open_reader_dir(dir, path, sizeof path, &dfd, err)) || dfd < 0)
        return rc;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read directory '%s': %s", path,
                          strerror(e));
    }
    vyre_telemetry_entry *v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int32_t pid;
        int tmp;
        if (!parse_name(de->d_name, &pid, &tmp) || tmp)
            continue;
        if (len == cap) {
            size_t c = cap ? cap * 2 : 16;
            vyre_telemetry_entry *nv = realloc(v, c * sizeof *nv);
            if (!nv) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory listing '%s'", path);
                break;
            }
            v = nv;
            cap = c;
        }
        v[len].pid = pid;
        if ((rc = vyre__path_join(v[len].path, sizeof v[len].path, path, de->d_name, err)))
            break;
        len++;
    }
    closedir(d);
    if (rc) {
        free(v);
        return rc;
    }
    if (len)
        qsort(v, len, sizeof *v, by_pid);
    *out = v;
    *n = len;
    return VYRE_OK;
}

void vyre_telemetry_list_free(vyre_telemetry_entry *entries)
{
    free(entries);
}

/* Whether the page of the live process pid was left by an earlier process
 * with the same pid: its recorded start time differs from the live one's.
 * Unknown (unreadable page or /proc) counts as not stale. */
static int pid_reused(const page_id *id, int32_t pid)
{
    uint64_t live_start = 0;
    if (!id->valid || id->pid != pid || id->start_time == 0)
        return 0;
    if (vyre__telemetry_start_time(pid, &live_start) != VYRE_OK || live_start == 0)
        return 0;
    return live_start != id->start_time;
}

int vyre_telemetry_stale(const vyre_telemetry_snapshot *s)
{
    if (!s || s->pid <= 0 || vyre_telemetry_foreign(s))
        return 0;
    if (kill(s->pid, 0) != 0 && errno == ESRCH)
        return 1;
    uint64_t live_start = 0;
    if (s->start_time == 0 || vyre__telemetry_start_time(s->pid, &live_start) != VYRE_OK ||
        live_start == 0)
        return 0;
    return live_start != s->start_time;
}

int vyre_telemetry_reap(const char *dir, size_t *removed, vyre_error *err)
{
    if (removed)
        *removed = 0;
    char path[VYRE_TELEMETRY_PATH_MAX];
    int dfd = -1, rc;
    if ((rc = open_reader_dir(dir, path, sizeof path, &dfd, err)) || dfd < 0)
        return rc;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read directory '%s': %s", path,
                          strerror(e));
    }
    size_t count = 0;
    int32_t self = (int32_t)getpid();
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int32_t pid;
        int tmp;
        struct stat st, again;
        if (!parse_name(de->d_name, &pid, &tmp) || pid == self)
            continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        /* A writer in another PID namespace: the pid names some other
         * process here, or none, and says nothing about the writer. */
        page_id id;
        read_id(dfd, de->d_name, &id);
        if (id.foreign)
            continue;
        int dead = kill(pid, 0) != 0 && errno == ESRCH;
        if (!dead && (tmp || !pid_reused(&id, pid)))
            continue;
        /* Remove only the file judged: a new process that took the pid may
         * have replaced it meanwhile. */
        if (fstatat(dfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
            again.st_ino != st.st_ino || again.st_dev != st.st_dev)
            continue;
        if (unlinkat(dfd, de->d_name, 0) == 0)
            count++;
    }
    closedir(d);
    if (removed)
        *removed = count;
    return VYRE_OK;
}
