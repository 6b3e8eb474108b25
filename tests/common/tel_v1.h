/*
 * tel_v1.h - telemetry page helpers for the reader tests (unit) and
 * vyre-top's and the injection library's (cli): a page of layout version 1
 * (what an older libvyrecore writes) made from a current one, and a nearly
 * full file system to publish into.
 */
#ifndef VYRE_TEST_TEL_V1_H
#define VYRE_TEST_TEL_V1_H

#include <stddef.h>

#include "trace/telemetry_internal.h"
#include "trace/telemetry_v1.h"

/* The version 1 page made from the current page image cur through the
 * frozen layout: the parts before the histograms and the ring are the same
 * bytes; range 0 gets ten samples in the log2 bucket 8192..16383 ns. The
 * caller frees it. */
vyre__tel_v1_page *tu_tel_v1_page(const unsigned char *cur);

/*
 * Mounts a 200 KiB tmpfs on mnt (an existing empty directory) in a mount
 * namespace of the calling process's own (unshare(2): root, else a user
 * namespace mapping our uid to itself), fills 184 KiB of it and creates
 * mnt/tel (0700): a telemetry directory with room for a page's first
 * blocks but not for the page, as a /dev/shm that DataLoader workers
 * filled. Criterion runs each test in a process of its own, so the mount
 * goes away with the test. Returns 0, or -1 with the reason in why when
 * this machine allows neither (the caller skips, saying why).
 */
int tu_tel_full_tmpfs(const char *mnt, char *why, size_t why_size);

#endif
