/*
 * foreign_trash_file.c - removing one file of another tool's cache so that
 * a running reader opens the whole file or none (foreign_internal.h): the
 * file variant of vyre__foreign_remove_group, for TorchInductor's kernels
 * and autotune results, which are single files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/disk_size.h"
#include "cache/foreign/foreign_internal.h"

int vyre__foreign_remove_file(int dirfd, const char *name, unsigned long long *bytes,
                              vyre_error *err)
{
    static unsigned counter;
    struct stat st;
    if (!name || !*name || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
        return vyre__fail(err, VYRE_EINVAL, "name one entry of the cache",
                          "'%s' is not a plain name", name ? name : "");
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return vyre__fail(err, vyre_errno_code(errno), NULL, "'%s': %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return vyre__fail(err, VYRE_EINVAL, "only regular files are removed this way",
                          "'%s' is a %s, not a regular file", name,
                          vyre__file_type_name(st.st_mode));
    char trash[512];
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        /* ".f" keeps these apart from the group names foreign_trash.c makes. */
        /* bounded: a trash name must fit NAME_MAX */
        int w = snprintf(trash, sizeof trash, "%s%.200s.%ld.f%u", VYRE__FOREIGN_TRASH_PREFIX, name,
                         (long)getpid(), n);
        if (w < 0 || (size_t)w >= sizeof trash)
            return vyre__fail(err, VYRE_ETOOBIG, NULL, "trash name for '%s' too long", name);
        if (faccessat(dirfd, trash, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            continue;
        if (renameat(dirfd, name, dirfd, trash) != 0)
            return vyre__fail(err, vyre_errno_code(errno), NULL, "cannot rename '%s': %s", name,
                              strerror(errno));
        if (unlinkat(dirfd, trash, 0) != 0 && errno != ENOENT)
            return vyre__fail(err, VYRE_EIO, "check the permissions of the cache",
                              "cannot remove '%s' (renamed '%s'): %s", name, trash,
                              strerror(errno));
        if (bytes)
            *bytes += vyre__disk_bytes(&st);
        return 0;
    }
    return vyre__fail(err, VYRE_EIO, NULL, "no free trash name for '%s'", name);
}
