/*
 * clock.h - libcore's one clock (internal): monotonic and wall-clock time in
 * ns, and a cheap monotonic clock for the launch path.
 *
 * vyre__mono_ns() is what every duration is measured with (compile and link
 * times, benchmark loops, busy-wait deadlines, samples); vyre__unix_ns() is
 * what a stored timestamp is (blob creation, last access, result rows). No
 * other module reads clock_gettime for either.
 *
 * Range timing and telemetry run on every launch, where a few hundred
 * nanoseconds matter (a bare cuLaunchKernel costs about 3.5 us). On x86-64
 * with an invariant TSC, ticks are read with rdtsc (a few ns, never a
 * syscall, which clock_gettime can become on some hypervisors' clock
 * sources) and scaled with a factor calibrated once against
 * CLOCK_MONOTONIC; elsewhere this is clock_gettime(CLOCK_MONOTONIC).
 */
#ifndef VYRE_CLOCK_H
#define VYRE_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC now, in ns: for durations and deadlines. */
uint64_t vyre__mono_ns(void);

/* CLOCK_REALTIME now, in ns since the Unix epoch: for timestamps that are
 * stored or shown. */
int64_t vyre__unix_ns(void);

/* Raw ticks (TSC cycles, or ns on the fallback). */
uint64_t vyre__ticks(void);

/* Converts a tick difference to ns. */
uint64_t vyre__ticks_to_ns(uint64_t ticks);

/* Monotonic ns on the same base as CLOCK_MONOTONIC (to within the
 * calibration error), cheap. */
uint64_t vyre__now_ns_fast(void);

/* The same for a tick reading taken earlier with vyre__ticks(). */
uint64_t vyre__ticks_to_mono_ns(uint64_t ticks);

/* The tick reading of the calling thread's last timed range pop (0 when
 * none): lets the launch path reuse it instead of reading the clock again. */
uint64_t vyre__nvtx_last_pop_ticks(void);

#endif /* VYRE_CLOCK_H */
