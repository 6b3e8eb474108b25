/*
 * cmd_triton_show.c - `vyre-cachectl triton show KEY|KERNEL_NAME`: one
 * group of Triton's cache in full (its files, its metadata, the manifest's
 * children and whether each is a file of the group), or, when
 * a kernel name has several groups, the list of them (`triton ls` rows).
 * A KEY may be shortened to the 12 characters `triton ls` prints. A
 * child's path is never looked up: one in the group is checked against the
 * scanned file list; one that points elsewhere (another user's file, a dead
 * mount) is said to, and not touched. A kernel group comes with the
 * command that benchmarks it (`vyre-bench run --triton KEY`, triton_command.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

/* The groups show names: the key, a key prefix of 8 characters or more, or
 * the kernel name. *n matches; returns the first or NULL. */
static size_t find(const vyre_triton_cache *c, const char *what, size_t *idx, size_t max)
{
    size_t n = 0, len = strlen(what);
    if (!len)
        return 0; /* "" would name every group without a kernel name */
    for (size_t i = 0; i < c->n_groups; i++)
        if (!strcmp(c->groups[i].key, what) && max) {
            idx[0] = i;
            return 1;
        }
    for (size_t i = 0; i < c->n_groups && n < max; i++) {
        const vyre_triton_group *g = &c->groups[i];
        if ((len >= 8 && !strncmp(g->key, what, len)) || !strcmp(g->name, what))
            idx[n++] = i;
    }
    return n;
}

static const char *const k_place[] = {"here", "moved", "outside"};

/* What a child is, from the scan alone (no path is looked up): *exists
 * when it is a file of the group (<cache>/<key>/<name>, found by the
 * scan). */
static const char *child_state(const vyre_triton_cache *c, const vyre_triton_group *g,
                               const vyre_triton_child *ch, int *exists,
                               vyre_triton_child_place *place)
{
    *place = vyre_triton_child_where(c, g, ch);
    const vyre_triton_file *f = vyre_triton_group_file(g, ch->name);
    *exists = *place == VYRE_TRITON_CHILD_HERE && f;
    if (*place == VYRE_TRITON_CHILD_HERE)
        return f ? "exists" : "missing";
    if (*place == VYRE_TRITON_CHILD_OUTSIDE)
        return "outside the group, not looked at (Triton would load it)";
    return f ? "where the cache was, not looked at (in the group: 'triton relocate' points it "
               "here)"
             : "where the cache was, not looked at (missing from the group)";
}

/* That command into buf, or "" for a group that is no kernel (a launcher,
 * a half-written group: run --triton names kernels only). */
static const char *bench_command(const triton_opts *o, const vyre_triton_group *g, char *buf,
                                 size_t size)
{
    buf[0] = '\0';
    if (g->kind == VYRE_TRITON_KERNEL && g->name[0])
        cachectl_triton_command(g->key, cachectl_triton_bench_dir(o), buf, size);
    return buf;
}

#define COMMAND_MAX (sizeof(((triton_opts *)0)->path) * 4 + 256)

static json_t *full_json(const triton_opts *opts, const vyre_triton_cache *c,
                         const vyre_triton_group *g)
{
    json_t *o = cachectl_triton_group_json(opts, g);
    char cmd[COMMAND_MAX];
    bench_command(opts, g, cmd, sizeof cmd);
    json_object_set_new(o, "command", *cmd ? tool_json_text(cmd) : json_null());
    json_t *files = json_array(), *children = json_array();
    for (size_t i = 0; i < g->n_files; i++) {
        const vyre_triton_file *f = &g->files[i];
        json_array_append_new(
            files, json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:b, s:b}", "name", f->name, "bytes",
                             (json_int_t)f->bytes, "apparent_bytes", (json_int_t)f->apparent_bytes,
                             "modified_unix_ns", (json_int_t)f->mtime_ns, "accessed_unix_ns",
                             (json_int_t)f->atime_ns, "regular", f->regular, "temp", f->temp,
                             "named", f->named));
    }
    for (size_t i = 0; i < g->n_children; i++) {
        int exists;
        vyre_triton_child_place place;
        child_state(c, g, &g->children[i], &exists, &place);
        json_array_append_new(children, json_pack("{s:o, s:o, s:b, s:s}", "name",
                                                  tool_json_text(g->children[i].name), "path",
                                                  tool_json_text(g->children[i].path), "exists",
                                                  exists, "place", k_place[place]));
    }
    json_object_set_new(o, "manifest",
                        g->has_manifest ? json_string(g->manifest_name) : json_null());
    json_object_set_new(o, "manifest_error",
                        *g->manifest_error ? json_string(g->manifest_error) : json_null());
    json_object_set_new(o, "metadata",
                        g->has_metadata ? json_string(g->metadata_file) : json_null());
    json_object_set_new(o, "metadata_error",
                        *g->metadata_error ? json_string(g->metadata_error) : json_null());
    json_object_set_new(o, "file_list", files);
    json_object_set_new(o, "children", children);
    return o;
}

static void field(const char *label, const char *value)
{
    printf("%-16s ", label);
    tool_clean_fputs(*value ? value : "-", stdout);
    putchar('\n');
}

static void int_field(const char *label, int64_t v)
{
    char s[32] = "-";
    if (v >= 0)
        snprintf(s, sizeof s, "%" PRId64, v);
    field(label, s);
}

static void print_files(const vyre_triton_cache *c, const vyre_triton_group *g, int64_t now)
{
    printf("Files:\n");
    for (size_t i = 0; i < g->n_files; i++) {
        const vyre_triton_file *f = &g->files[i];
        char size[32], age[16];
        vyre_format_size(f->bytes, size, sizeof size);
        vyre_format_age(now - f->mtime_ns, age, sizeof age);
        printf("  %10s  %5s  ", f->regular ? size : "-", age);
        tool_clean_fputs(f->name, stdout);
        printf("%s%s%s\n", f->regular ? "" : "  (not a regular file)",
               f->temp ? "  (Triton's temp file)" : "",
               g->has_manifest && !f->named && !f->temp ? "  (named by no manifest)" : "");
    }
    if (!g->has_manifest)
        return;
    printf("Manifest children:\n");
    for (size_t i = 0; i < g->n_children; i++) {
        int exists;
        vyre_triton_child_place place;
        const char *state = child_state(c, g, &g->children[i], &exists, &place);
        printf("  ");
        tool_clean_fputs(g->children[i].name, stdout);
        printf(" -> ");
        tool_clean_fputs(g->children[i].path, stdout);
        printf("  %s\n", state);
    }
}

static void print_full(const triton_opts *o, const vyre_triton_cache *c, const vyre_triton_group *g,
                       int64_t now)
{
    char cmd[COMMAND_MAX];
    char buf[64], age[16];
    field("Group:", g->key);
    field("Kind:", cachectl_triton_kind_name(g->kind));
    field("Kernel:", g->name);
    field("Backend:", g->backend);
    field("Architecture:", g->arch);
    field("Triton version:", g->triton_version);
    int_field("Warps:", g->num_warps);
    int_field("Stages:", g->num_stages);
    int_field("Shared bytes:", g->shared);
    field("Hash:", g->hash);
    vyre_format_size(g->bytes, buf, sizeof buf);
    printf("%-16s %s in %zu files\n", "Size:", buf, g->n_files);
    vyre_format_age(now - g->mtime_ns, age, sizeof age);
    printf("%-16s %s ago\n", "Modified:", age);
    vyre_format_age(now - g->last_use_ns, age, sizeof age);
    printf("%-16s %s ago\n", "Last use:", age);
    field("Manifest:", g->has_manifest ? g->manifest_name : "none (half-written, or a launcher)");
    if (*g->manifest_error)
        field("Manifest error:", g->manifest_error);
    field("Metadata:", g->has_metadata ? g->metadata_file : "none");
    if (*g->metadata_error)
        field("Metadata error:", g->metadata_error);
    if (*bench_command(o, g, cmd, sizeof cmd))
        field("Benchmark:", cmd);
    print_files(c, g, now);
}

int cachectl_triton_show(const triton_opts *o, const vyre_triton_cache *c)
{
    size_t idx[256];
    size_t n = find(c, o->show_what, idx, sizeof idx / sizeof *idx);
    if (!n) {
        char clean[TOOL_CLEAN_SIZE(128)];
        return tool_usage_error("triton",
                                "name a key (8 characters or more) or a kernel name "
                                "that 'vyre-cachectl triton ls' lists",
                                "no Triton group '%s'",
                                tool_clean(o->show_what, clean, sizeof clean));
    }
    int64_t now = tool_unix_ns();
    if (g_tool.json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, full_json(o, c, &c->groups[idx[i]]));
        json_t *d =
            json_pack("{s:i, s:s, s:s, s:s, s:o}", "schema_version", 2, "triton_cache_dir", o->path,
                      "triton_cache_dir_source", o->dir_source, "query", o->show_what, "groups", a);
        tool_json_print(stdout, d);
        return TOOL_EXIT_OK;
    }
    if (n == 1) {
        print_full(o, c, &c->groups[idx[0]], now);
        return TOOL_EXIT_OK;
    }
    printf("%zu groups of '", n);
    tool_clean_fputs(o->show_what, stdout);
    printf("' ('vyre-cachectl triton show KEY' shows one):\n");
    int rc = cachectl_triton_list(o, c->groups, idx, n, NULL);
    if (rc)
        return rc;
    char cmd[COMMAND_MAX];
    if (!cachectl_triton_command("KEY", cachectl_triton_bench_dir(o), cmd, sizeof cmd)) {
        printf("Benchmark one: ");
        tool_clean_fputs(cmd, stdout);
        putchar('\n');
    }
    return TOOL_EXIT_OK;
}
