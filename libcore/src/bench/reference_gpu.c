/*
 * reference_gpu.c - reference.gpu: a fixed kernel (vyre__bench_reference_ptx,
 * bench_kernels.c) of fixed size, timed on every device of the run once a
 * round like any GPU point (held behind the blocking kernel), and stored
 * through bench_reference.c's vyre__bench_reference_gpu, which owns the
 * references' budget. Runs are compared through it.
 */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "cuda/cuda_internal.h"
#include "vyre/cuda.h"

/* The GPU reference's shape: 64 blocks of 128 threads (one wave on any
 * GPU vyre runs on), REF_ITERS steps each. By count (a dependent IMAD and
 * the loop's add and branch, some 8 cycles a step) about 16k cycles, 8 us
 * at 1.98 GHz: long enough that the event pair's own cost is small, short
 * enough that a round's 20-1000 samples cost tens of ms. Not yet timed on
 * a GPU: measure it before quoting it. Never change these: runs are
 * compared through them. */
#define REF_BLOCKS  64u
#define REF_THREADS 128u
#define REF_ITERS   2048u

struct ref_bench {
    struct vyre__gpu *g; /* first, as every bench struct here */
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr out;
    unsigned iters;
};

static int ref_op(void *ctx, vyre_error *err)
{
    struct ref_bench *rb = ctx;
    void *args[] = {&rb->out, &rb->iters};
    return vyre__cuda_check(rb->g->cu->cuLaunchKernel(rb->fn, REF_BLOCKS, 1, 1, REF_THREADS, 1, 1,
                                                      0, rb->g->stream, args, NULL),
                            "cuLaunchKernel(the reference kernel)", err);
}

static int sample_ref(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct ref_bench *rb = ctx;
    return vyre__gpu_time(rb->g, ref_op, rb, 1, 1, value, wall, err);
}

static void finish_ref(vyre_bench_point *pt, void *ctx)
{
    struct ref_bench *rb = ctx;
    snprintf(pt->note, sizeof pt->note, "fixed kernel: %u x %u threads, %u dependent steps",
             REF_BLOCKS, REF_THREADS, REF_ITERS);
    vyre__gpu_finish_views(pt, rb->g, ref_op, rb, 1, 1);
}

/* reference.gpu of one device, opened for it alone. */
static int reference_device(vyre_bench_env *env, int device, vyre_error *err)
{
    struct vyre__gpu g;
    int rc = vyre__gpu_open(env, device, &g, err);
    if (rc)
        return rc;
    struct ref_bench rb = {&g, NULL, NULL, 0, REF_ITERS};
    const vyre__cuda_fns *cu = g.cu;
    if (!cu->cuModuleLoadData || !cu->cuModuleGetFunction || !cu->cuLaunchKernel)
        rc = vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                        "the driver lacks the module calls of the GPU reference");
    if (!rc)
        rc = vyre__cuda_check(cu->cuModuleLoadData(&rb.mod, vyre__bench_reference_ptx),
                              "cuModuleLoadData(the reference kernel's PTX)", err);
    if (!rc)
        rc = vyre__cuda_check(cu->cuModuleGetFunction(&rb.fn, rb.mod, "vyre_reference_loop"),
                              "cuModuleGetFunction(vyre_reference_loop)", err);
    if (!rc)
        rc = vyre__cuda_check(
            cu->cuMemAlloc(&rb.out, (size_t)REF_BLOCKS * REF_THREADS * sizeof(uint32_t)),
            "cuMemAlloc", err);
    vyre_bench_measure_opts o;
    vyre__gpu_measure_opts(&o, env, &g);
    o.ctx = &rb;
    o.sample = sample_ref;
    if (!rc)
        rc = vyre__bench_reference_gpu(env, device, &o, finish_ref, err);
    cu->cuStreamSynchronize(g.stream);
    if (rb.out)
        cu->cuMemFree(rb.out);
    if (rb.mod)
        cu->cuModuleUnload(rb.mod);
    vyre__gpu_close(&g);
    return rc;
}

int vyre__bench_gpu_references(vyre_bench_env *env, vyre_error *err)
{
    if (env->records_sweep)
        return VYRE_OK;
    int rc = vyre_cuda_init(err);
    static const int dev0 = 0;
    const int *devs = env->ndevices ? env->devices : &dev0;
    size_t nd = env->ndevices ? env->ndevices : 1;
    for (size_t i = 0; !rc && !env->interrupted && i < nd; i++)
        rc = reference_device(env, devs[i], err);
    return rc;
}
