/*
 * sweep_spec.h - the old name of bench/sweep_binding.h, kept only while
 * bench_gpu.c still includes it (issue 24: that file's split renames the
 * include; delete this one then). Include bench/sweep_binding.h.
 */
#ifndef VYRE_BENCH_SWEEP_SPEC_H
#define VYRE_BENCH_SWEEP_SPEC_H

#include "bench/sweep_binding.h"

#endif /* VYRE_BENCH_SWEEP_SPEC_H */
