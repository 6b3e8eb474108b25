/*
 * webconfig.h - --web.config.file: the Prometheus exporter toolkit's web
 * configuration (YAML), as node_exporter and every exporter built on the
 * toolkit read it, limited to what vyre-exporter serves:
 *
 *   tls_server_config:
 *     cert_file: server.pem    # PEM, chain allowed; relative to this file
 *     key_file: server.key     # PEM, unencrypted
 *   basic_auth_users:
 *     prometheus: $2y$10$...   # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\n')
 *
 * Any other key, of the toolkit or not, is refused with the line it is on
 * and a hint, as is a value of the wrong kind, a hash that is not bcrypt,
 * a certificate or key that cannot be read or is not PEM: a web config
 * that would serve less securely than it says never starts a server.
 */
#ifndef VYRE_EXPORTER_WEBCONFIG_H
#define VYRE_EXPORTER_WEBCONFIG_H

#include <stddef.h>

typedef struct exp_web_user {
    char *name;
    char *hash; /* bcrypt: $2y$, $2b$ or $2a$, 60 characters */
} exp_web_user;

typedef struct exp_web_config {
    char *cert_pem; /* NUL-terminated PEM; NULL: plain HTTP */
    char *key_pem;
    exp_web_user *users; /* NULL and 0: no basic auth */
    size_t nusers;
} exp_web_config;

/* Reads the web configuration at path into *c (zeroed first; release it
 * with exp_web_config_release whatever the result). Returns 0, or -1 with
 * what is wrong in err ("web config 'F' line N: ...") and how to fix it in
 * hint. */
int exp_web_config_load(const char *path, exp_web_config *c, char *err, size_t err_size, char *hint,
                        size_t hint_size);
void exp_web_config_release(exp_web_config *c);

#endif /* VYRE_EXPORTER_WEBCONFIG_H */
