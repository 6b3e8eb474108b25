/*
 * checksum_avx512.c - XXH3-128 compiled for AVX-512 (checksum_simd.h's
 * text).
 */
#define VYRE__SIMD_TARGET "avx512f,avx512bw"
#define VYRE__SIMD_VECTOR 3 /* XXH_AVX512 */
#define VYRE__SIMD(name)  name##_avx512
#include "cache/checksum_simd.h"
