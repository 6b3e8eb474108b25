/*
 * cache.c - the pipeline cache facade over key, blob and index.
 *
 * Owns root resolution and safety checks, the directory layout, the
 * cross-process lock that keeps index rows and files in step, and the
 * engines behind stats, prune, verify, reindex and clear. The blobs are the
 * truth: every decision that matters for correctness is taken from the
 * files; the index only makes listing, LRU order and usage cheap.
 *
 * Nothing outside the cache is ever touched: the root (which may be a
 * symlink the user made) is opened once, and everything below it is reached
 * relative to that descriptor without following a symbolic link at any
 * component (openat2 RESOLVE_NO_SYMLINKS, or O_NOFOLLOW walks); removals
 * are unlinkat/renameat in directories opened that way. A symlink, FIFO,
 * socket, device or hard link where the cache expects a directory or a blob
 * is reported by verify and, on repair or clear, the entry itself is
 * removed, never what it points to.
 */
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "base/clock.h"
#include "base/fsutil.h"
#include "cache/index.h"
#include "cache/remote/remote_internal.h"
#include "base/internal.h"
#include "vyre/nvtx.h"

#define INDEX_NAME    "index.sqlite3"
#define MARKER_MAX    512
#define MARKER_TMP    "." VYRE_CACHE_MARKER "." /* + pid.n: the marker being written */
#define FOREIGN_INDEX INDEX_NAME ".foreign-"    /* a foreign index, kept aside by reindex */
#define MARKER_LAYOUT 1
#define LOCK_NAME     "lock"
#define PRUNE_BATCH   1024

/* "blobs/ab/<64 hex>.vblob" and its NUL. */
#define BLOB_REL_MAX (6 + 3 + VYRE_KEY_HEX_LEN + 8)

struct vyre_cache {
    char root[VYRE_CACHE_PATH_MAX];
    int rootfd; /* the root, opened once: every walk below starts here */
    char index_path[VYRE_CACHE_PATH_MAX];
    unsigned flags;
    int readonly;
    int group_cache; /* the root is a group cache accepted under that umask */
    gid_t gid;       /* the root's group */
    vyre__index *idx;
    vyre_remote_list *remotes; /* NULL: none */
    atomic_uint_fast64_t hits, misses, rejects, remote_hits;
    vyre_config config;  /* the configuration in force (vyre/config.h) */
    int umask;           /* -1: not set; else applied to what the cache creates */
    int config_readonly; /* read_only = true in the configuration */
    int missing;         /* VYRE_CACHE_MISSING_EMPTY on a root that does not exist */
};

/* ---- the test-only step hook (cache_internal.h) ------------------------- */

static vyre__cache_step_fn g_step_hook;
static void *g_step_ctx;

void vyre__cache_set_step_hook(vyre__cache_step_fn fn, void *ctx)
{
    g_step_hook = fn;
    g_step_ctx = ctx;
}

static void step(const char *what)
{
    if (g_step_hook)
        g_step_hook(what, g_step_ctx);
}

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

/* 1 when gid is this process's effective group or one of its
 * supplementary groups. */
static int in_group(gid_t gid)
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
    int member = shared_layout && in_group(st.st_gid);
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

static int sub_path(const vyre_cache *c, const char *name, char *out, size_t size)
{
    return vyre__path_join(out, size, c->root, name, NULL);
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
static int index_check(const vyre_cache *c, int *removable, vyre_error *err)
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
static void index_set_aside(const vyre_cache *c, int all, char *kept, size_t kept_size)
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

static void persist_remote_counters(vyre_cache *c);

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

int vyre_cache_open(const char *root, unsigned flags, vyre_cache **out, vyre_error *err)
{
    vyre_cache_open_opts o;
    vyre_cache_open_opts_init(&o);
    o.flags = flags;
    return vyre_cache_open_ex(root, &o, out, err);
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
static int index_open_umask(vyre_cache *c, int mode, vyre__index **idx, vyre_error *err)
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
    if ((rc = index_check(c, &removable, err)))
        return rc;
    rc =
        index_open_umask(c, c->readonly ? VYRE_INDEX_READONLY : VYRE_INDEX_READWRITE, &c->idx, err);
    if (c->readonly && (rc == VYRE_ENOENT || rc == VYRE_EROFS || rc == VYRE_EPERM)) {
        /* A read-only cache without a usable index (none, or a WAL index
         * whose -shm we may not create) serves gets from the files. */
        c->idx = NULL;
        rc = VYRE_OK;
    }
    return rc;
}

int vyre_cache_open_ex(const char *root, const vyre_cache_open_opts *opts, vyre_cache **out,
                       vyre_error *err)
{
    if (!out || !opts)
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
    int rc = VYRE_OK;
    if (root) {
        if (!*root) {
            rc = vyre__fail(err, VYRE_EINVAL, "give a directory path", "empty cache directory");
            goto fail;
        }
        if (vyre__strlcpy(c->root, root, sizeof c->root) >= sizeof c->root) {
            rc = vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "cache path too long");
            goto fail;
        }
    } else if ((rc = vyre_cache_default_root(c->root, sizeof c->root, err))) {
        goto fail;
    }

    /* Every path under the root must fit VYRE_CACHE_PATH_MAX. */
    if (strlen(c->root) > VYRE_CACHE_PATH_MAX - 256) {
        rc = vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                        "cache directory path is %zu bytes long, more than %d", strlen(c->root),
                        VYRE_CACHE_PATH_MAX - 256);
        goto fail;
    }
    /* The configuration: defaults < user's file < the cache's vyre.conf <
     * environment (vyre/config.h), unless the caller gives it. */
    if (opts->config)
        c->config = *opts->config;
    else if ((rc = vyre_config_load(&c->config, c->root, NULL, 0, err)))
        goto fail;
    c->umask = opts->umask >= 0 ? opts->umask : c->config.umask;
    c->config_readonly = c->config.read_only;
    if ((rc = check_root_links(c->root, err)))
        goto fail;
    struct stat st;
    if (stat(c->root, &st) != 0) {
        if (errno == ENOENT && (flags & VYRE_CACHE_READONLY) &&
            (flags & VYRE_CACHE_MISSING_EMPTY)) {
            /* First use: an empty cache, nothing created. */
            c->missing = 1;
            c->readonly = 1;
            *out = c;
            return VYRE_OK;
        }
        if (errno != ENOENT || (flags & VYRE_CACHE_READONLY)) {
            int e = errno;
            rc = vyre__fail(err, e == ENOENT ? VYRE_ENOENT : vyre__errno_code(e),
                            e == ENOENT ? "nothing has been cached there yet; check "
                                          "--cache-dir / VYRE_PTX_CACHE_DIR"
                                        : NULL,
                            "cache directory '%s' %s", c->root,
                            e == ENOENT ? "does not exist" : strerror(e));
            goto fail;
        }
        if ((rc = vyre__mkdirs(c->root, 0700, err)))
            goto fail;
    }
    if ((rc = check_safe(c->root, c->umask, err)))
        goto fail;
    /* The root itself may be a symlink the user made: it is followed once,
     * here, and checked again through the descriptor that is kept. */
    c->rootfd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->rootfd < 0) {
        int e = errno;
        rc = vyre__fail(err, vyre__errno_code(e), NULL, "cannot open cache directory '%s': %s",
                        c->root, strerror(e));
        goto fail;
    }
    if (fstat(c->rootfd, &st) != 0 ||
        (rc = check_owner_mode(c->root, &st, c->umask, &c->group_cache, err))) {
        if (!rc)
            rc = vyre__fail(err, vyre__errno_code(errno), NULL, "cannot stat '%s': %s", c->root,
                            strerror(errno));
        goto fail;
    }
    c->gid = st.st_gid;
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
    persist_remote_counters(c);
    vyre__index_close(c->idx);
    vyre_remote_list_free(c->remotes);
    if (c->rootfd >= 0)
        close(c->rootfd);
    free(c);
}

const char *vyre_cache_root(const vyre_cache *c)
{
    return c->root;
}

int vyre_cache_is_readonly(const vyre_cache *c)
{
    return c->readonly;
}

/* ---- the lock --------------------------------------------------------- */

/* A fresh descriptor per operation: flock belongs to the open file
 * description, and one handle may be used from several threads. Returns the
 * fd (>= 0) or a negative vyre code. */
static int lock_take(const vyre_cache *c, int op, vyre_error *err)
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

static void lock_release(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the last descriptor releases the flock */
}

static int readonly_error(const vyre_cache *c, vyre_error *err)
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

/* ---- get / put --------------------------------------------------------- */

static int put_local(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                     vyre_error *err);

int vyre_cache_get(vyre_cache *c, const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                   vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!c || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_get: NULL argument");
    if (c->missing) {
        atomic_fetch_add(&c->misses, 1);
        return VYRE_ENOENT;
    }
    vyre_nvtx_push(VYRE_RANGE_CACHE_LOOKUP);
    vyre_blob_reject r = VYRE_REJECT_NONE;
    int rc = vyre__blob_load_at(c->rootfd, c->root, key, out, &r, err);
    if (rc == VYRE_OK) {
        atomic_fetch_add(&c->hits, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_hit(c->idx, key, vyre__unix_ns(), NULL);
    } else if (rc == VYRE_ENOENT) {
        if (why && r == VYRE_REJECT_STALE)
            *why = r; /* an older key format's blob: a miss, left in place */
        atomic_fetch_add(&c->misses, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_miss(c->idx, NULL);
    } else if (rc == VYRE_ECORRUPT || rc == VYRE_EVERSION) {
        /* The blob module quarantined the file; forget its row too. */
        atomic_fetch_add(&c->misses, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_miss(c->idx, NULL);
        atomic_fetch_add(&c->rejects, 1);
        if (c->idx && !c->readonly)
            vyre__index_delete(c->idx, key, NULL);
        if (why)
            *why = r;
        rc = VYRE_ENOENT;
    }
    if (rc == VYRE_ENOENT && c->remotes && c->remotes->n) {
        /* Read-through: only a validated object comes back; it is stored
         * like any other blob (never written back: it came from there). */
        vyre_blob *rb = NULL;
        if (vyre__remotes_fetch(c->remotes, key, &rb, NULL) == VYRE_OK) {
            if (!c->readonly) {
                vyre_blob_header h = rb->header;
                put_local(c, &h, rb->payload, rb->size, NULL);
            }
            atomic_fetch_add(&c->remote_hits, 1);
            *out = rb;
            rc = VYRE_OK;
        }
    }
    vyre_nvtx_pop();
    return rc;
}

/* The index's kernels column: the names joined by ',', cut with "...". */
static void kernels_text(char *out, size_t size, const char *names, size_t names_len)
{
    size_t need = vyre_kernel_list_format(names, names_len, ",", out, size);
    if (need >= size) {
        size_t l = strlen(out);
        if (l + 4 > size)
            l = size - 4;
        memcpy(out + l, "...", 4);
    }
}

static void row_from_header(vyre__index_row *row, const vyre_blob_header *h, uint64_t file_size)
{
    memset(row, 0, sizeof *row);
    row->key_version = h->key_version;
    memcpy(row->source, h->source, sizeof row->source);
    row->n_kernels = h->n_kernels;
    if (h->kernels)
        kernels_text(row->kernels, sizeof row->kernels, h->kernels, h->kernels_size);
    row->key = h->key;
    row->kind = h->kind;
    memcpy(row->arch, h->arch, sizeof row->arch);
    memcpy(row->toolchain, h->toolchain, sizeof row->toolchain);
    row->raw_size = h->raw_size;
    row->stored_size = h->stored_size;
    row->file_size = file_size;
    row->created_unix_ns = h->created_unix_ns;
    row->compile_ns = h->compile_ns;
}

static void maybe_cleanup(vyre_cache *c);
static void prune_quarantine(vyre_cache *c, int64_t max_age_ns, int dry_run, uint64_t *files,
                             uint64_t *bytes);

static int put_row(const vyre_blob_header *h, void *ctx, vyre_error *err)
{
    vyre_cache *c = ctx;
    vyre__index_row row;
    row_from_header(&row, h, VYRE_BLOB_HEADER_SIZE + h->stored_size + h->kernels_size);
    return vyre__index_upsert(c->idx, &row, err);
}

/* The local half of a put: the blob and its row, under the shared lock. */
static int put_local(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                     vyre_error *err)
{
    if (c->readonly)
        return readonly_error(c, err);
    vyre_nvtx_push(VYRE_RANGE_CACHE_STORE);
    int fd = lock_take(c, LOCK_SH, err);
    int rc = fd < 0 ? fd : VYRE_OK;
    /* The row goes in just before the rename: a writer killed in between
     * leaves a row plus its temp file, which verify treats as that write's
     * debris; killed after, everything is in place. */
    if (rc == VYRE_OK) {
        vyre_blob_store_opts so;
        vyre_blob_store_opts_init(&so);
        so.rootfd = c->rootfd;
        so.umask = c->umask;
        so.before_rename = c->idx ? put_row : NULL;
        so.ctx = c;
        rc = vyre_blob_store(c->root, h, payload, len, &so, err);
    }
    lock_release(fd);
    vyre_nvtx_pop();
    if (rc == VYRE_EROFS || rc == VYRE_EPERM) {
        c->readonly = 1;
        return readonly_error(c, err);
    }
    if (rc == VYRE_OK)
        maybe_cleanup(c);
    return rc;
}

int vyre_cache_put(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                   vyre_error *err)
{
    if (!c || !h || (len && !payload))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_put: NULL argument");
    int rc = put_local(c, h, payload, len, err);
    /* Write-back after the local store succeeded (h is then complete);
     * remote failures are counted and back off, never returned. */
    if (rc == VYRE_OK && c->remotes)
        vyre__remotes_store(c->remotes, h, payload, len);
    return rc;
}

/* ---- remotes ------------------------------------------------------------ */

#define N_REMOTE_COUNTERS 9

static void counters_of(const vyre_remote_stats *s, uint64_t v[N_REMOTE_COUNTERS])
{
    const uint64_t a[N_REMOTE_COUNTERS] = {s->hits,       s->misses,     s->errors,
                                           s->rejected,   s->skipped,    s->puts,
                                           s->put_errors, s->bytes_read, s->bytes_written};
    memcpy(v, a, sizeof a);
}

static void stats_of(vyre_remote_stats *s, const uint64_t v[N_REMOTE_COUNTERS])
{
    s->hits = v[0];
    s->misses = v[1];
    s->errors = v[2];
    s->rejected = v[3];
    s->skipped = v[4];
    s->puts = v[5];
    s->put_errors = v[6];
    s->bytes_read = v[7];
    s->bytes_written = v[8];
}

/* meta names of remote i's lifetime counters: "remote <url> <counter>". */
static void counter_names(const vyre_remote_info *ri, char names[N_REMOTE_COUNTERS][640])
{
    static const char *const what[N_REMOTE_COUNTERS] = {
        "hits", "misses",     "errors",     "rejected",     "skipped",
        "puts", "put_errors", "bytes_read", "bytes_written"};
    for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
        snprintf(names[k], sizeof names[k], "remote %.560s %s", ri->url, what[k]);
}

/* Adds what the remotes counted since the last call to the index's
 * lifetime counters (best effort: counters are not worth failing a close). */
static void persist_remote_counters(vyre_cache *c)
{
    if (!c->remotes || !c->idx || c->readonly)
        return;
    for (size_t i = 0; i < c->remotes->n; i++) {
        vyre__remote *r = &c->remotes->r[i];
        vyre_remote_stats now;
        vyre__remote_stats_get(c->remotes, i, &now);
        uint64_t a[N_REMOTE_COUNTERS], b[N_REMOTE_COUNTERS], d[N_REMOTE_COUNTERS];
        counters_of(&now, a);
        counters_of(&r->persisted, b);
        for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
            d[k] = a[k] - b[k];
        char names[N_REMOTE_COUNTERS][640];
        counter_names(&r->info, names);
        const char *pn[N_REMOTE_COUNTERS];
        for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
            pn[k] = names[k];
        if (vyre__index_counters_add(c->idx, pn, d, N_REMOTE_COUNTERS, NULL) == VYRE_OK)
            r->persisted = now;
    }
}

int vyre_cache_remote_totals(vyre_cache *c, size_t i, vyre_remote_stats *st, vyre_error *err)
{
    if (!c || !st)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_totals: NULL argument");
    if (i >= vyre_cache_remote_count(c))
        return vyre__fail(err, VYRE_EINVAL, NULL, "no remote store number %zu", i + 1);
    vyre__remote *r = &c->remotes->r[i];
    vyre_remote_stats now;
    vyre__remote_stats_get(c->remotes, i, &now);
    uint64_t a[N_REMOTE_COUNTERS], b[N_REMOTE_COUNTERS], t[N_REMOTE_COUNTERS];
    counters_of(&now, a);
    counters_of(&r->persisted, b);
    char names[N_REMOTE_COUNTERS][640];
    counter_names(&r->info, names);
    for (size_t k = 0; k < N_REMOTE_COUNTERS; k++) {
        uint64_t stored = 0;
        if (c->idx) {
            int rc = vyre__index_counter_get(c->idx, names[k], &stored, err);
            if (rc)
                return rc;
        }
        t[k] = stored + (a[k] - b[k]);
    }
    stats_of(st, t);
    return VYRE_OK;
}

int vyre_cache_set_remotes(vyre_cache *c, const char *spec, vyre_error *err)
{
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_set_remotes: NULL cache");
    vyre_remote_list *l = NULL;
    int rc = vyre_remote_list_parse(spec, &l, err);
    if (rc)
        return rc;
    persist_remote_counters(c);
    vyre_remote_list_free(c->remotes);
    c->remotes = l;
    return VYRE_OK;
}

size_t vyre_cache_remote_count(const vyre_cache *c)
{
    return c ? vyre_remote_list_count(c->remotes) : 0;
}

int vyre_cache_remote_get(vyre_cache *c, size_t i, vyre_remote_info *info, vyre_remote_stats *st)
{
    const vyre_remote_info *ri = c ? vyre_remote_list_info(c->remotes, i) : NULL;
    if (!ri)
        return VYRE_EINVAL;
    if (info)
        *info = *ri;
    if (st)
        vyre__remote_stats_get(c->remotes, i, st);
    return VYRE_OK;
}

static int no_remote(size_t i, vyre_error *err)
{
    return vyre__fail(err, VYRE_EINVAL,
                      "list remote stores in remote_storage (vyre.conf, -o) or VYRE_REMOTE_CACHE",
                      "no remote store number %zu", i + 1);
}

int vyre_cache_remote_check(vyre_cache *c, size_t i, vyre_remote_check *out, vyre_error *err)
{
    if (!c || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_check: NULL argument");
    if (i >= vyre_cache_remote_count(c))
        return no_remote(i, err);
    vyre__remote_probe_one(c->remotes, i, out);
    return VYRE_OK;
}

int vyre_cache_remote_push(vyre_cache *c, size_t i, const vyre_key *key, vyre_error *err)
{
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_push: NULL argument");
    if (i >= vyre_cache_remote_count(c))
        return no_remote(i, err);
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    int rc = vyre__blob_load_at(c->rootfd, c->root, key, &b, &why, err);
    if (rc == VYRE_ECORRUPT || rc == VYRE_EVERSION)
        rc = VYRE_ENOENT; /* quarantined: there is nothing valid to push */
    if (rc == VYRE_ENOENT) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(key, hex);
        /* The front end names its listing command (the remedy). */
        return vyre__remedy(err, VYRE_REMEDY_CACHE_LIST,
                            vyre__fail(err, VYRE_ENOENT, NULL,
                                       "no valid blob '%s' in the cache '%s'%s%s", hex, c->root,
                                       why ? ": it was rejected as " : "",
                                       why ? vyre_blob_reject_name(why) : ""));
    }
    if (rc)
        return rc;
    rc = vyre__remote_store_one(c->remotes, i, &b->header, b->payload, b->size, err);
    vyre_blob_free(b);
    return rc;
}

int vyre_cache_remote_pull(vyre_cache *c, const vyre_key *key, size_t *from, vyre_error *err)
{
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_pull: NULL argument");
    size_t n = vyre_cache_remote_count(c);
    if (!n)
        return vyre__fail(
            err, VYRE_ENOENT,
            "list remote stores in remote_storage (vyre.conf, -o) or VYRE_REMOTE_CACHE",
            "no remote store is configured");
    int rc = VYRE_ENOENT;
    for (size_t i = 0; i < n; i++) {
        vyre_blob *b = NULL;
        rc = vyre__remote_fetch_one(c->remotes, i, key, &b, err);
        if (rc != VYRE_OK)
            continue;
        vyre_blob_header h = b->header;
        rc = put_local(c, &h, b->payload, b->size, err);
        vyre_blob_free(b);
        if (rc == VYRE_OK && from)
            *from = i;
        return rc;
    }
    return rc;
}

int vyre_cache_flush(vyre_cache *c, vyre_error *err)
{
    if (!c || !c->idx)
        return VYRE_OK;
    persist_remote_counters(c);
    return vyre__index_flush(c->idx, err);
}

/* ---- scanning the directories ----------------------------------------- */

typedef struct file_ent {
    char name[80]; /* "<64 hex>.vblob" or a tmp/quarantine name (may be cut) */
    char dir[3];
    vyre_key key;
    int valid_name;
    int foreign; /* a symlink, FIFO, socket or device: never opened */
    mode_t mode; /* its file type (S_IFMT bits), when known */
    uint64_t size;
    int64_t mtime_ns;
} file_ent;

typedef struct file_list {
    file_ent *v;
    size_t n, cap;
} file_list;

static int list_push(file_list *l, const file_ent *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        file_ent *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return VYRE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *e;
    return VYRE_OK;
}

static int is_hex2(const char *s)
{
    static const char hex[] = "0123456789abcdef";
    return s[0] && s[1] && !s[2] && strchr(hex, s[0]) && strchr(hex, s[1]);
}

/* Parses "<64 lowercase hex>.vblob" in directory dir2. */
static int parse_blob_name(const char *name, const char *dir2, vyre_key *key)
{
    size_t n = strlen(name);
    if (n != VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT) ||
        strcmp(name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT) != 0)
        return 0;
    char hex[VYRE_KEY_HEX_LEN + 1];
    memcpy(hex, name, VYRE_KEY_HEX_LEN);
    hex[VYRE_KEY_HEX_LEN] = '\0';
    for (int i = 0; i < VYRE_KEY_HEX_LEN; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return 0;
    if (hex[0] != dir2[0] || hex[1] != dir2[1])
        return 0;
    return vyre_key_from_hex(hex, key) == VYRE_OK;
}

/* A file type from readdir's d_type, else from fstatat (never following). */
static mode_t entry_type(DIR *d, const struct dirent *f, struct stat *st, int *have_st)
{
    *have_st = 0;
    switch (f->d_type) {
    case DT_REG:
        return S_IFREG;
    case DT_DIR:
        return S_IFDIR;
    case DT_LNK:
        return S_IFLNK;
    case DT_FIFO:
        return S_IFIFO;
    case DT_SOCK:
        return S_IFSOCK;
    case DT_CHR:
        return S_IFCHR;
    case DT_BLK:
        return S_IFBLK;
    default:
        if (fstatat(dirfd(d), f->d_name, st, AT_SYMLINK_NOFOLLOW) != 0)
            return 0;
        *have_st = 1;
        return st->st_mode & S_IFMT;
    }
}

static int is_foreign_type(mode_t t)
{
    return t != 0 && t != S_IFREG && t != S_IFDIR;
}

/* Opens the directory name below dir's descriptor as a DIR stream, never
 * through a symlink. NULL with errno. */
static DIR *open_dir_stream(int dfd, const char *name)
{
    int fd = vyre__open_dir_at(dfd, name);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

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
    DIR *top = open_dir_stream(rootfd, "blobs");
    if (!top)
        return errno == ENOENT;
    int ok = 1;
    struct dirent *d;
    while (ok && (d = readdir(top))) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        DIR *sd = is_hex2(d->d_name) ? open_dir_stream(dirfd(top), d->d_name) : NULL;
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

/* Lists blobs/<2 hex>/<name>, through descriptors opened O_NOFOLLOW from
 * the root's. Entries with an unexpected name or place get valid_name = 0
 * (stray); symlinks, FIFOs, sockets and devices (at a shard's place or a
 * blob's) also get foreign = 1 and are never opened. A blobs/ that is not a
 * directory lists nothing (check_layout reports it). with_stat fills size
 * and mtime. */
static int scan_blobs(const vyre_cache *c, file_list *out, int with_stat, vyre_error *err)
{
    DIR *top = open_dir_stream(c->rootfd, "blobs");
    if (!top) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            return VYRE_OK;
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read '%s/blobs': %s", c->root,
                          strerror(e));
    }
    int rc = VYRE_OK;
    struct dirent *d;
    while (rc == VYRE_OK && (d = readdir(top))) {
        if (d->d_name[0] == '.')
            continue;
        file_ent e;
        memset(&e, 0, sizeof e);
        struct stat st;
        int have_st;
        e.mode = entry_type(top, d, &st, &have_st);
        if (e.mode == 0)
            continue; /* gone meanwhile */
        DIR *dd = NULL;
        if (is_hex2(d->d_name) && e.mode == S_IFDIR) {
            dd = open_dir_stream(dirfd(top), d->d_name);
            if (!dd && (errno == ENOTDIR || errno == ELOOP)) {
                /* Swapped for something else since readdir: never followed. */
                e.mode = fstatat(dirfd(top), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
                             ? st.st_mode & S_IFMT
                             : S_IFLNK;
            } else if (!dd) {
                continue;
            }
        }
        if (!dd) {
            vyre__strlcpy(e.name, d->d_name, sizeof e.name);
            e.foreign = is_foreign_type(e.mode);
            rc = list_push(out, &e);
            continue;
        }
        struct dirent *f;
        while (rc == VYRE_OK && (f = readdir(dd))) {
            if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
                continue;
            memset(&e, 0, sizeof e);
            memcpy(e.dir, d->d_name, 3);
            vyre__strlcpy(e.name, f->d_name, sizeof e.name);
            e.mode = entry_type(dd, f, &st, &have_st);
            if (e.mode == 0)
                continue;
            e.foreign = is_foreign_type(e.mode);
            e.valid_name = !e.foreign && strlen(f->d_name) < sizeof e.name &&
                           parse_blob_name(f->d_name, d->d_name, &e.key);
            if (with_stat &&
                (have_st || fstatat(dirfd(dd), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)) {
                e.size = (uint64_t)st.st_size;
                e.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            }
            rc = list_push(out, &e);
        }
        closedir(dd);
    }
    closedir(top);
    if (rc == VYRE_ENOMEM)
        return vyre__fail(err, rc, NULL, "out of memory listing the cache");
    return rc;
}

static void ent_path(const vyre_cache *c, const file_ent *e, char *out, size_t size)
{
    int n = e->dir[0] ? snprintf(out, size, "%s/blobs/%s/%s", c->root, e->dir, e->name)
                      : snprintf(out, size, "%s/blobs/%s", c->root, e->name);
    if (n < 0 || (size_t)n >= size)
        out[0] = '\0'; /* cannot happen: vyre_cache_open bounds the root */
}

/* The entry's path below the root ("blobs/ab/<name>" or "blobs/<name>"). */
static void ent_rel(const file_ent *e, char *out, size_t size)
{
    int n = e->dir[0] ? snprintf(out, size, "blobs/%s/%s", e->dir, e->name)
                      : snprintf(out, size, "blobs/%s", e->name);
    if (n < 0 || (size_t)n >= size)
        out[0] = '\0';
}

/* "blobs/ab/<64 hex>.vblob" for key. */
static void key_rel(const vyre_key *key, char out[BLOB_REL_MAX])
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    snprintf(out, BLOB_REL_MAX, "blobs/%.2s/%s%s", hex, hex, VYRE_BLOB_EXT);
}

/* 1 when the blob entry of key exists (whatever it is), reached without
 * following a symlink on the way. */
static int blob_present(const vyre_cache *c, const vyre_key *key)
{
    char rel[BLOB_REL_MAX];
    key_rel(key, rel);
    int fd = vyre__open_beneath(c->rootfd, rel, O_PATH, 0);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* Counts files (and bytes, and those older than an age) in the flat
 * directory name of the root (nothing when it is not a real directory). */
static void scan_flat(const vyre_cache *c, const char *name, int64_t older_than_ns, uint64_t *files,
                      uint64_t *bytes, uint64_t *old)
{
    DIR *d = open_dir_stream(c->rootfd, name);
    if (!d)
        return;
    struct dirent *f;
    int64_t now = vyre__unix_ns();
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        (*files)++;
        if (bytes)
            *bytes += (uint64_t)st.st_size;
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (old && now - m > older_than_ns)
            (*old)++;
    }
    closedir(d);
}

/* ---- rows -------------------------------------------------------------- */

typedef struct row_list {
    vyre__index_row *v;
    size_t n, cap;
} row_list;

static int collect_row(const vyre__index_row *row, void *ctx)
{
    row_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        vyre__index_row *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return VYRE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *row;
    return 0;
}

static int no_index(const vyre_cache *c, vyre_error *err)
{
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                        vyre__fail(err, VYRE_ENOENT, NULL, "the cache '%s' has no index", c->root));
}

static int all_rows(vyre_cache *c, row_list *l, vyre_error *err)
{
    memset(l, 0, sizeof *l);
    if (!c->idx)
        return no_index(c, err);
    int rc = vyre__index_foreach_lru(c->idx, collect_row, l, err);
    if (rc == VYRE_ENOMEM)
        return vyre__fail(err, rc, NULL, "out of memory reading the index");
    return rc;
}

static void entry_from_row(vyre_cache_entry *e, const vyre__index_row *r)
{
    e->key = r->key;
    e->kind = r->kind;
    memcpy(e->arch, r->arch, sizeof e->arch);
    memcpy(e->toolchain, r->toolchain, sizeof e->toolchain);
    e->raw_size = r->raw_size;
    e->stored_size = r->stored_size;
    e->file_size = r->file_size;
    e->created_unix_ns = r->created_unix_ns;
    e->last_access_unix_ns = r->last_access_unix_ns;
    e->hits = r->hits;
    e->compile_ns = r->compile_ns;
    e->key_version = r->key_version;
    memcpy(e->source, r->source, sizeof e->source);
    e->n_kernels = r->n_kernels;
    memcpy(e->kernels, r->kernels, sizeof e->kernels);
}

typedef struct foreach_ctx {
    vyre_cache_entry_fn fn;
    void *ctx;
} foreach_ctx;

static int foreach_adapter(const vyre__index_row *row, void *p)
{
    foreach_ctx *f = p;
    vyre_cache_entry e;
    entry_from_row(&e, row);
    return f->fn(&e, f->ctx);
}

int vyre_cache_foreach(vyre_cache *c, vyre_cache_entry_fn fn, void *ctx, vyre_error *err)
{
    if (!c || !fn)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_foreach: NULL argument");
    if (c->missing)
        return VYRE_OK; /* first use: nothing cached yet */
    if (!c->idx)
        return no_index(c, err);
    foreach_ctx f = {fn, ctx};
    return vyre__index_foreach_lru(c->idx, foreach_adapter, &f, err);
}

/* ---- stats ------------------------------------------------------------- */

static void bucket_add(vyre_cache_bucket *b, size_t cap, size_t *n, const char *name,
                       uint64_t bytes)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(b[i].name, name) == 0) {
            b[i].entries++;
            b[i].bytes += bytes;
            return;
        }
    if (*n == cap) {
        /* Fold the rest into the last bucket, renamed "other". */
        vyre__strlcpy(b[cap - 1].name, "other", sizeof b[cap - 1].name);
        b[cap - 1].entries++;
        b[cap - 1].bytes += bytes;
        return;
    }
    vyre__strlcpy(b[*n].name, name, sizeof b[*n].name);
    b[*n].entries = 1;
    b[*n].bytes = bytes;
    (*n)++;
}

int vyre_cache_stats_get(vyre_cache *c, vyre_cache_stats *st, vyre_error *err)
{
    if (!c || !st)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_stats_get: NULL argument");
    memset(st, 0, sizeof *st);
    static const char *const kinds[] = {"unknown", "cubin", "ptx", "fatbin"};
    for (int i = 0; i < 4; i++)
        vyre__strlcpy(st->by_kind[i].name, kinds[i], sizeof st->by_kind[i].name);
    static const char *const ages[] = {"<1h", "<1d", "<7d", "<30d", ">=30d"};
    static const int64_t limits[] = {INT64_C(3600), INT64_C(86400), INT64_C(7) * 86400,
                                     INT64_C(30) * 86400};
    for (int i = 0; i < VYRE_CACHE_AGE_BUCKETS; i++)
        vyre__strlcpy(st->by_age[i].name, ages[i], sizeof st->by_age[i].name);

    row_list rows;
    int rc = c->idx ? all_rows(c, &rows, err) : VYRE_OK;
    if (rc) {
        free(rows.v);
        return rc;
    }
    int64_t now = vyre__unix_ns();
    for (size_t i = 0; c->idx && i < rows.n; i++) {
        const vyre__index_row *r = &rows.v[i];
        st->entries++;
        st->bytes += r->file_size;
        unsigned k = r->kind < 4 ? r->kind : 0;
        st->by_kind[k].entries++;
        st->by_kind[k].bytes += r->file_size;
        bucket_add(st->by_arch, VYRE_CACHE_STATS_MAX_ARCH, &st->n_arch, r->arch, r->file_size);
        int64_t age_s = (now - r->created_unix_ns) / 1000000000;
        int b = 0;
        while (b < VYRE_CACHE_AGE_BUCKETS - 1 && age_s >= limits[b])
            b++;
        st->by_age[b].entries++;
        st->by_age[b].bytes += r->file_size;
        st->hits += r->hits;
        st->compile_ns_saved += r->hits * r->compile_ns;
        if (VYRE_BLOB_KEY_STALE(r->key_version)) {
            st->stale++;
            st->stale_bytes += r->file_size;
        }
    }
    if (c->idx) {
        free(rows.v);
        vyre__index_misses(c->idx, &st->misses, NULL);
    }
    scan_flat(c, "quarantine", 0, &st->quarantined, &st->quarantine_bytes, NULL);
    scan_flat(c, "tmp", VYRE_CACHE_DEBRIS_AGE_NS, &st->tmp_files, NULL, &st->debris);
    st->session_hits = atomic_load(&c->hits);
    st->session_misses = atomic_load(&c->misses);
    st->session_rejects = atomic_load(&c->rejects);
    st->session_remote_hits = atomic_load(&c->remote_hits);
    st->max_size = c->config.max_size;
    if (c->idx)
        vyre__index_stats_zeroed(c->idx, &st->stats_zeroed_unix_ns, NULL);
    return VYRE_OK;
}

/* ---- find by prefix ---------------------------------------------------- */

typedef struct prefix_ctx {
    char prefix[VYRE_KEY_HEX_LEN + 1];
    size_t len;
    size_t matches;
    vyre_cache_entry first;
    char listed[8][VYRE_KEY_HEX_LEN + 1];
} prefix_ctx;

static int prefix_match(const vyre_cache_entry *e, void *p)
{
    prefix_ctx *x = p;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    if (memcmp(hex, x->prefix, x->len) != 0)
        return 0;
    if (x->matches == 0)
        x->first = *e;
    if (x->matches < 8)
        memcpy(x->listed[x->matches], hex, sizeof hex);
    x->matches++;
    return 0;
}

int vyre_cache_check_blob(vyre_cache *c, const vyre_key *key, vyre_blob_header *h,
                          uint64_t *file_size, vyre_blob_reject *why, char *path, size_t path_size,
                          vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_check_blob: NULL argument");
    char rel[BLOB_REL_MAX], full[VYRE_CACHE_PATH_MAX];
    key_rel(key, rel);
    int n = snprintf(full, sizeof full, "%s/%s", c->root, rel);
    if (n < 0 || (size_t)n >= sizeof full)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory",
                          "cache path too long: '%s'", c->root);
    if (path && path_size)
        snprintf(path, path_size, "%s", full);
    return vyre__blob_check_at(c->rootfd, rel, full, key, h, file_size, why, NULL, err);
}

int vyre_cache_blob_kernels(vyre_cache *c, const vyre_blob_header *h, char **names, vyre_error *err)
{
    if (names)
        *names = NULL;
    if (!c || !h || !names)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_blob_kernels: NULL argument");
    return vyre__blob_kernels_at(c->rootfd, c->root, h, names, err);
}

int vyre_cache_find_prefix(vyre_cache *c, const char *prefix, vyre_cache_entry *out,
                           vyre_error *err)
{
    if (!c || !prefix || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_find_prefix: NULL argument");
    prefix_ctx x;
    memset(&x, 0, sizeof x);
    x.len = strlen(prefix);
    if (x.len < 4 || x.len > VYRE_KEY_HEX_LEN)
        return vyre__fail(err, VYRE_EINVAL, "give at least 4 and at most 64 hex digits of a key",
                          "'%s' is not a key prefix", prefix);
    for (size_t i = 0; i < x.len; i++) {
        char ch = prefix[i];
        if (ch >= 'A' && ch <= 'F')
            ch = (char)(ch - 'A' + 'a');
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return vyre__fail(err, VYRE_EINVAL, "keys are hexadecimal: use 0-9 and a-f",
                              "'%s' is not a key prefix", prefix);
        x.prefix[i] = ch;
    }
    int rc = vyre_cache_foreach(c, prefix_match, &x, err);
    if (rc)
        return rc;
    if (x.matches == 0)
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_LIST,
            vyre__fail(err, VYRE_ENOENT, NULL, "no blob with a key starting '%s'", prefix));
    if (x.matches > 1) {
        char list[VYRE_ERROR_MESSAGE_MAX];
        size_t off = 0;
        for (size_t i = 0; i < x.matches && i < 8; i++) {
            int n = snprintf(list + off, sizeof list - off, "%s%.16s", i ? ", " : "", x.listed[i]);
            if (n < 0 || (size_t)n >= sizeof list - off)
                break;
            off += (size_t)n;
        }
        return vyre__fail(err, VYRE_EAMBIGUOUS, "give more digits of the key",
                          "key prefix '%s' is ambiguous: %zu blobs match (%s%s)", prefix, x.matches,
                          list, x.matches > 8 ? ", ..." : "");
    }
    *out = x.first;
    return VYRE_OK;
}

/* ---- prune ------------------------------------------------------------- */

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

void vyre_cache_prune_opts_init(vyre_cache_prune_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->max_bytes = UINT64_MAX;
}

/*
 * Removals are crash-consistent: a process killed at any instant, or an
 * index that will not take the deletion (locked past the busy timeout,
 * read-only), leaves no index row without its blob. Each victim is first
 * renamed into tmp/ under a removal's temp name (<16 hex of the key>...rm),
 * then the rows go in one transaction, then the files are unlinked. Killed
 * before the commit, a row's file is in tmp/: that removal's debris, which
 * verify counts with the row (as it does a killed put's) and a repair
 * removes, row first. A failed commit renames every victim back.
 */
typedef struct doomed {
    uint8_t shard;   /* the key's first byte: blobs/<2 hex>/ */
    uint8_t moved;   /* renamed into tmp/ */
    uint8_t regular; /* a regular file (counted by clear) */
    uint64_t size;
    char name[VYRE_KEY_HEX_LEN + sizeof VYRE_BLOB_EXT];
    char tmpname[64];
} doomed;

/* The shard directories of a removal, opened once each, O_NOFOLLOW from
 * the root's descriptor: a shard that is a symlink holds nothing of ours. */
typedef struct shard_fds {
    int bfd, berr;
    int fd[256], err[256];
} shard_fds;

static void shards_open(const vyre_cache *c, shard_fds *s)
{
    for (int d = 0; d < 256; d++) {
        s->fd[d] = -1;
        s->err[d] = 0;
    }
    s->bfd = vyre__open_dir_at(c->rootfd, "blobs");
    s->berr = s->bfd < 0 ? errno : 0;
}

/* The descriptor of shard d, or -1 with *e the reason. */
static int shard_fd(shard_fds *s, int d, int *e)
{
    if (s->fd[d] < 0 && s->err[d] == 0) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", (unsigned)d);
        s->fd[d] = s->bfd < 0 ? -1 : vyre__open_dir_at(s->bfd, sub);
        s->err[d] = s->bfd < 0 ? s->berr : s->fd[d] < 0 ? errno : 0;
    }
    *e = s->err[d];
    return s->fd[d];
}

static void shards_close(shard_fds *s)
{
    for (int d = 0; d < 256; d++)
        if (s->fd[d] >= 0)
            close(s->fd[d]);
    if (s->bfd >= 0)
        close(s->bfd);
}

/* Moves victim v (its name set) into tmp/ (tmpfd). 0: moved, or nothing
 * of ours there (no file, no real shard, a directory under the name:
 * never ours to move); else the errno of the failed rename. */
static int doom_one(shard_fds *s, int tmpfd, doomed *v)
{
    int e = 0;
    int dfd = shard_fd(s, v->shard, &e);
    if (dfd < 0)
        return e == ENOENT || e == ENOTDIR || e == ELOOP ? 0 : e;
    struct stat st;
    if (fstatat(dfd, v->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(st.st_mode))
        return 0;
    char hex[3];
    snprintf(hex, sizeof hex, "%02x", (unsigned)v->shard);
    char keyhex[VYRE_KEY_HEX_LEN + 1];
    memcpy(keyhex, v->name, VYRE_KEY_HEX_LEN);
    keyhex[VYRE_KEY_HEX_LEN] = '\0';
    if (vyre__blob_tmp_name(keyhex, VYRE__DOOMED_SUFFIX, v->tmpname, sizeof v->tmpname))
        return ENAMETOOLONG;
    step("rename");
    if (renameat(dfd, v->name, tmpfd, v->tmpname) != 0)
        return errno == ENOENT ? 0 : errno;
    v->moved = 1;
    v->regular = S_ISREG(st.st_mode);
    v->size = (uint64_t)st.st_size;
    return 0;
}

/* After a failed commit: every moved victim back where it was (a blob
 * that cannot go back stays in tmp/ as debris, and its row with it). */
static void undoom(shard_fds *s, int tmpfd, doomed *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int e = 0;
        int dfd = v[i].moved ? shard_fd(s, v[i].shard, &e) : -1;
        if (dfd >= 0 && renameat(tmpfd, v[i].tmpname, dfd, v[i].name) == 0)
            v[i].moved = 0;
    }
}

/* Unlinks the moved victims from tmp/ (the rows are gone). */
static void doomed_unlink(int tmpfd, doomed *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].moved) {
            step("unlink");
            unlinkat(tmpfd, v[i].tmpname, 0);
        }
}

static void check_layout(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                         vyre_cache_problem_fn fn, void *ctx);

/* tmp/, opened for a removal (under the exclusive lock). A tmp/ that is
 * missing, a link or a file is put right first, as a repair does (the
 * entry goes, never what a link points to); a failure removes nothing. */
static int removal_tmp(vyre_cache *c, vyre_error *err)
{
    int tmpfd = vyre__open_dir_at(c->rootfd, "tmp");
    if (tmpfd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)) {
        check_layout(c, 1, NULL, NULL, NULL);
        if (vyre__mkdirat_umask(c->rootfd, "tmp", c->umask) == 0 || errno == EEXIST)
            tmpfd = vyre__open_dir_at(c->rootfd, "tmp");
    }
    if (tmpfd >= 0)
        return tmpfd;
    int e = errno;
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                        vyre__fail(err,
                                   e == ELOOP || e == ENOTDIR ? VYRE_EUNSAFE : vyre__errno_code(e),
                                   "a repair recreates it",
                                   "cannot open '%s/tmp': %s; nothing "
                                   "was removed",
                                   c->root, strerror(e)));
}

/* Appends "; nothing was removed" to err's message (after a failed
 * commit whose victims went back). */
static void nothing_removed(vyre_error *err)
{
    if (!err)
        return;
    size_t l = strlen(err->message);
    snprintf(err->message + l, sizeof err->message - l, "; nothing was removed");
    if (!err->hint[0])
        vyre__strlcpy(err->hint,
                      "try again when no other process holds the index, and check that "
                      "index.sqlite3 is writable",
                      sizeof err->hint);
}

static int remove_batch(vyre_cache *c, const vyre__index_row *const *victims, size_t n,
                        vyre_error *err)
{
    vyre_key *keys = malloc((n ? n : 1) * sizeof *keys);
    doomed *v = calloc(n ? n : 1, sizeof *v);
    if (!keys || !v) {
        free(keys);
        free(v);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory pruning");
    }
    int fd = lock_take(c, LOCK_EX, err);
    int tmpfd = fd < 0 ? -1 : removal_tmp(c, err);
    int rc = fd < 0 ? fd : tmpfd < 0 ? tmpfd : VYRE_OK;
    shard_fds s;
    shards_open(c, &s);
    size_t done = 0;
    for (; rc == VYRE_OK && done < n; done++) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        keys[done] = victims[done]->key;
        vyre_key_to_hex(&keys[done], hex);
        v[done].shard = keys[done].bytes[0];
        snprintf(v[done].name, sizeof v[done].name, "%s%s", hex, VYRE_BLOB_EXT);
        int e = doom_one(&s, tmpfd, &v[done]);
        if (e) {
            char path[VYRE_CACHE_PATH_MAX];
            vyre_blob_path(c->root, &keys[done], path, sizeof path, NULL);
            rc = vyre__fail(err, vyre__errno_code(e), "check the cache's permissions",
                            "cannot remove '%s': %s", path, strerror(e));
            break; /* rows of the blobs still in place stay */
        }
    }
    if (done) {
        step("commit");
        int drc = vyre__index_delete_many(c->idx, keys, done, rc ? NULL : err);
        if (drc) {
            undoom(&s, tmpfd, v, done);
            if (!rc)
                nothing_removed(err);
            rc = rc ? rc : drc;
        } else {
            doomed_unlink(tmpfd, v, done);
        }
    }
    shards_close(&s);
    if (tmpfd >= 0)
        close(tmpfd);
    lock_release(fd);
    free(keys);
    free(v);
    return rc;
}

/* Victims of a prune, removed PRUNE_BATCH at a time. */
typedef struct prune_batch {
    const vyre__index_row **rows;
    const char **reasons;
    size_t n;
} prune_batch;

/* Removes the batch (a dry run removes nothing), then counts it and calls
 * fn for each entry: only once they are gone, so that a prune that fails
 * (a locked index: nothing removed) reports none of them as removed. */
static int prune_flush(vyre_cache *c, prune_batch *b, int dry_run, vyre_cache_prune_result *res,
                       vyre_cache_prune_fn fn, void *ctx, vyre_error *err)
{
    int rc = dry_run ? VYRE_OK : remove_batch(c, b->rows, b->n, err);
    for (size_t i = 0; rc == VYRE_OK && i < b->n; i++) {
        res->removed++;
        res->removed_bytes += b->rows[i]->file_size;
        if (fn) {
            vyre_cache_entry e;
            entry_from_row(&e, b->rows[i]);
            fn(&e, b->reasons[i], ctx);
        }
    }
    b->n = 0;
    return rc;
}

int vyre_cache_prune(vyre_cache *c, const vyre_cache_prune_opts *opts, vyre_cache_prune_result *res,
                     vyre_cache_prune_fn fn, void *ctx, vyre_error *err)
{
    if (!c || !opts || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_prune: NULL argument");
    memset(res, 0, sizeof *res);
    /* The caller names the identities to keep (vyre_compile_toolchains
     * gives the current ones): the cache sits below the compiler and does
     * not ask it. */
    const char *const *keep = opts->keep_toolchains;
    size_t n_keep = opts->n_keep_toolchains;
    if (opts->stale_toolchain && (!keep || !n_keep))
        return vyre__fail(err, VYRE_EINVAL,
                          "pass the identities to keep (vyre_compile_toolchains gives the "
                          "current ones)",
                          "pruning stale toolchains needs the toolchains to keep");
    if (c->readonly && !opts->dry_run)
        return readonly_error(c, err);
    if (opts->quarantine_max_age_ns > 0)
        prune_quarantine(c, opts->quarantine_max_age_ns, opts->dry_run, &res->quarantine_removed,
                         &res->quarantine_removed_bytes);
    if (opts->max_bytes == UINT64_MAX && opts->max_age_ns <= 0 && !opts->arch &&
        !opts->stale_toolchain && !opts->stale && !opts->all && opts->quarantine_max_age_ns > 0) {
        /* Only quarantine/ to age (an automatic cleanup under the limit):
         * no need to read every row. */
        uint64_t total = 0;
        if (c->idx)
            vyre__index_totals(c->idx, &res->kept, &total, NULL);
        res->examined = res->kept;
        res->kept_bytes = total;
        res->target_reached = 1;
        return VYRE_OK;
    }
    vyre_nvtx_push(VYRE_RANGE_CACHE_PRUNE);
    row_list rows;
    int rc = all_rows(c, &rows, err);
    if (rc) {
        free(rows.v);
        vyre_nvtx_pop();
        return rc;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < rows.n; i++)
        total += rows.v[i].file_size;
    int64_t now = vyre__unix_ns();
    prune_batch b;
    b.n = 0;
    b.rows = malloc(PRUNE_BATCH * sizeof *b.rows);
    b.reasons = malloc(PRUNE_BATCH * sizeof *b.reasons);
    if (!b.rows || !b.reasons) {
        free(b.rows);
        free(b.reasons);
        free(rows.v);
        vyre_nvtx_pop();
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory pruning");
    }
    for (size_t i = 0; i < rows.n && rc == VYRE_OK; i++) {
        const vyre__index_row *r = &rows.v[i];
        res->examined++;
        int64_t used = r->last_access_unix_ns ? r->last_access_unix_ns : r->created_unix_ns;
        const char *reason = NULL;
        if (opts->arch && strcmp(r->arch, opts->arch) == 0)
            reason = "arch";
        else if (opts->stale && VYRE_BLOB_KEY_STALE(r->key_version))
            reason = "stale";
        else if (opts->stale_toolchain && !in_list(r->toolchain, keep, n_keep))
            reason = "stale-toolchain";
        else if (opts->max_age_ns > 0 && now - used > opts->max_age_ns)
            reason = "age";
        else if (opts->all)
            reason = "age"; /* --max-age 0s: every blob is older than that */
        else if (total > opts->max_bytes)
            reason = "size";
        if (!reason) {
            res->kept++;
            res->kept_bytes += r->file_size;
            continue;
        }
        total -= r->file_size;
        b.rows[b.n] = r;
        b.reasons[b.n++] = reason;
        if (opts->dry_run || b.n == PRUNE_BATCH)
            rc = prune_flush(c, &b, opts->dry_run, res, fn, ctx, err);
        if (opts->progress && (res->examined & 1023) == 0)
            opts->progress(res->examined, rows.n, opts->progress_ctx);
    }
    if (rc == VYRE_OK && b.n)
        rc = prune_flush(c, &b, opts->dry_run, res, fn, ctx, err);
    if (opts->progress)
        opts->progress(res->examined, rows.n, opts->progress_ctx);
    res->target_reached = total <= opts->max_bytes;
    free(b.rows);
    free(b.reasons);
    free(rows.v);
    vyre_nvtx_pop();
    return rc;
}

/* Removes (or, dry run, counts) the files in quarantine/ whose time (the
 * time they were quarantined) is older than max_age_ns. Only quarantine
 * names (blob_internal.h) are touched: anything else there is someone's,
 * and verify reports it. Entries that are not regular files are unlinked
 * themselves, never followed. */
static void prune_quarantine(vyre_cache *c, int64_t max_age_ns, int dry_run, uint64_t *files,
                             uint64_t *bytes)
{
    DIR *d = open_dir_stream(c->rootfd, "quarantine");
    if (!d)
        return;
    int64_t now = vyre__unix_ns();
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (!vyre__blob_is_quarantine_name(f->d_name) ||
            fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (now - m <= max_age_ns)
            continue;
        if (dry_run || unlinkat(dirfd(d), f->d_name, 0) == 0) {
            (*files)++;
            *bytes += S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        }
    }
    closedir(d);
}

/* ---- automatic cleanup ------------------------------------------------- */

/* The cleanup lock, opened (created when missing) below the root without
 * following a link; -1 when it cannot be. */
static int cleanup_lock_open(const vyre_cache *c)
{
    int mode = c->umask >= 0 ? 0666 : 0600;
    int fd = openat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK,
                    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) /* another user's, in a group cache */
        fd = openat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    /* The cache's umask, not the process's: a lock made 0644 in a group
     * cache keeps the other members from updating its time, and their
     * puts then clean up every time. */
    if (fd >= 0)
        (void)vyre__fchmod_umask(fd, c->umask); /* only a lock of ours */
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One pass of a cleanup, under the cleanup lock (fd). */
static int cleanup_pass(vyre_cache *c, int force, vyre_cache_cleanup_result *res, vyre_error *err)
{
    const vyre_config *cf = &c->config;
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    /* Decided again under the lock: the cleanup that held it may just
     * have brought the cache down. */
    uint64_t total = 0;
    int rc = vyre__index_total_bytes(c->idx, &total, err);
    if (rc)
        return rc;
    if (cf->max_size && (force || total > cf->max_size))
        po.max_bytes = (uint64_t)((double)cf->max_size * VYRE_CACHE_CLEANUP_RATIO);
    po.max_age_ns = cf->max_age_ns;
    po.quarantine_max_age_ns = cf->quarantine_max_age_ns;
    vyre_cache_prune_result pr;
    memset(&pr, 0, sizeof pr);
    if (po.max_bytes != UINT64_MAX || po.max_age_ns > 0 || po.quarantine_max_age_ns > 0)
        rc = vyre_cache_prune(c, &po, &pr, NULL, NULL, err);
    res->removed += pr.removed;
    res->removed_bytes += pr.removed_bytes;
    res->quarantine_removed += pr.quarantine_removed;
    res->quarantine_removed_bytes += pr.quarantine_removed_bytes;
    return rc;
}

#define CLEANUP_MAX_PASSES 8

int vyre_cache_cleanup(vyre_cache *c, int force, vyre_cache_cleanup_result *res, vyre_error *err)
{
    vyre_cache_cleanup_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_cleanup: NULL argument");
    if (c->readonly)
        return readonly_error(c, err);
    if (!c->idx)
        return no_index(c, err);
    int rc = VYRE_OK;
    for (int pass = 0; pass < CLEANUP_MAX_PASSES; pass++) {
        int fd = cleanup_lock_open(c);
        if (fd < 0) {
            int e = errno;
            return vyre__fail(err, vyre__errno_code(e), "check the cache directory's permissions",
                              "cannot open '%s/%s': %s", c->root, VYRE_CACHE_CLEANUP_LOCK,
                              strerror(e));
        }
        /* One cleanup at a time across processes; a put never waits for
         * one: when the lock is held, the holder does the work. */
        int locked = 0;
        while (!locked && flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                goto done; /* another process is at it */
            return vyre__fail(err, vyre__errno_code(e), NULL, "cannot lock '%s/%s': %s", c->root,
                              VYRE_CACHE_CLEANUP_LOCK, strerror(e));
        }
        res->ran = 1;
        rc = cleanup_pass(c, force && pass == 0, res, err);
        futimens(fd, NULL); /* the time of the last cleanup (age-only ones wait an hour) */
        close(fd);          /* releases the flock */
        if (rc)
            break;
        /* A put that finished while this pass ran may have found the lock
         * held and left the cleanup to us: look again after releasing it,
         * so that its bytes are counted by us or by its own next try. */
        uint64_t total = 0;
        if (!c->config.max_size || vyre__index_total_bytes(c->idx, &total, NULL) != VYRE_OK ||
            total <= c->config.max_size)
            break;
    }
done:
    if (vyre__index_total_bytes(c->idx, &res->bytes_after, NULL) != VYRE_OK)
        res->bytes_after = 0;
    return rc;
}

/* After a put: a cleanup when the cache is over max_size, or when max_age
 * or quarantine_max_age is set and the last cleanup is over an hour old.
 * One point lookup and one fstatat on the put path; failures are ignored
 * (the put is done). */
static void maybe_cleanup(vyre_cache *c)
{
    const vyre_config *cf = &c->config;
    if (!c->idx || c->readonly)
        return;
    int due = 0;
    uint64_t total = 0;
    if (cf->max_size && vyre__index_total_bytes(c->idx, &total, NULL) == VYRE_OK &&
        total > cf->max_size)
        due = 1;
    if (!due && (cf->max_age_ns > 0 || cf->quarantine_max_age_ns > 0)) {
        struct stat st;
        if (fstatat(c->rootfd, VYRE_CACHE_CLEANUP_LOCK, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            /* First put: the interval starts now. */
            int fd = errno == ENOENT ? cleanup_lock_open(c) : -1;
            if (fd >= 0)
                close(fd);
        } else {
            int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            due = vyre__unix_ns() - m > VYRE_CACHE_CLEANUP_INTERVAL_NS;
        }
    }
    if (due)
        vyre_cache_cleanup(c, 0, NULL, NULL);
}

int vyre_cache_zero_stats(vyre_cache *c, vyre_error *err)
{
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_zero_stats: NULL argument");
    if (c->missing)
        return VYRE_OK;
    if (c->readonly)
        return readonly_error(c, err);
    if (!c->idx)
        return no_index(c, err);
    atomic_store(&c->hits, 0);
    atomic_store(&c->misses, 0);
    atomic_store(&c->rejects, 0);
    return vyre__index_zero_stats(c->idx, vyre__unix_ns(), err);
}

/* ---- checking many blobs ---------------------------------------------- */

/* Full validation of every listed blob, spread over a few threads: on
 * page-cached files verify and reindex are bound by open/read/checksum per
 * file, which scales with cores. Results land in out[i] for files->v[i]. */
typedef struct check_out {
    int rc; /* vyre_blob_check_file's result; VYRE_EINVAL for a stray name */
    vyre_blob_reject why;
    int hard_link; /* rejected for having another name elsewhere */
    vyre_blob_header h;
    uint64_t file_size;
} check_out;

typedef struct check_job {
    const vyre_cache *c;
    const file_list *files;
    check_out *out;
    atomic_size_t next;
    atomic_size_t done;
} check_job;

#define CHECK_MAX_THREADS 8
#define CHECK_PER_THREAD  64 /* fewer files than this per thread: not worth it */

static void check_some(check_job *j, vyre_cache_progress_fn progress, void *progress_ctx)
{
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->files->n)
            return;
        const file_ent *e = &j->files->v[i];
        check_out *o = &j->out[i];
        if (!e->valid_name) {
            o->rc = VYRE_EINVAL;
        } else {
            char path[VYRE_CACHE_PATH_MAX], rel[BLOB_REL_MAX];
            ent_path(j->c, e, path, sizeof path);
            ent_rel(e, rel, sizeof rel);
            o->why = VYRE_REJECT_NONE;
            o->rc = vyre__blob_check_at(j->c->rootfd, rel, path, &e->key, &o->h, &o->file_size,
                                        &o->why, &o->hard_link, NULL);
        }
        size_t d = atomic_fetch_add(&j->done, 1) + 1;
        if (progress && (d & 255) == 0)
            progress(d, j->files->n, progress_ctx);
    }
}

static void *check_thread(void *p)
{
    check_some(p, NULL, NULL);
    return NULL;
}

static int check_all(const vyre_cache *c, const file_list *files, check_out *out,
                     vyre_cache_progress_fn progress, void *progress_ctx)
{
    check_job j = {.c = c, .files = files, .out = out};
    atomic_init(&j.next, 0);
    atomic_init(&j.done, 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = files->n / CHECK_PER_THREAD;
    if (want > (size_t)(ncpu > 1 ? ncpu : 1))
        want = (size_t)(ncpu > 1 ? ncpu : 1);
    if (want > CHECK_MAX_THREADS)
        want = CHECK_MAX_THREADS;
    pthread_t th[CHECK_MAX_THREADS];
    size_t started = 0;
    for (size_t t = 1; t < want; t++) /* the calling thread is the first worker */
        if (pthread_create(&th[started], NULL, check_thread, &j) == 0)
            started++;
    check_some(&j, progress, progress_ctx);
    for (size_t t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (progress)
        progress(files->n, files->n, progress_ctx);
    return VYRE_OK;
}

/* Lists every blob and checks it (see check_all); *outs is the caller's to
 * free, with files->v. */
static int scan_and_check(const vyre_cache *c, file_list *files, check_out **outs,
                          vyre_cache_progress_fn progress, void *progress_ctx, const char *what,
                          vyre_error *err)
{
    int rc = scan_blobs(c, files, 0, err);
    if (rc)
        return rc;
    *outs = calloc(files->n ? files->n : 1, sizeof **outs);
    if (!*outs)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory %s", what);
    check_all(c, files, *outs, progress, progress_ctx);
    return VYRE_OK;
}

/* ---- verify ------------------------------------------------------------ */

typedef struct checked {
    vyre_key key;
    vyre_blob_header h;
    uint64_t file_size;
} checked;

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(vyre_key));
}

static void report(vyre_cache_problem_fn fn, void *ctx, vyre_cache_verify_problem *p,
                   vyre_cache_verify_result *res)
{
    if (!res)
        return;
    res->problems++;
    if (p->repaired)
        res->repaired++;
    if (fn)
        fn(p, ctx);
}

/* blobs/, tmp/ and quarantine/ must be real directories, and the lock
 * files (lock, cleanup.lock) regular files where they exist. Each that is
 * not (a symlink, a special file, a plain file where a directory belongs)
 * is a FOREIGN problem; with repair the entry itself is removed (unlinkat:
 * never what a link points to) and a directory recreated (a lock file is
 * recreated by its next use). res may be NULL (repair only). */
static void check_layout(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                         vyre_cache_problem_fn fn, void *ctx)
{
    static const char *const dirs[] = {"blobs", "tmp", "quarantine", LOCK_NAME,
                                       VYRE_CACHE_CLEANUP_LOCK};
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(dirs); i++) {
        int is_dir = i < 3;
        struct stat st;
        if (fstatat(c->rootfd, dirs[i], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            (is_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)))
            continue;
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        p.kind = VYRE_PROBLEM_FOREIGN;
        p.detail = vyre__file_type_name(st.st_mode);
        sub_path(c, dirs[i], p.path, sizeof p.path);
        if (repair && unlinkat(c->rootfd, dirs[i], S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0 &&
            (!is_dir || vyre__mkdirat_umask(c->rootfd, dirs[i], c->umask) == 0 ||
             errno == EEXIST)) {
            p.repaired = 1;
            p.action = is_dir ? "removed, directory recreated" : "removed";
        }
        if (res)
            res->foreign++;
        report(fn, ctx, &p, res);
    }
}

/* An entry vyre did not write (a name it never uses), found where it looks
 * (blobs/, tmp/, quarantine/): reported, never removed. */
static void left_entry(const char *path, vyre_cache_verify_result *res, vyre_cache_problem_fn fn,
                       void *ctx)
{
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    p.kind = VYRE_PROBLEM_STRAY;
    p.detail = "not written by vyre";
    p.action = "left";
    vyre__strlcpy(p.path, path, sizeof p.path);
    res->stray++;
    report(fn, ctx, &p, res);
}

/* 1 when e, listed under blobs/, has one of vyre's names there: a shard
 * (blobs/<2 hex>) or a blob name in a shard. */
static int ent_ours(const file_ent *e)
{
    return e->dir[0] ? vyre__blob_is_blob_name(e->name) : is_hex2(e->name);
}

/* A foreign entry under blobs/ (a symlink, FIFO, socket, device, or a
 * blob's hard link): reported; with repair its name in the cache is
 * unlinked, never followed and never opened, when the name is one of
 * vyre's (otherwise it is someone's, and left). */
static void foreign_entry(vyre_cache *c, const file_ent *e, const char *what, int repair,
                          vyre_cache_verify_result *res, vyre_cache_problem_fn fn, void *ctx)
{
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    p.kind = VYRE_PROBLEM_FOREIGN;
    p.detail = what;
    ent_path(c, e, p.path, sizeof p.path);
    char rel[BLOB_REL_MAX + 80];
    ent_rel(e, rel, sizeof rel);
    if (!ent_ours(e)) {
        p.action = "left (not a name vyre writes)";
    } else if (repair && vyre__blob_unlink_at(c->rootfd, rel) == 0) {
        p.repaired = 1;
        p.action = "removed";
    }
    if (res)
        res->foreign++;
    report(fn, ctx, &p, res);
}

static int row_matches(const vyre__index_row *r, const checked *k)
{
    return r->kind == k->h.kind && strcmp(r->arch, k->h.arch) == 0 &&
           strcmp(r->toolchain, k->h.toolchain) == 0 && r->stored_size == k->h.stored_size &&
           r->file_size == k->file_size && r->key_version == k->h.key_version &&
           r->n_kernels == k->h.n_kernels && strcmp(r->source, k->h.source) == 0;
}

/* row_from_header for a header read by a check (which keeps no kernel
 * table): the names are read from the blob (best effort). */
static void row_from_checked(vyre_cache *c, vyre__index_row *row, const vyre_blob_header *h,
                             uint64_t file_size)
{
    row_from_header(row, h, file_size);
    char *names = NULL;
    if (h->kernels_size && vyre__blob_kernels_at(c->rootfd, c->root, h, &names, NULL) == VYRE_OK &&
        names)
        kernels_text(row->kernels, sizeof row->kernels, names, h->kernels_size);
    free(names);
}

/* Checks every blob file without holding the lock (it can take long), then
 * cross-checks index and files under the exclusive lock, where no put can
 * be half done. */
#define TMP_PREFIX   16
#define MAX_TMP_SEEN 4096
typedef struct tmp_seen_ent {
    char prefix[TMP_PREFIX];
    int debris;
} tmp_seen_ent;

/* -1: no temp file for key; 0: one in flight; 1: only debris. */
static int tmp_for_key(const tmp_seen_ent *v, size_t n, const vyre_key *key)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    int state = -1;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(v[i].prefix, hex, TMP_PREFIX) != 0)
            continue;
        if (!v[i].debris)
            return 0;
        state = 1;
    }
    return state;
}

/* What verify learns from tmp/ (scanned under the exclusive lock, where no
 * put is half done and no removal is in flight): the key prefixes of the
 * temp files, and the debris, removed only after the cross-check has
 * deleted the rows that go with it (a repair killed in between then leaves
 * debris, never a row without its file). */
typedef struct tmp_scan {
    tmp_seen_ent *seen;
    size_t n_seen;
    char (*debris)[NAME_MAX + 1];
    size_t n_debris, cap;
} tmp_scan;

/* "<root>/<dir><name>" (dir ends with '/') for messages. */
static void flat_path(const vyre_cache *c, const char *dir, const char *name, char *out,
                      size_t size)
{
    char rel[NAME_MAX + 16];
    size_t n = vyre__strlcpy(rel, dir, sizeof rel);
    if (n < sizeof rel)
        vyre__strlcpy(rel + n, name, sizeof rel - n);
    if (vyre__path_join(out, size, c->root, rel, NULL))
        out[0] = '\0';
}

static int debris_push(tmp_scan *t, const char *name)
{
    if (t->n_debris == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char(*v)[NAME_MAX + 1] = realloc(t->debris, cap * sizeof *v);
        if (!v)
            return VYRE_ENOMEM;
        t->debris = v;
        t->cap = cap;
    }
    vyre__strlcpy(t->debris[t->n_debris++], name, NAME_MAX + 1);
    return VYRE_OK;
}

/* tmp/: vyre's temp names are in flight or debris (older than an hour, or
 * a removal's victim: its remover holds the lock we hold, so it is dead);
 * other names are someone's, reported and left. */
static int verify_tmp_scan(vyre_cache *c, tmp_scan *t, vyre_cache_verify_result *res,
                           vyre_cache_problem_fn fn, void *ctx, vyre_error *err)
{
    DIR *td = open_dir_stream(c->rootfd, "tmp");
    if (!td)
        return VYRE_OK;
    int rc = VYRE_OK;
    struct dirent *f;
    int64_t now = vyre__unix_ns();
    while (rc == VYRE_OK && (f = readdir(td))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(td), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!vyre__blob_is_tmp_name(f->d_name)) {
            char path[VYRE_CACHE_PATH_MAX];
            flat_path(c, "tmp/", f->d_name, path, sizeof path);
            left_entry(path, res, fn, ctx);
            continue;
        }
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        int debris = vyre__blob_is_doomed_name(f->d_name) || now - m > VYRE_CACHE_DEBRIS_AGE_NS;
        /* Temp names start with the key's first 16 hex digits: remember
         * them, a row without its file may belong to this write. */
        if (t->n_seen < MAX_TMP_SEEN) {
            memcpy(t->seen[t->n_seen].prefix, f->d_name, TMP_PREFIX);
            t->seen[t->n_seen].debris = debris;
            t->n_seen++;
        }
        if (!debris)
            res->tmp_in_flight++;
        else
            rc = debris_push(t, f->d_name);
    }
    closedir(td);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory verifying");
    return VYRE_OK;
}

/* Reports the debris found by verify_tmp_scan; repair removes it. */
static void verify_debris(vyre_cache *c, int repair, const tmp_scan *t,
                          vyre_cache_verify_result *res, vyre_cache_problem_fn fn, void *ctx)
{
    int tmpfd = t->n_debris && repair ? vyre__open_dir_at(c->rootfd, "tmp") : -1;
    for (size_t i = 0; i < t->n_debris; i++) {
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        p.kind = VYRE_PROBLEM_DEBRIS;
        flat_path(c, "tmp/", t->debris[i], p.path, sizeof p.path);
        res->debris++;
        if (tmpfd >= 0 && unlinkat(tmpfd, t->debris[i], 0) == 0) {
            p.repaired = 1;
            p.action = "removed";
        }
        report(fn, ctx, &p, res);
    }
    if (tmpfd >= 0)
        close(tmpfd);
}

/* quarantine/: quarantined blobs are counted (kept for inspection, not a
 * problem); anything else there is someone's, reported and left. */
static void verify_quarantine(vyre_cache *c, vyre_cache_verify_result *res,
                              vyre_cache_problem_fn fn, void *ctx)
{
    DIR *d = open_dir_stream(c->rootfd, "quarantine");
    if (!d)
        return;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        if (vyre__blob_is_quarantine_name(f->d_name)) {
            res->quarantined++;
            continue;
        }
        char path[VYRE_CACHE_PATH_MAX];
        flat_path(c, "quarantine/", f->d_name, path, sizeof path);
        left_entry(path, res, fn, ctx);
    }
    closedir(d);
}

/* The blob files as checked: good ones into good[], problems reported. */
static void verify_blobs(vyre_cache *c, int repair, const file_list *files, const check_out *outs,
                         checked *good, size_t *n_good, vyre_cache_verify_result *res,
                         vyre_cache_problem_fn fn, void *ctx)
{
    for (size_t i = 0; i < files->n; i++) {
        const file_ent *e = &files->v[i];
        const check_out *o = &outs[i];
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        ent_path(c, e, p.path, sizeof p.path);
        char rel[BLOB_REL_MAX + 80];
        ent_rel(e, rel, sizeof rel);
        if (e->foreign) {
            foreign_entry(c, e, vyre__file_type_name(e->mode), repair, res, fn, ctx);
            continue;
        }
        if (!e->valid_name && !vyre__blob_is_blob_name(e->name)) {
            left_entry(p.path, res, fn, ctx); /* not a name vyre writes */
            continue;
        }
        if (!e->valid_name) {
            /* A blob's name in the wrong place: vyre's, quarantined. */
            p.kind = VYRE_PROBLEM_STRAY;
            res->stray++;
            if (repair && vyre__blob_quarantine_at(c->rootfd, c->root, rel, VYRE_REJECT_BAD_FIELD,
                                                   NULL) == 0) {
                p.repaired = 1;
                p.action = "quarantined";
            }
            report(fn, ctx, &p, res);
            continue;
        }
        res->blobs_checked++;
        if (o->rc == VYRE_OK) {
            checked k;
            k.key = e->key;
            k.h = o->h;
            k.file_size = o->file_size;
            good[(*n_good)++] = k;
            res->bytes_checked += k.file_size;
            if (VYRE_BLOB_KEY_STALE(o->h.key_version))
                res->stale++;
        } else if (o->hard_link) {
            foreign_entry(c, e, "hard link", repair, res, fn, ctx);
            if (repair && c->idx)
                vyre__index_delete(c->idx, &e->key, NULL);
        } else if (o->rc != VYRE_ENOENT) { /* ENOENT: pruned meanwhile */
            p.kind = VYRE_PROBLEM_BAD_BLOB;
            p.reject = o->why;
            res->bad_blobs++;
            if (repair && vyre__blob_quarantine_at(c->rootfd, c->root, rel, o->why, NULL) == 0) {
                p.repaired = 1;
                p.action = "quarantined";
                if (c->idx)
                    vyre__index_delete(c->idx, &e->key, NULL);
            }
            report(fn, ctx, &p, res);
        }
    }
}

/* A row the cross-check found without a checked file. */
static void verify_row_without_file(vyre_cache *c, int repair, const vyre__index_row *r,
                                    const tmp_scan *t, vyre_cache_verify_result *res,
                                    vyre_cache_problem_fn fn, void *ctx)
{
    /* The file may have been put after the scan (then it exists now). */
    if (blob_present(c, &r->key))
        return;
    /* A put records the row before it renames the blob into place, and a
     * removal moves the blob into tmp/ before it deletes the row: killed
     * in between, either leaves this row plus its temp file, part of that
     * operation's debris, not a problem of its own. It goes (first) when
     * the debris goes. */
    int tmp_state = tmp_for_key(t->seen, t->n_seen, &r->key);
    if (tmp_state >= 0) {
        if (tmp_state == 1 && repair)
            vyre__index_delete(c->idx, &r->key, NULL);
        return;
    }
    vyre_cache_verify_problem p;
    memset(&p, 0, sizeof p);
    vyre_blob_path(c->root, &r->key, p.path, sizeof p.path, NULL);
    p.kind = VYRE_PROBLEM_ROW_WITHOUT_FILE;
    res->rows_without_file++;
    if (repair && vyre__index_delete(c->idx, &r->key, NULL) == VYRE_OK) {
        p.repaired = 1;
        p.action = "row deleted";
    }
    report(fn, ctx, &p, res);
}

/* Index rows against the checked files (both sorted by key). */
static void verify_rows(vyre_cache *c, int repair, row_list *rows, checked *good, size_t n_good,
                        const tmp_scan *t, vyre_cache_verify_result *res, vyre_cache_problem_fn fn,
                        void *ctx)
{
    if (n_good)
        qsort(good, n_good, sizeof *good, cmp_key);
    if (rows->n)
        qsort(rows->v, rows->n, sizeof *rows->v, cmp_key); /* key is the first member */
    size_t i = 0, j = 0;
    while (i < rows->n || j < n_good) {
        int d = i == rows->n ? 1 : j == n_good ? -1 : cmp_key(&rows->v[i].key, &good[j].key);
        if (d < 0) {
            verify_row_without_file(c, repair, &rows->v[i++], t, res, fn, ctx);
            continue;
        }
        vyre_cache_verify_problem p;
        memset(&p, 0, sizeof p);
        const checked *k = &good[j++];
        const vyre__index_row *r = d == 0 ? &rows->v[i++] : NULL;
        if (r && row_matches(r, k))
            continue;
        vyre_blob_path(c->root, &k->key, p.path, sizeof p.path, NULL);
        if (!r && !blob_present(c, &k->key))
            continue; /* pruned since the scan: consistent */
        p.kind = r ? VYRE_PROBLEM_ROW_MISMATCH : VYRE_PROBLEM_FILE_WITHOUT_ROW;
        if (r)
            res->row_mismatches++;
        else
            res->files_without_row++;
        vyre__index_row row;
        row_from_checked(c, &row, &k->h, k->file_size);
        if (r) {
            row.hits = r->hits;
            row.last_access_unix_ns = r->last_access_unix_ns;
        }
        if (repair && vyre__index_upsert(c->idx, &row, NULL) == VYRE_OK) {
            p.repaired = 1;
            p.action = r ? "row rewritten" : "indexed";
        }
        report(fn, ctx, &p, res);
    }
}

int vyre_cache_verify(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                      vyre_cache_problem_fn fn, void *ctx, vyre_cache_progress_fn progress,
                      void *progress_ctx, vyre_error *err)
{
    if (!c || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_verify: NULL argument");
    memset(res, 0, sizeof *res);
    if (repair && c->readonly)
        return readonly_error(c, err);
    if (c->missing)
        return VYRE_OK; /* first use: nothing to check */
    vyre_nvtx_push(VYRE_RANGE_CACHE_VERIFY);
    file_list files = {0};
    checked *good = NULL;
    check_out *outs = NULL;
    size_t n_good = 0;
    row_list rows = {0};
    int lock_fd = -1;
    tmp_scan t = {0};
    t.seen = malloc(MAX_TMP_SEEN * sizeof *t.seen);
    if (t.seen)
        check_layout(c, repair, res, fn, ctx);
    int rc = t.seen ? scan_and_check(c, &files, &outs, progress, progress_ctx, "verifying", err)
                    : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying");
    if (rc)
        goto out;
    good = malloc((files.n ? files.n : 1) * sizeof *good);
    if (!good) {
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying");
        goto out;
    }
    verify_blobs(c, repair, &files, outs, good, &n_good, res, fn, ctx);
    verify_quarantine(c, res, fn, ctx);

    /* Checked every blob without the lock (that can take long); tmp/ and
     * the cross-check under it, where no put is half done and no removal
     * in flight. */
    lock_fd = c->readonly ? -1 : lock_take(c, LOCK_EX, err);
    if (!c->readonly && lock_fd < 0) {
        rc = lock_fd;
        goto out;
    }
    if ((rc = verify_tmp_scan(c, &t, res, fn, ctx, err)))
        goto out;
    if (c->idx) {
        if ((rc = all_rows(c, &rows, err)))
            goto out;
        verify_rows(c, repair, &rows, good, n_good, &t, res, fn, ctx);
    }
    verify_debris(c, repair, &t, res, fn, ctx);
out:
    lock_release(lock_fd);
    free(t.seen);
    free(t.debris);
    free(outs);
    free(rows.v);
    free(good);
    free(files.v);
    vyre_nvtx_pop();
    return rc;
}

/* ---- reindex ------------------------------------------------------------ */

int vyre_cache_reindex(vyre_cache *c, vyre_cache_reindex_result *res,
                       vyre_cache_progress_fn progress, void *progress_ctx, vyre_error *err)
{
    if (!c || !res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_reindex: NULL argument");
    memset(res, 0, sizeof *res);
    if (c->readonly)
        return readonly_error(c, err);
    int lock_fd = lock_take(c, LOCK_EX, err);
    if (lock_fd < 0)
        return lock_fd;
    file_list files = {0};
    check_out *outs = NULL;
    vyre__index_row *rows = NULL;
    size_t n = 0;
    /* The index entries first: a symlink, special file or another user's
     * file there is removed (the entry, never a link's target); a
     * directory is refused. */
    int removable = 0;
    int rc = c->idx ? VYRE_OK : index_check(c, &removable, err);
    if (rc && !removable)
        goto out;
    if (!c->idx)
        index_set_aside(c, 0, res->index_kept, sizeof res->index_kept);
    rc = VYRE_OK;
    check_layout(c, 1, NULL, NULL, NULL);
    rc = scan_and_check(c, &files, &outs, progress, progress_ctx, "reindexing", err);
    if (rc)
        goto out;
    rows = malloc((files.n ? files.n : 1) * sizeof *rows);
    if (!rows) {
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reindexing");
        goto out;
    }
    for (size_t i = 0; i < files.n; i++) {
        const file_ent *e = &files.v[i];
        const check_out *o = &outs[i];
        res->scanned++;
        char rel[BLOB_REL_MAX + 80];
        ent_rel(e, rel, sizeof rel);
        if (o->rc == VYRE_OK) {
            row_from_checked(c, &rows[n++], &o->h, o->file_size);
            res->bytes += o->file_size;
        } else if (!ent_ours(e) && !vyre__blob_is_blob_name(e->name)) {
            continue; /* not a name vyre writes: someone's, left (verify reports it) */
        } else if (e->foreign || o->hard_link) {
            /* Not ours to keep or move: only the name in the cache goes. */
            if (vyre__blob_unlink_at(c->rootfd, rel) == 0)
                res->removed++;
        } else if (o->rc != VYRE_ENOENT) {
            if (vyre__blob_quarantine_at(c->rootfd, c->root, rel,
                                         e->valid_name ? o->why : VYRE_REJECT_BAD_FIELD,
                                         NULL) == VYRE_OK)
                res->quarantined++;
        }
    }
    /* A missing or unreadable index is replaced; a readable one keeps its
     * usage columns through replace_all. */
    if (c->idx) {
        uint64_t bytes = 0;
        if (vyre__index_totals(c->idx, &res->rows_before, &bytes, NULL) != VYRE_OK) {
            vyre__index_close(c->idx);
            c->idx = NULL;
        }
    }
    if (!c->idx) {
        vyre__index *idx = NULL;
        rc = index_open_umask(c, VYRE_INDEX_READWRITE, &idx, NULL);
        if (rc == VYRE_OK) {
            uint64_t bytes = 0;
            if (vyre__index_totals(idx, &res->rows_before, &bytes, NULL) != VYRE_OK) {
                vyre__index_close(idx);
                idx = NULL;
                rc = VYRE_ECORRUPT;
            }
        }
        if (rc != VYRE_OK) {
            index_set_aside(c, 1, res->index_kept, sizeof res->index_kept);
            res->rows_before = 0;
            if ((rc = index_open_umask(c, VYRE_INDEX_READWRITE, &idx, err)))
                goto out;
        }
        c->idx = idx;
    }
    rc = vyre__index_replace_all(c->idx, rows, n, err);
    if (rc == VYRE_OK)
        res->indexed = n;
out:
    lock_release(lock_fd);
    free(outs);
    free(rows);
    free(files.v);
    return rc;
}

/* ---- clear ------------------------------------------------------------- */

typedef struct doomed_list {
    doomed *v;
    size_t n, cap;
} doomed_list;

static int doomed_push(doomed_list *l, uint8_t shard, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        doomed *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return VYRE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    doomed *d = &l->v[l->n++];
    memset(d, 0, sizeof *d);
    d->shard = shard;
    vyre__strlcpy(d->name, name, sizeof d->name);
    return VYRE_OK;
}

/* Lists clear's victims: every blob name in every shard (blobs/<2 hex>/).
 * Other names, there or in blobs/, are counted in *left and stay. */
static int clear_list(const vyre_cache *c, doomed_list *l, uint64_t *left, vyre_error *err)
{
    DIR *top = open_dir_stream(c->rootfd, "blobs");
    if (!top)
        return VYRE_OK;
    int rc = VYRE_OK;
    struct dirent *d;
    while (rc == VYRE_OK && (d = readdir(top))) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        if (!is_hex2(d->d_name)) {
            (*left)++;
            continue;
        }
        DIR *sd = open_dir_stream(dirfd(top), d->d_name);
        if (!sd)
            continue; /* a link or file in a shard's place: clear_finish removes the entry */
        uint8_t shard = (uint8_t)strtoul(d->d_name, NULL, 16);
        struct dirent *f;
        while (rc == VYRE_OK && (f = readdir(sd))) {
            if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
                continue;
            if (vyre__blob_is_blob_name(f->d_name))
                rc = doomed_push(l, shard, f->d_name);
            else
                (*left)++;
        }
        closedir(sd);
    }
    closedir(top);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory clearing the cache");
    return VYRE_OK;
}

/* Removes vyre's names from the flat directory name of the root (tmp/:
 * temp names; quarantine/: quarantine names); counts the rest in *left. */
static void clear_flat(const vyre_cache *c, const char *name, int (*ours)(const char *),
                       uint64_t *left)
{
    DIR *d = open_dir_stream(c->rootfd, name);
    if (!d)
        return;
    struct dirent *f;
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!ours(f->d_name) || S_ISDIR(st.st_mode) || unlinkat(dirfd(d), f->d_name, 0) != 0)
            (*left)++;
    }
    closedir(d);
}

/* After the rows went: empty shards go (rmdir: one that still holds
 * someone's file stays), and so do links or files in a shard's place. */
static void clear_shards(const vyre_cache *c)
{
    DIR *top = open_dir_stream(c->rootfd, "blobs");
    if (!top)
        return;
    struct dirent *d;
    while ((d = readdir(top))) {
        struct stat st;
        if (!is_hex2(d->d_name) || fstatat(dirfd(top), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        unlinkat(dirfd(top), d->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    }
    closedir(top);
}

int vyre_cache_clear_ex(vyre_cache *c, vyre_cache_clear_result *res, vyre_error *err)
{
    vyre_cache_clear_result local;
    if (!res)
        res = &local;
    memset(res, 0, sizeof *res);
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_clear: NULL argument");
    if (c->readonly)
        return readonly_error(c, err);
    int fd = lock_take(c, LOCK_EX, err);
    if (fd < 0)
        return fd;
    /* blobs/, tmp/ or quarantine/ that are links or files: the entry goes. */
    check_layout(c, 1, NULL, NULL, NULL);
    doomed_list l = {0};
    shard_fds s;
    shards_open(c, &s);
    int tmpfd = removal_tmp(c, err);
    int rc = tmpfd < 0 ? tmpfd : clear_list(c, &l, &res->left, err);
    for (size_t i = 0; rc == VYRE_OK && i < l.n; i++) {
        int e = doom_one(&s, tmpfd, &l.v[i]);
        if (e) {
            rc = vyre__fail(err, vyre__errno_code(e), "check the cache's permissions",
                            "cannot remove '%s/blobs/%02x/%s': %s", c->root, (unsigned)l.v[i].shard,
                            l.v[i].name, strerror(e));
            undoom(&s, tmpfd, l.v, i);
        }
    }
    if (rc == VYRE_OK) {
        step("commit");
        rc = c->idx ? vyre__index_replace_all(c->idx, NULL, 0, err) : VYRE_OK;
        if (rc) {
            undoom(&s, tmpfd, l.v, l.n);
            nothing_removed(err);
        }
    }
    if (rc == VYRE_OK) {
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i].moved && l.v[i].regular) {
                res->removed++;
                res->removed_bytes += l.v[i].size;
            }
        doomed_unlink(tmpfd, l.v, l.n);
        clear_shards(c);
        clear_flat(c, "tmp", vyre__blob_is_tmp_name, &res->left);
        clear_flat(c, "quarantine", vyre__blob_is_quarantine_name, &res->left);
    }
    shards_close(&s);
    if (tmpfd >= 0)
        close(tmpfd);
    free(l.v);
    lock_release(fd);
    return rc;
}

int vyre_cache_clear(vyre_cache *c, uint64_t *removed, uint64_t *bytes, vyre_error *err)
{
    vyre_cache_clear_result r;
    int rc = vyre_cache_clear_ex(c, &r, err);
    if (rc == VYRE_OK && removed)
        *removed = r.removed;
    if (rc == VYRE_OK && bytes)
        *bytes = r.removed_bytes;
    return rc;
}
