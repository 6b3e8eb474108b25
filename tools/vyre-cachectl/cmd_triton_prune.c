/*
 * cmd_triton_prune.c - `vyre-cachectl triton prune|clear`: Triton's kernel
 * cache bounded (Triton never evicts), through libcore's vyre_triton_prune:
 * whole groups, least recently used first, each renamed to a vyre trash
 * name before removal, never one younger than a minute. `prune --auto`
 * applies the triton_max_size configuration key; `--print-timer` prints
 * a systemd user timer (and a crontab line) that runs it daily.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_triton.h"
#include "tally.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "tool_util.h"

int cachectl_triton_prune_option(int c, const char *arg, triton_opts *o)
{
    vyre_error err;
    vyre_error_clear(&err);
    switch (c) {
    case TRITON_OPT_MAX_SIZE:
        if (vyre_parse_cache_size(arg, &o->max_size, &err))
            return cachectl_value_error("triton", "--max-size", &err);
        if (!o->max_size)
            return tool_usage_error("triton", "use 'triton clear --yes' to remove every group",
                                    "--max-size '%s' is no limit", arg);
        return 1;
    case TRITON_OPT_MAX_AGE:
        if (vyre_parse_duration(arg, &o->max_age_ns, &err))
            return cachectl_value_error("triton", "--max-age", &err);
        if (o->max_age_ns <= 0)
            return tool_usage_error("triton", "use 'triton clear --yes' to remove every group",
                                    "--max-age '%s' would remove every group", arg);
        return 1;
    case TRITON_OPT_KEEP_ARCH:
        if (!*arg || strlen(arg) >= 32 ||
            strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(arg))
            return tool_usage_error("triton",
                                    "write an architecture as Triton's target.arch: 90, "
                                    "sm_90, 120 or gfx942",
                                    "'%s' is not an architecture", arg);
        if (o->n_keep_arch == sizeof o->keep_arch / sizeof *o->keep_arch)
            return tool_usage_error("triton", NULL, "--keep-arch given more than %zu times",
                                    sizeof o->keep_arch / sizeof *o->keep_arch);
        o->keep_arch[o->n_keep_arch++] = arg;
        return 1;
    case TRITON_OPT_VERSION:
        if (!*arg || strlen(arg) >= 32)
            return tool_usage_error("triton", "write a version such as 3.6.0",
                                    "--triton-version needs a version");
        o->triton_version = arg;
        return 1;
    case TRITON_OPT_AUTO:
        o->auto_limit = 1;
        return 1;
    case TRITON_OPT_PRINT_TIMER:
        o->print_timer = 1;
        return 1;
    case TRITON_OPT_YES:
        o->yes = 1;
        return 1;
    default:
        return 0;
    }
}

int cachectl_triton_prune_check(const triton_opts *o)
{
    int prune = !strcmp(o->action, "prune"), clear = !strcmp(o->action, "clear");
    int limits = o->max_size || o->max_age_ns || o->n_keep_arch || o->triton_version;
    if (!prune && (limits || o->auto_limit || o->print_timer))
        return tool_usage_error("triton", NULL,
                                "--max-size, --max-age, --keep-arch, --triton-version, --auto "
                                "and --print-timer are for 'triton prune'");
    if (o->yes && !clear)
        return tool_usage_error("triton", NULL, "--yes is for 'triton clear'");
    if (clear && !o->yes && !o->dry_run)
        return tool_usage_error("triton", "run 'vyre-cachectl triton clear --yes' if you mean it",
                                "clear would remove every group of Triton's cache; refusing "
                                "without --yes");
    if (o->print_timer && !o->auto_limit)
        return tool_usage_error("triton", "write 'triton prune --auto --print-timer'",
                                "--print-timer prints a timer for --auto");
    if (o->auto_limit && limits)
        return tool_usage_error("triton", "give limits, or --auto for triton_max_size, not both",
                                "--auto takes its limit from the configuration");
    if (prune && !o->auto_limit && !limits)
        return tool_usage_error("triton",
                                "give --max-size, --max-age, --keep-arch or --triton-version, "
                                "or --auto for the triton_max_size configuration key",
                                "triton prune needs a limit");
    return 0;
}

/* ---- --print-timer ------------------------------------------------------ */

/* 1 when s can stand unquoted in a unit's ExecStart= and a crontab line
 * (no blank, quote, '%' or '\'): the timer is printed only for such paths. */
static int plain_path(const char *s)
{
    return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+-@,"
                           "=:") == strlen(s);
}

static int print_timer(const triton_opts *o)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return tool_usage_error("triton", "write the unit by hand",
                                "cannot find the path of this program");
    self[n] = '\0';
    /* The timer runs elsewhere (its working directory is $HOME): the cache
     * named absolute, as given (not resolved: a link the user made stays). */
    char dir[4096], cwd[2048];
    int w = o->path[0] == '/'         ? snprintf(dir, sizeof dir, "%s", o->path)
            : getcwd(cwd, sizeof cwd) ? snprintf(dir, sizeof dir, "%s/%s", cwd, o->path)
                                      : -1;
    if (w < 0 || (size_t)w >= sizeof dir)
        return tool_usage_error("triton", "name the cache with an absolute --dir",
                                "cannot make '%s' absolute", o->path);
    if (!plain_path(self) || !plain_path(dir))
        return tool_usage_error("triton", "write the unit by hand, quoting the paths",
                                "'%s' or '%s' has characters a unit or crontab line would need "
                                "quoted",
                                self, dir);
    /* The cache is named: a timer runs without the shell's TRITON_CACHE_DIR. */
    printf("# ~/.config/systemd/user/vyre-triton-prune.service\n"
           "[Unit]\n"
           "Description=Prune Triton's kernel cache to triton_max_size (vyre-cachectl)\n\n"
           "[Service]\n"
           "Type=oneshot\n"
           "ExecStart=%s triton prune --auto --dir %s\n"
           "Nice=19\n"
           "IOSchedulingClass=idle\n\n"
           "# ~/.config/systemd/user/vyre-triton-prune.timer\n"
           "[Unit]\n"
           "Description=Prune Triton's kernel cache daily (vyre-cachectl)\n\n"
           "[Timer]\n"
           "OnCalendar=daily\n"
           "Persistent=true\n"
           "RandomizedDelaySec=1h\n\n"
           "[Install]\n"
           "WantedBy=timers.target\n\n"
           "# Install: save the two units above, then run\n"
           "#   systemctl --user daemon-reload\n"
           "#   systemctl --user enable --now vyre-triton-prune.timer\n"
           "# Or instead, one crontab line (crontab -e):\n"
           "#   17 3 * * * %s triton prune --auto --dir %s -q\n"
           "# Set the size first: vyre-cachectl config triton_max_size 20G\n",
           self, dir, self, dir);
    return TOOL_EXIT_OK;
}

/* ---- prune and clear ---------------------------------------------------- */

static json_t *removed_json(const vyre_triton_pruned *e)
{
    json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I}", "key", e->key, "reason", e->reason, "bytes",
                          (json_int_t)e->bytes, "inodes", (json_int_t)e->inodes, "last_use_unix_ns",
                          (json_int_t)e->last_use_ns);
    json_object_set_new(j, "name", *e->name ? json_string(e->name) : json_null());
    json_object_set_new(j, "error", e->error ? json_string(e->message) : json_null());
    return j;
}

/* Triton's words: groups, with their inodes. */
static const cachectl_line g_summary[] = {
    {-1, "{Removed|Would remove} {removed} {noun removed} ({removed_bytes}, {removed_inodes} "
         "inodes)"},
    {-1, "{Kept|Would keep} {kept} {noun kept} (the cache: {kept_bytes}, {kept_inodes} inodes)"},
    {TALLY_YOUNG, "Left {young} {noun young} younger than a minute ({young_bytes}): Triton may "
                  "be writing {it/them young}"},
    {TALLY_FAILED, "Could not remove {failed} {noun failed} (see the warnings)"},
    {0, NULL},
};
static const cachectl_jfield g_fields[] = {
    {"removed_groups", TALLY_REMOVED},
    {"removed_bytes", TALLY_REMOVED_BYTES},
    {"removed_inodes", TALLY_REMOVED_INODES},
    {"kept_groups", TALLY_KEPT},
    {"kept_bytes", TALLY_KEPT_BYTES},
    {"kept_inodes", TALLY_KEPT_INODES},
    {"young_groups", TALLY_YOUNG},
    {"young_bytes", TALLY_YOUNG_BYTES},
    {"failed", TALLY_FAILED},
    {"total_bytes", TALLY_TOTAL_BYTES},
    {NULL, 0},
};
static const cachectl_kind g_triton = {
    "group",
    "groups",
    "{verb} {key:-12.12}  {name:-32}  {size:10}  {inodes:5} inodes  ({reason})",
    g_summary,
    g_fields,
};

static void tally(const vyre_triton_prune_result *r, int dry_run, cachectl_tally *t)
{
    memset(t, 0, sizeof *t);
    t->dry_run = dry_run;
    t->v[TALLY_REMOVED] = r->removed_groups;
    t->v[TALLY_REMOVED_BYTES] = r->removed_bytes;
    t->v[TALLY_REMOVED_INODES] = r->removed_inodes;
    t->v[TALLY_KEPT] = r->kept_groups;
    t->v[TALLY_KEPT_BYTES] = r->kept_bytes;
    t->v[TALLY_KEPT_INODES] = r->kept_inodes;
    t->v[TALLY_YOUNG] = r->young_groups;
    t->v[TALLY_YOUNG_BYTES] = r->young_bytes;
    t->v[TALLY_FAILED] = r->failed;
    t->v[TALLY_TOTAL_BYTES] = r->total_bytes;
}

static void print_json(const triton_opts *o, const vyre_triton_prune_opts *po,
                       const cachectl_tally *t, const vyre_triton_prune_result *r)
{
    json_t *arch = json_array(), *removed = json_array();
    for (size_t i = 0; i < o->n_keep_arch; i++)
        json_array_append_new(arch, json_string(o->keep_arch[i]));
    for (size_t i = 0; i < r->n_removed; i++)
        json_array_append_new(removed, removed_json(&r->removed[i]));
    json_t *limits =
        json_pack("{s:o, s:o, s:o, s:o, s:b}", "max_size_bytes",
                  po->max_size ? json_integer((json_int_t)po->max_size) : json_null(), "max_age_ns",
                  po->max_age_ns ? json_integer(po->max_age_ns) : json_null(), "keep_arch", arch,
                  "triton_version",
                  o->triton_version ? json_string(o->triton_version) : json_null(), "all", po->all);
    json_t *d = json_pack("{s:i, s:s, s:s, s:s, s:b, s:b, s:n, s:o, s:o}", "schema_version", 2,
                          "triton_cache_dir", o->path, "triton_cache_dir_source", o->dir_source,
                          "action", o->action, "dry_run", o->dry_run, "auto", o->auto_limit,
                          "nothing_to_do", "limits", limits, "removed", removed);
    cachectl_tally_json(&g_triton, t, d);
    tool_json_print(stdout, d);
}

static void print_text(const triton_opts *o, const cachectl_tally *t,
                       const vyre_triton_prune_result *r)
{
    for (size_t i = 0; i < r->n_removed; i++) {
        const vyre_triton_pruned *e = &r->removed[i];
        cachectl_row row = {.key = e->key,
                            .name = *e->name ? e->name : "-",
                            .reason = e->reason,
                            .bytes = e->bytes,
                            .inodes = e->inodes};
        if (e->error) {
            fprintf(stderr, "%s: warning: cannot remove group '", tool_prog());
            tool_clean_fputs(e->key, stderr);
            fprintf(stderr, "': %s\n", e->message); /* libcore's message: names cleaned there */
        } else if (!g_cachectl.quiet)
            cachectl_row_print(&g_triton, NULL, &row, o->dry_run);
    }
    if (!g_cachectl.quiet)
        cachectl_tally_print(&g_triton, t);
}

/* --auto with nothing to do: exit 0 with why (a timer must not fail on a
 * machine without a Triton cache or without a limit). */
static int nothing_to_do(const triton_opts *o, const char *why)
{
    if (g_tool.json) {
        json_t *d = json_pack("{s:i, s:s, s:s, s:s, s:b, s:b, s:s}", "schema_version", 2,
                              "triton_cache_dir", o->path, "triton_cache_dir_source", o->dir_source,
                              "action", o->action, "dry_run", o->dry_run, "auto", o->auto_limit,
                              "nothing_to_do", why);
        tool_json_print(stdout, d);
    } else if (!g_cachectl.quiet) {
        tool_clean_fputs(why, stdout);
        printf(": nothing to do\n");
    }
    return TOOL_EXIT_OK;
}

/* --auto: the limit is triton_max_size. Returns -1 to go on, else the
 * exit code. */
static int auto_limit(const triton_opts *o, vyre_triton_prune_opts *po)
{
    vyre_config *cf;
    char root[4096];
    int rc = cachectl_config(&cf, root, sizeof root);
    if (rc)
        return rc;
    po->max_size = (uint64_t)vyre_config_get_int(cf, VYRE_CONF_TRITON_MAX_SIZE);
    if (!po->max_size)
        return nothing_to_do(o, "triton_max_size is 0 (no limit; set it with 'vyre-cachectl "
                                "config triton_max_size 20G')");
    if (access(o->path, F_OK) != 0) {
        char why[4200];
        snprintf(why, sizeof why, "no Triton cache at '%s' yet", o->path);
        return nothing_to_do(o, why);
    }
    return -1;
}

int cachectl_triton_prune(triton_opts *o)
{
    if (o->print_timer)
        return print_timer(o);
    vyre_triton_prune_opts po = {
        .max_size = o->max_size,
        .max_age_ns = o->max_age_ns,
        .keep_arch = o->keep_arch,
        .n_keep_arch = o->n_keep_arch,
        .triton_version = o->triton_version,
        .all = !strcmp(o->action, "clear"),
        .dry_run = o->dry_run,
    };
    if (o->auto_limit) {
        int rc = auto_limit(o, &po);
        if (rc >= 0)
            return rc;
    }
    vyre_triton_prune_result r;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_prune(o->path, &po, &r, &err))
        return cachectl_fail(&err);
    cachectl_tally t;
    tally(&r, o->dry_run, &t);
    if (g_tool.json)
        print_json(o, &po, &t, &r);
    else
        print_text(o, &t, &r);
    int bad = r.failed || (po.max_size && r.kept_bytes > po.max_size);
    vyre_triton_prune_result_release(&r);
    return bad ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
