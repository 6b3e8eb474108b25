/*
 * tool_cli.c - messages, subcommand lookup and "did you mean" for the front ends.
 */
#include "tool_cli.h"
#include "tool_sanitize.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vyre/units.h"

static const char *g_prog = "vyre";

void tool_set_prog(const char *prog)
{
    g_prog = prog;
}

const char *tool_prog(void)
{
    return g_prog;
}

const char *tool_remedy(vyre_remedy remedy)
{
    switch (remedy) {
    case VYRE_REMEDY_CACHE_REPAIR:
        return "run 'vyre-cachectl verify --repair'";
    case VYRE_REMEDY_CACHE_REINDEX:
        return "rebuild it from the blobs with 'vyre-cachectl reindex'";
    case VYRE_REMEDY_CACHE_PRUNE:
        return "shrink the cache with 'vyre-cachectl prune'";
    case VYRE_REMEDY_CACHE_LIST:
        return "list the keys with 'vyre-cachectl ls'";
    case VYRE_REMEDY_BENCH_RUNS:
        return "list the runs with 'vyre-bench runs'";
    case VYRE_REMEDY_DEVICES:
        return "list the devices with 'vyre-bench devices'";
    case VYRE_REMEDY_CACHE_CONFIG:
        return "see every setting and where it comes from with 'vyre-cachectl config'";
    case VYRE_REMEDY_CACHE_ADOPT:
        return "if it is a cache made by an earlier vyre, adopt it with "
               "'vyre-cachectl reindex --adopt'";
    default:
        return NULL;
    }
}

/* Messages and hints quote what the user gave and what files hold (a run's
 * text, a blob's source name): shown through the sanitiser, lines kept. */
void tool_hints(const vyre_error *err)
{
    char clean[TOOL_CLEAN_SIZE(sizeof err->hint)];
    if (err->hint[0])
        fprintf(stderr, "hint: %s\n",
                tool_clean_flags(err->hint, TOOL_CLEAN_KEEP_NEWLINE, clean, sizeof clean));
    const char *cmd = tool_remedy(err->remedy);
    if (cmd)
        fprintf(stderr, "hint: %s\n", cmd);
}

void tool_report(const vyre_error *err)
{
    char clean[TOOL_CLEAN_SIZE(sizeof err->message)];
    fprintf(stderr, "%s: error: %s\n", g_prog,
            tool_clean_flags(err->message[0] ? err->message : vyre_strerror(err->code),
                             TOOL_CLEAN_KEEP_NEWLINE, clean, sizeof clean));
    tool_hints(err);
}

int tool_usage_error(const char *sub, const char *hint, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: error: ", g_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (hint)
        fprintf(stderr, "hint: %s\n", hint);
    if (sub)
        fprintf(stderr, "try '%s %s --help'\n", g_prog, sub);
    else
        fprintf(stderr, "try '%s --help'\n", g_prog);
    return TOOL_EXIT_ERROR;
}

int tool_percent_arg(const char *sub, const char *opt, const char *s, double *ratio)
{
    vyre_error err = {0};
    if (vyre_parse_percent(s, ratio, &err))
        return tool_usage_error(sub, err.hint[0] ? err.hint : NULL, "bad value for %s: %s", opt,
                                err.message);
    return 0;
}

void *tool_need(void *p)
{
    if (!p) {
        fprintf(stderr, "%s: error: out of memory\n", tool_prog());
        abort();
    }
    return p;
}

int tool_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tool_parse_real(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo) || !(v <= hi))
        return -1;
    *out = v;
    return 0;
}

int tool_usage_interval_arg(const char *s, const char *turned_off, double *out)
{
    char hint[160];
    snprintf(hint, sizeof hint,
             "give seconds from 1 to 86400, e.g. '--cache-usage-interval 300'; "
             "--no-cache-usage turns the %s off",
             turned_off);
    if (tool_parse_real(s, 1, 86400, out))
        return tool_usage_error(NULL, hint, "invalid --cache-usage-interval '%s'", s);
    return 0;
}

int tool_bad_option(const char *sub, char *const argv[], int optind_now, int optopt_now,
                    const char *shortopts, const struct option *longopts)
{
    const char *arg = argv[optind_now - 1];
    if (strncmp(arg, "--", 2) == 0) {
        const char *name = arg + 2;
        size_t len = strcspn(name, "=");
        const char *names[64];
        size_t n = 0;
        for (const struct option *o = longopts; o && o->name; o++) {
            if (n < 64)
                names[n++] = o->name;
            if (strlen(o->name) != len || strncmp(o->name, name, len) != 0)
                continue;
            if (name[len] == '=' && o->has_arg == no_argument)
                return tool_usage_error(sub, NULL, "option '--%s' takes no value", o->name);
            return tool_usage_error(sub, NULL, "option '--%s' needs a value", o->name);
        }
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
        const char *near = tool_nearest(word, names, n);
        char hint[96];
        if (near)
            snprintf(hint, sizeof hint, "did you mean '--%s'?", near);
        return tool_usage_error(sub, near ? hint : NULL, "unknown option '--%s'", word);
    }
    const char *at = optopt_now && shortopts ? strchr(shortopts, optopt_now) : NULL;
    if (at && at[1] == ':')
        return tool_usage_error(sub, NULL, "option '-%c' needs a value", optopt_now);
    return tool_usage_error(sub, NULL, "unknown option '-%c'", optopt_now ? optopt_now : '?');
}

const tool_cmd *tool_cmd_find(const tool_cmd *cmds, const char *name)
{
    for (; cmds->name; cmds++)
        if (strcmp(cmds->name, name) == 0)
            return cmds;
    return NULL;
}

/* The distance itself lives in libcore (vyre_nearest_word), where the
 * configuration loader uses it for unknown keys in vyre.conf. */
const char *tool_nearest(const char *word, const char *const *candidates, size_t n)
{
    return vyre_nearest_word(word, candidates, n);
}

int tool_exit_code(int vyre_code)
{
    if (vyre_code == VYRE_OK)
        return TOOL_EXIT_OK;
    if (vyre_code == VYRE_ENODRIVER || vyre_code == VYRE_ENODEV)
        return TOOL_EXIT_NODRIVER;
    return TOOL_EXIT_ERROR;
}

char *tool_mark_cut(char *buf, size_t size, int n)
{
    if (n >= 0 && (size_t)n < size)
        return buf;
    if (size >= 4)
        memcpy(buf + size - 4, "...", 4);
    else if (size > 0)
        buf[0] = '\0';
    return buf;
}

void tool_error_line(char *dst, size_t size, int rc, const vyre_error *e)
{
    const char *hint = e->hint[0] ? e->hint : tool_remedy(e->remedy);
    int n = e->message[0] && hint && hint[0]
                ? snprintf(dst, size, "%s; hint: %s", e->message, hint)
                : snprintf(dst, size, "%s", e->message[0] ? e->message : vyre_strerror(rc));
    tool_mark_cut(dst, size, n);
}
