/*
 * telemetry_dir.c - the telemetry directory (see telemetry_internal.h):
 * where it is (VYRE_TELEMETRY_DIR through secure_getenv, else
 * /dev/shm/vyre-<euid>), whether it may hold our pages, and the pages it
 * holds (vyre__telemetry_list).
 *
 * Guarantees: a directory is used only when it is ours and writable by
 * nobody else, or root's and sticky (as /dev/shm); its last component is
 * never followed through a symlink; a missing directory lists as empty (no
 * process has published yet). Only canonical page names are listed
 * ("<pid>.vtel"), sorted by pid.
 */
#include "vyre/telemetry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "trace/telemetry_internal.h"

/* ---- directory ------------------------------------------------------- */

/* VYRE_TELEMETRY_DIR through secure_getenv: a set-user/group-ID program
 * never writes its page where its caller's environment says. (VYRE_TELEMETRY
 * stays getenv: it can only turn publishing off.) */
int vyre__tel_resolve_dir(char *out, size_t size, int *is_default, vyre_error *err)
{
    const char *env = secure_getenv("VYRE_TELEMETRY_DIR");
    if (env) {
        *is_default = 0;
        if (!*env)
            return vyre__fail(err, VYRE_EENV,
                              "unset VYRE_TELEMETRY_DIR to use /dev/shm/vyre-<uid>, or set it to "
                              "an absolute directory",
                              "VYRE_TELEMETRY_DIR is set but empty");
        if (env[0] != '/')
            return vyre__fail(err, VYRE_EENV, "set VYRE_TELEMETRY_DIR to an absolute path",
                              "VYRE_TELEMETRY_DIR '%s' is not an absolute path", env);
        if (vyre__strlcpy(out, env, size) >= size)
            return vyre__fail(err, VYRE_ETOOBIG, "use a shorter VYRE_TELEMETRY_DIR",
                              "VYRE_TELEMETRY_DIR is too long (%zu bytes)", strlen(env));
        return VYRE_OK;
    }
    *is_default = 1;
    int n = snprintf(out, size, "/dev/shm/vyre-%u", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= size)
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "telemetry directory path does not fit");
    return VYRE_OK;
}

int vyre_telemetry_dir(char *out, size_t size, vyre_error *err)
{
    if (!out || size == 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_telemetry_dir: NULL or empty buffer");
    int is_default;
    return vyre__tel_resolve_dir(out, size, &is_default, err);
}

/* Whether a directory with this owner and mode may hold our pages: ours and
 * writable by nobody else, or root's with the sticky bit (as /dev/shm and
 * /tmp), where others may add files but not remove or rename ours. Every
 * page in it is still checked on its own (owner, type, mode). */
static int dir_trusted(const struct stat *st)
{
    if (st->st_uid == geteuid())
        return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
    return st->st_uid == 0 && (st->st_mode & S_ISVTX);
}

/* Opens dir (creating it 0700 when `create`) and checks it is a directory we
 * may trust (dir_trusted). The last component is never followed when it is
 * a symlink: whoever could plant the link could point it at a directory of
 * theirs. VYRE_ENOENT when missing. */
int vyre__tel_open_dir(const char *dir, int is_default, int create, int *dfd, vyre_error *err)
{
    *dfd = -1;
    if (create) {
        if (is_default) {
            if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
                int e = errno;
                return vyre__fail(err, vyre__errno_code(e),
                                  "set VYRE_TELEMETRY_DIR to a writable directory, or "
                                  "VYRE_TELEMETRY=0 to turn telemetry off",
                                  "cannot create telemetry directory '%s': %s", dir, strerror(e));
            }
        } else {
            int rc = vyre__mkdirs(dir, 0700, err);
            if (rc)
                return rc;
        }
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat lst;
        if (e == ELOOP || (e == ENOTDIR && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)))
            return vyre__fail(err, VYRE_EUNSAFE,
                              is_default ? "remove the symlink; vyre creates the directory itself"
                                         : "remove the symlink, or set VYRE_TELEMETRY_DIR to the "
                                           "real directory",
                              "telemetry directory '%s' is a symlink", dir);
        if (e == ENOTDIR)
            return vyre__fail(err, VYRE_EEXIST,
                              "remove the file or set VYRE_TELEMETRY_DIR to a directory",
                              "telemetry directory '%s' is not a directory", dir);
        return vyre__fail(err, vyre__errno_code(e), "check VYRE_TELEMETRY_DIR",
                          "cannot open telemetry directory '%s': %s", dir, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot stat '%s': %s", dir, strerror(e));
    }
    if (dir_trusted(&st)) {
        *dfd = fd;
        return VYRE_OK;
    }
    close(fd);
    if (st.st_uid != geteuid()) {
        /* Someone else made it, perhaps to read or feed our telemetry: it is
         * not ours to chmod or to empty. */
        return vyre__fail(err, VYRE_EUNSAFE,
                          "it is not yours: remove it as its owner or as root (someone may "
                          "have planted it), or set VYRE_TELEMETRY_DIR to a directory of your "
                          "own",
                          "telemetry directory '%s' is owned by uid %u, not by you (uid %u)", dir,
                          (unsigned)st.st_uid, (unsigned)geteuid());
    }
    char hint[VYRE_ERROR_HINT_MAX];
    if (snprintf(hint, sizeof hint, "run 'chmod go-w %s' (vyre creates it 0700)", dir) < 0)
        hint[0] = '\0';
    return vyre__fail(err, VYRE_EUNSAFE, hint,
                      "telemetry directory '%s' is writable by group or others (mode %04o)", dir,
                      (unsigned)(st.st_mode & 07777));
}

/* ---- the pages in it ------------------------------------------------- */

/* "<pid>.vtel" (tmp 0) or "<pid>.vtel.tmp" (tmp 1), pid canonical decimal. */
int vyre__tel_parse_name(const char *name, int32_t *pid, int *tmp)
{
    if (name[0] < '1' || name[0] > '9')
        return 0;
    char *end;
    errno = 0;
    long v = strtol(name, &end, 10);
    if (errno || v <= 0 || v > INT32_MAX)
        return 0;
    if (strcmp(end, ".vtel") == 0)
        *tmp = 0;
    else if (strcmp(end, ".vtel.tmp") == 0)
        *tmp = 1;
    else
        return 0;
    *pid = (int32_t)v;
    return 1;
}

static int by_pid(const void *a, const void *b)
{
    int32_t x = ((const vyre_telemetry_entry *)a)->pid;
    int32_t y = ((const vyre_telemetry_entry *)b)->pid;
    return x < y ? -1 : x > y;
}

/* Opens dir (NULL: the default) for reading; *dfd -1 when it is missing. */
int vyre__tel_open_reader_dir(const char *dir, char *buf, size_t size, int *dfd, vyre_error *err)
{
    int is_default = 0, rc;
    if (!dir) {
        if ((rc = vyre__tel_resolve_dir(buf, size, &is_default, err)))
            return rc;
    } else if (vyre__strlcpy(buf, dir, size) >= size) {
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter directory path",
                          "telemetry directory path too long: '%s'", dir);
    }
    vyre_error e;
    rc = vyre__tel_open_dir(buf, is_default, 0, dfd, &e);
    if (rc == VYRE_ENOENT)
        return VYRE_OK; /* no process has published yet */
    if (rc && err)
        *err = e;
    return rc;
}

int vyre__tel_opendir_reader(const char *dir, char *buf, size_t size, DIR **d, vyre_error *err)
{
    *d = NULL;
    int dfd = -1;
    int rc = vyre__tel_open_reader_dir(dir, buf, size, &dfd, err);
    if (rc || dfd < 0)
        return rc;
    if (!(*d = fdopendir(dfd))) {
        int e = errno;
        close(dfd);
        return vyre__fail(err, vyre__errno_code(e), NULL, "cannot read directory '%s': %s", buf,
                          strerror(e));
    }
    return VYRE_OK;
}

int vyre__telemetry_list(const char *dir, vyre_telemetry_entry **out, size_t *n, vyre_error *err)
{
    if (!out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__telemetry_list: NULL out or n");
    *out = NULL;
    *n = 0;
    char path[VYRE_TELEMETRY_PATH_MAX];
    DIR *d = NULL;
    int rc = vyre__tel_opendir_reader(dir, path, sizeof path, &d, err);
    if (rc || !d)
        return rc;
    vyre_telemetry_entry *v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int32_t pid;
        int tmp;
        if (!vyre__tel_parse_name(de->d_name, &pid, &tmp) || tmp)
            continue;
        if (vyre__grow(&v, &cap, len + 1, sizeof *v, 16)) {
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory listing '%s'", path);
            break;
        }
        v[len].pid = pid;
        if ((rc = vyre__path_join(v[len].path, sizeof v[len].path, path, de->d_name, err)))
            break;
        len++;
    }
    closedir(d);
    if (rc) {
        free(v);
        return rc;
    }
    if (len)
        qsort(v, len, sizeof *v, by_pid);
    *out = v;
    *n = len;
    return VYRE_OK;
}
