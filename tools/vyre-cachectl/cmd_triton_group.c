/*
 * cmd_triton_group.c - one Triton group as `triton ls` and `triton show`
 * print it: its JSON object and its table row (cmd_triton.h). Below both
 * actions, so show never calls back into the dispatcher (cmd_triton.c).
 */
#include <inttypes.h>
#include <stdio.h>

#include "cmd_triton.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

static const char *kind_name(vyre_triton_group_kind k)
{
    static const char *const names[] = {"kernel", "launcher", "temp", "other"};
    return (unsigned)k < 4 ? names[k] : "other";
}

static json_t *int_or_null(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return *s ? json_string(s) : json_null();
}

json_t *cachectl_triton_group_json(const vyre_triton_group *g)
{
    json_t *o = json_pack("{s:s, s:s}", "key", g->key, "kind", kind_name(g->kind));
    json_object_set_new(o, "name", str_or_null(g->name));
    json_object_set_new(o, "backend", str_or_null(g->backend));
    json_object_set_new(o, "arch", str_or_null(g->arch));
    json_object_set_new(o, "warp_size", int_or_null(g->warp_size));
    json_object_set_new(o, "num_warps", int_or_null(g->num_warps));
    json_object_set_new(o, "num_stages", int_or_null(g->num_stages));
    json_object_set_new(o, "shared_bytes", int_or_null(g->shared));
    json_object_set_new(o, "triton_version", str_or_null(g->triton_version));
    json_object_set_new(o, "hash", str_or_null(g->hash));
    json_object_set_new(o, "files", json_integer((json_int_t)g->n_files));
    json_object_set_new(o, "bytes", json_integer((json_int_t)g->bytes));
    json_object_set_new(o, "apparent_bytes", json_integer((json_int_t)g->apparent_bytes));
    json_object_set_new(o, "modified_unix_ns", json_integer(g->mtime_ns));
    json_object_set_new(o, "last_use_unix_ns", json_integer(g->last_use_ns));
    return o;
}

void cachectl_triton_print_group(const vyre_triton_group *g, int64_t now)
{
    char key[16], size[32], age[16], use[16], name[TOOL_CLEAN_SIZE(48)];
    char arch[TOOL_CLEAN_SIZE(12)], ver[TOOL_CLEAN_SIZE(12)];
    /* bounded: a short key, as git shows commits */
    snprintf(key, sizeof key, "%.12s", g->key);
    vyre_format_size(g->bytes, size, sizeof size);
    vyre_format_age(now - g->mtime_ns, age, sizeof age);
    vyre_format_age(now - g->last_use_ns, use, sizeof use);
    const char *n = *g->name ? g->name : g->kind == VYRE_TRITON_KERNEL ? "?" : kind_name(g->kind);
    char kc[TOOL_CLEAN_SIZE(16)], warps[24] = "-", stages[24] = "-";
    if (g->num_warps >= 0)
        snprintf(warps, sizeof warps, "%" PRId64, g->num_warps);
    if (g->num_stages >= 0)
        snprintf(stages, sizeof stages, "%" PRId64, g->num_stages);
    printf("%-12s  %-32s  %-6s  %-7s  %5s  %6s  %5zu  %10s  %5s  %5s\n",
           tool_clean(key, kc, sizeof kc), tool_clean(n, name, sizeof name),
           *g->arch ? tool_clean(g->arch, arch, sizeof arch) : "-",
           *g->triton_version ? tool_clean(g->triton_version, ver, sizeof ver) : "-", warps, stages,
           g->n_files, size, age, use);
}
