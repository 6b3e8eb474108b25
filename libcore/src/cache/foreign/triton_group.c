/*
 * triton_group.c - one Triton cache group's manifest and metadata
 * (vyre/triton.h). Both are JSON written by Triton, read bounded
 * (VYRE_TRITON_JSON_MAX), never through a symlink, and parsed with jansson;
 * whatever is wrong is recorded on the group for verify to report.
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
#include "base/jsonutil.h"
#include "cache/foreign/triton_internal.h"

#define MANIFEST_PREFIX "__grp__"

int vyre__triton_read_at(int dirfd, const char *name, size_t max, char **out, size_t *len,
                         char *why, size_t why_size)
{
    *out = NULL;
    *len = 0;
    /* O_NOATIME: reading a manifest must not make its group look used, or
     * every scan (a daily prune's included) would reset the LRU order
     * under relatime. Only the file's owner may ask for it: EPERM, retry. */
    int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = openat(dirfd, name, flags | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(dirfd, name, flags);
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_size, "%s", e == ELOOP ? "a symbolic link" : strerror(e));
        return e == ENOENT ? VYRE_ENOENT : e == ELOOP ? VYRE_EINVAL : VYRE_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "a %s, not a regular file", vyre__file_type_name(st.st_mode));
        close(fd);
        return VYRE_EINVAL;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(why, why_size, "%lld bytes, more than the %zu read", (long long)st.st_size, max);
        close(fd);
        return VYRE_ETOOBIG;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        snprintf(why, why_size, "out of memory");
        return VYRE_ENOMEM;
    }
    size_t got = 0, want = (size_t)st.st_size;
    while (got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* shrunk while read: take what is there */
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return 0;
}

/* Reads (at most max bytes) and parses JSON file `name`; NULL with why[]
 * filled on failure. */
static json_t *load_json(int gfd, const char *name, size_t max, char *why, size_t why_size)
{
    char *buf, reason[160];
    size_t len;
    if (vyre__triton_read_at(gfd, name, max, &buf, &len, reason, sizeof reason)) {
        snprintf(why, why_size, "cannot read '%s': %s", name, reason);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!j)
        snprintf(why, why_size, "'%s' is not JSON: %s (line %d)", name, je.text, je.line);
    else if (!json_is_object(j)) {
        snprintf(why, why_size, "'%s' holds %s, not an object", name, vyre__json_kind(j));
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* One block holding name and path: memory in proportion to the entry. */
static int set_child(vyre_triton_child *c, const char *name, const char *path)
{
    size_t a = strlen(name) + 1, b = strlen(path) + 1;
    c->name = malloc(a + b);
    if (!c->name)
        return VYRE_ENOMEM;
    memcpy(c->name, name, a);
    c->path = c->name + a;
    memcpy(c->path, path, b);
    return 0;
}

static void parse_children(vyre_triton_group *g, json_t *cp)
{
    size_t n = json_object_size(cp);
    if (n > VYRE_TRITON_CHILDREN_MAX) {
        snprintf(g->manifest_error, sizeof g->manifest_error,
                 /* bounded: excerpt of a file name in a fixed message */
                 "'%.120s' names %zu children, more than the %d read (Triton writes about 7)",
                 g->manifest_name, n, VYRE_TRITON_CHILDREN_MAX);
        return;
    }
    g->children = n ? calloc(n, sizeof *g->children) : NULL;
    if (n && !g->children) {
        snprintf(g->manifest_error, sizeof g->manifest_error, "out of memory");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach(cp, k, v)
    {
        if (!json_is_string(v)) {
            snprintf(g->manifest_error, sizeof g->manifest_error,
                     /* bounded: excerpt of a JSON key in a fixed message */
                     "child_paths['%.64s'] is %s, not a path", k, vyre__json_kind(v));
            return;
        }
        if (strlen(k) >= VYRE_TRITON_NAME_MAX || json_string_length(v) >= VYRE_TRITON_PATH_MAX) {
            snprintf(g->manifest_error, sizeof g->manifest_error,
                     /* bounded: excerpt of a JSON key in a fixed message */
                     "child_paths['%.64s'] is too long", k);
            return;
        }
        if (set_child(&g->children[g->n_children], k, json_string_value(v))) {
            snprintf(g->manifest_error, sizeof g->manifest_error, "out of memory");
            return;
        }
        g->n_children++;
    }
}

static void parse_manifest(int gfd, vyre_triton_group *g, const char *file)
{
    g->has_manifest = 1;
    vyre__strlcpy(g->manifest_name, file, sizeof g->manifest_name);
    json_t *j =
        load_json(gfd, file, VYRE_TRITON_MANIFEST_MAX, g->manifest_error, sizeof g->manifest_error);
    if (!j)
        return;
    json_t *cp = json_object_get(j, "child_paths");
    if (!json_is_object(cp))
        snprintf(g->manifest_error, sizeof g->manifest_error, "'%s' has no \"child_paths\" object",
                 file);
    else
        parse_children(g, cp);
    json_decref(j);
}

static void get_str(json_t *o, const char *key, char *out, size_t size)
{
    json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        vyre__strlcpy(out, json_string_value(v), size);
    else if (json_is_integer(v))
        snprintf(out, size, "%lld", (long long)json_integer_value(v));
}

static int64_t get_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* target is {"backend", "arch", "warp_size"} (Triton 3.x GPUTarget as a
 * dict) or [backend, arch, warp_size] (as a list in some versions). */
static void parse_target(vyre_triton_group *g, json_t *t)
{
    if (json_is_object(t)) {
        get_str(t, "backend", g->backend, sizeof g->backend);
        get_str(t, "arch", g->arch, sizeof g->arch);
        g->warp_size = get_int(t, "warp_size");
    } else if (json_is_array(t) && json_array_size(t) == 3) {
        json_t *w = json_array_get(t, 2);
        json_t *tmp = json_pack("{sOsOsO}", "backend", json_array_get(t, 0), "arch",
                                json_array_get(t, 1), "warp_size", w);
        if (tmp) {
            parse_target(g, tmp);
            json_decref(tmp);
        }
    }
}

static void parse_metadata(int gfd, vyre_triton_group *g, const char *file)
{
    g->has_metadata = 1;
    vyre__strlcpy(g->metadata_file, file, sizeof g->metadata_file);
    json_t *j =
        load_json(gfd, file, VYRE_TRITON_JSON_MAX, g->metadata_error, sizeof g->metadata_error);
    if (!j)
        return;
    get_str(j, "name", g->name, sizeof g->name);
    get_str(j, "hash", g->hash, sizeof g->hash);
    get_str(j, "triton_version", g->triton_version, sizeof g->triton_version);
    parse_target(g, json_object_get(j, "target"));
    g->num_warps = get_int(j, "num_warps");
    g->num_stages = get_int(j, "num_stages");
    g->shared = get_int(j, "shared");
    /* The file name is cut, never the reason: %.200s keeps the message whole. */
    if (!*g->name)
        /* bounded: the name is cut, never the reason */
        snprintf(g->metadata_error, sizeof g->metadata_error, "'%.200s' has no \"name\"", file);
    json_decref(j);
}

/* The metadata file of a group without a (readable) manifest: its only
 * .json that is not a manifest. */
static const char *lone_metadata(const vyre_triton_group *g)
{
    const char *found = NULL;
    for (size_t i = 0; i < g->n_files; i++) {
        const char *n = g->files[i].name;
        size_t l = strlen(n);
        if (l > 5 && !strcmp(n + l - 5, ".json") && strncmp(n, MANIFEST_PREFIX, 7) &&
            !g->files[i].temp) {
            if (found)
                return NULL;
            found = n;
        }
    }
    return found;
}

void vyre__triton_group_parse(int gfd, vyre_triton_group *g)
{
    for (size_t i = 0; i < g->n_files; i++) {
        const char *n = g->files[i].name;
        size_t l = strlen(n);
        if (!strncmp(n, MANIFEST_PREFIX, 7) && l > 12 && !strcmp(n + l - 5, ".json") &&
            !g->files[i].temp) {
            parse_manifest(gfd, g, n);
            break;
        }
    }
    char meta[VYRE_TRITON_NAME_MAX];
    const char *m = NULL;
    if (g->has_manifest) {
        /* __grp__<name>.json -> <name>.json */
        snprintf(meta, sizeof meta, "%s", g->manifest_name + 7);
        m = meta;
        for (size_t i = 0; i < g->n_files; i++)
            g->files[i].named = !strcmp(g->files[i].name, g->manifest_name);
        /* Files are sorted (list_group): one lookup per child. */
        for (size_t c = 0; c < g->n_children; c++) {
            const vyre_triton_file *f = vyre_triton_group_file(g, g->children[c].name);
            if (f)
                g->files[f - g->files].named = 1;
        }
    } else {
        m = lone_metadata(g);
    }
    if (m) {
        struct stat st;
        if (!fstatat(gfd, m, &st, AT_SYMLINK_NOFOLLOW))
            parse_metadata(gfd, g, m);
    }
}
