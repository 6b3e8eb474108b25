/*
 * vyre/key.h - pipeline cache keys.
 *
 * This header is part of libvyrecore's public API.
 *
 * A key is SHA-256 over: a domain tag, the key-format version, then each
 * field with a one-byte field tag and a 64-bit little-endian length prefix
 * (option lists are prefixed with their count, then each option is
 * length-prefixed). So ("ab","c") and ("a","bc") never collide, option order
 * matters, and bumping VYRE_KEY_VERSION changes every key, which invalidates
 * every cached blob at once.
 *
 * The exact byte stream hashed (all integers little-endian); it is every
 * blob's on-disk identity, so change it only with VYRE_KEY_VERSION
 * (tests/unit/test_key.c re-encodes it independently and pins it):
 *
 *   u64 len("vyre.pipeline.key") || "vyre.pipeline.key"
 *   u64 key_version
 *   0x01 u64 len || backend            (NULL hashed as "")
 *   0x02 u64 len || toolchain
 *   0x03 u64 len || arch
 *   0x04 u64 8   || u64 features
 *   0x05 u64 n_options, then per option: u64 len || option
 *   0x06 u64 len || entry              (pipeline keys, v2: always "")
 *   0x07 u64 4   || u32 source_kind
 *   0x08 u64 len || source bytes
 */
#ifndef VYRE_KEY_H
#define VYRE_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: pipeline keys name a module, not one of its kernels: vyre_compile_key
 * leaves `entry` empty (the byte stream below is unchanged). Blobs of key
 * version 1 are stale: never hit, reported by stats and verify, removed by
 * `vyre-cachectl prune --stale`. */
#define VYRE_KEY_VERSION 2
#define VYRE_KEY_BYTES   32
#define VYRE_KEY_HEX_LEN 64
#define VYRE_KEY_DOMAIN  "vyre.pipeline.key"

/* What a pipeline's source is. Values are stored on disk: append only. */
typedef enum vyre_source_kind {
    VYRE_SOURCE_CUDA_C = 1,
    VYRE_SOURCE_PTX = 2,
    VYRE_SOURCE_CUBIN = 3,
} vyre_source_kind;

/* The fields a key is computed from. Strings are NUL-terminated; NULL is
 * hashed as the empty string. The caller owns everything. */
typedef struct vyre_key_input {
    const char *backend;        /* backend id, e.g. "cuda" */
    const char *toolchain;      /* toolchain identity, e.g. "nvrtc-13.0;driver-13000" */
    const char *arch;           /* device generation, e.g. "sm_90" or "sm_90a" */
    uint64_t features;          /* feature flag bits */
    const char *const *options; /* ordered compile options */
    size_t n_options;
    const char *entry; /* entry point name; NULL for pipeline keys since v2 */
    vyre_source_kind source_kind;
    const void *source; /* source bytes (may contain NULs) */
    size_t source_len;
} vyre_key_input;

typedef struct vyre_key {
    uint8_t bytes[VYRE_KEY_BYTES];
} vyre_key;

/* Computes the key for `in`. Returns 0, VYRE_EINVAL (NULL arguments, or
 * options/source NULL with a non-zero count/length) or VYRE_ENOMEM. */
VYRE_EXTERN int vyre_key_compute(const vyre_key_input *in, vyre_key *out, vyre_error *err);

/* Writes the 64 lowercase hex digits and a NUL into hex (65 bytes). */
VYRE_EXTERN void vyre_key_to_hex(const vyre_key *key, char hex[VYRE_KEY_HEX_LEN + 1]);

/* Parses exactly 64 hex digits (either case). Returns 0 or VYRE_EINVAL. */
VYRE_EXTERN int vyre_key_from_hex(const char *hex, vyre_key *out);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_KEY_H */
