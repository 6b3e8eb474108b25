/*
 * toolkit.c - what the CUDA toolkit libraries' modules share beyond
 * loading (which is base/loader.c's): architecture numbers, the options
 * and arguments of a compile or link, and the line of a compiler log worth
 * quoting.
 */
#include "cuda/toolkit_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

int vyre__toolkit_arch_number_valid(const char *s)
{
    size_t nd = 0;
    while (s[nd] >= '0' && s[nd] <= '9')
        nd++;
    if (nd < 2 || nd > 3 || s[0] == '0')
        return 0;
    return !s[nd] || ((s[nd] == 'a' || s[nd] == 'f') && !s[nd + 1]);
}

/* Case-insensitive search for word in p[0..n). */
static int line_has(const char *p, size_t n, const char *word)
{
    const size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++) {
        size_t k = 0;
        while (k < w && tolower((unsigned char)p[i + k]) == word[k])
            k++;
        if (k == w)
            return 1;
    }
    return 0;
}

/* NVRTC writes "kernel.cu(3): error: ..."; ptxas inside nvJitLink writes
 * "ptxas application ptx input, line 50; error   : ..." or, for a target
 * it cannot build, only "ptxas fatal   : ...". */
static int line_has_error(const char *p, size_t n)
{
    return line_has(p, n, "error") || line_has(p, n, "fatal");
}

static int line_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)p[i]))
            return 0;
    return 1;
}

const char *vyre__toolkit_first_error(const char *log, char *buf, size_t size)
{
    if (!log || !size)
        return NULL;
    const char *first_err = NULL, *first_any = NULL;
    size_t first_err_len = 0, first_any_len = 0;
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && p[n - 1] == '\r')
            n--;
        if (line_has_error(p, n)) {
            first_err = p;
            first_err_len = n;
            break;
        } else if (!first_any && !line_blank(p, n)) {
            first_any = p;
            first_any_len = n;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    const char *line = first_err ? first_err : first_any;
    size_t len = first_err ? first_err_len : first_any_len;
    if (!line)
        return NULL;
    if (len > size - 1)
        len = size - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return buf;
}

static int names_arch(const char *opt)
{
    return strncmp(opt, "-arch", 5) == 0 || strncmp(opt, "--gpu-architecture", 18) == 0;
}

int vyre__toolkit_check_opts(const char *fn, const char *step, const char *name,
                             const char *const *opts, size_t nopts, vyre_error *err)
{
    if (nopts > VYRE__TOOLKIT_MAX_OPTS)
        return vyre__fail(
            err, VYRE_EINVAL,
            strcmp(step, "link") ? "pass fewer compile options" : "pass fewer link options",
            "%zu %s options for '%s' (at most %d)", nopts, step, name, VYRE__TOOLKIT_MAX_OPTS);
    for (size_t i = 0; i < nopts; i++) {
        if (!opts[i])
            return vyre__fail(err, VYRE_EINVAL, NULL, "%s: option %zu is NULL", fn, i);
        if (names_arch(opts[i]))
            return vyre__fail(err, VYRE_EINVAL,
                              "pass the architecture as the arch argument, not as an option",
                              "%s option '%s' for '%s' names an architecture", step, opts[i], name);
    }
    return VYRE_OK;
}

int vyre__toolkit_args(const char *src, size_t n, const char *arch_opt, const char *const *opts,
                       size_t nopts, const char *step, const char *name, char **text,
                       const char ***argv, vyre_error *err)
{
    *text = malloc(n + 1);
    *argv = malloc((nopts + 1) * sizeof **argv);
    if (!*text || !*argv) {
        free(*text);
        free((void *)*argv);
        *text = NULL;
        *argv = NULL;
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes to %s '%s'", n + 1,
                          step, name);
    }
    if (n)
        memcpy(*text, src, n);
    (*text)[n] = '\0';
    (*argv)[0] = arch_opt;
    for (size_t i = 0; i < nopts; i++)
        (*argv)[i + 1] = opts[i];
    return VYRE_OK;
}
