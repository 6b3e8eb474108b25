/*
 * blob_internal.h - the store with a hook before the rename (internal).
 */
#ifndef VYRE_BLOB_INTERNAL_H
#define VYRE_BLOB_INTERNAL_H

#include "vyre/blob.h"

/* Called with the final header once the temp file is complete and fsynced,
 * just before it is renamed into place. A non-zero return aborts the store
 * (the temp file is removed) and is returned. */
typedef int (*vyre__blob_before_rename_fn)(const vyre_blob_header *h, void *ctx, vyre_error *err);

/* vyre_blob_store with the hook above (NULL: none). */
int vyre__blob_store_ex(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                        vyre__blob_before_rename_fn before_rename, void *ctx, vyre_error *err);

#endif /* VYRE_BLOB_INTERNAL_H */
