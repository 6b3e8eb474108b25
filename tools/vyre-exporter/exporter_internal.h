/*
 * exporter_internal.h - what the collectors and family renderers of
 * vyre-exporter share (exporter.c, collect_*.c, metrics_*.c); their small
 * helpers are in util.h.
 */
#ifndef VYRE_EXPORTER_INTERNAL_H
#define VYRE_EXPORTER_INTERNAL_H

#include <pthread.h>

#include "expo.h"
#include "exporter.h"
#include "util.h"
#include "tool_usagesnap.h"
#include "vyre/vyre.h"

#define EXP_MSG_MAX 512

/* Where a scrape error came from (label `collector`). */
enum exp_collector {
    EXP_C_NVML,
    EXP_C_TELEMETRY,
    EXP_C_CACHE,
    EXP_C_RENDER,
    EXP_C_USAGE,
    EXP_C_COUNT
};

/* What a scrape's time went to (vyre_exporter_collector_duration_seconds):
 * the NVML sample of every GPU, naming the processes it lists (/proc),
 * listing and reading the telemetry pages, summing their kernel rings,
 * the cache read, rendering the families. */
enum exp_timed {
    EXP_T_NVML,
    EXP_T_GPU_PROCS,
    EXP_T_PAGES,
    EXP_T_KERNELS,
    EXP_T_CACHE,
    EXP_T_RENDER,
    EXP_T_COUNT
};

/* One process NVML lists on one GPU, with its names from /proc ("" when
 * it is gone, or in another PID namespace). */
typedef struct exp_gproc {
    int gpu;
    uint32_t pid;
    const vyre_gpu_process *np; /* into the exporter's gsnap of this scrape */
    char comm[VYRE_PROC_COMM_MAX];
    char user[VYRE_PROC_USER_MAX];
} exp_gproc;

/* One kernel name of one process, summed over every record the exporter
 * saw in the page's ring. */
typedef struct exp_kernel {
    char name[VYRE_TELEMETRY_KERNEL_NAME_MAX];
    uint64_t calls;
    uint64_t ns;
} exp_kernel;

/* One instrumented process, kept between scrapes while its page is
 * readable; started again when the tracker sees a new writer under its
 * pid. */
typedef struct exp_proc {
    int32_t pid;
    uint64_t start_time;
    int seen; /* read this scrape */
    char comm[VYRE_TELEMETRY_EXE_MAX];
    char gpu[16]; /* NVML index as text; "" unknown */
    double created_s;
    uint64_t v[VYRE_CTR_COUNT];
    uint64_t kernels_total;
    /* Ranges: cumulative counts at the edges, +Inf count, sum. */
    uint64_t range_le[VYRE_RANGE_COUNT][EXP_MAX_EDGES];
    uint64_t range_count[VYRE_RANGE_COUNT];
    uint64_t range_sum_ns[VYRE_RANGE_COUNT];
    /* Kernels summed by the exporter. */
    exp_kernel *kernels;
    size_t nkernels, kcap;
    uint64_t kernels_seen;   /* records summed into kernels[] */
    uint64_t kernels_ns;     /* their total time */
    uint64_t kernels_unseen; /* recorded but gone from the ring before a scrape */
} exp_proc;

/* NVML sampled off the scrape by a thread of its own (collect_gpu.c): its
 * monitor, and under mu its newest sample for the next scrape to copy. */
typedef struct exp_gpu_sampler {
    pthread_t thread;
    int started, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC: a new sample, or stop */
    vyre_gpu_monitor *mon;
    unsigned want; /* optional NVML fields (vyre_gpu_monitor_want) */
    uint64_t retry_ns;
    vyre_gpu_snapshot snap;
    int ok;
    char msg[EXP_MSG_MAX];
    uint64_t seq, errors; /* samples taken, failed samples */
} exp_gpu_sampler;

struct exporter {
    exp_opts o;
    pthread_mutex_t mu;
    char hostname[256]; /* label Hostname of the DCGM-compatible families */
    /* GPUs */
    exp_gpu_sampler *sampler;
    uint64_t sampler_errors; /* its failed samples already counted in errors[] */
    int gpu_ok;              /* this scrape's sample is good */
    char gpu_msg[EXP_MSG_MAX];
    vyre_gpu_snapshot gsnap;
    exp_gproc *gprocs; /* the processes of gsnap, at most EXP_MAX_PROCS */
    size_t ngprocs, gprocs_cap;
    size_t gprocs_dropped;    /* listed by NVML past EXP_MAX_PROCS this scrape */
    vyre_proc_reader *procfs; /* /proc, with its uid -> name cache kept across scrapes */
    /* processes */
    vyre_telemetry_tracker *tracker; /* the pages across scrapes (collect_procs.c) */
    exp_proc *procs;                 /* sorted by pid */
    size_t nprocs;
    size_t pages_ok, pages_bad, pages_stale, pages_foreign;
    int tel_ok;
    /* cache */
    int cache_state; /* 0 ok, 1 missing, 2 error, 3 not read yet */
    char cache_root[VYRE_CACHE_PATH_MAX];
    vyre_cache_stats cache;
    uint64_t cache_read_ns;
    int cache_busy;                   /* state 2 because the index is locked or slow */
    struct tool_cachesnap *cachesnap; /* the reader (collect_cache.c) */
    /* the four caches' sizes (collect_usage.c): measured by their own thread */
    struct tool_usagesnap *usage;
    tool_usagesnap_figures usage_fig; /* this scrape's copy */
    uint64_t usage_errors;            /* its failed measurements already counted in errors[] */
    /* self */
    uint64_t errors[EXP_C_COUNT];
    uint64_t scrapes;
    uint64_t took_ns[EXP_T_COUNT]; /* this scrape's, by collector */
    double last_scrape_s;
    size_t edges_n;
    uint64_t edges[EXP_MAX_EDGES];
};

/* Collectors: fill the exporter's state for this scrape. */
void exp_collect_gpus(exporter *x);
void exp_gpu_sampler_free(exporter *x);
void exp_collect_gpu_procs(exporter *x);
void exp_gpu_procs_free(exporter *x);
void exp_collect_procs(exporter *x);
void exp_collect_cache(exporter *x);
void exp_usage_start(exporter *x);
void exp_collect_usage(exporter *x);
void exp_usage_free(exporter *x);
void exp_procs_free(exporter *x);
void exp_cache_free(exporter *x);

/* Renderers: write their families. */
void exp_render_gpus(exporter *x, expo *e);
void exp_render_dcgm(exporter *x, expo *e);
void exp_render_gpu_procs(exporter *x, expo *e);
void exp_render_procs(exporter *x, expo *e);
void exp_render_cache(exporter *x, expo *e);
void exp_render_usage(exporter *x, expo *e);
void exp_render_self(exporter *x, expo *e, double scrape_s);

#endif /* VYRE_EXPORTER_INTERNAL_H */
