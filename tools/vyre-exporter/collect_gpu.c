/*
 * collect_gpu.c - the NVML collector: libcore's GPU monitor (NVML loaded
 * with dlopen, vyre/gpu.h), sampled by a thread of its own every
 * GPU_EVERY_NS, never inside a scrape: a scrape copies the newest sample.
 * On an H100 one NVML sample took 0.1 ms on an idle GPU and 2.1 ms beside
 * two busy processes (their per-process calls), which was most of a 2.7 ms
 * scrape (issue 25); GPU figures a second old are what dcgm-exporter serves
 * too (it collects every 30 s by default). The first scrape waits for the
 * first sample (at most FIRST_WAIT_NS). When NVML cannot be opened the
 * exporter keeps serving the other families and retries the open at most
 * once a minute (a driver installed later is picked up).
 */
#include "exporter_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPU_RETRY_NS  (60ull * 1000000000ull)
#define GPU_EVERY_NS  1000000000ull
#define FIRST_WAIT_NS (5ull * 1000000000ull)

/* One sample into *out by the sampler's thread; *ok, msg as a scrape shows
 * them; returns 1 when the sample failed (counted in errors[EXP_C_NVML]). */
static int sample_once(exp_gpu_sampler *b, vyre_gpu_snapshot *out, int *ok, char *msg, size_t size)
{
    *ok = 0;
    uint64_t now = tool_mono_ns();
    vyre_error e;
    vyre_error_clear(&e);
    if (!b->mon) {
        if (b->retry_ns && now < b->retry_ns)
            return 0; /* msg still says why */
        b->retry_ns = now + GPU_RETRY_NS;
        int rc = vyre_gpu_monitor_open(&b->mon, &e);
        if (rc) {
            tool_strlcpy(msg, e.message[0] ? e.message : vyre_strerror(rc), size);
            return 0; /* not a scrape error: vyre_gpu_monitor_up says it */
        }
        (void)vyre_gpu_monitor_want(b->mon, b->want);
    }
    int rc = vyre_gpu_monitor_sample(b->mon, out, &e);
    if (rc) {
        tool_strlcpy(msg, e.message[0] ? e.message : vyre_strerror(rc), size);
        return 1;
    }
    msg[0] = '\0';
    *ok = 1;
    return 0;
}

/* An absolute CLOCK_MONOTONIC time ns from now, for pthread_cond_timedwait. */
static struct timespec mono_after(uint64_t ns)
{
    struct timespec ts;
    uint64_t t = tool_mono_ns() + ns;
    ts.tv_sec = (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    return ts;
}

static void *sampler_main(void *arg)
{
    exp_gpu_sampler *b = arg;
    vyre_gpu_snapshot *s = malloc(sizeof *s);
    char msg[EXP_MSG_MAX] = "";
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        pthread_mutex_unlock(&b->mu);
        int ok = 0, failed = 0;
        if (s)
            failed = sample_once(b, s, &ok, msg, sizeof msg);
        else
            tool_strlcpy(msg, "out of memory", sizeof msg);
        pthread_mutex_lock(&b->mu);
        if (ok)
            memcpy(&b->snap, s, sizeof *s);
        b->ok = ok;
        tool_strlcpy(b->msg, msg, sizeof b->msg);
        b->errors += (uint64_t)failed;
        b->seq++;
        pthread_cond_broadcast(&b->cv);
        struct timespec until = mono_after(GPU_EVERY_NS);
        while (!b->stop && pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&b->mu);
    free(s);
    return NULL;
}

/* The sampler, started on the first scrape; NULL when it cannot start. */
static exp_gpu_sampler *sampler_start(exporter *x)
{
    exp_gpu_sampler *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    if (tool_cond_init_monotonic(&b->cv) != 0) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->mu, NULL);
    /* The DCGM-compatible families want energy, encoder and decoder use,
     * PCIe replays and remapped rows: NVML calls vyre's own families skip. */
    b->want = x->o.dcgm_compat ? VYRE_GPU_F_OPTIONAL : 0;
    if (pthread_create(&b->thread, NULL, sampler_main, b) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return NULL;
    }
    b->started = 1;
    x->sampler = b;
    return b;
}

void exp_gpu_sampler_free(exporter *x)
{
    exp_gpu_sampler *b = x->sampler;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    vyre_gpu_monitor_close(b->mon);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
    x->sampler = NULL;
}

void exp_collect_gpus(exporter *x)
{
    x->gpu_ok = 0;
    if (x->o.no_gpu) {
        tool_strlcpy(x->gpu_msg, "GPU monitoring turned off (--no-gpu)", sizeof x->gpu_msg);
        return;
    }
    exp_gpu_sampler *b = x->sampler ? x->sampler : sampler_start(x);
    if (!b) {
        tool_strlcpy(x->gpu_msg, "cannot start the NVML sampling thread", sizeof x->gpu_msg);
        return;
    }
    pthread_mutex_lock(&b->mu);
    struct timespec until = mono_after(FIRST_WAIT_NS);
    while (!b->seq && pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
        ;
    x->gpu_ok = b->ok;
    if (b->ok)
        memcpy(&x->gsnap, &b->snap, sizeof x->gsnap);
    tool_strlcpy(x->gpu_msg, b->seq ? b->msg : "no NVML sample yet", sizeof x->gpu_msg);
    x->errors[EXP_C_NVML] += b->errors - x->sampler_errors;
    x->sampler_errors = b->errors;
    pthread_mutex_unlock(&b->mu);
}

void exp_gpu_procs_free(exporter *x)
{
    free(x->gprocs);
    x->gprocs = NULL;
    x->ngprocs = 0;
    vyre_proc_reader_free(x->procfs);
    x->procfs = NULL;
}

/* The names of a process listed last scrape, or NULL. */
static const exp_gproc *known(const exp_gproc *old, size_t n, uint32_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (old[i].pid == pid)
            return &old[i];
    return NULL;
}

/*
 * Every process NVML listed in this scrape's sample, with its command name
 * and user from /proc (vyre/proc.h, as vyre-top names them), capped at
 * EXP_MAX_PROCS as the telemetry pages are (libcore already lists at most
 * VYRE_GPU_MAX_PROCS per GPU; the rest are counted in vyre_gpu_processes). The names of a pid
 * listed in the previous scrape are kept, not read again: three /proc
 * reads per process per scrape are most of this collector's time, and a
 * pid reused within one scrape interval while on a GPU both times is the
 * only case that keeps a stale name (its figures are still the new ones).
 */
void exp_collect_gpu_procs(exporter *x)
{
    if (!x->procfs)
        (void)vyre_proc_reader_new(NULL, &x->procfs, NULL); /* NULL: out of memory, no names */
    exp_gproc *old = x->gprocs;
    size_t nold = x->ngprocs, total = 0;
    for (unsigned g = 0; x->gpu_ok && g < x->gsnap.ngpus && g < VYRE_GPU_MAX; g++)
        if (vyre_gpu_field_valid(&x->gsnap.gpus[g], VYRE_GPU_F_PROCS))
            total += x->gsnap.gpus[g].nprocs < VYRE_GPU_MAX_PROCS ? x->gsnap.gpus[g].nprocs
                                                                  : VYRE_GPU_MAX_PROCS;
    size_t keep = total < EXP_MAX_PROCS ? total : EXP_MAX_PROCS, n = 0;
    exp_gproc *now = keep ? calloc(keep, sizeof *now) : NULL;
    if (keep && !now)
        keep = 0; /* out of memory: no list this scrape */
    for (unsigned g = 0; n < keep && g < x->gsnap.ngpus && g < VYRE_GPU_MAX; g++) {
        const vyre_gpu_info *gi = &x->gsnap.gpus[g];
        if (!vyre_gpu_field_valid(gi, VYRE_GPU_F_PROCS))
            continue;
        for (unsigned k = 0; k < gi->nprocs && k < VYRE_GPU_MAX_PROCS && n < keep; k++) {
            exp_gproc *p = &now[n++];
            p->gpu = gi->index;
            p->np = &gi->procs[k];
            p->pid = p->np->pid;
            const exp_gproc *was = known(old, nold, p->pid);
            if (was) {
                tool_strlcpy(p->comm, was->comm, sizeof p->comm);
                tool_strlcpy(p->user, was->user, sizeof p->user);
                continue;
            }
            vyre_proc_info hp;
            if (x->procfs && vyre_proc_read(x->procfs, (int32_t)p->pid, &hp, NULL) == VYRE_OK) {
                tool_strlcpy(p->comm, hp.st.comm, sizeof p->comm);
                tool_strlcpy(p->user, hp.uid_valid ? hp.user : "", sizeof p->user);
            }
        }
    }
    free(old);
    x->gprocs = now;
    x->ngprocs = n;
    x->gprocs_dropped = total - n;
}
