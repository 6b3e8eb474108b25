/*
 * metrics_gpuproc.c - the processes NVML lists on each GPU (labels gpu,
 * pid, comm, user), whether or not they publish vyre telemetry: what
 * vyre-top shows in its process panel and dcgm-exporter users ask for
 * (its issues #109, #521). A figure NVML cannot give for a process
 * (memory on some drivers, no utilisation sample in the window) is left
 * out for it, not exported as 0; vyre_gpu_process_info lists it anyway.
 */
#include "exporter_internal.h"

#include <stdio.h>

typedef struct glabels {
    char gpu[12], pid[16];
    expo_label l[4];
} glabels;

static void labels_of(const exp_gproc *p, glabels *o)
{
    snprintf(o->gpu, sizeof o->gpu, "%d", p->gpu);
    snprintf(o->pid, sizeof o->pid, "%u", (unsigned)p->pid);
    o->l[0] = (expo_label){"gpu", o->gpu};
    o->l[1] = (expo_label){"pid", o->pid};
    o->l[2] = (expo_label){"comm", p->comm};
    o->l[3] = (expo_label){"user", p->user};
}

enum { G_MEM, G_SM, G_MEMUTIL, G_COUNT };

static const struct {
    const char *name, *help;
} k_fam[G_COUNT] = {
    [G_MEM] = {"vyre_gpu_process_memory_used_bytes",
               "GPU memory the process holds on this GPU, bytes (NVML)."},
    [G_SM] = {"vyre_gpu_process_sm_utilization_ratio",
              "Share of the time since the previous scrape in which a kernel of the process "
              "ran on the GPU (0-1; NVML's per-process sample)."},
    [G_MEMUTIL] = {"vyre_gpu_process_memory_utilization_ratio",
                   "Share of the time since the previous scrape in which the process read or "
                   "wrote device memory (0-1; NVML's per-process sample)."},
};

void exp_render_gpu_procs(exporter *x, expo *e)
{
    expo_family(e, "vyre_gpu_process_info", "gauge",
                "Always 1: a process NVML lists on the GPU (type compute or graphics), with "
                "its command name and user from /proc (empty when it is gone or in another "
                "PID namespace).");
    for (size_t i = 0; i < x->ngprocs; i++) {
        glabels gl;
        labels_of(&x->gprocs[i], &gl);
        expo_label type = {"type", x->gprocs[i].np->graphics ? "graphics" : "compute"};
        expo_sample(e, "vyre_gpu_process_info", gl.l, 4, &type, 1);
    }
    for (int f = 0; f < G_COUNT; f++) {
        expo_family(e, k_fam[f].name, "gauge", k_fam[f].help);
        for (size_t i = 0; i < x->ngprocs; i++) {
            const vyre_gpu_process *np = x->gprocs[i].np;
            if (f == G_MEM ? !np->used_valid : !np->util_valid)
                continue;
            double v = f == G_MEM  ? (double)np->used_bytes
                       : f == G_SM ? np->sm_util_pct / 100.0
                                   : np->mem_util_pct / 100.0;
            glabels gl;
            labels_of(&x->gprocs[i], &gl);
            expo_sample(e, k_fam[f].name, gl.l, 4, NULL, v);
        }
    }
    expo_family(e, "vyre_gpu_processes_unexported", "gauge",
                "Processes NVML listed this scrape that are not exported: past the exporter's "
                "limit of processes per scrape (the same as for telemetry pages).");
    expo_sample_u64(e, "vyre_gpu_processes_unexported", NULL, 0, NULL, x->gprocs_dropped);
}
