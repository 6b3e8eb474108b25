/*
 * cache_io.c - get and put: a blob read (local, then the remote stores in
 * order) and a blob written with its index row, under the shared lock.
 *
 * A put writes the index row just before the blob's rename (through the
 * store's before_rename hook), so that a writer killed at any instant
 * leaves either nothing visible or a complete blob with its row.
 */
#include "vyre/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/index.h"
#include "cache/remote/remote_internal.h"
#include "vyre/nvtx.h"

/* ---- get / put --------------------------------------------------------- */

int vyre_cache_get(vyre_cache *c, const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                   vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!c || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_get: NULL argument");
    if (c->missing) {
        atomic_fetch_add(&c->misses, 1);
        return VYRE_ENOENT;
    }
    vyre_nvtx_push(VYRE_RANGE_CACHE_LOOKUP);
    vyre_blob_reject r = VYRE_REJECT_NONE;
    int rc = vyre__blob_load_shards(c->rootfd, &c->shards, c->root, key, out, &r, err);
    if (rc == VYRE_OK) {
        atomic_fetch_add(&c->hits, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_hit(c->idx, key, vyre__unix_ns(), NULL);
    } else if (rc == VYRE_ENOENT) {
        if (why && r == VYRE_REJECT_STALE)
            *why = r; /* an older key format's blob: a miss, left in place */
        atomic_fetch_add(&c->misses, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_miss(c->idx, NULL);
    } else if (rc == VYRE_ECORRUPT || rc == VYRE_EVERSION) {
        /* The blob module quarantined the file; forget its row too. */
        atomic_fetch_add(&c->misses, 1);
        if (c->idx && !(c->flags & VYRE_CACHE_NO_HIT_TRACK) && !c->readonly)
            vyre__index_note_miss(c->idx, NULL);
        atomic_fetch_add(&c->rejects, 1);
        if (c->idx && !c->readonly)
            vyre__index_delete(c->idx, key, NULL);
        if (why)
            *why = r;
        rc = VYRE_ENOENT;
    }
    if (rc == VYRE_ENOENT && c->remotes && c->remotes->n) {
        /* Read-through: only a validated object comes back; it is stored
         * like any other blob (never written back: it came from there). */
        vyre_blob *rb = NULL;
        if (vyre__remotes_fetch(c->remotes, key, &rb, NULL) == VYRE_OK) {
            if (!c->readonly) {
                vyre_blob_header h = rb->header;
                vyre__cache_put_local(c, &h, rb->payload, rb->size, NULL);
            }
            atomic_fetch_add(&c->remote_hits, 1);
            *out = rb;
            rc = VYRE_OK;
        }
    }
    vyre_nvtx_pop();
    return rc;
}

/* What put_row records: the cache and the stored file's blocks on disk,
 * which the store sets just before it calls put_row. */
typedef struct put_ctx {
    vyre_cache *c;
    uint64_t disk_bytes;
} put_ctx;

static int put_row(const vyre_blob_header *h, void *ctx, vyre_error *err)
{
    put_ctx *pc = ctx;
    vyre__index_row row;
    vyre__cache_row_from_header(&row, h, VYRE_BLOB_HEADER_SIZE + h->stored_size + h->kernels_size,
                                pc->disk_bytes);
    return vyre__index_upsert(pc->c->idx, &row, err);
}

/* The local half of a put: the blob and its row, under the shared lock. */
int vyre__cache_put_local(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                          vyre_error *err)
{
    if (c->readonly)
        return vyre__cache_readonly_error(c, err);
    vyre_nvtx_push(VYRE_RANGE_CACHE_STORE);
    int fd = vyre__cache_lock(c, LOCK_SH, err);
    int rc = fd < 0 ? fd : VYRE_OK;
    /* The row goes in just before the rename: a writer killed in between
     * leaves a row plus its temp file, which verify treats as that write's
     * debris; killed after, everything is in place. */
    if (rc == VYRE_OK) {
        vyre__blob_store_opts so;
        vyre__blob_store_opts_init(&so);
        so.rootfd = c->rootfd;
        so.umask = c->umask;
        put_ctx pc = {c, 0};
        so.before_rename = c->idx ? put_row : NULL;
        so.ctx = &pc;
        rc = vyre__blob_store_sized(c->root, h, payload, len, &so, &pc.disk_bytes, err);
    }
    vyre__cache_unlock(fd);
    vyre_nvtx_pop();
    if (rc == VYRE_EROFS || rc == VYRE_EPERM) {
        c->readonly = 1;
        return vyre__cache_readonly_error(c, err);
    }
    if (rc == VYRE_OK)
        vyre__cache_maybe_cleanup(c);
    return rc;
}

int vyre_cache_put(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                   vyre_error *err)
{
    if (!c || !h || (len && !payload))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_put: NULL argument");
    int rc = vyre__cache_put_local(c, h, payload, len, err);
    /* Write-back after the local store succeeded (h is then complete);
     * remote failures are counted and back off, never returned. */
    if (rc == VYRE_OK && c->remotes)
        vyre__remotes_store(c->remotes, h, payload, len);
    return rc;
}
