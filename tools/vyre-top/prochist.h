/*
 * prochist.h - what vyre-top keeps of each process between collections
 * (issue 37, the detail view): a short history of its memory and SM% on
 * each GPU it was seen on, and what was read of it once (its
 * CUDA_VISIBLE_DEVICES). The set is bounded (TOP_MAX_PROCS entries of
 * TOP_PROC_HIST samples on VYRE_GPU_MAX GPUs at most) and an entry is freed
 * at the first collection that no longer lists its process.
 *
 * Pure: no I/O here. The collector (collect.c) feeds it the rows of each
 * snapshot and the environment reads (vyre_proc_read_env) of new processes.
 */
#ifndef VYRE_TOP_PROCHIST_H
#define VYRE_TOP_PROCHIST_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/gpu.h"
#include "vyre/proc.h"

#define TOP_PROC_HIST         120 /* samples kept per process and GPU: 2 minutes at 1 s */
#define TOP_PROC_HIST_UNKNOWN 255 /* a sample whose value was unknown (as TOP_HIST_UNKNOWN) */
#define TOP_PROC_CMDLINE_MAX  512 /* as a top_proc's command line */
#define TOP_PROC_REREAD       8   /* updates between re-reads of a parent and command line */

/* One process's history on one GPU: memory (percent of that GPU's memory)
 * and SM utilisation, each 0..100 or TOP_PROC_HIST_UNKNOWN (NVML did not
 * list it there, or did not know); oldest first when read through
 * top_proc_hist_mem/_sm. */
typedef struct top_proc_hist {
    int device; /* NVML index */
    uint8_t mem[TOP_PROC_HIST];
    uint8_t sm[TOP_PROC_HIST];
    unsigned len;  /* samples held */
    unsigned head; /* next slot written */
} top_proc_hist;

/* What is kept of one process: pid and start time (a reused pid is
 * another process), its histories, its environment. */
typedef struct top_proc_keep {
    int32_t pid;
    uint64_t start_ticks; /* 0 unknown: then the pid alone identifies it */
    int fresh;            /* created by the last update: its environment is not read yet */
    unsigned age;         /* updates it has been through (0 for a fresh one) */
    vyre_proc_env env;    /* its CUDA_VISIBLE_DEVICES (VYRE_PROC_ENV_UNKNOWN: not read yet) */
    /* What the collector re-reads of it only every TOP_PROC_REREAD updates
     * (top_proc_keep_due): its parent and, without a telemetry page, its
     * command line. */
    int32_t ppid; /* 0: unknown */
    int have_ppid, have_cmdline;
    char cmdline[TOP_PROC_CMDLINE_MAX];
    top_proc_hist hist[VYRE_GPU_MAX];
    unsigned nhist; /* GPUs it was seen on, in the order first seen */
} top_proc_keep;

/* The kept processes, by pid (caller-owned; zero-initialise, release with
 * top_proc_keep_set_release). */
typedef struct top_proc_keep_set {
    top_proc_keep *v; /* malloc'ed, sorted by pid */
    size_t n;
} top_proc_keep_set;

/* One sample of one process (a row of a snapshot). */
typedef struct top_proc_sample {
    int32_t pid;
    uint64_t start_ticks;
    const vyre_gpu_proc_dev *gpus; /* its GPUs (NVML), ngpus entries */
    unsigned ngpus;
} top_proc_sample;

/* Appends one sample (each 0..100, or TOP_PROC_HIST_UNKNOWN) to a ring. */
void top_proc_hist_push(top_proc_hist *h, uint8_t mem, uint8_t sm);
/* Sample i of the ring, 0 = oldest; TOP_PROC_HIST_UNKNOWN when out of range. */
uint8_t top_proc_hist_mem(const top_proc_hist *h, unsigned i);
uint8_t top_proc_hist_sm(const top_proc_hist *h, unsigned i);

/*
 * Takes one collection: n samples (by pid, as a snapshot's rows) and the
 * GPU snapshot they were joined with (NULL: none; a GPU's memory total
 * turns bytes into percent). Each sample's entry (kept, or new when its pid
 * is new or its start time changed) gets one sample on every GPU it has a
 * history on or is on now (unknown where it is not listed now); entries of
 * processes not among the samples are dropped. New entries have fresh set
 * and env state VYRE_PROC_ENV_UNKNOWN: the caller reads their environment once.
 * Returns 0, or -1 out of memory (the set is then unchanged).
 */
int top_proc_keep_update(top_proc_keep_set *set, const top_proc_sample *samples, size_t n,
                         const vyre_gpu_snapshot *gpus);
/* 1 when e's parent and command line are to be read again this update:
 * never read yet, or every TOP_PROC_REREAD updates (staggered by pid, so
 * that the reads of many processes spread over the updates). A process is
 * re-parented when its parent exits, and may rewrite its command line
 * (setproctitle): either shows within TOP_PROC_REREAD refreshes. */
int top_proc_keep_due(const top_proc_keep *e);
/* The entry of pid, or NULL. */
top_proc_keep *top_proc_keep_find(const top_proc_keep_set *set, int32_t pid);
/* Frees what the set holds (the struct stays, empty). */
void top_proc_keep_set_release(top_proc_keep_set *set);

#endif /* VYRE_TOP_PROCHIST_H */
