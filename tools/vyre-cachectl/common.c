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

int cachectl_option(int c, const char *sub, const struct option *opts, int argc, char **argv,
                    void (*use)(FILE *))
{
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
    case CACHECTL_OPT_WIDTH: {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (!*optarg || *end || v < 20 || v > 10000)
            return tool_usage_error(sub, "give the columns to fit, such as 80 (20 to 10000)",
                                    "bad value '%s' for --width", optarg);
        g_cachectl.width = (int)v;
        return CACHECTL_HANDLED;
    }
    case CACHECTL_OPT_WIDE:
        g_cachectl.wide = 1;
        return CACHECTL_HANDLED;
    case CACHECTL_OPT_CSV:
        g_cachectl.csv = 1;
        return CACHECTL_HANDLED;
    case CACHECTL_OPT_MD:
        g_cachectl.md = 1;
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
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        int rc = cachectl_option(c, sub, opts, argc, argv, use);
        if (rc != CACHECTL_HANDLED)
            return rc < 0 ? TOOL_EXIT_ERROR : rc;
    }
    return CACHECTL_HANDLED;
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

int cachectl_check_action(const char *sub, const char *action, const char *const *actions, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(action, actions[i]))
            return 0;
    const char *near = tool_nearest(action, actions, n);
    char hint[96];
    snprintf(hint, sizeof hint, "did you mean '%s'?", near ? near : actions[0]);
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
    } else {
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
    int width = g_cachectl.width ? g_cachectl.width : tool_table_terminal_width(STDOUT_FILENO);
    if (g_cachectl.wide)
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
