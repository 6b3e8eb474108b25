/*
 * jitlink.c - PTX to cubin through nvJitLink, loaded at run time.
 *
 * Owns the dlopen() of libnvJitLink (search rules in cuda/jitlink.h,
 * mechanics in base/loader.c), its function table, and one link: PTX in, cubin
 * plus the error and info logs out. Guarantees: libnvJitLink is never
 * linked; no nvJitLink is an error with a hint; the loader runs once per
 * process and is thread-safe; every handle created is destroyed.
 *
 * Pitfalls seen with nvJitLink 13.0, kept here so nobody relearns them:
 *  - The API is versioned by symbol. nvJitLink.h 13.0 declares
 *    `extern __nvJitLinkCreate_13_0(...)` and makes nvJitLinkCreate a
 *    `static inline` wrapper around it - not a #define, so stringifying
 *    the public name after expansion still gives "nvJitLinkCreate". The
 *    name a C caller writes is not the ABI: we dlsym
 *    "__nvJitLinkCreate_13_0", built by pasting VYRE_JL_ABI below and
 *    stringifying after expansion. (Should a header ever #define the
 *    public names, paste from the expanded name instead: the base name
 *    would otherwise expand before pasting.) The 13.0 library also exports
 *    plain nvJitLinkCreate etc., but those are not what the header
 *    promises and a later library may point them at a newer ABI.
 *    nvJitLinkVersion alone is unversioned. There is no
 *    nvJitLinkGetErrorString: codes are named here.
 *  - The inline wrapper nvJitLinkCreate takes `const char **` while the
 *    versioned symbol takes `const char *const *`: the table uses the
 *    versioned prototype (via __typeof__), so a mismatch is a compile error.
 *  - A libnvJitLink.so of another major lacks the _13_0 symbols and is
 *    refused (VYRE_ENOJITLINK), never called with the wrong ABI.
 *  - PTX is always handed over NUL-terminated with the NUL counted in its
 *    size, the form cuLinkAddData documents for PTX; we copy to get it.
 *  - "-arch=" takes a real architecture for cubin output; sm_90a is
 *    accepted for the `.target sm_90a` PTX Triton emits on Hopper, and
 *    linking sm_90a PTX for plain sm_90 fails.
 *  - nvJitLink 13.0 leaks about 3 KB inside nvJitLinkAddData on every
 *    link for sm_100/sm_100a (Blackwell) of sm_90 PTX (seen under
 *    LeakSanitizer; sm_90 and sm_90a links do not leak; -no-cache does not
 *    help). Nothing on our side holds it: it is the library's.
 *  - An unknown -arch fails in nvJitLinkCreate, before any handle (and so
 *    any log) exists: the message then names the code and the option.
 */
#include "cuda/jitlink.h"

#include <cuda.h>
#include <nvJitLink.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cuda/toolkit_internal.h"

_Static_assert(CUDA_VERSION / 1000 == 13,
               "update the nvJitLink sonames and VYRE_JL_ABI for this CUDA major");

/* The ABI suffix of the versioned entry points in this nvJitLink.h. */
#define VYRE_JL_ABI        _13_0
#define JL_PASTE3(a, b, c) a##b##c
#define JL_SYM3(a, b, c)   JL_PASTE3(a, b, c)
#define JL_SYM(base)       JL_SYM3(__, base, VYRE_JL_ABI) /* __nvJitLinkCreate_13_0 */
#define JL_STR2(x)         #x
#define JL_STR(x)          JL_STR2(x) /* stringify after expansion */

#define HINT_NOJITLINK                                                                             \
    "install the CUDA toolkit's nvJitLink (libnvJitLink.so.13, package libnvjitlink-13-0), or "    \
    "set VYRE_NVJITLINK_LIBRARY to the path of libnvJitLink.so"
#define HINT_LINK "fix the PTX at the line quoted; the whole link log is in the output"
#define QUOTE_MAX 400

/* X(field, symbol) */
#define VYRE_JL_FUNCS(X)                                                                           \
    X(create, JL_SYM(nvJitLinkCreate))                                                             \
    X(destroy, JL_SYM(nvJitLinkDestroy))                                                           \
    X(add_data, JL_SYM(nvJitLinkAddData))                                                          \
    X(complete, JL_SYM(nvJitLinkComplete))                                                         \
    X(cubin_size, JL_SYM(nvJitLinkGetLinkedCubinSize))                                             \
    X(cubin, JL_SYM(nvJitLinkGetLinkedCubin))                                                      \
    X(error_log_size, JL_SYM(nvJitLinkGetErrorLogSize))                                            \
    X(error_log, JL_SYM(nvJitLinkGetErrorLog))                                                     \
    X(info_log_size, JL_SYM(nvJitLinkGetInfoLogSize))                                              \
    X(info_log, JL_SYM(nvJitLinkGetInfoLog))                                                       \
    X(version, nvJitLinkVersion)

typedef struct jl_fns {
#define JL_FIELD(field, sym) __typeof__(&sym) field;
    VYRE_JL_FUNCS(JL_FIELD)
#undef JL_FIELD
} jl_fns;

static jl_fns g_fns;
static unsigned g_major, g_minor;

static const char *const g_sonames[] = {"libnvJitLink.so.13", "libnvJitLink.so", NULL};
static const char *const g_subdirs[] = {"lib64", NULL};
static const vyre__lib_spec g_spec = VYRE__TOOLKIT_SPEC(
    "nvJitLink", "VYRE_NVJITLINK_LIBRARY", g_sonames, g_subdirs, VYRE_ENOJITLINK, HINT_NOJITLINK);
static const vyre__lib_sym g_syms[] = {
#define JL_ENTRY(field, sym) {JL_STR(sym), offsetof(jl_fns, field), 0},
    VYRE_JL_FUNCS(JL_ENTRY)
#undef JL_ENTRY
};

static const char *result_name(nvJitLinkResult r)
{
    switch (r) {
#define JL_CASE(x)                                                                                 \
    case x:                                                                                        \
        return #x;
        JL_CASE(NVJITLINK_SUCCESS)
        JL_CASE(NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
        JL_CASE(NVJITLINK_ERROR_MISSING_ARCH)
        JL_CASE(NVJITLINK_ERROR_INVALID_INPUT)
        JL_CASE(NVJITLINK_ERROR_PTX_COMPILE)
        JL_CASE(NVJITLINK_ERROR_NVVM_COMPILE)
        JL_CASE(NVJITLINK_ERROR_INTERNAL)
        JL_CASE(NVJITLINK_ERROR_THREADPOOL)
        JL_CASE(NVJITLINK_ERROR_UNRECOGNIZED_INPUT)
        JL_CASE(NVJITLINK_ERROR_FINALIZE)
        JL_CASE(NVJITLINK_ERROR_NULL_INPUT)
        JL_CASE(NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
        JL_CASE(NVJITLINK_ERROR_INCORRECT_INPUT_TYPE)
        JL_CASE(NVJITLINK_ERROR_ARCH_MISMATCH)
        JL_CASE(NVJITLINK_ERROR_OUTDATED_LIBRARY)
        JL_CASE(NVJITLINK_ERROR_MISSING_FATBIN)
        JL_CASE(NVJITLINK_ERROR_UNRECOGNIZED_ARCH)
        JL_CASE(NVJITLINK_ERROR_UNSUPPORTED_ARCH)
        JL_CASE(NVJITLINK_ERROR_LTO_NOT_ENABLED)
#undef JL_CASE
    }
    return "NVJITLINK_ERROR_UNKNOWN";
}

/* After the symbols: the library must answer its version. Never
 * dlclose()d: nvJitLink keeps a thread pool and caches. */
static int ready(void *handle, char *path, vyre_error *err)
{
    (void)handle;
    nvJitLinkResult r = g_fns.version(&g_major, &g_minor);
    if (r != NVJITLINK_SUCCESS)
        return vyre__fail(err, VYRE_ENOJITLINK, HINT_NOJITLINK,
                          "nvJitLink at '%s' fails nvJitLinkVersion: %s", path, result_name(r));
    return VYRE_OK;
}

static vyre__lib_once g_lib = {
    .spec = &g_spec,
    .syms = g_syms,
    .nsyms = VYRE_ARRAY_SIZE(g_syms),
    .table = &g_fns,
    .table_size = sizeof g_fns,
    .ready = ready,
    VYRE__LIB_ONCE_STATE,
};

int vyre_jitlink_load(vyre_error *err)
{
    return vyre__lib_load(&g_lib, err);
}

int vyre_jitlink_version(int *major, int *minor, vyre_error *err)
{
    if (!major || !minor)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitlink_version: NULL argument");
    int rc = vyre_jitlink_load(err);
    if (rc)
        return rc;
    *major = (int)g_major;
    *minor = (int)g_minor;
    return VYRE_OK;
}

void vyre_jitlink_output_release(vyre_jitlink_output *out)
{
    if (!out)
        return;
    free(out->cubin);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* Error log then info log, each fetched only when non-empty. */
static int fetch_logs(nvJitLinkHandle h, vyre_jitlink_output *out, vyre_error *err)
{
    size_t ne = 0, ni = 0;
    if (g_fns.error_log_size(h, &ne) != NVJITLINK_SUCCESS)
        ne = 0;
    if (g_fns.info_log_size(h, &ni) != NVJITLINK_SUCCESS)
        ni = 0;
    /* Sizes count the NUL; +2 for our own NUL and a separating newline. */
    char *log = malloc(ne + ni + 2);
    if (!log)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for the nvJitLink log",
                          ne + ni + 2);
    size_t used = 0;
    log[0] = '\0';
    if (ne && g_fns.error_log(h, log) == NVJITLINK_SUCCESS) {
        log[ne] = '\0';
        used = strlen(log);
    }
    if (ni) {
        if (used && log[used - 1] != '\n')
            log[used++] = '\n';
        if (g_fns.info_log(h, log + used) == NVJITLINK_SUCCESS)
            log[used + ni] = '\0';
        else
            log[used] = '\0';
    }
    out->log = log;
    out->log_len = strlen(log);
    return VYRE_OK;
}

static int fetch_cubin(nvJitLinkHandle h, vyre_jitlink_output *out, const char *name,
                       vyre_error *err)
{
    size_t n = 0;
    nvJitLinkResult r = g_fns.cubin_size(h, &n);
    if (r != NVJITLINK_SUCCESS || n == 0)
        return vyre__fail(err, VYRE_ECOMPILE, "report this to the vyre developers with the PTX",
                          "nvJitLink linked '%s' for '%s' but returned no cubin: %s", name,
                          out->arch, r != NVJITLINK_SUCCESS ? result_name(r) : "empty output");
    void *cubin = malloc(n);
    if (!cubin)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for a cubin", n);
    r = g_fns.cubin(h, cubin);
    if (r != NVJITLINK_SUCCESS) {
        free(cubin);
        return vyre__fail(err, VYRE_ECOMPILE, NULL, "nvJitLink cannot return the cubin: %s",
                          result_name(r));
    }
    out->cubin = cubin;
    out->size = n;
    return VYRE_OK;
}

static int link_error(nvJitLinkResult r, const char *step, const char *name,
                      const vyre_jitlink_output *out, vyre_error *err)
{
    if (r == NVJITLINK_ERROR_INTERNAL || r == NVJITLINK_ERROR_THREADPOOL)
        return vyre__fail(err, VYRE_ECOMPILE, "retry; if it persists, update the CUDA toolkit",
                          "nvJitLink failed in %s for '%s': %s", step, name, result_name(r));
    char line[QUOTE_MAX];
    const char *first = vyre__toolkit_first_error(out->log, line, sizeof line);
    if (r == NVJITLINK_ERROR_UNRECOGNIZED_OPTION || r == NVJITLINK_ERROR_UNRECOGNIZED_ARCH ||
        r == NVJITLINK_ERROR_UNSUPPORTED_ARCH || r == NVJITLINK_ERROR_MISSING_ARCH ||
        r == NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
        return vyre__fail(err, VYRE_ECOMPILE,
                          "check the architecture and options against nvJitLink's documentation "
                          "(options look like '-O3', '-lineinfo', '-Xptxas=-v')",
                          "nvJitLink rejects the options for '%s' (-arch=%s): %s", name, out->arch,
                          first ? first : result_name(r));
    /* ptxas names a .target/-arch mismatch only as "fatal", e.g. "PTX with
     * .target 'sm_90a' cannot be compiled for architecture 'sm_90'". */
    const char *hint = HINT_LINK;
    if (first && (strstr(first, ".target") || strstr(first, "SM version")))
        hint = "link for the architecture the PTX's .target line names, or a newer one; "
               "arch-specific PTX (Triton's .target sm_90a) needs exactly that arch";
    return vyre__fail(err, VYRE_ECOMPILE, hint, "nvJitLink cannot link '%s' for '%s': %s", name,
                      out->arch, first ? first : result_name(r));
}

int vyre_jitlink_ptx_to_cubin(const char *ptx, size_t len, const char *name, const char *arch,
                              const char *const *opts, size_t nopts, vyre_jitlink_output *out,
                              vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitlink_ptx_to_cubin: NULL output");
    memset(out, 0, sizeof *out);
    if (!ptx || !arch || (nopts && !opts))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_jitlink_ptx_to_cubin: NULL argument");
    if (!name || !*name)
        name = "kernel.ptx";
    if (strncmp(arch, "sm_", 3) != 0 || !vyre__toolkit_arch_number_valid(arch + 3) ||
        vyre__strlcpy(out->arch, arch, sizeof out->arch) >= sizeof out->arch)
        return vyre__fail(err, VYRE_EINVAL,
                          "use a real architecture: sm_<major><minor> with an optional a or f "
                          "suffix (e.g. 'sm_90', 'sm_90a')",
                          "invalid GPU architecture '%s' to link '%s' for", arch, name);
    if (vyre__toolkit_check_opts("vyre_jitlink_ptx_to_cubin", "link", name, opts, nopts, err))
        return VYRE_EINVAL;
    size_t n = len;
    while (n && ptx[n - 1] == '\0')
        n--;
    if (n == 0)
        return vyre__fail(err, VYRE_EINVAL, "pass the PTX text", "PTX '%s' is empty", name);
    if (n >= 4 && memcmp(ptx,
                         "\x7f"
                         "ELF",
                         4) == 0)
        return vyre__fail(err, VYRE_EINVAL, "pass PTX text, or hand the cubin over as a cubin",
                          "input '%s' is an ELF file (a cubin?), not PTX", name);
    const char *nul = memchr(ptx, '\0', n);
    if (nul)
        return vyre__fail(err, VYRE_EINVAL, "pass PTX text (a cubin is not PTX)",
                          "PTX '%s' holds a NUL byte at offset %zu", name, (size_t)(nul - ptx));

    int rc = vyre_jitlink_load(err);
    if (rc)
        return rc;

    /* The copy holds the text and its NUL (see the pitfalls above). */
    char arch_opt[VYRE_JITLINK_ARCH_MAX + 8], *text;
    const char **argv;
    snprintf(arch_opt, sizeof arch_opt, "-arch=%s", out->arch);
    if ((rc = vyre__toolkit_args(ptx, n, arch_opt, opts, nopts, "link", name, &text, &argv, err)))
        return rc;

    uint64_t t0 = vyre__mono_ns();
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r = g_fns.create(&h, (uint32_t)(nopts + 1), argv);
    if (r != NVJITLINK_SUCCESS) {
        rc = link_error(r, "nvJitLinkCreate", name, out, err);
    } else {
        const char *step = "nvJitLinkAddData";
        r = g_fns.add_data(h, NVJITLINK_INPUT_PTX, text, n + 1, name);
        if (r == NVJITLINK_SUCCESS) {
            step = "nvJitLinkComplete";
            r = g_fns.complete(h);
        }
        rc = fetch_logs(h, out, err);
        if (rc == VYRE_OK && r != NVJITLINK_SUCCESS)
            rc = link_error(r, step, name, out, err);
        if (rc == VYRE_OK)
            rc = fetch_cubin(h, out, name, err);
    }
    if (h)
        g_fns.destroy(&h);
    out->link_ns = vyre__mono_ns() - t0;
    free(text);
    free(argv);
    if (!out->log && rc != VYRE_ENOMEM) {
        out->log = calloc(1, 1);
        out->log_len = 0;
    }
    return rc;
}
