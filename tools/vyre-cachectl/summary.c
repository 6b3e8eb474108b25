/*
 * summary.c - the one printer of `stats` for every kind (summary.h).
 */
#include "summary.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "listing.h"
#include "tool_json.h"
#include "tool_sanitize.h"

#define MAX_LINES  48
#define MAX_TABLES 8

typedef struct line {
    int when;
    uint64_t n;
    const char *label;
    char *value;
} line;

typedef struct table {
    const char *title, *key;
    tool_rows *rows;
    size_t skipped; /* rows compact leaves out */
} table;

struct cachectl_summary {
    int label_width;
    line lines[MAX_LINES];
    size_t nlines;
    table tables[MAX_TABLES];
    size_t ntables;
};

static void *xcalloc(size_t n, size_t size)
{
    return tool_need(calloc(n, size));
}

cachectl_summary *cachectl_summary_new(int label_width)
{
    cachectl_summary *s = xcalloc(1, sizeof *s);
    s->label_width = label_width;
    return s;
}

void cachectl_summary_free(cachectl_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nlines; i++)
        free(s->lines[i].value);
    for (size_t i = 0; i < s->ntables; i++)
        tool_rows_free(s->tables[i].rows);
    free(s);
}

void cachectl_summary_line(cachectl_summary *s, int when, uint64_t n, const char *label,
                           const char *fmt, ...)
{
    if (s->nlines == MAX_LINES)
        return;
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    line *l = &s->lines[s->nlines++];
    l->value = xcalloc((size_t)(len > 0 ? len : 0) + 1, 1);
    vsnprintf(l->value, (size_t)(len > 0 ? len : 0) + 1, fmt, aq);
    va_end(aq);
    l->when = when;
    l->n = n;
    l->label = label;
}

tool_rows *cachectl_summary_table(cachectl_summary *s, const char *title, const char *key,
                                  const tool_rows_col *cols, size_t ncols)
{
    if (s->ntables == MAX_TABLES) {
        fprintf(stderr, "%s: error: too many tables in a summary\n", tool_prog());
        abort();
    }
    table *t = &s->tables[s->ntables++];
    t->title = title;
    t->key = key;
    t->rows = tool_rows_new(cols, ncols);
    return t->rows;
}

void cachectl_summary_count(cachectl_summary *s, tool_rows *rows, uint64_t n)
{
    if (n || g_cachectl.verbose)
        return;
    tool_rows_skip(rows);
    for (size_t i = 0; i < s->ntables; i++)
        s->tables[i].skipped += s->tables[i].rows == rows;
}

static int shown(const line *l)
{
    return g_cachectl.verbose || l->when == CACHECTL_SHOW || (l->when == CACHECTL_NONZERO && l->n);
}

/* The lines as people read them: labels padded, values made printable
 * and, when a width is in force, cut to it with '~' as a table's cell. */
static void print_lines(const cachectl_summary *s, int width)
{
    for (size_t i = 0; i < s->nlines; i++) {
        const line *l = &s->lines[i];
        if (!shown(l))
            continue;
        if (!*l->value) {
            printf("%s\n", l->label);
            continue;
        }
        size_t size = TOOL_CLEAN_SIZE(strlen(l->value));
        char *clean = xcalloc(size, 1);
        tool_clean(l->value, clean, size);
        int room = width - s->label_width - 1;
        if (width > 0 && room > 1 && strlen(clean) > (size_t)room)
            /* bounded: a value cut to the width asked for, marked '~' */
            printf("%-*s %.*s~\n", s->label_width, l->label, room - 1, clean);
        else
            printf("%-*s %s\n", s->label_width, l->label, clean);
        free(clean);
    }
}

/* The lines as a model of two columns (CSV, markdown): the label without
 * its colon and indent. */
static tool_rows *lines_model(const cachectl_summary *s, int all)
{
    static const tool_rows_col cols[] = {
        {"field", "FIELD", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
        {"value", "VALUE", TOOL_ROWS_TEXT, 0, 12, 0, NULL, 0},
    };
    tool_rows *rows = tool_rows_new(cols, 2);
    for (size_t i = 0; i < s->nlines; i++) {
        const line *l = &s->lines[i];
        if (!*l->value || (!all && !shown(l)))
            continue;
        const char *label = l->label + strspn(l->label, " ");
        size_t n = strlen(label);
        char *field = xcalloc(n + 1, 1);
        memcpy(field, label, n && label[n - 1] == ':' ? n - 1 : n);
        tool_rows_add(rows);
        tool_rows_text(rows, 0, field);
        tool_rows_text(rows, 1, l->value);
        free(field);
    }
    return rows;
}

int cachectl_summary_print(cachectl_summary *s, const char *sub, json_t *doc)
{
    tool_rows_out o = {0};
    int rc = cachectl_rows_out(sub, &o);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    if (o.fmt == TOOL_FMT_JSON) {
        for (size_t i = 0; i < s->ntables; i++)
            if (s->tables[i].key)
                json_object_set_new(doc, s->tables[i].key, tool_rows_json(s->tables[i].rows));
        tool_json_print(stdout, doc);
        return 0;
    }
    json_decref(doc);
    if (o.fmt == TOOL_FMT_TABLE) {
        print_lines(s, o.width);
    } else {
        tool_rows *rows = lines_model(s, o.fmt == TOOL_FMT_CSV);
        tool_rows_print(stdout, rows, o.fmt, o.width, NULL, NULL);
        tool_rows_free(rows);
    }
    for (size_t i = 0; i < s->ntables; i++) {
        const table *t = &s->tables[i];
        size_t n = tool_rows_count(t->rows);
        if (!n || (o.fmt != TOOL_FMT_CSV && n == t->skipped))
            continue;
        if (o.fmt != TOOL_FMT_TABLE)
            putchar('\n');
        /* The title (markdown: bold, without its colon). */
        int tl = t->title ? (int)strlen(t->title) : 0;
        if (tl && o.fmt == TOOL_FMT_MD)
            /* bounded: the title less its colon */
            printf("**%.*s**\n\n", tl - (t->title[tl - 1] == ':'), t->title);
        else if (tl && o.fmt == TOOL_FMT_TABLE)
            printf("%s\n", t->title);
        tool_rows_print(stdout, t->rows, o.fmt, o.width, NULL, NULL);
    }
    return 0;
}
