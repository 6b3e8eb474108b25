/*
 * cache_internal.h - test-only entry points of the cache facade (internal;
 * not exported from the shared library, which hides every vyre__ symbol).
 *
 * The kill-at-every-step tests (tests/unit/test_cache_reliability.c) need
 * to stop a removal at each point where the files or the index change, to
 * show that a process killed there leaves no index row without its file.
 * Nothing else sets the hook; unset, it costs one load per step.
 */
#ifndef VYRE_CACHE_INTERNAL_H
#define VYRE_CACHE_INTERNAL_H

/* Called by prune, clear and cleanup just before each step that changes
 * the cache: step is "rename" (a victim moved into tmp/), "commit" (the
 * index rows deleted), "unlink" (a file removed). The hook may kill the
 * process. Process-wide; NULL removes it. Not thread-safe: set it before
 * the cache is used. */
typedef void (*vyre__cache_step_fn)(const char *step, void *ctx);
void vyre__cache_set_step_hook(vyre__cache_step_fn fn, void *ctx);

#endif /* VYRE_CACHE_INTERNAL_H */
