/*
 * inductor_internal.h - what the TorchInductor cache files share (internal).
 */
#ifndef VYRE_INDUCTOR_INTERNAL_H
#define VYRE_INDUCTOR_INTERNAL_H

#include "vyre/inductor.h"

/*
 * Opens the directory that holds entry `path` (relative to the cache at
 * dir, '/'-separated plain names), each directory below dir opened
 * O_NOFOLLOW. *last points at the entry's own name inside path. Returns the
 * descriptor (the caller closes it), or a negative VYRE_E* code with err
 * set: VYRE_EINVAL (not plain names, or through a link), VYRE_ENOENT,
 * VYRE_EIO.
 */
int vyre__inductor_open_parent(const char *dir, const char *path, const char **last,
                               vyre_error *err);

#endif /* VYRE_INDUCTOR_INTERNAL_H */
