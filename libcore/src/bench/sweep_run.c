/*
 * sweep_run.c - a user sweep on the GPU (vyre_bench_sweep: a kernel file,
 * its entry and axes), and its A/B form (--vs: a second kernel timed in
 * turn with the first). The binding and the checks are sweep_binding.c's
 * and sweep_plan.c's; here each point's launch is set up on the device:
 * buffers allocated and filled, scalars laid out as the kernel takes them,
 * the dynamic shared memory limit raised when a point asks for more than
 * the default 48 KiB. Hot samples have the event pair's own cost taken off
 * (vyre__gpu_event_overhead: about 2 us on an H100 80GB HBM3, README).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/axes_internal.h"
#include "bench/bench_internal.h"
#include "bench/gpu_internal.h"
#include "bench/sweep_binding.h"
#include "cuda/pipeline_internal.h"
#include "vyre/cuda.h"
#include "vyre/pipeline.h"
#include "vyre/units.h"

size_t vyre__bench_sweep_points(const vyre_bench_sweep *sw, const vyre_bench_env *env)
{
    if (!sw || !sw->axes || !env)
        return 0;
    return vyre__axes_count(sw->axes) * (env->cold == 2 ? 2 : 1) *
           (env->ndevices ? env->ndevices : 1) * (sw->vs_path ? 2 : 1);
}

/*
 * The B side of an A/B sweep (vyre_bench_sweep.vs_path): its pipeline,
 * launched with A's buffers and scalars, and the samples taken right
 * after each of A's. Why one sample of each in turn rather than A's
 * point then B's: whatever the machine does meanwhile (a neighbour's
 * job, clocks, heat) lands on both alike, as hyperfine alternates
 * commands; and the pairs share their round, which the comparison
 * resamples. Every sample of either waits behind the blocking kernel.
 */
struct sweep_ab {
    vyre_pipeline *p;
    vyre_bench_sample *s; /* B's samples of the point so far, warm-up first */
    size_t n, cap;
    int cold; /* flush L2 before B's sample too */
};

struct sweep_bench {
    struct vyre__gpu *g; /* first: vyre__gpu_prepare_cold */
    vyre_pipeline *p;
    const vyre__sweep_binding *b;
    const vyre__sweep_kernel *k;
    vyre__sweep_launch l;
    vyre_launch_cfg cfg;
    unsigned launch_flags; /* VYRE__LAUNCH_*: the spec's "cooperative", "pdl" */
    CUdeviceptr bufs[VYRE__SWEEP_ARGS_MAX];
    CUdeviceptr nulls[VYRE__SWEEP_ARGS_MAX];
    int32_t i32[VYRE__SWEEP_ARGS_MAX];
    int64_t i64[VYRE__SWEEP_ARGS_MAX];
    float f32[VYRE__SWEEP_ARGS_MAX];
    double f64[VYRE__SWEEP_ARGS_MAX];
    void *params[VYRE__SWEEP_ARGS_MAX];
    unsigned shared_set; /* the kernel's dynamic shared maximum as last set */
    struct sweep_ab *ab; /* NULL: no --vs */
    int correct;         /* hot: the event pair's own cost comes off each sample */
    int cold;            /* the point is cold: its kernel pass flushes L2 too */
    vyre_bench_env *env; /* the run's (the kernel pass's traced time) */
};

/* A hot sample less the event pair's own cost (vyre__gpu_event_overhead). */
static double corrected(struct sweep_bench *s, double value)
{
    if (!s->correct)
        return value;
    double v = value - vyre__gpu_event_overhead(s->g);
    return v > 0 ? v : 0;
}

static int sweep_op(void *ctx, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    return vyre__pipeline_launch_ex(s->p, &s->cfg, s->launch_flags, s->params, err);
}

static int sweep_op_b(void *ctx, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    return vyre__pipeline_launch_ex(s->ab->p, &s->cfg, s->launch_flags, s->params, err);
}

static int sample_sweep(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    int rc = vyre__gpu_time(s->g, sweep_op, s, 1, 1, value, wall, err);
    if (!rc)
        *value = corrected(s, *value);
    return rc;
}

/* A's sample (the value returned), then B's (kept in s->ab). */
static int sample_sweep_ab(void *ctx, double *value, double *wall, vyre_error *err)
{
    struct sweep_bench *s = ctx;
    struct sweep_ab *ab = s->ab;
    int rc = vyre__gpu_time(s->g, sweep_op, s, 1, 1, value, wall, err);
    if (!rc && ab->cold)
        rc = vyre__gpu_flush_l2(s->g, err);
    double v = 0, w = 0;
    if (!rc)
        rc = vyre__gpu_time(s->g, sweep_op_b, s, 1, 1, &v, &w, err);
    if (rc)
        return rc;
    *value = corrected(s, *value);
    v = corrected(s, v);
    if (vyre__grow(&ab->s, &ab->cap, ab->n + 1, sizeof *ab->s, 64))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory keeping the --vs samples");
    vyre_bench_sample *x = &ab->s[ab->n++];
    memset(x, 0, sizeof *x);
    x->value = v;
    x->wall = w;
    return VYRE_OK;
}

/*
 * The CUPTI pass, in the conditions of the point's samples (issue 34).
 * Hot: KPASS_GRAPH launches as the batch view takes them, a CUDA graph
 * replayed behind the blocking kernel between two events; the median
 * CUPTI duration is the kernel view, and the events' time a launch, with
 * CUPTI on, goes to env->kpass_traced_ns: against the batch view (the same
 * replay without CUPTI) it says how much the tracing itself slowed the
 * kernel. On an H200 it did by 6-19% for a CUDA C axpy (1-24 M, block
 * 1024), in the events as much as in the CUPTI durations: before
 * Blackwell, CUPTI stamps a concurrent kernel by instrumenting its code
 * (README). The first launches after the records sweep moved to this point
 * still settle (L2 holding another point's data), hence a median of many.
 * Cold: KPASS_LAUNCHES launches, each as a cold sample is taken: L2
 * flushed, then held alone.
 */
#define KPASS_GRAPH    64
#define KPASS_LAUNCHES 11

static int kpass_op(struct sweep_bench *s, vyre__gpu_op_fn op, vyre_error *err)
{
    if (!s->cold) {
        double traced = 0;
        int rc = vyre__gpu_run_batch(s->g, op, s, KPASS_GRAPH, &traced, err);
        if (!rc && s->env)
            s->env->kpass_traced_ns = traced;
        return rc;
    }
    /* Back to back, every launch but the first would find the one
     * before's data in L2: the kernel view of a cold point was a hot time
     * (3.65 us against a cold 8.51 us, 1 M axpy on an H200). */
    int rc = VYRE_OK;
    for (unsigned i = 0; !rc && i < KPASS_LAUNCHES; i++) {
        rc = vyre__gpu_flush_l2(s->g, err);
        if (!rc)
            rc = vyre__gpu_run_held(s->g, op, s, 1, err);
    }
    return rc;
}

static int kpass_sweep(void *ctx, vyre_error *err)
{
    return kpass_op(ctx, sweep_op, err);
}

/* --vs: B's own CUPTI pass, so its points have the kernel view too. */
static int kpass_sweep_b(void *ctx, vyre_error *err)
{
    return kpass_op(ctx, sweep_op_b, err);
}

/* GB/s from the bytes a launch moves, TFLOP/s from its flops (the GB/s
 * then goes to the note). Bytes per ns is GB/s; flops per ns is GFLOP/s.
 * op: the kernel whose batch view is taken (A's or B's). */
static void finish_sweep_op(vyre_bench_point *pt, struct sweep_bench *s, vyre__gpu_op_fn op)
{
    if (pt->stats.median > 0 && s->l.flops > 0) {
        vyre__strlcpy(pt->metric_name, "TFLOP/s", sizeof pt->metric_name);
        pt->metric = s->l.flops / pt->stats.median / 1e3;
        if (pt->bytes > 0)
            snprintf(pt->note, sizeof pt->note, "%.1f GB/s", pt->bytes / pt->stats.median);
    } else if (pt->stats.median > 0 && pt->bytes > 0) {
        vyre__strlcpy(pt->metric_name, "GB/s", sizeof pt->metric_name);
        pt->metric = pt->bytes / pt->stats.median;
    }
    if (s->correct && s->g->overhead_state > 0) {
        char note[96];
        snprintf(note, sizeof note, "event pair's own %.2f us subtracted", s->g->overhead_ns / 1e3);
        vyre__gpu_append_note(pt, note);
    }
    vyre__gpu_finish_views(pt, s->g, op, s, 1, 1);
}

static void finish_sweep(vyre_bench_point *pt, void *ctx)
{
    finish_sweep_op(pt, ctx, sweep_op);
}

static void finish_sweep_b(vyre_bench_point *pt, void *ctx)
{
    finish_sweep_op(pt, ctx, sweep_op_b);
}

/* B's point of this round: the samples taken after each of A's measured
 * ones (the warm-up pairs dropped), stored beside A's. In the records
 * sweep, B's kernel pass. */
static int sweep_point_b(vyre_bench_env *env, struct sweep_bench *s, const vyre_bench_point *a,
                         const vyre_bench_measure_opts *o, vyre_error *err)
{
    struct sweep_ab *ab = s->ab;
    size_t n = ab->n, warmup = o->warmup;
    ab->n = 0;
    vyre_bench_point pt;
    vyre__gpu_point_init(&pt, a->suite, a->benchmark, a->axes, s->g, a->mode, 1);
    vyre__strlcpy(pt.variant, "B", sizeof pt.variant);
    if (env->records_sweep)
        return vyre__bench_point_run(env, &pt, o, 1, kpass_sweep_b, finish_sweep_b, s, err);
    if (env->interrupted || n <= warmup)
        return VYRE_OK;
    pt.bytes = a->bytes;
    pt.stop_reason = a->stop_reason;
    vyre__strlcpy(pt.stop, a->stop, sizeof pt.stop);
    return vyre__bench_point_add(env, &pt, ab->s + warmup, n - warmup, finish_sweep_b, s, err);
}

static void sweep_free(struct sweep_bench *s)
{
    for (size_t i = 0; i < VYRE__SWEEP_ARGS_MAX; i++)
        if (s->bufs[i]) {
            s->g->cu->cuMemFree(s->bufs[i]);
            s->bufs[i] = 0;
        }
}

/* Fills buffer i as its parameter says: zeros by memset, anything else
 * generated on the host in chunks and copied. */
static int fill_buffer(struct sweep_bench *s, size_t i, vyre_error *err)
{
    const vyre__sweep_arg *a = &s->b->args[i];
    const vyre__cuda_fns *cu = s->g->cu;
    size_t esz = vyre__elem_size(a->type);
    uint64_t n = s->l.buf_elems[i];
    if (a->fill == VYRE__FILL_ZEROS)
        return vyre__cuda_check(cu->cuMemsetD8Async(s->bufs[i], 0, (size_t)(n * esz), s->g->stream),
                                "cuMemsetD8Async", err);
    /* Ones of the 1- and 4-byte types are a memset too (f32 1.0 is 0x3f800000). */
    if (a->fill == VYRE__FILL_ONES && esz == 1)
        return vyre__cuda_check(cu->cuMemsetD8Async(s->bufs[i], 1, (size_t)n, s->g->stream),
                                "cuMemsetD8Async", err);
    if (a->fill == VYRE__FILL_ONES && esz == 4)
        return vyre__cuda_check(cu->cuMemsetD32Async(s->bufs[i],
                                                     a->type == VYRE__F32 ? 0x3f800000u : 1u,
                                                     (size_t)n, s->g->stream),
                                "cuMemsetD32Async", err);
    if (!cu->cuMemcpyHtoDAsync)
        return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                          "the driver lacks cuMemcpyHtoDAsync");
    size_t chunk = (size_t)(4u << 20) / esz; /* elements per 4 MiB */
    if (chunk > n)
        chunk = (size_t)n;
    void *host = malloc(chunk * esz);
    if (!host)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of host memory filling a buffer");
    int rc = VYRE_OK;
    for (uint64_t first = 0; !rc && first < n; first += chunk) {
        size_t m = n - first < chunk ? (size_t)(n - first) : chunk;
        vyre__fill_chunk(a->type, a->fill, a->seed, first, host, m);
        /* On the sweep's stream, waited for: the chunk is reused, and the
         * kernel on that stream must see the whole buffer. */
        rc = vyre__cuda_check(
            cu->cuMemcpyHtoDAsync(s->bufs[i] + first * esz, host, m * esz, s->g->stream),
            "cuMemcpyHtoDAsync", err);
        if (!rc)
            rc =
                vyre__cuda_check(cu->cuStreamSynchronize(s->g->stream), "cuStreamSynchronize", err);
    }
    free(host);
    return rc;
}

/* The arguments of the point in s->l: allocates and fills its buffers
 * (freed by sweep_free), lays out its scalars as the kernel takes them,
 * and points s->params at each. */
static int sweep_args(struct sweep_bench *s, vyre_error *err)
{
    const vyre__sweep_binding *b = s->b;
    const vyre__cuda_fns *cu = s->g->cu;
    int rc = VYRE_OK;
    for (size_t i = 0; !rc && i < b->nargs; i++) {
        const vyre__sweep_arg *a = &b->args[i];
        switch (a->kind) {
        case VYRE__ARG_BUFFER:
            rc = vyre__cuda_check(
                cu->cuMemAlloc(&s->bufs[i], (size_t)(s->l.buf_elems[i] * vyre__elem_size(a->type))),
                "cuMemAlloc", err);
            if (!rc)
                rc = fill_buffer(s, i, err);
            s->params[i] = &s->bufs[i];
            break;
        case VYRE__ARG_NULL:
            s->nulls[i] = 0;
            s->params[i] = &s->nulls[i];
            break;
        case VYRE__ARG_INT:
            if (a->type == VYRE__I64) {
                s->i64[i] = s->l.ints[i];
                s->params[i] = &s->i64[i];
            } else {
                s->i32[i] = (int32_t)s->l.ints[i];
                s->params[i] = &s->i32[i];
            }
            break;
        case VYRE__ARG_FLOAT:
            if (a->type == VYRE__F64) {
                s->f64[i] = s->l.floats[i];
                s->params[i] = &s->f64[i];
            } else {
                s->f32[i] = (float)s->l.floats[i];
                s->params[i] = &s->f32[i];
            }
            break;
        }
    }
    return rc;
}

static int sweep_point(vyre_bench_env *env, const vyre_bench_sweep *sw, struct sweep_bench *s,
                       const size_t *coords, int cold, vyre_error *err)
{
    const vyre__sweep_binding *b = s->b;
    const vyre__cuda_fns *cu = s->g->cu;
    int rc = vyre__sweep_binding_eval(b, sw->axes, coords, s->k->have_ptx ? &s->k->ptx : NULL,
                                      (unsigned)(s->g->info.max_shared_mem_per_block > 0
                                                     ? s->g->info.max_shared_mem_per_block
                                                     : 0),
                                      &s->l, err);
    if (rc)
        return rc;
    memset(&s->cfg, 0, sizeof s->cfg);
    memcpy(s->cfg.grid, s->l.grid, sizeof s->cfg.grid);
    memcpy(s->cfg.block, s->l.block, sizeof s->cfg.block);
    s->cfg.shared_bytes = s->l.shared_bytes;
    if (s->l.shared_bytes > (48u << 10) && s->l.shared_bytes != s->shared_set) {
        if (!cu->cuFuncSetAttribute)
            return vyre__fail(err, VYRE_ENODRIVER, "update the NVIDIA driver",
                              "the driver lacks cuFuncSetAttribute, needed for more than 48 KiB "
                              "of dynamic shared memory");
        rc = vyre__cuda_check(
            cu->cuFuncSetAttribute((CUfunction)vyre_pipeline_info_get(s->p)->cu_function,
                                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   (int)s->l.shared_bytes),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err);
        if (rc)
            return rc;
        s->shared_set = s->l.shared_bytes;
    }
    rc = sweep_args(s, err);
    char axes[256];
    vyre__axes_format_point(sw->axes, coords, axes, sizeof axes);
    char bench[96];
    snprintf(bench, sizeof bench, "sweep.%s", sw->entry);
    vyre_bench_point pt;
    vyre__gpu_point_init(&pt, "sweep", bench, axes, s->g, cold ? VYRE_BENCH_COLD : VYRE_BENCH_HOT,
                         1);
    pt.bytes = s->l.bytes;
    vyre_bench_measure_opts o;
    vyre__gpu_measure_opts(&o, env, s->g);
    o.ctx = s;
    o.sample = s->ab ? sample_sweep_ab : sample_sweep;
    o.prepare = cold ? vyre__gpu_prepare_cold : NULL;
    s->correct = !cold;
    s->cold = cold;
    if (s->ab) {
        vyre__strlcpy(pt.variant, "A", sizeof pt.variant);
        s->ab->n = 0;
        s->ab->cold = cold;
    }
    if (!rc)
        rc = vyre__bench_point_run(env, &pt, &o, 1, kpass_sweep, finish_sweep, s, err);
    if (!rc && s->ab)
        rc = sweep_point_b(env, s, &pt, &o, err);
    cu->cuStreamSynchronize(s->g->stream);
    sweep_free(s);
    return rc;
}

/* Out-of-memory sizes fail before the first point is measured. */
static int check_memory(const vyre_bench_sweep *sw, const vyre__sweep_binding *b,
                        const vyre__sweep_kernel *k, struct vyre__gpu *g, vyre_error *err)
{
    size_t free_b = 0, total_b = 0;
    if (g->cu->cuMemGetInfo)
        g->cu->cuMemGetInfo(&free_b, &total_b);
    size_t coords[VYRE_AXES_MAX];
    size_t count = vyre__axes_count(sw->axes);
    for (size_t i = 0; free_b && i < count; i++) {
        vyre__axes_point(sw->axes, i, coords);
        vyre__sweep_launch l;
        int rc =
            vyre__sweep_binding_eval(b, sw->axes, coords, k->have_ptx ? &k->ptx : NULL, 0, &l, err);
        if (rc)
            return rc;
        if (l.memory_bytes > (double)free_b * 0.95) {
            char at[256], needs[32], has[32];
            vyre__axes_format_point(sw->axes, coords, at, sizeof at);
            vyre_format_size((uint64_t)l.memory_bytes, needs, sizeof needs);
            vyre_format_size((uint64_t)free_b, has, sizeof has);
            return vyre__fail(err, VYRE_ENOMEM, "lower the upper end of the axis",
                              "point '%s' needs %s of device memory; device %d has %s free", at,
                              needs, g->device, has);
        }
    }
    return VYRE_OK;
}

/* Compiles k (the file of sw->path) for g's device, as the sweep check
 * chose (the PTX's .target when the device runs it, else the device's). */
static int sweep_compile(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k,
                         struct vyre__gpu *g, vyre_pipeline **p, vyre_error *err)
{
    char arch[16];
    int rc =
        vyre__sweep_arch(sw, k, g->info.cc_major, g->info.cc_minor, arch, sizeof arch, NULL, err);
    vyre_pipeline_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = k->kind;
    desc.src = k->src;
    desc.len = k->len;
    desc.entry = sw->entry;
    desc.arch = arch;
    if (!rc)
        rc = vyre_pipeline_compile(g->ctx, &desc, p, err);
    return rc;
}

/* The --vs kernel's pipeline on g (the records sweep too: B's points
 * have kernel passes of their own). */
static int sweep_ab_open(const vyre_bench_sweep *sw, struct vyre__gpu *g, struct sweep_ab *ab,
                         vyre_error *err)
{
    memset(ab, 0, sizeof *ab);
    if (!sw->vs_path)
        return VYRE_OK;
    vyre_bench_sweep bsw = *sw;
    bsw.path = sw->vs_path;
    vyre__sweep_kernel kb;
    int rc = vyre__sweep_kernel_load(&bsw, &kb, err);
    if (!rc)
        rc = sweep_compile(&bsw, &kb, g, &ab->p, err);
    vyre__sweep_kernel_release(&kb);
    return rc;
}

static void sweep_ab_close(struct sweep_ab *ab)
{
    vyre_pipeline_free(ab->p);
    free(ab->s);
    memset(ab, 0, sizeof *ab);
}

/* The spec's launch attributes as VYRE__LAUNCH_* flags; 0 and an error
 * when device g cannot launch a cooperative grid. */
static int launch_flags(const vyre__sweep_binding *b, const struct vyre__gpu *g, unsigned *flags,
                        vyre_error *err)
{
    *flags = (b->cooperative ? VYRE__LAUNCH_COOPERATIVE : 0u) | (b->pdl ? VYRE__LAUNCH_PDL : 0u);
    if (b->cooperative && !g->info.cooperative_launch)
        return vyre__fail(err, VYRE_ENOTSUP,
                          "run it on a GPU that launches cooperative grids, or drop "
                          "\"cooperative\" from the spec (a kernel that syncs its grid "
                          "then hangs or fails)",
                          "'%s': $.cooperative: device %d (%s) cannot launch cooperative grids",
                          b->origin, g->device, g->info.name);
    return VYRE_OK;
}

int vyre__bench_sweep_run(const vyre_bench_sweep *sw, vyre_bench_env *env, vyre_error *err)
{
    if (!sw || !env)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_sweep_run: NULL argument");
    vyre__sweep_binding b;
    vyre__sweep_kernel k;
    memset(&k, 0, sizeof k);
    int rc = vyre__sweep_binding_make(sw, &b, err);
    if (!rc && (rc = vyre__sweep_kernel_load(sw, &k, err)))
        vyre__sweep_binding_release(&b);
    if (rc)
        return rc;
    rc = vyre_cuda_init(err);
    size_t count = vyre__axes_count(sw->axes);
    size_t coords[VYRE_AXES_MAX];
    static const int dev0 = 0;
    const int *devs = env->ndevices ? env->devices : &dev0;
    size_t nd = env->ndevices ? env->ndevices : 1;
    for (size_t d = 0; !rc && !env->interrupted && d < nd; d++) {
        struct vyre__gpu g;
        if ((rc = vyre__gpu_open(env, devs[d], &g, err)))
            break;
        rc = check_memory(sw, &b, &k, &g, err);
        struct sweep_bench s;
        memset(&s, 0, sizeof s);
        if (!rc)
            rc = launch_flags(&b, &g, &s.launch_flags, err);
        s.g = &g;
        s.b = &b;
        s.k = &k;
        s.env = env;
        struct sweep_ab ab;
        if (!rc)
            rc = sweep_compile(sw, &k, &g, &s.p, err);
        if (!rc && !(rc = sweep_ab_open(sw, &g, &ab, err)) && ab.p)
            s.ab = &ab;
        for (size_t i = 0; !rc && !env->interrupted && i < count; i++) {
            vyre__axes_point(sw->axes, i, coords);
            for (int m = 0; !rc && !env->interrupted && m < 2; m++) {
                if ((env->cold == 0 && m == 1) || (env->cold == 1 && m == 0))
                    continue;
                rc = sweep_point(env, sw, &s, coords, m, err);
            }
        }
        if (s.ab)
            sweep_ab_close(s.ab);
        vyre_pipeline_free(s.p);
        vyre__gpu_close(&g);
    }
    vyre__sweep_kernel_release(&k);
    vyre__sweep_binding_release(&b);
    return rc;
}
