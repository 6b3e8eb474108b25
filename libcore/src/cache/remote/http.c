/*
 * http.c - the HTTP(S) transport of remote stores, through libcurl.
 *
 * GET, PUT and HEAD of <base>/<name> (vyre__http_ops); nothing else. One easy handle per remote,
 * made on first use and kept for connection reuse (the caller holds the
 * remote's mutex). Guarantees: bounded connect and operation timeouts, TLS
 * verified (libcurl's defaults are never loosened; a ca-file= only replaces
 * the CA certificates it verifies against), at most 3 redirects and
 * only to http/https, no signals (threads), a body larger than the
 * remote's max-object-size refused before it is read whole, a body cut
 * short an error. Trusting what comes back is remote.c's business.
 *
 * libcurl's global state is initialised once per process (pthread_once) and
 * released by no one: curl_global_cleanup is not thread-safe, and a
 * library cannot know that no other user of libcurl is left.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/remote/remote_internal.h"

#define MAX_REDIRECTS 3

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CURLcode g_init_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
    g_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

typedef struct sink {
    uint8_t *buf;
    size_t len, cap;
    uint64_t max;
    int too_big;
} sink;

static size_t on_data(char *p, size_t size, size_t nmemb, void *ctx)
{
    sink *s = ctx;
    size_t n = size * nmemb;
    if ((uint64_t)s->len + n > s->max) {
        s->too_big = 1;
        return 0; /* aborts the transfer */
    }
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 64 << 10;
        while (cap < s->len + n)
            cap *= 2;
        if ((uint64_t)cap > s->max)
            cap = (size_t)s->max;
        uint8_t *nb = realloc(s->buf, cap);
        if (!nb)
            return 0;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return n;
}

typedef struct source {
    const uint8_t *buf;
    size_t len, off;
} source;

static size_t on_read(char *p, size_t size, size_t nmemb, void *ctx)
{
    source *s = ctx;
    size_t n = size * nmemb;
    if (n > s->len - s->off)
        n = s->len - s->off;
    memcpy(p, s->buf + s->off, n);
    s->off += n;
    return n;
}

static size_t on_discard(char *p, size_t size, size_t nmemb, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * nmemb;
}

/* The handle, set up with everything common to GET and PUT. */
static int handle(vyre__remote *r, const char *name, char *url, size_t url_size,
                  struct curl_slist **headers, vyre_error *err)
{
    pthread_once(&g_once, global_init);
    if (g_init_rc != CURLE_OK)
        return vyre__fail(err, VYRE_EREMOTE, NULL, "libcurl cannot initialise: %s",
                          curl_easy_strerror(g_init_rc));
    CURL *h = r->conn;
    if (!h) {
        h = curl_easy_init();
        if (!h)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "libcurl cannot make a handle");
        r->conn = h;
    } else {
        curl_easy_reset(h);
    }
    int n = snprintf(url, url_size, "%s/%s", r->base_url, name);
    if (n < 0 || (size_t)n >= url_size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter prefix", "URL too long for '%s'",
                          r->info.url);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->info.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)r->info.operation_timeout_ms);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_USERAGENT, "vyre-remote-cache");
    if (r->info.ca_file[0]) {
        /* These CAs instead of the system's store (bundle and directory): a
         * private CA's fleet trusts its own CA for its store, and only it.
         * Peer and host name verification stay on: no option turns them off. */
        curl_easy_setopt(h, CURLOPT_CAINFO, r->info.ca_file);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    }
    if (r->info.has_user || r->info.has_password) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, r->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, r->password);
    }
    /* No "Expect: 100-continue" round trip before a PUT body. */
    *headers = curl_slist_append(NULL, "Expect:");
    if (r->token[0]) {
        char auth[VYRE__REMOTE_SECRET_MAX + 32];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", r->token);
        struct curl_slist *more = curl_slist_append(*headers, auth);
        memset(auth, 0, sizeof auth);
        if (!more) {
            curl_slist_free_all(*headers);
            *headers = NULL;
        } else {
            *headers = more;
        }
    }
    if (!*headers)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for HTTP headers");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
    return VYRE_OK;
}

static int transfer_fail(vyre__remote *r, const char *what, const char *url, CURLcode cc,
                         const char *detail, vyre_error *err)
{
    (void)url;
    const char *hint = "check that the server runs and answers; vyre goes on without it";
    if (cc == CURLE_OPERATION_TIMEDOUT)
        hint = "the server is slow or stalled: raise '|operation-timeout=MS' or "
               "'|connect-timeout=MS' if it is only far away";
    else if ((cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE) &&
             r->info.ca_file[0])
        hint = "the server's TLS certificate is not signed by a CA of '|ca-file=', or does not "
               "name the host of the URL: fix the certificate or the ca-file; verification is "
               "never turned off";
    else if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
        hint = "the server's TLS certificate is not trusted here: name its CA certificate with "
               "'|ca-file=PATH' (a private CA) or install it in the system's CA store; "
               "verification is never turned off";
    return vyre__fail(err, VYRE_EREMOTE, hint, "%s '%s' on remote store '%s' failed: %s%s%s", what,
                      url, r->info.url, curl_easy_strerror(cc), detail[0] ? ": " : "", detail);
}

static int http_get(vyre__remote *r, const char *name, uint8_t **buf, size_t *len, vyre_error *err)
{
    *buf = NULL;
    *len = 0;
    char url[VYRE_REMOTE_URL_MAX * 2];
    struct curl_slist *headers = NULL;
    int rc = handle(r, name, url, sizeof url, &headers, err);
    if (rc) {
        curl_slist_free_all(headers);
        return rc;
    }
    CURL *h = r->conn;
    char ebuf[CURL_ERROR_SIZE] = "";
    sink s = {NULL, 0, 0, r->info.max_object_bytes, 0};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->info.max_object_bytes);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (s.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
        *len = s.len;
        free(s.buf);
        return vyre__fail(
            err, VYRE_ETOOBIG, "raise '|max-object-size=BYTES' if blobs this large are expected",
            "object '%s' on remote store '%s' is larger than %" PRIu64 " bytes: refused", url,
            r->info.url, r->info.max_object_bytes);
    }
    if (cc == CURLE_OK && status == 404) {
        free(s.buf);
        return VYRE_ENOENT;
    }
    if (cc != CURLE_OK) {
        free(s.buf);
        return transfer_fail(r, "GET", url, cc, ebuf, err);
    }
    if (status != 200) {
        free(s.buf);
        return vyre__fail(err, VYRE_EREMOTE,
                          status == 401 || status == 403
                              ? "check the credentials (user:password@ or '|token-file=')"
                              : "check the server's configuration and log",
                          "GET '%s' on remote store '%s' answered HTTP %ld", url, r->info.url,
                          status);
    }
    *buf = s.buf;
    *len = s.len;
    return VYRE_OK;
}

static int http_put(vyre__remote *r, const char *name, const void *buf, size_t len, vyre_error *err)
{
    char url[VYRE_REMOTE_URL_MAX * 2];
    struct curl_slist *headers = NULL;
    int rc = handle(r, name, url, sizeof url, &headers, err);
    if (rc) {
        curl_slist_free_all(headers);
        return rc;
    }
    CURL *h = r->conn;
    char ebuf[CURL_ERROR_SIZE] = "";
    source src = {buf, len, 0};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &src);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_discard);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK)
        return transfer_fail(r, "PUT", url, cc, ebuf, err);
    if (status != 200 && status != 201 && status != 204)
        return vyre__fail(err, VYRE_EREMOTE,
                          status == 405 ? "the server does not accept PUT: enable WebDAV PUT "
                                          "(nginx: 'dav_methods PUT; create_full_put_path on;'), "
                                          "or mark the remote '|read-only'"
                                        : "check the server's configuration and log",
                          "PUT '%s' on remote store '%s' answered HTTP %ld", url, r->info.url,
                          status);
    return VYRE_OK;
}

/* A HEAD of name: 200 is there, 404 is not. */
static int http_head(vyre__remote *r, const char *name, vyre_error *err)
{
    char url[VYRE_REMOTE_URL_MAX * 2];
    struct curl_slist *headers = NULL;
    int rc = handle(r, name, url, sizeof url, &headers, err);
    if (rc) {
        curl_slist_free_all(headers);
        return rc;
    }
    CURL *h = r->conn;
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK)
        return transfer_fail(r, "HEAD", url, cc, ebuf, err);
    if (status == 404)
        return VYRE_ENOENT;
    if (status != 200)
        return vyre__fail(err, VYRE_EREMOTE,
                          status == 401 || status == 403
                              ? "check the credentials (user:password@ or '|token-file=')"
                              : "check the server's configuration and log",
                          "HEAD '%s' on remote store '%s' answered HTTP %ld", url, r->info.url,
                          status);
    return VYRE_OK;
}

static void http_close(vyre__remote *r)
{
    if (r->conn)
        curl_easy_cleanup(r->conn);
    r->conn = NULL;
}

/* "ab/<64 hex>.vblob" below the prefix: the cache's own layout. */
static void http_object_name(const vyre_key *key, char *out, size_t size)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    /* bounded: the first two hex digits name the folder */
    snprintf(out, size, "%.2s/%s%s", hex, hex, VYRE_BLOB_EXT);
}

const vyre__remote_ops vyre__http_ops = {
    .get = http_get,
    .put = http_put,
    .head = http_head,
    .close = http_close,
    .object_name = http_object_name,
    .check_name = ".vyre-check",
};
