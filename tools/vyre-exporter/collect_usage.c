/*
 * collect_usage.c - the four caches' sizes and their filesystems' fill
 * (vyre/usage.h), measured by a thread of their own every
 * --cache-usage-interval seconds (tools/common/tool_usagesnap.h), never
 * inside a scrape: a walk of a Triton cache of millions of files on Lustre
 * takes seconds, and a scrape copies the last round. The thread starts with
 * the exporter, so the first round is usually done by the first scrape;
 * that scrape waits for it at most FIRST_WAIT_MS, as the NVML collector
 * waits for its first sample, and later scrapes never wait.
 */
#include "exporter_internal.h"

#include <string.h>

#define FIRST_WAIT_MS 1000u

void exp_usage_start(exporter *x)
{
    if (!(x->o.usage_every_s > 0))
        return;
    x->usage = tool_usagesnap_new(x->o.cache_dir, x->o.usage_every_s, 0, 0);
}

void exp_collect_usage(exporter *x)
{
    if (!(x->o.usage_every_s > 0))
        return;
    if (!x->usage) {
        memset(&x->usage_fig, 0, sizeof x->usage_fig); /* no thread: no round, said by scans 0 */
        return;
    }
    tool_usagesnap_get(x->usage, &x->usage_fig, x->scrapes <= 1 ? FIRST_WAIT_MS : 0);
    x->errors[EXP_C_USAGE] += x->usage_fig.errors - x->usage_errors;
    x->usage_errors = x->usage_fig.errors;
}

void exp_usage_free(exporter *x)
{
    tool_usagesnap_free(x->usage);
    x->usage = NULL;
}
