/*
 * checksum.h - XXH3-128 for blob payloads, with the fastest build the CPU
 * runs (internal).
 *
 * The payload checksum is most of the CPU cost of a cache hit. Debian's
 * libxxhash is built for baseline x86-64 (SSE2); libcore also compiles
 * libxxhash's own header inline for AVX2 and for AVX-512 (checksum_avx2.c,
 * checksum_avx512.c, one text: checksum_simd.h) and picks one per call by
 * CPU and size. Every build computes the same function: the tests compare
 * them with the library.
 */
#ifndef VYRE_CHECKSUM_H
#define VYRE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* XXH3-128 of n bytes at p: out[0] low 64 bits, out[1] high 64 bits. */
void vyre__xxh3_128(const void *p, size_t n, uint64_t out[2]);

/* The builds, for tests and benchmarks: 0 library, 1 AVX2, 2 AVX-512.
 * Returns VYRE_ENOTSUP (and leaves out alone) when the CPU or the build
 * lacks that variant. */
int vyre__xxh3_128_variant(int variant, const void *p, size_t n, uint64_t out[2]);

/*
 * Streaming XXH3-128, for hashing a payload chunk by chunk as it is read
 * (a cache hit hashes each chunk while it is still in cache, instead of a
 * second pass over the whole payload). The digest equals vyre__xxh3_128
 * of the concatenated chunks, whatever the chunking. The build is chosen
 * once, at _reset, from the CPU and the expected total length.
 *
 * The state lives in the caller's struct (no allocation); it holds no
 * pointer into itself, but must not be used by two threads at once.
 */
#define VYRE__XXH3_STATE_BYTES 640
typedef struct vyre__xxh3_stream {
    _Alignas(64) unsigned char state[VYRE__XXH3_STATE_BYTES]; /* an XXH3_state_t */
    int variant;                                              /* 0 library, 1 AVX2, 2 AVX-512 */
} vyre__xxh3_stream;

/* Starts a digest; total is the length expected in all (a hint). */
void vyre__xxh3_stream_reset(vyre__xxh3_stream *s, size_t total);
void vyre__xxh3_stream_update(vyre__xxh3_stream *s, const void *p, size_t n);
/* The digest of everything updated since _reset (the state is unchanged). */
void vyre__xxh3_stream_digest(const vyre__xxh3_stream *s, uint64_t out[2]);
/* _reset with a given build (as vyre__xxh3_128_variant), for tests:
 * VYRE_ENOTSUP when the CPU or the build lacks it. */
int vyre__xxh3_stream_reset_variant(vyre__xxh3_stream *s, int variant);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VYRE_XXH3_X86 1
void vyre__xxh3_128_avx2(const void *p, size_t n, uint64_t out[2]);
void vyre__xxh3_128_avx512(const void *p, size_t n, uint64_t out[2]);
/* The streaming functions of each build, on a vyre__xxh3_stream's state. */
void vyre__xxh3_stream_reset_avx2(void *state);
void vyre__xxh3_stream_update_avx2(void *state, const void *p, size_t n);
void vyre__xxh3_stream_digest_avx2(const void *state, uint64_t out[2]);
void vyre__xxh3_stream_reset_avx512(void *state);
void vyre__xxh3_stream_update_avx512(void *state, const void *p, size_t n);
void vyre__xxh3_stream_digest_avx512(const void *state, uint64_t out[2]);
#endif

#endif /* VYRE_CHECKSUM_H */
