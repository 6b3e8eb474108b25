/*
 * counters_internal.h - what the range timer (nvtx.c) needs from the
 * counters beyond the public vyre/counters.h.
 */
#ifndef VYRE_TRACE_COUNTERS_INTERNAL_H
#define VYRE_TRACE_COUNTERS_INTERNAL_H

#include <stdint.h>

#include "vyre/nvtx.h"
#include "vyre/counters.h"

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

/* The bucket index a duration of ns falls in (what vyre_range_record uses):
 * a count-leading-zeros and shifts, no division. */
int vyre__hist_bucket_of(uint64_t ns);

/* Lowest duration bucket b holds (b in 0..VYRE_HIST_BUCKETS-1; b + 1 gives
 * the exclusive upper bound for all but the last bucket). */
uint64_t vyre__hist_bucket_lo(int b);

/* ---- not exported (vyre/counters.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

const char *vyre_counter_unit(vyre_counter_id id);

/* Turns range timing off/on (on by default; VYRE_RANGE_TIMING=0 turns it
 * off at start). */
void vyre_range_timing_enable(int on);

#endif /* VYRE_TRACE_COUNTERS_INTERNAL_H */
