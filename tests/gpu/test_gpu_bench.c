/*
 * test_gpu_bench.c - the built-in GPU benchmark suites and a user sweep
 * (libcore/src/bench/suite_*.c, sweep_run.c) through the library's
 * internal suite API, on the real driver (GPU machine).
 *
 * Each suite (launch, memcpy, bandwidth, compile) runs in quick mode into a
 * results database in a fresh temp directory, and a two-point sweep of a
 * small CUDA C kernel runs the same way. What is asserted is structure,
 * never speed: every point the suite announced is stored, in order, with
 * finite positive statistics and as many stored samples as its statistics
 * count; kernel records are stored for the suites that launch kernels
 * whenever CUPTI could capture (a point says in its note when it could
 * not). Timings are only logged.
 *
 * Skips, with the reason, when there is no driver or no device. The
 * compile suite's cold-JIT child is vyre-bench itself
 * (its main() calls vyre_bench_host_start), as in `vyre-bench run`.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "testutil.h"
#include "vyre/axes.h"
#include "vyre/bench.h"
#include "vyre/cuda.h"
#include "vyre/cupti.h"
#include "vyre/gpu.h"
#include "vyre/results.h"

#ifndef VYRE_BENCH_BIN
#error "tests/CMakeLists.txt must define VYRE_BENCH_BIN"
#endif

static const char *const g_vars[] = {
    "HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "VYRE_PTX_CACHE_DIR",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "VYRE_TELEMETRY_DIR",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    char path[700];
    setenv("HOME", g_tmp, 1);
    snprintf(path, sizeof path, "%s/xdg-cache", g_tmp);
    setenv("XDG_CACHE_HOME", path, 1);
    snprintf(path, sizeof path, "%s/xdg-data", g_tmp);
    setenv("XDG_DATA_HOME", path, 1);
    snprintf(path, sizeof path, "%s/tel", g_tmp);
    setenv("VYRE_TELEMETRY_DIR", path, 1);
}

static void teardown(void)
{
    tu_env_restore(&g_env);
    tu_rm_rf(g_tmp);
}

TestSuite(gpu_bench, .init = setup, .fini = teardown, .timeout = 600);

/* Skips unless the driver sees a device. */
static void need_gpu(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cuda_init(&e);
    if (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV)
        cr_skip_test("no GPU here (%s): %s", vyre_err_name(rc), e.message);
    cr_assert_eq(rc, 0, "vyre_cuda_init: %s (%s)", e.message, e.hint);
    int count = 0;
    cr_assert_eq(vyre_cuda_device_count(&count, &e), 0, "%s", e.message);
    if (count == 0)
        cr_skip_test("the driver sees no GPU");
}

/* One run in a results database of its own. */
struct run {
    vyre_results *db;
    vyre_bench_run row;
    vyre_bench_env env;
    vyre_gpu_monitor *mon;
    int device;
    size_t callbacks; /* on_point calls */
};

static volatile sig_atomic_t g_stop;

static void on_point(const vyre_bench_point *p, const vyre_bench_sample *s, size_t n, void *ctx)
{
    struct run *r = ctx;
    r->callbacks++;
    cr_log_info("%-28s %-22s n=%-4zu median %12.1f ns  batch %12.1f ns  %s %.3g  throttled %zu  %s",
                p->benchmark, p->axes, n, p->stats.median, p->batch_ns,
                p->metric_name[0] ? p->metric_name : "-", p->metric, p->n_throttled, p->note);
    (void)s;
}

static void run_begin(struct run *r, const char *suites)
{
    memset(r, 0, sizeof *r);
    char path[700];
    snprintf(path, sizeof path, "%s/results.sqlite3", g_tmp);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_results_open(path, &r->db, &e);
    cr_assert_eq(rc, 0, "vyre_results_open: %s (%s)", e.message, e.hint);
    snprintf(r->row.suites, sizeof r->row.suites, "%s", suites);
    snprintf(r->row.command_line, sizeof r->row.command_line, "test_gpu_bench");
    cr_assert_eq(vyre__bench_run_begin(r->db, &r->row, &e), 0, "%s", e.message);
    if (vyre_gpu_monitor_open(&r->mon, NULL) != 0)
        r->mon = NULL;
    cr_assert_eq(vyre__bench_run_describe(&r->row, &r->device, 1, r->mon, &e), 0, "%s (%s)",
                 e.message, e.hint);
    cr_assert_eq(vyre__bench_run_update(r->db, &r->row, &e), 0, "%s", e.message);

    /* `vyre-bench run --quick`'s rule. */
    vyre_stats_stop_rule rule = VYRE_STOP_RULE_DEFAULT;
    rule.min_samples = 5;
    rule.min_time_s = 0.05;
    rule.max_noise = 0.02;
    rule.timeout_s = 3.0;
    vyre_bench_env *env = &r->env;
    env->db = r->db;
    env->run_id = r->row.id;
    env->rule = rule;
    env->quick = 1;
    env->cold = 0;
    env->kernels = 1;
    env->devices = &r->device;
    env->ndevices = 1;
    env->mon = r->mon;
    g_stop = 0;
    env->stop = &g_stop;
    /* VYRE_TEST_BENCH_BIN: where vyre-bench is when the test binary
     * travelled without its build tree (the GPU machine's bundle). */
    const char *bin = getenv("VYRE_TEST_BENCH_BIN");
    env->child_exe = bin && *bin ? bin : VYRE_BENCH_BIN;
    env->tmp_dir = g_tmp;
    env->on_point = on_point;
    env->cb_ctx = r;
}

static int has_kernel_work(const char *suite)
{
    return strcmp(suite, "launch") == 0 || strcmp(suite, "bandwidth") == 0 ||
           strcmp(suite, "sweep") == 0;
}

/*
 * Finishes the run and checks what the database holds: `expected` points
 * of `suite` (the count announced before the run), each with finite
 * positive figures and its samples; kernel records where kernels ran and
 * CUPTI captured. Returns the points (the caller frees them).
 */
static vyre_bench_point *run_check(struct run *r, const char *suite, size_t expected, size_t *np)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(r->env.interrupted, 0);
    cr_assert_eq(vyre__bench_run_finish(r->db, r->row.id, VYRE_RUN_DONE, NULL, &e), 0, "%s",
                 e.message);
    vyre_bench_run got;
    cr_assert_eq(vyre_bench_run_get(r->db, r->row.id, &got, &e), 0, "%s", e.message);
    cr_assert_eq(got.status, VYRE_RUN_DONE);
    cr_assert_neq(got.gpu_name[0], '\0', "the run names its GPU");

    vyre_bench_point *pts = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_bench_points_get(r->db, r->row.id, &pts, &n, &e), 0, "%s", e.message);
    cr_assert_gt(expected, 0, "suite %s announces no points", suite);
    cr_assert_eq(n, expected, "%zu points stored, %zu announced", n, expected);
    cr_assert_eq(r->callbacks, n);
    cr_assert_eq(r->env.done, n);
    cr_assert_eq(got.npoints, n);

    int cupti_note = 0;
    size_t with_kernels = 0;
    for (size_t i = 0; i < n; i++) {
        const vyre_bench_point *p = &pts[i];
        cr_assert_str_eq(p->suite, suite, "point %zu", i);
        cr_assert_eq(p->run_id, r->row.id);
        cr_assert_neq(p->benchmark[0], '\0');
        if (i > 0)
            cr_assert_gt(p->seq, pts[i - 1].seq, "points out of order");
        const vyre_stats *st = &p->stats;
        cr_assert_geq(st->n, 1, "%s: no samples", p->benchmark);
        cr_assert(isfinite(st->median) && st->median > 0, "%s: median %g", p->benchmark,
                  st->median);
        cr_assert(isfinite(st->min) && st->min > 0 && st->min <= st->median &&
                      st->median <= st->max,
                  "%s: min %g median %g max %g", p->benchmark, st->min, st->median, st->max);
        cr_assert(isfinite(p->wall_median) && p->wall_median > 0, "%s: wall %g", p->benchmark,
                  p->wall_median);
        cr_assert_geq(p->items, 1);
        cr_assert(p->bytes >= 0 && isfinite(p->bytes));
        if (p->metric_name[0])
            cr_assert(isfinite(p->metric) && p->metric > 0, "%s: %s = %g", p->benchmark,
                      p->metric_name, p->metric);
        cr_assert_leq(p->n_throttled, st->n);

        vyre_bench_sample *s = NULL;
        size_t ns = 0;
        cr_assert_eq(vyre_bench_samples_get(r->db, p->id, &s, &ns, &e), 0, "%s", e.message);
        cr_assert_eq(ns, st->n, "%s: %zu samples stored, stats of %zu", p->benchmark, ns, st->n);
        for (size_t k = 0; k < ns; k++)
            cr_assert(isfinite(s[k].value) && s[k].value > 0 && isfinite(s[k].wall) &&
                          s[k].wall > 0,
                      "%s sample %zu: %g / %g", p->benchmark, k, s[k].value, s[k].wall);
        free(s);

        if (strstr(p->note, "no kernel records"))
            cupti_note = 1;
        vyre_bench_kernel_row *rows = NULL;
        size_t nk = 0;
        cr_assert_eq(vyre_bench_kernels_get(r->db, p->id, &rows, &nk, &e), 0, "%s", e.message);
        for (size_t k = 0; k < nk; k++) {
            cr_assert_neq(rows[k].name[0], '\0');
            cr_assert_gt(rows[k].count, 0);
            cr_assert(isfinite(rows[k].median_ns) && rows[k].median_ns > 0, "%s: %s %g ns",
                      p->benchmark, rows[k].name, rows[k].median_ns);
        }
        with_kernels += nk > 0;
        free(rows);

        /* The blocking kernel on a real GPU (issue 23): it loads, and the
         * host's release reaches it every time; hot GPU points get the
         * batch view, and points with kernel records the kernel view. */
        cr_assert_eq(p->n_block_timeouts, 0, "%s: %s", p->benchmark, p->note);
        cr_assert(!strstr(p->note, "blocking kernel off"), "%s: %s", p->benchmark, p->note);
        if (p->gpu_timer && p->mode == VYRE_BENCH_HOT)
            cr_assert(isfinite(p->batch_ns) && p->batch_ns > 0, "%s %s: no batch view (%s)",
                      p->benchmark, p->axes, p->note);
        else
            cr_assert_eq(p->batch_ns, 0, "%s: batch view of a %s point", p->benchmark,
                         vyre_bench_mode_name(p->mode));
        if (nk > 0)
            cr_assert_gt(p->kernel_ns, 0, "%s: records but no kernel view", p->benchmark);
        cr_log_info("%-28s %-22s %-4s gpu %10.1f  batch %10.1f  kernel %10.1f ns  %s", p->benchmark,
                    p->axes, vyre_bench_mode_name(p->mode), p->gpu_timer ? st->median : NAN,
                    p->batch_ns, p->kernel_ns, p->note);
    }
    if (has_kernel_work(suite)) {
        vyre_error ce;
        vyre_error_clear(&ce);
        int crc = vyre_cupti_load(&ce);
        if (crc)
            cr_log_warn("no CUPTI (%s): kernel records not checked", ce.message);
        else if (cupti_note)
            cr_log_warn("CUPTI loaded but could not capture (see the notes): kernel records not "
                        "checked");
        else
            cr_assert_gt(with_kernels, 0, "CUPTI works, yet no %s point stored kernel records",
                         suite);
    }
    *np = n;
    return pts;
}

static void run_end(struct run *r)
{
    vyre_gpu_monitor_close(r->mon);
    vyre_results_close(r->db);
}

/* What run.c does after every timed pass: the suite again, in its records
 * sweep, for the CUPTI kernel passes of the points just stored. */
static void records_sweep(struct run *r, const char *name, const vyre_bench_sweep *sw)
{
    vyre_error e;
    vyre_error_clear(&e);
    size_t done = r->env.done;
    r->env.records_sweep = 1;
    r->env.cursor = 0;
    int rc = sw ? vyre__bench_sweep_run(sw, &r->env, &e) : vyre__bench_suite_run(name, &r->env, &e);
    cr_assert_eq(rc, 0, "records sweep of %s: %s: %s", name, vyre_err_name(rc), e.message);
    cr_assert_eq(r->env.done, done, "the records sweep measured points");
    r->env.records_sweep = 0;
    free(r->env.timed);
    r->env.timed = NULL;
    r->env.ntimed = r->env.timed_cap = 0;
}

static void suite(const char *name)
{
    need_gpu();
    const vyre_bench_suite_def *d = vyre_bench_suite_find(name);
    cr_assert_not_null(d, "no suite '%s'", name);
    cr_assert(d->needs_gpu, "suite '%s' is expected to need a GPU", name);
    struct run r;
    run_begin(&r, name);
    size_t expected = vyre__bench_suite_points(name, &r.env);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__bench_suite_run(name, &r.env, &e);
    cr_assert_eq(rc, 0, "suite %s: %s: %s (%s)", name, vyre_err_name(rc), e.message, e.hint);
    records_sweep(&r, name, NULL);
    size_t n = 0;
    free(run_check(&r, name, expected, &n));
    run_end(&r);
}

Test(gpu_bench, launch_suite_quick)
{
    suite("launch");
}

Test(gpu_bench, memcpy_suite_quick)
{
    suite("memcpy");
}

Test(gpu_bench, bandwidth_suite_quick)
{
    suite("bandwidth");
}

Test(gpu_bench, compile_suite_quick)
{
    /* The cold-JIT child is vyre-bench; built with ASan it needs what this
     * binary's __asan_default_options gives it (test_gpu_cuda.c) for
     * cuInit to work. The child inherits the environment. */
    const char *old = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%sprotect_shadow_gap=0", old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    suite("compile");
}

static const char SCALE_SRC[] =
    "extern \"C\" __global__ void scale(float *out, const float *in, int N)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < N)\n"
    "        out[i] = 2.0f * in[i];\n"
    "}\n";

/* reference.gpu (issue 23, point 4): the fixed kernel loads as PTX through
 * the driver's JIT and is timed held behind the blocking kernel, with the
 * batch view; its figures are logged for the README. */
Test(gpu_bench, reference_gpu)
{
    need_gpu();
    struct run r;
    run_begin(&r, "reference");
    r.env.kernels = 0;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__bench_gpu_references(&r.env, &e);
    cr_assert_eq(rc, 0, "%s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
    size_t n = 0;
    vyre_bench_point *pts = run_check(&r, "reference", 1, &n);
    cr_assert_str_eq(pts[0].benchmark, "reference.gpu");
    cr_assert_eq(pts[0].gpu_timer, 1);
    cr_assert_eq(pts[0].device, r.device);
    cr_assert_geq(pts[0].stats.n, 20, "the references' fixed minimum");
    cr_assert(strstr(pts[0].note, "fixed kernel"), "%s", pts[0].note);
    free(pts);
    run_end(&r);
}

Test(gpu_bench, a_sweep_over_one_axis_stores_a_point_per_value)
{
    need_gpu();
    char path[700];
    snprintf(path, sizeof path, "%s/scale.cu", g_tmp);
    tu_write_file(path, SCALE_SRC, sizeof SCALE_SRC - 1);
    vyre_axes axes;
    vyre_axes_init(&axes);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_axes_add(&axes, "N=4096,65536", &e), 0, "%s", e.message);

    struct run r;
    run_begin(&r, "sweep:scale.cu:scale");
    vyre_device_info di;
    cr_assert_eq(vyre_cuda_device_info(0, &di, &e), 0, "%s", e.message);
    vyre_bench_sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.path = path;
    sw.entry = "scale";
    sw.axes = &axes;
    char *log = NULL;
    int rc = vyre__bench_sweep_check(&sw, di.cc_major, di.cc_minor, &log, &e);
    cr_assert_eq(rc, 0, "sweep check: %s (%s)\n%s", e.message, e.hint, log ? log : "");
    free(log);
    size_t expected = vyre__bench_sweep_points(&sw, &r.env);
    cr_assert_eq(expected, 2, "two values of N, hot mode only");
    rc = vyre__bench_sweep_run(&sw, &r.env, &e);
    cr_assert_eq(rc, 0, "sweep: %s: %s (%s)", vyre_err_name(rc), e.message, e.hint);
    records_sweep(&r, "sweep", &sw);
    size_t n = 0;
    vyre_bench_point *pts = run_check(&r, "sweep", expected, &n);
    cr_assert_str_eq(pts[0].axes, "N=4096");
    cr_assert_str_eq(pts[1].axes, "N=65536");
    /* Bytes per launch grow with N (the binding moves 8 N bytes). */
    cr_assert_gt(pts[0].bytes, 0);
    cr_assert_eq(pts[1].bytes / pts[0].bytes, 16.0, "bytes %g and %g", pts[0].bytes, pts[1].bytes);
    free(pts);
    run_end(&r);
    vyre_axes_release(&axes);
}

/* A kernel that checks, on the GPU, what a version 2 spec bound: each
 * buffer's type and fill, the scalars' types and values, a null pointer,
 * and dynamic shared memory above 48 KiB (it writes the last byte). Any
 * mismatch traps, which fails the launch and so the sweep. f16 iota is
 * checked for i < 2048 (exact there) from its bit pattern. */
static const char CHECK_SRC[] =
    "__device__ unsigned short half_of(long long i)\n"
    "{\n"
    "    if (i == 0) return 0;\n"
    "    int e = 63 - __clzll(i);\n"
    "    return (unsigned short)(((e + 15) << 10) | ((i << (10 - e)) & 0x3ff));\n"
    "}\n"
    "extern \"C\" __global__ void check(const unsigned short *h, const unsigned short *b,\n"
    "    const float *r, const long long *q, const unsigned char *z, long long n, double d,\n"
    "    float f, const void *nul, int shared, int n32)\n"
    "{\n"
    "    extern __shared__ unsigned char sm[];\n"
    "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (nul != 0 || d != 0.25 || f != 1.5f || n32 != (int)n) __trap();\n"
    "    if (i < n) {\n"
    "        if (h[i] != half_of(i)) __trap();\n"
    "        if (b[i] != 0x3f80) __trap();\n"
    "        if (!(r[i] >= -1.0f && r[i] < 1.0f)) __trap();\n"
    "        if (q[i] != i) __trap();\n"
    "        if (z[i] != 0) __trap();\n"
    "    }\n"
    "    if (threadIdx.x == 0) { sm[shared - 1] = 1; __syncthreads(); if (sm[shared - 1] != 1) "
    "__trap(); }\n"
    "}\n";

static int run_check_sweep(const char *bf16_fill, char *msg, size_t size)
{
    char path[700], spec[2048];
    snprintf(path, sizeof path, "%s/check.cu", g_tmp);
    tu_write_file(path, CHECK_SRC, sizeof CHECK_SRC - 1);
    snprintf(spec, sizeof spec,
             "{\"version\": 2, \"args\": ["
             "{\"buffer\": \"N\", \"type\": \"f16\", \"fill\": \"iota\"},"
             "{\"buffer\": \"N\", \"type\": \"bf16\", \"fill\": \"%s\"},"
             "{\"buffer\": \"N\", \"fill\": \"random\", \"seed\": 9},"
             "{\"buffer\": \"N\", \"type\": \"i64\", \"fill\": \"iota\"},"
             "{\"buffer\": \"N\", \"type\": \"u8\"},"
             "{\"int\": \"N\", \"type\": \"i64\"}, {\"float\": 0.25, \"type\": \"f64\"},"
             "{\"float\": \"1.5\"}, {\"null\": true}, {\"int\": \"SH\"}, {\"int\": \"N\"}],"
             " \"grid\": \"ceil(N/128)\", \"block\": 128, \"shared\": \"SH\","
             " \"bytes\": \"N*(2+2+4+8+1)\"}",
             bf16_fill);
    vyre_axes axes;
    vyre_axes_init(&axes);
    cr_assert_eq(vyre_axes_add(&axes, "N=1000,2048", NULL), 0);
    cr_assert_eq(vyre_axes_add(&axes, "SH=100K", NULL), 0);
    struct run r;
    run_begin(&r, "sweep:check.cu:check");
    vyre_device_info di;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cuda_device_info(0, &di, &e), 0, "%s", e.message);
    vyre_bench_sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.path = path;
    sw.entry = "check";
    sw.axes = &axes;
    sw.spec_json = spec;
    sw.spec_origin = "check.json";
    char *log = NULL;
    int rc = vyre__bench_sweep_check(&sw, di.cc_major, di.cc_minor, &log, &e);
    cr_assert_eq(rc, 0, "sweep check: %s (%s)\n%s", e.message, e.hint, log ? log : "");
    free(log);
    rc = vyre__bench_sweep_run(&sw, &r.env, &e);
    snprintf(msg, size, "%s", e.message);
    if (rc == 0) {
        records_sweep(&r, "sweep", &sw);
        size_t n = 0;
        vyre_bench_point *pts = run_check(&r, "sweep", 2, &n);
        cr_assert_str_eq(pts[1].axes, "N=2048 SH=102400");
        cr_assert_eq(pts[1].bytes, 2048.0 * 17);
        cr_assert_str_eq(pts[1].metric_name, "GB/s");
        free(pts);
    }
    run_end(&r);
    vyre_axes_release(&axes);
    return rc;
}

Test(gpu_bench, a_version_2_spec_binds_types_fills_scalars_nulls_and_shared)
{
    need_gpu();
    char msg[VYRE_ERROR_MESSAGE_MAX];
    int rc = run_check_sweep("ones", msg, sizeof msg);
    cr_assert_eq(rc, 0, "the kernel found a binding wrong (it traps): %s", msg);
}

Test(gpu_bench, the_binding_check_kernel_can_fail)
{
    need_gpu();
    /* bf16 zeros where the kernel wants ones: it traps, the sweep fails. */
    char msg[VYRE_ERROR_MESSAGE_MAX];
    int rc = run_check_sweep("zeros", msg, sizeof msg);
    cr_assert_neq(rc, 0, "a wrong fill went unnoticed");
}
