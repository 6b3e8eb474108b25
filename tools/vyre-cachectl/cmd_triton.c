/*
 * cmd_triton.c - `vyre-cachectl triton stats|ls|show|verify|relocate|prune|clear`: Triton's
 * kernel cache, found as Triton finds it ($TRITON_CACHE_DIR, else
 * $TRITON_HOME/.triton/cache, else ~/.triton/cache) or named with --dir.
 * Parses the action and options, scans through libcore, prints. Names in
 * the cache are foreign text: printed through tool_clean.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_triton.h"
#include "listing.h"
#include "summary.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

/* Every option of the actions but explain's (which parses its own), for
 * the parser and --help; each action's own, for the completion. */
const tool_opt cachectl_triton_all_opts[] = {
    TRITON_ROW_DIR,         TRITON_ROW_REPAIR,    TRITON_ROW_DRY_RUN, TRITON_ROW_MAX_SIZE,
    TRITON_ROW_MAX_AGE,     TRITON_ROW_KEEP_ARCH, TRITON_ROW_VERSION, TRITON_ROW_AUTO,
    TRITON_ROW_PRINT_TIMER, TRITON_ROW_YES,       TRITON_ROW_END,
};
static const tool_opt k_dir_only[] = {TRITON_ROW_DIR, TRITON_ROW_END};
static const tool_opt k_verify[] = {TRITON_ROW_DIR, TRITON_ROW_REPAIR, TRITON_ROW_END};
static const tool_opt k_relocate[] = {TRITON_ROW_DIR, TRITON_ROW_DRY_RUN, TRITON_ROW_END};
static const tool_opt k_prune[] = {
    TRITON_ROW_DIR,         TRITON_ROW_MAX_SIZE, TRITON_ROW_MAX_AGE,
    TRITON_ROW_KEEP_ARCH,   TRITON_ROW_VERSION,  TRITON_ROW_AUTO,
    TRITON_ROW_PRINT_TIMER, TRITON_ROW_DRY_RUN,  TRITON_ROW_END,
};
static const tool_opt k_clear[] = {TRITON_ROW_DIR, TRITON_ROW_YES, TRITON_ROW_DRY_RUN,
                                   TRITON_ROW_END};

const tool_cmd cachectl_triton_actions[] = {
    {"stats", NULL, "groups, files and bytes by architecture and Triton version", 0, k_dir_only},
    {"ls", NULL, "one line per group", 0, k_dir_only},
    {"show", NULL, "one group in full (KEY or KERNEL_NAME)", 0, k_dir_only},
    {"explain", NULL, "why KERNEL was compiled more than once", 0, cachectl_triton_explain_opts},
    {"verify", NULL, "check each group; --repair quarantines bad ones", 0, k_verify},
    {"prune", NULL, "remove groups, least recently used first, to the limits", 0, k_prune},
    {"clear", NULL, "remove every group", 0, k_clear},
    {"relocate", NULL, "rewrite the manifests to where the cache is now", 0, k_relocate},
    {NULL, NULL, NULL, 0, NULL},
};

/* The action typed, for --help (set before parsing). */
static const tool_cmd *g_help_action;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl triton stats [--dir DIR] [--json]\n"
            "       vyre-cachectl triton ls [--dir DIR] [--json]\n"
            "       vyre-cachectl triton verify [--dir DIR] [--repair] [--json]\n"
            "       vyre-cachectl triton relocate [--dir DIR] [--dry-run] [--json]\n"
            "       vyre-cachectl triton show KEY|KERNEL_NAME [--dir DIR] [--json]\n"
            "       vyre-cachectl triton prune [--max-size SIZE] [--max-age AGE]\n"
            "                    [--keep-arch ARCH]... [--triton-version V] [--dry-run]\n"
            "                    [--dir DIR] [--json]\n"
            "       vyre-cachectl triton prune --auto [--print-timer] [--dir DIR] [--json]\n"
            "       vyre-cachectl triton clear --yes|--dry-run [--dir DIR] [--json]\n"
            "       vyre-cachectl triton explain KERNEL [--dir DIR] [--json]\n\n"
            "Triton's kernel cache: one directory (group) per compiled kernel or launcher.\n"
            "It is found as Triton finds it: $TRITON_CACHE_DIR, else\n"
            "$TRITON_HOME/.triton/cache, else ~/.triton/cache.\n\n"
            "  stats     groups, files (inodes) and bytes, by architecture and Triton version\n"
            "  ls        one line per group: kernel name, architecture, Triton version,\n"
            "            warps, stages, files, size, age and last use (atime where the\n"
            "            filesystem keeps it, else mtime)\n"
            "  verify    check each group: its manifest (__grp__NAME.json) parses and names\n"
            "            files in the group; the metadata parses; the cubin is an ELF whose\n"
            "            kernels include the metadata's name and whose architecture is\n"
            "            target.arch; orphans, Triton's temp files and half-written groups\n"
            "  relocate  rewrite each manifest's child_paths to where the cache is now, so\n"
            "            a cache copied or mounted elsewhere hits again (Triton drops a\n"
            "            child whose absolute path does not exist)\n"
            "  show      one group in full: its files with sizes, its metadata, the\n"
            "            manifest's children and where each points (in the group, where\n"
            "            a copied cache was, or outside: never looked up); a kernel name\n"
            "            with several groups lists them all\n"
            "  prune     remove whole groups, least recently used first, until every\n"
            "            limit given holds (see below); a group is renamed to a vyre\n"
            "            trash name, then removed, so a running Triton sees the whole\n"
            "            group or none of it\n"
            "  clear     remove every group (same safety rules as prune)\n"
            "  explain   why KERNEL was compiled more than once: its groups and the fields\n"
            "            in which they differ ('triton explain --help')\n\n"
            "Safety (prune, clear): a group whose directory or newest file changed less\n"
            "than a minute ago is left (Triton may be writing it); Triton's temp\n"
            "directories (tmp.pid_*) go when older than an hour (clear: a minute);\n"
            "trash a killed pruner left is finished when older than a minute; links are\n"
            "never followed; other entries at the top of the cache are never touched.\n"
            "Every change (prune, clear, verify --repair, relocate) is refused for a cache\n"
            "another user owns or others can write; reading one is not.\n\n");
    cachectl_action_options_help(out, "triton", g_help_action, cachectl_triton_all_opts);
    fprintf(out, "\n"
                 "exit status: 0 done, the cache clean; 1 verify found problems, or prune left\n"
                 "             the cache over --max-size (young groups) or could not remove a\n"
                 "             group; 2 usage or operational error (no such cache directory)\n");
}

static int parse(int argc, char **argv, triton_opts *o)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "triton", cachectl_triton_all_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        int rc;
        if ((rc = cachectl_triton_prune_option(c, optarg, o)) == 1)
            continue;
        if (rc)
            return rc;
        if (c == TRITON_OPT_DIR) {
            if (!*optarg)
                return tool_usage_error("triton", "give a directory path",
                                        "--dir needs a non-empty directory");
            o->dir = optarg;
        } else if (c == TRITON_OPT_REPAIR)
            o->repair = 1;
        else if (c == TRITON_OPT_DRY_RUN)
            o->dry_run = 1;
        else
            return TOOL_EXIT_ERROR;
    }
    if (optind >= argc)
        return tool_usage_error(
            "triton",
            "use 'stats', 'ls', 'show', 'verify', 'relocate', 'prune', 'clear' or 'explain'",
            "triton needs an action");
    o->action = argv[optind++];
    int bad = cachectl_check_action("triton", o->action, cachectl_triton_actions);
    if (bad)
        return bad;
    if (!strcmp(o->action, "show") && optind < argc)
        o->show_what = argv[optind++];
    if (!strcmp(o->action, "show") && !o->show_what)
        return tool_usage_error("triton", "name a group's key or a kernel name (see 'triton ls')",
                                "triton show needs a KEY or KERNEL_NAME");
    if (optind < argc)
        return tool_usage_error("triton", NULL, "unexpected argument '%s'", argv[optind]);
    if (o->repair && strcmp(o->action, "verify"))
        return tool_usage_error("triton", NULL, "--repair is for 'triton verify'");
    if (o->dry_run && strcmp(o->action, "relocate") && strcmp(o->action, "prune") &&
        strcmp(o->action, "clear"))
        return tool_usage_error("triton", NULL,
                                "--dry-run is for 'triton relocate', 'prune' and 'clear'");
    int rc = cachectl_triton_prune_check(o);
    if (rc)
        return rc;
    rc = cachectl_check_globals("triton");
    return rc ? rc : CACHECTL_HANDLED;
}

static int locate(triton_opts *o)
{
    return cachectl_foreign_dir("triton", o->dir, vyre_triton_cache_dir, o->path, sizeof o->path,
                                &o->dir_source);
}

/* ---- stats -------------------------------------------------------------- */

/* Up to MAX_BUCKETS distinct values of one field, with their groups and
 * bytes. */
#define MAX_BUCKETS 64
typedef struct bucket {
    const char *value;
    uint64_t groups, bytes;
} bucket;

static void bucket_add(bucket *b, size_t *n, const char *value, uint64_t bytes)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(b[i].value, value)) {
            b[i].groups++;
            b[i].bytes += bytes;
            return;
        }
    if (*n < MAX_BUCKETS)
        b[(*n)++] = (bucket){value, 1, bytes};
}

typedef struct summary {
    uint64_t kernels, launchers, temp, other;
    int64_t oldest_ns, newest_use_ns;
    bucket arch[MAX_BUCKETS], version[MAX_BUCKETS];
    size_t n_arch, n_version;
} summary;

static void summarize(const vyre_triton_cache *c, summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < c->n_groups; i++) {
        const vyre_triton_group *g = &c->groups[i];
        if (g->kind == VYRE_TRITON_TEMP || g->kind == VYRE_TRITON_OTHER) {
            s->temp += g->kind == VYRE_TRITON_TEMP;
            s->other += g->kind == VYRE_TRITON_OTHER;
            continue;
        }
        if (g->kind == VYRE_TRITON_LAUNCHER)
            s->launchers++;
        else {
            s->kernels++;
            bucket_add(s->arch, &s->n_arch, *g->arch ? g->arch : "unknown", g->bytes);
            bucket_add(s->version, &s->n_version,
                       *g->triton_version ? g->triton_version : "unknown", g->bytes);
        }
        if (!s->oldest_ns || g->mtime_ns < s->oldest_ns)
            s->oldest_ns = g->mtime_ns;
        if (g->last_use_ns > s->newest_use_ns)
            s->newest_use_ns = g->last_use_ns;
    }
}

/* stats 2, ls 2: bytes are on disk (st_blocks * 512, as du counts),
 * apparent_bytes beside; ls 3: each group's command. */
static json_t *doc_root(const triton_opts *o, int version)
{
    return json_pack("{s:i, s:s, s:s}", "schema_version", version, "triton_cache_dir", o->path,
                     "triton_cache_dir_source", o->dir_source);
}

/* The groups and bytes of each value of one field, as a table. */
static void buckets_table(cachectl_summary *sum, const char *title, const char *key,
                          const char *name, const bucket *b, size_t n)
{
    static const tool_rows_col cols[] = {
        {"value", "VALUE", TOOL_ROWS_TEXT, 0, 12, 0, NULL, 0},
        {"groups", "GROUPS", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"bytes", "SIZE", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
    };
    tool_rows *rows = cachectl_summary_table(sum, title, key, cols, 3);
    tool_rows_title(rows, 0, name);
    for (size_t i = 0; i < n; i++) {
        tool_rows_add(rows);
        tool_rows_text(rows, 0, b[i].value);
        tool_rows_int(rows, 1, (int64_t)b[i].groups);
        cachectl_rows_size(rows, 2, b[i].bytes);
    }
}

static int do_stats(const triton_opts *o, const vyre_triton_cache *c)
{
    summary s;
    summarize(c, &s);
    int64_t now = tool_unix_ns();
    json_t *d = doc_root(o, 2);
    json_object_set_new(d, "kernel_groups", json_integer((json_int_t)s.kernels));
    json_object_set_new(d, "launcher_groups", json_integer((json_int_t)s.launchers));
    json_object_set_new(d, "temp_entries", json_integer((json_int_t)s.temp));
    json_object_set_new(d, "other_entries", json_integer((json_int_t)s.other));
    json_object_set_new(d, "files", json_integer((json_int_t)c->files));
    json_object_set_new(d, "bytes", json_integer((json_int_t)c->bytes));
    json_object_set_new(d, "apparent_bytes", json_integer((json_int_t)c->apparent_bytes));
    json_object_set_new(d, "oldest_unix_ns", s.oldest_ns ? json_integer(s.oldest_ns) : json_null());
    json_object_set_new(d, "last_use_unix_ns",
                        s.newest_use_ns ? json_integer(s.newest_use_ns) : json_null());
    char size[32], apparent[32], age[16], use[16];
    vyre_format_size(c->bytes, size, sizeof size);
    vyre_format_size(c->apparent_bytes, apparent, sizeof apparent);
    vyre_format_age(now - s.oldest_ns, age, sizeof age);
    vyre_format_age(now - s.newest_use_ns, use, sizeof use);
    cachectl_summary *sum = cachectl_summary_new(24);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Triton cache:", "%s (%s)", o->path,
                          o->dir_source);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Kernel groups:", "%" PRIu64, s.kernels);
    cachectl_summary_line(sum, CACHECTL_NONZERO, s.launchers, "Launcher groups:", "%" PRIu64,
                          s.launchers);
    cachectl_summary_line(sum, CACHECTL_NONZERO, s.temp + s.other,
                          "Other entries:", "%" PRIu64 " temp, %" PRIu64 " other", s.temp, s.other);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Files (inodes):", "%" PRIu64, c->files);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Size:", "%s on disk (%s apparent)", size,
                          apparent);
    cachectl_summary_line(sum, CACHECTL_NONZERO, s.oldest_ns != 0, "Oldest group:", "%s ago", age);
    cachectl_summary_line(sum, CACHECTL_NONZERO, s.oldest_ns != 0, "Last use:", "%s ago", use);
    buckets_table(sum, "By architecture:", "by_arch", "ARCH", s.arch, s.n_arch);
    buckets_table(sum, "By Triton version:", "by_triton_version", "VERSION", s.version,
                  s.n_version);
    int rc = cachectl_summary_print(sum, "triton stats", d);
    cachectl_summary_free(sum);
    return rc;
}

/* ---- ls ----------------------------------------------------------------- */

static int do_ls(const triton_opts *o, const vyre_triton_cache *c)
{
    return cachectl_triton_list(o, c->groups, NULL, c->n_groups, doc_root(o, 3));
}

int cmd_triton(int argc, char **argv)
{
    g_help_action =
        cachectl_action_typed(cachectl_triton_actions, cachectl_triton_all_opts, argc, argv);
    if (cachectl_triton_is_explain(argc, argv))
        return cmd_triton_explain(argc, argv);
    triton_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc != CACHECTL_HANDLED)
        return rc;
    if ((rc = locate(&o)))
        return rc;
    if (!strcmp(o.action, "prune") || !strcmp(o.action, "clear"))
        return cachectl_triton_prune(&o);
    vyre_triton_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_cache_scan(o.path, &c, &err))
        return cachectl_fail(&err);
    if (!strcmp(o.action, "stats"))
        rc = do_stats(&o, &c);
    else if (!strcmp(o.action, "ls"))
        rc = do_ls(&o, &c);
    else if (!strcmp(o.action, "verify"))
        rc = cachectl_triton_verify(&o, &c);
    else if (!strcmp(o.action, "show"))
        rc = cachectl_triton_show(&o, &c);
    else
        rc = cachectl_triton_relocate(&o, &c);
    vyre_triton_cache_release(&c);
    return rc;
}
