/*
 * cmd_config.c - `vyre-cachectl config [KEY [VALUE]]`: the configuration
 * (libcore's vyre/config.h) with where each value comes from; one key; or
 * setting one in the cache's own vyre.conf.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"

enum { OPT_UNSET = CACHECTL_OPT_FIRST_LOCAL, OPT_YES };

const tool_opt cachectl_config_opts[] = {
    {OPT_UNSET, 0, "unset", NULL, "remove KEY from the cache's vyre.conf", NULL},
    {OPT_YES, 0, "yes", NULL,
     "set a shrinking max_size without asking (needed when\n"
     "not on a terminal)",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: vyre-cachectl config [--json]           list every key\n"
        "       vyre-cachectl config KEY                 print one value\n"
        "       vyre-cachectl config [--yes] KEY VALUE   set it in the cache's vyre.conf\n"
        "       vyre-cachectl config --unset KEY         remove it from the cache's vyre.conf\n\n"
        "Layers, lowest first (each key takes the highest that sets it):\n"
        "  default < $XDG_CONFIG_HOME/vyre/vyre.conf (~/.config/vyre/vyre.conf)\n"
        "          < <cache dir>/vyre.conf (a shared cache carries its own settings)\n"
        "          < environment VYRE_CACHE_<KEY> (VYRE_CACHE_MAX_SIZE=10G)\n"
        "          < -o KEY=VALUE on the command line\n"
        "Files hold 'key = value' lines; '#' starts a comment line. An unknown key in a\n"
        "file is a warning and its line is ignored; a bad value is an error, which\n"
        "'config' shows with the rest of the configuration.\n"
        "remote_storage is taken from a vyre.conf only when you or root own the file.\n\n"
        "keys:\n"
        "  max_size            size limit (5G, 500M; 0: none). Default 5G. A size\n"
        "                      without a unit is GiB, as in ccache (10 = 10G). A put\n"
        "                      that takes the cache over it cleans it to 90%%, LRU first\n"
        "  max_age             cleanup also removes blobs unused for longer (30d; 0: off)\n"
        "  umask               octal umask for what the cache creates (002: a group's);\n"
        "                      it must keep your rwx and deny others write\n"
        "  read_only           true: puts and prunes are refused\n"
        "  quarantine_max_age  prune and cleanup remove older quarantined files\n"
        "                      (default 7d; 0: keep them)\n"
        "  remote_storage      remote stores shared by a fleet: URLs separated by spaces,\n"
        "                      each with |attributes (see 'vyre-cachectl remote --help');\n"
        "                      its environment variable is VYRE_REMOTE_CACHE; passwords\n"
        "                      are shown as ***\n"
        "  triton_max_size     the size 'triton prune --auto' prunes Triton's kernel\n"
        "                      cache to, least recently used groups first (default 0:\n"
        "                      no limit)\n"
        "  inductor_max_size   the same for TorchInductor's cache (default 0: no limit)\n\n"
        "Writing keeps the file's other lines and comments and replaces it atomically,\n"
        "with the cache's umask (0664 under umask 002, so a group's members read it;\n"
        "a new file is 0600 when no umask is set).\n"
        "A max_size under which the next cleanup would remove more than half of the\n"
        "cache is printed with what it removes and asks first on a terminal\n"
        "(--yes: without asking).\n\n");
    cachectl_options_help(out, cachectl_config_opts);
    fprintf(out, "\n"
                 "exit status: 0 done, 2 usage error, unknown key, bad value (with the file and\n"
                 "             line: the listing is printed all the same), a shrink not\n"
                 "             confirmed, or operational error\n");
}

static json_t *key_json(const vyre_config *cf, int k)
{
    char value[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
    vyre_config_format_value(cf, k, value, sizeof value);
    vyre_config_format_where(cf, k, where, sizeof where);
    static const char *const origins[] = {"default", "user_file", "cache_file", "env", "option"};
    const vyre_config_where *w = vyre_config_get_where(cf, k);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "key", vyre_config_key_name(k), "value", value,
                          "origin", origins[w->origin], "where", where);
    if (w->origin == VYRE_CONF_FROM_USER_FILE || w->origin == VYRE_CONF_FROM_CACHE_FILE) {
        json_object_set_new(o, "file", json_string(w->file));
        json_object_set_new(o, "line", json_integer(w->line));
    }
    return o;
}

/* What the next cleanup would remove under a new max_size (value, as the
 * user wrote it): printed; more than half of the cache asks first on a
 * terminal and needs --yes otherwise ("max_size = 10" once meant 10 bytes
 * and emptied a cache: issue 22). 0 to go on, or the exit code. */
static int confirm_shrink(const char *root, const vyre_config *cf, const char *value, int yes)
{
    uint64_t max = 0;
    if (vyre_parse_cache_size(value, &max, NULL) || max == 0)
        return TOOL_EXIT_OK; /* a bad value: vyre_config_write says why; 0: no limit */
    if (vyre_config_get_where(cf, VYRE_CONF_MAX_SIZE)->origin > VYRE_CONF_FROM_CACHE_FILE)
        return TOOL_EXIT_OK; /* the environment or -o stays in force: nothing goes now */
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = cf;
    oo.flags = VYRE_CACHE_READONLY | VYRE_CACHE_MISSING_EMPTY | VYRE_CACHE_NO_HIT_TRACK;
    vyre_cache *c = NULL;
    vyre_cache_stats st;
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    po.max_bytes = (uint64_t)((double)max * VYRE_CACHE_CLEANUP_RATIO);
    po.dry_run = 1;
    vyre_cache_prune_result pr;
    memset(&pr, 0, sizeof pr);
    memset(&st, 0, sizeof st);
    int ok = vyre_cache_open(root, &oo, &c, NULL) == VYRE_OK &&
             vyre_cache_stats_get(c, &st, NULL) == VYRE_OK && st.bytes > max &&
             vyre_cache_prune(c, &po, &pr, NULL, NULL, NULL) == VYRE_OK;
    vyre_cache_close(c);
    if (!ok || pr.removed == 0)
        return TOOL_EXIT_OK; /* nothing over the limit (or nothing to read: the write decides) */
    char gone[32], total[32];
    vyre_format_size(pr.removed_bytes, gone, sizeof gone);
    vyre_format_size(st.bytes, total, sizeof total);
    char what[256];
    snprintf(what, sizeof what,
             "max_size %s: the next cleanup removes %" PRIu64 " of %" PRIu64
             " blobs (%s of %s), least recently used first",
             value, pr.removed, st.entries, gone, total);
    if (pr.removed_bytes * 2 <= st.bytes || yes) {
        if (!g_cachectl.quiet)
            fprintf(stderr, "%s\n", what);
        return TOOL_EXIT_OK;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
        fprintf(stderr, "%s: error: %s: more than half of the cache\n", tool_prog(), what);
        fprintf(stderr, "hint: give --yes to set it anyway, or a larger size (a size without a "
                        "unit is GiB; 'vyre-cachectl stats' shows the cache's size)\n");
        return TOOL_EXIT_ERROR;
    }
    fprintf(stderr, "%s.\nSet it? [y/N] ", what);
    char line[16] = "";
    if (!fgets(line, sizeof line, stdin) || (line[0] != 'y' && line[0] != 'Y')) {
        fprintf(stderr, "max_size not changed\n");
        return TOOL_EXIT_ERROR;
    }
    return TOOL_EXIT_OK;
}

/* Every key as a table fitted to the terminal (cachectl_table): the key
 * always; a long value (remote_storage) is cut before the key goes; where
 * it comes from (a file's path and line) goes first. */
static void print_table(const vyre_config *cf)
{
    static const tool_table_col cols[] = {
        {"KEY", 0, 0, 0}, {"VALUE", 0, 12, 0}, {"FROM", 1, 12, 0}};
    static char value[VYRE_CONF_N_KEYS][VYRE_CONFIG_LONG_VALUE_MAX + 16];
    static char where[VYRE_CONF_N_KEYS][VYRE_CONFIG_WHERE_MAX + 32];
    const char *cells[VYRE_CONF_N_KEYS * 3];
    for (int i = 0; i < VYRE_CONF_N_KEYS; i++) {
        vyre_config_format_value(cf, i, value[i], sizeof value[i]);
        vyre_config_format_where(cf, i, where[i], sizeof where[i]);
        cells[i * 3] = vyre_config_key_name(i);
        cells[i * 3 + 1] = value[i];
        cells[i * 3 + 2] = where[i];
    }
    cachectl_table(cols, 3, cells, VYRE_CONF_N_KEYS);
}

/* The listing (or one key) of cf. */
static void print_config(const vyre_config *cf, const char *root, int k)
{
    if (g_tool.json) {
        json_t *o = json_pack("{s:i, s:s}", "schema_version", 1, "cache_dir", root);
        char user[4096];
        json_object_set_new(o, "user_file",
                            vyre_config_user_path(user, sizeof user, NULL) == VYRE_OK
                                ? json_string(user)
                                : json_null());
        json_t *keys = json_array();
        for (int i = 0; i < VYRE_CONF_N_KEYS; i++)
            if (k < 0 || i == k)
                json_array_append_new(keys, key_json(cf, i));
        json_object_set_new(o, "keys", keys);
        tool_json_print(stdout, o);
        return;
    }
    if (g_cachectl.quiet)
        return;
    char value[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
    if (k >= 0) {
        vyre_config_format_value(cf, k, value, sizeof value);
        if (g_cachectl.verbose) {
            vyre_config_format_where(cf, k, where, sizeof where);
            printf("%s (%s)\n", value, where);
        } else {
            printf("%s\n", value);
        }
        return;
    }
    print_table(cf);
}

/* Sets (value) or removes (NULL) key in the cache's file; cf: the
 * configuration before. Prints the value in force after. */
static int set_key(vyre_config *cf, const char *root, int k, const char *value, int yes)
{
    const char *key = vyre_config_key_name(k);
    vyre_error err;
    vyre_error_clear(&err);
    int rc;
    if (value && k == VYRE_CONF_MAX_SIZE && (rc = confirm_shrink(root, cf, value, yes)))
        return rc;
    if (vyre_config_write(root, key, value, (int)vyre_config_get_int(cf, VYRE_CONF_UMASK), &err)) {
        if (err.code == VYRE_ECONFIG)
            return tool_usage_error("config", err.hint[0] ? err.hint : NULL, "%s", err.message);
        return cachectl_fail(&err);
    }
    int lrc = vyre_config_load(cf, root, g_cachectl.overrides, g_cachectl.n_overrides,
                               VYRE_CONFIG_KEEP_GOING, &err);
    if (g_tool.json) {
        json_t *o = json_pack("{s:i, s:s}", "schema_version", 1, "cache_dir", root);
        json_object_set_new(o, "set", key_json(cf, k));
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        char v[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
        vyre_config_format_value(cf, k, v, sizeof v);
        vyre_config_format_where(cf, k, where, sizeof where);
        printf("%s = %s (%s)\n", key, v, where);
        if (vyre_config_get_where(cf, k)->origin > VYRE_CONF_FROM_CACHE_FILE)
            printf("note: %s overrides the cache's file\n", where);
    }
    cachectl_config_problems(cf, 1);
    return lrc ? TOOL_EXIT_ERROR : TOOL_EXIT_OK;
}

int cmd_config(int argc, char **argv)
{
    cachectl_parser p;
    int c, unset = 0, yes = 0, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "config", cachectl_config_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_UNSET)
            unset = 1;
        else if (c == OPT_YES)
            yes = 1;
        else
            return TOOL_EXIT_ERROR;
    }
    int rc = cachectl_check_globals("config");
    if (rc)
        return rc;
    int nargs = argc - optind;
    if (nargs > 2)
        return tool_usage_error("config", NULL, "unexpected argument '%s'", argv[optind + 2]);
    if (unset && nargs != 1)
        return tool_usage_error("config", NULL, "--unset takes one KEY");
    const char *key = nargs ? argv[optind] : NULL;
    int k = key ? vyre_config_key_find(key) : -1;
    if (key && k < 0) {
        const char *names[VYRE_CONF_N_KEYS];
        for (int i = 0; i < VYRE_CONF_N_KEYS; i++)
            names[i] = vyre_config_key_name(i);
        const char *near = tool_nearest(key, names, VYRE_CONF_N_KEYS);
        char hint[128];
        if (near)
            snprintf(hint, sizeof hint, "did you mean '%s'?", near);
        return tool_usage_error("config", near ? hint : NULL, "unknown configuration key '%s'",
                                key);
    }

    char root[VYRE_CACHE_PATH_MAX];
    if ((rc = cachectl_root(root, sizeof root)))
        return rc;
    /* `config` is where the hints send a user whose configuration is
     * broken: it always runs, shows every value it could read, and then
     * the problems (a bad value still makes it exit 2). */
    vyre_config *cf = vyre_config_new();
    if (!cf) {
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        return TOOL_EXIT_ERROR;
    }
    vyre_error err;
    vyre_error_clear(&err);
    int lrc = vyre_config_load(cf, root, g_cachectl.overrides, g_cachectl.n_overrides,
                               VYRE_CONFIG_KEEP_GOING, &err);
    if (lrc && lrc != VYRE_ECONFIG && lrc != VYRE_EUNSAFE &&
        !vyre_config_problems(cf, NULL, NULL)) {
        vyre_config_free(cf);
        return cachectl_fail(&err); /* no configuration to show (out of memory) */
    }
    if (nargs == 2 || unset) {
        rc = set_key(cf, root, k, unset ? NULL : argv[optind + 1], yes);
    } else {
        print_config(cf, root, k);
        cachectl_config_problems(cf, 1);
        rc = lrc ? TOOL_EXIT_ERROR : TOOL_EXIT_OK;
    }
    vyre_config_free(cf);
    return rc;
}
