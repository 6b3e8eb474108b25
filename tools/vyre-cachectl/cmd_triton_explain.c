/*
 * cmd_triton_explain.c - `vyre-cachectl triton explain KERNEL [--dir DIR]`:
 * "why does this machine recompile?" The Triton groups of one kernel name
 * side by side and the metadata fields in which they differ (libcore's
 * vyre_triton_explain). Its own parsing: the other actions take no
 * operand, this one takes the kernel name. Names in the cache are foreign
 * text: printed through tool_clean.
 *
 * A kernel torch.compile recompiled for many shapes has hundreds of
 * groups: by default each differing field is summarised as its distinct
 * values with how many groups have each (the kernel named once, no key
 * listed); --all lists every group's key and value side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_cli.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

const tool_opt cachectl_triton_explain_opts[] = {
    {TRITON_OPT_ALL, 0, "all", NULL,
     "list every group's key, and each differing field's\n"
     "value in every group, side by side",
     NULL},
    TRITON_ROW_DIR,
    TRITON_ROW_END,
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl triton explain KERNEL [--all] [--dir DIR] [--json]\n\n"
                 "Why does this machine recompile? List the groups of Triton kernel KERNEL (the\n"
                 "metadata's \"name\") and the fields in which they differ: target.arch,\n"
                 "target.backend, target.warp_size, num_warps, num_stages, shared,\n"
                 "triton_version, hash (Triton's key of the compile) and source_sha256 (the\n"
                 "SHA-256 of the group's .source file: an edited kernel). Each difference is\n"
                 "one reason Triton compiled the kernel again. Each field that differs is\n"
                 "summarised as its distinct values, each with the number of groups that have\n"
                 "it. Reads only.\n\n");
    cachectl_options_help(out, cachectl_triton_explain_opts);
    fprintf(out, "\n"
                 "exit status: 0 groups found, 1 no group of that kernel (the nearest names\n"
                 "             are listed), 2 usage or operational error\n");
}

int cachectl_triton_is_explain(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return i + 1 < argc && strcmp(argv[i + 1], "explain") == 0;
        if (argv[i][0] == '-' && argv[i][1]) {
            i += cachectl_takes_next(cachectl_triton_explain_opts, argv[i]);
            continue;
        }
        return strcmp(argv[i], "explain") == 0;
    }
    return 0;
}

/* CACHECTL_HANDLED with *kernel and o->path set, or the exit code. */
static int parse(int argc, char **argv, triton_opts *o, const char **kernel, int *all)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "triton explain", cachectl_triton_explain_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == TRITON_OPT_ALL) {
            *all = 1;
            continue;
        }
        if (c != TRITON_OPT_DIR)
            return TOOL_EXIT_ERROR;
        if (!*optarg)
            return tool_usage_error("triton explain", "give a directory path",
                                    "--dir needs a non-empty directory");
        o->dir = optarg;
    }
    optind++; /* "explain" */
    if (optind >= argc)
        return tool_usage_error("triton explain",
                                "name a kernel, as 'vyre-cachectl triton ls' lists them",
                                "triton explain needs a kernel name");
    *kernel = argv[optind++];
    if (optind < argc)
        return tool_usage_error("triton explain", "explain one kernel name at a time",
                                "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("triton explain");
    if (rc)
        return rc;
    rc = cachectl_foreign_dir("triton explain", o->dir, vyre_triton_cache_dir, o->path,
                              sizeof o->path, &o->dir_source);
    return rc ? rc : CACHECTL_HANDLED;
}

/* A field's value as printed: cleaned, "-" for none, a hash cut to the 16
 * digits that tell hashes apart. */
static const char *shown(vyre_triton_field f, const char *v, char *out, size_t size)
{
    tool_clean(*v ? v : "-", out, size);
    if ((f == VYRE_TRITON_FIELD_HASH || f == VYRE_TRITON_FIELD_SOURCE) && strlen(out) > 16)
        memcpy(out + 16, "...", 4);
    return out;
}

/* The header: no group (the nearest names), or the kernel and its count.
 * 0 when there is nothing more to print. */
static int print_head(const vyre_triton_cache *c, const char *kernel,
                      const vyre_triton_explanation *x)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_TRITON_PATH_MAX)], kn[TOOL_CLEAN_SIZE(VYRE_TRITON_NAME_MAX)];
    tool_clean(kernel, kn, sizeof kn);
    if (!x->n_groups) {
        printf("No Triton kernel '%s' in %s\n", kn, tool_clean(c->dir, cl, sizeof cl));
        printf("Nearest kernel names there:");
        for (size_t i = 0; i < x->n_nearest; i++)
            printf("%s%s", i ? ", " : " ", tool_clean(x->nearest[i], kn, sizeof kn));
        printf("%s\n", x->n_nearest ? "" : " none (no kernel groups)");
        return 0;
    }
    printf("Triton kernel '%s': %zu group%s in %s\n", kn, x->n_groups, x->n_groups == 1 ? "" : "s",
           tool_clean(c->dir, cl, sizeof cl));
    return 1;
}

static void print_differs_head(const vyre_triton_explanation *x, int all)
{
    int nd = 0;
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
        nd += (x->differ >> f) & 1;
    if (x->n_groups == 1)
        printf("Differs between them: nothing (one group)\n");
    else if (!nd)
        printf("Differs between them: no field here (another compile option Triton keys by)\n");
    else
        printf("Differs between them (%d field%s%s):\n", nd, nd == 1 ? "" : "s",
               all ? "" : "; each value with the groups that have it");
}

/* Tools abort on out of memory (CONVENTIONS.md). */
static void *xcalloc(size_t n, size_t size)
{
    return tool_need(calloc(n ? n : 1, size));
}

/* One distinct value of a field and how many groups have it. */
typedef struct distinct {
    const char *value;
    size_t groups;
} distinct;

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Most groups first, then by value. */
static int by_groups(const void *a, const void *b)
{
    const distinct *x = a, *y = b;
    if (x->groups != y->groups)
        return x->groups < y->groups ? 1 : -1;
    return strcmp(x->value, y->value);
}

/* Field f's distinct values over x's groups into d (x->n_groups entries
 * of room), most groups first. Returns how many. */
static size_t distinct_values(const vyre_triton_explanation *x, int f, distinct *d)
{
    const char **v = xcalloc(x->n_groups, sizeof *v);
    for (size_t i = 0; i < x->n_groups; i++)
        v[i] = x->groups[i].values[f];
    qsort(v, x->n_groups, sizeof *v, by_text);
    size_t n = 0;
    for (size_t i = 0; i < x->n_groups; i++) {
        if (n && !strcmp(d[n - 1].value, v[i]))
            d[n - 1].groups++;
        else
            d[n++] = (distinct){v[i], 1};
    }
    free(v);
    qsort(d, n, sizeof *d, by_groups);
    return n;
}

#define SUMMARY_VALUES 6 /* distinct values a summary line names */

/* "  num_warps         4 (120 groups), 8 (81 groups)"; a field with a
 * value of its own in every group (the hash) is said to be so. */
static void print_summary_line(const vyre_triton_explanation *x, int f, distinct *d)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_TRITON_VALUE_MAX)];
    size_t n = distinct_values(x, f, d);
    printf("  %-17s", vyre_triton_field_name((vyre_triton_field)f));
    if (n == x->n_groups && n > 2) {
        printf(" %zu values, one in each group ('--all' lists them)\n", n);
        return;
    }
    for (size_t i = 0; i < n && i < SUMMARY_VALUES; i++)
        printf("%s%s (%zu group%s)", i ? ", " : " ",
               shown((vyre_triton_field)f, d[i].value, cl, sizeof cl), d[i].groups,
               d[i].groups == 1 ? "" : "s");
    if (n > SUMMARY_VALUES)
        printf(", and %zu more value%s ('--all' lists them)", n - SUMMARY_VALUES,
               n - SUMMARY_VALUES == 1 ? "" : "s");
    printf("\n");
}

/* Every group's key, then each differing field's value in every group. */
static void print_all_line(const vyre_triton_explanation *x, int f)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_TRITON_VALUE_MAX)];
    printf("  %-17s", vyre_triton_field_name((vyre_triton_field)f));
    for (size_t i = 0; i < x->n_groups; i++)
        printf("%s%s", i ? "  |  " : " ",
               shown((vyre_triton_field)f, x->groups[i].values[f], cl, sizeof cl));
    printf("\n");
}

static void print_text(const vyre_triton_cache *c, const char *kernel,
                       const vyre_triton_explanation *x, int all)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_TRITON_PATH_MAX)];
    if (!print_head(c, kernel, x))
        return;
    if (all)
        for (size_t i = 0; i < x->n_groups; i++)
            printf("  %s\n", tool_clean(x->groups[i].group->key, cl, sizeof cl));
    print_differs_head(x, all);
    distinct *d = all ? NULL : xcalloc(x->n_groups, sizeof *d);
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++) {
        if (!((x->differ >> f) & 1))
            continue;
        if (all)
            print_all_line(x, f);
        else
            print_summary_line(x, f, d);
    }
    free(d);
    printf("Same in every group:\n");
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
        if (!((x->differ >> f) & 1))
            printf("  %-17s %s\n", vyre_triton_field_name((vyre_triton_field)f),
                   shown((vyre_triton_field)f, x->groups[0].values[f], cl, sizeof cl));
    if (!all && x->n_groups > 1)
        printf("'--all' lists the %zu groups and each one's values.\n", x->n_groups);
}

static void print_json(const vyre_triton_cache *c, const char *kernel,
                       const vyre_triton_explanation *x)
{
    json_t *groups = json_array(), *differs = json_array(), *nearest = json_array();
    for (size_t i = 0; i < x->n_groups; i++) {
        json_t *fields = json_object();
        for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++) {
            const char *v = x->groups[i].values[f];
            json_object_set_new(fields, vyre_triton_field_name((vyre_triton_field)f),
                                *v ? tool_json_text(v) : json_null());
        }
        json_array_append_new(groups,
                              json_pack("{s:o, s:o}", "key",
                                        tool_json_text(x->groups[i].group->key), "fields", fields));
    }
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
        if ((x->differ >> f) & 1)
            json_array_append_new(differs,
                                  json_string(vyre_triton_field_name((vyre_triton_field)f)));
    for (size_t i = 0; i < x->n_nearest; i++)
        json_array_append_new(nearest, tool_json_text(x->nearest[i]));
    json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "schema_version", 1, "triton_cache_dir",
                          tool_json_text(c->dir), "kernel", tool_json_text(kernel), "groups",
                          groups, "differs", differs, "nearest", nearest);
    tool_json_print(stdout, o);
}

int cmd_triton_explain(int argc, char **argv)
{
    triton_opts o;
    memset(&o, 0, sizeof o);
    o.action = "explain";
    const char *kernel = NULL;
    int all = 0;
    int rc = parse(argc, argv, &o, &kernel, &all);
    if (rc != CACHECTL_HANDLED)
        return rc;
    vyre_triton_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_cache_scan(o.path, &c, &err))
        return cachectl_fail(&err);
    vyre_triton_explanation x;
    if (vyre_triton_explain(&c, kernel, &x, &err)) {
        rc = cachectl_fail(&err);
    } else {
        if (g_tool.json)
            print_json(&c, kernel, &x);
        else if (!g_cachectl.quiet)
            print_text(&c, kernel, &x, all);
        rc = x.n_groups ? TOOL_EXIT_OK : TOOL_EXIT_PROBLEMS;
    }
    vyre_triton_explanation_release(&x);
    vyre_triton_cache_release(&c);
    return rc;
}
