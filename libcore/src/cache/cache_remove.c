/*
 * cache_remove.c - the removal protocols (cache_internal.h): clear's and
 * verify --repair's (victims renamed into tmp/, their rows deleted in one
 * commit by the caller, then unlinked), prune's unlink of a blob whose row
 * is gone, and the shard descriptors both hold; the layout check that puts
 * a missing or foreign tmp/, blobs/ or lock right; and the test-only step
 * hook the kill-at-every-step tests use.
 */
#include "vyre/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/disk_size.h"

/* ---- the test-only step hook (cache_internal.h) ------------------------- */

static vyre__cache_step_fn g_step_hook;
static void *g_step_ctx;

void vyre__cache_set_step_hook(vyre__cache_step_fn fn, void *ctx)
{
    g_step_hook = fn;
    g_step_ctx = ctx;
}

void vyre__cache_step(const char *what)
{
    if (g_step_hook)
        g_step_hook(what, g_step_ctx);
}

/* ---- moving victims out of the way ------------------------------------ */

void vyre__cache_shards_open(const vyre_cache *c, shard_fds *s)
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

void vyre__cache_shards_close(shard_fds *s)
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
int vyre__cache_doom_one(shard_fds *s, int tmpfd, doomed *v)
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
    vyre__cache_step("rename");
    if (renameat(dfd, v->name, tmpfd, v->tmpname) != 0)
        return errno == ENOENT ? 0 : errno;
    v->moved = 1;
    v->regular = S_ISREG(st.st_mode);
    v->size = vyre__disk_bytes(&st);
    return 0;
}

/* After a failed commit: every moved victim back where it was (a blob
 * that cannot go back stays in tmp/ as debris, and its row with it). */
void vyre__cache_undoom(shard_fds *s, int tmpfd, doomed *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int e = 0;
        int dfd = v[i].moved ? shard_fd(s, v[i].shard, &e) : -1;
        if (dfd >= 0 && renameat(tmpfd, v[i].tmpname, dfd, v[i].name) == 0)
            v[i].moved = 0;
    }
}

/* Unlinks the moved victims from tmp/ (the rows are gone). */
void vyre__cache_doomed_unlink(int tmpfd, doomed *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].moved) {
            vyre__cache_step("unlink");
            unlinkat(tmpfd, v[i].tmpname, 0);
        }
}

/* Unlinks the blob of key where it lies (prune: its row is gone), from
 * its shard in s. 0: gone, or nothing of ours there (no file, no real
 * shard, a directory under the name: never ours to remove); else the
 * errno. A link or special file under the name is unlinked itself, never
 * followed. */
int vyre__cache_unlink_blob(shard_fds *s, const vyre_key *key)
{
    vyre__cache_step("unlink");
    int e = 0;
    int dfd = shard_fd(s, key->bytes[0], &e);
    if (dfd < 0)
        return e == ENOENT || e == ENOTDIR || e == ELOOP ? 0 : e;
    char name[VYRE_KEY_HEX_LEN + sizeof VYRE_BLOB_EXT];
    vyre_key_to_hex(key, name);
    memcpy(name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT, sizeof VYRE_BLOB_EXT);
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT || errno == EISDIR)
        return 0;
    return errno;
}

/* tmp/, opened for a removal (under the exclusive lock). A tmp/ that is
 * missing, a link or a file is put right first, as a repair does (the
 * entry goes, never what a link points to); a failure removes nothing. */
int vyre__cache_removal_tmp(vyre_cache *c, vyre_error *err)
{
    int tmpfd = vyre__open_dir_at(c->rootfd, "tmp");
    if (tmpfd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)) {
        vyre__cache_check_layout(c, 1, NULL, NULL, NULL);
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
void vyre__cache_nothing_removed(vyre_error *err)
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

/* ---- the layout ---------------------------------------------------------- */

void vyre__cache_report(vyre_cache_problem_fn fn, void *ctx, vyre_cache_verify_problem *p,
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
void vyre__cache_check_layout(vyre_cache *c, int repair, vyre_cache_verify_result *res,
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
        vyre__cache_sub_path(c, dirs[i], p.path, sizeof p.path);
        if (repair && unlinkat(c->rootfd, dirs[i], S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0 &&
            (!is_dir || vyre__mkdirat_umask(c->rootfd, dirs[i], c->umask) == 0 ||
             errno == EEXIST)) {
            p.repaired = 1;
            p.action = is_dir ? "removed, directory recreated" : "removed";
        }
        if (res)
            res->foreign++;
        vyre__cache_report(fn, ctx, &p, res);
    }
}
