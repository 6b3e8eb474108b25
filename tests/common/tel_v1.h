/*
 * tel_v1.h - builds a telemetry page of layout version 1 (what an older
 * libvyrecore writes) from a current one, for the reader tests (unit) and
 * vyre-top's (cli).
 */
#ifndef VYRE_TEST_TEL_V1_H
#define VYRE_TEST_TEL_V1_H

#include "trace/telemetry_internal.h"
#include "trace/telemetry_v1.h"

/* The version 1 page made from the current page image cur through the
 * frozen layout: the parts before the histograms and the ring are the same
 * bytes; range 0 gets ten samples in the log2 bucket 8192..16383 ns. The
 * caller frees it. */
vyre__tel_v1_page *tu_tel_v1_page(const unsigned char *cur);

#endif
