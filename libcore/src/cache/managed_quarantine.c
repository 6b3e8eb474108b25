/*
 * managed_quarantine.c - moving an entry of a managed cache into its
 * quarantine folder under a name not taken there (managed.h), one rename
 * relative to descriptors the caller opened without following links.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/internal.h"
#include "cache/managed.h"

int vyre__managed_quarantine_move(int from, const char *name, int q, const char *shown,
                                  const char *qname, vyre_error *err)
{
    char fresh[1024];
    snprintf(fresh, sizeof fresh, "%s", name);
    /* renameat2(RENAME_NOREPLACE) is not everywhere: look first, then
     * rename; only vyre writes in the quarantine folder. */
    struct stat st;
    for (int i = 1; !fstatat(q, fresh, &st, AT_SYMLINK_NOFOLLOW) && i < 1000; i++)
        /* bounded: a file name must fit NAME_MAX */
        snprintf(fresh, sizeof fresh, "%.700s.%d", name, i);
    if (renameat(from, name, q, fresh))
        return vyre__fail(err, errno == ENOENT ? VYRE_ENOENT : VYRE_EIO, NULL,
                          "cannot move '%s' into '%s': %s", shown, qname, strerror(errno));
    return 0;
}
