/*
 * collect.h - vyre-top's collectors: GPUs (vyre/gpu.h), instrumented
 * processes (vyre/telemetry.h) and the pipeline cache (vyre/cache.h), each
 * turned into plain data in a top_snapshot.
 *
 * The process list is every process NVML lists on a GPU merged (by pid)
 * with every process that publishes a vyre telemetry page, as nvitop shows
 * the first and vyre-top alone can show the second; each gets its host
 * figures from /proc (vyre/proc.h). A process without a page has no vyre
 * figures: they are unknown (NAN, '-', null), never 0.
 *
 * Nothing here draws. A snapshot holds no pointers into libcore objects;
 * rates are computed from two consecutive collections by libcore's
 * telemetry tracker (the first one of a process has none: its rates are
 * NAN, shown as '-' / null). Pages of dead processes or reused pids
 * (stale) are never rows, whether or not a reap removed them yet; pages of
 * another PID namespace are rows marked foreign. Every number
 * that cannot be known is NAN (doubles) or has a validity flag, never 0.
 *
 * Readers never stop writers: telemetry pages are copied under their
 * seqlock, the cache is opened VYRE_CACHE_READONLY (no lock taken, nothing
 * written), NVML is only queried. The caches' sizes (tool_usagesnap.h) are
 * measured by a thread of their own on a slow interval: a collection only
 * copies the last round.
 */
#ifndef VYRE_TOP_COLLECT_H
#define VYRE_TOP_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/cache.h"
#include "vyre/counters.h"
#include "vyre/gpu.h"
#include "vyre/proc.h"
#include "vyre/telemetry.h"

#include "prochist.h"
#include "tool_usagesnap.h"

#define TOP_GPU_HIST     240 /* history samples kept per GPU */
#define TOP_HIST_UNKNOWN 255 /* a history sample whose value was unknown */
#define TOP_MSG_MAX      512
#define TOP_KNAME_MAX    VYRE_TELEMETRY_KERNEL_NAME_MAX
#define TOP_MAX_PROCS    1024

/* Per-GPU history ring of utilisation, memory use and power draw (percent
 * of the power limit), 0..100 or TOP_HIST_UNKNOWN; oldest first when read
 * through top_gpu_hist_util/_mem/_power. */
typedef struct top_gpu_hist {
    uint8_t util[TOP_GPU_HIST];
    uint8_t mem[TOP_GPU_HIST];
    uint8_t power[TOP_GPU_HIST];
    unsigned len;  /* samples held */
    unsigned head; /* next slot written */
} top_gpu_hist;

/* One kernel name within one process over the last interval. */
typedef struct top_kernel {
    char name[TOP_KNAME_MAX];
    uint64_t calls;    /* in the ring since the previous collection */
    uint64_t total_ns; /* their summed duration */
    uint64_t max_ns;
    uint32_t grid[3]; /* of the most recent call */
    uint32_t block[3];
    int32_t device;
    /* Filled by top_aggregate_kernels (NAN when unknown). When a ring
     * overflowed, calls_s and share_pct count each kept call as the
     * kernels_new/kernels_seen calls it stands for, and estimated is set. */
    int estimated;
    double calls_s;
    double share_pct; /* of the summed kernel time of the rows aggregated */
    double mean_ns;
} top_kernel;

/* One process: on a GPU (NVML lists it), publishing vyre telemetry, or
 * both. */
typedef struct top_proc {
    int32_t pid;
    int telemetry;           /* 1: read from a telemetry page; 0: NVML lists it only */
    uint32_t layout_version; /* of the telemetry page it was read from; 0 without one */
    int foreign;             /* its page was written in another PID namespace: pid is its
                                writer's, not ours (no /proc, NVML or kill by it) */
    char name[VYRE_TELEMETRY_EXE_MAX];
    char cmdline[VYRE_TELEMETRY_CMDLINE_MAX];
    int device;          /* GPU it runs on (NVML or its kernels); -1 unknown */
    int published;       /* 0: the process has not published counters yet */
    double launches_s;   /* kernels launched, graph replays' included; NAN: unknown */
    double graphs_s;     /* CUDA graph launches; NAN: unknown */
    double dispatches_s; /* NAN: unknown */
    double h2d_mb_s;     /* 10^6 bytes per second; NAN: unknown */
    double d2h_mb_s;
    double d2d_mb_s;
    double cache_hit_pct;   /* lifetime cache_hits/(hits+misses); NAN: no lookups */
    double compile_saved_s; /* lifetime compile time saved by cache hits */
    uint64_t launches;      /* totals since the process started (telemetry only) */
    uint64_t graph_launches;
    uint64_t dispatches;
    uint64_t h2d_bytes;
    uint64_t d2h_bytes;
    uint64_t d2d_bytes;
    uint64_t kernels_total;
    int gpu_mem_valid; /* NVML knows its GPU memory */
    uint64_t gpu_mem_bytes;
    double sm_util_pct; /* NVML: SM utilisation on its busiest GPU; NAN unknown */
    /* NVML's view per GPU (vyre_gpu_join_devices), NVML index ascending:
     * one processes-panel row each, as nvitop and nvidia-smi show them. */
    vyre_gpu_proc_dev gpus[VYRE_GPU_MAX];
    unsigned ngpus; /* entries in gpus[]; 0: NVML lists it on no GPU */
    /* The host's view (/proc). */
    vyre_proc_info host;
    double cpu_pct;    /* percent of one core over the last interval; NAN unknown */
    int32_t ppid;      /* its parent (/proc); 0 unknown */
    double start_unix; /* when it started, seconds since the epoch (/proc); NAN unknown */
    /* Its CUDA_VISIBLE_DEVICES as it was started with (/proc/PID/environ,
     * read once per process); VYRE_PROC_ENV_UNKNOWN for a foreign process. */
    vyre_proc_env cuda_visible;
    /* Its memory and SM% history on each GPU it was seen on while listed
     * (prochist.h; malloc'ed, owned by the snapshot; NULL when none). */
    top_proc_hist *hist;
    unsigned nhist;
    /* Ranges: lifetime histograms, and those of the last interval (valid
     * when has_delta): VYRE_RANGE_COUNT each, malloc'ed (owned by the
     * snapshot; top_proc_ranges_alloc) for a row with a telemetry page,
     * NULL for the others (no ranges). Out of line: they are over 100 KB,
     * and a row without a page, most rows on a busy host, has none. */
    int has_delta;
    vyre_range_hist *life;
    vyre_range_hist *delta;
    /* Kernels of the last interval by name (malloc'ed, owned by the
     * snapshot). kernels_seen < kernels_new when the ring overflowed. */
    top_kernel *kernels;
    size_t nkernels;
    uint64_t kernels_new;  /* kernels recorded during the interval */
    uint64_t kernels_seen; /* of which still in the ring when read */
} top_proc;

/* A parent (or further ancestor) of a listed process that is not listed
 * itself (issue 37: the tree view). */
typedef struct top_ancestor {
    int32_t pid;
    int32_t ppid; /* 0 unknown or none */
    char name[VYRE_PROC_COMM_MAX];
} top_ancestor;

/* One catalog range aggregated over some processes. */
typedef struct top_range {
    int id;
    const char *name; /* catalog name (static) */
    double count_s;   /* NAN when unknown */
    uint64_t count;   /* lifetime count */
    int window;       /* 1: p50/p90/p99 are of the last interval, 0: lifetime */
    uint64_t p50_ns;  /* valid when count > 0 */
    uint64_t p90_ns;
    uint64_t p99_ns;
    uint64_t max_ns;    /* lifetime maximum */
    uint64_t win_count; /* ranges in the last interval */
} top_range;

/* A remote store of the cache (from $VYRE_REMOTE_CACHE) and the counters
 * every process recorded for it in the cache's index. */
typedef struct top_remote {
    char url[VYRE_REMOTE_URL_MAX]; /* password masked */
    int read_only;
    vyre_remote_stats st;
} top_remote;

enum top_cache_state {
    TOP_CACHE_OK = 0,
    TOP_CACHE_MISSING = 1, /* no cache at the root yet */
    TOP_CACHE_ERROR = 2,   /* could not open or read it: cache_msg says why */
    TOP_CACHE_PENDING = 3, /* not read yet */
};

typedef struct top_snapshot {
    uint64_t mono_ns;  /* CLOCK_MONOTONIC of the collection */
    double unix_s;     /* wall clock of the collection */
    double interval_s; /* since the previous collection; NAN for the first */
    /* GPUs */
    int gpu_ok; /* 0: no monitor; gpu_msg says why, gpu_hint how to fix it */
    char gpu_msg[TOP_MSG_MAX];
    char gpu_hint[TOP_MSG_MAX];
    vyre_gpu_snapshot gpu;
    top_gpu_hist gpu_hist[VYRE_GPU_MAX];
    /* processes */
    int tel_ok; /* 0: listing failed; tel_msg says why (and the hint) */
    char tel_msg[TOP_MSG_MAX];
    char tel_dir[VYRE_TELEMETRY_PATH_MAX];
    top_proc *procs; /* malloc'ed, sorted by pid */
    size_t nprocs;
    size_t unreadable; /* pages that failed validation this time */
    size_t stale;      /* pages of dead processes or reused pids: not shown */
    /* The ancestors of the rows that are not rows themselves (the launcher,
     * torchrun, a shell), for the tree view: malloc'ed, by pid. */
    top_ancestor *anc;
    size_t nanc;
    /* the host (/proc: stat, meminfo, loadavg) */
    int host_ok; /* 0: could not be read */
    vyre_host_info host;
    double host_cpu_pct; /* all CPUs, since the previous collection; NAN for the first */
    /* cache */
    int cache_state;
    char cache_msg[TOP_MSG_MAX];
    char cache_root[VYRE_CACHE_PATH_MAX];
    vyre_cache_stats cache;
    double cache_age_s; /* how old the cache figures are */
    top_remote remotes[VYRE_REMOTE_MAX];
    size_t nremotes;
    /* the four caches' sizes (vyre, driver JIT, Triton, Inductor) and their
     * filesystems, measured by a thread every usage_every_s */
    int usage_on; /* 0: not measured (--no-cache-usage) */
    double usage_every_s;
    double usage_age_s;           /* since the last round ended; NAN before the first */
    tool_usagesnap_figures usage; /* usage.rounds 0: none measured yet */
} top_snapshot;

typedef struct top_collect_opts {
    const char *telemetry_dir; /* NULL: vyre_telemetry_dir() */
    const char *cache_root;    /* NULL: vyre_cache_default_root() */
    int no_gpu;                /* do not open NVML */
    double cache_every_s;      /* re-read cache stats at most this often (default 5) */
    double reap_every_s;   /* remove pages of dead processes this often (default 10; <0 never) */
    const char *proc_root; /* NULL: /proc */
    double usage_every_s;  /* measure the caches' sizes this often, in a thread (0: never) */
} top_collect_opts;

typedef struct top_collector top_collector;

/* Opens the collectors. A missing NVML is not an error (snapshots say so).
 * Returns 0, VYRE_ENOMEM or VYRE_ETOOBIG (proc_root too long). Caller frees with
 * top_collector_free. */
int top_collector_new(const top_collect_opts *opts, top_collector **out);
void top_collector_free(top_collector *c);

/* Collects everything into *s (initialised by this call; release it with
 * top_snapshot_release). Never fails: problems become messages in *s. */
void top_collect(top_collector *c, top_snapshot *s);
void top_snapshot_release(top_snapshot *s);

/* ---- pure helpers (unit-tested) --------------------------------------- */

/* Gives p zeroed life and delta histograms (one allocation, freed by
 * top_snapshot_release); 0, or -1 out of memory (p unchanged). */
int top_proc_ranges_alloc(top_proc *p);

/* Appends one sample (each 0..100, or TOP_HIST_UNKNOWN) to a history ring. */
void top_gpu_hist_push(top_gpu_hist *h, uint8_t util, uint8_t mem, uint8_t power);
/* Sample i of the ring, 0 = oldest; TOP_HIST_UNKNOWN when out of range. */
uint8_t top_gpu_hist_util(const top_gpu_hist *h, unsigned i);
uint8_t top_gpu_hist_mem(const top_gpu_hist *h, unsigned i);
uint8_t top_gpu_hist_power(const top_gpu_hist *h, unsigned i);

/* Sums the ranges of the processes whose index i has keep[i] != 0 (keep
 * NULL: all) into out[VYRE_RANGE_COUNT]; returns how many ranges have any
 * count (the rest have count 0). */
size_t top_aggregate_ranges(const top_snapshot *s, const unsigned char *keep, top_range *out);

/* Merges the kernels of the kept processes by name into *out (malloc'ed,
 * caller frees), computing calls/s, share and mean; returns the number of
 * rows (0 with *out NULL when none). *sampled is set when some ring
 * overflowed during the interval: calls/s and shares are then scaled by
 * vyre_telemetry_kernel_scale per process, and such rows are marked estimated. */
size_t top_aggregate_kernels(const top_snapshot *s, const unsigned char *keep, top_kernel **out,
                             int *sampled);

#endif /* VYRE_TOP_COLLECT_H */
