/*
 * cmd_triton_verify.c - `vyre-cachectl triton verify [--repair]`: the
 * problems libcore finds in a Triton cache, one line each, each naming its
 * group; --repair moves the groups Triton cannot use into the cache's
 * .vyre-quarantine folder (never deletes). Orphans and temp files are
 * listed, not moved: a running Triton may be writing them. A group is
 * said to be moved only once its move succeeded; a move that failed is a
 * problem line of its own ("quarantine-failed"), and the exit code is 1.
 * The moves are repair.c's, as for TorchInductor's entries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_triton.h"
#include "repair.h"
#include "tool_json.h"
#include "tool_sanitize.h"

/* The problems as repair sees them: each names its group by key. */
typedef struct problems {
    const vyre_triton_cache *c;
    const vyre_triton_problem *p;
} problems;

static const char *entry_of(const void *ctx, size_t i)
{
    return ((const problems *)ctx)->p[i].key;
}

static int unusable(const void *ctx, size_t i)
{
    return ((const problems *)ctx)->p[i].group_bad;
}

static int quarantine(const void *ctx, const char *key, vyre_error *err)
{
    return vyre_triton_quarantine(((const problems *)ctx)->c, key, err);
}

/* What became of problem i: only a problem that makes its group unusable
 * says its group moved. */
static int state_of(const vyre_triton_problem *p, const cachectl_repair *x, size_t i)
{
    return p[i].group_bad ? cachectl_repair_state(x, i) : REPAIR_NOT_MOVED;
}

/* The end of the run of problems of p[i]'s group. */
static size_t group_end(const vyre_triton_problem *p, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && !strcmp(p[j].key, p[i].key))
        j++;
    return j;
}

static void print_json(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const cachectl_repair *x)
{
    json_t *d =
        json_pack("{s:i, s:s, s:s, s:I}", "schema_version", 1, "triton_cache_dir", o->path,
                  "triton_cache_dir_source", o->dir_source, "groups", (json_int_t)c->n_groups);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        int state = state_of(p, x, i);
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "key", p[i].key, "file", p[i].file,
                              "kind", p[i].kind, "message", p[i].message, "group_unusable",
                              p[i].group_bad, "quarantined", state == REPAIR_MOVED);
        if (state == REPAIR_FAILED)
            json_object_set_new(e, "quarantine_error",
                                json_string(cachectl_repair_error(x, i)->message));
        json_array_append_new(a, e);
    }
    json_object_set_new(d, "problems", a);
    json_object_set_new(d, "clean", json_boolean(n == 0));
    tool_json_print(stdout, d);
}

static void print_line(const char *kind, const char *key, const char *message, const char *tail)
{
    printf("%s: ", kind);
    tool_clean_fputs(key, stdout);
    fputs(": ", stdout);
    tool_clean_fputs(message, stdout);
    printf("%s\n", tail);
}

static void print_summary(const triton_opts *o, const vyre_triton_cache *c, size_t n,
                          const cachectl_repair *x)
{
    printf("%zu group%s checked, %zu unusable, %zu problem%s\n", c->n_groups,
           c->n_groups == 1 ? "" : "s", x->bad_entries, n, n == 1 ? "" : "s");
    if (o->repair && x->bad_entries)
        printf("%zu group%s moved to %s, %zu could not be moved\n", x->moved,
               x->moved == 1 ? "" : "s", VYRE_TRITON_QUARANTINE, x->n_fail);
    if (x->n_fail && *x->errs[0].hint) {
        fputs("hint: ", stdout);
        tool_clean_fputs(x->errs[0].hint, stdout);
        putchar('\n');
    }
    if (x->bad_entries && !o->repair)
        printf("hint: 'vyre-cachectl triton verify --repair' moves the unusable groups into "
               "%s (Triton compiles them again)\n",
               VYRE_TRITON_QUARANTINE);
}

static void print_text(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const cachectl_repair *x)
{
    for (size_t i = 0, end; i < n; i = end) {
        end = group_end(p, n, i);
        for (size_t k = i; k < end; k++)
            print_line(p[k].kind, p[k].key, p[k].message,
                       state_of(p, x, k) == REPAIR_MOVED ? " (moved to " VYRE_TRITON_QUARANTINE ")"
                                                         : "");
        const vyre_error *err = cachectl_repair_error(x, i);
        if (err && x->lead[i] == i)
            print_line("quarantine-failed", p[i].key, err->message,
                       " (not moved: Triton still finds it)");
    }
    if (!g_cachectl.quiet)
        print_summary(o, c, n, x);
}

int cachectl_triton_verify(const triton_opts *o, const vyre_triton_cache *c)
{
    vyre_triton_problem *p;
    size_t n;
    vyre_error err;
    vyre_error_clear(&err);
    /* Nothing is checked, let alone moved, in a cache another user
     * controls: repairing it would change files for them. */
    if (o->repair && vyre_triton_cache_check_writable(c, &err))
        return cachectl_fail(&err);
    if (vyre_triton_verify(c, &p, &n, &err))
        return cachectl_fail(&err);
    problems ps = {c, p};
    cachectl_problems cp = {n, &ps, entry_of, unusable, quarantine};
    cachectl_repair x;
    cachectl_repair_run(&cp, o->repair, &x);
    if (g_tool.json)
        print_json(o, c, p, n, &x);
    else
        print_text(o, c, p, n, &x);
    int bad = n || x.n_fail;
    cachectl_repair_release(&x);
    free(p);
    return bad ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
