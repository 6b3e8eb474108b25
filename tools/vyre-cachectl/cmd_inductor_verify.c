/*
 * cmd_inductor_verify.c - `vyre-cachectl inductor verify [--repair]`: the
 * problems libcore finds in a TorchInductor cache, one line each, then
 * what was checked and what was not (pickles need Python's unpickler,
 * which runs code; kernels are checked as text, not as Python). --repair
 * moves the entries Inductor cannot use into the cache's .vyre-quarantine
 * folder (never deletes). The report is verify_print.c's, as for Triton's
 * groups.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cmd_inductor.h"
#include "verify_print.h"

typedef struct result {
    const inductor_opts *o;
    const vyre_inductor_cache *c;
    const vyre_inductor_report *r;
} result;

static void get(const void *ctx, size_t i, cachectl_vproblem *out)
{
    const vyre_inductor_problem *p = &((const result *)ctx)->r->problems[i];
    *out = (cachectl_vproblem){p->entry,       p->kind,          p->message, p->entry_bad,
                               p->quarantined, &p->repair_error, NULL,       p->quarantined > 0};
}

static void json_problem(const void *ctx, size_t i, json_t *o)
{
    const vyre_inductor_problem *p = &((const result *)ctx)->r->problems[i];
    json_object_set_new(o, "path", json_string(p->path));
    json_object_set_new(o, "entry", json_string(p->entry));
}

static json_t *counts_json(const uint64_t *n)
{
    json_t *o = json_object();
    for (int i = 0; i < VYRE_INDUCTOR_KINDS; i++)
        json_object_set_new(o, vyre_inductor_kind_name((vyre_inductor_kind)i),
                            json_integer((json_int_t)n[i]));
    return o;
}

static json_t *json_root(const void *ctx)
{
    const result *x = ctx;
    json_t *d = cachectl_inductor_json_root(x->o);
    json_object_set_new(d, "entries", json_integer((json_int_t)x->c->n_entries));
    json_object_set_new(d, "checked", counts_json(x->r->checked));
    json_object_set_new(d, "not_checked", counts_json(x->r->not_checked));
    json_object_set_new(d, "triton_cache_hash_not_checked",
                        json_integer((json_int_t)x->r->hashes_unchecked));
    return d;
}

static void checked(const void *ctx)
{
    const uint64_t *c = ((const result *)ctx)->r->checked;
    printf("%" PRIu64 " kernel%s, %" PRIu64 " autotune result%s, %" PRIu64
           " Triton group%s checked: ",
           c[VYRE_INDUCTOR_KERNEL], c[VYRE_INDUCTOR_KERNEL] == 1 ? "" : "s",
           c[VYRE_INDUCTOR_AUTOTUNE], c[VYRE_INDUCTOR_AUTOTUNE] == 1 ? "" : "s",
           c[VYRE_INDUCTOR_TRITON], c[VYRE_INDUCTOR_TRITON] == 1 ? "" : "s");
}

/* What was not checked, and why. */
static void unchecked(const void *ctx)
{
    static const char *const what[VYRE_INDUCTOR_KINDS][2] = {
        [VYRE_INDUCTOR_FXGRAPH] = {"FX graph entry", "FX graph entries"},
        [VYRE_INDUCTOR_AOTAUTOGRAD] = {"AOTAutograd entry", "AOTAutograd entries"},
        [VYRE_INDUCTOR_OTHER] = {"other entry", "other entries"},
    };
    const vyre_inductor_report *r = ((const result *)ctx)->r;
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

int cachectl_inductor_verify(const inductor_opts *o, const vyre_inductor_cache *c)
{
    vyre_inductor_report r;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_inductor_verify(c, o->repair, &r, &err))
        return cachectl_fail(&err);
    result x = {o, c, &r};
    cachectl_verify k = {.cmd = "inductor",
                         .who = "Inductor",
                         .one = "entry",
                         .many = "entries",
                         .quarantine = VYRE_INDUCTOR_QUARANTINE,
                         .unusable_field = "entry_unusable",
                         .n = r.n_problems,
                         .ctx = &x,
                         .get = get,
                         .json_problem = json_problem,
                         .json_root = json_root,
                         .checked = checked,
                         .after = unchecked};
    int rc = cachectl_verify_report(&k, o->repair);
    vyre_inductor_report_release(&r);
    return rc;
}
