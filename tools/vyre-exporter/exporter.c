/*
 * exporter.c - see exporter.h: the exporter's life and one scrape (collect
 * everything, then render family by family).
 */
#include "exporter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t exp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void exp_copy_str(char *dst, size_t size, const char *src)
{
    if (size == 0)
        return;
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

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

int exporter_new(const exp_opts *opts, exporter **out)
{
    *out = NULL;
    exporter *x = calloc(1, sizeof *x);
    if (!x)
        return VYRE_ENOMEM;
    x->page = malloc(sizeof *x->page);
    if (!x->page) {
        free(x);
        return VYRE_ENOMEM;
    }
    if (opts)
        x->o = *opts;
    if (x->o.kernels_top_n > EXP_MAX_TOP_N)
        x->o.kernels_top_n = EXP_MAX_TOP_N;
    if (!(x->o.cache_refresh_s >= 0))
        x->o.cache_refresh_s = 0;
    pthread_mutex_init(&x->mu, NULL);
    x->cache_state = 3;
    x->edges_n = exp_range_edges(x->edges);
    *out = x;
    return 0;
}

void exporter_free(exporter *x)
{
    if (!x)
        return;
    vyre_gpu_monitor_close(x->gpu);
    exp_procs_free(x);
    free(x->page);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

int exporter_scrape(exporter *x, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&x->mu);
    uint64_t t0 = exp_mono_ns();
    x->scrapes++;
    exp_collect_gpus(x);
    exp_collect_procs(x);
    exp_collect_cache(x);
    expo e;
    expo_init(&e, 0);
    exp_render_gpus(x, &e);
    exp_render_procs(x, &e);
    exp_render_cache(x, &e);
    double dt = (double)(exp_mono_ns() - t0) / 1e9;
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
