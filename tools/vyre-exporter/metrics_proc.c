/*
 * metrics_proc.c - the per-process families (labels pid, comm, gpu): the
 * libcore counters as _total counters in base units, NVTX range latencies
 * as Prometheus histograms, and GPU time of the top N kernels by name.
 */
#include "exporter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plabels {
    char pid[16];
    expo_label l[3];
} plabels;

static void labels_of(const exp_proc *p, plabels *o)
{
    snprintf(o->pid, sizeof o->pid, "%d", (int)p->pid);
    o->l[0] = (expo_label){"pid", o->pid};
    o->l[1] = (expo_label){"comm", p->comm};
    o->l[2] = (expo_label){"gpu", p->gpu};
}

/* A counter family with one series per process: ids[] summed (n of them),
 * scaled by `scale` when not 1 (ns -> s). */
static void counter(exporter *x, expo *e, const char *name, const char *help, vyre_counter_id id,
                    double scale)
{
    expo_family(e, name, "counter", help);
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        uint64_t v = x->procs[i].v[id];
        if (scale == 1)
            expo_sample_u64(e, name, pl.l, 3, NULL, v);
        else
            expo_sample(e, name, pl.l, 3, NULL, (double)v * scale);
    }
}

/* A counter family labelled by direction. */
static void by_direction(exporter *x, expo *e, const char *name, const char *help,
                         const char *const *dirs, const vyre_counter_id *ids, size_t n)
{
    expo_family(e, name, "counter", help);
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        for (size_t d = 0; d < n; d++) {
            expo_label dir = {"direction", dirs[d]};
            expo_sample_u64(e, name, pl.l, 3, &dir, x->procs[i].v[ids[d]]);
        }
    }
}

static int by_ns_desc(const void *a, const void *b)
{
    const exp_kernel *ka = a, *kb = b;
    if (ka->ns != kb->ns)
        return ka->ns < kb->ns ? 1 : -1;
    return strcmp(ka->name, kb->name);
}

static void ranges(exporter *x, expo *e)
{
    const char *name = "vyre_range_duration_seconds";
    expo_family(e, name, "histogram",
                "Latency of libcore's NVTX ranges (the catalog of vyre/nvtx.h), from the "
                "process's log-linear histogram cut at bucket edges (le within 1/32 of 1, 2.5 "
                "and 5 x 10^k s; a duration equal to an edge, to the ns, counts in the next "
                "bucket).");
    char le[VYRE_RANGE_COUNT > 0 ? EXP_MAX_EDGES : 1][32];
    for (size_t k = 0; k < x->edges_n; k++)
        exp_format_ns_as_seconds(le[k], sizeof le[k], x->edges[k]);
    for (size_t i = 0; i < x->nprocs; i++) {
        const exp_proc *p = &x->procs[i];
        plabels pl;
        labels_of(p, &pl);
        for (int r = 0; r < VYRE_RANGE_COUNT; r++) {
            if (p->range_count[r] == 0)
                continue; /* never entered: no series */
            expo_label l[4] = {
                pl.l[0], pl.l[1], pl.l[2], {"range", vyre_nvtx_range((vyre_range_id)r)->name}};
            for (size_t k = 0; k < x->edges_n; k++) {
                expo_label lek = {"le", le[k]};
                expo_sample_u64(e, "vyre_range_duration_seconds_bucket", l, 4, &lek,
                                p->range_le[r][k]);
            }
            expo_label inf = {"le", "+Inf"};
            expo_sample_u64(e, "vyre_range_duration_seconds_bucket", l, 4, &inf, p->range_count[r]);
            expo_sample(e, "vyre_range_duration_seconds_sum", l, 4, NULL,
                        (double)p->range_sum_ns[r] / 1e9);
            expo_sample_u64(e, "vyre_range_duration_seconds_count", l, 4, NULL, p->range_count[r]);
        }
    }
}

static void kernels(exporter *x, expo *e)
{
    expo_family(e, "vyre_process_kernel_gpu_seconds_total", "counter",
                "GPU time of the kernels the exporter saw in the process's kernel ring, all "
                "names together.");
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        expo_sample(e, "vyre_process_kernel_gpu_seconds_total", pl.l, 3, NULL,
                    (double)x->procs[i].kernels_ns / 1e9);
    }
    expo_family(e, "vyre_process_kernels_unseen_total", "counter",
                "Kernels the process recorded that left its ring before a scrape read them "
                "(not in the kernel time families).");
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        expo_sample_u64(e, "vyre_process_kernels_unseen_total", pl.l, 3, NULL,
                        x->procs[i].kernels_unseen);
    }
    unsigned top = x->o.kernels_top_n;
    /* Sort each process's kernels by time once, for both families. */
    for (size_t i = 0; i < x->nprocs; i++)
        if (x->procs[i].nkernels > 1)
            qsort(x->procs[i].kernels, x->procs[i].nkernels, sizeof(exp_kernel), by_ns_desc);
    static const char *const fam[2] = {"vyre_kernel_gpu_seconds_total", "vyre_kernel_calls_total"};
    static const char *const help[2] = {
        "GPU time by kernel name, the process's top --kernels.top-n names by time.",
        "Calls by kernel name, the process's top --kernels.top-n names by time."};
    for (int f = 0; f < 2; f++) {
        expo_family(e, fam[f], "counter", help[f]);
        for (size_t i = 0; i < x->nprocs; i++) {
            const exp_proc *p = &x->procs[i];
            plabels pl;
            labels_of(p, &pl);
            for (size_t k = 0; k < p->nkernels && k < top; k++) {
                expo_label kn = {"kernel", p->kernels[k].name};
                if (f == 0)
                    expo_sample(e, fam[f], pl.l, 3, &kn, (double)p->kernels[k].ns / 1e9);
                else
                    expo_sample_u64(e, fam[f], pl.l, 3, &kn, p->kernels[k].calls);
            }
        }
    }
}

void exp_render_procs(exporter *x, expo *e)
{
    expo_family(e, "vyre_process_info", "gauge",
                "Always 1 for each process publishing vyre telemetry.");
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        expo_sample(e, "vyre_process_info", pl.l, 3, NULL, 1);
    }
    expo_family(e, "vyre_process_start_time_seconds", "gauge",
                "When the process created its telemetry page, seconds since the Unix epoch.");
    for (size_t i = 0; i < x->nprocs; i++) {
        plabels pl;
        labels_of(&x->procs[i], &pl);
        expo_sample(e, "vyre_process_start_time_seconds", pl.l, 3, NULL, x->procs[i].created_s);
    }
    counter(x, e, "vyre_process_launches_total", "Kernel launches through libcore.",
            VYRE_CTR_LAUNCHES, 1);
    counter(x, e, "vyre_process_graph_launches_total", "CUDA graph launches (replays).",
            VYRE_CTR_GRAPH_LAUNCHES, 1);
    counter(x, e, "vyre_process_dispatches_total", "Pipeline dispatches.", VYRE_CTR_DISPATCHES, 1);
    counter(x, e, "vyre_process_batch_dispatches_total", "Batched pipeline dispatches.",
            VYRE_CTR_BATCH_DISPATCHES, 1);
    {
        static const char *const dirs[2] = {"h2d", "d2h"};
        static const vyre_counter_id ids[2] = {VYRE_CTR_H2D_COPIES, VYRE_CTR_D2H_COPIES};
        by_direction(x, e, "vyre_process_copies_total", "Memory copies by direction.", dirs, ids,
                     2);
    }
    {
        static const char *const dirs[3] = {"h2d", "d2h", "d2d"};
        static const vyre_counter_id ids[3] = {VYRE_CTR_H2D_BYTES, VYRE_CTR_D2H_BYTES,
                                               VYRE_CTR_D2D_BYTES};
        by_direction(x, e, "vyre_process_copy_bytes_total", "Bytes copied by direction.", dirs, ids,
                     3);
    }
    counter(x, e, "vyre_process_syncs_total", "Stream and context synchronisations.",
            VYRE_CTR_SYNCS, 1);
    counter(x, e, "vyre_process_cache_hits_total", "Pipeline cache lookups that hit.",
            VYRE_CTR_CACHE_HITS, 1);
    counter(x, e, "vyre_process_cache_misses_total", "Pipeline cache lookups that missed.",
            VYRE_CTR_CACHE_MISSES, 1);
    counter(x, e, "vyre_process_compiles_total", "Compilations (NVRTC, PTX JIT, link).",
            VYRE_CTR_COMPILES, 1);
    counter(x, e, "vyre_process_compile_seconds_total", "Time spent compiling, seconds.",
            VYRE_CTR_COMPILE_NS, 1e-9);
    counter(x, e, "vyre_process_compile_saved_seconds_total",
            "Compile time saved by pipeline cache hits, seconds.", VYRE_CTR_COMPILE_NS_SAVED, 1e-9);
    counter(x, e, "vyre_process_kernel_records_total", "Kernel records CUPTI delivered.",
            VYRE_CTR_KERNEL_RECORDS, 1);
    counter(x, e, "vyre_process_cupti_dropped_records_total", "Records CUPTI dropped.",
            VYRE_CTR_CUPTI_DROPPED, 1);
    ranges(x, e);
    kernels(x, e);
}
