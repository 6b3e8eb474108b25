/*
 * procfs.c - see procfs.h.
 */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Copies up to n bytes into dst (size > 0), control bytes and NULs as '?'. */
static void copy_printable(char *dst, size_t size, const char *src, size_t n)
{
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[n] = '\0';
}

/* One space-separated token of [*p, end): its bounds, *p moved past it.
 * Returns 0 when there is none. */
static int next_token(const char **p, const char *end, const char **tok, size_t *len)
{
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s >= end)
        return 0;
    const char *t = s;
    while (s < end && *s != ' ' && *s != '\n')
        s++;
    *tok = t;
    *len = (size_t)(s - t);
    *p = s;
    return *len > 0;
}

/* A token of decimal digits only, that fits 64 bits. */
static int parse_u64(const char *tok, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(tok[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int top_procfs_parse_stat(const char *buf, size_t n, top_pstat *out)
{
    memset(out, 0, sizeof *out);
    if (!buf || n == 0)
        return -1;
    const char *end = buf + n;
    const char *open = memchr(buf, '(', n);
    /* The comm may itself hold ')': the last one closes it. */
    const char *close = NULL;
    for (const char *q = end; q > buf;)
        if (*--q == ')') {
            close = q;
            break;
        }
    if (!open || !close || close < open)
        return -1;
    top_pstat st;
    memset(&st, 0, sizeof st);
    copy_printable(st.comm, sizeof st.comm, open + 1, (size_t)(close - open - 1));
    const char *p = close + 1, *tok;
    size_t len;
    /* Token k after the comm is field k + 3 of proc(5). */
    for (int k = 0; k <= 19; k++) {
        if (!next_token(&p, end, &tok, &len))
            return -1;
        if (k == 0) {
            if (len != 1)
                return -1;
            st.state = tok[0];
        } else if (k == 11 && parse_u64(tok, len, &st.utime_ticks) != 0) {
            return -1;
        } else if (k == 12 && parse_u64(tok, len, &st.stime_ticks) != 0) {
            return -1;
        } else if (k == 19 && parse_u64(tok, len, &st.start_ticks) != 0) {
            return -1;
        }
    }
    /* A file cut inside the start time would give a smaller number: the
     * field after it must have begun. */
    if (p >= end || *p != ' ')
        return -1;
    *out = st;
    return 0;
}

int top_procfs_parse_statm(const char *buf, size_t n, uint64_t *rss_pages)
{
    if (!buf)
        return -1;
    const char *p = buf, *end = buf + n, *tok;
    size_t len;
    uint64_t v;
    if (!next_token(&p, end, &tok, &len) || parse_u64(tok, len, &v) != 0)
        return -1;
    if (!next_token(&p, end, &tok, &len) || parse_u64(tok, len, &v) != 0)
        return -1;
    if (p >= end || (*p != ' ' && *p != '\n')) /* cut inside the number */
        return -1;
    *rss_pages = v;
    return 0;
}

int top_procfs_parse_uid(const char *buf, size_t n, uint32_t *uid)
{
    if (!buf)
        return -1;
    const char *end = buf + n;
    for (const char *line = buf; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *lend = nl ? nl : end;
        if (lend - line > 4 && memcmp(line, "Uid:", 4) == 0) {
            const char *p = line + 4;
            while (p < lend && (*p == '\t' || *p == ' '))
                p++;
            const char *t = p;
            while (p < lend && *p >= '0' && *p <= '9')
                p++;
            uint64_t v;
            /* The real uid is followed by the effective one. */
            if (p == lend || (*p != '\t' && *p != ' ') || parse_u64(t, (size_t)(p - t), &v) != 0 ||
                v > UINT32_MAX)
                return -1;
            *uid = (uint32_t)v;
            return 0;
        }
        line = nl ? nl + 1 : end;
    }
    return -1;
}

void top_procfs_cmdline(const char *buf, size_t n, char *dst, size_t size)
{
    if (size == 0)
        return;
    dst[0] = '\0';
    if (!buf)
        return;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        dst[i] = c == 0 ? ' ' : c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[n] = '\0';
}

double top_cpu_pct(uint64_t prev_ticks, uint64_t now_ticks, long hz, double dt_s)
{
    if (!(dt_s > 0) || hz <= 0 || now_ticks < prev_ticks)
        return NAN;
    return 100.0 * ((double)(now_ticks - prev_ticks) / (double)hz) / dt_s;
}

/* Reads at most size - 1 bytes of root/pid/name into buf (terminated);
 * returns the count, or -1. */
static ssize_t read_small(const char *root, int32_t pid, const char *name, char *buf, size_t size)
{
    char path[512];
    int len = snprintf(path, sizeof path, "%s/%d/%s", root, (int)pid, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t r = read(fd, buf + got, size - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

static void user_name(uint32_t uid, char *dst, size_t size)
{
    struct passwd pw, *res = NULL;
    char tmp[2048];
    if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof tmp, &res) == 0 && res && res->pw_name)
        copy_printable(dst, size, res->pw_name, strlen(res->pw_name));
    else
        snprintf(dst, size, "%u", (unsigned)uid);
}

void top_procfs_user(top_user_cache *cache, uint32_t uid, char *dst, size_t size)
{
    if (!cache) {
        user_name(uid, dst, size);
        return;
    }
    for (unsigned i = 0; i < cache->n; i++)
        if (cache->uid[i] == uid) {
            snprintf(dst, size, "%s", cache->name[i]);
            return;
        }
    unsigned slot = cache->n < TOP_USER_CACHE ? cache->n++ : cache->next++ % TOP_USER_CACHE;
    cache->uid[slot] = uid;
    user_name(uid, cache->name[slot], sizeof cache->name[slot]);
    snprintf(dst, size, "%s", cache->name[slot]);
}

int top_procfs_read(const char *root, int32_t pid, top_user_cache *cache, top_host_proc *out)
{
    memset(out, 0, sizeof *out);
    if (pid <= 0)
        return -1;
    char buf[4096];
    ssize_t n = read_small(root, pid, "stat", buf, sizeof buf);
    if (n <= 0 || top_procfs_parse_stat(buf, (size_t)n, &out->st) != 0)
        return -1;
    out->stat_valid = 1;
    uint64_t pages;
    n = read_small(root, pid, "statm", buf, sizeof buf);
    if (n > 0 && top_procfs_parse_statm(buf, (size_t)n, &pages) == 0) {
        long psz = sysconf(_SC_PAGESIZE);
        out->rss_valid = 1;
        out->rss_bytes = pages * (uint64_t)(psz > 0 ? psz : 4096);
    }
    n = read_small(root, pid, "status", buf, sizeof buf);
    if (n > 0 && top_procfs_parse_uid(buf, (size_t)n, &out->uid) == 0) {
        out->uid_valid = 1;
        top_procfs_user(cache, out->uid, out->user, sizeof out->user);
    }
    return 0;
}

void top_procfs_read_cmdline(const char *root, int32_t pid, char *dst, size_t size)
{
    char buf[4096];
    ssize_t n = read_small(root, pid, "cmdline", buf, sizeof buf);
    top_procfs_cmdline(buf, n > 0 ? (size_t)n : 0, dst, size);
}
