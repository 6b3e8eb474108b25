/*
 * pipeline_modules.c - a context's module map: loaded modules keyed by
 * (cache key, entry point), so that compiling the same pipeline twice in
 * a context loads its module once.
 *
 * Guarantees: open addressing with linear probing at a load factor of at
 * most 1/2; lookups and inserts are made with ctx->mu held (the callers
 * hold it); a failed growth leaves the map as it was.
 */
#include "cuda/pipeline_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/key_internal.h"

#define MAP_MIN_CAP 16

void vyre__module_entry_unload(vyre_ctx *ctx, module_entry *m)
{
    if (m->mod)
        (void)ctx->cu->cuModuleUnload(m->mod);
    free(m);
}

/* The map's key of (module, entry): one module loaded once per entry asked
 * for, each with its own function handle. */
int vyre__module_map_key(const vyre_key *cache_key, const char *entry, vyre_key *out,
                         vyre_error *err)
{
    vyre_key_input in = {
        .backend = "vyre.module-map",
        .entry = entry,
        .source_kind = VYRE_SOURCE_CUBIN,
        .source = cache_key->bytes,
        .source_len = VYRE_KEY_BYTES,
    };
    return vyre__key_compute(&in, out, err);
}

static size_t key_hash(const vyre_key *k)
{
    uint64_t h;
    memcpy(&h, k->bytes, sizeof h); /* a SHA-256 prefix is already uniform */
    return (size_t)h;
}

/* Called with ctx->mu held. */
module_entry *vyre__module_map_find(const vyre_ctx *ctx, const vyre_key *k)
{
    if (!ctx->map_cap)
        return NULL;
    size_t mask = ctx->map_cap - 1;
    for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
        module_entry *e = ctx->map[i];
        if (!e)
            return NULL;
        if (memcmp(e->key.bytes, k->bytes, VYRE_KEY_BYTES) == 0)
            return e;
    }
}

static void map_place(module_entry **map, size_t cap, module_entry *e)
{
    size_t mask = cap - 1;
    size_t i = key_hash(&e->key) & mask;
    while (map[i])
        i = (i + 1) & mask;
    map[i] = e;
}

/* Called with ctx->mu held. Keeps the load factor at or under 1/2. */
int vyre__module_map_insert(vyre_ctx *ctx, module_entry *e, vyre_error *err)
{
    if ((ctx->map_count + 1) * 2 > ctx->map_cap) {
        size_t cap = ctx->map_cap ? ctx->map_cap * 2 : MAP_MIN_CAP;
        module_entry **map = calloc(cap, sizeof *map);
        if (!map)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot grow the module cache to %zu slots",
                              cap);
        for (size_t i = 0; i < ctx->map_cap; i++)
            if (ctx->map[i])
                map_place(map, cap, ctx->map[i]);
        free(ctx->map);
        ctx->map = map;
        ctx->map_cap = cap;
    }
    map_place(ctx->map, ctx->map_cap, e);
    ctx->map_count++;
    return VYRE_OK;
}
