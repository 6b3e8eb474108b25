/*
 * cmd_prune.c - `vyre-cachectl prune`: remove blobs by size, age,
 * architecture or stale toolchain, least recently used first.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "tally.h"
#include "progress.h"
#include "tool_sanitize.h"
#include "vyre/compile.h"

enum {
    OPT_MAX_SIZE = CACHECTL_OPT_FIRST_LOCAL,
    OPT_MAX_AGE,
    OPT_ARCH,
    OPT_STALE,
    OPT_STALE_KEYS,
    OPT_TOOLCHAIN,
    OPT_DRY_RUN,
};

const tool_opt cachectl_prune_opts[] = {
    {OPT_MAX_SIZE, 0, "max-size", "SIZE",
     "remove until the cache is at most SIZE (500M, 2G,\n"
     "1.5GiB, 750MB: K/M/G/T and KiB/MiB/GiB/TiB are powers\n"
     "of 1024, KB/MB/GB/TB of 1000; a size without a unit\n"
     "is GiB)",
     NULL},
    {OPT_MAX_AGE, 0, "max-age", "AGE",
     "remove blobs unused for longer than AGE (30d, 12h,\n"
     "90m, 2w; 0s: every blob)",
     NULL},
    {OPT_ARCH, 0, "arch", "ARCH", "remove every blob for this architecture (e.g. sm_80)",
     "sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f sm_120"},
    {OPT_STALE_KEYS, 0, "stale", NULL,
     "remove stale blobs: keyed by an older key format (v1:\n"
     "one blob per kernel), never hit by this version",
     NULL},
    {OPT_STALE, 0, "stale-toolchain", NULL,
     "--stale, and remove blobs built by a toolchain other\n"
     "than the current ones (NVRTC and nvJitLink as loaded\n"
     "now, and 'cubin')",
     NULL},
    {OPT_TOOLCHAIN, 0, "toolchain", "ID",
     "with --stale-toolchain: an identity to keep instead\n"
     "of the current ones (e.g. nvrtc-13.0); may be repeated",
     NULL},
    {OPT_DRY_RUN, 0, "dry-run", NULL, "print what would be removed; remove nothing", NULL},
    {'v', 'v', "verbose", NULL, "a line per removed blob", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl prune [--max-size SIZE] [--max-age AGE] [--arch ARCH]\n"
                 "                           [--stale] [--stale-toolchain [--toolchain ID]]\n"
                 "                           [--dry-run]\n\n"
                 "Remove blobs, least recently used first, and print what was removed and\n"
                 "what is left. With no option, apply the configured limits (max_size and\n"
                 "max_age: 'vyre-cachectl config'), as a put over the limit does. Otherwise\n"
                 "give any of the options below.\n\n"
                 "Every prune also removes quarantined files older than quarantine_max_age\n"
                 "(default 7d; 'vyre-cachectl config').\n\n"
                 "Other processes may use the cache meanwhile.\n\n");
    cachectl_options_help(out, cachectl_prune_opts);
    fprintf(out, "\n"
                 "exit status: 0 done, 1 the --max-size target could not be reached,\n"
                 "             2 usage or operational error (bad size or age, read-only cache,\n"
                 "             --toolchain without --stale-toolchain, ...)\n");
}

static const char *const g_reasons[] = {"size", "age", "arch", "stale-toolchain", "stale"};
#define N_REASONS 5

/* vyre's words: blobs, with the reasons they went and the quarantine. */
static const cachectl_line g_summary[] = {
    {-1, "{Removed|Would remove} {removed} {noun removed} ({removed_bytes}){reasons}"},
    {-1, "{Left|Would leave} {kept} {noun kept} ({kept_bytes})"},
    {TALLY_QUARANTINE, "{Removed|Would remove} {quarantine} quarantined file{/s quarantine} older "
                       "than quarantine_max_age ({quarantine_bytes})"},
    {0, NULL},
};
static const cachectl_jfield g_fields[] = {
    {"examined", TALLY_EXAMINED},           {"removed", TALLY_REMOVED},
    {"removed_bytes", TALLY_REMOVED_BYTES}, {"kept", TALLY_KEPT},
    {"kept_bytes", TALLY_KEPT_BYTES},       {NULL, 0},
};
static const cachectl_kind g_vyre = {
    "blob",    "blobs",  "{verb} {key:.12}  {kind:-6}  {arch:-8}  {size:10}  ({reason})",
    g_summary, g_fields,
};
/* The quarantine's fields, which come earlier in the document. */
static const cachectl_jfield g_quarantine_fields[] = {
    {"quarantine_removed", TALLY_QUARANTINE},
    {"quarantine_removed_bytes", TALLY_QUARANTINE_BYTES},
    {NULL, 0},
};
static const cachectl_kind g_quarantine = {"file", "files", NULL, NULL, g_quarantine_fields};

typedef struct prune_ctx {
    uint64_t by_reason[N_REASONS];
    uint64_t bytes_by_reason[N_REASONS];
    json_t *removed; /* --json */
    int print;       /* -v lines */
    int dry_run;
} prune_ctx;

static void on_removed(const vyre_cache_entry *e, const char *reason, void *ctx)
{
    prune_ctx *x = ctx;
    for (int i = 0; i < N_REASONS; i++)
        if (strcmp(reason, g_reasons[i]) == 0) {
            x->by_reason[i]++;
            x->bytes_by_reason[i] += e->disk_size;
        }
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    const char *kind = vyre_blob_kind_name(e->kind);
    if (x->removed)
        json_array_append_new(x->removed,
                              json_pack("{s:s, s:s?, s:s, s:s, s:I, s:I, s:s}", "key", hex, "kind",
                                        kind, "arch", e->arch, "toolchain", e->toolchain, "bytes",
                                        (json_int_t)e->disk_size, "apparent_bytes",
                                        (json_int_t)e->file_size, "reason", reason));
    cachectl_row row = {.key = hex,
                        .kind = kind ? kind : "?",
                        .arch = e->arch,
                        .reason = reason,
                        .bytes = e->disk_size};
    if (x->print)
        cachectl_row_print(&g_vyre, NULL, &row, x->dry_run);
}

static void tally(const prune_ctx *x, const vyre_cache_prune_result *res, int dry_run,
                  char *reasons, size_t size, cachectl_tally *t)
{
    memset(t, 0, sizeof *t);
    t->dry_run = dry_run;
    t->v[TALLY_EXAMINED] = res->examined;
    t->v[TALLY_REMOVED] = res->removed;
    t->v[TALLY_REMOVED_BYTES] = res->removed_bytes;
    t->v[TALLY_KEPT] = res->kept;
    t->v[TALLY_KEPT_BYTES] = res->kept_bytes;
    t->v[TALLY_QUARANTINE] = res->quarantine_removed;
    t->v[TALLY_QUARANTINE_BYTES] = res->quarantine_removed_bytes;
    size_t n = 0;
    reasons[0] = '\0';
    for (int i = 0; i < N_REASONS && n < size; i++)
        if (x->by_reason[i])
            n += (size_t)snprintf(reasons + n, size - n, "%s%" PRIu64 " by %s", n ? ", " : ": ",
                                  x->by_reason[i], g_reasons[i]);
    t->reasons = reasons;
}

/* What the command line asked for. */
typedef struct prune_args {
    vyre_cache_prune_opts po;
    const char *keep[16]; /* --toolchain */
    size_t n_keep;
    int have_size, have_age;
    const char *size_arg; /* --max-size as given, or "max_size" from the configuration */
} prune_args;

/* One of prune's own options; 0 or the exit code. */
static int prune_option(int c, const char *arg, prune_args *a)
{
    vyre_error err;
    vyre_error_clear(&err);
    switch (c) {
    case OPT_MAX_SIZE:
        if (vyre_parse_cache_size(arg, &a->po.max_bytes, &err))
            return cachectl_value_error("prune", "--max-size", &err);
        a->have_size = 1;
        a->size_arg = arg;
        return 0;
    case OPT_MAX_AGE:
        if (vyre_parse_duration(arg, &a->po.max_age_ns, &err))
            return cachectl_value_error("prune", "--max-age", &err);
        if (a->po.max_age_ns == 0)
            a->po.all = 1; /* unused for longer than nothing: every blob */
        a->have_age = 1;
        return 0;
    case OPT_ARCH:
        if (!vyre_compile_arch_valid(arg))
            return tool_usage_error("prune",
                                    "write an architecture such as sm_80, sm_90a or sm_100f",
                                    "'%s' is not an architecture", arg);
        a->po.arch = arg;
        return 0;
    case OPT_STALE:
        a->po.stale_toolchain = 1;
        a->po.stale = 1;
        return 0;
    case OPT_STALE_KEYS:
        a->po.stale = 1;
        return 0;
    case OPT_TOOLCHAIN:
        if (!*arg || strlen(arg) >= VYRE_BLOB_TOOLCHAIN_MAX)
            return tool_usage_error("prune", "give an identity such as nvrtc-13.0",
                                    "'%s' is not a toolchain identity", arg);
        if (a->n_keep == sizeof a->keep / sizeof a->keep[0])
            return tool_usage_error("prune", NULL, "too many --toolchain options");
        a->keep[a->n_keep++] = arg;
        return 0;
    case OPT_DRY_RUN:
        a->po.dry_run = 1;
        return 0;
    default:
        return TOOL_EXIT_ERROR;
    }
}

/* Parses argv into a: CACHECTL_HANDLED to go on, else the exit code. */
static int parse_prune_args(int argc, char **argv, prune_args *a)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "prune", cachectl_prune_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        int rc;
        if ((rc = prune_option(c, optarg, a)))
            return rc;
    }
    if (optind < argc)
        return tool_usage_error("prune", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("prune");
    if (rc)
        return rc;
    if (a->n_keep && !a->po.stale_toolchain)
        return tool_usage_error("prune", "add --stale-toolchain to remove the other ones",
                                "--toolchain only goes with --stale-toolchain");
    return CACHECTL_HANDLED;
}

/* Without a limit on the command line, the configured ones, as the
 * automatic cleanup applies them; the quarantine's age always. */
static void apply_config(prune_args *a, const vyre_config *cf)
{
    int configured =
        !a->have_size && !a->have_age && !a->po.arch && !a->po.stale_toolchain && !a->po.stale;
    a->po.quarantine_max_age_ns = vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE);
    if (!configured)
        return;
    if (vyre_config_get_int(cf, VYRE_CONF_MAX_SIZE)) {
        a->po.max_bytes = (uint64_t)vyre_config_get_int(cf, VYRE_CONF_MAX_SIZE);
        a->have_size = 1;
        a->size_arg = "max_size";
    }
    a->po.max_age_ns = vyre_config_get_int(cf, VYRE_CONF_MAX_AGE);
}

/* The JSON document of a prune (schema_version 3: bytes on disk). */
static json_t *prune_json(const vyre_cache *cache, const prune_args *a, const prune_ctx *x,
                          const cachectl_tally *t, const vyre_cache_prune_result *res)
{
    const vyre_cache_prune_opts *po = &a->po;
    json_t *o = cachectl_json_root(cache, 3);
    json_object_set_new(o, "dry_run", json_boolean(po->dry_run));
    json_object_set_new(o, "max_bytes",
                        a->have_size ? json_integer((json_int_t)po->max_bytes) : json_null());
    json_object_set_new(o, "max_age_ns",
                        po->all          ? json_integer(0)
                        : po->max_age_ns ? json_integer(po->max_age_ns)
                                         : json_null());
    cachectl_tally_json(&g_quarantine, t, o);
    json_object_set_new(o, "arch", po->arch ? json_string(po->arch) : json_null());
    json_object_set_new(o, "stale", json_boolean(po->stale));
    json_t *kt = json_array();
    for (size_t i = 0; i < a->n_keep; i++)
        json_array_append_new(kt, json_string(a->keep[i]));
    json_object_set_new(o, "keep_toolchains", kt);
    cachectl_tally_json(&g_vyre, t, o);
    json_object_set_new(o, "target_reached", json_boolean(res->target_reached));
    json_t *by = json_object();
    for (int i = 0; i < N_REASONS; i++)
        json_object_set_new(by, g_reasons[i], json_integer((json_int_t)x->by_reason[i]));
    json_object_set_new(o, "removed_by_reason", by);
    json_object_set_new(o, "removed_entries", json_incref(x->removed));
    return o;
}

/* Runs the prune with a's options (the keep list filled in) and prints what
 * it did. 0, or the exit code after the error is printed. */
static int run_prune(vyre_cache *cache, prune_args *a, vyre_cache_prune_result *res)
{
    vyre_error err;
    vyre_error_clear(&err);
    /* Without --toolchain, the current identities are the ones to keep. */
    char current[3][VYRE_BLOB_TOOLCHAIN_MAX];
    const char *cur_keep[3];
    a->po.keep_toolchains = a->keep;
    a->po.n_keep_toolchains = a->n_keep;
    if (a->po.stale_toolchain && !a->n_keep) {
        size_t n_cur = 0;
        if (vyre_compile_toolchains(current, 3, &n_cur, &err))
            return cachectl_fail(&err);
        for (size_t i = 0; i < n_cur; i++)
            cur_keep[i] = current[i];
        a->po.keep_toolchains = cur_keep;
        a->po.n_keep_toolchains = n_cur;
    }
    prune_ctx x;
    memset(&x, 0, sizeof x);
    x.removed = g_tool.json ? json_array() : NULL;
    x.print = g_cachectl.verbose && !g_tool.json;
    x.dry_run = a->po.dry_run;
    cachectl_progress prog;
    cachectl_progress_init(&prog, "prune", "blobs");
    a->po.progress = cachectl_progress_update;
    a->po.progress_ctx = &prog;
    int prc = vyre_cache_prune(cache, &a->po, res, on_removed, &x, &err);
    cachectl_progress_end(&prog);
    a->po.keep_toolchains = NULL; /* cur_keep goes out of scope */
    a->po.n_keep_toolchains = 0;
    if (prc) {
        json_decref(x.removed);
        return cachectl_fail(&err);
    }
    char reasons[256];
    cachectl_tally t;
    tally(&x, res, a->po.dry_run, reasons, sizeof reasons, &t);
    if (g_tool.json)
        tool_json_print(stdout, prune_json(cache, a, &x, &t, res));
    else if (!g_cachectl.quiet)
        cachectl_tally_print(&g_vyre, &t);
    json_decref(x.removed);
    return 0;
}

int cmd_prune(int argc, char **argv)
{
    prune_args a;
    memset(&a, 0, sizeof a);
    vyre_cache_prune_opts_init(&a.po);
    int rc = parse_prune_args(argc, argv, &a);
    if (rc != CACHECTL_HANDLED)
        return rc;
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(a.po.dry_run ? CACHECTL_READ : CACHECTL_WRITE, &cache)))
        return rc;
    apply_config(&a, vyre_cache_config(cache));
    vyre_cache_prune_result res;
    rc = run_prune(cache, &a, &res);
    vyre_cache_close(cache);
    if (rc)
        return rc;
    if (!res.target_reached) {
        char want[32], left[32];
        vyre_format_size(a.po.max_bytes, want, sizeof want);
        vyre_format_size(res.kept_bytes, left, sizeof left);
        fprintf(stderr,
                "%s: error: could not bring the cache under --max-size %s (%s): %s are left\n"
                "hint: check 'vyre-cachectl verify' for files the index does not know\n",
                tool_prog(), a.size_arg ? a.size_arg : "?", want, left);
        return TOOL_EXIT_PROBLEMS;
    }
    return TOOL_EXIT_OK;
}
