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
    return top_signal(root, pid, start_ticks, SIGTERM, msg, size);
}

const char *top_signal_name(int sig)
{
    switch (sig) {
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    case SIGKILL:
        return "SIGKILL";
    default:
        return "a signal";
    }
}

int top_signal(const char *root, int32_t pid, uint64_t start_ticks, int sig, char *msg, size_t size)
{
    if (sig != SIGTERM && sig != SIGINT && sig != SIGKILL) {
        snprintf(msg, size, "signal %d is not one vyre-top sends: nothing sent", sig);
        return -1;
    }
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
    if (kill((pid_t)pid, sig) != 0) {
        snprintf(msg, size, "cannot send %s to %d: %s", top_signal_name(sig), (int)pid,
                 strerror(errno));
        return -1;
    }
    snprintf(msg, size, "sent %s to %d (%s)", top_signal_name(sig), (int)pid, hp.st.comm);
    return 0;
}
