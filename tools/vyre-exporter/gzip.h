/*
 * gzip.h - the gzip content coding of vyre-exporter's answers: whether a
 * request's Accept-Encoding takes gzip, and the gzip stream of a body
 * (zlib's deflate with the gzip wrapper, RFC 1952). Prometheus sends
 * "Accept-Encoding: gzip" on every scrape.
 */
#ifndef VYRE_EXPORTER_GZIP_H
#define VYRE_EXPORTER_GZIP_H

#include <stddef.h>

/* 1 when the Accept-Encoding value `ae` (NULL: no header) accepts gzip:
 * "gzip" or "x-gzip" listed with a q-value above 0, or "*" with one above
 * 0 and gzip not refused by name (RFC 9110, 12.5.3). Case-insensitive. */
int exp_accepts_gzip(const char *ae);

/* The gzip stream of in[0..len) into *out (malloc'ed: the caller frees)
 * and *out_len. Returns 0, or -1 (out of memory, zlib failure) with *out
 * NULL. */
int exp_gzip(const char *in, size_t len, char **out, size_t *out_len);

#endif /* VYRE_EXPORTER_GZIP_H */
