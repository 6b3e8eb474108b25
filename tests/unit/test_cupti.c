/*
 * test_cupti.c - the CUPTI module without a GPU
 * (libcore/src/cuda/cupti.c): loading libcupti at run time and its failure
 * modes, the record normaliser on synthetic CUPTI records, NVTX marker
 * pairing, the kind rules (MARKER only with NVTX routed to CUPTI), config
 * checks and the sink registry. Capture itself is tested on the GPU
 * machine (tests/gpu/test_gpu_cupti.c).
 *
 * The loader runs once per process; Criterion runs every test in its own
 * process, so a test sets the environment first and then calls libcore.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cupti_internal.h"
#include "testutil.h"
#include "vyre/counters.h"
#include "vyre/cupti.h"

static const char *const g_vars[] = {"VYRE_CUPTI_LIBRARY", "NVTX_INJECTION64_PATH", "CUDA_HOME",
                                     "VYRE_CUDA_LIBRARY"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
}

static void teardown(void)
{
    tu_env_restore(&g_env);
}

TestSuite(cupti_nogpu, .init = setup, .fini = teardown, .timeout = 120);

/* ---- loading ---------------------------------------------------------------- */

Test(cupti_nogpu, loads_libcupti_or_skips_with_the_reason)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cupti_load(&e);
    if (rc == VYRE_ENOCUPTI)
        cr_skip_test("no CUPTI on this machine: %s", e.message);
    cr_assert_eq(rc, 0, "%s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.loaded, 1);
    cr_assert(strstr(s.library, "libcupti"), "library '%s'", s.library);
    /* CUPTI_API_VERSION of CUDA 13.0 is 130001. */
    cr_assert_geq(s.cupti_version, 130000u, "cuptiGetVersion %u", s.cupti_version);
    cr_assert_eq(s.running, 0);
    /* Same answer the second time, without reloading. */
    cr_assert_eq(vyre_cupti_load(NULL), 0);
}

Test(cupti_nogpu, nonexistent_library_is_enocupti_with_a_hint)
{
    setenv("VYRE_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_load(&e), VYRE_ENOCUPTI);
    cr_assert_eq(e.code, VYRE_ENOCUPTI);
    cr_assert(strstr(e.message, "'/nonexistent/libcupti.so.13'"), "%s", e.message);
    cr_assert(strstr(e.message, "VYRE_CUPTI_LIBRARY"), "%s", e.message);
    cr_assert(strstr(e.hint, "CUPTI") && strstr(e.hint, "VYRE_CUPTI_LIBRARY"), "%s", e.hint);
    /* An explicit choice is never replaced by another file. */
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.loaded, 0);
    cr_assert_str_eq(s.library, "");
    /* Starting capture reports the same, and nothing runs. */
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_start(NULL, &e), VYRE_ENOCUPTI);
    cr_assert(strstr(e.message, "'/nonexistent/libcupti.so.13'"), "%s", e.message);
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.running, 0);
    cr_assert_eq(vyre_cupti_flush(1, NULL), 0, "flush with capture off is a no-op");
    cr_assert_eq(vyre_cupti_stop(NULL), 0, "stop with capture off is a no-op");
}

Test(cupti_nogpu, empty_library_variable_is_eenv)
{
    setenv("VYRE_CUPTI_LIBRARY", "", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_load(&e), VYRE_EENV);
    cr_assert(strstr(e.message, "VYRE_CUPTI_LIBRARY is set but empty"), "%s", e.message);
}

Test(cupti_nogpu, library_without_cupti_symbols_is_refused)
{
    setenv("VYRE_CUPTI_LIBRARY", "libm.so.6", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_load(&e), VYRE_ENOCUPTI);
    cr_assert(strstr(e.message, "'libm.so.6' has no symbol 'cupti"), "%s", e.message);
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.loaded, 0);
}

Test(cupti_nogpu, nvtx_injection_path_is_preferred_when_it_names_cupti)
{
    /* A CUPTI path that does not load is not fatal: the search goes on. */
    setenv("NVTX_INJECTION64_PATH", "/nonexistent/libcupti.so.13", 1);
    cr_assert_eq(vyre__cupti_nvtx_routed(), 1);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cupti_load(&e);
    if (rc == VYRE_ENOCUPTI)
        cr_skip_test("no CUPTI on this machine: %s", e.message);
    cr_assert_eq(rc, 0, "%s", e.message);
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_neq(strcmp(s.library, "/nonexistent/libcupti.so.13"), 0);
    cr_assert_eq(s.nvtx_routed, 1);
}

Test(cupti_nogpu, start_without_a_driver_is_enodriver)
{
    /* CUPTI alone says CUPTI_ERROR_UNKNOWN here; start asks the driver
     * loader first, which names the problem. */
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_cupti_load(&e) == VYRE_ENOCUPTI)
        cr_skip_test("no CUPTI on this machine: %s", e.message);
    setenv("VYRE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    vyre_cupti_config cfg = {.kinds = VYRE_CUPTI_KERNEL};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_start(&cfg, &e), VYRE_ENODRIVER, "%s", e.message);
    cr_assert(strstr(e.message, "'/nonexistent/libcuda.so.1'"), "%s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.running, 0);
    cr_assert_eq(s.kinds_enabled, 0u);
    cr_assert_eq(vyre_cupti_stop(&e), 0, "stop with capture off is a no-op");
}

Test(cupti_nogpu, bad_config_is_refused_before_loading)
{
    setenv("VYRE_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
    vyre_error e;
    vyre_error_clear(&e);
    vyre_cupti_config bad_kinds = {.kinds = 0x100};
    cr_assert_eq(vyre_cupti_start(&bad_kinds, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "0x100"), "%s", e.message);
    vyre_cupti_config tiny = {.kinds = VYRE_CUPTI_KERNEL, .buffer_bytes = 100};
    cr_assert_eq(vyre_cupti_start(&tiny, &e), VYRE_ERANGE);
    cr_assert(strstr(e.message, "100 bytes"), "%s", e.message);
    vyre_cupti_stats s;
    vyre_cupti_stats_get(&s);
    cr_assert_eq(s.loaded, 0, "a bad config must not load anything");
}

/* ---- kind rules ------------------------------------------------------------ */

Test(cupti_nogpu, marker_is_enabled_only_with_nvtx_routed_to_cupti)
{
    cr_assert_eq(vyre__cupti_effective_kinds(0, 0), VYRE_CUPTI_ALL & ~VYRE_CUPTI_MARKER);
    cr_assert_eq(vyre__cupti_effective_kinds(0, 1), VYRE_CUPTI_ALL);
    cr_assert_eq(vyre__cupti_effective_kinds(VYRE_CUPTI_KERNEL | VYRE_CUPTI_MARKER, 0),
                 VYRE_CUPTI_KERNEL);
    cr_assert_eq(vyre__cupti_effective_kinds(VYRE_CUPTI_KERNEL | VYRE_CUPTI_MARKER, 1),
                 VYRE_CUPTI_KERNEL | VYRE_CUPTI_MARKER);
    cr_assert_eq(vyre__cupti_effective_kinds(VYRE_CUPTI_MEMCPY, 1), VYRE_CUPTI_MEMCPY);
}

Test(cupti_nogpu, nvtx_routing_is_read_from_the_injection_path)
{
    cr_assert_eq(vyre__cupti_is_cupti_path(NULL), 0);
    cr_assert_eq(vyre__cupti_is_cupti_path(""), 0);
    cr_assert_eq(vyre__cupti_is_cupti_path("/usr/local/cuda/lib64/libcupti.so.13"), 1);
    cr_assert_eq(vyre__cupti_is_cupti_path("libcupti.so"), 1);
    cr_assert_eq(vyre__cupti_is_cupti_path("/opt/nsys/libToolsInjection64.so"), 0);
    cr_assert_eq(vyre__cupti_is_cupti_path("/opt/libcupti/libnvtx-tool.so"), 0);
    cr_assert_eq(vyre__cupti_nvtx_routed(), 0);
    setenv("NVTX_INJECTION64_PATH", "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13", 1);
    cr_assert_eq(vyre__cupti_nvtx_routed(), 1);
    setenv("NVTX_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so", 1);
    cr_assert_eq(vyre__cupti_nvtx_routed(), 0);
}

/* ---- normalisation ---------------------------------------------------------- */

static CUpti_ActivityKernel10 kernel_record(const char *name)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.start = 1000000;
    k.end = 1004500;
    k.gridX = 120;
    k.gridY = 2;
    k.gridZ = 1;
    k.blockX = 256;
    k.blockY = 1;
    k.blockZ = 1;
    k.staticSharedMemory = 4096;
    k.dynamicSharedMemory = 1024;
    k.registersPerThread = 32;
    k.deviceId = 3;
    k.contextId = 7;
    k.streamId = 13;
    k.correlationId = 99;
    k.graphId = 5;
    return k;
}

Test(cupti_nogpu, kernel_record_is_normalised)
{
    CUpti_ActivityKernel10 k = kernel_record("saxpy");
    vyre_activity a;
    memset(&a, 0xa5, sizeof a);
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&k, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_KERNEL);
    cr_assert_str_eq(a.name, "saxpy");
    cr_assert_str_eq(a.domain, "");
    cr_assert_eq(a.start_ns, 1000000u);
    cr_assert_eq(a.end_ns, 1004500u);
    cr_assert_eq(a.grid[0], 120u);
    cr_assert_eq(a.grid[1], 2u);
    cr_assert_eq(a.grid[2], 1u);
    cr_assert_eq(a.block[0], 256u);
    cr_assert_eq(a.block[1], 1u);
    cr_assert_eq(a.block[2], 1u);
    cr_assert_eq(a.static_shared_bytes, 4096);
    cr_assert_eq(a.dynamic_shared_bytes, 1024);
    cr_assert_eq(a.registers_per_thread, 32u);
    cr_assert_eq(a.device_id, 3u);
    cr_assert_eq(a.context_id, 7u);
    cr_assert_eq(a.stream_id, 13u);
    cr_assert_eq(a.correlation_id, 99u);
    cr_assert_eq(a.graph_id, 5u);
    cr_assert_eq(a.bytes, 0u, "fields of other kinds are zeroed");
    cr_assert_eq(a.marker_id, 0u);
    cr_assert_eq(a.has_payload, 0);
    /* The legacy serialising kernel kind reads the same layout. */
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&k, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_KERNEL);
    cr_assert_str_eq(a.name, "saxpy");
}

Test(cupti_nogpu, long_and_missing_kernel_names_are_bounded)
{
    char longname[1000];
    memset(longname, 'k', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CUpti_ActivityKernel10 k = kernel_record(longname);
    vyre_activity a;
    vyre__cupti_normalize((const CUpti_Activity *)&k, &a);
    cr_assert_eq(strlen(a.name), VYRE_ACTIVITY_NAME_MAX - 1);
    cr_assert_eq(strncmp(a.name, longname, VYRE_ACTIVITY_NAME_MAX - 1), 0);

    k = kernel_record(NULL);
    vyre__cupti_normalize((const CUpti_Activity *)&k, &a);
    cr_assert_str_eq(a.name, "");

    /* Negative dimensions (never valid) do not wrap to huge values. */
    k = kernel_record("neg");
    k.gridX = -1;
    vyre__cupti_normalize((const CUpti_Activity *)&k, &a);
    cr_assert_eq(a.grid[0], 0u);
}

Test(cupti_nogpu, memcpy_record_is_normalised)
{
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.bytes = 1u << 20;
    m.start = 50;
    m.end = 90;
    m.deviceId = 1;
    m.streamId = 14;
    m.correlationId = 3;
    vyre_activity a;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&m, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_MEMCPY);
    cr_assert_eq(a.copy_kind, VYRE_COPY_DTOH);
    cr_assert_str_eq(a.name, "memcpy_dtoh");
    cr_assert_eq(a.bytes, 1u << 20);
    cr_assert_eq(a.start_ns, 50u);
    cr_assert_eq(a.end_ns, 90u);
    cr_assert_eq(a.device_id, 1u);
    cr_assert_eq(a.stream_id, 14u);
    cr_assert_eq(a.correlation_id, 3u);

    m.copyKind = 200; /* from a future CUPTI */
    vyre__cupti_normalize((const CUpti_Activity *)&m, &a);
    cr_assert_eq(a.copy_kind, VYRE_COPY_UNKNOWN);
    cr_assert_str_eq(a.name, "memcpy_unknown");
}

Test(cupti_nogpu, memset_and_overhead_records_are_normalised)
{
    CUpti_ActivityMemset4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.bytes = 4096;
    m.start = 10;
    m.end = 12;
    m.streamId = 2;
    vyre_activity a;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&m, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_MEMSET);
    cr_assert_str_eq(a.name, "memset");
    cr_assert_eq(a.bytes, 4096u);
    cr_assert_eq(a.stream_id, 2u);

    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = 42;
    o.objectId.pt.threadId = 4242;
    o.start = 5;
    o.end = 8;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&o, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_OVERHEAD);
    cr_assert_str_eq(a.name, "cupti_buffer_flush");
    cr_assert_eq(a.overhead_kind, (uint32_t)CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
    cr_assert_eq(a.thread_id, 4242u);
    cr_assert_eq(a.end_ns - a.start_ns, 3u);
}

Test(cupti_nogpu, unknown_kinds_are_skipped)
{
    CUpti_Activity r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    vyre_activity a;
    cr_assert_eq(vyre__cupti_normalize(&r, &a), VYRE__NORM_SKIP);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_NONE);
}

/* ---- NVTX markers ------------------------------------------------------------- */

static vyre_activity marker(uint32_t flags, uint32_t id, const char *name, uint64_t ts)
{
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = (CUpti_ActivityFlag)flags;
    m.id = id;
    m.timestamp = ts;
    m.name = name;
    m.domain = name ? "vyre" : NULL; /* CUPTI names neither on an end marker */
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.threadId = 777;
    vyre_activity a;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&m, &a), VYRE__NORM_RECORD);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_MARKER);
    cr_assert_eq(a.marker_flags, flags);
    cr_assert_eq(a.marker_id, id);
    cr_assert_eq(a.start_ns, ts);
    cr_assert_eq(a.thread_id, 777u);
    return a;
}

static uint64_t marker_data(uint32_t id, uint64_t payload)
{
    CUpti_ActivityMarkerData2 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
    d.id = id;
    d.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
    d.payload.metricValueUint64 = payload;
    vyre_activity a;
    cr_assert_eq(vyre__cupti_normalize((const CUpti_Activity *)&d, &a), VYRE__NORM_MARKER_DATA);
    cr_assert_eq(a.marker_id, id);
    cr_assert_eq(a.has_payload, 1);
    return a.payload;
}

Test(cupti_nogpu, nested_ranges_pair_into_range_records)
{
    static vyre__marker_pairs p; /* large: not on the stack */
    memset(&p, 0, sizeof p);
    uint64_t unpaired = 0;

    vyre_activity outer = marker(VYRE_MARKER_START, 7, "vyre.cuda.pipeline.compile", 100);
    cr_assert_eq(vyre__marker_pair(&p, &outer, &unpaired), 0, "a start is kept, not delivered");
    cr_assert_eq(vyre__marker_payload(&p, 7, marker_data(7, 42)), 1);
    vyre_activity inner = marker(VYRE_MARKER_START, 8, "vyre.cuda.nvrtc.compile", 110);
    cr_assert_eq(vyre__marker_pair(&p, &inner, &unpaired), 0);

    vyre_activity end8 = marker(VYRE_MARKER_END, 8, NULL, 150);
    cr_assert_eq(vyre__marker_pair(&p, &end8, &unpaired), 1);
    cr_assert_eq(end8.kind, VYRE_ACTIVITY_RANGE);
    cr_assert_str_eq(end8.name, "vyre.cuda.nvrtc.compile");
    cr_assert_str_eq(end8.domain, "vyre");
    cr_assert_eq(end8.start_ns, 110u);
    cr_assert_eq(end8.end_ns, 150u);
    cr_assert_eq(end8.has_payload, 0);
    cr_assert_eq(end8.thread_id, 777u);

    vyre_activity end7 = marker(VYRE_MARKER_END, 7, NULL, 200);
    cr_assert_eq(vyre__marker_pair(&p, &end7, &unpaired), 1);
    cr_assert_eq(end7.kind, VYRE_ACTIVITY_RANGE);
    cr_assert_str_eq(end7.name, "vyre.cuda.pipeline.compile");
    cr_assert_eq(end7.start_ns, 100u);
    cr_assert_eq(end7.end_ns, 200u);
    cr_assert_eq(end7.has_payload, 1);
    cr_assert_eq(end7.payload, 42u);
    /* Nesting survives pairing. */
    cr_assert(end7.start_ns < end8.start_ns && end8.end_ns < end7.end_ns);
    cr_assert_eq(unpaired, 0u);
    cr_assert_eq(p.n, 0u, "nothing left open");
}

Test(cupti_nogpu, unmatched_and_instant_markers)
{
    static vyre__marker_pairs p;
    memset(&p, 0, sizeof p);
    uint64_t unpaired = 0;
    vyre_activity end = marker(VYRE_MARKER_END, 99, NULL, 5);
    cr_assert_eq(vyre__marker_pair(&p, &end, &unpaired), 0);
    cr_assert_eq(unpaired, 1u);
    cr_assert_eq(vyre__marker_payload(&p, 99, 1), 0, "no open range 99");

    vyre_activity mark = marker(VYRE_MARKER_INSTANT, 3, "vyre.bench.point", 9);
    cr_assert_eq(vyre__marker_pair(&p, &mark, &unpaired), 1);
    cr_assert_eq(mark.kind, VYRE_ACTIVITY_MARKER);
    cr_assert_str_eq(mark.name, "vyre.bench.point");
    cr_assert_eq(mark.start_ns, mark.end_ns);

    /* A full table drops (and counts) new starts, and keeps working. */
    for (uint32_t i = 0; i < VYRE__MARKERS_OPEN_MAX; i++) {
        vyre_activity s = marker(VYRE_MARKER_START, 1000 + i, "vyre.x", i);
        cr_assert_eq(vyre__marker_pair(&p, &s, &unpaired), 0);
    }
    cr_assert_eq(unpaired, 1u);
    vyre_activity extra = marker(VYRE_MARKER_START, 5000, "vyre.y", 1);
    cr_assert_eq(vyre__marker_pair(&p, &extra, &unpaired), 0);
    cr_assert_eq(unpaired, 2u);
    vyre_activity close = marker(VYRE_MARKER_END, 1000, NULL, 2000);
    cr_assert_eq(vyre__marker_pair(&p, &close, &unpaired), 1);
    cr_assert_str_eq(close.name, "vyre.x");
    cr_assert_eq(close.start_ns, 0u);
    cr_assert_eq(p.n, (size_t)VYRE__MARKERS_OPEN_MAX - 1);
}

/* The public parser (vyre__cupti_parser, what libvyre-inject uses) hands
 * out exactly what capture delivers: records, and ranges paired with their
 * payload; starts, payloads, unknown kinds and lone ends stay inside. */
static CUpti_ActivityMarker2 raw_marker(uint32_t flags, uint32_t id, const char *name, uint64_t ts)
{
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = (CUpti_ActivityFlag)flags;
    m.id = id;
    m.timestamp = ts;
    m.name = name;
    m.domain = name ? "vyre" : NULL;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    return m;
}

Test(cupti_nogpu, public_parser_delivers_records_and_paired_ranges)
{
    vyre__cupti_parser *p = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__cupti_parser_new(&p, &e), VYRE_OK, "%s", e.message);
    cr_assert_not_null(p);
    vyre_activity a;
    uint64_t unpaired = 0;

    CUpti_ActivityKernel10 k = kernel_record("saxpy");
    cr_assert_eq(vyre__cupti_parser_feed(p, &k, &a, &unpaired), 1);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_KERNEL);
    cr_assert_str_eq(a.name, "saxpy");

    CUpti_Activity other;
    memset(&other, 0, sizeof other);
    other.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    cr_assert_eq(vyre__cupti_parser_feed(p, &other, &a, &unpaired), 0, "unknown kinds stay inside");

    CUpti_ActivityMarker2 start = raw_marker(VYRE_MARKER_START, 7, "vyre.bench.point", 100);
    cr_assert_eq(vyre__cupti_parser_feed(p, &start, &a, &unpaired), 0, "a start is kept open");
    CUpti_ActivityMarkerData2 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
    d.id = 7;
    d.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
    d.payload.metricValueUint64 = 42;
    cr_assert_eq(vyre__cupti_parser_feed(p, &d, &a, &unpaired), 0, "the payload waits for the end");
    CUpti_ActivityMarker2 end = raw_marker(VYRE_MARKER_END, 7, NULL, 250);
    cr_assert_eq(vyre__cupti_parser_feed(p, &end, &a, &unpaired), 1);
    cr_assert_eq(a.kind, VYRE_ACTIVITY_RANGE);
    cr_assert_str_eq(a.name, "vyre.bench.point");
    cr_assert_eq(a.start_ns, 100u);
    cr_assert_eq(a.end_ns, 250u);
    cr_assert_eq(a.has_payload, 1);
    cr_assert_eq(a.payload, 42u);
    cr_assert_eq(unpaired, 0u);

    CUpti_ActivityMarker2 lone = raw_marker(VYRE_MARKER_END, 8, NULL, 300);
    cr_assert_eq(vyre__cupti_parser_feed(p, &lone, &a, &unpaired), 0);
    cr_assert_eq(unpaired, 1u);
    cr_assert_eq(vyre__cupti_parser_feed(p, &lone, &a, NULL), 0, "unpaired may be NULL");
    cr_assert_eq(vyre__cupti_parser_feed(NULL, &k, &a, NULL), 0);
    vyre__cupti_parser_free(p);
    vyre__cupti_parser_free(NULL);
}

/* ---- names and sinks ---------------------------------------------------------- */

Test(cupti_nogpu, kind_names)
{
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_KERNEL), "kernel");
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_MEMCPY), "memcpy");
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_MEMSET), "memset");
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_OVERHEAD), "overhead");
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_MARKER), "marker");
    cr_assert_str_eq(vyre_activity_kind_name(VYRE_ACTIVITY_RANGE), "range");
    cr_assert_str_eq(vyre_activity_kind_name((vyre_activity_kind)77), "none");
    cr_assert_str_eq(vyre_copy_kind_name(VYRE_COPY_HTOD), "htod");
    cr_assert_str_eq(vyre_copy_kind_name(VYRE_COPY_PTOP), "ptop");
    cr_assert_str_eq(vyre_copy_kind_name((vyre_copy_kind)-3), "unknown");
    cr_assert_str_eq(vyre_copy_kind_name((vyre_copy_kind)11), "unknown");
}

static void sink_a(const vyre_activity *recs, size_t n, void *ctx)
{
    (void)recs;
    (void)n;
    (void)ctx;
}

Test(cupti_nogpu, sink_registry)
{
    int ctx[VYRE_CUPTI_SINKS_MAX + 1];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cupti_add_sink(NULL, NULL, &e), VYRE_EINVAL);
    for (int i = 0; i < VYRE_CUPTI_SINKS_MAX; i++)
        cr_assert_eq(vyre_cupti_add_sink(sink_a, &ctx[i], &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cupti_add_sink(sink_a, &ctx[0], &e), VYRE_EEXIST);
    cr_assert_eq(vyre_cupti_add_sink(sink_a, &ctx[VYRE_CUPTI_SINKS_MAX], &e), VYRE_ERANGE);
    cr_assert(strstr(e.message, "too many"), "%s", e.message);
    cr_assert_eq(vyre_cupti_remove_sink(sink_a, &ctx[VYRE_CUPTI_SINKS_MAX]), VYRE_ENOENT);
    cr_assert_eq(vyre_cupti_remove_sink(sink_a, &ctx[3]), 0);
    cr_assert_eq(vyre_cupti_remove_sink(sink_a, &ctx[3]), VYRE_ENOENT);
    cr_assert_eq(vyre_cupti_add_sink(sink_a, &ctx[VYRE_CUPTI_SINKS_MAX], &e), 0);
    for (int i = 0; i <= VYRE_CUPTI_SINKS_MAX; i++)
        if (i != 3)
            cr_assert_eq(vyre_cupti_remove_sink(sink_a, &ctx[i]), 0, "sink %d", i);
}
