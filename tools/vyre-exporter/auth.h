/*
 * auth.h - HTTP basic authentication of vyre-exporter's requests against
 * the bcrypt hashes of --web.config.file's basic_auth_users, through the
 * system's crypt (libxcrypt). bcrypt costs tens of milliseconds by design,
 * so credentials that passed once are remembered (their SHA-256, never
 * the password) and a scraper's every-15-seconds request does not pay it
 * again; wrong ones are never remembered, so each guess pays it.
 * Comparisons of secrets are constant-time.
 */
#ifndef VYRE_EXPORTER_AUTH_H
#define VYRE_EXPORTER_AUTH_H

#include <stddef.h>

#include "webconfig.h"

typedef struct exp_auth exp_auth;

/* A checker of the n users (kept by pointer: they must outlive it).
 * NULL when out of memory. */
exp_auth *exp_auth_new(const exp_web_user *users, size_t n);
void exp_auth_free(exp_auth *a);

/* 1 when the Authorization header's value (NULL: no header) is "Basic "
 * and the base64 of "user:password" of one of the users, else 0.
 * Thread-safe. */
int exp_auth_check(exp_auth *a, const char *authorization);

#endif /* VYRE_EXPORTER_AUTH_H */
