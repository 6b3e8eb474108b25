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

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/config_internal.h"
#include "vyre/config.h"
#include "vyre/results.h"

#define PASSWORD_FILE   "password-file="
#define TIMEOUT_PARAM   "timeout="
#define RECONNECT_PARAM "reconnect="

/* The length of s's postgresql:// or postgres:// scheme, any case (libpq
 * takes only the lower case: vyre__pg_url_parse lowers it); 0 when s
 * starts with neither. */
static size_t scheme_len(const char *s)
{
    if (strncasecmp(s, "postgresql://", 13) == 0)
        return 13;
    return strncasecmp(s, "postgres://", 11) == 0 ? 11 : 0;
}

int vyre_results_is_url(const char *location)
{
    return location && scheme_len(location) > 0;
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

/* Where a word of free text ends (blank or quote); in a whole location,
 * at its end. */
static size_t token_len(const char *p, int whole)
{
    return whole ? strlen(p) : strcspn(p, " \t\r\n'\"");
}

/* At p, a URL's scheme: its user info's password masked. The password
 * runs from the first ':' of the user info to the LAST '@' before the
 * query, since a password may hold an unencoded '@' (or '/'): whatever
 * libpq would make of it, none of it is shown. Returns how many bytes of
 * p were consumed (the '@' is left for the caller to copy). */
static size_t mask_userinfo(const char *p, size_t slen, int whole, char *buf, size_t size,
                            size_t *o)
{
    size_t tlen = token_len(p, whole);
    const char *auth = p + slen, *end = p + tlen;
    const char *q = auth + strcspn(auth, "?#");
    if (q > end)
        q = end;
    const char *first_at = memchr(auth, '@', (size_t)(q - auth));
    const char *last_at = first_at;
    for (const char *a = first_at; a; a = memchr(a + 1, '@', (size_t)(q - a - 1)))
        last_at = a;
    const char *colon = first_at ? memchr(auth, ':', (size_t)(first_at - auth)) : NULL;
    if (!colon) {
        put(buf, size, o, p, slen);
        return slen;
    }
    put(buf, size, o, p, (size_t)(colon - p));
    put(buf, size, o, ":***", 4);
    return (size_t)(last_at - p);
}

/* At p, "password" (any case, the end of a key such as PGPASSWORD or
 * sslpassword) then '=' (blanks around it allowed, as in libpq's
 * key=value strings): the value masked. Returns the bytes consumed, 0
 * when p is no such key. */
static size_t mask_password_value(const char *p, int url, char *buf, size_t size, size_t *o)
{
    if (strncasecmp(p, "password", 8) != 0)
        return 0;
    const char *v = p + 8;
    v += strspn(v, " \t");
    if (*v != '=')
        return 0;
    v++;
    v += strspn(v, " \t");
    put(buf, size, o, p, (size_t)(v - p));
    put(buf, size, o, "***", 3);
    if (*v == '\'' || *v == '"') {
        char quote = *v++;
        while (*v && *v != quote)
            v += v[0] == '\\' && v[1] ? 2 : 1;
        return (size_t)(v - p) + (*v ? 1 : 0);
    }
    return (size_t)(v - p) + (url ? strcspn(v, "&#") : strcspn(v, "& \t\r\n'\"#"));
}

/* Copies text into buf with every secret masked: a postgresql:// or
 * postgres:// URL's password (any case of the scheme) and the value of
 * every key ending in "password" followed by '=' (password=,
 * sslpassword=, PGPASSWORD=). whole: text is one location (a URL runs to
 * its end); else free text (a URL ends at a blank or a quote). */
static void mask_text(const char *text, int whole, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    /* In a whole URL a value ends only at '&' or '#'; elsewhere at a blank too. */
    int url = whole && scheme_len(text);
    for (const char *p = text; *p;) {
        size_t slen = scheme_len(p), n = 0;
        if (slen)
            n = mask_userinfo(p, slen, whole, buf, size, &o);
        else
            n = mask_password_value(p, url, buf, size, &o);
        if (!n) {
            put(buf, size, &o, p, 1);
            n = 1;
        }
        p += n;
    }
}

void vyre_results_mask(const char *location, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    mask_text(location ? location : "", 1, buf, size);
}

void vyre__mask_secrets(const char *text, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    mask_text(text ? text : "", 0, buf, size);
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

/* Takes vyre's parameter key (e.g. "password-file=") out of u->url, its
 * value into out ("" when absent or empty). 1 when it was there. */
static int take_param(vyre__pg_url *u, const char *key, char *out, size_t size)
{
    out[0] = '\0';
    char *q = strchr(u->url, '?');
    if (!q)
        return 0;
    size_t klen = strlen(key);
    for (char *p = q + 1; *p;) {
        size_t n = strcspn(p, "&");
        if (strncmp(p, key, klen) == 0) {
            snprintf(out, size, "%.*s", (int)(n - klen), p + klen);
            /* Remove the parameter and one '&' beside it. */
            char *from = p + n, *to = p;
            if (*from == '&')
                from++;
            else if (to > q + 1)
                to--; /* the '&' before it */
            memmove(to, from, strlen(from) + 1);
            if (to[-1] == '?' && !*to)
                to[-1] = '\0';
            return 1;
        }
        p += n;
        if (*p == '&')
            p++;
    }
    return 0;
}

/* Seconds in text ("2", "0.5"), at least min (0 or 0.1) and at most a
 * day: 0, or VYRE_EINVAL naming the URL. */
static int parse_seconds(const char *text, const char *key, double min, const char *shown,
                         double *out, vyre_error *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= min && v <= 86400))
        return vyre__fail(err, VYRE_EINVAL,
                          min > 0 ? "write the seconds as a number from 0.1 to 86400, e.g. "
                                    "timeout=30"
                                  : "write the seconds as a number from 0 (never) to 86400, "
                                    "e.g. reconnect=60",
                          "bad %s'%s' in results database '%s'", key, text, shown);
    *out = v;
    return VYRE_OK;
}

/* libpq's own connect_timeout=N of the URL, when set, as our connect
 * deadline (libpq's async calls leave it to us). */
static void read_connect_timeout(vyre__pg_url *u)
{
    const char *q = strchr(u->url, '?');
    const char *k = q ? strstr(q, "?connect_timeout=") : NULL;
    if (!k && q)
        k = strstr(q, "&connect_timeout=");
    if (!k)
        return;
    char v[32];
    k += strlen("?connect_timeout=");
    snprintf(v, sizeof v, "%.*s", (int)strcspn(k, "&#"), k);
    u->has_connect_timeout = 1;
    /* libpq takes whole seconds, and 1 as 2; 0 (wait forever) is ours to bound. */
    long n = strtol(v, NULL, 10);
    u->connect_s = n <= 0 ? VYRE__PG_CONNECT_S : n < 2 ? 2 : (double)n;
}

int vyre__pg_url_parse(const char *url, vyre__pg_url *u, vyre_error *err)
{
    memset(u, 0, sizeof *u);
    vyre_results_mask(url, u->shown, sizeof u->shown);
    if (!vyre_results_is_url(url))
        return vyre__fail(err, VYRE_EINVAL, "write postgresql://user@host:port/dbname",
                          "'%s' is not a PostgreSQL URL", u->shown);
    if (strlen(url) >= sizeof u->url)
        /* bounded: excerpt, marked "...", of a URL too long */
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "PostgreSQL URL too long: '%.64s...'", u->shown);
    vyre__strlcpy(u->url, url, sizeof u->url);
    /* libpq knows the scheme in lower case only (POSTGRESQL:// would be
     * read as a key=value string, and its error would echo it whole). */
    for (size_t i = 0; i < scheme_len(url); i++)
        u->url[i] = (char)tolower((unsigned char)u->url[i]);
    char path[VYRE_RESULTS_LOCATION_MAX], timeout[64], reconnect[64];
    take_param(u, PASSWORD_FILE, path, sizeof path);
    int has_timeout = take_param(u, TIMEOUT_PARAM, timeout, sizeof timeout);
    int has_reconnect = take_param(u, RECONNECT_PARAM, reconnect, sizeof reconnect);
    u->statement_s = VYRE__PG_STATEMENT_S;
    u->connect_s = VYRE__PG_CONNECT_S;
    u->reconnect_s = VYRE__PG_RECONNECT_S;
    int rc = has_timeout
                 ? parse_seconds(timeout, TIMEOUT_PARAM, 0.1, u->shown, &u->statement_s, err)
                 : VYRE_OK;
    if (!rc && has_timeout)
        u->connect_s = u->statement_s;
    if (!rc && has_reconnect)
        rc = parse_seconds(reconnect, RECONNECT_PARAM, 0, u->shown, &u->reconnect_s, err);
    if (!rc)
        read_connect_timeout(u);
    if (rc || !path[0])
        return rc;
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
    int rc = vyre_config_load(c, NULL, NULL, 0, VYRE_CONFIG_KEEP_GOING, &e);
    /* Other keys' problems are the cache's business: only results_db's
     * stop the results store. */
    int bad = rc == VYRE_ENOMEM;
    for (size_t i = 0; !bad && i < c->n_problems && i < VYRE_CONFIG_MAX_PROBLEMS; i++)
        if (c->problems[i].is_error && c->problems[i].key == VYRE_CONF_RESULTS_DB) {
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
    return vyre__results_default_path(buf, size, err);
}

int vyre__results_default_path(char *buf, size_t size, vyre_error *err)
{
    if (!buf || !size)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__results_default_path: no buffer");
    return vyre__xdg_path("XDG_DATA_HOME", ".local/share", "vyre/results.sqlite3", buf, size, err);
}
