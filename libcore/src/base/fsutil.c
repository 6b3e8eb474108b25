/*
 * fsutil.c - filesystem helpers shared inside libcore: recursive mkdir,
 * bounded path joins, XDG base-directory resolution.
 */
#include "base/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/internal.h"

int vyre__path_join(char *out, size_t size, const char *a, const char *b, vyre_error *err)
{
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    if (la + (size_t)slash + lb + 1 > size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path",
                          "path too long: '%s' + '%s'", a, b);
    memcpy(out, a, la);
    if (slash)
        out[la] = '/';
    memcpy(out + la + (size_t)slash, b, lb + 1);
    return VYRE_OK;
}

int vyre__mkdirs(const char *path, mode_t mode, vyre_error *err)
{
    char buf[4096];
    if (vyre__strlcpy(buf, path, sizeof buf) >= sizeof buf)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path", "path too long: '%s'",
                          path);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    for (char *p = buf + 1;; p++) {
        int last = *p == '\0';
        if (*p == '/' || last) {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST) {
                int e = errno;
                return vyre__fail(err, vyre__errno_code(e),
                                  "check the permissions of the parent directory, or choose "
                                  "another location",
                                  "cannot create directory '%s': %s", buf, strerror(e));
            }
            *p = saved;
            if (last)
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return vyre__fail(err, VYRE_EEXIST, "remove or rename the file that is in the way",
                          "'%s' exists and is not a directory", path);
    return VYRE_OK;
}

int vyre__xdg_path(const char *xdg_var, const char *home_rel, const char *suffix, char *out,
                   size_t size, vyre_error *err)
{
    char base[4096];
    const char *xdg = getenv(xdg_var);
    const char *home = getenv("HOME");
    /* The XDG spec says relative or empty values are to be ignored. */
    if (xdg && xdg[0] == '/') {
        if (vyre__strlcpy(base, xdg, sizeof base) >= sizeof base)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path", "%s is too long", xdg_var);
    } else if (home && home[0] == '/') {
        int rc = vyre__path_join(base, sizeof base, home, home_rel, err);
        if (rc)
            return rc;
    } else {
        char hint[256];
        snprintf(hint, sizeof hint, "set %s or HOME to an absolute directory", xdg_var);
        return vyre__fail(err, VYRE_EENV, hint,
                          "cannot choose a default location: neither %s nor HOME is set to an "
                          "absolute path",
                          xdg_var);
    }
    return vyre__path_join(out, size, base, suffix, err);
}
