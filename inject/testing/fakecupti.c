/*
 * fakecupti.c - a stand-in libcupti for testing libvyre-inject.so where
 * there is no GPU. It implements the CUPTI calls the injection and
 * libcore's loader resolve, remembers the API callback and the activity
 * buffer callbacks, and lets the test host play the driver:
 * fakecupti_fire() calls the API callback as CUPTI would around a CUDA call
 * (only for enabled ids), fakecupti_fire_nested() a runtime call inside
 * which the runtime makes its driver call, fakecupti_kernel() completes an activity buffer
 * holding one kernel record. $FAKECUPTI_BUSY=1 makes cuptiSubscribe answer
 * as when another profiler holds CUPTI; $FAKECUPTI_NO_DRIVER=1 makes it
 * answer CUPTI_ERROR_UNKNOWN, as the real one does without a driver.
 */
#include <cupti.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define MAX_CBID    2048

FAKE_EXPORT void fakecupti_fire(int domain, unsigned cbid, const void *params, int result);
FAKE_EXPORT void fakecupti_fire_nested(unsigned rt_cbid, unsigned drv_cbid);
FAKE_EXPORT int fakecupti_kernel(const char *name, uint64_t start_ns, uint64_t end_ns);

static CUpti_CallbackFunc g_cb;
static void *g_userdata;
static int g_subscribed;
static unsigned char g_enabled[2][MAX_CBID]; /* [0] runtime, [1] driver */
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static int g_kernels_on;

static int domain_index(CUpti_CallbackDomain d)
{
    return d == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : d == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : -1;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
           : result == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN"
                                           : "CUPTI_FAKE_ERROR";
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                    void *userdata)
{
    const char *busy = getenv("FAKECUPTI_BUSY");
    if (g_subscribed || (busy && strcmp(busy, "1") == 0))
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    const char *no_driver = getenv("FAKECUPTI_NO_DRIVER");
    if (no_driver && strcmp(no_driver, "1") == 0)
        return CUPTI_ERROR_UNKNOWN;
    g_cb = callback;
    g_userdata = userdata;
    g_subscribed = 1;
    *subscriber = (CUpti_SubscriberHandle)&g_cb;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    g_subscribed = 0;
    g_cb = NULL;
    memset(g_enabled, 0, sizeof g_enabled);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)subscriber;
    int d = domain_index(domain);
    if (d < 0 || cbid >= MAX_CBID)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_enabled[d][cbid] = enable ? 1 : 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        g_kernels_on = 1;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        g_kernels_on = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done)
{
    g_req = req;
    g_done = done;
    return CUPTI_SUCCESS;
}

/* Buffers hold whole CUpti_ActivityKernel10 records back to back. */
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record)
{
    uint8_t *next = *record ? (uint8_t *)*record + sizeof(CUpti_ActivityKernel10) : buffer;
    if ((size_t)(next - buffer) + sizeof(CUpti_ActivityKernel10) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                       size_t *dropped)
{
    (void)context;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    return CUPTI_SUCCESS;
}

void fakecupti_fire(int domain, unsigned cbid, const void *params, int result)
{
    int d = domain_index((CUpti_CallbackDomain)domain);
    if (!g_cb || d < 0 || cbid >= MAX_CBID || !g_enabled[d][cbid])
        return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.functionParams = params;
    data.callbackSite = CUPTI_API_ENTER;
    g_cb(g_userdata, (CUpti_CallbackDomain)domain, cbid, &data);
    data.callbackSite = CUPTI_API_EXIT;
    data.functionReturnValue = &result; /* cudaError_t and CUresult are int-sized */
    g_cb(g_userdata, (CUpti_CallbackDomain)domain, cbid, &data);
}

static void site(CUpti_CallbackDomain domain, unsigned cbid, CUpti_ApiCallbackSite where)
{
    int d = domain_index(domain);
    if (!g_cb || d < 0 || cbid >= MAX_CBID || !g_enabled[d][cbid])
        return;
    int ok = 0;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.functionParams = "";
    data.callbackSite = where;
    if (where == CUPTI_API_EXIT)
        data.functionReturnValue = &ok;
    g_cb(g_userdata, domain, cbid, &data);
}

void fakecupti_fire_nested(unsigned rt_cbid, unsigned drv_cbid)
{
    site(CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, CUPTI_API_ENTER);
    site(CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, CUPTI_API_ENTER);
    site(CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, CUPTI_API_EXIT);
    site(CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, CUPTI_API_EXIT);
}

int fakecupti_kernel(const char *name, uint64_t start_ns, uint64_t end_ns)
{
    if (!g_kernels_on || !g_req || !g_done)
        return 0;
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    g_req(&buf, &size, &max);
    if (!buf || size < sizeof(CUpti_ActivityKernel10))
        return 0;
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)buf;
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = name;
    k->start = start_ns;
    k->end = end_ns;
    k->gridX = k->gridY = k->gridZ = 1;
    k->blockX = 128;
    k->blockY = k->blockZ = 1;
    g_done(NULL, 0, buf, size, sizeof *k);
    return 1;
}
