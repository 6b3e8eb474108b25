/*
 * engine.c - the measurement engine of vyre-bench: one point measured under
 * a stopping rule with throttle and outlier flags, and the point runner that
 * wraps it in an NVTX range, profiler bracket, storage and a separate CUPTI
 * pass. The suites (suite_*.c, reference_gpu.c, sweep_run.c) call down
 * into this file; the suite table (suites.c) calls them. See vyre/bench.h.
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
#include "bench/stats_internal.h"
#include "cuda/cuda_internal.h"
#include "base/internal.h"
#include "cuda/cupti_internal.h"
#include "cuda/nvml_internal.h"
#include "trace/nvtx_internal.h"
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

/* The statistics of samples s[0..k-1] into pt (stats, outlier flags,
 * throttled count, wall median, rounds and their spread). */
static int summarize(vyre_bench_point *pt, vyre_bench_sample *s, size_t k, vyre_error *err)
{
    double *vals = malloc(k * sizeof *vals);
    unsigned char *flags = malloc(k);
    unsigned *round = malloc(k * sizeof *round);
    if (!vals || !flags || !round) {
        free(vals);
        free(flags);
        free(round);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
    }
    for (size_t i = 0; i < k; i++) {
        vals[i] = s[i].value;
        round[i] = s[i].round;
    }
    size_t nout = 0, nrounds = 0;
    int rc = vyre__stats_compute(vals, k, &pt->stats, err);
    if (!rc)
        rc = vyre__stats_outliers(vals, k, VYRE_OUTLIER_K_DEFAULT, flags, &nout, err);
    if (!rc) {
        /* The `noise` column: the samples' spread, or the rounds' when
         * they disagree more (drift during the run). */
        double rn = vyre__stats_round_noise(vals, round, k, &nrounds);
        pt->rounds = (unsigned)nrounds;
        pt->round_noise = NAN;
        if (nrounds >= 2 && isfinite(rn)) {
            pt->stats.robust_noise = rn;
            pt->round_noise = rn;
        }
        pt->n_throttled = 0;
        for (size_t i = 0; i < k; i++) {
            s[i].outlier = flags[i];
            pt->n_throttled += s[i].throttled;
            vals[i] = s[i].wall;
        }
        qsort(vals, k, sizeof *vals, cmp_double);
        pt->wall_median = vyre_stats_percentile_sorted(vals, k, 50);
    }
    free(vals);
    free(flags);
    free(round);
    return rc;
}

int vyre__bench_measure(const vyre_bench_measure_opts *o, vyre_bench_point *pt,
                        vyre_bench_sample **samples, size_t *n, int *interrupted, vyre_error *err)
{
    if (samples)
        *samples = NULL;
    if (n)
        *n = 0;
    if (interrupted)
        *interrupted = 0;
    if (!o || !o->sample || !pt || !samples || !n || !interrupted)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_measure: NULL argument");
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
    int watch = o->mon && o->nvml_index >= 0;
    size_t cap = 64;
    vyre_bench_sample *s = malloc(cap * sizeof *s);
    if (!s) {
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory measuring a point");
    }
    /* The values alone, for the robust noise the stopping rule reads. It is
     * recomputed (sort + MAD, O(k log k)) only once the minimums are met and
     * then every k/16 samples, so the checks cost O(log k) sorts in all. */
    double *vx = malloc(cap * sizeof *vx);
    if (!vx) {
        free(s);
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
        /* Clocks after the sample, never inside it: the SM clock and the
         * reasons alone (a whole snapshot lists processes too, which cost
         * more than a 10 us sample). */
        unsigned mhz = 0;
        uint64_t reasons = 0;
        int valid =
            watch ? vyre__gpu_monitor_clocks(o->mon, (unsigned)o->nvml_index, &mhz, &reasons) : 0;
        if (valid & VYRE_GPU_F_SM_CLOCK)
            x->sm_clock_mhz = mhz;
        if ((valid & VYRE_GPU_F_THROTTLE) && (reasons & THROTTLE_MASK))
            x->throttled = 1;
        measured_s += v * items / 1e9;
        double elapsed_s = (double)(vyre__mono_ns() - t_start) / 1e9;
        if (k >= o->rule.min_samples && measured_s >= o->rule.min_time_s && k >= next_noise) {
            noise = vyre__stats_robust_noise(vx, k);
            next_noise = k + (k / 16 ? k / 16 : 1);
        }
        d = vyre__stats_stop_check_noise(&o->rule, k, noise, measured_s, elapsed_s);
        if (d.stop)
            break;
    }
    free(vx);
    if (rc || *interrupted || k == 0) {
        free(s);
        return rc;
    }
    if ((rc = summarize(pt, s, k, err))) {
        free(s);
        return rc;
    }
    pt->stop_reason = d.reason;
    /* The stored text without the stop check's figure: it is computed every
     * k/16 samples and on this round only, and the row's noise column (the
     * robust noise of every sample, or of the rounds) is the one figure. */
    vyre_stats_stop_decision shown = d;
    shown.noise = NAN;
    vyre__stats_stop_format(&shown, &o->rule, pt->stop, sizeof pt->stop);
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
        /* The hold the pass's launches queue behind is not the point's:
         * spinning while they are queued, it could outlast them all and
         * pass for the main kernel. */
        if (recs[i].kind == VYRE_ACTIVITY_KERNEL &&
            strcmp(recs[i].name, VYRE__BENCH_BLOCK_KERNEL) == 0)
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

/* The samples the blocking kernel made the point discard, all rounds
 * together (a's) plus those of its batch view (extra), into pt and its
 * note. */
static void discard_note(vyre_bench_point *pt, const struct vyre__bench_acc *a, size_t extra)
{
    pt->n_block_timeouts = a->discarded + extra;
    if (!pt->n_block_timeouts)
        return;
    char note[160];
    snprintf(note, sizeof note, "%zu sample%s discarded: the blocking kernel timed out unreleased",
             pt->n_block_timeouts, pt->n_block_timeouts == 1 ? "" : "s");
    append_note(pt, note);
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
    int tel = !rc && vyre_cupti_add_sink(vyre__cupti_telemetry_sink, NULL, NULL) == VYRE_OK;
    if (!rc) {
        rc = vyre_cupti_start(&cfg, &e);
        if (rc) {
            vyre_cupti_remove_sink(capture_sink, &cap);
            if (tel)
                vyre_cupti_remove_sink(vyre__cupti_telemetry_sink, NULL);
        }
    }
    if (rc) {
        char note[200];
        /* bounded: a point's note is a fixed field */
        snprintf(note, sizeof note, "no kernel records: %.160s", e.message);
        append_note(pt, note);
        env->kernels = 0; /* say it once, not on every point */
        pthread_mutex_destroy(&cap.mu);
        return VYRE_OK;
    }
    vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, (uint64_t)pt->id);
    env->kpass_traced_ns = 0;
    int prc = kpass(ctx, err);
    vyre_nvtx_pop();
    vyre_cupti_flush(1, NULL);
    vyre_cupti_stop(NULL);
    vyre_cupti_remove_sink(capture_sink, &cap);
    if (tel)
        vyre_cupti_remove_sink(vyre__cupti_telemetry_sink, NULL);
    if (!prc && cap.n)
        prc = vyre__bench_point_records(env->db, pt->run_id, pt->id, cap.recs, cap.n, err);
    /* After the kernel view: the note says when the tracing itself slowed
     * the launches (the kernel view is then a traced time, README). */
    if (!prc && cap.n && env->kpass_traced_ns > 0)
        prc = vyre__bench_point_traced(env->db, pt->id, env->kpass_traced_ns, err);
    env->kpass_traced_ns = 0;
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
            strcmp(t->benchmark, pt->benchmark) != 0 || strcmp(t->axes, pt->axes) != 0 ||
            strcmp(t->variant, pt->variant) != 0)
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
    if (vyre__grow(&env->timed, &env->timed_cap, env->ntimed + 1, sizeof *env->timed, 64))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory noting point %lld",
                          (long long)pt->id);
    struct vyre__bench_timed *t = &env->timed[env->ntimed++];
    t->id = pt->id;
    vyre__strlcpy(t->benchmark, pt->benchmark, sizeof t->benchmark);
    vyre__strlcpy(t->axes, pt->axes, sizeof t->axes);
    vyre__strlcpy(t->variant, pt->variant, sizeof t->variant);
    t->device = pt->device;
    t->mode = (int)pt->mode;
    return VYRE_OK;
}

/* ---- rounds --------------------------------------------------------------------- */

/* One round's share of a point's rule: 1/rounds of its minimum samples
 * (rounded up, at least 2 when the rule asks for 2 or more, so a round
 * has a spread of its own), time, timeout and sample cap. */
static vyre_stats_stop_rule round_rule(const vyre_stats_stop_rule *r, unsigned rounds)
{
    vyre_stats_stop_rule q = *r;
    if (rounds <= 1)
        return q;
    q.min_samples = (r->min_samples + rounds - 1) / rounds;
    if (q.min_samples < 2 && r->min_samples >= 2)
        q.min_samples = 2;
    q.min_time_s = r->min_time_s / rounds;
    q.timeout_s = r->timeout_s / rounds;
    if (r->max_samples) {
        q.max_samples = (r->max_samples + rounds - 1) / rounds;
        if (q.max_samples < q.min_samples)
            q.max_samples = q.min_samples;
    }
    return q;
}

/* How far a round's stop falls short of the rule: met, capped, timed out. */
static int stop_rank(vyre_stats_stop_reason r)
{
    return r == VYRE_STOP_TIMEOUT ? 2 : r == VYRE_STOP_MAX_SAMPLES ? 1 : 0;
}

static struct vyre__bench_acc *acc_find(vyre_bench_env *env, const vyre_bench_point *pt)
{
    for (size_t i = 0; i < env->nacc; i++) {
        const vyre_bench_point *q = &env->acc[i].pt;
        if (q->device == pt->device && q->mode == pt->mode && strcmp(q->suite, pt->suite) == 0 &&
            strcmp(q->benchmark, pt->benchmark) == 0 && strcmp(q->axes, pt->axes) == 0 &&
            strcmp(q->variant, pt->variant) == 0)
            return &env->acc[i];
    }
    return NULL;
}

static struct vyre__bench_acc *acc_add(vyre_bench_env *env, const vyre_bench_point *pt,
                                       vyre_error *err)
{
    if (vyre__grow(&env->acc, &env->acc_cap, env->nacc + 1, sizeof *env->acc, 32)) {
        vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory keeping the rounds of '%s'",
                   pt->benchmark);
        return NULL;
    }
    struct vyre__bench_acc *a = &env->acc[env->nacc++];
    memset(a, 0, sizeof *a);
    a->pt = *pt;
    return a;
}

static int acc_append(struct vyre__bench_acc *a, const vyre_bench_sample *s, size_t n,
                      unsigned round, vyre_error *err)
{
    if (a->n + n > a->cap) {
        size_t cap = a->cap ? a->cap : 64;
        while (cap < a->n + n)
            cap *= 2;
        vyre_bench_sample *p = realloc(a->s, cap * sizeof *p);
        if (!p)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory keeping the rounds of '%s'",
                              a->pt.benchmark);
        a->s = p;
        a->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        a->s[a->n] = s[i];
        a->s[a->n++].round = round;
    }
    a->rounds++;
    return VYRE_OK;
}

/* Stores pt (its id from the accumulator) with every sample of a, all
 * rounds together, and hands it on. */
static int acc_store(vyre_bench_env *env, struct vyre__bench_acc *a, vyre_bench_point *pt,
                     int remember, vyre_error *err)
{
    int rc = summarize(pt, a->s, a->n, err);
    if (!rc)
        rc = vyre__bench_point_finish(env->db, pt, a->s, a->n, err);
    if (!rc && remember)
        rc = remember_timed(env, pt, err);
    if (rc)
        return rc;
    a->stored = 1;
    env->stored++;
    for (size_t i = 0; i < a->n; i++) {
        unsigned c = a->s[i].sm_clock_mhz;
        if (!c)
            continue;
        if (!env->clock_min || c < env->clock_min)
            env->clock_min = c;
        if (c > env->clock_max)
            env->clock_max = c;
    }
    if (env->on_point)
        env->on_point(pt, a->s, a->n, env->cb_ctx);
    return VYRE_OK;
}

int vyre__bench_rounds_flush(vyre_bench_env *env, vyre_error *err)
{
    int rc = VYRE_OK;
    unsigned rounds = env->rounds ? env->rounds : 1;
    for (size_t i = 0; !rc && i < env->nacc; i++) {
        struct vyre__bench_acc *a = &env->acc[i];
        if (a->stored || a->n == 0)
            continue;
        vyre_bench_point pt = a->pt;
        char note[96];
        snprintf(note, sizeof note, "interrupted: %u of %u rounds", a->rounds, rounds);
        append_note(&pt, note);
        discard_note(&pt, a, 0);
        rc = acc_store(env, a, &pt, 0, err);
    }
    vyre__bench_rounds_release(env);
    return rc;
}

void vyre__bench_rounds_release(vyre_bench_env *env)
{
    for (size_t i = 0; i < env->nacc; i++)
        free(env->acc[i].s);
    free(env->acc);
    env->acc = NULL;
    env->nacc = env->acc_cap = 0;
}

/* The point's row: reserved in its first round, found again later. */
static int point_slot(vyre_bench_env *env, vyre_bench_point *pt, struct vyre__bench_acc **out,
                      vyre_error *err)
{
    struct vyre__bench_acc *a = acc_find(env, pt);
    pt->run_id = env->run_id;
    if (a) {
        pt->id = a->pt.id;
        pt->seq = a->pt.seq;
        *out = a;
        return VYRE_OK;
    }
    pt->seq = env->next_seq++;
    int rc = vyre__bench_point_begin(env->db, pt, err);
    if (!rc && !(a = acc_add(env, pt, err)))
        rc = VYRE_ENOMEM;
    *out = a;
    return rc;
}

/* Measures this round of pt into a. *cut: Ctrl-C stopped it (nothing
 * added; env->interrupted set). */
static int round_into(vyre_bench_env *env, vyre_bench_point *pt, const vyre_bench_measure_opts *o,
                      int gpu, struct vyre__bench_acc *a, unsigned rounds, int *cut,
                      vyre_error *err)
{
    vyre_bench_measure_opts ro = *o;
    ro.rule = round_rule(&o->rule, rounds);
    const vyre__cuda_fns *cu = gpu ? vyre__cuda() : NULL;
    vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, (uint64_t)pt->id);
    if (cu && cu->cuProfilerStart)
        cu->cuProfilerStart();
    vyre_bench_sample *s = NULL;
    size_t n = 0;
    env->block_discarded = 0; /* this point's round's, warm-up included */
    int rc = vyre__bench_measure(&ro, pt, &s, &n, cut, err);
    a->discarded += env->block_discarded;
    env->block_discarded = 0;
    if (cu && cu->cuProfilerStop)
        cu->cuProfilerStop();
    vyre_nvtx_pop();
    if (!rc && *cut) {
        env->interrupted = 1;
        return VYRE_OK; /* earlier rounds' samples are stored by vyre__bench_rounds_flush */
    }
    if (!rc)
        rc = acc_append(a, s, n, env->round, err);
    free(s);
    if (rc)
        return rc;
    env->done++;
    /* The stop text says what the last round saw, and that it was one. */
    if (rounds > 1) {
        char stop[sizeof pt->stop];
        int len = snprintf(stop, sizeof stop, "round %u of %u: ", env->round + 1, rounds);
        if (len > 0 && (size_t)len < sizeof stop)
            vyre__strlcpy(stop + len, pt->stop, sizeof stop - (size_t)len);
        vyre__strlcpy(pt->stop, stop, sizeof pt->stop);
    }
    /* A round cut short (timeout, sample cap) speaks for the point: its
     * samples fall short of the rule even when a later round met it. */
    if (stop_rank(pt->stop_reason) >= stop_rank(a->pt.stop_reason) || a->rounds == 1) {
        a->pt.stop_reason = pt->stop_reason;
        vyre__strlcpy(a->pt.stop, pt->stop, sizeof a->pt.stop);
    }
    pt->stop_reason = a->pt.stop_reason;
    vyre__strlcpy(pt->stop, a->pt.stop, sizeof pt->stop);
    return VYRE_OK;
}

/* The point's accumulator: env's (rounds) or *local (one round: nothing
 * is kept between passes, nothing lives in env). */
static int slot_for(vyre_bench_env *env, vyre_bench_point *pt, unsigned rounds,
                    struct vyre__bench_acc *local, struct vyre__bench_acc **a, vyre_error *err)
{
    if (env->on_progress)
        env->on_progress(env->done, env->total, pt->benchmark, env->cb_ctx);
    if (rounds > 1)
        return point_slot(env, pt, a, err);
    memset(local, 0, sizeof *local);
    pt->run_id = env->run_id;
    pt->seq = env->next_seq++;
    int rc = vyre__bench_point_begin(env->db, pt, err);
    local->pt = *pt;
    *a = local;
    return rc;
}

int vyre__bench_point_add(vyre_bench_env *env, vyre_bench_point *pt, const vyre_bench_sample *s,
                          size_t n, vyre__bench_finish_fn finish, void *ctx, vyre_error *err)
{
    if (env->records_sweep || n == 0)
        return VYRE_OK;
    unsigned rounds = env->rounds ? env->rounds : 1;
    struct vyre__bench_acc local, *a = NULL;
    int rc = slot_for(env, pt, rounds, &local, &a, err);
    if (!rc)
        rc = acc_append(a, s, n, env->round, err);
    if (!rc)
        env->done++;
    if (!rc && env->round + 1 >= rounds) {
        rc = summarize(pt, a->s, a->n, err);
        if (!rc && finish)
            finish(pt, ctx);
        if (!rc)
            rc = acc_store(env, a, pt, env->kernels, err);
    }
    if (a == &local)
        free(local.s);
    return rc;
}

int vyre__bench_point_run(vyre_bench_env *env, vyre_bench_point *pt,
                          const vyre_bench_measure_opts *o, int gpu, vyre__bench_pass_fn kpass,
                          vyre__bench_finish_fn finish, void *ctx, vyre_error *err)
{
    if (env->records_sweep)
        return records_point(env, pt, kpass, ctx, err);
    unsigned rounds = env->rounds ? env->rounds : 1;
    struct vyre__bench_acc local, *a = NULL;
    int rc = slot_for(env, pt, rounds, &local, &a, err);
    int cut = 0;
    if (!rc)
        rc = round_into(env, pt, o, gpu, a, rounds, &cut, err);
    /* The last round: finish() sees the statistics of every round (its
     * own discarded samples, the batch view's, are counted too). */
    if (!rc && !cut && env->round + 1 >= rounds) {
        rc = summarize(pt, a->s, a->n, err);
        if (!rc && finish)
            finish(pt, ctx);
        if (!rc)
            discard_note(pt, a, env->block_discarded);
        env->block_discarded = 0;
        if (!rc)
            rc = acc_store(env, a, pt, env->kernels && kpass, err);
    }
    if (a == &local)
        free(local.s);
    return rc;
}
