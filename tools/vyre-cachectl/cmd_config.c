/*
 * cmd_config.c - `vyre-cachectl config [KEY [VALUE]]`: the configuration
 * (libcore's vyre/config.h) with where each value comes from; one key; or
 * setting one in the cache's own vyre.conf.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: vyre-cachectl config [--json]           list every key\n"
        "       vyre-cachectl config KEY                 print one value\n"
        "       vyre-cachectl config KEY VALUE           set it in the cache's vyre.conf\n"
        "       vyre-cachectl config --unset KEY         remove it from the cache's vyre.conf\n\n"
        "Layers, lowest first (each key takes the highest that sets it):\n"
        "  default < $XDG_CONFIG_HOME/vyre/vyre.conf (~/.config/vyre/vyre.conf)\n"
        "          < <cache dir>/vyre.conf (a shared cache carries its own settings)\n"
        "          < environment VYRE_CACHE_<KEY> (VYRE_CACHE_MAX_SIZE=10G)\n"
        "          < -o KEY=VALUE on the command line\n"
        "Files hold 'key = value' lines; '#' starts a comment line.\n\n"
        "keys:\n"
        "  max_size            size limit (5G, 500M; 0: none). Default 5G. A put that\n"
        "                      takes the cache over it cleans it to 90%%, LRU first\n"
        "  max_age             cleanup also removes blobs unused for longer (30d; 0: off)\n"
        "  umask               octal umask for what the cache creates (002: a group's)\n"
        "  read_only           true: puts and prunes are refused\n"
        "  quarantine_max_age  prune and cleanup remove older quarantined files\n"
        "                      (default 7d; 0: keep them)\n"
        "  remote_storage      remote stores shared by a fleet: URLs separated by spaces,\n"
        "                      each with |attributes (see 'vyre-cachectl remote --help');\n"
        "                      its environment variable is VYRE_REMOTE_CACHE; passwords\n"
        "                      are shown as ***\n\n"
        "Writing keeps the file's other lines and comments and replaces it atomically.\n\n"
        "%s\n"
        "exit status: 0 done, 2 usage error, unknown key, bad value (with the file and\n"
        "             line), or operational error\n",
        CACHECTL_GLOBAL_HELP);
}

enum { OPT_UNSET = CACHECTL_OPT_FIRST_LOCAL };

static json_t *key_json(const vyre_config *cf, int k)
{
    char value[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
    vyre_config_format_value(cf, k, value, sizeof value);
    vyre_config_format_where(cf, k, where, sizeof where);
    static const char *const origins[] = {"default", "user_file", "cache_file", "env", "option"};
    const vyre_config_where *w = &cf->where[k];
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "key", vyre_config_key_name(k), "value", value,
                          "origin", origins[w->origin], "where", where);
    if (w->origin == VYRE_CONF_FROM_USER_FILE || w->origin == VYRE_CONF_FROM_CACHE_FILE) {
        json_object_set_new(o, "file", json_string(w->file));
        json_object_set_new(o, "line", json_integer(w->line));
    }
    return o;
}

int cmd_config(int argc, char **argv)
{
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"unset", no_argument, NULL, OPT_UNSET},
        {NULL, 0, NULL, 0},
    };
    int c, unset = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        int rc = cachectl_option(c, "config", opts, argc, argv, usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc != -1)
            return rc;
        if (c != OPT_UNSET)
            return VYRE_EXIT_ERROR;
        unset = 1;
    }
    int rc = cachectl_check_globals("config");
    if (rc)
        return rc;
    int nargs = argc - optind;
    if (nargs > 2)
        return vyre_cli_usage_error("config", NULL, "unexpected argument '%s'", argv[optind + 2]);
    if (unset && nargs != 1)
        return vyre_cli_usage_error("config", NULL, "--unset takes one KEY");
    const char *key = nargs ? argv[optind] : NULL;
    int k = key ? vyre_config_key_find(key) : -1;
    if (key && k < 0) {
        const char *names[VYRE_CONF_N_KEYS];
        for (int i = 0; i < VYRE_CONF_N_KEYS; i++)
            names[i] = vyre_config_key_name(i);
        const char *near = vyre_cli_nearest(key, names, VYRE_CONF_N_KEYS);
        char hint[128];
        if (near)
            snprintf(hint, sizeof hint, "did you mean '%s'?", near);
        return vyre_cli_usage_error("config", near ? hint : NULL, "unknown configuration key '%s'",
                                    key);
    }

    vyre_config cf;
    char root[VYRE_CACHE_PATH_MAX];
    vyre_error err;
    vyre_error_clear(&err);
    if (nargs == 2 || unset) {
        /* Writes go to the cache's own file. The current layers are read
         * first, so that a broken file is reported, not kept broken. */
        if ((rc = cachectl_config(&cf, root, sizeof root)))
            return rc;
        if (vyre_config_write(root, key, unset ? NULL : argv[optind + 1], &err)) {
            if (err.code == VYRE_ECONFIG)
                return vyre_cli_usage_error("config", err.hint[0] ? err.hint : NULL, "%s",
                                            err.message);
            return cachectl_fail(&err);
        }
        if ((rc = cachectl_config(&cf, root, sizeof root)))
            return rc;
        if (!g_cachectl.quiet && !g_cachectl.json) {
            char value[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
            vyre_config_format_value(&cf, k, value, sizeof value);
            vyre_config_format_where(&cf, k, where, sizeof where);
            printf("%s = %s (%s)\n", key, value, where);
            if (cf.where[k].origin > VYRE_CONF_FROM_CACHE_FILE)
                printf("note: %s overrides the cache's file\n", where);
        } else if (g_cachectl.json) {
            json_t *o = json_pack("{s:i, s:s}", "schema_version", 1, "cache_dir", root);
            json_object_set_new(o, "set", key_json(&cf, k));
            cachectl_json_print(o);
        }
        return VYRE_EXIT_OK;
    }
    if ((rc = cachectl_config(&cf, root, sizeof root)))
        return rc;
    if (g_cachectl.json) {
        json_t *o = json_pack("{s:i, s:s}", "schema_version", 1, "cache_dir", root);
        char user[4096];
        json_object_set_new(o, "user_file",
                            vyre_config_user_path(user, sizeof user, NULL) == VYRE_OK
                                ? json_string(user)
                                : json_null());
        json_t *keys = json_array();
        for (int i = 0; i < VYRE_CONF_N_KEYS; i++)
            if (k < 0 || i == k)
                json_array_append_new(keys, key_json(&cf, i));
        json_object_set_new(o, "keys", keys);
        cachectl_json_print(o);
        return VYRE_EXIT_OK;
    }
    if (g_cachectl.quiet)
        return VYRE_EXIT_OK;
    char value[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
    if (k >= 0) {
        vyre_config_format_value(&cf, k, value, sizeof value);
        if (g_cachectl.verbose) {
            vyre_config_format_where(&cf, k, where, sizeof where);
            printf("%s (%s)\n", value, where);
        } else {
            printf("%s\n", value);
        }
        return VYRE_EXIT_OK;
    }
    for (int i = 0; i < VYRE_CONF_N_KEYS; i++) {
        vyre_config_format_value(&cf, i, value, sizeof value);
        vyre_config_format_where(&cf, i, where, sizeof where);
        printf("(%s) %s = %s\n", where, vyre_config_key_name(i), value);
    }
    return VYRE_EXIT_OK;
}
