/*
 * server.h - vyre-exporter's HTTP side (libmicrohttpd): GET/HEAD of the
 * telemetry path runs a scrape, "/" is a landing page linking to it, any
 * other path is 404 and any other method 405. A scrape is gzipped when
 * the request's Accept-Encoding takes gzip (gzip.h). With a web config
 * (webconfig.h) it serves TLS and answers 401 to a request without the
 * credentials of one of its users (auth.h), on every path. One internal thread polls
 * the sockets (epoll on Linux) and sleeps between requests; a second (the
 * connection guard) sleeps until the earliest request deadline, or until
 * a connection comes when there is none: no busy loop.
 *
 * Slow and idle clients cannot starve a scrape (issue 22): a request,
 * headers and any body, must arrive within EXP_REQUEST_TIMEOUT_MS of the
 * connection's start or of its previous response, however it trickles;
 * beyond EXP_MAX_CONNECTIONS the connection that has waited longest for
 * its request is dropped for the new one; a client that stops reading its
 * answer is dropped after EXP_IDLE_TIMEOUT_S without progress.
 */
#ifndef VYRE_EXPORTER_SERVER_H
#define VYRE_EXPORTER_SERVER_H

#include "exporter.h"
#include "webconfig.h"

/* Node_exporter-like servers answer within Prometheus's 10 s scrape
 * timeout; a real client sends its request in one go, so 5 s is slack
 * for a slow network and still bounds a trickling one. */
#define EXP_REQUEST_TIMEOUT_MS 5000
#define EXP_MAX_CONNECTIONS    64
#define EXP_CONNECTION_SLACK   16 /* accepted past the limit while the oldest drop */
#define EXP_IDLE_TIMEOUT_S     10

typedef struct exp_server exp_server;

/* Splits "host:port", "[v6]:port" or ":port" (every address) into host
 * (empty for every address) and port (0: the system picks). Returns 0, or
 * -1 with a message in err. */
int exp_parse_listen(const char *spec, char *host, size_t host_size, unsigned *port, char *err,
                     size_t err_size);

/* Starts serving x at spec under telemetry_path (begins with '/'), over
 * TLS and behind basic auth as web asks (NULL: plain HTTP, no auth; it
 * must outlive the server). Returns the server, or NULL with a message in
 * err (a second line "hint: ..." when there is one). *bound gets
 * "host:port" as bound (the real port when 0 was asked). */
exp_server *exp_server_start(exporter *x, const char *spec, const char *telemetry_path,
                             const exp_web_config *web, char *bound, size_t bound_size, char *err,
                             size_t err_size);
void exp_server_stop(exp_server *s);

#endif /* VYRE_EXPORTER_SERVER_H */
