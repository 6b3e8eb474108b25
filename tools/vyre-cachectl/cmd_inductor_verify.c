/*
 * cmd_inductor_verify.c - `vyre-cachectl inductor verify [--repair]`: the
 * problems libcore finds in a TorchInductor cache, one line each, then
 * what was checked and what was not (pickles need Python's unpickler,
 * which runs code; kernels are checked as text, not as Python). --repair
 * moves the entries Inductor cannot use into the cache's .vyre-quarantine
 * folder (never deletes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_inductor.h"
#include "repair.h"
#include "tool_json.h"
#include "tool_sanitize.h"

/* The problems as repair sees them: each names its entry. */
typedef struct problems {
    const vyre_inductor_cache *c;
    const vyre_inductor_problem *p;
} problems;

static const char *entry_of(const void *ctx, size_t i)
{
    return ((const problems *)ctx)->p[i].entry;
}

static int unusable(const void *ctx, size_t i)
{
    return ((const problems *)ctx)->p[i].entry_bad;
}

static int quarantine(const void *ctx, const char *entry, vyre_error *err)
{
    return vyre_inductor_quarantine(((const problems *)ctx)->c, entry, err);
}

static json_t *counts_json(const uint64_t *n)
{
    json_t *o = json_object();
    for (int i = 0; i < VYRE_INDUCTOR_KINDS; i++)
        json_object_set_new(o, vyre_inductor_kind_name((vyre_inductor_kind)i),
                            json_integer((json_int_t)n[i]));
    return o;
}

static void print_json(const inductor_opts *o, const vyre_inductor_cache *c,
                       const vyre_inductor_report *r, const cachectl_repair *x)
{
    json_t *d = cachectl_inductor_json_root(o);
    json_object_set_new(d, "entries", json_integer((json_int_t)c->n_entries));
    json_object_set_new(d, "checked", counts_json(r->checked));
    json_object_set_new(d, "not_checked", counts_json(r->not_checked));
    json_object_set_new(d, "triton_cache_hash_not_checked",
                        json_integer((json_int_t)r->hashes_unchecked));
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_problems; i++) {
        const vyre_inductor_problem *p = &r->problems[i];
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "path", p->path, "entry", p->entry,
                         "kind", p->kind, "message", p->message, "entry_unusable", p->entry_bad,
                         "quarantined", cachectl_repair_state(x, i) == REPAIR_MOVED));
    }
    json_object_set_new(d, "problems", a);
    json_object_set_new(d, "clean", json_boolean(r->n_problems == 0));
    tool_json_print(stdout, d);
}

static void print_unchecked(const vyre_inductor_report *r)
{
    static const char *const what[VYRE_INDUCTOR_KINDS][2] = {
        [VYRE_INDUCTOR_FXGRAPH] = {"FX graph entry", "FX graph entries"},
        [VYRE_INDUCTOR_AOTAUTOGRAD] = {"AOTAutograd entry", "AOTAutograd entries"},
        [VYRE_INDUCTOR_OTHER] = {"other entry", "other entries"},
    };
    for (int k = 0; k < VYRE_INDUCTOR_KINDS; k++) {
        uint64_t n = r->not_checked[k];
        if (n && what[k][0])
            printf("not checked: %" PRIu64 " %s (%s)\n", n, what[k][n != 1],
                   k == VYRE_INDUCTOR_OTHER ? "not Inductor's kernels, autotune results or "
                                              "entries: left alone"
                                            : "pickles: reading them needs Python's unpickler, "
                                              "which runs code");
    }
    if (r->hashes_unchecked)
        printf("not checked: %" PRIu64 " triton_cache_hash (no nested Triton cache: "
               "TRITON_CACHE_DIR was set)\n",
               r->hashes_unchecked);
    if (r->checked[VYRE_INDUCTOR_KERNEL])
        printf("not parsed: kernels are checked as UTF-8 text, not as Python\n");
}

static void print_text(const inductor_opts *o, const vyre_inductor_report *r,
                       const cachectl_repair *x)
{
    for (size_t i = 0; i < r->n_problems; i++) {
        printf("%s: ", r->problems[i].kind);
        tool_clean_fputs(r->problems[i].message, stdout);
        printf("%s\n", cachectl_repair_state(x, i) == REPAIR_MOVED
                           ? " (moved to " VYRE_INDUCTOR_QUARANTINE ")"
                           : "");
    }
    if (g_cachectl.quiet)
        return;
    size_t bad = x->bad_entries;
    const uint64_t *c = r->checked;
    printf("%" PRIu64 " kernel%s, %" PRIu64 " autotune result%s, %" PRIu64
           " Triton group%s checked: %zu unusable, %zu problem%s\n",
           c[VYRE_INDUCTOR_KERNEL], c[VYRE_INDUCTOR_KERNEL] == 1 ? "" : "s",
           c[VYRE_INDUCTOR_AUTOTUNE], c[VYRE_INDUCTOR_AUTOTUNE] == 1 ? "" : "s",
           c[VYRE_INDUCTOR_TRITON], c[VYRE_INDUCTOR_TRITON] == 1 ? "" : "s", bad, r->n_problems,
           r->n_problems == 1 ? "" : "s");
    print_unchecked(r);
    if (bad && !o->repair)
        printf("hint: 'vyre-cachectl inductor verify --repair' moves the unusable entries "
               "into %s (Inductor compiles them again)\n",
               VYRE_INDUCTOR_QUARANTINE);
}

int cachectl_inductor_verify(const inductor_opts *o, const vyre_inductor_cache *c)
{
    vyre_inductor_report r;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_inductor_verify(c, &r, &err))
        return cachectl_fail(&err);
    size_t n = r.n_problems;
    problems ps = {c, r.problems};
    cachectl_problems cp = {n, &ps, entry_of, unusable, quarantine};
    cachectl_repair x;
    cachectl_repair_run(&cp, o->repair, &x);
    for (size_t i = 0; i < x.n_fail; i++)
        tool_report(&x.errs[i]);
    int rc = x.n_fail ? TOOL_EXIT_ERROR : 0;
    if (g_tool.json)
        print_json(o, c, &r, &x);
    else
        print_text(o, &r, &x);
    cachectl_repair_release(&x);
    vyre_inductor_report_release(&r);
    if (rc)
        return rc;
    return n ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
