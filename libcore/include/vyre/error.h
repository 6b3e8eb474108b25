/*
 * vyre/error.h - error codes and error detail.
 *
 * This header is part of libvyrecore's public API.
 *
 * Every fallible libcore function returns int: 0 (VYRE_OK) on success and a
 * negative VYRE_E* code on failure. Codes come from one X-macro list, which
 * generates the enum, vyre_strerror() and vyre_err_name(). New codes are
 * appended at the end, never renumbered: scripts and stored results may hold
 * the numbers.
 *
 * Detail goes into an optional, caller-owned vyre_error: a message naming
 * what failed (offending values quoted) and a hint saying how to fix it.
 * Passing NULL for the vyre_error is always allowed.
 */
#ifndef VYRE_ERROR_H
#define VYRE_ERROR_H

#include <stddef.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(NAME, value, description). Append only. */
#define VYRE_ERRNO_MAP(XX)                                                                         \
    XX(EINVAL, -1, "invalid argument")                                                             \
    XX(ENOMEM, -2, "out of memory")                                                                \
    XX(ENODRIVER, -3, "no NVIDIA driver found")                                                    \
    XX(ECUDA, -4, "CUDA driver call failed")                                                       \
    XX(ENODEV, -5, "no such CUDA device")                                                          \
    XX(EENV, -6, "bad environment variable")                                                       \
    XX(EIO, -7, "input/output error")                                                              \
    XX(ENOENT, -8, "not found")                                                                    \
    XX(EEXIST, -9, "already exists")                                                               \
    XX(EUNSAFE, -10, "unsafe ownership or permissions")                                            \
    XX(ECORRUPT, -11, "corrupt data")                                                              \
    XX(EVERSION, -12, "unsupported format version")                                                \
    XX(ETOOBIG, -13, "size out of bounds")                                                         \
    XX(ENOSPC, -14, "no space left or file size limit reached")                                    \
    XX(EROFS, -15, "read-only location")                                                           \
    XX(EDB, -16, "database error")                                                                 \
    XX(EBUSY, -17, "resource busy")                                                                \
    XX(ECOMPILE, -18, "compilation failed")                                                        \
    XX(ENONVRTC, -19, "NVRTC not available")                                                       \
    XX(ENOCUPTI, -20, "CUPTI not available")                                                       \
    XX(ECUPTIBUSY, -21, "CUPTI already held by another profiler")                                  \
    XX(ELABEL, -22, "invalid NVTX label")                                                          \
    XX(ERANGE, -23, "value out of range")                                                          \
    XX(ENOTSUP, -24, "not supported")                                                              \
    XX(ENONVML, -25, "NVML not available")                                                         \
    XX(EPERM, -26, "permission denied")                                                            \
    XX(EAMBIGUOUS, -27, "ambiguous name or prefix")                                                \
    XX(ENOJITLINK, -28, "nvJitLink not available")                                                 \
    XX(ECONFIG, -29, "bad configuration")                                                          \
    XX(EREMOTE, -30, "remote store failed")                                                        \
    XX(EINTR, -31, "interrupted")

typedef enum vyre_errno {
    VYRE_OK = 0,
#define VYRE__ERR_ENUM(name, val, desc) VYRE_##name = (val),
    VYRE_ERRNO_MAP(VYRE__ERR_ENUM)
#undef VYRE__ERR_ENUM
} vyre_errno;

#define VYRE_ERROR_MESSAGE_MAX 768
#define VYRE_ERROR_HINT_MAX    512

/*
 * A fix that a front end can offer as one of its own commands. libcore
 * names no front end: where such a command helps, it sets the remedy next
 * to a hint that stands on its own (possibly empty), and the front end
 * adds the command (git keeps advise() in the front end too). Append only.
 */
typedef enum vyre_remedy {
    VYRE_REMEDY_NONE = 0,
    VYRE_REMEDY_CACHE_REPAIR = 1,  /* verify the cache, quarantining what is damaged */
    VYRE_REMEDY_CACHE_REINDEX = 2, /* rebuild the cache's index from its blobs */
    VYRE_REMEDY_CACHE_PRUNE = 3,   /* shrink the cache */
    VYRE_REMEDY_CACHE_LIST = 4,    /* list the cache's keys */
    VYRE_REMEDY_BENCH_RUNS = 5,    /* list the runs in the results database */
    VYRE_REMEDY_DEVICES = 6,       /* list the GPUs the driver sees */
    VYRE_REMEDY_CACHE_CONFIG = 7,  /* list the cache's configuration and where each value is from */
    VYRE_REMEDY_CACHE_ADOPT = 8,   /* adopt a cache made by an earlier vyre (marker, reindex) */
} vyre_remedy;

/*
 * Error detail, owned by the caller (usually on the stack). Functions that
 * fail fill it when it is non-NULL; on success they leave it untouched.
 * message: what failed, offending values in quotes. hint: how to fix it,
 * without a "Fix:" prefix (front ends add their own); may be empty.
 * remedy: a front end's command that helps, or VYRE_REMEDY_NONE.
 */
typedef struct vyre_error {
    int code;
    char message[VYRE_ERROR_MESSAGE_MAX];
    char hint[VYRE_ERROR_HINT_MAX];
    vyre_remedy remedy;
} vyre_error;

/* Short text for a code, e.g. "not found". Never NULL; unknown codes give
 * "unknown error". Thread-safe; the string is static. */
VYRE_EXTERN const char *vyre_strerror(int code);

/* Symbolic name for a code, e.g. "VYRE_ENOENT" ("VYRE_OK" for 0). Never NULL;
 * unknown codes give "VYRE_E?". Thread-safe; the string is static. */
VYRE_EXTERN const char *vyre_err_name(int code);

/* The VYRE_E* code for an errno value, as libcore's own calls map it
 * (ENOENT/ENOTDIR: VYRE_ENOENT, EACCES/EPERM: VYRE_EPERM, ENOSPC/EDQUOT/
 * EFBIG: VYRE_ENOSPC, ...; 0: VYRE_OK; anything without a closer code:
 * VYRE_EIO), for a front end that reports its own file errors alike. */
VYRE_EXTERN int vyre_errno_code(int errnum);

/* Resets err to "no error" (code 0, empty strings). err may be NULL. */
VYRE_EXTERN void vyre_error_clear(vyre_error *err);

/* Frees an array that a libvyrecore call returned for the caller to free
 * "with vyre_free" (a list of runs, points, samples, history rows,
 * telemetry pages, GPU process rows): one call for every such list, in the
 * library's own allocator. NULL is a no-op. */
VYRE_EXTERN void vyre_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_ERROR_H */
