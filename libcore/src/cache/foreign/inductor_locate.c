/*
 * inductor_locate.c - where TorchInductor keeps its cache (vyre/inductor.h),
 * resolved as torch/_inductor/runtime/cache_dir_utils.py does.
 */
#include "vyre/inductor.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* Python's tempfile.gettempdir(): the first of $TMPDIR, $TEMP, $TMP that
 * names a directory, else /tmp (then /var/tmp, /usr/tmp). */
static const char *temp_dir(void)
{
    static const char *const vars[] = {"TMPDIR", "TEMP", "TMP"};
    static const char *const dirs[] = {"/tmp", "/var/tmp", "/usr/tmp"};
    struct stat st;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && stat(v, &st) == 0 && S_ISDIR(st.st_mode))
            return v;
    }
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
            return dirs[i];
    return "/tmp";
}

/* getpass.getuser(): $LOGNAME, $USER, $LNAME, $USERNAME, else the passwd
 * entry of the real user. */
static const char *user_name(void)
{
    static const char *const vars[] = {"LOGNAME", "USER", "LNAME", "USERNAME"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return v;
    }
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_name && *pw->pw_name ? pw->pw_name : NULL;
}

int vyre_inductor_cache_dir(char *out, size_t size, const char **source, vyre_error *err)
{
    const char *env = getenv("TORCHINDUCTOR_CACHE_DIR");
    int n;
    if (env && *env) {
        n = snprintf(out, size, "%s", env);
        if (source)
            *source = "TORCHINDUCTOR_CACHE_DIR";
    } else {
        const char *user = user_name();
        if (!user)
            return vyre__fail(err, VYRE_EENV, "set TORCHINDUCTOR_CACHE_DIR, or name the directory",
                              "cannot locate TorchInductor's cache: no user name (LOGNAME, USER or "
                              "a passwd entry)");
        n = snprintf(out, size, "%s/torchinductor_%s", temp_dir(), user);
        if (n >= 0 && (size_t)n < size) /* sanitize as Inductor does */
            for (char *p = out + strlen(out) - strlen(user); *p; p++)
                if (strchr("\\/:*?\"<>|", *p))
                    *p = '_';
        if (source)
            *source = "default";
    }
    if (n < 0 || (size_t)n >= size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter path",
                          "TorchInductor cache path is too long");
    return 0;
}
