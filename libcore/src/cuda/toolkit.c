/*
 * toolkit.c - what the CUDA toolkit libraries' modules share beyond
 * loading (which is base/loader.c's): architecture numbers and the line of
 * a compiler log worth quoting.
 */
#include "cuda/toolkit_internal.h"

#include <ctype.h>
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
