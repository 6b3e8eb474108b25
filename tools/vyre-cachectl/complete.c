/*
 * complete.c - `vyre-cachectl --completion-helper [WORD...]`: what the
 * bash completion (completions/vyre.bash) offers after the words typed,
 * from the option and command tables, so that it cannot go stale. One line
 * a candidate, tab-separated: the word, then 1 when it is an option that
 * takes a value, 0 for any other option, a command or an action, '-' for
 * an operand (a key of the cache after show and remote push, a
 * configuration key after config; "<file>" for a file name), then what
 * completes an option's value.
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "tool_cli.h"
#include "vyre/vyre.h"

static int print_key(const vyre_cache_entry *e, void *ctx)
{
    (void)ctx;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    printf("%s\t-\t\n", hex);
    return 0;
}

/* The keys of the cache in use (--cache-dir as typed), as operands; an
 * absent or unreadable cache offers none. */
static void complete_keys(void)
{
    vyre_cache *cache = NULL;
    if (cachectl_open(CACHECTL_READ_OR_EMPTY, &cache) == 0) {
        vyre_error err;
        vyre_error_clear(&err);
        vyre_cache_foreach(cache, print_key, NULL, &err);
        vyre_cache_close(cache);
    }
}

int cachectl_complete(const tool_cmd *cmds, const tool_opt *main_opts,
                      const tool_cmd *(*actions_of)(const tool_cmd *), int argc, char **argv)
{
    const tool_cmd *cmd = NULL, *acts = NULL, *act = NULL;
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (w[0] == '-' && w[1]) {
            /* An option's value is no command: skip it, keep --cache-dir. */
            const tool_opt *o = cachectl_opt_row(act ? act->opts : cmd ? cmd->opts : main_opts, w);
            const char *eq = strchr(w, '=');
            const char *value = !o || !o->arg  ? NULL
                                : eq           ? eq + 1
                                : i + 1 < argc ? argv[++i]
                                               : NULL;
            if (value && o->key == CACHECTL_OPT_CACHE_DIR)
                g_cachectl.cache_dir = value;
            continue;
        }
        if (!cmd) {
            if ((cmd = tool_cmd_find(cmds, w)))
                acts = actions_of(cmd);
        } else if (acts && !act) {
            act = tool_cmd_find(acts, w);
        }
    }
    if (!cmd) {
        for (const tool_cmd *c = cmds; c->name; c++)
            printf("%s\t0\t\n", c->name);
        tool_opt_complete(stdout, main_opts);
        cachectl_options_complete(stdout, NULL);
        return TOOL_EXIT_OK;
    }
    if (acts && !act) {
        for (const tool_cmd *a = acts; a->name; a++)
            printf("%s\t0\t\n", a->name);
        cachectl_options_complete(stdout, NULL);
        return TOOL_EXIT_OK;
    }
    cachectl_options_complete(stdout, act ? act->opts : cmd->opts);
    if (!strcmp(cmd->name, "config"))
        for (int k = 0; k < VYRE_CONF_N_KEYS; k++)
            printf("%s\t-\t\n", vyre_config_key_name(k));
    if (!strcmp(cmd->name, "seed") || !strcmp(cmd->name, "explain"))
        printf("%s\t-\t\n", TOOL_OPT_FILE);
    if (!strcmp(cmd->name, "show") ||
        (act && !strcmp(cmd->name, "remote") && !strcmp(act->name, "push")))
        complete_keys();
    return TOOL_EXIT_OK;
}
