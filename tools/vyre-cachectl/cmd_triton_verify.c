/*
 * cmd_triton_verify.c - `vyre-cachectl triton verify [--repair]`: the
 * problems libcore finds in a Triton cache, one line each, each naming its
 * group; --repair moves the groups Triton cannot use into the cache's
 * .vyre-quarantine folder (never deletes). Orphans and temp files are
 * listed, not moved: a running Triton may be writing them. A group is
 * said to be moved only once its move succeeded; a move that failed is a
 * problem line of its own ("quarantine-failed"), and the exit code is 1.
 * Linear in the problems: libcore lists each group's problems together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_json.h"
#include "tool_sanitize.h"

enum { NOT_MOVED = 0, MOVED = 1, MOVE_FAILED = 2 };

/* A quarantine that failed: the problems [at, end) of its group. */
typedef struct move_failure {
    size_t at, end;
    vyre_error err;
} move_failure;

typedef struct outcome {
    unsigned char *state; /* per problem: NOT_MOVED, MOVED, MOVE_FAILED */
    move_failure *fail;
    size_t n_fail, cap_fail;
    size_t moved_groups, bad_groups;
} outcome;

/* The end of the run of problems of p[i]'s group. */
static size_t group_end(const vyre_triton_problem *p, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && !strcmp(p[j].key, p[i].key))
        j++;
    return j;
}

static void add_failure(outcome *x, size_t at, size_t end, const vyre_error *err)
{
    if (x->n_fail == x->cap_fail) {
        x->cap_fail = x->cap_fail ? x->cap_fail * 2 : 4;
        x->fail = realloc(x->fail, x->cap_fail * sizeof *x->fail);
        if (!x->fail)
            abort();
    }
    x->fail[x->n_fail++] = (move_failure){.at = at, .end = end, .err = *err};
}

/* One pass over the groups' runs: each bad group quarantined once (when
 * repairing), its unusable problems marked with what became of it. */
static void repair(const triton_opts *o, const vyre_triton_cache *c, const vyre_triton_problem *p,
                   size_t n, outcome *x)
{
    for (size_t i = 0, end; i < n; i = end) {
        end = group_end(p, n, i);
        int bad = 0;
        for (size_t k = i; k < end; k++)
            bad |= p[k].group_bad;
        if (!bad)
            continue;
        x->bad_groups++;
        if (!o->repair)
            continue;
        vyre_error err;
        vyre_error_clear(&err);
        unsigned char state = MOVED;
        if (vyre_triton_quarantine(c, p[i].key, &err)) {
            state = MOVE_FAILED;
            add_failure(x, i, end, &err);
        } else
            x->moved_groups++;
        for (size_t k = i; k < end; k++)
            if (p[k].group_bad)
                x->state[k] = state;
    }
}

static void print_json(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const outcome *x)
{
    json_t *d =
        json_pack("{s:i, s:s, s:s, s:I}", "schema_version", 1, "triton_cache_dir", o->path,
                  "triton_cache_dir_source", o->dir_source, "groups", (json_int_t)c->n_groups);
    json_t *a = json_array();
    size_t f = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "key", p[i].key, "file", p[i].file,
                              "kind", p[i].kind, "message", p[i].message, "group_unusable",
                              p[i].group_bad, "quarantined", x->state[i] == MOVED);
        while (f < x->n_fail && x->fail[f].end <= i)
            f++;
        if (x->state[i] == MOVE_FAILED && f < x->n_fail)
            json_object_set_new(e, "quarantine_error", json_string(x->fail[f].err.message));
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
                          const outcome *x)
{
    printf("%zu group%s checked, %zu unusable, %zu problem%s\n", c->n_groups,
           c->n_groups == 1 ? "" : "s", x->bad_groups, n, n == 1 ? "" : "s");
    if (o->repair && x->bad_groups)
        printf("%zu group%s moved to %s, %zu could not be moved\n", x->moved_groups,
               x->moved_groups == 1 ? "" : "s", VYRE_TRITON_QUARANTINE, x->n_fail);
    if (x->n_fail && *x->fail[0].err.hint) {
        fputs("hint: ", stdout);
        tool_clean_fputs(x->fail[0].err.hint, stdout);
        putchar('\n');
    }
    if (x->bad_groups && !o->repair)
        printf("hint: 'vyre-cachectl triton verify --repair' moves the unusable groups into "
               "%s (Triton compiles them again)\n",
               VYRE_TRITON_QUARANTINE);
}

static void print_text(const triton_opts *o, const vyre_triton_cache *c,
                       const vyre_triton_problem *p, size_t n, const outcome *x)
{
    size_t f = 0; /* failures are in the problems' order */
    for (size_t i = 0, end; i < n; i = end) {
        end = group_end(p, n, i);
        for (size_t k = i; k < end; k++)
            print_line(p[k].kind, p[k].key, p[k].message,
                       x->state[k] == MOVED ? " (moved to " VYRE_TRITON_QUARANTINE ")" : "");
        if (f < x->n_fail && x->fail[f].at == i)
            print_line("quarantine-failed", p[i].key, x->fail[f++].err.message,
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
    outcome x = {.state = calloc(n ? n : 1, 1)};
    if (!x.state)
        abort();
    repair(o, c, p, n, &x);
    if (g_tool.json)
        print_json(o, c, p, n, &x);
    else
        print_text(o, c, p, n, &x);
    free(x.state);
    free(x.fail);
    free(p);
    return n || x.n_fail ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
