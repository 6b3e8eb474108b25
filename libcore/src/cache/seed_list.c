/*
 * seed_list.c - which files a seed run compiles (vyre_seed_list_*, see
 * vyre/compile.h): operands as named, directories walked for modules, and
 * Triton's rule that a .cubin beside a .ptx of the same stem is that PTX
 * module's build product, not a module of its own.
 *
 * The walk is descriptor-relative (openat/fdopendir on directories opened
 * O_DIRECTORY | O_NOFOLLOW, fstatat with AT_SYMLINK_NOFOLLOW), so a link
 * below the named directory is an entry, never a way out of the tree, and
 * no process-wide state (nftw's callback without context, chdir) is used.
 * It is bounded in depth (which bounds the descriptors held) and in
 * entries looked at. Like nftw with FTW_PHYS, which it replaces, it reads
 * a directory it may not open as empty. It lives in cache/ and calls only
 * base/: listing needs no compiler (cuda/seed.c, above it, compiles).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "vyre/compile.h"

/* One walk: the seedable files found, with bounds and the first error. */
typedef struct walk {
    const char *operand; /* as given, for messages */
    char **v;
    size_t n, cap;
    uint64_t seen; /* entries looked at */
    int rc;        /* first error; the walk stops on it */
    vyre_error *err;
} walk;

void vyre_seed_list_release(vyre_seed_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

/* Appends path (taken: freed on failure) to *v. 0 or VYRE_ENOMEM. */
static int push(char ***v, size_t *n, size_t *cap, char *path)
{
    if (!path)
        return VYRE_ENOMEM;
    if (vyre__grow(v, cap, *n + 1, sizeof **v, 64)) {
        free(path);
        return VYRE_ENOMEM;
    }
    (*v)[(*n)++] = path;
    return 0;
}

static const char *ext_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

static int seedable_ext(const char *path)
{
    const char *e = ext_of(path);
    return strcasecmp(e, ".ptx") == 0 || strcasecmp(e, ".cu") == 0 || strcasecmp(e, ".cubin") == 0;
}

/* dir + "/" + name, malloc'ed (no second '/' after a dir ending in one). */
static char *join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl == 0 || dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)slash + nl + 1);
    if (p) {
        memcpy(p, dir, dl);
        if (slash)
            p[dl] = '/';
        memcpy(p + dl + (size_t)slash, name, nl + 1);
    }
    return p;
}

static int is_dot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

static void walk_fail_oom(walk *w)
{
    w->rc = vyre__fail(w->err, VYRE_ENOMEM, NULL, "out of memory walking '%s'", w->operand);
}

/* Counts one entry against the bound; 1 when the walk must stop. */
static int over_bound(walk *w)
{
    if (++w->seen <= VYRE_SEED_MAX_WALK)
        return 0;
    w->rc = vyre__fail(
        w->err, VYRE_ETOOBIG, "name a smaller directory, or seed its subdirectories one at a time",
        "cannot walk '%s': more than %d entries under it", w->operand, VYRE_SEED_MAX_WALK);
    return 1;
}

static void walk_dir(walk *w, int fd, const char *path, unsigned depth);

/* One entry of the directory d (named path) at depth. */
static void walk_entry(walk *w, DIR *d, const char *path, const char *name, unsigned depth)
{
    struct stat st;
    if (over_bound(w) || fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return; /* gone meanwhile, or unreadable: nftw reported it and seed passed it over */
    if (S_ISREG(st.st_mode)) {
        if (seedable_ext(name) && push(&w->v, &w->n, &w->cap, join(path, name)))
            walk_fail_oom(w);
        return;
    }
    if (!S_ISDIR(st.st_mode))
        return; /* a symbolic link (never followed), a FIFO, a device */
    if (depth + 1 > VYRE_SEED_MAX_DEPTH) {
        w->rc = vyre__fail(w->err, VYRE_ETOOBIG, "name a directory nearer its files",
                           "cannot walk '%s': more than %d levels of directories under it",
                           w->operand, VYRE_SEED_MAX_DEPTH);
        return;
    }
    int sub = vyre__open_dir_at(dirfd(d), name);
    if (sub < 0)
        return; /* unreadable (read as empty, as nftw's FTW_DNR), replaced by a link, gone */
    char *subpath = join(path, name);
    if (!subpath) {
        close(sub);
        walk_fail_oom(w);
        return;
    }
    walk_dir(w, sub, subpath, depth + 1);
    free(subpath);
}

/* Walks the directory open at fd (taken: closed here), named path. */
static void walk_dir(walk *w, int fd, const char *path, unsigned depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while (w->rc == 0 && (de = readdir(d)) != NULL)
        if (!is_dot(de->d_name))
            walk_entry(w, d, path, de->d_name, depth);
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when path is a .cubin and the same stem with .ptx is among the n
 * sorted paths v; -1 without memory. */
static int has_ptx_sibling(const char *path, char **v, size_t n)
{
    const char *e = ext_of(path);
    if (strcasecmp(e, ".cubin") != 0)
        return 0;
    size_t stem = (size_t)(e - path);
    char *ptx = malloc(stem + 5);
    if (!ptx)
        return -1;
    memcpy(ptx, path, stem);
    memcpy(ptx + stem, ".ptx", 5);
    const char *key = ptx;
    int found = bsearch(&key, v, n, sizeof *v, cmp_str) != NULL;
    free(ptx);
    return found;
}

/* Moves w's files into l in path order, passing over Triton's cubins. */
static int take_files(vyre_seed_list *l, walk *w)
{
    if (w->n)
        qsort(w->v, w->n, sizeof *w->v, cmp_str);
    for (size_t i = 0; i < w->n; i++) {
        int sib = has_ptx_sibling(w->v[i], w->v, w->n);
        if (sib < 0)
            return VYRE_ENOMEM;
        if (sib)
            l->skipped++;
        else if (push(&l->paths, &l->n, &l->cap, strdup(w->v[i])))
            return VYRE_ENOMEM;
    }
    return 0;
}

/* Walks the directory operand (fd open on it, taken) into l. */
static int add_dir(vyre_seed_list *l, const char *operand, int fd, vyre_error *err)
{
    /* Files are named under operand without its trailing slashes, as nftw
     * names them ("dir/" gives "dir/a.ptx"). */
    char *bare = strdup(operand);
    if (!bare) {
        close(fd);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory walking '%s'", operand);
    }
    size_t bl = strlen(bare);
    while (bl > 1 && bare[bl - 1] == '/')
        bare[--bl] = '\0';
    walk w = {.operand = operand, .err = err};
    walk_dir(&w, fd, bare, 0);
    size_t before = l->n;
    uint64_t skipped = l->skipped;
    int rc = w.rc ? w.rc : take_files(l, &w);
    if (rc && !w.rc)
        vyre__fail(err, rc, NULL, "out of memory walking '%s'", operand);
    if (rc) { /* l keeps what it had before this call */
        for (size_t i = before; i < l->n; i++)
            free(l->paths[i]);
        l->n = before;
        l->skipped = skipped;
    }
    for (size_t i = 0; i < w.n; i++)
        free(w.v[i]);
    free(w.v);
    free(bare);
    return rc;
}

int vyre_seed_list_add(vyre_seed_list *l, const char *operand, int *is_dir, vyre_error *err)
{
    if (is_dir)
        *is_dir = 0;
    if (!l || !operand)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no list or no operand to add");
    struct stat st;
    if (stat(operand, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *p = strdup(operand);
        if (push(&l->paths, &l->n, &l->cap, p))
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
        return 0;
    }
    if (is_dir)
        *is_dir = 1;
    /* The named directory may be a link (~/.triton/cache often is): it is
     * opened where it points; nothing below it is reached through one. */
    int fd = open(operand, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES)
            return 0; /* read as empty, as nftw did */
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot walk '%s': %s", operand,
                          strerror(e));
    }
    return add_dir(l, operand, fd, err);
}
