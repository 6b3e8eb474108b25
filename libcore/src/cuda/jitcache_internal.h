/*
 * jitcache_internal.h - the JIT-cache contract's call that only libcore and
 * its tests use (not exported; SQLite keeps its SQLITE_TEST hooks in
 * sqliteInt.h the same way). Tests reach it through vyrecore_internal.
 */
#ifndef VYRE_CUDA_JITCACHE_INTERNAL_H
#define VYRE_CUDA_JITCACHE_INTERNAL_H

#include <stdint.h>

#include "vyre/jitcache.h"

/* As vyre_jitcache_setup() with a floor other than 1 GiB. Only the first
 * call's floor matters. A zero floor is rejected with VYRE_EINVAL. */
int vyre__jitcache_setup_floor(uint64_t floor_bytes, vyre_jitcache_info *info, vyre_error *err);

/* ---- not exported (vyre/jitcache.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * Applies the contract once per process with the default floor: resolves,
 * creates the directory, and sets the three variables. Thread-safe: later
 * calls (from any thread) return the first call's result and fill info with
 * what was applied. info and err may be NULL. Must run before cuInit and
 * before other threads read the environment (setenv is not thread-safe
 * against concurrent getenv).
 */
int vyre_jitcache_setup(vyre_jitcache_info *info, vyre_error *err);

#endif /* VYRE_CUDA_JITCACHE_INTERNAL_H */
