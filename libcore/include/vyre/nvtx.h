/*
 * vyre/nvtx.h - NVTX ranges in the "vyre" domain, and the range catalog.
 *
 * This header is part of libvyrecore's public API.
 *
 * Every range vyre emits is in this catalog, with a registered string, so
 * Nsight Systems (or CUPTI with NVTX routed to it) shows stable names. With
 * no tool attached a push+pop costs a few nanoseconds (NVTX3 is header-only
 * and its entry points are no-ops until a tool injects itself).
 */
#ifndef VYRE_NVTX_H
#define VYRE_NVTX_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_NVTX_DOMAIN    "vyre"
#define VYRE_NVTX_LABEL_MAX 127

/* X(ID, "name", "description"). Append only: ids index telemetry pages. */
#define VYRE_RANGE_CATALOG(X)                                                                      \
    X(CODEGEN, "vyre.cuda.codegen", "generating CUDA C or PTX for a pipeline")                     \
    X(PIPELINE_COMPILE, "vyre.cuda.pipeline.compile",                                              \
      "compiling a pipeline through the cache (lookup, NVRTC, link, store, module load)")          \
    X(PIPELINE_DISPATCH, "vyre.cuda.pipeline.dispatch", "one dispatch of a compiled pipeline")     \
    X(PIPELINE_BATCH_DISPATCH, "vyre.cuda.pipeline.batch_dispatch",                                \
      "a batch of dispatches captured into a CUDA graph and replayed")                             \
    X(HOST_DISPATCH, "vyre.cuda.host_dispatch",                                                    \
      "dispatch with host buffers: upload, launch, read back")                                     \
    X(RESIDENT_DISPATCH, "vyre.cuda.resident_dispatch",                                            \
      "dispatch on device-resident buffers, no host copies")                                       \
    X(CACHE_LOOKUP, "vyre.cache.lookup", "pipeline cache lookup: open, validate, read a blob")     \
    X(CACHE_STORE, "vyre.cache.store", "pipeline cache store: write, fsync, rename a blob")        \
    X(CACHE_VERIFY, "vyre.cache.verify", "verifying every blob and index row of the cache")        \
    X(CACHE_PRUNE, "vyre.cache.prune", "pruning the pipeline cache")                               \
    X(NVRTC_COMPILE, "vyre.cuda.nvrtc.compile", "NVRTC compiling CUDA C to PTX or cubin")          \
    X(MODULE_LOAD, "vyre.cuda.module_load", "cuModuleLoadData of a cubin")                         \
    X(BENCH_POINT, "vyre.bench.point",                                                             \
      "one measured point of a benchmark run; payload is the point's row id")

typedef enum vyre_range_id {
#define VYRE__RANGE_ENUM(id, name, desc) VYRE_RANGE_##id,
    VYRE_RANGE_CATALOG(VYRE__RANGE_ENUM)
#undef VYRE__RANGE_ENUM
        VYRE_RANGE_COUNT
} vyre_range_id;

typedef struct vyre_range_def {
    vyre_range_id id;
    const char *name;        /* e.g. "vyre.cuda.pipeline.compile" */
    const char *label;       /* the registered NVTX string; equals name */
    const char *description; /* one line for humans */
} vyre_range_def;

/* The catalog entry for id (0 to VYRE_RANGE_COUNT - 1), or NULL when id is
 * out of range. Static storage. */
VYRE_EXTERN const vyre_range_def *vyre_nvtx_range(vyre_range_id id);

/* Push/pop a catalog range on the calling thread (no-ops with no NVTX tool
 * attached). Out-of-range ids are ignored. Thread-safe. */
VYRE_EXTERN void vyre_nvtx_push(vyre_range_id id);
VYRE_EXTERN void vyre_nvtx_pop(void);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_NVTX_H */
