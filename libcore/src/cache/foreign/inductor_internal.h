/*
 * inductor_internal.h - what the TorchInductor cache files share (internal).
 */
#ifndef VYRE_INDUCTOR_INTERNAL_H
#define VYRE_INDUCTOR_INTERNAL_H

#include "vyre/inductor.h"

/*
 * Opens the directory that holds entry `path` (relative to the cache
 * directory open as root, '/'-separated plain names), each directory below
 * root opened O_NOFOLLOW; no path is resolved from outside root. *last
 * points at the entry's own name inside path. Returns the descriptor (the
 * caller closes it), or a negative VYRE_E* code with err set: VYRE_EINVAL
 * (not plain names, or through a link), VYRE_ENOENT, VYRE_EIO.
 */
int vyre__inductor_open_parent(int root, const char *path, const char **last, vyre_error *err);

/* The names Inductor gives (inductor_names.c). bucket is the two-letter
 * folder the name is in. 1 when name is one Inductor makes, else 0. */
int vyre__inductor_is_kernel_name(const char *bucket, const char *name);
int vyre__inductor_is_autotune_name(const char *bucket, const char *name);
int vyre__inductor_is_fxgraph_key(const char *bucket, const char *name);
int vyre__inductor_is_aot_key(const char *name);

/* 1 when name ends as a kernel or an autotune result does (".py",
 * ".best_config"): in a two-letter folder, such a name Inductor would not
 * make is foreign. */
int vyre__inductor_looks_like_entry(const char *name);

/*
 * Moves entry `path` (relative, as in vyre_inductor_entry) of the scanned
 * cache c to VYRE_INDUCTOR_QUARANTINE/<path> in it (folders created 0700),
 * one rename relative to c->fd: a reader sees the whole entry or nothing.
 * Never deletes; a name already there gets a ".N" suffix. c must have been
 * scanned with VYRE_INDUCTOR_SCAN_WRITE. Returns 0, VYRE_EINVAL (not a
 * path of plain names, one through a link, or c scanned read-only),
 * VYRE_ENOENT, or VYRE_EIO.
 */
int vyre__inductor_quarantine(const vyre_inductor_cache *c, const char *path, vyre_error *err);

#endif /* VYRE_INDUCTOR_INTERNAL_H */
