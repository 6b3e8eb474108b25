/*
 * server.c - see server.h.
 *
 * The connection guard. libmicrohttpd's only per-connection clock is an
 * idle timeout (MHD_OPTION_CONNECTION_TIMEOUT): a client that sends one
 * header byte every few seconds is never idle and never done, and with
 * its connection limit reached libmicrohttpd stops accepting, so 70 such
 * clients kept every scrape out (issue 22). So the server tracks each
 * connection itself (MHD_OPTION_NOTIFY_CONNECTION, _NOTIFY_COMPLETED):
 *   - a request (headers and any body) must arrive within
 *     EXP_REQUEST_TIMEOUT_MS of the connection's start or of the end of
 *     its previous response; a watchdog thread, asleep until the earliest
 *     deadline (or until there is one), shuts late connections down;
 *   - past EXP_MAX_CONNECTIONS, each new connection shuts down the one
 *     that has waited longest for its request (the oldest idle), so a
 *     scrape always gets in; libmicrohttpd's own limit is set
 *     EXP_CONNECTION_SLACK higher so that it keeps accepting meanwhile.
 * "Shut down" is shutdown(2) on the socket, never close(2): libmicrohttpd
 * owns the descriptor, sees end-of-file and closes the connection itself.
 * It reports the connection closed (NOTIFY_CLOSED) before it closes the
 * descriptor, and both sides hold g->mu, so a descriptor number reused by
 * a newer connection is never shut down by mistake.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "gzip.h"
#include "util.h"
#include "vyre/version.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

#define EXP_SLOTS (EXP_MAX_CONNECTIONS + EXP_CONNECTION_SLACK)

/* One connection libmicrohttpd has accepted (its socket context). */
typedef struct conn_slot {
    int used;
    int fd;
    int answering;     /* a response is queued: no request deadline */
    int shut;          /* shut down by the guard, on its way out */
    uint64_t since_ns; /* when the request being waited for began */
} conn_slot;

typedef struct conn_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    pthread_t thread;
    int started, stopping;
    conn_slot slot[EXP_SLOTS];
} conn_guard;

struct exp_server {
    struct MHD_Daemon *d;
    exporter *x;
    char path[256];
    char landing[1024];
    exp_auth *auth; /* NULL: no basic auth */
    conn_guard g;
};

/* ---- the connection guard ------------------------------------------------ */

static void shut(conn_slot *c)
{
    c->shut = 1;
    shutdown(c->fd, SHUT_RDWR);
}

/* The oldest connection waiting for its request (not answering, not shut
 * already), or NULL. Called with g->mu held. */
static conn_slot *oldest_waiting(conn_guard *g)
{
    conn_slot *old = NULL;
    for (size_t i = 0; i < EXP_SLOTS; i++) {
        conn_slot *c = &g->slot[i];
        if (c->used && !c->shut && !c->answering && (!old || c->since_ns < old->since_ns))
            old = c;
    }
    return old;
}

static void *guard_main(void *arg)
{
    conn_guard *g = arg;
    const uint64_t limit = (uint64_t)EXP_REQUEST_TIMEOUT_MS * 1000000u;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        uint64_t now = tool_mono_ns();
        conn_slot *c;
        while ((c = oldest_waiting(g)) && now - c->since_ns >= limit)
            shut(c); /* the request took too long: trickled or never sent */
        if (!c) {
            pthread_cond_wait(&g->cv, &g->mu); /* nothing to time: sleep */
            continue;
        }
        uint64_t at = c->since_ns + limit;
        struct timespec ts = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static int guard_start(conn_guard *g)
{
    memset(g, 0, sizeof *g);
    if (tool_cond_init_monotonic(&g->cv) != 0)
        return -1;
    pthread_mutex_init(&g->mu, NULL);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        return -1;
    }
    g->started = 1;
    return 0;
}

static void guard_stop(conn_guard *g)
{
    if (!g->started)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    g->started = 0;
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection starts (take a slot; over
 * the limit, drop the oldest waiting one) or is closed (free its slot). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    conn_guard *g = &((exp_server *)cls)->g;
    pthread_mutex_lock(&g->mu);
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_slot *c = *socket_ctx;
        if (c)
            memset(c, 0, sizeof *c);
        *socket_ctx = NULL;
    } else {
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        size_t live = 0;
        conn_slot *free_slot = NULL;
        for (size_t i = 0; i < EXP_SLOTS; i++) {
            conn_slot *c = &g->slot[i];
            if (!c->used && !free_slot)
                free_slot = c;
            live += c->used && !c->shut;
        }
        if (free_slot && fi) {
            free_slot->used = 1;
            free_slot->fd = fi->connect_fd;
            free_slot->since_ns = tool_mono_ns();
            *socket_ctx = free_slot;
            live++;
            pthread_cond_signal(&g->cv); /* a new deadline */
        } else if (fi) {
            shutdown(fi->connect_fd, SHUT_RDWR); /* cannot be timed: not served */
        }
        conn_slot *old;
        while (live > EXP_MAX_CONNECTIONS && (old = oldest_waiting(g))) {
            shut(old);
            live--;
        }
    }
    pthread_mutex_unlock(&g->mu);
}

static conn_slot *slot_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* The request is answered: its deadline is off until the response is out. */
static void mark_answering(exp_server *s, struct MHD_Connection *conn)
{
    conn_slot *c = slot_of(conn);
    if (!c)
        return;
    pthread_mutex_lock(&s->g.mu);
    c->answering = 1;
    pthread_mutex_unlock(&s->g.mu);
}

/* MHD_OPTION_NOTIFY_COMPLETED: the response is out; a kept-alive
 * connection now waits for its next request, on a fresh deadline. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    (void)ctx;
    (void)toe;
    exp_server *s = cls;
    conn_slot *c = slot_of(conn);
    if (!c)
        return;
    pthread_mutex_lock(&s->g.mu);
    if (c->used) {
        c->answering = 0;
        c->since_ns = tool_mono_ns();
        pthread_cond_signal(&s->g.cv);
    }
    pthread_mutex_unlock(&s->g.mu);
}

/* ---- requests -------------------------------------------------------------- */

int exp_parse_listen(const char *spec, char *host, size_t host_size, unsigned *port, char *err,
                     size_t err_size)
{
    const char *colon = strrchr(spec, ':');
    const char *h = spec;
    size_t hl;
    if (!colon) {
        snprintf(err, err_size, "invalid listen address '%s' (want HOST:PORT or :PORT)", spec);
        return -1;
    }
    hl = (size_t)(colon - spec);
    if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
        h = spec + 1;
        hl -= 2;
    } else if (memchr(spec, ':', hl)) {
        snprintf(err, err_size, "invalid listen address '%s' (write IPv6 hosts as [ADDR]:PORT)",
                 spec);
        return -1;
    }
    char *end = NULL;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || p > 65535) {
        snprintf(err, err_size, "invalid port in listen address '%s' (0 to 65535)", spec);
        return -1;
    }
    if (hl >= host_size) {
        snprintf(err, err_size, "host too long in listen address '%s'", spec);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (unsigned)p;
    return 0;
}

static MHD_RESULT reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                        size_t len, int owned)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_RESULT ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* A scrape, gzipped when the request's Accept-Encoding takes gzip (a
 * body that cannot be compressed goes out plain). Vary tells caches that
 * the answer depends on that header. */
static MHD_RESULT reply_metrics(exp_server *s, struct MHD_Connection *c)
{
    static char failed[] = "scrape failed: out of memory\n";
    char *body = NULL;
    size_t len = 0;
    if (exporter_scrape(s->x, &body, &len) != 0)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", failed,
                     sizeof failed - 1, 0);
    const char *ae =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    int gz = 0;
    char *z = NULL;
    size_t zlen = 0;
    if (exp_accepts_gzip(ae) && exp_gzip(body, len, &z, &zlen) == 0) {
        free(body);
        body = z;
        len = zlen;
        gz = 1;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    if (gz)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    MHD_RESULT ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* 401 with the challenge a client answers with basic credentials (RFC
 * 7617), for a request without them or with wrong ones alike. */
static MHD_RESULT reply_unauthorized(struct MHD_Connection *c)
{
    static char body[] = "Unauthorized\n";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof body - 1, body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Basic realm=\"vyre-exporter\", charset=\"UTF-8\"");
    MHD_RESULT ret = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
    MHD_destroy_response(r);
    return ret;
}

/* MHD_OPTION_UNESCAPE_CALLBACK: the path stays as the client sent it,
 * never percent-decoded. libmicrohttpd's own decoding turned
 * '/metrics%00' into "/metrics", a NUL and nothing, which strcmp took for
 * the telemetry path (issue 33); '/%6detrics' decoded to it too. A
 * scraper sends the path as configured, so an encoded spelling of it is
 * not it: 404. The query string is cut off before this (and not used). */
static size_t keep_encoded(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

static MHD_RESULT handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                         const char *version, const char *upload, size_t *upload_size, void **ctx)
{
    (void)version;
    (void)upload;
    exp_server *s = cls;
    if (*ctx == NULL) { /* first call: headers only; answer on the next */
        *ctx = s;
        return MHD_YES;
    }
    if (*upload_size) { /* a body we do not want */
        *upload_size = 0;
        return MHD_YES;
    }
    mark_answering(s, c); /* every path below queues the response */
    if (s->auth && !exp_auth_check(s->auth, MHD_lookup_connection_value(
                                                c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)))
        return reply_unauthorized(c);
    static char not_allowed[] = "method not allowed\n";
    static char not_found[] = "not found\n";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            sizeof not_allowed - 1, not_allowed, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        MHD_RESULT ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (strcmp(url, s->path) == 0)
        return reply_metrics(s, c);
    if (strcmp(url, "/") == 0)
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", s->landing, strlen(s->landing), 0);
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
                 sizeof not_found - 1, 0);
}

/* Why libmicrohttpd could not listen: it keeps no errno of its own that
 * survives MHD_start_daemon, so bind the same address once more (with
 * SO_REUSEADDR, as it does) and keep that errno. ss NULL: every address
 * (IPv6 dual stack, else IPv4). 0 when that bind succeeds (a race, or a
 * failure that was not the bind). */
static int bind_errno(const struct sockaddr_storage *ss, unsigned port)
{
    struct sockaddr_storage any;
    if (!ss) {
        memset(&any, 0, sizeof any);
        struct sockaddr_in *a4 = (struct sockaddr_in *)&any;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        ss = &any;
    }
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int why = bind(fd, (const struct sockaddr *)ss, len) == 0 ? 0 : errno;
    close(fd);
    return why;
}

/* A telemetry path a scraper sends as it is: '/', then URL path
 * characters that need no percent-encoding (RFC 3986 pchar), since the
 * path is matched as sent (keep_encoded). */
static int plain_path(const char *p)
{
    if (p[0] != '/' || strlen(p) >= 256 || strcmp(p, "/") == 0)
        return 0;
    for (; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !strchr("-._~/!$&'()*+,;=:@", c))
            return 0;
    }
    return 1;
}

/* Why libmicrohttpd did not start on spec (host, port), into err: why is
 * bind_errno's answer; tls, whether TLS was asked for. */
static void start_error(const char *spec, const char *host, unsigned port, int why, int tls,
                        char *err, size_t err_size)
{
    if (why == EADDRINUSE)
        snprintf(err, err_size,
                 "cannot listen on '%s': %s\nhint: another process holds port %u "
                 "(ss -ltnp 'sport = :%u' names it); pick another with "
                 "--web.listen-address",
                 spec, strerror(why), port, port);
    else if (why == EADDRNOTAVAIL)
        snprintf(err, err_size,
                 "cannot listen on '%s': %s\nhint: '%s' is not an address of this host; "
                 "use one it has, or ':%u' for every address",
                 spec, strerror(why), host, port);
    else if (!why && tls)
        snprintf(err, err_size,
                 "cannot start TLS on '%s': libmicrohttpd (GnuTLS) refused the certificate "
                 "or key\nhint: check that the web config's cert_file and key_file are PEM, "
                 "unencrypted, and belong together (openssl x509 -noout -pubkey -in CERT and "
                 "openssl pkey -pubout -in KEY print the same key)",
                 spec);
    else
        snprintf(err, err_size, "cannot listen on '%s': %s", spec,
                 why ? strerror(why) : "libmicrohttpd could not start its listener");
}

/* Frees a server that never started serving. */
static void discard(exp_server *s)
{
    guard_stop(&s->g);
    exp_auth_free(s->auth);
    free(s);
}

/* Turns on TLS and basic auth as the web config asks: the TLS flag into
 * *flags and its options into opt[*n...]; 0, or -1 with err. */
static int web_setup(exp_server *s, const exp_web_config *web, unsigned *flags,
                     struct MHD_OptionItem *opt, size_t *n, char *err, size_t err_size)
{
    if (!web)
        return 0;
    if (web->cert_pem) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, err_size,
                     "this libmicrohttpd was built without TLS, so tls_server_config cannot be "
                     "served\nhint: install a libmicrohttpd built with GnuTLS (Debian's is)");
            return -1;
        }
        *flags |= MHD_USE_TLS;
        opt[(*n)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, web->key_pem};
        opt[(*n)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, web->cert_pem};
    }
    if (web->nusers && !(s->auth = exp_auth_new(web->users, web->nusers))) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    return 0;
}

exp_server *exp_server_start(exporter *x, const char *spec, const char *telemetry_path,
                             const exp_web_config *web, char *bound, size_t bound_size, char *err,
                             size_t err_size)
{
    char host[256];
    unsigned port;
    if (exp_parse_listen(spec, host, sizeof host, &port, err, err_size) != 0)
        return NULL;
    if (!plain_path(telemetry_path)) {
        snprintf(err, err_size,
                 "invalid telemetry path '%s' (want /NAME, e.g. /metrics, in letters, digits "
                 "and - . _ ~ /: it is matched as sent, never percent-decoded)",
                 telemetry_path);
        return NULL;
    }
    exp_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    s->x = x;
    snprintf(s->path, sizeof s->path, "%s", telemetry_path);
    snprintf(s->landing, sizeof s->landing,
             "<!DOCTYPE html>\n<html><head><title>vyre exporter</title></head>\n"
             "<body><h1>vyre exporter</h1>\n<p>vyre-exporter %s: GPUs (NVML), processes "
             "publishing vyre telemetry, the pipeline cache.</p>\n"
             "<p><a href=\"%s\">Metrics</a></p>\n</body></html>\n",
             vyre_version(), s->path);

    if (guard_start(&s->g) != 0) {
        snprintf(err, err_size, "cannot start the connection guard: %s", strerror(errno));
        free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    struct MHD_OptionItem tls[3]; /* key, certificate, END */
    size_t ntls = 0;
    if (web_setup(s, web, &flags, tls, &ntls, err, err_size) != 0) {
        discard(s);
        return NULL;
    }
    tls[ntls] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    int have_addr = 0;
    if (host[0]) {
        struct addrinfo hints, *ai = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        int g = getaddrinfo(host, NULL, &hints, &ai);
        if (g != 0 || !ai) {
            snprintf(err, err_size, "cannot resolve listen host '%s': %s", host, gai_strerror(g));
            discard(s);
            return NULL;
        }
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        freeaddrinfo(ai);
        if (ss.ss_family == AF_INET6) {
            ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
            flags |= MHD_USE_IPv6;
        } else {
            ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
        }
        have_addr = 1;
    }
    for (int attempt = 0; attempt < 2 && !s->d; attempt++) {
        unsigned f = flags;
        if (!have_addr && attempt == 0)
            f |= MHD_USE_DUAL_STACK; /* ":PORT": IPv6 and IPv4 */
        else if (!have_addr)
            attempt = 1; /* IPv4 only */
        /* The guard's callbacks, its limits (see the top of this file),
         * the path as sent (keep_encoded), and the idle timeout for a
         * client that stops reading. */
        struct MHD_OptionItem guard[8] = {
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
            {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_encoded, NULL},
            {MHD_OPTION_CONNECTION_LIMIT, EXP_SLOTS, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, EXP_IDLE_TIMEOUT_S, NULL},
        };
        memcpy(&guard[5], tls, (ntls + 1) * sizeof tls[0]); /* TLS options, then END */
        if (have_addr)
            s->d =
                MHD_start_daemon(f, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&ss, MHD_OPTION_ARRAY, guard, MHD_OPTION_END);
        else
            s->d = MHD_start_daemon(f, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_ARRAY,
                                    guard, MHD_OPTION_END);
        if (have_addr)
            break;
    }
    if (!s->d) {
        start_error(spec, host, port, bind_errno(have_addr ? &ss : NULL, port), ntls > 0, err,
                    err_size);
        discard(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned real = info ? info->port : port;
    if (host[0] && strchr(host, ':'))
        snprintf(bound, bound_size, "[%s]:%u", host, real);
    else
        snprintf(bound, bound_size, "%s:%u", host, real);
    return s;
}

void exp_server_stop(exp_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d); /* closes every connection: their slots are freed */
    discard(s);
}
