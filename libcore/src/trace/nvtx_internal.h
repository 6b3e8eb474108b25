/*
 * nvtx_internal.h - the NVTX calls of vyre/nvtx.h that no program outside
 * libcore uses: not exported from libvyrecore.so; libcore and its tests
 * (through vyrecore_internal) call them.
 */
#ifndef VYRE_TRACE_NVTX_INTERNAL_H
#define VYRE_TRACE_NVTX_INTERNAL_H

#include "vyre/nvtx.h"

/* ---- not exported (vyre/nvtx.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/* The catalog: VYRE_RANGE_COUNT entries indexed by id. Static storage. */
const vyre_range_def *vyre__nvtx_catalog(size_t *count);

/*
 * Validates a label of `len` bytes at `label`; label[len] must be its
 * terminating NUL (so len+1 bytes must be readable). Rules: 1 to
 * VYRE_NVTX_LABEL_MAX bytes; dot-separated segments of [a-z0-9_], none empty;
 * the first segment is "vyre". Returns 0 or VYRE_ELABEL with err saying why
 * (empty, too long, interior NUL, unterminated, bad character, bad segment).
 */
int vyre_nvtx_label_validate(const char *label, size_t len, vyre_error *err);

void vyre_nvtx_push_payload(vyre_range_id id, uint64_t payload);

#endif /* VYRE_TRACE_NVTX_INTERNAL_H */
