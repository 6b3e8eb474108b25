/*
 * webconfig.c - see webconfig.h. libyaml's document API: the whole file
 * is loaded as a node tree, then walked; the error names the line of the
 * offending node (libyaml counts from 0).
 */
#include "webconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define PEM_MAX (1024 * 1024) /* a certificate chain is a few KiB */

/* What the walk needs: the document, the file's name and where errors go. */
typedef struct wc_ctx {
    yaml_document_t *doc;
    const char *path;
    char *err, *hint;
    size_t err_size, hint_size;
} wc_ctx;

static int fail(wc_ctx *w, const yaml_node_t *at, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(wc_ctx *w, const yaml_node_t *at, const char *hint, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(w->err, w->err_size, "web config '%s' line %lu: %s", w->path,
                 (unsigned long)at->start_mark.line + 1, what);
    else
        snprintf(w->err, w->err_size, "web config '%s': %s", w->path, what);
    snprintf(w->hint, w->hint_size, "%s", hint);
    return -1;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The node is a mapping, or null (an empty value: "key:"), which reads as
 * an empty mapping. */
static int is_mapping_or_null(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return 1;
    const char *s = scalar(n);
    return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (!*s || strcmp(s, "null") == 0 || strcmp(s, "~") == 0);
}

/* Reads a PEM file named in the config (relative to the config's folder)
 * into *out. */
static int read_pem(wc_ctx *w, const yaml_node_t *at, const char *key, const char *name, char **out)
{
    char full[4096];
    const char *slash = strrchr(w->path, '/');
    if (name[0] == '/' || !slash)
        snprintf(full, sizeof full, "%s", name);
    else
        snprintf(full, sizeof full, "%.*s/%s", (int)(slash - w->path), w->path, name);
    FILE *f = fopen(full, "rb");
    if (!f)
        return fail(w, at, "paths are relative to the web config file's folder",
                    "cannot read %s '%s': %s", key, full, strerror(errno));
    char *buf = malloc(PEM_MAX + 1);
    size_t n = buf ? fread(buf, 1, PEM_MAX + 1, f) : 0;
    fclose(f);
    if (!buf)
        return fail(w, at, "", "out of memory");
    buf[n > PEM_MAX ? PEM_MAX : n] = '\0';
    if (n > PEM_MAX || n != strlen(buf) || !strstr(buf, "-----BEGIN ")) {
        free(buf);
        return fail(w, at,
                    "give the PEM files a TLS server uses (openssl x509 -in FILE -text reads them)",
                    "%s '%s' is not a PEM file", key, full);
    }
    *out = buf;
    return 0;
}

static int tls_section(wc_ctx *w, const yaml_node_t *map, exp_web_config *c)
{
    static const char hint[] = "tls_server_config takes cert_file and key_file (PEM files, paths "
                               "relative to the web config file)";
    if (map->type != YAML_MAPPING_NODE)
        return fail(w, map, hint, "tls_server_config must be a mapping");
    const yaml_node_t *cert = NULL, *key = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        const char *name = scalar(k);
        const yaml_node_t **slot = NULL;
        if (name && strcmp(name, "cert_file") == 0)
            slot = &cert;
        else if (name && strcmp(name, "key_file") == 0)
            slot = &key;
        else
            return fail(w, k, hint, "tls_server_config: '%s' is not supported by vyre-exporter",
                        name ? name : "(not a name)");
        if (*slot)
            return fail(w, k, hint, "tls_server_config: '%s' given twice", name);
        if (!scalar(v) || !*scalar(v))
            return fail(w, v, hint, "tls_server_config: %s must be a file name", name);
        *slot = v;
    }
    if (!cert || !key)
        return fail(w, map, hint, "tls_server_config needs both cert_file and key_file");
    if (read_pem(w, cert, "cert_file", scalar(cert), &c->cert_pem) != 0 ||
        read_pem(w, key, "key_file", scalar(key), &c->key_pem) != 0)
        return -1;
    return 0;
}

/* A bcrypt hash as crypt(3) writes it: $2a$, $2b$ or $2y$, two cost
 * digits, '$', 53 characters of bcrypt's base64. */
static int is_bcrypt(const char *h)
{
    if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$' ||
        h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' || h[6] != '$')
        return 0;
    return strspn(h + 7, "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == 53;
}

static int users_section(wc_ctx *w, const yaml_node_t *map, exp_web_config *c)
{
    static const char hint[] =
        "basic_auth_users maps each user name to a bcrypt hash of its password, e.g. "
        "from: htpasswd -nBC 10 '' | tr -d ':\\n'";
    if (!is_mapping_or_null(map))
        return fail(w, map, hint, "basic_auth_users must be a mapping");
    if (map->type != YAML_MAPPING_NODE)
        return 0;
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    c->users = calloc(n ? n : 1, sizeof *c->users);
    if (!c->users)
        return fail(w, NULL, "", "out of memory");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        const char *name = scalar(k), *hash = scalar(v);
        if (!name || !*name || strchr(name, ':'))
            return fail(w, k, hint, "basic_auth_users: a user name must be text without ':'");
        for (size_t i = 0; i < c->nusers; i++)
            if (strcmp(c->users[i].name, name) == 0)
                return fail(w, k, hint, "basic_auth_users: user '%s' given twice", name);
        if (!hash || !is_bcrypt(hash))
            return fail(w, v, hint, "basic_auth_users: the password of '%s' is not a bcrypt hash",
                        name);
        exp_web_user *u = &c->users[c->nusers];
        u->name = strdup(name);
        u->hash = strdup(hash);
        if (!u->name || !u->hash) {
            free(u->name);
            free(u->hash);
            return fail(w, NULL, "", "out of memory");
        }
        c->nusers++;
    }
    return 0;
}

/* The top level: a mapping of the two sections (or an empty file). */
static int walk(wc_ctx *w, exp_web_config *c)
{
    static const char hint[] = "vyre-exporter reads tls_server_config (cert_file, key_file) and "
                               "basic_auth_users of the exporter toolkit's web config";
    const yaml_node_t *root = yaml_document_get_root_node(w->doc);
    if (!root || is_mapping_or_null(root)) {
        if (!root || root->type != YAML_MAPPING_NODE)
            return 0; /* empty: plain HTTP, no auth, as the toolkit reads it */
    } else {
        return fail(w, root, hint, "the top level must be a mapping");
    }
    int seen_tls = 0, seen_users = 0;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        const char *name = scalar(k);
        int rc;
        if (name && strcmp(name, "tls_server_config") == 0) {
            if (seen_tls++)
                return fail(w, k, hint, "'tls_server_config' given twice");
            rc = tls_section(w, v, c);
        } else if (name && strcmp(name, "basic_auth_users") == 0) {
            if (seen_users++)
                return fail(w, k, hint, "'basic_auth_users' given twice");
            rc = users_section(w, v, c);
        } else if (name && strcmp(name, "http_server_config") == 0) {
            return fail(w, k, hint, "'http_server_config' is not supported by vyre-exporter");
        } else {
            return fail(w, k, hint, "unknown key '%s'", name ? name : "(not a name)");
        }
        if (rc)
            return rc;
    }
    return 0;
}

int exp_web_config_load(const char *path, exp_web_config *c, char *err, size_t err_size, char *hint,
                        size_t hint_size)
{
    memset(c, 0, sizeof *c);
    wc_ctx w = {NULL, path, err, hint, err_size, hint_size};
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(&w, NULL, "give --web.config.file the path of a readable YAML file",
                    "cannot open: %s", strerror(errno));
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return fail(&w, NULL, "", "out of memory");
    }
    yaml_parser_set_input_file(&parser, f);
    int rc;
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, err_size, "web config '%s' line %lu: not valid YAML: %s", path,
                 (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "unreadable");
        snprintf(hint, hint_size, "check the indentation and quoting near that line");
        rc = -1;
    } else {
        w.doc = &doc;
        rc = walk(&w, c);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

void exp_web_config_release(exp_web_config *c)
{
    if (!c)
        return;
    free(c->cert_pem);
    free(c->key_pem);
    for (size_t i = 0; i < c->nusers; i++) {
        free(c->users[i].name);
        free(c->users[i].hash);
    }
    free(c->users);
    memset(c, 0, sizeof *c);
}
