/*
 * triton_scan.c - finding and listing Triton's kernel cache (vyre/triton.h).
 *
 * One pass over the top of the cache and one over each group directory,
 * with descriptors opened O_NOFOLLOW: a symlink inside the cache is an
 * entry of its own, never followed. The cache directory itself may be a
 * link (the user named it). Reads only; thread-safe (no process state).
 */
#include "vyre/triton.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/disk_size.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/triton_internal.h"

/* Triton's FileCacheManager.put writes into "tmp.pid_<pid>_<uuid>" at the
 * top (3.x) or "<file>.tmp.pid_<pid>_<uuid>" beside the file (2.x). */
#define TEMP_DIR_PREFIX "tmp.pid_"
#define TEMP_FILE_MARK  ".tmp.pid_"

int vyre_triton_cache_dir(char *out, size_t size, const char **source, vyre_error *err)
{
    const char *src = "TRITON_CACHE_DIR";
    const char *env = getenv("TRITON_CACHE_DIR");
    int n;
    if (env && *env) {
        n = snprintf(out, size, "%s", env);
    } else {
        const char *home = getenv("TRITON_HOME");
        src = "TRITON_HOME";
        if (!home || !*home) {
            src = "HOME";
            home = getenv("HOME");
        }
        if (!home || !*home) {
            struct passwd *pw = getpwuid(geteuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home || !*home)
            return vyre__fail(err, VYRE_EENV, "set TRITON_CACHE_DIR or HOME, or name the directory",
                              "cannot locate Triton's cache: no TRITON_CACHE_DIR, TRITON_HOME or "
                              "HOME");
        n = snprintf(out, size, "%s/.triton/cache", home);
    }
    if (n < 0 || (size_t)n >= size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path",
                          "Triton cache path from %s is too long", src);
    if (source)
        *source = src;
    return 0;
}

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int add_file(vyre_triton_group *g, size_t *cap, const char *name, const struct stat *st)
{
    if (vyre__grow(&g->files, cap, g->n_files + 1, sizeof *g->files, 16))
        return VYRE_ENOMEM;
    vyre_triton_file *f = &g->files[g->n_files++];
    memset(f, 0, sizeof *f);
    vyre__strlcpy(f->name, name, sizeof f->name);
    f->regular = S_ISREG(st->st_mode);
    f->bytes = vyre__disk_bytes(st);
    f->apparent_bytes = f->regular ? (uint64_t)st->st_size : 0;
    f->mtime_ns = ts_ns(st->st_mtim);
    f->atime_ns = ts_ns(st->st_atim);
    f->temp = strstr(name, TEMP_FILE_MARK) != NULL;
    g->bytes += f->bytes;
    g->apparent_bytes += f->apparent_bytes;
    if (f->mtime_ns > g->mtime_ns)
        g->mtime_ns = f->mtime_ns;
    int64_t use = f->atime_ns > f->mtime_ns ? f->atime_ns : f->mtime_ns;
    if (use > g->last_use_ns)
        g->last_use_ns = use;
    return 0;
}

static int cmp_file(const void *a, const void *b)
{
    return strcmp(((const vyre_triton_file *)a)->name, ((const vyre_triton_file *)b)->name);
}

/* Lists group directory gfd into g and sorts its files by name. */
static int list_group(int gfd, vyre_triton_group *g, vyre_error *err)
{
    int dfd = dup(gfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return vyre__fail(err, VYRE_EIO, NULL, "cannot list Triton group '%s': %s", g->key,
                          strerror(errno));
    }
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(gfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone since readdir: Triton replaced it */
        rc = add_file(g, &cap, de->d_name, &st);
    }
    closedir(d);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory listing Triton group '%s'", g->key);
    if (g->n_files > 1)
        qsort(g->files, g->n_files, sizeof *g->files, cmp_file);
    return 0;
}

static void classify(vyre_triton_group *g)
{
    if (g->has_manifest || g->has_metadata) {
        g->kind = VYRE_TRITON_KERNEL;
        return;
    }
    for (size_t i = 0; i < g->n_files; i++)
        if (ends_with(g->files[i].name, ".so")) {
            g->kind = VYRE_TRITON_LAUNCHER;
            return;
        }
    g->kind = VYRE_TRITON_KERNEL; /* kernel files without metadata: half-written */
}

/* Reads one top-level entry `name` of the cache into g. */
static int scan_entry(int top, const char *name, vyre_triton_group *g, vyre_triton_cache *c,
                      vyre_error *err)
{
    memset(g, 0, sizeof *g);
    g->warp_size = g->num_warps = g->num_stages = g->shared = -1;
    vyre__strlcpy(g->key, name, sizeof g->key);
    struct stat st;
    if (fstatat(top, name, &st, AT_SYMLINK_NOFOLLOW))
        return 1; /* gone since readdir */
    c->files++;
    if (!S_ISDIR(st.st_mode)) {
        g->kind = VYRE_TRITON_OTHER;
        g->bytes = vyre__disk_bytes(&st);
        g->apparent_bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        g->mtime_ns = g->last_use_ns = ts_ns(st.st_mtim);
        c->bytes += g->bytes;
        c->apparent_bytes += g->apparent_bytes;
        return 0;
    }
    int gfd = vyre__open_dir_at(top, name);
    if (gfd < 0)
        return 1;
    g->mtime_ns = g->last_use_ns = ts_ns(st.st_mtim);
    g->bytes = vyre__disk_bytes(&st); /* the directory's own blocks: du counts them */
    int rc = list_group(gfd, g, err);
    if (!rc) {
        if (!strncmp(name, TEMP_DIR_PREFIX, strlen(TEMP_DIR_PREFIX)))
            g->kind = VYRE_TRITON_TEMP;
        else {
            vyre__triton_group_parse(gfd, g);
            classify(g);
        }
        c->bytes += g->bytes;
        c->apparent_bytes += g->apparent_bytes;
        c->files += g->n_files;
    }
    close(gfd);
    return rc;
}

static void release_children(vyre_triton_group *g)
{
    for (size_t i = 0; i < g->n_children; i++)
        free(g->children[i].name);
    free(g->children);
    g->children = NULL;
    g->n_children = 0;
}

static int cmp_group(const void *a, const void *b)
{
    return strcmp(((const vyre_triton_group *)a)->key, ((const vyre_triton_group *)b)->key);
}

/* vyre's own entries, not Triton's: the quarantine verify --repair fills,
 * and (unless with_trash) a group a pruner renamed to remove it. Only a
 * directory is a trash: a file, link or FIFO given a trash name is not
 * vyre's, and is listed like any stray entry (never removed, never a
 * failure of every later prune). */
static int vyre_own(int top, const char *name, int with_trash)
{
    if (!strcmp(name, VYRE_TRITON_QUARANTINE))
        return 1;
    if (with_trash || !vyre__foreign_is_trash(name))
        return 0;
    struct stat st;
    return fstatat(top, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static int scan_top(int top, int with_trash, vyre_triton_cache *out, vyre_error *err)
{
    int dfd = dup(top);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return vyre__fail(err, VYRE_EIO, NULL, "cannot list Triton cache '%s': %s", out->dir,
                          strerror(errno));
    }
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        /* Left out of every count (groups, bytes, inodes): stats, ls and
         * verify would show a half-removed group as Triton's. */
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            vyre_own(top, de->d_name, with_trash))
            continue;
        if (vyre__grow(&out->groups, &cap, out->n_groups + 1, sizeof *out->groups, 64)) {
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory scanning '%s'", out->dir);
            break;
        }
        vyre_triton_group *g = &out->groups[out->n_groups];
        rc = scan_entry(top, de->d_name, g, out, err);
        if (rc == 0)
            out->n_groups++;
        else if (rc > 0) {
            free(g->files);
            release_children(g);
            rc = 0;
        }
    }
    closedir(d);
    return rc;
}

int vyre_triton_cache_scan(const char *dir, vyre_triton_cache *out, vyre_error *err)
{
    return vyre__triton_scan(dir, 0, out, err);
}

/* Opens the cache directory once, checked as vyre__foreign_open_root
 * checks a root that is to be changed; one that fails only that check is
 * opened for reading, the reason kept in out->unsafe for the calls that
 * change files to refuse with. The descriptor or a negative code. */
static int open_top(const char *dir, vyre_triton_cache *out, vyre_error *err)
{
    vyre_error e;
    vyre_error_clear(&e);
    int fd = vyre__foreign_open_root(dir, "Triton cache", &e);
    if (fd >= 0)
        return fd;
    if (fd == VYRE_ENOENT)
        return vyre__fail(err, VYRE_ENOENT,
                          "Triton creates it on its first compile; check TRITON_CACHE_DIR, "
                          "or name the directory",
                          "Triton cache '%s' does not exist", dir);
    if (fd != VYRE_EUNSAFE) {
        if (err)
            *err = e;
        return fd;
    }
    out->unsafe = e;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e2 = errno;
        return vyre__fail(err, e2 == ENOTDIR ? VYRE_EINVAL : VYRE_EIO,
                          "name the Triton cache directory", "cannot open Triton cache '%s': %s",
                          dir, strerror(e2));
    }
    return fd;
}

/* out->abs_dir: dir with the working directory before it when relative
 * ("./" dropped); out->real_dir: the held directory's resolved path. */
static void name_top(vyre_triton_cache *out)
{
    const char *d = out->dir;
    char cwd[VYRE_TRITON_PATH_MAX];
    if (d[0] == '/')
        vyre__strlcpy(out->abs_dir, d, sizeof out->abs_dir);
    else if (getcwd(cwd, sizeof cwd)) {
        while (d[0] == '.' && d[1] == '/')
            d += 2;
        int n = !strcmp(d, ".") ? snprintf(out->abs_dir, sizeof out->abs_dir, "%s", cwd)
                                : snprintf(out->abs_dir, sizeof out->abs_dir, "%s/%s", cwd, d);
        if (n < 0 || (size_t)n >= sizeof out->abs_dir)
            out->abs_dir[0] = '\0';
    }
    size_t len = strlen(out->abs_dir);
    while (len > 1 && out->abs_dir[len - 1] == '/')
        out->abs_dir[--len] = '\0';
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", out->fd);
    ssize_t r = readlink(link, out->real_dir, sizeof out->real_dir - 1);
    out->real_dir[r > 0 && out->real_dir[0] == '/' ? r : 0] = '\0';
}

/* Scans the cache held in top (out->dir named) into out, which then owns
 * top. */
static int scan_held(int top, int with_trash, vyre_triton_cache *out, vyre_error *err)
{
    out->fd = top;
    out->fd_held = 1;
    name_top(out);
    /* The cache directory's own blocks count, as in du -s. */
    struct stat st;
    if (fstat(top, &st) == 0)
        out->bytes += vyre__disk_bytes(&st);
    int rc = scan_top(top, with_trash, out, err);
    if (rc) {
        vyre_triton_cache_release(out);
        return rc;
    }
    if (out->n_groups > 1)
        qsort(out->groups, out->n_groups, sizeof *out->groups, cmp_group);
    return 0;
}

static int start(const char *dir, vyre_triton_cache *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if (!dir || !*dir)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no Triton cache directory given");
    if (vyre__strlcpy(out->dir, dir, sizeof out->dir) >= sizeof out->dir)
        /* bounded: excerpt, marked "...", of a path too long */
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "path too long: '%.64s...'",
                          dir);
    return 0;
}

int vyre__triton_scan(const char *dir, int with_trash, vyre_triton_cache *out, vyre_error *err)
{
    int rc = start(dir, out, err);
    if (rc)
        return rc;
    int top = open_top(dir, out, err);
    return top < 0 ? top : scan_held(top, with_trash, out, err);
}

int vyre__triton_scan_at(int at, const char *name, const char *dir, int with_trash,
                         vyre_triton_cache *out, vyre_error *err)
{
    int rc = start(dir, out, err);
    if (rc)
        return rc;
    int top = vyre__open_dir_at(at, name);
    if (top < 0) {
        int e = errno;
        struct stat st;
        if ((e == ENOTDIR || e == ELOOP) && !fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW))
            return vyre__fail(err, VYRE_EINVAL, "name the Triton cache directory itself",
                              "Triton cache '%s' is a %s, not a directory (never followed)", dir,
                              vyre__file_type_name(st.st_mode));
        return vyre__fail(err, e == ENOENT ? VYRE_ENOENT : VYRE_EIO, NULL,
                          "cannot open Triton cache '%s': %s", dir, strerror(e));
    }
    /* Below a checked root and never through a link: only the owner and
     * mode of the directory itself are left to check. */
    vyre_error e2;
    vyre_error_clear(&e2);
    if (vyre__foreign_check_root(top, dir, "Triton cache", &e2))
        out->unsafe = e2;
    return scan_held(top, with_trash, out, err);
}

void vyre_triton_cache_release(vyre_triton_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_groups; i++) {
        free(c->groups[i].files);
        release_children(&c->groups[i]);
    }
    free(c->groups);
    c->groups = NULL;
    c->n_groups = 0;
    if (c->fd_held)
        close(c->fd);
    c->fd_held = 0;
    c->fd = -1;
}
