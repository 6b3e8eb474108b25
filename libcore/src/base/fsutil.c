/*
 * fsutil.c - filesystem helpers shared inside libcore: recursive mkdir,
 * bounded path joins, XDG base-directory resolution, bounded whole-file
 * reads, and descriptor-relative opens that never follow a symbolic link below their starting
 * directory.
 */
#include "base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/internal.h"

int vyre__path_join(char *out, size_t size, const char *a, const char *b, vyre_error *err)
{
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    if (la + (size_t)slash + lb + 1 > size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path",
                          "path too long: '%s' + '%s'", a, b);
    memcpy(out, a, la);
    if (slash)
        out[la] = '/';
    memcpy(out + la + (size_t)slash, b, lb + 1);
    return VYRE_OK;
}

/* Opens path for reading if it is a regular file: the fd, or a negative
 * VYRE_E* code with err filled and errno set. O_NONBLOCK: opening a FIFO
 * for reading waits for a writer, forever when there is none (seen with a
 * spec's "kernel" and with seed); the type is checked on the open file,
 * then blocking reads are restored. */
static int open_regular(const char *path, vyre_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int e = errno, rc = 0;
    struct stat st;
    if (fd < 0) {
        rc = vyre__fail(err, vyre__errno_code(e), "check the path", "cannot read '%s': %s", path,
                        strerror(e));
    } else if (fstat(fd, &st) != 0) {
        e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), NULL, "cannot read '%s': %s", path, strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        rc = vyre__fail(err, VYRE_EINVAL,
                        "give a regular file (vyre reads no FIFO, device or directory: it could "
                        "wait forever)",
                        "cannot read '%s': it is a %s, not a regular file", path,
                        vyre__file_type_name(st.st_mode));
    } else {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            e = errno;
            rc = vyre__fail(err, vyre__errno_code(e), NULL, "cannot read '%s': %s", path,
                            strerror(e));
        }
    }
    if (rc && fd >= 0)
        close(fd);
    errno = e;
    return rc ? rc : fd;
}

int vyre__read_file(const char *path, size_t max, char **out, size_t *len, vyre_error *err)
{
    int fd = open_regular(path, err);
    if (fd < 0)
        return fd;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? VYRE_OK : VYRE_ENOMEM, e = ENOMEM;
    while (rc == VYRE_OK) {
        if (n + 1 == cap) {
            /* Grow by doubling, never past what max allows plus the byte
             * that tells a file of max bytes from a longer one. */
            size_t ncap = cap > max / 2 + 1 ? max + 2 : cap * 2;
            if (n > max) {
                rc = VYRE_ETOOBIG;
                e = EFBIG;
                break;
            }
            char *g = realloc(buf, ncap);
            if (!g) {
                rc = VYRE_ENOMEM;
                e = ENOMEM;
                break;
            }
            buf = g;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = VYRE_EIO;
            e = errno;
        } else if (r == 0) {
            break;
        } else {
            n += (size_t)r;
        }
    }
    if (rc == VYRE_OK && n > max) {
        rc = VYRE_ETOOBIG;
        e = EFBIG;
    }
    close(fd);
    if (rc) {
        free(buf);
        if (rc == VYRE_ETOOBIG)
            vyre__fail(err, rc, NULL, "'%s' is larger than %zu bytes", path, max);
        else if (rc == VYRE_ENOMEM)
            vyre__fail(err, rc, NULL, "out of memory reading '%s'", path);
        else
            vyre__fail(err, rc, NULL, "cannot read '%s': %s", path, strerror(e));
        errno = e;
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return VYRE_OK;
}

int vyre__mkdirs(const char *path, mode_t mode, vyre_error *err)
{
    char buf[4096];
    if (vyre__strlcpy(buf, path, sizeof buf) >= sizeof buf)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path", "path too long: '%s'",
                          path);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    for (char *p = buf + 1;; p++) {
        int last = *p == '\0';
        if (*p == '/' || last) {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST) {
                int e = errno;
                return vyre__fail(err, vyre__errno_code(e),
                                  "check the permissions of the parent directory, or choose "
                                  "another location",
                                  "cannot create directory '%s': %s", buf, strerror(e));
            }
            *p = saved;
            if (last)
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return vyre__fail(err, VYRE_EEXIST, "remove or rename the file that is in the way",
                          "'%s' exists and is not a directory", path);
    return VYRE_OK;
}

int vyre__xdg_path(const char *xdg_var, const char *home_rel, const char *suffix, char *out,
                   size_t size, vyre_error *err)
{
    char base[4096];
    /* secure_getenv: in a set-user/group-ID program these are the invoker's,
     * and the paths they name would be read and written with our rights. */
    const char *xdg = secure_getenv(xdg_var);
    const char *home = secure_getenv("HOME");
    /* The XDG spec says relative or empty values are to be ignored. */
    if (xdg && xdg[0] == '/') {
        if (vyre__strlcpy(base, xdg, sizeof base) >= sizeof base)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "%s is too long", xdg_var);
    } else if (home && home[0] == '/') {
        int rc = vyre__path_join(base, sizeof base, home, home_rel, err);
        if (rc)
            return rc;
    } else {
        char hint[256];
        snprintf(hint, sizeof hint, "set %s or HOME to an absolute directory", xdg_var);
        return vyre__fail(err, VYRE_EENV, hint,
                          "cannot choose a default location: neither %s nor HOME is set to an "
                          "absolute path",
                          xdg_var);
    }
    return vyre__path_join(out, size, base, suffix, err);
}

/* 0: untried, 1: works, -1: the kernel (or a seccomp filter) lacks it. */
static atomic_int openat2_state;

/* The portable walk: every directory on the way opened O_NOFOLLOW, so a
 * symlink anywhere fails the open (ENOTDIR or ELOOP) instead of being
 * followed; the same guarantee as RESOLVE_NO_SYMLINKS, one call per part. */
static int open_walk(int dirfd, const char *relpath, int flags, mode_t mode)
{
    char buf[4096];
    if (vyre__strlcpy(buf, relpath, sizeof buf) >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int cur = dirfd, fd = -1;
    char *part = buf;
    for (;;) {
        char *slash = strchr(part, '/');
        if (slash)
            *slash = '\0';
        if (!*part || strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
            if (cur != dirfd)
                close(cur);
            errno = EXDEV; /* as RESOLVE_BENEATH says for an escape */
            return -1;
        }
        if (!slash) {
            fd = openat(cur, part, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            break;
        }
        int next = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (cur != dirfd)
            close(cur);
        if (next < 0) {
            errno = e;
            return -1;
        }
        cur = next;
        part = slash + 1;
    }
    int e = errno;
    if (cur != dirfd)
        close(cur);
    errno = e;
    return fd;
}

int vyre__open_beneath(int dirfd, const char *relpath, int flags, mode_t mode)
{
    if (!relpath || !*relpath || relpath[0] == '/') {
        errno = EXDEV;
        return -1;
    }
    if (atomic_load_explicit(&openat2_state, memory_order_relaxed) >= 0) {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = (uint64_t)(unsigned)(flags | O_NOFOLLOW | O_CLOEXEC);
        how.mode = (flags & (O_CREAT | O_TMPFILE)) ? (uint64_t)mode : 0;
        how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        for (int attempt = 0; attempt < 8; attempt++) {
            long fd = syscall(SYS_openat2, dirfd, relpath, &how, sizeof how);
            if (fd >= 0) {
                atomic_store_explicit(&openat2_state, 1, memory_order_relaxed);
                return (int)fd;
            }
            /* EAGAIN: a concurrent rename made the kernel unsure that the
             * walk stayed beneath dirfd; it asks for a retry. */
            if (errno == EAGAIN || errno == EINTR)
                continue;
            if (errno == ENOSYS) {
                atomic_store_explicit(&openat2_state, -1, memory_order_relaxed);
                break;
            }
            if (errno == EPERM)
                break; /* a seccomp filter, or a real EPERM: the walk says which */
            return -1;
        }
    }
    return open_walk(dirfd, relpath, flags, mode);
}

int vyre__open_dir_at(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int vyre__mkdirat_umask(int dirfd, const char *name, int umask)
{
    if (mkdirat(dirfd, name, 0700) != 0)
        return -1;
    if (umask < 0)
        return 0;
    int fd = vyre__open_dir_at(dirfd, name);
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = -1;
    } else {
        mode_t want = ((mode_t)0777 & ~(mode_t)umask) | (st.st_mode & S_ISGID);
        if ((st.st_mode & 07777) != want && fchmod(fd, want) != 0)
            rc = -1;
    }
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int vyre__fchmod_umask(int fd, int umask)
{
    if (umask < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    mode_t want = (mode_t)0666 & ~(mode_t)umask;
    if (st.st_uid != geteuid() || (st.st_mode & 07777) == want)
        return 0;
    return fchmod(fd, want);
}

const char *vyre__file_type_name(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFLNK:
        return "symlink";
    case S_IFIFO:
        return "FIFO";
    case S_IFSOCK:
        return "socket";
    case S_IFCHR:
    case S_IFBLK:
        return "device";
    case S_IFDIR:
        return "directory";
    default:
        return "regular file";
    }
}

/* Drops the last component of the absolute path p ("/a/b" -> "/a",
 * "/a" -> ""; "" is the root). */
static void drop_last(char *p)
{
    char *s = strrchr(p, '/');
    if (s)
        *s = '\0';
}

/* Takes the next component of *rest into comp (NUL-terminated, at most
 * size - 1 bytes: longer is ENAMETOOLONG). 0 at the end. */
static int next_component(const char **rest, char *comp, size_t size)
{
    const char *r = *rest;
    while (*r == '/')
        r++;
    if (!*r)
        return 0;
    size_t n = strcspn(r, "/");
    if (n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(comp, r, n);
    comp[n] = '\0';
    *rest = r + n;
    return 1;
}

#define LINKS_MAX 40 /* the kernel's own limit on links in one lookup */

int vyre__path_check_links(const char *path, uid_t uid, char *bad, size_t bad_size, uid_t *owner)
{
    char done[PATH_MAX] = "", *rest_buf = malloc(2 * PATH_MAX), *next = malloc(2 * PATH_MAX);
    int rc = -1, links = 0;
    if (!rest_buf || !next) {
        errno = ENOMEM;
        goto out;
    }
    if (path[0] != '/' && !getcwd(done, sizeof done))
        goto out;
    if (strcmp(done, "/") == 0)
        done[0] = '\0';
    if (vyre__strlcpy(rest_buf, path, 2 * PATH_MAX) >= 2 * PATH_MAX) {
        errno = ENAMETOOLONG;
        goto out;
    }
    const char *rest = rest_buf;
    char comp[NAME_MAX + 1];
    int more;
    while ((more = next_component(&rest, comp, sizeof comp)) > 0) {
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            drop_last(done);
            continue;
        }
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof cand, "%s/%s", done, comp) >= (int)sizeof cand) {
            errno = ENAMETOOLONG;
            goto out;
        }
        struct stat st;
        if (lstat(cand, &st) != 0) {
            rc = errno == ENOENT ? 0 : -1; /* nothing further to follow */
            goto out;
        }
        if (!S_ISLNK(st.st_mode)) {
            memcpy(done, cand, sizeof done);
            continue;
        }
        if (st.st_uid != uid && st.st_uid != 0) {
            if (bad)
                vyre__strlcpy(bad, cand, bad_size);
            if (owner)
                *owner = st.st_uid;
            rc = 1;
            goto out;
        }
        char target[PATH_MAX];
        ssize_t n = readlink(cand, target, sizeof target - 1);
        if (n < 0)
            goto out;
        target[n] = '\0';
        if (++links > LINKS_MAX) {
            errno = ELOOP;
            goto out;
        }
        if (snprintf(next, 2 * PATH_MAX, "%s/%s", target, rest) >= 2 * PATH_MAX) {
            errno = ENAMETOOLONG;
            goto out;
        }
        memcpy(rest_buf, next, 2 * PATH_MAX);
        rest = rest_buf;
        if (target[0] == '/')
            done[0] = '\0';
    }
    rc = more < 0 ? -1 : 0;
out:
    free(rest_buf);
    free(next);
    return rc;
}

int vyre__in_group(gid_t gid)
{
    if (gid == getegid())
        return 1;
    int n = getgroups(0, NULL);
    if (n <= 0)
        return 0;
    gid_t *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return 0;
    n = getgroups(n, v);
    int found = 0;
    for (int i = 0; i < n && !found; i++)
        found = v[i] == gid;
    free(v);
    return found;
}
