/*
 * config.c - the pipeline cache's configuration: layers, the ccache-like
 * "key = value" file format, and rewriting the cache's vyre.conf in place
 * (vyre/config.h). Pure host code: base/ and the public headers only;
 * remote_storage is checked by the remote-list parser (cache/remote/spec.c).
 */
#include "vyre/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/config_internal.h"
#include "cache/remote/remote_internal.h"
#include "vyre/remote.h"
#include "vyre/units.h"

static const struct {
    const char *name;
    const char *help;
} k_keys[VYRE_CONF_N_KEYS] = {
    [VYRE_CONF_MAX_SIZE] = {"max_size", "cache size limit (5G, 500M; a size without a unit is "
                                        "GiB; 0: none); a put over it cleans up to 90%, least "
                                        "recently used first"},
    [VYRE_CONF_MAX_AGE] = {"max_age", "cleanup also removes blobs unused for longer (30d, 12h; "
                                      "0: off)"},
    [VYRE_CONF_UMASK] = {"umask", "octal umask for what the cache creates (002 for a group's "
                                  "cache); unset: the process's"},
    [VYRE_CONF_READ_ONLY] = {"read_only", "true: puts and prunes are refused, gets work"},
    [VYRE_CONF_QUARANTINE_MAX_AGE] = {"quarantine_max_age",
                                      "prune and cleanup remove quarantined files older than "
                                      "this (0: keep them)"},
    [VYRE_CONF_REMOTE_STORAGE] = {"remote_storage",
                                  "remote stores shared by a fleet: URLs separated by spaces, "
                                  "each with |attributes (http://cache.lan:8080/vyre, "
                                  "redis://cache.lan|read-only); empty: none"},
    [VYRE_CONF_TRITON_MAX_SIZE] = {"triton_max_size",
                                   "the size Triton's kernel cache is pruned to, least recently "
                                   "used groups first (10G, 500M; 0: no limit)"},
    [VYRE_CONF_INDUCTOR_MAX_SIZE] = {"inductor_max_size",
                                     "the size TorchInductor's cache is pruned to (10G, 500M; "
                                     "0: no limit)"},
    [VYRE_CONF_RESULTS_DB] = {"results_db", "where benchmark results go: an absolute path or a "
                                            "postgresql://user@host:port/db URL"},
};

static const char k_keys_hint[] =
    "the keys are max_size, max_age, umask, read_only, quarantine_max_age, remote_storage, "
    "triton_max_size, inductor_max_size and results_db";

void vyre__config_init(vyre_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_size = VYRE_CONFIG_DEFAULT_MAX_SIZE;
    c->max_age_ns = 0;
    c->umask = -1;
    c->read_only = 0;
    c->quarantine_max_age_ns = VYRE_CONFIG_DEFAULT_QUARANTINE_MAX_AGE_NS;
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++) {
        c->where[k].origin = VYRE_CONF_FROM_DEFAULT;
        vyre_config_format_value(c, k, c->where[k].text, sizeof c->where[k].text);
    }
}

const char *vyre_config_key_name(int key)
{
    return key >= 0 && key < VYRE_CONF_N_KEYS ? k_keys[key].name : NULL;
}

int vyre_config_key_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++)
        if (strcmp(name, k_keys[k].name) == 0)
            return k;
    return -1;
}

void vyre__config_env_name(int key, char *buf, size_t size)
{
    if (key == VYRE_CONF_REMOTE_STORAGE) {
        snprintf(buf, size, "%s", VYRE_REMOTE_ENV); /* the and ccache-like name */
        return;
    }
    if (key == VYRE_CONF_RESULTS_DB) {
        snprintf(buf, size, "VYRE_RESULTS_DB"); /* not a cache setting */
        return;
    }
    const char *n = vyre_config_key_name(key);
    int w = snprintf(buf, size, "VYRE_CACHE_%s", n ? n : "?");
    if (w < 0)
        return;
    for (char *p = buf + strlen("VYRE_CACHE_"); (size_t)(p - buf) < size && *p; p++)
        *p = (char)toupper((unsigned char)*p);
}

/* "file:line: " or "file: " or "" for messages. */
static void where_prefix(const char *file, unsigned line, char *buf, size_t size)
{
    if (!file || !*file)
        buf[0] = '\0';
    else if (line)
        snprintf(buf, size, "%s:%u: ", file, line);
    else
        snprintf(buf, size, "%s: ", file);
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

/* An octal umask: -1 when it is not one; -2 (e's message says why) when
 * it takes the owner's own bits away (0777 makes the cache unusable, with
 * a misleading "read-only" later) or lets others write (000 in a shared
 * vyre.conf made blobs and the index 0666). Group write is allowed: a
 * group's cache needs 002. */
static int parse_umask(const char *s, int *out, vyre_error *e)
{
    size_t n = strlen(s);
    if (n == 0 || n > 4)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '7')
            return -1;
        v = v * 8 + (s[i] - '0');
    }
    if (v > 0777)
        return -1;
    if (v & 0700) {
        vyre__fail(e, VYRE_ECONFIG, NULL, "it takes the owner's own permissions away");
        return -2;
    }
    if (!(v & 0002)) {
        vyre__fail(e, VYRE_ECONFIG, NULL, "it lets other users write the cache");
        return -2;
    }
    *out = v;
    return 0;
}

/* An age, or a bare "0" for off. */
static int parse_age(const char *s, int64_t *out, vyre_error *e)
{
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return VYRE_OK;
    }
    return vyre_parse_duration(s, out, e);
}

int vyre__config_set(vyre_config *c, const char *key, const char *value, vyre_config_origin origin,
                     const char *file, unsigned line, vyre_error *err)
{
    char at[VYRE_CONFIG_WHERE_MAX + 32];
    where_prefix(file, line, at, sizeof at);
    if (!c || !key || !value)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__config_set: NULL argument");
    int k = vyre_config_key_find(key);
    if (k < 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_CONFIG,
                            vyre__fail(err, VYRE_ECONFIG, k_keys_hint,
                                       /* bounded: excerpt of an unknown key */
                                       "%sunknown configuration key '%.64s'", at, key));
    int remote = k == VYRE_CONF_REMOTE_STORAGE || k == VYRE_CONF_RESULTS_DB; /* long, masked */
    /* An empty remote_storage: no remote stores; an empty results_db: the
     * default file (so a layer can undo what a lower one set). */
    if (!*value && k != VYRE_CONF_REMOTE_STORAGE && k != VYRE_CONF_RESULTS_DB)
        return vyre__fail(err, VYRE_ECONFIG, k_keys[k].help, "%s%s has no value", at, key);
    if (strlen(value) >= (remote ? VYRE_CONFIG_LONG_VALUE_MAX : VYRE_CONFIG_VALUE_MAX))
        return vyre__fail(err, VYRE_ECONFIG, k_keys[k].help, "%svalue of %s is too long", at, key);
    vyre_error e;
    vyre_error_clear(&e);
    int bad = 0;
    const char *hint = NULL;
    vyre_config *n = malloc(sizeof *n); /* large (remote_storage): not on the stack */
    if (!n)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory setting %s", key);
    *n = *c;
    switch (k) {
    case VYRE_CONF_MAX_SIZE:
        bad = vyre_parse_cache_size(value, &n->max_size, &e) != VYRE_OK;
        hint = "a size without a unit is GiB: write a size such as 5G, 500M or 1.5GiB, or 0 "
               "for no limit";
        break;
    case VYRE_CONF_TRITON_MAX_SIZE:
    case VYRE_CONF_INDUCTOR_MAX_SIZE:
        bad = vyre_parse_cache_size(value,
                                    k == VYRE_CONF_TRITON_MAX_SIZE ? &n->triton_max_size
                                                                   : &n->inductor_max_size,
                                    &e) != VYRE_OK;
        hint = "a size without a unit is GiB: write a size such as 10G or 500M, or 0 for no "
               "limit";
        break;
    case VYRE_CONF_MAX_AGE:
        bad = parse_age(value, &n->max_age_ns, &e) != VYRE_OK;
        hint = "write an age such as 30d, 12h or 2w, or 0 for off";
        break;
    case VYRE_CONF_QUARANTINE_MAX_AGE:
        bad = parse_age(value, &n->quarantine_max_age_ns, &e) != VYRE_OK;
        hint = "write an age such as 7d or 12h, or 0 to keep quarantined files";
        break;
    case VYRE_CONF_UMASK:
        bad = parse_umask(value, &n->umask, &e) != 0;
        hint = e.message[0] ? "a umask must keep the owner's rwx and deny others write: write 002 "
                              "for a group's cache, 022 or 077 otherwise"
                            : "write an octal umask such as 002, 022 or 077";
        break;
    case VYRE_CONF_READ_ONLY:
        bad = parse_bool(value, &n->read_only) != 0;
        hint = "write true or false";
        break;
    case VYRE_CONF_REMOTE_STORAGE: {
        /* Parsed as the cache will parse it (token files read and checked
         * now), so a bad store is reported where it was written. */
        vyre_remote_list *l = NULL;
        bad = vyre_remote_list_parse(value, &l, &e) != VYRE_OK;
        vyre_remote_list_free(l);
        if (bad) {
            free(n);
            return vyre__remedy(err, VYRE_REMEDY_CACHE_CONFIG,
                                vyre__fail(err, VYRE_ECONFIG, e.hint[0] ? e.hint : k_keys[k].help,
                                           "%sbad value for remote_storage: %s", at, e.message));
        }
        vyre__strlcpy(n->remote_storage, value, sizeof n->remote_storage);
        break;
    }
    case VYRE_CONF_RESULTS_DB:
        bad = value[0] && value[0] != '/' && strncmp(value, "postgresql://", 13) != 0 &&
              strncmp(value, "postgres://", 11) != 0;
        hint = "write an absolute path or a postgresql://user@host:port/db URL (empty: the "
               "default file)";
        if (!bad)
            vyre__strlcpy(n->results_db, value, sizeof n->results_db);
        break;
    default:
        break;
    }
    if (bad) {
        free(n);
        return vyre__remedy(err, VYRE_REMEDY_CACHE_CONFIG,
                            vyre__fail(err, VYRE_ECONFIG, hint, "%sbad value '%s' for %s%s%s", at,
                                       value, key, e.message[0] ? ": " : "", e.message));
    }
    n->where[k].origin = origin;
    vyre__strlcpy(n->where[k].file, file ? file : "", sizeof n->where[k].file);
    n->where[k].line = line;
    if (remote)
        vyre__remote_spec_mask(value, n->where[k].text, sizeof n->where[k].text);
    else
        vyre__strlcpy(n->where[k].text, value, sizeof n->where[k].text);
    *c = *n;
    free(n);
    return VYRE_OK;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* How one load goes: the flags, the file's trust, the first error kept. */
typedef struct load_ctx {
    unsigned flags;
    int foreign;  /* the file is owned by neither the user nor root */
    uid_t owner;  /* its owner, for the refusal */
    int first_rc; /* VYRE_CONFIG_KEEP_GOING: the first error gone past */
    vyre_error first;
} load_ctx;

static void add_problem(vyre_config *c, int is_error, int key, const vyre_error *e)
{
    if (c->n_problems < VYRE_CONFIG_MAX_PROBLEMS) {
        c->problems[c->n_problems].is_error = is_error;
        c->problems[c->n_problems].key = key;
        c->problems[c->n_problems].error = *e;
    }
    c->n_problems++;
}

/* After a line or layer failed with rc (detail in e) on key (-1: none):
 * 0 to go on (with VYRE_CONFIG_KEEP_GOING the problem is kept in c and the
 * key left as the layers below set it), else rc with e copied to err. */
static int keep_going(vyre_config *c, load_ctx *ctx, int key, int rc, const vyre_error *e,
                      vyre_error *err)
{
    if (!rc)
        return 0;
    if (!ctx || !(ctx->flags & VYRE_CONFIG_KEEP_GOING) || rc == VYRE_ENOMEM || rc == VYRE_EINVAL) {
        if (err)
            *err = *e;
        return rc;
    }
    add_problem(c, 1, key, e);
    if (!ctx->first_rc) {
        ctx->first_rc = rc;
        ctx->first = *e;
    }
    return 0;
}

/* An unknown key in a file: a warning with the nearest key, the line
 * ignored. (An error here made every command fail, `config` included,
 * for a typo in the user's file: issue 22.) */
static void unknown_key(vyre_config *c, const char *at, const char *key)
{
    const char *names[VYRE_CONF_N_KEYS];
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++)
        names[k] = k_keys[k].name;
    const char *near = vyre_nearest_word(key, names, VYRE_CONF_N_KEYS);
    char hint[96];
    if (near)
        snprintf(hint, sizeof hint, "did you mean '%s'?", near);
    vyre_error w;
    vyre__fail(&w, VYRE_ECONFIG, near ? hint : k_keys_hint,
               /* bounded: excerpt of an unknown key */
               "%sunknown configuration key '%.64s' (the line is ignored)", at, key);
    add_problem(c, 0, -1, &w);
}

/* Keys that make the tool read the user's files or send anything: taken
 * only from files the user or root owns (vyre/config.h). */
static int needs_trust(int k)
{
    return k == VYRE_CONF_REMOTE_STORAGE || k == VYRE_CONF_RESULTS_DB;
}

static int refuse_foreign(const char *at, const char *key, uid_t owner, vyre_error *e)
{
    char name[64] = "";
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r(owner, &pw, buf, sizeof buf, &res) == 0 && res)
        /* bounded: a user name from getpwuid */
        snprintf(name, sizeof name, "'%.48s' ", res->pw_name);
    if (strcmp(key, "results_db") == 0)
        return vyre__fail(e, VYRE_EUNSAFE,
                          "results_db makes the tool send your database password to the server "
                          "it names, so a vyre.conf may set it only when you or root own it: have "
                          "root take the file over (chown root), or set it in your own "
                          "configuration file ($XDG_CONFIG_HOME/vyre/vyre.conf), in "
                          "VYRE_RESULTS_DB or with --db",
                          "%s%s refused: the file is owned by %s(uid %u), not by you or root", at,
                          key, name, (unsigned)owner);
    return vyre__fail(e, VYRE_EUNSAFE,
                      "a vyre.conf may name remote stores and token files only when you or root "
                      "own it: have root take the file over (chown root), or set the key in your "
                      "own configuration file ($XDG_CONFIG_HOME/vyre/vyre.conf) or in "
                      "VYRE_REMOTE_CACHE",
                      "%s%s refused: the file is owned by %s(uid %u), not by you or root", at, key,
                      name, (unsigned)owner);
}

/* Splits line start..end (blanks trimmed) into key and value: 0, or an
 * error for a line that is not "key = value". */
static int split_line(const char *text, size_t start, size_t end, const char *at, char *key,
                      size_t key_size, char *value, size_t value_size, vyre_error *e)
{
    const char *eq = memchr(text + start, '=', end - start);
    if (!eq)
        return vyre__fail(e, VYRE_ECONFIG, "write 'key = value', e.g. 'max_size = 5G'",
                          "%sexpected 'key = value', got '%.*s'", at,
                          (int)(end - start > 64 ? 64 : end - start), text + start);
    size_t ke = (size_t)(eq - text), vs = ke + 1;
    while (ke > start && is_blank(text[ke - 1]))
        ke--;
    while (vs < end && is_blank(text[vs]))
        vs++;
    if (ke == start)
        return vyre__fail(e, VYRE_ECONFIG, "write 'key = value', e.g. 'max_size = 5G'",
                          "%smissing key before '='", at);
    if (ke - start >= key_size) {
        /* Too long for any key: shown cut, as an unknown key. */
        /* bounded: excerpt, marked "...", of a key */
        snprintf(key, key_size, "%.32s...", text + start);
        value[0] = '\0';
        return VYRE_OK;
    }
    memcpy(key, text + start, ke - start);
    key[ke - start] = '\0';
    if (end - vs >= value_size)
        return vyre__fail(e, VYRE_ECONFIG, NULL, "%svalue of '%s' is too long", at, key);
    memcpy(value, text + vs, end - vs);
    value[end - vs] = '\0';
    return VYRE_OK;
}

/* One line (start..end, blanks trimmed, not a comment). */
static int parse_line(vyre_config *c, const char *text, size_t start, size_t end,
                      vyre_config_origin origin, const char *file, unsigned line, load_ctx *ctx,
                      vyre_error *err)
{
    char at[VYRE_CONFIG_WHERE_MAX + 32];
    where_prefix(file, line, at, sizeof at);
    vyre_error e;
    vyre_error_clear(&e);
    char key[64] = "", value[VYRE_CONFIG_LONG_VALUE_MAX];
    value[0] = '\0';
    int rc;
    if (memchr(text + start, '\0', end - start))
        rc = vyre__fail(&e, VYRE_ECONFIG, "a configuration file is text", "%sNUL byte in the line",
                        at);
    else
        rc = split_line(text, start, end, at, key, sizeof key, value, sizeof value, &e);
    if (rc)
        return keep_going(c, ctx, -1, rc, &e, err);
    int k = vyre_config_key_find(key);
    if (k < 0) {
        unknown_key(c, at, key);
        return VYRE_OK;
    }
    /* Refused before the value is parsed: parsing remote_storage reads its
     * token file. */
    if (ctx && ctx->foreign && needs_trust(k))
        rc = refuse_foreign(at, key, ctx->owner, &e);
    else
        rc = vyre__config_set(c, key, value, origin, file, line, &e);
    return keep_going(c, ctx, k, rc, &e, err);
}

static int parse_text(vyre_config *c, const char *text, size_t len, vyre_config_origin origin,
                      const char *file, load_ctx *ctx, vyre_error *err)
{
    unsigned line = 0;
    size_t i = 0;
    while (i < len) {
        line++;
        size_t start = i;
        while (i < len && text[i] != '\n')
            i++;
        size_t end = i;
        if (i < len)
            i++; /* the newline */
        while (start < end && is_blank(text[start]))
            start++;
        while (end > start && is_blank(text[end - 1]))
            end--;
        if (start == end || text[start] == '#')
            continue;
        int rc = parse_line(c, text, start, end, origin, file, line, ctx, err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

int vyre__config_parse(vyre_config *c, const char *text, size_t len, vyre_config_origin origin,
                       const char *file, vyre_error *err)
{
    if (!c || (len && !text))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__config_parse: NULL argument");
    return parse_text(c, text, len, origin, file, NULL, err);
}

/* Reads a whole small file from fd. */
static int read_fd(int fd, const char *path, char **out, size_t *len, vyre_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat '%s': %s", path,
                          strerror(e));
    }
    if (!S_ISREG(st.st_mode))
        return vyre__fail(err, VYRE_ECONFIG, "make it a regular file, or remove it",
                          "configuration file '%s' is not a regular file", path);
    if (st.st_size > VYRE_CONFIG_MAX_FILE)
        return vyre__fail(err, VYRE_ECONFIG, "a configuration file holds a few lines",
                          "configuration file '%s' is larger than %d bytes", path,
                          VYRE_CONFIG_MAX_FILE);
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", path);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read '%s': %s", path,
                              strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > (size_t)st.st_size) {
            free(buf);
            return vyre__fail(err, VYRE_ECONFIG, NULL, "configuration file '%s' grew while read",
                              path);
        }
    }
    *out = buf;
    *len = n;
    return VYRE_OK;
}

/* Loads path; nofollow: a symlink there is refused (the cache's own file).
 * ctx (may be NULL) carries the flags; the file's owner decides its trust. */
static int load_file(vyre_config *c, const char *path, vyre_config_origin origin, int nofollow,
                     load_ctx *ctx, vyre_error *err)
{
    vyre_error e;
    vyre_error_clear(&e);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) {
        int en = errno;
        if (en == ENOENT || en == ENOTDIR)
            return VYRE_OK;
        /* A home directory we may not search (a service running with
         * another user's HOME): there is no file of ours to read. A file
         * we can see but not read is still an error. */
        struct stat st;
        if (en == EACCES && stat(path, &st) != 0 && errno == EACCES)
            return VYRE_OK;
        int rc;
        if (en == ELOOP && nofollow)
            rc = vyre__fail(&e, VYRE_EUNSAFE,
                            "a cache's vyre.conf is never followed through a link: make it a "
                            "regular file",
                            "configuration file '%s' is a symlink", path);
        else
            rc = vyre__fail(&e, vyre__errno_code(en), NULL, "cannot open '%s': %s", path,
                            strerror(en));
        return keep_going(c, ctx, -1, rc, &e, err);
    }
    load_ctx local = {0};
    load_ctx *lc = ctx ? ctx : &local;
    struct stat st;
    lc->foreign = 0;
    if (fstat(fd, &st) == 0 && st.st_uid != geteuid() && st.st_uid != 0) {
        lc->foreign = 1;
        lc->owner = st.st_uid;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = read_fd(fd, path, &buf, &len, &e);
    close(fd);
    if (rc)
        return keep_going(c, ctx, -1, rc, &e, err);
    rc = parse_text(c, buf, len, origin, path, lc, err);
    lc->foreign = 0;
    free(buf);
    return rc;
}

static int load_env(vyre_config *c, load_ctx *ctx, vyre_error *err)
{
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++) {
        char name[64];
        vyre__config_env_name(k, name, sizeof name);
        /* secure_getenv: a set-id program linking libvyrecore takes no
         * remote store or umask from whoever started it. */
        const char *v = secure_getenv(name);
        if (!v)
            continue;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre__config_set(c, k_keys[k].name, v, VYRE_CONF_FROM_ENV, name, 0, &e);
        if (rc)
            snprintf(e.hint, sizeof e.hint, "fix or unset %s", name);
        if ((rc = keep_going(c, ctx, k, rc, &e, err)))
            return rc;
    }
    return VYRE_OK;
}

int vyre_config_user_path(char *buf, size_t size, vyre_error *err)
{
    /* In a set-id program (AT_SECURE, when secure_getenv returns NULL)
     * XDG_CONFIG_HOME and HOME are the invoker's: no file is picked by
     * them. vyre__xdg_path reads them with getenv. */
    if (getauxval(AT_SECURE))
        return vyre__fail(err, VYRE_EENV, NULL,
                          "a set-id program reads no user configuration file");
    return vyre__xdg_path("XDG_CONFIG_HOME", ".config", "vyre/" VYRE_CONFIG_FILE_NAME, buf, size,
                          err);
}

/* One -o "key=value". */
static int load_override(vyre_config *c, const char *o, load_ctx *ctx, vyre_error *err)
{
    vyre_error e;
    vyre_error_clear(&e);
    const char *eq = o ? strchr(o, '=') : NULL;
    char key[64];
    int rc, k = -1;
    if (!eq || eq == o)
        rc = vyre__fail(&e, VYRE_ECONFIG, "write -o key=value, e.g. -o max_size=10G",
                        "-o '%s': expected key=value", o ? o : "");
    else if ((size_t)(eq - o) >= sizeof key)
        /* bounded: excerpt of an unknown key */
        rc = vyre__fail(&e, VYRE_ECONFIG, k_keys_hint, "-o '%.64s': unknown key", o);
    else {
        memcpy(key, o, (size_t)(eq - o));
        key[eq - o] = '\0';
        rc = vyre__config_set(c, key, eq + 1, VYRE_CONF_FROM_OVERRIDE, "-o", 0, &e);
        k = vyre_config_key_find(key);
    }
    return keep_going(c, ctx, k, rc, &e, err);
}

int vyre_config_load(vyre_config *c, const char *cache_root, const char *const *overrides,
                     size_t n_overrides, unsigned flags, vyre_error *err)
{
    if (!c)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_config_load: NULL argument");
    vyre__config_init(c);
    load_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory loading the configuration");
    ctx->flags = flags;
    char path[4096];
    int rc = VYRE_OK;
    if (vyre_config_user_path(path, sizeof path, NULL) == VYRE_OK)
        rc = load_file(c, path, VYRE_CONF_FROM_USER_FILE, 0, ctx, err);
    if (!rc && cache_root && *cache_root) {
        rc = vyre__path_join(path, sizeof path, cache_root, VYRE_CONFIG_FILE_NAME, err);
        if (!rc)
            rc = load_file(c, path, VYRE_CONF_FROM_CACHE_FILE, 1, ctx, err);
    }
    if (!rc)
        rc = load_env(c, ctx, err);
    for (size_t i = 0; !rc && i < n_overrides; i++)
        rc = load_override(c, overrides[i], ctx, err);
    if (!rc && ctx->first_rc) {
        rc = ctx->first_rc;
        if (err)
            *err = ctx->first;
    }
    free(ctx);
    return rc;
}

/* A size in the largest binary unit that divides it exactly. */
static void format_size_exact(uint64_t v, char *buf, size_t size)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && v && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0 && v)
        snprintf(buf, size, "%" PRIu64 "B", v); /* a bare number reads back as GiB */
    else if (u < 0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%" PRIu64 "%c", v, units[u]);
}

void vyre_config_format_value(const vyre_config *c, int key, char *buf, size_t size)
{
    if (!size)
        return;
    buf[0] = '\0';
    switch (key) {
    case VYRE_CONF_MAX_SIZE:
        format_size_exact(c->max_size, buf, size);
        break;
    case VYRE_CONF_TRITON_MAX_SIZE:
        format_size_exact(c->triton_max_size, buf, size);
        break;
    case VYRE_CONF_INDUCTOR_MAX_SIZE:
        format_size_exact(c->inductor_max_size, buf, size);
        break;
    case VYRE_CONF_MAX_AGE:
        vyre_format_duration_exact(c->max_age_ns, buf, size);
        break;
    case VYRE_CONF_QUARANTINE_MAX_AGE:
        vyre_format_duration_exact(c->quarantine_max_age_ns, buf, size);
        break;
    case VYRE_CONF_UMASK:
        if (c->umask < 0)
            snprintf(buf, size, "unset");
        else
            snprintf(buf, size, "%03o", (unsigned)c->umask);
        break;
    case VYRE_CONF_READ_ONLY:
        snprintf(buf, size, "%s", c->read_only ? "true" : "false");
        break;
    case VYRE_CONF_REMOTE_STORAGE:
        vyre__remote_spec_mask(c->remote_storage, buf, size);
        break;
    case VYRE_CONF_RESULTS_DB: /* user:password@ masked */
        vyre__remote_spec_mask(c->results_db, buf, size);
        break;
    default:
        break;
    }
}

void vyre_config_format_where(const vyre_config *c, int key, char *buf, size_t size)
{
    if (key < 0 || key >= VYRE_CONF_N_KEYS) {
        snprintf(buf, size, "?");
        return;
    }
    const vyre_config_where *w = &c->where[key];
    switch (w->origin) {
    case VYRE_CONF_FROM_DEFAULT:
        snprintf(buf, size, "default");
        break;
    case VYRE_CONF_FROM_ENV:
        snprintf(buf, size, "env %s", w->file);
        break;
    case VYRE_CONF_FROM_OVERRIDE:
        snprintf(buf, size, "-o");
        break;
    default:
        snprintf(buf, size, "%s:%u", w->file, w->line);
        break;
    }
}

/* ---- writing the cache's file ------------------------------------------ */

/* 1 when the line (start..end) sets key. */
static int line_sets(const char *s, size_t start, size_t end, const char *key)
{
    while (start < end && is_blank(s[start]))
        start++;
    size_t kl = strlen(key);
    if (end - start < kl || memcmp(s + start, key, kl) != 0)
        return 0;
    size_t p = start + kl;
    while (p < end && is_blank(s[p]))
        p++;
    return p < end && s[p] == '=';
}

/* The current text of path (none: empty, *mode left as it is), checked as
 * a whole first, so that a broken file is reported rather than silently
 * kept broken. *old is malloc'ed (NULL when empty). */
static int read_current(const char *path, char **old, size_t *len, mode_t *mode, vyre_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            *mode = st.st_mode & 0666;
        int rc = read_fd(fd, path, old, len, err);
        close(fd);
        return rc;
    }
    if (errno == ENOENT)
        return VYRE_OK;
    int e = errno;
    return vyre__fail(err, e == ELOOP ? VYRE_EUNSAFE : vyre__errno_code(e),
                      e == ELOOP ? "make it a regular file" : NULL, "cannot open '%s': %s", path,
                      strerror(e));
}

/* old[0..len) to f with key set to value (NULL: its line removed). The
 * last line that sets key is replaced; earlier ones would be overridden by
 * it, so they are left as they are. */
static void write_edited(FILE *f, const char *old, size_t len, const char *key, const char *value)
{
    size_t last_s = SIZE_MAX, last_e = 0;
    for (size_t i = 0; i < len;) {
        size_t s = i;
        while (i < len && old[i] != '\n')
            i++;
        if (line_sets(old, s, i, key)) {
            last_s = s;
            last_e = i;
        }
        if (i < len)
            i++;
    }
    if (last_s == SIZE_MAX) {
        fwrite(old ? old : "", 1, len, f);
        if (value) {
            if (len && old[len - 1] != '\n')
                fputc('\n', f);
            fprintf(f, "%s = %s\n", key, value);
        }
        return;
    }
    fwrite(old, 1, last_s, f);
    size_t rest = last_e;
    if (value)
        fprintf(f, "%s = %s", key, value);
    else if (rest < len)
        rest++; /* drop the line's newline with it */
    fwrite(old + rest, 1, len - rest, f);
}

int vyre_config_write(const char *cache_root, const char *key, const char *value, int umask,
                      vyre_error *err)
{
    if (!cache_root || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_config_write: NULL argument");
    char path[4096], tmp[4096 + 64];
    int rc = vyre__path_join(path, sizeof path, cache_root, VYRE_CONFIG_FILE_NAME, err);
    if (rc)
        return rc;
    if (value) {
        vyre_config probe;
        vyre__config_init(&probe);
        if ((rc = vyre__config_set(&probe, key, value, VYRE_CONF_FROM_CACHE_FILE, NULL, 0, err)))
            return rc;
        if (strchr(value, '\n'))
            return vyre__fail(err, VYRE_ECONFIG, NULL, "a value is one line");
        if (vyre_config_key_find(key) == VYRE_CONF_UMASK)
            umask = probe.umask; /* the cache's umask from now on */
    } else if (vyre_config_key_find(key) < 0) {
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_CONFIG,
            /* bounded: excerpt of an unknown key */
            vyre__fail(err, VYRE_ECONFIG, k_keys_hint, "unknown configuration key '%.64s'", key));
    }
    if ((rc = vyre__mkdirs(cache_root, 0700, err)))
        return rc;
    char *old = NULL;
    size_t len = 0;
    mode_t mode = 0600;
    if ((rc = read_current(path, &old, &len, &mode, err)))
        return rc;
    /* With a umask, the file's mode is the cache's (0660 under 002), not
     * 0600 nor the process's: a group cache's members read its settings
     * (issue 33: 'config umask 002' locked them out). Never others: the file
     * may name remote_storage credentials. */
    if (umask >= 0)
        mode = (mode_t)0660 & ~(mode_t)umask;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (out >= 0 && umask >= 0 && fchmod(out, mode) != 0) {
        int e = errno;
        close(out);
        unlink(tmp);
        free(old);
        return vyre__fail(err, vyre__errno_code(e), NULL,
                          "cannot set the mode of '%s' for the cache's umask %03o: %s", tmp,
                          (unsigned)umask, strerror(e));
    }
    if (out < 0) {
        int e = errno;
        free(old);
        return vyre__fail(err, vyre__errno_code(e), "check the cache directory's permissions",
                          "cannot create '%s': %s", tmp, strerror(e));
    }
    FILE *f = fdopen(out, "w");
    if (!f) {
        close(out);
        unlink(tmp);
        free(old);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory writing '%s'", path);
    }
    write_edited(f, old, len, key, value);
    free(old);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        if (!bad)
            e = errno;
        unlink(tmp);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot write '%s': %s", path,
                          strerror(e));
    }
    return VYRE_OK;
}
