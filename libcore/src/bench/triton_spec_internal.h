/*
 * triton_spec_internal.h - the inference of a Triton kernel's spec
 * (vyre/triton_spec.h), shared between its two steps (internal):
 * triton_spec.c finds the group and reads what it and TorchInductor's
 * cache say; triton_spec_args.c turns that into the spec's axes, args,
 * grid and launch.
 */
#ifndef VYRE_TRITON_SPEC_INTERNAL_H
#define VYRE_TRITON_SPEC_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "cache/foreign/inductor_launch.h"
#include "cache/foreign/triton_ttir.h"
#include "vyre/triton.h"
#include "vyre/triton_spec.h"

typedef struct vyre__triton_infer {
    const vyre_triton_spec_opts *o;
    const vyre_triton_group *g;
    vyre__ttir ttir;
    vyre__triton_launch_meta meta;
    int scratch_args; /* Triton's trailing scratch pointers: 2 (3.3+), 1 or 0 */
    vyre__inductor_kernel ind;
    int have_ind;
    const char *ind_dir; /* the TorchInductor cache read, or NULL */
    /* Per TTIR parameter, the model's launch: an integer's value, a
     * buffer's storage elements (have_model) and the tensor it came from. */
    int64_t model[VYRE__TTIR_PARAMS_MAX];
    int have_model[VYRE__TTIR_PARAMS_MAX];
    const char *model_arg[VYRE__TTIR_PARAMS_MAX];  /* as the launch passed it: "buf10" */
    const char *model_base[VYRE__TTIR_PARAMS_MAX]; /* whose storage it is: "buf7" */
    const char *sizes_from;                        /* "launch", "hints", or NULL */
    vyre__strbuf notes;
} vyre__triton_infer;

/* Fills x->model from the Inductor facts (the launch, else the size
 * hints). */
void vyre__triton_infer_model(vyre__triton_infer *x);

/* Builds the spec's "axes", "args", "grid", "block" and "shared" into
 * root, and their notes. 0, or VYRE_EINVAL / VYRE_ENOMEM with a message
 * naming what to pass. */
int vyre__triton_infer_spec(vyre__triton_infer *x, json_t *root, vyre_error *err);

#endif /* VYRE_TRITON_SPEC_INTERNAL_H */
