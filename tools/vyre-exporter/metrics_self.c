/*
 * metrics_self.c - the exporter's own families: how long this scrape took
 * to collect and render, errors by collector, telemetry pages by state.
 */
#include "exporter_internal.h"

void exp_render_self(exporter *x, expo *e, double scrape_s)
{
    expo_family(e, "vyre_exporter_scrape_duration_seconds", "gauge",
                "Time this scrape took to collect and render (before this family), seconds.");
    expo_sample(e, "vyre_exporter_scrape_duration_seconds", NULL, 0, NULL, scrape_s);
    expo_family(e, "vyre_exporter_collector_duration_seconds", "gauge",
                "Time each step of this scrape took, seconds: nvml (taking the newest NVML "
                "sample of every GPU, processes included, which a thread of its own takes "
                "every second), gpu_processes (their names from /proc), "
                "telemetry_pages (listing and reading the pages), kernel_rings (summing their "
                "kernel records), cache (the cache figures and the caches' sizes; both read in "
                "threads of their own), "
                "render (the text of every family before the exporter's own).");
    static const char *const steps[EXP_T_COUNT] = {
        "nvml", "gpu_processes", "telemetry_pages", "kernel_rings", "cache", "render"};
    for (int c = 0; c < EXP_T_COUNT; c++) {
        expo_label l = {"collector", steps[c]};
        expo_sample(e, "vyre_exporter_collector_duration_seconds", &l, 1, NULL,
                    (double)x->took_ns[c] / 1e9);
    }
    expo_family(e, "vyre_exporter_scrape_errors_total", "counter",
                "Collection problems since the exporter started, by collector: NVML samples "
                "that failed, telemetry pages that failed validation or were stale, cache "
                "reads that failed, output cut at its size limit, caches whose size could not be "
                "measured (cache_usage: not located or not readable, once a round).");
    static const char *const names[EXP_C_COUNT] = {"nvml", "telemetry", "cache", "render",
                                                   "cache_usage"};
    for (int c = 0; c < EXP_C_COUNT; c++) {
        expo_label l = {"collector", names[c]};
        expo_sample_u64(e, "vyre_exporter_scrape_errors_total", &l, 1, NULL, x->errors[c]);
    }
    expo_family(e, "vyre_exporter_telemetry_pages", "gauge",
                "Telemetry pages this scrape: ok (exported), invalid (failed validation), "
                "stale (process gone or pid reused), foreign (written in another PID "
                "namespace, such as a container sharing /dev/shm: not exported).");
    const char *st[4] = {"ok", "invalid", "stale", "foreign"};
    size_t v[4] = {x->pages_ok, x->pages_bad, x->pages_stale, x->pages_foreign};
    for (int i = 0; i < 4; i++) {
        expo_label l = {"state", st[i]};
        expo_sample_u64(e, "vyre_exporter_telemetry_pages", &l, 1, NULL, v[i]);
    }
    expo_family(e, "vyre_exporter_scrapes_total", "counter", "Scrapes served.");
    expo_sample_u64(e, "vyre_exporter_scrapes_total", NULL, 0, NULL, x->scrapes);
    expo_family(e, "vyre_exporter_build_info", "gauge", "Always 1: the exporter's version.");
    expo_label l = {"version", vyre_version()};
    expo_sample(e, "vyre_exporter_build_info", &l, 1, NULL, 1);
}
