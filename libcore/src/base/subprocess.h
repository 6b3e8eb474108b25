/*
 * subprocess.h - running a program in a child process and reading what it
 * writes to one descriptor: fork, execve (no shell, no PATH search), one
 * pipe, wait. The only place libcore forks. Not public API.
 */
#ifndef VYRE_SUBPROCESS_H
#define VYRE_SUBPROCESS_H

#include <stddef.h>

#include "vyre/error.h"

typedef struct vyre__subprocess {
    const char *path;           /* the program, run as is */
    char *const *argv;          /* argv[0] first, NULL-terminated */
    const char *const *env_set; /* "NAME=value" entries that replace or add to this
                                   process's environment in the child; NULL-terminated,
                                   may be NULL */
    int out_fd;                 /* the child's descriptor that the pipe is on: 1 for its
                                   stdout, or another (the child inherits the rest) */
    int timeout_ms;             /* 0: wait for it however long; else the child is killed
                                   (SIGKILL) when it has not closed the pipe by then */
    int null_stderr;            /* the child's stderr goes to /dev/null */
} vyre__subprocess;

/*
 * Runs sp->path and waits for it. What the child writes to sp->out_fd goes
 * into buf: up to size - 1 bytes, always terminated (size > 0); the rest is
 * read and dropped. *status receives the child's exit status, or -1 when a
 * signal ended it. Returns 0 whatever that status, or VYRE_E* when the
 * child could not be started (the message names sp->path and the reason,
 * e.g. that it does not exist), or VYRE_EIO when sp->timeout_ms passed
 * (the child is killed and reaped). The child gets only async-signal-safe
 * calls between fork and exec, so this is safe from threaded programs.
 */
int vyre__subprocess_run(const vyre__subprocess *sp, char *buf, size_t size, int *status,
                         vyre_error *err);

#endif /* VYRE_SUBPROCESS_H */
