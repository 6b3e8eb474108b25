/*
 * inductor_launch.h - what TorchInductor's cache says about one Triton
 * kernel it generated (internal): the .best_config its autotuning wrote
 * (which Triton group won, and the block sizes), the kernel's module
 * (grid type, size hints, the launch signature), and the compiled graph's
 * output code (the sizes the model launched it at, and the element count
 * of each tensor it passed). Read only; every file bounded.
 */
#ifndef VYRE_INDUCTOR_LAUNCH_H
#define VYRE_INDUCTOR_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"

#define VYRE__IND_ARGS_MAX 32
#define VYRE__IND_NAME_MAX 64
#define VYRE__IND_FILE_MAX 320

typedef struct vyre__inductor_kernel {
    /* The .best_config whose triton_cache_hash is one of the keys asked
     * about: best_key its index in them (-1: none); the blocks it names
     * (0: not named). file: relative to the cache ("ya/bfd3....best_config"). */
    int best_key;
    char best_file[VYRE__IND_FILE_MAX];
    int64_t xblock, yblock, zblock, r0block;
    /* The kernel's module: grid type ("Grid1D"), size hints by axis
     * ("x", "r0_"), the runtime arguments in order (the signature less
     * its constexprs). */
    int have_module;
    char module_file[VYRE__IND_FILE_MAX];
    char grid_type[16];
    char hint_axis[4][8];
    int64_t hint[4];
    size_t nhints;
    char sig[VYRE__IND_ARGS_MAX][VYRE__IND_NAME_MAX];
    size_t nsig;
    /* The output code's first launch (`name.run(...)`): each positional
     * argument as written, an integer's value (is_int), a tensor's
     * storage in elements (elems, -1: not found) and where the size was
     * read from (the tensor it was made as, "buf3"). nlaunches: how many
     * launches of the kernel the output code holds. */
    int have_launch;
    char launch_file[VYRE__IND_FILE_MAX];
    int launch_line;
    size_t nlaunches;
    size_t nargs;
    char arg[VYRE__IND_ARGS_MAX][VYRE__IND_NAME_MAX];
    int is_int[VYRE__IND_ARGS_MAX];
    int64_t value[VYRE__IND_ARGS_MAX]; /* is_int */
    int64_t elems[VYRE__IND_ARGS_MAX]; /* a tensor: storage elements, -1 unknown */
    char base[VYRE__IND_ARGS_MAX][VYRE__IND_NAME_MAX];
} vyre__inductor_kernel;

/*
 * Reads the Inductor cache at dir (its "<2 chars>/" folders: *.best_config
 * and *.py) for kernel `name`, whose Triton groups are keys[0..nkeys).
 * *out is always initialised; what is not found stays unset. Returns 0, or
 * VYRE_ENOENT (dir cannot be opened) / VYRE_ENOMEM.
 */
int vyre__inductor_kernel_read(const char *dir, const char *name, const char *const *keys,
                               size_t nkeys, vyre__inductor_kernel *out, vyre_error *err);

/* Storage elements of a tensor of sizes shape and strides stride (n dims):
 * 1 + sum((shape[i] - 1) * stride[i]), 0 when a dimension is 0; -1 on
 * overflow or a negative stride. */
int64_t vyre__inductor_storage_elems(const int64_t *shape, const int64_t *stride, size_t n);

#endif /* VYRE_INDUCTOR_LAUNCH_H */
