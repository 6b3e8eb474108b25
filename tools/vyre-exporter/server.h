/*
 * server.h - vyre-exporter's HTTP side (libmicrohttpd): GET/HEAD of the
 * telemetry path runs a scrape, "/" is a landing page linking to it, any
 * other path is 404 and any other method 405. One internal thread polls
 * the sockets (epoll on Linux) and sleeps between requests: no timer, no
 * busy loop.
 */
#ifndef VYRE_EXPORTER_SERVER_H
#define VYRE_EXPORTER_SERVER_H

#include "exporter.h"

typedef struct exp_server exp_server;

/* Splits "host:port", "[v6]:port" or ":port" (every address) into host
 * (empty for every address) and port (0: the system picks). Returns 0, or
 * -1 with a message in err. */
int exp_parse_listen(const char *spec, char *host, size_t host_size, unsigned *port, char *err,
                     size_t err_size);

/* Starts serving x at spec under telemetry_path (begins with '/'). Returns
 * the server, or NULL with a message in err. *bound gets "host:port" as
 * bound (the real port when 0 was asked). */
exp_server *exp_server_start(exporter *x, const char *spec, const char *telemetry_path, char *bound,
                             size_t bound_size, char *err, size_t err_size);
void exp_server_stop(exp_server *s);

#endif /* VYRE_EXPORTER_SERVER_H */
