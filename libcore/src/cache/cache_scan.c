/*
 * cache_scan.c - walking the cache's directories (blobs/ shards, tmp/,
 * quarantine/) without following a link, and reading the index's rows:
 * vyre_cache_foreach, vyre_cache_stats_get, find by key prefix.
 */
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/index.h"
#include "cache/disk_size.h"

/* ---- scanning the directories ----------------------------------------- */

static int list_push(file_list *l, const file_ent *e)
{
    if (vyre__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 256))
        return VYRE_ENOMEM;
    l->v[l->n++] = *e;
    return VYRE_OK;
}

int vyre__cache_is_hex2(const char *s)
{
    static const char hex[] = "0123456789abcdef";
    return s[0] && s[1] && !s[2] && strchr(hex, s[0]) && strchr(hex, s[1]);
}

/* A lowercase hex digit's value + 1, 0 for any other byte (vyre writes no
 * other case): a lookup, not branches on the digit, which random names
 * mispredict. */
static const uint8_t k_lower_hex1[256] = {
    ['0'] = 1, ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* Parses "<64 lowercase hex>.vblob" in directory dir2, in one pass over the
 * digits (verify lists every blob's name). */
static int parse_blob_name(const char *name, const char *dir2, vyre_key *key)
{
    size_t n = strlen(name);
    if (n != VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT) ||
        strcmp(name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT) != 0)
        return 0;
    if (name[0] != dir2[0] || name[1] != dir2[1])
        return 0;
    int bad = 0;
    for (int i = 0; i < VYRE_KEY_BYTES; i++) {
        unsigned hi = k_lower_hex1[(unsigned char)name[2 * i]];
        unsigned lo = k_lower_hex1[(unsigned char)name[2 * i + 1]];
        bad |= !hi | !lo;
        key->bytes[i] = (uint8_t)((hi - 1u) << 4 | (lo - 1u)); /* unused when bad */
    }
    return !bad;
}

/* A file type from readdir's d_type, else from fstatat (never following). */
static mode_t entry_type(DIR *d, const struct dirent *f, struct stat *st, int *have_st)
{
    *have_st = 0;
    switch (f->d_type) {
    case DT_REG:
        return S_IFREG;
    case DT_DIR:
        return S_IFDIR;
    case DT_LNK:
        return S_IFLNK;
    case DT_FIFO:
        return S_IFIFO;
    case DT_SOCK:
        return S_IFSOCK;
    case DT_CHR:
        return S_IFCHR;
    case DT_BLK:
        return S_IFBLK;
    default:
        if (fstatat(dirfd(d), f->d_name, st, AT_SYMLINK_NOFOLLOW) != 0)
            return 0;
        *have_st = 1;
        return st->st_mode & S_IFMT;
    }
}

static int is_foreign_type(mode_t t)
{
    return t != 0 && t != S_IFREG && t != S_IFDIR;
}

/* Opens the directory name below dir's descriptor as a DIR stream, never
 * through a symlink. NULL with errno. */
DIR *vyre__cache_opendir(int dfd, const char *name)
{
    int fd = vyre__open_dir_at(dfd, name);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* blobs/ is listed through descriptors opened O_NOFOLLOW from the root's,
 * in three steps that verify and reindex run on several threads (one
 * shard per worker at a time): the directory (vyre__cache_blobs_open), each
 * of its entries (vyre__cache_blobs_entry), and a shard's files
 * (vyre__cache_blobs_shard). Entries with an unexpected name or place get
 * valid_name = 0 (stray); symlinks, FIFOs, sockets and devices (at a
 * shard's place or a blob's) also get foreign = 1 and are never opened. */

int vyre__cache_blobs_open(const vyre_cache *c, DIR **top, vyre_error *err)
{
    *top = vyre__cache_opendir(c->rootfd, "blobs");
    if (*top)
        return VYRE_OK;
    /* Not a directory: nothing to list (vyre__cache_check_layout reports it). */
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
        return VYRE_OK;
    int e = errno;
    return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read '%s/blobs': %s", c->root,
                      strerror(e));
}

int vyre__cache_blobs_entry(DIR *top, const struct dirent *d, file_list *out, DIR **dd)
{
    file_ent e;
    memset(&e, 0, sizeof e);
    *dd = NULL;
    struct stat st;
    int have_st;
    e.mode = entry_type(top, d, &st, &have_st);
    if (e.mode == 0)
        return VYRE_OK; /* gone meanwhile */
    if (vyre__cache_is_hex2(d->d_name) && e.mode == S_IFDIR) {
        *dd = vyre__cache_opendir(dirfd(top), d->d_name);
        if (*dd)
            return VYRE_OK;
        if (errno != ENOTDIR && errno != ELOOP)
            return VYRE_OK;
        /* Swapped for something else since readdir: never followed. */
        e.mode = fstatat(dirfd(top), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mode & S_IFMT
                                                                               : S_IFLNK;
    }
    vyre__strlcpy(e.name, d->d_name, sizeof e.name);
    e.foreign = is_foreign_type(e.mode);
    return list_push(out, &e);
}

int vyre__cache_blobs_shard(DIR *dd, const char *shard, file_list *out, int with_stat)
{
    int rc = VYRE_OK;
    struct dirent *f;
    while (rc == VYRE_OK && (f = readdir(dd))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        file_ent e;
        memset(&e, 0, sizeof e);
        memcpy(e.dir, shard, 3);
        vyre__strlcpy(e.name, f->d_name, sizeof e.name);
        struct stat st;
        int have_st;
        e.mode = entry_type(dd, f, &st, &have_st);
        if (e.mode == 0)
            continue;
        e.foreign = is_foreign_type(e.mode);
        e.valid_name = !e.foreign && strlen(f->d_name) < sizeof e.name &&
                       parse_blob_name(f->d_name, shard, &e.key);
        if (with_stat &&
            (have_st || fstatat(dirfd(dd), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)) {
            e.size = (uint64_t)st.st_size;
            e.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        }
        rc = list_push(out, &e);
    }
    return rc;
}

void vyre__cache_ent_path(const vyre_cache *c, const file_ent *e, char *out, size_t size)
{
    int n = e->dir[0] ? snprintf(out, size, "%s/blobs/%s/%s", c->root, e->dir, e->name)
                      : snprintf(out, size, "%s/blobs/%s", c->root, e->name);
    if (n < 0 || (size_t)n >= size)
        out[0] = '\0'; /* cannot happen: vyre_cache_open bounds the root */
}

/* The entry's path below the root ("blobs/ab/<name>" or "blobs/<name>"). */
void vyre__cache_ent_rel(const file_ent *e, char *out, size_t size)
{
    int n = e->dir[0] ? snprintf(out, size, "blobs/%s/%s", e->dir, e->name)
                      : snprintf(out, size, "blobs/%s", e->name);
    if (n < 0 || (size_t)n >= size)
        out[0] = '\0';
}

/* "blobs/ab/<64 hex>.vblob" for key. */
static void key_rel(const vyre_key *key, char out[BLOB_REL_MAX])
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    /* bounded: the first two hex digits name the folder */
    snprintf(out, BLOB_REL_MAX, "blobs/%.2s/%s%s", hex, hex, VYRE_BLOB_EXT);
}

/* 1 when the blob entry of key exists (whatever it is), reached without
 * following a symlink on the way. */
int vyre__cache_blob_present(const vyre_cache *c, const vyre_key *key)
{
    char rel[BLOB_REL_MAX];
    key_rel(key, rel);
    int fd = vyre__open_beneath(c->rootfd, rel, O_PATH, 0);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* Counts files (and bytes, and those older than an age) in the flat
 * directory name of the root (nothing when it is not a real directory). */
static void scan_flat(const vyre_cache *c, const char *name, int64_t older_than_ns, uint64_t *files,
                      uint64_t *bytes, uint64_t *old)
{
    DIR *d = vyre__cache_opendir(c->rootfd, name);
    if (!d)
        return;
    struct dirent *f;
    int64_t now = vyre__unix_ns();
    while ((f = readdir(d))) {
        if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        (*files)++;
        if (bytes)
            *bytes += vyre__disk_bytes(&st);
        int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (old && now - m > older_than_ns)
            (*old)++;
    }
    closedir(d);
}

/* ---- rows -------------------------------------------------------------- */

static int collect_row(const vyre__index_row *row, void *ctx)
{
    row_list *l = ctx;
    if (vyre__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 256))
        return VYRE_ENOMEM;
    l->v[l->n++] = *row;
    return 0;
}

int vyre__cache_no_index(const vyre_cache *c, vyre_error *err)
{
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                        vyre__fail(err, VYRE_ENOENT, NULL, "the cache '%s' has no index", c->root));
}

int vyre__cache_all_rows(vyre_cache *c, row_list *l, vyre_error *err)
{
    memset(l, 0, sizeof *l);
    if (!c->idx)
        return vyre__cache_no_index(c, err);
    int rc = vyre__index_foreach_lru(c->idx, collect_row, l, err);
    if (rc == VYRE_ENOMEM)
        return vyre__fail(err, rc, NULL, "out of memory reading the index");
    return rc;
}

void vyre__cache_entry_from_row(vyre_cache_entry *e, const vyre__index_row *r)
{
    e->key = r->key;
    e->kind = r->kind;
    memcpy(e->arch, r->arch, sizeof e->arch);
    memcpy(e->toolchain, r->toolchain, sizeof e->toolchain);
    e->raw_size = r->raw_size;
    e->stored_size = r->stored_size;
    e->file_size = r->file_size;
    e->disk_size = r->disk_size;
    e->created_unix_ns = r->created_unix_ns;
    e->last_access_unix_ns = r->last_access_unix_ns;
    e->hits = r->hits;
    e->compile_ns = r->compile_ns;
    e->key_version = r->key_version;
    memcpy(e->source, r->source, sizeof e->source);
    e->n_kernels = r->n_kernels;
    memcpy(e->kernels, r->kernels, sizeof e->kernels);
}

typedef struct foreach_ctx {
    vyre_cache_entry_fn fn;
    void *ctx;
} foreach_ctx;

static int foreach_adapter(const vyre__index_row *row, void *p)
{
    foreach_ctx *f = p;
    vyre_cache_entry e;
    vyre__cache_entry_from_row(&e, row);
    return f->fn(&e, f->ctx);
}

int vyre_cache_foreach(vyre_cache *c, vyre_cache_entry_fn fn, void *ctx, vyre_error *err)
{
    if (!c || !fn)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_foreach: NULL argument");
    if (c->missing)
        return VYRE_OK; /* first use: nothing cached yet */
    if (!c->idx)
        return vyre__cache_no_index(c, err);
    foreach_ctx f = {fn, ctx};
    return vyre__index_foreach_lru(c->idx, foreach_adapter, &f, err);
}

/* ---- stats ------------------------------------------------------------- */

static void bucket_add(vyre_cache_bucket *b, size_t cap, size_t *n, const char *name,
                       uint64_t bytes)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(b[i].name, name) == 0) {
            b[i].entries++;
            b[i].bytes += bytes;
            return;
        }
    if (*n == cap) {
        /* Fold the rest into the last bucket, renamed "other". */
        vyre__strlcpy(b[cap - 1].name, "other", sizeof b[cap - 1].name);
        b[cap - 1].entries++;
        b[cap - 1].bytes += bytes;
        return;
    }
    vyre__strlcpy(b[*n].name, name, sizeof b[*n].name);
    b[*n].entries = 1;
    b[*n].bytes = bytes;
    (*n)++;
}

int vyre_cache_stats_get(vyre_cache *c, vyre_cache_stats *st, vyre_error *err)
{
    if (!c || !st)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_stats_get: NULL argument");
    memset(st, 0, sizeof *st);
    static const char *const kinds[] = {"unknown", "cubin", "ptx", "fatbin"};
    for (int i = 0; i < 4; i++)
        vyre__strlcpy(st->by_kind[i].name, kinds[i], sizeof st->by_kind[i].name);
    static const char *const ages[] = {"<1h", "<1d", "<7d", "<30d", ">=30d"};
    static const int64_t limits[] = {INT64_C(3600), INT64_C(86400), INT64_C(7) * 86400,
                                     INT64_C(30) * 86400};
    for (int i = 0; i < VYRE_CACHE_AGE_BUCKETS; i++)
        vyre__strlcpy(st->by_age[i].name, ages[i], sizeof st->by_age[i].name);

    row_list rows;
    int rc = c->idx ? vyre__cache_all_rows(c, &rows, err) : VYRE_OK;
    if (rc) {
        free(rows.v);
        return rc;
    }
    int64_t now = vyre__unix_ns();
    for (size_t i = 0; c->idx && i < rows.n; i++) {
        const vyre__index_row *r = &rows.v[i];
        st->entries++;
        st->bytes += r->disk_size;
        st->apparent_bytes += r->file_size;
        unsigned k = r->kind < 4 ? r->kind : 0;
        st->by_kind[k].entries++;
        st->by_kind[k].bytes += r->disk_size;
        bucket_add(st->by_arch, VYRE_CACHE_STATS_MAX_ARCH, &st->n_arch, r->arch, r->disk_size);
        int64_t age_s = (now - r->created_unix_ns) / 1000000000;
        int b = 0;
        while (b < VYRE_CACHE_AGE_BUCKETS - 1 && age_s >= limits[b])
            b++;
        st->by_age[b].entries++;
        st->by_age[b].bytes += r->disk_size;
        st->hits += r->hits;
        st->compile_ns_saved += r->hits * r->compile_ns;
        if (VYRE_BLOB_KEY_STALE(r->key_version)) {
            st->stale++;
            st->stale_bytes += r->disk_size;
        }
    }
    if (c->idx) {
        free(rows.v);
        vyre__index_misses(c->idx, &st->misses, NULL);
    }
    scan_flat(c, "quarantine", 0, &st->quarantined, &st->quarantine_bytes, NULL);
    scan_flat(c, "tmp", VYRE_CACHE_DEBRIS_AGE_NS, &st->tmp_files, NULL, &st->debris);
    st->session_hits = atomic_load(&c->hits);
    st->session_misses = atomic_load(&c->misses);
    st->session_rejects = atomic_load(&c->rejects);
    st->session_remote_hits = atomic_load(&c->remote_hits);
    st->max_size = c->config.max_size;
    if (c->idx)
        vyre__index_stats_zeroed(c->idx, &st->stats_zeroed_unix_ns, NULL);
    return VYRE_OK;
}

/* ---- find by prefix ---------------------------------------------------- */

typedef struct prefix_ctx {
    char prefix[VYRE_KEY_HEX_LEN + 1];
    size_t len;
    size_t matches;
    vyre_cache_entry first;
    char listed[8][VYRE_KEY_HEX_LEN + 1];
} prefix_ctx;

static int prefix_match(const vyre_cache_entry *e, void *p)
{
    prefix_ctx *x = p;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    if (memcmp(hex, x->prefix, x->len) != 0)
        return 0;
    if (x->matches == 0)
        x->first = *e;
    if (x->matches < 8)
        memcpy(x->listed[x->matches], hex, sizeof hex);
    x->matches++;
    return 0;
}

int vyre_cache_check_blob(vyre_cache *c, const vyre_key *key, vyre_blob_header *h,
                          uint64_t *file_size, vyre_blob_reject *why, char *path, size_t path_size,
                          vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_check_blob: NULL argument");
    char rel[BLOB_REL_MAX], full[VYRE_CACHE_PATH_MAX];
    key_rel(key, rel);
    int n = snprintf(full, sizeof full, "%s/%s", c->root, rel);
    if (n < 0 || (size_t)n >= sizeof full)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory",
                          "cache path too long: '%s'", c->root);
    if (path && path_size)
        snprintf(path, path_size, "%s", full);
    return vyre__blob_check_at(c->rootfd, rel, full, key, h, file_size, why, NULL, err);
}

int vyre_cache_blob_kernels(vyre_cache *c, const vyre_blob_header *h, char **names, vyre_error *err)
{
    if (names)
        *names = NULL;
    if (!c || !h || !names)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_blob_kernels: NULL argument");
    return vyre__blob_kernels_at(c->rootfd, c->root, h, names, err);
}

int vyre_cache_find_prefix(vyre_cache *c, const char *prefix, vyre_cache_entry *out,
                           vyre_error *err)
{
    if (!c || !prefix || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_find_prefix: NULL argument");
    prefix_ctx x;
    memset(&x, 0, sizeof x);
    x.len = strlen(prefix);
    if (x.len < 4 || x.len > VYRE_KEY_HEX_LEN)
        return vyre__fail(err, VYRE_EINVAL, "give at least 4 and at most 64 hex digits of a key",
                          "'%s' is not a key prefix", prefix);
    for (size_t i = 0; i < x.len; i++) {
        char ch = prefix[i];
        if (ch >= 'A' && ch <= 'F')
            ch = (char)(ch - 'A' + 'a');
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return vyre__fail(err, VYRE_EINVAL, "keys are hexadecimal: use 0-9 and a-f",
                              "'%s' is not a key prefix", prefix);
        x.prefix[i] = ch;
    }
    int rc = vyre_cache_foreach(c, prefix_match, &x, err);
    if (rc)
        return rc;
    if (x.matches == 0)
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_LIST,
            vyre__fail(err, VYRE_ENOENT, NULL, "no blob with a key starting '%s'", prefix));
    if (x.matches > 1) {
        char list[VYRE_ERROR_MESSAGE_MAX];
        size_t off = 0;
        for (size_t i = 0; i < x.matches && i < 8; i++) {
            /* bounded: the first 16 hex digits of each key */
            int n = snprintf(list + off, sizeof list - off, "%s%.16s", i ? ", " : "", x.listed[i]);
            if (n < 0 || (size_t)n >= sizeof list - off)
                break;
            off += (size_t)n;
        }
        return vyre__fail(err, VYRE_EAMBIGUOUS, "give more digits of the key",
                          "key prefix '%s' is ambiguous: %zu blobs match (%s%s)", prefix, x.matches,
                          list, x.matches > 8 ? ", ..." : "");
    }
    *out = x.first;
    return VYRE_OK;
}
