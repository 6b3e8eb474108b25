/*
 * checksum.c - picks the XXH3-128 build (see checksum.h).
 *
 * AVX-512 is used from AVX512_MIN up, AVX2 below. Measured on the hit
 * path itself (open + fstat + read + close of a page-cached file, then the
 * hash; thread CPU time, an Intel Xeon with AVX-512, medians of 31
 * interleaved rounds), AVX-512 cost less than AVX2 at every size from
 * 4 KiB: 4 KiB +110-128 ns vs +147-153, 16 KiB +375-534 vs +516-701,
 * 24 KiB +524-584 vs +786-806, 64 KiB +1.8-2.2 us vs +2.0-2.9. Below
 * 4 KiB the two were within the noise. (An earlier CPU measured AVX-512
 * slower inside the load loop, so the threshold was 32 KiB; cubins of
 * 9-24 KB, the GPU hit path's, fell below it.)
 */
#include "cache/checksum.h"

#include <stdatomic.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t, for the streaming state */
#include <xxhash.h>

#include "vyre/error.h"

#define AVX512_MIN ((size_t)4 << 10)

enum { CPU_UNKNOWN = 0, CPU_BASE, CPU_AVX2, CPU_AVX512 };
static atomic_int g_cpu;

static int cpu_level(void)
{
    int c = atomic_load_explicit(&g_cpu, memory_order_relaxed);
    if (c != CPU_UNKNOWN)
        return c;
    c = CPU_BASE;
#ifdef VYRE_XXH3_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        c = CPU_AVX2;
    if (c == CPU_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        c = CPU_AVX512;
#endif
    atomic_store_explicit(&g_cpu, c, memory_order_relaxed);
    return c;
}

static void library(const void *p, size_t n, uint64_t out[2])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    out[0] = h.low64;
    out[1] = h.high64;
}

void vyre__xxh3_128(const void *p, size_t n, uint64_t out[2])
{
#ifdef VYRE_XXH3_X86
    int c = cpu_level();
    if (c == CPU_AVX512 && n >= AVX512_MIN) {
        vyre__xxh3_128_avx512(p, n, out);
        return;
    }
    if (c >= CPU_AVX2) {
        vyre__xxh3_128_avx2(p, n, out);
        return;
    }
#endif
    library(p, n, out);
}

int vyre__xxh3_128_variant(int variant, const void *p, size_t n, uint64_t out[2])
{
    int c = cpu_level();
    switch (variant) {
    case 0:
        library(p, n, out);
        return VYRE_OK;
#ifdef VYRE_XXH3_X86
    case 1:
        if (c < CPU_AVX2)
            return VYRE_ENOTSUP;
        vyre__xxh3_128_avx2(p, n, out);
        return VYRE_OK;
    case 2:
        if (c < CPU_AVX512)
            return VYRE_ENOTSUP;
        vyre__xxh3_128_avx512(p, n, out);
        return VYRE_OK;
#endif
    default:
        (void)c;
        return VYRE_ENOTSUP;
    }
}

/* ---- streaming ------------------------------------------------------------ */

_Static_assert(sizeof(XXH3_state_t) <= VYRE__XXH3_STATE_BYTES,
               "vyre__xxh3_stream holds an XXH3_state_t");

void vyre__xxh3_stream_reset(vyre__xxh3_stream *s, size_t total)
{
    s->variant = 0;
#ifdef VYRE_XXH3_X86
    int c = cpu_level();
    if (c == CPU_AVX512 && total >= AVX512_MIN) {
        s->variant = 2;
        vyre__xxh3_stream_reset_avx512(s->state);
        return;
    }
    if (c >= CPU_AVX2) {
        s->variant = 1;
        vyre__xxh3_stream_reset_avx2(s->state);
        return;
    }
#endif
    (void)total;
    (void)XXH3_128bits_reset((XXH3_state_t *)(void *)s->state);
}

int vyre__xxh3_stream_reset_variant(vyre__xxh3_stream *s, int variant)
{
    int c = cpu_level();
    switch (variant) {
    case 0:
        s->variant = 0;
        (void)XXH3_128bits_reset((XXH3_state_t *)(void *)s->state);
        return VYRE_OK;
#ifdef VYRE_XXH3_X86
    case 1:
        if (c < CPU_AVX2)
            return VYRE_ENOTSUP;
        s->variant = 1;
        vyre__xxh3_stream_reset_avx2(s->state);
        return VYRE_OK;
    case 2:
        if (c < CPU_AVX512)
            return VYRE_ENOTSUP;
        s->variant = 2;
        vyre__xxh3_stream_reset_avx512(s->state);
        return VYRE_OK;
#endif
    default:
        (void)c;
        return VYRE_ENOTSUP;
    }
}

void vyre__xxh3_stream_update(vyre__xxh3_stream *s, const void *p, size_t n)
{
#ifdef VYRE_XXH3_X86
    if (s->variant == 2) {
        vyre__xxh3_stream_update_avx512(s->state, p, n);
        return;
    }
    if (s->variant == 1) {
        vyre__xxh3_stream_update_avx2(s->state, p, n);
        return;
    }
#endif
    (void)XXH3_128bits_update((XXH3_state_t *)(void *)s->state, p, n);
}

void vyre__xxh3_stream_digest(const vyre__xxh3_stream *s, uint64_t out[2])
{
#ifdef VYRE_XXH3_X86
    if (s->variant == 2) {
        vyre__xxh3_stream_digest_avx512(s->state, out);
        return;
    }
    if (s->variant == 1) {
        vyre__xxh3_stream_digest_avx2(s->state, out);
        return;
    }
#endif
    XXH128_hash_t h = XXH3_128bits_digest((const XXH3_state_t *)(const void *)s->state);
    out[0] = h.low64;
    out[1] = h.high64;
}
