/*
 * loader.c - see loader.h.
 *
 * The search keeps a list of what it tried for the message (cut with "..."
 * when it no longer fits) and the most useful dlerror(): one that says why
 * an existing file did not load beats "No such file or directory".
 */
#include "base/loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

#define TRIED_MAX 384
#define DLERR_MAX 256
#define ROOTS_MAX 2

typedef struct search {
    char tried[TRIED_MAX]; /* "'a', 'b', ..." */
    char dlerr[DLERR_MAX];
    unsigned ntried;
    char last[VYRE__LIB_PATH_MAX]; /* the one file tried, for the single-try message */
} search;

static void tried_add(search *s, const char *name)
{
    s->ntried++;
    vyre__strlcpy(s->last, name, sizeof s->last);
    size_t used = strlen(s->tried);
    if (used + 4 >= sizeof s->tried)
        return;
    int n = snprintf(s->tried + used, sizeof s->tried - used, "%s'%s'", used ? ", " : "", name);
    if (n < 0 || (size_t)n >= sizeof s->tried - used)
        snprintf(s->tried + sizeof s->tried - 4, 4, "...");
}

static void dlerr_keep(search *s)
{
    const char *why = dlerror();
    if (!why)
        return;
    int missing = strstr(why, "No such file") != NULL;
    if (!s->dlerr[0] || !missing)
        vyre__strlcpy(s->dlerr, why, sizeof s->dlerr);
}

static void *try_open(search *s, const char *name)
{
    tried_add(s, name);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        dlerr_keep(s);
    return h;
}

static int opened(void *h, const char *name, void **handle, char *path, size_t size)
{
    vyre__strlcpy(path, name, size);
    *handle = h;
    return VYRE_OK;
}

/* The install roots to search, in order: $root_env (when set and not
 * empty), then root_default unless it is the same. Library paths come from
 * the environment through secure_getenv: a set-user/group-ID program
 * (AT_SECURE) never loads a library its caller's environment names, as
 * ld.so ignores LD_LIBRARY_PATH there. */
static size_t roots_of(const vyre__lib_spec *spec, const char *roots[ROOTS_MAX])
{
    size_t n = 0;
    const char *home = spec->root_env ? secure_getenv(spec->root_env) : NULL;
    if (home && *home)
        roots[n++] = home;
    if (spec->root_default && (!n || strcmp(roots[0], spec->root_default) != 0))
        roots[n++] = spec->root_default;
    return n;
}

int vyre__lib_open(const vyre__lib_spec *spec, void **handle, char *path, size_t size,
                   vyre_error *err)
{
    *handle = NULL;
    if (size)
        path[0] = '\0';
    const char *env = spec->env ? secure_getenv(spec->env) : NULL;
    if (env && !*env)
        return vyre__fail(err, VYRE_EENV, spec->empty_hint ? spec->empty_hint : spec->hint,
                          "%s is set but empty", spec->env);
    if (env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return opened(h, env, handle, path, size);
        const char *why = dlerror();
        const char *hint = spec->env_hint ? spec->env_hint : spec->hint;
        if (spec->env_named)
            return vyre__fail(err, spec->missing_code, hint, "%s: cannot load '%s' (from %s): %s",
                              spec->fail, env, spec->env, why ? why : "unknown reason");
        return vyre__fail(err, spec->missing_code, hint, "%s: cannot load '%s': %s", spec->fail,
                          env, why ? why : "unknown reason");
    }

    if (spec->first) {
        const char *first = spec->first();
        if (first && *first) {
            void *h = dlopen(first, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return opened(h, first, handle, path, size);
            dlerror(); /* not ours to report: the search goes on */
        }
    }

    search s;
    memset(&s, 0, sizeof s);
    /* 1. The dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache, RUNPATH). */
    for (const char *const *nm = spec->names; *nm; nm++) {
        void *h = try_open(&s, *nm);
        if (h)
            return opened(h, *nm, handle, path, size);
    }
    /* 2. The install roots: many installs never run ldconfig for them, and
     * containers often set only the root variable. */
    const char *roots[ROOTS_MAX];
    size_t nroots = spec->subdirs ? roots_of(spec, roots) : 0;
    for (const char *const *sub = spec->subdirs; sub && *sub; sub++) {
        for (size_t r = 0; r < nroots; r++) {
            for (const char *const *nm = spec->names; *nm; nm++) {
                char full[VYRE_ERROR_MESSAGE_MAX + 64];
                int n = snprintf(full, sizeof full, "%s/%s/%s", roots[r], *sub, *nm);
                if (n < 0 || (size_t)n >= sizeof full)
                    continue;
                void *h = try_open(&s, full);
                if (h)
                    return opened(h, full, handle, path, size);
            }
        }
    }
    if (s.ntried == 1)
        return vyre__fail(err, spec->missing_code, spec->hint, "%s: cannot load '%s': %s",
                          spec->fail, s.last, s.dlerr[0] ? s.dlerr : "unknown reason");
    return vyre__fail(err, spec->missing_code, spec->hint, "%s: tried %s: %s", spec->fail, s.tried,
                      s.dlerr[0] ? s.dlerr : "not found");
}

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "function pointers are stored through dlsym's void *");

int vyre__lib_resolve(const vyre__lib_spec *spec, void *handle, const char *path,
                      const vyre__lib_sym *syms, size_t n, void *table, vyre_error *err)
{
    for (size_t i = 0; i < n; i++) {
        dlerror();
        void *p = dlsym(handle, syms[i].name);
        if (!p && !syms[i].optional)
            return vyre__fail(err, spec->missing_code, spec->sym_hint ? spec->sym_hint : spec->hint,
                              "%s'%s' has no %s%s%s", spec->sym_lead ? spec->sym_lead : "", path,
                              spec->sym_noun ? spec->sym_noun : "", syms[i].name,
                              spec->sym_tail ? spec->sym_tail : "");
        /* POSIX guarantees a dlsym() result converts to a function
         * pointer; memcpy stores it without an aliasing cast. */
        memcpy((char *)table + syms[i].offset, &p, sizeof p);
    }
    return VYRE_OK;
}

static int load(vyre__lib_once *lib, vyre_error *err)
{
    void *h = NULL;
    int rc = vyre__lib_open(lib->spec, &h, lib->path, sizeof lib->path, err);
    if (rc)
        return rc;
    rc = vyre__lib_resolve(lib->spec, h, lib->path, lib->syms, lib->nsyms, lib->table, err);
    if (rc == VYRE_OK && lib->ready)
        rc = lib->ready(h, lib->path, err);
    if (rc == VYRE_OK)
        lib->handle = h; /* never dlclose()d: see loader.h */
    return rc;
}

int vyre__lib_load(vyre__lib_once *lib, vyre_error *err)
{
    if (!atomic_load_explicit(&lib->done, memory_order_acquire)) {
        pthread_mutex_lock(&lib->mu);
        if (!atomic_load_explicit(&lib->done, memory_order_relaxed)) {
            vyre_error_clear(&lib->error);
            lib->status = load(lib, &lib->error);
            if (lib->status) {
                memset(lib->table, 0, lib->table_size);
                lib->path[0] = '\0';
            }
            atomic_store_explicit(&lib->done, 1, memory_order_release);
        }
        pthread_mutex_unlock(&lib->mu);
    }
    if (lib->status && err)
        *err = lib->error;
    return lib->status;
}
