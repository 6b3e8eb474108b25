/*
 * procfs.h - what the host knows of a process, read from /proc/PID: its
 * CPU time and start time (stat), resident memory (statm), owner (status)
 * and command line (cmdline), as nvitop and htop show them beside the GPU
 * figures.
 *
 * The parsers are pure and take the bytes of a file as read, so they are
 * tested on hostile content: a comm holding spaces and parentheses (the
 * kernel puts it between the first '(' and the last ')' of stat), files cut
 * short (a process exiting while it is read), missing fields, NUL bytes.
 * A parser that cannot find what it needs says so (-1) and its output is
 * then unknown; it never reads past the n bytes it is given.
 */
#ifndef VYRE_TOP_PROCFS_H
#define VYRE_TOP_PROCFS_H

#include <stddef.h>
#include <stdint.h>

#define TOP_COMM_MAX  64 /* the kernel's comm is 16 bytes; room for odd ones */
#define TOP_USER_MAX  33 /* user names as ps prints them (32 + NUL) */
#define TOP_PROC_ROOT "/proc"

/* The fields of /proc/PID/stat vyre-top uses. */
typedef struct top_pstat {
    char comm[TOP_COMM_MAX]; /* cut to fit; control bytes replaced by '?' */
    char state;              /* R, S, D, Z, ... */
    uint64_t utime_ticks;    /* user CPU time, clock ticks (field 14) */
    uint64_t stime_ticks;    /* system CPU time (field 15) */
    uint64_t start_ticks;    /* start time after boot, clock ticks (field 22) */
} top_pstat;

/* One process as /proc shows it. A field is meaningful only with its flag. */
typedef struct top_host_proc {
    int stat_valid; /* st read */
    top_pstat st;
    int rss_valid;
    uint64_t rss_bytes; /* resident set size */
    int uid_valid;
    uint32_t uid;            /* real user id */
    char user[TOP_USER_MAX]; /* name of uid, or its number; "" when !uid_valid */
} top_host_proc;

/* Recent uid -> name lookups: getpwuid_r reads /etc/passwd (or asks NSS)
 * at every call, which would be most of a refresh's cost. Zero it to
 * start; names are kept until it is zeroed again. */
#define TOP_USER_CACHE 16
typedef struct top_user_cache {
    unsigned n, next;
    uint32_t uid[TOP_USER_CACHE];
    char name[TOP_USER_CACHE][TOP_USER_MAX];
} top_user_cache;

/* The name of uid into dst (its number when it has none), through cache
 * (NULL: no caching). */
void top_procfs_user(top_user_cache *cache, uint32_t uid, char *dst, size_t size);

/* Parses n bytes of /proc/PID/stat. Returns 0, or -1 when the text is not a
 * stat line or is cut before field 22 (*out is then zeroed). */
int top_procfs_parse_stat(const char *buf, size_t n, top_pstat *out);

/* Parses n bytes of /proc/PID/statm: its second number, resident pages.
 * Returns 0 or -1. */
int top_procfs_parse_statm(const char *buf, size_t n, uint64_t *rss_pages);

/* The real uid from n bytes of /proc/PID/status (line "Uid:\t<real>\t...").
 * Returns 0 or -1. */
int top_procfs_parse_uid(const char *buf, size_t n, uint32_t *uid);

/* A command line from n bytes of /proc/PID/cmdline: arguments joined by one
 * space, control bytes as '?', trailing NULs dropped, cut to fit size
 * (always terminated when size > 0). Empty (kernel threads, zombies) gives
 * "". */
void top_procfs_cmdline(const char *buf, size_t n, char *dst, size_t size);

/* CPU use between two readings of utime+stime, in percent of one core (a
 * process with four busy threads shows about 400): NAN when dt_s is not
 * positive, hz is not, or the ticks went backwards. */
double top_cpu_pct(uint64_t prev_ticks, uint64_t now_ticks, long hz, double dt_s);

/* Reads stat, statm and status of process pid under root (TOP_PROC_ROOT;
 * tests pass a directory of their own). Returns 0 when stat was read, -1
 * when the process is gone or unreadable (*out zeroed). The user name comes
 * from top_procfs_user through cache (may be NULL). */
int top_procfs_read(const char *root, int32_t pid, top_user_cache *cache, top_host_proc *out);

/* Reads /proc/PID/cmdline under root into dst (see top_procfs_cmdline);
 * "" when unreadable. */
void top_procfs_read_cmdline(const char *root, int32_t pid, char *dst, size_t size);

#endif /* VYRE_TOP_PROCFS_H */
