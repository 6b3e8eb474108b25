/*
 * cache_usage.c - measuring a cache directory and its filesystem (see
 * vyre/usage.h).
 *
 * The walk uses openat/fdopendir on descriptors opened O_NOFOLLOW |
 * O_DIRECTORY and fstatat(AT_SYMLINK_NOFOLLOW), so a link inside the tree
 * is an entry, never a way out of it, and no process-wide state (nftw,
 * chdir) is used. It is bounded three ways: entries, time (checked every
 * CLOCK_EVERY entries: one stat is about a microsecond on a local disk and
 * up to a millisecond on Lustre), and depth (which also bounds the
 * descriptors held). Whatever cannot be read is counted in `skipped` and
 * the walk goes on: a monitor wants a figure, not an error.
 */
#include "vyre/usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/disk_size.h"

/* Entries between two looks at the clock. */
#define CLOCK_EVERY 256

typedef struct walk {
    vyre_usage *u;
    uint64_t max_entries;
    uint64_t deadline_ns;
    uint64_t seen;
    int stop;
} walk;

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

/* Counts one entry; 1 when a bound is reached (the walk stops). */
static int count_entry(walk *w, const struct stat *st)
{
    vyre_usage *u = w->u;
    u->files++;
    u->bytes += vyre__disk_bytes(st);
    if (S_ISREG(st->st_mode))
        u->apparent_bytes += (uint64_t)st->st_size;
    if (mtime_ns(st) > u->newest_mtime_ns)
        u->newest_mtime_ns = mtime_ns(st);
    w->seen++;
    if (w->seen >= w->max_entries ||
        (w->seen % CLOCK_EVERY == 0 && vyre__mono_ns() >= w->deadline_ns)) {
        w->stop = 1;
        u->partial = 1;
    }
    return w->stop;
}

static int is_dot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* Walks the directory open at fd (taken: closed here) at depth. */
static void walk_dir(walk *w, int fd, unsigned depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        w->u->skipped++;
        return;
    }
    struct dirent *de;
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (!de) {
            if (errno)
                w->u->skipped++; /* the rest of this directory is unread */
            break;
        }
        if (is_dot(de->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) /* gone meanwhile: a writer's temp file, not a loss */
                w->u->skipped++;
            continue;
        }
        if (count_entry(w, &st))
            break;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (depth + 1 > VYRE_USAGE_MAX_DEPTH) {
            w->u->skipped++;
            continue;
        }
        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            if (errno != ENOENT)
                w->u->skipped++;
            continue;
        }
        walk_dir(w, sub, depth + 1);
        if (w->stop)
            break;
    }
    closedir(d);
}

/* statvfs of path, else of its nearest existing parent. */
static void measure_fs(const char *path, vyre_usage *u)
{
    char p[VYRE_USAGE_PATH_MAX];
    if (vyre__strlcpy(p, path, sizeof p) >= sizeof p)
        return;
    struct statvfs sv;
    while (statvfs(p, &sv) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return;
        char *slash = strrchr(p, '/');
        if (!slash)
            return; /* a relative name with no existing part: "." is not it */
        if (slash == p) {
            if (p[1] == '\0')
                return;
            p[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
    uint64_t fr = sv.f_frsize ? (uint64_t)sv.f_frsize : (uint64_t)sv.f_bsize;
    u->fs_valid = 1;
    u->fs_size_bytes = (uint64_t)sv.f_blocks * fr;
    u->fs_free_bytes = (uint64_t)sv.f_bfree * fr;
    u->fs_avail_bytes = (uint64_t)sv.f_bavail * fr;
    u->fs_files = (uint64_t)sv.f_files;
    u->fs_avail_files = (uint64_t)sv.f_favail;
}

int vyre_usage_measure(const char *dir, uint64_t max_entries, uint64_t max_ms, vyre_usage *out,
                       vyre_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!dir || !*dir || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no directory to measure");
    uint64_t t0 = vyre__mono_ns();
    measure_fs(dir, out);
    /* The root is followed: it is where the cache's own program looks. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        out->scan_ns = vyre__mono_ns() - t0;
        if (e == ENOENT)
            return VYRE_OK;
        if (e == ENOTDIR)
            return vyre__fail(err, VYRE_EEXIST, "point the cache's variable at a directory",
                              "'%s' is not a directory", dir);
        return vyre__fail(err, vyre__errno_code(e),
                          e == EACCES || e == EPERM ? "check the directory's permissions" : NULL,
                          "cannot read '%s': %s", dir, strerror(e));
    }
    out->exists = 1;
    struct stat rst; /* the root's own blocks count, as in du -s */
    if (fstat(fd, &rst) == 0)
        out->bytes += vyre__disk_bytes(&rst);
    walk w = {
        .u = out,
        .max_entries = max_entries ? max_entries : VYRE_USAGE_DEFAULT_MAX_ENTRIES,
        .deadline_ns = t0 + (max_ms ? max_ms : VYRE_USAGE_DEFAULT_MAX_MS) * 1000000u,
    };
    walk_dir(&w, fd, 0);
    out->scan_ns = vyre__mono_ns() - t0;
    return VYRE_OK;
}

double vyre_usage_fs_full_pct(const vyre_usage *u)
{
    if (!u || !u->fs_valid || u->fs_size_bytes == 0 || u->fs_free_bytes > u->fs_size_bytes)
        return -1;
    double used = (double)(u->fs_size_bytes - u->fs_free_bytes);
    double denom = used + (double)u->fs_avail_bytes;
    return denom > 0 ? 100.0 * used / denom : -1;
}

double vyre_usage_inodes_full_pct(const vyre_usage *u)
{
    if (!u || !u->fs_valid || u->fs_files == 0 || u->fs_avail_files > u->fs_files)
        return -1;
    return 100.0 * (double)(u->fs_files - u->fs_avail_files) / (double)u->fs_files;
}
