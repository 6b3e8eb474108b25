/*
 * cmd_triton_relocate.c - `vyre-cachectl triton relocate [--dry-run]`:
 * every manifest's child_paths pointed at where the cache is now, so a
 * cache copied or mounted elsewhere hits again. The directory is made
 * absolute by libcore (not resolved: Triton uses the path it is given as
 * is); every manifest is rewritten through the directory the scan opened.
 */
#include <stdio.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_json.h"
#include "tool_sanitize.h"

int cachectl_triton_relocate(const triton_opts *o, const vyre_triton_cache *c)
{
    const char *dir = c->abs_dir;
    vyre_error err;
    vyre_error_clear(&err);
    if (!o->dry_run && vyre_triton_cache_check_writable(c, &err))
        return cachectl_fail(&err);
    json_t *a = g_tool.json ? json_array() : NULL;
    size_t changed_n = 0, skipped = 0;
    int rc = TOOL_EXIT_OK;
    for (size_t i = 0; i < c->n_groups; i++) {
        const vyre_triton_group *g = &c->groups[i];
        if (!g->has_manifest)
            continue;
        if (*g->manifest_error) {
            skipped++;
            continue;
        }
        int changed = 0;
        vyre_error_clear(&err);
        if (vyre_triton_relocate(c, g, o->dry_run, &changed, &err)) {
            tool_report(&err);
            rc = TOOL_EXIT_ERROR;
            continue;
        }
        if (!changed)
            continue;
        changed_n++;
        if (a)
            json_array_append_new(a, json_pack("{s:o, s:o}", "key", tool_json_text(g->key),
                                               "manifest", tool_json_text(g->manifest_name)));
        else if (!g_cachectl.quiet) {
            printf("%s ", o->dry_run ? "would rewrite" : "rewrote");
            tool_clean_fputs(g->key, stdout);
            putchar('/');
            tool_clean_fputs(g->manifest_name, stdout);
            putchar('\n');
        }
    }
    if (a) {
        json_t *d = json_pack("{s:i, s:o, s:b, s:I, s:I, s:o}", "schema_version", 1,
                              "triton_cache_dir", tool_json_text(dir), "dry_run", o->dry_run,
                              "rewritten", (json_int_t)changed_n, "skipped_bad_manifests",
                              (json_int_t)skipped, "groups", a);
        tool_json_print(stdout, d);
    } else if (!g_cachectl.quiet) {
        printf("%zu manifest%s %s to ", changed_n, changed_n == 1 ? "" : "s",
               o->dry_run       ? "would point"
               : changed_n == 1 ? "now points"
                                : "now point");
        tool_clean_fputs(dir, stdout);
        putchar('\n');
        if (skipped)
            printf("%zu manifest%s skipped: unreadable (see 'vyre-cachectl triton verify')\n",
                   skipped, skipped == 1 ? "" : "s");
    }
    return rc;
}
