/*
 * compile_internal.h - the one way a compiled cubin enters the pipeline
 * cache (internal). vyre_compile_through_cache (and so `vyre-cachectl
 * seed`) and the run-time pipeline path both store through here, so that a
 * seeded blob is, by construction, the blob the run-time path would have
 * written for the same request: same key, same header, a hit.
 */
#ifndef VYRE_COMPILE_INTERNAL_H
#define VYRE_COMPILE_INTERNAL_H

#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/compile.h"
#include "vyre/error.h"
#include "vyre/key.h"

/* The header of the cubin blob that caches res under key (a key from
 * vyre_compile_key). Fields the blob layer fills on store (creation time,
 * payload checksum) are left 0. */
void vyre__compile_blob_header(const vyre_key *key, const vyre_compile_result *res,
                               vyre_blob_header *h);

/* Stores res's cubin in c under key (req's key) with
 * vyre__compile_blob_header's header, the cubin's kernel names
 * (vyre_cubin_kernels; none when it cannot be read) and source_name's
 * basename (may be NULL), then records req's key inputs in the index for
 * vyre_key_explain (req may be NULL: none). h (when non-NULL) receives that header
 * as vyre_cache_put left it (creation time and checksum filled in). Returns vyre_cache_put's
 * result; res stays the caller's. */
int vyre__compile_store(vyre_cache *c, const vyre_compile_request *req, const vyre_key *key,
                        const vyre_compile_result *res, const char *source_name,
                        vyre_blob_header *h, vyre_error *err);

/* VYRE_ENOENT naming the kernels the module defines (names: the
 * NUL-separated list of vyre_cubin_kernels) unless entry is among them or
 * entry is NULL; n == 0 (unknown) passes. */
int vyre__compile_check_entry(const char *names, size_t names_len, size_t n, const char *entry,
                              vyre_error *err);

/* vyre__compile_check_entry against the kernels blob b's module defines
 * (its header's table, else its cubin's symbol table). */
int vyre__compile_blob_has_entry(const vyre_blob *b, const char *entry, vyre_error *err);

/* ---- not exported (vyre/compile.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/*
 * The toolchain identity stored in keys and blob headers: "nvrtc-<maj>.<min>"
 * for CUDA C (loads NVRTC for its version), "nvjitlink-<maj>.<min>" for PTX
 * (loads nvJitLink), "cubin" for cubin input. Returns 0, VYRE_EINVAL (bad
 * kind, buffer too small), VYRE_ENONVRTC, VYRE_ENOJITLINK or VYRE_EENV.
 */
int vyre_compile_toolchain(vyre_source_kind kind, char *buf, size_t size, vyre_error *err);

/*
 * The cache key of req: backend "cuda", the toolchain identity above, req's
 * arch, features 0, req's options in order, the source kind and bytes (key
 * format v2: no entry name, so every kernel of a module shares one blob). Validates req
 * (VYRE_EINVAL with a hint) and may load NVRTC or nvJitLink for the toolchain identity.
 */
int vyre_compile_key(const vyre_compile_request *req, vyre_key *out, vyre_error *err);

#endif /* VYRE_COMPILE_INTERNAL_H */
