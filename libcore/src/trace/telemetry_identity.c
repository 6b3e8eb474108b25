/*
 * telemetry_identity.c - who wrote a page (see telemetry_internal.h): a
 * process's start time from /proc, the caller's PID namespace, whether a
 * page records another namespace, and a page file's identity part.
 *
 * Guarantees: nothing here fails loudly or follows a symlink: an unknown
 * start time is a negative code, an unknown namespace is 0 (never judged
 * foreign by the caller's own), and a page that cannot be read or is not a
 * known layout has id->valid 0.
 */
#include "vyre/telemetry.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"
#include "trace/proc_internal.h"
#include "trace/telemetry_internal.h"

static const char TEL_MAGIC[8] = VYRE__TEL_MAGIC;

int vyre__telemetry_start_time(int pid, uint64_t *ticks)
{
    return vyre__proc_start_ticks(pid, ticks); /* the one stat parser (trace/proc.c) */
}

/* The calling process's PID namespace: device and inode of
 * /proc/self/ns/pid (namespaces(7): the pair identifies it). Both 0 when
 * /proc cannot tell. */
void vyre__tel_own_pid_ns(uint64_t *dev, uint64_t *ino)
{
    struct stat st;
    *dev = *ino = 0;
    if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != 0) {
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
    }
}

/* Whether a page recording the namespace (dev, ino) is foreign to the
 * caller: recorded, and not provably the caller's. */
static int ns_foreign(uint64_t dev, uint64_t ino)
{
    if (ino == 0)
        return 0; /* layouts 1 and 2, or a writer without /proc: unknown */
    uint64_t my_dev, my_ino;
    vyre__tel_own_pid_ns(&my_dev, &my_ino);
    return my_ino == 0 || my_ino != ino || my_dev != dev;
}

int vyre_telemetry_foreign(const vyre_telemetry_snapshot *s)
{
    return s && ns_foreign(s->pid_ns_dev, s->pid_ns_ino);
}

void vyre__tel_read_id(int dfd, const char *name, vyre__tel_page_id *id)
{
    memset(id, 0, sizeof *id);
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return;
    unsigned char buf[offsetof(vyre__tel_header, reserved1)];
    ssize_t got = pread(fd, buf, sizeof buf, 0);
    close(fd);
    if (got != (ssize_t)sizeof buf || memcmp(buf, TEL_MAGIC, sizeof TEL_MAGIC) != 0)
        return;
    uint32_t version;
    memcpy(&version, buf + offsetof(vyre__tel_header, version), sizeof version);
    if (!vyre__tel_known_version(version))
        return;
    id->valid = 1;
    memcpy(&id->pid, buf + offsetof(vyre__tel_header, pid), sizeof id->pid);
    memcpy(&id->start_time, buf + offsetof(vyre__tel_header, start_time), sizeof id->start_time);
    if (version >= 3) { /* before, these bytes were reserved */
        uint64_t dev, ino;
        memcpy(&dev, buf + offsetof(vyre__tel_header, pid_ns_dev), sizeof dev);
        memcpy(&ino, buf + offsetof(vyre__tel_header, pid_ns_ino), sizeof ino);
        id->foreign = ns_foreign(dev, ino);
    }
}
