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

#endif /* VYRE_CACHE_CONFIG_INTERNAL_H */
