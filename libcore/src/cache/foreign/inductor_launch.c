/*
 * inductor_launch.c - one Triton kernel as TorchInductor's cache records
 * it (see inductor_launch.h): the autotuning's .best_config, the kernel's
 * module and the compiled graph's output code, read as the text Inductor
 * writes (Python it generated from one template), not parsed as Python.
 * Where a piece is not found, its fields stay unset and the caller says
 * what it inferred without it.
 */
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/foreign/inductor_launch.h"

/* A generated module or output code; larger files are skipped. */
#define PY_MAX     (size_t)(64u << 20)
#define CONFIG_MAX (size_t)(1u << 20)
#define FILES_MAX  100000

typedef struct file_list {
    char **names; /* "ya/cya53....py", sorted */
    size_t n, cap;
} file_list;

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int list_add(file_list *l, const char *sub, const char *name)
{
    if (vyre__grow(&l->names, &l->cap, l->n + 1, sizeof *l->names, 64))
        return VYRE_ENOMEM;
    size_t len = strlen(sub) + strlen(name) + 2;
    char *s = malloc(len);
    if (!s)
        return VYRE_ENOMEM;
    snprintf(s, len, "%s/%s", sub, name);
    l->names[l->n++] = s;
    return VYRE_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_free(file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
}

/* The .py and .best_config files of dir's two-character folders, sorted. */
static int list_files(const char *dir, file_list *l, vyre_error *err)
{
    DIR *top = opendir(dir);
    if (!top)
        return vyre__fail(err, VYRE_ENOENT, "check --inductor-dir",
                          "cannot open the TorchInductor cache '%s'", dir);
    int rc = VYRE_OK;
    struct dirent *d;
    while (rc == VYRE_OK && (d = readdir(top)) != NULL) {
        if (strlen(d->d_name) != 2 || d->d_name[0] == '.')
            continue;
        char sub[VYRE__IND_FILE_MAX + 8];
        snprintf(sub, sizeof sub, "%s/%s", dir, d->d_name);
        DIR *s = opendir(sub);
        struct dirent *f;
        while (s && rc == VYRE_OK && l->n < FILES_MAX && (f = readdir(s)) != NULL)
            if (f->d_name[0] != '.' &&
                (ends_with(f->d_name, ".py") || ends_with(f->d_name, ".best_config")))
                rc = list_add(l, d->d_name, f->d_name);
        if (s)
            closedir(s);
    }
    closedir(top);
    if (rc)
        return vyre__fail(err, rc, NULL, "out of memory listing '%s'", dir);
    if (l->n)
        qsort(l->names, l->n, sizeof *l->names, cmp_names);
    return VYRE_OK;
}

static char *read_rel(const char *dir, const char *rel, size_t max)
{
    char path[2 * VYRE__IND_FILE_MAX + 8];
    int n = snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    if (vyre__read_file(path, max, &buf, &len, NULL) || strlen(buf) != len) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The .best_config naming one of keys: its blocks into out. */
static void read_best(const char *dir, const char *rel, const char *const *keys, size_t nkeys,
                      vyre__inductor_kernel *out)
{
    char *text = read_rel(dir, rel, CONFIG_MAX);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    const char *hash = json_string_value(json_object_get(root, "triton_cache_hash"));
    for (size_t k = 0; hash && k < nkeys && out->best_key < 0; k++) {
        if (strcmp(hash, keys[k]) != 0)
            continue;
        out->best_key = (int)k;
        vyre__strlcpy(out->best_file, rel, sizeof out->best_file);
        static const char *const names[] = {"XBLOCK", "YBLOCK", "ZBLOCK", "R0_BLOCK"};
        int64_t *slots[] = {&out->xblock, &out->yblock, &out->zblock, &out->r0block};
        for (int i = 0; i < 4; i++) {
            json_t *v = json_object_get(root, names[i]);
            *slots[i] = json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
        }
    }
    json_decref(root);
}

/* The last occurrence of needle in text[0, lim), or NULL. */
static const char *find_last(const char *text, size_t lim, const char *needle)
{
    const char *last = NULL;
    size_t n = strlen(needle);
    for (const char *p = strstr(text, needle); p && (size_t)(p - text) + n <= lim;
         p = strstr(p + 1, needle))
        last = p;
    return last;
}

/* Copies a quoted Python string at p ('...') into out; the end, or NULL. */
static const char *read_quoted(const char *p, char *out, size_t size)
{
    if (*p != '\'')
        return NULL;
    const char *e = strchr(p + 1, '\'');
    if (!e || (size_t)(e - p - 1) >= size)
        return NULL;
    memcpy(out, p + 1, (size_t)(e - p - 1));
    out[e - p - 1] = '\0';
    return e + 1;
}

/* {'x': 4096, 'r0_': 128} after `size_hints=` before pos. */
static void read_hints(const char *text, size_t pos, vyre__inductor_kernel *out)
{
    const char *p = find_last(text, pos, "size_hints={");
    if (!p)
        return;
    p += strlen("size_hints={");
    while (*p == '\'' && out->nhints < 4) {
        char axis[8];
        p = read_quoted(p, axis, sizeof axis);
        if (!p || strncmp(p, ": ", 2) != 0)
            return;
        char *end = NULL;
        long long v = strtoll(p + 2, &end, 10);
        if (end == p + 2)
            return;
        vyre__strlcpy(out->hint_axis[out->nhints], axis, sizeof out->hint_axis[0]);
        out->hint[out->nhints++] = v;
        p = end;
        if (strncmp(p, ", ", 2) != 0)
            return;
        p += 2;
    }
}

/* The signature's runtime arguments (not constexpr) before pos. */
static void read_signature(const char *text, size_t pos, vyre__inductor_kernel *out)
{
    static const char key[] = "'signature': {";
    const char *p = find_last(text, pos, key);
    if (!p)
        return;
    p += sizeof key - 1;
    while (*p == '\'' && out->nsig < VYRE__IND_ARGS_MAX) {
        char name[VYRE__IND_NAME_MAX], type[32];
        p = read_quoted(p, name, sizeof name);
        if (!p || strncmp(p, ": ", 2) != 0 || !(p = read_quoted(p + 2, type, sizeof type)))
            return;
        if (strcmp(type, "constexpr") != 0)
            vyre__strlcpy(out->sig[out->nsig++], name, sizeof out->sig[0]);
        if (strncmp(p, ", ", 2) != 0)
            return;
        p += 2;
    }
}

/* The module facts of the kernel whose inductor_meta names it at pos. */
static void read_module(const char *text, size_t pos, const char *rel, vyre__inductor_kernel *out)
{
    out->have_module = 1;
    vyre__strlcpy(out->module_file, rel, sizeof out->module_file);
    const char *g = find_last(text, pos, "'grid_type': '");
    if (g)
        read_quoted(g + strlen("'grid_type': "), out->grid_type, sizeof out->grid_type);
    read_hints(text, pos, out);
    read_signature(text, pos, out);
}

int64_t vyre__inductor_storage_elems(const int64_t *shape, const int64_t *stride, size_t n)
{
    int64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (shape[i] == 0)
            return 0;
        if (shape[i] < 0 || stride[i] < 0)
            return -1;
        int64_t step;
        if (__builtin_mul_overflow(shape[i] - 1, stride[i], &step) ||
            __builtin_add_overflow(last, step, &last))
            return -1;
    }
    return last + 1;
}

/* A tuple of integers "(8, 128, 256)" or "(256, )" at p: its values into
 * v (at most 8), *n; the end, or NULL (a symbol, too long). */
static const char *read_tuple(const char *p, int64_t *v, size_t *n)
{
    *n = 0;
    if (*p++ != '(')
        return NULL;
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p == ')')
            return p + 1;
        char *end = NULL;
        long long x = strtoll(p, &end, 10);
        if (end == p || *n == 8)
            return NULL;
        v[(*n)++] = x;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else if (*p != ')')
            return NULL;
    }
}

/* Storage elements of the tensor `(shape), (stride)` at p, or -1. */
static int64_t tuple_elems(const char *p)
{
    int64_t shape[8], stride[8];
    size_t ns, nt;
    p = read_tuple(p, shape, &ns);
    if (!p || strncmp(p, ", ", 2) != 0 || !read_tuple(p + 2, stride, &nt) || ns != nt)
        return -1;
    return vyre__inductor_storage_elems(shape, stride, ns);
}

/* The line `<indent>name = ` last before lim, or NULL. */
static const char *assignment(const char *text, size_t lim, const char *name)
{
    char pat[VYRE__IND_NAME_MAX + 8];
    snprintf(pat, sizeof pat, " %s = ", name);
    const char *last = NULL;
    for (const char *p = strstr(text, pat); p && (size_t)(p - text) < lim; p = strstr(p + 1, pat)) {
        const char *s = p;
        while (s > text && s[-1] == ' ')
            s--;
        if (s == text || s[-1] == '\n')
            last = p;
    }
    return last;
}

/* The storage of tensor `name` as the output code made it before lim
 * (assert_size_stride of an input, empty_strided_* of a buffer, a
 * reinterpret_tensor of another: its base's), its base name into base. */
static int64_t tensor_elems(const char *text, size_t lim, const char *name, char *base, int depth)
{
    char pat[VYRE__IND_NAME_MAX + 32];
    snprintf(pat, sizeof pat, "assert_size_stride(%s, ", name);
    const char *a = find_last(text, lim, pat);
    const char *d = assignment(text, lim, name);
    if (a && (!d || a > d)) {
        vyre__strlcpy(base, name, VYRE__IND_NAME_MAX);
        return tuple_elems(a + strlen(pat));
    }
    if (!d || depth > 8)
        return -1;
    const char *rhs = d + strlen(name) + 4;
    static const char reinterpret[] = "reinterpret_tensor(";
    if (!strncmp(rhs, reinterpret, sizeof reinterpret - 1)) {
        const char *b = rhs + sizeof reinterpret - 1;
        size_t n = strspn(b, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        char inner[VYRE__IND_NAME_MAX];
        if (!n || n >= sizeof inner)
            return -1;
        memcpy(inner, b, n);
        inner[n] = '\0';
        return tensor_elems(text, (size_t)(d - text), inner, base, depth + 1);
    }
    const char *paren = strchr(rhs, '(');
    const char *eol = strchr(rhs, '\n');
    if (!paren || (eol && paren > eol) || strncmp(rhs, "empty_strided", 13) != 0)
        return -1;
    vyre__strlcpy(base, name, VYRE__IND_NAME_MAX);
    return tuple_elems(paren + 1);
}

/* One positional argument [p, e) of the launch into slot i of out. */
static void read_arg(const char *text, size_t lim, const char *p, const char *e,
                     vyre__inductor_kernel *out)
{
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    size_t i = out->nargs, n = (size_t)(e - p);
    if (!n || n >= sizeof out->arg[0] || memchr(p, '=', n))
        return; /* empty, too long, or a keyword (stream=) */
    memcpy(out->arg[i], p, n);
    out->arg[i][n] = '\0';
    out->elems[i] = -1;
    char *end = NULL;
    long long v = strtoll(out->arg[i], &end, 10);
    out->is_int[i] = end != out->arg[i] && *end == '\0';
    out->value[i] = out->is_int[i] ? v : 0;
    if (!out->is_int[i] && strspn(out->arg[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                                               "VWXYZ0123456789_") == n)
        out->elems[i] = tensor_elems(text, lim, out->arg[i], out->base[i], 0);
    out->nargs++;
}

/* The end of the argument at p: the ',' or ')' outside brackets (older
 * Inductors pass `grid=grid(2048, 128)`), or the line's end. */
static const char *arg_end(const char *p)
{
    int depth = 0;
    for (; *p && *p != '\n'; p++) {
        if (*p == '(' || *p == '[' || *p == '{')
            depth++;
        else if ((*p == ')' || *p == ']' || *p == '}') && depth-- == 0)
            return p;
        else if (*p == ',' && depth == 0)
            return p;
    }
    return p;
}

/* The launches of `name` in output code text: the first one's arguments. */
static void read_launch(const char *text, const char *rel, const char *name,
                        vyre__inductor_kernel *out)
{
    char pat[VYRE__IND_NAME_MAX * 4 + 8];
    snprintf(pat, sizeof pat, "%s.run(", name);
    const char *first = NULL;
    for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) {
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.'))
            continue;
        out->nlaunches++;
        if (!first)
            first = p;
    }
    if (!first)
        return;
    out->have_launch = 1;
    vyre__strlcpy(out->launch_file, rel, sizeof out->launch_file);
    out->launch_line = 1;
    for (const char *q = text; q < first; q++)
        out->launch_line += *q == '\n';
    const char *p = first + strlen(pat);
    size_t lim = (size_t)(first - text);
    while (*p && *p != ')' && *p != '\n' && out->nargs < VYRE__IND_ARGS_MAX) {
        const char *e = arg_end(p);
        read_arg(text, lim, p, e, out);
        p = *e == ',' ? e + 1 : e;
    }
}

/* Whether text defines `call(` at the start of a line (a module-level
 * function, or the Runner's method in newer Inductors): output code. */
static int defines_call(const char *text)
{
    for (const char *p = strstr(text, "def call("); p; p = strstr(p + 1, "def call(")) {
        const char *s = p;
        while (s > text && s[-1] == ' ')
            s--;
        if (s == text || s[-1] == '\n')
            return 1;
    }
    return 0;
}

/* One .py: the kernel's module (or, in output code, its launch too). */
static void read_py(const char *dir, const char *rel, const char *name, vyre__inductor_kernel *out)
{
    char *text = read_rel(dir, rel, PY_MAX);
    if (!text)
        return;
    char pat[VYRE__IND_NAME_MAX * 4 + 32];
    snprintf(pat, sizeof pat, "'kernel_name': '%s'", name);
    const char *meta = strstr(text, pat);
    int is_output = defines_call(text);
    if (meta && !out->have_module)
        read_module(text, (size_t)(meta - text), rel, out);
    if (is_output && !out->have_launch)
        read_launch(text, rel, name, out);
    free(text);
}

int vyre__inductor_kernel_read(const char *dir, const char *name, const char *const *keys,
                               size_t nkeys, vyre__inductor_kernel *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    out->best_key = -1;
    file_list l = {0};
    int rc = list_files(dir, &l, err);
    for (size_t i = 0; rc == VYRE_OK && i < l.n; i++) {
        if (ends_with(l.names[i], ".best_config")) {
            if (out->best_key < 0)
                read_best(dir, l.names[i], keys, nkeys, out);
        } else {
            read_py(dir, l.names[i], name, out);
        }
    }
    list_free(&l);
    return rc;
}
