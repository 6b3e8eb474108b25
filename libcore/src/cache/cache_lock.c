/*
 * cache_lock.c - the cache's lock file and the paths of its entries, the
 * bottom of the cache's own files (cache_internal.h): open, get, put,
 * prune and verify all take the lock through here, so none of them has
 * to call the file that opens the cache.
 */
#include "vyre/cache.h"

#include <errno.h>
#include <fcntl.h>

#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"

int vyre__cache_sub_path(const vyre_cache *c, const char *name, char *out, size_t size)
{
    return vyre__path_join(out, size, c->root, name, NULL);
}

/* A fresh descriptor per operation: flock belongs to the open file
 * description, and one handle may be used from several threads. Returns the
 * fd (>= 0) or a negative vyre code. */
int vyre__cache_lock(const vyre_cache *c, int op, vyre_error *err)
{
    char p[VYRE_CACHE_PATH_MAX];
    int rc = vyre__path_join(p, sizeof p, c->root, LOCK_NAME, err);
    if (rc)
        return rc;
    int fd =
        openat(c->rootfd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    /* flock needs no write access: another member's lock in a group cache,
     * made before the group setup, is locked read-only. */
    if (fd < 0 && errno == EACCES && c->group_cache)
        fd = openat(c->rootfd, LOCK_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0)
        (void)vyre__fchmod_umask(fd, c->umask); /* only a lock of ours */
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, VYRE_EUNSAFE,
                                       "a repair removes it; the cache recreates its lock file",
                                       "the cache lock '%s' is not a regular file", p));
    }
    if (fd < 0) {
        int e = errno;
        return vyre__remedy(
            err, e == ELOOP ? VYRE_REMEDY_CACHE_REPAIR : VYRE_REMEDY_NONE,
            vyre__fail(err, vyre__errno_code(e),
                       e == ELOOP ? "it is a symlink, which is never followed: a repair removes "
                                    "it, and the cache recreates its lock file"
                                  : "check the cache directory's permissions",
                       "cannot open the cache lock '%s': %s", p, strerror(e)));
    }
    while (flock(fd, op) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot lock '%s': %s", p, strerror(e));
    }
    return fd;
}

void vyre__cache_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the last descriptor releases the flock */
}

int vyre__cache_readonly_error(const vyre_cache *c, vyre_error *err)
{
    if (c->config_readonly) {
        char where[VYRE_CONFIG_WHERE_MAX + 32];
        vyre_config_format_where(&c->config, VYRE_CONF_READ_ONLY, where, sizeof where);
        return vyre__remedy(err, VYRE_REMEDY_CACHE_CONFIG,
                            vyre__fail(err, VYRE_EROFS,
                                       "set read_only = false (or -o read_only=false) to write it",
                                       "the pipeline cache '%s' is read-only by configuration "
                                       "(read_only = true, from %s)",
                                       c->root, where));
    }
    return vyre__fail(err, VYRE_EROFS,
                      "ask the cache's owner to add the blob, or point VYRE_PTX_CACHE_DIR at a "
                      "cache of your own",
                      "the pipeline cache '%s' is read-only", c->root);
}
