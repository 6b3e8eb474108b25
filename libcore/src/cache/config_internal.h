/*
 * config_internal.h - the configuration's layout and the calls that only
 * libcore and its tests use (not exported; SQLite keeps its SQLITE_TEST
 * hooks in sqliteInt.h the same way). Tests reach it through
 * vyrecore_internal.
 */
#ifndef VYRE_CACHE_CONFIG_INTERNAL_H
#define VYRE_CACHE_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/config.h"

#define VYRE_CONFIG_MAX_PROBLEMS 8

/* vyre/config.h's opaque configuration: libcore reads its fields; programs
 * outside it read the getters (config_get.c). */
struct vyre_config {
    uint64_t max_size;                               /* bytes; 0: no limit */
    int64_t max_age_ns;                              /* 0: off */
    int umask;                                       /* -1: not set */
    int read_only;                                   /* 0 or 1 */
    int64_t quarantine_max_age_ns;                   /* 0: kept */
    char remote_storage[VYRE_CONFIG_LONG_VALUE_MAX]; /* remote list as written; "": none */
    uint64_t triton_max_size;                        /* bytes; 0: no limit */
    uint64_t inductor_max_size;                      /* bytes; 0: no limit */
    char results_db[VYRE_CONFIG_LONG_VALUE_MAX];     /* vyre/results.h; "": the default */
    vyre_config_where where[VYRE_CONF_N_KEYS];
    /* What loading met and went past, in order; the caller prints them
     * (libcore never does). n_problems may exceed VYRE_CONFIG_MAX_PROBLEMS:
     * the ones past it are counted, not kept. */
    size_t n_problems;
    vyre_config_problem problems[VYRE_CONFIG_MAX_PROBLEMS];
};

/* The built-in defaults, in a vyre_config the caller owns (one embedded in
 * a cache handle, one on a test's stack); vyre_config_new is the public
 * way. */
void vyre__config_init(vyre_config *c);

/* "VYRE_CACHE_MAX_SIZE" for key, into buf ("VYRE_REMOTE_CACHE" for
 * remote_storage). */
void vyre__config_env_name(int key, char *buf, size_t size);

/* Sets key (by name) from its text. file/line say where it was written
 * (for messages and vyre_config_where; file may be NULL). Unknown key or
 * bad value: VYRE_ECONFIG with "file:line: ..." and a hint; c unchanged. */
int vyre__config_set(vyre_config *c, const char *key, const char *value, vyre_config_origin origin,
                     const char *file, unsigned line, vyre_error *err);

/* Parses a whole file's text (len bytes, need not be NUL-terminated). The
 * first error stops it (VYRE_ECONFIG, file:line); keys set before it stay
 * set. An unknown key is a warning in c->problems and the line is skipped.
 * The text is trusted (ownership is checked by the loaders, which know the
 * file). */
int vyre__config_parse(vyre_config *c, const char *text, size_t len, vyre_config_origin origin,
                       const char *file, vyre_error *err);

#endif /* VYRE_CACHE_CONFIG_INTERNAL_H */
