/*
 * tool_rows.c - the row model and its one renderer (tool_rows.h): the cells
 * are kept typed; each format turns them into text its own way (the table
 * and markdown as people read them, CSV and JSON as programs read them).
 */
#include "tool_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_table.h"

enum { CELL_NULL, CELL_TEXT, CELL_INT, CELL_REAL, CELL_JSON };

typedef struct cell {
    int kind;
    char *text;  /* CELL_TEXT: owned */
    int64_t i;   /* CELL_INT */
    double d;    /* CELL_REAL */
    json_t *j;   /* CELL_JSON: owned */
    char *shown; /* the table's text instead of the value's; owned, NULL: none */
} cell;

struct tool_rows {
    const tool_rows_col *cols;
    size_t ncols, nrows, cap;
    char **titles; /* owned overrides of cols[c].title, NULL: none */
    size_t *order; /* the table's columns, norder of them (owned) */
    size_t norder;
    int *hidden; /* per column: left out of the table */
    int *kept;   /* per column: shown by the last print */
    cell *cells; /* row-major */
    char *skip;  /* per row: left out of the table and markdown */
};

static void *xcalloc(size_t n, size_t size)
{
    return tool_need(calloc(n ? n : 1, size));
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xcalloc(n, 1);
    memcpy(p, s, n);
    return p;
}

tool_rows *tool_rows_new(const tool_rows_col *cols, size_t ncols)
{
    tool_rows *r = xcalloc(1, sizeof *r);
    r->cols = cols;
    r->ncols = ncols;
    r->titles = xcalloc(ncols, sizeof *r->titles);
    r->hidden = xcalloc(ncols, sizeof *r->hidden);
    r->kept = xcalloc(ncols, sizeof *r->kept);
    r->order = xcalloc(ncols, sizeof *r->order);
    r->norder = ncols;
    for (size_t c = 0; c < ncols; c++)
        r->order[c] = c;
    return r;
}

void tool_rows_free(tool_rows *rows)
{
    if (!rows)
        return;
    for (size_t k = 0; k < rows->nrows * rows->ncols; k++) {
        free(rows->cells[k].text);
        free(rows->cells[k].shown);
        json_decref(rows->cells[k].j);
    }
    for (size_t c = 0; c < rows->ncols; c++)
        free(rows->titles[c]);
    free(rows->titles);
    free(rows->hidden);
    free(rows->kept);
    free(rows->order);
    free(rows->cells);
    free(rows->skip);
    free(rows);
}

void tool_rows_title(tool_rows *rows, size_t c, const char *title)
{
    free(rows->titles[c]);
    rows->titles[c] = xstrdup(title);
}

void tool_rows_add(tool_rows *rows)
{
    if (rows->nrows == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 16;
        cell *p = realloc(rows->cells, cap * rows->ncols * sizeof *p);
        char *k = p ? realloc(rows->skip, cap) : NULL;
        if (p)
            rows->cells = p;
        rows->skip = tool_need(k);
        rows->cap = cap;
    }
    memset(&rows->cells[rows->nrows * rows->ncols], 0, rows->ncols * sizeof(cell));
    rows->skip[rows->nrows] = 0;
    rows->nrows++;
}

void tool_rows_skip(tool_rows *rows)
{
    if (rows->nrows)
        rows->skip[rows->nrows - 1] = 1;
}

static cell *last(tool_rows *rows, size_t c)
{
    return &rows->cells[(rows->nrows - 1) * rows->ncols + c];
}

void tool_rows_text(tool_rows *rows, size_t c, const char *s)
{
    cell *x = last(rows, c);
    free(x->text);
    x->text = NULL;
    x->kind = CELL_NULL;
    if (s) {
        x->kind = CELL_TEXT;
        x->text = xstrdup(s);
    }
}

void tool_rows_int(tool_rows *rows, size_t c, int64_t v)
{
    last(rows, c)->kind = CELL_INT;
    last(rows, c)->i = v;
}

void tool_rows_real(tool_rows *rows, size_t c, double v)
{
    last(rows, c)->kind = isfinite(v) ? CELL_REAL : CELL_NULL;
    last(rows, c)->d = v;
}

void tool_rows_shown(tool_rows *rows, size_t c, const char *shown)
{
    free(last(rows, c)->shown);
    last(rows, c)->shown = xstrdup(shown ? shown : "");
}

void tool_rows_json_cell(tool_rows *rows, size_t c, json_t *v)
{
    cell *x = last(rows, c);
    json_decref(x->j);
    x->j = v;
    x->kind = v ? CELL_JSON : CELL_NULL;
}

const char *tool_rows_text_at(const tool_rows *rows, size_t r, size_t c)
{
    if (r >= rows->nrows || c >= rows->ncols)
        return NULL;
    const cell *x = &rows->cells[r * rows->ncols + c];
    return x->kind == CELL_TEXT ? x->text : NULL;
}

/* A JSON cell's compact text (a new string). */
static char *json_text(const cell *x)
{
    return tool_need(json_dumps(x->j, JSON_COMPACT | JSON_ENCODE_ANY));
}

size_t tool_rows_count(const tool_rows *rows)
{
    return rows->nrows;
}

void tool_rows_order(tool_rows *rows, const size_t *order, size_t n)
{
    free(rows->order);
    rows->order = xcalloc(n, sizeof *rows->order);
    memcpy(rows->order, order, n * sizeof *order);
    rows->norder = n;
}

int tool_rows_kept(const tool_rows *rows, size_t c)
{
    return rows->kept[c];
}

void tool_rows_hide(tool_rows *rows, size_t c)
{
    rows->hidden[c] = 1;
}

void tool_format_ns(double ns, char *buf, size_t size)
{
    if (!isfinite(ns))
        snprintf(buf, size, "-");
    else if (ns < 1e3)
        snprintf(buf, size, "%.1f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, size, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, size, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", ns / 1e9);
}

static double cell_num(const cell *x)
{
    return x->kind == CELL_INT ? (double)x->i : x->d;
}

/* The text people read for a cell (a new string). */
static char *shown_text(const tool_rows_col *col, const cell *x)
{
    char buf[128];
    if (x->shown || x->kind == CELL_TEXT) {
        const char *s = x->shown ? x->shown : x->text[0] ? x->text : "-";
        size_t size = TOOL_CLEAN_SIZE(strlen(s));
        char *out = xcalloc(size, 1);
        tool_clean(s, out, size);
        return out;
    }
    if (x->kind == CELL_NULL)
        return xstrdup("-");
    if (x->kind == CELL_JSON) {
        char *j = json_text(x), *s = xstrdup(j);
        free(j);
        return s;
    }
    if (col->type == TOOL_ROWS_BOOL)
        return xstrdup(cell_num(x) != 0 ? "yes" : "no");
    double v = cell_num(x);
    int dec = col->decimals;
    switch (col->type) {
    case TOOL_ROWS_RATIO:
        snprintf(buf, sizeof buf, "%.*f%%", dec ? dec : 2, v * 100);
        break;
    case TOOL_ROWS_TIME:
        tool_format_ns(v, buf, sizeof buf);
        break;
    case TOOL_ROWS_DATE: {
        time_t t = (time_t)(v / 1e9);
        struct tm tm;
        if (!localtime_r(&t, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm))
            snprintf(buf, sizeof buf, "-");
        break;
    }
    case TOOL_ROWS_REAL:
        if (dec)
            snprintf(buf, sizeof buf, "%.*f%s%s", dec, v, col->unit ? " " : "",
                     col->unit ? col->unit : "");
        else
            snprintf(buf, sizeof buf, "%.3g%s%s", v, col->unit ? " " : "",
                     col->unit ? col->unit : "");
        break;
    default:
        if (x->kind == CELL_INT)
            snprintf(buf, sizeof buf, "%lld", (long long)x->i);
        else
            snprintf(buf, sizeof buf, "%.3g", v);
    }
    return xstrdup(buf);
}

/* The table's view: its columns in order (k of them), each cell's shown
 * text row-major (nrows x k), the tool_table columns and natural widths. */
typedef struct view {
    size_t k, n; /* columns, rows shown */
    char **t;
    tool_table_col *tc;
    int *natural, *w;
} view;

/* s with each '|' escaped for markdown (a new string; s is freed). */
static char *md_escape(char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '|';
    if (!n)
        return s;
    char *out = xcalloc(strlen(s) + n + 1, 1), *o = out;
    for (const char *p = s; *p; p++) {
        if (*p == '|')
            *o++ = '\\';
        *o++ = *p;
    }
    free(s);
    return out;
}

static void view_init(view *v, const tool_rows *rows, int md)
{
    v->k = rows->norder;
    v->n = 0;
    for (size_t r = 0; r < rows->nrows; r++)
        v->n += !rows->skip[r];
    v->t = xcalloc(v->n * v->k, sizeof *v->t);
    v->tc = xcalloc(v->k, sizeof *v->tc);
    v->natural = xcalloc(v->k, sizeof *v->natural);
    v->w = xcalloc(v->k, sizeof *v->w);
    for (size_t j = 0; j < v->k; j++) {
        size_t c = rows->order[j];
        const tool_rows_col *col = &rows->cols[c];
        v->tc[j].name = rows->titles[c] ? rows->titles[c] : col->title ? col->title : col->key;
        v->tc[j].priority = col->priority < 0 ? 0 : col->priority;
        v->tc[j].min_width = col->min_width;
        v->tc[j].right = !col->left && col->type != TOOL_ROWS_TEXT && col->type != TOOL_ROWS_DATE;
        if (col->priority == TOOL_ROWS_DATA || rows->hidden[c])
            continue; /* left out: NULL cells */
        for (size_t r = 0, i = 0; r < rows->nrows; r++) {
            if (rows->skip[r])
                continue;
            char *t = shown_text(col, &rows->cells[r * rows->ncols + c]);
            v->t[i++ * v->k + j] = md ? md_escape(t) : t;
        }
    }
    tool_table_natural(v->tc, v->k, (const char *const *)v->t, v->n, v->natural);
    for (size_t j = 0; j < v->k; j++)
        if (rows->cols[rows->order[j]].priority == TOOL_ROWS_DATA || rows->hidden[rows->order[j]])
            v->natural[j] = 0;
}

static void view_release(view *v)
{
    for (size_t i = 0; i < v->n * v->k; i++)
        free(v->t[i]);
    free(v->t);
    free(v->tc);
    free(v->natural);
    free(v->w);
}

/* A markdown cell (escaped already): cut to w with '~', padded. */
static void md_cell(FILE *out, const char *s, int w, int right)
{
    size_t len = strlen(s);
    if (len > (size_t)w) /* bounded: a cell cut to its column, marked '~' */
        fprintf(out, " %.*s~ |", w - 1, s);
    else
        fprintf(out, right ? " %*s |" : " %-*s |", w, s);
}

static int md_width(const int *w, size_t n)
{
    int total = 1;
    for (size_t c = 0; c < n; c++)
        total += w[c] > 0 ? w[c] + 3 : 0;
    return total;
}

static void print_md(FILE *out, const view *v, size_t nrows, int width)
{
    /* The table's fitting, asked for less until the markdown (3 characters
     * between columns and 2 at the ends, not 2) fits too. */
    for (int target = width;; target--) {
        tool_table_fit(v->tc, v->k, v->natural, width > 0 ? target : 0, v->w);
        if (width <= 0 || target <= 1 || md_width(v->w, v->k) <= width)
            break;
    }
    fputc('|', out);
    for (size_t c = 0; c < v->k; c++)
        if (v->w[c] > 0)
            md_cell(out, v->tc[c].name, v->w[c], v->tc[c].right);
    fputs("\n|", out);
    for (size_t c = 0; c < v->k; c++) {
        if (v->w[c] <= 0)
            continue;
        for (int i = 0; i < v->w[c] + 1; i++)
            fputc('-', out);
        fputs(v->tc[c].right ? ":|" : "-|", out);
    }
    fputc('\n', out);
    for (size_t r = 0; r < nrows; r++) {
        fputc('|', out);
        for (size_t c = 0; c < v->k; c++)
            if (v->w[c] > 0)
                md_cell(out, v->t[r * v->k + c], v->w[c], v->tc[c].right);
        fputc('\n', out);
    }
}

static void print_human(FILE *out, tool_rows *rows, tool_rows_fmt fmt, int width)
{
    view v;
    view_init(&v, rows, fmt == TOOL_FMT_MD);
    if (fmt == TOOL_FMT_MD) {
        print_md(out, &v, v.n, width);
    } else {
        tool_table_fit(v.tc, v.k, v.natural, width, v.w);
        tool_table_render(out, v.tc, v.k, v.w, (const char *const *)v.t, v.n, width);
    }
    for (size_t j = 0; j < v.k; j++)
        rows->kept[rows->order[j]] = v.w[j] > 0;
    view_release(&v);
}

void tool_csv_text(FILE *out, const char *s, int tty)
{
    char *clean = NULL;
    if (tty) {
        size_t size = TOOL_CLEAN_SIZE(strlen(s));
        clean = xcalloc(size, 1);
        s = tool_clean(s, clean, size);
    }
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
    free(clean);
}

static void csv_value(FILE *out, const tool_rows_col *col, const cell *x, int tty)
{
    char num[48];
    if (x->kind == CELL_TEXT) {
        tool_csv_text(out, x->text, tty);
    } else if (x->kind == CELL_JSON) {
        char *j = json_text(x);
        tool_csv_text(out, j, tty);
        free(j);
    } else if (col->type == TOOL_ROWS_BOOL && x->kind != CELL_NULL) {
        fputs(cell_num(x) != 0 ? "true" : "false", out);
    } else if (x->kind == CELL_INT) {
        fprintf(out, "%lld", (long long)x->i);
    } else if (x->kind == CELL_REAL &&
               (col->type == TOOL_ROWS_DATE || col->type == TOOL_ROWS_INT)) {
        fprintf(out, "%.0f", x->d);
    } else if (x->kind == CELL_REAL) {
        /* The JSON printer's shortest text that reads back as the same
         * double; a whole number without JSON's ".0". */
        tool_json_format_real(num, sizeof num, x->d);
        size_t len = strlen(num);
        if (len > 2 && strcmp(num + len - 2, ".0") == 0)
            num[len - 2] = '\0';
        fputs(num, out);
    }
}

static void print_csv(FILE *out, const tool_rows *rows)
{
    int tty = isatty(fileno(out));
    for (size_t c = 0; c < rows->ncols; c++)
        fprintf(out, "%s%c", rows->cols[c].key, c + 1 < rows->ncols ? ',' : '\n');
    for (size_t r = 0; r < rows->nrows; r++)
        for (size_t c = 0; c < rows->ncols; c++) {
            csv_value(out, &rows->cols[c], &rows->cells[r * rows->ncols + c], tty);
            fputc(c + 1 < rows->ncols ? ',' : '\n', out);
        }
}

static json_t *json_value(const tool_rows_col *col, const cell *x)
{
    if (x->kind == CELL_NULL)
        return json_null();
    if (x->kind == CELL_TEXT)
        return tool_json_text(x->text);
    if (x->kind == CELL_JSON)
        return json_incref(x->j);
    if (col->type == TOOL_ROWS_BOOL)
        return json_boolean(cell_num(x) != 0);
    if (x->kind == CELL_INT)
        return json_integer((json_int_t)x->i);
    if (col->type == TOOL_ROWS_TIME || col->type == TOOL_ROWS_DATE || col->type == TOOL_ROWS_INT)
        return fabs(x->d) < 9.2e18 ? json_integer((json_int_t)llround(x->d)) : json_null();
    return json_real(x->d);
}

json_t *tool_rows_json(const tool_rows *rows)
{
    json_t *arr = json_array();
    for (size_t r = 0; r < rows->nrows; r++) {
        json_t *o = json_object();
        for (size_t c = 0; c < rows->ncols; c++)
            json_object_set_new(o, rows->cols[c].key,
                                json_value(&rows->cols[c], &rows->cells[r * rows->ncols + c]));
        json_array_append_new(arr, o);
    }
    return arr;
}

void tool_rows_print(FILE *out, tool_rows *rows, tool_rows_fmt fmt, int width, json_t *doc,
                     const char *key)
{
    if (fmt == TOOL_FMT_JSON) {
        if (!doc)
            doc = json_object();
        json_object_set_new(doc, key, tool_rows_json(rows));
        tool_json_print(out, doc);
        return;
    }
    json_decref(doc);
    if (fmt == TOOL_FMT_CSV)
        print_csv(out, rows);
    else
        print_human(out, rows, fmt, width);
}

int tool_rows_opt(const char *sub, int c, const char *arg, tool_rows_out *o)
{
    switch (c) {
    case TOOL_OPT_CSV:
        o->csv = 1;
        return 1;
    case TOOL_OPT_MD:
        o->md = 1;
        return 1;
    case TOOL_OPT_WIDE:
        o->wide = 1;
        return 1;
    case TOOL_OPT_WIDTH: {
        char *end = NULL;
        long v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 20 || v > 10000) {
            tool_usage_error(sub, "give the columns to fit, such as 80 (20 to 10000)",
                             "bad value '%s' for --width", arg);
            return -1;
        }
        o->width = (int)v;
        return 1;
    }
    default:
        return 0;
    }
}

int tool_rows_out_resolve(const char *sub, tool_rows_out *o, tool_rows_fmt piped_fmt)
{
    if (g_tool.json + o->csv + o->md > 1) {
        if (!o->md)
            return tool_usage_error(sub,
                                    "give one of them: --csv for rows, --json for one document",
                                    "--csv and --json cannot be combined");
        return tool_usage_error(sub, "give one of --csv, --json and --md",
                                "%s and --md cannot be combined", o->csv ? "--csv" : "--json");
    }
    int forced = o->width;
    o->fmt = g_tool.json ? TOOL_FMT_JSON
             : o->csv    ? TOOL_FMT_CSV
             : o->md     ? TOOL_FMT_MD
                         : TOOL_FMT_TABLE;
    if (!forced)
        o->width = tool_table_terminal_width(STDOUT_FILENO);
    if (o->fmt == TOOL_FMT_TABLE && !forced && o->width <= 0)
        o->fmt = piped_fmt;
    if (o->wide || (!forced && o->fmt == TOOL_FMT_MD))
        o->width = 0;
    return 0;
}
