/*
 * cmd_triton_explain.c - `vyre-cachectl triton explain KERNEL [--dir DIR]`:
 * "why does this machine recompile?" The Triton groups of one kernel name
 * side by side and the metadata fields in which they differ (libcore's
 * vyre_triton_explain). Its own parsing: the other actions take no
 * operand, this one takes the kernel name. Names in the cache are foreign
 * text: printed through tool_clean.
 */
#include <stdio.h>
#include <string.h>

#include "cmd_triton.h"
#include "tool_cli.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

const tool_opt cachectl_triton_explain_opts[] = {TRITON_ROW_DIR, TRITON_ROW_END};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl triton explain KERNEL [--dir DIR] [--json]\n\n"
                 "Why does this machine recompile? List the groups of Triton kernel KERNEL (the\n"
                 "metadata's \"name\") and the fields in which they differ: target.arch,\n"
                 "target.backend, target.warp_size, num_warps, num_stages, shared,\n"
                 "triton_version, hash (Triton's key of the compile) and source_sha256 (the\n"
                 "SHA-256 of the group's .source file: an edited kernel). Each difference is\n"
                 "one reason Triton compiled the kernel again. Reads only.\n\n");
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
static int parse(int argc, char **argv, triton_opts *o, const char **kernel)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "triton explain", cachectl_triton_explain_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
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

static void print_text(const vyre_triton_cache *c, const char *kernel,
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
        return;
    }
    printf("Triton kernel '%s': %zu group%s in %s\n", kn, x->n_groups, x->n_groups == 1 ? "" : "s",
           tool_clean(c->dir, cl, sizeof cl));
    for (size_t i = 0; i < x->n_groups; i++)
        printf("  %s\n", tool_clean(x->groups[i].group->key, cl, sizeof cl));
    int nd = 0;
    for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
        nd += (x->differ >> f) & 1;
    if (x->n_groups == 1)
        printf("Differs between them: nothing (one group)\n");
    else if (!nd)
        printf("Differs between them: no field here (another compile option Triton keys by)\n");
    else
        printf("Differs between them (%d field%s):\n", nd, nd == 1 ? "" : "s");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            printf("Same in every group:\n");
        for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++) {
            int differs = (x->differ >> f) & 1;
            if (differs != (pass == 0))
                continue;
            printf("  %-17s", vyre_triton_field_name((vyre_triton_field)f));
            /* Hashes are long: 16 digits tell them apart. */
            int cut = f == VYRE_TRITON_FIELD_HASH || f == VYRE_TRITON_FIELD_SOURCE ? 16 : 0;
            for (size_t i = 0; i < (differs ? x->n_groups : 1); i++) {
                const char *v = x->groups[i].values[f];
                tool_clean(*v ? v : "-", cl, sizeof cl);
                if (cut && (int)strlen(cl) > cut)
                    memcpy(cl + cut, "...", 4);
                printf("%s%s", i ? "  |  " : " ", cl);
            }
            printf("\n");
        }
    }
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
    int rc = parse(argc, argv, &o, &kernel);
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
            print_text(&c, kernel, &x);
        rc = x.n_groups ? TOOL_EXIT_OK : TOOL_EXIT_PROBLEMS;
    }
    vyre_triton_explanation_release(&x);
    vyre_triton_cache_release(&c);
    return rc;
}
