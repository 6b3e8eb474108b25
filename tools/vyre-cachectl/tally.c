/*
 * tally.c - one printer for what prune and clear of every kind say (see
 * tally.h): the templates of a kind expanded with a tally's counts or a
 * removed entry's fields.
 */
#include "tally.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tool_sanitize.h"
#include "vyre/units.h"

/* A field's value. */
typedef struct value {
    enum { V_NONE, V_STR, V_NUM, V_SIZE } type;
    const char *s;
    uint64_t u;
} value;

typedef void (*lookup_fn)(const void *ctx, const char *name, size_t n, value *out);

static const char *const g_tally_names[TALLY_N] = {
    "examined",   "removed",     "removed_bytes", "removed_inodes",   "kept",
    "kept_bytes", "kept_inodes", "young",         "young_bytes",      "failed",
    "trash",      "foreign",     "quarantine",    "quarantine_bytes", "total_bytes",
};

static int is(const char *name, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(name, word, n) == 0;
}

static int tally_index(const char *name, size_t n)
{
    for (int i = 0; i < TALLY_N; i++)
        if (is(name, n, g_tally_names[i]))
            return i;
    return -1;
}

static void tally_lookup(const void *ctx, const char *name, size_t n, value *out)
{
    const cachectl_tally *t = ctx;
    int i = tally_index(name, n);
    if (i >= 0) {
        out->type = n > 6 && memcmp(name + n - 6, "_bytes", 6) == 0 ? V_SIZE : V_NUM;
        out->u = t->v[i];
    } else if (is(name, n, "reasons") || is(name, n, "dir")) {
        out->type = V_STR;
        out->s = *name == 'r' ? t->reasons : t->dir;
    }
}

typedef struct row_ctx {
    const cachectl_row *r;
    int dry_run;
} row_ctx;

static void row_lookup(const void *ctx, const char *name, size_t n, value *out)
{
    const row_ctx *x = ctx;
    const cachectl_row *r = x->r;
    const struct {
        const char *name, *s;
    } strs[] = {
        {"key", r->key},
        {"name", r->name},
        {"kind", r->kind},
        {"arch", r->arch},
        {"reason", r->reason},
        {"path", r->path},
        {"verb", x->dry_run  ? "would remove"
                 : r->failed ? "could not remove"
                             : "removed"},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (is(name, n, strs[i].name)) {
            out->type = V_STR;
            out->s = strs[i].s;
            return;
        }
    out->type = is(name, n, "size") ? V_SIZE : is(name, n, "inodes") ? V_NUM : V_NONE;
    out->u = out->type == V_SIZE ? r->bytes : r->inodes;
}

/* Prints v as printf's "%SPECs" would, the raw text cut to PREC bytes and
 * made printable first; without a spec, printable and whole. */
static void put_value(const value *v, const char *spec, size_t nspec)
{
    char raw[64];
    const char *s = v->s ? v->s : "";
    if (v->type == V_NUM)
        snprintf(raw, sizeof raw, "%" PRIu64, v->u);
    if (v->type == V_SIZE)
        vyre_format_size(v->u, raw, sizeof raw);
    if (v->type == V_NUM || v->type == V_SIZE)
        s = raw;
    if (!nspec) {
        tool_clean_fputs(s, stdout);
        return;
    }
    size_t i = 0;
    int left = spec[0] == '-', width = 0, prec = -1;
    for (i = (size_t)left; i < nspec && spec[i] >= '0' && spec[i] <= '9'; i++)
        width = width * 10 + (spec[i] - '0');
    if (i < nspec && spec[i] == '.')
        for (prec = 0, i++; i < nspec && spec[i] >= '0' && spec[i] <= '9'; i++)
            prec = prec * 10 + (spec[i] - '0');
    char cut[TOOL_CLEAN_SIZE(48)], clean[TOOL_CLEAN_SIZE(48)];
    if (prec >= 0) {
        snprintf(cut, sizeof cut, "%.*s", prec, s);
        s = cut;
    }
    printf(left ? "%-*s" : "%*s", width, tool_clean(s, clean, sizeof clean));
}

/* {noun N}, {ONE/MANY N}: the words for the count N. */
static void put_plural(const cachectl_kind *k, const char *in, size_t n, lookup_fn look,
                       const void *ctx)
{
    const char *sp = memchr(in, ' ', n), *slash = memchr(in, '/', (size_t)(sp - in));
    value v = {V_NONE, NULL, 0};
    look(ctx, sp + 1, n - (size_t)(sp + 1 - in), &v);
    int one = v.u == 1;
    if (!slash)
        fputs(one ? k->one : k->many, stdout);
    else if (one)
        fwrite(in, 1, (size_t)(slash - in), stdout);
    else
        fwrite(slash + 1, 1, (size_t)(sp - slash - 1), stdout);
}

/* Expands template t on stdout; a newline after it. */
static void expand(const cachectl_kind *k, const char *t, lookup_fn look, const void *ctx,
                   int dry_run)
{
    while (*t) {
        const char *open = strchr(t, '{');
        const char *close = open ? strchr(open, '}') : NULL;
        if (!close) {
            fputs(t, stdout);
            break;
        }
        fwrite(t, 1, (size_t)(open - t), stdout);
        const char *in = open + 1;
        size_t n = (size_t)(close - in);
        const char *bar = memchr(in, '|', n), *colon = memchr(in, ':', n);
        if (bar) {
            const char *from = dry_run ? bar + 1 : in, *to = dry_run ? close : bar;
            fwrite(from, 1, (size_t)(to - from), stdout);
        } else if (memchr(in, ' ', n)) {
            put_plural(k, in, n, look, ctx);
        } else {
            size_t nname = colon ? (size_t)(colon - in) : n;
            value v = {V_NONE, NULL, 0};
            look(ctx, in, nname, &v);
            put_value(&v, colon ? colon + 1 : in, colon ? n - nname - 1 : 0);
        }
        t = close + 1;
    }
    putchar('\n');
}

void cachectl_row_print(const cachectl_kind *k, const char *t, const cachectl_row *r, int dry_run)
{
    row_ctx x = {r, dry_run};
    expand(k, t ? t : k->row, row_lookup, &x, dry_run);
}

void cachectl_tally_print(const cachectl_kind *k, const cachectl_tally *t)
{
    for (const cachectl_line *l = k->summary; l->text; l++)
        if (l->when < 0 || t->v[l->when])
            expand(k, l->text, tally_lookup, t, t->dry_run);
}

void cachectl_tally_json(const cachectl_kind *k, const cachectl_tally *t, json_t *o)
{
    for (const cachectl_jfield *f = k->fields; f->name; f++)
        json_object_set_new(o, f->name, json_integer((json_int_t)t->v[f->field]));
}
