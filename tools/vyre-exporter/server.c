/*
 * server.c - see server.h.
 */
#include "server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "vyre/version.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct exp_server {
    struct MHD_Daemon *d;
    exporter *x;
    char path[256];
    char landing[1024];
};

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
    static char not_allowed[] = "method not allowed\n";
    static char not_found[] = "not found\n";
    static char failed[] = "scrape failed: out of memory\n";
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
    if (strcmp(url, s->path) == 0) {
        char *body = NULL;
        size_t len = 0;
        if (exporter_scrape(s->x, &body, &len) != 0)
            return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", failed,
                         sizeof failed - 1, 0);
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len, 1);
    }
    if (strcmp(url, "/") == 0)
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", s->landing, strlen(s->landing), 0);
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
                 sizeof not_found - 1, 0);
}

exp_server *exp_server_start(exporter *x, const char *spec, const char *telemetry_path, char *bound,
                             size_t bound_size, char *err, size_t err_size)
{
    char host[256];
    unsigned port;
    if (exp_parse_listen(spec, host, sizeof host, &port, err, err_size) != 0)
        return NULL;
    if (telemetry_path[0] != '/' || strlen(telemetry_path) >= 256 ||
        strcmp(telemetry_path, "/") == 0) {
        snprintf(err, err_size, "invalid telemetry path '%s' (want /NAME, e.g. /metrics)",
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

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
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
            free(s);
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
        if (have_addr)
            s->d = MHD_start_daemon(f, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                                    (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT,
                                    (unsigned)10, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                    MHD_OPTION_END);
        else
            s->d = MHD_start_daemon(f, (uint16_t)port, NULL, NULL, handle, s,
                                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
        if (have_addr)
            break;
    }
    if (!s->d) {
        snprintf(err, err_size, "cannot listen on '%s' (address in use, or not this host's?)",
                 spec);
        free(s);
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
    MHD_stop_daemon(s->d);
    free(s);
}
