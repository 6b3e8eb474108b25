/*
 * config_internal.h - the configuration module's call that only libcore
 * and its tests use (not exported; SQLite keeps its SQLITE_TEST hooks in
 * sqliteInt.h the same way). Tests reach it through vyrecore_internal.
 */
#ifndef VYRE_CACHE_CONFIG_INTERNAL_H
#define VYRE_CACHE_CONFIG_INTERNAL_H

#include <stddef.h>

#include "vyre/config.h"

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
