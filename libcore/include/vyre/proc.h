/*
 * vyre/proc.h - what the host knows of a process, read from /proc/PID: its
 * command name, state, CPU time and start time (stat), resident memory
 * (statm), owner (status), command line (cmdline) and one variable of its
 * environment (environ), as htop and nvitop show them beside the GPU
 * figures. vyre-top and vyre-exporter both read
 * processes through it, so they name them the same way.
 *
 * This header is part of libvyrecore's public API.
 *
 * The reader trusts nothing in /proc: a command name holding spaces and
 * parentheses (the kernel puts it between the first '(' and the last ')'
 * of stat), files cut short (a process exiting while it is read), missing
 * fields and NUL bytes give "unknown", never a crash or a wrong number.
 * Strings are NUL-terminated with control bytes replaced by '?', so they
 * are safe to print. Every figure is meaningful only with its flag.
 */
#ifndef VYRE_PROC_H
#define VYRE_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_PROC_COMM_MAX 64 /* the kernel's comm is 16 bytes; room for odd ones */
#define VYRE_PROC_USER_MAX 33 /* user names as ps prints them (32 + NUL) */

/* The fields of /proc/PID/stat the monitors use. */
typedef struct vyre_proc_stat {
    char comm[VYRE_PROC_COMM_MAX]; /* cut to fit; control bytes as '?' */
    char state;                    /* R, S, D, Z, ... */
    uint64_t utime_ticks;          /* user CPU time, clock ticks (field 14) */
    uint64_t stime_ticks;          /* system CPU time (field 15) */
    uint64_t start_ticks;          /* start time after boot, clock ticks (field 22) */
} vyre_proc_stat;

/* One process as /proc shows it. A figure is meaningful only with its flag. */
typedef struct vyre_proc_info {
    int stat_valid; /* st read */
    vyre_proc_stat st;
    int rss_valid;
    uint64_t rss_bytes; /* resident set size */
    int uid_valid;
    uint32_t uid;                  /* real user id */
    char user[VYRE_PROC_USER_MAX]; /* name of uid, or its number; "" when !uid_valid */
} vyre_proc_info;

/* A reader of one /proc tree, with a cache of recent uid -> name lookups
 * (getpwuid_r reads /etc/passwd or asks NSS at every call, which would be
 * most of a refresh's cost; names are kept for the reader's life). Opaque. */
typedef struct vyre_proc_reader vyre_proc_reader;

/*
 * A reader of the processes under root (NULL: "/proc"; tests pass a tree
 * of their own). Returns VYRE_OK with *out set (caller frees with
 * vyre_proc_reader_free), VYRE_EINVAL (NULL out), VYRE_ETOOBIG (root too
 * long) or VYRE_ENOMEM. Not thread-safe: one thread uses a reader.
 */
VYRE_EXTERN int vyre_proc_reader_new(const char *root, vyre_proc_reader **out, vyre_error *err);

/* Frees r. NULL is a no-op. */
VYRE_EXTERN void vyre_proc_reader_free(vyre_proc_reader *r);

/*
 * Reads stat, statm and status of process pid into *out (caller-owned;
 * overwritten). stat must be read; statm and status may fail alone (their
 * flags then stay 0). Returns VYRE_OK, VYRE_EINVAL (NULL argument, pid not
 * positive), VYRE_ENOENT (no such process: it exited), VYRE_ECORRUPT (its
 * stat is not a stat line or is cut short) or another I/O code; on failure
 * *out is zeroed.
 */
VYRE_EXTERN int vyre_proc_read(vyre_proc_reader *r, int32_t pid, vyre_proc_info *out,
                               vyre_error *err);

/*
 * The command line of process pid into dst: arguments joined by one space,
 * control bytes as '?', trailing NULs dropped, cut to fit size (always
 * terminated when size > 0). "" for kernel threads, zombies and processes
 * that cannot be read.
 */
VYRE_EXTERN void vyre_proc_read_cmdline(vyre_proc_reader *r, int32_t pid, char *dst, size_t size);

/*
 * CPU use between two readings of utime + stime ticks, in percent of one
 * core (a process with four busy threads shows about 400): NAN when dt_s
 * is not positive, hz (sysconf(_SC_CLK_TCK)) is not, or the ticks went
 * backwards. Thread-safe.
 */
VYRE_EXTERN double vyre_proc_cpu_pct(uint64_t prev_ticks, uint64_t now_ticks, long hz, double dt_s);

/* The host's figures, as htop's and nvitop's host meters show them. */
typedef struct vyre_host_info {
    int cpu_valid;            /* the aggregate "cpu" line of <root>/stat was read */
    uint64_t cpu_busy_ticks;  /* all CPUs' ticks since boot but idle and iowait */
    uint64_t cpu_total_ticks; /* all CPUs' ticks since boot */
    unsigned ncpus;           /* "cpuN" lines */
    int mem_valid;            /* MemTotal and MemAvailable of <root>/meminfo */
    uint64_t mem_total_bytes;
    uint64_t mem_avail_bytes;
    int swap_valid; /* SwapTotal and SwapFree */
    uint64_t swap_total_bytes;
    uint64_t swap_free_bytes;
    int load_valid; /* <root>/loadavg */
    double load[3]; /* 1, 5 and 15 minutes */
} vyre_host_info;

/*
 * Reads the host's CPU ticks, memory, swap and load averages from the
 * reader's root (stat, meminfo, loadavg) into *out; each part has its flag.
 * Returns VYRE_OK when one part at least was read, VYRE_ENOENT when none
 * could be (err says where), VYRE_EINVAL for NULL arguments. Not for
 * concurrent use of one reader.
 */
VYRE_EXTERN int vyre_proc_read_host(vyre_proc_reader *r, vyre_host_info *out, vyre_error *err);

/* The parent of pid (field 4 of <root>/pid/stat) into *ppid (0: none, as
 * for pid 1). Returns VYRE_OK, VYRE_ENOENT (no such process), VYRE_ECORRUPT
 * (a stat file it cannot read) or VYRE_EINVAL. Not for concurrent use of
 * one reader. */
VYRE_EXTERN int vyre_proc_read_ppid(vyre_proc_reader *r, int32_t pid, int32_t *ppid);

/* Busy percent of all CPUs (0..100) between two readings; NAN when either
 * has no CPU figures or no tick passed. Thread-safe. */
VYRE_EXTERN double vyre_host_cpu_pct(const vyre_host_info *prev, const vyre_host_info *now);

/* When a process started, in seconds since the epoch: start_ticks
 * (vyre_proc_stat.start_ticks) after the host's boot time (the "btime"
 * line of <root>/stat, read at the reader's first call and kept). NAN when
 * either is unknown (start_ticks 0, no btime line, no such file). Not for
 * concurrent use of one reader. */
VYRE_EXTERN double vyre_proc_start_unix(vyre_proc_reader *r, uint64_t start_ticks);

#define VYRE_PROC_ENV_MAX 64 /* the longest value kept whole, with its NUL */

/* One variable of a process's environment as <root>/PID/environ shows it
 * (the environment it was started with). Nothing is guessed: a file that
 * cannot be read is said so, never taken for "not set". */
typedef enum vyre_proc_env_state {
    VYRE_PROC_ENV_UNKNOWN = 0, /* not read (the caller's own "not asked") */
    VYRE_PROC_ENV_UNREADABLE,  /* environ could not be read (another user's process) */
    VYRE_PROC_ENV_UNSET,       /* read: the variable is not set */
    VYRE_PROC_ENV_SET,         /* read: value holds it (cut when longer, cut set) */
} vyre_proc_env_state;

typedef struct vyre_proc_env {
    vyre_proc_env_state state;
    int cut;                       /* the value was longer than VYRE_PROC_ENV_MAX - 1 bytes */
    char value[VYRE_PROC_ENV_MAX]; /* control bytes as '?' */
} vyre_proc_env;

/* Variable name of process pid's environment into *out (caller-owned;
 * overwritten): VYRE_PROC_ENV_SET with the first value (as getenv takes
 * it), VYRE_PROC_ENV_UNSET, or VYRE_PROC_ENV_UNREADABLE when the file
 * cannot be opened or read (another user's process, one that has exited,
 * a NULL argument, a pid that is not positive). An environment larger than
 * 1 MiB is read that far: a variable beyond reads as unreadable, not
 * unset. Not for concurrent use of one reader. */
VYRE_EXTERN void vyre_proc_read_env(vyre_proc_reader *r, int32_t pid, const char *name,
                                    vyre_proc_env *out);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_PROC_H */
