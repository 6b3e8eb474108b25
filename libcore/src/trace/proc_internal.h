/*
 * proc_internal.h - the pure parsers behind vyre/proc.h and its cache of
 * user names, shared with the tests (vyre__ prefix: not exported).
 *
 * The parsers take the bytes of a file as read, so they are tested on
 * hostile content; a parser that cannot find what it needs says so (-1)
 * and its output is then unknown. None reads past the n bytes it is given.
 */
#ifndef VYRE_TRACE_PROC_INTERNAL_H
#define VYRE_TRACE_PROC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/proc.h"

/* Recent uid -> name lookups. Zero it to start; names are kept until it is
 * zeroed again, the oldest replaced first once all slots are used. */
#define VYRE__PROC_USERS 16
typedef struct vyre__proc_users {
    unsigned n, next;
    uint32_t uid[VYRE__PROC_USERS];
    char name[VYRE__PROC_USERS][VYRE_PROC_USER_MAX];
} vyre__proc_users;

/* The name of uid into dst (its number when it has none), through cache
 * (NULL: no caching). */
void vyre__proc_user(vyre__proc_users *cache, uint32_t uid, char *dst, size_t size);

/* Parses n bytes of /proc/PID/stat. Returns 0, or -1 when the text is not a
 * stat line or is cut before field 22 (*out is then zeroed). */
int vyre__proc_parse_stat(const char *buf, size_t n, vyre_proc_stat *out);

/* Parses n bytes of /proc/PID/statm: its second number, resident pages.
 * Returns 0 or -1. */
int vyre__proc_parse_statm(const char *buf, size_t n, uint64_t *rss_pages);

/* The real uid from n bytes of /proc/PID/status (line "Uid:\t<real>\t...").
 * Returns 0 or -1. */
int vyre__proc_parse_uid(const char *buf, size_t n, uint32_t *uid);

/* The start time of process pid (stat field 22, clock ticks after boot;
 * pid 0: the calling process) under /proc: what tells a process from
 * another that got its pid later. Returns VYRE_OK, VYRE_ENOENT (no such
 * process), VYRE_ECORRUPT (not a whole stat line) or another I/O code. */
int vyre__proc_start_ticks(int32_t pid, uint64_t *ticks);

/* A command line from n bytes of /proc/PID/cmdline (see
 * vyre_proc_read_cmdline). */
void vyre__proc_cmdline(const char *buf, size_t n, char *dst, size_t size);

/* Variable name from len bytes of an environ file (NUL-separated
 * NAME=value entries): VYRE_PROC_ENV_SET or VYRE_PROC_ENV_UNSET (see
 * vyre_proc_read_env). */
void vyre__proc_env_parse(const char *data, size_t len, const char *name, vyre_proc_env *out);

/* The boot time ("btime N" line) of a NUL-terminated /proc/stat, in
 * seconds since the epoch; NAN when there is none. */
double vyre__proc_parse_btime(const char *buf);

/* start_ticks clock ticks (hz a second) after boot_unix, in seconds since
 * the epoch; NAN when one of them is unknown (0, NAN, not positive). */
double vyre__proc_start_unix(uint64_t start_ticks, double boot_unix, long hz);

#endif /* VYRE_TRACE_PROC_INTERNAL_H */
