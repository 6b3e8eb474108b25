/*
 * test_nvrtc.c - NVRTC and nvJitLink loaded at run time
 * (libcore/src/{nvrtc,jitlink,compile,toolkit}.c), against the real CUDA
 * toolkit libraries: both run on the CPU, so CUDA C -> PTX -> cubin is
 * exercised for real on machines without a GPU. When the toolkit's
 * libraries are absent the tests that need them skip with the reason.
 *
 * The loaders run once per process; Criterion runs every test in its own
 * process, so a test sets the environment first and then calls libcore.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/key_internal.h"
#include "cuda/compile_internal.h"
#include "cuda/nvrtc_internal.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/compile.h"
#include "cuda/jitlink.h"
#include "vyre/key.h"
#include "vyre/nvrtc.h"

static const char *const g_vars[] = {"VYRE_NVRTC_LIBRARY", "VYRE_NVJITLINK_LIBRARY"};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];

static void nvrtc_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    g_tmp[0] = '\0';
}

static void nvrtc_teardown(void)
{
    tu_env_restore(&g_env);
    if (g_tmp[0])
        tu_rm_rf(g_tmp);
}

TestSuite(nvrtc, .init = nvrtc_setup, .fini = nvrtc_teardown, .timeout = 300);

static const char SAXPY[] = "extern \"C\" __global__ void saxpy(float a, const float *x, float *y,"
                            " int n)\n"
                            "{\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n)\n"
                            "        y[i] = a * x[i] + y[i];\n"
                            "}\n";

/* Line 3 uses an undeclared identifier. */
static const char BROKEN[] = "extern \"C\" __global__ void broken(float *y)\n"
                             "{\n"
                             "    y[0] = foo;\n"
                             "}\n";

static const char ELF[4] = {0x7f, 'E', 'L', 'F'};

static void need_nvrtc(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_nvrtc_load(&e);
    if (rc == VYRE_ENONVRTC)
        cr_skip_test("NVRTC (the CUDA toolkit's libnvrtc) is not installed: %s", e.message);
    cr_assert_eq(rc, 0, "NVRTC load: %s: %s", vyre_err_name(rc), e.message);
}

static void need_jitlink(void)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_jitlink_load(&e);
    if (rc == VYRE_ENOJITLINK)
        cr_skip_test("nvJitLink (the CUDA toolkit's libnvJitLink) is not installed: %s", e.message);
    cr_assert_eq(rc, 0, "nvJitLink load: %s: %s", vyre_err_name(rc), e.message);
}

static int is_elf(const void *p, size_t n)
{
    return p && n > sizeof ELF && memcmp(p, ELF, sizeof ELF) == 0;
}

static int matches(const char *re, const char *s)
{
    regex_t r;
    cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0, "bad regex %s", re);
    int ok = regexec(&r, s, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

/* saxpy as PTX for compute_90 (caller frees). */
static char *saxpy_ptx(void)
{
    vyre_nvrtc_output o;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_nvrtc_compile(SAXPY, strlen(SAXPY), "saxpy.cu", "compute_90", NULL, 0, 0, &o, &e);
    cr_assert_eq(rc, 0, "PTX compile: %s: %s\nlog:\n%s", vyre_err_name(rc), e.message,
                 o.log ? o.log : "");
    char *ptx = strdup(o.data);
    cr_assert_not_null(ptx);
    vyre_nvrtc_output_release(&o);
    return ptx;
}

/* Replaces the first `from` in s by `to` (new string). */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    cr_assert_not_null(at, "'%s' not found", from);
    size_t head = (size_t)(at - s), fl = strlen(from), tl = strlen(to), sl = strlen(s);
    char *r = malloc(sl - fl + tl + 1);
    cr_assert_not_null(r);
    memcpy(r, s, head);
    memcpy(r + head, to, tl);
    memcpy(r + head + tl, at + fl, sl - head - fl + 1);
    return r;
}

/* ---- NVRTC ---------------------------------------------------------------- */

Test(nvrtc, version_matches_the_toolkit)
{
    need_nvrtc();
    int major = -1, minor = -1;
    cr_assert_eq(vyre_nvrtc_version(&major, &minor, NULL), 0);
    cr_assert(major >= 12 && minor >= 0, "NVRTC %d.%d", major, minor);
    cr_assert_eq(vyre_nvrtc_version(NULL, &minor, NULL), VYRE_EINVAL);
}

Test(nvrtc, saxpy_compiles_to_ptx)
{
    need_nvrtc();
    const char *archs[] = {"compute_90", "sm_90"}; /* both give compute_90 PTX */
    for (size_t i = 0; i < 2; i++) {
        vyre_nvrtc_output o;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, archs[i], NULL, 0, 0, &o, &e);
        cr_assert_eq(rc, 0, "%s: %s: %s", archs[i], vyre_err_name(rc), e.message);
        cr_assert_eq(o.is_cubin, 0);
        cr_assert_str_eq(o.arch, "compute_90");
        cr_assert_not_null(o.data);
        cr_assert_eq(o.size, strlen(o.data), "PTX size excludes the NUL");
        cr_assert(strstr(o.data, ".entry saxpy("), "no '.entry saxpy(' in:\n%s",
                  (const char *)o.data);
        cr_assert(strstr(o.data, ".target sm_90"), "no '.target sm_90'");
        cr_assert_not_null(o.log);
        cr_assert_eq(o.log_len, strlen(o.log));
        cr_assert_gt(o.compile_ns, 0);
        vyre_nvrtc_output_release(&o);
        cr_assert_null(o.data);
        vyre_nvrtc_output_release(&o); /* twice is harmless */
    }
}

Test(nvrtc, saxpy_compiles_to_cubin_for_sm80_and_sm90)
{
    need_nvrtc();
    const char *archs[] = {"sm_80", "sm_90", "compute_90", "sm_90a"};
    const char *want[] = {"sm_80", "sm_90", "sm_90", "sm_90a"};
    const char *opts[] = {"-default-device", "--std=c++17"};
    for (size_t i = 0; i < 4; i++) {
        vyre_nvrtc_output o;
        vyre_error e;
        vyre_error_clear(&e);
        /* The source length may count the NUL, as sizeof does. */
        int rc = vyre_nvrtc_compile(SAXPY, sizeof SAXPY, "saxpy.cu", archs[i], opts, 2, 1, &o, &e);
        cr_assert_eq(rc, 0, "%s: %s: %s", archs[i], vyre_err_name(rc), e.message);
        cr_assert_eq(o.is_cubin, 1);
        cr_assert_str_eq(o.arch, want[i]);
        cr_assert(is_elf(o.data, o.size), "%s: no ELF magic in %zu bytes", archs[i], o.size);
        cr_assert_gt(o.compile_ns, 0);
        vyre_nvrtc_output_release(&o);
    }
}

Test(nvrtc, syntax_error_quotes_the_failing_line_and_keeps_the_log)
{
    need_nvrtc();
    vyre_nvrtc_output o;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_nvrtc_compile(BROKEN, strlen(BROKEN), "kernel.cu", "sm_90", NULL, 0, 1, &o, &e);
    cr_assert_eq(rc, VYRE_ECOMPILE, "%s", vyre_err_name(rc));
    cr_assert_eq(e.code, VYRE_ECOMPILE);
    cr_assert(strstr(e.message, "kernel.cu(3): error: identifier \"foo\" is undefined"),
              "message: %s", e.message);
    cr_assert(strstr(e.message, "'sm_90'"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "log"), "hint: %s", e.hint);
    cr_assert_null(o.data);
    cr_assert_not_null(o.log);
    cr_assert(strstr(o.log, "kernel.cu(3): error"), "log: %s", o.log);
    cr_assert(strstr(o.log, "error detected in the compilation of \"kernel.cu\""), "log: %s",
              o.log);
    cr_assert_eq(o.log_len, strlen(o.log));
    vyre_nvrtc_output_release(&o);
}

Test(nvrtc, bad_arguments_are_refused_before_compiling)
{
    vyre_nvrtc_output o;
    vyre_error e;
    const char *arch_opt[] = {"-arch=sm_80"};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, "sm_90", arch_opt, 1, 1, &o, &e),
                 VYRE_EINVAL);
    cr_assert(strstr(e.message, "'-arch=sm_80'"), "%s", e.message);
    vyre_nvrtc_output_release(&o);
    const char *bad_archs[] = {"sm90", "sm_9", "compute_", "sm_90b", "", "gfx90a"};
    for (size_t i = 0; i < 6; i++) {
        vyre_error_clear(&e);
        cr_assert_eq(
            vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, bad_archs[i], NULL, 0, 1, &o, &e),
            VYRE_EINVAL, "arch '%s'", bad_archs[i]);
        cr_assert(strstr(e.message, "invalid GPU architecture"), "%s", e.message);
        vyre_nvrtc_output_release(&o);
    }
    static const char nul_inside[] = "int a;\0int b;\n";
    vyre_error_clear(&e);
    cr_assert_eq(
        vyre_nvrtc_compile(nul_inside, sizeof nul_inside - 1, NULL, "sm_90", NULL, 0, 1, &o, &e),
        VYRE_EINVAL);
    cr_assert(strstr(e.message, "offset 6"), "%s", e.message);
    vyre_nvrtc_output_release(&o);
}

Test(nvrtc, unknown_option_is_a_compile_error_with_the_log)
{
    need_nvrtc();
    vyre_nvrtc_output o;
    vyre_error e;
    vyre_error_clear(&e);
    const char *opts[] = {"--no-such-nvrtc-option"};
    int rc = vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, "sm_90", opts, 1, 1, &o, &e);
    cr_assert_eq(rc, VYRE_ECOMPILE, "%s", vyre_err_name(rc));
    cr_assert(strstr(e.message, "no-such-nvrtc-option"), "message: %s", e.message);
    vyre_nvrtc_output_release(&o);
}

Test(nvrtc, missing_library_is_enonvrtc_with_a_hint)
{
    setenv("VYRE_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
    vyre_error e;
    vyre_error_clear(&e);
    int major, minor;
    cr_assert_eq(vyre_nvrtc_version(&major, &minor, &e), VYRE_ENONVRTC);
    cr_assert(strstr(e.message, "'/nonexistent/libnvrtc.so.13'"), "%s", e.message);
    cr_assert(strstr(e.message, "VYRE_NVRTC_LIBRARY"), "%s", e.message);
    cr_assert(strstr(e.hint, "NVRTC") && strstr(e.hint, "VYRE_NVRTC_LIBRARY"), "%s", e.hint);
    /* Every entry point reports the same, and so does the toolchain id. */
    vyre_nvrtc_output o;
    cr_assert_eq(vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, "sm_90", NULL, 0, 1, &o, NULL),
                 VYRE_ENONVRTC);
    vyre_nvrtc_output_release(&o);
    char tc[64];
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUDA_C, tc, sizeof tc, NULL), VYRE_ENONVRTC);
    /* PTX and cubin do not need NVRTC. */
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUBIN, tc, sizeof tc, NULL), 0);
}

Test(nvrtc, empty_library_variable_is_eenv)
{
    setenv("VYRE_NVRTC_LIBRARY", "", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvrtc_load(&e), VYRE_EENV);
    cr_assert(strstr(e.message, "VYRE_NVRTC_LIBRARY is set but empty"), "%s", e.message);
}

Test(nvrtc, library_without_nvrtc_symbols_is_refused)
{
    setenv("VYRE_NVRTC_LIBRARY", "libm.so.6", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvrtc_load(&e), VYRE_ENONVRTC);
    cr_assert(strstr(e.message, "'libm.so.6' has no symbol 'nvrtc"), "%s", e.message);
}

/* ---- nvJitLink ------------------------------------------------------------ */

Test(nvrtc, jitlink_version)
{
    need_jitlink();
    int major = -1, minor = -1;
    cr_assert_eq(vyre_jitlink_version(&major, &minor, NULL), 0);
    cr_assert(major >= 13 && minor >= 0, "nvJitLink %d.%d", major, minor);
}

Test(nvrtc, ptx_links_to_cubin_for_sm90_and_sm90a)
{
    need_nvrtc();
    need_jitlink();
    char *ptx = saxpy_ptx();
    /* Triton on Hopper emits `.target sm_90a`: mimic it. */
    char *ptx_a = replace(ptx, ".target sm_90", ".target sm_90a");
    struct {
        const char *ptx;
        const char *arch;
    } cases[] = {{ptx, "sm_90"}, {ptx_a, "sm_90a"}};
    /* Not sm_100 here: nvJitLink 13.0 leaks inside itself on that target,
     * and LeakSanitizer would blame this test (see jitlink.c). */
    for (size_t i = 0; i < 2; i++) {
        vyre_jitlink_output o;
        vyre_error e;
        vyre_error_clear(&e);
        const char *opts[] = {"-O3"};
        int rc = vyre_jitlink_ptx_to_cubin(cases[i].ptx, strlen(cases[i].ptx), "saxpy.ptx",
                                           cases[i].arch, opts, 1, &o, &e);
        cr_assert_eq(rc, 0, "%s: %s: %s\nlog:\n%s", cases[i].arch, vyre_err_name(rc), e.message,
                     o.log ? o.log : "");
        cr_assert(is_elf(o.cubin, o.size), "%s: no ELF magic", cases[i].arch);
        cr_assert_str_eq(o.arch, cases[i].arch);
        cr_assert_gt(o.link_ns, 0);
        cr_assert_not_null(o.log);
        vyre_jitlink_output_release(&o);
    }
    free(ptx);
    free(ptx_a);
}

Test(nvrtc, sm90a_ptx_does_not_link_for_plain_sm90)
{
    need_nvrtc();
    need_jitlink();
    char *ptx = saxpy_ptx();
    char *ptx_a = replace(ptx, ".target sm_90", ".target sm_90a");
    vyre_jitlink_output o;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_jitlink_ptx_to_cubin(ptx_a, strlen(ptx_a), NULL, "sm_90", NULL, 0, &o, &e);
    cr_assert_eq(rc, VYRE_ECOMPILE, "%s", vyre_err_name(rc));
    cr_assert(strstr(e.message, "nvJitLink cannot link 'kernel.ptx' for 'sm_90': ptxas fatal"),
              "%s", e.message);
    cr_assert(strstr(e.message, "'sm_90a'"), "%s", e.message);
    cr_assert(strstr(e.hint, ".target"), "%s", e.hint);
    cr_assert_not_null(o.log);
    cr_assert_gt(o.log_len, 0, "the link log is kept");
    vyre_jitlink_output_release(&o);
    free(ptx);
    free(ptx_a);
}

Test(nvrtc, bad_ptx_quotes_the_first_error_and_keeps_the_log)
{
    need_nvrtc();
    need_jitlink();
    char *ptx = saxpy_ptx();
    char *bad = replace(ptx, "ret;", "bogus.instruction %r1;\n\tret;");
    vyre_jitlink_output o;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_jitlink_ptx_to_cubin(bad, strlen(bad), "bad.ptx", "sm_90", NULL, 0, &o, &e);
    cr_assert_eq(rc, VYRE_ECOMPILE, "%s", vyre_err_name(rc));
    cr_assert(strstr(e.message, "nvJitLink cannot link 'bad.ptx' for 'sm_90': "), "%s", e.message);
    cr_assert(matches("error", e.message), "%s", e.message);
    cr_assert_null(o.cubin);
    cr_assert_not_null(o.log);
    cr_assert_gt(o.log_len, 0);
    /* The quoted line is the log's first error line. */
    const char *quoted = strstr(e.message, "'sm_90': ") + strlen("'sm_90': ");
    char first[128];
    snprintf(first, sizeof first, "%.40s", quoted);
    cr_assert(strstr(o.log, first), "'%s' not in log:\n%s", first, o.log);
    vyre_jitlink_output_release(&o);
    free(ptx);
    free(bad);
}

Test(nvrtc, jitlink_refuses_virtual_arch_and_arch_options)
{
    vyre_jitlink_output o;
    vyre_error e;
    const char ptx[] = ".version 9.0\n.target sm_90\n";
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitlink_ptx_to_cubin(ptx, strlen(ptx), NULL, "compute_90", NULL, 0, &o, &e),
                 VYRE_EINVAL);
    cr_assert(strstr(e.message, "'compute_90'"), "%s", e.message);
    vyre_jitlink_output_release(&o);
    const char *opts[] = {"-arch=sm_80"};
    cr_assert_eq(vyre_jitlink_ptx_to_cubin(ptx, strlen(ptx), NULL, "sm_90", opts, 1, &o, NULL),
                 VYRE_EINVAL);
    vyre_jitlink_output_release(&o);
    cr_assert_eq(vyre_jitlink_ptx_to_cubin(ELF, sizeof ELF, NULL, "sm_90", NULL, 0, &o, NULL),
                 VYRE_EINVAL, "binary is not PTX");
    vyre_jitlink_output_release(&o);
}

Test(nvrtc, missing_jitlink_is_enojitlink_with_a_hint)
{
    setenv("VYRE_NVJITLINK_LIBRARY", "/nonexistent/libnvJitLink.so.13", 1);
    vyre_error e;
    vyre_error_clear(&e);
    char tc[64];
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_PTX, tc, sizeof tc, &e), VYRE_ENOJITLINK);
    cr_assert(strstr(e.message, "'/nonexistent/libnvJitLink.so.13'"), "%s", e.message);
    cr_assert(strstr(e.hint, "VYRE_NVJITLINK_LIBRARY"), "%s", e.hint);
    setenv("VYRE_NVJITLINK_LIBRARY", "", 1); /* too late: loaded once */
    cr_assert_eq(vyre_jitlink_load(NULL), VYRE_ENOJITLINK);
}

Test(nvrtc, jitlink_library_of_the_wrong_abi_is_refused)
{
    /* NVRTC has none of nvJitLink's versioned entry points. */
    need_nvrtc();
    setenv("VYRE_NVJITLINK_LIBRARY", "libnvrtc.so.13", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitlink_load(&e), VYRE_ENOJITLINK);
    cr_assert(strstr(e.message, "has no symbol '__nvJitLinkCreate_"), "%s", e.message);
}

/* ---- compile: toolchain, key, cubin, cache -------------------------------- */

Test(nvrtc, toolchain_strings)
{
    need_nvrtc();
    need_jitlink();
    char tc[VYRE_BLOB_TOOLCHAIN_MAX];
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUDA_C, tc, sizeof tc, NULL), 0);
    cr_assert(matches("^nvrtc-[0-9]+\\.[0-9]+$", tc), "'%s'", tc);
    int major, minor;
    char want[64];
    cr_assert_eq(vyre_nvrtc_version(&major, &minor, NULL), 0);
    snprintf(want, sizeof want, "nvrtc-%d.%d", major, minor);
    cr_assert_str_eq(tc, want);
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_PTX, tc, sizeof tc, NULL), 0);
    cr_assert(matches("^nvjitlink-[0-9]+\\.[0-9]+$", tc), "'%s'", tc);
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUBIN, tc, sizeof tc, NULL), 0);
    cr_assert_str_eq(tc, "cubin");
    cr_assert_eq(vyre_compile_toolchain((vyre_source_kind)9, tc, sizeof tc, NULL), VYRE_EINVAL);
    char small[4];
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUBIN, small, sizeof small, NULL), VYRE_EINVAL);
}

static vyre_key key_of(const vyre_compile_request *r)
{
    vyre_key k;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_compile_key(r, &k, &e);
    cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
    return k;
}

static int key_eq(vyre_key a, vyre_key b)
{
    return memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
}

Test(nvrtc, compile_key_covers_every_field)
{
    need_nvrtc();
    const char *opts[] = {"-lineinfo", "--use_fast_math"};
    const char *swapped[] = {"--use_fast_math", "-lineinfo"};
    vyre_compile_request base = {.kind = VYRE_SOURCE_CUDA_C,
                                 .src = SAXPY,
                                 .len = strlen(SAXPY),
                                 .arch = "sm_90",
                                 .entry = "saxpy",
                                 .opts = opts,
                                 .nopts = 2};
    vyre_key k0 = key_of(&base);
    cr_assert(key_eq(k0, key_of(&base)), "same request, same key");

    /* The key is exactly vyre__key_compute over the documented fields: what
     * seed and the run-time path both rely on. */
    char tc[VYRE_BLOB_TOOLCHAIN_MAX];
    cr_assert_eq(vyre_compile_toolchain(VYRE_SOURCE_CUDA_C, tc, sizeof tc, NULL), 0);
    vyre_key_input in = {.backend = "cuda",
                         .toolchain = tc,
                         .arch = "sm_90",
                         .features = 0,
                         .options = opts,
                         .n_options = 2,
                         .entry = NULL, /* key v2: a module, not one of its kernels */
                         .source_kind = VYRE_SOURCE_CUDA_C,
                         .source = SAXPY,
                         .source_len = strlen(SAXPY)};
    vyre_key manual;
    cr_assert_eq(vyre__key_compute(&in, &manual, NULL), 0);
    cr_assert(key_eq(k0, manual));

    vyre_compile_request r = base;
    r.arch = "sm_90a";
    cr_assert(!key_eq(k0, key_of(&r)), "arch");
    r = base;
    r.arch = "sm_80";
    cr_assert(!key_eq(k0, key_of(&r)), "arch");
    r = base;
    r.entry = "saxpy2";
    cr_assert(key_eq(k0, key_of(&r)), "entry: not in the key (v2: one blob per module)");
    r.entry = NULL;
    cr_assert(key_eq(k0, key_of(&r)), "no entry: the same module key");
    r = base;
    r.opts = swapped;
    cr_assert(!key_eq(k0, key_of(&r)), "option order");
    r = base;
    r.nopts = 1;
    cr_assert(!key_eq(k0, key_of(&r)), "options");
    r = base;
    r.len = strlen(SAXPY) - 1;
    cr_assert(!key_eq(k0, key_of(&r)), "source");
    r = base;
    r.kind = VYRE_SOURCE_CUBIN;
    cr_assert(!key_eq(k0, key_of(&r)), "kind (and toolchain)");

    vyre_error e;
    vyre_key k;
    r = base;
    r.arch = "compute_90";
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_key(&r, &k, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "'compute_90'") && e.hint[0], "%s", e.message);
    r = base;
    r.entry = "";
    cr_assert_eq(vyre_compile_key(&r, &k, NULL), VYRE_EINVAL);
    r = base;
    r.len = 0;
    cr_assert_eq(vyre_compile_key(&r, &k, NULL), VYRE_EINVAL);
    r = base;
    r.kind = (vyre_source_kind)0;
    cr_assert_eq(vyre_compile_key(&r, &k, NULL), VYRE_EINVAL);
    cr_assert_eq(vyre_compile_key(NULL, &k, NULL), VYRE_EINVAL);
}

Test(nvrtc, compile_cubin_from_each_kind)
{
    need_nvrtc();
    need_jitlink();
    char *ptx = saxpy_ptx();
    vyre_compile_request req = {.kind = VYRE_SOURCE_CUDA_C,
                                .src = SAXPY,
                                .len = strlen(SAXPY),
                                .arch = "sm_90",
                                .entry = "saxpy"};
    vyre_compile_result res;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, &e), 0, "%s", e.message);
    cr_assert(is_elf(res.cubin, res.size));
    cr_assert(matches("^nvrtc-", res.toolchain), "%s", res.toolchain);
    cr_assert_str_eq(res.arch, "sm_90");
    cr_assert_gt(res.compile_ns, 0);

    /* The cubin itself goes through as is. */
    vyre_compile_request creq = {.kind = VYRE_SOURCE_CUBIN,
                                 .src = res.cubin,
                                 .len = res.size,
                                 .arch = "sm_90",
                                 .entry = "saxpy"};
    vyre_compile_result copy;
    cr_assert_eq(vyre_compile_cubin(&creq, NULL, &copy, NULL), 0);
    cr_assert_str_eq(copy.toolchain, "cubin");
    cr_assert_eq(copy.size, res.size);
    cr_assert_eq(memcmp(copy.cubin, res.cubin, res.size), 0);
    cr_assert_str_eq(copy.log, "");
    vyre_compile_result_release(&copy);
    vyre_compile_result_release(&res);

    req.kind = VYRE_SOURCE_PTX;
    req.src = ptx;
    req.len = strlen(ptx);
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, &e), 0, "%s", e.message);
    cr_assert(is_elf(res.cubin, res.size));
    cr_assert(matches("^nvjitlink-", res.toolchain), "%s", res.toolchain);
    vyre_compile_result_release(&res);

    /* Text declared as a cubin is refused. */
    creq.src = SAXPY;
    creq.len = strlen(SAXPY);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_cubin(&creq, NULL, &res, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "ELF"), "%s", e.message);
    vyre_compile_result_release(&res);

    /* A compile error keeps the log in the result. */
    req.kind = VYRE_SOURCE_CUDA_C;
    req.src = BROKEN;
    req.len = strlen(BROKEN);
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, &e), VYRE_ECOMPILE);
    cr_assert(strstr(e.message, "(3): error: identifier \"foo\" is undefined"), "%s", e.message);
    cr_assert_null(res.cubin);
    cr_assert(res.log && strstr(res.log, "error"), "log kept");
    vyre_compile_result_release(&res);
    free(ptx);
}

static vyre_cache *temp_cache(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    char root[600];
    snprintf(root, sizeof root, "%s/cache", g_tmp);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(root, NULL, &c, &e);
    cr_assert_eq(rc, 0, "open '%s': %s: %s", root, vyre_err_name(rc), e.message);
    return c;
}

static void through_cache_twice(vyre_source_kind kind, const void *src, size_t len,
                                const char *arch, const char *toolchain_re)
{
    vyre_cache *c = temp_cache();
    vyre_compile_request req = {
        .kind = kind, .src = src, .len = len, .arch = arch, .entry = "saxpy"};
    vyre_blob *b = NULL;
    int hit = -1;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_compile_through_cache(c, &req, NULL, NULL, 0, &b, &hit, &e);
    cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
    cr_assert_eq(hit, 0, "first call is a miss");
    cr_assert_not_null(b);
    cr_assert_eq(b->header.kind, VYRE_BLOB_CUBIN);
    cr_assert_str_eq(b->header.arch, arch);
    cr_assert(matches(toolchain_re, b->header.toolchain), "%s", b->header.toolchain);
    cr_assert_gt(b->header.compile_ns, 0);
    cr_assert(is_elf(b->payload, b->size));
    vyre_key k = key_of(&req);
    cr_assert(key_eq(k, b->header.key));

    /* Second call, and a fresh handle (another process, as seed then run). */
    for (int round = 0; round < 2; round++) {
        vyre_cache *c2 = c;
        if (round == 1) {
            cr_assert_eq(vyre_cache_open(vyre_cache_root(c), NULL, &c2, NULL), 0);
        }
        vyre_blob *b2 = NULL;
        hit = -1;
        rc = vyre_compile_through_cache(c2, &req, NULL, NULL, 0, &b2, &hit, &e);
        cr_assert_eq(rc, 0, "%s: %s", vyre_err_name(rc), e.message);
        cr_assert_eq(hit, 1, "round %d is a hit", round);
        cr_assert_eq(b2->header.kind, VYRE_BLOB_CUBIN);
        cr_assert_str_eq(b2->header.arch, arch);
        cr_assert_str_eq(b2->header.toolchain, b->header.toolchain);
        cr_assert_eq(b2->header.compile_ns, b->header.compile_ns);
        cr_assert_eq(b2->size, b->size);
        cr_assert_eq(memcmp(b2->payload, b->payload, b->size), 0);
        vyre_blob_free(b2);
        if (c2 != c)
            vyre_cache_close(c2);
    }
    /* Another architecture is another key: a miss. */
    req.arch = strcmp(arch, "sm_90") == 0 ? "sm_90a" : "sm_90";
    vyre_blob *b3 = NULL;
    cr_assert_eq(vyre_compile_through_cache(c, &req, NULL, NULL, 0, &b3, &hit, NULL), 0);
    cr_assert_eq(hit, 0);
    cr_assert_str_eq(b3->header.arch, req.arch);
    vyre_blob_free(b3);
    vyre_blob_free(b);
    vyre_cache_close(c);
}

Test(nvrtc, cuda_c_through_cache_misses_then_hits)
{
    need_nvrtc();
    through_cache_twice(VYRE_SOURCE_CUDA_C, SAXPY, strlen(SAXPY), "sm_90",
                        "^nvrtc-[0-9]+\\.[0-9]+$");
}

Test(nvrtc, ptx_through_cache_misses_then_hits)
{
    need_nvrtc();
    need_jitlink();
    char *ptx = saxpy_ptx();
    through_cache_twice(VYRE_SOURCE_PTX, ptx, strlen(ptx), "sm_90", "^nvjitlink-[0-9]+\\.[0-9]+$");
    free(ptx);
}

Test(nvrtc, compile_error_through_cache_stores_nothing)
{
    need_nvrtc();
    vyre_cache *c = temp_cache();
    vyre_compile_request req = {.kind = VYRE_SOURCE_CUDA_C,
                                .src = BROKEN,
                                .len = strlen(BROKEN),
                                .arch = "sm_90",
                                .entry = "broken"};
    vyre_blob *b = (vyre_blob *)&req; /* must be reset */
    int hit = -1;
    cr_assert_eq(vyre_compile_through_cache(c, &req, NULL, NULL, 0, &b, &hit, NULL), VYRE_ECOMPILE);
    cr_assert_null(b);
    cr_assert_eq(hit, 0);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.entries, 0);
    vyre_cache_close(c);
}

typedef struct thread_arg {
    int rc;
    int is_elf;
} thread_arg;

static void *compile_thread(void *p)
{
    thread_arg *a = p;
    vyre_nvrtc_output o;
    a->rc = vyre_nvrtc_compile(SAXPY, strlen(SAXPY), NULL, "sm_90", NULL, 0, 1, &o, NULL);
    a->is_elf = is_elf(o.data, o.size);
    vyre_nvrtc_output_release(&o);
    return NULL;
}

Test(nvrtc, concurrent_first_use_loads_once)
{
    /* No load before the threads: they race to the first use. */
    pthread_t t[4];
    thread_arg a[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, compile_thread, &a[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    if (a[0].rc == VYRE_ENONVRTC)
        cr_skip_test("NVRTC (the CUDA toolkit's libnvrtc) is not installed");
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(a[i].rc, 0, "thread %d: %s", i, vyre_err_name(a[i].rc));
        cr_assert(a[i].is_elf, "thread %d", i);
    }
}

/* ---- tables ----------------------------------------------------------- */

Test(nvrtc, arch_validation_table)
{
    static const struct {
        const char *arch;
        int valid;
    } cases[] = {
        {"sm_50", 1},      {"sm_80", 1},  {"sm_86", 1},   {"sm_89", 1},   {"sm_90", 1},
        {"sm_90a", 1},     {"sm_100", 1}, {"sm_100a", 1}, {"sm_100f", 1}, {"sm_120", 1},
        {"sm_121a", 1},    {NULL, 0},     {"", 0},        {"sm_", 0},     {"sm_9", 0},
        {"sm_1000", 0},    {"sm_05", 0},  {"sm_90b", 0},  {"sm_90aa", 0}, {"sm_90af", 0},
        {"sm_9a", 0},      {"sm_90 ", 0}, {" sm_90", 0},  {"SM_90", 0},   {"sm90", 0},
        {"compute_90", 0}, {"sm_-90", 0}, {"sm_9x", 0},   {"sm_90\n", 0}, {"lto_90", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(vyre_compile_arch_valid(cases[i].arch), cases[i].valid, "'%s'",
                     cases[i].arch ? cases[i].arch : "(null)");
}

Test(nvrtc, source_kind_detection_table)
{
    static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n"
                              ".version 9.0\n.target sm_90\n.address_size 64\n";
    static const char elf[] = "\x7f"
                              "ELF\x02\x01\x01";
    static const char cu[] = "// .version and .target in a comment\n__global__ void k() {}\n";
    static const struct {
        const char *path;
        const char *data;
        size_t len;
        vyre_source_kind want;
    } cases[] = {
        {"k.cu", NULL, 0, VYRE_SOURCE_CUDA_C},
        {"dir.ptx/k.cuh", NULL, 0, VYRE_SOURCE_CUDA_C},
        {"k.ptx", cu, sizeof cu - 1, VYRE_SOURCE_PTX}, /* the extension wins */
        {"/a/b/k.cubin", NULL, 0, VYRE_SOURCE_CUBIN},
        {"K.PTX", NULL, 0, VYRE_SOURCE_PTX},
        {"kernel", ptx, sizeof ptx - 1, VYRE_SOURCE_PTX},
        {NULL, elf, sizeof elf - 1, VYRE_SOURCE_CUBIN},
        {"k.bin", elf, sizeof elf - 1, VYRE_SOURCE_CUBIN},
        {"k.txt", cu, sizeof cu - 1, VYRE_SOURCE_CUDA_C},
        {".ptx", cu, sizeof cu - 1, VYRE_SOURCE_CUDA_C}, /* a dot file, not an extension */
        {NULL,
         "\x7f"
         "EL",
         3, VYRE_SOURCE_CUDA_C},
        {NULL, NULL, 0, VYRE_SOURCE_CUDA_C},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_source_kind k = 0;
        cr_assert_eq(vyre_source_kind_detect(cases[i].path, cases[i].data, cases[i].len, &k), 0);
        cr_expect_eq(k, cases[i].want, "case %zu ('%s'): got %d", i,
                     cases[i].path ? cases[i].path : "(null)", (int)k);
    }
    /* PTX directives past the first KiB do not count. */
    char big[2048];
    memset(big, ' ', sizeof big);
    memcpy(big + 1500, "\n.version 9.0\n.target sm_90\n", 28);
    vyre_source_kind k = 0;
    cr_assert_eq(vyre_source_kind_detect(NULL, big, sizeof big, &k), 0);
    cr_assert_eq(k, VYRE_SOURCE_CUDA_C);
    cr_assert_eq(vyre_source_kind_detect(NULL, NULL, 3, &k), VYRE_EINVAL);
    cr_assert_eq(vyre_source_kind_detect("k.cu", NULL, 0, NULL), VYRE_EINVAL);
    cr_assert_str_eq(vyre_source_kind_name(VYRE_SOURCE_PTX), "ptx");
    cr_assert_null(vyre_source_kind_name((vyre_source_kind)7));
}
