/*
 * procenv.h - what vyre-top reads of a process in /proc beyond libcore's
 * reader (vyre/proc.h), for the detail view (issue 37): the host's boot
 * time (the "btime" line of <root>/stat), which turns a process's start
 * ticks into a wall-clock time, and one variable of a process's
 * environment (<root>/PID/environ: the environment it was started with).
 *
 * Nothing is guessed: a file that cannot be read is said so, never taken
 * for "not set".
 */
#ifndef VYRE_TOP_PROCENV_H
#define VYRE_TOP_PROCENV_H

#include <stdint.h>

#include "prochist.h"

/* The boot time in seconds since the epoch from <root>/stat (root NULL:
 * "/proc"); NAN when it cannot be read. */
double top_proc_boot_time(const char *root);

/* The start of a process in seconds since the epoch from its start ticks
 * (vyre_proc_stat.start_ticks), the boot time and the clock rate; NAN when
 * either is unknown. */
double top_proc_start_unix(uint64_t start_ticks, double boot_unix, long hz);

/* Variable name of process pid's environment (<root>/PID/environ) into
 * *out: TOP_ENV_SET with the value (cut, with cut set, past TOP_ENV_MAX -
 * 1 bytes; control bytes as '?'), TOP_ENV_UNSET, or TOP_ENV_UNREADABLE when
 * the file cannot be opened or read (another user's process, one that has
 * exited, a kernel thread). */
void top_proc_env_read(const char *root, int32_t pid, const char *name, top_proc_env *out);

/* The same from the bytes of an environ file (NUL-separated NAME=value
 * entries, len bytes): TOP_ENV_SET or TOP_ENV_UNSET. Pure. */
void top_proc_env_parse(const char *data, size_t len, const char *name, top_proc_env *out);

#endif /* VYRE_TOP_PROCENV_H */
