/*
 * cmd_explain.c - `vyre-cachectl explain SOURCE [--arch ARCH] [--entry NAME]
 * [-- OPTS]`: "why did this miss?" for the pipeline cache. Prints the
 * key's inputs one by one as the run-time path would hash them (libcore's
 * vyre_compile_key_input, the same call seed and the pipeline use), the
 * key, whether the cache has it, and the cached entries of the same source
 * or kernel with the inputs that differ (libcore's vyre_key_explain).
 * Reads only. Strings from the index are the blobs' text: printed through
 * tool_clean.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_cli.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"
#include "cmds.h"
#include "vyre/compile.h"

enum { OPT_ARCH = CACHECTL_OPT_FIRST_LOCAL, OPT_ENTRY };

const tool_opt cachectl_explain_opts[] = {
    {OPT_ARCH, 0, "arch", "ARCH",
     "the real architecture the key is for: sm_90, sm_90a,\n"
     "sm_100f (default: a PTX file's own '.target'; CUDA C\n"
     "and cubin files name none and need it)",
     "sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f sm_120"},
    {OPT_ENTRY, 0, "entry", "NAME",
     "also list the entries whose module defines kernel\n"
     "NAME (not part of the key: one blob serves every\n"
     "kernel of a module)",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl explain SOURCE [--arch ARCH] [--entry NAME]\n"
                 "                             [-- COMPILER-OPTIONS...]\n\n"
                 "Why did this miss? Compute the cache key of SOURCE (CUDA C, PTX or cubin) as\n"
                 "the run-time path and 'seed' do, print each input the key is hashed from\n"
                 "(key version, backend, toolchain, architecture, features, options, entry,\n"
                 "source kind, the source's SHA-256), the key, whether the cache holds it, and\n"
                 "every cached entry of the same source file name, the same source bytes or\n"
                 "(with --entry) the same kernel, with the inputs in which it differs.\n"
                 "Entries stored before vyre recorded inputs (or fetched from a remote store,\n"
                 "or found again by 'reindex') show 'inputs not recorded' and are compared on\n"
                 "the three their blob header keeps: key version, toolchain and architecture.\n"
                 "No GPU is needed; reads the cache, changes nothing.\n\n"
                 "COMPILER-OPTIONS, after '--': the compiler's options, in order, as the\n"
                 "run-time caller passes them (they are part of the key).\n\n");
    cachectl_options_help(out, cachectl_explain_opts);
    fprintf(out, "\n"
                 "exit status: 0 the key is in the cache (a lookup hits), 1 it is not (a lookup\n"
                 "             misses), 2 usage or operational error\n");
}

typedef struct explain_args {
    const char *path;
    const char *arch;  /* --arch, or NULL */
    const char *entry; /* --entry, or NULL */
    const char *const *copts;
    size_t n_copts;
} explain_args;

/* Where "--" starts the compiler options (argc when there is none); a "--"
 * that is an option's value does not count. */
static int options_start(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        int is_value = i > 1 && cachectl_takes_next(cachectl_explain_opts, argv[i - 1]);
        if (strcmp(argv[i], "--") == 0 && !is_value)
            return i;
    }
    return argc;
}

static int parse(int argc, char **argv, explain_args *a)
{
    int end = options_start(argc, argv);
    a->copts = end < argc ? (const char *const *)(argv + end + 1) : NULL;
    a->n_copts = end < argc ? (size_t)(argc - end - 1) : 0;
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "explain", cachectl_explain_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, end, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_ARCH && !vyre_compile_arch_valid(optarg))
            return tool_usage_error("explain", "write an architecture such as sm_90 or sm_90a",
                                    "'%s' is not an architecture", optarg);
        if (c == OPT_ENTRY && !*optarg)
            return tool_usage_error("explain", "give a kernel name, such as --entry scale",
                                    "empty --entry");
        if (c == OPT_ARCH)
            a->arch = optarg;
        else if (c == OPT_ENTRY)
            a->entry = optarg;
        else
            return TOOL_EXIT_ERROR;
    }
    if (optind >= end)
        return tool_usage_error("explain", "name the CUDA C, PTX or cubin file a program compiles",
                                "explain needs a source file");
    a->path = argv[optind++];
    if (optind < end)
        return tool_usage_error("explain", "explain one source file at a time",
                                "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("explain");
    return rc ? rc : CACHECTL_HANDLED;
}

/* Reads the source and settles its kind and architecture; 0 or the exit
 * code after the error is printed. */
static int read_source(const explain_args *a, char **src, size_t *len, vyre_source_kind *kind,
                       char arch[VYRE_BLOB_ARCH_MAX])
{
    vyre_error err;
    vyre_error_clear(&err);
    *src =
        tool_read_file(a->path, VYRE_BLOB_MAX_PAYLOAD, "sources are limited to 512 MiB", len, &err);
    if (!*src)
        return cachectl_fail(&err);
    *kind = VYRE_SOURCE_CUDA_C;
    vyre_source_kind_detect(a->path, *src, *len, kind);
    if (a->arch) {
        tool_strlcpy(arch, a->arch, VYRE_BLOB_ARCH_MAX);
        return 0;
    }
    if (*kind == VYRE_SOURCE_PTX &&
        vyre_ptx_target_arch(*src, *len, arch, VYRE_BLOB_ARCH_MAX) == VYRE_OK)
        return 0;
    free(*src);
    *src = NULL;
    if (*kind == VYRE_SOURCE_PTX)
        return tool_usage_error("explain", "give the architecture it is compiled for: --arch sm_90",
                                "the PTX '%s' names no real architecture in a '.target' directive",
                                a->path);
    return tool_usage_error("explain", "give the architecture it is compiled for: --arch sm_90",
                            "'%s' is %s, which names no target architecture", a->path,
                            *kind == VYRE_SOURCE_CUBIN ? "a cubin" : "CUDA C");
}

/* ---- one input as text and as JSON ------------------------------------------ */

static void options_text(const vyre_key_inputs *in, char *buf, size_t size)
{
    if (!in->n_options) {
        snprintf(buf, size, "(none)");
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    char cl[TOOL_CLEAN_SIZE(256)];
    for (uint32_t o = 0; o < in->options_len && used < size;
         o += (uint32_t)strlen(in->options + o) + 1) {
        int n = snprintf(buf + used, size - used, "%s'%s'", used ? " " : "",
                         tool_clean(in->options + o, cl, sizeof cl));
        if (n < 0 || (size_t)n >= size - used) {
            tool_mark_cut(buf, size, 1);
            return;
        }
        used += (size_t)n;
    }
}

/* Field f of in as printed. */
static const char *field_text(const vyre_key_inputs *in, vyre_key_field f, char *buf, size_t size)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_KEY_ENTRY_MAX)];
    const char *kn;
    switch (f) {
    case VYRE_KEY_FIELD_VERSION:
        snprintf(buf, size, "%" PRIu32, in->key_version);
        break;
    case VYRE_KEY_FIELD_BACKEND:
        snprintf(buf, size, "%s", tool_clean(in->backend, cl, sizeof cl));
        break;
    case VYRE_KEY_FIELD_TOOLCHAIN:
        snprintf(buf, size, "%s", tool_clean(in->toolchain, cl, sizeof cl));
        break;
    case VYRE_KEY_FIELD_ARCH:
        snprintf(buf, size, "%s", tool_clean(in->arch, cl, sizeof cl));
        break;
    case VYRE_KEY_FIELD_FEATURES:
        snprintf(buf, size, "0x%" PRIx64, in->features);
        break;
    case VYRE_KEY_FIELD_OPTIONS:
        options_text(in, buf, size);
        break;
    case VYRE_KEY_FIELD_ENTRY:
        snprintf(buf, size, "%s", in->entry[0] ? tool_clean(in->entry, cl, sizeof cl) : "(none)");
        break;
    case VYRE_KEY_FIELD_SOURCE_KIND:
        kn = vyre_source_kind_name((vyre_source_kind)in->source_kind);
        if (kn)
            snprintf(buf, size, "%s", kn);
        else
            snprintf(buf, size, "unknown (%" PRIu32 ")", in->source_kind);
        break;
    default:
        snprintf(buf, size, "%s", tool_clean(in->source_sha256, cl, sizeof cl));
        break;
    }
    return buf;
}

/* The inputs as a JSON object; fields not in `known` are null. */
static json_t *inputs_json(const vyre_key_inputs *in, unsigned known)
{
#define KNOWN(f) (known & (1u << (f)))
    json_t *o = json_object();
    json_t *opts = json_array();
    for (uint32_t i = 0; i < in->options_len; i += (uint32_t)strlen(in->options + i) + 1)
        json_array_append_new(opts, tool_json_text(in->options + i));
    const char *kn = vyre_source_kind_name((vyre_source_kind)in->source_kind);
    json_object_set_new(o, "key_version",
                        KNOWN(VYRE_KEY_FIELD_VERSION) ? json_integer(in->key_version)
                                                      : json_null());
    json_object_set_new(o, "backend",
                        KNOWN(VYRE_KEY_FIELD_BACKEND) ? tool_json_text(in->backend) : json_null());
    json_object_set_new(o, "toolchain",
                        KNOWN(VYRE_KEY_FIELD_TOOLCHAIN) ? tool_json_text(in->toolchain)
                                                        : json_null());
    json_object_set_new(o, "arch",
                        KNOWN(VYRE_KEY_FIELD_ARCH) ? tool_json_text(in->arch) : json_null());
    json_object_set_new(o, "features",
                        KNOWN(VYRE_KEY_FIELD_FEATURES) ? json_integer((json_int_t)in->features)
                                                       : json_null());
    json_object_set_new(o, "options", KNOWN(VYRE_KEY_FIELD_OPTIONS) ? opts : json_null());
    if (!KNOWN(VYRE_KEY_FIELD_OPTIONS))
        json_decref(opts);
    json_object_set_new(o, "entry",
                        KNOWN(VYRE_KEY_FIELD_ENTRY) ? tool_json_text(in->entry) : json_null());
    json_object_set_new(o, "source_kind",
                        KNOWN(VYRE_KEY_FIELD_SOURCE_KIND) && kn ? json_string(kn) : json_null());
    json_object_set_new(o, "source_sha256",
                        KNOWN(VYRE_KEY_FIELD_SOURCE) ? json_string(in->source_sha256)
                                                     : json_null());
#undef KNOWN
    return o;
}

/* ---- the report --------------------------------------------------------------- */

static const char *state_text(vyre_key_state s)
{
    switch (s) {
    case VYRE_KEY_PRESENT:
        return "yes (a lookup hits)";
    case VYRE_KEY_DAMAGED:
        return "no: its blob is damaged (a lookup quarantines it and compiles; "
               "'vyre-cachectl verify --repair' moves it aside)";
    default:
        return "no (a lookup misses and compiles)";
    }
}

static const char *state_name(vyre_key_state s)
{
    return s == VYRE_KEY_PRESENT ? "present" : s == VYRE_KEY_DAMAGED ? "damaged" : "absent";
}

/* "[a, b]" from the index's "a,b" (cut: "..."). */
static void kernels_text(const char *list, char *buf, size_t size)
{
    char cl[TOOL_CLEAN_SIZE(VYRE_CACHE_ENTRY_KERNELS)];
    tool_clean(list, cl, sizeof cl);
    size_t o = 0;
    if (size < 3)
        return;
    buf[o++] = '[';
    for (const char *p = cl; *p && o + 3 < size; p++) {
        buf[o++] = *p;
        if (*p == ',' && o + 3 < size)
            buf[o++] = ' ';
    }
    buf[o++] = ']';
    buf[o] = '\0';
}

static void print_entry(const vyre_key_explain_entry *e, const vyre_key_inputs *want)
{
    char hex[VYRE_KEY_HEX_LEN + 1], kt[600], cl[TOOL_CLEAN_SIZE(VYRE_BLOB_SOURCE_MAX)];
    vyre_key_to_hex(&e->key, hex);
    kernels_text(e->kernels[0] ? e->kernels : "-", kt, sizeof kt);
    int n = 0;
    for (int f = 0; f < VYRE_KEY_FIELD_COUNT; f++)
        n += (e->differ >> f) & 1;
    printf("  %.*s  %s  %s  ", CACHECTL_SHORT_KEY, hex,
           e->source[0] ? tool_clean(e->source, cl, sizeof cl) : "-", kt);
    if (!e->inputs_recorded && n == 0)
        printf("inputs not recorded; key_version, toolchain and arch are the same (it differs in "
               "an input not recorded)\n");
    else if (!e->inputs_recorded)
        printf("inputs not recorded; of key_version, toolchain and arch, %d differ%s:\n", n,
               n == 1 ? "s" : "");
    else
        printf("%d input%s differ%s:\n", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
    for (int f = 0; f < VYRE_KEY_FIELD_COUNT; f++) {
        if (!((e->differ >> f) & 1))
            continue;
        char theirs[1024], ours[1024];
        printf("      %-14s %s  (this key: %s)\n", vyre_key_field_name((vyre_key_field)f),
               field_text(&e->inputs, (vyre_key_field)f, theirs, sizeof theirs),
               field_text(want, (vyre_key_field)f, ours, sizeof ours));
    }
}

static void print_text(const explain_args *a, size_t len, const vyre_key_explanation *x)
{
    char cl[TOOL_CLEAN_SIZE(1024)], val[2048], hex[VYRE_KEY_HEX_LEN + 1];
    printf("Source:         %s (%s, %zu bytes)\n", tool_clean(a->path, cl, sizeof cl),
           vyre_source_kind_name((vyre_source_kind)x->inputs.source_kind), len);
    printf("Key inputs, in the order they are hashed:\n");
    for (int f = 0; f < VYRE_KEY_FIELD_COUNT; f++)
        printf("  %-14s %s\n", vyre_key_field_name((vyre_key_field)f),
               field_text(&x->inputs, (vyre_key_field)f, val, sizeof val));
    printf("Not in the key:  the source's file name, the kernel asked for, and the driver\n"
           "                 (a cubin does not depend on it)\n");
    vyre_key_to_hex(&x->key, hex);
    printf("Key:            %s\n", hex);
    printf("In the cache:   %s\n", state_text(x->state));
    if (!x->n_entries) {
        printf("Entries of the same source or kernel: none\n");
        return;
    }
    printf("Entries of the same source or kernel: %zu\n", x->n_entries);
    for (size_t i = 0; i < x->n_entries; i++)
        print_entry(&x->entries[i], &x->inputs);
}

static json_t *entry_json(const vyre_key_explain_entry *e)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    json_t *kernels = json_array(), *related = json_array(), *differs = json_array();
    for (const char *p = e->kernels; *p;) {
        size_t l = strcspn(p, ",");
        if (!(l == 3 && strncmp(p, "...", 3) == 0)) {
            char name[VYRE_CACHE_ENTRY_KERNELS];
            snprintf(name, sizeof name, "%.*s", (int)l, p);
            json_array_append_new(kernels, tool_json_text(name));
        }
        p += l + (p[l] == ',');
    }
    if (e->related & VYRE_KEY_RELATED_NAME)
        json_array_append_new(related, json_string("name"));
    if (e->related & VYRE_KEY_RELATED_SOURCE)
        json_array_append_new(related, json_string("source"));
    if (e->related & VYRE_KEY_RELATED_KERNEL)
        json_array_append_new(related, json_string("kernel"));
    for (int f = 0; f < VYRE_KEY_FIELD_COUNT; f++)
        if ((e->differ >> f) & 1)
            json_array_append_new(differs, json_string(vyre_key_field_name((vyre_key_field)f)));
    return json_pack("{s:s, s:o, s:o, s:o, s:b, s:o, s:o}", "key", hex, "source",
                     e->source[0] ? tool_json_text(e->source) : json_null(), "kernels", kernels,
                     "related", related, "inputs_recorded", e->inputs_recorded, "inputs",
                     inputs_json(&e->inputs, e->known), "differs", differs);
}

static void print_json(vyre_cache *c, const explain_args *a, size_t len,
                       const vyre_key_explanation *x)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&x->key, hex);
    json_t *o = json_pack("{s:i, s:o}", "schema_version", 1, "cache_dir",
                          tool_json_text(vyre_cache_root(c)));
    const char *base = strrchr(a->path, '/');
    json_object_set_new(o, "source",
                        json_pack("{s:o, s:o, s:s, s:I}", "path", tool_json_text(a->path), "name",
                                  tool_json_text(base ? base + 1 : a->path), "kind",
                                  vyre_source_kind_name((vyre_source_kind)x->inputs.source_kind),
                                  "bytes", (json_int_t)len));
    json_object_set_new(o, "inputs", inputs_json(&x->inputs, (1u << VYRE_KEY_FIELD_COUNT) - 1));
    json_object_set_new(o, "key", json_string(hex));
    json_object_set_new(o, "state", json_string(state_name(x->state)));
    json_t *es = json_array();
    for (size_t i = 0; i < x->n_entries; i++)
        json_array_append_new(es, entry_json(&x->entries[i]));
    json_object_set_new(o, "entries", es);
    tool_json_print(stdout, o);
}

int cmd_explain(int argc, char **argv)
{
    explain_args a;
    memset(&a, 0, sizeof a);
    int rc = parse(argc, argv, &a);
    if (rc != CACHECTL_HANDLED)
        return rc;
    char *src = NULL, arch[VYRE_BLOB_ARCH_MAX];
    size_t len = 0;
    vyre_source_kind kind;
    if ((rc = read_source(&a, &src, &len, &kind, arch)))
        return rc;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_compile_request req = {kind, src, len, arch, NULL, a.copts, a.n_copts};
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_key_input in;
    vyre_cache *c = NULL;
    vyre_key_explanation x;
    memset(&x, 0, sizeof x);
    if (vyre_compile_key_input(&req, &in, toolchain, &err)) {
        rc = cachectl_fail(&err);
    } else if (!(rc = cachectl_open(CACHECTL_READ_OR_EMPTY, &c))) {
        if (vyre_key_explain(c, &in, a.path, a.entry, &x, &err))
            rc = cachectl_fail(&err);
        else if (g_tool.json)
            print_json(c, &a, len, &x);
        else if (!g_cachectl.quiet)
            print_text(&a, len, &x);
        if (!rc)
            rc = x.state == VYRE_KEY_PRESENT ? TOOL_EXIT_OK : TOOL_EXIT_PROBLEMS;
    }
    vyre_key_explanation_release(&x);
    vyre_cache_close(c);
    free(src);
    return rc;
}
