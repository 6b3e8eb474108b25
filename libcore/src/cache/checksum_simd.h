/*
 * checksum_simd.h - the body of checksum_avx2.c and checksum_avx512.c:
 * libxxhash's XXH3-128, inlined from its header and compiled for one
 * instruction set (see checksum.h). Only called after the CPU check.
 *
 * Included once by each of those files, after it defines
 *   VYRE__SIMD_TARGET  the target attribute, e.g. "avx2"
 *   VYRE__SIMD_VECTOR  libxxhash's XXH_VECTOR for it (2 AVX2, 3 AVX-512)
 *   VYRE__SIMD(name)   the exported name of each function, e.g. name##_avx2
 * so that one text defines every build (a fix lands in all of them).
 */
#ifndef VYRE__SIMD_TARGET
#error "define VYRE__SIMD_TARGET, VYRE__SIMD_VECTOR and VYRE__SIMD(name) before including"
#endif

#include "cache/checksum.h"

#ifdef VYRE_XXH3_X86
#include <immintrin.h>

#define VYRE__SIMD_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define VYRE__SIMD_PUSH(t)                                                                         \
    VYRE__SIMD_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
VYRE__SIMD_PUSH(VYRE__SIMD_TARGET)
#else
#define VYRE__SIMD_PUSH(t) VYRE__SIMD_PRAGMA(GCC target(t))
VYRE__SIMD_PUSH(VYRE__SIMD_TARGET)
#endif
#define XXH_INLINE_ALL
#define XXH_VECTOR VYRE__SIMD_VECTOR
#include <xxhash.h>

void VYRE__SIMD(vyre__xxh3_128)(const void *p, size_t n, uint64_t out[2])
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

void VYRE__SIMD(vyre__xxh3_stream_reset)(void *state)
{
    (void)XXH3_128bits_reset((XXH3_state_t *)state);
}

void VYRE__SIMD(vyre__xxh3_stream_update)(void *state, const void *p, size_t n)
{
    (void)XXH3_128bits_update((XXH3_state_t *)state, p, n);
    _mm256_zeroupper(); /* as above */
}

void VYRE__SIMD(vyre__xxh3_stream_digest)(const void *state, uint64_t out[2])
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
