/*
 * cupti_parser.c - CUPTI activity records into vyre_activity records for a
 * program that runs its own CUPTI client (libvyre-inject): the record
 * normaliser and the NVTX marker pairing of cupti.c (cupti_internal.h)
 * behind the public vyre__cupti_parser (vyre/cupti.h). No GPU, no CUPTI
 * library and no global state: the caller hands in raw records.
 */
#include <stdlib.h>

#include "base/internal.h"
#include "cuda/cupti_internal.h"

struct vyre__cupti_parser {
    vyre__marker_pairs pairs;
};

int vyre__cupti_parser_new(vyre__cupti_parser **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__cupti_parser_new: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a CUPTI record parser");
    return VYRE_OK;
}

void vyre__cupti_parser_free(vyre__cupti_parser *p)
{
    free(p);
}

int vyre__cupti_parser_feed(vyre__cupti_parser *p, const void *record, vyre_activity *out,
                            uint64_t *unpaired)
{
    if (!p || !record || !out)
        return 0;
    switch (vyre__cupti_normalize(record, out)) {
    case VYRE__NORM_RECORD:
        if (out->kind == VYRE_ACTIVITY_MARKER)
            return vyre__marker_pair(&p->pairs, out, unpaired ? unpaired : &(uint64_t){0});
        return 1;
    case VYRE__NORM_MARKER_DATA:
        if (out->has_payload)
            vyre__marker_payload(&p->pairs, out->marker_id, out->payload);
        return 0;
    default:
        return 0;
    }
}
