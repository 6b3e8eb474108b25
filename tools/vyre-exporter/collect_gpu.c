/*
 * collect_gpu.c - the NVML collector: libcore's GPU monitor (NVML loaded
 * with dlopen, vyre/gpu.h), sampled once per scrape. When NVML cannot be
 * opened the exporter keeps serving the other families and retries the
 * open at most once a minute (a driver installed later is picked up).
 */
#include "exporter_internal.h"

#include <string.h>

#define GPU_RETRY_NS (60ull * 1000000000ull)

void exp_collect_gpus(exporter *x)
{
    x->gpu_ok = 0;
    if (x->o.no_gpu) {
        tool_strlcpy(x->gpu_msg, "GPU monitoring turned off (--no-gpu)", sizeof x->gpu_msg);
        return;
    }
    uint64_t now = tool_mono_ns();
    vyre_error e;
    vyre_error_clear(&e);
    if (!x->gpu) {
        if (x->gpu_retry_ns && now < x->gpu_retry_ns)
            return; /* gpu_msg still says why */
        x->gpu_retry_ns = now + GPU_RETRY_NS;
        int rc = vyre_gpu_monitor_open(&x->gpu, &e);
        if (rc) {
            tool_strlcpy(x->gpu_msg, e.message[0] ? e.message : vyre_strerror(rc),
                         sizeof x->gpu_msg);
            return; /* not a scrape error: vyre_gpu_monitor_up says it */
        }
    }
    int rc = vyre_gpu_monitor_sample(x->gpu, &x->gsnap, &e);
    if (rc) {
        tool_strlcpy(x->gpu_msg, e.message[0] ? e.message : vyre_strerror(rc), sizeof x->gpu_msg);
        x->errors[EXP_C_NVML]++;
        return;
    }
    x->gpu_msg[0] = '\0';
    x->gpu_ok = 1;
}
