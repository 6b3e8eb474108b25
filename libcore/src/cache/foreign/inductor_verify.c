/*
 * inductor_verify.c - TorchInductor's kind of the managed-cache engine's
 * verify (managed.h), without Python: the autotune results' JSON, the
 * kernels as UTF-8 text, the nested Triton cache's groups as Triton's
 * verify checks them. Pickles
 * (FX graph and AOTAutograd entries) are counted, never opened: reading
 * them needs Python's unpickler, which runs code.
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
#include "cache/foreign/inductor_internal.h"
#include "cache/foreign/triton_internal.h"
#include "cache/managed.h"

/* UTF-8 as RFC 3629 has it (no overlongs, surrogates or code points past
 * U+10FFFF), fed in chunks. */
typedef struct utf8 {
    unsigned need;          /* continuation bytes still due */
    unsigned char lo, hi;   /* the range of the next one */
    unsigned long long off; /* bytes seen */
} utf8;

/* 0, 1 at an invalid byte, 2 at a NUL byte; u->off is its offset then. */
static int utf8_feed(utf8 *u, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++, u->off++) {
        unsigned char c = b[i];
        if (u->need) {
            if (c < u->lo || c > u->hi)
                return 1;
            u->lo = 0x80, u->hi = 0xBF;
            u->need--;
            continue;
        }
        u->lo = 0x80, u->hi = 0xBF;
        if (c == 0)
            return 2;
        if (c < 0x80)
            continue;
        if (c >= 0xC2 && c <= 0xDF)
            u->need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            u->need = 2;
            u->lo = c == 0xE0 ? 0xA0 : 0x80;
            u->hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            u->need = 3;
            u->lo = c == 0xF0 ? 0x90 : 0x80;
            u->hi = c == 0xF4 ? 0x8F : 0xBF;
        } else
            return 1;
    }
    return 0;
}

/* Opens `name` of at to read: never through a link, never blocking on a
 * FIFO. -1 with why set. */
static int open_plain(int at, const char *name, char *why, size_t why_size)
{
    /* O_NOATIME where allowed (the owner, or root): checking an entry is
     * not a use of it, and prune goes by last use. */
    int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = openat(at, name, flags | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(at, name, flags);
    if (fd < 0) {
        snprintf(why, why_size, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "a %s, not a regular file", vyre__file_type_name(st.st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

/* A generated kernel: non-empty UTF-8 text without NUL, which is what
 * Python's import needs of a source file; its Python is not parsed. */
static void check_kernel(vyre__managed_verdict *v, int at, const char *name,
                         const vyre_inductor_entry *e)
{
    char why[160];
    int fd = open_plain(at, name, why, sizeof why);
    if (fd < 0) {
        vyre__managed_found(v, NULL, "unreadable", 1, "kernel '%s' cannot be read: %s", e->path,
                            why);
        return;
    }
    utf8 u = {0, 0x80, 0xBF, 0};
    unsigned char buf[65536];
    int bad = 0;
    ssize_t r;
    while (!bad && ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0)
            bad = utf8_feed(&u, buf, (size_t)r);
    int rerr = !bad && r < 0 ? errno : 0;
    close(fd);
    if (rerr)
        vyre__managed_found(v, NULL, "unreadable", 1, "kernel '%s' cannot be read: %s", e->path,
                            strerror(rerr));
    else if (bad || u.need)
        vyre__managed_found(
            v, NULL, "bad-kernel", 1,
            "kernel '%s' is not UTF-8 text: %s at byte %llu (Python cannot import it)", e->path,
            bad == 2 ? "a NUL byte"
            : bad    ? "an invalid byte"
                     : "a cut character",
            u.off);
    else if (u.off == 0)
        vyre__managed_found(v, NULL, "bad-kernel", 1, "kernel '%s' is empty", e->path);
}

/* 1 when a group `key` exists in some device of the nested Triton cache. */
static int triton_has(const vyre_inductor_cache *c, const char *key)
{
    for (size_t d = 0; d < c->n_triton; d++)
        for (size_t i = 0; i < c->triton[d].cache.n_groups; i++)
            if (!strcmp(c->triton[d].cache.groups[i].key, key))
                return 1;
    return 0;
}

/* The fields Inductor's autotune cache reads back (autotune_cache.py):
 * num_warps and num_stages become triton.Config's, configs_hash must
 * match the kernel's configs, triton_cache_hash names the Triton group
 * compiled for the chosen config. */
static void check_autotune_fields(vyre__managed_verdict *v, const vyre_inductor_cache *c, json_t *j,
                                  const vyre_inductor_entry *e, vyre_inductor_report *r)
{
    static const char *const ints[] = {"num_warps", "num_stages"};
    for (size_t i = 0; i < 2; i++)
        if (!json_is_integer(json_object_get(j, ints[i]))) {
            vyre__managed_found(v, NULL, "bad-autotune", 1, "'%s' has no integer '%s'", e->path,
                                ints[i]);
            return;
        }
    if (!json_is_string(json_object_get(j, "configs_hash"))) {
        vyre__managed_found(v, NULL, "bad-autotune", 1, "'%s' has no string 'configs_hash'",
                            e->path);
        return;
    }
    json_t *h = json_object_get(j, "triton_cache_hash");
    if (!h || json_is_null(h))
        return;
    if (!json_is_string(h)) {
        vyre__managed_found(v, NULL, "bad-autotune", 1, "'%s': 'triton_cache_hash' is not a string",
                            e->path);
        return;
    }
    if (!c->has_triton_dir)
        r->hashes_unchecked++;
    else if (!triton_has(c, json_string_value(h)))
        /* Inductor compiles the chosen config again: a miss, not a fault. */
        vyre__managed_found(
            v, NULL, "missing-triton-group", 0,
            /* bounded: excerpt of a group name in a fixed message */
            "'%s' names Triton group '%.120s', which is not in the nested Triton cache", e->path,
            json_string_value(h));
}

/* Reads all of a small file: a new buffer, or NULL with why set. */
static char *read_small(int at, const char *name, size_t *len, char *why, size_t why_size)
{
    int fd = open_plain(at, name, why, why_size);
    if (fd < 0)
        return NULL;
    char *buf = malloc(VYRE_INDUCTOR_JSON_MAX + 1);
    size_t got = 0;
    ssize_t r = 0;
    while (buf && got <= VYRE_INDUCTOR_JSON_MAX &&
           ((r = read(fd, buf + got, VYRE_INDUCTOR_JSON_MAX + 1 - got)) > 0 ||
            (r < 0 && errno == EINTR)))
        got += r > 0 ? (size_t)r : 0;
    int e = r < 0 ? errno : 0;
    close(fd);
    if (!buf || e || got > VYRE_INDUCTOR_JSON_MAX) {
        snprintf(why, why_size, "%s",
                 !buf ? "out of memory"
                 : e  ? strerror(e)
                      : "more than the 1 MiB read");
        free(buf);
        return NULL;
    }
    *len = got;
    return buf;
}

static void check_autotune(vyre__managed_verdict *v, const vyre_inductor_cache *c, int at,
                           const char *name, const vyre_inductor_entry *e, vyre_inductor_report *r)
{
    char why[160];
    size_t len;
    char *buf = read_small(at, name, &len, why, sizeof why);
    if (!buf) {
        vyre__managed_found(v, NULL, "unreadable", 1, "'%s' cannot be read: %s", e->path, why);
        return;
    }
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!j || !json_is_object(j))
        vyre__managed_found(v, NULL, "bad-autotune", 1, "'%s' is not a JSON object: %s", e->path,
                            j ? "another JSON value" : je.text);
    else
        check_autotune_fields(v, c, j, e, r);
    json_decref(j);
}

/* Reads one file entry again (kernel or autotune result) from its folder. */
static void check_file_entry(vyre__managed_verdict *v, const vyre_inductor_cache *c,
                             const vyre_inductor_entry *e, vyre_inductor_report *r)
{
    const char *last;
    int at = vyre__inductor_open_parent(c->fd, e->path, &last, NULL);
    if (at < 0) {
        vyre__managed_found(v, NULL, "unreadable", 0, "'%s': its folder cannot be opened", e->path);
        return;
    }
    if (e->kind == VYRE_INDUCTOR_KERNEL)
        check_kernel(v, at, last, e);
    else
        check_autotune(v, c, at, last, e, r);
    close(at);
}

static void check_entry(vyre__managed_verdict *v, const vyre_inductor_cache *c,
                        const vyre_inductor_entry *e, vyre_inductor_report *r)
{
    if (e->trash)
        return; /* vyre's own, finished by the next prune */
    if (e->link) {
        vyre__managed_found(
            v, NULL, "link", 1,
            "'%s' is a symbolic link or special file, not followed (Inductor writes files)",
            e->path);
        return;
    }
    if (e->foreign) {
        vyre__managed_found(
            v, NULL, "foreign", 0,
            "'%s' is not a name TorchInductor gives a kernel, an autotune result or an entry: "
            "not its file, left alone",
            e->path);
        r->not_checked[e->kind]++;
        return;
    }
    if (e->unreadable)
        vyre__managed_found(v, NULL, "unreadable", 0, "'%s' cannot be listed whole", e->path);
    if (e->links && e->kind != VYRE_INDUCTOR_TRITON) /* Triton's own check lists those */
        vyre__managed_found(v, NULL, "link", 1, "'%s' holds %llu symbolic link%s, not followed",
                            e->path, (unsigned long long)e->links, e->links == 1 ? "" : "s");
    switch (e->kind) {
    case VYRE_INDUCTOR_KERNEL:
    case VYRE_INDUCTOR_AUTOTUNE:
        check_file_entry(v, c, e, r);
        r->checked[e->kind]++;
        break;
    case VYRE_INDUCTOR_TRITON:
        r->checked[e->kind]++; /* by check_triton */
        break;
    default:
        r->not_checked[e->kind]++;
    }
}

static int cmp_group(const void *key, const void *g)
{
    return strcmp(key, ((const vyre_triton_group *)g)->key);
}

/* An entry triton/<device>/<key>: its group checked as Triton's own
 * verify checks it, each message naming the device. */
static void check_triton(vyre__managed_verdict *v, const vyre_inductor_cache *c,
                         const vyre_inductor_entry *e)
{
    const char *dev = e->path + 7, *slash = strchr(dev, '/');
    size_t len = slash ? (size_t)(slash - dev) : 0;
    for (size_t d = 0; d < c->n_triton; d++) {
        const vyre_inductor_triton *t = &c->triton[d];
        if (!len || strncmp(t->device, dev, len) || t->device[len] || !t->cache.fd_held)
            continue;
        const vyre_triton_group *g =
            bsearch(slash + 1, t->cache.groups, t->cache.n_groups, sizeof *g, cmp_group);
        char prefix[VYRE_TRITON_NAME_MAX + 16];
        snprintf(prefix, sizeof prefix, "triton/%s: ", t->device);
        v->prefix = prefix;
        if (g)
            vyre__triton_check_group(&t->cache, (size_t)(g - t->cache.groups), v);
        v->prefix = NULL;
    }
}

typedef struct verify_ctx {
    const vyre_inductor_cache *c;
    vyre_inductor_report *r;
} verify_ctx;

static size_t count(const void *x)
{
    return ((const verify_ctx *)x)->c->n_entries;
}

static void check(const void *x, size_t i, vyre__managed_verdict *v)
{
    const verify_ctx *k = x;
    const vyre_inductor_entry *e = &k->c->entries[i];
    if (!strncmp(e->path, "triton/", 7))
        check_triton(v, k->c, e);
    check_entry(v, k->c, e, k->r);
}

static int quarantine(const void *x, size_t i, vyre_error *err)
{
    const vyre_inductor_cache *c = ((const verify_ctx *)x)->c;
    return vyre__inductor_quarantine(c, c->entries[i].path, err);
}

/* Prune's rule: the entry's mtime read again now (its parent reached
 * without following a link), or its newest at the scan. -1: gone; 0: a
 * refusal (the move says why). */
static int64_t touched(const void *x, size_t i)
{
    const vyre_inductor_cache *c = ((const verify_ctx *)x)->c;
    const vyre_inductor_entry *e = &c->entries[i];
    const char *last;
    int at = vyre__inductor_open_parent(c->fd, e->path, &last, NULL);
    if (at < 0)
        return at == VYRE_ENOENT ? -1 : 0;
    struct stat st;
    int rc = fstatat(at, last, &st, AT_SYMLINK_NOFOLLOW);
    int gone = rc && errno == ENOENT;
    close(at);
    if (rc)
        return gone ? -1 : 0;
    int64_t t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return t > e->mtime_ns ? t : e->mtime_ns;
}

/* The engine's problems as the report's. */
static int report(const vyre_inductor_cache *c, const vyre__managed_verdict *v,
                  vyre_inductor_report *r)
{
    r->problems = calloc(v->n ? v->n : 1, sizeof *r->problems);
    if (!r->problems)
        return VYRE_ENOMEM;
    for (size_t k = 0; k < v->n; k++) {
        vyre_inductor_problem *p = &r->problems[k];
        const vyre__managed_problem *m = &v->p[k];
        const char *entry = c->entries[m->entry].path;
        vyre__strlcpy(p->entry, entry, sizeof p->entry);
        snprintf(p->path, sizeof p->path, "%s%s%s", entry, *m->file ? "/" : "", m->file);
        vyre__strlcpy(p->message, m->message, sizeof p->message);
        p->kind = m->kind;
        p->entry_bad = m->unusable;
        p->quarantined = m->quarantined;
        if (m->quarantined < 0)
            p->repair_error = v->errors[m->error];
        else if (m->young)
            vyre__managed_young_error(&p->repair_error);
    }
    r->n_problems = v->n;
    return 0;
}

int vyre_inductor_verify(const vyre_inductor_cache *c, int repair, vyre_inductor_report *out,
                         vyre_error *err)
{
    memset(out, 0, sizeof *out);
    static const vyre__managed_check_ops ops = {count, check, quarantine, touched};
    verify_ctx x = {c, out};
    vyre__managed_verdict v;
    int rc = vyre__managed_verify(&ops, &x, repair, c->dir, &v, err);
    if (!rc && report(c, &v, out))
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying '%s'", c->dir);
    vyre__managed_verdict_release(&v);
    if (rc)
        vyre_inductor_report_release(out);
    return rc;
}

void vyre_inductor_report_release(vyre_inductor_report *r)
{
    if (!r)
        return;
    free(r->problems);
    r->problems = NULL;
    r->n_problems = 0;
}
