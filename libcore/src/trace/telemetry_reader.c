/*
 * telemetry_reader.c - reading one telemetry page: the validated,
 * consistent copy (vyre__telemetry_read, and vyre__telemetry_parse for an
 * image in memory). The directory and the list of pages are
 * telemetry_dir.c's, a writer's identity telemetry_identity.c's, layout 1
 * pages are upgraded by telemetry_v1.c, staleness and reap are
 * telemetry_reap.c's; the writer is telemetry_writer.c, and what a monitor
 * makes of successive reads (identity across reads, deltas, rates, ring
 * serials, staleness) is telemetry_tracker.c.
 *
 * Guarantees. The writer never aborts and never reads back from the shared
 * page what it uses for indexing (its sequence numbers and ring position are
 * kept privately), so a page scribbled on by someone else cannot make it
 * write out of bounds. The reader trusts nothing in a page or around it:
 * the directory must pass vyre__tel_open_dir's checks (telemetry_dir.c), the
 * page is opened relative to it without following a symlink or blocking on
 * a FIFO, and must be a regular file of ours (an owner's page only: another
 * user's page is refused even when its layout validates) that nobody else
 * may write. It is never mapped: it is copied with pread (see "reader" below), so a page
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

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    if (!vyre__tel_known_version(version))
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

/* Opens the page `path` for reading: its directory must pass
 * vyre__tel_open_dir's checks, the page itself is opened relative to it,
 * never through a symlink, never blocking (a FIFO planted under a page's
 * name), and must be a regular file of ours that nobody else may write. */
static int open_page(const char *path, int *fd_out, struct stat *st, vyre_error *err)
{
    char dir[VYRE_TELEMETRY_PATH_MAX];
    const char *name = NULL;
    int rc = split_path(path, dir, sizeof dir, &name, err);
    if (rc)
        return rc;
    int dfd;
    vyre_error derr;
    rc = vyre__tel_open_dir(dir, 0, 0, &dfd, &derr);
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

int vyre__telemetry_read(const char *path, vyre_telemetry_snapshot *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__telemetry_read: NULL snapshot");
    memset(out, 0, sizeof *out);
    if (!path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__telemetry_read: NULL path");
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
