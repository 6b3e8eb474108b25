/*
 * toolkit.c - finding and opening CUDA toolkit libraries (NVRTC, nvJitLink)
 * at run time, and the small helpers their loaders share.
 *
 * Guarantees: nothing here links a toolkit library; a missing library is an
 * error code with a hint, never a crash; an operator's explicit choice
 * ($VYRE_*_LIBRARY) is never silently replaced by another file.
 */
#include "cuda/toolkit_internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"

#define TOOLKIT_DEFAULT_LIB64 "/usr/local/cuda/lib64"
#define TRIED_MAX             384
#define DLERR_MAX             256

/* Appends "'name'" to the list of what was tried (comma-separated, cut
 * with "..." when it no longer fits). */
static void tried_add(char *tried, size_t size, const char *name)
{
    size_t used = strlen(tried);
    if (used + 4 >= size)
        return;
    int n = snprintf(tried + used, size - used, "%s'%s'", used ? ", " : "", name);
    if (n < 0 || (size_t)n >= size - used)
        snprintf(tried + size - 4, 4, "...");
}

/* Keeps the most useful dlerror(): one that says why an existing file did
 * not load beats "No such file or directory". */
static void dlerr_keep(char *keep, size_t size)
{
    const char *why = dlerror();
    if (!why)
        return;
    int missing = strstr(why, "No such file") != NULL;
    if (!keep[0] || !missing)
        vyre__strlcpy(keep, why, size);
}

static void *try_open(const char *name, char *tried, char *dlerr)
{
    tried_add(tried, TRIED_MAX, name);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        dlerr_keep(dlerr, DLERR_MAX);
    return h;
}

int vyre__toolkit_dlopen(const vyre__toolkit_lib *lib, void **handle, char *path, size_t size,
                         vyre_error *err)
{
    *handle = NULL;
    if (size)
        path[0] = '\0';
    const char *env = getenv(lib->env);
    if (env && !*env)
        return vyre__fail(err, VYRE_EENV, lib->hint, "%s is set but empty", lib->env);
    if (env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            return vyre__fail(err, lib->missing_code, lib->hint,
                              "%s not available: cannot load '%s' (from %s): %s", lib->what, env,
                              lib->env, why ? why : "unknown reason");
        }
        vyre__strlcpy(path, env, size);
        *handle = h;
        return VYRE_OK;
    }

    char tried[TRIED_MAX] = "";
    char dlerr[DLERR_MAX] = "";
    /* 1. The dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache, RUNPATH). */
    for (const char *const *s = lib->sonames; *s; s++) {
        void *h = try_open(*s, tried, dlerr);
        if (h) {
            vyre__strlcpy(path, *s, size);
            *handle = h;
            return VYRE_OK;
        }
    }
    /* 2. The toolkit's standard places: many installs never run ldconfig
     * for /usr/local/cuda, and containers often set only CUDA_HOME. An
     * empty CUDA_HOME is not ours to reject: it is treated as unset. */
    const char *home = getenv("CUDA_HOME");
    char dirs[2][VYRE_ERROR_MESSAGE_MAX] = {{0}};
    size_t ndirs = 0;
    if (home && *home) {
        int n = snprintf(dirs[ndirs], sizeof dirs[0], "%s/lib64", home);
        if (n > 0 && (size_t)n < sizeof dirs[0])
            ndirs++;
    }
    if (!ndirs || strcmp(dirs[0], TOOLKIT_DEFAULT_LIB64) != 0)
        vyre__strlcpy(dirs[ndirs++], TOOLKIT_DEFAULT_LIB64, sizeof dirs[0]);
    for (size_t d = 0; d < ndirs; d++) {
        for (const char *const *s = lib->sonames; *s; s++) {
            char full[VYRE_ERROR_MESSAGE_MAX + 64];
            int n = snprintf(full, sizeof full, "%s/%s", dirs[d], *s);
            if (n < 0 || (size_t)n >= sizeof full)
                continue;
            void *h = try_open(full, tried, dlerr);
            if (h) {
                vyre__strlcpy(path, full, size);
                *handle = h;
                return VYRE_OK;
            }
        }
    }
    return vyre__fail(err, lib->missing_code, lib->hint, "%s not available: tried %s: %s",
                      lib->what, tried, dlerr[0] ? dlerr : "not found");
}

void *vyre__toolkit_dlsym(const vyre__toolkit_lib *lib, void *handle, const char *path,
                          const char *symbol, vyre_error *err)
{
    dlerror();
    void *p = dlsym(handle, symbol);
    if (!p)
        vyre__fail(err, lib->missing_code, lib->hint,
                   "%s not available: '%s' has no symbol '%s' (an older or foreign library)",
                   lib->what, path, symbol);
    return p;
}

int vyre__toolkit_arch_number_valid(const char *s)
{
    size_t nd = 0;
    while (s[nd] >= '0' && s[nd] <= '9')
        nd++;
    if (nd < 2 || nd > 3 || s[0] == '0')
        return 0;
    return !s[nd] || ((s[nd] == 'a' || s[nd] == 'f') && !s[nd + 1]);
}

/* Case-insensitive search for word in p[0..n). */
static int line_has(const char *p, size_t n, const char *word)
{
    const size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)p[i + k]) == word[k])
            k++;
        if (k == w)
            return 1;
    }
    return 0;
}

/* NVRTC writes "kernel.cu(3): error: ..."; ptxas inside nvJitLink writes
 * "ptxas application ptx input, line 50; error   : ..." or, for a target
 * it cannot build, only "ptxas fatal   : ...". */
static int line_has_error(const char *p, size_t n)
{
    return line_has(p, n, "error") || line_has(p, n, "fatal");
}

static int line_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)p[i]))
            return 0;
    return 1;
}

const char *vyre__toolkit_first_error(const char *log, char *buf, size_t size)
{
    if (!log || !size)
        return NULL;
    const char *first_err = NULL, *first_any = NULL;
    size_t first_err_len = 0, first_any_len = 0;
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && p[n - 1] == '\r')
            n--;
        if (line_has_error(p, n)) {
            first_err = p;
            first_err_len = n;
            break;
        } else if (!first_any && !line_blank(p, n)) {
            first_any = p;
            first_any_len = n;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    const char *line = first_err ? first_err : first_any;
    size_t len = first_err ? first_err_len : first_any_len;
    if (!line)
        return NULL;
    if (len > size - 1)
        len = size - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return buf;
}
