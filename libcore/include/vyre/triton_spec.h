/*
 * vyre/triton_spec.h - a benchmark spec for a kernel in Triton's cache.
 *
 * Part of libvyrecore's public API (see vyre.h). Given a kernel name or a
 * group key, finds the group in Triton's cache and infers the version-2
 * sweep spec (vyre/bench.h, vyre/axes.h) that launches it as Triton does:
 * parameters and types from the group's TTIR, Triton's trailing scratch
 * pointers from the metadata, the block from num_warps, dynamic shared
 * memory, the grid from TorchInductor's naming (xnumel, ynumel, r0_numel
 * and the block sizes folded into the TTIR or named by the autotuning's
 * .best_config) and, when TorchInductor's cache is given, the sizes the
 * model launched the kernel at. Nothing is written; no GPU is needed.
 */
#ifndef VYRE_TRITON_SPEC_H
#define VYRE_TRITON_SPEC_H

#include <stddef.h>

#include "axes.h"
#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to infer a spec for. Zero-initialise, then set. */
typedef struct vyre_triton_spec_opts {
    const char *what;         /* a kernel name, a group key, or a key prefix of 8+ chars */
    const char *triton_dir;   /* Triton's cache; NULL: vyre_triton_cache_dir() */
    const char *inductor_dir; /* TorchInductor's cache, or NULL: none */
    const char *grid;         /* the grid in programs (an EXPR of the axes), or NULL: inferred */
    /* "PARAM=VALUES" each (-a syntax): the axis of integer parameter PARAM
     * instead of the sizes the model used. */
    const char *const *axes;
    size_t naxes;
    /* "PARAM=COUNT" or "PARAM=COUNT:TYPE" each: buffer PARAM's element
     * count (an EXPR of the axes) and, optionally, element type. */
    const char *const *buffers;
    size_t nbuffers;
    /* The GPU's architecture as Triton writes target.arch ("90"), or NULL
     * when there is none (a dry run): the group's cubin is used when its
     * arch is this one, else its PTX; and of several groups of one name
     * with no autotuning record, the one built for it is picked. */
    const char *gpu_arch;
} vyre_triton_spec_opts;

/* The inferred spec. vyre_triton_spec_release frees it. */
typedef struct vyre_triton_spec {
    char *json;        /* the version-2 spec, indented, ending in a newline */
    char *notes;       /* how each part was inferred: lines "what: how\n" */
    char *kernel_path; /* the group's .ptx or .cubin the spec names (absolute) */
    char key[256];     /* the group */
    char name[256];    /* the kernel */
    int model_sizes;   /* the axes are the sizes the model launched it at */
    /* json parsed, as vyre_sweep_spec_load gives a spec file (kernel_path
     * absolute); the caller may take its members (then NULL them). */
    vyre_sweep_spec sweep;
} vyre_triton_spec;

/*
 * Infers the spec of o->what into *out (always initialised: release it).
 * Returns 0; VYRE_ENOENT (no such kernel: the message lists the nearest
 * names; no cache), VYRE_EINVAL (several groups of the name and nothing
 * to pick one: the message says how they differ; a group without PTX or
 * cubin; a parameter type the spec cannot hold; a grid that cannot be
 * inferred; an axis or buffer that names no parameter; a size missing),
 * VYRE_ENOMEM. Each message says what to pass in its hint.
 */
VYRE_EXTERN int vyre_triton_spec_make(const vyre_triton_spec_opts *o, vyre_triton_spec *out,
                                      vyre_error *err);

/* Frees what s holds and zeroes it; NULL is a no-op. */
VYRE_EXTERN void vyre_triton_spec_release(vyre_triton_spec *s);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_TRITON_SPEC_H */
