/*
 * tool_util.c - see tool_util.h: the tools' clock, string copy, error
 * filling and whole-file reading.
 */
#include "tool_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- clock --------------------------------------------------------------- */

uint64_t tool_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tool_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

int64_t tool_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- strings ------------------------------------------------------------- */

size_t tool_strlcpy(char *dst, const char *src, size_t size)
{
    if (!src)
        src = "";
    size_t len = strlen(src);
    if (size == 0)
        return len;
    size_t n = len < size - 1 ? len : size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return len;
}

/* ---- errors -------------------------------------------------------------- */

int tool_set_error(vyre_error *err, int code, const char *hint, const char *fmt, ...)
{
    if (!err) /* optional, as libcore's vyre_error arguments are */
        return code;
    vyre_error_clear(err); /* no remedy or detail left from an earlier error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->hint, sizeof err->hint, "%s", hint ? hint : "");
    err->code = code;
    return code;
}

/* ---- files --------------------------------------------------------------- */

static const char *type_name(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFIFO:
        return "FIFO";
    case S_IFSOCK:
        return "socket";
    case S_IFCHR:
    case S_IFBLK:
        return "device";
    case S_IFDIR:
        return "directory";
    default:
        return "special file";
    }
}

/* path opened for reading if it is a regular file, else NULL with err.
 * O_NONBLOCK: opening a FIFO waits for a writer, forever when there is
 * none (seen: seed blocked on one); blocking reads are restored after the
 * type is checked on the open file. */
static FILE *open_regular(const char *path, vyre_error *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int fl = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        tool_set_error(err, VYRE_EINVAL,
                       "give a regular file (vyre reads no FIFO, device or directory: it could "
                       "wait forever)",
                       "cannot read '%s': it is a %s, not a regular file", path,
                       type_name(st.st_mode));
        return NULL;
    }
    FILE *f = NULL;
    if (fd >= 0 && (fl = fcntl(fd, F_GETFL)) >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
        f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        tool_set_error(err, VYRE_EIO, "check the file name", "cannot read '%s': %s", path,
                       strerror(e));
    }
    return f;
}

char *tool_read_file(const char *path, size_t max, const char *too_big_hint, size_t *len,
                     vyre_error *err)
{
    FILE *f = open_regular(path, err);
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                tool_set_error(err, VYRE_ETOOBIG, too_big_hint, "'%s' is too large to read", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                tool_set_error(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", path);
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        tool_set_error(err, VYRE_EIO, NULL, "cannot read '%s'", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}
