/*
 * tel_v1.c - see tel_v1.h.
 */
#include "tel_v1.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

vyre__tel_v1_page *tu_tel_v1_page(const unsigned char *cur)
{
    const vyre__tel_page *p = (const vyre__tel_page *)(const void *)cur;
    vyre__tel_v1_page *v1 = calloc(1, sizeof *v1);
    cr_assert_not_null(v1);
    memcpy(v1, p, offsetof(vyre__tel_header, ranges));
    v1->h.version = 1;
    v1->h.header_size = sizeof(vyre__tel_v1_header);
    v1->h.total_size = sizeof(vyre__tel_v1_page);
    v1->h.hist_buckets = VYRE__TEL_V1_HIST_BUCKETS;
    v1->h.ranges[0].count = 10;
    v1->h.ranges[0].total_ns = 105000;
    v1->h.ranges[0].max_ns = 12950;
    v1->h.ranges[0].buckets[13] = 10;
    v1->h.ring_count = atomic_load(&p->h.ring_count);
    v1->h.ring_head = atomic_load(&p->h.ring_head);
    memcpy(v1->ring, p->ring, sizeof v1->ring);
    return v1;
}
