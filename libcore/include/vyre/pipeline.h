/*
 * vyre/pipeline.h - compiling pipelines through the cache and dispatching
 * them on a GPU.
 *
 * This header is part of libvyrecore's public API.
 *
 * A vyre_ctx is one device: the driver loaded (vyre_cuda_init), the device's
 * primary context retained, a stream of its own, a pipeline cache, an
 * in-memory module cache and pools of transient device and pinned host
 * memory. A vyre_pipeline is one kernel entry point of a compiled module.
 *
 * Compiling (vyre_pipeline_compile) goes, fastest first:
 *   1. the in-memory module cache of the ctx: no disk, no compiler;
 *   2. the on-disk cache (vyre_cache_get): a validated cubin is loaded with
 *      cuModuleLoadData, no NVRTC, no JIT;
 *   3. a compile (NVRTC for CUDA C, nvJitLink for PTX; see vyre/compile.h),
 *      stored in the cache with the time it took, then loaded.
 * A blob that fails validation was quarantined by the cache and is a miss;
 * a cubin the driver refuses to load is recompiled and replaced. Keys come
 * from vyre_compile_key() with the device's architecture, so blobs seeded
 * ahead of time (`vyre-cachectl seed`, vyre_compile_through_cache) are hits.
 *
 * Dispatching:
 *   vyre_pipeline_launch            the hot path: args as cuLaunchKernel takes
 *                                   them; an NVTX range, relaxed counters and
 *                                   cuLaunchKernel, nothing else (no
 *                                   allocation, no lock)
 *   vyre_pipeline_dispatch_resident vyre_arg bindings of resident buffers
 *                                   and scalars; no copies, no sync
 *   vyre_pipeline_dispatch_host     host memory in and out: upload through
 *                                   pinned staging, launch, read back, sync
 *   vyre_batch_* / vyre_graph_*     launches captured into a CUDA graph,
 *                                   replayed with one cuGraphLaunch
 *
 * Every step is counted (vyre/counters.h) and wrapped in its catalog NVTX
 * range (vyre/nvtx.h): PIPELINE_COMPILE, MODULE_LOAD, NVRTC_COMPILE,
 * PIPELINE_DISPATCH, HOST_DISPATCH, RESIDENT_DISPATCH,
 * PIPELINE_BATCH_DISPATCH.
 *
 * Threads: CUDA makes a context current per thread. vyre_ctx_open makes the
 * ctx's context current on the calling thread; every call here except the
 * launch paths (vyre_pipeline_launch, vyre_pipeline_dispatch_resident,
 * vyre_graph_launch, which stay lean) makes it current again on the calling
 * thread. A thread that only launches calls vyre_ctx_make_current() once.
 * Compiling and dispatching may happen from several threads at once; one
 * batch is used by one thread.
 */
#ifndef VYRE_PIPELINE_H
#define VYRE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "cache.h"
#include "error.h"
#include "export.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vyre_ctx vyre_ctx;
typedef struct vyre_pipeline vyre_pipeline;
typedef struct vyre_buffer vyre_buffer;
typedef struct vyre_batch vyre_batch;
typedef struct vyre_graph vyre_graph;

/* ---- context ------------------------------------------------------------ */

/*
 * Opens device `device` (a CUDA ordinal): vyre_cuda_init(), the primary
 * context retained and made current on the calling thread, a non-blocking
 * stream created. cache may be NULL: the default cache
 * (vyre_cache_open(NULL, 0)) is opened and closed with the ctx; otherwise
 * the caller keeps ownership and closes it after vyre_ctx_close().
 * Returns 0; VYRE_ENODRIVER / VYRE_ENODEV (no driver, no such device, a
 * driver without what dispatch needs); VYRE_ECUDA; the cache's errors.
 * *out is the caller's: vyre_ctx_close().
 */
VYRE_EXTERN int vyre_ctx_open(int device, vyre_cache *cache, vyre_ctx **out, vyre_error *err);

/*
 * Waits for the ctx's stream, frees every pipeline still open (and unloads
 * every module), frees the pooled memory, destroys the stream, releases the
 * primary context and closes the cache when the ctx opened it. Buffers and
 * graphs must be freed before. NULL is a no-op.
 */
VYRE_EXTERN void vyre_ctx_close(vyre_ctx *ctx);

/* What a ctx runs on. Owned by the ctx and valid until vyre_ctx_close;
 * read through the pointer vyre_ctx_info_get returns (fields are only
 * ever appended). */
typedef struct vyre_ctx_info {
    int device;              /* the CUDA ordinal vyre_ctx_open was given */
    const char *arch;        /* the device's architecture, e.g. "sm_90" */
    const char *device_name; /* e.g. "NVIDIA H100 80GB HBM3" */
    vyre_cache *cache;       /* the pipeline cache in use (owned as vyre_ctx_open says) */
    void *cu_stream;         /* interop: the ctx's CUstream */
} vyre_ctx_info;

/* ctx's device, cache and stream; NULL for a NULL ctx. */
VYRE_EXTERN const vyre_ctx_info *vyre_ctx_info_get(const vyre_ctx *ctx);

/* What a memory pool has done. */
typedef struct vyre_pool_stats {
    uint64_t allocs;        /* blocks obtained from the driver */
    uint64_t reuses;        /* requests served from a free list */
    uint64_t cached_bytes;  /* held on the free lists now */
    uint64_t cached_blocks; /* blocks on the free lists now */
} vyre_pool_stats;

/* ---- compiling ---------------------------------------------------------- */

/* Flags of a vyre_pipeline_desc. */
enum {
    /* Skip the in-memory module cache: look up the disk cache (or compile)
     * and load a module of this pipeline's own, unloaded when it is freed.
     * For measuring the disk path and for tests. */
    VYRE_PIPELINE_NO_MODULE_CACHE = 1u << 0,
};

/* What to compile. Everything is owned by the caller and only read during
 * vyre_pipeline_compile. */
typedef struct vyre_pipeline_desc {
    vyre_source_kind kind;   /* CUDA C, PTX or cubin */
    const void *src;         /* source bytes */
    size_t len;              /* bytes in src */
    const char *entry;       /* kernel to launch (its extern "C" name) */
    const char *const *opts; /* ordered options: NVRTC's for CUDA C, nvJitLink's for PTX */
    size_t nopts;
    const char *arch; /* NULL: the device's ("sm_90"); or e.g. "sm_90a" for PTX that
                         targets it (Triton's) */
    unsigned flags;   /* VYRE_PIPELINE_* */
} vyre_pipeline_desc;

/* Where a pipeline came from. */
typedef enum vyre_pipeline_origin {
    VYRE_PIPELINE_FROM_MODULE_CACHE = 1, /* already loaded in this ctx */
    VYRE_PIPELINE_FROM_DISK_CACHE = 2,   /* a cache hit: cubin loaded, nothing compiled */
    VYRE_PIPELINE_COMPILED = 3,          /* compiled (and stored, unless store_rc says not) */
} vyre_pipeline_origin;

/* How one vyre_pipeline_compile went. */
typedef struct vyre_pipeline_info {
    vyre_key key; /* the cache key (vyre_compile_key) */
    vyre_pipeline_origin origin;
    char arch[VYRE_BLOB_ARCH_MAX]; /* the architecture compiled for */
    size_t cubin_size;             /* bytes of the loaded cubin (0 from the module cache) */
    uint64_t compile_ns;           /* COMPILED: the compile's time; FROM_DISK_CACHE: the time the
                                      hit saved (the blob's compile time); else 0 */
    uint64_t elapsed_ns;           /* wall time of vyre_pipeline_compile */
    vyre_blob_reject rejected;     /* a cache file found bad and quarantined on the way */
    int driver_rejected;           /* 1: the driver refused the cached cubin; recompiled */
    int store_rc;           /* 0, or why the compiled cubin was not stored (VYRE_EROFS, VYRE_ENOSPC,
                               ...): the pipeline works, the next process compiles again */
    vyre_error store_error; /* detail of store_rc */
    void *cu_function;      /* interop: the pipeline's CUfunction (owned by the ctx) */
} vyre_pipeline_info;

/*
 * Compiles desc through the caches (see the top of this file) and returns
 * the pipeline in *out (the caller's: vyre_pipeline_free, or left for
 * vyre_ctx_close). Returns 0; VYRE_EINVAL (bad desc, with a hint);
 * VYRE_ECOMPILE (the compiler's first failing line quoted);
 * VYRE_ENOENT (no such entry point in the module); VYRE_ENONVRTC /
 * VYRE_ENOJITLINK (a compile was needed and the compiler is missing); the
 * cache's operational errors; VYRE_ECUDA / VYRE_ENOMEM from the driver.
 * A failure to store the result is not an error (see info.store_rc).
 * Thread-safe.
 */
VYRE_EXTERN int vyre_pipeline_compile(vyre_ctx *ctx, const vyre_pipeline_desc *desc,
                                      vyre_pipeline **out, vyre_error *err);

/* Frees the handle; the module stays loaded in the ctx's module cache (or
 * is unloaded with VYRE_PIPELINE_NO_MODULE_CACHE). NULL is a no-op. */
VYRE_EXTERN void vyre_pipeline_free(vyre_pipeline *p);

/* How the compile that made p went (owned by p). */
VYRE_EXTERN const vyre_pipeline_info *vyre_pipeline_info_get(const vyre_pipeline *p);

/* ---- dispatching -------------------------------------------------------- */

/* A launch configuration. */
typedef struct vyre_launch_cfg {
    unsigned grid[3];      /* blocks in x, y, z (each >= 1) */
    unsigned block[3];     /* threads per block in x, y, z (each >= 1) */
    unsigned shared_bytes; /* dynamic shared memory per block */
    void *stream;          /* a CUstream; NULL: the ctx's stream */
} vyre_launch_cfg;

/* A 1-D configuration: grid x blocks of block threads, the ctx's stream. */
static inline vyre_launch_cfg vyre_launch_1d(unsigned grid, unsigned block)
{
    vyre_launch_cfg c = {{grid, 1, 1}, {block, 1, 1}, 0, NULL};
    return c;
}

/*
 * Launches p as cuLaunchKernel does: args is the kernel's parameter array
 * (a pointer to each parameter's value; NULL for a kernel without
 * parameters). Asynchronous. The ctx's context must be current on the
 * calling thread. Counts a launch and a dispatch. Returns 0, VYRE_EINVAL
 * or the driver's error.
 */
VYRE_EXTERN int vyre_pipeline_launch(vyre_pipeline *p, const vyre_launch_cfg *cfg, void **args,
                                     vyre_error *err);

#define VYRE_MAX_ARGS 64 /* kernel parameters of one dispatch */

/* How a kernel parameter is bound in a dispatch. */
typedef enum vyre_arg_kind {
    VYRE_ARG_SCALAR = 1, /* size bytes at src, passed by value */
    VYRE_ARG_IN = 2,     /* host memory src copied to transient device memory before the launch */
    VYRE_ARG_OUT = 3,    /* transient device memory, zeroed, copied back to dst after */
    VYRE_ARG_INOUT = 4,  /* both (src and dst may be the same memory) */
    VYRE_ARG_BUFFER = 5, /* a resident buffer: its device address is passed */
} vyre_arg_kind;

typedef struct vyre_arg {
    vyre_arg_kind kind;
    const void *src;     /* SCALAR: the value; IN, INOUT: host memory read */
    void *dst;           /* OUT, INOUT: host memory written */
    size_t size;         /* bytes (of the value or of the host memory) */
    vyre_buffer *buffer; /* BUFFER */
} vyre_arg;

static inline vyre_arg vyre_arg_scalar(const void *value, size_t size)
{
    vyre_arg a = {VYRE_ARG_SCALAR, value, NULL, size, NULL};
    return a;
}
static inline vyre_arg vyre_arg_in(const void *src, size_t size)
{
    vyre_arg a = {VYRE_ARG_IN, src, NULL, size, NULL};
    return a;
}
static inline vyre_arg vyre_arg_out(void *dst, size_t size)
{
    vyre_arg a = {VYRE_ARG_OUT, NULL, dst, size, NULL};
    return a;
}
static inline vyre_arg vyre_arg_inout(void *mem, size_t size)
{
    vyre_arg a = {VYRE_ARG_INOUT, mem, mem, size, NULL};
    return a;
}
static inline vyre_arg vyre_arg_buffer(vyre_buffer *b)
{
    vyre_arg a = {VYRE_ARG_BUFFER, NULL, NULL, 0, b};
    return a;
}

/*
 * Host-buffer dispatch: for each IN/INOUT arg, copies the host memory to
 * transient device memory (through pooled pinned staging); zeroes OUT
 * memory; launches; copies OUT/INOUT back; waits; copies into dst. Transient
 * memory returns to the pools for the next dispatch. args bind the kernel's
 * parameters in order (nargs <= VYRE_MAX_ARGS); BUFFER and SCALAR args are
 * allowed too. Synchronous. Returns 0, VYRE_EINVAL, VYRE_ERANGE or the
 * driver's error (dst is then unspecified).
 */
VYRE_EXTERN int vyre_pipeline_dispatch_host(vyre_pipeline *p, const vyre_launch_cfg *cfg,
                                            const vyre_arg *args, size_t nargs, vyre_error *err);

/* ---- batches and graphs ------------------------------------------------- */

/*
 * Starts capturing launches into a CUDA graph (on a capture stream of the
 * batch's own, thread-local capture mode). Until vyre_batch_end or
 * vyre_batch_abort, the calling thread makes no other vyre or CUDA call
 * than vyre_batch_add (the driver rejects synchronising calls and
 * allocations during a capture). *out is the caller's: it is consumed by
 * vyre_batch_end or vyre_batch_abort.
 */
VYRE_EXTERN int vyre_batch_begin(vyre_ctx *ctx, vyre_batch **out, vyre_error *err);

/* Captures one launch of p (args as for vyre_pipeline_launch; cfg->stream is
 * ignored). The parameter values are copied at capture time. A failed add
 * makes vyre_batch_end fail. */
VYRE_EXTERN int vyre_batch_add(vyre_batch *b, vyre_pipeline *p, const vyre_launch_cfg *cfg,
                               void **args, vyre_error *err);

/* Ends the capture and instantiates the graph into *out (the caller's:
 * vyre_graph_free). Frees b in every case. VYRE_EINVAL for an empty batch
 * or one whose add failed. */
VYRE_EXTERN int vyre_batch_end(vyre_batch *b, vyre_graph **out, vyre_error *err);

/* Replays g on stream (a CUstream; NULL: the ctx's stream). Asynchronous.
 * Counts a graph launch, a batch dispatch and its kernels as launches. */
VYRE_EXTERN int vyre_graph_launch(vyre_graph *g, void *stream, vyre_error *err);

/* Interop: g's CUgraphExec (owned by g). */
VYRE_EXTERN void *vyre_graph_cu_exec(const vyre_graph *g);

/* Frees g (the GPU must be done with it). NULL is a no-op. */
VYRE_EXTERN void vyre_graph_free(vyre_graph *g);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_PIPELINE_H */
