/*
 * checksum.h - XXH3-128 for blob payloads, with the fastest build the CPU
 * runs (internal).
 *
 * The payload checksum is most of the CPU cost of a cache hit. Debian's
 * libxxhash is built for baseline x86-64 (SSE2); libcore also compiles
 * libxxhash's own header inline for AVX2 and for AVX-512 (checksum_avx2.c,
 * checksum_avx512.c) and picks one per call by CPU and size. Every build
 * computes the same function: the tests compare them with the library.
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VYRE_XXH3_X86 1
void vyre__xxh3_128_avx2(const void *p, size_t n, uint64_t out[2]);
void vyre__xxh3_128_avx512(const void *p, size_t n, uint64_t out[2]);
#endif

#endif /* VYRE_CHECKSUM_H */
