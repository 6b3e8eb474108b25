/*
 * foreign_root.c - opening another tool's cache directory the way vyre's
 * own cache root is opened (foreign_internal.h).
 *
 * Every command that changes a Triton or TorchInductor cache works
 * relative to the one descriptor this returns, held from the scan to the
 * last removal: a cache swapped for a symlink to someone else's folder
 * while a prune runs is never seen, because no path is opened again. The
 * descriptor is checked as ssh checks key files: it must belong to the
 * user (or root) and not be writable by others; a group-writable root is
 * accepted only with the setgid bit and a group the user is in (a cache a
 * team shares). A symlink on the way there owned by another user is
 * refused, since its owner decides where the removals land.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"

int vyre__foreign_check_root(int fd, const char *dir, const char *what, vyre_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat %s '%s': %s", what, dir,
                          strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return vyre__fail(err, VYRE_EINVAL, "name the cache directory",
                          "%s '%s' is not a directory", what, dir);
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return vyre__fail(
            err, VYRE_EUNSAFE,
            "run the command as the cache's owner, or point it at a cache of your own",
            "%s '%s' is owned by uid %u, not by you (uid %u): refusing to change "
            "files another user controls",
            what, dir, (unsigned)st.st_uid, (unsigned)geteuid());
    mode_t m = st.st_mode & 07777;
    int team = (m & S_IWGRP) && (m & S_ISGID) && vyre__in_group(st.st_gid);
    if ((m & S_IWOTH) || ((m & S_IWGRP) && !team))
        return vyre__fail(err, VYRE_EUNSAFE,
                          "run 'chmod go-w' on it (or, for a cache a group shares, 'chgrp GROUP' "
                          "and 'chmod 2775', and be in that group)",
                          "%s '%s' is writable by group or others (mode %04o): refusing to "
                          "change files others could plant",
                          what, dir, (unsigned)m);
    return VYRE_OK;
}

int vyre__foreign_open_root(const char *dir, const char *what, vyre_error *err)
{
    if (!dir || !*dir)
        return vyre__fail(err, VYRE_EINVAL, "name the cache directory", "no %s directory given",
                          what);
    char bad[PATH_MAX];
    uid_t owner = 0;
    if (vyre__path_check_links(dir, geteuid(), bad, sizeof bad, &owner) == 1)
        return vyre__fail(err, VYRE_EUNSAFE,
                          "name the directory by a path without another user's link",
                          "%s '%s' goes through the symlink '%s', owned by uid %u, not by you "
                          "(uid %u) or root: refusing to follow it",
                          what, dir, bad, (unsigned)owner, (unsigned)geteuid());
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return vyre__fail(err, VYRE_ENOENT,
                              "the tool creates it on its first compile; check its environment "
                              "variable, or name the directory",
                              "%s '%s' does not exist", what, dir);
        return vyre__fail(err, e == ENOTDIR ? VYRE_EINVAL : vyre__errno_code(e),
                          "name the cache directory", "cannot open %s '%s': %s", what, dir,
                          strerror(e));
    }
    int rc = vyre__foreign_check_root(fd, dir, what, err);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}
