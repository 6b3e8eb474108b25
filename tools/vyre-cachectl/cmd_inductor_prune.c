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
#include "tool_json.h"
#include "tool_sanitize.h"

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
    if (g_cachectl.quiet)
        return;
    char size[32];
    vyre_format_size(e->bytes, size, sizeof size);
    printf("%s %-11s %10s  ",
           x->o->dry_run ? "would remove"
           : removed     ? "removed"
                         : "could not remove",
           vyre_inductor_kind_name(e->kind), size);
    tool_clean_fputs(e->path, stdout);
    putchar('\n');
}

/* The foreign names prune and clear leave, one line each: someone's files
 * in the cache (`go/main.py`), never removed. */
static void print_foreign(const vyre_inductor_cache *c)
{
    for (size_t i = 0; i < c->n_entries; i++) {
        const vyre_inductor_entry *e = &c->entries[i];
        if (!e->foreign)
            continue;
        char size[32];
        vyre_format_size(e->bytes, size, sizeof size);
        printf("left %-11s %10s  ", "foreign", size);
        tool_clean_fputs(e->path, stdout);
        putchar('\n');
    }
}

static void print_summary(const inductor_opts *o, const vyre_inductor_prune_result *r)
{
    char size[32], left[32];
    vyre_format_size(r->removed_bytes, size, sizeof size);
    vyre_format_size(r->kept_bytes, left, sizeof left);
    printf("%s %" PRIu64 " entr%s (%s); %s %" PRIu64 " (%s)\n",
           o->dry_run ? "Would remove" : "Removed", r->removed, r->removed == 1 ? "y" : "ies", size,
           o->dry_run ? "would leave" : "left", r->kept, left);
    if (r->young)
        printf("Left %" PRIu64 " entr%s modified in the last minute (a compile may be writing "
               "%s)\n",
               r->young, r->young == 1 ? "y" : "ies", r->young == 1 ? "it" : "them");
    if (r->trash)
        printf("%s %" PRIu64 " vyre trash entr%s a stopped prune left\n",
               o->dry_run ? "Would finish" : "Finished", r->trash, r->trash == 1 ? "y" : "ies");
    if (r->failed)
        printf("Could not remove %" PRIu64 " entr%s\n", r->failed, r->failed == 1 ? "y" : "ies");
    if (r->foreign)
        printf("Left %" PRIu64 " foreign entr%s: not names TorchInductor writes, never removed\n",
               r->foreign, r->foreign == 1 ? "y" : "ies");
}

static void print_json(const inductor_opts *o, const vyre_inductor_prune_result *r, json_t *list)
{
    json_t *d = cachectl_inductor_json_root(o);
    json_object_set_new(d, "action", json_string(o->action));
    json_object_set_new(d, "dry_run", json_boolean(o->dry_run));
    json_object_set_new(d, "max_bytes",
                        o->max_bytes ? json_integer((json_int_t)o->max_bytes) : json_null());
    json_object_set_new(d, "max_age_ns", o->max_age_ns ? json_integer(o->max_age_ns) : json_null());
    json_object_set_new(d, "entries", list);
    json_object_set_new(d, "removed_entries", json_integer((json_int_t)r->removed));
    json_object_set_new(d, "removed_bytes", json_integer((json_int_t)r->removed_bytes));
    json_object_set_new(d, "kept_entries", json_integer((json_int_t)r->kept));
    json_object_set_new(d, "kept_bytes", json_integer((json_int_t)r->kept_bytes));
    json_object_set_new(d, "young_entries", json_integer((json_int_t)r->young));
    json_object_set_new(d, "failed_entries", json_integer((json_int_t)r->failed));
    json_object_set_new(d, "trash_finished", json_integer((json_int_t)r->trash));
    json_object_set_new(d, "foreign_entries", json_integer((json_int_t)r->foreign));
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
    if (x.list)
        print_json(o, &r, x.list);
    else if (!g_cachectl.quiet) {
        print_foreign(c);
        print_summary(o, &r);
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
