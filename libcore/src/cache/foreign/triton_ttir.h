/*
 * triton_ttir.h - what a Triton kernel group says about launching it
 * (internal): the parameters of the TTIR's public function, the block
 * sizes folded into it, and the launch fields of the metadata .json.
 * Read from text the caller read (bounded); nothing is opened here.
 */
#ifndef VYRE_TRITON_TTIR_H
#define VYRE_TRITON_TTIR_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

#define VYRE__TTIR_PARAMS_MAX 30
#define VYRE__TTIR_NAME_MAX   64
#define VYRE__TTIR_TYPE_MAX   48

typedef struct vyre__ttir_param {
    char name[VYRE__TTIR_NAME_MAX]; /* "in_out_ptr0", "xnumel" */
    int is_ptr;                     /* !tt.ptr<T>: type is T */
    char type[VYRE__TTIR_TYPE_MAX]; /* as written: "f32", "i32", "bf16", "i1" */
} vyre__ttir_param;

typedef struct vyre__ttir {
    vyre__ttir_param params[VYRE__TTIR_PARAMS_MAX];
    size_t nparams;
    /* The block of each program-id axis (x, y, z): the constant the program
     * id is multiplied by (Inductor's `tl.program_id(0) * XBLOCK`, folded),
     * 1 when the id is used unmultiplied, 0 when the kernel never reads
     * that axis. */
    int64_t block[3];
} vyre__ttir;

/*
 * Parses the TTIR text (NUL-terminated) of kernel `name`: the parameters of
 * `tt.func public @name(...)` and the program-id blocks. Returns 0,
 * VYRE_EINVAL (no such function, a parameter that does not read, more than
 * VYRE__TTIR_PARAMS_MAX) with the reason; origin names the file.
 */
int vyre__ttir_parse(const char *text, const char *name, const char *origin, vyre__ttir *out,
                     vyre_error *err);

/* The launch fields of a group's metadata .json; absent ones are 0. */
typedef struct vyre__triton_launch_meta {
    int64_t num_warps, warp_size, num_ctas, shared;
    int64_t global_scratch_size, profile_scratch_size;
    int cooperative, pdl; /* launch_cooperative_grid, launch_pdl */
    int scratch_ptrs;     /* the trailing scratch pointers Triton adds: one for each of
                             global_scratch_size and profile_scratch_size the metadata has */
    char arch[32];        /* target.arch as text: "90" */
} vyre__triton_launch_meta;

/* Parses the metadata text. 0, or VYRE_EINVAL naming origin. */
int vyre__triton_launch_meta_parse(const char *text, const char *origin,
                                   vyre__triton_launch_meta *out, vyre_error *err);

#endif /* VYRE_TRITON_TTIR_H */
