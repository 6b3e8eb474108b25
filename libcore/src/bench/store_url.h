/*
 * store_url.h - a PostgreSQL results store's URL as libpq takes it, with
 * vyre's one extra parameter (password-file=PATH) taken out and its file
 * read and checked, and its timeout=S and reconnect=S parameters (the
 * client-side deadlines) taken out and read. The public half (vyre_results_is_url, _mask, _locate)
 * is in vyre/results.h. Not public API.
 */
#ifndef VYRE_BENCH_STORE_URL_H
#define VYRE_BENCH_STORE_URL_H

#include <stddef.h>

#include "vyre/error.h"
#include "vyre/results.h"

/* Client-side deadlines (vyre's timeout=S parameter changes both). */
#define VYRE__PG_STATEMENT_S 60.0 /* each statement, wall clock, from send to result */
#define VYRE__PG_CONNECT_S   10.0 /* each connect: TCP, TLS, authentication, session */
/* How long a session the server dropped is sought again (a restart takes a
 * second or two, a failover longer); vyre's reconnect=S parameter sets it. */
#define VYRE__PG_RECONNECT_S 20.0

typedef struct vyre__pg_url {
    char url[VYRE_RESULTS_LOCATION_MAX];   /* for libpq: vyre's parameters taken out, the
                                              scheme in lower case */
    char shown[VYRE_RESULTS_LOCATION_MAX]; /* for messages: password masked */
    char password[1024];                   /* from password-file; "" when none */
    int has_connect_timeout;               /* the URL sets its own connect_timeout */
    double statement_s;                    /* timeout=S, else VYRE__PG_STATEMENT_S */
    double connect_s;   /* connect_timeout=N, else timeout=S, else VYRE__PG_CONNECT_S */
    double reconnect_s; /* reconnect=S, else VYRE__PG_RECONNECT_S; 0: not sought again */
} vyre__pg_url;

/* Parses url (postgresql://...) into u, reading password-file=PATH when
 * given: it must be a regular file of this user, mode 0600 or stricter,
 * never a link (VYRE_EUNSAFE otherwise, naming it and its mode). Returns
 * 0, VYRE_EINVAL (not a URL, empty password file), VYRE_ETOOBIG, or the
 * file's error. Release with vyre__pg_url_release (wipes the password). */
/* Copies free text (a command line, a message) into buf with every
 * password masked as vyre_results_mask does a location: a URL ends at a
 * blank or a quote. Never fails: cut to size. */
void vyre__mask_secrets(const char *text, char *buf, size_t size);

int vyre__pg_url_parse(const char *url, vyre__pg_url *u, vyre_error *err);
void vyre__pg_url_release(vyre__pg_url *u);

/* Writes the default path ($XDG_DATA_HOME/vyre/results.sqlite3, else
 * $HOME/.local/share/vyre/results.sqlite3) into buf. Creates nothing.
 * Returns 0, VYRE_EENV (neither variable usable) or VYRE_ETOOBIG. */
int vyre__results_default_path(char *buf, size_t size, vyre_error *err);

#endif /* VYRE_BENCH_STORE_URL_H */
