/*
 * jitlink.h - PTX to cubin through nvJitLink, loaded at run time. Private
 * to libcore (it was vyre/jitlink.h until no program outside libcore used
 * it; the tests reach it through vyrecore_internal).
 *
 * libvyrecore never links libnvJitLink. The library is dlopen()ed on first
 * use, once per process (thread-safe): the file named by
 * $VYRE_NVJITLINK_LIBRARY when set (empty is VYRE_EENV; a file that does not
 * load is VYRE_ENOJITLINK, with no fallback), else "libnvJitLink.so.13",
 * else "libnvJitLink.so" through the dynamic linker's search, else the same
 * names under $CUDA_HOME/lib64 and /usr/local/cuda/lib64. nvJitLink runs on
 * the CPU: no GPU or driver is needed, so PTX (Triton's included) can be
 * turned into cubins ahead of time.
 */
#ifndef VYRE_CUDA_JITLINK_H
#define VYRE_CUDA_JITLINK_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

#define VYRE_JITLINK_ARCH_MAX 16 /* incl. NUL: "sm_100a" */

/*
 * What a link produced. Filled by vyre_jitlink_ptx_to_cubin() on success
 * and on failure (the log is kept for errors); owned by the caller, who
 * releases it with vyre_jitlink_output_release() in every case.
 */
typedef struct vyre_jitlink_output {
    void *cubin;      /* the linked cubin (malloc'ed), NULL on failure */
    size_t size;      /* bytes in cubin */
    char *log;        /* nvJitLink's error log then its info log (malloc'ed, NUL-terminated) */
    size_t log_len;   /* strlen(log) */
    uint64_t link_ns; /* wall time of create, add, complete and fetch */
    char arch[VYRE_JITLINK_ARCH_MAX]; /* the architecture linked for */
} vyre_jitlink_output;

/* Frees what out holds and zeroes it. NULL or a zeroed struct: no-op. */
void vyre_jitlink_output_release(vyre_jitlink_output *out);

/* Loads nvJitLink without linking anything. 0, VYRE_ENOJITLINK or
 * VYRE_EENV. */
int vyre_jitlink_load(vyre_error *err);

/* nvJitLink's version (e.g. 13, 0). Loads nvJitLink. */
int vyre_jitlink_version(int *major, int *minor, vyre_error *err);

/*
 * Compiles and links len bytes of PTX (NUL-terminated or not) named `name`
 * (for the log; NULL gives "kernel.ptx") into a cubin for arch, a real
 * architecture: "sm_90", or arch-specific "sm_90a" (what Triton's
 * `.target sm_90a` PTX needs) or family "sm_100f". "-arch=<arch>" is passed
 * first, then opts in order (nvJitLink syntax: "-O3", "-lineinfo",
 * "-Xptxas=-v"; none may name an architecture: VYRE_EINVAL).
 *
 * Returns 0; VYRE_ECOMPILE when nvJitLink rejects the PTX or options (the
 * message quotes the first failing log line, out->log holds the whole log);
 * VYRE_EINVAL; VYRE_ENOMEM; VYRE_ENOJITLINK / VYRE_EENV. Thread-safe.
 */
int vyre_jitlink_ptx_to_cubin(const char *ptx, size_t len, const char *name, const char *arch,
                              const char *const *opts, size_t nopts, vyre_jitlink_output *out,
                              vyre_error *err);

#endif /* VYRE_CUDA_JITLINK_H */
