/*
 * fsutil.h - small filesystem helpers shared by libcore modules (internal).
 */
#ifndef VYRE_FSUTIL_H
#define VYRE_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "vyre/error.h"

/* mkdir -p: creates path and missing parents with `mode` (existing
 * directories are left as they are). A non-directory in the way is
 * VYRE_EEXIST; permission and read-only errors map through errno. */
int vyre__mkdirs(const char *path, mode_t mode, vyre_error *err);

/* Joins a and b with one '/' into out. VYRE_ETOOBIG when it does not fit. */
int vyre__path_join(char *out, size_t size, const char *a, const char *b, vyre_error *err);

/* Resolves an XDG base directory: $<xdg_var> when set to an absolute path,
 * else $HOME/<home_rel>; then appends `suffix`. No HOME and no usable
 * xdg_var is VYRE_EENV with a hint naming both variables (no /tmp fallback). */
int vyre__xdg_path(const char *xdg_var, const char *home_rel, const char *suffix, char *out,
                   size_t size, vyre_error *err);

#endif /* VYRE_FSUTIL_H */
