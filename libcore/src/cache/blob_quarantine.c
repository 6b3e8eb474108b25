/*
 * blob_quarantine.c - moving a rejected blob aside into quarantine/ (named
 * for its reject reason, never through a symlink), and unlinking a blob
 * below the root.
 */
#include "vyre/blob.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/checksum.h"

static atomic_uint_fast64_t quarantine_counter;

/* ---- quarantine --------------------------------------------------------- */

/* Opens <root>/quarantine (creating it), never through a symlink. */
static int open_quarantine(int rootfd, const char *root, vyre_error *err)
{
    int qfd = vyre__open_beneath(rootfd, "quarantine", O_RDONLY | O_DIRECTORY, 0);
    if (qfd < 0 && errno == ENOENT) {
        if (mkdirat(rootfd, "quarantine", 0700) != 0 && errno != EEXIST)
            return vyre__blob_subdir_fail(rootfd, root, "quarantine", errno, err);
        qfd = vyre__open_beneath(rootfd, "quarantine", O_RDONLY | O_DIRECTORY, 0);
    }
    if (qfd < 0)
        return vyre__blob_subdir_fail(rootfd, root, "quarantine", errno, err);
    return qfd;
}

/* Moves the entry name of directory srcfd (path names it in messages) to
 * <root>/quarantine/<name>.<reason>.<secs>[.<pid>-<n>], never over an
 * earlier quarantined file. Counts nothing. dest receives the new path. The
 * entry itself moves (renameat): a symlink is never followed. */
int vyre__blob_quarantine_move(int rootfd, const char *root, int srcfd, const char *name,
                               const char *path, vyre_blob_reject why, char *dest, size_t dsize,
                               vyre_error *err)
{
    if (!*name)
        return vyre__fail(err, VYRE_EINVAL, "give the path of a file, not of a directory",
                          "cannot quarantine '%s': no file name", path);
    int qfd = open_quarantine(rootfd, root, err);
    if (qfd < 0)
        return qfd;
    long long secs = (long long)time(NULL);
    char qname[BLOB_PATH_MAX];
    int rc = VYRE_OK;
    for (int n = 0; n < 100;) {
        /* The plain name first; on a clash (the same file rejected twice in
         * one second) a suffix unique to this process and call. */
        int len =
            n ? snprintf(qname, sizeof qname, "%s.%s.%lld.%ld-%llu", name,
                         vyre_blob_reject_name(why), secs, (long)getpid(),
                         (unsigned long long)atomic_fetch_add_explicit(&quarantine_counter, 1,
                                                                       memory_order_relaxed))
              : snprintf(qname, sizeof qname, "%s.%s.%lld", name, vyre_blob_reject_name(why), secs);
        if (len < 0 || (size_t)len >= sizeof qname ||
            vyre__blob_root_path(dest, dsize, root, "quarantine/", NULL) != VYRE_OK ||
            strlen(dest) + (size_t)len >= dsize) {
            rc = vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                            "quarantine path for '%s' is too long", path);
            break;
        }
        memcpy(dest + strlen(dest), qname, (size_t)len + 1);
        /* RENAME_NOREPLACE keeps an earlier quarantined file of the same
         * name and second. */
        int r = renameat2(srcfd, name, qfd, qname, RENAME_NOREPLACE);
        if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
            /* Filesystem without RENAME_NOREPLACE: check, then rename (a
             * race only risks replacing another quarantined copy). */
            struct stat st;
            if (fstatat(qfd, qname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                errno = EEXIST;
            } else {
                r = renameat(srcfd, name, qfd, qname);
            }
        }
        if (r == 0) {
            /* The file's time becomes the time it was quarantined: prune
             * and cleanup age quarantine/ by it (quarantine_max_age). */
            utimensat(qfd, qname, NULL, AT_SYMLINK_NOFOLLOW);
            break;
        }
        int e = errno;
        if (e == EEXIST || e == ENOTEMPTY) {
            n++;
            if (n == 100)
                rc = vyre__fail(err, VYRE_EEXIST, "empty the cache's quarantine/ directory",
                                "too many quarantined copies of '%s'", path);
            continue;
        }
        int code = vyre__errno_code(e);
        rc = vyre__fail(err, code, vyre__blob_errno_hint(code),
                        "cannot move '%s' into quarantine '%s': %s", path, root, strerror(e));
        break;
    }
    close(qfd);
    return rc;
}

int vyre__blob_quarantine(const char *root, const char *path, vyre_blob_reject why, vyre_error *err)
{
    if (!root || !path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_quarantine: NULL argument");
    vyre__blob_count_reject(why);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char dir[BLOB_PATH_MAX];
    vyre__blob_dir_of(path, dir, sizeof dir);
    int rootfd = vyre__blob_open_root(root, err);
    if (rootfd < 0)
        return rootfd;
    /* The caller names the file's directory; only the file itself moves. */
    int srcfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (srcfd < 0) {
        int e = errno, code = vyre__errno_code(e);
        close(rootfd);
        return vyre__fail(err, code, vyre__blob_errno_hint(code), "cannot quarantine '%s': %s",
                          path, strerror(e));
    }
    char dest[BLOB_PATH_MAX];
    int rc =
        vyre__blob_quarantine_move(rootfd, root, srcfd, name, path, why, dest, sizeof dest, err);
    close(srcfd);
    close(rootfd);
    return rc;
}

int vyre__blob_quarantine_at(int rootfd, const char *root, const char *rel, vyre_blob_reject why,
                             vyre_error *err)
{
    vyre__blob_count_reject(why);
    char path[BLOB_PATH_MAX];
    if (vyre__blob_root_path(path, sizeof path, root, rel, err))
        return VYRE_ETOOBIG;
    const char *name;
    int srcfd = vyre__blob_open_parent(rootfd, rel, &name);
    if (srcfd < 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, VYRE_EUNSAFE,
                                       "a verify shows what is in the way, and a repair removes it",
                                       "cannot quarantine '%s': its directory is not a real "
                                       "directory of the cache (%s); nothing is followed",
                                       path, strerror(errno)));
    char dest[BLOB_PATH_MAX];
    int rc =
        vyre__blob_quarantine_move(rootfd, root, srcfd, name, path, why, dest, sizeof dest, err);
    close(srcfd);
    return rc;
}

int vyre__blob_unlink_at(int rootfd, const char *rel)
{
    const char *name;
    int dfd = vyre__blob_open_parent(rootfd, rel, &name);
    if (dfd < 0)
        return -1;
    int r = unlinkat(dfd, name, 0);
    int e = errno;
    close(dfd);
    errno = e;
    return r;
}

/* The directory part of rel below dirfd, opened without following
 * anything; *base gets the last component. -1 with errno on failure. */
int vyre__blob_open_parent(int dirfd, const char *rel, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    if (!slash)
        return dup(dirfd);
    char dir[BLOB_PATH_MAX];
    size_t n = (size_t)(slash - rel);
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, rel, n);
    dir[n] = '\0';
    return vyre__open_beneath(dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
}
