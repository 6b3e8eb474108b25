/*
 * tool_refblock.c - see tool_refblock.h.
 */
#include "tool_refblock.h"
#include "tool_util.h"

#include <errno.h>
#include <time.h>

void tool_refblock_init(tool_refblock *b, int refs)
{
    tool_cond_init_monotonic(&b->cv);
    pthread_mutex_init(&b->mu, NULL);
    b->refs = refs;
}

int tool_refblock_release(tool_refblock *b)
{
    int last = --b->refs == 0;
    pthread_mutex_unlock(&b->mu);
    if (last) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
    }
    return last;
}

uint64_t tool_refblock_deadline(uint64_t ns)
{
    return tool_mono_ns() + ns;
}

int tool_refblock_wait(tool_refblock *b, uint64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    return pthread_cond_timedwait(&b->cv, &b->mu, &ts) == ETIMEDOUT;
}
