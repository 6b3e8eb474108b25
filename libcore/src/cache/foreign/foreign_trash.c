/*
 * foreign_trash.c - removing a group of another tool's cache so that a
 * running reader never sees half of it (foreign_internal.h).
 */
#include <dirent.h>
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

int vyre__foreign_is_trash(const char *name)
{
    return name && !strncmp(name, VYRE__FOREIGN_TRASH_PREFIX, strlen(VYRE__FOREIGN_TRASH_PREFIX));
}

static int plain_name(const char *name)
{
    return name && *name && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

int vyre__foreign_trash_rename(int dirfd, const char *name, char *trash, size_t trash_size,
                               vyre_error *err)
{
    static unsigned counter;
    struct stat st;
    if (!plain_name(name))
        return vyre__fail(err, VYRE_EINVAL, "name one entry of the cache",
                          "'%s' is not a plain name", name ? name : "");
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return vyre__fail(err, vyre_errno_code(errno), NULL, "'%s': %s", name, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return vyre__fail(err, VYRE_EINVAL, "only group directories are removed",
                          "'%s' is a %s, not a directory", name, vyre__file_type_name(st.st_mode));
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        /* bounded: a trash name must fit NAME_MAX */
        int w = snprintf(trash, trash_size, "%s%.200s.%ld.%u", VYRE__FOREIGN_TRASH_PREFIX, name,
                         (long)getpid(), n);
        if (w < 0 || (size_t)w >= trash_size)
            return vyre__fail(err, VYRE_ETOOBIG, NULL, "trash name for '%s' too long", name);
        /* renameat2(RENAME_NOREPLACE) would be stricter, but a trash name
         * carries our pid and a counter: only we make it. */
        if (faccessat(dirfd, trash, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            continue;
        if (renameat(dirfd, name, dirfd, trash) == 0)
            return 0;
        return vyre__fail(err, vyre_errno_code(errno), NULL, "cannot rename '%s': %s", name,
                          strerror(errno));
    }
    return vyre__fail(err, VYRE_EIO, NULL, "no free trash name for '%s'", name);
}

static int remove_at(int at, const char *name, unsigned depth, unsigned long long *bytes,
                     int *first, vyre_error *err)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(at, name, 0) != 0 && errno != ENOENT) {
            if (!*first)
                *first = vyre__fail(err, VYRE_EIO, "check the permissions of the cache",
                                    "cannot remove '%s': %s", name, strerror(errno));
            return -1;
        }
        if (bytes)
            *bytes += vyre__disk_bytes(&st);
        return 0;
    }
    if (depth >= VYRE__FOREIGN_MAX_DEPTH) {
        if (!*first)
            *first = vyre__fail(err, VYRE_ETOOBIG, "remove it by hand if it is yours",
                                "'%s' is nested deeper than %d levels: left in place", name,
                                VYRE__FOREIGN_MAX_DEPTH);
        return -1;
    }
    int fd = vyre__open_dir_at(at, name);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        if (!*first)
            *first = vyre__fail(err, VYRE_EIO, NULL, "cannot open '%s': %s", name, strerror(errno));
        return -1;
    }
    int bad = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        bad |= remove_at(dirfd(d), de->d_name, depth + 1, bytes, first, err) != 0;
    }
    closedir(d);
    if (!bad && unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        if (!*first)
            *first =
                vyre__fail(err, VYRE_EIO, NULL, "cannot remove '%s': %s", name, strerror(errno));
        return -1;
    }
    if (!bad && bytes)
        *bytes += vyre__disk_bytes(&st); /* the directory's own blocks */
    return bad ? -1 : 0;
}

int vyre__foreign_remove_tree(int dirfd, const char *name, unsigned long long *bytes,
                              vyre_error *err)
{
    int first = 0;
    if (!plain_name(name))
        return vyre__fail(err, VYRE_EINVAL, NULL, "'%s' is not a plain name", name ? name : "");
    if (remove_at(dirfd, name, 0, bytes, &first, err) != 0)
        return first ? first : vyre__fail(err, VYRE_EIO, NULL, "cannot remove '%s'", name);
    return 0;
}

int vyre__foreign_remove_group(int dirfd, const char *name, unsigned long long *bytes,
                               vyre_error *err)
{
    char trash[512];
    int rc = vyre__foreign_trash_rename(dirfd, name, trash, sizeof trash, err);
    return rc ? rc : vyre__foreign_remove_tree(dirfd, trash, bytes, err);
}
