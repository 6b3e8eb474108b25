/*
 * store_url.c - where the results store is: a file path or a PostgreSQL
 * URL; how a URL is shown (its password masked, everywhere: messages,
 * `runs --json`, vyre_results_path); and vyre's password-file= parameter,
 * read only from a file that is the user's and mode 0600 (as ssh and
 * libpq's own .pgpass check).
 *
 * The URL is otherwise libpq's (postgresql://user[:password]@host[:port]
 * /dbname?param=value&...): libpq parses it, so every libpq parameter
 * (sslmode, sslrootcert, connect_timeout, options, ...) works as it does
 * for psql. password-file is not a libpq parameter, so it is taken out
 * here, before libpq sees the URL; its value is used as written (no
 * percent-decoding).
 */
#include "bench/store_url.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"
#include "vyre/config.h"
#include "vyre/results.h"

#define PASSWORD_FILE "password-file="

int vyre_results_is_url(const char *location)
{
    return location && (strncmp(location, "postgresql://", 13) == 0 ||
                        strncmp(location, "postgres://", 11) == 0);
}

/* Appends n bytes of s to buf (size) at *o, cut to fit. */
static void put(char *buf, size_t size, size_t *o, const char *s, size_t n)
{
    if (*o + 1 >= size)
        return;
    if (n > size - 1 - *o)
        n = size - 1 - *o;
    memcpy(buf + *o, s, n);
    *o += n;
    buf[*o] = '\0';
}

/* The query's parameters, password=... masked. */
static void mask_query(const char *q, char *buf, size_t size, size_t *o)
{
    while (*q) {
        size_t n = strcspn(q, "&");
        if (strncmp(q, "password=", 9) == 0 && n >= 9)
            put(buf, size, o, "password=***", 12);
        else
            put(buf, size, o, q, n);
        q += n;
        if (*q == '&')
            put(buf, size, o, q++, 1);
    }
}

void vyre_results_mask(const char *location, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    buf[0] = '\0';
    size_t o = 0;
    const char *s = location ? location : "";
    if (!vyre_results_is_url(s)) {
        put(buf, size, &o, s, strlen(s));
        return;
    }
    const char *auth = strstr(s, "://") + 3;
    size_t alen = strcspn(auth, "/?");
    put(buf, size, &o, s, (size_t)(auth - s));
    const char *at = memchr(auth, '@', alen);
    /* The last '@' ends the user info: a password may hold '@' unencoded. */
    for (const char *p = at; p && p < auth + alen;
         p = memchr(p + 1, '@', (size_t)(auth + alen - p - 1)))
        at = p;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon) {
        put(buf, size, &o, auth, (size_t)(colon - auth));
        put(buf, size, &o, ":***", 4);
        put(buf, size, &o, at, alen - (size_t)(at - auth));
    } else {
        put(buf, size, &o, auth, alen);
    }
    const char *rest = auth + alen;
    const char *q = strchr(rest, '?');
    put(buf, size, &o, rest, q ? (size_t)(q - rest) : strlen(rest));
    if (q) {
        put(buf, size, &o, "?", 1);
        mask_query(q + 1, buf, size, &o);
    }
}

/* Reads the first line of the password file at path into out. */
static int read_password_file(const char *path, char *out, size_t size, vyre_error *err)
{
    const char *hint = "keep the password in a file only you can read: chmod 600 it (or use "
                       "~/.pgpass, which libpq checks the same way)";
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return vyre__fail(err, VYRE_EUNSAFE, "name the file itself, not a link to it",
                              "password file '%s' is a symlink", path);
        return vyre__fail(err, vyre__errno_code(e), "check the password-file= of the URL",
                          "cannot open password file '%s': %s", path, strerror(e));
    }
    struct stat st;
    int rc = VYRE_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = vyre__fail(err, VYRE_EUNSAFE, hint, "password file '%s' is not a regular file", path);
    else if (st.st_uid != geteuid())
        rc = vyre__fail(err, VYRE_EUNSAFE, hint,
                        "password file '%s' is owned by uid %u, not by you: refused", path,
                        (unsigned)st.st_uid);
    else if (st.st_mode & 077)
        rc = vyre__fail(err, VYRE_EUNSAFE, hint,
                        "password file '%s' has mode %04o: others may read it, so it is refused",
                        path, (unsigned)(st.st_mode & 07777));
    ssize_t n = rc ? 0 : read(fd, out, size - 1);
    close(fd);
    if (rc)
        return rc;
    if (n < 0)
        return vyre__fail(err, vyre__errno_code(errno), NULL, "cannot read password file '%s'",
                          path);
    out[n] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0])
        return vyre__fail(err, VYRE_EINVAL, "write the password on the file's first line",
                          "password file '%s' is empty", path);
    return VYRE_OK;
}

/* Takes password-file=PATH out of u->url into path. */
static void take_password_file(vyre__pg_url *u, char *path, size_t size)
{
    path[0] = '\0';
    char *q = strchr(u->url, '?');
    if (!q)
        return;
    for (char *p = q + 1; *p;) {
        size_t n = strcspn(p, "&");
        if (strncmp(p, PASSWORD_FILE, strlen(PASSWORD_FILE)) == 0) {
            size_t plen = n - strlen(PASSWORD_FILE);
            snprintf(path, size, "%.*s", (int)plen, p + strlen(PASSWORD_FILE));
            /* Remove the parameter and one '&' beside it. */
            char *from = p + n, *to = p;
            if (*from == '&')
                from++;
            else if (to > q + 1)
                to--; /* the '&' before it */
            memmove(to, from, strlen(from) + 1);
            if (to[-1] == '?' && !*to)
                to[-1] = '\0';
            return;
        }
        p += n;
        if (*p == '&')
            p++;
    }
}

int vyre__pg_url_parse(const char *url, vyre__pg_url *u, vyre_error *err)
{
    memset(u, 0, sizeof *u);
    vyre_results_mask(url, u->shown, sizeof u->shown);
    if (!vyre_results_is_url(url))
        return vyre__fail(err, VYRE_EINVAL, "write postgresql://user@host:port/dbname",
                          "'%s' is not a PostgreSQL URL", u->shown);
    if (strlen(url) >= sizeof u->url)
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "PostgreSQL URL too long: '%.64s...'", u->shown);
    vyre__strlcpy(u->url, url, sizeof u->url);
    char path[VYRE_RESULTS_LOCATION_MAX];
    take_password_file(u, path, sizeof path);
    const char *q = strchr(u->url, '?');
    u->has_connect_timeout =
        q && (strstr(q, "?connect_timeout=") || strstr(q, "&connect_timeout="));
    if (!path[0])
        return VYRE_OK;
    return read_password_file(path, u->password, sizeof u->password, err);
}

void vyre__pg_url_release(vyre__pg_url *u)
{
    if (!u)
        return;
    /* volatile: a plain memset of a buffer about to die may be removed. */
    volatile char *p = u->password;
    for (size_t i = 0; i < sizeof u->password; i++)
        p[i] = 0;
}

/* ---- where the default store is --------------------------------------------------- */

int vyre_results_locate(char *buf, size_t size, int *is_default, vyre_error *err)
{
    if (is_default)
        *is_default = 0;
    if (!buf || !size)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_locate: no buffer");
    vyre_config *c = malloc(sizeof *c);
    if (!c)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading the configuration");
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_config_load_ex(c, NULL, NULL, 0, VYRE_CONFIG_KEEP_GOING, &e);
    /* Other keys' problems are the cache's business: only results_db's
     * stop the results store. */
    int bad = rc == VYRE_ENOMEM;
    for (size_t i = 0; !bad && i < c->n_problems && i < VYRE_CONFIG_MAX_PROBLEMS; i++)
        if (c->problems[i].is_error && strstr(c->problems[i].error.message, "results_db")) {
            e = c->problems[i].error;
            bad = 1;
        }
    if (bad) {
        rc = e.code ? e.code : VYRE_ECONFIG;
        if (err)
            *err = e;
        free(c);
        return rc;
    }
    if (c->results_db[0]) {
        rc = strlen(c->results_db) < size
                 ? VYRE_OK
                 : vyre__fail(err, VYRE_ETOOBIG, NULL, "results_db is too long");
        if (!rc)
            vyre__strlcpy(buf, c->results_db, size);
        free(c);
        return rc;
    }
    free(c);
    if (is_default)
        *is_default = 1;
    return vyre_results_default_path(buf, size, err);
}
