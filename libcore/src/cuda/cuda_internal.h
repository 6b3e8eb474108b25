/*
 * cuda_internal.h - the driver function table, shared inside libcore.
 *
 * The cuda subsystem (libcore/src/cuda/) owns every NVIDIA library loaded
 * at run time: the driver (cuda.c, this table), the toolkit's NVRTC and
 * nvJitLink (toolkit.c, nvrtc.c, jitlink.c), CUPTI (cupti.c, cupti_internal.h)
 * and NVML (nvml.c). On top of them: compiling through the cache
 * (compile.c), pipelines, dispatch and memory pools (pipeline*.c, pool.c),
 * and the driver's JIT-cache contract (jitcache.c, jitcache_report.c).
 * Nothing links an NVIDIA library: each is dlopen()ed, so a machine without
 * a GPU gets an error with a hint, never a crash. It may call cache/,
 * trace/ and base/ (base < trace < cache < cuda < bench; docs/DESIGN.md);
 * only bench/ above calls into it.
 *
 * Entries are declared with the prototypes of the toolkit's cuda.h (via
 * __typeof__), so a versioned entry point such as cuMemAlloc (a macro for
 * cuMemAlloc_v2) gets the _v2 signature, and the base name given to
 * cuGetProcAddress ("cuMemAlloc") resolves to that same version because we
 * ask for CUDA_VERSION. Entry points whose cuda.h macro names a *different*
 * API (cuGraphInstantiate -> cuGraphInstantiateWithFlags) are listed under
 * the target name.
 *
 * R = required (the loader fails with VYRE_ENODRIVER without it),
 * O = optional (NULL when the driver lacks it; check before use).
 */
#ifndef VYRE_CUDA_INTERNAL_H
#define VYRE_CUDA_INTERNAL_H

#include <cuda.h>
#include <cudaProfiler.h>

#include "vyre/cuda.h"

#define VYRE_CUDA_FUNCS(R, O)                                                                      \
    R(cuInit)                                                                                      \
    R(cuDriverGetVersion)                                                                          \
    R(cuGetErrorName)                                                                              \
    R(cuGetErrorString)                                                                            \
    R(cuDeviceGetCount)                                                                            \
    R(cuDeviceGet)                                                                                 \
    R(cuDeviceGetName)                                                                             \
    R(cuDeviceGetUuid)                                                                             \
    R(cuDeviceGetAttribute)                                                                        \
    R(cuDeviceTotalMem)                                                                            \
    O(cuDeviceGetPCIBusId)                                                                         \
    O(cuDevicePrimaryCtxRetain)                                                                    \
    O(cuDevicePrimaryCtxRelease)                                                                   \
    O(cuCtxSetCurrent)                                                                             \
    O(cuCtxGetCurrent)                                                                             \
    O(cuCtxSynchronize)                                                                            \
    O(cuModuleLoadData)                                                                            \
    O(cuModuleLoadDataEx)                                                                          \
    O(cuModuleUnload)                                                                              \
    O(cuModuleGetFunction)                                                                         \
    O(cuFuncGetAttribute)                                                                          \
    O(cuFuncSetAttribute)                                                                          \
    O(cuLaunchKernel)                                                                              \
    O(cuLaunchKernelEx)                                                                            \
    O(cuMemAlloc)                                                                                  \
    O(cuMemFree)                                                                                   \
    O(cuMemGetInfo)                                                                                \
    O(cuMemAllocHost)                                                                              \
    O(cuMemFreeHost)                                                                               \
    O(cuMemHostAlloc)                                                                              \
    O(cuMemHostGetDevicePointer)                                                                   \
    O(cuMemcpyHtoD)                                                                                \
    O(cuMemcpyDtoH)                                                                                \
    O(cuMemcpyDtoD)                                                                                \
    O(cuMemcpyHtoDAsync)                                                                           \
    O(cuMemcpyDtoHAsync)                                                                           \
    O(cuMemcpyDtoDAsync)                                                                           \
    O(cuMemsetD8Async)                                                                             \
    O(cuMemsetD32Async)                                                                            \
    O(cuStreamCreate)                                                                              \
    O(cuStreamDestroy)                                                                             \
    O(cuStreamSynchronize)                                                                         \
    O(cuStreamBeginCapture)                                                                        \
    O(cuStreamEndCapture)                                                                          \
    O(cuGraphInstantiateWithFlags)                                                                 \
    O(cuGraphLaunch)                                                                               \
    O(cuGraphExecDestroy)                                                                          \
    O(cuGraphDestroy)                                                                              \
    O(cuEventCreate)                                                                               \
    O(cuEventRecord)                                                                               \
    O(cuEventSynchronize)                                                                          \
    O(cuEventElapsedTime)                                                                          \
    O(cuEventDestroy)                                                                              \
    O(cuLinkCreate)                                                                                \
    O(cuLinkAddData)                                                                               \
    O(cuLinkComplete)                                                                              \
    O(cuLinkDestroy)                                                                               \
    O(cuProfilerStart)                                                                             \
    O(cuProfilerStop)

typedef struct vyre__cuda_fns {
#define VYRE__CUDA_FIELD(name) __typeof__(&name) name;
    VYRE_CUDA_FUNCS(VYRE__CUDA_FIELD, VYRE__CUDA_FIELD)
#undef VYRE__CUDA_FIELD
} vyre__cuda_fns;

/* The table after a successful vyre_cuda_init(); NULL before or on failure. */
const vyre__cuda_fns *vyre__cuda(void);

/* Maps a CUresult to a vyre code and fills err with
 * "<call> failed: CUDA_ERROR_X (driver's text)". Returns 0 for CUDA_SUCCESS. */
int vyre__cuda_check(CUresult r, const char *call, vyre_error *err);

/* ---- not exported (vyre/cuda.h): no program outside libcore calls them; the
 * tests reach them through vyrecore_internal ---- */

/* Formats "sm_<major><minor>" into buf (e.g. "sm_90"). Returns 0 or
 * VYRE_EINVAL when the numbers are out of range or buf is too small. */
int vyre_cuda_arch_name(int cc_major, int cc_minor, char *buf, size_t size);

#endif /* VYRE_CUDA_INTERNAL_H */
