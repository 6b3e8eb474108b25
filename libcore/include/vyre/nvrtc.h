/*
 * vyre/nvrtc.h - CUDA C to PTX or cubin through NVRTC, loaded at run time.
 *
 * This header is part of libvyrecore's public API.
 *
 * libvyrecore never links libnvrtc. The library is dlopen()ed on first use,
 * once per process (thread-safe): the file named by $VYRE_NVRTC_LIBRARY when
 * set (empty is VYRE_EENV; a file that does not load is VYRE_ENONVRTC, with
 * no fallback), else "libnvrtc.so.13", else "libnvrtc.so" through the
 * dynamic linker's search, else the same names under $CUDA_HOME/lib64 and
 * /usr/local/cuda/lib64. Later calls return the first call's result. NVRTC
 * runs on the CPU: no GPU or driver is needed.
 */
#ifndef VYRE_NVRTC_H
#define VYRE_NVRTC_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_NVRTC_ARCH_MAX 24 /* incl. NUL: "compute_100a" */

/*
 * What a compile produced. Filled by vyre_nvrtc_compile() on success and on
 * failure (the log is kept for errors); owned by the caller, who releases
 * it with vyre_nvrtc_output_release() in every case.
 */
typedef struct vyre_nvrtc_output {
    void *data;          /* PTX text or cubin bytes (malloc'ed), NULL on failure */
    size_t size;         /* bytes in data; PTX: the text without its NUL */
    int is_cubin;        /* 1: data is a cubin (ELF); 0: PTX, also NUL-terminated */
    char *log;           /* the whole compile log (malloc'ed, NUL-terminated; "" when empty) */
    size_t log_len;      /* strlen(log) */
    uint64_t compile_ns; /* wall time of program creation, compile and fetch */
    char arch[VYRE_NVRTC_ARCH_MAX]; /* what --gpu-architecture was given */
} vyre_nvrtc_output;

/* Frees what out holds and zeroes it. NULL, or an already released or
 * zeroed struct, is a no-op. */
VYRE_EXTERN void vyre_nvrtc_output_release(vyre_nvrtc_output *out);

/*
 * Compiles len bytes of CUDA C (src need not be NUL-terminated) named `name`
 * (used in log lines such as "kernel.cu(3): error: ..."; NULL gives
 * "kernel.cu") for arch: "sm_90", "sm_90a" or "compute_90". With want_cubin
 * the real architecture is passed (--gpu-architecture=sm_90, from
 * "compute_90" too) and out->data is a cubin; without it the virtual one
 * (compute_90, compute_90a) and out->data is PTX. opts are passed to NVRTC
 * in order after the architecture and must not name one themselves
 * (-arch, --gpu-architecture: VYRE_EINVAL). Use extern "C" kernels, or the
 * names in the PTX/cubin are C++-mangled.
 *
 * Returns 0; VYRE_ECOMPILE when NVRTC rejects the source or options: the
 * message quotes the first failing log line and out->log holds the whole
 * log; VYRE_EINVAL (bad arguments or architecture); VYRE_ENOMEM;
 * VYRE_ENONVRTC / VYRE_EENV (no NVRTC). Thread-safe.
 */
VYRE_EXTERN int vyre_nvrtc_compile(const char *src, size_t len, const char *name, const char *arch,
                                   const char *const *opts, size_t nopts, int want_cubin,
                                   vyre_nvrtc_output *out, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_NVRTC_H */
