/*
 * cmd_triton_verify.c - `vyre-cachectl triton verify [--repair]`: the
 * problems libcore finds in a Triton cache, one line each, each naming its
 * group; --repair moves the groups Triton cannot use into the cache's
 * .vyre-quarantine folder (never deletes). Orphans and temp files are
 * listed, not moved: a running Triton may be writing them. The report is
 * verify_print.c's, as for TorchInductor's entries.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmd_triton.h"
#include "verify_print.h"

typedef struct result {
    const triton_opts *o;
    const vyre_triton_cache *c;
    const vyre_triton_problem *p;
} result;

static void get(const void *ctx, size_t i, cachectl_vproblem *out)
{
    const vyre_triton_problem *p = &((const result *)ctx)->p[i];
    *out = (cachectl_vproblem){p->key,         p->kind,          p->message, p->group_bad,
                               p->quarantined, &p->repair_error, NULL,       p->quarantined > 0};
}

static void json_problem(const void *ctx, size_t i, json_t *o)
{
    const vyre_triton_problem *p = &((const result *)ctx)->p[i];
    json_object_set_new(o, "key", json_string(p->key));
    json_object_set_new(o, "file", json_string(p->file));
}

static json_t *json_root(const void *ctx)
{
    const result *r = ctx;
    return json_pack("{s:i, s:s, s:s, s:I}", "schema_version", 1, "triton_cache_dir", r->o->path,
                     "triton_cache_dir_source", r->o->dir_source, "groups",
                     (json_int_t)r->c->n_groups);
}

static void checked(const void *ctx)
{
    size_t n = ((const result *)ctx)->c->n_groups;
    printf("%zu group%s checked, ", n, n == 1 ? "" : "s");
}

int cachectl_triton_verify(const triton_opts *o, const vyre_triton_cache *c)
{
    vyre_triton_problem *p;
    size_t n;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_verify(c, o->repair, &p, &n, &err))
        return cachectl_fail(&err);
    result r = {o, c, p};
    cachectl_verify k = {.cmd = "triton",
                         .who = "Triton",
                         .one = "group",
                         .many = "groups",
                         .quarantine = VYRE_TRITON_QUARANTINE,
                         .unusable_field = "group_unusable",
                         .name_entry = 1,
                         .n = n,
                         .ctx = &r,
                         .get = get,
                         .json_problem = json_problem,
                         .json_root = json_root,
                         .checked = checked};
    int rc = cachectl_verify_report(&k, o->repair);
    free(p);
    return rc;
}
