/*
 * jitcache_report.c - measuring and emptying the driver's JIT cache
 * directory (see vyre/jitcache.h).
 *
 * The directory is the driver's, in the driver's own format: we only count
 * and remove files in it. Walks use openat/fdopendir on descriptors opened
 * with O_NOFOLLOW, so a symlink inside the cache is counted as an entry and
 * never followed out of it, and no process-wide state (nftw, chdir) is used:
 * both functions are thread-safe.
 */
#include "vyre/jitcache.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* The driver nests two levels (<hex>/<hex>/<file>); anything much deeper is
 * not its layout, and the bound keeps a hostile tree from exhausting
 * descriptors. */
#define WALK_MAX_DEPTH 8

typedef struct walk {
    uint64_t files;
    uint64_t bytes;
    int remove; /* 1: unlink files and rmdir directories on the way out */
    const char *root;
    vyre_error *err;
} walk;

static int walk_fail(walk *w, int e, const char *what)
{
    return vyre__fail(w->err, vyre__errno_code(e),
                      e == EACCES || e == EPERM ? "check the permissions of the JIT cache directory"
                                                : NULL,
                      "cannot %s in JIT cache '%s': %s", what, w->root, strerror(e));
}

/* Walks the directory open at dfd (consumed). */
static int walk_dir(walk *w, int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return walk_fail(w, e, "read a directory");
    }
    rewinddir(d); /* the descriptor may have been read through a dup */
    int rc = VYRE_OK;
    struct dirent *ent;
    while (rc == VYRE_OK && (errno = 0, ent = readdir(d))) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue; /* removed meanwhile (the driver evicts too) */
            rc = walk_fail(w, errno, "inspect an entry");
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth >= WALK_MAX_DEPTH) {
                rc = vyre__fail(w->err, VYRE_EUNSAFE,
                                "the driver's cache is two levels deep: check CUDA_CACHE_PATH",
                                "JIT cache '%s' is nested deeper than %d levels", w->root,
                                WALK_MAX_DEPTH);
                break;
            }
            int sub =
                openat(dirfd(d), ent->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                if (errno == ENOENT)
                    continue;
                rc = walk_fail(w, errno, "open a directory");
                break;
            }
            rc = walk_dir(w, sub, depth + 1);
            if (rc == VYRE_OK && w->remove && unlinkat(dirfd(d), ent->d_name, AT_REMOVEDIR) != 0 &&
                errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
                rc = walk_fail(w, errno, "remove a directory");
            continue;
        }
        if (w->remove) {
            if (unlinkat(dirfd(d), ent->d_name, 0) != 0) {
                if (errno == ENOENT)
                    continue;
                rc = walk_fail(w, errno, "remove a file");
                break;
            }
        }
        if (S_ISREG(st.st_mode) || w->remove) {
            w->files++;
            w->bytes += (uint64_t)st.st_size;
        }
    }
    if (rc == VYRE_OK && errno != 0)
        rc = walk_fail(w, errno, "read a directory");
    closedir(d);
    return rc;
}

/* Opens path as a directory. 1 and *fd on success, 0 when it does not
 * exist, or a negative code. */
static int open_root(const char *path, int nofollow, int *fd, vyre_error *err)
{
    *fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (*fd >= 0)
        return 1;
    int e = errno;
    if (e == ENOENT)
        return 0;
    if (e == ENOTDIR)
        return vyre__fail(err, VYRE_EEXIST, "point CUDA_CACHE_PATH at a directory",
                          "JIT cache path '%s' is not a directory", path);
    if (e == ELOOP)
        return vyre__fail(
            err, VYRE_EUNSAFE, "point CUDA_CACHE_PATH at the real directory, not at a symlink",
            "JIT cache path '%s' is a symlink: refusing to empty what it points to", path);
    return vyre__fail(err, vyre__errno_code(e), NULL, "cannot open JIT cache '%s': %s", path,
                      strerror(e));
}

int vyre_jitcache_usage_get(const char *path, vyre_jitcache_usage *out, vyre_error *err)
{
    if (!path || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitcache_usage_get: NULL argument");
    memset(out, 0, sizeof *out);
    int fd = -1;
    int rc = open_root(path, 0, &fd, err);
    if (rc <= 0)
        return rc;
    out->exists = 1;
    walk w = {0, 0, 0, path, err};
    rc = walk_dir(&w, fd, 0);
    out->files = w.files;
    out->bytes = w.bytes;
    return rc;
}

static int is_hex_digit(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* The driver's layout at the top: an `index` file and one-hex-digit
 * directories. Anything else means CUDA_CACHE_PATH points somewhere else. */
static int check_layout(int fd, const char *path, vyre_error *err)
{
    int dup_fd = dup(fd);
    if (dup_fd < 0)
        return vyre__fail(err, vyre__errno_code(errno), NULL, "cannot read JIT cache '%s': %s",
                          path, strerror(errno));
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        int e = errno;
        close(dup_fd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read JIT cache '%s': %s", path,
                          strerror(e));
    }
    int rc = VYRE_OK;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *n = ent->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (strcmp(n, "index") == 0 && S_ISREG(st.st_mode))
            continue;
        if (is_hex_digit(n[0]) && n[1] == '\0' && S_ISDIR(st.st_mode))
            continue;
        char hint[VYRE_ERROR_HINT_MAX];
        snprintf(hint, sizeof hint,
                 "check that CUDA_CACHE_PATH points at the driver's JIT cache; if '%s' really "
                 "is one, empty it by hand",
                 path);
        rc = vyre__fail(err, VYRE_EUNSAFE, hint,
                        "'%s' does not look like a CUDA JIT cache (unexpected entry '%s'): "
                        "refusing to empty it",
                        path, n);
        break;
    }
    closedir(d);
    return rc;
}

int vyre_jitcache_clear(const char *path, uint64_t *files, uint64_t *bytes, vyre_error *err)
{
    if (files)
        *files = 0;
    if (bytes)
        *bytes = 0;
    if (!path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitcache_clear: NULL path");
    int fd = -1;
    int rc = open_root(path, 1, &fd, err);
    if (rc <= 0)
        return rc;
    if ((rc = check_layout(fd, path, err))) {
        close(fd);
        return rc;
    }
    walk w = {0, 0, 1, path, err};
    rc = walk_dir(&w, fd, 0);
    if (files)
        *files = w.files;
    if (bytes)
        *bytes = w.bytes;
    return rc;
}
