/*
 * triton_command.c - the command that benchmarks one Triton group, as
 * `triton show` and `triton ls --json` print it (cmds.h):
 * `vyre-bench run --triton KEY`, with `--dir DIR` when the cache is not the
 * one vyre-bench finds by itself. Each word is quoted for a POSIX shell
 * where it needs to be, so the line can be pasted as printed: a key is a
 * directory name of the cache, foreign text like the directory.
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

/* Characters a POSIX shell takes as part of a plain word. */
static int plain(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./,:@%+=-", *s))
            return 0;
    return 1;
}

/* Appends " WORD", quoted ('...', a ' as '\'') when it is not plain.
 * 0, or -1 when it does not fit in buf. */
static int add_word(char *buf, size_t size, size_t *used, const char *word)
{
    int q = !plain(word);
    size_t need = 1 + (q ? 2 : 0); /* the space, the quotes */
    for (const char *s = word; *s; s++)
        need += q && *s == '\'' ? 4 : 1;
    if (need >= size - *used)
        return -1;
    char *p = buf + *used;
    *p++ = ' ';
    if (q)
        *p++ = '\'';
    for (const char *s = word; *s; s++) {
        if (q && *s == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = *s;
        }
    }
    if (q)
        *p++ = '\'';
    *p = '\0';
    *used = (size_t)(p - buf);
    return 0;
}

int cachectl_triton_command(const char *key, const char *dir, char *buf, size_t size)
{
    static const char head[] = "vyre-bench run --triton";
    if (!buf || !size)
        return -1;
    buf[0] = '\0';
    if (!key || !*key || size < sizeof head)
        return -1;
    memcpy(buf, head, sizeof head);
    size_t used = sizeof head - 1;
    int rc = add_word(buf, size, &used, key);
    if (!rc && dir)
        rc = add_word(buf, size, &used, "--dir");
    if (!rc && dir)
        rc = add_word(buf, size, &used, dir);
    if (rc)
        buf[0] = '\0';
    return rc;
}
