/*
 * cmd_triton_group.c - Triton's groups as `triton ls` lists them: the
 * columns, declared once, and how one group fills its row. `triton show`
 * prints the same rows (several groups of one kernel name) and starts its
 * JSON object from the same row. Below both actions, so show never calls
 * back into the dispatcher (cmd_triton.c).
 */
#include <stdio.h>
#include <string.h>

#include "cmd_triton.h"
#include "listing.h"
#include "tool_util.h"

/* The columns (the keys are docs/schema's triton ls members): at 80
 * columns the key, the name (cut), the size, architecture and last use
 * stay; what only CSV and JSON carry after them. */
enum {
    G_KEY,
    G_KIND,
    G_NAME,
    G_BACKEND,
    G_ARCH,
    G_WARP,
    G_WARPS,
    G_STAGES,
    G_SHARED,
    G_VERSION,
    G_HASH,
    G_FILES,
    G_SIZE,
    G_APPARENT,
    G_MODIFIED,
    G_USED,
    G_COMMAND,
    G_NCOLS
};

#define D TOOL_ROWS_DATA
static const tool_rows_col k_group_cols[G_NCOLS] = {
    [G_KEY] = {"key", "KEY", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
    [G_KIND] = {"kind", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL, 0},
    [G_NAME] = {"name", "NAME", TOOL_ROWS_TEXT, 3, 16, 0, NULL, 0},
    [G_BACKEND] = {"backend", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL, 0},
    [G_ARCH] = {"arch", "ARCH", TOOL_ROWS_TEXT, 2, 0, 0, NULL, 0},
    [G_WARP] = {"warp_size", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [G_WARPS] = {"num_warps", "WARPS", TOOL_ROWS_INT, 3, 0, 0, NULL, 0},
    [G_STAGES] = {"num_stages", "STAGES", TOOL_ROWS_INT, 3, 0, 0, NULL, 0},
    [G_SHARED] = {"shared_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [G_VERSION] = {"triton_version", "TRITON", TOOL_ROWS_TEXT, 4, 0, 0, NULL, 0},
    [G_HASH] = {"hash", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL, 0},
    [G_FILES] = {"files", "FILES", TOOL_ROWS_INT, 5, 0, 0, NULL, 0},
    [G_SIZE] = {"bytes", "SIZE", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
    [G_APPARENT] = {"apparent_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [G_MODIFIED] = {"modified_unix_ns", "AGE", TOOL_ROWS_DATE, 5, 0, 0, NULL, 1},
    [G_USED] = {"last_use_unix_ns", "USED", TOOL_ROWS_DATE, 2, 0, 0, NULL, 1},
    [G_COMMAND] = {"command", NULL, TOOL_ROWS_TEXT, D, 0, 0, NULL, 0},
};
#undef D

static const size_t k_group_order[] = {G_KEY,    G_NAME,  G_ARCH, G_VERSION,  G_WARPS,
                                       G_STAGES, G_FILES, G_SIZE, G_MODIFIED, G_USED};

typedef struct group_ctx {
    int64_t now;
    const char *dir;   /* for the command: NULL when vyre-bench finds the cache itself */
    const size_t *idx; /* row i is group idx[i]; NULL: group i */
} group_ctx;

const char *cachectl_triton_kind_name(vyre_triton_group_kind k)
{
    static const char *const names[] = {"kernel", "launcher", "temp", "other"};
    return (unsigned)k < 4 ? names[k] : "other";
}

static void text_or_null(tool_rows *rows, size_t c, const char *s)
{
    tool_rows_text(rows, c, *s ? s : NULL);
}

static void count_or_null(tool_rows *rows, size_t c, int64_t v)
{
    if (v >= 0)
        tool_rows_int(rows, c, v);
}

static void fill_group(tool_rows *rows, const void *entries, size_t i, const void *ctx)
{
    const group_ctx *x = ctx;
    const vyre_triton_group *g = (const vyre_triton_group *)entries + (x->idx ? x->idx[i] : i);
    char buf[32], cmd[8192];
    tool_rows_text(rows, G_KEY, g->key);
    /* bounded: a short key, as git shows commits */
    snprintf(buf, sizeof buf, "%.12s", g->key);
    tool_rows_shown(rows, G_KEY, buf);
    tool_rows_text(rows, G_KIND, cachectl_triton_kind_name(g->kind));
    text_or_null(rows, G_NAME, g->name);
    if (!*g->name)
        tool_rows_shown(rows, G_NAME,
                        g->kind == VYRE_TRITON_KERNEL ? "?" : cachectl_triton_kind_name(g->kind));
    text_or_null(rows, G_BACKEND, g->backend);
    text_or_null(rows, G_ARCH, g->arch);
    count_or_null(rows, G_WARP, g->warp_size);
    count_or_null(rows, G_WARPS, g->num_warps);
    count_or_null(rows, G_STAGES, g->num_stages);
    count_or_null(rows, G_SHARED, g->shared);
    text_or_null(rows, G_VERSION, g->triton_version);
    text_or_null(rows, G_HASH, g->hash);
    tool_rows_int(rows, G_FILES, (int64_t)g->n_files);
    cachectl_rows_size(rows, G_SIZE, g->bytes);
    tool_rows_int(rows, G_APPARENT, (int64_t)g->apparent_bytes);
    cachectl_rows_age(rows, G_MODIFIED, g->mtime_ns, x->now - g->mtime_ns);
    cachectl_rows_age(rows, G_USED, g->last_use_ns, x->now - g->last_use_ns);
    if (g->kind == VYRE_TRITON_KERNEL && !cachectl_triton_command(g->key, x->dir, cmd, sizeof cmd))
        tool_rows_text(rows, G_COMMAND, cmd);
}

static const cachectl_listing k_groups = {
    .sub = "triton ls",
    .cols = k_group_cols,
    .ncols = G_NCOLS,
    .order = k_group_order,
    .norder = sizeof k_group_order / sizeof *k_group_order,
    .quiet_col = G_KEY,
    .array_key = "groups",
    .fill = fill_group,
};

const char *cachectl_triton_bench_dir(const triton_opts *o)
{
    char def[sizeof o->path];
    if (vyre_triton_cache_dir(def, sizeof def, NULL, NULL) == VYRE_OK && !strcmp(def, o->path))
        return NULL;
    return o->path;
}

int cachectl_triton_list(const triton_opts *o, const vyre_triton_group *groups, const size_t *idx,
                         size_t n, json_t *doc)
{
    group_ctx x = {tool_unix_ns(), cachectl_triton_bench_dir(o), idx};
    return cachectl_list(&k_groups, groups, n, &x, doc);
}

json_t *cachectl_triton_group_json(const triton_opts *o, const vyre_triton_group *g)
{
    group_ctx x = {tool_unix_ns(), cachectl_triton_bench_dir(o), NULL};
    tool_rows *rows = tool_rows_new(k_group_cols, G_NCOLS);
    tool_rows_add(rows);
    fill_group(rows, g, 0, &x);
    json_t *a = tool_rows_json(rows);
    json_t *obj = json_incref(json_array_get(a, 0));
    json_decref(a);
    tool_rows_free(rows);
    return obj;
}
