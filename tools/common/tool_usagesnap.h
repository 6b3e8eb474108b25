/*
 * tool_usagesnap.h - the four caches' sizes and their filesystems' fill
 * (vyre/usage.h) for the monitors (vyre-top, vyre-exporter), measured by a
 * thread of their own on a slow interval, never on a frame or a scrape.
 *
 * Why a thread: a walk is bounded (VYRE_USAGE_DEFAULT_MAX_MS a cache) but
 * still far longer than a frame or a scrape may take on a cache of
 * millions of files on Lustre; a size a minute old is what a full
 * filesystem warning needs. The first round starts when the handle is
 * made; each next one every_s seconds after the previous one ended.
 */
#ifndef VYRE_TOOL_USAGESNAP_H
#define VYRE_TOOL_USAGESNAP_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/usage.h"

#define TOOL_USAGESNAP_MSG_MAX 512

enum tool_usage_state {
    TOOL_USAGE_OK = 0,    /* u holds the figures (u.exists 0: not created yet) */
    TOOL_USAGE_ERROR = 1, /* not located or not readable: msg says why */
};

/* One cache: where it is, its limit, and what it holds. */
typedef struct tool_usage_fig {
    vyre_usage_cache where;
    int state; /* enum tool_usage_state */
    vyre_usage u;
    char msg[TOOL_USAGESNAP_MSG_MAX]; /* "message; hint: hint" on one line */
} tool_usage_fig;

typedef struct tool_usagesnap_figures {
    uint64_t read_ns; /* CLOCK_MONOTONIC when the round ended; 0: none yet */
    uint64_t rounds;  /* rounds measured */
    uint64_t errors;  /* caches that could not be measured, summed over the rounds */
    tool_usage_fig c[VYRE_USAGE_N_CACHES];
} tool_usagesnap_figures;

typedef struct tool_usagesnap tool_usagesnap;

/* Starts measuring: vyre's cache at vyre_root (NULL: its default), every
 * every_s seconds (<= 0: 60), each walk bounded by max_entries and max_ms
 * (0: libcore's defaults). NULL when out of memory or no thread starts. */
tool_usagesnap *tool_usagesnap_new(const char *vyre_root, double every_s, uint64_t max_entries,
                                   uint64_t max_ms);

/* The latest round into *out; waits at most wait_ms for the first one
 * (read_ns 0 when none came). Any thread; never waits for a later round. */
void tool_usagesnap_get(tool_usagesnap *s, tool_usagesnap_figures *out, unsigned wait_ms);

/* Stops the thread; a round under way finishes on its own and frees what
 * it shares then, so a monitor quits at once. NULL is a no-op. */
void tool_usagesnap_free(tool_usagesnap *s);

/* ---- pure helpers both monitors show the figures with ------------------ */

/* A filesystem at or over this fill (bytes or inodes) is a warning. */
#define TOOL_USAGE_FS_WARN_PCT 90.0

/* The fuller of the byte and inode fill of f's filesystem, in percent; -1
 * when unknown. */
double tool_usage_fs_pct(const tool_usage_fig *f);

/* 1 when f's cache is over its known limit, or its filesystem at or over
 * TOOL_USAGE_FS_WARN_PCT. */
int tool_usage_warn(const tool_usage_fig *f);

#endif /* VYRE_TOOL_USAGESNAP_H */
