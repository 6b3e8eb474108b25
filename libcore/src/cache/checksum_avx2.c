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
_Static_assert(sizeof(XXH3_state_t) <= VYRE__XXH3_STATE_BYTES,
               "vyre__xxh3_stream holds an XXH3_state_t");
_Static_assert(_Alignof(XXH3_state_t) <= 64, "vyre__xxh3_stream aligns an XXH3_state_t");

void vyre__xxh3_stream_reset_avx2(void *state)
{
    (void)XXH3_128bits_reset((XXH3_state_t *)state);
}

void vyre__xxh3_stream_update_avx2(void *state, const void *p, size_t n)
{
    (void)XXH3_128bits_update((XXH3_state_t *)state, p, n);
    _mm256_zeroupper(); /* as above */
}

void vyre__xxh3_stream_digest_avx2(const void *state, uint64_t out[2])
{
    XXH128_hash_t h = XXH3_128bits_digest((const XXH3_state_t *)state);
    out[0] = h.low64;
    out[1] = h.high64;
    _mm256_zeroupper();
}
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
