/*
 * triton_explain.c - "why does this machine recompile?" for Triton's cache
 * (see vyre/triton.h): the groups of one kernel name side by side, and the
 * metadata fields in which they differ.
 *
 * Triton keys a compile by a hash of the source, the target (backend,
 * arch, warp size), the options (num_warps, num_stages, ...) and its own
 * version; a second group of one kernel name means one of them changed.
 * The metadata .json keeps the values; the .source file is hashed here so
 * that an edited kernel is told from a retuned one. Nothing is written;
 * group files are read from the group's directory, never through a link.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/triton_internal.h"
#include "cache/key_internal.h"
#include "vyre/triton.h"

const char *vyre_triton_field_name(vyre_triton_field f)
{
    static const char *const names[VYRE_TRITON_FIELD_COUNT] = {
        "target.arch",    "target.backend", "target.warp_size", "num_warps", "num_stages", "shared",
        "triton_version", "hash",           "source_sha256",
    };
    return (unsigned)f < VYRE_TRITON_FIELD_COUNT ? names[f] : NULL;
}

static void int_value(char *out, int64_t v)
{
    if (v >= 0)
        snprintf(out, VYRE_TRITON_VALUE_MAX, "%" PRId64, v);
    else
        out[0] = '\0';
}

/* SHA-256 of the group's <name>.source into out ("" when there is none or
 * it cannot be read). */
static void source_hash(int top, const vyre_triton_group *g, char *out)
{
    out[0] = '\0';
    char file[VYRE_TRITON_NAME_MAX + 8];
    int n = snprintf(file, sizeof file, "%s.source", g->name);
    if (n < 0 || (size_t)n >= sizeof file || !g->name[0] || strchr(g->name, '/'))
        return;
    int gfd = vyre__open_dir_at(top, g->key);
    if (gfd < 0)
        return;
    char *buf = NULL, why[128];
    size_t len = 0;
    if (vyre__triton_read_at(gfd, file, VYRE_TRITON_CUBIN_MAX, &buf, &len, why, sizeof why) ==
        VYRE_OK) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        if (vyre__sha256_hex(buf, len, hex, NULL) == VYRE_OK)
            vyre__strlcpy(out, hex, VYRE_TRITON_VALUE_MAX);
    }
    free(buf);
    close(gfd);
}

static void fill_values(int top, const vyre_triton_group *g, vyre_triton_explain_group *x)
{
    char(*v)[VYRE_TRITON_VALUE_MAX] = x->values;
    x->group = g;
    vyre__strlcpy(v[VYRE_TRITON_FIELD_ARCH], g->arch, VYRE_TRITON_VALUE_MAX);
    vyre__strlcpy(v[VYRE_TRITON_FIELD_BACKEND], g->backend, VYRE_TRITON_VALUE_MAX);
    int_value(v[VYRE_TRITON_FIELD_WARP_SIZE], g->warp_size);
    int_value(v[VYRE_TRITON_FIELD_NUM_WARPS], g->num_warps);
    int_value(v[VYRE_TRITON_FIELD_NUM_STAGES], g->num_stages);
    int_value(v[VYRE_TRITON_FIELD_SHARED], g->shared);
    vyre__strlcpy(v[VYRE_TRITON_FIELD_TRITON_VERSION], g->triton_version, VYRE_TRITON_VALUE_MAX);
    vyre__strlcpy(v[VYRE_TRITON_FIELD_HASH], g->hash, VYRE_TRITON_VALUE_MAX);
    source_hash(top, g, v[VYRE_TRITON_FIELD_SOURCE]);
}

/* The distinct kernel names of c nearest to kernel, into x->nearest. */
static void nearest_names(const vyre_triton_cache *c, const char *kernel,
                          vyre_triton_explanation *x)
{
    size_t dist[VYRE_TRITON_NEAREST_MAX];
    for (size_t i = 0; i < c->n_groups; i++) {
        const char *name = c->groups[i].name;
        if (c->groups[i].kind != VYRE_TRITON_KERNEL || !name[0])
            continue;
        int dup = 0;
        for (size_t k = 0; k < x->n_nearest; k++)
            dup |= strcmp(x->nearest[k], name) == 0;
        if (dup)
            continue;
        size_t d = vyre__edit_distance(kernel, name), at = x->n_nearest;
        while (at > 0 &&
               (dist[at - 1] > d || (dist[at - 1] == d && strcmp(x->nearest[at - 1], name) > 0)))
            at--;
        if (at >= VYRE_TRITON_NEAREST_MAX)
            continue;
        size_t last =
            x->n_nearest < VYRE_TRITON_NEAREST_MAX ? x->n_nearest : VYRE_TRITON_NEAREST_MAX - 1;
        for (size_t k = last; k > at; k--) {
            memcpy(x->nearest[k], x->nearest[k - 1], sizeof x->nearest[k]);
            dist[k] = dist[k - 1];
        }
        vyre__strlcpy(x->nearest[at], name, sizeof x->nearest[at]);
        dist[at] = d;
        if (x->n_nearest < VYRE_TRITON_NEAREST_MAX)
            x->n_nearest++;
    }
}

int vyre_triton_explain(const vyre_triton_cache *c, const char *kernel,
                        vyre_triton_explanation *out, vyre_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !kernel || !*kernel || !out)
        return vyre__fail(err, VYRE_EINVAL, "name a kernel, such as 'add_kernel'",
                          "vyre_triton_explain: no cache or no kernel name");
    size_t n = 0;
    for (size_t i = 0; i < c->n_groups; i++)
        n += c->groups[i].kind == VYRE_TRITON_KERNEL && strcmp(c->groups[i].name, kernel) == 0;
    if (!n) {
        nearest_names(c, kernel, out);
        return VYRE_OK;
    }
    out->groups = calloc(n, sizeof *out->groups);
    if (!out->groups)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory explaining '%s'", kernel);
    /* The scan's directory, not the path again; without one (a struct
     * not from a scan) the .source hashes stay unknown. */
    int top = c->fd_held ? c->fd : -1;
    for (size_t i = 0; i < c->n_groups; i++) {
        const vyre_triton_group *g = &c->groups[i];
        if (g->kind == VYRE_TRITON_KERNEL && strcmp(g->name, kernel) == 0)
            fill_values(top, g, &out->groups[out->n_groups++]);
    }
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
        for (size_t i = 1; i < out->n_groups; i++)
            if (strcmp(out->groups[i].values[f], out->groups[0].values[f]) != 0)
                out->differ |= 1u << f;
    return VYRE_OK;
}

void vyre_triton_explanation_release(vyre_triton_explanation *x)
{
    if (!x)
        return;
    free(x->groups);
    memset(x, 0, sizeof *x);
}
