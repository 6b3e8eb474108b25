/*
 * exporter.h - vyre-exporter's collectors and the scrape that renders them:
 * GPUs (NVML through libcore's monitor), instrumented processes (telemetry
 * pages), the pipeline cache, the sizes of the four caches of compiled GPU
 * code (vyre's, the driver's JIT cache, Triton's, TorchInductor's) and
 * their filesystems, and the exporter's own scrape figures.
 *
 * One exporter is used by one thread at a time (the HTTP server's; calls
 * are serialized by a mutex anyway). State kept between scrapes: the NVML
 * session, each process's kernels by name (the page holds only a ring of
 * the most recent ones, so the exporter sums what it sees), the cache
 * figures (re-read at most every cache_refresh_s) and the error counters.
 */
#ifndef VYRE_EXPORTER_EXPORTER_H
#define VYRE_EXPORTER_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#define EXP_DEFAULT_PORT     9947
#define EXP_DEFAULT_TOP_N    20
#define EXP_MAX_TOP_N        1000
#define EXP_MAX_PROCS        1024 /* telemetry pages read per scrape */
#define EXP_MAX_KERNEL_NAMES 512  /* distinct kernel names kept per process */
#define EXP_DEFAULT_USAGE_S  60   /* --cache-usage.interval */

typedef struct exp_opts {
    const char *telemetry_dir; /* NULL: vyre_telemetry_dir() */
    const char *cache_dir;     /* NULL: vyre_cache_default_root() */
    int no_gpu;                /* do not open NVML */
    int no_cache;              /* no pipeline cache families */
    int dcgm_compat;           /* also the DCGM-compatible families (metrics_dcgm.c) */
    unsigned kernels_top_n;    /* kernels exported per process (0: none) */
    double cache_refresh_s;    /* re-read the cache at most this often (0: every scrape) */
    double usage_every_s;      /* measure the four caches' sizes this often, in a thread of
                                  their own (0: not at all: no vyre_cache_usage_ families) */
} exp_opts;

typedef struct exporter exporter;

/* Opens the collectors (a missing NVML is not an error: the exporter then
 * says so in vyre_gpu_monitor_up). Returns 0 or VYRE_ENOMEM. */
int exporter_new(const exp_opts *opts, exporter **out);
void exporter_free(exporter *x);

/* Runs one scrape and renders it into a malloc'ed, NUL-terminated buffer
 * (*out, *len; the caller frees). Never fails for collector problems: they
 * are counted in vyre_exporter_scrape_errors_total. Returns 0, or
 * VYRE_ENOMEM. */
int exporter_scrape(exporter *x, char **out, size_t *len);

#endif /* VYRE_EXPORTER_EXPORTER_H */
