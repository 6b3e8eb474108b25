/*
 * foreign_internal.h - removing parts of another tool's cache (internal).
 *
 * Triton's and TorchInductor's caches are read by running programs that
 * know nothing of vyre. A group (a directory) is removed in two steps: one
 * rename to a vyre-owned trash name in the same directory, so a reader sees
 * the whole group or nothing, then the renamed tree is removed. A trash
 * directory left by a process that died between the steps carries the
 * mark, so the next prune finishes it: vyre removes only what it renamed.
 */
#ifndef VYRE_FOREIGN_INTERNAL_H
#define VYRE_FOREIGN_INTERNAL_H

#include <stddef.h>

#include "vyre/error.h"

/* Names vyre gives what it renamed for removal: ".vyre-trash.<name>.<pid>.<n>".
 * Neither Triton nor Inductor opens a name starting with '.'. */
#define VYRE__FOREIGN_TRASH_PREFIX ".vyre-trash."

/* The deepest tree vyre__foreign_remove_tree walks (Inductor's deepest
 * entries are three levels down: fxgraph/<2>/<key>/<file>). */
#define VYRE__FOREIGN_MAX_DEPTH 8

/* 1 when name is a trash name vyre made. */
int vyre__foreign_is_trash(const char *name);

/*
 * Renames directory `name` (one plain component of dirfd, not a link) to a
 * fresh trash name in dirfd (written to trash[trash_size]), one rename.
 * Returns 0, VYRE_EINVAL (not a plain name, a link or not a directory),
 * VYRE_ENOENT (gone already: another pruner won), VYRE_EIO.
 */
int vyre__foreign_trash_rename(int dirfd, const char *name, char *trash, size_t trash_size,
                               vyre_error *err);

/*
 * Removes the tree `name` of dirfd: files, links (the link itself, never
 * what it names) and directories down to VYRE__FOREIGN_MAX_DEPTH, every
 * directory opened O_NOFOLLOW below dirfd. *bytes (may be NULL) gets the
 * bytes on disk (st_blocks * 512) of what was removed. Returns 0, VYRE_ETOOBIG (deeper than the
 * bound: what is below stays), VYRE_EIO (the first failure; removal goes on).
 */
int vyre__foreign_remove_tree(int dirfd, const char *name, unsigned long long *bytes,
                              vyre_error *err);

/*
 * vyre__foreign_trash_rename then vyre__foreign_remove_tree: the way a
 * pruner removes a group. *bytes as above. Returns their codes.
 */
int vyre__foreign_remove_group(int dirfd, const char *name, unsigned long long *bytes,
                               vyre_error *err);

/*
 * The same for one file (foreign_trash_file.c): renames the regular file
 * `name` of dirfd (not a link, not a directory) to a fresh trash name, then
 * unlinks that, so a reader opens the whole file or finds none. *bytes (may
 * be NULL) gets its size. Returns 0, VYRE_EINVAL (not a plain name, or not
 * a regular file), VYRE_ENOENT (gone already), VYRE_EIO.
 */
int vyre__foreign_remove_file(int dirfd, const char *name, unsigned long long *bytes,
                              vyre_error *err);

/*
 * Opens another tool's cache directory `dir` (`what` names it in messages:
 * "Triton cache") for every later step to work relative to (foreign_root.c):
 * O_DIRECTORY, then vyre__foreign_check_root on the descriptor; a symlink
 * on the way owned by another user is refused. Returns the descriptor (the
 * caller closes it), or a negative VYRE_E* code: VYRE_ENOENT, VYRE_EINVAL,
 * VYRE_EUNSAFE (another user's, or writable by others), VYRE_EIO.
 */
int vyre__foreign_open_root(const char *dir, const char *what, vyre_error *err);

/* The ownership and mode check of vyre__foreign_open_root on an open
 * descriptor fd of `dir`: owned by the user or root, not writable by others,
 * group-writable only when setgid and of a group the user is in. 0 or
 * VYRE_EUNSAFE/VYRE_EINVAL/VYRE_EIO with a hint. */
int vyre__foreign_check_root(int fd, const char *dir, const char *what, vyre_error *err);

#endif /* VYRE_FOREIGN_INTERNAL_H */
