/*
 * triton_cache.c - what a scanned Triton cache answers without reading the
 * disk again (vyre/triton.h): may it be changed (its held directory
 * checked as vyre's own cache root is), which file of a group has a name,
 * and whether a manifest's child is a file of its group.
 */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/triton_internal.h"

int vyre_triton_cache_check_writable(const vyre_triton_cache *c, vyre_error *err)
{
    if (!c || !c->fd_held)
        return vyre__fail(err, VYRE_EINVAL, "scan the cache first",
                          "no Triton cache directory is held");
    if (c->unsafe.code) {
        if (err)
            *err = c->unsafe;
        return c->unsafe.code;
    }
    /* Again now: the mode may have changed since the scan. */
    return vyre__foreign_check_root(c->fd, c->dir, "Triton cache", err);
}

static int cmp_name(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const vyre_triton_file *)elem)->name);
}

const vyre_triton_file *vyre_triton_group_file(const vyre_triton_group *g, const char *name)
{
    if (!g->n_files || !name)
        return NULL;
    return bsearch(name, g->files, g->n_files, sizeof *g->files, cmp_name);
}

int vyre__triton_plain_name(const char *n)
{
    return n && *n && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..");
}

/* 1 when path is exactly root/key/name. */
static int is_under(const char *path, const char *root, const char *key, const char *name)
{
    size_t r = strlen(root), k = strlen(key);
    if (!r || strncmp(path, root, r) || path[r] != '/')
        return 0;
    path += r + 1;
    if (strncmp(path, key, k) || path[k] != '/')
        return 0;
    return !strcmp(path + k + 1, name);
}

/* 1 when path is "/<dirs>/<key>/<name>" with no ".", ".." or empty
 * component among the dirs: the same group under another root. */
static int moved_copy(const char *path, const char *key, const char *name)
{
    size_t p = strlen(path), k = strlen(key), n = strlen(name);
    if (path[0] != '/' || p < k + n + 3)
        return 0;
    const char *tail = path + p - n - k - 2;
    if (tail[0] != '/' || strncmp(tail + 1, key, k) || tail[k + 1] != '/')
        return 0;
    for (const char *s = path + 1;;) {
        const char *e = memchr(s, '/', (size_t)(tail + 1 - s)); /* tail[0] is '/' */
        size_t len = (size_t)(e - s);
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        if (e == tail)
            break;
        s = e + 1;
    }
    return 1;
}

vyre_triton_child_place vyre_triton_child_where(const vyre_triton_cache *c,
                                                const vyre_triton_group *g,
                                                const vyre_triton_child *ch)
{
    if (!vyre__triton_plain_name(ch->name) || !ch->path)
        return VYRE_TRITON_CHILD_OUTSIDE;
    if (is_under(ch->path, c->abs_dir, g->key, ch->name) ||
        is_under(ch->path, c->real_dir, g->key, ch->name))
        return VYRE_TRITON_CHILD_HERE;
    return moved_copy(ch->path, g->key, ch->name) ? VYRE_TRITON_CHILD_MOVED
                                                  : VYRE_TRITON_CHILD_OUTSIDE;
}
