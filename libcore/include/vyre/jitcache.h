/*
 * vyre/jitcache.h - safe configuration of the CUDA driver's own JIT cache.
 *
 * This header is part of libvyrecore's public API.
 *
 * The driver reads CUDA_CACHE_DISABLE, CUDA_CACHE_PATH and CUDA_CACHE_MAXSIZE
 * once, in cuInit. vyre_jitcache_setup() must therefore run before cuInit;
 * vyre_cuda_init() calls it for you. The contract:
 *   - CUDA_CACHE_DISABLE is always forced to "0";
 *   - CUDA_CACHE_PATH is kept when the operator set it (empty is an error),
 *     else defaulted to $XDG_CACHE_HOME/vyre/cuda-jit, else
 *     $HOME/.cache/vyre/cuda-jit; the directory is created (0700) if missing;
 *     with neither XDG_CACHE_HOME nor HOME it is an error: there is no silent
 *     /tmp fallback;
 *   - CUDA_CACHE_MAXSIZE is kept when it is a decimal byte count >= the floor
 *     (1 GiB by default), set to the floor when unset, and rejected when it is
 *     not a number or below the floor.
 */
#ifndef VYRE_JITCACHE_H
#define VYRE_JITCACHE_H

#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_JITCACHE_FLOOR_BYTES (UINT64_C(1) << 30)
#define VYRE_JITCACHE_PATH_MAX    4096

/* What is (or would be) in force. */
typedef struct vyre_jitcache_info {
    char path[VYRE_JITCACHE_PATH_MAX]; /* CUDA_CACHE_PATH */
    uint64_t maxsize_bytes;            /* CUDA_CACHE_MAXSIZE */
    int path_from_env;                 /* 1 when the operator set CUDA_CACHE_PATH */
    int maxsize_from_env;              /* 1 when the operator set CUDA_CACHE_MAXSIZE */
} vyre_jitcache_info;

/*
 * Works out what the contract above gives for the current environment with
 * the given floor, without changing the environment or the filesystem.
 * Returns 0, VYRE_EINVAL (floor 0 or NULL info) or VYRE_EENV (bad variable;
 * err says which and how to fix it). Thread-safe as long as no other thread
 * changes the environment.
 */
VYRE_EXTERN int vyre_jitcache_resolve(uint64_t floor_bytes, vyre_jitcache_info *info,
                                      vyre_error *err);

/* ---- reporting on and clearing the driver's JIT cache (jitcache_report.c) */

/* What a JIT cache directory holds. */
typedef struct vyre_jitcache_usage {
    int exists;     /* 1 when the directory exists */
    uint64_t files; /* regular files, at any depth */
    uint64_t bytes; /* their sizes (st_size) summed */
} vyre_jitcache_usage;

/*
 * Walks the directory at path (symlinks are counted, never followed) and
 * fills *out. A missing directory is not an error: exists = 0 and zero
 * counts. Errors: VYRE_EINVAL (NULL arguments), VYRE_EEXIST (path is not a
 * directory), VYRE_EPERM / VYRE_EIO (cannot read it). Thread-safe; touches
 * nothing.
 */
VYRE_EXTERN int vyre_jitcache_usage_get(const char *path, vyre_jitcache_usage *out,
                                        vyre_error *err);

/*
 * Empties the driver JIT cache directory at path, keeping the directory
 * itself. Before removing anything it checks that the directory looks like
 * the driver's cache (an `index` file and one-hex-digit subdirectories, as
 * driver 580 writes it) and refuses anything else with VYRE_EUNSAFE, naming
 * the unexpected entry: CUDA_CACHE_PATH may point anywhere, and emptying the
 * wrong directory would lose data. The path itself must not be a symlink.
 * A missing directory is not an error (nothing removed). files and bytes
 * (may be NULL) receive what was removed. A driver writing the cache
 * meanwhile only loses entries it will recompile. Errors: VYRE_EINVAL,
 * VYRE_EEXIST (not a directory), VYRE_EUNSAFE, VYRE_EPERM, VYRE_EROFS,
 * VYRE_EIO.
 */
VYRE_EXTERN int vyre_jitcache_clear(const char *path, uint64_t *files, uint64_t *bytes,
                                    vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_JITCACHE_H */
