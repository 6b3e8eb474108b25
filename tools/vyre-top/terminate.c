/*
 * terminate.c - see terminate.h.
 */
#include "terminate.h"
#include "vyre/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int top_may_signal(uint32_t self_uid, uint32_t self_euid, uint32_t target_uid)
{
    return self_euid == 0 || self_uid == target_uid;
}

int top_terminate(const char *root, int32_t pid, uint64_t start_ticks, char *msg, size_t size)
{
    vyre_proc_info hp;
    vyre_proc_reader *r = NULL;
    int rc = vyre_proc_reader_new(root, &r, NULL);
    if (rc == VYRE_OK)
        rc = pid > 0 ? vyre_proc_read(r, pid, &hp, NULL) : VYRE_EINVAL;
    vyre_proc_reader_free(r);
    if (rc != VYRE_OK) {
        snprintf(msg, size, "process %d has exited: nothing sent", (int)pid);
        return -1;
    }
    if (start_ticks && hp.st.start_ticks != start_ticks) {
        snprintf(msg, size, "pid %d is now another process: nothing sent", (int)pid);
        return -1;
    }
    if (!hp.uid_valid) {
        snprintf(msg, size, "cannot tell who owns process %d: nothing sent", (int)pid);
        return -1;
    }
    if (!top_may_signal((uint32_t)getuid(), (uint32_t)geteuid(), hp.uid)) {
        snprintf(msg, size,
                 "not sent: process %d belongs to %s; vyre-top signals only your own processes "
                 "unless run as root",
                 (int)pid, hp.user);
        return -1;
    }
    if (kill((pid_t)pid, SIGTERM) != 0) {
        snprintf(msg, size, "cannot send SIGTERM to %d: %s", (int)pid, strerror(errno));
        return -1;
    }
    snprintf(msg, size, "sent SIGTERM to %d (%s)", (int)pid, hp.st.comm);
    return 0;
}
