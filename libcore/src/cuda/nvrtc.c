/*
 * nvrtc.c - CUDA C to PTX or cubin through NVRTC, loaded at run time.
 *
 * Owns the dlopen() of libnvrtc (search rules in vyre/nvrtc.h, mechanics in
 * base/loader.c), its function table, and one compile: source in, PTX or cubin
 * plus the whole log out, the first failing log line quoted in the error.
 * Guarantees: libnvrtc is never linked; no NVRTC is an error with a hint;
 * the loader runs once per process and is thread-safe; every NVRTC program
 * created is destroyed on every path.
 *
 * Pitfalls seen with NVRTC 13.0, kept here so nobody relearns them:
 *  - libnvrtc.so.13 dlopen()s libnvrtc-builtins.so.13.<minor> by bare
 *    name when the first program compiles (not at load time), and has no
 *    RUNPATH. So when libnvrtc was opened by full path ($VYRE_NVRTC_LIBRARY,
 *    or our $CUDA_HOME/lib64 and /usr/local/cuda/lib64 fallback) from a
 *    directory the dynamic linker does not search, it loads and reports its
 *    version fine, and then every compile fails with
 *    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE ("failed to open
 *    libnvrtc-builtins.so.13.0"). We therefore preload the builtins from the
 *    same directory: glibc then satisfies NVRTC's bare-name dlopen() from
 *    the already loaded object (matched by its soname). If that still
 *    fails, the code is VYRE_ENONVRTC with a hint, not blamed on the
 *    source. (Reproduce: ld.so --inhibit-cache ./program.)
 *  - nvrtcGetPTXSize and nvrtcGetProgramLogSize count the terminating NUL;
 *    nvrtcGetCUBINSize does not (a cubin is binary).
 *  - A real architecture (sm_XX) gives a cubin; a virtual one (compute_XX)
 *    gives PTX only (nvrtcGetCUBINSize then reports 0). Arch-specific
 *    targets need the suffix on both forms: sm_90a / compute_90a.
 *  - Kernels not declared extern "C" get C++-mangled names in the output.
 *  - The source must be NUL-terminated for nvrtcCreateProgram, so it is
 *    copied; an embedded NUL would silently cut the program short and is
 *    refused instead.
 */
#include "cuda/nvrtc_internal.h"
#include "vyre/nvrtc.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cuda/toolkit_internal.h"

/* The sonames below name the toolkit major we were built against. */
_Static_assert(CUDA_VERSION / 1000 == 13, "update the NVRTC sonames for this CUDA major");

#define HINT_NONVRTC                                                                               \
    "install the CUDA toolkit's NVRTC (libnvrtc.so.13, package cuda-nvrtc-13-0), or set "          \
    "VYRE_NVRTC_LIBRARY to the path of libnvrtc.so"
#define HINT_COMPILE "fix the source at the line quoted; the whole compile log is in the output"
#define QUOTE_MAX    400

#define VYRE_NVRTC_FUNCS(X)                                                                        \
    X(nvrtcGetErrorString)                                                                         \
    X(nvrtcVersion)                                                                                \
    X(nvrtcCreateProgram)                                                                          \
    X(nvrtcDestroyProgram)                                                                         \
    X(nvrtcCompileProgram)                                                                         \
    X(nvrtcGetPTXSize)                                                                             \
    X(nvrtcGetPTX)                                                                                 \
    X(nvrtcGetCUBINSize)                                                                           \
    X(nvrtcGetCUBIN)                                                                               \
    X(nvrtcGetProgramLogSize)                                                                      \
    X(nvrtcGetProgramLog)

typedef struct nvrtc_fns {
#define NVRTC_FIELD(name) __typeof__(&name) name;
    VYRE_NVRTC_FUNCS(NVRTC_FIELD)
#undef NVRTC_FIELD
} nvrtc_fns;

static nvrtc_fns g_fns;
static int g_major, g_minor;

static const char *const g_sonames[] = {"libnvrtc.so.13", "libnvrtc.so", NULL};
static const char *const g_subdirs[] = {"lib64", NULL};
static const vyre__lib_spec g_spec = VYRE__TOOLKIT_SPEC("NVRTC", "VYRE_NVRTC_LIBRARY", g_sonames,
                                                        g_subdirs, VYRE_ENONVRTC, HINT_NONVRTC);
static const vyre__lib_sym g_syms[] = {
#define NVRTC_SYM(name) {#name, offsetof(nvrtc_fns, name), 0},
    VYRE_NVRTC_FUNCS(NVRTC_SYM)
#undef NVRTC_SYM
};

/* See the pitfalls above. Best effort: when the file is not there NVRTC
 * may still find it on its own, and a compile says so if it cannot. */
static void preload_builtins(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return; /* found by the linker's search, which finds the builtins too */
    char builtins[VYRE_ERROR_MESSAGE_MAX + 64];
    int n = snprintf(builtins, sizeof builtins, "%.*s/libnvrtc-builtins.so.%d.%d",
                     (int)(slash - path), path, g_major, g_minor);
    if (n < 0 || (size_t)n >= sizeof builtins)
        return;
    if (!dlopen(builtins, RTLD_NOW | RTLD_LOCAL)) /* kept for the process, like libnvrtc */
        dlerror();
}

/* After the symbols: the library must answer its version. The handle is
 * never dlclose()d: NVRTC keeps process-wide state and may have loaded its
 * builtins library. */
static int ready(void *handle, char *path, vyre_error *err)
{
    (void)handle;
    nvrtcResult r = g_fns.nvrtcVersion(&g_major, &g_minor);
    if (r != NVRTC_SUCCESS)
        return vyre__fail(err, VYRE_ENONVRTC, HINT_NONVRTC, "NVRTC at '%s' fails nvrtcVersion: %s",
                          path, g_fns.nvrtcGetErrorString(r));
    preload_builtins(path);
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

int vyre_nvrtc_load(vyre_error *err)
{
    return vyre__lib_load(&g_lib, err);
}

int vyre_nvrtc_version(int *major, int *minor, vyre_error *err)
{
    if (!major || !minor)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_nvrtc_version: NULL argument");
    int rc = vyre_nvrtc_load(err);
    if (rc)
        return rc;
    *major = g_major;
    *minor = g_minor;
    return VYRE_OK;
}

void vyre_nvrtc_output_release(vyre_nvrtc_output *out)
{
    if (!out)
        return;
    free(out->data);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* "sm_90a"/"compute_90a" -> "<want prefix>90a". The suffix must be 2-3
 * digits and an optional 'a' or 'f'. */
static int target_arch(const char *arch, int want_cubin, char *buf, size_t size)
{
    const char *rest;
    if (strncmp(arch, "sm_", 3) == 0)
        rest = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        rest = arch + 8;
    else
        return VYRE_EINVAL;
    if (!vyre__toolkit_arch_number_valid(rest))
        return VYRE_EINVAL;
    int n = snprintf(buf, size, "%s%s", want_cubin ? "sm_" : "compute_", rest);
    return n < 0 || (size_t)n >= size ? VYRE_EINVAL : VYRE_OK;
}

/* Copies the program log into out (always leaves a string there). */
static int fetch_log(nvrtcProgram prog, vyre_nvrtc_output *out, vyre_error *err)
{
    size_t n = 0;
    if (g_fns.nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS)
        n = 0;
    out->log = malloc(n ? n : 1);
    if (!out->log)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for the NVRTC log", n);
    out->log[0] = '\0';
    if (n && g_fns.nvrtcGetProgramLog(prog, out->log) == NVRTC_SUCCESS)
        out->log[n - 1] = '\0';
    else
        out->log[0] = '\0';
    out->log_len = strlen(out->log);
    return VYRE_OK;
}

static int fetch_output(nvrtcProgram prog, vyre_nvrtc_output *out, vyre_error *err)
{
    size_t n = 0;
    nvrtcResult r =
        out->is_cubin ? g_fns.nvrtcGetCUBINSize(prog, &n) : g_fns.nvrtcGetPTXSize(prog, &n);
    if (r != NVRTC_SUCCESS || n == 0)
        return vyre__fail(err, VYRE_ECOMPILE, "report this to the vyre developers with the source",
                          "NVRTC compiled for '%s' but produced no %s: %s", out->arch,
                          out->is_cubin ? "cubin" : "PTX",
                          r != NVRTC_SUCCESS ? g_fns.nvrtcGetErrorString(r) : "empty output");
    /* One spare byte keeps PTX NUL-terminated even if NVRTC's size ever
     * stops counting the NUL. */
    char *data = malloc(n + 1);
    if (!data)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for NVRTC output", n);
    r = out->is_cubin ? g_fns.nvrtcGetCUBIN(prog, data) : g_fns.nvrtcGetPTX(prog, data);
    if (r != NVRTC_SUCCESS) {
        free(data);
        return vyre__fail(err, VYRE_ECOMPILE, NULL, "NVRTC cannot return its output: %s",
                          g_fns.nvrtcGetErrorString(r));
    }
    data[n] = '\0';
    out->data = data;
    out->size = out->is_cubin ? n : strlen(data);
    return VYRE_OK;
}

static int compile_error(nvrtcResult r, const char *name, const vyre_nvrtc_output *out,
                         vyre_error *err)
{
    const char *what = g_fns.nvrtcGetErrorString(r);
    if (r == NVRTC_ERROR_OUT_OF_MEMORY)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "NVRTC ran out of memory compiling '%s'", name);
    if (r == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)
        return vyre__fail(err, VYRE_ENONVRTC,
                          "put the directory holding libnvrtc-builtins.so (the CUDA toolkit's "
                          "lib64) in LD_LIBRARY_PATH, or reinstall NVRTC",
                          "NVRTC cannot compile '%s': %s (its builtins library did not load)", name,
                          what);
    char line[QUOTE_MAX];
    const char *first = vyre__toolkit_first_error(out->log, line, sizeof line);
    if (r == NVRTC_ERROR_INVALID_OPTION)
        return vyre__fail(err, VYRE_ECOMPILE,
                          "check the compile options and the architecture against NVRTC's "
                          "documentation; the whole log is in the output",
                          "NVRTC rejects the options for '%s' (%s): %s", name, out->arch,
                          first ? first : what);
    return vyre__fail(err, VYRE_ECOMPILE, HINT_COMPILE, "NVRTC cannot compile '%s' for '%s': %s",
                      name, out->arch, first ? first : what);
}

int vyre_nvrtc_compile(const char *src, size_t len, const char *name, const char *arch,
                       const char *const *opts, size_t nopts, int want_cubin,
                       vyre_nvrtc_output *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_nvrtc_compile: NULL output");
    memset(out, 0, sizeof *out);
    if (!src || !arch || (nopts && !opts))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_nvrtc_compile: NULL argument");
    if (!name || !*name)
        name = "kernel.cu";
    if (vyre__toolkit_check_opts("vyre_nvrtc_compile", "compile", name, opts, nopts, err))
        return VYRE_EINVAL;
    out->is_cubin = want_cubin ? 1 : 0;
    if (target_arch(arch, out->is_cubin, out->arch, sizeof out->arch))
        return vyre__fail(err, VYRE_EINVAL,
                          "use sm_<major><minor> with an optional a or f suffix (e.g. 'sm_90', "
                          "'sm_90a') or compute_<major><minor>",
                          "invalid GPU architecture '%s' for '%s'", arch, name);
    /* Trailing NULs (a C string's length counted with its NUL) are fine; an
     * inner one would make NVRTC see a truncated program. */
    size_t n = len;
    while (n && src[n - 1] == '\0')
        n--;
    const char *nul = memchr(src, '\0', n);
    if (nul)
        return vyre__fail(err, VYRE_EINVAL, "pass CUDA C source text",
                          "source '%s' holds a NUL byte at offset %zu", name, (size_t)(nul - src));

    int rc = vyre_nvrtc_load(err);
    if (rc)
        return rc;

    char arch_opt[VYRE_NVRTC_ARCH_MAX + 32], *text;
    const char **argv;
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", out->arch);
    if ((rc =
             vyre__toolkit_args(src, n, arch_opt, opts, nopts, "compile", name, &text, &argv, err)))
        return rc;

    uint64_t t0 = vyre__mono_ns();
    nvrtcProgram prog = NULL;
    nvrtcResult r = g_fns.nvrtcCreateProgram(&prog, text, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        rc = compile_error(r, name, out, err);
    } else {
        r = g_fns.nvrtcCompileProgram(prog, (int)(nopts + 1), argv);
        rc = fetch_log(prog, out, err);
        if (rc == VYRE_OK && r != NVRTC_SUCCESS)
            rc = compile_error(r, name, out, err);
        if (rc == VYRE_OK)
            rc = fetch_output(prog, out, err);
        g_fns.nvrtcDestroyProgram(&prog);
    }
    out->compile_ns = vyre__mono_ns() - t0;
    free(text);
    free(argv);
    if (!out->log && rc != VYRE_ENOMEM) {
        out->log = calloc(1, 1); /* "" on every path, as documented */
        out->log_len = 0;
    }
    return rc;
}
