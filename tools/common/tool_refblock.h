/*
 * tool_refblock.h - the head of a heap block shared by a monitor's handle
 * and the background thread it starts (tool_cachesnap.c, tool_usagesnap.c):
 * a mutex, a condition variable on CLOCK_MONOTONIC and a reference count
 * kept under the mutex. The handle can let go while its thread still works
 * (a monitor that quits never waits for a directory walk or a locked
 * index), and whichever lets go last frees the block.
 *
 * Waits are on the monotonic clock: a default condition variable waits
 * on CLOCK_REALTIME, where a wall clock set back an hour (NTP, an admin)
 * would stretch a 500 ms wait of vyre-top's frame to an hour.
 */
#ifndef VYRE_TOOL_REFBLOCK_H
#define VYRE_TOOL_REFBLOCK_H

#include <pthread.h>
#include <stdint.h>

typedef struct tool_refblock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* under mu */
} tool_refblock;

/* A new head holding refs references. */
void tool_refblock_init(tool_refblock *b, int refs);

/* With b->mu held: drops one reference and unlocks. 1 when that was the
 * last one: the mutex and condition variable are destroyed, and the
 * caller frees the block. */
int tool_refblock_release(tool_refblock *b);

/* With b->mu held: waits on b->cv until signalled or until ns from when
 * the wait began (deadline_ns, from tool_refblock_deadline). 1 when the
 * deadline has passed. Spurious wake-ups return 0: loop on the condition. */
uint64_t tool_refblock_deadline(uint64_t ns);
int tool_refblock_wait(tool_refblock *b, uint64_t deadline_ns);

#endif /* VYRE_TOOL_REFBLOCK_H */
