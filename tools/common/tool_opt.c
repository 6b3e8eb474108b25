/*
 * tool_opt.c - getopt arrays, --help's OPTIONS block and the completion
 * helper's answer, all from one option table (tool_opt.h).
 */
#include "tool_opt.h"

#include <string.h>

/* Where the help text starts (column 25), and the widest left side that
 * still fits before it with two spaces. */
#define HELP_COLUMN 24
#define LEFT_MAX    (HELP_COLUMN - 2)

static int short_of(const tool_opt *o)
{
    return (unsigned char)o->short_name;
}

int tool_opt_getopt(const tool_opt *opts, tool_opt_arrays *g)
{
    memset(g, 0, sizeof *g);
    size_t n = 0, s = 0;
    for (const tool_opt *o = opts; o->name; o++, n++) {
        if (n == TOOL_OPT_MAX || (o->short_name && o->short_name != o->key))
            return -1;
        g->longs[n].name = o->name;
        g->longs[n].has_arg = o->arg ? required_argument : no_argument;
        g->longs[n].val = o->key;
        int c = short_of(o);
        if (c) {
            g->shorts[s++] = (char)c;
            if (o->arg)
                g->shorts[s++] = ':';
        }
    }
    g->shorts[s] = '\0';
    return 0;
}

void tool_opt_help(FILE *out, const tool_opt *opts)
{
    for (const tool_opt *o = opts; o->name; o++) {
        if (!o->help)
            continue;
        char left[128];
        int c = short_of(o);
        int n = c ? snprintf(left, sizeof left, "  -%c, --%s%s%s", c, o->name, o->arg ? " " : "",
                             o->arg ? o->arg : "")
                  : snprintf(left, sizeof left, "      --%s%s%s", o->name, o->arg ? " " : "",
                             o->arg ? o->arg : "");
        if (n < 0)
            continue;
        fputs(left, out);
        const char *h = o->help;
        if ((size_t)n > LEFT_MAX)
            fprintf(out, "\n%*s", HELP_COLUMN, "");
        else
            fprintf(out, "%*s", HELP_COLUMN - n, "");
        for (;;) {
            const char *nl = strchr(h, '\n');
            if (!nl) {
                fprintf(out, "%s\n", h);
                break;
            }
            fprintf(out, "%.*s\n%*s", (int)(nl - h), h, HELP_COLUMN,
                    ""); /* bounded: a line of ours */
            h = nl + 1;
        }
    }
}

void tool_opt_complete(FILE *out, const tool_opt *opts)
{
    for (const tool_opt *o = opts; o->name; o++) {
        if (!o->help)
            continue;
        const char *values = o->values ? o->values : "";
        int c = short_of(o);
        if (c)
            fprintf(out, "-%c\t%d\t%s\n", c, o->arg ? 1 : 0, values);
        fprintf(out, "--%s\t%d\t%s\n", o->name, o->arg ? 1 : 0, values);
    }
}

int tool_opt_wants_completion(int argc, char *const argv[])
{
    return argc >= 2 && strcmp(argv[1], TOOL_OPT_COMPLETION_HELPER) == 0;
}
