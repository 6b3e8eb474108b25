/*
 * store_url.h - a PostgreSQL results store's URL as libpq takes it, with
 * vyre's one extra parameter (password-file=PATH) taken out and its file
 * read and checked. The public half (vyre_results_is_url, _mask, _locate)
 * is in vyre/results.h. Not public API.
 */
#ifndef VYRE_BENCH_STORE_URL_H
#define VYRE_BENCH_STORE_URL_H

#include <stddef.h>

#include "vyre/error.h"
#include "vyre/results.h"

typedef struct vyre__pg_url {
    char url[VYRE_RESULTS_LOCATION_MAX];   /* for libpq: password-file=... taken out */
    char shown[VYRE_RESULTS_LOCATION_MAX]; /* for messages: password masked */
    char password[1024];                   /* from password-file; "" when none */
    int has_connect_timeout;               /* the URL sets its own connect_timeout */
} vyre__pg_url;

/* Parses url (postgresql://...) into u, reading password-file=PATH when
 * given: it must be a regular file of this user, mode 0600 or stricter,
 * never a link (VYRE_EUNSAFE otherwise, naming it and its mode). Returns
 * 0, VYRE_EINVAL (not a URL, empty password file), VYRE_ETOOBIG, or the
 * file's error. Release with vyre__pg_url_release (wipes the password). */
int vyre__pg_url_parse(const char *url, vyre__pg_url *u, vyre_error *err);
void vyre__pg_url_release(vyre__pg_url *u);

#endif /* VYRE_BENCH_STORE_URL_H */
