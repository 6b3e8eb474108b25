/*
 * cache_row.c - an index row from a blob header (cache_internal.h): what
 * put, reindex and verify write into the index, made in one place.
 */
#include "vyre/cache.h"

#include <string.h>

#include "cache/cache_internal.h"
#include "cache/index.h"

/* The index's kernels column: the names joined by ',', cut with "...". */
void vyre__cache_kernels_text(char *out, size_t size, const char *names, size_t names_len)
{
    size_t need = vyre_kernel_list_format(names, names_len, ",", out, size);
    if (need >= size) {
        size_t l = strlen(out);
        if (l + 4 > size)
            l = size - 4;
        memcpy(out + l, "...", 4);
    }
}

void vyre__cache_row_from_header(vyre__index_row *row, const vyre_blob_header *h,
                                 uint64_t file_size, uint64_t disk_size)
{
    memset(row, 0, sizeof *row);
    row->key_version = h->key_version;
    memcpy(row->source, h->source, sizeof row->source);
    row->n_kernels = h->n_kernels;
    if (h->kernels)
        vyre__cache_kernels_text(row->kernels, sizeof row->kernels, h->kernels, h->kernels_size);
    row->key = h->key;
    row->kind = h->kind;
    memcpy(row->arch, h->arch, sizeof row->arch);
    memcpy(row->toolchain, h->toolchain, sizeof row->toolchain);
    row->raw_size = h->raw_size;
    row->stored_size = h->stored_size;
    row->file_size = file_size;
    row->disk_size = disk_size;
    row->created_unix_ns = h->created_unix_ns;
    row->compile_ns = h->compile_ns;
}
