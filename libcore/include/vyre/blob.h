/*
 * vyre/blob.h - the on-disk pipeline blob: format v1, durable store,
 * validated load.
 *
 * This header is part of libvyrecore's public API. The byte-by-byte layout
 * is documented in libcore/BLOB_FORMAT.md.
 *
 * Every blob is self-describing: a fixed-size little-endian header (magic,
 * format version, key, kind, architecture, toolchain, sizes, creation time,
 * XXH3-128 of the payload, XXH3-64 of the header itself) followed by the
 * payload. Guarantees:
 *   - store: temp file created exclusively in <root>/tmp, written, fsynced,
 *     renamed to <root>/blobs/<2 hex>/<64 hex>.vblob, directory fsynced. A
 *     reader never sees a partial blob; a writer killed at any instant leaves
 *     at most debris in tmp/. Concurrent stores of one key are harmless.
 *   - load: O_NOFOLLOW, regular files only, sizes bounded before any
 *     allocation, header and payload checksums verified. Anything wrong is a
 *     miss; the file is moved to <root>/quarantine/ and the reason counted.
 */
#ifndef VYRE_BLOB_H
#define VYRE_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_BLOB_MAGIC          "VYREBLB\x01" /* 8 bytes, no NUL */
#define VYRE_BLOB_FORMAT_VERSION 1
#define VYRE_BLOB_HEADER_SIZE    256
#define VYRE_BLOB_MAX_PAYLOAD    (UINT64_C(512) << 20) /* 512 MiB */
#define VYRE_BLOB_ARCH_MAX       16                    /* incl. NUL: "sm_90a" */
#define VYRE_BLOB_TOOLCHAIN_MAX  64                    /* incl. NUL */
#define VYRE_BLOB_SOURCE_MAX     40                    /* incl. NUL: the source's basename */
#define VYRE_BLOB_KERNELS_MAX    (64u << 10)           /* bytes of the kernel-name table, at most */
#define VYRE_BLOB_EXT            ".vblob"

/* Payload kinds. Stored on disk: append only. */
typedef enum vyre_blob_kind {
    VYRE_BLOB_CUBIN = 1,
    VYRE_BLOB_PTX = 2,
    VYRE_BLOB_FATBIN = 3,
} vyre_blob_kind;

/* Decoded header. Strings are NUL-terminated. */
typedef struct vyre_blob_header {
    uint32_t format_version;                 /* VYRE_BLOB_FORMAT_VERSION */
    uint32_t key_version;                    /* VYRE_KEY_VERSION the key was made with */
    vyre_key key;                            /* the pipeline key (also the file name) */
    uint32_t kind;                           /* vyre_blob_kind */
    uint32_t flags;                          /* 0 in v1 (no compression) */
    char arch[VYRE_BLOB_ARCH_MAX];           /* e.g. "sm_90a" */
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX]; /* e.g. "nvrtc-13.0;driver-13000" */
    uint64_t raw_size;                       /* payload size before encoding */
    uint64_t stored_size;                    /* payload bytes that follow the header */
    int64_t created_unix_ns;                 /* creation time */
    uint64_t compile_ns;                     /* compile time this blob saves */
    uint8_t payload_xxh128[16];        /* XXH3-128 of the stored payload, big-endian canonical */
    char source[VYRE_BLOB_SOURCE_MAX]; /* source file's basename ("" when unknown; key v2) */
    uint32_t n_kernels;                /* kernels the module defines (0: unknown) */
    uint32_t kernels_size;             /* bytes of the kernel-name table after the payload */
    uint64_t kernels_xxh64;            /* XXH3-64 of that table (0 when there is none) */
    /* Not on disk. Store: the table to write (n_kernels NUL-terminated
     * names, kernels_size bytes in all), or NULL for none. Load: points
     * into the blob's allocation. Decode and check: NULL. */
    const char *kernels;
} vyre_blob_header;

/* A loaded blob. Owned by the caller: release with vyre_blob_free(). */
typedef struct vyre_blob {
    vyre_blob_header header;
    void *payload; /* stored_size bytes */
    size_t size;
} vyre_blob;

/* Why a file was rejected (and quarantined). Append only. */
typedef enum vyre_blob_reject {
    VYRE_REJECT_NONE = 0,
    VYRE_REJECT_NOT_REGULAR,  /* symlink, directory, device, ... */
    VYRE_REJECT_TRUNCATED,    /* shorter than header or declared payload */
    VYRE_REJECT_BAD_MAGIC,    /* not a vyre blob */
    VYRE_REJECT_VERSION,      /* other format or key version */
    VYRE_REJECT_HEADER_SUM,   /* header checksum mismatch */
    VYRE_REJECT_BAD_FIELD,    /* absurd size, unterminated string, unknown kind, ... */
    VYRE_REJECT_PAYLOAD_SUM,  /* payload checksum mismatch */
    VYRE_REJECT_KEY_MISMATCH, /* header key differs from the file name */
    VYRE_REJECT_TRAILING,     /* bytes after the declared payload */
    VYRE_REJECT_STALE,        /* an intact blob of an older key version (load: a miss; kept
                                 in place, never quarantined; prune --stale removes it) */
    VYRE_REJECT_COUNT
} vyre_blob_reject;

/* "truncated", "bad-magic", ... (static; "none" for NONE). */
VYRE_EXTERN const char *vyre_blob_reject_name(vyre_blob_reject r);

/* Serialises h into exactly VYRE_BLOB_HEADER_SIZE bytes, computing the
 * header checksum. Returns 0 or VYRE_EINVAL for fields that do not fit. */
VYRE_EXTERN int vyre_blob_header_encode(const vyre_blob_header *h,
                                        uint8_t out[VYRE_BLOB_HEADER_SIZE], vyre_error *err);

/* 1 when an intact header's key_version is an older one this build still
 * recognises (key format v1): the blob is stale, not corrupt. */
#define VYRE_BLOB_KEY_STALE(kv) ((kv) >= 1 && (kv) < VYRE_KEY_VERSION)

/* "<root>/blobs/<2 hex>/<64 hex>.vblob" into buf. */
VYRE_EXTERN int vyre_blob_path(const char *root, const vyre_key *key, char *buf, size_t size,
                               vyre_error *err);

/* Frees a blob (vyre_cache_get, vyre_compile_through_cache). NULL is a no-op. */
VYRE_EXTERN void vyre_blob_free(vyre_blob *blob);

/* Joins the list with sep into buf (always terminated when size > 0; stops
 * at the first name that does not fit). Returns the length the whole join
 * needs, as snprintf does. */
VYRE_EXTERN size_t vyre_kernel_list_format(const char *names, size_t names_len, const char *sep,
                                           char *buf, size_t size);

/* "cubin", "ptx", "fatbin", or NULL for an unknown kind. */
VYRE_EXTERN const char *vyre_blob_kind_name(uint32_t kind);

/* Parses a kind name; 0 or VYRE_EINVAL. */
VYRE_EXTERN int vyre_blob_kind_parse(const char *name, uint32_t *kind);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_BLOB_H */
