/*
 * progress.c - see progress.h.
 */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "tool_util.h"

#define PROGRESS_DELAY_NS    INT64_C(1000000000) /* silent for the first second */
#define PROGRESS_INTERVAL_NS INT64_C(100000000)  /* at most 10 redraws a second */

void cachectl_progress_init(cachectl_progress *p, const char *what, const char *unit)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->unit = unit;
    p->enabled = !g_cachectl.quiet && isatty(STDERR_FILENO);
    p->start_ns = (int64_t)tool_mono_ns();
}

void cachectl_progress_update(uint64_t done, uint64_t total, void *ctx)
{
    cachectl_progress *p = ctx;
    if (!p || !p->enabled)
        return;
    int64_t now = (int64_t)tool_mono_ns();
    if (now - p->start_ns < PROGRESS_DELAY_NS || now - p->last_ns < PROGRESS_INTERVAL_NS)
        return;
    p->last_ns = now;
    double secs = (double)(now - p->start_ns) / 1e9;
    double rate = secs > 0 ? (double)done / secs : 0;
    char eta[32] = "";
    if (total > done && rate > 0) {
        char age[16];
        vyre_format_age((int64_t)((double)(total - done) / rate * 1e9), age, sizeof age);
        snprintf(eta, sizeof eta, ", ETA %s", age);
    }
    if (total)
        fprintf(stderr, "\r%s: %" PRIu64 "/%" PRIu64 " %s (%.0f/s%s)\033[K", p->what, done, total,
                p->unit, rate, eta);
    else
        fprintf(stderr, "\r%s: %" PRIu64 " %s (%.0f/s)\033[K", p->what, done, p->unit, rate);
    fflush(stderr);
    p->drawn = 1;
}

void cachectl_progress_end(cachectl_progress *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = 0;
    }
}
