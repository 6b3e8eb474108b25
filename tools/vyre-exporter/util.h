/*
 * util.h - helpers shared by vyre-exporter's collectors and renderers
 * (util.c). They depend on nothing else in the exporter, so the arrows go
 * one way: exporter.c -> collect_*.c, metrics_*.c -> util.c.
 */
#ifndef VYRE_EXPORTER_UTIL_H
#define VYRE_EXPORTER_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tool_util.h"

/* Bucket bounds of vyre_range_duration_seconds: the histogram bucket edges
 * (ns) nearest to 1, 2.5 and 5 times each power of ten from 1 us to 10 s,
 * ascending, into out[EXP_MAX_EDGES]; returns their count (22). */
#define EXP_MAX_EDGES 24
size_t exp_range_edges(uint64_t *out);

/* ns as exact decimal seconds ("0.000000992", "10.200547328", "1"), for
 * the `le` labels: no rounding, so a bound reads back as its bucket edge.
 * Returns out. */
const char *exp_format_ns_as_seconds(char *out, size_t size, uint64_t ns);

#endif /* VYRE_EXPORTER_UTIL_H */
