/*
 * telemetry_reap.c - the one staleness rule (vyre_telemetry_stale: the
 * process is gone, or its pid now names a later process) and the reap
 * that removes such pages from the directory.
 *
 * Guarantees: a page of another PID namespace is never judged stale (its
 * pid says nothing here); the reap removes only regular files of ours with
 * a page's name, never the caller's own page, and only the very file it
 * judged (a process that took the pid meanwhile may have replaced it).
 */
#include "vyre/telemetry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"
#include "trace/telemetry_internal.h"

/* Whether the page of the live process pid was left by an earlier process
 * with the same pid: its recorded start time differs from the live one's.
 * Unknown (unreadable page or /proc) counts as not stale. */
static int pid_reused(const vyre__tel_page_id *id, int32_t pid)
{
    uint64_t live_start = 0;
    if (!id->valid || id->pid != pid || id->start_time == 0)
        return 0;
    if (vyre__telemetry_start_time(pid, &live_start) != VYRE_OK || live_start == 0)
        return 0;
    return live_start != id->start_time;
}

int vyre_telemetry_stale(const vyre_telemetry_snapshot *s)
{
    if (!s || s->pid <= 0 || vyre_telemetry_foreign(s))
        return 0;
    if (kill(s->pid, 0) != 0 && errno == ESRCH)
        return 1;
    uint64_t live_start = 0;
    if (s->start_time == 0 || vyre__telemetry_start_time(s->pid, &live_start) != VYRE_OK ||
        live_start == 0)
        return 0;
    return live_start != s->start_time;
}

int vyre_telemetry_reap(const char *dir, size_t *removed, vyre_error *err)
{
    if (removed)
        *removed = 0;
    char path[VYRE_TELEMETRY_PATH_MAX];
    DIR *d = NULL;
    int rc = vyre__tel_opendir_reader(dir, path, sizeof path, &d, err);
    if (rc || !d)
        return rc;
    int dfd = dirfd(d);
    size_t count = 0;
    int32_t self = (int32_t)getpid();
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int32_t pid;
        int tmp;
        struct stat st, again;
        if (!vyre__tel_parse_name(de->d_name, &pid, &tmp) || pid == self)
            continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        /* A writer in another PID namespace: the pid names some other
         * process here, or none, and says nothing about the writer. */
        vyre__tel_page_id id;
        vyre__tel_read_id(dfd, de->d_name, &id);
        if (id.foreign)
            continue;
        int dead = kill(pid, 0) != 0 && errno == ESRCH;
        if (!dead && (tmp || !pid_reused(&id, pid)))
            continue;
        /* Remove only the file judged: a new process that took the pid may
         * have replaced it meanwhile. */
        if (fstatat(dfd, de->d_name, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
            again.st_ino != st.st_ino || again.st_dev != st.st_dev)
            continue;
        if (unlinkat(dfd, de->d_name, 0) == 0)
            count++;
    }
    closedir(d);
    if (removed)
        *removed = count;
    return VYRE_OK;
}
