/*
 * exporter.c - see exporter.h: the exporter's life and one scrape (collect
 * everything, then render family by family).
 */
#include "exporter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int exporter_new(const exp_opts *opts, exporter **out)
{
    *out = NULL;
    exporter *x = calloc(1, sizeof *x);
    if (!x)
        return VYRE_ENOMEM;
    if (opts)
        x->o = *opts;
    if (x->o.kernels_top_n > EXP_MAX_TOP_N)
        x->o.kernels_top_n = EXP_MAX_TOP_N;
    if (!(x->o.cache_refresh_s >= 0))
        x->o.cache_refresh_s = 0;
    pthread_mutex_init(&x->mu, NULL);
    if (gethostname(x->hostname, sizeof x->hostname) != 0)
        x->hostname[0] = '\0';
    x->hostname[sizeof x->hostname - 1] = '\0';
    x->cache_state = 3;
    x->edges_n = exp_range_edges(x->edges);
    if (!(x->o.usage_every_s >= 0))
        x->o.usage_every_s = 0;
    exp_usage_start(x); /* the first round is under way before the first scrape */
    *out = x;
    return 0;
}

void exporter_free(exporter *x)
{
    if (!x)
        return;
    exp_gpu_sampler_free(x);
    exp_procs_free(x);
    exp_cache_free(x);
    exp_usage_free(x);
    exp_gpu_procs_free(x);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* The time since *t into x->took_ns[which]; *t moves on to now. */
static void took(exporter *x, int which, uint64_t *t)
{
    uint64_t now = tool_mono_ns();
    x->took_ns[which] = now - *t;
    *t = now;
}

int exporter_scrape(exporter *x, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&x->mu);
    uint64_t t0 = tool_mono_ns(), t = t0;
    x->scrapes++;
    exp_collect_gpus(x);
    took(x, EXP_T_NVML, &t);
    exp_collect_gpu_procs(x);
    took(x, EXP_T_GPU_PROCS, &t);
    exp_collect_procs(x); /* fills EXP_T_PAGES and EXP_T_KERNELS */
    t = tool_mono_ns();
    exp_collect_cache(x);
    exp_collect_usage(x); /* a copy of the last round: nothing is measured here */
    took(x, EXP_T_CACHE, &t);
    expo e;
    expo_init(&e, 0);
    exp_render_gpus(x, &e);
    exp_render_dcgm(x, &e);
    exp_render_gpu_procs(x, &e);
    exp_render_procs(x, &e);
    exp_render_cache(x, &e);
    exp_render_usage(x, &e);
    took(x, EXP_T_RENDER, &t);
    double dt = (double)(t - t0) / 1e9;
    if (e.truncated)
        x->errors[EXP_C_RENDER]++;
    exp_render_self(x, &e, dt);
    x->last_scrape_s = dt;
    pthread_mutex_unlock(&x->mu);
    if (!e.buf) {
        expo_free(&e);
        return VYRE_ENOMEM;
    }
    *out = e.buf;
    *len = e.len;
    return 0;
}
