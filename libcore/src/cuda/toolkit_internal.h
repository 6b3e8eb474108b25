/*
 * toolkit_internal.h - finding and opening a CUDA toolkit library (NVRTC,
 * nvJitLink) at run time, shared by nvrtc.c and jitlink.c. Not public API.
 */
#ifndef VYRE_TOOLKIT_INTERNAL_H
#define VYRE_TOOLKIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

/* How to find one library. */
typedef struct vyre__toolkit_lib {
    const char *what;           /* "NVRTC", for messages */
    const char *env;            /* override variable, e.g. "VYRE_NVRTC_LIBRARY" */
    const char *const *sonames; /* NULL-terminated, most specific first */
    int missing_code;           /* VYRE_ENONVRTC, VYRE_ENOJITLINK */
    const char *hint;           /* hint when nothing could be loaded */
} vyre__toolkit_lib;

/*
 * Opens the library: $<env> when set (empty: VYRE_EENV; a file that does not
 * load: missing_code, with no fallback, since the operator asked for that
 * file), else each soname through the dynamic linker's search, else each
 * soname under $CUDA_HOME/lib64 and /usr/local/cuda/lib64. RTLD_NOW |
 * RTLD_LOCAL: NVRTC and nvJitLink both carry LLVM, and must not resolve each
 * other's symbols. On success *handle is never closed by the caller's module
 * (the library stays for the process) and path holds what was opened.
 */
int vyre__toolkit_dlopen(const vyre__toolkit_lib *lib, void **handle, char *path, size_t size,
                         vyre_error *err);

/* Resolves a required symbol; on failure fills err (missing_code, naming
 * the library file and the symbol) and returns NULL. */
void *vyre__toolkit_dlsym(const vyre__toolkit_lib *lib, void *handle, const char *path,
                          const char *symbol, vyre_error *err);

/* 1 when s is an architecture number with its optional suffix, as after
 * "sm_" or "compute_": 2 or 3 digits, no leading zero, then nothing, 'a'
 * (arch-specific, e.g. sm_90a) or 'f' (family, e.g. sm_100f). */
int vyre__toolkit_arch_number_valid(const char *s);

/*
 * The line of a compiler log to quote in an error message: the first line
 * that contains "error" or "fatal" (any case), else the first non-blank line, else
 * NULL. Copies at most size - 1 bytes of it into buf, without the newline,
 * and returns buf.
 */
const char *vyre__toolkit_first_error(const char *log, char *buf, size_t size);

#endif /* VYRE_TOOLKIT_INTERNAL_H */
