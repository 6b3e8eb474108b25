/*
 * cache_open.c - opening a pipeline cache: root resolution and safety, the
 * directory layout, the marker that says a directory is ours, the index
 * behind the handle, and the cross-process lock.
 *
 * The cache is split by operation, as curl's lib/vtls/ is by backend: this
 * file opens and closes; cache_io.c gets and puts; cache_remote.c drives
 * the remote stores; cache_scan.c walks the directories and reads rows
 * (foreach, stats, find by prefix); cache_prune.c prunes and cleans up;
 * cache_verify.c verifies, reindexes and clears. What they share is in
 * cache_internal.h.
 *
 * The blobs are the truth: every decision that matters for correctness is
 * taken from the files; the index only makes listing, LRU order and usage
 * cheap. Nothing outside the cache is ever touched: the root (which may be
 * a symlink the user made) is opened once, and everything below it is
 * reached relative to that descriptor without following a symbolic link
 * at any component (openat2 RESOLVE_NO_SYMLINKS, or O_NOFOLLOW walks);
 * removals are unlinkat/renameat in directories opened that way. A
 * symlink, FIFO, socket, device or hard link where the cache expects a
 * directory or a blob is reported by verify and, on repair or clear, the
 * entry itself is removed, never what it points to.
 */
#include "cache/remote/remote_internal.h"
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/index.h"

#define INDEX_NAME    "index.sqlite3"
#define MARKER_MAX    512
#define MARKER_TMP    "." VYRE_CACHE_MARKER "." /* + pid.n: the marker being written */
#define FOREIGN_INDEX INDEX_NAME ".foreign-"    /* a foreign index, kept aside by reindex */
#define MARKER_LAYOUT 1

/* ---- root resolution and safety ---------------------------------------- */

int vyre_cache_default_root(char *buf, size_t size, vyre_error *err)
{
    const char *env = secure_getenv("VYRE_PTX_CACHE_DIR");
    if (env) {
        if (!*env)
            return vyre__fail(err, VYRE_EENV,
                              "unset VYRE_PTX_CACHE_DIR to use the default "
                              "($XDG_CACHE_HOME/vyre/ptx-cache), or set it to a directory",
                              "VYRE_PTX_CACHE_DIR is set but empty");
        if (vyre__strlcpy(buf, env, size) >= size)
            return vyre__fail(err, VYRE_EENV, "set VYRE_PTX_CACHE_DIR to a shorter path",
                              "VYRE_PTX_CACHE_DIR is too long");
        return VYRE_OK;
    }
    int rc = vyre__xdg_path("XDG_CACHE_HOME", ".cache", "vyre/ptx-cache", buf, size, err);
    if (rc == VYRE_EENV && err)
        vyre__strlcpy(err->hint,
                      "set VYRE_PTX_CACHE_DIR to the pipeline cache directory, or set "
                      "XDG_CACHE_HOME or HOME",
                      sizeof err->hint);
    return rc;
}

static int check_owner_mode(const char *dir, const struct stat *st, int umask, int *group,
                            vyre_error *err);

/* ssh's rule for key files: the directory must belong to us (or root) and
 * must not be writable by group or others, or someone else could plant a
 * blob that we would hand to the driver. The one exception is a group
 * cache the user asked for (check_owner_mode). */
static int check_safe(const char *dir, int umask, vyre_error *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat '%s': %s", dir, strerror(e));
    }
    if (S_ISLNK(st.st_mode) && stat(dir, &st) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), "point the cache at a real directory",
                          "'%s' is a dangling symlink: %s", dir, strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return vyre__fail(err, VYRE_EEXIST, "remove the file or choose another cache directory",
                          "cache directory '%s' is not a directory", dir);
    return check_owner_mode(dir, &st, umask, NULL, err);
}

/* How to set up a cache shared by a group, for the hints. */
#define GROUP_HINT_FMT                                                                             \
    "to share the cache with a group instead: 'chgrp GROUP %s && chmod 2775 %s', and "             \
    "'umask = 002' in %s/vyre.conf"

/* The ownership and mode half of check_safe, on a stat result (of the
 * path, then of the descriptor that is kept, so that what is checked is
 * what is used). A group cache is accepted when the cache's umask allows
 * group writes (umask & 020 == 0) and the root is group-writable and
 * setgid, its group one the user is in, and not writable by others; it may
 * then belong to another user. Anything writable by others is refused,
 * sticky bit or not: others could plant entries the cache has not created
 * yet. *group (may be NULL) is set to 1 for an accepted group cache. */
static int check_owner_mode(const char *dir, const struct stat *pst, int umask, int *group,
                            vyre_error *err)
{
    struct stat st = *pst;
    if (group)
        *group = 0;
    mode_t m = st.st_mode & 07777;
    int shared_layout = (m & S_IWGRP) && (m & S_ISGID) && !(m & S_IWOTH);
    int member = shared_layout && vyre__in_group(st.st_gid);
    int umask_ok = umask >= 0 && !(umask & 020);
    if (shared_layout && member && umask_ok) {
        if (group)
            *group = 1;
        return VYRE_OK;
    }
    /* Set up for a group the user is in, but opened without a umask
     * that lets the group write what the cache creates. */
    char hint[VYRE_ERROR_HINT_MAX];
    if (shared_layout && member && !umask_ok) {
        if (snprintf(hint, sizeof hint,
                     "put 'umask = 002' in %s/vyre.conf (or VYRE_CACHE_UMASK=002 in "
                     "the environment), so that what the cache creates stays "
                     "writable by the group",
                     dir) < 0)
            hint[0] = '\0';
        char um[16] = "not set";
        if (umask >= 0)
            snprintf(um, sizeof um, "%03o", (unsigned)umask);
        /* The front end names its configuration command (the remedy). */
        return vyre__remedy(err, VYRE_REMEDY_CACHE_CONFIG,
                            vyre__fail(err, VYRE_EUNSAFE, hint,
                                       "cache directory '%s' is set up for a group (mode %04o, "
                                       "group %u) but the cache's umask (%s) does not allow "
                                       "group writes: refusing to share it",
                                       dir, (unsigned)m, (unsigned)st.st_gid, um));
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        if (snprintf(hint, sizeof hint,
                     "use a cache directory of your own (VYRE_PTX_CACHE_DIR), or 'chown %u %s'; "
                     "or, for a cache shared by a group: 'chgrp GROUP %s && chmod 2775 %s', "
                     "'umask = 002' in %s/vyre.conf, and be in that group",
                     (unsigned)geteuid(), dir, dir, dir, dir) < 0)
            hint[0] = '\0';
        if (shared_layout && !member)
            return vyre__fail(err, VYRE_EUNSAFE, hint,
                              "cache directory '%s' is owned by uid %u and shared with group "
                              "%u, which you (uid %u) are not in: refusing to load blobs "
                              "another user could plant",
                              dir, (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)geteuid());
        return vyre__fail(err, VYRE_EUNSAFE, hint,
                          "cache directory '%s' is owned by uid %u, not by you (uid %u): "
                          "refusing to load blobs another user could plant",
                          dir, (unsigned)st.st_uid, (unsigned)geteuid());
    }
    if (m & (S_IWGRP | S_IWOTH)) {
        if (snprintf(hint, sizeof hint,
                     "run 'chmod go-w %s' (vyre creates it 0700); " GROUP_HINT_FMT, dir, dir, dir,
                     dir) < 0)
            hint[0] = '\0';
        return vyre__fail(err, VYRE_EUNSAFE, hint,
                          "cache directory '%s' is writable by group or others (mode %04o): "
                          "refusing to load blobs others could plant",
                          dir, (unsigned)m);
    }
    return VYRE_OK;
}

/* An index file (or -wal, -shm) of another user that a group cache uses as
 * it is: a regular file of the cache's group. */
static int group_member_file(const vyre_cache *c, const struct stat *st)
{
    return c->group_cache && S_ISREG(st->st_mode) && st->st_gid == c->gid;
}

static int writable_dir(const char *dir)
{
    return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
}

/* 1 unless name below the root is a real directory this process cannot
 * write (a symlink or other entry there is verify's to report; writes
 * through it fail with their own message). */
static int writable_sub(int rootfd, const char *name)
{
    struct stat st;
    if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        return 1;
    return faccessat(rootfd, name, W_OK | X_OK, AT_EACCESS) == 0;
}

static const char *const index_suffixes[] = {"", "-wal", "-shm", "-journal"};

/* What is wrong with the index file (or its -wal, -shm, -journal) as an
 * entry of the root, checked with fstatat on the root's descriptor just
 * before SQLite opens it by path: 0 fine or absent; else a vyre error and
 * *removable is 1 when the entry may simply be unlinked (a symlink, special
 * file or another user's file: the entry goes, never what it points to), 0
 * for a directory (refused: it holds someone's files). */
int vyre__cache_index_check(const vyre_cache *c, int *removable, vyre_error *err)
{
    *removable = 0;
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(index_suffixes); i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", INDEX_NAME, index_suffixes[i]);
        struct stat st;
        if (fstatat(c->rootfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            int e = errno;
            return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat '%s/%s': %s", c->root,
                              name, strerror(e));
        }
        if (S_ISDIR(st.st_mode))
            return vyre__remedy(
                err, VYRE_REMEDY_CACHE_REINDEX,
                vyre__fail(err, VYRE_EUNSAFE,
                           "move the directory out of the cache, then rebuild the index",
                           "index file '%s/%s' is a directory: refusing to use it", c->root, name));
        *removable = 1;
        if (!S_ISREG(st.st_mode))
            return vyre__remedy(
                err, VYRE_REMEDY_CACHE_REINDEX,
                vyre__fail(err, VYRE_EUNSAFE,
                           "rebuilding the index removes the entry (never what a link points "
                           "to) and writes a new index from the blobs",
                           "index file '%s/%s' is a %s, not a regular file: refusing to open it",
                           c->root, name, vyre__file_type_name(st.st_mode)));
        if (st.st_uid != geteuid() && st.st_uid != 0 && !group_member_file(c, &st))
            return vyre__remedy(
                err, VYRE_REMEDY_CACHE_REINDEX,
                vyre__fail(err, VYRE_EUNSAFE,
                           "rebuilding the index replaces the file with one of your own, "
                           "written from the blobs",
                           "index file '%s/%s' is owned by uid %u, not by you (uid %u): "
                           "refusing to open it",
                           c->root, name, (unsigned)st.st_uid, (unsigned)geteuid()));
    }
    return VYRE_OK;
}

/* 1 when the root's index.sqlite3 is a regular file that is not ours to
 * delete: another user's (outside a group cache), or not a vyre index by
 * its content (another program's SQLite file, or not SQLite at all; the
 * audit saw reindex delete one although stats had told the user to move
 * it away). */
static int index_main_foreign(const vyre_cache *c)
{
    int fd = openat(c->rootfd, INDEX_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    int foreign = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        int kind = vyre__index_file_kind(fd);
        foreign = (st.st_uid != geteuid() && st.st_uid != 0 && !group_member_file(c, &st)) ||
                  kind == VYRE_INDEX_FILE_OTHER || kind == VYRE_INDEX_FILE_NOT_DB;
    }
    close(fd);
    return foreign;
}

/* Clears the index's place for a new one (reindex). Symlinks and special
 * files there are unlinked (the entry, never what a link points to); a
 * directory stays (index_check refuses it). Regular files: a foreign
 * index (index_main_foreign) and its -wal, -journal, -shm, and any other
 * user's file, are kept, renamed to index.sqlite3.foreign-<secs>[-wal...]
 * (never over an earlier one), and the first such name goes to kept; the
 * cache's own files are unlinked only with all (a sound index keeps its
 * usage columns). */
void vyre__cache_index_set_aside(const vyre_cache *c, int all, char *kept, size_t kept_size)
{
    int main_foreign = index_main_foreign(c);
    long long secs = (long long)time(NULL);
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(index_suffixes); i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", INDEX_NAME, index_suffixes[i]);
        struct stat st;
        if (fstatat(c->rootfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        int owner_ok = st.st_uid == geteuid() || st.st_uid == 0 || group_member_file(c, &st);
        if (S_ISREG(st.st_mode) && (main_foreign || !owner_ok)) {
            char aside[96];
            int r = -1;
            for (int n = 0; r != 0 && n < 100; n++) {
                if (n)
                    snprintf(aside, sizeof aside, "%s%lld.%d%s", FOREIGN_INDEX, secs, n,
                             index_suffixes[i]);
                else
                    snprintf(aside, sizeof aside, "%s%lld%s", FOREIGN_INDEX, secs,
                             index_suffixes[i]);
                r = renameat2(c->rootfd, name, c->rootfd, aside, RENAME_NOREPLACE);
                if (r != 0 && errno != EEXIST)
                    break;
            }
            if (r == 0 && kept && !kept[0]) {
                int n = snprintf(kept, kept_size, "%s/%s", c->root, aside);
                if (n < 0 || (size_t)n >= kept_size)
                    kept[0] = '\0'; /* too long to name: the caller says "kept" alone */
            }
            continue;
        }
        if (!S_ISREG(st.st_mode) || !owner_ok || all)
            unlinkat(c->rootfd, name, 0);
    }
}

/* The configuration's remote_storage (vyre.conf, $VYRE_REMOTE_CACHE, -o):
 * the remotes of a new handle. The configuration checked the list when it
 * was loaded; a list that fails now (a token file changed since, or a
 * configuration the caller built) fails the open, naming where it was set. */
static int remotes_from_config(vyre_cache *c, vyre_error *err)
{
    const char *spec = c->config.remote_storage;
    if (!*spec)
        return VYRE_OK;
    int rc = vyre_remote_list_parse(spec, &c->remotes, err);
    if (rc && err) {
        char where[VYRE_CONFIG_WHERE_MAX + 32];
        vyre_config_format_where(&c->config, VYRE_CONF_REMOTE_STORAGE, where, sizeof where);
        char msg[sizeof err->message + sizeof where + 32];
        snprintf(msg, sizeof msg, "remote_storage (%s): %s", where, err->message);
        vyre__strlcpy(err->message, msg, sizeof err->message);
    }
    return rc;
}

static int check_root_links(const char *root, vyre_error *err);
static int check_ours(const vyre_cache *c, unsigned flags, int *need_marker, vyre_error *err);
static int marker_write(const vyre_cache *c, vyre_error *err);

void vyre_cache_open_opts_init(vyre_cache_open_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->umask = -1;
}

const vyre_config *vyre_cache_config(const vyre_cache *c)
{
    return &c->config;
}

int vyre_cache_is_missing(const vyre_cache *c)
{
    return c->missing;
}

/* Opens the index; with a umask, a writable handle first creates the file
 * (never through a link) with 0666 & ~umask, so that SQLite, which gives
 * the -wal and -shm the database's mode, makes them as shareable. */
int vyre__cache_index_open(vyre_cache *c, int mode, vyre__index **idx, vyre_error *err)
{
    if (c->umask >= 0 && mode == VYRE_INDEX_READWRITE) {
        int fd = openat(c->rootfd, INDEX_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            (void)vyre__fchmod_umask(fd, c->umask); /* only a file of ours */
            close(fd);
        }
    }
    return vyre__index_open(c->index_path, mode, idx, err);
}

/* A writable handle's part of the open: the marker (first: a process
 * opening the cache meanwhile sees it before anything else vyre creates
 * here), then blobs/, tmp/ and quarantine/. mkdirat never follows: a
 * symlink already there stays as it is, for verify to report and repair
 * to remove. */
static int open_layout(vyre_cache *c, int need_marker, vyre_error *err)
{
    int rc = need_marker ? marker_write(c, err) : VYRE_OK;
    if (rc)
        return rc;
    static const char *const subs[] = {"blobs", "tmp", "quarantine"};
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(subs); i++) {
        if (vyre__mkdirat_umask(c->rootfd, subs[i], c->umask) != 0 && errno != EEXIST) {
            int e = errno;
            return vyre__fail(err, vyre__errno_code(e),
                              "check the permissions of the cache directory",
                              "cannot create directory '%s/%s': %s", c->root, subs[i], strerror(e));
        }
    }
    if (!writable_sub(c->rootfd, "tmp") || !writable_sub(c->rootfd, "blobs"))
        c->readonly = 1;
    return VYRE_OK;
}

/* The index part of the open. SQLite opens by path, with
 * SQLITE_OPEN_NOFOLLOW, which refuses a symlink at any component of it:
 * give it the root's real path (the root may be a user's symlink), and
 * check the entries just before. */
static int open_index(vyre_cache *c, unsigned flags, vyre_error *err)
{
    char real[PATH_MAX];
    if (!realpath(c->root, real)) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot resolve '%s': %s", c->root,
                          strerror(e));
    }
    int rc = vyre__path_join(c->index_path, sizeof c->index_path, real, INDEX_NAME, err);
    if (rc || (flags & VYRE_CACHE_NO_INDEX))
        return rc;
    int removable = 0;
    if ((rc = vyre__cache_index_check(c, &removable, err)))
        return rc;
    rc = vyre__cache_index_open(c, c->readonly ? VYRE_INDEX_READONLY : VYRE_INDEX_READWRITE,
                                &c->idx, err);
    if (c->readonly && (rc == VYRE_ENOENT || rc == VYRE_EROFS || rc == VYRE_EPERM)) {
        /* A read-only cache without a usable index (none, or a WAL index
         * whose -shm we may not create) serves gets from the files. */
        c->idx = NULL;
        rc = VYRE_OK;
    }
    return rc;
}

/* The root's path: root, or the default; short enough that every path
 * under it fits VYRE_CACHE_PATH_MAX. */
static int root_path_set(vyre_cache *c, const char *root, vyre_error *err)
{
    if (root) {
        if (!*root)
            return vyre__fail(err, VYRE_EINVAL, "give a directory path", "empty cache directory");
        if (vyre__strlcpy(c->root, root, sizeof c->root) >= sizeof c->root)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "cache path too long");
    } else {
        int rc = vyre_cache_default_root(c->root, sizeof c->root, err);
        if (rc)
            return rc;
    }
    if (strlen(c->root) > VYRE_CACHE_PATH_MAX - 256)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                          "cache directory path is %zu bytes long, more than %d", strlen(c->root),
                          VYRE_CACHE_PATH_MAX - 256);
    return VYRE_OK;
}

/* The root exists afterwards (made for a writable handle). 1 when it does
 * not and the handle is the empty cache of a first use (read-only,
 * VYRE_CACHE_MISSING_EMPTY): nothing is created then. */
static int root_find_or_make(vyre_cache *c, unsigned flags, vyre_error *err)
{
    struct stat st;
    if (stat(c->root, &st) == 0)
        return VYRE_OK;
    if (errno == ENOENT && (flags & VYRE_CACHE_READONLY) && (flags & VYRE_CACHE_MISSING_EMPTY))
        return 1;
    if (errno != ENOENT || (flags & VYRE_CACHE_READONLY)) {
        int e = errno;
        return vyre__fail(err, e == ENOENT ? VYRE_ENOENT : vyre__errno_code(e),
                          e == ENOENT ? "nothing has been cached there yet; check "
                                        "--cache-dir / VYRE_PTX_CACHE_DIR"
                                      : NULL,
                          "cache directory '%s' %s", c->root,
                          e == ENOENT ? "does not exist" : strerror(e));
    }
    return vyre__mkdirs(c->root, 0700, err);
}

/* Checks the root, then opens c->rootfd. The root itself may be a symlink
 * the user made: it is followed once, here, and checked again through the
 * descriptor that is kept. */
static int root_open(vyre_cache *c, vyre_error *err)
{
    int rc = check_safe(c->root, c->umask, err);
    if (rc)
        return rc;
    c->rootfd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->rootfd < 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot open cache directory '%s': %s",
                          c->root, strerror(e));
    }
    struct stat st;
    if (fstat(c->rootfd, &st) != 0)
        return vyre__fail(err, vyre__errno_code(errno), NULL, "cannot stat '%s': %s", c->root,
                          strerror(errno));
    if ((rc = check_owner_mode(c->root, &st, c->umask, &c->group_cache, err)))
        return rc;
    c->gid = st.st_gid;
    return VYRE_OK;
}

int vyre_cache_open(const char *root, const vyre_cache_open_opts *opts, vyre_cache **out,
                    vyre_error *err)
{
    vyre_cache_open_opts defaults;
    if (!opts) {
        vyre_cache_open_opts_init(&defaults);
        opts = &defaults;
    }
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_open: NULL argument");
    *out = NULL;
    if (opts->umask < -1 || opts->umask > 0777)
        return vyre__fail(err, VYRE_EINVAL, "give an octal umask between 000 and 777, e.g. 002",
                          "cache umask %d is out of range", opts->umask);
    unsigned flags = opts->flags;
    vyre_cache *c = calloc(1, sizeof *c);
    if (!c)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening the cache");
    c->flags = flags;
    c->rootfd = -1;
    int rc = root_path_set(c, root, err);
    if (rc)
        goto fail;
    /* The configuration: defaults < user's file < the cache's vyre.conf <
     * environment (vyre/config.h), unless the caller gives it. */
    if (opts->config)
        c->config = *opts->config;
    else if ((rc = vyre_config_load(&c->config, c->root, NULL, 0, 0, err)))
        goto fail;
    c->umask = opts->umask >= 0 ? opts->umask : c->config.umask;
    c->config_readonly = c->config.read_only;
    if ((rc = check_root_links(c->root, err)))
        goto fail;
    if ((rc = root_find_or_make(c, flags, err)) == 1) {
        /* First use: an empty cache, nothing created. */
        c->missing = 1;
        c->readonly = 1;
        *out = c;
        return VYRE_OK;
    }
    if (rc || (rc = root_open(c, err)))
        goto fail;
    int need_marker = 0;
    if ((rc = check_ours(c, flags, &need_marker, err)))
        goto fail;
    c->readonly = (flags & VYRE_CACHE_READONLY) || c->config_readonly || !writable_dir(c->root);
    if (!c->readonly && (rc = open_layout(c, need_marker, err)))
        goto fail;
    if ((rc = open_index(c, flags, err)))
        goto fail;
    if (!(flags & VYRE_CACHE_NO_REMOTE) && (rc = remotes_from_config(c, err)))
        goto fail;
    *out = c;
    return VYRE_OK;
fail:
    vyre__index_close(c->idx);
    if (c->rootfd >= 0)
        close(c->rootfd);
    free(c);
    return rc;
}

void vyre_cache_close(vyre_cache *c)
{
    if (!c)
        return;
    vyre__cache_persist_remote_counters(c);
    vyre__index_close(c->idx);
    vyre_remote_list_free(c->remotes);
    vyre__blob_shards_release(&c->shards);
    if (c->rootfd >= 0)
        close(c->rootfd);
    free(c);
}

const char *vyre_cache_root(const vyre_cache *c)
{
    return c->root;
}

int vyre__cache_is_readonly(const vyre_cache *c)
{
    return c->readonly;
}

/* ---- the lock --------------------------------------------------------- */

/* ---- own only what is ours: the marker ---------------------------------- */

/* 1 when name is an entry vyre makes in a cache's root. */
static int is_root_name(const char *name)
{
    static const char *const names[] = {"blobs",
                                        "tmp",
                                        "quarantine",
                                        INDEX_NAME,
                                        INDEX_NAME "-wal",
                                        INDEX_NAME "-shm",
                                        INDEX_NAME "-journal",
                                        LOCK_NAME,
                                        VYRE_CACHE_CLEANUP_LOCK,
                                        VYRE_CONFIG_FILE_NAME,
                                        VYRE_CACHE_MARKER};
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(names); i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return strncmp(name, MARKER_TMP, strlen(MARKER_TMP)) == 0 ||
           strncmp(name, FOREIGN_INDEX, strlen(FOREIGN_INDEX)) == 0;
}

/* 1 when the root holds a marker: a regular file (never followed) whose
 * first line is the signature. */
static int marker_present(int rootfd)
{
    int fd = openat(rootfd, VYRE_CACHE_MARKER, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    char buf[MARKER_MAX];
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    size_t l = strlen(VYRE_CACHE_MARKER_SIGNATURE);
    return strncmp(buf, VYRE_CACHE_MARKER_SIGNATURE, l) == 0 && buf[l] == '\n';
}

/* Writes the marker: whole, under a temp name, then linked into place, so
 * that a process opening the cache at the same moment sees it complete or
 * not at all (linkat never replaces: a marker another process wrote
 * first stays). An entry there that is not a marker (a link, a special
 * file, an empty file of a killed writer) is replaced. */
static int marker_write(const vyre_cache *c, vyre_error *err)
{
    static atomic_uint n_marker;
    char tmp[64], text[MARKER_MAX];
    snprintf(tmp, sizeof tmp, MARKER_TMP "%ld.%u", (long)getpid(), atomic_fetch_add(&n_marker, 1));
    int len = snprintf(text, sizeof text,
                       VYRE_CACHE_MARKER_SIGNATURE
                       "\nlayout %d\nkey_format %d\ncreated %lld\n"
                       "# Written by vyre when it made this directory its pipeline cache.\n"
                       "# vyre removes only the files it writes here, and uses no other\n"
                       "# non-empty directory without this file.\n",
                       MARKER_LAYOUT, VYRE_KEY_VERSION, (long long)time(NULL));
    int fd = openat(c->rootfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = 0;
    if (fd < 0 || vyre__fchmod_umask(fd, c->umask) != 0 || write(fd, text, (size_t)len) != len ||
        fsync(fd) != 0)
        e = errno ? errno : EIO;
    if (fd >= 0)
        close(fd);
    /* An entry already there is another process's marker (kept), or not a
     * marker at all (a link, an empty file of a killed writer): that
     * entry goes, once, and ours takes its place. */
    for (int tries = 0; !e && linkat(c->rootfd, tmp, c->rootfd, VYRE_CACHE_MARKER, 0) != 0;
         tries++) {
        if (errno != EEXIST || tries == 2)
            e = errno;
        else if (marker_present(c->rootfd))
            break;
        else
            unlinkat(c->rootfd, VYRE_CACHE_MARKER, 0);
    }
    if (fd >= 0)
        unlinkat(c->rootfd, tmp, 0);
    if (e)
        return vyre__fail(err, vyre__errno_code(e), "check the cache directory's permissions",
                          "cannot write the cache marker '%s/%s': %s", c->root, VYRE_CACHE_MARKER,
                          strerror(e));
    return VYRE_OK;
}

/* 1 when the root's index.sqlite3 is a SQLite file of vyre's (its
 * application_id), read without SQLite and without following a link. */
static int index_is_ours(int rootfd)
{
    int fd = openat(rootfd, INDEX_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    int ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
               vyre__index_file_kind(fd) == VYRE_INDEX_FILE_OURS;
    close(fd);
    return ours;
}

/* For adopting: every entry of blobs/ is a shard named by two hex digits
 * holding only blob names. The first entry that is not goes to bad. */
static int blobs_look_ours(int rootfd, char *bad, size_t size)
{
    DIR *top = vyre__cache_opendir(rootfd, "blobs");
    if (!top)
        return errno == ENOENT;
    int ok = 1;
    struct dirent *d;
    while (ok && (d = readdir(top))) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        DIR *sd =
            vyre__cache_is_hex2(d->d_name) ? vyre__cache_opendir(dirfd(top), d->d_name) : NULL;
        if (!sd) {
            snprintf(bad, size, "blobs/%s", d->d_name);
            ok = 0;
            break;
        }
        struct dirent *f;
        while (ok && (f = readdir(sd))) {
            if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
                continue;
            if (!vyre__blob_is_blob_name(f->d_name)) {
                /* Shown to the user only: a cut name still points at it. */
                int n = snprintf(bad, size, "blobs/%s/%s", d->d_name, f->d_name);
                if ((n < 0 || (size_t)n >= size) && size >= 4)
                    memcpy(bad + size - 4, "...", 4); /* shown only: the cut shows */
                ok = 0;
            }
        }
        closedir(sd);
    }
    closedir(top);
    return ok;
}

/* The first entry of the root vyre does not make (into bad, "" when
 * none), and whether the root holds anything but vyre.conf. */
static int root_entries(int rootfd, char *bad, size_t size, int *nonempty)
{
    bad[0] = '\0';
    *nonempty = 0;
    int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0 ||
            strcmp(f->d_name, VYRE_CONFIG_FILE_NAME) == 0)
            continue;
        *nonempty = 1;
        if (!is_root_name(f->d_name) && !bad[0])
            vyre__strlcpy(bad, f->d_name, size);
    }
    closedir(d);
    return 0;
}

/* Decides whether the root is a vyre cache: it has the marker; or it is
 * empty (vyre.conf aside: a group cache is set up before its first use);
 * or it is a cache of the previous version, which wrote no marker: every
 * entry of the root has a vyre name and index.sqlite3 carries vyre's
 * application_id; or, with VYRE_CACHE_ADOPT, every entry of the root and
 * of blobs/ has a vyre name. *need_marker is set when the marker should be
 * written (the handle writes it once it knows it may write). Anything else
 * is refused: a repair or a cleanup there could delete files of the
 * user's (the audit's '--cache-dir ~/work verify --repair'). */
static int check_ours(const vyre_cache *c, unsigned flags, int *need_marker, vyre_error *err)
{
    *need_marker = 0;
    if (marker_present(c->rootfd))
        return VYRE_OK;
    char bad[NAME_MAX + 16];
    int nonempty = 0;
    if (root_entries(c->rootfd, bad, sizeof bad, &nonempty) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot list '%s': %s", c->root,
                          strerror(e));
    }
    if (bad[0])
        return vyre__remedy(
            err, (flags & VYRE_CACHE_ADOPT) ? VYRE_REMEDY_NONE : VYRE_REMEDY_CACHE_ADOPT,
            vyre__fail(err, VYRE_EUNSAFE,
                       "give the cache a directory of its own, new or empty (--cache-dir, "
                       "VYRE_PTX_CACHE_DIR); to adopt an old cache, move what is not the "
                       "cache's out of it first",
                       "'%s' is not a vyre cache: it has no %s and holds '%s', which vyre "
                       "did not write: refusing to use it (a repair or cleanup there could "
                       "delete files that are not vyre's)",
                       c->root, VYRE_CACHE_MARKER, bad));
    if (!nonempty || index_is_ours(c->rootfd)) {
        *need_marker = 1;
        return VYRE_OK;
    }
    if (!(flags & VYRE_CACHE_ADOPT))
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_ADOPT,
            vyre__fail(err, VYRE_EUNSAFE,
                       "adopting checks that everything in it has a name vyre writes, then "
                       "writes the marker",
                       "'%s' has no %s and no vyre index: refusing to take it for a vyre "
                       "cache",
                       c->root, VYRE_CACHE_MARKER));
    if (!blobs_look_ours(c->rootfd, bad, sizeof bad))
        return vyre__fail(
            err, VYRE_EUNSAFE, "move it out of the cache directory, then adopt the cache again",
            "cannot adopt '%s' as a vyre cache: '%s' is not a name vyre writes", c->root, bad);
    *need_marker = 1;
    return VYRE_OK;
}

/* Whoever owns a symlink on the way to the root decides where the cache
 * is: one planted by another user ('ln -s ~alice/work /shared/cache')
 * would point the user's own repair at the user's own files. */
static int check_root_links(const char *root, vyre_error *err)
{
    char bad[PATH_MAX];
    uid_t owner = 0;
    if (vyre__path_check_links(root, geteuid(), bad, sizeof bad, &owner) != 1)
        return VYRE_OK; /* unreadable components fail later, with their own message */
    return vyre__fail(err, VYRE_EUNSAFE,
                      "use a cache directory whose path has no link of another user's, or ask "
                      "its owner to replace the link with the real path",
                      "cache directory '%s' goes through the symlink '%s', owned by uid %u, "
                      "not by you (uid %u) or root: refusing to follow it",
                      root, bad, (unsigned)owner, (unsigned)geteuid());
}
