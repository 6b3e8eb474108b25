/*
 * servers.h - real servers for the remote-store tests: nginx with WebDAV
 * PUT (over plain HTTP or TLS) and redis-server (plain or TLS) on loopback
 * ports the test picks, throwaway certificates made with the openssl
 * command, and a small
 * fault-injecting HTTP server (a thread) for what no real server does on
 * demand (a body cut short, a response that stalls).
 *
 * A server (or openssl) that is not installed skips the test with the reason, unless
 * $CI is "true": there it fails the test (CI installs them). Servers are
 * stopped by ts_*_stop, and killed when the test's process exits whatever
 * the path (PR_SET_PDEATHSIG and an exit handler).
 */
#ifndef VYRE_TEST_SERVERS_H
#define VYRE_TEST_SERVERS_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

/* A free loopback TCP port (bound, read back, released). */
int ts_free_port(void);

/* 1 once something accepts a TCP connection on 127.0.0.1:port, within
 * timeout_ms. */
int ts_wait_port(int port, int timeout_ms);

typedef struct ts_server {
    pid_t pid;
    int port;
    char dir[1024];  /* the server's own temp directory */
    char root[1100]; /* nginx: the document root (<dir>/www) */
} ts_server;

/* Starts nginx serving <dir>/www with GET and WebDAV PUT (full paths
 * created) on a free port. Skips (or fails under CI) when nginx is missing. */
void ts_nginx_start(ts_server *s);

/* The same over TLS: 'listen 127.0.0.1:PORT ssl' with this certificate
 * (PEM, chain) and key. */
void ts_nginx_tls_start(ts_server *s, const char *cert, const char *key);

/* Throwaway certificates (EC P-256, valid 2 days), made by the openssl
 * command (fork/exec, no shell) in dir, which holds nothing else of value:
 * ts_tls_ca writes <dir>/<name>.pem and .key, a self-signed CA;
 * ts_tls_cert writes <dir>/<name>.pem and .key, a server certificate signed
 * by the CA <dir>/<ca>.pem with subjectAltName san (e.g.
 * "IP:127.0.0.1,DNS:localhost"). Same skip rule for a missing openssl. */
void ts_tls_ca(const char *dir, const char *name);
void ts_tls_cert(const char *dir, const char *ca, const char *name, const char *san);

/* Starts redis-server (no persistence) on a free port. Same skip rule. */
void ts_redis_start(ts_server *s);

/* Starts redis-server with TLS only (--port 0 --tls-port, no client
 * certificates asked) on a free port, serving cert/key; password (NULL
 * for none) is its requirepass. Same skip rule. */
void ts_redis_tls_start(ts_server *s, const char *cert, const char *key, const char *ca,
                        const char *password);

/* PostgreSQL: Debian's server binaries (/usr/lib/postgresql/<v>/bin,
 * the newest version), a cluster made by initdb in a fresh temp folder on
 * a free loopback port, with fsync off. Under root (CI) initdb and the
 * server run as nobody (postgres refuses root). The superuser is "vyre"
 * with password TS_PG_PASSWORD (scram-sha-256 for every TCP client).
 * Same skip rule as the other servers; waits until the server accepts a
 * session. s->root holds the superuser's URL of database "postgres".
 * initdb runs once per run of the test binary (a template cluster the
 * runner's hooks make room for and remove); each server gets its own copy
 * of it. */
#define TS_PG_PASSWORD "vyre-test-secret"
void ts_postgres_start(ts_server *s);

/* Starts a server stopped by ts_postgres_stop again: same cluster, same
 * port. */
void ts_postgres_restart(ts_server *s);

/* Runs sql (several statements allowed) as the superuser on database db
 * ("postgres" when NULL), asserting success. */
void ts_postgres_exec(const ts_server *s, const char *db, const char *sql);

/* pg_dump of database db (NULL: postgres) into out_path, as the superuser
 * over TCP; returns the dump's text (malloc'ed: free it). */
char *ts_postgres_dump(const ts_server *s, const char *db, const char *out_path);

/* Stops the server fast (SIGINT: sessions are cut, as a crash would) and
 * waits for it; keeps dir. */
void ts_postgres_stop(ts_server *s);

/* A listening loopback socket that never accepts or reads: the kernel
 * completes TCP handshakes, nothing ever answers. Returns the fd (close it)
 * and its port in *port. */
int ts_silent_listen(int *port);

/* Stops the server (SIGTERM, then SIGKILL) and waits for it. Keeps dir. */
void ts_server_stop(ts_server *s);

/* Fault-injecting HTTP/1.1 server: answers every request with `mode`. */
typedef enum ts_fault_mode {
    TS_FAULT_SHORT_BODY = 1, /* Content-Length: 4096, then 100 bytes, then close */
    TS_FAULT_STALL,          /* reads the request, never answers */
    TS_FAULT_HUGE,           /* Content-Length: 1 GiB, then endless bytes */
    TS_FAULT_STATUS_500,     /* HTTP 500 */
    TS_FAULT_BODY,           /* HTTP 200 with `body` (set before starting) */
} ts_fault_mode;

typedef struct ts_fault {
    int port;
    int listen_fd;
    ts_fault_mode mode;
    const void *body;
    size_t body_len;
    pthread_t thread;
    volatile int stop;
    volatile int requests; /* requests accepted */
} ts_fault;

void ts_fault_start(ts_fault *f, ts_fault_mode mode);
void ts_fault_stop(ts_fault *f);

#endif /* VYRE_TEST_SERVERS_H */
