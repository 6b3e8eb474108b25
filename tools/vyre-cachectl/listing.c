/*
 * listing.c - the one listing code path of vyre-cachectl (listing.h): a
 * kind's description read into the row model, printed by its one renderer.
 */
#include "listing.h"

#include <stdio.h>

#include "cmds.h"
#include "tool_sanitize.h"
#include "vyre/units.h"

void cachectl_rows_size(tool_rows *rows, size_t c, uint64_t bytes)
{
    char buf[32];
    tool_rows_int(rows, c, (int64_t)bytes);
    vyre_format_size(bytes, buf, sizeof buf);
    tool_rows_shown(rows, c, buf);
}

void cachectl_rows_age(tool_rows *rows, size_t c, int64_t value, int64_t age_ns)
{
    char buf[32];
    tool_rows_int(rows, c, value);
    vyre_format_age(age_ns, buf, sizeof buf);
    tool_rows_shown(rows, c, buf);
}

int cachectl_rows_out(const char *sub, tool_rows_out *o)
{
    *o = g_cachectl.rows;
    return tool_rows_out_resolve(sub, o, TOOL_FMT_TABLE);
}

int cachectl_rows_print(const char *sub, tool_rows *rows, json_t *doc, const char *key)
{
    tool_rows_out o = {0};
    int rc = cachectl_rows_out(sub, &o);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    tool_rows_print(stdout, rows, o.fmt, o.width, doc, key);
    return 0;
}

int cachectl_list(const cachectl_listing *k, const void *entries, size_t n, const void *ctx,
                  json_t *doc)
{
    tool_rows *rows = tool_rows_new(k->cols, k->ncols);
    for (size_t i = 0; i < n; i++) {
        tool_rows_add(rows);
        k->fill(rows, entries, i, ctx);
    }
    int rc = 0;
    if (g_cachectl.quiet) {
        json_decref(doc);
        for (size_t i = 0; i < n; i++) {
            const char *s = tool_rows_text_at(rows, i, k->quiet_col);
            tool_clean_fputs(s ? s : "-", stdout);
            putchar('\n');
        }
    } else {
        if (k->order)
            tool_rows_order(rows, k->order, k->norder);
        for (size_t c = 0; c < k->ncols && c < 64; c++)
            if ((k->verbose_cols >> c & 1) && !g_cachectl.verbose)
                tool_rows_hide(rows, c);
        rc = cachectl_rows_print(k->sub, rows, doc, k->array_key);
    }
    tool_rows_free(rows);
    return rc;
}
