/*
 * checksum_avx2.c - libxxhash's XXH3-128, inlined from its header and
 * compiled for AVX2 (see checksum.h). Only called after the CPU check.
 */
#include "cache/checksum.h"

#ifdef VYRE_XXH3_X86
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC target("avx2")
#endif
#define XXH_INLINE_ALL
#define XXH_VECTOR 2 /* XXH_AVX2 */
#include <xxhash.h>

void vyre__xxh3_128_avx2(const void *p, size_t n, uint64_t out[2])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    out[0] = h.low64;
    out[1] = h.high64;
    /* GCC emits no vzeroupper in code built under a target pragma; dirty
     * upper YMM halves would slow every SSE instruction that follows. */
    _mm256_zeroupper();
}
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
