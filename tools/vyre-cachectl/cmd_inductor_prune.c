/*
 * cmd_inductor_prune.c - `vyre-cachectl inductor prune|clear`: whole
 * entries of TorchInductor's cache removed by libcore
 * (vyre_inductor_prune: least recently used first, each renamed to a vyre
 * trash name before it is removed, nothing younger than a minute, no link
 * and no entry of another kind). One line per entry, then a summary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_inductor.h"
#include "tally.h"
#include "tool_json.h"
#include "tool_sanitize.h"

/* TorchInductor's words: entries, with the trash and foreign names. */
static const cachectl_line g_summary[] = {
    {-1, "{Removed|Would remove} {removed} {noun removed} ({removed_bytes}); {left|would leave} "
         "{kept} ({kept_bytes})"},
    {TALLY_YOUNG, "Left {young} {noun young} modified in the last minute (a compile may be "
                  "writing {it/them young})"},
    {TALLY_TRASH, "{Finished|Would finish} {trash} vyre trash {noun trash} a stopped prune left"},
    {TALLY_FAILED, "Could not remove {failed} {noun failed}"},
    {TALLY_FOREIGN, "Left {foreign} foreign {noun foreign}: not names TorchInductor writes, never "
                    "removed"},
    {0, NULL},
};
static const cachectl_jfield g_fields[] = {
    {"removed_entries", TALLY_REMOVED},
    {"removed_bytes", TALLY_REMOVED_BYTES},
    {"kept_entries", TALLY_KEPT},
    {"kept_bytes", TALLY_KEPT_BYTES},
    {"young_entries", TALLY_YOUNG},
    {"failed_entries", TALLY_FAILED},
    {"trash_finished", TALLY_TRASH},
    {"foreign_entries", TALLY_FOREIGN},
    {NULL, 0},
};
static const cachectl_kind g_inductor = {
    "entry", "entries", "{verb} {kind:-11} {size:10}  {path}", g_summary, g_fields,
};

typedef struct prune_out {
    const inductor_opts *o;
    json_t *list; /* --json: the entries, else NULL */
} prune_out;

static void on_entry(const vyre_inductor_entry *e, int removed, void *user)
{
    prune_out *x = user;
    if (x->list) {
        json_array_append_new(x->list, json_pack("{s:s, s:s, s:I, s:I, s:b}", "path", e->path,
                                                 "kind", vyre_inductor_kind_name(e->kind), "bytes",
                                                 (json_int_t)e->bytes, "last_use_unix_ns",
                                                 (json_int_t)e->last_use_ns, "removed", removed));
        return;
    }
    cachectl_row row = {.kind = vyre_inductor_kind_name(e->kind),
                        .path = e->path,
                        .bytes = e->bytes,
                        .failed = !removed};
    if (!g_cachectl.quiet)
        cachectl_row_print(&g_inductor, NULL, &row, x->o->dry_run);
}

/* The foreign names prune and clear leave, one line each: someone's files
 * in the cache (`go/main.py`), never removed. */
static void print_foreign(const vyre_inductor_cache *c)
{
    for (size_t i = 0; i < c->n_entries; i++) {
        const vyre_inductor_entry *e = &c->entries[i];
        cachectl_row row = {.kind = "foreign", .path = e->path, .bytes = e->bytes};
        if (e->foreign)
            cachectl_row_print(&g_inductor, "left {kind:-11} {size:10}  {path}", &row, 0);
    }
}

static void tally(const vyre_inductor_prune_result *r, int dry_run, cachectl_tally *t)
{
    memset(t, 0, sizeof *t);
    t->dry_run = dry_run;
    t->v[TALLY_REMOVED] = r->removed;
    t->v[TALLY_REMOVED_BYTES] = r->removed_bytes;
    t->v[TALLY_KEPT] = r->kept;
    t->v[TALLY_KEPT_BYTES] = r->kept_bytes;
    t->v[TALLY_YOUNG] = r->young;
    t->v[TALLY_FAILED] = r->failed;
    t->v[TALLY_TRASH] = r->trash;
    t->v[TALLY_FOREIGN] = r->foreign;
}

static void print_json(const inductor_opts *o, const cachectl_tally *t, json_t *list)
{
    json_t *d = cachectl_inductor_json_root(o);
    json_object_set_new(d, "action", json_string(o->action));
    json_object_set_new(d, "dry_run", json_boolean(o->dry_run));
    json_object_set_new(d, "max_bytes",
                        o->max_bytes ? json_integer((json_int_t)o->max_bytes) : json_null());
    json_object_set_new(d, "max_age_ns", o->max_age_ns ? json_integer(o->max_age_ns) : json_null());
    json_object_set_new(d, "entries", list);
    cachectl_tally_json(&g_inductor, t, d);
    tool_json_print(stdout, d);
}

int cachectl_inductor_prune(const inductor_opts *o, const vyre_inductor_cache *c)
{
    vyre_inductor_prune_opts po = {o->max_bytes, o->max_age_ns, !strcmp(o->action, "clear"),
                                   o->dry_run};
    prune_out x = {o, g_tool.json ? json_array() : NULL};
    vyre_inductor_prune_result r;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_inductor_prune(c, &po, on_entry, &x, &r, &err);
    if (rc)
        tool_report(&err);
    cachectl_tally t;
    tally(&r, o->dry_run, &t);
    if (x.list)
        print_json(o, &t, x.list);
    else if (!g_cachectl.quiet) {
        print_foreign(c);
        cachectl_tally_print(&g_inductor, &t);
    }
    if (rc)
        return TOOL_EXIT_ERROR;
    if (o->max_bytes && r.kept_bytes > o->max_bytes) {
        char want[32], left[32];
        vyre_format_size(o->max_bytes, want, sizeof want);
        vyre_format_size(r.kept_bytes, left, sizeof left);
        fprintf(stderr,
                "%s: error: could not bring the TorchInductor cache under --max-size %s: %s "
                "are left\n"
                "hint: what is left was modified in the last minute, is a link, or is not an "
                "entry vyre removes ('vyre-cachectl inductor ls' lists them)\n",
                tool_prog(), want, left);
        return TOOL_EXIT_PROBLEMS;
    }
    return TOOL_EXIT_OK;
}
