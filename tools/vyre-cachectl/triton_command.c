/*
 * triton_command.c - the vyre-bench command line that benchmarks one Triton
 * group (cmds.h): what `triton ls --json` gives each kernel group, and
 * what `triton show` prints.
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

/* 1 when s can stand in a shell command unquoted. */
static int shell_safe(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@%+=:,./-_", *s))
            return 0;
    return 1;
}

/* " s" (single-quoted for a POSIX shell when it must be) at buf + *len;
 * -1 when it does not fit in size with its NUL. */
static int add_word(char *buf, size_t size, size_t *len, const char *s)
{
    int quote = !shell_safe(s);
    size_t need = 1 + (quote ? 2 : 0);
    for (const char *p = s; *p; p++)
        need += *p == '\'' ? 4 : 1;
    if (*len + need + 1 > size)
        return -1;
    char *o = buf + *len;
    *o++ = ' ';
    if (quote)
        *o++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *s;
        }
    }
    if (quote)
        *o++ = '\'';
    *o = '\0';
    *len += need;
    return 0;
}

int cachectl_triton_command(const char *key, const char *dir, char *buf, size_t size)
{
    static const char head[] = "vyre-bench run --triton";
    if (!size)
        return -1;
    buf[0] = '\0';
    if (!key || !*key || size < sizeof head)
        return -1;
    memcpy(buf, head, sizeof head);
    size_t len = sizeof head - 1;
    if (add_word(buf, size, &len, key) ||
        (dir && (add_word(buf, size, &len, "--dir") || add_word(buf, size, &len, dir)))) {
        buf[0] = '\0';
        return -1;
    }
    return 0;
}
