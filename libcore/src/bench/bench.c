/*
 * bench.c - the measurement engine of vyre-bench: one point measured under
 * a stopping rule with throttle and outlier flags, and the point runner that
 * wraps it in an NVTX range, profiler bracket, storage and a separate CUPTI
 * pass. The suites (suite_*.c, gpu suites in bench_gpu.c) call down into
 * this file; the suite table (suites.c) calls them. See vyre/bench.h.
 *
 * Why the CUPTI pass is separate: with kernel capture on, every launch
 * costs 1-2 us more on the host (docs/DESIGN.md), which would be measured;
 * so the timed pass runs with CUPTI off and the records come from a short
 * second pass of the same work.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "bench/bench_internal.h"
#include "cuda/cuda_internal.h"
#include "base/internal.h"
#include "vyre/nvtx.h"

/* ---- one point ------------------------------------------------------------------ */

/* Clocks-event reasons that slow the GPU down against its will: power and
 * thermal caps, hardware slowdown. Idle, application clocks, sync boost
 * and display settings are not throttling of a running benchmark. */
#define THROTTLE_MASK                                                                              \
    (VYRE_GPU_THROTTLE_SW_POWER | VYRE_GPU_THROTTLE_HW | VYRE_GPU_THROTTLE_SW_THERMAL |            \
     VYRE_GPU_THROTTLE_HW_THERMAL | VYRE_GPU_THROTTLE_POWER_BRAKE)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int vyre_bench_measure(const vyre_bench_measure_opts *o, vyre_bench_point *pt,
                       vyre_bench_sample **samples, size_t *n, int *interrupted, vyre_error *err)
{
    if (samples)
        *samples = NULL;
    if (n)
        *n = 0;
    if (interrupted)
        *interrupted = 0;
    if (!o || !o->sample || !pt || !samples || !n || !interrupted)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_measure: NULL argument");
    double items = pt->items >= 1 ? pt->items : 1;
    for (size_t i = 0; i < o->warmup; i++) {
        if (o->stop && *o->stop) {
            *interrupted = 1;
            return VYRE_OK;
        }
        double v, w;
        int rc = o->prepare ? o->prepare(o->ctx, err) : 0;
        if (!rc)
            rc = o->sample(o->ctx, &v, &w, err);
        if (rc)
            return rc;
    }
    vyre_gpu_snapshot *snap = NULL;
    if (o->mon && o->nvml_index >= 0)
        snap = malloc(sizeof *snap);
    size_t cap = 64;
    vyre_bench_sample *s = malloc(cap * sizeof *s);
    if (!s) {
        free(snap);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
    }
    /* The values alone, for the robust noise the stopping rule reads. It is
     * recomputed (sort + MAD, O(k log k)) only once the minimums are met and
     * then every k/16 samples, so the checks cost O(log k) sorts in all. */
    double *vx = malloc(cap * sizeof *vx);
    if (!vx) {
        free(s);
        free(snap);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
    }
    double noise = NAN;
    size_t next_noise = 0;
    double measured_s = 0;
    uint64_t t_start = vyre__mono_ns();
    vyre_stats_stop_decision d;
    memset(&d, 0, sizeof d);
    int rc = VYRE_OK;
    size_t k = 0;
    for (;;) {
        if (o->stop && *o->stop) {
            *interrupted = 1;
            break;
        }
        if (o->prepare && (rc = o->prepare(o->ctx, err)))
            break;
        double v = 0, w = 0;
        if ((rc = o->sample(o->ctx, &v, &w, err)))
            break;
        if (!isfinite(v) || v < 0) {
            rc = vyre__fail(err, VYRE_ERANGE, NULL, "a sample of '%s' was not a time (%g)",
                            pt->benchmark, v);
            break;
        }
        if (k == cap) {
            vyre_bench_sample *g = realloc(s, cap * 2 * sizeof *s);
            if (g)
                s = g;
            double *gx = g ? realloc(vx, cap * 2 * sizeof *vx) : NULL;
            if (gx)
                vx = gx;
            if (!g || !gx) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
                break;
            }
            cap *= 2;
        }
        vx[k] = v;
        vyre_bench_sample *x = &s[k++];
        memset(x, 0, sizeof *x);
        x->value = v;
        x->wall = w;
        /* Clocks after the sample, never inside it. */
        if (snap && vyre_gpu_monitor_sample(o->mon, snap, NULL) == 0 &&
            (unsigned)o->nvml_index < snap->ngpus) {
            const vyre_gpu_info *g = &snap->gpus[o->nvml_index];
            if (vyre_gpu_field_valid(g, VYRE_GPU_F_SM_CLOCK))
                x->sm_clock_mhz = g->sm_clock_mhz;
            if (vyre_gpu_field_valid(g, VYRE_GPU_F_THROTTLE) &&
                (g->throttle_reasons & THROTTLE_MASK))
                x->throttled = 1;
        }
        measured_s += v * items / 1e9;
        double elapsed_s = (double)(vyre__mono_ns() - t_start) / 1e9;
        if (k >= o->rule.min_samples && measured_s >= o->rule.min_time_s && k >= next_noise) {
            noise = vyre_stats_robust_noise(vx, k);
            next_noise = k + (k / 16 ? k / 16 : 1);
        }
        d = vyre_stats_stop_check_noise(&o->rule, k, noise, measured_s, elapsed_s);
        if (d.stop)
            break;
    }
    free(snap);
    free(vx);
    if (rc || *interrupted || k == 0) {
        free(s);
        return rc;
    }
    double *vals = malloc(k * sizeof *vals);
    unsigned char *flags = malloc(k);
    if (!vals || !flags) {
        free(vals);
        free(flags);
        free(s);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
    }
    for (size_t i = 0; i < k; i++)
        vals[i] = s[i].value;
    size_t nout = 0;
    rc = vyre_stats_compute(vals, k, &pt->stats, err);
    if (!rc)
        rc = vyre_stats_outliers(vals, k, VYRE_OUTLIER_K_DEFAULT, flags, &nout, err);
    if (!rc) {
        pt->n_throttled = 0;
        for (size_t i = 0; i < k; i++) {
            s[i].outlier = flags[i];
            pt->n_throttled += s[i].throttled;
            vals[i] = s[i].wall;
        }
        qsort(vals, k, sizeof *vals, cmp_double);
        pt->wall_median = vyre_stats_percentile_sorted(vals, k, 50);
        pt->stop_reason = d.reason;
        vyre_stats_stop_format(&d, &o->rule, pt->stop, sizeof pt->stop);
    }
    free(vals);
    free(flags);
    if (rc) {
        free(s);
        return rc;
    }
    *samples = s;
    *n = k;
    return VYRE_OK;
}

/* ---- the point runner ----------------------------------------------------------- */

/* Records gathered by the CUPTI pass (the sink runs on CUPTI's threads). */
struct capture {
    pthread_mutex_t mu;
    vyre_activity *recs;
    size_t n, cap;
    int oom;
};

static void capture_sink(const vyre_activity *recs, size_t n, void *ctx)
{
    struct capture *c = ctx;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind != VYRE_ACTIVITY_KERNEL && recs[i].kind != VYRE_ACTIVITY_RANGE)
            continue;
        if (c->n == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 64;
            vyre_activity *p = cap <= 65536 ? realloc(c->recs, cap * sizeof *p) : NULL;
            if (!p) {
                c->oom = 1;
                break;
            }
            c->recs = p;
            c->cap = cap;
        }
        c->recs[c->n++] = recs[i];
    }
    pthread_mutex_unlock(&c->mu);
}

static void append_note(vyre_bench_point *pt, const char *text)
{
    size_t len = strlen(pt->note);
    snprintf(pt->note + len, sizeof pt->note - len, "%s%s", len ? "; " : "", text);
}

/* The CUPTI pass. A failure to capture is a note, never a failed point:
 * the timings are what the point is for. */
int vyre__bench_kernel_pass(vyre_bench_env *env, vyre_bench_point *pt, vyre__bench_pass_fn kpass,
                            void *ctx, vyre_error *err)
{
    struct capture cap;
    memset(&cap, 0, sizeof cap);
    pthread_mutex_init(&cap.mu, NULL);
    vyre_error e;
    vyre_error_clear(&e);
    vyre_cupti_config cfg = {VYRE_CUPTI_KERNEL | VYRE_CUPTI_MARKER, 0};
    int rc = vyre_cupti_add_sink(capture_sink, &cap, &e);
    /* The same records also feed this process's telemetry page, so
     * vyre-top shows the bench's kernels by name. */
    int tel = !rc && vyre_cupti_add_sink(vyre_cupti_telemetry_sink, NULL, NULL) == VYRE_OK;
    if (!rc) {
        rc = vyre_cupti_start(&cfg, &e);
        if (rc) {
            vyre_cupti_remove_sink(capture_sink, &cap);
            if (tel)
                vyre_cupti_remove_sink(vyre_cupti_telemetry_sink, NULL);
        }
    }
    if (rc) {
        char note[200];
        snprintf(note, sizeof note, "no kernel records: %.160s", e.message);
        append_note(pt, note);
        env->kernels = 0; /* say it once, not on every point */
        pthread_mutex_destroy(&cap.mu);
        return VYRE_OK;
    }
    vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, (uint64_t)pt->id);
    int prc = kpass(ctx, err);
    vyre_nvtx_pop();
    vyre_cupti_flush(1, NULL);
    vyre_cupti_stop(NULL);
    vyre_cupti_remove_sink(capture_sink, &cap);
    if (tel)
        vyre_cupti_remove_sink(vyre_cupti_telemetry_sink, NULL);
    if (!prc && cap.n)
        prc = vyre_bench_point_records(env->db, pt->run_id, pt->id, cap.recs, cap.n, err);
    free(cap.recs);
    pthread_mutex_destroy(&cap.mu);
    return prc;
}

/* The records sweep's half of vyre__bench_point_run. */
static int records_point(vyre_bench_env *env, vyre_bench_point *pt, vyre__bench_pass_fn kpass,
                         void *ctx, vyre_error *err)
{
    if (!kpass || !env->kernels || (env->stop && *env->stop))
        return VYRE_OK;
    for (size_t i = env->cursor; i < env->ntimed; i++) {
        const struct vyre__bench_timed *t = &env->timed[i];
        if (t->device != pt->device || t->mode != (int)pt->mode ||
            strcmp(t->benchmark, pt->benchmark) != 0 || strcmp(t->axes, pt->axes) != 0)
            continue;
        env->cursor = i + 1;
        pt->id = t->id;
        pt->run_id = env->run_id;
        return vyre__bench_kernel_pass(env, pt, kpass, ctx, err);
    }
    return VYRE_OK; /* not timed (interrupted, or the suite chose otherwise) */
}

static int remember_timed(vyre_bench_env *env, const vyre_bench_point *pt, vyre_error *err)
{
    if (env->ntimed == env->timed_cap) {
        size_t cap = env->timed_cap ? env->timed_cap * 2 : 64;
        struct vyre__bench_timed *p = realloc(env->timed, cap * sizeof *p);
        if (!p)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory noting point %lld",
                              (long long)pt->id);
        env->timed = p;
        env->timed_cap = cap;
    }
    struct vyre__bench_timed *t = &env->timed[env->ntimed++];
    t->id = pt->id;
    vyre__strlcpy(t->benchmark, pt->benchmark, sizeof t->benchmark);
    vyre__strlcpy(t->axes, pt->axes, sizeof t->axes);
    t->device = pt->device;
    t->mode = (int)pt->mode;
    return VYRE_OK;
}

int vyre__bench_point_run(vyre_bench_env *env, vyre_bench_point *pt,
                          const vyre_bench_measure_opts *o, int gpu, vyre__bench_pass_fn kpass,
                          vyre__bench_finish_fn finish, void *ctx, vyre_error *err)
{
    if (env->records_sweep)
        return records_point(env, pt, kpass, ctx, err);
    pt->run_id = env->run_id;
    pt->seq = env->next_seq++;
    if (env->on_progress)
        env->on_progress(env->done, env->total, pt->benchmark, env->cb_ctx);
    int rc = vyre_bench_point_begin(env->db, pt, err);
    if (rc)
        return rc;
    const vyre__cuda_fns *cu = gpu ? vyre__cuda() : NULL;
    vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, (uint64_t)pt->id);
    if (cu && cu->cuProfilerStart)
        cu->cuProfilerStart();
    vyre_bench_sample *s = NULL;
    size_t n = 0;
    int interrupted = 0;
    rc = vyre_bench_measure(o, pt, &s, &n, &interrupted, err);
    if (cu && cu->cuProfilerStop)
        cu->cuProfilerStop();
    vyre_nvtx_pop();
    if (!rc && interrupted) {
        env->interrupted = 1;
        return VYRE_OK; /* the reserved row goes with the run's finish */
    }
    if (!rc && finish)
        finish(pt, ctx);
    if (!rc)
        rc = vyre_bench_point_finish(env->db, pt, s, n, err);
    if (!rc && env->kernels && kpass)
        rc = remember_timed(env, pt, err);
    if (!rc) {
        env->done++;
        if (env->on_point)
            env->on_point(pt, s, n, env->cb_ctx);
    }
    free(s);
    return rc;
}
