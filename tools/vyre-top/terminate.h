/*
 * terminate.h - the `k` key's action: SIGTERM to a process the screen
 * showed, after checks that it is still that process and that the user may
 * signal it. vyre-top signals only the user's own processes unless it runs
 * as root (htop's rule, and the kernel's for an unprivileged user).
 */
#ifndef VYRE_TOP_TERMINATE_H
#define VYRE_TOP_TERMINATE_H

#include <stddef.h>
#include <stdint.h>

/* 1 when a user with real uid self_uid and effective uid self_euid may
 * signal a process whose real uid is target_uid: root may signal any, others
 * only their own. Pure. */
int top_may_signal(uint32_t self_uid, uint32_t self_euid, uint32_t target_uid);

/* Sends SIGTERM to pid, found under root (NULL: /proc), when it still has
 * the start time start_ticks (0: not checked), so that a pid reused since
 * the screen was drawn is not hit, and when top_may_signal allows it. msg
 * (size > 0) gets one line saying what was done or why not. Returns 0 when
 * the signal was sent, -1 otherwise. */
int top_terminate(const char *root, int32_t pid, uint64_t start_ticks, char *msg, size_t size);

/* As top_terminate with signal sig: SIGTERM, SIGINT or SIGKILL (the three
 * `k` offers); any other is refused (-1, msg says so). */
int top_signal(const char *root, int32_t pid, uint64_t start_ticks, int sig, char *msg,
               size_t size);

/* "SIGTERM", "SIGINT", "SIGKILL"; "a signal" for any other. */
const char *top_signal_name(int sig);

#endif /* VYRE_TOP_TERMINATE_H */
