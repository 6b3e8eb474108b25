/*
 * procenv.c - see procenv.h. The files are read with plain read(2) into a
 * bounded buffer: an environment larger than ENV_READ_MAX is read that far
 * (the variable, when it lies beyond, reads as unreadable, not as unset).
 */
#include "procenv.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENV_READ_MAX (1u << 20) /* bytes of an environ file read at most */

/* Reads at most max bytes of path into a malloc'ed buffer (*len bytes, NUL
 * added); NULL when it cannot be opened or read. *whole: read to its end. */
static char *read_bounded(const char *path, size_t max, size_t *len, int *whole)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    *whole = 0;
    while (buf) {
        if (n == cap) {
            if (cap >= max)
                break;
            cap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0) {
            *whole = 1;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

double top_proc_boot_time(const char *root)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stat", root ? root : "/proc");
    size_t len = 0;
    int whole = 0;
    char *s = read_bounded(path, 1u << 20, &len, &whole);
    double t = NAN;
    for (char *line = s; line && *line;) {
        char *end = strchr(line, '\n');
        unsigned long long v = 0;
        if (sscanf(line, "btime %llu", &v) == 1 && v > 0) {
            t = (double)v;
            break;
        }
        line = end ? end + 1 : NULL;
    }
    free(s);
    return t;
}

double top_proc_start_unix(uint64_t start_ticks, double boot_unix, long hz)
{
    if (!(boot_unix > 0) || hz <= 0 || !start_ticks)
        return NAN;
    return boot_unix + (double)start_ticks / (double)hz;
}

void top_proc_env_parse(const char *data, size_t len, const char *name, top_proc_env *out)
{
    memset(out, 0, sizeof *out);
    out->state = TOP_ENV_UNSET;
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        const char *e = data + i;
        const char *z = memchr(e, '\0', len - i);
        size_t elen = z ? (size_t)(z - e) : len - i;
        if (elen > nl && memcmp(e, name, nl) == 0 && e[nl] == '=') {
            size_t vl = elen - nl - 1;
            out->state = TOP_ENV_SET;
            out->cut = vl > TOP_ENV_MAX - 1;
            if (out->cut)
                vl = TOP_ENV_MAX - 1;
            for (size_t k = 0; k < vl; k++) {
                unsigned char c = (unsigned char)e[nl + 1 + k];
                out->value[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
            }
            out->value[vl] = '\0';
            return; /* the first, as getenv takes it */
        }
        i += elen + 1;
    }
}

void top_proc_env_read(const char *root, int32_t pid, const char *name, top_proc_env *out)
{
    memset(out, 0, sizeof *out);
    out->state = TOP_ENV_UNREADABLE;
    if (pid <= 0)
        return;
    char path[4200];
    snprintf(path, sizeof path, "%s/%d/environ", root ? root : "/proc", (int)pid);
    size_t len = 0;
    int whole = 0;
    char *s = read_bounded(path, ENV_READ_MAX, &len, &whole);
    if (!s)
        return;
    top_proc_env e;
    top_proc_env_parse(s, len, name, &e);
    free(s);
    if (e.state == TOP_ENV_UNSET && !whole)
        return; /* not in the part read: cannot say it is unset */
    *out = e;
}
