/*
 * counters_internal.h - what the range timer (nvtx.c) needs from the
 * counters beyond the public vyre/counters.h.
 */
#ifndef VYRE_TRACE_COUNTERS_INTERNAL_H
#define VYRE_TRACE_COUNTERS_INTERNAL_H

#include <stdint.h>

#include "vyre/nvtx.h"

/* Records one timed sample of a range that stands for `weight` ranges (the
 * sample and the untimed ones since the last sample): count, sum and the
 * sample's bucket grow by weight, so count == sum of buckets holds. */
void vyre__range_record_weighted(vyre_range_id id, uint64_t ns, uint64_t weight);

/* 1 when the calling thread's last range pop was a hot dispatch range left
 * untimed by sampling: the launch path then skips its telemetry check. */
int vyre__nvtx_last_pop_sampled_out(void);

/* The calling thread's current sampling stride for a range (1: every one
 * timed); for the tests. */
unsigned vyre__nvtx_sample_stride(vyre_range_id id);

#endif /* VYRE_TRACE_COUNTERS_INTERNAL_H */
