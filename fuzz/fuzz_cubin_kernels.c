/*
 * fuzz_cubin_kernels.c - libFuzzer target for vyre_cubin_kernels, the ELF64
 * reader that lists a cubin's kernels (libcore/src/cuda/cubin.c): any bytes
 * either fail with VYRE_EINVAL and a message, or give a well-formed list
 * (names NUL-terminated, non-empty, inside the returned length, as many as
 * counted). Nothing may be read outside the input (ASan).
 *
 *   ./build-fuzz/fuzz/fuzz_cubin_kernels -runs=1000000 SCRATCH fuzz/corpus/cubin_kernels
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vyre/blob.h"
#include "cache/blob_internal.h"
#include "base/cubin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes: reads past it are caught. */
    uint8_t *img = malloc(size ? size : 1);
    if (!img)
        return 0;
    memcpy(img, data, size);
    char *names = NULL;
    size_t len = 0, n = 0;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_cubin_kernels(img, size, &names, &len, &n, &err);
    if (rc == VYRE_OK) {
        size_t seen = 0;
        for (size_t o = 0; o < len; seen++) {
            const char *e = memchr(names + o, 0, len - o);
            if (!e || e == names + o)
                abort();
            if (vyre__kernel_list_has(names, len, names + o) != 1)
                abort();
            o = (size_t)(e - names) + 1;
        }
        if (seen != n || (n == 0) != (names == NULL))
            abort();
    } else if (rc != VYRE_EINVAL || names || n || !err.message[0]) {
        abort();
    }
    free(names);
    free(img);
    return 0;
}
