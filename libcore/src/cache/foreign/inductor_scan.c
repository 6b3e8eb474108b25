/*
 * inductor_scan.c - listing TorchInductor's cache (vyre/inductor.h).
 *
 * One pass over each level Inductor writes: the two-letter folders
 * (kernels, autotune results), fxgraph/<2>/<key>/, aotautograd/<key>/,
 * and triton/<device>/, which vyre_triton_cache_scan reads. The cache
 * directory is opened once (for a change, through vyre__foreign_open_root:
 * owner and mode checked) and held in the cache until release; every
 * directory below is opened relative to it, O_NOFOLLOW: a symlink is an
 * entry of its own, never followed. Only the names Inductor gives count as
 * its entries (inductor_names.c); one of their shape it never gives is
 * foreign. Only names and inode data are read here. Thread-safe.
 */
#include "vyre/inductor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/disk_size.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/inductor_internal.h"
#include "cache/foreign/triton_internal.h"

const char *vyre_inductor_kind_name(vyre_inductor_kind kind)
{
    static const char *const names[] = {"kernel",      "autotune", "fxgraph",
                                        "aotautograd", "triton",   "other"};
    return (unsigned)kind < VYRE_INDUCTOR_KINDS ? names[kind] : "other";
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

static int dot_or_dotdot(const char *n)
{
    return !strcmp(n, ".") || !strcmp(n, "..");
}

/* Adds inode st (of entry e) to its sums and times. */
static void account(vyre_inductor_entry *e, const struct stat *st)
{
    e->files++;
    e->bytes += vyre__disk_bytes(st);
    if (S_ISREG(st->st_mode))
        e->apparent_bytes += (uint64_t)st->st_size;
    else if (S_ISLNK(st->st_mode))
        e->links++;
    /* A directory's atime is not a use: listing it (as this scan does)
     * moves it under relatime. Files are never opened here. */
    int64_t m = ts_ns(st->st_mtim), a = S_ISDIR(st->st_mode) ? m : ts_ns(st->st_atim);
    if (m > e->mtime_ns)
        e->mtime_ns = m;
    if ((a > m ? a : m) > e->last_use_ns)
        e->last_use_ns = a > m ? a : m;
}

/* Adds directory `name` of at (already accounted) and all below it to e,
 * down to VYRE__FOREIGN_MAX_DEPTH; what cannot be listed marks e. */
static void measure_tree(int at, const char *name, unsigned depth, vyre_inductor_entry *e)
{
    int fd = depth < VYRE__FOREIGN_MAX_DEPTH ? vyre__open_dir_at(at, name) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        e->unreadable = 1;
        return;
    }
    for (struct dirent *de; (de = readdir(d));) {
        struct stat st;
        if (dot_or_dotdot(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone since readdir */
        account(e, &st);
        if (S_ISDIR(st.st_mode))
            measure_tree(dirfd(d), de->d_name, depth + 1, e);
    }
    closedir(d);
}

typedef struct scan_ctx {
    vyre_inductor_cache *c;
    size_t cap;
    vyre_error *err;
} scan_ctx;

static vyre_inductor_entry *new_entry(scan_ctx *x, const char *prefix, const char *name,
                                      vyre_inductor_kind kind)
{
    vyre_inductor_cache *c = x->c;
    if (vyre__grow(&c->entries, &x->cap, c->n_entries + 1, sizeof *c->entries, 64))
        return NULL;
    vyre_inductor_entry *e = &c->entries[c->n_entries++];
    memset(e, 0, sizeof *e);
    snprintf(e->path, sizeof e->path, "%s%s", prefix, name);
    e->kind = kind;
    return e;
}

/* Records `name` of at as one entry of `kind` (a trash name, a link or a
 * special file keep their kind but are marked), measured whole; foreign
 * marks a name Inductor never gives (a link is reported as a link). */
static int add_foreign(scan_ctx *x, int at, const char *prefix, const char *name,
                       vyre_inductor_kind kind, int foreign)
{
    struct stat st;
    if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW))
        return 0; /* gone since readdir */
    vyre_inductor_entry *e = new_entry(x, prefix, name, kind);
    if (!e)
        return vyre__fail(x->err, VYRE_ENOMEM, NULL, "out of memory scanning '%s'", x->c->dir);
    e->dir = S_ISDIR(st.st_mode);
    e->link = !e->dir && !S_ISREG(st.st_mode);
    e->trash = vyre__foreign_is_trash(name);
    e->foreign = foreign && !e->link && !e->trash;
    account(e, &st);
    if (e->dir)
        measure_tree(at, name, 1, e);
    x->c->bytes += e->bytes;
    x->c->apparent_bytes += e->apparent_bytes;
    x->c->files += e->files;
    return 0;
}

static int add_entry(scan_ctx *x, int at, const char *prefix, const char *name,
                     vyre_inductor_kind kind)
{
    return add_foreign(x, at, prefix, name, kind, 0);
}

/* Calls fn for each name of directory `name` of at (opened O_NOFOLLOW).
 * A directory that cannot be listed becomes an unreadable "other" entry. */
static int each_child(scan_ctx *x, int at, const char *prefix, const char *name,
                      int (*fn)(scan_ctx *, int, const char *, const char *))
{
    int fd = vyre__open_dir_at(at, name);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        int rc = add_entry(x, at, prefix, name, VYRE_INDUCTOR_OTHER);
        if (!rc && x->c->n_entries)
            x->c->entries[x->c->n_entries - 1].unreadable = 1;
        return rc;
    }
    char sub[VYRE_INDUCTOR_ENTRY_MAX];
    snprintf(sub, sizeof sub, "%s%s/", prefix, name);
    x->c->files++; /* the folder itself, and its own blocks (du counts them) */
    struct stat st;
    if (fstat(fd, &st) == 0)
        x->c->bytes += vyre__disk_bytes(&st);
    int rc = 0;
    for (struct dirent *de; !rc && (de = readdir(d));)
        if (!dot_or_dotdot(de->d_name))
            rc = fn(x, dirfd(d), sub, de->d_name);
    closedir(d);
    return rc;
}

static int is_dir_at(int at, const char *name)
{
    struct stat st;
    return !fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

/* The two-letter folder prefix ends with ("fxgraph/bn/": "bn"). */
static void bucket_of(const char *prefix, char bucket[3])
{
    size_t n = strlen(prefix);
    bucket[0] = bucket[1] = bucket[2] = '\0';
    if (n >= 3 && prefix[n - 1] == '/' && (n == 3 || prefix[n - 4] == '/'))
        memcpy(bucket, prefix + n - 3, 2);
}

/* 1 when a name that is not Inductor's is foreign where it lies: not one
 * of vyre's trash names and not a dot name (Inductor's own temp files). */
static int strange(const char *name)
{
    return name[0] != '.' && !vyre__foreign_is_trash(name);
}

/* <2>/<name>: a kernel, an autotune result, or something else; a .py or
 * .best_config Inductor would not name so is foreign. */
static int bucket_child(scan_ctx *x, int at, const char *prefix, const char *name)
{
    char bucket[3];
    bucket_of(prefix, bucket);
    vyre_inductor_kind k = VYRE_INDUCTOR_OTHER;
    int foreign = 0;
    if (!vyre__foreign_is_trash(name) && !is_dir_at(at, name)) {
        if (vyre__inductor_is_kernel_name(bucket, name))
            k = VYRE_INDUCTOR_KERNEL;
        else if (vyre__inductor_is_autotune_name(bucket, name))
            k = VYRE_INDUCTOR_AUTOTUNE;
        else
            foreign = strange(name) && vyre__inductor_looks_like_entry(name);
    }
    return add_foreign(x, at, prefix, name, k, foreign);
}

/* fxgraph/<2>/<key>: an FX graph entry when a directory with its key. */
static int fxgraph_entry(scan_ctx *x, int at, const char *prefix, const char *name)
{
    char bucket[3];
    bucket_of(prefix, bucket);
    int entry = is_dir_at(at, name) && !vyre__foreign_is_trash(name) &&
                vyre__inductor_is_fxgraph_key(bucket, name);
    return add_foreign(x, at, prefix, name, entry ? VYRE_INDUCTOR_FXGRAPH : VYRE_INDUCTOR_OTHER,
                       !entry && strange(name));
}

static int fxgraph_bucket(scan_ctx *x, int at, const char *prefix, const char *name)
{
    if (!is_dir_at(at, name) || vyre__foreign_is_trash(name))
        return add_entry(x, at, prefix, name, VYRE_INDUCTOR_OTHER);
    return each_child(x, at, prefix, name, fxgraph_entry);
}

static int aot_entry(scan_ctx *x, int at, const char *prefix, const char *name)
{
    int entry =
        is_dir_at(at, name) && !vyre__foreign_is_trash(name) && vyre__inductor_is_aot_key(name);
    return add_foreign(x, at, prefix, name, entry ? VYRE_INDUCTOR_AOTAUTOGRAD : VYRE_INDUCTOR_OTHER,
                       !entry && strange(name));
}

/* Copies Triton's groups of one device into entries: kernel and launcher
 * groups are "triton" entries, Triton's temp directories and stray files
 * "other" (a running Triton may be writing them). */
static int add_triton_groups(scan_ctx *x, int devfd, const char *prefix,
                             const vyre_triton_cache *tc)
{
    for (size_t i = 0; i < tc->n_groups; i++) {
        const vyre_triton_group *g = &tc->groups[i];
        int group = g->kind == VYRE_TRITON_KERNEL || g->kind == VYRE_TRITON_LAUNCHER;
        int trash = vyre__foreign_is_trash(g->key);
        vyre_inductor_entry *e = new_entry(
            x, prefix, g->key, group && !trash ? VYRE_INDUCTOR_TRITON : VYRE_INDUCTOR_OTHER);
        if (!e)
            return vyre__fail(x->err, VYRE_ENOMEM, NULL, "out of memory scanning '%s'", x->c->dir);
        e->dir = g->kind != VYRE_TRITON_OTHER || g->n_files > 0;
        e->trash = trash;
        if (g->kind == VYRE_TRITON_OTHER) { /* a stray file or a link at the top */
            struct stat st;
            e->link = !fstatat(devfd, g->key, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode) &&
                      !S_ISDIR(st.st_mode);
        }
        e->bytes = g->bytes;
        e->apparent_bytes = g->apparent_bytes;
        e->files = 1 + g->n_files;
        for (size_t f = 0; f < g->n_files; f++)
            e->links += !g->files[f].regular;
        e->mtime_ns = g->mtime_ns;
        /* The scan just read each group's manifest and metadata (.json),
         * which moves their atime under relatime (the atime is older than
         * the ctime of a copied file): vyre's own read is not a use. The
         * kernel files' atimes are (Triton reads the .cubin to load). */
        e->last_use_ns = g->mtime_ns;
        for (size_t f = 0; f < g->n_files; f++)
            if (!ends_with(g->files[f].name, ".json") && g->files[f].atime_ns > e->last_use_ns)
                e->last_use_ns = g->files[f].atime_ns;
    }
    x->c->bytes += tc->bytes;
    x->c->apparent_bytes += tc->apparent_bytes;
    x->c->files += tc->files;
    return 0;
}

/* Scans the Triton cache in directory `name` of at into *out, below the
 * root this scan holds (vyre__triton_scan_at: opened O_NOFOLLOW relative to
 * at, no path opened, its descriptor kept in *out for verify, quarantine
 * and prune). `display` (the absolute path) names it in messages and is the
 * base Triton's recorded child paths are matched against. *devfd is a
 * second descriptor of the same directory for the caller's own look at
 * the groups (the caller closes it). With vyre's trash: it becomes a trash
 * entry, which prune finishes. */
static int scan_device(int at, const char *name, const char *display, vyre_triton_cache *out,
                       int *devfd)
{
    memset(out, 0, sizeof *out);
    int rc = vyre__triton_scan_at(at, name, display, 1, out, NULL);
    if (rc)
        return rc;
    *devfd = dup(out->fd);
    return *devfd < 0 ? VYRE_EIO : 0;
}

/* triton/<device>: one Triton cache, scanned by vyre_triton_cache_scan. */
static int triton_device(scan_ctx *x, int at, const char *prefix, const char *name)
{
    vyre_inductor_cache *c = x->c;
    if (!is_dir_at(at, name) || vyre__foreign_is_trash(name) ||
        !strcmp(name, VYRE_TRITON_QUARANTINE))
        return add_entry(x, at, prefix, name, VYRE_INDUCTOR_OTHER);
    vyre_inductor_triton *t = realloc(c->triton, (c->n_triton + 1) * sizeof *t);
    if (!t)
        return vyre__fail(x->err, VYRE_ENOMEM, NULL, "out of memory scanning '%s'", c->dir);
    c->triton = t;
    t = &c->triton[c->n_triton];
    memset(t, 0, sizeof *t);
    vyre__strlcpy(t->device, name, sizeof t->device);
    char path[VYRE_TRITON_PATH_MAX], sub[VYRE_INDUCTOR_ENTRY_MAX];
    int n = snprintf(path, sizeof path, "%s/%s%s", c->dir, prefix, name);
    int devfd = -1;
    if (n < 0 || (size_t)n >= sizeof path || scan_device(at, name, path, &t->cache, &devfd)) {
        if (devfd >= 0)
            close(devfd);
        vyre_triton_cache_release(&t->cache);
        int rc = add_entry(x, at, prefix, name, VYRE_INDUCTOR_OTHER);
        if (!rc)
            c->entries[c->n_entries - 1].unreadable = 1;
        return rc;
    }
    c->n_triton++;
    c->files++; /* the device folder */
    snprintf(sub, sizeof sub, "%s%s/", prefix, name);
    int rc = add_triton_groups(x, devfd, sub, &t->cache);
    close(devfd);
    return rc;
}

/* One name at the top of the cache. */
static int top_child(scan_ctx *x, int at, const char *prefix, const char *name)
{
    if (!strcmp(name, VYRE_INDUCTOR_QUARANTINE))
        return 0; /* vyre's own, not Inductor's: left out of every count */
    int dir = is_dir_at(at, name) && !vyre__foreign_is_trash(name);
    if (dir && strlen(name) == 2)
        return each_child(x, at, prefix, name, bucket_child);
    if (dir && !strcmp(name, "fxgraph"))
        return each_child(x, at, prefix, name, fxgraph_bucket);
    if (dir && !strcmp(name, "aotautograd"))
        return each_child(x, at, prefix, name, aot_entry);
    if (dir && !strcmp(name, "triton")) {
        x->c->has_triton_dir = 1;
        return each_child(x, at, prefix, name, triton_device);
    }
    return add_entry(x, at, prefix, name, VYRE_INDUCTOR_OTHER);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const vyre_inductor_entry *)a)->path, ((const vyre_inductor_entry *)b)->path);
}

static int cmp_device(const void *a, const void *b)
{
    return strcmp(((const vyre_inductor_triton *)a)->device,
                  ((const vyre_inductor_triton *)b)->device);
}

static int open_cache(const char *dir, vyre_error *err)
{
    int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top >= 0)
        return top;
    int e = errno;
    if (e == ENOENT)
        return vyre__fail(err, VYRE_ENOENT,
                          "Inductor creates it on its first compile; check "
                          "TORCHINDUCTOR_CACHE_DIR, or name the directory",
                          "TorchInductor cache '%s' does not exist", dir);
    return vyre__fail(err, e == ENOTDIR ? VYRE_EINVAL : VYRE_EIO,
                      "name the TorchInductor cache directory",
                      "cannot open TorchInductor cache '%s': %s", dir, strerror(e));
}

/* Opens the cache once: for a change as vyre's own root is opened (owner
 * and mode checked), else as it is. The descriptor is kept above the
 * standard streams, so that a cache never scanned (fd 0 after a memset)
 * is never mistaken for one holding a descriptor. */
static int open_root(const char *dir, unsigned flags, vyre_error *err)
{
    int fd = flags & VYRE_INDUCTOR_SCAN_WRITE
                 ? vyre__foreign_open_root(dir, "TorchInductor cache", err)
                 : open_cache(dir, err);
    if (fd < 0 || fd > 2)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    return high >= 0 ? high
                     : vyre__fail(err, VYRE_EIO, NULL, "cannot open TorchInductor cache '%s': %s",
                                  dir, strerror(e));
}

int vyre_inductor_cache_scan(const char *dir, unsigned flags, vyre_inductor_cache *out,
                             vyre_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if (!dir || !*dir)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no TorchInductor cache directory given");
    if (vyre__strlcpy(out->dir, dir, sizeof out->dir) >= sizeof out->dir - VYRE_INDUCTOR_ENTRY_MAX)
        /* bounded: excerpt, marked "...", of a path too long */
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "path too long: '%.64s...'",
                          dir);
    int top = open_root(dir, flags, err);
    if (top < 0)
        return top;
    out->fd = top;
    out->writable = (flags & VYRE_INDUCTOR_SCAN_WRITE) != 0;
    struct stat tst; /* the cache directory's own blocks count, as in du -s */
    if (fstat(top, &tst) == 0)
        out->bytes += vyre__disk_bytes(&tst);
    /* Listed through a second descriptor of the same directory (closedir
     * closes it): "." of the held one, never the path again. */
    int lfd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        vyre_inductor_cache_release(out);
        return vyre__fail(err, VYRE_EIO, NULL, "cannot list TorchInductor cache '%s': %s", dir,
                          strerror(e));
    }
    scan_ctx x = {out, 0, err};
    int rc = 0;
    for (struct dirent *de; !rc && (de = readdir(d));)
        if (!dot_or_dotdot(de->d_name))
            rc = top_child(&x, dirfd(d), "", de->d_name);
    closedir(d);
    if (rc) {
        vyre_inductor_cache_release(out);
        return rc;
    }
    if (out->n_entries > 1)
        qsort(out->entries, out->n_entries, sizeof *out->entries, cmp_entry);
    if (out->n_triton > 1)
        qsort(out->triton, out->n_triton, sizeof *out->triton, cmp_device);
    return 0;
}

void vyre_inductor_cache_release(vyre_inductor_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_triton; i++)
        vyre_triton_cache_release(&c->triton[i].cache);
    free(c->triton);
    free(c->entries);
    if (c->fd > 2)
        close(c->fd);
    c->fd = -1;
    c->writable = 0;
    c->triton = NULL;
    c->entries = NULL;
    c->n_triton = c->n_entries = 0;
}
