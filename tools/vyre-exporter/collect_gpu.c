/*
 * collect_gpu.c - the NVML collector: libcore's GPU monitor (NVML loaded
 * with dlopen, vyre/gpu.h), sampled once per scrape. When NVML cannot be
 * opened the exporter keeps serving the other families and retries the
 * open at most once a minute (a driver installed later is picked up).
 */
#include "exporter_internal.h"

#include <stdlib.h>
#include <string.h>

#define GPU_RETRY_NS (60ull * 1000000000ull)

void exp_collect_gpus(exporter *x)
{
    x->gpu_ok = 0;
    if (x->o.no_gpu) {
        tool_strlcpy(x->gpu_msg, "GPU monitoring turned off (--no-gpu)", sizeof x->gpu_msg);
        return;
    }
    uint64_t now = tool_mono_ns();
    vyre_error e;
    vyre_error_clear(&e);
    if (!x->gpu) {
        if (x->gpu_retry_ns && now < x->gpu_retry_ns)
            return; /* gpu_msg still says why */
        x->gpu_retry_ns = now + GPU_RETRY_NS;
        int rc = vyre_gpu_monitor_open(&x->gpu, &e);
        if (rc) {
            tool_strlcpy(x->gpu_msg, e.message[0] ? e.message : vyre_strerror(rc),
                         sizeof x->gpu_msg);
            return; /* not a scrape error: vyre_gpu_monitor_up says it */
        }
    }
    int rc = vyre_gpu_monitor_sample(x->gpu, &x->gsnap, &e);
    if (rc) {
        tool_strlcpy(x->gpu_msg, e.message[0] ? e.message : vyre_strerror(rc), sizeof x->gpu_msg);
        x->errors[EXP_C_NVML]++;
        return;
    }
    x->gpu_msg[0] = '\0';
    x->gpu_ok = 1;
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
 * and user from /proc (vyre-top's reader), capped at EXP_MAX_PROCS as the
 * telemetry pages are (libcore already lists at most VYRE_GPU_MAX_PROCS per
 * GPU; the rest are counted in vyre_gpu_processes). The names of a pid
 * listed in the previous scrape are kept, not read again: three /proc
 * reads per process per scrape are most of this collector's time, and a
 * pid reused within one scrape interval while on a GPU both times is the
 * only case that keeps a stale name (its figures are still the new ones).
 */
void exp_collect_gpu_procs(exporter *x)
{
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
            top_host_proc hp;
            if (top_procfs_read(TOP_PROC_ROOT, (int32_t)p->pid, &x->users, &hp) == 0) {
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
