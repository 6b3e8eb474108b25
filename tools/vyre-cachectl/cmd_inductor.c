/*
 * cmd_inductor.c - `vyre-cachectl inductor stats|ls|verify|prune|clear`:
 * TorchInductor's cache, found as PyTorch finds it
 * ($TORCHINDUCTOR_CACHE_DIR, else <temp dir>/torchinductor_<user>) or
 * named with --dir. Parses the action and options, scans through libcore,
 * prints. Names in the cache are foreign text: printed through tool_clean.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_inductor.h"
#include "listing.h"
#include "summary.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

enum {
    OPT_DIR = CACHECTL_OPT_FIRST_LOCAL,
    OPT_REPAIR,
    OPT_DRY_RUN,
    OPT_YES,
    OPT_MAX_SIZE,
    OPT_MAX_AGE
};

/* Each option's row, declared once; the actions' tables list the rows they
 * take, the parser and --help all of them. */
#define ROW_DIR                                                                                    \
    {                                                                                              \
        OPT_DIR, 0, "dir", "DIR",                                                                  \
            "the TorchInductor cache to use (default:\n"                                           \
            "$TORCHINDUCTOR_CACHE_DIR, else\n"                                                     \
            "<temp dir>/torchinductor_<user>)",                                                    \
            TOOL_OPT_DIR                                                                           \
    }
#define ROW_REPAIR                                                                                 \
    {                                                                                              \
        OPT_REPAIR, 0, "repair", NULL,                                                             \
            "verify: move unusable entries into\nDIR/.vyre-quarantine (never deleted)", NULL       \
    }
#define ROW_MAX_SIZE                                                                               \
    {                                                                                              \
        OPT_MAX_SIZE, 0, "max-size", "SIZE",                                                       \
            "prune: down to SIZE (5G, 500M, 1.5GiB; no unit: GiB)", NULL                           \
    }
#define ROW_MAX_AGE                                                                                \
    {                                                                                              \
        OPT_MAX_AGE, 0, "max-age", "AGE",                                                          \
            "prune: entries unused for longer than AGE (30d, 12h,\n90m)", NULL                     \
    }
#define ROW_DRY_RUN                                                                                \
    {                                                                                              \
        OPT_DRY_RUN, 0, "dry-run", NULL,                                                           \
            "prune, clear: print what would be removed, remove\nnothing", NULL                     \
    }
#define ROW_YES                                                                                    \
    {                                                                                              \
        OPT_YES, 0, "yes", NULL, "clear: required, clear refuses to run without it", NULL          \
    }
#define ROW_END                                                                                    \
    {                                                                                              \
        0, 0, NULL, NULL, NULL, NULL                                                               \
    }

const tool_opt cachectl_inductor_all_opts[] = {
    ROW_DIR, ROW_REPAIR, ROW_MAX_SIZE, ROW_MAX_AGE, ROW_DRY_RUN, ROW_YES, ROW_END,
};
static const tool_opt k_dir_only[] = {ROW_DIR, ROW_END};
static const tool_opt k_verify[] = {ROW_DIR, ROW_REPAIR, ROW_END};
static const tool_opt k_prune[] = {ROW_DIR, ROW_MAX_SIZE, ROW_MAX_AGE, ROW_DRY_RUN, ROW_END};
static const tool_opt k_clear[] = {ROW_DIR, ROW_YES, ROW_DRY_RUN, ROW_END};

const tool_cmd cachectl_inductor_actions[] = {
    {"stats", NULL, "entries, files and bytes by kind", 0, k_dir_only},
    {"ls", NULL, "one line per entry", 0, k_dir_only},
    {"verify", NULL, "check what can be checked without Python", 0, k_verify},
    {"prune", NULL, "remove entries, least recently used first, to the limits", 0, k_prune},
    {"clear", NULL, "remove every entry prune may remove", 0, k_clear},
    {NULL, NULL, NULL, 0, NULL},
};

/* The action typed, for --help (set before parsing). */
static const tool_cmd *g_help_action;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl inductor stats [--dir DIR] [--json]\n"
            "       vyre-cachectl inductor ls [--dir DIR] [--json]\n"
            "       vyre-cachectl inductor verify [--dir DIR] [--repair] [--json]\n"
            "       vyre-cachectl inductor prune [--dir DIR] [--max-size SIZE] [--max-age AGE]\n"
            "                                    [--dry-run] [--json]\n"
            "       vyre-cachectl inductor clear [--dir DIR] (--yes | --dry-run) [--json]\n\n"
            "TorchInductor's cache (torch.compile): generated kernels (<2>/<key>.py),\n"
            "autotune results (<2>/<hash>.best_config), FX graph and AOTAutograd entries\n"
            "(pickles), and the Triton cache nested under triton/<device>/ unless\n"
            "TRITON_CACHE_DIR is set. It is found as PyTorch finds it:\n"
            "$TORCHINDUCTOR_CACHE_DIR, else <temp dir>/torchinductor_<user>.\n\n"
            "  stats   entries, files (inodes) and bytes by kind, with age and last use\n"
            "  ls      one line per entry: kind, files, size, age, last use (atime where\n"
            "          the filesystem keeps it, else mtime) and path\n"
            "  verify  check what can be checked without Python: each .best_config is\n"
            "          JSON with num_warps, num_stages, configs_hash, and the Triton group\n"
            "          its triton_cache_hash names exists; kernels are UTF-8 text (not\n"
            "          parsed as Python); the nested Triton cache as 'triton verify'\n"
            "          checks it; links and unreadable files. Pickles are not checked\n"
            "  prune   remove whole entries, least recently used first, until the cache\n"
            "          fits --max-size and nothing is older than --max-age\n"
            "  clear   remove every entry prune may remove\n\n"
            "prune and clear rename each entry to a vyre trash name, then remove it, so\n"
            "a running program sees the whole entry or none (and compiles again); they\n"
            "never touch an entry modified in the last minute, a link, or an entry of\n"
            "another kind (locks, C++ kernels, temp files). Only the names Inductor\n"
            "gives count (a kernel is <2>/c<51 base32>.py); any other .py or\n"
            ".best_config in a two-letter folder is foreign: reported, never removed.\n"
            "prune, clear and verify --repair work relative to the cache directory\n"
            "opened once, and refuse one owned by another user or writable by others.\n\n");
    cachectl_action_options_help(out, "inductor", g_help_action, cachectl_inductor_all_opts);
    fprintf(out, "\n"
                 "exit status: 0 done, the cache clean; 1 verify found problems, or prune\n"
                 "             could not reach --max-size; 2 usage or operational error (no\n"
                 "             such cache directory, or one another user controls)\n");
}

/* One option of the action's own; 0, or the exit code. */
static int local_option(int c, inductor_opts *o)
{
    vyre_error err;
    vyre_error_clear(&err);
    switch (c) {
    case OPT_DIR:
        if (!*optarg)
            return tool_usage_error("inductor", "give a directory path",
                                    "--dir needs a non-empty directory");
        o->dir = optarg;
        return 0;
    case OPT_REPAIR:
        o->repair = 1;
        return 0;
    case OPT_DRY_RUN:
        o->dry_run = 1;
        return 0;
    case OPT_YES:
        o->yes = 1;
        return 0;
    case OPT_MAX_SIZE:
        if (vyre_parse_size(optarg, &o->max_bytes, &err))
            return cachectl_value_error("inductor", "--max-size", &err);
        return 0;
    case OPT_MAX_AGE:
        if (vyre_parse_duration(optarg, &o->max_age_ns, &err))
            return cachectl_value_error("inductor", "--max-age", &err);
        if (o->max_age_ns <= 0)
            return tool_usage_error("inductor", "give an age such as 30d, 12h or 90m",
                                    "--max-age '%s' is not a positive age", optarg);
        return 0;
    default:
        return TOOL_EXIT_ERROR;
    }
}

/* Which action each option belongs to. */
static int check_combination(const inductor_opts *o)
{
    int prune = !strcmp(o->action, "prune"), clear = !strcmp(o->action, "clear");
    if (o->repair && strcmp(o->action, "verify"))
        return tool_usage_error("inductor", NULL, "--repair is for 'inductor verify'");
    if (o->dry_run && !prune && !clear)
        return tool_usage_error("inductor", NULL, "--dry-run is for 'inductor prune' and 'clear'");
    if (o->yes && !clear)
        return tool_usage_error("inductor", NULL, "--yes is for 'inductor clear'");
    if ((o->max_bytes || o->max_age_ns) && !prune)
        return tool_usage_error("inductor", NULL,
                                "--max-size and --max-age are for "
                                "'inductor prune'");
    if (prune && !o->max_bytes && !o->max_age_ns)
        return tool_usage_error("inductor", "give --max-size SIZE, --max-age AGE or both",
                                "prune needs a bound");
    if (clear && !o->yes && !o->dry_run)
        return tool_usage_error("inductor",
                                "run 'vyre-cachectl inductor clear --yes' if you mean it, or "
                                "--dry-run to see what would go",
                                "clear would remove every TorchInductor entry; refusing "
                                "without --yes");
    return 0;
}

static int parse(int argc, char **argv, inductor_opts *o)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "inductor", cachectl_inductor_all_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        int rc = local_option(c, o);
        if (rc)
            return rc;
    }
    if (optind >= argc)
        return tool_usage_error("inductor", "use 'stats', 'ls', 'verify', 'prune' or 'clear'",
                                "inductor needs an action");
    o->action = argv[optind++];
    int bad = cachectl_check_action("inductor", o->action, cachectl_inductor_actions);
    if (bad)
        return bad;
    if (optind < argc)
        return tool_usage_error("inductor", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = check_combination(o);
    if (!rc)
        rc = cachectl_check_globals("inductor");
    return rc ? rc : CACHECTL_HANDLED;
}

static int locate(inductor_opts *o)
{
    return cachectl_foreign_dir("inductor", o->dir, vyre_inductor_cache_dir, o->path,
                                sizeof o->path, &o->dir_source);
}

/* ---- stats -------------------------------------------------------------- */

typedef struct kind_sum {
    uint64_t entries, bytes, files;
    int64_t oldest_ns, last_use_ns;
} kind_sum;

static void summarize(const vyre_inductor_cache *c, kind_sum *k, kind_sum *all)
{
    memset(k, 0, VYRE_INDUCTOR_KINDS * sizeof *k);
    memset(all, 0, sizeof *all);
    for (size_t i = 0; i < c->n_entries; i++) {
        const vyre_inductor_entry *e = &c->entries[i];
        kind_sum *s[2] = {&k[e->kind], all};
        for (int j = 0; j < 2; j++) {
            s[j]->entries++;
            s[j]->bytes += e->bytes;
            s[j]->files += e->files;
            if (!s[j]->oldest_ns || e->mtime_ns < s[j]->oldest_ns)
                s[j]->oldest_ns = e->mtime_ns;
            if (e->last_use_ns > s[j]->last_use_ns)
                s[j]->last_use_ns = e->last_use_ns;
        }
    }
}

static json_t *time_or_null(int64_t ns)
{
    return ns ? json_integer(ns) : json_null();
}

static json_t *stats_json(const inductor_opts *o, const vyre_inductor_cache *c, const kind_sum *all)
{
    json_t *d = cachectl_inductor_json_root(o);
    json_object_set_new(d, "entries", json_integer((json_int_t)all->entries));
    json_object_set_new(d, "files", json_integer((json_int_t)c->files));
    json_object_set_new(d, "bytes", json_integer((json_int_t)c->bytes));
    json_object_set_new(d, "apparent_bytes", json_integer((json_int_t)c->apparent_bytes));
    json_object_set_new(d, "oldest_unix_ns", time_or_null(all->oldest_ns));
    json_object_set_new(d, "last_use_unix_ns", time_or_null(all->last_use_ns));
    json_object_set_new(d, "nested_triton", json_boolean(c->has_triton_dir));
    json_t *devs = json_array();
    for (size_t i = 0; i < c->n_triton; i++)
        json_array_append_new(devs, json_string(c->triton[i].device));
    json_object_set_new(d, "triton_devices", devs);
    return d;
}

/* The entries, bytes and files of each kind (compact: the kinds present). */
static void kinds_table(cachectl_summary *sum, const kind_sum *k)
{
    static const tool_rows_col cols[] = {
        {"kind", "KIND", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
        {"entries", "ENTRIES", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"bytes", "SIZE", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"files", "INODES", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
        {"oldest_unix_ns", NULL, TOOL_ROWS_DATE, TOOL_ROWS_DATA, 0, 0, NULL, 0},
        {"last_use_unix_ns", NULL, TOOL_ROWS_DATE, TOOL_ROWS_DATA, 0, 0, NULL, 0},
    };
    tool_rows *rows = cachectl_summary_table(sum, "By kind:", "by_kind", cols, 6);
    for (int i = 0; i < VYRE_INDUCTOR_KINDS; i++) {
        tool_rows_add(rows);
        tool_rows_text(rows, 0, vyre_inductor_kind_name((vyre_inductor_kind)i));
        tool_rows_int(rows, 1, (int64_t)k[i].entries);
        cachectl_rows_size(rows, 2, k[i].bytes);
        tool_rows_int(rows, 3, (int64_t)k[i].files);
        if (k[i].oldest_ns)
            tool_rows_int(rows, 4, k[i].oldest_ns);
        if (k[i].last_use_ns)
            tool_rows_int(rows, 5, k[i].last_use_ns);
        cachectl_summary_count(sum, rows, k[i].entries);
    }
}

static int do_stats(const inductor_opts *o, const vyre_inductor_cache *c)
{
    kind_sum k[VYRE_INDUCTOR_KINDS], all;
    summarize(c, k, &all);
    int64_t now = tool_unix_ns();
    char size[32], apparent[32], age[16], use[16];
    vyre_format_size(c->bytes, size, sizeof size);
    vyre_format_size(c->apparent_bytes, apparent, sizeof apparent);
    vyre_format_age(now - all.oldest_ns, age, sizeof age);
    vyre_format_age(now - all.last_use_ns, use, sizeof use);
    cachectl_summary *sum = cachectl_summary_new(24);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "TorchInductor cache:", "%s (%s)", o->path,
                          o->dir_source);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Entries:", "%" PRIu64, all.entries);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Files (inodes):", "%" PRIu64, c->files);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Size:", "%s on disk (%s apparent)", size,
                          apparent);
    cachectl_summary_line(sum, CACHECTL_NONZERO, all.oldest_ns != 0, "Oldest entry:", "%s ago",
                          age);
    cachectl_summary_line(sum, CACHECTL_NONZERO, all.oldest_ns != 0, "Last use:", "%s ago", use);
    cachectl_summary_line(sum, CACHECTL_NONZERO, !c->has_triton_dir, "Nested Triton cache:",
                          "none here (TRITON_CACHE_DIR was set: 'vyre-cachectl triton' reads it)");
    kinds_table(sum, k);
    int rc = cachectl_summary_print(sum, "inductor stats", stats_json(o, c, &all));
    cachectl_summary_free(sum);
    return rc;
}

/* ---- ls ----------------------------------------------------------------- */

/* The columns (the keys are docs/schema's inductor ls members): the path
 * stays, cut at 80 columns; the table tells a link, trash, an unreadable
 * or a foreign entry after its path. */
enum {
    I_PATH,
    I_KIND,
    I_DIR,
    I_LINK,
    I_TRASH,
    I_UNREAD,
    I_FOREIGN,
    I_FILES,
    I_SIZE,
    I_APPARENT,
    I_MODIFIED,
    I_USED,
    I_NCOLS
};

#define D TOOL_ROWS_DATA
static const tool_rows_col k_entry_cols[I_NCOLS] = {
    [I_PATH] = {"path", "PATH", TOOL_ROWS_TEXT, 0, 20, 0, NULL, 0},
    [I_KIND] = {"kind", "KIND", TOOL_ROWS_TEXT, 1, 0, 0, NULL, 0},
    [I_DIR] = {"directory", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [I_LINK] = {"link", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [I_TRASH] = {"vyre_trash", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [I_UNREAD] = {"unreadable", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [I_FOREIGN] = {"foreign", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [I_FILES] = {"files", "FILES", TOOL_ROWS_INT, 4, 0, 0, NULL, 0},
    [I_SIZE] = {"bytes", "SIZE", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
    [I_APPARENT] = {"apparent_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [I_MODIFIED] = {"modified_unix_ns", "AGE", TOOL_ROWS_DATE, 5, 0, 0, NULL, 1},
    [I_USED] = {"last_use_unix_ns", "USED", TOOL_ROWS_DATE, 2, 0, 0, NULL, 1},
};
#undef D

static const size_t k_entry_order[] = {I_KIND, I_FILES, I_SIZE, I_MODIFIED, I_USED, I_PATH};

static void fill_entry(tool_rows *rows, const void *entries, size_t i, const void *ctx)
{
    const vyre_inductor_entry *e = (const vyre_inductor_entry *)entries + i;
    int64_t now = *(const int64_t *)ctx;
    tool_rows_text(rows, I_PATH, e->path);
    const char *note = e->link         ? "  (link, not followed)"
                       : e->trash      ? "  (vyre trash: the next prune removes it)"
                       : e->unreadable ? "  (cannot be listed whole)"
                       : e->foreign ? "  (foreign: not a name TorchInductor writes, never removed)"
                                    : NULL;
    if (note) {
        char *shown = malloc(strlen(e->path) + strlen(note) + 1);
        if (shown) {
            memcpy(shown, e->path, strlen(e->path));
            memcpy(shown + strlen(e->path), note, strlen(note) + 1);
            tool_rows_shown(rows, I_PATH, shown);
        }
        free(shown);
    }
    tool_rows_text(rows, I_KIND, vyre_inductor_kind_name(e->kind));
    const int flags[] = {e->dir, e->link, e->trash, e->unreadable, e->foreign};
    for (size_t f = 0; f < 5; f++)
        tool_rows_int(rows, I_DIR + f, flags[f]);
    tool_rows_int(rows, I_FILES, (int64_t)e->files);
    cachectl_rows_size(rows, I_SIZE, e->bytes);
    tool_rows_int(rows, I_APPARENT, (int64_t)e->apparent_bytes);
    cachectl_rows_age(rows, I_MODIFIED, e->mtime_ns, now - e->mtime_ns);
    cachectl_rows_age(rows, I_USED, e->last_use_ns, now - e->last_use_ns);
}

static const cachectl_listing k_entries = {
    .sub = "inductor ls",
    .cols = k_entry_cols,
    .ncols = I_NCOLS,
    .order = k_entry_order,
    .norder = sizeof k_entry_order / sizeof *k_entry_order,
    .quiet_col = I_PATH,
    .array_key = "entries",
    .fill = fill_entry,
};

static int do_ls(const inductor_opts *o, const vyre_inductor_cache *c)
{
    int64_t now = tool_unix_ns();
    return cachectl_list(&k_entries, c->entries, c->n_entries, &now,
                         cachectl_inductor_json_root(o));
}

int cmd_inductor(int argc, char **argv)
{
    g_help_action =
        cachectl_action_typed(cachectl_inductor_actions, cachectl_inductor_all_opts, argc, argv);
    inductor_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc != CACHECTL_HANDLED)
        return rc;
    if ((rc = locate(&o)))
        return rc;
    vyre_inductor_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    /* Every action that may change the cache opens it as vyre's own root is
     * opened (another user's, or one others may write, is refused), and
     * works relative to that one descriptor: --dry-run too, so that what it
     * says would go is what the real run removes. */
    int change = !strcmp(o.action, "prune") || !strcmp(o.action, "clear") || o.repair;
    if (vyre_inductor_cache_scan(o.path, change ? VYRE_INDUCTOR_SCAN_WRITE : 0, &c, &err))
        return cachectl_fail(&err);
    if (!strcmp(o.action, "stats"))
        rc = do_stats(&o, &c);
    else if (!strcmp(o.action, "ls"))
        rc = do_ls(&o, &c);
    else if (!strcmp(o.action, "verify"))
        rc = cachectl_inductor_verify(&o, &c);
    else
        rc = cachectl_inductor_prune(&o, &c);
    vyre_inductor_cache_release(&c);
    return rc;
}
