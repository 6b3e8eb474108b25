/*
 * common.c - what the vyre-cachectl subcommands share: the global options
 * (g_cachectl) and their parsing, option errors with "did you mean",
 * opening the cache, and JSON output. main.c dispatches to the commands and
 * the commands call in here; nothing here calls a command.
 */
#include <assert.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool_cli.h"
#include "tool_util.h"
#include "cmds.h"
#include "vyre/vyre.h"

cachectl_globals g_cachectl;

/* "--name" of every long option in opts, into names (at most max). */
static size_t long_names(const struct option *opts, char names[][40], size_t max)
{
    size_t n = 0;
    for (; opts->name && n < max; opts++)
        snprintf(names[n++], sizeof names[0], "--%s", opts->name);
    return n;
}

static int unknown_option(const char *sub, const struct option *opts, int argc, char **argv)
{
    char word[128];
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    const char *eq = strchr(arg, '=');
    if (optopt != 0 && strncmp(arg, "--", 2) == 0 && eq)
        return tool_usage_error(sub, NULL, "option '%.*s' takes no value", (int)(eq - arg), arg);
    if (optopt > 0 && optopt < 0x100) {
        snprintf(word, sizeof word, "-%c", optopt);
    } else {
        snprintf(word, sizeof word, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    }
    char names[64][40];
    size_t n = long_names(opts, names, 64);
    const char *cands[64];
    for (size_t i = 0; i < n; i++)
        cands[i] = names[i];
    /* getopt_long accepts unique abbreviations; a prefix of several
     * options is ambiguous rather than unknown. */
    if (strncmp(word, "--", 2) == 0 && word[2]) {
        char list[512] = "";
        size_t off = 0, hits = 0;
        for (size_t i = 0; i < n; i++) {
            if (strncmp(names[i], word, strlen(word)) != 0)
                continue;
            int w = snprintf(list + off, sizeof list - off, "%s%s", hits ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < sizeof list - off)
                off += (size_t)w;
            hits++;
        }
        if (hits > 1) {
            char hint[600];
            snprintf(hint, sizeof hint, "it could be %s", list);
            return tool_usage_error(sub, hint, "ambiguous option '%s'", word);
        }
    }
    const char *near = strncmp(word, "--", 2) == 0 ? tool_nearest(word, cands, n) : NULL;
    char hint[128];
    if (near)
        snprintf(hint, sizeof hint, "did you mean '%s'?", near);
    if (sub)
        return tool_usage_error(sub, near ? hint : NULL, "unknown option '%s' for '%s'", word, sub);
    return tool_usage_error(NULL, near ? hint : NULL, "unknown option '%s'", word);
}

static int missing_value(const char *sub, const struct option *opts, int argc, char **argv)
{
    char word[128];
    if (optopt > 0 && optopt < 0x100) {
        snprintf(word, sizeof word, "-%c", optopt);
        for (const struct option *o = opts; o->name; o++)
            if (o->val == optopt)
                snprintf(word, sizeof word, "--%s", o->name);
    } else {
        snprintf(word, sizeof word, "%s", optind > 0 && optind <= argc ? argv[optind - 1] : "?");
    }
    return tool_usage_error(sub, NULL, "option '%s' needs a value", word);
}

/* One getopt_long result c for command sub: -1 when it is the command's
 * own option, CACHECTL_HANDLED for a global one, else the exit code to
 * stop with (0 after --help, 2 after a bad option). */
static int cachectl_option(int c, const char *sub, const struct option *opts, int argc, char **argv,
                           void (*use)(FILE *))
{
    int taken = tool_rows_opt(sub, c, optarg, &g_cachectl.rows); /* -w, --wide, --csv, --md */
    if (taken)
        return taken > 0 ? CACHECTL_HANDLED : TOOL_EXIT_ERROR;
    switch (c) {
    case CACHECTL_OPT_CACHE_DIR:
        if (!*optarg)
            return tool_usage_error(sub, "give a directory path",
                                    "--cache-dir needs a non-empty directory");
        g_cachectl.cache_dir = optarg;
        return CACHECTL_HANDLED;
    case 'q':
        g_cachectl.quiet = 1;
        return CACHECTL_HANDLED;
    case 'v':
        g_cachectl.verbose = 1;
        return CACHECTL_HANDLED;
    case 'o':
        if (!strchr(optarg, '=') || optarg[0] == '=')
            return tool_usage_error(sub, "write -o key=value, e.g. -o max_size=10G",
                                    "-o '%s': expected key=value", optarg);
        if (g_cachectl.n_overrides == CACHECTL_MAX_OVERRIDES)
            return tool_usage_error(sub, NULL, "too many -o options");
        g_cachectl.overrides[g_cachectl.n_overrides++] = optarg;
        return CACHECTL_HANDLED;
    case TOOL_OPT_JSON: /* the options both CLIs share (tool_dispatch.h) */
    case 'h': {
        int code = TOOL_EXIT_OK;
        return tool_global_option(c, optarg, use, &code) == TOOL_OPT_HANDLED ? CACHECTL_HANDLED
                                                                             : code;
    }
    case '?':
        return unknown_option(sub, opts, argc, argv);
    case ':':
        return missing_value(sub, opts, argc, argv);
    default:
        return -1;
    }
}

int cachectl_global_options(const char *sub, int argc, char **argv, void (*use)(FILE *))
{
    cachectl_parser p;
    int code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, sub, cachectl_no_opts, use, ""))
        return TOOL_EXIT_ERROR;
    int c = cachectl_getopt(&p, argc, argv, &code);
    if (c == -1)
        return CACHECTL_HANDLED;
    return c == TOOL_OPT_STOP ? code : TOOL_EXIT_ERROR;
}

int cachectl_no_args(const char *sub, int argc, char **argv, void (*use)(FILE *))
{
    int rc = cachectl_global_options(sub, argc, argv, use);
    if (rc != CACHECTL_HANDLED)
        return rc;
    if (optind < argc)
        return tool_usage_error(sub, NULL, "unexpected argument '%s'", argv[optind]);
    rc = cachectl_check_globals(sub);
    return rc ? rc : CACHECTL_HANDLED;
}

int cachectl_check_globals(const char *sub)
{
    if (g_cachectl.quiet && g_tool.json)
        return tool_usage_error(sub, "use --json for machine output, or -q for none",
                                "-q and --json conflict: -q silences the output --json "
                                "asks for");
    if (g_cachectl.quiet && g_cachectl.verbose)
        return tool_usage_error(sub, "give one of them", "-q and -v conflict");
    return TOOL_EXIT_OK;
}

int cachectl_value_error(const char *sub, const char *option, const vyre_error *err)
{
    return tool_usage_error(sub, err->hint[0] ? err->hint : NULL, "%s: %s", option, err->message);
}

int cachectl_fail(const vyre_error *err)
{
    tool_report(err);
    return tool_exit_code(err->code ? err->code : VYRE_EIO);
}

int cachectl_foreign_dir(const char *sub, const char *dir,
                         int (*find)(char *, size_t, const char **, vyre_error *), char *path,
                         size_t size, const char **source)
{
    if (dir) {
        *source = "--dir";
        if (tool_strlcpy(path, dir, size) >= size)
            return tool_usage_error(sub, "use a shorter path", "--dir path is too long");
        return 0;
    }
    vyre_error err;
    vyre_error_clear(&err);
    return find(path, size, source, &err) ? cachectl_fail(&err) : 0;
}

int cachectl_check_action(const char *sub, const char *action, const tool_cmd *actions)
{
    if (tool_cmd_find(actions, action))
        return 0;
    /* Only this level's names: `inductor explian` is not top-level explain. */
    const char *names[32];
    size_t n = 0;
    for (const tool_cmd *a = actions; a->name && n < 32; a++)
        names[n++] = a->name;
    const char *near = tool_nearest(action, names, n);
    char hint[256];
    if (near) {
        snprintf(hint, sizeof hint, "did you mean '%s'?", near);
    } else {
        int off = snprintf(hint, sizeof hint, "%s's actions:", sub);
        for (size_t i = 0; i < n && off > 0 && (size_t)off < sizeof hint; i++)
            off += snprintf(hint + off, sizeof hint - (size_t)off, "%s %s", i ? "," : "", names[i]);
    }
    return tool_usage_error(sub, hint, "unknown action '%s'", action);
}

int cachectl_root(char *root, size_t root_size)
{
    vyre_error err;
    vyre_error_clear(&err);
    if (g_cachectl.cache_dir) {
        if (snprintf(root, root_size, "%s", g_cachectl.cache_dir) >= (int)root_size)
            return tool_usage_error(NULL, "use a shorter path", "--cache-dir is too long");
    } else if (vyre_cache_default_root(root, root_size, &err)) {
        return cachectl_fail(&err);
    }
    return TOOL_EXIT_OK;
}

void cachectl_config_problems(const vyre_config *cf, int in_config)
{
    size_t n = 0, total = 0;
    const vyre_config_problem *ps = vyre_config_problems(cf, &n, &total);
    for (const vyre_config_problem *p = ps; p && p < ps + n; p++) {
        vyre_error e = p->error;
        if (in_config && e.remedy == VYRE_REMEDY_CACHE_CONFIG)
            e.remedy = VYRE_REMEDY_NONE; /* the hint would send the user where he is */
        if (p->is_error) {
            tool_report(&e);
        } else if (!g_cachectl.quiet) {
            fprintf(stderr, "%s: warning: %s\n", tool_prog(), e.message);
            tool_hints(&e);
        }
    }
    if (total > n && !g_cachectl.quiet)
        fprintf(stderr, "%s: warning: %zu more configuration problems not shown\n", tool_prog(),
                total - n);
}

int cachectl_config(vyre_config **out, char *root, size_t root_size)
{
    static vyre_config *cf; /* the process's one; reachable, never freed */
    vyre_error err;
    vyre_error_clear(&err);
    int rc = cachectl_root(root, root_size);
    if (rc)
        return rc;
    if (!cf && !(cf = vyre_config_new())) {
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        return TOOL_EXIT_ERROR;
    }
    *out = cf;
    rc = vyre_config_load(cf, root, g_cachectl.overrides, g_cachectl.n_overrides, 0, &err);
    /* Warnings (an unknown key in a file) come first, whatever follows. */
    cachectl_config_problems(cf, 0);
    if (rc)
        return cachectl_fail(&err);
    return TOOL_EXIT_OK;
}

int cachectl_open(int how, vyre_cache **out)
{
    /* The command row says it opens the cache (TOOL_CMD_NEEDS_CACHE). */
    assert(!g_tool.cmd || (g_tool.cmd->flags & TOOL_CMD_NEEDS_CACHE));
    vyre_error err;
    vyre_error_clear(&err);
    *out = NULL;
    vyre_config *cf;
    char root[VYRE_CACHE_PATH_MAX];
    int crc = cachectl_config(&cf, root, sizeof root);
    if (crc)
        return crc;
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = cf;
    unsigned flags = VYRE_CACHE_NO_HIT_TRACK;
    if (how == CACHECTL_READ || how == CACHECTL_READ_OR_EMPTY) {
        flags |= VYRE_CACHE_READONLY;
        if (how == CACHECTL_READ_OR_EMPTY)
            flags |= VYRE_CACHE_MISSING_EMPTY;
    } else if (how != CACHECTL_CREATE) {
        /* A writable open creates a missing root; pruning or clearing a
         * cache that is not there is a mistake (a typo in --cache-dir), so
         * look first without creating anything. */
        vyre_cache *probe = NULL;
        vyre_cache_open_opts po = oo;
        po.flags = VYRE_CACHE_READONLY | VYRE_CACHE_NO_INDEX;
        int rc = vyre_cache_open(root, &po, &probe, &err);
        vyre_cache_close(probe);
        if (rc)
            return cachectl_fail(&err);
        if (how == CACHECTL_WRITE_NOINDEX)
            flags |= VYRE_CACHE_NO_INDEX;
    }
    oo.flags = flags;
    int rc = vyre_cache_open(root, &oo, out, &err);
    if (rc)
        return cachectl_fail(&err);
    return TOOL_EXIT_OK;
}

json_t *cachectl_json_root(const vyre_cache *c, int schema_version)
{
    return json_pack("{s:i, s:s}", "schema_version", schema_version, "cache_dir",
                     vyre_cache_root(c));
}

int cachectl_parse_count(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (vyre_parse_uint(s, &v) != 0 || v == 0)
        return -1;
    *out = v;
    return 0;
}

const char *cachectl_relpath(const vyre_cache *c, const char *path)
{
    const char *root = vyre_cache_root(c);
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (strncmp(path, root, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

void cachectl_table(const tool_table_col *cols, size_t ncols, const char *const *cells,
                    size_t nrows)
{
    int width =
        g_cachectl.rows.width ? g_cachectl.rows.width : tool_table_terminal_width(STDOUT_FILENO);
    if (g_cachectl.rows.wide)
        width = 0;
    int *natural = calloc(ncols * 2, sizeof *natural);
    if (!natural) {
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        return;
    }
    int *widths = natural + ncols;
    tool_table_natural(cols, ncols, cells, nrows, natural);
    tool_table_fit(cols, ncols, natural, width, widths);
    tool_table_render(stdout, cols, ncols, widths, cells, nrows, width);
    free(natural);
}

/* ---- option tables ------------------------------------------------------ */

const tool_opt cachectl_global_opts[] = {
    {CACHECTL_OPT_CACHE_DIR, 0, "cache-dir", "DIR",
     "the pipeline cache (default: $VYRE_PTX_CACHE_DIR,\n"
     "else $XDG_CACHE_HOME/vyre/ptx-cache, else\n"
     "~/.cache/vyre/ptx-cache)",
     TOOL_OPT_DIR},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "machine output on stdout: one JSON object with a\n"
     "schema_version, plain numbers, units in key names",
     NULL},
    {'q', 'q', "quiet", NULL, "print only errors (ls: keys only); conflicts with\n--json and -v",
     NULL},
    {'v', 'v', "verbose", NULL, "print more detail", NULL},
    {'o', 'o', "option", "KEY=VALUE",
     "override a configuration key for this command\n"
     "(repeatable; 'vyre-cachectl config' lists the keys)",
     NULL},
    {TOOL_OPT_WIDTH, 'w', "width", "N",
     "fit tables (every listing, stats, config) in N\n"
     "columns, the least important cut or left out first\n"
     "(default: the terminal's width, else $COLUMNS;\n"
     "piped: nothing is cut)",
     NULL},
    {TOOL_OPT_WIDE, 0, "wide", NULL, "every column in full, whatever the width", NULL},
    {TOOL_OPT_CSV, 0, "csv", NULL, "a listing as CSV: a header of field names, one line\nper row",
     NULL},
    {TOOL_OPT_MD, 0, "md", NULL, "a listing as a markdown table", NULL},
    {'h', 'h', "help", NULL, "this help", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

const tool_opt cachectl_no_opts[] = {
    {0, 0, NULL, NULL, NULL, NULL},
};

static int declares(const tool_opt *t, const char *name)
{
    for (; t && t->name; t++)
        if (t->key != TOOL_OPT_SECTION && strcmp(t->name, name) == 0)
            return 1;
    return 0;
}

/* own's rows, then the global rows own does not declare; -1 when they do
 * not fit out (cap rows and the {0} that ends them). */
static int merge(const tool_opt *own, tool_opt *out, size_t cap, int with_own)
{
    size_t n = 0;
    for (const tool_opt *o = own; with_own && o && o->name; o++) {
        if (n == cap)
            return -1;
        out[n++] = *o;
    }
    for (const tool_opt *o = cachectl_global_opts; o->name; o++) {
        if (declares(own, o->name))
            continue;
        if (n == cap)
            return -1;
        out[n++] = *o;
    }
    out[n] = (tool_opt){0, 0, NULL, NULL, NULL, NULL};
    return 0;
}

int cachectl_parser_init(cachectl_parser *p, const char *sub, const tool_opt *own,
                         void (*use)(FILE *), const char *lead)
{
    p->sub = sub;
    p->usage = use;
    if (merge(own, p->rows, TOOL_OPT_MAX, 1) || tool_opt_getopt(p->rows, &p->g)) {
        fprintf(stderr, "%s: error: %s%stoo many options declared (a programming error)\n",
                tool_prog(), sub ? sub : "", sub ? ": " : "");
        return -1;
    }
    /* ':' first: a missing value is ':', told apart from an unknown option. */
    snprintf(p->shorts, sizeof p->shorts, "%s:%s", lead, p->g.shorts);
    return 0;
}

int cachectl_getopt(cachectl_parser *p, int argc, char **argv, int *code)
{
    opterr = 0;
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, p->shorts, p->g.longs, &li);
        if (c == -1)
            return -1;
        if (c != '?' && c != ':')
            tool_opt_note_renamed(p->rows, &p->g, li);
        int rc = cachectl_option(c, p->sub, p->g.longs, argc, argv, p->usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc == -1)
            return c;
        *code = rc;
        return TOOL_OPT_STOP;
    }
}

void cachectl_options_help(FILE *out, const tool_opt *own)
{
    tool_opt rest[TOOL_OPT_MAX + 1];
    if (own && own->name) {
        fputs("options:\n", out);
        tool_opt_help(out, own);
        fputc('\n', out);
    }
    if (merge(own, rest, TOOL_OPT_MAX, 0) == 0) {
        fputs("global options (also accepted before the command):\n", out);
        tool_opt_help(out, rest);
    }
}

/* "max_size= max_age= ...": what completes -o, from libcore's list of
 * configuration keys (so a new key is offered without a change here). */
static const char *config_keys_eq(void)
{
    static char keys[1024];
    size_t off = 0;
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++) {
        int n = snprintf(keys + off, sizeof keys - off, "%s%s=", off ? " " : "",
                         vyre_config_key_name(k));
        if (n < 0 || (size_t)n >= sizeof keys - off)
            break;
        off += (size_t)n;
    }
    return keys;
}

void cachectl_options_complete(FILE *out, const tool_opt *own)
{
    tool_opt rest[TOOL_OPT_MAX + 1];
    if (own)
        tool_opt_complete(out, own);
    if (merge(own, rest, TOOL_OPT_MAX, 0) == 0) {
        for (tool_opt *o = rest; o->name; o++)
            if (o->key == 'o')
                o->values = config_keys_eq();
        tool_opt_complete(out, rest);
    }
}

const tool_opt *cachectl_opt_row(const tool_opt *own, const char *word)
{
    const tool_opt *tables[2] = {own, cachectl_global_opts};
    for (size_t t = 0; t < 2; t++) {
        for (const tool_opt *o = tables[t]; o && o->name; o++) {
            if (o->key == TOOL_OPT_SECTION)
                continue;
            if (word[1] != '-') {
                if (o->short_name && word[1] == o->short_name && !word[2])
                    return o;
                continue;
            }
            size_t n = strlen(o->name);
            if (!strncmp(word + 2, o->name, n) && (!word[2 + n] || word[2 + n] == '='))
                return o;
        }
    }
    return NULL;
}

int cachectl_takes_next(const tool_opt *own, const char *word)
{
    const tool_opt *o = word[0] == '-' && word[1] ? cachectl_opt_row(own, word) : NULL;
    return o && o->arg && !strchr(word, '=');
}

const tool_cmd *cachectl_action_typed(const tool_cmd *actions, const tool_opt *opts, int argc,
                                      char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return i + 1 < argc ? tool_cmd_find(actions, argv[i + 1]) : NULL;
        if (argv[i][0] == '-' && argv[i][1]) {
            i += cachectl_takes_next(opts, argv[i]);
            continue;
        }
        return tool_cmd_find(actions, argv[i]);
    }
    return NULL;
}

void cachectl_action_options_help(FILE *out, const char *cmd, const tool_cmd *act,
                                  const tool_opt *all)
{
    if (act)
        fprintf(out, "The options of '%s %s' ('vyre-cachectl %s --help': every action's).\n\n", cmd,
                act->name, cmd);
    cachectl_options_help(out, act ? act->opts : all);
}
