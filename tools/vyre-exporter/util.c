/*
 * util.c - see util.h: the small helpers the exporter's collectors and
 * renderers share (the `le` bounds and their text). It calls nothing else
 * of the exporter; the clock and string copy are tools/common's (tool_util.h).
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#include "vyre/vyre.h"

const char *exp_format_ns_as_seconds(char *out, size_t size, uint64_t ns)
{
    int n = snprintf(out, size, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
                     (unsigned long long)(ns % 1000000000u));
    if (n <= 0 || (size_t)n >= size)
        return out;
    while (n > 0 && out[n - 1] == '0')
        out[--n] = '\0';
    if (n > 0 && out[n - 1] == '.')
        out[--n] = '\0';
    return out;
}

size_t exp_range_edges(uint64_t *out)
{
    size_t n = 0;
    for (uint64_t p = 1000; p <= UINT64_C(1000000000); p *= 10) {
        const uint64_t nominal[3] = {p, p * 5 / 2, p * 5};
        for (int k = 0; k < 3; k++)
            out[n++] = vyre_hist_edge_nearest(nominal[k]);
    }
    out[n++] = vyre_hist_edge_nearest(UINT64_C(10000000000));
    return n;
}
