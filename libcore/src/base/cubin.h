/*
 * cubin.h - libcore's cubin reader (base/cubin.c): the kernels a cubin
 * defines, read from its ELF symbol table. Below every layer that reads
 * cubins (cache/foreign's Triton verify, cuda's compile and pipeline).
 * Not exported from libvyrecore.so: no program outside libcore calls it;
 * the tests reach it through vyrecore_internal.
 */
#ifndef VYRE_BASE_CUBIN_H
#define VYRE_BASE_CUBIN_H

#include <stddef.h>

#include "vyre/error.h"

/*
 * The kernels (entry points) a cubin defines, from its ELF symbol table:
 * global STT_FUNC symbols defined in a ".text.<name>" section (only those
 * marked STO_CUDA_ENTRY when the cubin marks entries). *names is a malloc'ed
 * list of NUL-terminated names, one after the other (*names_len bytes in
 * all, *count names, each once, in symbol-table order; NULL when none).
 * The image is untrusted: every offset and size is checked, nothing outside
 * [0, len) is read. Returns 0, VYRE_EINVAL (not an ELF64 little-endian
 * file, or a table that points outside it) or VYRE_ENOMEM.
 */
int vyre_cubin_kernels(const void *image, size_t len, char **names, size_t *names_len,
                       size_t *count, vyre_error *err);

#endif /* VYRE_BASE_CUBIN_H */
