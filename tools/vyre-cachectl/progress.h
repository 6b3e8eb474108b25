/*
 * progress.h - a progress line on stderr for long cache operations
 * (verify, prune, reindex, seed): count, rate and ETA, redrawn in place.
 *
 * Shown only when stderr is a terminal, -q is off, and the work has run for
 * more than a second (short operations stay silent); redrawn at most ten
 * times a second; erased when the work ends, so the command's own output
 * starts on a clean line.
 */
#ifndef VYRE_CACHECTL_PROGRESS_H
#define VYRE_CACHECTL_PROGRESS_H

#include <stdint.h>

typedef struct cachectl_progress {
    const char *what; /* "verify", ... */
    const char *unit; /* "blobs", "entries", ... */
    int enabled;
    int drawn; /* a line is on the screen */
    int64_t start_ns;
    int64_t last_ns;
} cachectl_progress;

/* Starts a progress line for `what`, counting `unit`s. */
void cachectl_progress_init(cachectl_progress *p, const char *what, const char *unit);

/* A vyre_cache_progress_fn: ctx is the cachectl_progress. total 0: unknown. */
void cachectl_progress_update(uint64_t done, uint64_t total, void *ctx);

/* Erases the line if one was drawn. */
void cachectl_progress_end(cachectl_progress *p);

#endif /* VYRE_CACHECTL_PROGRESS_H */
