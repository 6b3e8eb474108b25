/*
 * pipeline_buffer.c - device buffers of a context (see vyre/pipeline.h):
 * allocation, upload and download through pinned staging, zeroing.
 *
 * Guarantees: every copy stays within the buffer (VYRE_ERANGE otherwise),
 * and an upload or a download has finished when the call returns.
 */
#include "cuda/pipeline_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vyre/counters.h"

int vyre_buffer_alloc(vyre_ctx *ctx, size_t size, vyre_buffer **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!ctx || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_buffer_alloc: NULL argument");
    if (!size)
        return vyre__fail(err, VYRE_EINVAL, "allocate at least one byte", "a buffer of 0 bytes");
    int rc = vyre__ctx_make_current(ctx, err);
    if (rc)
        return rc;
    vyre_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a buffer handle");
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc of %zu bytes", size);
    rc = vyre__cuda_check(ctx->cu->cuMemAlloc(&b->dptr, size), call, err);
    if (rc) {
        free(b);
        return rc;
    }
    b->ctx = ctx;
    b->size = size;
    *out = b;
    return VYRE_OK;
}

void vyre_buffer_free(vyre_buffer *b)
{
    if (!b)
        return;
    if (!vyre__ctx_make_current(b->ctx, NULL))
        (void)b->ctx->cu->cuMemFree(b->dptr);
    free(b);
}

uint64_t vyre_buffer_device_ptr(const vyre_buffer *b)
{
    return b ? (uint64_t)b->dptr : 0;
}

size_t vyre_buffer_size(const vyre_buffer *b)
{
    return b ? b->size : 0;
}

static int check_span(const vyre_buffer *b, size_t offset, const void *host, size_t n,
                      const char *what, vyre_error *err)
{
    if (!b || (n && !host))
        return vyre__fail(err, VYRE_EINVAL, NULL, "%s: NULL argument", what);
    if (offset > b->size || n > b->size - offset)
        return vyre__fail(err, VYRE_ERANGE, "stay within the buffer",
                          "%s: %zu bytes at offset %zu of a %zu-byte buffer", what, n, offset,
                          b->size);
    return VYRE_OK;
}

/* Copies through pinned staging on the ctx's stream and waits. */
static int transfer(vyre_buffer *b, size_t offset, const void *src, void *dst, size_t n,
                    vyre_error *err)
{
    vyre_ctx *ctx = b->ctx;
    const vyre__cuda_fns *cu = ctx->cu;
    int rc = vyre__ctx_make_current(ctx, err);
    if (rc)
        return rc;
    vyre__block st;
    rc = vyre__pool_get(&ctx->pin_pool, n, &st, err);
    if (rc)
        return rc;
    void *staging = (void *)(uintptr_t)st.addr;
    CUresult r;
    if (src) {
        memcpy(staging, src, n);
        r = cu->cuMemcpyHtoDAsync(b->dptr + offset, staging, n, ctx->stream);
        rc = vyre__cuda_check(r, "cuMemcpyHtoDAsync", err);
    } else {
        r = cu->cuMemcpyDtoHAsync(staging, b->dptr + offset, n, ctx->stream);
        rc = vyre__cuda_check(r, "cuMemcpyDtoHAsync", err);
    }
    r = cu->cuStreamSynchronize(ctx->stream);
    vyre_counter_add(VYRE_CTR_SYNCS, 1);
    if (!rc)
        rc = vyre__cuda_check(r, "cuStreamSynchronize", err);
    if (!rc) {
        if (src) {
            vyre_counter_add(VYRE_CTR_H2D_COPIES, 1);
            vyre_counter_add(VYRE_CTR_H2D_BYTES, n);
        } else if (dst) {
            memcpy(dst, staging, n);
            vyre_counter_add(VYRE_CTR_D2H_COPIES, 1);
            vyre_counter_add(VYRE_CTR_D2H_BYTES, n);
            vyre_counter_add(VYRE_CTR_READBACKS, 1);
        }
    }
    vyre__pool_put(&ctx->pin_pool, &st);
    return rc;
}

int vyre_buffer_upload(vyre_buffer *b, size_t offset, const void *src, size_t n, vyre_error *err)
{
    int rc = check_span(b, offset, src, n, "vyre_buffer_upload", err);
    if (rc || !n)
        return rc;
    return transfer(b, offset, src, NULL, n, err);
}

int vyre_buffer_download(vyre_buffer *b, size_t offset, void *dst, size_t n, vyre_error *err)
{
    int rc = check_span(b, offset, dst, n, "vyre_buffer_download", err);
    if (rc || !n)
        return rc;
    return transfer(b, offset, NULL, dst, n, err);
}

int vyre_buffer_zero(vyre_buffer *b, vyre_error *err)
{
    if (!b)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_buffer_zero: NULL buffer");
    int rc = vyre__ctx_make_current(b->ctx, err);
    if (rc)
        return rc;
    return vyre__cuda_check(b->ctx->cu->cuMemsetD8Async(b->dptr, 0, b->size, b->ctx->stream),
                            "cuMemsetD8Async", err);
}
