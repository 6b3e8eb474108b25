/*
 * test_table.c - tools/common/tool_table.c: fitting a table into 80, 120 and
 * 200 columns (and narrower than its must-keep columns): no line longer
 * than the width, the most important columns kept, a dropped column never
 * more important than a kept one, exact output of a small table; and
 * tools/common/tool_rows.c, the row model on top of it: the same rows as
 * table, markdown, CSV and JSON, typed, markdown fitted too.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_rows.h"
#include "tool_table.h"

/* The columns of vyre-bench's points table, with its priorities. */
static const tool_table_col g_cols[] = {
    {"benchmark", 0, 14, 0}, {"axes", 1, 10, 0},     {"dev", 7, 0, 0},   {"mode", 6, 0, 0},
    {"n", 6, 0, 1},          {"median us", 0, 0, 1}, {"p5 us", 5, 0, 1}, {"p95 us", 4, 0, 1},
    {"noise", 2, 0, 1},      {"outl", 8, 0, 1},      {"thr", 8, 0, 1},   {"metric", 2, 0, 1},
    {"stop", 3, 0, 0},       {"note", 9, 10, 0},
};
#define NC (sizeof g_cols / sizeof g_cols[0])

static const char *const g_cells[][NC] = {
    {"memcpy.h2d.pageable", "bytes=67108864 N=16777216", "0", "hot", "112", "9153.21", "9101.50",
     "9244.90", "0.31%", "2", "0", "7.33 GB/s", "ok", "clock varied during the point"},
    {"launch.stream", "-", "0", "host", "10000", "3.95", "3.80", "4.40", "1.20%", "45", "0", "-",
     "tmo", ""},
    {"sweep", "N=1048576 BLOCK=256", "1", "cold", "57", "12.41", "12.30", "12.77", "0.44%", "0",
     "3", "1689 GB/s", "ok", ""},
};
#define NR (sizeof g_cells / sizeof g_cells[0])

/* Renders the table at width into a string (the caller frees it). */
static char *render(int width, int *widths)
{
    int natural[NC];
    tool_table_natural(g_cols, NC, &g_cells[0][0], NR, natural);
    int total = tool_table_fit(g_cols, NC, natural, width, widths);
    /* Below the must-keep columns' minimums (14 + 2 + 9) only the lines are cut. */
    if (width >= 25)
        cr_assert_leq(total, width, "fit says %d for width %d", total, width);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    tool_table_render(f, g_cols, NC, widths, &g_cells[0][0], NR, width);
    fclose(f);
    return buf;
}

static void check_lines_fit(const char *s, int width, size_t want_lines)
{
    size_t lines = 0;
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "unterminated line in:\n%s", s);
        cr_assert_leq((int)(nl - p), width, "line %zu is %d long at width %d:\n%s", lines,
                      (int)(nl - p), width, s);
        cr_assert(nl == p || nl[-1] != ' ', "trailing blank on line %zu:\n%s", lines, s);
        lines++;
        p = nl + 1;
    }
    cr_assert_eq(lines, want_lines, "%s", s);
}

/* Every dropped column is at least as droppable as every kept one, and the
 * priority-0 columns are all kept. */
static void check_priorities(const int *widths)
{
    for (size_t d = 0; d < NC; d++) {
        if (widths[d] > 0)
            continue;
        cr_assert_gt(g_cols[d].priority, 0, "'%s' must stay", g_cols[d].name);
        for (size_t k = 0; k < NC; k++)
            if (widths[k] > 0)
                cr_assert_leq(g_cols[k].priority, g_cols[d].priority,
                              "'%s' (priority %d) kept while '%s' (%d) was dropped", g_cols[k].name,
                              g_cols[k].priority, g_cols[d].name, g_cols[d].priority);
    }
}

static int header_has(const char *s, const char *name)
{
    size_t hl = strcspn(s, "\n");
    size_t nl = strlen(name);
    for (const char *p = s; p + nl <= s + hl; p++)
        if (strncmp(p, name, nl) == 0 && (p == s || p[-1] == ' ') &&
            (p + nl == s + hl || p[nl] == ' '))
            return 1;
    return 0;
}

Test(table, fits_80_120_200)
{
    static const int ws[] = {80, 120, 200};
    for (size_t i = 0; i < 3; i++) {
        int widths[NC];
        char *s = render(ws[i], widths);
        check_lines_fit(s, ws[i], 2 + NR);
        check_priorities(widths);
        cr_assert(header_has(s, "benchmark"), "%s", s);
        cr_assert(header_has(s, "median us"), "%s", s);
        free(s);
    }
}

Test(table, what_each_width_keeps)
{
    int widths[NC];
    char *s = render(80, widths);
    /* 80: the numbers that matter and the stop code; not the counts. */
    cr_assert(header_has(s, "axes") && header_has(s, "noise") && header_has(s, "metric"), "%s", s);
    cr_assert(!header_has(s, "outl") && !header_has(s, "dev") && !header_has(s, "note"), "%s", s);
    free(s);
    s = render(120, widths);
    cr_assert(header_has(s, "p5 us") && header_has(s, "p95 us") && header_has(s, "stop"), "%s", s);
    cr_assert(!header_has(s, "note"), "%s", s);
    free(s);
    s = render(200, widths); /* everything fits at its natural width */
    for (size_t c = 0; c < NC; c++)
        cr_assert(header_has(s, g_cols[c].name), "'%s' missing:\n%s", g_cols[c].name, s);
    cr_assert(strstr(s, "clock varied during the point"), "%s", s);
    cr_assert(strstr(s, "bytes=67108864 N=16777216"), "%s", s);
    free(s);
}

Test(table, no_limit_keeps_everything)
{
    int widths[NC], natural[NC];
    tool_table_natural(g_cols, NC, &g_cells[0][0], NR, natural);
    tool_table_fit(g_cols, NC, natural, 0, widths);
    for (size_t c = 0; c < NC; c++)
        cr_assert_eq(widths[c], natural[c], "column %s", g_cols[c].name);
}

Test(table, narrower_than_the_kept_columns_cuts_lines)
{
    for (int w = 20; w < 40; w += 3) {
        int widths[NC];
        char *s = render(w, widths);
        check_lines_fit(s, w, 2 + NR);
        cr_assert_gt(widths[0], 0);
        cr_assert_gt(widths[5], 0);
        free(s);
    }
}

Test(table, exact_small_table)
{
    static const tool_table_col cols[] = {
        {"name", 0, 4, 0}, {"value", 0, 0, 1}, {"extra", 1, 0, 0}};
    static const char *const cells[] = {"a-long-name", "1.50", "x", "b", "12.25", NULL};
    int natural[3], widths[3];
    tool_table_natural(cols, 3, cells, 2, natural);
    cr_assert_eq(natural[0], 11);
    cr_assert_eq(natural[1], 5);
    cr_assert_eq(natural[2], 5);
    /* 11 + 2 + 5 + 2 + 5 = 25: at 18 'extra' goes, at 14 'name' shrinks to 7. */
    cr_assert_eq(tool_table_fit(cols, 3, natural, 25, widths), 25);
    cr_assert_eq(tool_table_fit(cols, 3, natural, 18, widths), 18);
    cr_assert_eq(widths[2], 0);
    cr_assert_eq(tool_table_fit(cols, 3, natural, 14, widths), 14);
    cr_assert_eq(widths[0], 7);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tool_table_render(f, cols, 3, widths, cells, 2, 14);
    fclose(f);
    cr_assert_str_eq(buf, "name     value\n"
                          "-------  -----\n"
                          "a-long~   1.50\n"
                          "b        12.25\n");
    free(buf);
}

/* ---- tool_rows: one model, every format --------------------------------- */

enum { K_NAME, K_N, K_TIME, K_RATIO, K_HIDDEN, NK };
static const tool_rows_col g_rcols[NK] = {
    [K_NAME] = {"name", "NAME", TOOL_ROWS_TEXT, 0, 6, 0, NULL},
    [K_N] = {"count", "N", TOOL_ROWS_INT, 2, 0, 0, NULL},
    [K_TIME] = {"median_ns", "MEDIAN", TOOL_ROWS_TIME, 1, 0, 0, NULL},
    [K_RATIO] = {"noise_ratio", "NOISE", TOOL_ROWS_RATIO, 3, 0, 1, NULL},
    [K_HIDDEN] = {"extra", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL},
};

static tool_rows *sample_rows(void)
{
    tool_rows *t = tool_rows_new(g_rcols, NK);
    tool_rows_add(t);
    tool_rows_text(t, K_NAME, "launch.stream|x");
    tool_rows_int(t, K_N, 400);
    tool_rows_real(t, K_TIME, 3950.5);
    tool_rows_real(t, K_RATIO, 0.0123);
    tool_rows_text(t, K_HIDDEN, "a,b");
    tool_rows_add(t); /* unknowns: null, shown "-" */
    tool_rows_text(t, K_NAME, "memcpy");
    tool_rows_real(t, K_TIME, NAN);
    return t;
}

static char *render_rows(tool_rows *t, tool_rows_fmt fmt, int width)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    cr_assert_not_null(f);
    tool_rows_print(f, t, fmt, width, NULL, "rows");
    fclose(f);
    return buf;
}

Test(rows, the_same_rows_in_every_format)
{
    tool_rows *t = sample_rows();
    char *s = render_rows(t, TOOL_FMT_TABLE, 0);
    cr_assert_str_eq(s, "NAME               N   MEDIAN  NOISE\n"
                        "---------------  ---  -------  -----\n"
                        "launch.stream|x  400  3.95 us   1.2%\n"
                        "memcpy             -        -      -\n");
    free(s);
    s = render_rows(t, TOOL_FMT_MD, 0);
    cr_assert_str_eq(s, "| NAME             |   N |  MEDIAN | NOISE |\n"
                        "|------------------|----:|--------:|------:|\n"
                        "| launch.stream\\|x | 400 | 3.95 us |  1.2% |\n"
                        "| memcpy           |   - |       - |     - |\n");
    free(s);
    s = render_rows(t, TOOL_FMT_CSV, 0);
    cr_assert_str_eq(s, "name,count,median_ns,noise_ratio,extra\n"
                        "launch.stream|x,400,3950.5,0.0123,\"a,b\"\n"
                        "memcpy,,,,\n");
    free(s);
    s = render_rows(t, TOOL_FMT_JSON, 0);
    cr_assert(strstr(s, "\"median_ns\": 3951") || strstr(s, "\"median_ns\": 3950"), "%s", s);
    cr_assert(strstr(s, "\"noise_ratio\": 0.0123"), "%s", s);
    cr_assert(strstr(s, "\"extra\": \"a,b\""), "%s", s);
    cr_assert(strstr(s, "\"count\": null"), "%s", s);
    free(s);
    tool_rows_free(t);
}

Test(rows, table_and_markdown_fit_the_width_by_priority)
{
    tool_rows *t = sample_rows();
    for (int w = 20; w <= 40; w++) {
        for (int f = 0; f < 2; f++) {
            char *s = render_rows(t, f ? TOOL_FMT_MD : TOOL_FMT_TABLE, w);
            for (const char *p = s; *p;) {
                size_t len = strcspn(p, "\n");
                cr_assert_leq(len, (size_t)w, "%s at %d:\n%s", f ? "md" : "table", w, s);
                p += len + (p[len] == '\n');
            }
            free(s);
        }
    }
    /* At 26: NOISE (3) and N (2) go, MEDIAN (1) stays. */
    char *s = render_rows(t, TOOL_FMT_TABLE, 26);
    cr_assert(strstr(s, "MEDIAN") && !strstr(s, "NOISE") && !strstr(s, " N "), "%s", s);
    cr_assert(tool_rows_kept(t, K_TIME) && !tool_rows_kept(t, K_RATIO), "%s", s);
    free(s);
    tool_rows_free(t);
}

Test(rows, order_hide_and_titles_change_the_table_only)
{
    tool_rows *t = sample_rows();
    static const size_t order[] = {K_TIME, K_NAME};
    tool_rows_order(t, order, 2);
    tool_rows_title(t, K_TIME, "median us");
    tool_rows_hide(t, K_NAME);
    char *s = render_rows(t, TOOL_FMT_TABLE, 0);
    cr_assert_str_eq(s, "median us\n---------\n  3.95 us\n        -\n");
    free(s);
    s = render_rows(t, TOOL_FMT_CSV, 0);
    cr_assert(strncmp(s, "name,count,median_ns,", 21) == 0, "%s", s);
    free(s);
    tool_rows_free(t);
}

/* Booleans, nested JSON members and rows a compact table leaves out: the
 * table and markdown show them as people read them, CSV and JSON keep
 * them whole (vyre-cachectl's listings and stats). */
Test(rows, booleans_json_cells_and_skipped_rows)
{
    static const tool_rows_col cols[] = {
        {"name", "NAME", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
        {"stale", "STALE", TOOL_ROWS_BOOL, 0, 0, 0, NULL, 0},
        {"kernels", "KERNELS", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
    };
    tool_rows *t = tool_rows_new(cols, 3);
    tool_rows_add(t);
    tool_rows_text(t, 0, "a");
    tool_rows_int(t, 1, 1);
    tool_rows_json_cell(t, 2, json_pack("[s, s]", "k1", "k2"));
    tool_rows_add(t);
    tool_rows_text(t, 0, "b");
    tool_rows_int(t, 1, 0);
    tool_rows_json_cell(t, 2, json_array());
    tool_rows_shown(t, 2, "none");
    tool_rows_add(t);
    tool_rows_text(t, 0, "zero");
    tool_rows_skip(t);
    cr_assert_str_eq(tool_rows_text_at(t, 1, 0), "b");
    cr_assert_null(tool_rows_text_at(t, 1, 1));
    cr_assert_null(tool_rows_text_at(t, 3, 0));
    char *s = render_rows(t, TOOL_FMT_TABLE, 0);
    cr_assert_str_eq(s, "NAME  STALE  KERNELS\n"
                        "----  -----  -----------\n"
                        "a       yes  [\"k1\",\"k2\"]\n"
                        "b        no  none\n");
    free(s);
    s = render_rows(t, TOOL_FMT_CSV, 0);
    cr_assert_str_eq(s, "name,stale,kernels\n"
                        "a,true,\"[\"\"k1\"\",\"\"k2\"\"]\"\n"
                        "b,false,[]\n"
                        "zero,,\n");
    free(s);
    json_t *j = tool_rows_json(t);
    cr_assert_eq(json_array_size(j), 3);
    cr_assert(json_is_true(json_object_get(json_array_get(j, 0), "stale")));
    cr_assert(json_is_false(json_object_get(json_array_get(j, 1), "stale")));
    cr_assert(json_is_null(json_object_get(json_array_get(j, 2), "stale")));
    cr_assert_eq(json_array_size(json_object_get(json_array_get(j, 0), "kernels")), 2);
    json_decref(j);
    tool_rows_free(t);
}
