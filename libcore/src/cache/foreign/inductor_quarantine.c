/*
 * inductor_quarantine.c - reaching an entry of TorchInductor's cache by
 * its relative path without following a link (vyre__inductor_open_parent),
 * and moving a bad entry out of Inductor's way (vyre__inductor_quarantine).
 * Both work relative to the descriptor the scan opened: the cache's path
 * is never opened again, so a cache swapped for a symlink meanwhile is
 * never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/inductor_internal.h"
#include "cache/managed.h"

/* Splits path into at most 4 plain names (no "", ".", ".."). n, or -1. */
static int split(char *path, char **names)
{
    int n = 0;
    for (char *s = path; s; n++) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = '\0';
        if (n == 4 || !*s || !strcmp(s, ".") || !strcmp(s, ".."))
            return -1;
        names[n] = s;
        s = slash ? slash + 1 : NULL;
    }
    return n;
}

int vyre__inductor_open_parent(int root, const char *path, const char **last, vyre_error *err)
{
    char copy[VYRE_INDUCTOR_ENTRY_MAX], *names[4];
    int n = vyre__strlcpy(copy, path, sizeof copy) < sizeof copy ? split(copy, names) : -1;
    if (n < 1)
        return vyre__fail(err, VYRE_EINVAL, NULL, "'%s' is not an entry of the cache", path);
    int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return vyre__fail(err, VYRE_EIO, NULL, "cannot reach '%s' in the cache: %s", path,
                          strerror(errno));
    for (int i = 0; i + 1 < n; i++) {
        int next = vyre__open_dir_at(fd, names[i]);
        int e = errno;
        close(fd);
        if (next < 0)
            return vyre__fail(err,
                              e == ENOENT                  ? VYRE_ENOENT
                              : e == ELOOP || e == ENOTDIR ? VYRE_EINVAL
                                                           : VYRE_EIO,
                              NULL, "cannot open '%s' of '%s': %s", names[i], path,
                              e == ELOOP ? "a symbolic link" : strerror(e));
        fd = next;
    }
    *last = path + (names[n - 1] - copy);
    return fd;
}

/* Opens (creating 0700) the quarantine folder of the cache open as root
 * and the folders of path below it; *last is path's own name. -1 with
 * err set. */
static int open_quarantine_parent(int root, const char *dir, const char *path, vyre_error *err)
{
    char copy[VYRE_INDUCTOR_ENTRY_MAX + 32], *names[4];
    snprintf(copy, sizeof copy, "%s/%s", VYRE_INDUCTOR_QUARANTINE, path);
    int n = split(copy, names);
    int fd = n > 1 ? openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    for (int i = 0; fd >= 0 && i + 1 < n; i++) {
        if (mkdirat(fd, names[i], 0700) && errno != EEXIST) {
            int e = errno;
            close(fd);
            return vyre__fail(err, VYRE_EIO, NULL, "cannot create '%s' in '%s': %s", names[i], dir,
                              strerror(e));
        }
        int next = vyre__open_dir_at(fd, names[i]);
        close(fd);
        if (next < 0)
            return vyre__fail(err, VYRE_EIO, "remove what is in the way",
                              "'%s' in the quarantine is not a directory", names[i]);
        fd = next;
    }
    return fd >= 0 ? fd : vyre__fail(err, VYRE_EIO, NULL, "cannot open quarantine of '%s'", dir);
}

int vyre__inductor_quarantine(const vyre_inductor_cache *c, const char *path, vyre_error *err)
{
    const char *last;
    if (c->fd < 0 || !c->writable)
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "TorchInductor cache '%s' was not opened to be changed", c->dir);
    if (!strncmp(path, VYRE_INDUCTOR_QUARANTINE "/", strlen(VYRE_INDUCTOR_QUARANTINE) + 1))
        return vyre__fail(err, VYRE_EINVAL, NULL, "'%s' is in the quarantine already", path);
    int from = vyre__inductor_open_parent(c->fd, path, &last, err);
    if (from < 0)
        return from;
    int q = open_quarantine_parent(c->fd, c->dir, path, err);
    if (q < 0) {
        close(from);
        return q;
    }
    int rc = vyre__managed_quarantine_move(from, last, q, path, VYRE_INDUCTOR_QUARANTINE, err);
    close(q);
    close(from);
    return rc;
}
