/*
 * tel_v1.c - see tel_v1.h.
 */
#include "tel_v1.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

vyre__tel_v1_page *tu_tel_v1_page(const unsigned char *cur)
{
    const vyre__tel_page *p = (const vyre__tel_page *)(const void *)cur;
    vyre__tel_v1_page *v1 = calloc(1, sizeof *v1);
    cr_assert_not_null(v1);
    memcpy(v1, p, offsetof(vyre__tel_header, ranges));
    v1->h.version = 1;
    v1->h.header_size = sizeof(vyre__tel_v1_header);
    v1->h.total_size = sizeof(vyre__tel_v1_page);
    v1->h.hist_buckets = VYRE__TEL_V1_HIST_BUCKETS;
    v1->h.ranges[0].count = 10;
    v1->h.ranges[0].total_ns = 105000;
    v1->h.ranges[0].max_ns = 12950;
    v1->h.ranges[0].buckets[13] = 10;
    v1->h.ring_count = atomic_load(&p->h.ring_count);
    v1->h.ring_head = atomic_load(&p->h.ring_head);
    memcpy(v1->ring, p->ring, sizeof v1->ring);
    return v1;
}

/* Writes s to path (for /proc/self/uid_map and friends). */
static int put_text(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* A mount namespace of our own: directly as root, else inside a user
 * namespace where our uid and gid map to themselves (so the page's owner
 * checks still see us). */
static int own_mount_ns(char *why, size_t why_size)
{
    if (unshare(CLONE_NEWNS) == 0)
        return 0;
    int e = errno;
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        snprintf(why, why_size, "unshare(CLONE_NEWNS): %s; with CLONE_NEWUSER: %s", strerror(e),
                 strerror(errno));
        return -1;
    }
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (put_text("/proc/self/uid_map", map) != 0 ||
        put_text("/proc/self/setgroups", "deny\n") != 0) {
        snprintf(why, why_size, "cannot map our uid in a user namespace: %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (put_text("/proc/self/gid_map", map) != 0) {
        snprintf(why, why_size, "cannot map our gid in a user namespace: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int tu_tel_full_tmpfs(const char *mnt, char *why, size_t why_size)
{
    if (own_mount_ns(why, why_size) != 0)
        return -1;
    /* Keep the mount out of the namespace we came from. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=200k,mode=0700") != 0) {
        snprintf(why, why_size, "cannot mount a tmpfs on '%s': %s", mnt, strerror(errno));
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/fill", mnt);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(posix_fallocate(fd, 0, 184 * 1024), 0, "cannot fill '%s'", path);
    close(fd);
    snprintf(path, sizeof path, "%s/tel", mnt);
    cr_assert_eq(mkdir(path, 0700), 0, "%s: %s", path, strerror(errno));
    return 0;
}
