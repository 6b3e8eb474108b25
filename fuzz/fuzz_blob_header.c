/*
 * fuzz_blob_header.c - libFuzzer target for the blob header decoder, the
 * surface that reads bytes straight off the disk.
 *
 * Each input is decoded twice: as it is, and (when it is long enough) with
 * its header checksum recomputed, so that mutations reach the field checks
 * behind the checksum instead of dying at it. Invariants checked:
 *   - decode never reads past `size` (ASan) and never crashes (UBSan);
 *   - a reject is VYRE_ECORRUPT or VYRE_EVERSION with a reason in range,
 *     VYRE_EVERSION exactly when the reason is "version", and the detail set;
 *   - an accepted header re-encodes to exactly the bytes it came from
 *     (the encoding is canonical) and its strings are terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cache/blob_internal.h"
#include "vyre/blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(const uint8_t *data, size_t size)
{
    vyre_blob_header h;
    vyre_blob_reject why = VYRE_REJECT_COUNT;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre__blob_header_decode(data, size, &h, &why, &err);
    if (rc == VYRE_OK) {
        if (why != VYRE_REJECT_NONE || size < VYRE_BLOB_HEADER_SIZE)
            abort();
        if (!memchr(h.arch, 0, sizeof h.arch) || !h.arch[0] ||
            !memchr(h.toolchain, 0, sizeof h.toolchain))
            abort();
        if (h.stored_size > VYRE_BLOB_MAX_PAYLOAD || h.raw_size != h.stored_size ||
            !vyre_blob_kind_name(h.kind))
            abort();
        uint8_t again[VYRE_BLOB_HEADER_SIZE];
        if (vyre_blob_header_encode(&h, again, &err) != VYRE_OK)
            abort();
        if (memcmp(again, data, VYRE_BLOB_HEADER_SIZE) != 0)
            abort();
        return;
    }
    if (rc != VYRE_ECORRUPT && rc != VYRE_EVERSION)
        abort();
    if (why == VYRE_REJECT_NONE || why >= VYRE_REJECT_COUNT)
        abort();
    if ((rc == VYRE_EVERSION) != (why == VYRE_REJECT_VERSION))
        abort();
    if (err.code != rc || !err.message[0] || !err.hint[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_one(data, size);
    if (size >= VYRE_BLOB_HEADER_SIZE) {
        uint8_t buf[VYRE_BLOB_HEADER_SIZE];
        memcpy(buf, data, sizeof buf);
        uint64_t sum = (uint64_t)XXH3_64bits(buf, VYRE_BLOB_HEADER_SIZE - 8);
        for (int i = 0; i < 8; i++)
            buf[VYRE_BLOB_HEADER_SIZE - 8 + i] = (uint8_t)(sum >> (8 * i));
        check_one(buf, sizeof buf);
    }
    return 0;
}
