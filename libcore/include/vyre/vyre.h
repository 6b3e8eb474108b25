/*
 * vyre/vyre.h - umbrella header for libvyrecore.
 *
 * This header is part of libvyrecore's public API: everything under
 * libcore/include/vyre/ is, and nothing else is.
 */
#ifndef VYRE_VYRE_H
#define VYRE_VYRE_H

#include "error.h"
#include "version.h"
#include "cuda.h"
#include "jitcache.h"
#include "inductor.h"
#include "triton.h"
#include "usage.h"
#include "key.h"
#include "nvtx.h"
#include "counters.h"
#include "blob.h"
#include "remote.h"
#include "cache.h"
#include "config.h"
#include "units.h"
#include "nvrtc.h"
#include "compile.h"
#include "telemetry.h"
#include "gpu.h"
#include "proc.h"
#include "cupti.h"
#include "results.h"
#include "pipeline.h"
#include "axes.h"
#include "stats.h"
#include "bench.h"
#include "triton_spec.h"

#endif /* VYRE_VYRE_H */
