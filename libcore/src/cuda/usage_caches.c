/*
 * usage_caches.c - where the four caches of compiled GPU code are, where
 * each location came from and what limits each (see vyre/usage.h).
 *
 * It sits in cuda/ because it needs the JIT cache's contract (jitcache.c)
 * as well as the cache layer below it (the pipeline cache's root and
 * configuration, Triton's and Inductor's locations): the layers run
 * base < cache < cuda, never back. Measuring is cache/cache_usage.c.
 */
#include "vyre/usage.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/config_internal.h"
#include "vyre/cache.h"
#include "vyre/inductor.h"
#include "vyre/jitcache.h"
#include "vyre/triton.h"

static const char *const g_names[VYRE_USAGE_N_CACHES] = {"vyre", "cuda_jit", "triton", "inductor"};

/* The variable vyre__xdg_path took a default under: XDG_CACHE_HOME when it
 * is absolute (the spec ignores a relative one), else HOME. */
static const char *xdg_from(void)
{
    const char *x = secure_getenv("XDG_CACHE_HOME");
    return x && x[0] == '/' ? "XDG_CACHE_HOME" : "HOME";
}

static void set_from(vyre_usage_cache *c, const char *fmt, ...) VYRE_PRINTF(2, 3);
static void set_from(vyre_usage_cache *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->limit_from, sizeof c->limit_from, fmt, ap);
    va_end(ap);
}

static void locate_vyre(const char *root, vyre_usage_cache *c)
{
    if (root && *root) {
        c->located = vyre__strlcpy(c->path, root, sizeof c->path) < sizeof c->path;
        c->path_from = "caller";
    } else {
        c->located = vyre_cache_default_root(c->path, sizeof c->path, &c->error) == 0;
        const char *env = secure_getenv("VYRE_PTX_CACHE_DIR");
        c->path_from = env ? "VYRE_PTX_CACHE_DIR" : xdg_from();
    }
    if (!c->located) {
        c->path[0] = '\0';
        set_from(c, "unknown: the cache has no location");
    }
}

static void locate_jit(vyre_usage_cache *c)
{
    vyre_jitcache_info *info = calloc(1, sizeof *info);
    if (!info) {
        c->located = 0;
        vyre__fail(&c->error, VYRE_ENOMEM, NULL, "out of memory");
        set_from(c, "unknown: out of memory");
        return;
    }
    if (vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, info, &c->error) != 0) {
        set_from(c, "unknown: %s", c->error.message);
        free(info);
        return;
    }
    c->located = vyre__strlcpy(c->path, info->path, sizeof c->path) < sizeof c->path;
    c->path_from = info->path_from_env ? "CUDA_CACHE_PATH" : xdg_from();
    c->limit_bytes = info->maxsize_bytes;
    /* vyre's processes run with the floor when the variable is unset
     * (jitcache.h); a program without vyre gets the driver's own default. */
    set_from(c, "%s",
             info->maxsize_from_env ? "CUDA_CACHE_MAXSIZE"
                                    : "vyre's default (CUDA_CACHE_MAXSIZE unset)");
    free(info);
}

/* A cache's limit: `key` (max_size, triton_max_size, inductor_max_size)
 * of vyre's configuration, loaded once for all of them (cfg NULL: it did
 * not load, `why` says why). Triton and Inductor keep no limit of their
 * own: theirs are vyre's keys, applied by `vyre-cachectl triton prune
 * --auto`. */
static void config_limit(vyre_usage_cache *c, const vyre_config *cfg, const char *why, int key)
{
    if (!cfg) {
        set_from(c, "unknown: %s", why);
        return;
    }
    c->limit_bytes = key == VYRE_CONF_MAX_SIZE          ? cfg->max_size
                     : key == VYRE_CONF_TRITON_MAX_SIZE ? cfg->triton_max_size
                                                        : cfg->inductor_max_size;
    char where[VYRE_CONFIG_WHERE_MAX + 16];
    vyre_config_format_where(cfg, key, where, sizeof where);
    const char *name = vyre_config_key_name(key);
    if (c->limit_bytes)
        set_from(c, "%s, %s", name, where);
    else
        set_from(c, "none (%s 0, %s)", name, where);
}

static void locate_foreign(vyre_usage_cache *c)
{
    const char *src = NULL;
    int rc = c->id == VYRE_USAGE_TRITON
                 ? vyre_triton_cache_dir(c->path, sizeof c->path, &src, &c->error)
                 : vyre_inductor_cache_dir(c->path, sizeof c->path, &src, &c->error);
    c->located = rc == 0;
    if (!c->located)
        c->path[0] = '\0';
    c->path_from = src;
}

int vyre_usage_caches(const char *vyre_root, vyre_usage_cache out[VYRE_USAGE_N_CACHES])
{
    if (!out)
        return VYRE_EINVAL;
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        vyre_usage_cache *c = &out[i];
        memset(c, 0, sizeof *c);
        c->id = i;
        c->name = g_names[i];
        c->path_from = "";
        vyre_error_clear(&c->error);
    }
    locate_vyre(vyre_root, &out[VYRE_USAGE_VYRE]);
    locate_jit(&out[VYRE_USAGE_CUDA_JIT]);
    locate_foreign(&out[VYRE_USAGE_TRITON]);
    locate_foreign(&out[VYRE_USAGE_INDUCTOR]);
    /* One load of vyre's configuration (its cache's vyre.conf included, as
     * vyre-cachectl reads it) gives every limit but the JIT cache's. */
    const vyre_usage_cache *v = &out[VYRE_USAGE_VYRE];
    vyre_config *cfg = malloc(sizeof *cfg);
    vyre_error e;
    vyre_error_clear(&e);
    char why[VYRE_ERROR_MESSAGE_MAX + 48] = "out of memory";
    if (cfg && vyre_config_load(cfg, v->located ? v->path : NULL, NULL, 0, 0, &e) != 0) {
        snprintf(why, sizeof why, "the configuration does not load: %s", e.message);
        free(cfg);
        cfg = NULL;
    }
    if (v->located)
        config_limit(&out[VYRE_USAGE_VYRE], cfg, why, VYRE_CONF_MAX_SIZE);
    config_limit(&out[VYRE_USAGE_TRITON], cfg, why, VYRE_CONF_TRITON_MAX_SIZE);
    config_limit(&out[VYRE_USAGE_INDUCTOR], cfg, why, VYRE_CONF_INDUCTOR_MAX_SIZE);
    free(cfg);
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++)
        if (!out[i].path_from)
            out[i].path_from = "";
    return VYRE_OK;
}
