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

/* Writes the 64 lowercase hex digits and a NUL into hex (65 bytes). */
VYRE_EXTERN void vyre_key_to_hex(const vyre_key *key, char hex[VYRE_KEY_HEX_LEN + 1]);

/* Parses exactly 64 hex digits (either case). Returns 0 or VYRE_EINVAL. */
VYRE_EXTERN int vyre_key_from_hex(const char *hex, vyre_key *out);

/* ---- why a key missed (libcore/src/cache/key_explain.c) -------------------- */

typedef struct vyre_cache vyre_cache; /* vyre/cache.h */

/* The inputs a key is computed from, in the order they are hashed (the
 * byte stream above). Values are reported by name: append only. */
typedef enum vyre_key_field {
    VYRE_KEY_FIELD_VERSION = 0,     /* the key format version */
    VYRE_KEY_FIELD_BACKEND = 1,     /* "cuda" */
    VYRE_KEY_FIELD_TOOLCHAIN = 2,   /* "nvjitlink-13.0" */
    VYRE_KEY_FIELD_ARCH = 3,        /* "sm_90a" */
    VYRE_KEY_FIELD_FEATURES = 4,    /* feature bits */
    VYRE_KEY_FIELD_OPTIONS = 5,     /* the ordered compile options */
    VYRE_KEY_FIELD_ENTRY = 6,       /* "" for pipeline keys since v2 */
    VYRE_KEY_FIELD_SOURCE_KIND = 7, /* vyre_source_kind */
    VYRE_KEY_FIELD_SOURCE = 8,      /* the source bytes, told by their SHA-256 */
    VYRE_KEY_FIELD_COUNT = 9
} vyre_key_field;

/* "key_version", "backend", "toolchain", "arch", "features", "options",
 * "entry", "source_kind", "source_sha256"; NULL for an unknown field
 * (static). */
VYRE_EXTERN const char *vyre_key_field_name(vyre_key_field f);

#define VYRE_KEY_TEXT_MAX    64   /* backend, toolchain, arch, with NUL */
#define VYRE_KEY_ENTRY_MAX   256  /* entry, with NUL */
#define VYRE_KEY_OPTIONS_MAX 4096 /* the options, each with its NUL */

/* A key's inputs as values that can be kept and compared: the source as
 * its SHA-256, the options one after the other, each NUL-terminated. */
typedef struct vyre_key_inputs {
    uint32_t key_version;
    char backend[VYRE_KEY_TEXT_MAX];
    char toolchain[VYRE_KEY_TEXT_MAX];
    char arch[VYRE_KEY_TEXT_MAX];
    uint64_t features;
    uint32_t n_options;
    uint32_t options_len; /* bytes of options used */
    char options[VYRE_KEY_OPTIONS_MAX];
    char entry[VYRE_KEY_ENTRY_MAX];
    uint32_t source_kind; /* vyre_source_kind */
    char source_sha256[VYRE_KEY_HEX_LEN + 1];
} vyre_key_inputs;

/* Why an entry is listed beside the key asked about. */
enum {
    VYRE_KEY_RELATED_NAME = 1,   /* the same source file name */
    VYRE_KEY_RELATED_SOURCE = 2, /* the same source bytes (SHA-256) */
    VYRE_KEY_RELATED_KERNEL = 4, /* its module defines the kernel asked about */
};

/* Where the key asked about stands in the cache. */
typedef enum vyre_key_state {
    VYRE_KEY_ABSENT = 0,  /* no blob: a lookup misses and compiles */
    VYRE_KEY_PRESENT = 1, /* a valid blob: a lookup hits */
    VYRE_KEY_DAMAGED = 2, /* a blob that fails validation: a lookup misses and quarantines it */
} vyre_key_state;

/* One cached entry of the same source or kernel, and how its inputs
 * differ from the key's. */
typedef struct vyre_key_explain_entry {
    vyre_key key;
    char source[40];   /* the source file's basename, "" when unknown */
    char kernels[256]; /* the module's kernels joined by ',' (cut: "...") */
    uint32_t n_kernels;
    int64_t created_unix_ns;
    unsigned related; /* VYRE_KEY_RELATED_* bits */
    /* 1: every input was recorded when it was stored. 0: stored before
     * vyre recorded inputs (or through a remote store, or the index was
     * rebuilt): only key_version, toolchain and arch are known. */
    int inputs_recorded;
    vyre_key_inputs inputs; /* unknown fields are zero */
    unsigned known;         /* a bit per field known */
    unsigned differ;        /* a bit per known field that differs from the key's */
} vyre_key_explain_entry;

/* What vyre_key_explain found. Owned by the caller:
 * vyre_key_explanation_release(). */
typedef struct vyre_key_explanation {
    vyre_key key;
    vyre_key_inputs inputs;
    vyre_key_state state;
    vyre_key_explain_entry *entries; /* malloc'ed: fewest differing inputs first, then key */
    size_t n_entries;
} vyre_key_explanation;

/*
 * Why the key of `in` hits or misses in cache c: the key, its inputs, its
 * state, and every other entry whose recorded source name is source_name
 * (basename taken; NULL: none), whose source bytes are the same, or whose
 * module defines `kernel` (NULL: none), each with the inputs that differ.
 * Reads only. out is always initialised. Returns 0, or the errors of
 * vyre__key_inputs_from and of reading the index.
 */
VYRE_EXTERN int vyre_key_explain(vyre_cache *c, const vyre_key_input *in, const char *source_name,
                                 const char *kernel, vyre_key_explanation *out, vyre_error *err);

/* Frees what x holds and zeroes it; NULL is a no-op. */
VYRE_EXTERN void vyre_key_explanation_release(vyre_key_explanation *x);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_KEY_H */
