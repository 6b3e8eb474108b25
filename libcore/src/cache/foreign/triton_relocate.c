/*
 * triton_relocate.c - pointing a group manifest's child_paths at where the
 * cache is now (vyre_triton_relocate).
 *
 * Triton's get_group drops each child whose absolute path does not exist,
 * so a cache copied to another directory misses (seen with Triton 3.6 on an
 * H100: a cache made under /tmp/a and copied to /tmp/b compiled again).
 * The manifest is rewritten the way Triton writes it (json.dumps: ", " and
 * ": " separators, keys in their order), into a temp file beside it that is
 * renamed over it: a reader sees the old manifest or the new one.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/triton_internal.h"

/* 1 when s[0..len) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF): what jansson takes as a string. */
static int is_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
        if (n < 0 || c > 0xf4 || end - p < n)
            return 0;
        unsigned v = c & (0x3fu >> n);
        for (int i = 0; i < n; i++, p++) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            v = v << 6 | (*p & 0x3fu);
        }
        if ((n == 2 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
            (n == 3 && (v < 0x10000 || v > 0x10ffff)))
            return 0;
    }
    return 1;
}

/* Sets each child to dir/key/name; *changed when one differed. A name
 * that is not one plain component would make a path out of the group
 * ("../x", "a/b"): the manifest is refused, never written. */
static int repoint(json_t *cp, const char *dir, const char *key, int *changed, vyre_error *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(cp, name, v)
    {
        if (!vyre__triton_plain_name(name))
            return vyre__fail(err, VYRE_EINVAL,
                              "check the group with verify; quarantine it if Triton did not "
                              "write it",
                              "group '%s' names a child '%s' that is not a file of the group: "
                              "its path would leave the group, not rewritten",
                              key, name);
        char want[VYRE_TRITON_PATH_MAX];
        int n = snprintf(want, sizeof want, "%s/%s/%s", dir, key, name);
        if (n < 0 || (size_t)n >= sizeof want)
            return vyre__fail(err, VYRE_ETOOBIG, NULL, "path for '%s' too long", name);
        if (json_is_string(v) && !strcmp(json_string_value(v), want))
            continue;
        *changed = 1;
        if (!is_utf8(want, (size_t)n))
            return vyre__fail(err, VYRE_EINVAL,
                              "move or link the cache to a UTF-8 (ASCII) path and relocate "
                              "it there",
                              "path '%s' is not UTF-8: a JSON manifest cannot hold it (group "
                              "'%s' not rewritten)",
                              want, key);
        if (json_object_set_new(cp, name, json_string(want)))
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory relocating '%s'", key);
    }
    return 0;
}

static int write_all(int fd, const char *s, size_t len)
{
    while (len) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes text to a temp file in gfd and renames it over `name`. */
static int replace_at(int gfd, const char *name, const char *text, mode_t mode, vyre_error *err)
{
    char tmp[VYRE_TRITON_NAME_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.vyre-tmp.%ld", name, (long)getpid());
    int fd = openat(gfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return vyre__fail(err, VYRE_EIO, NULL, "cannot create '%s': %s", tmp, strerror(errno));
    int bad = write_all(fd, text, strlen(text)) || fchmod(fd, mode & 0777) || fsync(fd);
    int e = errno;
    bad |= close(fd) != 0;
    if (bad || renameat(gfd, tmp, gfd, name)) {
        e = bad ? e : errno;
        unlinkat(gfd, tmp, 0);
        return vyre__fail(err, VYRE_EIO, NULL, "cannot rewrite '%s': %s", name, strerror(e));
    }
    return 0;
}

static int relocate_at(int gfd, const char *dir, const vyre_triton_group *g, int dry_run,
                       int *changed, vyre_error *err)
{
    char *buf, why[160];
    size_t len;
    struct stat st;
    if (fstatat(gfd, g->manifest_name, &st, AT_SYMLINK_NOFOLLOW) ||
        vyre__triton_read_at(gfd, g->manifest_name, VYRE_TRITON_MANIFEST_MAX, &buf, &len, why,
                             sizeof why))
        return vyre__fail(err, VYRE_EIO, NULL, "cannot read '%s/%s'", g->key, g->manifest_name);
    json_t *j = json_loadb(buf, len, 0, NULL);
    free(buf);
    json_t *cp = json_object_get(j, "child_paths");
    int rc = json_object_size(cp) > VYRE_TRITON_CHILDREN_MAX
                 ? vyre__fail(err, VYRE_EINVAL, "run verify", "'%s/%s' names too many children",
                              g->key, g->manifest_name)
             : json_is_object(cp)
                 ? repoint(cp, dir, g->key, changed, err)
                 : vyre__fail(err, VYRE_EINVAL, "run verify", "'%s/%s' is not a manifest", g->key,
                              g->manifest_name);
    if (!rc && *changed && !dry_run) {
        char *text = json_dumps(j, 0);
        rc = text ? replace_at(gfd, g->manifest_name, text, st.st_mode, err)
                  : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
        free(text);
    }
    json_decref(j);
    return rc;
}

int vyre_triton_relocate(const vyre_triton_cache *c, const vyre_triton_group *g, int dry_run,
                         int *changed, vyre_error *err)
{
    *changed = 0;
    if (!c->fd_held)
        return vyre__fail(err, VYRE_EINVAL, "scan the cache first",
                          "no Triton cache directory is held");
    if (c->abs_dir[0] != '/')
        return vyre__fail(err, VYRE_EINVAL, "name the cache by a shorter path",
                          "cannot make '%s' absolute: Triton's manifests hold absolute paths",
                          c->dir);
    if (!g->has_manifest || *g->manifest_error)
        return vyre__fail(err, VYRE_EINVAL, "run verify", "group '%s' has no usable manifest",
                          g->key);
    int rc = dry_run ? 0 : vyre_triton_cache_check_writable(c, err);
    if (rc)
        return rc;
    /* Relative to the scan's descriptor: the cache's path is not opened
     * again, so a cache swapped for a link is never written through. */
    int gfd = vyre__open_dir_at(c->fd, g->key);
    if (gfd < 0)
        return vyre__fail(err, VYRE_EIO, NULL, "cannot open group '%s/%s': %s", c->dir, g->key,
                          strerror(errno));
    rc = relocate_at(gfd, c->abs_dir, g, dry_run, changed, err);
    close(gfd);
    return rc;
}
