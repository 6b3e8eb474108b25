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

/* Reads the whole regular file at path into a new NUL-terminated buffer:
 * *out (the caller frees it) and *len (bytes, without the NUL). The file is
 * opened with O_CLOEXEC, and without blocking: anything but a regular file
 * (a FIFO, a device, a directory) is VYRE_EINVAL naming its type. A file of more than max bytes is
 * VYRE_ETOOBIG; otherwise a failed open maps through errno (VYRE_ENOENT for a missing file), a
 * failed read is VYRE_EIO and no memory VYRE_ENOMEM. On failure err says what failed and errno is
 * left as the failing call set it, so a caller may word its own message. */
int vyre__read_file(const char *path, size_t max, char **out, size_t *len, vyre_error *err);

/*
 * Descriptor-relative helpers for walking a directory tree that others may
 * tamper with (the cache). Nothing below the starting descriptor is ever
 * reached through a symbolic link: a link where a directory or a file is
 * expected fails the call (errno ELOOP or ENOTDIR), it is never followed.
 */

/* Opens relpath ("a/b/c", no "..", not absolute) below dirfd with openat
 * flags (O_CLOEXEC and O_NOFOLLOW are added) and mode, following no
 * symbolic link at any component: openat2 with RESOLVE_NO_SYMLINKS and
 * RESOLVE_BENEATH where the kernel has it, else one component at a time
 * with O_DIRECTORY|O_NOFOLLOW. With O_PATH a trailing symlink opens the
 * link itself. Returns the descriptor, or -1 with errno set. */
int vyre__open_beneath(int dirfd, const char *relpath, int flags, mode_t mode);

/* Opens the directory `name` (one component) of dirfd, never through a
 * symbolic link (O_DIRECTORY|O_NOFOLLOW). -1 with errno: ENOTDIR or ELOOP
 * when name is a symlink or not a directory. */
int vyre__open_dir_at(int dirfd, const char *name);

/*
 * Modes for a cache shared by a group (vyre_cache_open_opts.umask): umask
 * -1 means "not set", and the helpers leave the private modes the callers
 * pass (0600, 0700) alone. Otherwise the mode is applied with fchmod on the
 * new entry, never through umask(2): the process umask is global and not
 * thread-safe to change from a library.
 */

/* mkdirat(dirfd, name, 0700); when umask >= 0 and the directory was
 * created, it is then opened (never through a link) and given
 * 0777 & ~umask, keeping the setgid bit it inherited. 0, or -1 with errno
 * (EEXIST when it was there already, as mkdirat). */
int vyre__mkdirat_umask(int dirfd, const char *name, int umask);

/* fchmod(fd, 0666 & ~umask) when umask >= 0 and the file is ours and has
 * another mode; nothing otherwise. 0, or -1 with errno. */
int vyre__fchmod_umask(int fd, int umask);

/* Walks path (absolute, or relative to the working directory) one
 * component at a time, following symbolic links as the kernel would, and
 * checks that every link on the way belongs to uid or to root: whoever
 * owns a link decides where the path leads. 0: every link is; 1: bad
 * (may be NULL) receives the first link of another owner, as walked, and
 * *owner (may be NULL) its uid; -1 with errno when a component cannot be
 * looked at. A missing component ends the walk (0): nothing is followed
 * past it. */
int vyre__path_check_links(const char *path, uid_t uid, char *bad, size_t bad_size, uid_t *owner);

/* A word for a file type in messages: "symlink", "FIFO", "socket",
 * "device", "directory", "regular file" (static storage). */
const char *vyre__file_type_name(mode_t mode);

/* 1 when gid is this process's effective group or one of its
 * supplementary groups (a cache shared by a group is accepted only for its
 * members). */
int vyre__in_group(gid_t gid);

#endif /* VYRE_FSUTIL_H */
