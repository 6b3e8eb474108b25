/*
 * tool_cachesnap.h - a pipeline cache's figures for the monitors (vyre-top,
 * vyre-exporter), read in a thread of their own so that a frame or a
 * scrape never waits on the cache for long.
 *
 * Why: reading the figures opens the index, and an index that another
 * process holds locked (an exclusive lock, or any long writer on NFS with
 * the rollback journal) makes that open wait libcore's busy timeout, 10 s:
 * seen freezing `vyre-top --batch -n 2 -d 0.2` for 29 s and making every
 * exporter scrape take 10 s, losing the GPU and process series with it.
 *
 * How: a read that is due is started in a thread and waited for at most
 * TOOL_CACHESNAP_WAIT_MS (a normal read takes milliseconds, so the frame
 * that starts it gets fresh figures); past that, the caller goes on and is
 * told the cache is busy, until the read ends. A read already under way
 * is never waited for. The next read starts refresh_s after the last one
 * ended, failed or not, so a cache that stays locked is asked once per
 * refresh interval. Each read opens the cache read-only, records no hits
 * and writes nothing.
 */
#ifndef VYRE_TOOL_CACHESNAP_H
#define VYRE_TOOL_CACHESNAP_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/cache.h"
#include "vyre/remote.h"

/* How long the call that starts a read waits for it. */
#define TOOL_CACHESNAP_WAIT_MS 150

#define TOOL_CACHESNAP_MSG_MAX 512

enum tool_cachesnap_state {
    TOOL_CACHESNAP_OK = 0,      /* figures below */
    TOOL_CACHESNAP_MISSING = 1, /* no cache at the root yet */
    TOOL_CACHESNAP_ERROR = 2,   /* could not read it: msg says why ("cache busy: ..." when busy) */
    TOOL_CACHESNAP_PENDING = 3, /* not read yet */
};

typedef struct tool_cachesnap_remote {
    char url[VYRE_REMOTE_URL_MAX]; /* password masked */
    int read_only;
    vyre_remote_stats st;
} tool_cachesnap_remote;

typedef struct tool_cachesnap_figures {
    int state; /* enum tool_cachesnap_state */
    int busy;  /* state is ERROR because the index was locked or a read is taking long */
    char msg[TOOL_CACHESNAP_MSG_MAX];
    char root[VYRE_CACHE_PATH_MAX];
    vyre_cache_stats stats;
    size_t nremotes;
    tool_cachesnap_remote remotes[VYRE_REMOTE_MAX];
    uint64_t read_ns; /* CLOCK_MONOTONIC when these figures were read (0: never) */
} tool_cachesnap_figures;

typedef struct tool_cachesnap tool_cachesnap;

/* For the cache at root (NULL: vyre_cache_default_root), re-read at most
 * every refresh_s seconds after the previous read ended; with_remotes
 * also reads each remote's life counters. NULL when out of memory. */
tool_cachesnap *tool_cachesnap_new(const char *root, double refresh_s, int with_remotes);

/* The latest figures into *out, starting a read first when one is due
 * (now_ns: CLOCK_MONOTONIC). Waits TOOL_CACHESNAP_WAIT_MS at most, and
 * only for a read it started. One caller at a time. */
void tool_cachesnap_get(tool_cachesnap *s, uint64_t now_ns, tool_cachesnap_figures *out);

/* Frees s; a read still under way is left to finish on its own and frees
 * what it shares with s then. NULL is a no-op. */
void tool_cachesnap_free(tool_cachesnap *s);

#endif /* VYRE_TOOL_CACHESNAP_H */
