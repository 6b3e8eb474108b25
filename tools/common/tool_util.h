/*
 * tool_util.h - the small helpers every front end shares (curl's
 * tool_util.c): the one clock of tools/, bounded string copy, a libcore
 * error filled in by a front end, and reading a whole regular file.
 *
 * libcore's clock (libcore/src/base/clock.h) is internal, so this is the
 * tools' one place that reads clock_gettime; a CI grep keeps it so.
 */
#ifndef VYRE_TOOL_UTIL_H
#define VYRE_TOOL_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vyre/error.h"
#include "vyre/export.h"

/* CLOCK_MONOTONIC now, in ns: durations, deadlines, redraw intervals. */
uint64_t tool_mono_ns(void);

/* pthread_cond_init of cv on CLOCK_MONOTONIC (tool_mono_ns's clock), so
 * that a timed wait's deadline never moves with the wall clock. 0, or
 * pthread_cond_init's error. */
int tool_cond_init_monotonic(pthread_cond_t *cv);

/* CLOCK_REALTIME now, in ns since the Unix epoch: ages of stored
 * timestamps (libcore stores wall-clock ns). */
int64_t tool_unix_ns(void);

/* Copies src into dst[size], truncated and always NUL-terminated (nothing
 * when size is 0; src NULL copies ""). Returns strlen(src), as BSD's
 * strlcpy: a result >= size means it was cut. */
size_t tool_strlcpy(char *dst, const char *src, size_t size);

/* Clears err and fills it (message from fmt, hint or "", code; a NULL err
 * is left alone), as
 * libcore's vyre__fail does inside libcore: a front end's own errors (out
 * of memory, a file it cannot read) reported like libcore's. Returns code. */
int tool_set_error(vyre_error *err, int code, const char *hint, const char *fmt, ...)
    VYRE_PRINTF(4, 5);

/*
 * Reads the regular file at path whole into a malloc'd, NUL-terminated
 * buffer (*len: its size without the NUL). A FIFO, device or directory is
 * refused rather than read (it could wait forever), a file larger than max
 * bytes is refused with VYRE_ETOOBIG and `too_big_hint`. NULL with err on
 * failure. The caller frees.
 */
char *tool_read_file(const char *path, size_t max, const char *too_big_hint, size_t *len,
                     vyre_error *err);

#endif /* VYRE_TOOL_UTIL_H */
