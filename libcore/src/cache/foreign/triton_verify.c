/*
 * triton_verify.c - Triton's kind of the managed-cache engine's verify
 * (managed.h): checking one group (vyre__triton_check_group), and moving a
 * bad group out of Triton's way (vyre__triton_quarantine). The cubin is read bounded and never
 * through a link, and parsed with libcore's own cubin reader (vyre_cubin_kernels), which checks
 * every offset.
 */
#include <errno.h>
#include <fcntl.h>
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

static void check_cubin(vyre__managed_verdict *v, int gfd, const vyre_triton_group *g,
                        const char *cubin)
{
    char *buf, why[160];
    size_t len;
    /* vyre__triton_read_at opens O_NOATIME (where permitted): checking a
     * cache must not make its groups look used to prune's LRU order. */
    if (vyre__triton_read_at(gfd, cubin, VYRE_TRITON_CUBIN_MAX, &buf, &len, why, sizeof why)) {
        vyre__managed_found(v, cubin, "bad-cubin", 1, "cannot read '%s': %s", cubin, why);
        return;
    }
    char *names = NULL;
    size_t names_len = 0, count = 0;
    vyre_error err;
    if (vyre_cubin_kernels(buf, len, &names, &names_len, &count, &err)) {
        vyre__managed_found(v, cubin, "bad-cubin", 1, "'%s' is not a readable cubin: %s", cubin,
                            err.message);
        free(buf);
        return;
    }
    int found = 0;
    for (size_t off = 0; off < names_len; off += strlen(names + off) + 1)
        found |= !strcmp(names + off, g->name);
    if (!found)
        vyre__managed_found(v, cubin, "wrong-kernel", 1,
                            "'%s' defines no kernel '%s' (the metadata's name)", cubin, g->name);
    int sm = cubin_sm((const unsigned char *)buf, len);
    char *end;
    long want = strtol(g->arch, &end, 10);
    if (!strcmp(g->backend, "cuda") && *g->arch && !*end && sm >= 0 && sm != want)
        vyre__managed_found(v, cubin, "wrong-arch", 1,
                            "'%s' is built for sm_%d, the metadata's target.arch is '%s'", cubin,
                            sm, g->arch);
    free(names);
    free(buf);
}

/* Children whose path points outside the group (not <cache>/<key>/<name>,
 * nor the same under the place a copied cache came from): one problem for
 * the group, which is unusable: Triton would load the file the path
 * names. The path is never looked at here. */
static void check_outside(vyre__managed_verdict *v, const vyre_triton_cache *c,
                          const vyre_triton_group *g)
{
    size_t out = 0, first = 0;
    for (size_t i = 0; i < g->n_children; i++)
        if (vyre__triton_plain_name(g->children[i].name) &&
            vyre_triton_child_where(c, g, &g->children[i]) == VYRE_TRITON_CHILD_OUTSIDE)
            first = out++ ? first : i;
    if (out)
        vyre__managed_found(
            v, g->manifest_name, "outside-group", 1,
            /* bounded: excerpt of a child path in a fixed message */
            "'%s' points %zu of its %zu children outside the group (first: '%s' at '%.200s'): "
            "Triton would load that file",
            g->manifest_name, out, g->n_children, g->children[first].name, g->children[first].path);
}

static void check_manifest(vyre__managed_verdict *v, const vyre_triton_cache *c,
                           const vyre_triton_group *g)
{
    if (*g->manifest_error) {
        vyre__managed_found(v, g->manifest_name, "bad-manifest", 1, "%s", g->manifest_error);
        return;
    }
    check_outside(v, c, g);
    for (size_t i = 0; i < g->n_children; i++) {
        const vyre_triton_child *ch = &g->children[i];
        const vyre_triton_file *f =
            vyre__triton_plain_name(ch->name) ? vyre_triton_group_file(g, ch->name) : NULL;
        if (!vyre__triton_plain_name(ch->name))
            vyre__managed_found(v, g->manifest_name, "bad-manifest", 1,
                                "'%s' names '%s', not a file of the group", g->manifest_name,
                                ch->name);
        else if (!f || !f->regular)
            vyre__managed_found(v, ch->name, "missing-file", 1, "'%s' names '%s', which is %s",
                                g->manifest_name, ch->name, f ? "not a regular file" : "missing");
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

static void check_kernel(vyre__managed_verdict *v, int gfd, const vyre_triton_cache *c,
                         const vyre_triton_group *g)
{
    if (!g->has_manifest) {
        vyre__managed_found(
            v, NULL, "half-written", 1,
            "group '%s' has kernel files but no manifest (__grp__NAME.json, which Triton "
            "writes last)",
            g->key);
        return;
    }
    size_t before = v->n;
    check_manifest(v, c, g);
    if (!g->has_metadata)
        vyre__managed_found(v, NULL, "bad-metadata", 1, "group '%s' has no metadata '%s'", g->key,
                            g->manifest_name + 7);
    else if (*g->metadata_error)
        vyre__managed_found(v, g->metadata_file, "bad-metadata", 1, "%s", g->metadata_error);
    const char *cubin = cubin_child(g);
    const vyre_triton_file *f = *cubin ? vyre_triton_group_file(g, cubin) : NULL;
    if (v->n == before && f && f->regular)
        check_cubin(v, gfd, g, cubin);
    for (size_t i = 0; i < g->n_files; i++) {
        const vyre_triton_file *x = &g->files[i];
        if (x->temp)
            vyre__managed_found(v, x->name, "temp", 0, "'%s/%s' is a temp file Triton left", g->key,
                                x->name);
        else if (!x->named)
            vyre__managed_found(v, x->name, "orphan", 0, "'%s/%s' is named by no manifest", g->key,
                                x->name);
    }
}

void vyre__triton_check_group(const vyre_triton_cache *c, size_t i, vyre__managed_verdict *v)
{
    const vyre_triton_group *g = &c->groups[i];
    /* A trash is a group a pruner is removing (the Inductor scan keeps
     * them so that its prune finishes them): vyre's, half gone. */
    if (vyre__foreign_is_trash(g->key) && g->kind != VYRE_TRITON_OTHER)
        return;
    if (g->kind == VYRE_TRITON_TEMP)
        vyre__managed_found(v, NULL, "temp", 0, "'%s' is a temp directory Triton left", g->key);
    else if (g->kind == VYRE_TRITON_OTHER && strcmp(g->key, VYRE_TRITON_QUARANTINE))
        vyre__managed_found(v, NULL, "orphan", 0, "'%s' is not a group directory", g->key);
    /* The scan's descriptor: the cache's path is not opened again. */
    int gfd = g->kind == VYRE_TRITON_KERNEL ? vyre__open_dir_at(c->fd, g->key) : -1;
    if (gfd < 0)
        return; /* no kernel group, or gone since the scan */
    check_kernel(v, gfd, c, g);
    close(gfd);
}

static size_t count(const void *c)
{
    return ((const vyre_triton_cache *)c)->n_groups;
}

static void check(const void *c, size_t i, vyre__managed_verdict *v)
{
    vyre__triton_check_group(c, i, v);
}

static int quarantine(const void *c, size_t i, vyre_error *err)
{
    const vyre_triton_cache *tc = c;
    return vyre__triton_quarantine(tc, tc->groups[i].key, err);
}

/* Prune's rule: the group directory's mtime read again now, or its newest
 * file's at the scan. -1: gone. */
static int64_t touched(const void *c, size_t i)
{
    const vyre_triton_cache *tc = c;
    const vyre_triton_group *g = &tc->groups[i];
    struct stat st;
    if (fstatat(tc->fd, g->key, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    int64_t t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return t > g->mtime_ns ? t : g->mtime_ns;
}

int vyre_triton_verify(const vyre_triton_cache *c, int repair, vyre_triton_problem **out, size_t *n,
                       vyre_error *err)
{
    *out = NULL;
    *n = 0;
    if (!c->fd_held)
        return vyre__fail(err, VYRE_EINVAL, "scan the cache first",
                          "no Triton cache directory is held for '%s'", c->dir);
    /* Nothing is checked, let alone moved, in a cache another user
     * controls: repairing it would change files for them. */
    int rc = repair ? vyre_triton_cache_check_writable(c, err) : 0;
    static const vyre__managed_check_ops ops = {count, check, quarantine, touched};
    vyre__managed_verdict v;
    if (rc || (rc = vyre__managed_verify(&ops, c, repair, c->dir, &v, err)))
        return rc;
    *out = calloc(v.n ? v.n : 1, sizeof **out);
    for (size_t k = 0; *out && k < v.n; k++) {
        vyre_triton_problem *p = &(*out)[k];
        const vyre__managed_problem *m = &v.p[k];
        vyre__strlcpy(p->key, c->groups[m->entry].key, sizeof p->key);
        vyre__strlcpy(p->file, m->file, sizeof p->file);
        vyre__strlcpy(p->message, m->message, sizeof p->message);
        p->kind = m->kind;
        p->group_bad = m->unusable;
        p->quarantined = m->quarantined;
        if (m->quarantined < 0)
            p->repair_error = v.errors[m->error];
        else if (m->young)
            vyre__managed_young_error(&p->repair_error);
    }
    *n = *out ? v.n : 0;
    vyre__managed_verdict_release(&v);
    return *out ? 0 : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying '%s'", c->dir);
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

int vyre__triton_quarantine(const vyre_triton_cache *c, const char *key, vyre_error *err)
{
    if (!vyre__triton_plain_name(key) || !strcmp(key, VYRE_TRITON_QUARANTINE))
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
