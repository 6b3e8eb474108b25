/*
 * cmd_triton_verify.c - `vyre-cachectl triton verify [--repair]`: the
 * problems libcore finds in a Triton cache, one line each; --repair moves
 * the groups Triton cannot use into the cache's .vyre-quarantine folder
 * (never deletes). Orphans and temp files are listed, not moved: a running
 * Triton may be writing them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_json.h"
#include "tool_sanitize.h"

/* 1 when group key was already quarantined in this run. */
static int seen_before(const vyre_triton_problem *p, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (p[k].group_bad && !strcmp(p[k].key, p[i].key))
            return 1;
    return 0;
}

/* Quarantines each bad group once; moved[i] = 1 for its problems. */
static int repair(const triton_opts *o, const vyre_triton_problem *p, size_t n, int *moved)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].group_bad)
            continue;
        if (seen_before(p, i)) {
            moved[i] = 1;
            continue;
        }
        vyre_error err;
        vyre_error_clear(&err);
        if (vyre_triton_quarantine(o->path, p[i].key, &err)) {
            tool_report(&err);
            rc = TOOL_EXIT_ERROR;
            continue;
        }
        moved[i] = 1;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (moved[k] && p[k].group_bad && !strcmp(p[k].key, p[i].key))
                moved[i] = 1;
    return rc;
}

static void print_json(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const int *moved)
{
    json_t *d =
        json_pack("{s:i, s:s, s:s, s:I}", "schema_version", 1, "triton_cache_dir", o->path,
                  "triton_cache_dir_source", o->dir_source, "groups", (json_int_t)c->n_groups);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a,
                              json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "key", p[i].key, "file",
                                        p[i].file, "kind", p[i].kind, "message", p[i].message,
                                        "group_unusable", p[i].group_bad, "quarantined", moved[i]));
    json_object_set_new(d, "problems", a);
    json_object_set_new(d, "clean", json_boolean(n == 0));
    tool_json_print(stdout, d);
}

static void print_text(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const int *moved)
{
    for (size_t i = 0; i < n; i++) {
        printf("%s: ", p[i].kind);
        tool_clean_fputs(p[i].message, stdout);
        printf("%s\n", moved[i] ? " (moved to " VYRE_TRITON_QUARANTINE ")" : "");
    }
    if (g_cachectl.quiet)
        return;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i].group_bad && !seen_before(p, i);
    printf("%zu group%s checked, %zu unusable, %zu problem%s\n", c->n_groups,
           c->n_groups == 1 ? "" : "s", bad, n, n == 1 ? "" : "s");
    if (bad && !o->repair)
        printf("hint: 'vyre-cachectl triton verify --repair' moves the unusable groups into "
               "%s (Triton compiles them again)\n",
               VYRE_TRITON_QUARANTINE);
}

int cachectl_triton_verify(const triton_opts *o, const vyre_triton_cache *c)
{
    vyre_triton_problem *p;
    size_t n;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_verify(c, &p, &n, &err))
        return cachectl_fail(&err);
    int *moved = calloc(n ? n : 1, sizeof *moved);
    if (!moved)
        abort();
    int rc = o->repair ? repair(o, p, n, moved) : 0;
    if (g_tool.json)
        print_json(o, c, p, n, moved);
    else
        print_text(o, c, p, n, moved);
    free(moved);
    free(p);
    if (rc)
        return rc;
    return n ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
