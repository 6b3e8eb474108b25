/*
 * remote_internal.h - remote stores of the pipeline cache (internal).
 *
 * spec.c owns the list (parsing, attributes, secrets) and picks each
 * entry's backend; remote.c the policy (read-through in order, write-back
 * to every writable remote, back-off after a failure, counters) and the
 * validation of what comes back. The backends behind vyre__remote_ops,
 * http.c (libcurl) and redis.c (over redis_conn.c, plain or TLS, with
 * hiredis framing), only move bytes, each request within one deadline and
 * never more than max-object-size of a value: they never decide whether an
 * object is trusted (curl's lib/vtls/ is the model).
 */
#ifndef VYRE_REMOTE_INTERNAL_H
#define VYRE_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "vyre/blob.h"
#include "vyre/error.h"
#include "vyre/key.h"
#include "vyre/remote.h"

#define VYRE__REMOTE_SECRET_MAX 4096

typedef struct vyre__remote_ops vyre__remote_ops;

typedef struct vyre__remote {
    vyre_remote_info info;
    const vyre__remote_ops *ops; /* the backend, by scheme */
    char user[256];
    char password[256];
    char token[VYRE__REMOTE_SECRET_MAX]; /* from token-file, "" when none */
    char base_url[VYRE_REMOTE_URL_MAX];  /* HTTP: scheme://host:port/prefix, no user info */
    pthread_mutex_t mu;                  /* serialises the connection and the fields below */
    void *conn;            /* CURL * or vyre__rconn * (redis, rediss), made on first use */
    int64_t skip_until_ns; /* monotonic: backing off until then */
    int64_t backoff_ns;    /* next back-off period */
    vyre_remote_stats st;
    vyre_remote_stats persisted; /* part of st already added to the index (cache_remote.c's) */
} vyre__remote;

struct vyre_remote_list {
    size_t n;
    vyre__remote r[VYRE_REMOTE_MAX];
};

/* A backend's operations, chosen once when the list is parsed (by the
 * scheme) and called through r->ops, with r->mu held. name is the object's
 * name on the store (object_name), used in messages too.
 *  get:   0 and a malloc'ed buffer in *buf (at most r->info.max_object_bytes,
 *         else VYRE_ETOOBIG without reading the rest), VYRE_ENOENT when the
 *         store has no such object, another code (VYRE_EREMOTE mostly) on
 *         failure;
 *  put:   0 or a failure;
 *  head:  whether the store has name, without its value: 0, VYRE_ENOENT,
 *         or a failure (the probe of vyre_cache_remote_check);
 *  close: drops the connection, if any (the entry stays usable). */
struct vyre__remote_ops {
    int (*get)(vyre__remote *r, const char *name, uint8_t **buf, size_t *len, vyre_error *err);
    int (*put)(vyre__remote *r, const char *name, const void *buf, size_t len, vyre_error *err);
    int (*head)(vyre__remote *r, const char *name, vyre_error *err);
    void (*close)(vyre__remote *r);
    /* The store's name for key's blob, into out. */
    void (*object_name)(const vyre_key *key, char *out, size_t size);
    const char *check_name; /* what vyre_cache_remote_check writes */
};

extern const vyre__remote_ops vyre__http_ops;  /* http.c: http://, https:// */
extern const vyre__remote_ops vyre__redis_ops; /* redis.c: redis://, rediss:// */

/* ---- the policy, for the cache facade ---------------------------------- */

/* Asks every remote in order for key, skipping those backing off. 0 and a
 * validated blob in *out (caller frees); *from (may be NULL) the index of
 * the remote that had it. VYRE_ENOENT when no remote had an acceptable
 * object (misses, errors and rejects are counted per remote). */
int vyre__remotes_fetch(vyre_remote_list *l, const vyre_key *key, vyre_blob **out, size_t *from);

/* Writes the blob (header h as stored, payload) to every writable remote
 * not backing off. Returns how many took it; failures are counted and
 * start a back-off, never returned. */
size_t vyre__remotes_store(vyre_remote_list *l, const vyre_blob_header *h, const void *payload,
                           size_t len);

/* Writes to remote i only, regardless of back-off; 0 or the failure. */
int vyre__remote_store_one(vyre_remote_list *l, size_t i, const vyre_blob_header *h,
                           const void *payload, size_t len, vyre_error *err);

/* Fetches key from remote i only, regardless of back-off: 0 and a
 * validated blob, VYRE_ENOENT, a validation code or a failure. */
int vyre__remote_fetch_one(vyre_remote_list *l, size_t i, const vyre_key *key, vyre_blob **out,
                           vyre_error *err);

/* Probes remote i regardless of back-off (see vyre_cache_remote_check). */
void vyre__remote_probe_one(vyre_remote_list *l, size_t i, vyre_remote_check *out);

/* A snapshot of remote i's counters. */
void vyre__remote_stats_get(vyre_remote_list *l, size_t i, vyre_remote_stats *st);

/* spec for display: the password of every URL ("user:password@") shown
 * as "user:***@", as vyre_remote_info.url shows it; the rest as written,
 * items joined by one space. */
void vyre__remote_spec_mask(const char *spec, char *buf, size_t size);

/* ---- not exported (vyre/remote.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * Parses a remote list (see the top of vyre/remote.h). An empty or
 * all-blank spec is a list of none. Each bad URL or attribute is
 * VYRE_EINVAL (a token file with group/other access or not the caller's:
 * VYRE_EUNSAFE) with the offending text in quotes and a hint. Reads token
 * files now. *out is the caller's: vyre_remote_list_free. Makes no
 * connection.
 */
int vyre_remote_list_parse(const char *spec, vyre_remote_list **out, vyre_error *err);

/* Frees a list and closes its connections. NULL is a no-op. */
void vyre_remote_list_free(vyre_remote_list *l);

/* Number of remotes (0 for NULL). */
size_t vyre_remote_list_count(const vyre_remote_list *l);

/* The i-th remote's description (owned by the list), NULL when out of range. */
const vyre_remote_info *vyre_remote_list_info(const vyre_remote_list *l, size_t i);

#endif /* VYRE_REMOTE_INTERNAL_H */
