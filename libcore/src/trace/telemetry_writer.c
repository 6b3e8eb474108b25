/*
 * telemetry_writer.c - the writing side of the per-process telemetry page:
 * creating and naming this process's page, publishing the counters, the
 * kernel ring, the process-wide page and fork handling. The directory
 * checks come from telemetry_dir.c and the PID namespace from
 * telemetry_identity.c (through telemetry_internal.h); the seqlock protocol
 * is described in telemetry_reader.c.
 *
 * Guarantees. The writer never aborts and never reads back from the shared
 * page what it uses for indexing (its sequence numbers and ring position are
 * kept privately), so a page scribbled on by someone else cannot make it
 * write out of bounds.
 */
#include "vyre/telemetry.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "trace/telemetry_internal.h"

static const char TEL_MAGIC[8] = VYRE__TEL_MAGIC;

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
            vyre__tel_page_id id;
            vyre__tel_read_id(dfd, name, &id);
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

/* Makes the new tmp file exactly a page: mode 0600, every block reserved,
 * a regular file of ours; *st gets its final stat. */
static int settle_tmp(int fd, const char *dir, const char *tmp, struct stat *st, vyre_error *err)
{
    /* The creation mode went through the umask; the page is exactly 0600. */
    if (fchmod(fd, 0600) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), "set VYRE_TELEMETRY_DIR to a local directory",
                          "cannot set the mode of telemetry page '%s/%s': %s", dir, tmp,
                          strerror(e));
    }
    int rc = reserve(fd, dir, tmp, err);
    if (rc)
        return rc;
    if (fstat(fd, st) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat telemetry page '%s/%s': %s",
                          dir, tmp, strerror(e));
    }
    /* Made here with O_EXCL | O_NOFOLLOW, so this holds unless the file
     * system lies; a page that is not exactly this is never published. */
    if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & 07777) != 0600)
        return vyre__fail(err, VYRE_EUNSAFE, "set VYRE_TELEMETRY_DIR to a local directory of yours",
                          "telemetry page '%s/%s' is not a 0600 regular file of uid %u after "
                          "creation (mode %04o, uid %u)",
                          dir, tmp, (unsigned)geteuid(), (unsigned)(st->st_mode & 07777),
                          (unsigned)st->st_uid);
    return VYRE_OK;
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
    vyre__tel_own_pid_ns(&h->pid_ns_dev, &h->pid_ns_ino);
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
    if ((rc = vyre__tel_resolve_dir(dir, sizeof dir, &is_default, err)))
        return rc;
    if ((rc = vyre__tel_open_dir(dir, is_default, 1, &dfd, err)))
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
    if ((rc = settle_tmp(fd, dir, tmp, &st, err)))
        goto fail;
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

int vyre__telemetry_open(vyre_telemetry **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__telemetry_open: NULL out");
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

void vyre__telemetry_close(vyre_telemetry *t)
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

static vyre_telemetry *global_page(void)
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

vyre_telemetry *vyre_telemetry_global(vyre_error *err)
{
    vyre_telemetry *t = global_page();
    if (!err)
        return t;
    vyre_error_clear(err);
    if (!t) {
        pthread_mutex_lock(&g_lock);
        if (g_global_code)
            *err = g_global_err, err->code = g_global_code;
        pthread_mutex_unlock(&g_lock);
    }
    return t;
}

/* The global page goes away with a normal exit (or dlclose); it is only
 * unlinked, not unmapped, since other threads may still publish into it. */
__attribute__((destructor)) static void global_at_exit(void)
{
    vyre_telemetry *t = atomic_load_explicit(&g_global, memory_order_acquire);
    if (usable(t))
        unlink_page(t);
}
