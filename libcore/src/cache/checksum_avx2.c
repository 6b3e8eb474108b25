/*
 * checksum_avx2.c - XXH3-128 compiled for AVX2 (checksum_simd.h's text).
 */
#define VYRE__SIMD_TARGET "avx2"
#define VYRE__SIMD_VECTOR 2 /* XXH_AVX2 */
#define VYRE__SIMD(name)  name##_avx2
#include "cache/checksum_simd.h"
