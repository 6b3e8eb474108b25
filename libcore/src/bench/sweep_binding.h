/*
 * sweep_binding.h - a user sweep's binding: how each point of the axes turns
 * into a kernel launch (parameters, grid, block, dynamic shared memory,
 * buffers and their fills, the bytes and flops a launch counts), read
 * from the spec's "args", "grid", "block", "shared", "bytes", "flops",
 * "cooperative", "pdl" and "version", or the default binding (float *out, const float *in, int N).
 * Pure host code: the GPU side (allocating, filling, launching) is
 * sweep_run.c's. Not public; vyre/bench.h documents the spec for users.
 *
 * Every error names the spec (its origin) and the JSON path
 * ("$.args[2].fill"), and for an expression the column; errors at a point
 * add the point ("at N=0").
 */
#ifndef VYRE_BENCH_SWEEP_BINDING_H
#define VYRE_BENCH_SWEEP_BINDING_H

#include <stddef.h>
#include <stdint.h>

#include "bench/expr.h"
#include "bench/ptxinfo.h"
#include "vyre/bench.h"

#define VYRE__SWEEP_ARGS_MAX 32

typedef enum vyre__arg_kind {
    VYRE__ARG_BUFFER,
    VYRE__ARG_INT,
    VYRE__ARG_FLOAT,
    VYRE__ARG_NULL,
} vyre__arg_kind;

/* Element and scalar types, in the order of the names "f32", "f16", ... */
typedef enum vyre__elem {
    VYRE__F32,
    VYRE__F16,
    VYRE__BF16,
    VYRE__F64,
    VYRE__I8,
    VYRE__I32,
    VYRE__I64,
    VYRE__U8,
} vyre__elem;

typedef enum vyre__fill {
    VYRE__FILL_ZEROS,
    VYRE__FILL_ONES,
    VYRE__FILL_IOTA,
    VYRE__FILL_RANDOM,
} vyre__fill;

/* Bytes of one element. */
size_t vyre__elem_size(vyre__elem t);

typedef struct vyre__sweep_arg {
    vyre__arg_kind kind;
    vyre__elem type;   /* buffers: the element; scalars: I32, I64, F32 or F64 */
    vyre__expr *value; /* buffer element count, int value, float from an expression */
    int faxis;         /* float: an axis read as is (a floating-point one too), or -1 */
    double fconst;     /* float: a constant (value and faxis unset) */
    vyre__fill fill;
    uint64_t seed; /* random fill */
} vyre__sweep_arg;

typedef struct vyre__sweep_binding {
    int version;    /* 1: grid counts threads (today's specs), 2: blocks */
    int is_default; /* no spec args: (float *out, const float *in, int N) */
    vyre__sweep_arg args[VYRE__SWEEP_ARGS_MAX];
    size_t nargs;
    vyre__expr *grid[3]; /* NULL: 1 */
    int grid_threads;    /* grid[0] is threads in x: blocks = ceil(grid[0] / block[0]) */
    vyre__expr *block[3];
    int block_given;                    /* 0: from .reqntid/.maxntid, else 256 (version 1) */
    vyre__expr *shared, *bytes, *flops; /* NULL: 0, the buffers' sum, none */
    /* "cooperative": true, "pdl": true: a cooperative grid (every block
     * resident at once, as Triton's launch_cooperative_grid) and
     * programmatic dependent launch (Triton's launch_pdl), both through
     * cuLaunchKernelEx's attributes. 0: cuLaunchKernel. */
    int cooperative, pdl;
    char origin[256];
} vyre__sweep_binding;

/* One point's launch, as vyre__sweep_binding_eval computes it. */
typedef struct vyre__sweep_launch {
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    uint64_t buf_elems[VYRE__SWEEP_ARGS_MAX]; /* buffers: elements (at least 1 allocated) */
    int64_t ints[VYRE__SWEEP_ARGS_MAX];
    double floats[VYRE__SWEEP_ARGS_MAX];
    double memory_bytes; /* device memory of the buffers */
    double bytes;        /* per launch: the "bytes" expression, else the buffers' sum */
    double flops;        /* per launch; 0: no "flops" */
} vyre__sweep_launch;

/*
 * Reads sw's spec (or makes the default binding) against sw->axes. Checks
 * every field and that every axis is used. origin names the spec in
 * messages (NULL: "spec"). On failure b holds nothing to release.
 * Returns 0, VYRE_EINVAL, VYRE_ERANGE or VYRE_ENOMEM.
 */
int vyre__sweep_binding_make(const vyre_bench_sweep *sw, vyre__sweep_binding *b, vyre_error *err);

/* Frees what a successful make allocated. NULL is a no-op. */
void vyre__sweep_binding_release(vyre__sweep_binding *b);

/*
 * The launch at point coords. ptx (may be NULL: not PTX, or not read)
 * gives the block when the spec leaves it out, and checks the parameter
 * count and sizes, a given block against .reqntid/.maxntid. max_block
 * and max_shared (0: unknown) are the device's limits. Returns 0 or
 * VYRE_EINVAL / VYRE_ERANGE naming the JSON path and the point.
 */
int vyre__sweep_binding_eval(const vyre__sweep_binding *b, const vyre_axes *axes,
                             const size_t *coords, const vyre__ptx_info *ptx, unsigned max_shared,
                             vyre__sweep_launch *out, vyre_error *err);

/*
 * Writes elements [first, first + n) of a buffer of type t filled with f
 * (seed for random) into dst (n * vyre__elem_size(t) bytes). zeros and
 * ones are 0 and 1; iota is the element's index (wrapping in the integer
 * types, rounded to nearest even in f16/bf16); random is uniform in
 * [-1, 1) for floating point and in 0..127 for integers, a function of
 * seed and index only (so chunks are independent and runs repeat).
 */
void vyre__fill_chunk(vyre__elem t, vyre__fill f, uint64_t seed, uint64_t first, void *dst,
                      size_t n);

/* IEEE binary16 and bfloat16 of a float, rounded to nearest even. */
uint16_t vyre__f32_to_f16(float f);
uint16_t vyre__f32_to_bf16(float f);

#endif /* VYRE_BENCH_SWEEP_BINDING_H */
