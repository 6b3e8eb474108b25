/*
 * proc.c - see vyre/proc.h: a process's figures read from /proc, through
 * the pure parsers of proc_internal.h. Moved here from vyre-top (issue 35:
 * the exporter linked all of vyre-top's library to name processes).
 */
#include "vyre/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "trace/proc_internal.h"

#define PROC_ROOT "/proc"
#define ROOT_MAX  448 /* room for "/<pid>/<name>" in a 512-byte path */

#define ENV_READ_MAX (1u << 20) /* bytes of an environ (or the host's stat) read at most */

struct vyre_proc_reader {
    char root[ROOT_MAX];
    vyre__proc_users users;
    int boot_read;    /* boot_unix was read (it does not change while the host runs) */
    double boot_unix; /* the host's boot time; NAN unknown */
};

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

int vyre__proc_parse_stat(const char *buf, size_t n, vyre_proc_stat *out)
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
    vyre_proc_stat st;
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

int vyre__proc_parse_statm(const char *buf, size_t n, uint64_t *rss_pages)
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

int vyre__proc_parse_uid(const char *buf, size_t n, uint32_t *uid)
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

void vyre__proc_cmdline(const char *buf, size_t n, char *dst, size_t size)
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

double vyre_proc_cpu_pct(uint64_t prev_ticks, uint64_t now_ticks, long hz, double dt_s)
{
    if (!(dt_s > 0) || hz <= 0 || now_ticks < prev_ticks)
        return NAN;
    return 100.0 * ((double)(now_ticks - prev_ticks) / (double)hz) / dt_s;
}

/* Reads at most size - 1 bytes of root/pid/name (pid 0: root/self/name;
 * pid < 0: root/name, a file of the host) into buf (terminated); returns
 * the count, or a negative VYRE_E* code (VYRE_ENOENT: no such process, or
 * no such file; a read that fails, as another user's environ does, is an
 * error, never an empty file). */
static ssize_t read_small(const char *root, int32_t pid, const char *name, char *buf, size_t size)
{
    char path[512];
    buf[0] = '\0';
    int len = pid > 0    ? snprintf(path, sizeof path, "%s/%d/%s", root, (int)pid, name)
              : pid == 0 ? snprintf(path, sizeof path, "%s/self/%s", root, name)
                         : snprintf(path, sizeof path, "%s/%s", root, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return VYRE_ETOOBIG;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ESRCH ? VYRE_ENOENT : vyre__errno_code(errno);
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t r = read(fd, buf + got, size - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int code = vyre__errno_code(errno);
            close(fd);
            buf[0] = '\0';
            return code;
        }
        if (r == 0)
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

void vyre__proc_user(vyre__proc_users *cache, uint32_t uid, char *dst, size_t size)
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
    unsigned slot = cache->n < VYRE__PROC_USERS ? cache->n++ : cache->next++ % VYRE__PROC_USERS;
    cache->uid[slot] = uid;
    user_name(uid, cache->name[slot], sizeof cache->name[slot]);
    snprintf(dst, size, "%s", cache->name[slot]);
}

int vyre_proc_reader_new(const char *root, vyre_proc_reader **out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_proc_reader_new: NULL out");
    *out = NULL;
    if (!root)
        root = PROC_ROOT;
    vyre_proc_reader *r = calloc(1, sizeof *r);
    if (!r)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating a /proc reader");
    if (vyre__strlcpy(r->root, root, sizeof r->root) >= sizeof r->root) {
        free(r);
        return vyre__fail(err, VYRE_ETOOBIG, "use a path shorter than 448 bytes",
                          "process directory path too long: '%s'", root);
    }
    *out = r;
    return VYRE_OK;
}

void vyre_proc_reader_free(vyre_proc_reader *r)
{
    free(r);
}

/* Resident memory (statm) and owner (status) of a process whose stat was
 * read: each may fail alone, leaving its flag 0. */
static void read_rss_and_user(vyre_proc_reader *r, int32_t pid, vyre_proc_info *out)
{
    char buf[4096];
    uint64_t pages;
    ssize_t n = read_small(r->root, pid, "statm", buf, sizeof buf);
    if (n > 0 && vyre__proc_parse_statm(buf, (size_t)n, &pages) == 0) {
        long psz = sysconf(_SC_PAGESIZE);
        out->rss_valid = 1;
        out->rss_bytes = pages * (uint64_t)(psz > 0 ? psz : 4096);
    }
    n = read_small(r->root, pid, "status", buf, sizeof buf);
    if (n > 0 && vyre__proc_parse_uid(buf, (size_t)n, &out->uid) == 0) {
        out->uid_valid = 1;
        vyre__proc_user(&r->users, out->uid, out->user, sizeof out->user);
    }
}

int vyre_proc_read(vyre_proc_reader *r, int32_t pid, vyre_proc_info *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_proc_read: NULL out");
    memset(out, 0, sizeof *out);
    if (!r)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_proc_read: NULL reader");
    if (pid <= 0)
        return vyre__fail(err, VYRE_EINVAL, "give the pid of a process (a positive number)",
                          "not a process id: '%d'", (int)pid);
    char buf[4096];
    ssize_t n = read_small(r->root, pid, "stat", buf, sizeof buf);
    if (n < 0)
        return vyre__fail(err, (int)n, "the process may have exited",
                          "cannot read '%s/%d/stat': %s", r->root, (int)pid, vyre_strerror((int)n));
    if (vyre__proc_parse_stat(buf, (size_t)n, &out->st) != 0)
        return vyre__fail(err, VYRE_ECORRUPT, "the process may have exited while it was read",
                          "'%s/%d/stat' is not a whole stat line", r->root, (int)pid);
    out->stat_valid = 1;
    read_rss_and_user(r, pid, out);
    return VYRE_OK;
}

int vyre__proc_start_ticks(int32_t pid, uint64_t *ticks)
{
    char buf[4096];
    vyre_proc_stat st;
    ssize_t n = read_small(PROC_ROOT, pid < 0 ? 0 : pid, "stat", buf, sizeof buf);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return VYRE_EIO;
    if (vyre__proc_parse_stat(buf, (size_t)n, &st) != 0)
        return VYRE_ECORRUPT;
    *ticks = st.start_ticks;
    return VYRE_OK;
}

void vyre_proc_read_cmdline(vyre_proc_reader *r, int32_t pid, char *dst, size_t size)
{
    char buf[4096];
    ssize_t n = r && pid > 0 ? read_small(r->root, pid, "cmdline", buf, sizeof buf) : -1;
    vyre__proc_cmdline(buf, n > 0 ? (size_t)n : 0, dst, size);
}

/* ---- the host (issue 37: vyre-top's host panel) ---------------------------- */

/* The aggregate "cpu" line of /proc/stat: busy and total ticks (idle and
 * iowait are not busy; guest time is inside user already), and the number
 * of "cpuN" lines. */
static int parse_cpu(const char *buf, vyre_host_info *out)
{
    const char *p = strstr(buf, "cpu ");
    if (p != buf && (!p || p[-1] != '\n'))
        return 0;
    unsigned long long v[8] = {0};
    int n = sscanf(p + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    if (n < 4)
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += v[i];
    out->cpu_total_ticks = total;
    out->cpu_busy_ticks = total - v[3] - (n > 4 ? v[4] : 0);
    out->ncpus = 0;
    for (const char *q = buf; (q = strstr(q, "\ncpu")); q += 4)
        if (q[4] >= '0' && q[4] <= '9')
            out->ncpus++;
    return 1;
}

/* "Name:   123 kB" of /proc/meminfo, in bytes; 0 when absent. */
static int meminfo_kb(const char *buf, const char *name, uint64_t *out)
{
    size_t nl = strlen(name);
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            unsigned long long kb = 0;
            if (sscanf(p + nl + 1, "%llu", &kb) != 1)
                return 0;
            *out = (uint64_t)kb * 1024u;
            return 1;
        }
    return 0;
}

int vyre_proc_read_host(vyre_proc_reader *r, vyre_host_info *out, vyre_error *err)
{
    if (!r || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_proc_read_host: NULL argument");
    memset(out, 0, sizeof *out);
    char buf[16384];
    if (read_small(r->root, -1, "stat", buf, sizeof buf) > 0)
        out->cpu_valid = parse_cpu(buf, out);
    if (read_small(r->root, -1, "meminfo", buf, sizeof buf) > 0) {
        out->mem_valid = meminfo_kb(buf, "MemTotal", &out->mem_total_bytes) &&
                         meminfo_kb(buf, "MemAvailable", &out->mem_avail_bytes);
        out->swap_valid = meminfo_kb(buf, "SwapTotal", &out->swap_total_bytes) &&
                          meminfo_kb(buf, "SwapFree", &out->swap_free_bytes);
    }
    if (read_small(r->root, -1, "loadavg", buf, sizeof buf) > 0)
        out->load_valid =
            sscanf(buf, "%lf %lf %lf", &out->load[0], &out->load[1], &out->load[2]) == 3;
    if (!out->cpu_valid && !out->mem_valid && !out->load_valid)
        return vyre__fail(err, VYRE_ENOENT, "mount /proc (procfs) or pass its root",
                          "cannot read the host's figures under '%s'", r->root);
    return VYRE_OK;
}

double vyre_host_cpu_pct(const vyre_host_info *prev, const vyre_host_info *now)
{
    if (!prev || !now || !prev->cpu_valid || !now->cpu_valid ||
        now->cpu_total_ticks <= prev->cpu_total_ticks || now->cpu_busy_ticks < prev->cpu_busy_ticks)
        return NAN;
    return 100.0 * (double)(now->cpu_busy_ticks - prev->cpu_busy_ticks) /
           (double)(now->cpu_total_ticks - prev->cpu_total_ticks);
}

int vyre_proc_read_ppid(vyre_proc_reader *r, int32_t pid, int32_t *ppid)
{
    if (!r || !ppid || pid <= 0)
        return VYRE_EINVAL;
    *ppid = 0;
    char buf[1024];
    ssize_t n = read_small(r->root, pid, "stat", buf, sizeof buf);
    if (n <= 0)
        return n < 0 ? (int)n : VYRE_ENOENT;
    const char *close = strrchr(buf, ')'); /* comm may hold ')' itself */
    int parent = 0;
    char state = 0;
    if (!close || sscanf(close + 1, " %c %d", &state, &parent) != 2 || parent < 0)
        return VYRE_ECORRUPT;
    *ppid = parent;
    return VYRE_OK;
}

/* ---- start time and environment (issue 37: vyre-top's detail view) -------- */

double vyre__proc_parse_btime(const char *buf)
{
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        unsigned long long v = 0;
        if (sscanf(p, "btime %llu", &v) == 1 && v > 0)
            return (double)v;
    }
    return NAN;
}

double vyre__proc_start_unix(uint64_t start_ticks, double boot_unix, long hz)
{
    if (!(boot_unix > 0) || hz <= 0 || !start_ticks)
        return NAN;
    return boot_unix + (double)start_ticks / (double)hz;
}

/* Up to ENV_READ_MAX bytes of root/pid/name (pid < 0: a file of the host)
 * into a malloc'ed buffer, *n bytes; NULL when it cannot be read. */
static char *read_large(const char *root, int32_t pid, const char *name, size_t *n)
{
    char *buf = malloc(ENV_READ_MAX + 1);
    ssize_t got = buf ? read_small(root, pid, name, buf, ENV_READ_MAX + 1) : VYRE_ENOMEM;
    if (got < 0) {
        free(buf);
        return NULL;
    }
    *n = (size_t)got;
    return buf;
}

double vyre_proc_start_unix(vyre_proc_reader *r, uint64_t start_ticks)
{
    if (!r)
        return NAN;
    if (!r->boot_read) {
        size_t n;
        char *buf = read_large(r->root, -1, "stat", &n);
        r->boot_unix = buf ? vyre__proc_parse_btime(buf) : NAN;
        r->boot_read = 1;
        free(buf);
    }
    return vyre__proc_start_unix(start_ticks, r->boot_unix, sysconf(_SC_CLK_TCK));
}

void vyre__proc_env_parse(const char *data, size_t len, const char *name, vyre_proc_env *out)
{
    memset(out, 0, sizeof *out);
    out->state = VYRE_PROC_ENV_UNSET;
    size_t nl = strlen(name);
    for (size_t i = 0; i < len;) {
        const char *e = data + i;
        const char *z = memchr(e, '\0', len - i);
        size_t elen = z ? (size_t)(z - e) : len - i;
        if (elen > nl && memcmp(e, name, nl) == 0 && e[nl] == '=') {
            size_t vl = elen - nl - 1;
            out->state = VYRE_PROC_ENV_SET;
            out->cut = vl > VYRE_PROC_ENV_MAX - 1;
            copy_printable(out->value, sizeof out->value, e + nl + 1, vl);
            return; /* the first, as getenv takes it */
        }
        i += elen + 1;
    }
}

void vyre_proc_read_env(vyre_proc_reader *r, int32_t pid, const char *name, vyre_proc_env *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->state = VYRE_PROC_ENV_UNREADABLE;
    size_t n = 0;
    char *buf = r && name && pid > 0 ? read_large(r->root, pid, "environ", &n) : NULL;
    if (!buf)
        return;
    vyre_proc_env e;
    vyre__proc_env_parse(buf, n, name, &e);
    free(buf);
    /* Read to the bound, the file may go on: not found is not "unset". */
    if (e.state == VYRE_PROC_ENV_SET || n < ENV_READ_MAX)
        *out = e;
}
