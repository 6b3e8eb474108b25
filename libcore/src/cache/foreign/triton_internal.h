/*
 * triton_internal.h - what the Triton cache files share (internal).
 */
#ifndef VYRE_TRITON_INTERNAL_H
#define VYRE_TRITON_INTERNAL_H

#include <stddef.h>

#include "vyre/triton.h"

/* Reads the regular file `name` of directory dirfd, never through a
 * symbolic link (O_NOFOLLOW) and never more than max bytes: *out is a new
 * NUL-terminated buffer (the caller frees it), *len its length. 0, or
 * VYRE_EINVAL (a symlink or not a regular file), VYRE_ETOOBIG (over max),
 * VYRE_ENOENT, VYRE_EIO, VYRE_ENOMEM, with the reason in why[why_size]. */
int vyre__triton_read_at(int dirfd, const char *name, size_t max, char **out, size_t *len,
                         char *why, size_t why_size);

/* 1 when n is one plain path component (not "", ".", ".." and no '/'). */
int vyre__triton_plain_name(const char *n);

/* Parses the manifest and the metadata of group g (files already listed)
 * from its directory gfd. Problems go into g's *_error fields. */
void vyre__triton_group_parse(int gfd, vyre_triton_group *g);

/* vyre_triton_cache_scan, and with with_trash 1 vyre's own trash
 * directories (".vyre-trash.*", foreign_internal.h) kept as groups: for
 * the pruners, which finish a trash a stopped pruner left (triton_prune.c,
 * and inductor_scan.c for its nested Triton cache). Every other reader
 * gets Triton's entries only: a trash is a group half removed. The
 * directory is opened once and held in out (vyre_triton_cache_scan). */
int vyre__triton_scan(const char *dir, int with_trash, vyre_triton_cache *out, vyre_error *err);

/* vyre__triton_scan of the directory `name` of at (one component, opened
 * O_NOFOLLOW relative to at: no path opened), for a Triton cache inside
 * another cache whose root the caller holds and checked (Inductor's
 * triton/<device>/). dir names it in messages and is the base of
 * out->abs_dir (give it absolute). Its owner and mode are checked into
 * out->unsafe as the scan does. */
int vyre__triton_scan_at(int at, const char *name, const char *dir, int with_trash,
                         vyre_triton_cache *out, vyre_error *err);

/* verify's check of group i of c (managed.h): its problems into v. */
typedef struct vyre__managed_verdict vyre__managed_verdict;
void vyre__triton_check_group(const vyre_triton_cache *c, size_t i, vyre__managed_verdict *v);

#endif /* VYRE_TRITON_INTERNAL_H */
