/*
 * config_get.c - vyre/config.h's getters: a loaded configuration read by
 * key, so that programs outside libcore never see its layout (config.c
 * loads and writes it; config_internal.h holds the layout).
 */
#include <stdlib.h>

#include "base/internal.h"
#include "cache/config_internal.h"
#include "vyre/config.h"

vyre_config *vyre_config_new(void)
{
    vyre_config *c = malloc(sizeof *c);
    if (c)
        vyre__config_init(c);
    return c;
}

void vyre_config_free(vyre_config *c)
{
    free(c);
}

int vyre_config_set(vyre_config *c, const char *key, const char *value, vyre_error *err)
{
    if (!c || !key || !value)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_config_set: NULL argument");
    return vyre__config_set(c, key, value, VYRE_CONF_FROM_OVERRIDE, NULL, 0, err);
}

int64_t vyre_config_get_int(const vyre_config *c, int key)
{
    if (!c)
        return 0;
    switch (key) {
    case VYRE_CONF_MAX_SIZE:
        return (int64_t)c->max_size;
    case VYRE_CONF_TRITON_MAX_SIZE:
        return (int64_t)c->triton_max_size;
    case VYRE_CONF_INDUCTOR_MAX_SIZE:
        return (int64_t)c->inductor_max_size;
    case VYRE_CONF_MAX_AGE:
        return c->max_age_ns;
    case VYRE_CONF_QUARANTINE_MAX_AGE:
        return c->quarantine_max_age_ns;
    case VYRE_CONF_UMASK:
        return c->umask;
    case VYRE_CONF_READ_ONLY:
        return c->read_only;
    }
    return 0;
}

const char *vyre_config_get_str(const vyre_config *c, int key)
{
    if (!c)
        return NULL;
    if (key == VYRE_CONF_REMOTE_STORAGE)
        return c->remote_storage;
    if (key == VYRE_CONF_RESULTS_DB)
        return c->results_db;
    return NULL;
}

const vyre_config_where *vyre_config_get_where(const vyre_config *c, int key)
{
    return c && key >= 0 && key < VYRE_CONF_N_KEYS ? &c->where[key] : NULL;
}

const vyre_config_problem *vyre_config_problems(const vyre_config *c, size_t *kept, size_t *total)
{
    size_t n = c ? c->n_problems : 0;
    size_t k = n < VYRE_CONFIG_MAX_PROBLEMS ? n : VYRE_CONFIG_MAX_PROBLEMS;
    if (kept)
        *kept = k;
    if (total)
        *total = n;
    return k ? c->problems : NULL;
}
