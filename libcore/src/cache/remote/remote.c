/*
 * remote.c - remote stores of the pipeline cache: the policy and the trust
 * boundary (the list itself is spec.c's).
 *
 * Owns the read-through and write-back policy (in order, writable remotes
 * only, back-off after a failure, counters per remote) and the validation
 * of every object a remote returns. The backends, reached through each
 * entry's operations table (r->ops: http.c, redis.c), move bytes and report
 * transport errors; they never decide what is trusted.
 *
 * Invariants:
 *  - nothing a remote returns reaches the caller before
 *    vyre__blob_from_memory accepted it for the key asked for; a rejected
 *    object is counted and dropped (a miss for the caller);
 *  - a failure (connection, timeout, status, short body) never propagates
 *    to a get or a put: it is counted, and the remote is skipped for a
 *    back-off period that doubles on each failure in a row (this process);
 *  - secrets (URL password, token) stay in the list and never appear in a
 *    message or in vyre_remote_info.
 */
#include "vyre/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/remote/remote_internal.h"

#define CHECK_BODY "vyre remote check\n"

/* ---- the policy --------------------------------------------------------- */

/* With r->mu held. */
static int backing_off(vyre__remote *r)
{
    if (r->skip_until_ns && (int64_t)vyre__mono_ns() < r->skip_until_ns) {
        r->st.skipped++;
        return 1;
    }
    return 0;
}

static void note_failure(vyre__remote *r)
{
    r->skip_until_ns = (int64_t)vyre__mono_ns() + r->backoff_ns;
    r->backoff_ns *= 2;
    if (r->backoff_ns > (int64_t)VYRE_REMOTE_BACKOFF_MAX_MS * 1000000)
        r->backoff_ns = (int64_t)VYRE_REMOTE_BACKOFF_MAX_MS * 1000000;
}

static void note_success(vyre__remote *r)
{
    r->skip_until_ns = 0;
    r->backoff_ns = (int64_t)VYRE_REMOTE_BACKOFF_MS * 1000000;
}

/* One fetch from r (mu not held); honours back-off when `policy`. */
static int fetch_from(vyre__remote *r, const vyre_key *key, vyre_blob **out, int policy,
                      vyre_error *err)
{
    char name[VYRE_KEY_HEX_LEN + 16];
    r->ops->object_name(key, name, sizeof name);
    uint8_t *buf = NULL;
    size_t len = 0;
    pthread_mutex_lock(&r->mu);
    if (policy && backing_off(r)) {
        pthread_mutex_unlock(&r->mu);
        return vyre__fail(err, VYRE_EREMOTE, "it is retried after the back-off period",
                          "remote store '%s' is skipped after a failure", r->info.url);
    }
    int rc = r->ops->get(r, name, &buf, &len, err);
    if (rc == VYRE_OK || rc == VYRE_ETOOBIG)
        r->st.bytes_read += len;
    if (rc == VYRE_ENOENT) {
        r->st.misses++;
        note_success(r);
    } else if (rc == VYRE_ETOOBIG) {
        r->st.rejected++;
        note_success(r); /* the server answered */
    } else if (rc != VYRE_OK) {
        r->st.errors++;
        note_failure(r);
    }
    pthread_mutex_unlock(&r->mu);
    if (rc != VYRE_OK) {
        free(buf);
        return rc;
    }
    char origin[VYRE_REMOTE_URL_MAX + VYRE_KEY_HEX_LEN + 32];
    snprintf(origin, sizeof origin, "%s/%s", r->info.url, name);
    vyre_blob_reject why = VYRE_REJECT_NONE;
    rc = vyre__blob_from_memory(buf, len, origin, key, out, &why, err);
    free(buf);
    pthread_mutex_lock(&r->mu);
    if (rc == VYRE_OK) {
        r->st.hits++;
        note_success(r);
    } else {
        r->st.rejected++;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int vyre__remotes_fetch(vyre_remote_list *l, const vyre_key *key, vyre_blob **out, size_t *from)
{
    *out = NULL;
    for (size_t i = 0; l && i < l->n; i++) {
        if (fetch_from(&l->r[i], key, out, 1, NULL) == VYRE_OK) {
            if (from)
                *from = i;
            return VYRE_OK;
        }
    }
    return VYRE_ENOENT;
}

int vyre__remote_fetch_one(vyre_remote_list *l, size_t i, const vyre_key *key, vyre_blob **out,
                           vyre_error *err)
{
    *out = NULL;
    if (!l || i >= l->n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no remote store %zu", i);
    int rc = fetch_from(&l->r[i], key, out, 0, err);
    if (rc == VYRE_ENOENT) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(key, hex);
        vyre__fail(err, VYRE_ENOENT, "seed it on a machine that writes to this store",
                   "remote store '%s' has no blob '%s'", l->r[i].info.url, hex);
    }
    return rc;
}

/* The whole blob file as the cache stores it: encoded header, payload,
 * then the kernel-name table. malloc'ed. */
static uint8_t *serialize(const vyre_blob_header *h, const void *payload, size_t len,
                          size_t *out_len)
{
    size_t kn = h->kernels ? h->kernels_size : 0;
    if (kn != h->kernels_size)
        return NULL; /* a header that announces a table it does not carry */
    uint8_t *buf = malloc(VYRE_BLOB_HEADER_SIZE + len + kn);
    if (!buf)
        return NULL;
    if (vyre_blob_header_encode(h, buf, NULL) != VYRE_OK) {
        free(buf);
        return NULL;
    }
    if (len)
        memcpy(buf + VYRE_BLOB_HEADER_SIZE, payload, len);
    if (kn)
        memcpy(buf + VYRE_BLOB_HEADER_SIZE + len, h->kernels, kn);
    *out_len = VYRE_BLOB_HEADER_SIZE + len + kn;
    return buf;
}

static int store_to(vyre__remote *r, const vyre_key *key, const uint8_t *buf, size_t len,
                    int policy, vyre_error *err)
{
    char name[VYRE_KEY_HEX_LEN + 16];
    r->ops->object_name(key, name, sizeof name);
    pthread_mutex_lock(&r->mu);
    if (policy && backing_off(r)) {
        pthread_mutex_unlock(&r->mu);
        return VYRE_EREMOTE;
    }
    int rc = r->ops->put(r, name, buf, len, err);
    if (rc == VYRE_OK) {
        r->st.puts++;
        r->st.bytes_written += len;
        note_success(r);
    } else {
        r->st.put_errors++;
        note_failure(r);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

size_t vyre__remotes_store(vyre_remote_list *l, const vyre_blob_header *h, const void *payload,
                           size_t len)
{
    size_t n_writable = 0;
    for (size_t i = 0; l && i < l->n; i++)
        n_writable += !l->r[i].info.read_only;
    if (!n_writable)
        return 0;
    size_t blen = 0;
    uint8_t *buf = serialize(h, payload, len, &blen);
    if (!buf)
        return 0;
    size_t ok = 0;
    for (size_t i = 0; i < l->n; i++)
        if (!l->r[i].info.read_only && store_to(&l->r[i], &h->key, buf, blen, 1, NULL) == VYRE_OK)
            ok++;
    free(buf);
    return ok;
}

int vyre__remote_store_one(vyre_remote_list *l, size_t i, const vyre_blob_header *h,
                           const void *payload, size_t len, vyre_error *err)
{
    if (!l || i >= l->n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no remote store %zu", i);
    if (l->r[i].info.read_only)
        return vyre__fail(err, VYRE_EROFS, "drop '|read-only' from the remote's attributes",
                          "remote store '%s' is read-only", l->r[i].info.url);
    size_t blen = 0;
    uint8_t *buf = serialize(h, payload, len, &blen);
    if (!buf)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot serialise a %zu-byte blob", len);
    int rc = store_to(&l->r[i], &h->key, buf, blen, 0, err);
    free(buf);
    return rc;
}

void vyre__remote_probe_one(vyre_remote_list *l, size_t i, vyre_remote_check *out)
{
    memset(out, 0, sizeof *out);
    out->writable = -1;
    if (!l || i >= l->n) {
        snprintf(out->message, sizeof out->message, "no remote store %zu", i);
        return;
    }
    vyre__remote *r = &l->r[i];
    vyre_key zero;
    memset(&zero, 0, sizeof zero);
    char name[VYRE_KEY_HEX_LEN + 16];
    r->ops->object_name(&zero, name, sizeof name);
    vyre_error e;
    vyre_error_clear(&e);
    pthread_mutex_lock(&r->mu);
    uint64_t t0 = vyre__mono_ns();
    int rc = r->ops->head(r, name, &e);
    out->rtt_ns = vyre__mono_ns() - t0;
    if (rc == VYRE_OK || rc == VYRE_ENOENT) {
        out->reachable = 1;
        note_success(r);
        if (!r->info.read_only) {
            rc = r->ops->put(r, r->ops->check_name, CHECK_BODY, sizeof CHECK_BODY - 1, &e);
            out->writable = rc == VYRE_OK;
            if (rc)
                vyre__strlcpy(out->message, e.message, sizeof out->message);
        }
    } else {
        vyre__strlcpy(out->message, e.message, sizeof out->message);
    }
    pthread_mutex_unlock(&r->mu);
}

void vyre__remote_stats_get(vyre_remote_list *l, size_t i, vyre_remote_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!l || i >= l->n)
        return;
    pthread_mutex_lock(&l->r[i].mu);
    *st = l->r[i].st;
    pthread_mutex_unlock(&l->r[i].mu);
}
