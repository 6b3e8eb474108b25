/*
 * cmd_remote.c - `vyre-cachectl remote check|push|pull`: the remote
 * stores listed in $VYRE_REMOTE_CACHE (ccache's --check-remote-storage,
 * sccache's --show-stats for its backend). Parses and prints; libcore
 * decides (vyre/cache.h, vyre/remote.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "listing.h"

enum { OPT_ALL = CACHECTL_OPT_FIRST_LOCAL };

/* remote's options: push's --all (check and pull take the global ones). */
const tool_opt cachectl_remote_opts[] = {
    {OPT_ALL, 0, "all", NULL, "push: every local blob", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

const tool_cmd cachectl_remote_actions[] = {
    {"check", NULL, "for each remote: reachable, round-trip time, writable", 0, cachectl_no_opts},
    {"push", NULL, "write local blobs (KEY... or --all) to every writable remote", 0,
     cachectl_remote_opts},
    {"pull", NULL, "fetch blobs (full keys) from the remotes in order", 0, cachectl_no_opts},
    {NULL, NULL, NULL, 0, NULL},
};

/* The action typed, for --help (set before parsing). */
static const tool_cmd *g_help_action;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl remote check [--width N | --wide]\n"
            "       vyre-cachectl remote push (KEY... | --all)\n"
            "       vyre-cachectl remote pull KEY...\n\n"
            "The remote stores of the configuration key remote_storage (vyre.conf, or\n"
            "$VYRE_REMOTE_CACHE, or -o remote_storage=...): URLs separated by spaces,\n"
            "tried in order, each with '|'-separated attributes:\n"
            "  http://host[:port]/prefix   https://...   redis://host[:port][/db]   rediss://...\n"
            "  |read-only  |connect-timeout=MS  |operation-timeout=MS  |token-file=PATH\n"
            "  |ca-file=PATH (https, rediss: the CA certificates, PEM, that verify the store)\n"
            "  |expiry=SECONDS (Redis)  |max-object-size=BYTES\n\n"
            "  check   for each remote: reachable, round-trip time, whether it takes writes\n"
            "          (a table fitted to --width N or the terminal; --wide: in full)\n"
            "  push    write local blobs (KEY or a unique prefix of it, or --all) to every\n"
            "          writable remote\n"
            "  pull    fetch blobs (full 64-digit keys) from the remotes in order; each is\n"
            "          validated like a local blob before it is stored\n\n");
    cachectl_action_options_help(out, "remote", g_help_action, cachectl_remote_opts);
    fprintf(out,
            "\n"
            "exit status: 0 done; 1 a remote unreachable or refusing, or a blob not\n"
            "             pushed or pulled; 2 usage or operational error (no remote listed)\n");
}

static int no_remotes(void)
{
    fprintf(
        stderr,
        "%s: error: no remote store is listed\n"
        "hint: set VYRE_REMOTE_CACHE, e.g. VYRE_REMOTE_CACHE='http://cache.example:8080/vyre'\n",
        tool_prog());
    return TOOL_EXIT_ERROR;
}

/* remote check's rows (the keys are docs/schema's remote check members):
 * the store and whether it answers always; then the message (why not),
 * whether it takes writes, the round-trip time; a long URL is cut before
 * any of them goes. */
enum { K_URL, K_SCHEME, K_RO, K_STATUS, K_WRITES, K_RTT, K_MSG, K_NCOLS };

static const tool_rows_col k_check_cols[K_NCOLS] = {
    [K_URL] = {"url", "REMOTE", TOOL_ROWS_TEXT, 0, 24, 0, NULL, 0},
    [K_SCHEME] = {"scheme", NULL, TOOL_ROWS_TEXT, TOOL_ROWS_DATA, 0, 0, NULL, 0},
    [K_RO] = {"read_only", NULL, TOOL_ROWS_BOOL, TOOL_ROWS_DATA, 0, 0, NULL, 0},
    [K_STATUS] = {"reachable", "STATUS", TOOL_ROWS_BOOL, 0, 0, 0, NULL, 1},
    [K_WRITES] = {"writable", "WRITES", TOOL_ROWS_BOOL, 1, 0, 0, NULL, 1},
    [K_RTT] = {"rtt_ns", "RTT", TOOL_ROWS_TIME, 3, 0, 0, NULL, 0},
    [K_MSG] = {"message", "MESSAGE", TOOL_ROWS_TEXT, 2, 16, 0, NULL, 0},
};

static const size_t k_check_order[] = {K_URL, K_STATUS, K_RTT, K_WRITES, K_MSG};

/* One store's row. */
static void check_row(tool_rows *rows, const vyre_remote_info *info, const vyre_remote_check *c)
{
    char rtt[32];
    tool_rows_add(rows);
    tool_rows_text(rows, K_URL, info->url);
    tool_rows_text(rows, K_SCHEME, vyre_remote_scheme_name(info->scheme));
    tool_rows_int(rows, K_RO, info->read_only);
    tool_rows_int(rows, K_STATUS, c->reachable);
    tool_rows_shown(rows, K_STATUS, c->reachable ? "reachable" : "UNREACHABLE");
    if (c->writable >= 0)
        tool_rows_int(rows, K_WRITES, c->writable);
    tool_rows_shown(rows, K_WRITES,
                    !c->reachable      ? "-"
                    : c->writable < 0  ? "read-only"
                    : c->writable == 1 ? "yes"
                                       : "NO");
    if (c->reachable) {
        tool_rows_int(rows, K_RTT, c->rtt_ns);
        snprintf(rtt, sizeof rtt, "%.2f ms", (double)c->rtt_ns / 1e6);
        tool_rows_shown(rows, K_RTT, rtt);
    }
    tool_rows_text(rows, K_MSG, c->message[0] ? c->message : NULL);
}

static int do_check(vyre_cache *cache)
{
    size_t n = vyre_cache_remote_count(cache);
    tool_rows *rows = tool_rows_new(k_check_cols, K_NCOLS);
    tool_rows_order(rows, k_check_order, sizeof k_check_order / sizeof *k_check_order);
    int bad = 0, messages = 0;
    for (size_t i = 0; i < n && i < VYRE_REMOTE_MAX; i++) {
        vyre_remote_info info;
        vyre_remote_check chk;
        memset(&chk, 0, sizeof chk);
        vyre_cache_remote_get(cache, i, 0, &info, NULL, NULL);
        vyre_error err;
        vyre_error_clear(&err);
        if (vyre_cache_remote_check(cache, i, &chk, &err)) {
            tool_rows_free(rows);
            return cachectl_fail(&err);
        }
        int ok = chk.reachable && chk.writable != 0;
        bad |= !ok;
        /* -q: only the stores that failed. */
        if (g_cachectl.quiet && ok)
            continue;
        messages |= chk.message[0] != '\0';
        check_row(rows, &info, &chk);
    }
    if (!messages)
        tool_rows_hide(rows, K_MSG);
    int rc = 0;
    if (g_tool.json || tool_rows_count(rows))
        rc = cachectl_rows_print("remote check", rows, cachectl_json_root(cache, 1), "remotes");
    tool_rows_free(rows);
    return rc ? rc : bad ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}

typedef struct push_ctx {
    vyre_cache *cache;
    size_t blobs, ok, failed;
} push_ctx;

/* Pushes key to every writable remote; reports failures. */
static void push_key(push_ctx *p, const vyre_key *key)
{
    size_t n = vyre_cache_remote_count(p->cache);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    p->blobs++;
    for (size_t i = 0; i < n; i++) {
        vyre_remote_info info;
        vyre_cache_remote_get(p->cache, i, 0, &info, NULL, NULL);
        if (info.read_only)
            continue;
        vyre_error err;
        vyre_error_clear(&err);
        if (vyre_cache_remote_push(p->cache, i, key, &err) == VYRE_OK) {
            p->ok++;
            if (g_cachectl.verbose)
                printf("%s -> %s\n", hex, info.url);
        } else {
            p->failed++;
            tool_report(&err);
        }
    }
}

static int push_entry(const vyre_cache_entry *e, void *ctx)
{
    push_key(ctx, &e->key);
    return 0;
}

static int do_push(vyre_cache *cache, int all, int argc, char **argv)
{
    size_t writable = 0;
    for (size_t i = 0; i < vyre_cache_remote_count(cache); i++) {
        vyre_remote_info info;
        vyre_cache_remote_get(cache, i, 0, &info, NULL, NULL);
        writable += !info.read_only;
    }
    if (!writable) {
        fprintf(stderr,
                "%s: error: every remote store is read-only\n"
                "hint: drop '|read-only' from a remote in VYRE_REMOTE_CACHE to push to it\n",
                tool_prog());
        return TOOL_EXIT_ERROR;
    }
    push_ctx p = {cache, 0, 0, 0};
    vyre_error err;
    vyre_error_clear(&err);
    if (all) {
        if (vyre_cache_foreach(cache, push_entry, &p, &err))
            return cachectl_fail(&err);
    } else {
        for (int i = 0; i < argc; i++) {
            vyre_cache_entry e;
            if (vyre_cache_find_prefix(cache, argv[i], &e, &err)) {
                tool_report(&err);
                p.failed++;
                continue;
            }
            push_key(&p, &e.key);
        }
    }
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 1);
        json_object_set_new(o, "blobs", json_integer((json_int_t)p.blobs));
        json_object_set_new(o, "pushed", json_integer((json_int_t)p.ok));
        json_object_set_new(o, "failed", json_integer((json_int_t)p.failed));
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        printf("pushed %zu blob%s (%zu write%s, %zu failed) to %zu remote store%s\n", p.blobs,
               p.blobs == 1 ? "" : "s", p.ok, p.ok == 1 ? "" : "s", p.failed, writable,
               writable == 1 ? "" : "s");
    }
    return p.failed ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}

static int do_pull(vyre_cache *cache, int argc, char **argv)
{
    size_t ok = 0, failed = 0;
    json_t *arr = json_array();
    for (int i = 0; i < argc; i++) {
        vyre_key key;
        if (vyre_key_from_hex(argv[i], &key) != VYRE_OK) {
            json_decref(arr);
            return tool_usage_error("remote pull",
                                    "give full 64-digit keys (the remote cannot be searched "
                                    "by prefix)",
                                    "not a key: '%s'", argv[i]);
        }
    }
    for (int i = 0; i < argc; i++) {
        vyre_key key;
        vyre_key_from_hex(argv[i], &key);
        vyre_error err;
        vyre_error_clear(&err);
        size_t from = 0;
        int rc = vyre_cache_remote_pull(cache, &key, &from, &err);
        vyre_remote_info info;
        memset(&info, 0, sizeof info);
        if (rc == VYRE_OK) {
            ok++;
            vyre_cache_remote_get(cache, from, 0, &info, NULL, NULL);
            if (!g_tool.json && !g_cachectl.quiet)
                printf("%s <- %s\n", argv[i], info.url);
        } else {
            failed++;
            tool_report(&err);
        }
        json_array_append_new(arr,
                              json_pack("{s:s, s:b, s:s?}", "key", argv[i], "pulled", rc == VYRE_OK,
                                        "from", rc == VYRE_OK ? info.url : NULL));
    }
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 1);
        json_object_set_new(o, "blobs", arr);
        json_object_set_new(o, "pulled", json_integer((json_int_t)ok));
        json_object_set_new(o, "failed", json_integer((json_int_t)failed));
        tool_json_print(stdout, o);
    } else {
        json_decref(arr);
    }
    return failed ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}

int cmd_remote(int argc, char **argv)
{
    g_help_action =
        cachectl_action_typed(cachectl_remote_actions, cachectl_remote_opts, argc, argv);
    cachectl_parser p;
    int all = 0, c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "remote", cachectl_remote_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_ALL)
            all = 1;
    }
    if (optind >= argc)
        return tool_usage_error("remote", "use 'check', 'push' or 'pull'",
                                "remote needs an action");
    const char *action = argv[optind++];
    int nargs = argc - optind;
    char **args = argv + optind;
    int is_check = strcmp(action, "check") == 0, is_push = strcmp(action, "push") == 0,
        is_pull = strcmp(action, "pull") == 0;
    if (!is_check && !is_push && !is_pull)
        return cachectl_check_action("remote", action, cachectl_remote_actions);
    if (all && !is_push)
        return tool_usage_error("remote", NULL, "--all is for 'remote push'");
    if (is_check && nargs)
        return tool_usage_error("remote", NULL, "unexpected argument '%s'", args[0]);
    if (is_push && !all && !nargs)
        return tool_usage_error("remote", "give keys (or unique prefixes), or --all",
                                "remote push needs keys or --all");
    if (is_push && all && nargs)
        return tool_usage_error("remote", NULL, "give keys or --all, not both");
    if (is_pull && !nargs)
        return tool_usage_error("remote", "give full 64-digit keys", "remote pull needs keys");
    int rc = cachectl_check_globals("remote");
    if (rc)
        return rc;

    vyre_cache *cache = NULL;
    if (is_pull) {
        /* Like seed, pull fills a cache that may not exist yet. */
        vyre_error err;
        vyre_error_clear(&err);
        vyre_cache_open_opts oo;
        vyre_cache_open_opts_init(&oo);
        oo.flags = VYRE_CACHE_NO_HIT_TRACK;
        if (vyre_cache_open(g_cachectl.cache_dir, &oo, &cache, &err))
            return cachectl_fail(&err);
    } else if ((rc = cachectl_open(CACHECTL_READ, &cache))) {
        return rc;
    }
    if (vyre_cache_remote_count(cache) == 0) {
        vyre_cache_close(cache);
        return no_remotes();
    }
    if (is_check)
        rc = do_check(cache);
    else if (is_push)
        rc = do_push(cache, all, nargs, args);
    else
        rc = do_pull(cache, nargs, args);
    vyre_cache_close(cache);
    return rc;
}
