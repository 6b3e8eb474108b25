/*
 * triton_verify.c - checking a Triton cache group by group
 * (vyre_triton_verify), and moving a bad group out of Triton's way
 * (vyre_triton_quarantine). The cubin is read bounded and never through a
 * link, and parsed with libcore's own cubin reader (vyre_cubin_kernels),
 * which checks every offset.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cubin.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/triton_internal.h"
#include "cache/managed.h"

typedef struct plist {
    vyre_triton_problem *p;
    size_t n, cap;
    int oom;
} plist;

static void add(plist *l, const vyre_triton_group *g, const char *file, const char *kind, int bad,
                const char *fmt, ...) VYRE_PRINTF(6, 7);

static void add(plist *l, const vyre_triton_group *g, const char *file, const char *kind, int bad,
                const char *fmt, ...)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        vyre_triton_problem *p = realloc(l->p, ncap * sizeof *p);
        if (!p) {
            l->oom = 1;
            return;
        }
        l->p = p;
        l->cap = ncap;
    }
    vyre_triton_problem *p = &l->p[l->n++];
    memset(p, 0, sizeof *p);
    vyre__strlcpy(p->key, g->key, sizeof p->key);
    vyre__strlcpy(p->file, file ? file : "", sizeof p->file);
    p->kind = kind;
    p->group_bad = bad;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->message, sizeof p->message, fmt, ap);
    va_end(ap);
}

/* Sorted files: a lookup is a binary search, so a group is checked in
 * O(children log files), never children x files. */
static const vyre_triton_file *find_file(const vyre_triton_group *g, const char *name)
{
    return vyre_triton_group_file(g, name);
}

/* The SM a cubin was built for, from e_flags: bits 0-7 up to ELF ABI
 * version 7 (sm_90 reads 0x5a0d5a on Triton 3.6's cubins), bits 8-15 from
 * ABI version 8 on (LLVM's EF_CUDA_SM and EF_CUDA_SM_MASK). -1 when the
 * header is too short. */
static int cubin_sm(const unsigned char *b, size_t len)
{
    if (len < 64)
        return -1;
    unsigned flags =
        (unsigned)b[48] | (unsigned)b[49] << 8 | (unsigned)b[50] << 16 | (unsigned)b[51] << 24;
    return b[8] >= 8 ? (int)((flags >> 8) & 0xff) : (int)(flags & 0xff);
}

static void check_cubin(plist *l, int gfd, const vyre_triton_group *g, const char *cubin)
{
    char *buf, why[160];
    size_t len;
    /* vyre__triton_read_at opens O_NOATIME (where permitted): checking a
     * cache must not make its groups look used to prune's LRU order. */
    if (vyre__triton_read_at(gfd, cubin, VYRE_TRITON_CUBIN_MAX, &buf, &len, why, sizeof why)) {
        add(l, g, cubin, "bad-cubin", 1, "cannot read '%s': %s", cubin, why);
        return;
    }
    char *names = NULL;
    size_t names_len = 0, count = 0;
    vyre_error err;
    if (vyre_cubin_kernels(buf, len, &names, &names_len, &count, &err)) {
        add(l, g, cubin, "bad-cubin", 1, "'%s' is not a readable cubin: %s", cubin, err.message);
        free(buf);
        return;
    }
    int found = 0;
    for (size_t off = 0; off < names_len; off += strlen(names + off) + 1)
        found |= !strcmp(names + off, g->name);
    if (!found)
        add(l, g, cubin, "wrong-kernel", 1, "'%s' defines no kernel '%s' (the metadata's name)",
            cubin, g->name);
    int sm = cubin_sm((const unsigned char *)buf, len);
    char *end;
    long want = strtol(g->arch, &end, 10);
    if (!strcmp(g->backend, "cuda") && *g->arch && !*end && sm >= 0 && sm != want)
        add(l, g, cubin, "wrong-arch", 1,
            "'%s' is built for sm_%d, the metadata's target.arch is '%s'", cubin, sm, g->arch);
    free(names);
    free(buf);
}

static int plain_name(const char *n)
{
    return vyre__triton_plain_name(n);
}

/* Children whose path points outside the group (not <cache>/<key>/<name>,
 * nor the same under the place a copied cache came from): one problem for
 * the group, which is unusable: Triton would load the file the path
 * names. The path is never looked at here. */
static void check_outside(plist *l, const vyre_triton_cache *c, const vyre_triton_group *g)
{
    size_t out = 0, first = 0;
    for (size_t i = 0; i < g->n_children; i++)
        if (plain_name(g->children[i].name) &&
            vyre_triton_child_where(c, g, &g->children[i]) == VYRE_TRITON_CHILD_OUTSIDE)
            first = out++ ? first : i;
    if (out)
        add(l, g, g->manifest_name, "outside-group", 1,
            /* bounded: excerpt of a child path in a fixed message */
            "'%s' points %zu of its %zu children outside the group (first: '%s' at '%.200s'): "
            "Triton would load that file",
            g->manifest_name, out, g->n_children, g->children[first].name, g->children[first].path);
}

static void check_manifest(plist *l, const vyre_triton_cache *c, const vyre_triton_group *g)
{
    if (*g->manifest_error) {
        add(l, g, g->manifest_name, "bad-manifest", 1, "%s", g->manifest_error);
        return;
    }
    check_outside(l, c, g);
    for (size_t i = 0; i < g->n_children; i++) {
        const vyre_triton_child *ch = &g->children[i];
        const vyre_triton_file *f = plain_name(ch->name) ? find_file(g, ch->name) : NULL;
        if (!plain_name(ch->name))
            add(l, g, g->manifest_name, "bad-manifest", 1,
                "'%s' names '%s', not a file of the group", g->manifest_name, ch->name);
        else if (!f || !f->regular)
            add(l, g, ch->name, "missing-file", 1, "'%s' names '%s', which is %s", g->manifest_name,
                ch->name, f ? "not a regular file" : "missing");
    }
}

/* The manifest's .cubin child, else "" */
static const char *cubin_child(const vyre_triton_group *g)
{
    for (size_t i = 0; i < g->n_children; i++) {
        size_t n = strlen(g->children[i].name);
        if (n > 6 && !strcmp(g->children[i].name + n - 6, ".cubin"))
            return g->children[i].name;
    }
    return "";
}

static void check_kernel(plist *l, int gfd, const vyre_triton_cache *c, const vyre_triton_group *g)
{
    if (!g->has_manifest) {
        add(l, g, NULL, "half-written", 1,
            "group '%s' has kernel files but no manifest (__grp__NAME.json, which Triton "
            "writes last)",
            g->key);
        return;
    }
    size_t before = l->n;
    check_manifest(l, c, g);
    if (!g->has_metadata)
        add(l, g, NULL, "bad-metadata", 1, "group '%s' has no metadata '%s'", g->key,
            g->manifest_name + 7);
    else if (*g->metadata_error)
        add(l, g, g->metadata_file, "bad-metadata", 1, "%s", g->metadata_error);
    const char *cubin = cubin_child(g);
    const vyre_triton_file *f = *cubin ? find_file(g, cubin) : NULL;
    if (l->n == before && f && f->regular)
        check_cubin(l, gfd, g, cubin);
    for (size_t i = 0; i < g->n_files; i++) {
        const vyre_triton_file *x = &g->files[i];
        if (x->temp)
            add(l, g, x->name, "temp", 0, "'%s/%s' is a temp file Triton left", g->key, x->name);
        else if (!x->named)
            add(l, g, x->name, "orphan", 0, "'%s/%s' is named by no manifest", g->key, x->name);
    }
}

int vyre_triton_verify(const vyre_triton_cache *c, vyre_triton_problem **out, size_t *n,
                       vyre_error *err)
{
    *out = NULL;
    *n = 0;
    if (!c->fd_held)
        return vyre__fail(err, VYRE_EINVAL, "scan the cache first",
                          "no Triton cache directory is held for '%s'", c->dir);
    int top = c->fd; /* the scan's: the cache's path is not opened again */
    plist l = {0};
    for (size_t i = 0; i < c->n_groups; i++) {
        const vyre_triton_group *g = &c->groups[i];
        /* A trash is a group a pruner is removing (the Inductor scan keeps
         * them so that its prune finishes them): vyre's, half gone. */
        if (vyre__foreign_is_trash(g->key) && g->kind != VYRE_TRITON_OTHER)
            continue;
        if (g->kind == VYRE_TRITON_TEMP)
            add(&l, g, NULL, "temp", 0, "'%s' is a temp directory Triton left", g->key);
        else if (g->kind == VYRE_TRITON_OTHER && strcmp(g->key, VYRE_TRITON_QUARANTINE))
            add(&l, g, NULL, "orphan", 0, "'%s' is not a group directory", g->key);
        if (g->kind != VYRE_TRITON_KERNEL)
            continue;
        int gfd = vyre__open_dir_at(top, g->key);
        if (gfd < 0)
            continue; /* gone since the scan */
        check_kernel(&l, gfd, c, g);
        close(gfd);
    }
    if (l.oom) {
        free(l.p);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying '%s'", c->dir);
    }
    *out = l.p;
    *n = l.n;
    return 0;
}

/* The quarantine folder of top, created 0700 when missing: its
 * descriptor, or a negative code (not a directory: VYRE_EIO). */
static int open_quarantine(const vyre_triton_cache *c, vyre_error *err)
{
    if (mkdirat(c->fd, VYRE_TRITON_QUARANTINE, 0700) && errno != EEXIST)
        return vyre__fail(err, VYRE_EIO, "check the permissions of the cache",
                          "cannot create '%s/%s': %s", c->dir, VYRE_TRITON_QUARANTINE,
                          strerror(errno));
    int q = vyre__open_dir_at(c->fd, VYRE_TRITON_QUARANTINE);
    if (q < 0)
        return vyre__fail(err, VYRE_EIO,
                          "remove or rename what is in the way; vyre keeps a directory there",
                          "'%s/%s' is not a directory", c->dir, VYRE_TRITON_QUARANTINE);
    return q;
}

int vyre_triton_quarantine(const vyre_triton_cache *c, const char *key, vyre_error *err)
{
    if (!plain_name(key) || !strcmp(key, VYRE_TRITON_QUARANTINE))
        return vyre__fail(err, VYRE_EINVAL, NULL, "'%s' is not a Triton group name", key);
    int rc = vyre_triton_cache_check_writable(c, err);
    if (rc)
        return rc;
    int q = open_quarantine(c, err);
    if (q < 0)
        return q;
    rc = vyre__managed_quarantine_move(c->fd, key, q, key, VYRE_TRITON_QUARANTINE, err);
    close(q);
    return rc;
}
