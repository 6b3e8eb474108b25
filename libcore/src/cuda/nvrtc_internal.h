/*
 * nvrtc_internal.h - the NVRTC calls of vyre/nvrtc.h that no program
 * outside libcore uses: not exported from libvyrecore.so; libcore and its
 * tests (through vyrecore_internal) call them.
 */
#ifndef VYRE_CUDA_NVRTC_INTERNAL_H
#define VYRE_CUDA_NVRTC_INTERNAL_H

#include "vyre/nvrtc.h"

/* ---- not exported (vyre/nvrtc.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/* Loads NVRTC (see the top of this file) without compiling anything.
 * Returns 0, VYRE_ENONVRTC or VYRE_EENV. */
int vyre_nvrtc_load(vyre_error *err);

/* NVRTC's version (e.g. 13, 0). Loads NVRTC. */
int vyre_nvrtc_version(int *major, int *minor, vyre_error *err);

#endif /* VYRE_CUDA_NVRTC_INTERNAL_H */
