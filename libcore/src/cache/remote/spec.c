/*
 * spec.c - the list of remote stores: parsing a spec ($VYRE_REMOTE_CACHE,
 * remote_storage) into entries, showing it masked, and the list's lifetime.
 *
 * Owns URLs and ccache-style attributes, user info, token files (0600,
 * read once) and CA files (checked at parse time), and picks each entry's
 * backend (vyre__remote_ops) from its scheme, once: the policy in remote.c
 * never asks which kind of store it talks to. Secrets (URL password,
 * token) stay in the list, are wiped when it is freed, and never appear in
 * a message or in vyre_remote_info.
 */
#include "vyre/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* The largest blob file: header, payload and kernel-name table at most. */
#define BLOB_FILE_MAX                                                                              \
    ((uint64_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX)
#include "cache/remote/remote_internal.h"

#define HINT_SPEC                                                                                  \
    "write remotes as 'http://host[:port]/prefix', 'https://...', 'redis://host[:port][/db]', "    \
    "separated by spaces, each with optional '|read-only', '|connect-timeout=MS', "                \
    "'|operation-timeout=MS', '|token-file=PATH', '|ca-file=PATH' (https, rediss), "               \
    "'|expiry=SECONDS', "                                                                          \
    "'|max-object-size=BYTES'"

const char *vyre_remote_scheme_name(vyre_remote_scheme s)
{
    switch (s) {
    case VYRE_REMOTE_HTTP:
        return "http";
    case VYRE_REMOTE_HTTPS:
        return "https";
    case VYRE_REMOTE_REDIS:
        return "redis";
    case VYRE_REMOTE_REDISS:
        return "rediss";
    }
    return "?";
}

static int is_http(const vyre__remote *r)
{
    return r->info.scheme == VYRE_REMOTE_HTTP || r->info.scheme == VYRE_REMOTE_HTTPS;
}

/* ---- parsing ------------------------------------------------------------ */

/* snprintf that reports truncation: 0, or -1 when out was too small. */
static int fmt_fits(char *out, size_t size, const char *fmt, ...) VYRE_PRINTF(3, 4);
static int fmt_fits(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The item as it may be shown: user info between "://" and the last '@'
 * of the authority replaced by "***". */
static void display_of(const char *item, size_t n, char *out, size_t size)
{
    char tmp[VYRE_REMOTE_URL_MAX * 2];
    size_t m = n < sizeof tmp - 1 ? n : sizeof tmp - 1;
    memcpy(tmp, item, m);
    tmp[m] = '\0';
    char *sep = strstr(tmp, "://");
    if (sep) {
        char *auth = sep + 3;
        size_t alen = strcspn(auth, "/|");
        char *at = NULL;
        for (size_t i = 0; i < alen; i++)
            if (auth[i] == '@')
                at = auth + i;
        if (at) {
            snprintf(out, size, "%.*s***%s", (int)(auth - tmp), tmp, at);
            return;
        }
    }
    snprintf(out, size, "%s", tmp);
}

/* Percent-decodes s[0..n) into out; -1 on a bad escape, a NUL or overflow. */
static int pct_decode(const char *s, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int a = vyre__hex_digit(s[i + 1]), b = vyre__hex_digit(s[i + 2]);
            if (a < 0 || b < 0 || (a == 0 && b == 0))
                return -1;
            c = (char)(a * 16 + b);
            i += 2;
        }
        if (o + 1 >= size)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

static int parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (!n || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

static int host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
}

/* Characters allowed in an HTTP prefix as written (RFC 3986 pchar and '/'). */
static int path_char(char c)
{
    return host_char(c) || c == '~' || c == '/' || c == '%' || c == '!' || c == '$' || c == '&' ||
           c == '\'' || c == '(' || c == ')' || c == '*' || c == '+' || c == ',' || c == ';' ||
           c == '=' || c == ':' || c == '@';
}

typedef struct parse_ctx {
    const char *shown; /* the item as it may be shown */
    vyre_error *err;
} parse_ctx;

#define BAD(pc, code, hint, ...) bad(pc, code, hint, __VA_ARGS__)

static int bad(const parse_ctx *pc, int code, const char *hint, const char *fmt, ...)
    VYRE_PRINTF(4, 5);
static int bad(const parse_ctx *pc, int code, const char *hint, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return vyre__fail(pc->err, code, hint ? hint : HINT_SPEC, "remote store '%s': %s", pc->shown,
                      why);
}

static int read_token(const parse_ctx *pc, const char *path, char *out, size_t size)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return BAD(pc, e == ELOOP ? VYRE_EUNSAFE : vyre__errno_code(e),
                   e == ELOOP ? "name the token file itself, not a symbolic link to it"
                              : "check the token-file= path",
                   "cannot open token file '%s': %s", path, strerror(e));
    }
    struct stat st;
    int rc = VYRE_OK;
    if (fstat(fd, &st) != 0) {
        rc = BAD(pc, vyre__errno_code(errno), NULL, "cannot stat token file '%s': %s", path,
                 strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = BAD(pc, VYRE_EUNSAFE, "name a regular file", "token file '%s' is not a regular file",
                 path);
    } else if (st.st_uid != geteuid()) {
        rc = BAD(pc, VYRE_EUNSAFE, "the token file must belong to the user running vyre",
                 "token file '%s' belongs to uid %u, not to you", path, (unsigned)st.st_uid);
    } else if (st.st_mode & 077) {
        char hint[VYRE_REMOTE_URL_MAX + 32];
        snprintf(hint, sizeof hint, "run: chmod 600 '%s'", path);
        rc = BAD(pc, VYRE_EUNSAFE, hint,
                 "token file '%s' has mode %04o: others may read it, so it is not used", path,
                 (unsigned)(st.st_mode & 07777));
    } else if ((uint64_t)st.st_size >= size) {
        rc = BAD(pc, VYRE_ETOOBIG, "a token is one line", "token file '%s' is %jd bytes long", path,
                 (intmax_t)st.st_size);
    }
    ssize_t got = 0;
    if (rc == VYRE_OK) {
        got = read(fd, out, size - 1);
        if (got < 0)
            rc = BAD(pc, vyre__errno_code(errno), NULL, "cannot read token file '%s': %s", path,
                     strerror(errno));
    }
    close(fd);
    if (rc)
        return rc;
    size_t n = (size_t)got;
    while (n &&
           (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
    if (!n)
        return BAD(pc, VYRE_EINVAL, "put the token on the file's first line",
                   "token file '%s' is empty", path);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c <= 0x20 || c >= 0x7f) {
            memset(out, 0, size);
            return BAD(pc, VYRE_EINVAL, "a token is one line of printable characters, no blanks",
                       "token file '%s' holds a character 0x%02x at offset %zu", path, c, i);
        }
    }
    return VYRE_OK;
}

/* The largest CA file read (a PEM bundle: the system's is ~200 KiB). */
#define CA_FILE_MAX (16u << 20)
#define PEM_CERT    "-----BEGIN CERTIFICATE-----"

/* A ca-file= is checked here, once, so that a typo is an error where the
 * list was written instead of a TLS failure (a miss) on every request. It is
 * public material: symbolic links are followed (the system's CA files are
 * links) and any owner or mode is fine, unlike a token file. */
static int check_ca_file(const parse_ctx *pc, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return BAD(pc, vyre__errno_code(e),
                   e == EACCES ? "make the CA file readable by the user running vyre"
                               : "check the ca-file= path: a PEM file of the CA certificates "
                                 "that signed the store's certificate",
                   "cannot open CA file '%s': %s", path, strerror(e));
    }
    struct stat st;
    int rc = VYRE_OK;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        rc = BAD(pc, vyre__errno_code(errno), NULL, "cannot stat CA file '%s': %s", path,
                 strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = BAD(pc, VYRE_EINVAL,
                 "name a PEM file of CA certificates (e.g. the fleet CA's ca.pem), not a "
                 "directory or a device",
                 "CA file '%s' is not a regular file", path);
    } else if (st.st_size <= 0 || (uint64_t)st.st_size > CA_FILE_MAX) {
        rc = BAD(pc, VYRE_EINVAL, "give the CA certificates in PEM form, at most 16 MiB",
                 "CA file '%s' is %jd bytes long", path, (intmax_t)st.st_size);
    } else if (!(buf = malloc((size_t)st.st_size))) {
        rc = BAD(pc, VYRE_ENOMEM, NULL, "out of memory reading CA file '%s'", path);
    } else {
        size_t len = 0, want = (size_t)st.st_size;
        while (len < want) {
            ssize_t got = read(fd, buf + len, want - len);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                rc = BAD(pc, vyre__errno_code(errno), NULL, "cannot read CA file '%s': %s", path,
                         strerror(errno));
                break;
            }
            if (got == 0)
                break;
            len += (size_t)got;
        }
        if (rc == VYRE_OK && !memmem(buf, len, PEM_CERT, sizeof PEM_CERT - 1))
            rc = BAD(pc, VYRE_EINVAL,
                     "give the CA certificates in PEM form (convert a DER one with "
                     "'openssl x509 -inform DER -in ca.der -out ca.pem')",
                     "CA file '%s' holds no PEM certificate ('" PEM_CERT "')", path);
    }
    free(buf);
    close(fd);
    return rc;
}

static int parse_attr(const parse_ctx *pc, vyre__remote *r, const char *a, size_t n)
{
    const char *eq = memchr(a, '=', n);
    size_t kn = eq ? (size_t)(eq - a) : n;
    const char *v = eq ? eq + 1 : NULL;
    size_t vn = eq ? n - kn - 1 : 0;
#define KEY_IS(s) (kn == sizeof(s) - 1 && memcmp(a, s, kn) == 0)
    uint64_t x = 0;
    if (KEY_IS("read-only")) {
        if (eq)
            return BAD(pc, VYRE_EINVAL, "write '|read-only' alone",
                       "attribute 'read-only' takes no value");
        r->info.read_only = 1;
    } else if (KEY_IS("connect-timeout") || KEY_IS("operation-timeout")) {
        if (!v || parse_uint(v, vn, 3600000, &x) || x == 0)
            return BAD(pc, VYRE_EINVAL,
                       "give milliseconds from 1 to 3600000, e.g. '|connect-timeout=100'",
                       "attribute '%.*s' has value '%.*s'", (int)n, a, (int)vn, v ? v : "");
        if (KEY_IS("connect-timeout"))
            r->info.connect_timeout_ms = (uint32_t)x;
        else
            r->info.operation_timeout_ms = (uint32_t)x;
    } else if (KEY_IS("expiry")) {
        if (!v || parse_uint(v, vn, INT32_MAX, &x) || x == 0)
            return BAD(pc, VYRE_EINVAL, "give seconds from 1 to 2147483647, e.g. '|expiry=604800'",
                       "attribute 'expiry' has value '%.*s'", (int)vn, v ? v : "");
        if (is_http(r))
            return BAD(pc, VYRE_EINVAL,
                       "an HTTP store expires objects itself (e.g. a cron job or the object "
                       "store's lifecycle rule)",
                       "attribute 'expiry' is for Redis stores only");
        r->info.expiry_s = (uint32_t)x;
    } else if (KEY_IS("max-object-size")) {
        uint64_t hi = BLOB_FILE_MAX;
        if (!v || parse_uint(v, vn, hi, &x) || x < VYRE_BLOB_HEADER_SIZE)
            return BAD(pc, VYRE_EINVAL, "give bytes from 256 up to the largest blob (536936704)",
                       "attribute 'max-object-size' has value '%.*s'", (int)vn, v ? v : "");
        r->info.max_object_bytes = x;
    } else if (KEY_IS("token-file")) {
        if (!v || !vn || vn >= sizeof r->info.token_file)
            return BAD(pc, VYRE_EINVAL, "give the token file's path: '|token-file=PATH'",
                       "attribute 'token-file' needs a path");
        memcpy(r->info.token_file, v, vn);
        r->info.token_file[vn] = '\0';
        int rc = read_token(pc, r->info.token_file, r->token, sizeof r->token);
        if (rc)
            return rc;
    } else if (KEY_IS("ca-file")) {
        if (!v || !vn || vn >= sizeof r->info.ca_file)
            return BAD(pc, VYRE_EINVAL, "give the CA certificates' file: '|ca-file=PATH'",
                       "attribute 'ca-file' needs a path");
        if (r->info.scheme != VYRE_REMOTE_HTTPS && r->info.scheme != VYRE_REMOTE_REDISS)
            return BAD(pc, VYRE_EINVAL,
                       "a CA file verifies a TLS server: write the store as https://... or "
                       "rediss://...",
                       "attribute 'ca-file' is for https:// and rediss:// stores only");
        memcpy(r->info.ca_file, v, vn);
        r->info.ca_file[vn] = '\0';
        int rc = check_ca_file(pc, r->info.ca_file);
        if (rc)
            return rc;
    } else {
        return BAD(pc, VYRE_EINVAL, NULL, "unknown attribute '%.*s'", (int)n, a);
    }
#undef KEY_IS
    return VYRE_OK;
}

static int parse_userinfo(const parse_ctx *pc, vyre__remote *r, const char *u, size_t n)
{
    const char *colon = memchr(u, ':', n);
    size_t un = colon ? (size_t)(colon - u) : n;
    if (pct_decode(u, un, r->user, sizeof r->user))
        return BAD(pc, VYRE_EINVAL, "percent-encode special characters of the user name",
                   "bad user name in the URL");
    r->info.has_user = un > 0;
    if (colon) {
        if (pct_decode(colon + 1, n - un - 1, r->password, sizeof r->password))
            return BAD(pc, VYRE_EINVAL, "percent-encode special characters of the password",
                       "bad password in the URL");
        r->info.has_password = 1;
    }
    return VYRE_OK;
}

/* The scheme of item[0..un): sets the scheme, its default port and the
 * backend; *rest is what follows "://". */
static int parse_scheme(const parse_ctx *pc, const char *item, size_t un, vyre__remote *r,
                        const char **rest)
{
    const char *sep = NULL;
    for (size_t i = 0; i + 2 < un; i++)
        if (item[i] == ':' && item[i + 1] == '/' && item[i + 2] == '/') {
            sep = item + i;
            break;
        }
    if (!sep)
        return BAD(pc, VYRE_EINVAL, NULL, "not a URL (no 'scheme://')");
    size_t sn = (size_t)(sep - item);
    static const struct {
        const char *name;
        vyre_remote_scheme s;
        unsigned port;
        const vyre__remote_ops *ops;
    } schemes[] = {{"http", VYRE_REMOTE_HTTP, 80, &vyre__http_ops},
                   {"https", VYRE_REMOTE_HTTPS, 443, &vyre__http_ops},
                   {"redis", VYRE_REMOTE_REDIS, 6379, &vyre__redis_ops},
                   {"rediss", VYRE_REMOTE_REDISS, 6379, &vyre__redis_ops}};
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(schemes); i++)
        if (strlen(schemes[i].name) == sn && memcmp(schemes[i].name, item, sn) == 0) {
            r->info.scheme = schemes[i].s;
            r->info.port = schemes[i].port;
            r->ops = schemes[i].ops;
        }
    if (!r->info.scheme)
        return BAD(pc, VYRE_EINVAL, "use http, https, redis or rediss", "unknown scheme '%.*s'",
                   (int)sn, item);
    *rest = sep + 3;
    return VYRE_OK;
}

/* The host of hp..auth_end ("[v6]" or a name), then its ":port", if any. */
static int parse_host_port(const parse_ctx *pc, vyre__remote *r, const char *hp,
                           const char *auth_end)
{
    const char *host_end, *port_at = NULL;
    if (hp < auth_end && *hp == '[') {
        const char *rb = memchr(hp, ']', (size_t)(auth_end - hp));
        if (!rb || rb == hp + 1)
            return BAD(pc, VYRE_EINVAL, "write an IPv6 address as '[::1]'", "bad IPv6 host");
        for (const char *p = hp + 1; p < rb; p++)
            if (vyre__hex_digit(*p) < 0 && *p != ':' && *p != '.')
                return BAD(pc, VYRE_EINVAL, "write an IPv6 address as '[::1]'", "bad IPv6 host");
        if ((size_t)(rb - hp - 1) >= sizeof r->info.host)
            return BAD(pc, VYRE_EINVAL, NULL, "host name too long");
        memcpy(r->info.host, hp + 1, (size_t)(rb - hp - 1));
        host_end = rb + 1;
        if (host_end < auth_end) {
            if (*host_end != ':')
                return BAD(pc, VYRE_EINVAL, NULL, "unexpected text after the IPv6 host");
            port_at = host_end + 1;
        }
    } else {
        host_end = memchr(hp, ':', (size_t)(auth_end - hp));
        if (host_end)
            port_at = host_end + 1;
        else
            host_end = auth_end;
        if (host_end == hp)
            return BAD(pc, VYRE_EINVAL, "give a host name or address", "no host");
        if ((size_t)(host_end - hp) >= sizeof r->info.host)
            return BAD(pc, VYRE_EINVAL, NULL, "host name too long");
        for (const char *p = hp; p < host_end; p++)
            if (!host_char(*p))
                return BAD(pc, VYRE_EINVAL, "a host is letters, digits, '-', '.' and '_'",
                           "bad character '%c' in host '%.*s'", *p, (int)(host_end - hp), hp);
        memcpy(r->info.host, hp, (size_t)(host_end - hp));
    }
    if (port_at) {
        uint64_t port = 0;
        if (parse_uint(port_at, (size_t)(auth_end - port_at), 65535, &port) || port == 0)
            return BAD(pc, VYRE_EINVAL, "give a port from 1 to 65535", "bad port '%.*s'",
                       (int)(auth_end - port_at), port_at);
        r->info.port = (unsigned)port;
    }
    return VYRE_OK;
}

/* The path: an HTTP store's prefix, or a Redis database number. */
static int parse_path(const parse_ctx *pc, vyre__remote *r, const char *path, size_t pn)
{
    if (is_http(r)) {
        while (pn && path[pn - 1] == '/')
            pn--;
        for (size_t i = 0; i < pn; i++)
            if (!path_char(path[i]))
                return BAD(pc, VYRE_EINVAL,
                           "a prefix is a plain path: no '?', '#' or blanks (percent-encode "
                           "other characters)",
                           "bad character '%c' in prefix '%.*s'", path[i], (int)pn, path);
        for (size_t i = 0; i + 1 < pn; i++)
            if (path[i] == '/' && path[i + 1] == '.' &&
                (i + 2 == pn || path[i + 2] == '/' ||
                 (path[i + 2] == '.' && (i + 3 == pn || path[i + 3] == '/'))))
                return BAD(pc, VYRE_EINVAL, "write the prefix without '.' or '..' components",
                           "prefix '%.*s' has a dot component", (int)pn, path);
        memcpy(r->info.prefix, path, pn);
        r->info.prefix[pn] = '\0';
    } else if (pn > 1) {
        uint64_t db = 0;
        if (parse_uint(path + 1, pn - 1, 65535, &db))
            return BAD(pc, VYRE_EINVAL, "a Redis URL's path is a database number: redis://host/2",
                       "bad database '%.*s'", (int)(pn - 1), path + 1);
        r->info.db = (int)db;
    }
    return VYRE_OK;
}

/* The attributes after the URL: bar is the first '|' (NULL: none). */
static int parse_attrs(const parse_ctx *pc, vyre__remote *r, const char *bar, const char *end)
{
    const char *a = bar;
    while (a && a < end) {
        a++;
        const char *next = memchr(a, '|', (size_t)(end - a));
        size_t an = next ? (size_t)(next - a) : (size_t)(end - a);
        if (!an)
            return BAD(pc, VYRE_EINVAL, NULL, "empty attribute");
        int rc = parse_attr(pc, r, a, an);
        if (rc)
            return rc;
        a = next;
    }
    return VYRE_OK;
}

/* Credentials given twice, then what may be shown and the URL the HTTP
 * backend requests. */
static int finish_item(const parse_ctx *pc, vyre__remote *r)
{
    if (is_http(r) && r->token[0] && (r->info.has_user || r->info.has_password))
        return BAD(pc, VYRE_EINVAL,
                   "use either user:password@ in the URL or '|token-file=', not both",
                   "both basic-auth credentials and a bearer token given");
    if (!is_http(r) && r->token[0] && r->info.has_password)
        return BAD(pc, VYRE_EINVAL, "use either a password in the URL or '|token-file=', not both",
                   "both a password and a token file given");
    int v6 = strchr(r->info.host, ':') != NULL;
    char hostpart[300];
    snprintf(hostpart, sizeof hostpart, v6 ? "[%s]:%u" : "%s:%u", r->info.host, r->info.port);
    char userpart[300] = "";
    if (r->info.has_user || r->info.has_password)
        snprintf(userpart, sizeof userpart, "%s%s@", r->user, r->info.has_password ? ":***" : "");
    const char *scheme = vyre_remote_scheme_name(r->info.scheme);
    int too_long;
    if (is_http(r))
        too_long = fmt_fits(r->info.url, sizeof r->info.url, "%s://%s%s%s", scheme, userpart,
                            hostpart, r->info.prefix) ||
                   fmt_fits(r->base_url, sizeof r->base_url, "%s://%s%s", scheme, hostpart,
                            r->info.prefix);
    else
        too_long = fmt_fits(r->info.url, sizeof r->info.url, "%s://%s%s/%d", scheme, userpart,
                            hostpart, r->info.db);
    if (too_long)
        return BAD(pc, VYRE_ETOOBIG, "use a shorter URL", "URL too long");
    return VYRE_OK;
}

/* One item of a spec: "scheme://[user[:password]@]host[:port][/path]"
 * then "|attribute[=value]"s. */
static int parse_item(const char *item, size_t n, vyre__remote *r, vyre_error *err)
{
    char shown[VYRE_REMOTE_URL_MAX * 2];
    display_of(item, n, shown, sizeof shown);
    parse_ctx pc = {shown, err};
    memset(r, 0, sizeof *r);
    r->info.connect_timeout_ms = VYRE_REMOTE_CONNECT_TIMEOUT_MS;
    r->info.operation_timeout_ms = VYRE_REMOTE_OPERATION_TIMEOUT_MS;
    r->info.max_object_bytes = BLOB_FILE_MAX;

    const char *bar = memchr(item, '|', n);
    size_t un = bar ? (size_t)(bar - item) : n;
    if (un >= VYRE_REMOTE_URL_MAX)
        return BAD(&pc, VYRE_ETOOBIG, "use a shorter URL", "URL is %zu bytes long, more than %d",
                   un, VYRE_REMOTE_URL_MAX - 1);
    const char *auth = NULL;
    int rc = parse_scheme(&pc, item, un, r, &auth);
    if (rc)
        return rc;
    const char *end = item + un;
    const char *slash = memchr(auth, '/', (size_t)(end - auth));
    const char *auth_end = slash ? slash : end;
    const char *at = NULL;
    for (const char *p = auth; p < auth_end; p++)
        if (*p == '@')
            at = p;
    if (at && (rc = parse_userinfo(&pc, r, auth, (size_t)(at - auth))))
        return rc;
    if ((rc = parse_host_port(&pc, r, at ? at + 1 : auth, auth_end)))
        return rc;
    const char *path = slash ? slash : end;
    if ((rc = parse_path(&pc, r, path, (size_t)(end - path))))
        return rc;
    if ((rc = parse_attrs(&pc, r, bar, item + n)))
        return rc;
    return finish_item(&pc, r);
}

void vyre_remote_list_free(vyre_remote_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        l->r[i].ops->close(&l->r[i]);
        pthread_mutex_destroy(&l->r[i].mu);
    }
    /* Secrets do not outlive the list. */
    memset(l, 0, sizeof *l);
    free(l);
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One item for display: the password of its user information (after the
 * ':' of "user:password@") as "***", as vyre_remote_info.url shows it. */
static void mask_item(const char *item, size_t n, char *out, size_t size)
{
    const char *sep = NULL;
    for (size_t i = 0; i + 2 < n; i++)
        if (item[i] == ':' && item[i + 1] == '/' && item[i + 2] == '/') {
            sep = item + i + 3;
            break;
        }
    const char *at = NULL, *colon = NULL;
    for (const char *p = sep; p && p < item + n && *p != '/' && *p != '|'; p++)
        if (*p == '@')
            at = p;
    for (const char *p = sep; at && p < at; p++)
        if (*p == ':') {
            colon = p;
            break;
        }
    if (colon)
        snprintf(out, size, "%.*s:***%.*s", (int)(colon - item), item, (int)(item + n - at), at);
    else
        snprintf(out, size, "%.*s", (int)n, item);
}

void vyre__remote_spec_mask(const char *spec, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    buf[0] = '\0';
    size_t o = 0;
    for (const char *p = spec ? spec : ""; *p;) {
        while (is_blank(*p))
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && !is_blank(*q))
            q++;
        char shown[VYRE_REMOTE_URL_MAX * 2 + 8];
        mask_item(p, (size_t)(q - p), shown, sizeof shown);
        int w = snprintf(buf + o, size - o, "%s%s", o ? " " : "", shown);
        if (w < 0 || (size_t)w >= size - o) {
            buf[o] = '\0'; /* never half an item: a cut could show a secret's start */
            return;
        }
        o += (size_t)w;
        p = q;
    }
}

int vyre_remote_list_parse(const char *spec, vyre_remote_list **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_remote_list_parse: NULL out");
    *out = NULL;
    vyre_remote_list *l = calloc(1, sizeof *l);
    if (!l)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory parsing remote stores");
    const char *p = spec ? spec : "";
    while (*p) {
        while (is_blank(*p))
            p++;
        if (!*p)
            break;
        const char *q = p;
        while (*q && !is_blank(*q))
            q++;
        if (l->n == VYRE_REMOTE_MAX) {
            vyre_remote_list_free(l);
            return vyre__fail(err, VYRE_ETOOBIG, "list at most 8 remote stores",
                              "more than %d remote stores", VYRE_REMOTE_MAX);
        }
        vyre__remote *r = &l->r[l->n];
        int rc = parse_item(p, (size_t)(q - p), r, err);
        if (rc) {
            memset(r, 0, sizeof *r);
            vyre_remote_list_free(l);
            return rc;
        }
        r->backoff_ns = (int64_t)VYRE_REMOTE_BACKOFF_MS * 1000000;
        pthread_mutex_init(&r->mu, NULL);
        l->n++;
        p = q;
    }
    *out = l;
    return VYRE_OK;
}

size_t vyre_remote_list_count(const vyre_remote_list *l)
{
    return l ? l->n : 0;
}

const vyre_remote_info *vyre_remote_list_info(const vyre_remote_list *l, size_t i)
{
    return l && i < l->n ? &l->r[i].info : NULL;
}
