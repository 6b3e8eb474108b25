/*
 * cache_remote.c - the cache's side of the remote stores: the list in
 * force, their counters (kept in the index's meta across processes), and
 * push, pull and flush on demand. The policy and the backends are
 * cache/remote/'s.
 */
#include "vyre/cache.h"

#include <string.h>

#include "base/internal.h"
#include "base/strbuf.h"
#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/index.h"
#include "cache/remote/remote_internal.h"

/* ---- remotes ------------------------------------------------------------ */

#define N_REMOTE_COUNTERS 9

static void counters_of(const vyre_remote_stats *s, uint64_t v[N_REMOTE_COUNTERS])
{
    const uint64_t a[N_REMOTE_COUNTERS] = {s->hits,       s->misses,     s->errors,
                                           s->rejected,   s->skipped,    s->puts,
                                           s->put_errors, s->bytes_read, s->bytes_written};
    memcpy(v, a, sizeof a);
}

static void stats_of(vyre_remote_stats *s, const uint64_t v[N_REMOTE_COUNTERS])
{
    s->hits = v[0];
    s->misses = v[1];
    s->errors = v[2];
    s->rejected = v[3];
    s->skipped = v[4];
    s->puts = v[5];
    s->put_errors = v[6];
    s->bytes_read = v[7];
    s->bytes_written = v[8];
}

/* meta names of remote i's lifetime counters: "remote <url> <counter>",
 * with the whole URL (a strbuf, never cut to fit an array, so two remotes
 * never share a counter). The caller releases names with names_release.
 * VYRE_OK or VYRE_ENOMEM (then nothing is left to release). */
static void names_release(vyre__strbuf names[N_REMOTE_COUNTERS])
{
    for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
        vyre__strbuf_release(&names[k]);
}

static int counter_names(const vyre_remote_info *ri, vyre__strbuf names[N_REMOTE_COUNTERS])
{
    static const char *const what[N_REMOTE_COUNTERS] = {
        "hits", "misses",     "errors",     "rejected",     "skipped",
        "puts", "put_errors", "bytes_read", "bytes_written"};
    int rc = VYRE_OK;
    for (size_t k = 0; k < N_REMOTE_COUNTERS; k++) {
        vyre__strbuf_init(&names[k], 0);
        if (!rc)
            rc = vyre__strbuf_addf(&names[k], "remote %s %s", ri->url, what[k]);
    }
    if (rc)
        names_release(names);
    return rc;
}

/* Adds what the remotes counted since the last call to the index's
 * lifetime counters (best effort: counters are not worth failing a close). */
void vyre__cache_persist_remote_counters(vyre_cache *c)
{
    if (!c->remotes || !c->idx || c->readonly)
        return;
    for (size_t i = 0; i < c->remotes->n; i++) {
        vyre__remote *r = &c->remotes->r[i];
        vyre_remote_stats now;
        vyre__remote_stats_get(c->remotes, i, &now);
        uint64_t a[N_REMOTE_COUNTERS], b[N_REMOTE_COUNTERS], d[N_REMOTE_COUNTERS];
        counters_of(&now, a);
        counters_of(&r->persisted, b);
        for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
            d[k] = a[k] - b[k];
        vyre__strbuf names[N_REMOTE_COUNTERS];
        if (counter_names(&r->info, names))
            continue;
        const char *pn[N_REMOTE_COUNTERS];
        for (size_t k = 0; k < N_REMOTE_COUNTERS; k++)
            pn[k] = names[k].buf;
        if (vyre__index_counters_add(c->idx, pn, d, N_REMOTE_COUNTERS, NULL) == VYRE_OK)
            r->persisted = now;
        names_release(names);
    }
}

/* Remote i's counters over the cache's life (VYRE_CACHE_REMOTE_TOTALS); i
 * is in range. */
static int remote_totals(vyre_cache *c, size_t i, vyre_remote_stats *st, vyre_error *err)
{
    vyre__remote *r = &c->remotes->r[i];
    vyre_remote_stats now;
    vyre__remote_stats_get(c->remotes, i, &now);
    uint64_t a[N_REMOTE_COUNTERS], b[N_REMOTE_COUNTERS], t[N_REMOTE_COUNTERS];
    counters_of(&now, a);
    counters_of(&r->persisted, b);
    vyre__strbuf names[N_REMOTE_COUNTERS];
    if (counter_names(&r->info, names))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "remote '%s': out of memory", r->info.url);
    int rc = VYRE_OK;
    for (size_t k = 0; k < N_REMOTE_COUNTERS && !rc; k++) {
        uint64_t stored = 0;
        if (c->idx)
            rc = vyre__index_counter_get(c->idx, names[k].buf, &stored, err);
        t[k] = stored + (a[k] - b[k]);
    }
    names_release(names);
    if (rc)
        return rc;
    stats_of(st, t);
    return VYRE_OK;
}

int vyre__cache_set_remotes(vyre_cache *c, const char *spec, vyre_error *err)
{
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__cache_set_remotes: NULL cache");
    vyre_remote_list *l = NULL;
    int rc = vyre_remote_list_parse(spec, &l, err);
    if (rc)
        return rc;
    vyre__cache_persist_remote_counters(c);
    vyre_remote_list_free(c->remotes);
    c->remotes = l;
    return VYRE_OK;
}

size_t vyre_cache_remote_count(const vyre_cache *c)
{
    return c ? vyre_remote_list_count(c->remotes) : 0;
}

int vyre_cache_remote_get(vyre_cache *c, size_t i, unsigned flags, vyre_remote_info *info,
                          vyre_remote_stats *st, vyre_error *err)
{
    const vyre_remote_info *ri = c ? vyre_remote_list_info(c->remotes, i) : NULL;
    if (!ri)
        return vyre__fail(err, VYRE_EINVAL, NULL, "no remote store number %zu", i + 1);
    if (st && (flags & VYRE_CACHE_REMOTE_TOTALS)) {
        int rc = remote_totals(c, i, st, err);
        if (rc)
            return rc;
    } else if (st) {
        vyre__remote_stats_get(c->remotes, i, st);
    }
    if (info)
        *info = *ri;
    return VYRE_OK;
}

static int no_remote(size_t i, vyre_error *err)
{
    return vyre__fail(err, VYRE_EINVAL,
                      "list remote stores in remote_storage (vyre.conf, -o) or VYRE_REMOTE_CACHE",
                      "no remote store number %zu", i + 1);
}

int vyre_cache_remote_check(vyre_cache *c, size_t i, vyre_remote_check *out, vyre_error *err)
{
    if (!c || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_check: NULL argument");
    if (i >= vyre_cache_remote_count(c))
        return no_remote(i, err);
    vyre__remote_probe_one(c->remotes, i, out);
    return VYRE_OK;
}

int vyre_cache_remote_push(vyre_cache *c, size_t i, const vyre_key *key, vyre_error *err)
{
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_push: NULL argument");
    if (i >= vyre_cache_remote_count(c))
        return no_remote(i, err);
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    int rc = vyre__blob_load_at(c->rootfd, c->root, key, &b, &why, err);
    if (rc == VYRE_ECORRUPT || rc == VYRE_EVERSION)
        rc = VYRE_ENOENT; /* quarantined: there is nothing valid to push */
    if (rc == VYRE_ENOENT) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(key, hex);
        /* The front end names its listing command (the remedy). */
        return vyre__remedy(err, VYRE_REMEDY_CACHE_LIST,
                            vyre__fail(err, VYRE_ENOENT, NULL,
                                       "no valid blob '%s' in the cache '%s'%s%s", hex, c->root,
                                       why ? ": it was rejected as " : "",
                                       why ? vyre_blob_reject_name(why) : ""));
    }
    if (rc)
        return rc;
    rc = vyre__remote_store_one(c->remotes, i, &b->header, b->payload, b->size, err);
    vyre_blob_free(b);
    return rc;
}

int vyre_cache_remote_pull(vyre_cache *c, const vyre_key *key, size_t *from, vyre_error *err)
{
    if (!c || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cache_remote_pull: NULL argument");
    size_t n = vyre_cache_remote_count(c);
    if (!n)
        return vyre__fail(
            err, VYRE_ENOENT,
            "list remote stores in remote_storage (vyre.conf, -o) or VYRE_REMOTE_CACHE",
            "no remote store is configured");
    int rc = VYRE_ENOENT;
    for (size_t i = 0; i < n; i++) {
        vyre_blob *b = NULL;
        rc = vyre__remote_fetch_one(c->remotes, i, key, &b, err);
        if (rc != VYRE_OK)
            continue;
        vyre_blob_header h = b->header;
        rc = vyre__cache_put_local(c, &h, b->payload, b->size, err);
        vyre_blob_free(b);
        if (rc == VYRE_OK && from)
            *from = i;
        return rc;
    }
    return rc;
}

int vyre__cache_flush(vyre_cache *c, vyre_error *err)
{
    if (!c || !c->idx)
        return VYRE_OK;
    vyre__cache_persist_remote_counters(c);
    return vyre__index_flush(c->idx, err);
}
