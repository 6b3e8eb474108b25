/*
 * vyre/remote.h - remote pipeline-cache stores shared by a fleet: HTTP(S)
 * (any server that answers GET and PUT, such as nginx with WebDAV) and
 * Redis.
 *
 * This header is part of libvyrecore's public API.
 *
 * A remote list is written as ccache writes its remote_storage: URLs
 * separated by blanks, tried in order, each followed by '|'-separated
 * attributes:
 *
 *   http://[user:password@]host[:port][/prefix]     GET/PUT <prefix>/<2 hex>/<64 hex>.vblob
 *   https://...                                     the same over verified TLS
 *   redis://[[user]:password@]host[:port][/db]      GET/SET vyre:<64 hex>
 *   rediss://...                                    Redis over verified TLS (1.2 or later)
 *
 * Attributes: read-only, connect-timeout=MS (default 100),
 * operation-timeout=MS (default 10000), token-file=PATH (a bearer token for
 * HTTP, a password for Redis; the file must be mode 0600 and the caller's),
 * ca-file=PATH (https, rediss: the PEM CA certificates that verify the store's
 * certificate, instead of the system's CA store; a private CA's fleet
 * verifies its store without turning verification off, which no attribute
 * does), expiry=SECONDS (Redis: SET ... EX), max-object-size=BYTES (larger
 * objects are refused before they are read whole; default: the largest
 * blob).
 *
 * Where a list comes from: the configuration's remote_storage key
 * (vyre/config.h: vyre.conf files, $VYRE_REMOTE_CACHE, -o), which
 * vyre_cache_open uses unless VYRE_CACHE_NO_REMOTE (a program with a list
 * from any other source sets that key: vyre_config_set).
 *
 * Trust: nothing a remote returns is used before it passed every check a
 * local blob passes (header, versions, checksums, exact size, the key it
 * claims equals the key asked for). A rejected object is counted and
 * dropped; the caller sees a miss. A remote that fails (down, slow,
 * refusing) is skipped for a back-off period (30 s, doubling to 10 min) in
 * this process, and never fails a local get or put.
 */
#ifndef VYRE_REMOTE_H
#define VYRE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_REMOTE_ENV                  "VYRE_REMOTE_CACHE"
#define VYRE_REMOTE_MAX                  8 /* remotes in one list */
#define VYRE_REMOTE_URL_MAX              512
#define VYRE_REMOTE_CONNECT_TIMEOUT_MS   100
#define VYRE_REMOTE_OPERATION_TIMEOUT_MS 10000
#define VYRE_REMOTE_BACKOFF_MS           30000
#define VYRE_REMOTE_BACKOFF_MAX_MS       600000
#define VYRE_REMOTE_REDIS_PREFIX         "vyre:"

typedef enum vyre_remote_scheme {
    VYRE_REMOTE_HTTP = 1,
    VYRE_REMOTE_HTTPS = 2,
    VYRE_REMOTE_REDIS = 3,
    VYRE_REMOTE_REDISS = 4,
} vyre_remote_scheme;

/* One remote as parsed. Secrets are never kept here: url has its password
 * replaced by "***". */
typedef struct vyre_remote_info {
    vyre_remote_scheme scheme;
    char url[VYRE_REMOTE_URL_MAX];    /* as written, password masked, attributes dropped */
    char host[256];                   /* without brackets for IPv6 */
    unsigned port;                    /* explicit or the scheme's default */
    char prefix[VYRE_REMOTE_URL_MAX]; /* HTTP: path without trailing '/' ("" for none) */
    int db;                           /* Redis: database number (0 by default) */
    int read_only;
    uint32_t connect_timeout_ms;
    uint32_t operation_timeout_ms;
    uint32_t expiry_s;                    /* Redis: 0 = no expiry */
    uint64_t max_object_bytes;            /* objects larger are refused */
    int has_user;                         /* user name in the URL */
    int has_password;                     /* password in the URL */
    char token_file[VYRE_REMOTE_URL_MAX]; /* "" when none */
    char ca_file[VYRE_REMOTE_URL_MAX];    /* https, rediss: "" for the system's CA store */
} vyre_remote_info;

/* What one remote did in this process (or through this cache handle). */
typedef struct vyre_remote_stats {
    uint64_t hits;          /* objects fetched and accepted */
    uint64_t misses;        /* the remote does not have the key */
    uint64_t errors;        /* failed requests (connection, timeout, status) */
    uint64_t rejected;      /* objects received and refused by validation */
    uint64_t skipped;       /* requests not made: the remote was backing off */
    uint64_t puts;          /* objects written back */
    uint64_t put_errors;    /* write-backs that failed */
    uint64_t bytes_read;    /* object bytes received (accepted or not) */
    uint64_t bytes_written; /* object bytes sent */
} vyre_remote_stats;

/* What `vyre-cachectl remote check` reports for one remote: a read of a
 * key no one writes (reachability and round-trip time), then, unless the
 * remote is read-only, a write of a small check object (".vyre-check"
 * under the HTTP prefix, "vyre:check" in Redis). */
typedef struct vyre_remote_check {
    int reachable;
    int writable; /* 1, 0, or -1: not tried (read-only or unreachable) */
    uint64_t rtt_ns;
    char message[VYRE_ERROR_MESSAGE_MAX]; /* why, when not reachable or not writable */
} vyre_remote_check;

typedef struct vyre_remote_list vyre_remote_list;

/* "http", "https", "redis", "rediss" (static). */
VYRE_EXTERN const char *vyre_remote_scheme_name(vyre_remote_scheme s);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_REMOTE_H */
