/*
 * sweep_plan.c - a user sweep before anything runs: the kernel read and
 * its PTX facts, the binding, the architecture chosen, the compile, and
 * every point's launch evaluated; the pre-run check (run.c) and the dry
 * run (vyre_bench_sweep_plan_make, `vyre-bench run --dry-run`) are this
 * one path, so a sweep that passes its dry run binds the same way on the
 * GPU. No GPU is needed: compiling is NVRTC/nvJitLink on the CPU.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "bench/axes_internal.h"
#include "bench/bench_internal.h"
#include "bench/sweep_binding.h"
#include "vyre/compile.h"
#include "vyre/nvrtc.h"

int vyre__sweep_kernel_load(const vyre_bench_sweep *sw, vyre__sweep_kernel *k, vyre_error *err)
{
    memset(k, 0, sizeof *k);
    int rc = vyre__read_file(sw->path, VYRE__BENCH_KERNEL_MAX, &k->src, &k->len, err);
    if (rc == VYRE_ETOOBIG || rc == VYRE_ENOMEM)
        rc = vyre__fail(err, VYRE_ENOMEM, "kernel files above 256 MiB are not supported",
                        "cannot read '%s': too large or out of memory", sw->path);
    if (rc) {
        if (rc == VYRE_ENOENT)
            vyre__fail(err, VYRE_ENOENT,
                       sw->spec_json ? "fix \"kernel\" in the spec (relative paths start at the "
                                       "spec's directory)"
                                     : "check the path",
                       "cannot read kernel '%s': %s", sw->path, strerror(ENOENT));
        return rc;
    }
    k->kind = VYRE_SOURCE_CUDA_C;
    vyre_source_kind_detect(sw->path, k->src, k->len, &k->kind);
    if (k->kind == VYRE_SOURCE_PTX) {
        vyre__ptx_info_read(k->src, k->len, sw->entry, &k->ptx);
        k->have_ptx = 1;
    }
    return VYRE_OK;
}

#define IDENT_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

/* Whether word occurs in src[0..len) as a whole identifier. */
static int has_identifier(const char *src, size_t len, const char *word)
{
    size_t wl = strlen(word);
    for (size_t i = 0; wl && i + wl <= len; i++) {
        if (memcmp(src + i, word, wl) != 0)
            continue;
        int before = i > 0 && (isalnum((unsigned char)src[i - 1]) || src[i - 1] == '_');
        int after = i + wl < len && (isalnum((unsigned char)src[i + wl]) || src[i + wl] == '_');
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* The names of CUDA C's __global__ functions ("a, b"): the identifier
 * before the first '(' after each __global__. A reading of the text, not
 * a compiler's: enough to name the choices when --entry is wrong. */
static void cuda_globals(const char *src, size_t len, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    static const char kw[] = "__global__";
    for (size_t i = 0; i + sizeof kw - 1 <= len; i++) {
        if (memcmp(src + i, kw, sizeof kw - 1) != 0)
            continue;
        size_t j = i + sizeof kw - 1;
        while (j < len && src[j] != '(' && src[j] != ';' && src[j] != '{')
            j++;
        if (j >= len || src[j] != '(')
            continue;
        size_t end = j;
        while (end > i && isspace((unsigned char)src[end - 1]))
            end--;
        size_t start = end;
        while (start > i && (isalnum((unsigned char)src[start - 1]) || src[start - 1] == '_'))
            start--;
        if (start == end)
            continue;
        int k = snprintf(buf + used, size - used, "%s%.*s", used ? ", " : "", (int)(end - start),
                         src + start);
        if (k > 0 && used + (size_t)k < size)
            used += (size_t)k;
        i = j;
    }
}

/* The entry must be in the module, in every mode (--dry-run too), and
 * before the spec is bound: a misspelled entry otherwise passed a dry run,
 * and in a version-2 spec surfaced as "$.block is missing" (the block
 * comes from the entry's .reqntid). */
static int check_entry(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k, vyre_error *err)
{
    char names[512];
    int missing;
    if (k->kind == VYRE_SOURCE_PTX) {
        missing = !k->ptx.found;
        if (missing)
            vyre__ptx_entries(k->src, k->len, names, sizeof names);
    } else if (k->kind == VYRE_SOURCE_CUDA_C && sw->entry[strspn(sw->entry, IDENT_CHARS)] == '\0') {
        /* A plain name only: a name expression ("k<float>") is the
         * compiler's to resolve. */
        missing = !has_identifier(k->src, k->len, sw->entry);
        if (missing)
            cuda_globals(k->src, k->len, names, sizeof names);
    } else {
        return VYRE_OK;
    }
    if (!missing)
        return VYRE_OK;
    char hint[768];
    snprintf(hint, sizeof hint, "%s; %s",
             sw->spec_json ? "fix \"entry\" in the spec" : "check --entry",
             names[0] ? "the module has: " : "the module has no kernel entry");
    if (names[0])
        vyre__strlcpy(hint + strlen(hint), names, sizeof hint - strlen(hint));
    return vyre__fail(err, VYRE_EINVAL, hint, "kernel '%s' has no entry '%s'", sw->path, sw->entry);
}

void vyre__sweep_kernel_release(vyre__sweep_kernel *k)
{
    if (!k)
        return;
    free(k->src);
    memset(k, 0, sizeof *k);
}

int vyre__sweep_arch(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k, int cc_major,
                     int cc_minor, char *arch, size_t size, const char **origin, vyre_error *err)
{
    return vyre__bench_choose_arch(sw->arch, k->have_ptx ? k->ptx.target : NULL, cc_major, cc_minor,
                                   "sm_90", arch, size, origin, err);
}

/* Compiles k for arch on the CPU; *log receives a failed compile's log. */
static int compile_for(const vyre_bench_sweep *sw, const vyre__sweep_kernel *k, const char *arch,
                       size_t *cubin_bytes, char **log, vyre_error *err)
{
    if (k->kind == VYRE_SOURCE_CUDA_C) {
        /* NVRTC directly, for the file's own name in its log and message
         * ("bad.cu(1): error"; vyre_compile_cubin names every source
         * "kernel.cu"). The same compile otherwise: no options, a cubin. */
        vyre_nvrtc_output o;
        int rc = vyre_nvrtc_compile(k->src, k->len, sw->path, arch, NULL, 0, 1, &o, err);
        if (cubin_bytes)
            *cubin_bytes = rc ? 0 : o.size;
        if (rc && log && o.log && *o.log)
            *log = strdup(o.log);
        vyre_nvrtc_output_release(&o);
        return rc;
    }
    vyre_compile_request req = {k->kind, k->src, k->len, arch, sw->entry, NULL, 0};
    vyre_compile_result res;
    memset(&res, 0, sizeof res);
    int rc = vyre_compile_cubin(&req, NULL, &res, err);
    if (cubin_bytes)
        *cubin_bytes = res.size;
    if (rc && log && res.log && *res.log)
        *log = strdup(res.log);
    vyre_compile_result_release(&res);
    return rc;
}

/* Evaluates every point (each is checked before the first runs). */
static int eval_all(const vyre_bench_sweep *sw, const vyre__sweep_binding *b,
                    const vyre__sweep_kernel *k, vyre_bench_sweep_plan *plan, vyre_error *err)
{
    size_t count = vyre__axes_count(sw->axes);
    size_t coords[VYRE_AXES_MAX];
    if (plan) {
        plan->points = calloc(count, sizeof *plan->points);
        if (!plan->points)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for %zu points", count);
    }
    for (size_t i = 0; i < count; i++) {
        vyre__axes_point(sw->axes, i, coords);
        vyre__sweep_launch l;
        int rc =
            vyre__sweep_binding_eval(b, sw->axes, coords, k->have_ptx ? &k->ptx : NULL, 0, &l, err);
        if (rc)
            return rc;
        if (!plan)
            continue;
        vyre_bench_sweep_plan_point *p = &plan->points[plan->npoints++];
        vyre__axes_format_point(sw->axes, coords, p->axes, sizeof p->axes);
        memcpy(p->grid, l.grid, sizeof p->grid);
        memcpy(p->block, l.block, sizeof p->block);
        p->shared_bytes = l.shared_bytes;
        p->memory_bytes = l.memory_bytes;
        p->bytes = l.bytes;
        p->flops = l.flops;
    }
    return VYRE_OK;
}

/* "(.u64, .u64, .u32)" of a PTX entry's parameters into buf. */
static void format_params(const vyre__ptx_info *p, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (size_t i = 0; i < p->nparams && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", p->param_type[i]);
    if (len < size)
        snprintf(buf + len, size - len, ")");
}

/*
 * The --vs kernel (sw->vs_path) against A's (ka): read, its entry present
 * and, when both are PTX, the same parameters in the same order with the
 * same sizes (both are launched with one argument list: a mismatch would
 * read garbage or fault rather than measure), then compiled for its own
 * architecture. One message naming both files, before anything runs.
 */
static int check_vs(const vyre_bench_sweep *sw, const vyre__sweep_kernel *ka, int cc_major,
                    int cc_minor, char **log, vyre_error *err)
{
    vyre_bench_sweep bsw = *sw;
    bsw.path = sw->vs_path;
    vyre__sweep_kernel kb;
    int rc = vyre__sweep_kernel_load(&bsw, &kb, err);
    if (rc)
        return rc;
    if (kb.have_ptx && !kb.ptx.found)
        rc = vyre__fail(err, VYRE_EINVAL,
                        "--vs compares two versions of one kernel: give a file whose entry has "
                        "the same name, or rename it there",
                        "--vs kernel '%s' has no entry '%s' (the entry of '%s')", sw->vs_path,
                        sw->entry, sw->path);
    int same = 1;
    if (!rc && kb.have_ptx && ka->have_ptx && ka->ptx.found) {
        same = ka->ptx.nparams == kb.ptx.nparams;
        for (size_t i = 0; same && i < ka->ptx.nparams; i++)
            same = ka->ptx.param_bytes[i] == kb.ptx.param_bytes[i] &&
                   strcmp(ka->ptx.param_type[i], kb.ptx.param_type[i]) == 0;
    }
    if (!same) {
        char pa[256], pb[256];
        format_params(&ka->ptx, pa, sizeof pa);
        format_params(&kb.ptx, pb, sizeof pb);
        rc = vyre__fail(err, VYRE_EINVAL, NULL,
                        "--vs kernel '%s': entry '%s' takes %s, but in '%s' it takes %s",
                        sw->vs_path, sw->entry, pb, sw->path, pa);
        if (err)
            snprintf(err->hint, sizeof err->hint,
                     "both kernels are launched with the same arguments: give --vs a version of "
                     "'%s' with the same parameters",
                     sw->path);
    }
    char arch[16];
    if (!rc)
        rc = vyre__sweep_arch(&bsw, &kb, cc_major, cc_minor, arch, sizeof arch, NULL, err);
    if (!rc)
        rc = compile_for(&bsw, &kb, arch, NULL, log, err);
    vyre__sweep_kernel_release(&kb);
    return rc;
}

int vyre__bench_sweep_check(const vyre_bench_sweep *sw, int cc_major, int cc_minor, char **log,
                            vyre_error *err)
{
    if (log)
        *log = NULL;
    if (!sw || !sw->path || !sw->entry || !sw->axes)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__bench_sweep_check: bad arguments");
    vyre__sweep_kernel k;
    int rc = vyre__sweep_kernel_load(sw, &k, err);
    if (!rc && (rc = check_entry(sw, &k, err)) != VYRE_OK)
        vyre__sweep_kernel_release(&k);
    if (rc)
        return rc;
    vyre__sweep_binding b;
    rc = vyre__sweep_binding_make(sw, &b, err);
    char arch[16];
    if (!rc)
        rc = vyre__sweep_arch(sw, &k, cc_major, cc_minor, arch, sizeof arch, NULL, err);
    if (!rc)
        rc = compile_for(sw, &k, arch, NULL, log, err);
    if (!rc)
        rc = eval_all(sw, &b, &k, NULL, err);
    if (!rc && sw->vs_path)
        rc = check_vs(sw, &k, cc_major, cc_minor, log, err);
    vyre__sweep_binding_release(&b);
    vyre__sweep_kernel_release(&k);
    return rc;
}

int vyre_bench_sweep_plan_make(const vyre_bench_sweep *sw, vyre_bench_sweep_plan *plan,
                               vyre_error *err)
{
    if (!plan)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_sweep_plan_make: NULL plan");
    memset(plan, 0, sizeof *plan);
    if (!sw || !sw->path || !sw->entry || !sw->axes)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_sweep_plan_make: bad arguments");
    vyre__sweep_kernel k;
    int rc = vyre__sweep_kernel_load(sw, &k, err);
    if (!rc && (rc = check_entry(sw, &k, err)) != VYRE_OK)
        vyre__sweep_kernel_release(&k);
    if (rc)
        return rc;
    plan->source_kind = vyre_source_kind_name(k.kind);
    vyre__sweep_binding b;
    rc = vyre__sweep_binding_make(sw, &b, err);
    if (!rc) {
        plan->version = b.version;
        plan->nparams = b.nargs;
        plan->launch = b.cooperative && b.pdl ? "cooperative, pdl"
                       : b.cooperative        ? "cooperative"
                       : b.pdl                ? "pdl"
                                              : NULL;
        rc = vyre__sweep_arch(sw, &k, 0, 0, plan->arch, sizeof plan->arch, &plan->arch_origin, err);
    }
    if (!rc)
        rc = compile_for(sw, &k, plan->arch, &plan->cubin_bytes, &plan->compile_log, err);
    if (!rc)
        rc = eval_all(sw, &b, &k, plan, err);
    vyre__sweep_binding_release(&b);
    vyre__sweep_kernel_release(&k);
    return rc;
}

void vyre_bench_sweep_plan_release(vyre_bench_sweep_plan *plan)
{
    if (!plan)
        return;
    free(plan->points);
    free(plan->compile_log);
    memset(plan, 0, sizeof *plan);
}
